"""HOMF's row problem, for fold-in and partial fits: the new node's row of f_T(A) from its own
transition row (existing nodes do not walk back into it), then the ridge regression
(V_Ωᵀ V_Ω + 2λI) u = V_Ωᵀ f_Ω.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from fastpu._core import rows as row_problem
from fastpu._core import validation as V
from fastpu._kernels.csr import csr_dense, weighted_gram
from fastpu._kernels.homf import ridge_columns, walk_step
from fastpu.homf._graph import canonical

_BLOCK_BYTES = 8 * 2**20


def values_may_be_negative(model: Any) -> bool:
    """With g = "exp" or "step" a stored value is an edge weight's argument, not a weight: any
    finite value is allowed (g = "linear" uses the value itself as the weight)."""
    return model.params.get("g") != "linear"


def new_node_rows(Y: Any, m: int, g: str, alpha: float) -> Any:
    """Transition rows of new user nodes over the N = m + n existing nodes (CSR, m_new × N).

    A new user has rating edges only (no side-graph edges): its row is g(R_new row)
    normalised to sum 1 (the weight 1 − alpha cancels), or all zero when it has no edge
    (or when alpha = 1 gives rating edges weight 0).
    """
    data = Y.data
    if g == "exp":
        rows = row_problem.rows_of(Y)
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
    return canonical(A_new)          # built from the checked Y_new: nothing to check again


def fold_rows(model: Any, Y: Any, X: Any, *, p: Any, q: Any, tol: float, max_iter: int,
              rng: np.random.Generator, dense_limit: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """The new rows' factors (see :func:`fastpu.fold_in`)."""
    row_problem.no_weights(model, p, q)
    Y = row_problem.need_rows(Y, X, method="homf")
    row_problem.need_keys(model, params=("T", "lam", "mode", "g", "alpha"), extras=("A", "V"))
    prm, ex = model.params, model.extras
    A = V.check_csr(ex["A"], name="model.extras['A']", nonnegative=False)
    Vf = row_problem.f64(ex["V"])
    N, k = Vf.shape
    m = N - model.shape[1]          # the training users (a folded-in model has other rows)
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
    b = int(max(1, min(256, _BLOCK_BYTES // (8 * max(1, N)))))
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


def walk_new_rows(A_rows: Any, At: Any, T: int) -> np.ndarray:
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
