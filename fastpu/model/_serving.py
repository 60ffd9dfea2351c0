"""Serving a fitted model: top-N recommendation with filters and ids, and similar items/users.

Scores are produced in blocks of users (:func:`fastpu.model.iter_score_blocks`) and cosine
similarities in blocks of queries, so nothing users×items, items×items or users×users is
ever allocated; every result has at most ``min(n, number of candidates)`` columns.
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from typing import Any, Literal, overload

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.dataset import Dataset
from fastpu._kernels.topk import topk_candidates
from fastpu._core.hints import ArrayLike, IntArray, Sparse
from fastpu._core.factorization import Factorization, block_size, check_model, iter_score_blocks

__all__ = ["recommend", "similar_items", "similar_users"]

# Up to this many ids are looked up by one scan each; more by one sort of the model's ids.
_SCAN_LIMIT = 16
_BASE_FIELDS = frozenset(f.name for f in dataclasses.fields(Factorization))


# ----------------------------------------------------------------------------- checks

def _check_finite(F: np.ndarray, name: str) -> None:
    bad = F.size - int(np.count_nonzero(np.isfinite(F)))
    if bad:
        raise ValueError(f"{name} has {bad} non-finite (NaN or inf) values; a model with non-finite "
                         "factors cannot rank items: refit it (lower the step size or raise the "
                         "regularisation)")


def _check_model_finite(model: Factorization, users: IntArray) -> None:
    """The item factors, and every per-user part of the requested users, must be finite."""
    _check_finite(model.item_factors, "model.item_factors")
    _check_finite(model.user_factors[users], "model.user_factors (of the requested users)")
    m = model.shape[0]
    for f in dataclasses.fields(model):          # parts of subclasses, e.g. CSRR's U and V
        if f.name in _BASE_FIELDS:
            continue
        part = getattr(model, f.name)
        if sp.issparse(part):
            _check_finite(part.data, f"model.{f.name}")
        elif isinstance(part, np.ndarray) and part.ndim == 2 and part.shape[0] == m:
            _check_finite(part[users], f"model.{f.name} (of the requested users)")


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _ids_of(model: Factorization, side: str) -> np.ndarray:
    ids = getattr(model, f"{side}_ids")
    if ids is None:
        raise ValueError(
            f"ids=True needs the model's {side} ids, but model.{side}_ids is None (the model was "
            "fitted on a bare matrix); fit it on a fastpu.datasets.Dataset, or pass row/column "
            "numbers with ids=False")
    ids = np.asarray(ids)
    _check_unique(ids, f"model.{side}_ids")
    return ids


# id arrays already found unique (by identity, while they live): a repeated id was recommended
# twice, so ids are checked once per model array rather than sorted on every call
_UNIQUE: dict[int, Any] = {}


def _check_unique(ids: np.ndarray, name: str) -> None:
    key = id(ids)
    ref = _UNIQUE.get(key)
    if ref is not None and ref() is ids:
        return
    try:
        V.check_ids(ids, name=name, size=ids.shape[0] if ids.ndim else -1,
                    expected="one identifier per row or column of the model, each once")
    except ValueError as exc:
        what = name.split(".")[-1].replace("_", " ")
        raise ValueError(f"the model's {what} are not unique, so they cannot serve as ids: {exc}") from None
    def forget(_: Any, key: int = key) -> None:
        _UNIQUE.pop(key, None)

    try:
        _UNIQUE[key] = weakref.ref(ids, forget)
    except TypeError:
        pass


def _kind(arr: np.ndarray) -> str | None:
    if arr.dtype.kind in "iu":
        return "integer"
    if arr.dtype.kind in "US":
        return "string"
    if arr.dtype.kind == "O" and all(isinstance(x, str) for x in arr.ravel()):
        return "string"
    return None


def lookup(known: Any, wanted: ArrayLike, *, name: str, what: str,
           strict: bool = True) -> IntArray:
    """Positions in ``known`` (a model's id array) of the ids ``wanted``.

    With ``strict`` an unknown id is a ValueError naming ``name``; otherwise its position is -1.
    An id that occurs more than once in ``known`` is a ValueError when it is looked up (a
    lookup of more than ``_SCAN_LIMIT`` ids sorts ``known`` and rejects any repeated id).
    """
    known = np.asarray(known)
    wanted = np.asarray(wanted)
    if wanted.ndim == 0:
        wanted = wanted.reshape(1)
    if wanted.ndim != 1:
        raise ValueError(f"{name} must be a 1-d sequence of {what} ids, got shape {wanted.shape}")
    kk, kw = _kind(known), _kind(wanted)
    if kk is None:
        raise TypeError(f"the model's {what} ids have dtype {known.dtype}; expected integers or strings")
    if wanted.size == 0:
        return np.empty(0, dtype=np.int64)
    if kw != kk:
        raise TypeError(f"{name} must hold {kk} ids like the model's {what} ids "
                        f"(e.g. {known[:3].tolist()}), got dtype {wanted.dtype}")
    beyond = None                  # uint64 ids past int64's range: no int64 id equals them
    if kk == "string":
        known, wanted = known.astype(str, copy=False), wanted.astype(str, copy=False)
    elif known.dtype == np.uint64 and wanted.dtype == np.uint64:
        pass                       # compared as they are
    else:
        if wanted.dtype == np.uint64:
            beyond = wanted > np.iinfo(np.int64).max
            if beyond.any():
                shown = wanted[beyond][:5].tolist()
                wanted = np.where(beyond, np.uint64(0), wanted)
        known, wanted = known.astype(np.int64, copy=False), wanted.astype(np.int64, copy=False)
    out = np.full(wanted.size, -1, dtype=np.int64)
    if wanted.size <= _SCAN_LIMIT:
        # a few ids (the serving case): one O(len(known)) scan each, no sort
        for t, w in enumerate(wanted):
            hit = np.flatnonzero(known == w)
            if hit.size > 1:
                raise ValueError(f"the model's {what} ids are not unique ({w!r} appears {hit.size} "
                                 f"times), so {name} cannot be looked up")
            if hit.size:
                out[t] = hit[0]
        found = out >= 0
    else:
        order = np.argsort(known, kind="stable")
        sk = known[order]
        if sk.size > 1 and np.any(sk[1:] == sk[:-1]):
            raise ValueError(f"the model's {what} ids are not unique, so {name} cannot be looked up")
        pos = np.searchsorted(sk, wanted)
        inside = pos < sk.size
        found = np.zeros(wanted.size, dtype=bool)
        found[inside] = sk[pos[inside]] == wanted[inside]
        out[found] = order[pos[found]]
    if beyond is not None and beyond.any():
        out[beyond] = -1
        found = found & ~beyond
        if strict:
            raise ValueError(f"{name} has {int(beyond.sum())} {what} id(s) the model does not know: "
                             f"{shown}{' ...' if beyond.sum() > 5 else ''} (above the largest int64)")
    if strict and not found.all():
        missing = wanted[~found]
        raise ValueError(f"{name} has {missing.size} {what} id(s) the model does not know: "
                         f"{missing[:5].tolist()}{' ...' if missing.size > 5 else ''}")
    return out


@overload
def _positions(model: Factorization, values: None, *, side: str, name: str,
               ids: bool) -> None: ...
@overload
def _positions(model: Factorization, values: ArrayLike, *, side: str, name: str,
               ids: bool) -> IntArray: ...
def _positions(model: Factorization, values: ArrayLike | None, *, side: str, name: str,
               ids: bool) -> IntArray | None:
    """Row (user) or column (item) numbers from ids or numbers; ``None`` stays ``None``."""
    if values is None:
        return None
    if isinstance(values, (list, tuple)) and len(values) == 0:
        return np.empty(0, dtype=np.int64)           # [] is float64 to numpy, but means none
    size = model.shape[0 if side == "user" else 1]
    if ids:
        return lookup(_ids_of(model, side), values, name=name, what=side)
    try:
        return V.check_indices(values, name=name, size=size)
    except (TypeError, ValueError) as exc:
        if getattr(model, f"{side}_ids") is None:
            raise
        # a model with ids takes row/column numbers unless ids=True: say so where it shows
        raise type(exc)(f"{exc}; {name} are {'row' if side == 'user' else 'column'} numbers "
                        f"unless ids=True, and this "
                        f"model has {side} ids (model.{side}_ids, e.g. "
                        f"{np.asarray(getattr(model, f'{side}_ids'))[:3].tolist()}): pass ids=True "
                        "to give ids") from None


def _seen_matrix(model: Factorization, Y_seen: Sparse | Dataset | None) -> Sparse:
    """The items to exclude per user as canonical CSR of the model's shape."""
    m, n = model.shape
    if Y_seen is None:
        return sp.csr_array((np.zeros(0), np.zeros(0, np.int64), np.zeros(m + 1, np.int64)), shape=(m, n))
    if isinstance(Y_seen, Dataset):
        # each side separately: matched by id where both the data set and the model have ids
        # (entries of ids the model does not know are dropped), by position otherwise
        maps: list[IntArray | None] = []
        for side, size in (("user", m), ("item", n)):
            theirs, ours = getattr(Y_seen, f"{side}_ids"), getattr(model, f"{side}_ids")
            if theirs is None or ours is None or (
                    len(theirs) == size and np.array_equal(np.asarray(theirs), np.asarray(ours))):
                maps.append(None)
            else:
                maps.append(lookup(ours, theirs, name=f"Y_seen.{side}_ids", what=side, strict=False))
        if all(mp is None for mp in maps):
            Y_seen = Y_seen.Y
        else:
            Y = V.check_csr(Y_seen.Y, name="Y_seen.Y", nonnegative=False)
            for axis, (side, size, mp) in enumerate(zip(("user", "item"), (m, n), maps)):
                if mp is None and Y.shape[axis] != size:
                    raise ValueError(f"Y_seen.Y has {Y.shape[axis]} {side}s, expected {size} "
                                     f"(model.shape); with no {side} ids on one side they are "
                                     "matched by position")
            Y_seen, _ = remap(Y, maps[0], maps[1], (m, n))
    return V.check_csr(Y_seen, name="Y_seen", shape=(m, n), nonnegative=False,
                       shape_from="model.shape, users × items")


def remap(Y: Sparse, row_map: IntArray | None, col_map: IntArray | None,
          shape: tuple[int, int]) -> tuple[Sparse, IntArray]:
    """``Y``'s entries moved to other positions: row r to ``row_map[r]``, column c to
    ``col_map[c]`` (``None`` keeps the position); an entry mapped to -1 (an id the target does
    not know, from :func:`lookup` with ``strict=False``) is dropped.

    Returns the matrix of ``shape`` and the columns of ``Y`` of the dropped entries.
    """
    C = Y.tocoo()
    r = C.row if row_map is None else row_map[C.row]
    c = C.col if col_map is None else col_map[C.col]
    keep = (r >= 0) & (c >= 0)
    return sp.csr_array((C.data[keep], (r[keep], c[keep])), shape=shape), C.col[~keep]


def _candidates(model: Factorization, items: ArrayLike | None, exclude: ArrayLike | None,
                ids: bool) -> IntArray:
    n = model.shape[1]
    cand = _positions(model, items, side="item", name="items", ids=ids)
    cand = np.arange(n, dtype=np.int64) if cand is None else np.unique(cand)
    drop = _positions(model, exclude, side="item", name="exclude", ids=ids)
    if drop is not None and drop.size:
        cand = cand[~np.isin(cand, drop)]
    return np.ascontiguousarray(cand, dtype=np.int64)


# ----------------------------------------------------------------------------- recommend

@overload
def recommend(model: Factorization, Y_seen: Sparse | Dataset | None,
              users: ArrayLike | None = None, n: int = 10, *, ids: Literal[False] = False,
              items: ArrayLike | None = None, exclude: ArrayLike | None = None,
              ) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def recommend(model: Factorization, Y_seen: Sparse | Dataset | None,
              users: ArrayLike | None = None, n: int = 10, *, ids: Literal[True],
              items: ArrayLike | None = None, exclude: ArrayLike | None = None,
              ) -> tuple[list[np.ndarray], list[np.ndarray]]: ...
@overload
def recommend(model: Factorization, Y_seen: Sparse | Dataset | None,
              users: ArrayLike | None = None, n: int = 10, *, ids: bool,
              items: ArrayLike | None = None, exclude: ArrayLike | None = None,
              ) -> tuple[np.ndarray | list[np.ndarray], np.ndarray | list[np.ndarray]]: ...
def recommend(model: Factorization, Y_seen: Sparse | Dataset | None,
              users: ArrayLike | None = None, n: int = 10, *, ids: bool = False,
              items: ArrayLike | None = None, exclude: ArrayLike | None = None,
              ) -> tuple[np.ndarray | list[np.ndarray], np.ndarray | list[np.ndarray]]:
    """Top-``n`` items per user by score, without the items each user has seen.

    Parameters
    ----------
    model : Factorization
        Any fitted fastpu model (or one read back with :func:`fastpu.load_model`).
    Y_seen : scipy.sparse matrix of shape (m, n_items), Dataset, or None
        Items to leave out per user, usually the training matrix (its stored entries;
        values are ignored). A :class:`~fastpu.datasets.Dataset` whose ids differ from the
        model's is matched by user and item id (entries of unknown users or items are
        ignored). ``None`` leaves out nothing.
    users : array-like, optional
        Users to recommend for, all when ``None``: row numbers in ``[0, m)``, or user ids
        when ``ids=True``.
    n : int
        Number of items per user (``n >= 1``; more than the candidates is fine).
    ids : bool, keyword-only
        When True, ``users``, ``items`` and ``exclude`` are ids as in the data set the model
        was fitted on (``model.user_ids`` / ``model.item_ids``) and the result holds item ids.
    items : array-like, optional, keyword-only
        Candidate items: rank only among these (row numbers, or ids with ``ids=True``).
        All items when ``None``.
    exclude : array-like, optional, keyword-only
        Items never recommended to anyone (row numbers, or ids with ``ids=True``).

    Returns
    -------
    items : ndarray of int64, shape (len(users), min(n, n_candidates)); or list
        Best first, ties broken by lower item number. With ``ids=False``: item numbers,
        ``-1`` in the slots of a user who has fewer ranked items than columns. With
        ``ids=True``: a list with one 1-d array of item ids per user, holding only real
        recommendations (never a padding slot turned into an id).
    scores : ndarray of float64 of the same shape; or list
        The matching scores; ``-inf`` in padding slots (``ids=False``), a list of 1-d arrays
        with ``ids=True``.

    Raises
    ------
    TypeError
        If ``model`` is not a Factorization, ``n`` or ``ids`` has the wrong type, or
        ``users``/``items``/``exclude`` are not integer numbers (``ids=False``) or not ids of
        the model's id type (``ids=True``).
    ValueError
        If ``Y_seen`` does not have the model's shape, ``n < 1``, a number is out of range,
        an id is unknown, ``ids=True`` on a model without ids, or the factors (of the item
        side or of the requested users) are not finite.

    Warns
    -----
    RuntimeWarning
        If some scores are non-finite although the factors are finite (overflow, or a
        model whose ``scores`` produce them): those items are never ranked, not even
        below the finite ones, and the warning says how many there were.

    Notes
    -----
    Scores come in blocks of users, so memory stays ``O(block × n_items)``; no array has
    more than ``min(n, n_candidates)`` columns, whatever ``n`` is.

    Examples
    --------
    >>> import fastpu as fp
    >>> data = fp.datasets.from_pairs(["ann", "ann", "bob", "cy", "cy"],
    ...                               ["tea", "jam", "tea", "jam", "oat"])
    >>> m = fp.ocmf.fit(data, 2, n_iter=2)
    >>> items, scores = fp.recommend(m, data, users=["ann", "bob"], n=5, ids=True)
    >>> [sorted(row.tolist()) for row in items]  # seen items left out, no padding
    [['oat'], ['jam', 'oat']]
    >>> idx, sc = fp.recommend(m, data.Y, users=[0, 1], n=5)
    >>> idx.shape                             # at most the 3 items, not n=5 columns
    (2, 3)
    """
    model = check_model(model)
    n = V.check_k(n, name="n")
    ids = _check_bool(ids, "ids")
    m_users = model.shape[0]
    users = _positions(model, users, side="user", name="users", ids=ids)
    if users is None:
        users = np.arange(m_users, dtype=np.int64)
    cand = _candidates(model, items, exclude, ids)
    seen = _seen_matrix(model, Y_seen)
    _check_model_finite(model, users)
    n_take = min(n, cand.size)
    out_items = np.full((users.size, n_take), -1, dtype=np.int64)
    out_scores = np.full((users.size, n_take), -np.inf)
    nonfinite = 0
    if n_take > 0:
        start = 0
        for rows, S in iter_score_blocks(model, users):
            bad = np.zeros(rows.size, dtype=np.int64)
            sl = slice(start, start + rows.size)
            topk_candidates(S, seen.indptr, seen.indices, rows, cand, n_take,
                            out_items[sl], out_scores[sl], bad)
            nonfinite += int(bad.sum())
            start += rows.size
    if nonfinite:
        warnings.warn(f"model.scores gave {nonfinite} non-finite scores (NaN or inf) among the "
                      "candidates; those items were left out of the recommendations",
                      RuntimeWarning, stacklevel=2)
    if not ids:
        return out_items, out_scores
    item_ids = _ids_of(model, "item")
    keep = out_items >= 0
    return ([item_ids[row[k]] for row, k in zip(out_items, keep)],
            [row[k] for row, k in zip(out_scores, keep)])


# ----------------------------------------------------------------------------- similar

def _similar(model: Factorization, queries: ArrayLike, n: int, ids: bool,
             side: str) -> tuple[np.ndarray, np.ndarray]:
    model = check_model(model)
    n = V.check_k(n, name="n")
    ids = _check_bool(ids, "ids")
    name = "items" if side == "item" else "users"
    if queries is None:
        raise TypeError(f"{name} must be the {side}s to find neighbours for, got None")
    q = _positions(model, queries, side=side, name=name, ids=ids)
    F = np.asarray(model.item_factors if side == "item" else model.user_factors, dtype=np.float64)
    _check_finite(F, f"model.{side}_factors")
    # each row divided by its largest |entry| first: the norm of a row of 1e200s (or 1e-200s)
    # would overflow (underflow), and cosines are unchanged by scaling
    big = np.abs(F).max(axis=1) if F.shape[1] else np.zeros(F.shape[0])
    G = F / np.where(big > 0, big, 1.0)[:, None]
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    Fn = np.ascontiguousarray(G / np.where(norms > 0, norms, 1.0)[:, None])
    N = F.shape[0]
    n_take = max(0, min(n, N - 1))
    out_idx = np.full((q.size, n_take), -1, dtype=np.int64)
    out_sc = np.full((q.size, n_take), -np.inf)
    if n_take > 0:
        cand = np.arange(N, dtype=np.int64)
        step = block_size(N)
        for start in range(0, q.size, step):
            block = q[start:start + step]
            S = np.ascontiguousarray(Fn[block] @ Fn.T)
            np.clip(S, -1.0, 1.0, out=S)
            # each query leaves out itself: a one-entry "seen" row per query
            self_indptr = np.arange(block.size + 1, dtype=np.int64)
            rows = np.arange(block.size, dtype=np.int64)
            bad = np.zeros(block.size, dtype=np.int64)
            sl = slice(start, start + block.size)
            topk_candidates(S, self_indptr, block, rows, cand, n_take, out_idx[sl], out_sc[sl], bad)
    if ids:
        return _ids_of(model, side)[out_idx], out_sc
    return out_idx, out_sc


_SIMILAR_DOC = """The ``n`` {side}s most similar to each of ``{name}``, by cosine of the {side} factors.

    similarity({a}, {b}) = f_{a} · f_{b} / (‖f_{a}‖ ‖f_{b}‖) over the rows of
    ``model.{side}_factors`` (0 when either vector is zero, so never NaN). Each query leaves
    out itself. For a model whose scores are not a plain product (CSRR's U + V) the rule is
    the same: the low-rank factors are compared and CSRR's sparse part V, which only sits on
    training positives, is left out. Queries run in blocks, so nothing {side}s×{side}s is
    allocated.

    Parameters
    ----------
    model : Factorization
        Any fitted fastpu model.
    {name} : array-like
        Query {side}s: numbers in ``[0, {size})``, or ids with ``ids=True``.
    n : int
        Neighbours per query (``n >= 1``); the result has ``min(n, {size} - 1)`` columns.
    ids : bool, keyword-only
        When True, ``{name}`` are ids (``model.{side}_ids``) and so is the result.

    Returns
    -------
    neighbours : ndarray, shape (len({name}), min(n, {size} - 1))
        Most similar first, ties broken by lower number: {side} numbers (int64), or ids with
        ``ids=True`` (every slot is filled, so there is no padding).
    similarities : ndarray of float64, same shape
        Cosines in [-1, 1].

    Raises
    ------
    TypeError
        If ``model`` is not a Factorization, ``n`` or ``ids`` has the wrong type, or
        ``{name}`` is None, not integers (``ids=False``) or not ids of the model's type.
    ValueError
        If ``n < 1``, a number is out of range, an id is unknown, ``ids=True`` on a model
        without ids, or ``model.{side}_factors`` has non-finite values.

    Examples
    --------
    >>> import numpy as np, fastpu as fp
    >>> m = fp.Factorization(np.eye(3), np.array([[1.0, 0, 0], [2.0, 0.1, 0], [0, 0, 1.0]]))
    >>> from fastpu.model import {func}
    >>> {func}(m, [{example}], n=2)[0]
    {expected}
    """


def similar_items(model: Factorization, items: ArrayLike, n: int = 10, *,
                  ids: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return _similar(model, items, n, ids, "item")


def similar_users(model: Factorization, users: ArrayLike, n: int = 10, *,
                  ids: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return _similar(model, users, n, ids, "user")


similar_items.__doc__ = _SIMILAR_DOC.format(
    side="item", name="items", a="i", b="j", size="n_items", func="similar_items", example="0",
    expected="array([[1, 2]])")
similar_users.__doc__ = _SIMILAR_DOC.format(
    side="user", name="users", a="u", b="v", size="m", func="similar_users", example="0",
    expected="array([[1, 2]])")
