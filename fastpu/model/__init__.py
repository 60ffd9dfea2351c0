"""Using a fitted model: model files, top-N recommendation, similar items and users, fold-in.

- :class:`Factorization` — the result type every fit returns (defined in ``fastpu._core``);
- :func:`load_model` / :meth:`Factorization.save` — one ``.npz`` file per model, read back without
  pickle (:func:`load` is its earlier name, deprecated);
- :func:`recommend`, :func:`similar_items`, :func:`similar_users` — top-N with filters and ids,
  in memory-bounded blocks;
- :func:`fold_in` — factors for users who were not in the training matrix, from each method's
  own row problem (found through the method registry).
"""

import warnings

from fastpu._core.factorization import Factorization
from fastpu._core.hints import PathOrFile

from ._fold_in import fold_in
from ._io import load_model
from ._serving import recommend, similar_items, similar_users


def load(path: PathOrFile) -> Factorization:
    """Deprecated name of :func:`load_model` (until the next release).

    ``fastpu.load`` read a model file, ``fastpu.datasets.load`` reads a data set: the model's
    reader is now called :func:`load_model`.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        As in :func:`load_model`.

    Returns
    -------
    Factorization

    Raises
    ------
    As :func:`load_model`.

    Warns
    -----
    DeprecationWarning
        Always: use :func:`load_model`.
    """
    warnings.warn("fastpu.load is deprecated and will be removed in the next release: use "
                  "fastpu.load_model (fastpu.datasets.load reads data sets)", DeprecationWarning,
                  stacklevel=2)
    return load_model(path)


__all__ = ["Factorization", "fold_in", "load", "load_model", "recommend", "similar_items",
           "similar_users"]
