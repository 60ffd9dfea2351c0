"""ocmf's problem: canonical entries and sides built once, one alternating sub-problem, side updates.

The Full objective of Yu, Huang, Dhillon, Lin (equation (2)) splits into two sub-problems of the
same form (users with items fixed, and the transposed one); :class:`SubProblem` is that form, with
value, gradient (14), Hessian-vector product (15) and the O(|Ω+|k) line search of Algorithm 6.
:func:`update_side` minimises one side, row by row on the fast path (no features, no graph) or
with TRON / GD otherwise. :mod:`fastpu.ocmf` holds the public drivers.
"""

from __future__ import annotations

import dataclasses

from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from . import _validation as V
from ._kernels.csr import csr_dense, row_scaled_product, sampled_dots, weighted_gram
from ._kernels.losses import LOSS_CODES, entry_losses, entry_values
from ._kernels.updates import LOCAL_ENTRIES, row_newton

LOSSES = tuple(LOSS_CODES)
NEGATIVES = ("full", "sampled", "full_logistic")
SOLVERS = ("tron", "gd")


# ----------------------------------------------------------------------------------------------
# Canonical pieces built once at the boundary
# ----------------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Entries:
    """The entries that carry a loss term, in CSR order, with per-entry label, weight, correction.

    value of entry e at score s: weights[e] * l(labels[e], s) - corr[e] * (ā - s)².
    """

    indptr: np.ndarray
    indices: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    corr: np.ndarray
    shape: tuple

    @property
    def nnz(self):
        return self.indices.size

    def transpose(self):
        rows = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))
        order = np.lexsort((rows, self.indices))      # by column, then row
        cols = self.indices[order]
        indptr = np.zeros(self.shape[1] + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=self.shape[1]), out=indptr[1:])
        return _Entries(indptr, np.ascontiguousarray(rows[order]), self.labels[order],
                        self.weights[order], self.corr[order], (self.shape[1], self.shape[0]))


@dataclasses.dataclass
class _Side:
    """One side of the model: features (None, CSR or dense), its transpose, graph Laplacian,
    and the side's regularisation weight (λ_w for the users' W, λ_h for the items' H)."""

    X: Any
    XT: Any
    L: Any
    n_rows: int
    lam: float = 0.0

    @property
    def dim(self):
        return self.n_rows if self.X is None else self.X.shape[1]

    @property
    def identity(self):
        return self.X is None

    def mul(self, W, out=None):
        """X @ W (m×k)."""
        if self.X is None:
            return W
        if isinstance(self.X, np.ndarray):
            return np.dot(self.X, W, out=out)
        out = np.empty((self.n_rows, W.shape[1])) if out is None else out
        csr_dense(self.X.indptr, self.X.indices, self.X.data, W, out)
        return out

    def tmul(self, G):
        """Xᵀ @ G (d×k)."""
        if self.X is None:
            return G
        if isinstance(self.X, np.ndarray):
            return self.X.T @ G
        out = np.empty((self.XT.shape[0], G.shape[1]))
        csr_dense(self.XT.indptr, self.XT.indices, self.XT.data, G, out)
        return out

    def lmul(self, B):
        out = np.empty_like(B)
        csr_dense(self.L.indptr, self.L.indices, self.L.data, B, out)
        return out


def _side(X, L, n_rows, lam=0.0):
    XT = V.transpose_csr(X) if (X is not None and sp.issparse(X)) else None
    return _Side(X, XT, L, n_rows, lam)


@dataclasses.dataclass
class _Setup:
    kind: int
    abar: float
    lam: float
    lam_g: float
    entries: _Entries
    entries_t: _Entries
    user: _Side
    item: _Side
    p_quad: np.ndarray
    q_quad: np.ndarray


def _resolve_abar(loss, a_bar):
    if a_bar is None:
        return 0.0 if loss == "square" else -1.0
    a_bar = V.check_scalar(a_bar, name="a_bar")
    if abs(a_bar) > 1e150:           # ā² enters the objective: it must be a finite float
        raise ValueError(f"a_bar={a_bar:g} is too large: the objective uses a_bar² (overflow); "
                         "expected the target score of unlabeled entries, usually 0 or -1")
    return a_bar


def _prepare(Y, *, loss, rho, p, q, a_bar, X, Z, user_graph, item_graph, lam, lam_graph,
             negatives, neg_ratio, seed, dense_limit=None, lam_w=None, lam_h=None):
    Y = V.check_csr(Y, name="Y")
    m, n = Y.shape
    V.check_choice(loss, name="loss", choices=LOSSES)
    V.check_choice(negatives, name="negatives", choices=NEGATIVES)
    rho = V.check_scalar(rho, name="rho", minimum=0.0)
    p = V.check_vector(p, name="p", size=m)
    q = V.check_vector(q, name="q", size=n)
    abar = _resolve_abar(loss, a_bar)
    lam = V.check_scalar(lam, name="lam", minimum=0.0)
    lam_w = lam if lam_w is None else V.check_scalar(lam_w, name="lam_w", minimum=0.0)
    lam_h = lam if lam_h is None else V.check_scalar(lam_h, name="lam_h", minimum=0.0)
    lam_g = V.check_scalar(lam_graph, name="lam_graph", minimum=0.0)
    X = V.check_features(X, name="user_features", n_rows=m)
    Z = V.check_features(Z, name="item_features", n_rows=n, of="column")
    Su = V.check_graph(user_graph, name="user_graph", n=m)
    Sv = V.check_graph(item_graph, name="item_graph", n=n)
    Lu = V.laplacian(Su) if (Su is not None and lam_g > 0) else None
    Lv = V.laplacian(Sv) if (Sv is not None and lam_g > 0) else None
    if dense_limit is not None:
        V.check_int(dense_limit, name="dense_limit", minimum=0)
    neg_ratio = V.check_scalar(neg_ratio, name="neg_ratio", minimum=0.0, strict_min=True)
    kind = LOSS_CODES[loss]
    pw = rho * p                                   # unlabeled weight is pw_i * q_j
    with np.errstate(over="ignore", invalid="ignore"):
        total = abar * abar * float(np.sum(pw)) * float(np.sum(q))
    if not (np.isfinite(total) and np.isfinite(pw).all()):
        raise ValueError(
            f"the unlabeled weights overflow: a_bar²·Σ(rho·p)·Σq is not finite (rho={rho:g}, "
            f"max p {p.max(initial=0):g}, max q {q.max(initial=0):g}, a_bar={abar:g}); "
            "expected weights rho·p_i·q_j of order 1 or below")
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(Y.indptr))

    if negatives == "full":
        ent = _Entries(Y.indptr, Y.indices, np.ones(Y.nnz), Y.data.copy(),
                       pw[rows] * q[Y.indices], (m, n))
        p_quad, q_quad = pw, q
    else:
        if negatives == "full_logistic":
            V.check_dense_size(m, n, what='negatives="full_logistic" (LR-wLR)',
                               alternative='negatives="full" (LR-wSQ)', limit=dense_limit)
            # a dense m×n block, then CSR copies of it with their int64 indices
            V.check_alloc(48 * m * n, what='negatives="full_logistic" (LR-wLR)',
                          names=("negatives", "dense_limit"))
            # every stored entry of Y is a positive, a stored zero too (its weight C_ij is 0)
            pattern = sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=(m, n))
            neg = sp.csr_array(np.ones((m, n))) - pattern
            neg = V.check_csr(sp.csr_array(neg), name="negatives", nonnegative=True)
            neg.eliminate_zeros()
        else:
            neg = _sample_negatives(Y, neg_ratio, V.check_seed(seed))
        pos = sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=(m, n))
        both = V.check_csr(pos + 2.0 * neg, name="entries")
        is_pos = both.data == 1.0
        both_rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(both.indptr))
        labels = np.where(is_pos, 1.0, abar)
        weights = np.where(is_pos, 0.0, pw[both_rows] * q[both.indices])
        weights[is_pos] = Y.data                    # same CSR order: positives in row-major order
        ent = _Entries(both.indptr, both.indices, labels, weights, np.zeros(both.nnz), (m, n))
        p_quad, q_quad = np.zeros(m), np.zeros(n)
    return _Setup(kind, abar, lam, lam_g, ent, ent.transpose(), _side(X, Lu, m, lam_w),
                  _side(Z, Lv, n, lam_h), p_quad, q_quad), Y


def _sample_negatives(Y, ratio, rng):
    """Per user, round(ratio·|Ω+_i|) distinct unobserved items drawn uniformly (as a 0/1 CSR)."""
    m, n = Y.shape
    counts = np.diff(Y.indptr)
    rows, cols = [], []
    for i in range(m):
        seen = Y.indices[Y.indptr[i]:Y.indptr[i + 1]]
        free = n - seen.size
        want = min(int(round(ratio * counts[i])), free)
        if want <= 0:
            continue
        picked = np.empty(0, dtype=np.int64)
        while picked.size < want:
            draw = rng.integers(0, n, size=2 * (want - picked.size) + 8)
            draw = draw[~np.isin(draw, seen)]
            picked = np.unique(np.concatenate([picked, draw]))
        picked = rng.permutation(picked)[:want]
        rows.append(np.full(want, i, dtype=np.int64))
        cols.append(picked)
    if rows:
        r, c = np.concatenate(rows), np.concatenate(cols)
    else:
        r = c = np.empty(0, dtype=np.int64)
    return V.check_csr(sp.csr_array((np.ones(r.size), (r, c)), shape=(m, n)), name="negatives")


# ----------------------------------------------------------------------------------------------
# One alternating sub-problem: min over W with the other side's latent matrix E fixed
# ----------------------------------------------------------------------------------------------

class SubProblem:
    """g(W) = L⁺(W) + L⁻(W) + λ_w(‖W‖² + λ_g tr(Bᵀ L B)) for fixed E (Algorithms 1–3).

    λ_w is ``side.lam``: λ_w for the users' side, λ_h when the roles are swapped.

    ``fun``, ``grad`` and ``hessp`` act on ``w = vec(W)`` (row-major flattening of the
    d×k matrix W). ``grad`` fixes the curvature used by later ``hessp`` calls.
    """

    def __init__(self, setup: _Setup, entries: _Entries, side: _Side, E: np.ndarray,
                 p_quad: np.ndarray, q_quad: np.ndarray) -> None:
        self.kind, self.abar = setup.kind, setup.abar
        self.lam, self.lam_g = side.lam, setup.lam_g          # the side's λ (λ_w or λ_h)
        self.ent, self.side, self.E = entries, side, np.ascontiguousarray(E)
        self.p = p_quad
        self.k = E.shape[1]
        self.d = side.dim
        self.has_quad = bool(np.any(p_quad)) and bool(np.any(q_quad))
        # pre-processing (Algorithm 1): M, kappa, d, sums
        self.M, self.kappa = _gram(self.E, q_quad)
        self.const = self.abar ** 2 * p_quad.sum() * q_quad.sum()
        self.dvec = side.tmul(p_quad[:, None])[:, 0] if not side.identity else p_quad
        # Supp-1.2: M̄ = Xᵀ diag(p) X when d² + dk < mk
        self.Mbar: np.ndarray | None = None
        if not side.identity and self.has_quad and self.d ** 2 + self.d * self.k < side.n_rows * self.k:
            Xs = side.X
            if isinstance(Xs, np.ndarray):
                self.Mbar = (Xs.T * p_quad) @ Xs
            else:
                self.Mbar = np.asarray((Xs.T @ sp.diags_array(p_quad) @ Xs).todense())
        nnz = entries.nnz
        self.s = np.empty(nnz)
        self.val = np.empty(nnz)
        self.d1 = np.empty(nnz)
        self.d2 = np.empty(nnz)
        self.d2_acc = np.empty(nnz)
        self.u = np.empty(nnz)
        self.tmp_mk = np.empty((side.n_rows, self.k))
        self._w_trial: Any = None     # ndarray once fun() has run (grad/hessp call it first)
        self._B_trial: Any = None

    # -- pieces -----------------------------------------------------------------------------
    def _scores(self, B, out):
        sampled_dots(self.ent.indptr, self.ent.indices, B, self.E, out)

    def _lplus(self, B):
        self._scores(B, self.s)
        entry_values(self.kind, self.ent.labels, self.ent.weights, self.ent.corr, self.abar,
                     self.s, self.val)
        return float(self.val.sum())

    def _quad(self, W, B):
        """<B, diag(p) B M> (with M̄ when cheaper)."""
        if not self.has_quad:
            return 0.0
        if self.Mbar is not None:
            return float(np.sum((self.Mbar @ W) * (W @ self.M)))
        row_scaled_product(self.p, B, self.M, self.tmp_mk)
        return float(np.sum(B * self.tmp_mk))

    def _reg(self, W, B):
        r = float(np.sum(W * W))
        if self.side.L is not None and self.lam_g > 0:
            r += self.lam_g * float(np.sum(B * self.side.lmul(B)))
        return self.lam * r

    def _mat(self, w):
        return np.ascontiguousarray(w, dtype=np.float64).reshape(self.d, self.k)

    def _B(self, W):
        if self.side.identity:
            return W
        return self.side.mul(W)

    # -- problem protocol ---------------------------------------------------------------------
    def fun(self, w: np.ndarray) -> float:
        W = self._mat(w)
        B = self._B(W)
        lplus = self._lplus(B)
        lminus = self.const + self._quad(W, B) - 2.0 * self.abar * float(self.dvec @ W @ self.kappa)
        self._w_trial, self._B_trial = W, B
        return lplus + lminus + self._reg(W, B)

    def _ensure_trial(self, w):
        W = self._mat(w)
        if self._w_trial is None or not np.array_equal(W, self._w_trial):
            self.fun(w)

    def grad(self, w: np.ndarray) -> np.ndarray:
        self._ensure_trial(w)
        W, B = self._w_trial, self._B_trial
        entry_losses(self.kind, self.ent.labels, self.ent.weights, self.ent.corr, self.abar,
                     self.s, self.val, self.d1, self.d2)
        self.d2_acc[:] = self.d2          # curvature of the accepted point (for hessp)
        G = np.empty((self.side.n_rows, self.k))
        csr_dense(self.ent.indptr, self.ent.indices, self.d1, self.E, G)       # D⁺ E
        if self.has_quad and self.Mbar is None:
            row_scaled_product(self.p, B, self.M, self.tmp_mk)
            G += 2.0 * self.tmp_mk
        if self.side.L is not None and self.lam_g > 0:
            G += (2.0 * self.lam * self.lam_g) * self.side.lmul(B)
        out = self.side.tmul(G)
        out = out + 2.0 * self.lam * W
        if self.Mbar is not None:
            out += 2.0 * (self.Mbar @ W @ self.M)
        if self.abar != 0.0 and self.has_quad:
            out -= 2.0 * self.abar * np.outer(self.dvec, self.kappa)
        return out.ravel()

    def hessp(self, s: np.ndarray) -> np.ndarray:
        S = self._mat(s)
        N = self._B(S)
        sampled_dots(self.ent.indptr, self.ent.indices, N, self.E, self.u)
        self.u *= self.d2_acc
        G = np.empty((self.side.n_rows, self.k))
        csr_dense(self.ent.indptr, self.ent.indices, self.u, self.E, G)        # U⁺ E
        if self.has_quad and self.Mbar is None:
            row_scaled_product(self.p, N, self.M, self.tmp_mk)
            G += 2.0 * self.tmp_mk
        if self.side.L is not None and self.lam_g > 0:
            G += (2.0 * self.lam * self.lam_g) * self.side.lmul(N)
        out = self.side.tmul(G) + 2.0 * self.lam * S
        if self.Mbar is not None:
            out += 2.0 * (self.Mbar @ S @ self.M)
        return out.ravel()

    def line(self, w: np.ndarray, dw: np.ndarray) -> Callable[[float], float]:
        """phi(alpha) = g(W + alpha ΔW) with one O(|Ω+|k) pass per alpha (Supp-1.4)."""
        W, dW = self._mat(w), self._mat(dw)
        B, dB = self._B(W), self._B(dW)
        g0 = self.fun(w)
        lplus0 = float(self.val.sum())
        quad_lin = quad_sq = 0.0
        if self.has_quad:
            if self.Mbar is not None:
                quad_lin = 2.0 * float(np.sum((self.Mbar @ W) * (dW @ self.M)))
                quad_sq = float(np.sum((self.Mbar @ dW) * (dW @ self.M)))
            else:
                hatM = np.empty_like(B)
                dhatM = np.empty_like(B)
                row_scaled_product(self.p, B, self.M, hatM)
                row_scaled_product(self.p, dB, self.M, dhatM)
                quad_lin = float(np.sum(dB * hatM) + np.sum(B * dhatM))
                quad_sq = float(np.sum(dB * dhatM))
        val1 = quad_lin - 2.0 * self.abar * float(self.dvec @ dW @ self.kappa) \
            + 2.0 * self.lam * float(np.sum(W * dW))
        val2 = quad_sq + self.lam * float(np.sum(dW * dW))
        if self.side.L is not None and self.lam_g > 0:
            LdB = self.side.lmul(dB)
            val1 += 2.0 * self.lam * self.lam_g * float(np.sum(B * LdB))
            val2 += self.lam * self.lam_g * float(np.sum(dB * LdB))
        s_buf, v_buf = np.empty_like(self.s), np.empty_like(self.val)

        def phi(alpha: float) -> float:
            Bt = B + alpha * dB
            sampled_dots(self.ent.indptr, self.ent.indices, Bt, self.E, s_buf)
            entry_values(self.kind, self.ent.labels, self.ent.weights, self.ent.corr, self.abar,
                         s_buf, v_buf)
            return g0 - lplus0 + float(v_buf.sum()) + alpha * val1 + alpha * alpha * val2

        return phi




# ----------------------------------------------------------------------------------------------
# Helpers of the drivers
# ----------------------------------------------------------------------------------------------

def _f64(A):
    """A itself if float64, else a float64 copy (for float32 factors)."""
    return A if A.dtype == np.float64 else A.astype(np.float64)


def _latent(side, W):
    """X W; with no features W itself, in its own precision (the fast path reads float32)."""
    return W if side.identity else side.mul(_f64(W))


def _side_reg(setup, side, W, B):
    r = float(np.sum(np.square(W, dtype=np.float64)))
    if side.L is not None and setup.lam_g > 0:
        B = _f64(B)
        r += setup.lam_g * float(np.sum(B * side.lmul(B)))
    return side.lam * r


def _full_objective(setup, W, H):
    E = setup.item.mul(H)
    prob = SubProblem(setup, setup.entries, setup.user, E, setup.p_quad, setup.q_quad)
    return prob.fun(W.ravel()) + _side_reg(setup, setup.item, H, E)


def _check_factor(A: Any, name: str, rows: int, k: int | None = None) -> np.ndarray:
    A = V.check_dense(A, name=name, shape=(rows, k),
                      shape_from=f"rows: one per row of Y or column of its features ({rows}); columns: k")
    if A.shape[1] < 1:
        raise ValueError(f"{name} has no columns; expected k >= 1 columns")
    return A



def _gram(E, q):
    """M = Eᵀ diag(q) E and κ = Eᵀ q (a numba kernel: no BLAS pool competing with numba's)."""
    k = E.shape[1]
    M, kappa = np.empty((k, k)), np.empty(k)
    weighted_gram(E, q, M, kappa)
    return M, kappa


def _update_side(setup, entries, side, W, E, p_quad, q_quad, fast_path, solve, inner_iter,
                 nsteps, csteps):
    """Minimise over one side's W with the other side's latent matrix E fixed.

    On the fast path W is updated in place (``fit`` owns its factors); the solvers return a
    new array. Returns the new W, the solver iterations (0 on the fast path) and the sub-problem's
    objective g(W) at the new W (everything in f that depends on W, plus the constant).
    """
    if fast_path and side.identity and side.L is None:
        E = np.ascontiguousarray(E)
        M, kappa = _gram(E, q_quad)
        if not (W.flags.c_contiguous and W.flags.writeable):
            W = np.array(W, order="C")
        f_rows = np.empty(W.shape[0])
        local_max = max(16, LOCAL_ENTRIES // W.shape[1])
        row_newton(setup.kind, entries.indptr, entries.indices, entries.labels, entries.weights,
                   entries.corr, setup.abar, E, M, kappa, p_quad, side.lam,
                   W, nsteps, csteps, 1e-3, local_max, f_rows)
        const = setup.abar ** 2 * float(p_quad.sum()) * float(q_quad.sum())
        return W, 0, float(f_rows.sum()) + const
    prob = SubProblem(setup, entries, side, _f64(E), p_quad, q_quad)
    res = solve(prob, W.ravel(), max_iter=inner_iter)          # the solvers work on a float64 copy
    return res.x.reshape(W.shape).astype(W.dtype, copy=False), res.n_iter, res.fun

