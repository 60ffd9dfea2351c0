"""HOMF's solvers: alternating ridge regressions on f_T(A), exact mode (Ω = nonzeros of f_T(A),
column blocks by Algorithm 1's recursion) and dense mode (every entry, one k×k system per half).

They take the transition matrix, its transpose and the settings :mod:`fastpu.homf._check`
returns, and check nothing again.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.linalg as sla

from fastpu._core.progress import Progress
from fastpu._core.threads import get_num_threads
from fastpu._kernels import homf as _K
from fastpu._kernels.csr import weighted_gram
from fastpu.homf._check import Run
from fastpu.homf._walk import _Walker

# printed once by a verbose dense-mode fit, so that a negative objective does not look like a bug
DENSE_OBJECTIVE_NOTE = ("mode='dense': the objective leaves out the constant ½‖f_T(A)‖²_F, so it "
                        "can be negative; homf.objective gives the complete value")


def squared_error(walker: _Walker, L: np.ndarray, Rt: np.ndarray, block: int, dense: bool) -> float:
    """Σ over Ω of (f_T(P) − L Rtᵀ)², column block by column block (Ω = nonzeros or all)."""
    total = 0.0
    for start, stop in walker.ranges(block):
        cols = np.arange(start, stop, dtype=np.int64)
        Ct = np.ascontiguousarray(walker.columns(cols).T)
        out = np.empty(cols.size)
        _K.block_loss(Ct, L, np.ascontiguousarray(Rt[cols]), dense, out)
        total += float(out.sum())
    return total


def _gram(U: np.ndarray, out: np.ndarray) -> None:
    """out = Uᵀ U (the shared, thread-count-independent Gram kernel with unit weights)."""
    weighted_gram(U, np.ones(U.shape[0]), out, np.empty(U.shape[1]))


# --------------------------------------------------------------------------- exact mode

def _exact_half(walker: _Walker, L: np.ndarray, out: np.ndarray, lam: float, block: int,
                lo: int = 0, hi: int | None = None) -> float:
    """Ridge solve for columns lo:hi (every column by default) of f_T(P) against fixed L into
    ``out`` (row c - lo for column c); returns Σ_Ω residual². The Dask form solves its blocks'
    column ranges with it."""
    k = L.shape[1]
    LtL = np.empty((k, k))
    _gram(L, LtL)
    total = 0.0
    for start, stop in walker.ranges(block, lo, hi):
        cols = np.arange(start, stop, dtype=np.int64)
        Ct = np.ascontiguousarray(walker.columns(cols).T)
        sol = np.empty((cols.size, k))
        loss = np.empty(cols.size)
        ok = np.empty(cols.size, dtype=np.bool_)
        _K.ridge_columns(Ct, L, LtL, 2.0 * lam, False, sol, loss, ok)
        if not ok.all():
            raise FloatingPointError(
                "homf: a ridge system was not positive definite; raise lam"
            )
        out[start - lo:stop - lo] = sol
        total += float(loss.sum())
    return total


def exact(A: Any, At: Any, U: np.ndarray, V: np.ndarray, run: Run, m: int, block: int,
          progress: Progress, iterate: Callable[[np.ndarray, np.ndarray], Any]) -> tuple[Any, Any]:
    """Exact mode: V ← argmin over the columns of f_T(A), then U over its rows, ``run.n_iter``
    times (or until the callback stops); U and V are updated in place."""
    lam = run.lam
    cols_walk = _Walker(A, At, run.T, m)        # columns of f_T(A)
    rows_walk = _Walker(At, A, run.T, m)        # rows of f_T(A) = columns of f_T(Aᵀ)
    for it in range(1, run.n_iter + 1):
        # V: columns of f_T(A) against U.  U: rows of f_T(A) = columns of f_T(Aᵀ).
        res = _exact_half(cols_walk, U, V, lam, block)
        obj_v = 0.5 * res + lam * (float(np.sum(U * U)) + float(np.sum(V * V)))
        res = _exact_half(rows_walk, V, U, lam, block)
        obj = 0.5 * res + lam * (float(np.sum(U * U)) + float(np.sum(V * V)))
        if progress.step(it, obj, objective_v=obj_v, model=lambda: iterate(U, V)):
            break
    return U, V


# --------------------------------------------------------------------------- dense mode

def _row_chunks(P: Any, n_chunks: int) -> np.ndarray:
    """Row cuts 0 = c_0 < ... < c_q = N of P into about ``n_chunks`` ranges of equal nonzeros."""
    N = P.shape[0]
    targets = np.linspace(0.0, float(P.indptr[-1]), n_chunks + 1)[1:-1]
    cuts = np.searchsorted(P.indptr, targets).astype(np.int64)
    return np.unique(np.concatenate(([0], np.clip(cuts, 0, N), [N])))


class _DenseWalk:
    """f_T(P) L = (1/T) Σ_{l=1}^T P^l L for one P (A or Aᵀ), with its row chunks and buffers."""

    def __init__(self, P: Any, T: int, bufs: tuple[np.ndarray, ...]) -> None:
        self.P, self.T, self.bufs = P, T, bufs       # bufs: three N×k scratch arrays
        self.chunks = _row_chunks(P, 4 * max(1, get_num_threads()))

    def __call__(self, L: np.ndarray) -> np.ndarray:
        """f_T(P) L, written into the third buffer (valid until the next call)."""
        P = self.P
        first, work, out = self.bufs
        _K.horner_walk(P.indptr, P.indices, P.data, self.chunks, L, self.T, first, work, out)
        return out


def _dense_half(walk: _DenseWalk, L: np.ndarray, LtL: np.ndarray,
                lam: float) -> tuple[np.ndarray, float]:
    """New factor for the other side: (f_T(P) L)(LᵀL + 2λI)⁻¹, and ⟨new, f_T(P) L⟩."""
    return _solve(walk(L), LtL, lam)


def _solve(Z: np.ndarray, LtL: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """Z (LᵀL + 2λI)⁻¹ (a new array) and ⟨that, Z⟩; Z is left as it is."""
    k = Z.shape[1]
    S = LtL + 2.0 * lam * np.eye(k)
    new = Z.copy()
    # solve in place on newᵀ (Fortran order, so LAPACK takes it without a copy)
    sol = sla.cho_solve(sla.cho_factor(S, lower=True), new.T, overwrite_b=True, check_finite=False)
    new = np.ascontiguousarray(sol.T)
    return new, float(np.vdot(new, Z))


def dense(A: Any, At: Any, U: np.ndarray, V: np.ndarray, run: Run, progress: Progress,
          iterate: Callable[[np.ndarray, np.ndarray], Any]) -> tuple[Any, Any]:
    """Dense mode: V ← f_T(A)ᵀ U (UᵀU + 2λI)⁻¹, then U ← f_T(A) V (VᵀV + 2λI)⁻¹, ``run.n_iter``
    times (or until the callback stops). The objective leaves out ½‖f_T(A)‖²_F."""
    lam = run.lam
    k = U.shape[1]
    progress.note(DENSE_OBJECTIVE_NOTE)
    bufs = tuple(np.empty(U.shape) for _ in range(3))
    walk_t = _DenseWalk(At, run.T, bufs)     # f_T(A)ᵀ U = (1/T) Σ (Aᵀ)^l U
    walk_a = _DenseWalk(A, run.T, bufs)      # f_T(A) V = (1/T) Σ A^l V
    UtU = np.empty((k, k))
    VtV = np.empty((k, k))
    _gram(U, UtU)
    for it in range(1, run.n_iter + 1):
        V, cross = _dense_half(walk_t, U, UtU, lam)
        _gram(V, VtV)
        obj_v = (-cross + 0.5 * float(np.sum(UtU * VtV))
                 + lam * (float(np.vdot(U, U)) + float(np.vdot(V, V))))
        U, cross = _dense_half(walk_a, V, VtV, lam)
        _gram(U, UtU)           # also the next V half's UᵀU
        obj = (-cross + 0.5 * float(np.sum(UtU * VtV))
               + lam * (float(np.vdot(U, U)) + float(np.vdot(V, V))))
        if progress.step(it, obj, objective_v=obj_v, model=lambda: iterate(U, V)):
            break
    return U, V
