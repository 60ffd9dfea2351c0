"""Fold-in: factors for users who were not in the training matrix, with the item side fixed.

For each method, a new user's factor is the solution of exactly the row problem the method
solves for a training user when the item side is held fixed, solved to convergence:

* ocmf (no user features): w minimises Σ_{j∈Ω+} ℓ⁺_j(w·e_j) + p (wᵀMw − 2ā wᵀκ) + λ‖w‖² with
  M = Eᵀdiag(q)E, κ = Eᵀq (``negatives="full"``); with ``"sampled"`` the loss runs over the
  positives and round(neg_ratio·|Ω+_i|) sampled unobserved items, with ``"full_logistic"`` over
  every item. Newton's method with the exact k×k Hessian; for the square loss the first step is
  the exact k×k linear solve. A user graph adds nothing: a new user has no edges.
* ocmf / fbgd with user features: cold start, the factor is ``user_features @ W`` (with fbgd's
  bias columns).
* fbgd (plain ids): a weighted least-squares row (α⁺ on positives, α⁻_j on every other item),
  one k×k Cholesky solve.
* HOMF: the new node's row of f_T(A) from its own transition row (existing nodes do not walk
  back into it), then the ridge regression (V_Ωᵀ V_Ω + 2λI) u = V_Ωᵀ f_Ω.
* CSRR-e: p ∈ [0, 1/√k]^k and v ∈ [0, 1] on the user's positives minimising the
  cost-sensitive loss + λ1/2‖p‖² + λ2‖v‖₁, by projected Newton with v eliminated in closed form.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._kernels import fold as K
from fastpu._kernels.csr import csr_dense, weighted_gram
from fastpu._kernels.homf import ridge_columns, walk_step
from fastpu._kernels.losses import LOSS_CODES, SQUARE
from fastpu._core.dataset import Dataset
from fastpu.ocmf._problem import _sample_negatives
from fastpu._core.threads import limit_threads
from fastpu._core.hints import ArrayLike, Matrix, Sparse, Threads
from fastpu._core.factorization import Factorization

__all__ = ["fold_in"]

_METHODS = ("ocmf", "fbgd", "homf", "csrr")
_HOMF_BLOCK_BYTES = 8 * 2**20


def fold_in(model: Factorization, Y_new: Sparse | None = None, *, user_features: Matrix | None = None,
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
    Y_new : scipy.sparse matrix, shape (m_new, n), or Dataset, optional
        The new users' positives over the model's n items (stored values are the weights C_ij,
        as in ``fit``). Required unless the model has user features. A
        :class:`~fastpu.datasets.Dataset` (``datasets.from_pairs(users, items)``) has its
        columns matched to the model's items by id when both have item ids (positives of items
        the model does not know are left out with a warning), and gives ``user_ids`` unless
        they are passed.
    user_features : array or sparse matrix, shape (m_new, d), optional
        The new users' features, for models fitted with ``user_features`` (and only for them).
    p : array-like, shape (m_new,), optional
        ocmf only: the new users' unlabeled weights p_i (multiplied by the model's ``rho``);
        default ones, as in ``fit``.
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
        m_new new users' ``user_factors`` and the model's item side, params and ``item_ids``,
        so that ``scores``, :func:`fastpu.recommend` (with ``Y_new`` as ``Y_seen``) and
        :func:`fastpu.evaluate` work on it. For CSRR-e its ``V`` holds the new users' sparse
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
        ``q`` or ``user_ids`` have the wrong length, or ``user_ids`` repeats an id; the model
        is CSRR-I/II (a dense U has no user factor) or from an unknown method, or lacks an entry
        of ``params`` / ``extras`` that its method's fold-in needs (a model built by hand or
        edited).
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
    >>> items, scores = fp.recommend(new, data.Y[50:], n=5)
    >>> items.shape
    (10, 5)
    """
    if not isinstance(model, Factorization):
        raise TypeError(f"model must be a fastpu Factorization (the result of a fit), got {type(model).__name__}")
    V.check_choice(model.method, name="model.method", choices=_METHODS)
    tol = V.check_scalar(tol, name="tol", minimum=0.0)
    max_iter = V.check_int(max_iter, name="max_iter", minimum=1)
    rng = V.check_seed(seed)
    n = model.shape[1]
    V.check_dense(model.item_factors, name="model.item_factors")      # finite, 2-d
    if isinstance(Y_new, Dataset):
        if user_ids is None:
            user_ids = Y_new.user_ids
        Y_new = _on_model_items(model, Y_new)
    if Y_new is not None:
        nonneg = not (model.method == "homf" and model.params.get("g") != "linear")
        if not sp.issparse(Y_new):
            V.check_csr(Y_new, name="Y_new")          # raises the TypeError
        if Y_new.ndim != 2 or Y_new.shape[1] != n:
            raise ValueError(f"Y_new has shape {Y_new.shape}, expected (m_new, {n}): one column per "
                             f"item of the model")
        Y_new = V.check_csr(Y_new, name="Y_new", nonnegative=nonneg)
    if model.method != "ocmf" and (p is not None or q is not None):
        raise ValueError(f"p and q are ocmf's unlabeled weights; a {model.method} model does not "
                         "use them (leave them None)")
    with limit_threads(n_threads):
        if model.method == "ocmf":
            U, info = _ocmf(model, Y_new, user_features, p, q, tol, max_iter, rng, dense_limit)
        elif model.method == "fbgd":
            U, info = _fbgd(model, Y_new, user_features)
        elif model.method == "homf":
            U, info = _homf(model, Y_new, user_features)
        else:
            U, info = _csrr(model, Y_new, user_features, tol, max_iter)
    Vnew = info.pop("V", None)
    inputs = "model, Y_new, user_features" + (", p, q" if model.method == "ocmf" else "")
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
    changes: dict[str, Any] = dict(user_factors=np.ascontiguousarray(U), history=[],
                                   extras=extras, user_ids=user_ids)
    if Vnew is not None:
        changes["V"] = Vnew
    return dataclasses.replace(model, **changes)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def _on_model_items(model: Factorization, data: Dataset) -> Sparse:
    """A Dataset of new users' positives as a matrix over the model's n items.

    Columns are matched by item id when both the data set and the model have item ids
    (positives of items the model does not know are left out, with a warning: the model has
    no factor for them), by position otherwise.
    """
    from fastpu.model._serving import lookup, remap

    Y = V.check_csr(data.Y, name="Y_new.Y", nonnegative=False)
    if data.item_ids is None or model.item_ids is None:
        return Y
    cols = lookup(model.item_ids, data.item_ids, name="Y_new.item_ids", what="item", strict=False)
    Y, dropped = remap(Y, None, cols, (Y.shape[0], model.shape[1]))
    if dropped.size:
        unknown = np.unique(np.asarray(data.item_ids)[dropped])
        warnings.warn(f"fold_in: {dropped.size} positive(s) of {unknown.size} item id(s) the "
                      f"model does not know ({unknown[:5].tolist()}{' ...' if unknown.size > 5 else ''}) "
                      "were left out: the model has no factor for them", UserWarning, stacklevel=3)
    return Y


def _need_keys(model, params=(), extras=()):
    """A ValueError naming the entries of model.params / model.extras this fold-in needs and lacks."""
    missing = ([f"model.params[{k!r}]" for k in params if k not in model.params]
               + [f"model.extras[{k!r}]" for k in extras if k not in model.extras])
    if missing:
        raise ValueError(f"fold_in of this {model.method} model needs {', '.join(missing)}, which it "
                         f"lacks; a model returned by fastpu.{model.method}.fit (or read by fastpu.load) "
                         "has them, so fold in that model rather than one built by hand or edited")


def _need_rows(Y, X, *, method):
    """Y_new alone for a model without user features, with a clear error otherwise."""
    if X is not None:
        raise ValueError(f"user_features was given but this {method} model was fitted without user "
                         "features; pass the new users' positives as Y_new")
    if Y is None:
        raise ValueError(f"Y_new is required: a {method} model without user features folds in new "
                         "users from their positives")
    return Y


def _cold_start_features(X, Y, d, method):
    if Y is not None:
        raise ValueError(f"this {method} model was fitted with user features: a user's factor is a "
                         "function of its features only (the row problem has no per-user "
                         "variable), so Y_new cannot change it; pass user_features alone")
    if X is None:
        raise ValueError(f"user_features is required: this {method} model was fitted with user "
                         f"features (expected a matrix with {d} columns)")
    if not sp.issparse(X):
        X = V.check_dense(X, name="user_features")       # lists too; 2-d, finite
    X = V.check_features(X, name="user_features", n_rows=X.shape[0])
    if X.shape[1] != d:
        raise ValueError(f"user_features has {X.shape[1]} columns, expected {d} (the model's "
                         "number of user features)")
    return X


def _mul(X, W):
    out = X @ W
    return np.asarray(out, dtype=np.float64)


def _rows_of(Y):
    return np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(Y.indptr))


def _f64(A):
    return np.ascontiguousarray(A, dtype=np.float64)


def _iter_info(gn, g0, it, tol):
    return dict(grad_norm=gn, grad_norm0=g0, n_iter=it, tol=tol, converged=gn <= tol * g0)


# ----------------------------------------------------------------------------------------------
# ocmf
# ----------------------------------------------------------------------------------------------

def _ocmf(model, Y, X, p, q, tol, max_iter, rng, dense_limit):
    prm = model.params
    if prm.get("user_features"):
        if p is not None or q is not None:
            raise ValueError("p and q are not used for a model with user features (cold start)")
        _need_keys(model, extras=("W",))
        W = _f64(model.extras["W"])
        X = _cold_start_features(X, Y, W.shape[0], "ocmf")
        return _mul(X, W), {}
    Y = _need_rows(Y, X, method="ocmf")
    _need_keys(model, params=("loss", "a_bar", "lam", "rho")
               + (("neg_ratio",) if prm.get("negatives") == "sampled" else ()))
    E = _f64(model.item_factors)
    m_new, n = Y.shape
    k = E.shape[1]
    q = V.check_vector(model.extras.get("q") if q is None else q, name="q", size=n)
    p = V.check_vector(p, name="p", size=m_new)
    kind = LOSS_CODES[V.check_choice(prm["loss"], name="model.params['loss']", choices=LOSS_CODES)]
    # the users' side is regularised by λ_w (lam_w; lam when the model has none)
    lam_w = prm.get("lam_w")
    abar, lam, rho = float(prm["a_bar"]), float(prm["lam"] if lam_w is None else lam_w), float(prm["rho"])
    pw = rho * p
    negatives = prm.get("negatives", "full")
    info = {}
    if negatives == "full":
        indptr, indices = Y.indptr, Y.indices
        labels = np.ones(Y.nnz)
        weights = Y.data.copy()
        corr = pw[_rows_of(Y)] * q[Y.indices]
        M, kappa = np.empty((k, k)), np.empty(k)
        weighted_gram(E, q, M, kappa)
        p_quad = pw
    else:
        if negatives == "full_logistic":
            V.check_dense_size(m_new, n, what='fold_in of a negatives="full_logistic" model',
                               alternative="fewer new users per call", limit=dense_limit)
            neg = sp.csr_array(np.ones((m_new, n))) - (Y != 0).astype(np.float64)
            neg = V.check_csr(sp.csr_array(neg), name="negatives")
            neg.eliminate_zeros()
        else:
            neg = _sample_negatives(Y, float(prm["neg_ratio"]), rng)
            info["negatives"] = neg
        pos = sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=Y.shape)
        both = V.check_csr(pos + 2.0 * neg, name="entries")
        is_pos = both.data == 1.0
        rows = _rows_of(both)
        labels = np.where(is_pos, 1.0, abar)
        weights = np.where(is_pos, 0.0, pw[rows] * q[both.indices])
        weights[is_pos] = Y.data
        indptr, indices = both.indptr, both.indices
        corr = np.zeros(both.nnz)
        M, kappa, p_quad = np.zeros((k, k)), np.zeros(k), np.zeros(m_new)
    W = np.empty((m_new, k))
    gn, g0 = np.empty(m_new), np.empty(m_new)
    it = np.empty(m_new, dtype=np.int64)
    K.newton_rows(kind, indptr, indices, labels, weights, corr, abar, E, M, kappa, p_quad, lam,
                  tol, max_iter, W, gn, g0, it)
    info.update(_iter_info(gn, g0, it, tol))
    info["square"] = kind == SQUARE
    return W, info


# ----------------------------------------------------------------------------------------------
# fbgd
# ----------------------------------------------------------------------------------------------

def _fbgd(model, Y, X):
    prm, ex = model.params, model.extras
    _need_keys(model, params=("k", "biases"))
    f = int(prm["k"])
    biases = bool(prm["biases"])
    if prm.get("user_features") is not None:
        _need_keys(model, extras=("V_user",) + (("w_user", "w0") if biases else ()))
        Vu = _f64(ex["V_user"])
        X = _cold_start_features(X, Y, Vu.shape[0], "fbgd")
        P = _mul(X, Vu)
        if biases:
            bias = _mul(X, _f64(ex["w_user"])[:, None])[:, 0] + float(ex["w0"])
            P = np.column_stack([P, bias, np.ones(P.shape[0])])
        return P, {}
    Y = _need_rows(Y, X, method="fbgd")
    _need_keys(model, params=("r_neg", "reg", "pos_weight", "r_pos"),
               extras=("neg_weights",) + (("w0",) if biases else ()))
    Q = _f64(model.item_factors)
    n = Q.shape[0]
    neg = _f64(ex["neg_weights"])
    if neg.shape != (n,):
        raise ValueError(f"model.extras['neg_weights'] has shape {neg.shape}, expected ({n},) (one "
                         "per item); fold in a model returned by fastpu.fbgd.fit, not an edited one")
    r_neg, reg = float(prm["r_neg"]), float(prm["reg"])
    apos = _per_positive(prm["pos_weight"], Y)
    rpos = _per_positive(prm["r_pos"], Y)
    if biases:
        # p_x = [V_x, w_x + w0, 1]: solve for u = (V_x, w_x + w0), penalty reg ‖u − u0‖²
        Qt, cvec = np.ascontiguousarray(Q[:, :f + 1]), Q[:, f + 1].copy()
        u0 = np.zeros(f + 1)
        u0[f] = float(ex["w0"])
    else:
        Qt, cvec, u0 = Q, np.zeros(n), np.zeros(f)
    g = Qt.shape[1]
    H0, sq = np.empty((g, g)), np.empty(g)
    weighted_gram(Qt, neg, H0, sq)
    H0 += reg * np.eye(g)
    b0 = Qt.T @ (neg * (r_neg - cvec)) + reg * u0
    aneg, cy = neg[Y.indices], cvec[Y.indices]
    d = apos - aneg
    e = apos * (rpos - cy) - aneg * (r_neg - cy)
    U = np.empty((Y.shape[0], g))
    ok = np.empty(Y.shape[0], dtype=np.bool_)
    K.wls_rows(Y.indptr, Y.indices, d, e, Qt, H0, b0, U, ok)
    for i in np.flatnonzero(~ok):           # singular (reg = 0): the minimum-norm minimiser
        lo, hi = Y.indptr[i], Y.indptr[i + 1]
        G = Qt[Y.indices[lo:hi]]
        H = H0 + (G.T * d[lo:hi]) @ G
        b = b0 + G.T @ e[lo:hi]
        U[i] = np.linalg.lstsq(H, b, rcond=None)[0]
    if biases:
        U = np.column_stack([U, np.ones(U.shape[0])])
    return U, {"singular_rows": np.flatnonzero(~ok)}


def _per_positive(value, Y):
    if isinstance(value, str):            # "values": the stored values of Y_new, as in fit
        return Y.data.copy()
    return np.full(Y.nnz, float(value))


# ----------------------------------------------------------------------------------------------
# homf
# ----------------------------------------------------------------------------------------------

def new_node_rows(Y, m, g, alpha):
    """Transition rows of new user nodes over the N = m + n existing nodes (CSR, m_new × N).

    A new user has rating edges only (no side-graph edges): its row is g(R_new row)
    normalised to sum 1 (the weight 1 − alpha cancels), or all zero when it has no edge
    (or when alpha = 1 gives rating edges weight 0).
    """
    data = Y.data
    if g == "exp":
        rows = _rows_of(Y)
        rmax = np.full(Y.shape[0], -np.inf)
        np.maximum.at(rmax, rows, data)
        wts = np.exp(data - rmax[rows]) if data.size else data.copy()
    elif g == "linear":
        wts = data.copy()
    else:
        wts = (data > 0).astype(np.float64)
    if alpha >= 1.0:
        wts = np.zeros_like(wts)
    R = sp.csr_array((wts, Y.indices, Y.indptr), shape=Y.shape)
    R.eliminate_zeros()
    deg = np.asarray(R.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    np.divide(1.0, deg, out=inv, where=deg > 0)
    R = sp.csr_array(sp.diags_array(inv) @ R)
    A_new = sp.hstack([sp.csr_array((Y.shape[0], m)), R], format="csr")
    return V.check_csr(sp.csr_array(A_new), name="A_new")


def _homf(model, Y, X):
    Y = _need_rows(Y, X, method="homf")
    _need_keys(model, params=("T", "lam", "mode", "g", "alpha"), extras=("A", "V"))
    prm, ex = model.params, model.extras
    A = V.check_csr(ex["A"], name="model.extras['A']", nonnegative=False)
    Vf = _f64(ex["V"])
    m = model.shape[0]
    N, k = Vf.shape
    T, lam, dense = int(prm["T"]), float(prm["lam"]), prm["mode"] == "dense"
    A_new = new_node_rows(Y, m, prm["g"], float(prm["alpha"]))
    VtV, tmp = np.empty((k, k)), np.empty(k)
    weighted_gram(Vf, np.ones(N), VtV, tmp)
    m_new = Y.shape[0]
    if dense:
        # Ω = every node: V_Ωᵀ f = (1/T) a Σ_{l<T} Aˡ V, with Z = Σ_{l<T} Aˡ V built once by
        # Horner (T − 1 sparse × N×k products); then one shared k×k system
        Z = Vf.copy()
        buf = np.empty_like(Z)
        for _ in range(2, T + 1):
            walk_step(A.indptr, A.indices, A.data, Vf, Z, buf)
            Z, buf = buf, Z
        rhs = np.empty((m_new, k))
        csr_dense(A_new.indptr, A_new.indices, A_new.data, Z, rhs)
        S = VtV + 2.0 * lam * np.eye(k)
        U = sla.cho_solve(sla.cho_factor(S, lower=True), rhs.T * (1.0 / T)).T
        return np.ascontiguousarray(U), {}
    At = V.transpose_csr(A)
    U = np.empty((m_new, k))
    ok = np.empty(m_new, dtype=np.bool_)
    b = int(max(1, min(256, _HOMF_BLOCK_BYTES // (8 * max(1, N)))))
    for start in range(0, m_new, b):
        stop = min(m_new, start + b)
        rows = walk_new_rows(A_new[start:stop], At, T)
        sol = np.empty((stop - start, k))
        loss = np.empty(stop - start)
        okb = np.empty(stop - start, dtype=np.bool_)
        ridge_columns(rows, Vf, VtV, 2.0 * lam, False, sol, loss, okb)
        U[start:stop] = sol
        ok[start:stop] = okb
    if not ok.all():
        raise FloatingPointError("fold_in: a HOMF ridge system was not positive definite (lam too small)")
    return U, {}


def walk_new_rows(A_rows, At, T):
    """Rows of f_T for new nodes whose transition rows are ``A_rows`` (b × N), as a dense b × N.

    The new nodes are dangling: no existing node has an edge into them, so their row of
    f_T is (1/T) Σ_{l=0}^{T-1} a Aˡ, computed as columns x_1 = aᵀ, x_t = aᵀ + Aᵀ x_{t-1}.
    """
    first = np.ascontiguousarray(A_rows.toarray().T)
    prev = first.copy()
    out = np.empty_like(first)
    for _ in range(2, T + 1):
        walk_step(At.indptr, At.indices, At.data, first, prev, out)
        prev, out = out, prev
    return np.ascontiguousarray(prev.T) * (1.0 / T)


# ----------------------------------------------------------------------------------------------
# csrr
# ----------------------------------------------------------------------------------------------

def _csrr(model, Y, X, tol, max_iter):
    if getattr(model, "variant", "") != "e":
        raise ValueError(f"fold_in supports CSRR variant 'e' only; this model is CSRR-"
                         f"{getattr(model, 'variant', '?')}, whose dense low-rank U has no user "
                         "factor to fold in (refit with variant='e')")
    Y = _need_rows(Y, X, method="csrr")
    _need_keys(model, params=("alpha", "lam1", "lam2"))
    prm = model.params
    Q = _f64(model.item_factors)
    k = Q.shape[1]
    alpha, lam1, lam2 = float(prm["alpha"]), float(prm["lam1"]), float(prm["lam2"])
    c, target = (alpha, 1.0) if prm.get("loss", "I") == "I" else (1.0, alpha)
    Yb = sp.csr_array(Y)
    Yb.data = np.where(Yb.data > 0, 1.0, 0.0)
    Yb.eliminate_zeros()
    Yb = V.check_csr(Yb, name="Y_new")
    GQ, tmp = np.empty((k, k)), np.empty(k)
    weighted_gram(Q, np.ones(Q.shape[0]), GQ, tmp)
    hi = 1.0 / math.sqrt(k)
    m_new = Yb.shape[0]
    P = np.empty((m_new, k))
    pg, g0 = np.empty(m_new), np.empty(m_new)
    it = np.empty(m_new, dtype=np.int64)
    K.box_rows(Yb.indptr, Yb.indices, Q, GQ, lam1, c, target, lam2, hi, tol, max_iter, P, pg, g0, it)
    s = np.einsum("ij,ij->i", P[_rows_of(Yb)], Q[Yb.indices])
    v = np.clip(target - s - lam2 / c, 0.0, 1.0)
    Vnew = sp.csr_array((v, Yb.indices.copy(), Yb.indptr.copy()), shape=Yb.shape)
    Vnew.eliminate_zeros()
    info = _iter_info(pg, g0, it, tol)
    info["V"] = Vnew
    return P, info
