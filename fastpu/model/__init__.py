"""Using a fitted model: model files, top-N recommendation, similar items and users, fold-in.

- :class:`Factorization` — the result type every fit returns (defined in ``fastpu._core``);
- :func:`load` / :meth:`Factorization.save` — one ``.npz`` file per model, read back without pickle;
- :func:`recommend`, :func:`similar_items`, :func:`similar_users` — top-N with filters and ids,
  in memory-bounded blocks;
- :func:`fold_in` — factors for users who were not in the training matrix, from each method's
  own row problem (found through the method registry).
"""

from fastpu._core.factorization import Factorization

from ._fold_in import fold_in
from ._io import load
from ._serving import recommend, similar_items, similar_users

__all__ = ["Factorization", "fold_in", "load", "recommend", "similar_items", "similar_users"]
