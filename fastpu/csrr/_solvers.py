"""CSRR's solvers (Yang, Zhao, Gao, Liu): Algorithm 1 over a dense U (CSRR-I/II, accelerated
proximal gradient with singular value thresholding) and Algorithm 2 over U = P Qᵀ (CSRR-e).

They take the canonical positives and the settings :mod:`fastpu.csrr._check` returns, and check
nothing again. :mod:`fastpu.csrr` holds the model type and the public functions.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse.linalg as spla

from fastpu._kernels import csrr as K
from fastpu._kernels.csr import csr_dense, csr_dense_perm, sampled_dots
from fastpu.csrr._check import Model, Run
from fastpu.csrr._model import CSRRModel
from fastpu.optim import SVTResult, apg, svt_operator

#: Safety cap on CSRR-e's inner P, Q passes per outer iteration when ``n_inner=None``.
INNER_CAP = 100


def _model(**fields):
    """The current iterate as a CSRRModel (for the callback's ``info["model"]``)."""
    return CSRRModel(method="csrr", **fields)


# --------------------------------------------------------------------------------- I / II


class _DenseProblem:
    """Problem (10) for :func:`fastpu.optim.apg` with a dense U and V on Ω+.

    Iterates x = (SVTResult Ũ, Ṽ values on Ω+, Ũ as a dense array or None for the start);
    momentum points y = (dense U, V values). ``prox_step`` overwrites y's dense U with Û (so
    ``restart="gradient"`` is not offered). The dense Ũ of the last two iterates live in two
    buffers used in turn, so the momentum point is (1 + β)Ũ − βŨ_old entrywise (one rank-r
    product per iteration) and the objective reads Ũ on Ω+ directly.
    """

    def __init__(self, data, kind, alpha, lam1, lam2, svd_method, rng):
        self.d, self.kind, self.alpha = data, kind, alpha
        self.lam1, self.lam2 = lam1, lam2
        self.svd_method, self.rng = svd_method, rng
        nnz = data.nnz
        self.g = np.empty(nnz)
        self.xp = np.empty(nnz)
        self.up = np.empty(nnz)
        self.row = np.empty(data.shape[0])
        self.rank = 0
        self.n_computed = 0
        self.buffer = np.zeros(data.shape)      # the momentum point U, then Û, then U again
        self.dense = [np.empty(data.shape), np.empty(data.shape)]   # Ũ of x_t and x_{t-1}
        self.slot = 0

    def grad(self, y):
        U, v = y
        d = self.d
        K.gather(d.indptr, d.indices, U, self.up)
        np.add(self.up, v, out=self.xp)
        K.positive_terms(d.indptr, self.xp, self.up, self.kind, self.alpha, self.g, self.row)
        return self.g                      # ∂ℓ/∂X on Ω+; off Ω+ it is U itself

    def prox_step(self, y, g, eta):
        U, v = y
        d = self.d
        K.dense_grad_step(d.indptr, d.indices, g, eta, U, U)          # U ← Û (in place)
        k0 = max(1, self.rank + 5)
        if d.nnz == 0:              # no positive: U stays 0 (ARPACK refuses a zero operator)
            Ut = _empty_svt(*d.shape)
        else:
            Ut = svt_operator(_aslinop(U), U, eta * self.lam1, method=self.svd_method, k0=k0, rng=self.rng)
        self.rank, self.n_computed = Ut.rank, Ut.n_computed
        v_new = np.empty_like(v)
        K.soft_box(v - eta * g, eta * self.lam2, 0.0, 1.0, v_new)
        D = self.dense[self.slot]          # the other slot holds the previous iterate's Ũ
        self.slot ^= 1
        if Ut.rank:
            np.matmul(Ut.left * Ut.s, Ut.right, out=D)
        else:
            D.fill(0.0)
        return Ut, v_new, D

    def extrapolate(self, x_new, x_old, beta):
        Ut, v, D = x_new
        Uo, vo, Do = x_old
        U = self.buffer
        if beta and Do is not None:         # U = Ũ + β (Ũ − Ũ_old); Do is zero-filled at rank 0
            np.subtract(D, Do, out=U)
            U *= beta
            U += D
        elif beta:                          # Ũ_old = 0 (the start): U = (1 + β) Ũ
            np.multiply(D, 1.0 + beta, out=U)
        else:
            U[...] = D
        K.clip_inplace(U, 0.0, 1.0)
        vy = np.clip(v + beta * (v - vo), 0.0, 1.0) if beta else v.copy()
        return U, vy

    def objective(self, x):
        Ut, v, D = x
        d = self.d
        if D is None:                      # the start: Ũ = 0
            self.up.fill(0.0)
        else:
            K.gather(d.indptr, d.indices, D, self.up)
        np.add(self.up, v, out=self.xp)
        g = np.empty_like(self.xp)
        K.positive_terms(d.indptr, self.xp, self.up, self.kind, self.alpha, g, self.row)
        loss = 0.5 * float(Ut.s @ Ut.s) + float(self.row.sum())
        return self.lam1 * Ut.nuclear_norm + self.lam2 * float(v.sum()) + loss


def _aslinop(U):
    return spla.aslinearoperator(U)


def _box_violation(D):
    """Max distance of the dense Ũ to the box [0, 1]."""
    if D is None or not D.size:
        return 0.0
    return max(float(np.max(-D, initial=0.0)), float(np.max(D, initial=1.0)) - 1.0)


def _fit_dense(data, model: Model, run: Run, progress):
    """Algorithm 1: returns (Ũ, Ṽ values, the momentum point's U and V values, η, the APG
    result, Ũ's distance to the box)."""
    eta = run.eta
    if eta is None:
        eta = 1.0 / (2.0 * model.curvature)
    m, n = data.shape
    prob = _DenseProblem(data, model.kind, model.alpha, model.lam1, model.lam2, run.svd_method,
                         run.rng)
    x0 = (_empty_svt(m, n), np.zeros(data.nnz), None)
    progress.start(prob.objective(x0))
    y0 = (prob.buffer, np.zeros(data.nnz))          # the same point (0, 0), stored densely
    variant = model.variant

    def report(info):
        def iterate():
            (Ut, _, _), (U, v) = info["x"], info["y"]
            root = np.sqrt(Ut.s)
            return _model(user_factors=Ut.left * root, item_factors=Ut.right.T * root,
                          U=np.array(U), V=_sparse_v(data, v), variant=variant)

        return progress.step(info["iter"], info["objective"], rank=prob.rank,
                             svd_computed=prob.n_computed, beta=info["beta"],
                             restarted=info["restarted"], model=iterate)

    res = apg(prob, x0, y0=y0, step=eta, n_iter=run.n_iter, restart=run.restart, callback=report)
    Ut, v, D = res.x
    U, vy = res.y
    return Ut, v, U, vy, eta, res, _box_violation(D)


def _empty_svt(m, n):
    return SVTResult(np.zeros((m, 0)), np.zeros(0), np.zeros((0, n)), 0, True)


# --------------------------------------------------------------------------------- e


class _Bilinear:
    """Pieces of problem (10) with U = P Qᵀ, all in O(|Ω+|k + (m+n)k²)."""

    def __init__(self, data, kind, alpha, lam1, lam2):
        self.d, self.kind, self.alpha, self.lam1, self.lam2 = data, kind, alpha, lam1, lam2
        nnz = data.nnz
        self.dots = np.empty(nnz)
        self.xp = np.empty(nnz)
        self.g = np.empty(nnz)
        self.row = np.empty(data.shape[0])

    def positives(self, P, Q, v, same_dots=False):
        """Fill dots = (PQᵀ)_Ω, g = ℓ'(dots + v); return Σ_Ω (ℓ⁺ − ½ dots²).

        ``same_dots=True`` reuses the dots of the previous call (P, Q unchanged).
        """
        d = self.d
        if not same_dots:
            sampled_dots(d.indptr, d.indices, P, Q, self.dots)
        np.add(self.dots, v, out=self.xp)
        K.positive_terms(d.indptr, self.xp, self.dots, self.kind, self.alpha, self.g, self.row)
        return float(self.row.sum())

    def objective(self, P, Q, v, GP=None, GQ=None, same_dots=False):
        GP = P.T @ P if GP is None else GP
        GQ = Q.T @ Q if GQ is None else GQ
        corr = self.positives(P, Q, v, same_dots=same_dots)
        loss = 0.5 * float(np.sum(GP * GQ)) + corr
        reg = 0.5 * self.lam1 * (float(np.trace(GP)) + float(np.trace(GQ)))
        return reg + self.lam2 * float(v.sum()) + loss

    def grad_P(self, P, Q, v, GQ, out):
        """∂/∂P of the loss: P (QᵀQ) + S Q with S = g − dots on Ω+."""
        d = self.d
        self.positives(P, Q, v)
        S = self.g - self.dots
        csr_dense(d.indptr, d.indices, S, Q, out)
        out += P @ GQ
        return out

    def grad_Q(self, P, Q, v, GP, out):
        """∂/∂Q of the loss: Q (PᵀP) + Sᵀ P."""
        d = self.d
        self.positives(P, Q, v)
        S = self.g - self.dots
        csr_dense_perm(d.t_indptr, d.t_indices, d.t_perm, S, P, out)
        out += Q @ GP
        return out


def lam_max(G):
    """The largest eigenvalue of a k×k Gram matrix (0 when k = 0)."""
    return float(np.linalg.eigvalsh(G)[-1]) if G.size else 0.0


def start_factors(rng, m, n, k):
    """P then Q drawn uniformly in [0, 1/√k] (every entry of P Qᵀ in [0, 1])."""
    hi = 1.0 / math.sqrt(k)
    P = np.ascontiguousarray(rng.uniform(0.0, hi, size=(m, k)))
    Q = np.ascontiguousarray(rng.uniform(0.0, hi, size=(n, k)))
    return P, Q


def _fit_bilinear(data, model: Model, run: Run, progress):
    """Algorithm 2: returns P, Q and V's values on the positives."""
    assert run.k is not None                     # variant "e" has a rank (check_rank)
    kind, lam1, lam2, eta, k = model.kind, model.lam1, model.lam2, run.eta, run.k
    c = model.curvature
    m, n = data.shape
    hi = 1.0 / math.sqrt(k)
    P, Q = start_factors(run.rng, m, n, k)
    v = np.zeros(data.nnz)
    prob = _Bilinear(data, kind, model.alpha, lam1, lam2)
    gP = np.empty((m, k))
    gQ = np.empty((n, k))
    v_new = np.empty_like(v)
    GQ = Q.T @ Q
    f_prev = prob.objective(P, Q, v, GQ=GQ)
    # the paper's "repeat … until convergence" when n_inner is None
    n_inner = INNER_CAP if run.n_inner is None else run.n_inner
    inner_tol = run.inner_tol
    progress.start(f_prev)
    for t in range(1, run.n_iter + 1):
        inner = 0
        f_inner = f_prev
        for inner in range(1, n_inner + 1):
            eP = eta if eta is not None else 1.0 / max(c * lam_max(GQ), 1e-12)
            prob.grad_P(P, Q, v, GQ, gP)
            P = np.clip((P - eP * gP) / (1.0 + eP * lam1), 0.0, hi)
            GP = P.T @ P
            eQ = eta if eta is not None else 1.0 / max(c * lam_max(GP), 1e-12)
            prob.grad_Q(P, Q, v, GP, gQ)
            Q = np.clip((Q - eQ * gQ) / (1.0 + eQ * lam1), 0.0, hi)
            GQ = Q.T @ Q
            if n_inner > 1:
                f_new = prob.objective(P, Q, v, GP=GP, GQ=GQ)
                done = abs(f_inner - f_new) <= inner_tol * max(1.0, abs(f_inner))
                f_inner = f_new
                if done:
                    break
        eV = eta if eta is not None else 1.0 / c
        prob.positives(P, Q, v, same_dots=n_inner > 1)
        K.soft_box(v - eV * prob.g, eV * lam2, 0.0, 1.0, v_new)
        v, v_new = v_new, v
        f_prev = prob.objective(P, Q, v, GP=GP, GQ=GQ, same_dots=True)
        if progress.step(t, f_prev, inner=inner, nnz_V=int(np.count_nonzero(v)), model=lambda: _model(
                user_factors=P.copy(), item_factors=Q.copy(), V=_sparse_v(data, v), variant="e")):
            break
    return P, Q, v


def _sparse_v(data, v):
    V = data.csr(np.array(v, dtype=np.float64))
    V.eliminate_zeros()
    return V
