"""The fastpu command line: demo, run, recommend, compare, warmup and cache.

``fastpu demo`` trains every method's demo configurations on MovieLens-100K
(80/20 per-user holdout of the binarised ratings), with per-iteration progress,
and prints precision, nDCG and training time next to a popularity baseline.

``fastpu run`` does the same for one method on a named data set or the user's
own CSV (``user,item[,value]``) or ``.npz`` file, with parameters given as
``--param name=value``, and can save the model (``--save model.npz``, read back by
``fastpu.load_model``).

``fastpu recommend --model model.npz --users u1,u2 -n 10`` prints the top items of a
saved model, by id.

``fastpu compare --data ml-100k --methods all`` tunes every method on several splits and
prints a table of test scores; ``--split rows`` holds out whole instances instead and scores
them from their features (multi-label data such as yeast).

``fastpu warmup`` compiles every method's numba kernels once, in parallel processes, into the
per-user cache, so that the first real fit does not pay for compiling. ``fastpu cache``
prints that cache's folder; ``--prune`` deletes the folders of installations that no longer
exist, ``--clear`` every folder.
"""

from ._commands import build_parser, main

__all__ = ["build_parser", "main"]
