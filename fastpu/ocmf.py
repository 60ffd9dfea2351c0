"""One-class structured matrix factorization with side information (Yu, Huang, Dhillon, Lin).

Scores are s_ij = x_iᵀ W h_j, more generally b_i · e_j with B = XW and E = ZH
(X = I or Z = I when a side has no features). The Full objective is

    f(W, H) = Σ_{Ω+} C_ij l(1, s_ij) + Σ_{(i,j) ∉ Ω+} p_i q_j (ā - s_ij)²
              + λ (‖W‖² + λ_g tr(Bᵀ L_u B)) + λ (‖H‖² + λ_g tr(Eᵀ L_v E)),

where C_ij are the stored values of Y, L = D - S are graph Laplacians and the
unlabeled weight is p_i q_j (``rho`` times the given ``p`` and ``q``). It is
minimised by alternating over W and H; each sub-problem costs
O(nnz(X)k + |Ω+|k + nnz(L)k + mk² + dk) per function, gradient or
Hessian-vector product (Algorithms 1–3 of the paper), never O(mn).

Paper formulations and their parameters:

============  ==========================================================
SQ-SQ         ``loss="square", rho=1, a_bar=0`` (LEML / GRALS)
SQ-wSQ        ``loss="square", rho<1``
LR-wSQ        ``loss="logistic", rho<1`` (``a_bar=-1``, the default)
SH-wSQ        ``loss="squared_hinge", rho<1``
LR-wLR        ``loss="logistic", negatives="full_logistic"`` (dense, small data)
Subsampled    ``negatives="sampled", neg_ratio=r`` (loss on Ω+ and r·|Ω+| sampled entries)
============  ==========================================================
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from . import _validation as V
from ._kernels.csr import csr_dense, row_scaled_product, sampled_dots, weighted_gram
from ._kernels.losses import LOSS_CODES, SQUARE, entry_losses, entry_values
from ._kernels.updates import LOCAL_ENTRIES, row_newton
from ._progress import Progress
from ._threads import limit_threads
from .model import Factorization, accepts_dataset
from .tron import gd, tron

__all__ = ["fit", "objective", "nystrom_features", "NystromMap", "demo_configs",
           "LOSSES", "NEGATIVES", "SOLVERS"]

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
    """One side of the model: features (None, CSR or dense), its transpose, graph Laplacian."""

    X: object
    XT: object
    L: object
    n_rows: int

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


def _side(X, L, n_rows):
    XT = V.transpose_csr(X) if (X is not None and sp.issparse(X)) else None
    return _Side(X, XT, L, n_rows)


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
    return V.check_scalar(a_bar, name="a_bar")


def _prepare(Y, *, loss, rho, p, q, a_bar, X, Z, user_graph, item_graph, lam, lam_graph,
             negatives, neg_ratio, seed, dense_limit=None):
    Y = V.check_csr(Y, name="Y")
    m, n = Y.shape
    V.check_choice(loss, name="loss", choices=LOSSES)
    V.check_choice(negatives, name="negatives", choices=NEGATIVES)
    rho = V.check_scalar(rho, name="rho", minimum=0.0)
    p = V.check_vector(p, name="p", size=m)
    q = V.check_vector(q, name="q", size=n)
    abar = _resolve_abar(loss, a_bar)
    lam = V.check_scalar(lam, name="lam", minimum=0.0)
    lam_g = V.check_scalar(lam_graph, name="lam_graph", minimum=0.0)
    X = V.check_features(X, name="user_features", n_rows=m)
    Z = V.check_features(Z, name="item_features", n_rows=n, of="column")
    Su = V.check_graph(user_graph, name="user_graph", n=m)
    Sv = V.check_graph(item_graph, name="item_graph", n=n)
    Lu = V.laplacian(Su) if (Su is not None and lam_g > 0) else None
    Lv = V.laplacian(Sv) if (Sv is not None and lam_g > 0) else None
    kind = LOSS_CODES[loss]
    pw = rho * p                                   # unlabeled weight is pw_i * q_j
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(Y.indptr))

    if negatives == "full":
        ent = _Entries(Y.indptr, Y.indices, np.ones(Y.nnz), Y.data.copy(),
                       pw[rows] * q[Y.indices], (m, n))
        p_quad, q_quad = pw, q
    else:
        if negatives == "full_logistic":
            V.check_dense_size(m, n, what='negatives="full_logistic" (LR-wLR)',
                               alternative='negatives="full" (LR-wSQ)', limit=dense_limit)
            neg = sp.csr_array(np.ones((m, n))) - (Y != 0).astype(np.float64)
            neg = V.check_csr(sp.csr_array(neg), name="negatives", nonnegative=True)
            neg.eliminate_zeros()
        else:
            neg_ratio = V.check_scalar(neg_ratio, name="neg_ratio", minimum=0.0, strict_min=True)
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
    return _Setup(kind, abar, lam, lam_g, ent, ent.transpose(), _side(X, Lu, m), _side(Z, Lv, n),
                  p_quad, q_quad), Y


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
    """g(W) = L⁺(W) + L⁻(W) + λ(‖W‖² + λ_g tr(Bᵀ L B)) for fixed E (Algorithms 1–3).

    ``fun``, ``grad`` and ``hessp`` act on ``w = vec(W)`` (row-major flattening of the
    d×k matrix W). ``grad`` fixes the curvature used by later ``hessp`` calls.
    """

    def __init__(self, setup, entries, side, E, p_quad, q_quad):
        self.kind, self.abar = setup.kind, setup.abar
        self.lam, self.lam_g = setup.lam, setup.lam_g
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
        self.Mbar = None
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
        self._w_trial = None
        self._B_trial = None

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
    def fun(self, w):
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

    def grad(self, w):
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

    def hessp(self, s):
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

    def line(self, w, dw):
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

        def phi(alpha):
            Bt = B + alpha * dB
            sampled_dots(self.ent.indptr, self.ent.indices, Bt, self.E, s_buf)
            entry_values(self.kind, self.ent.labels, self.ent.weights, self.ent.corr, self.abar,
                         s_buf, v_buf)
            return g0 - lplus0 + float(v_buf.sum()) + alpha * val1 + alpha * alpha * val2

        return phi


# ----------------------------------------------------------------------------------------------
# Public functions
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
    return setup.lam * r


def _full_objective(setup, W, H):
    E = setup.item.mul(H)
    prob = SubProblem(setup, setup.entries, setup.user, E, setup.p_quad, setup.q_quad)
    return prob.fun(W.ravel()) + _side_reg(setup, setup.item, H, E)


def _check_factor(A, name, rows, k=None):
    A = V.check_dense(A, name=name, shape=(rows, k))
    if A.shape[1] < 1:
        raise ValueError(f"{name} has no columns; expected k >= 1 columns")
    return A


def objective(Y, W, H, *, loss="logistic", rho=0.01, p=None, q=None, a_bar=None,
              user_features=None, item_features=None, user_graph=None, item_graph=None, lam=1.0, lam_graph=0.0, negatives="full",
              neg_ratio=1.0, seed=0, dense_limit=None, n_threads=None):
    """The objective f(W, H) of equation (2), computed in O(|Ω+|k + (m+n)k² + nnz(X, Z, L)k).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Observed positives; the stored values are the weights C_ij (1 for binary data).
    W : array, shape (d, k) with ``user_features`` X (m×d), else (m, k)
    H : array, shape (e, k) with ``item_features`` Z (n×e), else (n, k)
    loss, rho, p, q, a_bar, user_features, item_features, user_graph, item_graph, lam, lam_graph, negatives, neg_ratio, seed, dense_limit
        As in :func:`fit`.
    n_threads : int, optional
        Threads for the kernels (restored afterwards).

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        On invalid input (see :func:`fit`) or factor shapes that do not match.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import fastpu as fp
    >>> Y = sp.csr_array(np.eye(3))
    >>> W = np.ones((3, 2)); H = np.ones((3, 2))
    >>> round(fp.ocmf.objective(Y, W, H, loss="square", rho=1.0, a_bar=0.0, lam=0.0), 6)
    57.0
    """
    with limit_threads(n_threads):
        setup, Y = _prepare(Y, loss=loss, rho=rho, p=p, q=q, a_bar=a_bar, X=user_features,
                            Z=item_features, user_graph=user_graph, item_graph=item_graph, lam=lam,
                            lam_graph=lam_graph, negatives=negatives, neg_ratio=neg_ratio, seed=seed,
                            dense_limit=dense_limit)
        W = _check_factor(W, "W", setup.user.dim)
        H = _check_factor(H, "H", setup.item.dim, W.shape[1])
        return _full_objective(setup, W, H)


@accepts_dataset
def fit(Y, k, *, loss="logistic", rho=0.01, p=None, q=None, a_bar=None, user_features=None,
        item_features=None, user_graph=None, item_graph=None, lam=1.0, lam_graph=0.0, negatives="full", neg_ratio=1.0,
        solver="tron", n_iter=15, inner_iter=5, fast_path=True, newton_steps=None, cg_steps=None,
        init=None, init_scale=0.1, dense_limit=None, dtype="float64", seed=0, n_threads=None,
        callback=None, verbose=False):
    """Fit one-class structured matrix factorization by alternating minimisation.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Observed positives (stored entries); values are the positive weights C_ij.
    k : int
        Rank.
    loss : {"logistic", "square", "squared_hinge"}
        Loss on the positives: l(1, s).
    rho : float
        Constant scaling of the unlabeled weight: p_i q_j ← rho · p_i · q_j. With ``p`` and
        ``q`` left at ``None`` (ones) the weight is ``rho`` everywhere (the paper's setting).
    p, q : array-like, optional
        Per-user and per-item unlabeled weights (non-negative, default ones).
    a_bar : float, optional
        Target score of unlabeled entries; ``None`` gives -1 for logistic/squared hinge, 0 for square.
    user_features : array or sparse matrix, shape (m, d), optional
        User features X (then ``W`` is d×k and the user factors are X W).
    item_features : array or sparse matrix, shape (n, e), optional
        Item features Z (then ``H`` is e×k and the item factors are Z H).
    user_graph, item_graph : sparse or dense matrix, optional
        Symmetric non-negative similarities S; the regulariser uses L = D - S.
    lam : float
        Regularisation λ (the same on both sides).
    lam_graph : float
        Graph weight λ_g (term λ λ_g tr(Bᵀ L B)).
    negatives : {"full", "sampled", "full_logistic"}
        "full": every unlabeled entry, weighted square loss (the paper's Full approach, linear in
        |Ω+|). "sampled": the loss on Ω+ and ``neg_ratio``·|Ω+_i| unobserved items drawn uniformly
        per user (label ``a_bar``, weight p_i q_j; the paper uses rho=1). "full_logistic": the loss
        on every entry (LR-wLR), dense O(mnk): refused above ``dense_limit`` entries.
    neg_ratio : float
        Sampled negatives per positive with ``negatives="sampled"``.
    solver : {"tron", "gd"}
        Solver of a coupled sub-problem (features or a graph on that side): the trust-region
        Newton method, or gradient descent with the O(|Ω+|k) line search.
    n_iter : int
        Alternating (outer) iterations.
    inner_iter : int
        Solver iterations per sub-problem.
    fast_path : bool
        Solve a side with no features and no graph row by row (independent k-dimensional
        Newton–CG problems, in parallel) instead of with ``solver``.
    newton_steps, cg_steps : int, optional
        Newton steps and CG steps per row and outer iteration on the fast path (defaults: 1 and
        3 for the square loss, 1 and 4 otherwise; the rows are warm-started, and on MovieLens-100K
        more steps change P@5 by less than 0.002 — see docs/ocmf.md).
    init : tuple (W0, H0), optional
        Starting factors; default small Gaussian noise (``init_scale / sqrt(k)``).
    init_scale : float
        Scale of the default initialisation.
    dense_limit : int, optional
        Largest m·n the dense ``negatives="full_logistic"`` accepts (default 25,000,000).
    dtype : {"float64", "float32"}
        Precision in which the factors are stored between side updates and returned.
        "float32" halves their memory and the memory traffic of the fast path, which reads
        them in float32 and still accumulates every sum in float64; coupled sides are solved
        in float64 and rounded back. The objective is always computed in float64.
    seed : int
        Seed of the initialisation and of sampled negatives.
    n_threads : int, optional
        Numba threads for this call (restored afterwards).
    callback : callable, optional
        Called with each history dict; returning True stops early.
    verbose : bool
        Print one progress line per outer iteration.

    Returns
    -------
    Factorization
        ``user_factors`` = X W (m×k), ``item_factors`` = Z H (n×k), both of ``dtype``; with
        features, ``W`` and ``H`` are in ``extras``. ``history`` holds per outer iteration
        ``iter``, ``objective``, ``seconds``, ``inner`` (solver iterations of the coupled sides).

    Raises
    ------
    TypeError, ValueError
        Non-sparse ``Y``; NaN/inf or negative stored values; shape mismatches between ``Y``,
        ``X``, ``Z``, graphs, ``p``, ``q``, ``init``; a graph that is not square, symmetric and
        non-negative; ``k < 1``; unknown ``loss``, ``solver``, ``negatives`` or ``dtype``;
        malformed CSR; a dense variant above its size limit.
    FloatingPointError
        If the objective becomes non-finite.

    Examples
    --------
    >>> import fastpu as fp
    >>> data = fp.datasets.synthetic(60, 40, rank=3, density=0.1, seed=0)
    >>> model = fp.ocmf.fit(data.Y, 4, loss="logistic", rho=0.05, n_iter=3)
    >>> model.user_factors.shape, model.item_factors.shape
    ((60, 4), (40, 4))
    >>> [h["iter"] for h in model.history]
    [1, 2, 3]
    """
    k = V.check_k(k)
    V.check_choice(solver, name="solver", choices=SOLVERS)
    n_iter = V.check_int(n_iter, name="n_iter", minimum=0)
    inner_iter = V.check_int(inner_iter, name="inner_iter", minimum=1)
    init_scale = V.check_scalar(init_scale, name="init_scale", minimum=0.0)
    callback = V.check_callback(callback)
    rng = V.check_seed(seed)
    fdt = V.check_float_dtype(dtype)
    params = dict(k=k, loss=loss, rho=rho, a_bar=a_bar, lam=lam, lam_graph=lam_graph,
                  negatives=negatives, neg_ratio=neg_ratio, solver=solver, n_iter=n_iter,
                  inner_iter=inner_iter, fast_path=fast_path, newton_steps=newton_steps,
                  cg_steps=cg_steps, init_scale=init_scale, seed=seed, dtype=fdt.name,
                  user_features=user_features is not None, item_features=item_features is not None,
                  has_user_graph=user_graph is not None, has_item_graph=item_graph is not None)
    with limit_threads(n_threads):
        setup, Y = _prepare(Y, loss=loss, rho=rho, p=p, q=q, a_bar=a_bar, X=user_features,
                            Z=item_features, user_graph=user_graph, item_graph=item_graph, lam=lam,
                            lam_graph=lam_graph, negatives=negatives, neg_ratio=neg_ratio, seed=rng,
                            dense_limit=dense_limit)
        params["a_bar"] = setup.abar
        square = setup.kind == SQUARE
        nsteps = V.check_int(newton_steps if newton_steps is not None else 1,
                             name="newton_steps", minimum=1)
        csteps = V.check_int(cg_steps if cg_steps is not None else (3 if square else 4),
                             name="cg_steps", minimum=1)
        du, dv = setup.user.dim, setup.item.dim
        if init is not None:
            if not (isinstance(init, tuple) and len(init) == 2):
                raise TypeError(f"init must be a tuple (W0, H0), got {type(init).__name__}")
            # fresh copies (check_dense copies): the fast path updates the factors in place
            W = _check_factor(init[0], "init[0] (W0)", du, k).astype(fdt, copy=False)
            H = _check_factor(init[1], "init[1] (H0)", dv, k).astype(fdt, copy=False)
        else:
            scale = init_scale / np.sqrt(k)
            W = (rng.standard_normal((du, k)) * scale).astype(fdt, copy=False)
            H = (rng.standard_normal((dv, k)) * scale).astype(fdt, copy=False)
        progress = Progress("ocmf", verbose=verbose, callback=callback)
        solve = tron if solver == "tron" else gd
        for it in range(1, n_iter + 1):
            E = _latent(setup.item, H)
            W, inner_w, _ = _update_side(setup, setup.entries, setup.user, W, E, setup.p_quad,
                                         setup.q_quad, fast_path, solve, inner_iter, nsteps, csteps)
            B = _latent(setup.user, W)
            H, inner_h, sub_value = _update_side(setup, setup.entries_t, setup.item, H, B,
                                                 setup.q_quad, setup.p_quad, fast_path, solve,
                                                 inner_iter, nsteps, csteps)
            # f(W, H) = the H sub-problem's value + the W side's regulariser
            obj = sub_value + _side_reg(setup, setup.user, W, B)
            if progress.step(it, obj, inner=inner_w + inner_h):
                break
        U = np.ascontiguousarray(_latent(setup.user, W), dtype=fdt)
        Vf = np.ascontiguousarray(_latent(setup.item, H), dtype=fdt)
    extras = {}
    if user_features is not None:
        extras["W"] = W
    if item_features is not None:
        extras["H"] = H
    return Factorization(U if user_features is not None else W, Vf if item_features is not None else H,
                         progress.history, params, "ocmf", extras)


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
                   entries.corr, setup.abar, E, M, kappa, p_quad, setup.lam,
                   W, nsteps, csteps, 1e-3, local_max, f_rows)
        const = setup.abar ** 2 * float(p_quad.sum()) * float(q_quad.sum())
        return W, 0, float(f_rows.sum()) + const
    prob = SubProblem(setup, entries, side, _f64(E), p_quad, q_quad)
    res = solve(prob, W.ravel(), max_iter=inner_iter)          # the solvers work on a float64 copy
    return res.x.reshape(W.shape).astype(W.dtype, copy=False), res.n_iter, res.fun


# ----------------------------------------------------------------------------------------------
# Nyström features (Section 4.3)
# ----------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NystromMap:
    """z = K^(-1/2) z̄ with z̄_t = exp(-γ‖c_t - x‖²) for K-means landmarks c_t.

    Attributes
    ----------
    centers : ndarray, shape (D, d)
    gamma : float
    k_inv_sqrt : ndarray, shape (D, D)
    """

    centers: np.ndarray
    gamma: float
    k_inv_sqrt: np.ndarray

    def transform(self, X):
        """Nyström features of the rows of ``X`` (dense or sparse, d columns) as a dense array."""
        X = V.check_features(X, name="X", n_rows=X.shape[0])
        if X.shape[1] != self.centers.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns, expected {self.centers.shape[1]}")
        Zbar = np.exp(-self.gamma * _sq_dists(X, self.centers))
        return Zbar @ self.k_inv_sqrt


def _sq_dists(X, C):
    if sp.issparse(X):
        xx = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        xc = np.asarray(X @ C.T)
    else:
        xx = np.einsum("ij,ij->i", X, X)
        xc = X @ C.T
    return np.maximum(xx[:, None] - 2.0 * xc + np.einsum("ij,ij->i", C, C)[None, :], 0.0)


def _kmeans(X, D, rng, n_iter):
    """Lloyd's algorithm with k-means++ seeding (deterministic for a Generator)."""
    m = X.shape[0]
    dense = X.toarray() if sp.issparse(X) and X.shape[1] <= 4096 else X
    first = rng.integers(m)
    C = [np.asarray(dense[first].todense()).ravel() if sp.issparse(dense) else dense[first]]
    d2 = _sq_dists(X, np.array(C)).ravel()
    for _ in range(1, D):
        tot = d2.sum()
        idx = rng.integers(m) if tot <= 0 else int(rng.choice(m, p=d2 / tot))
        c = np.asarray(dense[idx].todense()).ravel() if sp.issparse(dense) else dense[idx]
        C.append(c)
        d2 = np.minimum(d2, _sq_dists(X, c[None, :]).ravel())
    C = np.array(C, dtype=np.float64)
    for _ in range(n_iter):
        assign = np.argmin(_sq_dists(X, C), axis=1)
        newC = C.copy()
        counts = np.bincount(assign, minlength=D)
        S = sp.csr_array((np.ones(m), (assign, np.arange(m))), shape=(D, m)) @ X
        S = S.toarray() if sp.issparse(S) else S
        nz = counts > 0
        newC[nz] = S[nz] / counts[nz, None]
        if np.allclose(newC, C):
            C = newC
            break
        C = newC
    return C


def nystrom_features(X, n_landmarks=500, *, gamma=None, append=True, n_kmeans_iter=20, seed=0,
                     eig_floor=1e-8):
    """The K-means Nyström feature map of Section 4.3, and the transformed features.

    Parameters
    ----------
    X : array or sparse matrix, shape (m, d)
        Features.
    n_landmarks : int
        Number D of K-means centres (at most m).
    gamma : float, optional
        RBF parameter of K(x, y) = exp(-γ‖x - y‖²); default 1/σ² with σ² the variance of all
        feature values (the paper searches {0.5, 1, 2}/σ²).
    append : bool
        Return [X, z] (the paper appends z to x) instead of z alone.
    n_kmeans_iter : int
        Lloyd iterations.
    seed : int
        Seed of the K-means initialisation.
    eig_floor : float
        Eigenvalues of K below ``eig_floor`` · max eigenvalue are dropped in K^(-1/2).

    Returns
    -------
    features : ndarray or sparse matrix, shape (m, d + D) or (m, D)
    nmap : NystromMap
        Use ``nmap.transform(X_new)`` for new rows.

    Raises
    ------
    ValueError
        If ``n_landmarks`` is not in [1, m] or ``gamma`` is not positive.

    Examples
    --------
    >>> import numpy as np, fastpu as fp
    >>> X = np.random.default_rng(0).normal(size=(50, 4))
    >>> F, nmap = fp.ocmf.nystrom_features(X, 10)
    >>> F.shape
    (50, 14)
    """
    if X is None:
        raise TypeError("X must be an array or sparse matrix of features, got None")
    X = V.check_features(X, name="X", n_rows=np.shape(X)[0])
    m = X.shape[0]
    D = V.check_int(n_landmarks, name="n_landmarks", minimum=1)
    if D > m:
        raise ValueError(f"n_landmarks must be at most the number of rows ({m}), got {D}")
    if gamma is None:
        vals = X.data if sp.issparse(X) else X.ravel()
        n_all = m * X.shape[1]
        mean = vals.sum() / n_all
        var = (np.sum(vals ** 2) / n_all) - mean ** 2
        gamma = 1.0 / var if var > 0 else 1.0
    gamma = V.check_scalar(gamma, name="gamma", minimum=0.0, strict_min=True)
    rng = V.check_seed(seed)
    C = _kmeans(X, D, rng, V.check_int(n_kmeans_iter, name="n_kmeans_iter", minimum=0))
    K = np.exp(-gamma * _sq_dists(C, C))
    evals, evecs = np.linalg.eigh((K + K.T) / 2)
    keep = evals > eig_floor * evals.max()
    k_inv_sqrt = (evecs[:, keep] / np.sqrt(evals[keep])) @ evecs[:, keep].T
    nmap = NystromMap(C, gamma, k_inv_sqrt)
    Zf = nmap.transform(X)
    if not append:
        return Zf, nmap
    if sp.issparse(X):
        return sp.csr_array(sp.hstack([X, sp.csr_array(Zf)])), nmap
    return np.hstack([X, Zf]), nmap


def demo_configs():
    """The ocmf formulations ``fastpu demo`` trains on MovieLens-100K: [(label, fit kwargs)].

    The values are those chosen on a validation split carved from the training split by
    ``benchmarks/bench_ocmf_quality.py`` (see docs/bench_ocmf_quality.md).
    """
    common = dict(k=64, n_iter=10)
    return [
        ("SQ-SQ (ocmf)", dict(common, loss="square", rho=1.0, a_bar=0.0, lam=16.0)),
        ("SQ-wSQ (ocmf)", dict(common, loss="square", rho=0.1, lam=8.0)),
        ("LR-wSQ (ocmf)", dict(common, loss="logistic", rho=0.01, lam=2.0)),
    ]
