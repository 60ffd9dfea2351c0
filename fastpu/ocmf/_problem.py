"""ocmf's problem: canonical entries and sides built once, one alternating sub-problem, side updates.

The Full objective of Yu, Huang, Dhillon, Lin (equation (2)) splits into two sub-problems of the
same form (users with items fixed, and the transposed one); :class:`SubProblem` is that form, with
value, gradient (14), Hessian-vector product (15) and the O(|Ω+|k) line search of Algorithm 6.
:func:`update_side` minimises one side, row by row on the fast path (no features, no graph) or
with TRON / GD otherwise. :mod:`fastpu.ocmf` holds the public drivers.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.rows import scaled_penalty
from fastpu._core.memory import check_alloc
from fastpu._kernels.csr import (csr_dense, gram_parts, row_scaled_product, sampled_dots,
                                 sum_gram_parts, turn_rows, weighted_gram)
from fastpu._kernels.losses import entry_losses, entry_values
from fastpu.ocmf._check import kernel_indices, index_dtype
from fastpu._kernels.ocmf import RowOptions, local_entries, row_newton


# ----------------------------------------------------------------------------------------------
# Canonical pieces built once at the boundary
# ----------------------------------------------------------------------------------------------

_ONE = np.ones(1)
_NO_CORR = np.empty(0)          # r_e = p_i q_j: the unlabeled term is taken off the positives
_ALL_CORR = np.zeros(1)         # r_e = 0: the unlabeled term covers the positives too ("all")
_NO_ROWS = np.empty(0)        # row_newton's f0_out when the starting values are not wanted
_EVALUATE = RowOptions(newton_steps=0)    # row_newton evaluates f_i and leaves the rows as they are


@dataclasses.dataclass
class _Entries:
    """The entries that carry a loss term, in CSR order, with per-entry label, weight, correction.

    value of entry e = (i, j) at score s: weights[e] * l(labels[e], s) - r_e (ā - s)².

    Compact storage (what :func:`fastpu._kernels.ocmf.row_newton` reads directly): indptr
    and indices share one integer type (:func:`index_dtype`, int32 unless the matrix is too
    large); ``labels``, ``weights`` or ``corr`` of length 1 give every entry that value (binary
    data stores neither; ``negatives="all"`` has ``corr = [0]``); an empty ``corr`` means
    r_e = p_i q_j with the sub-problem's p (rows) and q (columns) — the Full approach's
    correction, and 0 where p = q = 0. :meth:`expanded` gives
    the per-entry float64 arrays and int64 indices the general (coupled) path works on.
    """

    indptr: np.ndarray
    indices: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    corr: np.ndarray
    shape: tuple
    _full: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def nnz(self):
        return self.indices.size

    def _per_entry(self, a):
        return a.shape[0] == self.nnz and self.nnz > 1

    def transpose(self):
        """The same entries in column-major order, as the CSR of the transpose.

        Linear time (scipy's CSR→CSC counting pass; within a column the rows stay in order);
        per-entry arrays are permuted only when there are any.
        """
        m, n = self.shape
        nnz = self.nnz
        dt = index_dtype(m, n, nnz)
        permute = any(self._per_entry(a) for a in (self.labels, self.weights, self.corr))
        data = np.arange(nnz, dtype=dt) if permute else np.ones(nnz, dtype=np.bool_)
        T = sp.csr_array((data, self.indices, self.indptr), shape=(m, n), copy=False).tocsc()
        indptr, indices = T.indptr.astype(dt, copy=False), T.indices.astype(dt, copy=False)
        perm = T.data if permute else None
        del T, data

        def take(a):
            return a[perm] if (perm is not None and self._per_entry(a)) else a

        return _Entries(indptr, indices, take(self.labels), take(self.weights), take(self.corr),
                        (n, m))

    def expanded(self, p_row, q_col):
        """The same entries with int64 indices and per-entry float64 labels, weights, corr.

        r_e = p_row[i] q_col[j] where ``corr`` is empty. Built on first use and kept (the
        coupled path's :class:`SubProblem` evaluates them many times).
        """
        full = self._full
        if full is not None and full[0] is p_row and full[1] is q_col:
            return full[2]
        nnz = self.nnz
        indptr = self.indptr.astype(np.int64)
        indices = self.indices.astype(np.int64)

        def spread(a):
            return np.full(nnz, a[0]) if (a.shape[0] == 1 and nnz != 1) else \
                np.asarray(a, dtype=np.float64)

        if self.corr.shape[0] == nnz and nnz > 0:
            corr = self.corr
        elif self.corr.shape[0] == 1:
            corr = spread(self.corr)
        else:
            rows = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(indptr))
            corr = p_row[rows] * q_col[indices]
        out = _Entries(indptr, indices, spread(self.labels), spread(self.weights), corr,
                       self.shape)
        self._full = (p_row, q_col, out)
        return out


@dataclasses.dataclass
class _Side:
    """One side of the model: features (None, CSR or dense), its transpose, graph Laplacian,
    the side's regularisation weight (λ_w for the users' W, λ_h for the items' H) and the rows'
    own weights λ_i (``rows_lam``: one value, λ itself, or one per row with frequency-scaled
    regularisation; the graph term keeps λ)."""

    X: Any
    XT: Any
    L: Any
    n_rows: int
    lam: float = 0.0
    rows_lam: Any = None

    def __post_init__(self):
        if self.rows_lam is None:
            self.rows_lam = np.array([float(self.lam)])

    @property
    def scalar_lam(self):
        """Whether every row has the same weight λ (then the sums are the unscaled model's)."""
        return self.rows_lam.shape[0] == 1

    def reg(self, W):
        """Σ_i λ_i ‖w_i‖² (λ Σ W² when the weights are all λ), accumulated in float64."""
        if self.scalar_lam:
            return float(self.rows_lam[0]) * _sum_squares(W)
        total = 0.0
        rows = max(1, (1 << 16) // max(1, W.shape[1]))     # no full-size float64 temporary
        with np.errstate(over="ignore", invalid="ignore"):
            for lo in range(0, W.shape[0], rows):
                sq = np.square(W[lo:lo + rows], dtype=np.float64).sum(axis=1)
                total += float(self.rows_lam[lo:lo + rows] @ sq)
        return total

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


def _side(X, L, n_rows, lam=0.0, rows_lam=None):
    XT = V.transpose_csr(X) if (X is not None and sp.issparse(X)) else None
    return _Side(X, XT, L, n_rows, lam, rows_lam)


def row_penalties(model, Y):
    """(users' λ_i, items' λ_j) of frequency-scaled regularisation: λ_w (|Ω+_i| + ρ p_i Σ_j q_j)^ν
    and λ_h (|Ω+_j| + q_j Σ_i ρ p_i)^ν, a row's positives plus the unlabeled weight it carries
    in the Full objective; with ν = 0 the single values λ_w and λ_h."""
    if model.nu == 0.0:
        return np.array([float(model.lam_w)]), np.array([float(model.lam_h)])
    m, n = Y.shape
    pw = model.rho * model.p
    users = np.diff(Y.indptr).astype(np.float64) + pw * float(model.q.sum())
    items = np.bincount(Y.indices, minlength=n).astype(np.float64) + model.q * float(pw.sum())
    return (scaled_penalty(model.lam_w, model.nu, users),
            scaled_penalty(model.lam_h, model.nu, items))


class _Deferred:
    """``fn(*args)`` computed on a background thread; :meth:`get` waits for it (and re-raises).

    For work that releases the GIL (scipy's CSR → CSC pass, numpy's random draws do), so that it
    runs beside the caller's own work on another core.
    """

    def __init__(self, fn: Any, *args: Any):
        self._out: Any = None
        self._err: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True,
                                        name="fastpu-deferred")
        self._thread.start()

    def _run(self, fn, args):
        try:
            self._out = fn(*args)
        except BaseException as exc:          # re-raised in the caller's thread by get()
            self._err = exc

    def get(self):
        self._thread.join()
        if self._err is not None:
            raise self._err
        return self._out


# entries from which ocmf's setup builds the transposed pattern on a background thread (below
# this, starting a thread costs about as much as the pass itself)
_DEFER_TRANSPOSE_NNZ = 1 << 16


@dataclasses.dataclass
class _Setup:
    """Everything a fit needs besides the factors. ``entries_t`` (the entries in column order) may
    still be being built on a background thread: the first read waits for it, so a fit's random
    starting factors are drawn while scipy transposes the pattern."""

    kind: int
    abar: float
    lam: float
    lam_g: float
    entries: _Entries
    _entries_t: Any                 # an _Entries, or a _Deferred that returns one
    user: _Side
    item: _Side
    p_quad: np.ndarray
    q_quad: np.ndarray

    @property
    def entries_t(self) -> _Entries:
        if isinstance(self._entries_t, _Deferred):
            self._entries_t = self._entries_t.get()
        return self._entries_t


def build(Y, model, rng):
    """The problem of a checked model on the canonical Y (:func:`fastpu.ocmf._check.check_y`):
    the entries that carry a loss term (the positives, or the positives and the sampled or dense
    negatives), their transpose (on a background thread for large Y), and the two sides."""
    m, n = Y.shape
    pw = model.rho * model.p                       # unlabeled weight is pw_i * q_j
    q, abar = model.q, model.abar
    if model.negatives in ("full", "all"):
        data = Y.data
        binary = data.size == 0 or (float(data.min()) == 1.0 and float(data.max()) == 1.0)
        weights = _ONE if binary else np.asarray(data, dtype=np.float64)
        # r_e = pw_i q_j ("full": computed where it is used from p_quad, q_quad, no per-entry
        # array) or 0 ("all")
        corr = _NO_CORR if model.negatives == "full" else _ALL_CORR
        ent = _Entries(Y.indptr, Y.indices, _ONE, weights, corr, (m, n))
        p_quad, q_quad = pw, q
    else:
        neg = negative_entries(Y, model.negatives, model.neg_ratio, rng, model.dense_limit,
                               what='negatives="full_logistic" (LR-wLR)',
                               alternative='negatives="full" (LR-wSQ)')
        indptr, indices, labels, weights = loss_entries(Y, neg, pw, q, abar)
        indptr, indices = kernel_indices(indptr, indices, n)
        # no unlabeled term: p_quad = q_quad = 0, so the compact correction r_e = 0·0 = 0
        ent = _Entries(indptr, indices, labels, weights, _NO_CORR, (m, n))
        p_quad, q_quad = np.zeros(m), np.zeros(n)
    ent_t = _Deferred(ent.transpose) if ent.nnz >= _DEFER_TRANSPOSE_NNZ else ent.transpose()
    lam_users, lam_items = row_penalties(model, Y)
    return _Setup(model.kind, abar, model.lam, model.lam_graph, ent, ent_t,
                  _side(model.user_features, model.L_user, m, model.lam_w, lam_users),
                  _side(model.item_features, model.L_item, n, model.lam_h, lam_items),
                  p_quad, q_quad)


def negative_entries(Y, negatives, neg_ratio, rng, dense_limit, *, what, alternative):
    """The unobserved entries that carry a loss term (a 0/1 CSR): every one for
    ``"full_logistic"`` (dense: refused above ``dense_limit``), else round(neg_ratio·|Ω+_i|)
    drawn per user."""
    m, n = Y.shape
    if negatives == "full_logistic":
        V.check_dense_size(m, n, what=what, alternative=alternative, limit=dense_limit)
        # a dense m×n block, then CSR copies of it with their int64 indices
        check_alloc(48 * m * n, what=what, names=("negatives", "dense_limit"))
        # every stored entry of Y is a positive, a stored zero too (its weight C_ij is 0)
        pattern = sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=(m, n))
        neg = sp.csr_array(np.ones((m, n))) - pattern
        neg = V.check_csr(sp.csr_array(neg), name="negatives", nonnegative=True)
        neg.eliminate_zeros()
        return neg
    return _sample_negatives(Y, neg_ratio, rng)


def loss_entries(Y, neg, pw, q, abar):
    """(indptr, indices, labels, weights) of the entries that carry the loss when the negatives
    are explicit: Y's positives (label 1, weight C_ij) and the negatives ``neg`` (label ā,
    weight pw_i q_j), in CSR order."""
    m, n = Y.shape
    pos = sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=(m, n))
    both = V.check_csr(pos + 2.0 * neg, name="entries")
    is_pos = both.data == 1.0
    both_rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(both.indptr))
    labels = np.where(is_pos, 1.0, abar)
    weights = np.where(is_pos, 0.0, pw[both_rows] * q[both.indices])
    weights[is_pos] = Y.data                    # same CSR order: positives in row-major order
    return both.indptr, both.indices, labels, weights


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

    It is built inside :func:`fastpu.ocmf.fit` (one per side and outer iteration) and handed
    to :func:`fastpu.optim.tron` / :func:`fastpu.optim.gd`; it is exported for those who drive the
    solvers themselves, not meant to be constructed from user code.

    Parameters
    ----------
    setup, entries, side
        ``ocmf.fit``'s prepared problem: the loss and weights, the positives of this side in
        CSR order, and the side's features, graph and λ.
    E : ndarray, shape (n, k)
        The other side's latent factors, fixed.
    p_quad, q_quad : ndarray
        The row and column weights of the unlabeled (quadratic) part.
    """

    def __init__(self, setup: _Setup, entries: _Entries, side: _Side, E: np.ndarray,
                 p_quad: np.ndarray, q_quad: np.ndarray) -> None:
        self.kind, self.abar = setup.kind, setup.abar
        self.lam, self.lam_g = side.lam, setup.lam_g          # the side's λ (λ_w or λ_h)
        # the rows' λ_i as a column (frequency-scaled regularisation; rows of W are the side's
        # rows then: features refuse ν ≠ 0), or None when every row has λ
        self.lam_rows = None if side.scalar_lam else side.rows_lam[:, None]
        # per-entry arrays and int64 indices (the general kernels' layout), built once per side
        self.ent = entries.expanded(p_quad, q_quad)
        self.side, self.E = side, np.ascontiguousarray(E)
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
        nnz = self.ent.nnz
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
        r = float(np.sum(W * W)) if self.lam_rows is None else 0.0
        if self.side.L is not None and self.lam_g > 0:
            r += self.lam_g * float(np.sum(B * self.side.lmul(B)))
        if self.lam_rows is None:
            return self.lam * r
        return self.lam * r + float(np.sum(self.lam_rows * (W * W)))

    def _twice_lam(self, W):
        """2 λ W, row i scaled by its own λ_i when the rows' weights differ."""
        return 2.0 * self.lam * W if self.lam_rows is None else 2.0 * self.lam_rows * W

    def _reg_line(self, W, dW):
        """The regulariser's coefficients of α and α² on the line W + α dW."""
        if self.lam_rows is None:
            return 2.0 * self.lam * float(np.sum(W * dW)), self.lam * float(np.sum(dW * dW))
        return (2.0 * float(np.sum(self.lam_rows * (W * dW))),
                float(np.sum(self.lam_rows * (dW * dW))))

    def _mat(self, w):
        return np.ascontiguousarray(w, dtype=np.float64).reshape(self.d, self.k)

    def _B(self, W):
        if self.side.identity:
            return W
        return self.side.mul(W)

    # -- problem protocol ---------------------------------------------------------------------
    def fun(self, w: np.ndarray) -> float:
        """g at ``w`` = vec(W) (length d·k); remembers W for the next ``grad``."""
        W = self._mat(w)
        B = self._B(W)
        # a diverging run overflows here: the solver checks the value and names the cause
        with np.errstate(over="ignore", invalid="ignore"):
            lplus = self._lplus(B)
            lminus = (self.const + self._quad(W, B)
                      - 2.0 * self.abar * float(self.dvec @ W @ self.kappa))
            self._w_trial, self._B_trial = W, B
            return lplus + lminus + self._reg(W, B)

    def _ensure_trial(self, w):
        W = self._mat(w)
        if self._w_trial is None or not np.array_equal(W, self._w_trial):
            self.fun(w)

    def grad(self, w: np.ndarray) -> np.ndarray:
        """∇g at ``w`` (length d·k); fixes the curvature later ``hessp`` calls use."""
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
        out = out + self._twice_lam(W)
        if self.Mbar is not None:
            out += 2.0 * (self.Mbar @ W @ self.M)
        if self.abar != 0.0 and self.has_quad:
            out -= 2.0 * self.abar * np.outer(self.dvec, self.kappa)
        return out.ravel()

    def hessp(self, s: np.ndarray) -> np.ndarray:
        """∇²g · ``s`` (length d·k) at the point of the last ``grad`` call, without forming
        the Hessian."""
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
        out = self.side.tmul(G) + self._twice_lam(S)
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
        reg1, reg2 = self._reg_line(W, dW)
        val1 = quad_lin - 2.0 * self.abar * float(self.dvec @ dW @ self.kappa) + reg1
        val2 = quad_sq + reg2
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


def _sum_squares(A, block=1 << 16):
    """Σ A² accumulated in float64, a block at a time (no float64 copy of a float32 A)."""
    flat = A.reshape(-1)
    total = 0.0
    # a diverging run overflows here: the objective's check (Progress) names the cause instead
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, flat.size, block):
            total += float(np.square(flat[lo:lo + block], dtype=np.float64).sum())
    return total


def _side_reg(setup, side, W, B):
    """Σ_i λ_i ‖w_i‖² + λ λ_g tr(Bᵀ L B): the regulariser of one side."""
    if side.scalar_lam:
        r = _sum_squares(W)
        if side.L is not None and setup.lam_g > 0:
            B = _f64(B)
            r += setup.lam_g * float(np.sum(B * side.lmul(B)))
        return side.lam * r
    r = side.reg(W)
    if side.L is not None and setup.lam_g > 0:
        B = _f64(B)
        r += side.lam * setup.lam_g * float(np.sum(B * side.lmul(B)))
    return r


def _full_objective(setup, W, H):
    """f(W, H); W and H in float64 or (on the row path) the fit's float32."""
    user = setup.user
    if user.identity and user.L is None:
        # Σ_i f_i(w_i) of the users' row problems: the fast path's row update with no Newton
        # step evaluates its rows and leaves W as it is; plus the items' regulariser
        E = _latent(setup.item, H)
        _, _, g = _update_side(setup, setup.entries, user, W, E, setup.p_quad, setup.q_quad,
                               True, None, 0, _EVALUATE)
        return g + _side_reg(setup, setup.item, H, E)
    W, H = _f64(W), _f64(H)
    E = setup.item.mul(H)
    prob = SubProblem(setup, setup.entries, user, E, setup.p_quad, setup.q_quad)
    return prob.fun(W.ravel()) + _side_reg(setup, setup.item, H, E)


def _gram(E, q):
    """M = Eᵀ diag(q) E and κ = Eᵀ q (a numba kernel: no BLAS pool competing with numba's)."""
    k = E.shape[1]
    M, kappa = np.empty((k, k)), np.empty(k)
    weighted_gram(E, q, M, kappa)
    return M, kappa


#: The smallest k at which a float32 fit on the row path works in the eigenbasis of M (below).
#: At 20M positives (docs/performance.md) it made an SQ-wSQ iteration 19% shorter at k = 256,
#: where the rows' k×k products M·v had been a fifth of it, and about 3% at k = 64; two
#: rotations of both factors per iteration cost half their multiply-adds (BLAS products on fixed
#: chunks of 64 rows, so that a Dask block turns its rows to the same numbers: ``turn_rows``).
EIGEN_MIN_K = 64


def eigen_rows(k, dtype):
    """Whether a row-path fit of rank k in ``dtype`` works in the eigenbasis of each M."""
    return np.dtype(dtype) == np.float32 and k >= EIGEN_MIN_K


def eigen_turn(M, kappa):
    """(Q, Λ as a diagonal matrix, Qᵀκ) with M = Q Λ Qᵀ (float64), or None when M is not finite
    (a diverging run, which the objective's check then reports)."""
    if not np.isfinite(M).all():
        return None
    lam, Q = np.linalg.eigh(M)
    return Q, np.diag(lam), Q.T @ kappa


def _eigen_basis(E, q, factors):
    """M = Eᵀ diag(q) E and κ = Eᵀ q, with every array of ``factors`` (E among them) turned in
    place into the eigenbasis of M: A ← A Q with M = Q Λ Qᵀ.

    W Hᵀ and ‖W‖², ‖H‖² do not change (Q is orthogonal), and the row problems of the half-step
    are the same problems in the new coordinates, where M is Λ: each of their products M·v costs
    k multiplications instead of k². Returns (Λ as a diagonal matrix, Qᵀκ, True), the ``gram``
    of :func:`_update_side`; or (M, κ, False) without turning anything when M is not finite.
    """
    M, kappa = sum_gram_parts([gram_parts(E, q)])
    turn = eigen_turn(M, kappa)
    if turn is None:
        return M, kappa, False
    Q, D, kappa = turn
    Qc = np.ascontiguousarray(Q, dtype=E.dtype)
    for A in factors:
        turn_rows(A, Qc)
    return D, kappa, True


def _update_side(setup, entries, side, W, E, p_quad, q_quad, fast_path, solve, n_inner,
                 rows, start=None, gram=None):
    """Minimise over one side's W with the other side's latent matrix E fixed.

    On the fast path W is updated in place (``fit`` owns its factors); the solvers return a
    new array. Returns the new W, the solver iterations (0 on the fast path) and the sub-problem's
    objective g(W) at the new W (everything in f that depends on W, plus the constant).
    ``rows`` is the row solver's :class:`~fastpu._kernels.ocmf.RowOptions` (fast path only).
    ``start`` (a list): on the fast path, g at the W it started from is appended to it (the
    rows' first Newton step evaluates it anyway); elsewhere it is left empty. ``gram`` (the row
    path only): (M, κ, diagonal) of E from :func:`_eigen_basis`, instead of computing them here.
    """
    if fast_path and side.identity and side.L is None:
        E = np.ascontiguousarray(E)
        M, kappa, diag = _gram(E, q_quad) + (False,) if gram is None else gram
        if not (W.flags.c_contiguous and W.flags.writeable):
            W = np.array(W, order="C")
        f_rows = np.empty(W.shape[0])
        f0_rows = np.empty(W.shape[0]) if start is not None else _NO_ROWS
        local_max = local_entries(W.shape[1], E.dtype.itemsize)
        row_newton(setup.kind, entries.indptr, entries.indices, entries.labels, entries.weights,
                   entries.corr, q_quad, setup.abar, E, M, kappa, p_quad, side.rows_lam,
                   W, rows, local_max, f_rows, f0_rows, diag=diag)
        const = setup.abar ** 2 * float(p_quad.sum()) * float(q_quad.sum())
        # rows of a diverging run hold ±inf (inf - inf in the sum): Progress reports the objective
        with np.errstate(over="ignore", invalid="ignore"):
            if start is not None:
                start.append(float(f0_rows.sum()) + const)
            return W, 0, float(f_rows.sum()) + const
    prob = SubProblem(setup, entries, side, _f64(E), p_quad, q_quad)
    res = solve(prob, W.ravel(), max_iter=n_inner)          # the solvers work on a float64 copy
    return res.x.reshape(W.shape).astype(W.dtype, copy=False), res.nit, res.fun
