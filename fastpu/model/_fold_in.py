"""Fold-in: factors for users who were not in the training matrix, with the item side fixed.

For each method, a new user's factor is the solution of exactly the row problem the method
solves for a training user when the item side is held fixed, solved to convergence. The row
problems live with their methods (``fastpu.<method>._fold``, found through the registry):

* ocmf (no user features): w minimises Σ_{j∈Ω+} ℓ⁺_j(w·e_j) + p (wᵀMw − 2ā wᵀκ) + λ‖w‖² with
  M = Eᵀdiag(q)E, κ = Eᵀq, by Newton's method with the exact k×k Hessian;
* ocmf / fbgd with user features: cold start, the factor is ``user_features @ W`` (with fbgd's
  bias columns);
* fbgd (plain ids): a weighted least-squares row, one k×k Cholesky solve;
* HOMF: the new node's row of f_T(A), then the ridge regression (V_Ωᵀ V_Ω + 2λI) u = V_Ωᵀ f_Ω;
* CSRR-e: projected Newton over p ∈ [0, 1/√k]^k with the sparse part eliminated.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import registry
from fastpu._core import validation as V
from fastpu._core.dataset import Dataset
from fastpu._core.factorization import Factorization, positives
from fastpu._core.hints import ArrayLike, Matrix, Sparse, Threads
from fastpu._core.threads import limit_threads
from fastpu.model._inputs import IdLists, is_id_lists, rows_from_lists

__all__ = ["fold_in", "check_new_rows", "trained_users"]

def fold_in(model: Factorization, Y_new: Sparse | Dataset | IdLists | None = None, *, user_features: Matrix | None = None,
            p: ArrayLike | None = None, q: ArrayLike | None = None,
            user_ids: ArrayLike | None = None, tol: float = 1e-10, max_iter: int = 100,
            seed: int = 0, dense_limit: int | None = None,
            n_threads: Threads = None) -> Factorization:
    """Factors for new users (rows not in the training matrix), with the model's item side fixed.

    Each new user's factor solves the row problem that the model's method solves for a
    training user when the items are fixed (see ``docs/fold_in.md`` for each method's problem):

    ========================  =============================================================
    ocmf (no user features)   Newton to ‖∇f‖ ≤ ``tol``·‖∇f(0)‖ (square loss: the exact solve)
    ocmf, user features       cold start: ``user_features @ W``
    fbgd (plain ids)          weighted least squares, exact k×k (Cholesky) solve
    fbgd, user features       cold start: ``[Z V_user, Z w_user + w0, 1]`` (bias columns)
    homf                      the new node's row of f_T, then the exact ridge solve
    csrr ``"e"``              projected Newton to ‖projected ∇‖ ≤ ``tol``·‖∇(0)‖
    ========================  =============================================================

    Parameters
    ----------
    model : Factorization
        A model fitted by ``fastpu.ocmf``, ``fbgd``, ``homf`` or ``csrr`` (variant ``"e"``).
    Y_new : scipy.sparse matrix, shape (m_new, n), Dataset, or lists of item ids, optional
        The new users' positives over the model's n items (stored values are the weights C_ij,
        as in ``fit``). Required unless the model has user features. A
        :class:`~fastpu.datasets.Dataset` (``datasets.from_pairs(users, items)``) has its
        columns matched to the model's items by id when both have item ids (positives of items
        the model does not know are left out with a warning), and gives ``user_ids`` unless
        they are passed. Item ids work too: one list per new user (``[[50, 172], [181]]``; a
        flat list ``[50, 172, 181]`` is one user), the model's item ids when it has them,
        positions otherwise; each listed item is a positive of weight 1 (unknown ids are left
        out with a warning; when the model knows none of them, it is an error naming them).
    user_features : array or sparse matrix, shape (m_new, d), optional
        The new users' features, for models fitted with ``user_features`` (and only for them).
    p : array-like, shape (m_new,), optional
        ocmf only: the new users' unlabeled weights p_i (multiplied by the model's ``rho``);
        default ones, as in ``fit``, or for a model fitted with ``p="user-oriented"`` that
        rule on the new users' own positives: c_i / ``model.params["p_mean"]``.
    q : array-like, shape (n,), optional
        ocmf only: the item weights q_j; default the ``q`` the model was fitted with
        (``model.extras["q"]``), ones when it was fitted without.
    user_ids : array-like, shape (m_new,), optional
        Identifiers of the new users (distinct), kept on the result.
    tol : float
        Relative tolerance of the iterative row solvers (ocmf's non-square losses and the square
        one, CSRR-e): stop when the row's (projected) gradient norm is at most ``tol`` times its
        norm at the zero start. Default 1e-10.
    max_iter : int
        Most Newton steps per row.
    seed : int
        Seed (>= 0) of the negatives sampled for ocmf models fitted with ``negatives="sampled"``.
    dense_limit : int, optional
        ocmf ``negatives="full_logistic"`` only: the largest m_new·n accepted (default 25,000,000).
    n_threads : int, optional
        numba threads for this call (restored afterwards).

    Returns
    -------
    Factorization
        The same type as ``model`` (a :class:`~fastpu.csrr.CSRRModel` for CSRR), holding the
        m_new new users' ``user_factors``, their positives as ``seen`` (what
        :func:`fastpu.recommend` leaves out for them) and the model's item side, params and
        ``item_ids``, so that ``scores``, :func:`fastpu.recommend` and :func:`fastpu.evaluate`
        work on it. For CSRR-e its ``V`` holds the new users' sparse
        part on their positives. ``extras["fold_in"]`` reports, per new user, the final and
        initial gradient norms and the solver steps (iterative solvers only).

    Raises
    ------
    TypeError
        If ``model`` is not a Factorization, ``Y_new`` is not sparse, ``seed`` is not a
        non-negative integer, or an argument has the wrong type.
    ValueError
        If ``Y_new`` does not have the model's number of items or has non-finite or negative
        values; ``user_features`` is given to a model without user features, missing for one
        with them, has the wrong number of columns, or is combined with ``Y_new``; ``p``,
        ``q`` or ``user_ids`` have the wrong length, or ``user_ids`` repeats an id; ``Y_new``
        names only item ids the model does not know (nothing to fold in); the model
        is CSRR-I/II (a dense U has no user factor) or from an unknown method, or lacks an entry
        of ``params`` / ``extras`` that its method's fold-in needs, or has one that its method's
        fit would not make (a wrong type, shape or range: a model built by hand or edited).
    FloatingPointError
        If a result is not finite.

    Warns
    -----
    RuntimeWarning
        If some row's solver stopped above ``tol`` (reported in ``extras["fold_in"]``).

    Examples
    --------
    >>> import fastpu as fp
    >>> data = fp.datasets.synthetic(60, 40, rank=3, density=0.1, seed=0)
    >>> model = fp.ocmf.fit(data.Y[:50], 4, loss="square", rho=0.1, n_iter=3)
    >>> new = fp.fold_in(model, data.Y[50:])
    >>> new.user_factors.shape
    (10, 4)
    >>> items, scores = fp.recommend(new, n=5)          # their own positives left out
    >>> items.shape
    (10, 5)
    >>> fp.fold_in(model, [3, 17, 25]).user_factors.shape    # one new user, by item
    (1, 4)
    """
    if not isinstance(model, Factorization):
        raise TypeError(f"model must be a fastpu Factorization (the result of a fit), got {type(model).__name__}")
    folds = [e.name for e in registry.entries() if e.fold is not None]
    V.check_choice(model.method, name="model.method", choices=folds)
    solver = registry.get(model.method).resolve("fold")
    # params and extras against the factors, as the fit makes them: a model edited in memory (or
    # in a file) is refused here, naming the entry, before a row solver hands shapes to a kernel
    registry.check_fitted(model)
    tol = V.check_scalar(tol, name="tol", minimum=0.0)
    max_iter = V.check_int(max_iter, name="max_iter", minimum=1)
    rng = V.check_seed(seed)
    V.check_dense(model.item_factors, name="model.item_factors")      # finite, 2-d
    nonneg = not getattr(solver, "values_may_be_negative", lambda model: False)(model)
    Y_new, dataset_ids = check_new_rows(model, Y_new, nonnegative=nonneg)
    if user_ids is None:
        user_ids = dataset_ids
    base = trained_users(model)
    with limit_threads(n_threads):
        U, info = solver.fold_rows(base, Y_new, user_features, p=p, q=q, tol=tol,
                                   max_iter=max_iter, rng=rng, dense_limit=dense_limit)
    fields = info.pop("fields", {})      # a model's own parts for the new rows (CSRR's V, ...)
    inputs = "model, Y_new, user_features" + (", p, q" if p is not None or q is not None else "")
    if not np.all(np.isfinite(U)):
        raise FloatingPointError(f"fold_in: {int(np.sum(~np.isfinite(U)))} non-finite factor "
                                 f"entries (overflow); check the scale of the inputs {inputs}")
    if "grad_norm" in info and not (np.all(np.isfinite(info["grad_norm"]))
                                    and np.all(np.isfinite(info["grad_norm0"]))):
        raise FloatingPointError("fold_in: a row problem has a non-finite gradient (overflow); "
                                 f"check the scale of the inputs {inputs}")
    if "converged" in info and not info["converged"].all():
        bad = int((~info["converged"]).sum())
        warnings.warn(f"fold_in: {bad} of {U.shape[0]} rows stopped above tol={tol:g} "
                      "(see extras['fold_in']['grad_norm'])", RuntimeWarning, stacklevel=2)
    if user_ids is not None:
        user_ids = V.check_ids(user_ids, name="user_ids", size=U.shape[0],
                               expected="one identifier per new user")
    extras = dict(model.extras)
    extras["fold_in"] = info
    # the new users' own positives are what recommend leaves out for them (none from features)
    seen = positives(Y_new) if Y_new is not None else positives(
        sp.csr_array((U.shape[0], model.shape[1]), dtype=bool))
    changes: dict[str, Any] = dict(user_factors=np.ascontiguousarray(U), history=[],
                                   extras=extras, user_ids=user_ids, seen=seen)
    changes.update(fields)
    return dataclasses.replace(model, **changes)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def trained_users(model: Factorization) -> Factorization:
    """``model`` with as many user rows as it was fitted with, where its method's row solver
    needs that number (HOMF's graph has a node per training user; a fold-in or a partial fit
    changes the number of rows, not the graph)."""
    entry = registry.get(model.method)
    if entry.partial is None:
        return model
    fitted = entry.resolve("partial").fitted_users(model)
    if fitted == model.shape[0]:
        return model
    k = model.user_factors.shape[1]
    return dataclasses.replace(model, user_factors=np.zeros((fitted, k), dtype=model.user_factors.dtype))


def check_new_rows(model: Factorization, Y_new: Any, *, nonnegative: bool = True,
                   name: str = "Y_new", what: str = "item") -> tuple[Sparse | None, Any]:
    """New users' positives as canonical CSR over the model's items, and the Dataset's user ids.

    ``Y_new`` is a sparse matrix (m_new × n), a Dataset (columns matched by item id), lists of
    item ids (one per user; a flat list is one user) or None.
    """
    n = model.shape[1]
    ids = None
    if isinstance(Y_new, Dataset):
        ids = Y_new.user_ids
        return V.check_csr(_on_model_items(model, Y_new, name=name, what=what), name=name,
                           nonnegative=nonnegative), ids
    if Y_new is None:
        return None, None
    if is_id_lists(Y_new):
        Y, _ = rows_from_lists(Y_new, ids=model.item_ids, size=n, name=name, what=what,
                               some_known=True, stacklevel=4)
        return Y, None
    if not sp.issparse(Y_new):
        dense = getattr(Y_new, "ndim", None) == 2 or (
            isinstance(Y_new, (list, tuple)) and Y_new and all(isinstance(r, (list, tuple)) for r in Y_new))
        hint = (f"; a dense users × items array becomes one with scipy.sparse.csr_array({name})"
                if dense else "")
        raise TypeError(
            f"{name} must be a scipy.sparse matrix (new users × {n} items), a Dataset, or item ids "
            f"(one list per new user, e.g. [[50, 172, 181]]: the model's item ids when it has "
            f"them, positions otherwise), got {type(Y_new).__name__}{hint}")
    if Y_new.ndim != 2 or Y_new.shape[1] != n:
        raise ValueError(f"{name} has shape {Y_new.shape}, expected (m_new, {n}): one column per "
                         f"item of the model")
    return V.check_csr(Y_new, name=name, nonnegative=nonnegative), None


def _on_model_items(model: Factorization, data: Dataset, name: str = "Y_new",
                    what: str = "item") -> Sparse:
    """A Dataset of new users' positives as a matrix over the model's n items.

    Columns are matched by item id when both the data set and the model have item ids
    (positives of items the model does not know are left out, with a warning: the model has
    no factor for them), by position otherwise.
    """
    from fastpu.model._lookup import lookup
    from fastpu.model._serving import remap

    Y = V.check_csr(data.Y, name=f"{name}.Y", nonnegative=False)
    if data.item_ids is None or model.item_ids is None:
        if Y.shape[1] != model.shape[1]:
            raise ValueError(f"{name}.Y has {Y.shape[1]} {what}s, expected {model.shape[1]} (the "
                             f"model's); {what}s are matched by position when "
                             f"{'the model' if model.item_ids is None else 'the data set'} has "
                             f"no {what} ids")
        return Y
    cols = lookup(model.item_ids, data.item_ids, name=f"{name}.{what}_ids", what=what, strict=False)
    Y, dropped = remap(Y, None, cols, (Y.shape[0], model.shape[1]))
    if dropped.size:
        unknown = np.unique(np.asarray(data.item_ids)[dropped])
        if Y.nnz == 0:
            raise ValueError(f"{name}: the model knows none of the {unknown.size} {what} id(s) of "
                             f"its positives ({unknown[:5].tolist()}"
                             f"{' ...' if unknown.size > 5 else ''}); expected the model's {what} "
                             f"ids (model.{what}_ids, e.g. {np.asarray(model.item_ids)[:3].tolist()})")
        warnings.warn(f"{name}: {dropped.size} positive(s) of {unknown.size} {what} id(s) the "
                      f"model does not know ({unknown[:5].tolist()}{' ...' if unknown.size > 5 else ''}) "
                      "were left out: the model has no factor for them", UserWarning, stacklevel=3)
    return Y
