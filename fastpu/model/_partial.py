"""Partial fits: some users' (or items') rows recomputed from new interactions, new ids appended.

``partial_fit_users(model, new_rows, user_ids)`` solves, for each listed user, the row problem
that :func:`fastpu.fold_in` solves for a new user (the method's own row problem with the item
side fixed, to convergence) from the user's rows in ``new_rows``; users the model knows get
their row replaced, the others are appended. ``partial_fit_items`` does the same for items:
each method's row problem with the roles of users and items exchanged, where that is a row
problem of the same kind (ocmf, CSRR-e); fBGD and HOMF refuse, saying why (``_sides.py``).

The model is not changed: a new one is returned (fastpu's models are immutable values).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import registry
from fastpu._core import validation as V
from fastpu._core.exceptions import user_stacklevel
from fastpu._core.dataset import Dataset
from fastpu._core.factorization import Factorization, positives
from fastpu._core.hints import ArrayLike, Sparse, Threads
from fastpu._core.rows import rule_weights
from fastpu._core.threads import limit_threads
from fastpu.model._fold_in import check_new_rows, trained_users
from fastpu.model._inputs import IdLists

__all__ = ["partial_fit_items", "partial_fit_users"]

_OTHER = {"user": "item", "item": "user"}


def _entry(model: Any, what: str) -> Any:
    if not isinstance(model, Factorization):
        raise TypeError(f"model must be a fastpu Factorization (the result of a fit), got "
                        f"{type(model).__name__}")
    known = [e.name for e in registry.entries() if e.fold is not None and e.partial is not None]
    V.check_choice(model.method, name="model.method", choices=known)
    return registry.get(model.method)


def _targets(model: Factorization, ids: Any, *, side: str, count: int,
             dataset_ids: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Positions of the listed ids (existing rows, then appended ones) and the grown id array."""
    from fastpu.model._lookup import lookup

    name = f"{side}_ids"
    if ids is None:
        ids = dataset_ids
    if ids is None:
        raise TypeError(f"partial_fit_{side}s() needs {name}: the id of each of new_rows' "
                        f"{count} row(s) (the model's {side} ids, or {side} numbers for a model "
                        f"without ids: from {model.shape[0 if side == 'user' else 1]} on to "
                        f"append), e.g. partial_fit_{side}s(model, rows, {name}=[...])")
    arr = np.asarray(ids)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    size = model.shape[0 if side == "user" else 1]
    known = getattr(model, name)
    if known is None:
        pos = V.check_indices(arr, name=name, size=np.iinfo(np.int64).max)
        V.check_ids(pos, name=name, size=count, expected=f"one {side} number per row of new_rows")
        new = np.sort(pos[pos >= size])
        if new.size and not np.array_equal(new, np.arange(size, size + new.size)):
            raise ValueError(f"{name} appends {side}s {new[:5].tolist()}{' ...' if new.size > 5 else ''} "
                             f"to a model of {size} {side}s without ids: appended numbers must "
                             f"continue its numbering ({size}, {size + 1}, ...) with no gap")
        return pos, None
    arr = V.check_ids(arr, name=name, size=count, expected=f"one {side} id per row of new_rows")
    pos = lookup(known, arr, name=name, what=side, strict=False)
    fresh = pos < 0
    pos[fresh] = size + np.arange(int(fresh.sum()))
    known = np.asarray(known)
    if known.dtype.kind == "O":
        grown = np.concatenate([known, arr[fresh].astype(object)])
    else:                      # strings widen to the longest; integers stay integers
        grown = np.concatenate([known, arr[fresh]])
    return pos, grown


def _refuse(model: Factorization, sides: Any, side: str, pos: np.ndarray, size: int,
            label: str) -> None:
    prm = model.params
    where = f"partial_fit_{label}s"
    for key in sides.features["user"]:
        if prm.get(key):
            raise ValueError(
                f"{where}: this model was fitted with {label} features, so a {label}'s factor is "
                f"a function of its features (x W) with no row of its own to recompute; "
                + ("give new users their factors from features with fastpu.fold_in(model, "
                   "user_features=...)" if label == "user" else "features of new items need a refit")
                + ", or refit on the updated data")
    for key in sides.graphs["user"]:
        if prm.get(key) and np.any(pos < size):
            raise ValueError(
                f"{where}: this model was fitted with a {label} graph, which couples the rows of "
                f"{label}s it links: an existing {label}'s row problem involves its neighbours' "
                f"factors and the graph, which the model does not keep, so it is not a row "
                f"problem with the other side fixed. New {label}s (no edges) can be appended; to "
                f"change existing ones, refit on the updated data (a warm start: init=)")


def _partial(model: Factorization, new_rows: Any, ids: Any, *, side: str, p: Any, q: Any,
             tol: float, max_iter: int, seed: int, n_threads: Threads) -> Factorization:
    entry = _entry(model, side)
    sides = entry.resolve("partial")
    solver = entry.resolve("fold")
    tol = V.check_scalar(tol, name="tol", minimum=0.0)
    max_iter = V.check_int(max_iter, name="max_iter", minimum=1)
    rng = V.check_seed(seed)
    V.check_dense(model.item_factors, name="model.item_factors")
    V.check_dense(model.user_factors, name="model.user_factors")
    if side == "item":
        view = _items_view(model, sides, p)            # refuses a method without a row problem
    else:
        view = model
    if new_rows is None:
        raise TypeError(f"partial_fit_{side}s() needs new_rows: the {side}s' interactions (a "
                        f"sparse matrix with one row per listed {side}, a Dataset, or one list of "
                        f"{_OTHER[side]} ids per {side})")
    data = new_rows
    if side == "item" and isinstance(new_rows, Dataset):
        # pairs of (user, item): its items are the rows to recompute
        data = dataclasses.replace(new_rows, Y=sp.csr_array(new_rows.Y.T), user_ids=new_rows.item_ids,
                                   item_ids=new_rows.user_ids, user_graph=None, item_graph=None,
                                   user_features=None, item_features=None, timestamps=None,
                                   hidden=None, test_mask=None)
    nonneg = not getattr(solver, "values_may_be_negative", lambda model: False)(view)
    Y, dataset_ids = check_new_rows(view, data, nonnegative=nonneg, name="new_rows",
                                    what=_OTHER[side])
    assert Y is not None
    size = view.shape[0]
    pos, grown = _targets(model, ids, side=side, count=Y.shape[0], dataset_ids=dataset_ids)
    _refuse(view, sides, side, pos, size, side)
    base = trained_users(view) if side == "user" else view
    p_rows = _row_weights(model, side, p, q, pos, size, Y)
    with limit_threads(n_threads):
        F, info = solver.fold_rows(base, Y, None, p=p_rows, q=None if side == "item" else q,
                                   tol=tol, max_iter=max_iter, rng=rng, dense_limit=None)
    fields = info.pop("fields", {})          # a model's own parts for the rows (CSRR's V)
    Vnew = fields.get("V", info.pop("V", None))
    if not np.all(np.isfinite(F)):
        raise FloatingPointError(f"partial_fit_{side}s: {int(np.sum(~np.isfinite(F)))} non-finite "
                                 "factor entries (overflow); check the scale of new_rows, p and q")
    if "grad_norm" in info and not (np.all(np.isfinite(info["grad_norm"]))
                                    and np.all(np.isfinite(info["grad_norm0"]))):
        raise FloatingPointError(f"partial_fit_{side}s: a row problem has a non-finite gradient "
                                 "(overflow); check the scale of new_rows, p and q")
    if "converged" in info and not info["converged"].all():
        bad = int((~info["converged"]).sum())
        warnings.warn(f"partial_fit_{side}s: {bad} of {F.shape[0]} rows stopped above tol={tol:g} "
                      f"(see extras['partial_fit']['grad_norm'])", RuntimeWarning,
                      stacklevel=user_stacklevel())
    return _assemble(model, sides, side, pos, F, grown, Vnew, info, q, Y, p_rows)


def _items_view(model: Factorization, sides: Any, p: Any) -> Factorization:
    m = model.shape[0]
    if p is not None:
        p = V.check_vector(p, name="p", size=m)
    view = sides.swap(model, p)
    return dataclasses.replace(view, user_ids=model.item_ids, item_ids=model.user_ids, seen=None)


def _row_weights(model: Factorization, side: str, p: Any, q: Any, pos: np.ndarray,
                 size: int, Y: Sparse) -> Any:
    """The unlabeled weights of the recomputed rows (ocmf): users' p (given, else the fit's
    ``p="user-oriented"`` rule on their rows of ``Y``), or for items their q (given, else the
    model's fitted q for existing items and 1 for new ones)."""
    if side == "user":
        return rule_weights(model.params, Y) if p is None else p
    if q is not None:
        return V.check_vector(q, name="q", size=pos.size)
    fitted = model.extras.get("q")
    if fitted is None:
        return None
    out = np.ones(pos.size)
    old = pos < size
    out[old] = np.asarray(fitted, dtype=np.float64)[pos[old]]
    return out


def _grow(A: np.ndarray, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    old = A.shape[0]
    total = max(old, int(pos.max(initial=-1)) + 1)
    out = np.empty((total,) + A.shape[1:], dtype=np.result_type(A.dtype, rows.dtype)
                   if A.dtype.kind == "f" else np.float64)
    out[:old] = A
    out[pos] = rows
    return np.ascontiguousarray(out.astype(A.dtype, copy=False) if A.dtype.kind == "f" else out)


def _grow_sparse(M: Sparse, pos: np.ndarray, rows: Sparse, total: int) -> Sparse:
    """Rows ``pos`` of CSR ``M`` replaced by ``rows`` (and appended up to ``total`` rows)."""
    keep = np.ones(M.shape[0], dtype=bool)
    keep[pos[pos < M.shape[0]]] = False
    Mk = sp.csr_array(M).tocoo()
    stay = keep[Mk.row]
    R = sp.csr_array(rows).tocoo()
    data = np.concatenate([Mk.data[stay], R.data])
    r = np.concatenate([Mk.row[stay], pos[R.row]])
    c = np.concatenate([Mk.col[stay], R.col])
    out = sp.csr_array((data, (r, c)), shape=(total, M.shape[1]))
    out.sum_duplicates()
    out.sort_indices()
    return out


def _assemble(model: Factorization, sides: Any, side: str, pos: np.ndarray, F: np.ndarray,
              grown: np.ndarray | None, Vnew: Any, info: dict[str, Any], q: Any,
              Y: Sparse, p_rows: Any = None) -> Factorization:
    old = model.shape[0 if side == "user" else 1]
    attr = f"{side}_factors"
    cur = getattr(model, attr)
    factors = _grow(np.asarray(cur), pos, F.astype(np.asarray(cur).dtype, copy=False))
    changes: dict[str, Any] = {attr: factors}
    if grown is not None:
        changes[f"{side}_ids"] = grown
    extras = dict(model.extras)
    extras.update(sides.rows_changed(model, side, old, pos, F))
    if side == "item" and "q" in model.extras and factors.shape[0] > old:
        qq = np.ones(factors.shape[0])
        qq[:old] = np.asarray(model.extras["q"], dtype=np.float64)
        new = pos >= old
        if q is not None:
            qq[pos[new]] = np.asarray(q, dtype=np.float64)[new]
        extras["q"] = qq
    if side == "user" and "p" in model.extras:
        # the users' weights follow their rows (partial_fit_items reads them)
        pp = np.ones(factors.shape[0])
        pp[:old] = np.asarray(model.extras["p"], dtype=np.float64)
        pp[pos] = V.check_vector(p_rows, name="p", size=pos.size)
        extras["p"] = pp
    extras["partial_fit"] = dict(info, side=side, rows=pos)
    changes["extras"] = extras
    if Vnew is not None and getattr(model, "V", None) is not None:
        M = model.V if side == "user" else model.V.T  # type: ignore[attr-defined]
        Vg = _grow_sparse(M, pos, Vnew, factors.shape[0])
        changes["V"] = Vg if side == "user" else sp.csr_array(Vg.T)
    if model.seen is not None:
        # the recomputed rows' positives replace theirs in the record of training positives
        # (appended users or items get rows or columns of their own)
        M = sp.csr_array(model.seen if side == "user" else model.seen.T)
        grown_seen = _grow_sparse(M, pos, positives(Y), factors.shape[0])
        changes["seen"] = positives(grown_seen if side == "user" else grown_seen.T)
    return dataclasses.replace(model, **changes)


_DOC = """Recompute the listed {side}s' rows from new interactions; append {side}s the model lacks.

    Each listed {side}'s factor solves the row problem that the model's method solves for a
    {side} when the {other}s are held fixed — the problem :func:`fastpu.fold_in` solves for new
    users{swap} — to convergence, from the {side}'s row of ``new_rows``, which replaces
    everything the model had for it (pass all of its interactions, old and new). {Side}s the
    model knows have their row replaced; the others are appended, in the order given, with their
    ids. Every other row, the {other} side and the params stay as they were. See
    ``docs/partial_fit.md``.

    Parameters
    ----------
    model : Factorization
        A model fitted by ocmf, fbgd, csrr (variant ``"e"``) or homf{refused}.
    new_rows : scipy.sparse matrix, Dataset, or lists of {other} ids
        The listed {side}s' interactions: a matrix with one row per listed {side} and one column
        per {other} of the model ({n_other}; stored values are the weights, as in ``fit``), a
        :class:`~fastpu.datasets.Dataset` of (user, item) pairs ({dataset}), or one list of
        {other} ids per {side} (the model's {other} ids when it has them, numbers otherwise;
        a flat list is one {side}).
    {side}_ids : array-like, optional
        The id of each row of ``new_rows`` (required unless ``new_rows`` is a Dataset with {side}
        ids): the model's {side} ids when it has them (unknown ids are appended), else {side}
        numbers (``>= {n_side}`` appends, continuing the numbering).
    p, q : array-like, optional, keyword-only
        ocmf's unlabeled weights: {pq}
    tol, max_iter, seed, n_threads
        As in :func:`fastpu.fold_in`.

    Returns
    -------
    Factorization
        A new model of the same type: the listed rows recomputed, new {side}s appended
        (``{side}_ids`` grown), CSRR's sparse part V and the record of training positives
        (``seen``, what :func:`fastpu.recommend` leaves out) updated on those {side}s, and
        ``extras["partial_fit"]`` with the solver's report (as ``fold_in``'s) and the rows.

    Raises
    ------
    TypeError
        If ``model`` is not a Factorization, ``{side}_ids`` is missing, or an argument has the
        wrong type.
    ValueError
        If ``new_rows`` does not fit the model, ``{side}_ids`` repeats an id or skips numbers,
        {refuse_text}, the model's {side}s have features (no row of their own), or an existing
        {side} of a model fitted with a {side} graph is listed (the graph couples the rows).
    FloatingPointError
        If a result is not finite.

    Examples
    --------
{example}
    """

partial_fit_users_example = """    >>> import fastpu as fp
    >>> data = fp.datasets.from_pairs(["a", "a", "b", "c", "c"], [1, 2, 2, 3, 1])
    >>> model = fp.ocmf.fit(data, 2, n_iter=2, loss="square", rho=0.1)
    >>> more = fp.partial_fit_users(model, [[1, 2, 3], [3]], user_ids=["a", "new"])
    >>> more.user_ids.tolist(), more.user_factors.shape
    (['a', 'b', 'c', 'new'], (4, 2))"""

partial_fit_items_example = """    >>> import fastpu as fp
    >>> data = fp.datasets.from_pairs(["a", "a", "b", "c", "c"], [1, 2, 2, 3, 1])
    >>> model = fp.ocmf.fit(data, 2, n_iter=2, loss="square", rho=0.1)
    >>> more = fp.partial_fit_items(model, [["a", "b"]], item_ids=[9])   # item 9's users
    >>> more.item_ids.tolist(), more.item_factors.shape
    ([1, 2, 3, 9], (4, 2))"""


def partial_fit_users(model: Factorization, new_rows: Sparse | Dataset | IdLists,
                      user_ids: ArrayLike | None = None, *, p: ArrayLike | None = None,
                      q: ArrayLike | None = None, tol: float = 1e-10, max_iter: int = 100,
                      seed: int = 0, n_threads: Threads = None) -> Factorization:
    return _partial(model, new_rows, user_ids, side="user", p=p, q=q, tol=tol,
                    max_iter=max_iter, seed=seed, n_threads=n_threads)


def partial_fit_items(model: Factorization, new_rows: Sparse | Dataset | IdLists,
                      item_ids: ArrayLike | None = None, *, p: ArrayLike | None = None,
                      q: ArrayLike | None = None, tol: float = 1e-10, max_iter: int = 100,
                      seed: int = 0, n_threads: Threads = None) -> Factorization:
    return _partial(model, new_rows, item_ids, side="item", p=p, q=q, tol=tol,
                    max_iter=max_iter, seed=seed, n_threads=n_threads)


partial_fit_users.__doc__ = _DOC.format(
    side="user", Side="User", other="item", swap="", refused="", n_other="n_items",
    n_side="m", dataset="columns matched by item id", example=partial_fit_users_example,
    pq="``p`` the listed users' (default 1, or for a model fitted with ``p=\"user-oriented\"`` "
       "that rule on their rows of new_rows), ``q`` the items' (default the model's fitted q).",
    refuse_text="the model is CSRR-I/II (no user factors)")
partial_fit_items.__doc__ = _DOC.format(
    side="item", Side="Item", other="user",
    swap=", with the roles of users and items exchanged (ocmf: Yᵀ, p ↔ q, λ_w ↔ λ_h; CSRR-e: "
         "P ↔ Q, V ↔ Vᵀ)",
    refused=" (fbgd and homf refuse: their item side is not a row problem of the same kind)",
    n_other="m", n_side="n_items", dataset="its items are the rows, its users matched by user id",
    example=partial_fit_items_example,
    pq="``p`` the users' weights (length m; default 1, as in fit — pass the p array the model "
       "was fitted with; a model fitted with ``p=\"user-oriented\"`` uses its "
       "``extras['p']``), ``q`` the listed items' (default the model's fitted q for items it "
       "has, 1 for new ones).",
    refuse_text="the model is fBGD or HOMF (each refusal says why)")
