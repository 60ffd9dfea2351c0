"""Using a fitted model: model files, top-N recommendation, similar items and users, fold-in.

- :class:`Factorization` — the result type every fit returns (defined in ``fastpu._core``);
- :func:`load_model` / :meth:`Factorization.save` — one ``.npz`` file per model, read back without
  pickle;
- :func:`recommend`, :func:`similar_items`, :func:`similar_users` — top-N with filters and ids,
  in memory-bounded blocks;
- :func:`fold_in` — factors for users who were not in the training matrix, from each method's
  own row problem (found through the method registry);
- :func:`partial_fit_users`, :func:`partial_fit_items` — some rows recomputed from new
  interactions, new ids appended;
- :class:`ApproximateIndex` — approximate nearest-neighbour search (faiss HNSW) for
  ``recommend(..., approximate=...)`` and ``similar_*`` on large catalogues.
"""

from fastpu._core.factorization import Factorization

from ._ann import ApproximateIndex
from ._fold_in import fold_in
from ._io import load_model
from ._partial import partial_fit_items, partial_fit_users
from ._serving import on_model  # noqa: F401 (for model_selection: data matched to a model)
from ._serving import recommend, similar_items, similar_users


__all__ = ["ApproximateIndex", "Factorization", "fold_in", "load_model",
           "partial_fit_items", "partial_fit_users", "recommend", "similar_items", "similar_users"]
