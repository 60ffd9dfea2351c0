"""Inputs people have: lists of item ids per user, turned into the sparse rows the solvers take.

``fold_in``, ``partial_fit_users`` / ``partial_fit_items`` and ``recommend`` (its ``Y_seen``)
take, besides a sparse matrix or a :class:`~fastpu.datasets.Dataset`, one list of ids per user
(per item for ``partial_fit_items``): the ids of the model's other side when the model has them
(``model.item_ids``), positions otherwise. A flat list of ids is one user's.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.hints import Sparse

__all__ = ["IdLists", "is_id_lists", "rows_from_lists"]

#: One list of ids per user (or item), or one flat list of one user's ids.
IdLists = Sequence[Any]

_SCALARS = (str, bytes, int, np.integer, np.str_)


def _is_scalar_id(x: Any) -> bool:
    return isinstance(x, _SCALARS) and not isinstance(x, (bool, np.bool_))


def _is_list(x: Any) -> bool:
    if isinstance(x, (list, tuple, set, frozenset, range)):
        return True
    if isinstance(x, np.ndarray):
        return x.ndim == 1
    # a pandas Series (or Index) of ids
    return type(x).__name__ in ("Series", "Index") and getattr(x, "ndim", 0) == 1


def is_id_lists(rows: Any) -> bool:
    """Whether ``rows`` is a list of ids (one user's) or a list of such lists (one per user),
    rather than a matrix or a Dataset. A 1-d array of ids counts; a 2-d array does not."""
    if sp.issparse(rows) or rows is None:
        return False
    if isinstance(rows, np.ndarray):
        return rows.ndim == 1 and rows.dtype.kind in "iuUSO"
    if not _is_list(rows):
        return False
    return all(_is_scalar_id(x) or _is_list(x) for x in rows)


def _one_or_many(rows: Any) -> tuple[list[Any], bool]:
    """(list of per-user lists, whether a flat list of one user's ids was given)."""
    items = list(rows)
    if items and all(_is_scalar_id(x) for x in items):
        return [items], True
    if any(_is_scalar_id(x) for x in items):
        raise TypeError("a list of ids mixes ids and lists; expected one user's ids "
                        "([50, 172, 181]) or one list per user ([[50, 172], [181]])")
    return [list(x) for x in items], False


def rows_from_lists(rows: Any, *, ids: Any, size: int, name: str, what: str = "item",
                    strict: bool = False, some_known: bool = False,
                    stacklevel: int = 3) -> tuple[Sparse, bool]:
    """One sparse row per list in ``rows`` (value 1 at each listed position).

    ``ids`` are the model's ids of the listed side (``None``: the lists hold positions in
    ``[0, size)``). An id the model does not know is left out with a warning (the model has no
    factor for it), or is a ValueError with ``strict``; with ``some_known``, ids of which the
    model knows none are a ValueError naming them (nothing would be left). A repeated id
    counts once.

    Returns the ``len(rows) × size`` CSR and whether ``rows`` was one flat list (one user).
    """
    from fastpu.model._lookup import lookup

    lists, flat = _one_or_many(rows)
    counts = np.array([len(x) for x in lists], dtype=np.int64)
    flat_ids: list[Any] = [x for lst in lists for x in lst]
    if ids is None:
        cols = V.check_indices(np.asarray(flat_ids, dtype=np.int64) if not flat_ids else flat_ids,
                               name=name, size=size,
                               size_from=f"positions of the model's {size} {what}s: it has no "
                                         f"{what} ids")
    else:
        cols = lookup(ids, np.asarray(flat_ids) if flat_ids else np.asarray([], dtype=np.asarray(ids).dtype),
                      name=name, what=what, strict=strict)
        unknown = cols < 0
        if unknown.any():
            missing = [x for x, bad in zip(flat_ids, unknown) if bad]
            shown = np.asarray([x.item() if hasattr(x, "item") else x
                                for x in dict.fromkeys(missing)], dtype=object)
            if some_known and unknown.all():
                known = np.asarray(ids)[:3].tolist()
                raise ValueError(f"{name}: the model knows none of its {shown.size} {what} id(s) "
                                 f"({shown[:5].tolist()}{' ...' if shown.size > 5 else ''}); "
                                 f"expected the model's {what} ids (model.{what}_ids, e.g. "
                                 f"{known})")
            warnings.warn(f"{name}: {int(unknown.sum())} {what} id(s) the model does not know "
                          f"({shown[:5].tolist()}{' ...' if shown.size > 5 else ''}) were left "
                          f"out: the model has no factor for them", UserWarning,
                          stacklevel=stacklevel)
    rows_of = np.repeat(np.arange(len(lists), dtype=np.int64), counts)
    keep = cols >= 0
    Y = sp.csr_array((np.ones(int(keep.sum())), (rows_of[keep], cols[keep])),
                     shape=(len(lists), size))
    Y.sum_duplicates()
    Y.data[:] = 1.0                               # a repeated id is one positive
    return V.check_csr(Y, name=name), flat
