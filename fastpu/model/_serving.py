"""Serving a fitted model: top-N recommendation with filters and ids, and similar items/users.

Scores are produced in blocks of users (:func:`fastpu._core.factorization.iter_score_blocks`)
and cosine similarities in blocks of queries, so nothing users×items, items×items or users×users
is ever allocated; every result has at most ``min(n, number of candidates)`` columns.

Every function returns the same shapes (docs/serving.md): one query (a scalar) gives two 1-d
arrays holding only real results; a list of queries gives two 2-d arrays, one row per query,
whose slots beyond a row's real results hold -1 (or the empty id) with score -inf.
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from typing import Any, overload

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.dataset import Dataset
from fastpu._core.exceptions import user_stacklevel
from fastpu._core.hints import ArrayLike, IntArray, Sparse
from fastpu._core.factorization import Factorization, check_model, check_seen
from fastpu.model._exact import exact_similar, exact_topk
from fastpu.model._inputs import IdLists, is_id_lists, rows_from_lists
from fastpu.model._lookup import lookup

__all__ = ["on_model", "recommend", "similar_items", "similar_users"]

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
            f"ids=True needs the model's {side} ids, but model.{side}_ids is None; fit the model "
            "on a fastpu.datasets.Dataset (or give fold_in / partial fits the ids), or pass "
            "row/column numbers with ids=False")
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


def _check_ids_flag(ids: object) -> bool | None:
    if ids is None:
        return None
    return _check_bool(ids, "ids")


def is_text(values: Any) -> bool:
    """Whether ``values`` (a scalar or a sequence) are text: strings are always ids, never row
    or column numbers."""
    if values is None:
        return False
    if isinstance(values, (str, bytes, np.str_, np.bytes_)):
        return True
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "US":
            return True
        if values.dtype.kind != "O" or values.size == 0:
            return False
        return isinstance(values.flat[0], (str, bytes))
    if sp.issparse(values) or not hasattr(values, "__iter__"):
        return False
    try:
        return any(isinstance(x, (str, bytes, np.str_, np.bytes_)) for x in values)
    except TypeError:
        return False


def speaks_ids(ids: bool | None, *values: Any) -> bool:
    """Whether a result holds ids: ``ids`` when given, else whether any of the arguments that
    name users or items was given as text ids."""
    return ids if ids is not None else any(is_text(v) for v in values)


def _use_ids(model: Factorization, side: str, ids: bool) -> bool:
    """Whether ``side``'s values are ids: with ``ids=True``, on each side that has ids.

    A side without ids (the new users of a ``fold_in`` without ``user_ids``) is addressed by
    number; a model with no ids on either side cannot honour ``ids=True``.
    """
    if not ids:
        return False
    if model.user_ids is None and model.item_ids is None:
        raise ValueError(
            "ids=True needs the model's ids, but model.user_ids and model.item_ids are both None "
            "(the model was fitted on a bare matrix, not a fastpu.datasets.Dataset); fit it on a "
            "Dataset, or pass row/column numbers with ids=False")
    return getattr(model, f"{side}_ids") is not None


@overload
def _positions(model: Factorization, values: None, *, side: str, name: str,
               ids: bool | None) -> None: ...
@overload
def _positions(model: Factorization, values: ArrayLike, *, side: str, name: str,
               ids: bool | None) -> IntArray: ...
def _positions(model: Factorization, values: ArrayLike | None, *, side: str, name: str,
               ids: bool | None) -> IntArray | None:
    """Row (user) or column (item) numbers from ids or numbers; ``None`` stays ``None``.

    With ``ids=None`` text values are ids and numbers are numbers (with a warning where the
    side's ids are integers too: :func:`_warn_numbers`)."""
    if values is None:
        return None
    if isinstance(values, (list, tuple)) and len(values) == 0:
        return np.empty(0, dtype=np.int64)           # [] is float64 to numpy, but means none
    size = model.shape[0 if side == "user" else 1]
    own = getattr(model, f"{side}_ids")
    told = ids is not None
    if not told and is_text(values):
        if own is None:
            shown = np.asarray(values).reshape(-1)[:3].tolist()
            raise ValueError(
                f"{name} holds {side} ids ({shown}), but this model has no {side} ids "
                f"(model.{side}_ids is None: it was fitted on a bare matrix, not a "
                f"fastpu.datasets.Dataset); pass {'row' if side == 'user' else 'column'} numbers, "
                "or fit the model on a Dataset to keep the ids")
        ids = True
    if ids and _use_ids(model, side, ids):
        return lookup(_ids_of(model, side), values, name=name, what=side)
    try:
        out = V.check_indices(values, name=name, size=size)
    except (TypeError, ValueError) as exc:
        if own is None:
            raise
        # a model with ids takes row/column numbers unless ids=True: say so where it shows
        raise type(exc)(f"{exc}; {name} {'is' if name == 'query' else 'are'} "
                        f"{'row' if side == 'user' else 'column'} numbers "
                        f"unless ids=True, and this "
                        f"model has {side} ids (model.{side}_ids, e.g. "
                        f"{np.asarray(own)[:3].tolist()}): pass ids=True "
                        "to give ids") from None
    if not told:                         # numbers, and not told whether they are ids
        _warn_numbers(own, values, side=side, name=name)
    return out


def _warn_numbers(own: Any, values: Any, *, side: str, name: str) -> None:
    """Warn that numbers given without ``ids`` are read as row (column) numbers when the
    model's ids on that side (``own``) are integers too, so that ``users=1`` could mean
    either."""
    if own is None or np.asarray(own).dtype.kind not in "iu":
        return
    shown = np.asarray(values).reshape(-1)[:3].tolist()
    what = "row" if side == "user" else "column"
    warnings.warn(
        f"{name}={shown if np.ndim(values) else shown[0]} is read as {what} numbers, not as "
        f"{side} ids, although this model's {side} ids are integers too (model.{side}_ids "
        f"starts {np.asarray(own)[:3].tolist()}); pass ids=True to give {side} ids, or "
        f"ids=False to give {what} numbers without this warning", UserWarning,
        stacklevel=user_stacklevel())


def _is_a_user(Y_seen: Any) -> bool:
    """Whether recommend's first argument is a user id or index (implicit's argument order)."""
    return isinstance(Y_seen, (str, bytes, int, np.integer)) and not isinstance(Y_seen, bool)


def _seen_matrix(model: Factorization, Y_seen: Sparse | Dataset | None) -> Sparse:
    """The items to exclude per user as canonical CSR of the model's shape."""
    m, n = model.shape
    if Y_seen is None:
        return _empty(m, n)
    if _is_a_user(Y_seen):
        # model.recommend(user) as implicit's recommend(userid, ...) is spelled
        raise TypeError(f"Y_seen must be a scipy.sparse matrix, a Dataset, lists of item ids or "
                        f"None, got the scalar {Y_seen!r}: recommend's first argument is Y_seen "
                        f"(the items to leave out); pass the user as users={Y_seen!r}")
    return on_model(model, Y_seen, name="Y_seen")


def on_model(model: Factorization, Y: Sparse | Dataset, *, name: str,
             nonnegative: bool = False) -> Sparse:
    """``Y`` as canonical CSR of the model's shape (users × items).

    A :class:`~fastpu.datasets.Dataset` is matched to the model on each side separately: by id
    where both the data set and the model have ids (entries of ids the model does not know are
    dropped), by position otherwise. A matrix must have the model's shape.
    """
    m, n = model.shape
    if isinstance(Y, Dataset):
        maps: list[IntArray | None] = []
        for side, size in (("user", m), ("item", n)):
            theirs, ours = getattr(Y, f"{side}_ids"), getattr(model, f"{side}_ids")
            if theirs is None or ours is None or (
                    len(theirs) == size and np.array_equal(np.asarray(theirs), np.asarray(ours))):
                maps.append(None)
            else:
                mp = lookup(ours, theirs, name=f"{name}.{side}_ids", what=side, strict=False)
                if mp.size and not (mp >= 0).any():
                    raise ValueError(
                        f"{name}.{side}_ids share no id with model.{side}_ids ({name}'s e.g. "
                        f"{np.asarray(theirs)[:3].tolist()}, the model's e.g. "
                        f"{np.asarray(ours)[:3].tolist()}); expected data about the model's "
                        f"{side}s, matched by id")
                maps.append(mp)
        if all(mp is None for mp in maps):
            Y = Y.Y
        else:
            M = V.check_csr(Y.Y, name=f"{name}.Y", nonnegative=nonnegative)
            for axis, (side, size, mp) in enumerate(zip(("user", "item"), (m, n), maps)):
                if mp is None and M.shape[axis] != size:
                    raise ValueError(f"{name}.Y has {M.shape[axis]} {side}s, expected {size} "
                                     f"(model.shape); with no {side} ids on one side they are "
                                     "matched by position")
            Y, _ = remap(M, maps[0], maps[1], (m, n))
    return V.check_csr(Y, name=name, shape=(m, n), nonnegative=nonnegative,
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
                ids: bool | None) -> IntArray:
    n = model.shape[1]
    cand = _positions(model, items, side="item", name="items", ids=ids)
    cand = np.arange(n, dtype=np.int64) if cand is None else np.unique(cand)
    drop = _positions(model, exclude, side="item", name="exclude", ids=ids)
    if drop is not None and drop.size:
        cand = cand[~np.isin(cand, drop)]
    return np.ascontiguousarray(cand, dtype=np.int64)


def _pattern(M: Sparse) -> Sparse:
    """The stored entries of the CSR ``M`` as a boolean CSR (its arrays, not copies)."""
    nnz = int(M.indptr[-1])
    out = sp.csr_array((np.ones(nnz, dtype=bool), M.indices[:nnz], M.indptr), shape=M.shape)
    return out


def _seen_rows(model: Factorization, u: IntArray) -> Sparse:
    """The rows ``u`` (sorted, unique) of the model's training positives, as a checked boolean
    CSR of ``len(u)`` rows: every index in range, whatever was set as ``model.seen``."""
    m, n = model.shape
    seen = check_seen(model)
    if seen.format != "csr":
        seen = sp.csr_array(seen)
    sub = sp.csr_array(seen[u]) if u.size < m else sp.csr_array(seen)
    if sub.nnz and (int(sub.indices.min()) < 0 or int(sub.indices.max()) >= n):
        raise ValueError(f"model.seen has column indices outside [0, {n}) (its arrays were edited); "
                         "set it again from the training matrix: dataclasses.replace(model, "
                         "seen=Y_train)")
    return _pattern(sub)


def _empty(m: int, n: int) -> Sparse:
    return sp.csr_array((np.zeros(0, dtype=bool), np.zeros(0, np.int64), np.zeros(m + 1, np.int64)),
                        shape=(m, n))


def _exclusion(model: Factorization, users: IntArray, extra: Sparse | None, *,
               exclude_seen: bool, check: bool) -> Sparse:
    """The items to leave out per user, as a canonical m × n CSR whose rows of ``users`` hold
    the model's training positives (with ``exclude_seen``) and the rows of ``extra`` (the
    Y_seen given; None: none), the other rows empty.

    With ``check``, a Y_seen whose requested rows share no positive with the training
    positives of those users (a test split, or a matrix in another row order) is warned about.
    """
    m, n = model.shape
    if model.seen is None or not (exclude_seen or check):
        return extra if extra is not None else _empty(m, n)
    u = np.unique(users)
    own = _seen_rows(model, u)
    theirs = None
    if extra is not None:
        theirs = _pattern(sp.csr_array(extra[u]) if u.size < m else extra)
        if check and exclude_seen and theirs.nnz and own.nnz and not own.multiply(theirs).nnz:
            warnings.warn(
                f"Y_seen shares no positive with the training positives of the {u.size} "
                f"requested user(s) (model.seen): expected the training matrix or items to add to "
                f"it (the model leaves out its training positives by itself). A test split, or a "
                f"matrix whose rows are not in the model's order, gives this; Y_seen's "
                f"{theirs.nnz} entries are left out as given", UserWarning,
                stacklevel=user_stacklevel())
    if not exclude_seen:
        return extra if extra is not None else _empty(m, n)
    rows = own if theirs is None else sp.csr_array(own + theirs)
    rows.sum_duplicates()
    counts = np.zeros(m, dtype=np.int64)
    counts[u] = np.diff(rows.indptr)
    indptr = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts)])
    indices = np.ascontiguousarray(rows.indices, dtype=np.int64)
    out = sp.csr_array((np.ones(indices.size, dtype=bool), indices, indptr), shape=(m, n))
    out.indices, out.indptr = indices, indptr
    return out


def _pad_value(labels: np.ndarray) -> Any:
    return "" if labels.dtype.kind in "USO" else -1


def shaped(idx: np.ndarray, sc: np.ndarray, single: bool,
           labels: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The serving functions' results in their one shape: for one query two 1-d arrays of its
    real results; for several, two 2-d arrays with -1 (numbers), the empty id ``""`` (string
    ids) or -1 (integer ids) and score -inf in the slots beyond a row's real results."""
    if single:
        keep = idx[0] >= 0
        row = idx[0][keep]
        return (row if labels is None else labels[row]), sc[0][keep]
    if labels is None:
        return idx, sc
    pad = idx < 0
    if labels.dtype.kind == "u":                  # -1 marks a padding slot: signed integers
        labels = labels.astype(np.int64) if labels.size == 0 or labels.max() < 2**63 \
            else labels.astype(object)
    out = labels[np.where(pad, 0, idx)] if labels.size else np.zeros(idx.shape, labels.dtype)
    if pad.any():
        if out.dtype.kind in "US" and out.dtype.itemsize == 0:
            out = out.astype(object)
        out[pad] = _pad_value(labels)
    return out, sc


# ----------------------------------------------------------------------------- recommend

def recommend(model: Factorization, Y_seen: Sparse | Dataset | IdLists | None = None,
              users: ArrayLike | None = None, n: int = 10, *, exclude_seen: bool = True,
              ids: bool | None = None, items: ArrayLike | None = None,
              exclude: ArrayLike | None = None, as_frame: bool = False,
              approximate: Any = False) -> Any:
    """Top-``n`` items per user by score, without the items each user has seen.

    The items a user has seen are the model's record of its training positives
    (``model.seen``: every fit, fold-in and partial fit keeps it) plus whatever ``Y_seen``
    adds; ``exclude_seen=False`` leaves the training positives in.

    Parameters
    ----------
    model : Factorization
        Any fitted fastpu model (or one read back with :func:`fastpu.load_model`).
    Y_seen : scipy.sparse matrix of shape (m, n_items), Dataset, lists of item ids, or None
        More items to leave out per user, on top of the training positives (its stored
        entries; values are ignored): for example what users saw after the model was fitted.
        A :class:`~fastpu.datasets.Dataset` whose ids differ from the model's is matched by
        user and item id (entries of unknown users or items are ignored; one that shares no
        id with the model is an error). Lists of item ids: one list per requested user, in the
        order of ``users`` (a flat list, ``[]`` included, for a single user), holding the
        model's item ids when it has them and item numbers otherwise, as
        :func:`fastpu.fold_in` takes them. ``None`` (default) adds nothing.
    users : int, str or array-like, optional
        Users to recommend for, all when ``None``: row numbers in ``[0, m)``, or user ids (a
        string is always an id; integer ids need ``ids=True``). A single user (a scalar) gives
        1-d results, a list 2-d ones.
    n : int
        Number of items per user (``n >= 1``; more than the candidates is fine).
    exclude_seen : bool, keyword-only
        Leave out each user's training positives (``model.seen``), default True. A model
        without them (``model.seen is None``: built by hand, or read from a file that does not
        hold them) leaves out only ``Y_seen``.
    ids : bool or None, keyword-only
        How ``users``, ``items`` and ``exclude`` are read and what the result holds. ``None``
        (default): strings are ids (``model.user_ids`` / ``model.item_ids``), numbers are row
        and column numbers, and the result holds item ids when any of the three was given as
        string ids. ``True``: all three are ids (integer ids included) and so is the result; a
        side without ids (the new users of a :func:`fastpu.fold_in` without ``user_ids``)
        keeps its numbers; a model without any ids refuses it. ``False``: numbers only.
    items : array-like, optional, keyword-only
        Candidate items: rank only among these (column numbers or ids, as ``ids`` says).
        All items when ``None``.
    exclude : array-like, optional, keyword-only
        Items never recommended to anyone (column numbers or ids, as ``ids`` says).
    as_frame : bool, keyword-only
        Return one pandas DataFrame with columns ``user``, ``rank``, ``item``, ``score`` (one
        row per real recommendation, ids where the model has them when the result speaks ids)
        instead of the two arrays. Needs pandas.
    approximate : bool or ApproximateIndex, keyword-only
        Rank with an approximate nearest-neighbour index instead of every item
        (``docs/partial_fit.md``): an :class:`~fastpu.model.ApproximateIndex` built once is
        reused; ``True`` builds one for this call (``kind="ivf"``, the quickest to build).
        Needs faiss (the ``ann`` extra). Default ``False``: exact.

    Returns
    -------
    items : ndarray, shape (len(users), min(n, n_candidates)); 1-d for a single user
        Best first, ties broken by lower item number: item numbers (int64), or item ids when
        the result speaks ids. A row with fewer ranked items than columns is padded with -1
        (numbers, integer ids) or ``""`` (string ids), whose score is -inf: ``np.isfinite(
        scores)`` marks the real recommendations. A single user gets only its real ones.
    scores : ndarray of float64, the same shape
        The matching scores; ``-inf`` in padding slots.
    frame : pandas.DataFrame
        Instead of the two, with ``as_frame=True``.

    Raises
    ------
    TypeError
        If ``model`` is not a Factorization, ``n``, ``ids`` or ``exclude_seen`` has the wrong
        type, or ``users``/``items``/``exclude`` are neither numbers nor ids of the model's id
        type.
    ValueError
        If ``Y_seen`` does not have the model's shape (or, as a Dataset, shares no id with the
        model), ``n < 1``, a number is out of range, an id is unknown, ids are given to a
        model without ids, or the factors (of the item side or of the requested users) are not
        finite.

    Warns
    -----
    UserWarning
        If a ``Y_seen`` matrix or Dataset shares no positive with the training positives of the
        requested users (a test split, or rows in another order than the model's users): the
        model leaves out its training positives by itself.
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
    >>> items, scores = fp.recommend(m, users=["ann", "bob"], n=2)   # ids in, ids out
    >>> items.tolist()                        # training positives left out; "" pads ann's row
    [['oat', ''], ['jam', 'oat']]
    >>> idx, sc = fp.recommend(m, users=[0, 1], n=5)
    >>> idx.shape                             # at most the 3 items, not n=5 columns
    (2, 3)
    >>> items, scores = m.recommend(["oat"], "cy")   # one user: 1-d, Y_seen adds "oat"
    >>> items.tolist()
    ['tea']
    """
    model = check_model(model)
    n = V.check_k(n, name="n")
    ids = _check_ids_flag(ids)
    exclude_seen = _check_bool(exclude_seen, "exclude_seen")
    as_frame = _check_bool(as_frame, "as_frame")
    if sp.issparse(users) and _is_a_user(Y_seen):
        # implicit's order, recommend(userid, user_items): fastpu's is (Y_seen, users)
        who = int(Y_seen) if isinstance(Y_seen, (int, np.integer)) else repr(Y_seen)
        raise TypeError(f"recommend takes (Y_seen, users), got a user ({who}) first and a "
                        f"sparse row second (implicit's order, recommend(userid, user_items)); "
                        f"pass recommend(Y_seen, users={who}) (the model leaves out its "
                        f"training positives by itself), or use fastpu.compat.implicit for "
                        f"implicit's interface")
    single = users is not None and np.ndim(users) == 0
    out_ids = speaks_ids(ids, users, items, exclude)
    users = _positions(model, users, side="user", name="users", ids=ids)
    if users is None:
        users = np.arange(model.shape[0], dtype=np.int64)
    cand = _candidates(model, items, exclude, ids)
    if is_id_lists(Y_seen):
        extra, check = _seen_lists(model, Y_seen, users, single), False
    else:
        extra = None if Y_seen is None else _seen_matrix(model, Y_seen)
        check = extra is not None
    seen = _exclusion(model, users, extra, exclude_seen=exclude_seen, check=check)
    _check_model_finite(model, users)
    index = _approximate_index(model, approximate, side="item", similarity="dot")
    n_take = min(n, cand.size)
    if index is not None:
        out_items, out_scores = index.recommend(model, users, seen, cand, n_take)
    else:
        out_items, out_scores = exact_topk(model, users, seen, cand, n_take)
    item_ids = _ids_of(model, "item") if _use_ids(model, "item", out_ids) else None
    if as_frame:
        keep = out_items >= 0
        user_ids = _ids_of(model, "user") if _use_ids(model, "user", out_ids) else None
        return _frame(user=np.repeat(users if user_ids is None else np.asarray(user_ids)[users],
                                     keep.sum(axis=1)),
                      rank=np.concatenate([np.arange(1, k + 1) for k in keep.sum(axis=1)] or
                                          [np.zeros(0, np.int64)]),
                      item=(out_items[keep] if item_ids is None
                            else np.asarray(item_ids)[out_items[keep]]),
                      score=out_scores[keep])
    return shaped(out_items, out_scores, single, item_ids)


def _seen_lists(model: Factorization, Y_seen: Any, users: IntArray, single: bool) -> Sparse:
    """Lists of seen item ids, one per requested user, as an m × n CSR on those users' rows."""
    m, n = model.shape
    if len(Y_seen) == 0 and users.size == 1:
        Y_seen = [[]]                             # a flat (empty) list: the one user's items
    rows, flat = rows_from_lists(Y_seen, ids=model.item_ids, size=n, name="Y_seen", stacklevel=4)
    if rows.shape[0] != users.size:
        raise ValueError(
            f"Y_seen has {rows.shape[0]} list(s) of item ids, expected {users.size}: one per "
            f"requested user, in the order of users{' (a flat list is one user)' if not flat else ''}")
    C = rows.tocoo()
    Y = sp.csr_array((np.ones(C.nnz), (users[C.row], C.col)), shape=(m, n))
    return V.check_csr(Y, name="Y_seen")


def _approximate_index(model: Factorization, approximate: Any, side: str,
                       similarity: str = "dot") -> Any:
    """None for exact ranking; else the approximate index to rank with (built when True)."""
    if approximate is False or approximate is None:
        return None
    from fastpu.model._ann import ApproximateIndex

    if approximate is True:                   # for this call only: the index quickest to build
        return ApproximateIndex(model, side=side, similarity=similarity, kind="ivf")
    if isinstance(approximate, ApproximateIndex):
        approximate.check_model(model, side=side, similarity=similarity)
        return approximate
    raise TypeError(f"approximate must be True, False or a fastpu.model.ApproximateIndex, got "
                    f"{type(approximate).__name__}")


def _frame(**columns: Any) -> Any:
    """A pandas DataFrame of the columns (an ImportError that says what to install otherwise)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("as_frame=True needs pandas, which is not installed: pip install pandas "
                          "(or leave as_frame out to get numpy arrays)") from None
    return pd.DataFrame(columns)


# ----------------------------------------------------------------------------- similar

def _similar(model: Factorization, query: Any, n: int, ids: bool | None, side: str, *,
             candidates: Any = None, exclude: Any = None, as_frame: bool = False,
             approximate: Any = False) -> Any:
    model = check_model(model)
    n = V.check_k(n, name="n")
    ids = _check_ids_flag(ids)
    as_frame = _check_bool(as_frame, "as_frame")
    if query is None:
        raise TypeError(f"query must be the {side}s to find neighbours for, got None")
    single = np.ndim(query) == 0
    out_ids = speaks_ids(ids, query, candidates, exclude)
    q = _positions(model, query, side=side, name="query", ids=ids)
    F = np.asarray(model.item_factors if side == "item" else model.user_factors, dtype=np.float64)
    if F.shape[1] == 0:
        raise ValueError(f"similar_{side}s compares {side} vectors, and this {model.method} model "
                         f"has none (model.{side}_factors has no columns)")
    _check_finite(F, f"model.{side}_factors")
    N = F.shape[0]
    plural = f"{side}s"
    cand = _positions(model, candidates, side=side, name=plural, ids=ids)
    cand = np.arange(N, dtype=np.int64) if cand is None else np.unique(cand)
    drop = _positions(model, exclude, side=side, name="exclude", ids=ids)
    if drop is not None and drop.size:
        cand = cand[~np.isin(cand, drop)]
    cand = np.ascontiguousarray(cand, dtype=np.int64)
    # each query leaves out only itself, so its results do not depend on the other queries:
    # the width is what a query outside the candidates gets, and a query among them has one
    # slot fewer to fill (padded)
    n_take = min(n, cand.size)
    index = _approximate_index(model, approximate, side=side, similarity="cosine")
    if index is not None:
        out_idx, out_sc = index.similar(q, cand, n_take)
    else:
        out_idx, out_sc = exact_similar(F, q, cand, n_take)
    labels = _ids_of(model, side) if _use_ids(model, side, out_ids) else None
    if as_frame:
        keep = out_idx >= 0
        return _frame(query=np.repeat(q if labels is None else labels[q], keep.sum(axis=1)),
                      rank=np.concatenate([np.arange(1, k + 1) for k in keep.sum(axis=1)] or
                                          [np.zeros(0, np.int64)]),
                      **{side: (out_idx[keep] if labels is None else labels[out_idx[keep]]),
                         "similarity": out_sc[keep]})
    return shaped(out_idx, out_sc, single, labels)


_SIMILAR_DOC = """The ``n`` {side}s most similar to each query {side}, by cosine of the {side} factors.

    similarity({a}, {b}) = f_{a} · f_{b} / (‖f_{a}‖ ‖f_{b}‖) over the rows of
    ``model.{side}_factors`` (0 when either vector is zero, so never NaN). Each query leaves
    out itself, and only itself: its results do not depend on the other queries of a batch.
    For a model whose scores are not a plain product (CSRR's U + V) the rule is the same: the
    low-rank factors are compared and CSRR's sparse part V, which only sits on training
    positives, is left out. Queries run in blocks, so nothing {side}s×{side}s is allocated.

    Parameters
    ----------
    model : Factorization
        Any fitted fastpu model.
    query : int, str or array-like
        Query {side}s: numbers in ``[0, {size})``, or ids (a string is always an id; integer
        ids need ``ids=True``). A single {side} (a scalar) gives 1-d results, a list 2-d ones.
    n : int
        Neighbours per query (``n >= 1``).
    {name} : array-like, optional, keyword-only
        Candidates: rank only among these {side}s (numbers or ids, as ``ids`` says), as
        ``recommend``'s ``items``. All when ``None``.
    exclude : array-like, optional, keyword-only
        {Side}s never returned (numbers or ids, as ``ids`` says).
    ids : bool or None, keyword-only
        ``None`` (default): strings are ids, numbers are numbers, and the result holds ids when
        ``query``, ``{name}`` or ``exclude`` was given as string ids. ``True``: all are ids
        (``model.{side}_ids``, integer ids included) and so is the result. ``False``: numbers.
    as_frame : bool, keyword-only
        Return one pandas DataFrame with columns ``query``, ``rank``, ``{side}``,
        ``similarity`` (one row per real neighbour) instead of the two arrays. Needs pandas.
    approximate : bool or ApproximateIndex, keyword-only
        Search an approximate nearest-neighbour index (``docs/partial_fit.md``) instead of
        every {side}: ``True`` builds one for this call (``kind="ivf"``); an index built once with
        ``ApproximateIndex(model, side="{side}", similarity="cosine")`` is reused.

    Returns
    -------
    neighbours : ndarray, shape (len(query), min(n, number of candidates)); 1-d for one query
        Most similar first, ties broken by lower number: {side} numbers (int64), or ids when the
        result speaks ids. A query that is itself a candidate has one neighbour fewer to
        give; a row with fewer neighbours than columns is padded with -1 (numbers, integer
        ids) or ``""`` (string ids), whose similarity is -inf. A single query gets only its
        real neighbours.
    similarities : ndarray of float64, same shape
        Cosines in [-1, 1]; -inf in padding slots.

    Raises
    ------
    TypeError
        If ``model`` is not a Factorization, ``n`` or ``ids`` has the wrong type, or
        ``query`` is None, or neither numbers nor ids of the model's type.
    ValueError
        If ``n < 1``, a number is out of range, an id is unknown, ids are given to a model
        without ids, or ``model.{side}_factors`` has non-finite values.

    Examples
    --------
    >>> import numpy as np, fastpu as fp
    >>> m = fp.Factorization(np.eye(3), np.array([[1.0, 0, 0], [2.0, 0.1, 0], [0, 0, 1.0]]))
    >>> from fastpu.model import {func}
    >>> {func}(m, [{example}], n=2)[0]
    {expected}
    >>> {func}(m, 0, n=2, {name}=[2])[0]          # one query, one candidate: 1-d
    array([2])
    """


def similar_items(model: Factorization, query: ArrayLike, n: int = 10, *,
                  items: ArrayLike | None = None, exclude: ArrayLike | None = None,
                  ids: bool | None = None, as_frame: bool = False, approximate: Any = False) -> Any:
    return _similar(model, query, n, ids, "item", candidates=items, exclude=exclude,
                    as_frame=as_frame, approximate=approximate)


def similar_users(model: Factorization, query: ArrayLike, n: int = 10, *,
                  users: ArrayLike | None = None, exclude: ArrayLike | None = None,
                  ids: bool | None = None, as_frame: bool = False, approximate: Any = False) -> Any:
    return _similar(model, query, n, ids, "user", candidates=users, exclude=exclude,
                    as_frame=as_frame, approximate=approximate)


similar_items.__doc__ = _SIMILAR_DOC.format(
    Side="Item", side="item", name="items", a="i", b="j", size="n_items", func="similar_items", example="0",
    expected="array([[1, 2]])")
similar_users.__doc__ = _SIMILAR_DOC.format(
    Side="User", side="user", name="users", a="u", b="v", size="m", func="similar_users", example="0",
    expected="array([[1, 2]])")
