"""ocmf's row problem: the fit's Newton–CG row updates and fold-in's Newton solve, one objective.

With no features and no graph on the side being updated, the sub-problem splits
into one k-dimensional problem per row i:

    f_i(w) = Σ_{e in row i} [c_e l(y_e, w·h_j) - r_e (abar - w·h_j)^2]
             + p_i (wᵀ M w - 2 abar wᵀ kappa) + lam ‖w‖²

with Hessian Σ_e l⁺''_e h_j h_jᵀ + 2 p_i M + 2 lam I, applied to a vector in
O(|row| k + k²) without forming it. Each row runs a few Newton steps, each
solved by conjugate gradient from zero (for the square loss one step is the
warm-started least-squares solve), with a backtracking line search on f_i for
losses that are not quadratic. Rows are independent: each thread owns a block
of rows of W, so the result does not depend on the thread count.

Fold-in (:func:`newton_rows`) solves the same f_i to convergence for rows that were not
trained, from w = 0, by Newton's method with the exact k×k Hessian (a Cholesky solve per
step). Both read f_i, its per-entry derivatives and its gradient from :func:`_value_grad`, and
f_i along a step from :func:`_entry_value` and the quadratic part's polynomial: the row
objective is written once.

The solver is written once too, as small steps that every form composes: a Newton step's
start (:func:`_cg_scale`, :func:`_cg_begin`), one CG step (:func:`_cg_take`, :func:`_cg_turn`),
its end (:func:`_cg_unscale`), and the line search (:func:`_line_sums`, :func:`_quad_at`,
:func:`_armijo_ok`, :func:`_backtrack`). The fit's kernel (:func:`_solve_chunk`) runs them
with its own passes over a row's entries; the 2-D grid's reducers (``grid_*`` below) run the
same steps on the entries' sums the grid's cells send them; fold-in's :func:`newton_rows` uses
the line search. Their constants (Newton and CG steps, CG tolerance, Armijo constant, the
backtracking factor and count) come whole from one :class:`RowOptions` record, built once at
the boundary of each fit. The regularisation weight is per row (``lam`` holds one value, or
one per row: frequency-scaled regularisation).

How the work is laid out:

* A row with at most ``local_max`` entries first copies its item vectors h_j
  into a contiguous scratch block (in E's dtype); every later pass (value,
  gradient, each CG product) reads that block from cache instead of gathering
  rows of E again. Longer rows read E directly.
* The value, the per-entry derivatives and the gradient come from one pass.
* The CG loop also accumulates the step's scores g_t·step and M step from the
  products it computes anyway, so the backtracking line search evaluates
  f_i(w + α step) from a few scalars and one loss per entry.
* Products with M and with the item vectors handle four rows at a time, so
  each load of w (or of the CG direction) feeds four sums.
* The small helpers are inlined (numba ``inline="always"``) and the per-row
  solver is written inside the loop over a chunk's rows: a call between compiled
  functions costs about as much as a k = 32 product, and a row with few entries
  makes many of them.

The row kernels allow LLVM to reassociate and contract floating-point sums
(``fastmath={"reassoc", "contract"}``) so that the length-k dot products
vectorise; they make no finite-math assumption (inf and NaN keep their meaning),
and the loss functions they call are compiled without any fastmath flag.

The length-k products (an item vector with w or a CG direction, M with a vector, the
gradient's and the Hessian product's accumulation) are computed in the factors' dtype: for
float32 factors in float32, sixteen lanes per AVX-512 instruction instead of eight, as
implicit's ALS computes. Everything summed over a row's entries (f_i, the line search) and the
CG scalars are float64, and f_i at the new row is summed from its entries' scores rather than
taken from the CG identity. CG works on the gradient scaled by a power of two near 1/‖g‖,
exact in binary floating point (float64 results are unchanged by it), so that a huge penalty's
Hessian products do not overflow float32. For float64 factors every operation is float64.
"""

import dataclasses
import math

import numba as nb
import numpy as np

from . import linalg as LA
from .losses import is_quadratic, loss_derivs, loss_value
from .rowpool import run_rows

_BLOCKS_PER_THREAD = 8        # row blocks per thread, taken dynamically (rowpool.run_rows)

_JIT = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})
LOCAL_ENTRIES = 65536       # the smallest scratch of a row's item vectors (entries × k)
#: the largest scratch of a row's item vectors per thread: a row whose copy fits is read from
#: its contiguous copy on every pass after the first; a longer one gathers from E on each pass.
#: At 20M positives (ML-20M's size) the popular items' rows are the long ones, and copying them
#: once made the item side's sweep 28% (float64) to 52% (float32) faster than gathering.
LOCAL_BYTES = 32 << 20


@dataclasses.dataclass(frozen=True)
class RowOptions:
    """How each row's problem is solved: its Newton steps, their CG solves and line search.

    Attributes
    ----------
    newton_steps : int
        Newton steps per row and call (the fit: per half-step; fold-in: at most this many).
    cg_steps : int
        CG steps per Newton step (the fit's inner solve; fold-in solves exactly).
    cg_tol : float
        CG stops when its residual is at most ``cg_tol`` times the first.
    armijo : float
        Sufficient-decrease constant c of the line search: f(w + α s) ≤ f(w) + c α gᵀs.
    shrink : float
        Backtracking factor: α = 1, shrink, shrink², ...
    backtracks : int
        Step lengths tried before a row's Newton loop gives up (its row is left as it is).
    grad_tol : float
        Stop a row's Newton loop once ‖∇f_i‖ ≤ grad_tol ‖∇f_i(w₀)‖ (fold-in; 0 for the fit,
        which takes its ``newton_steps`` warm-started steps).
    precondition : bool
        Precondition CG by the diagonal of the row's Hessian (Jacobi): 2 p_i diag(M) + 2 λ_i +
        Σ_e ℓ⁺''_e h_e², summed in the gradient's pass over the row's entries. In the
        eigenbasis of M (float32, k ≥ 64) the k×k part is diagonal, so the preconditioner is
        exact there and the positive part a correction of low rank: one preconditioned step
        does what three plain ones do (docs/ocmf.md, "Solvers").
    """

    newton_steps: int = 1
    cg_steps: int = 4
    cg_tol: float = 1e-3
    armijo: float = 1e-4
    shrink: float = 0.5
    backtracks: int = 30
    grad_tol: float = 0.0
    precondition: bool = False

    def ladder(self):
        """The step lengths α the line search tries, in order (repeated products, as the
        kernels form them)."""
        out = np.empty(self.backtracks)
        alpha = 1.0
        for b in range(self.backtracks):
            out[b] = alpha
            alpha *= self.shrink
        return out


def per_row(lam, m):
    """``lam`` as the kernels read it: a float64 array of one value (every row) or of m."""
    arr = np.ascontiguousarray(np.atleast_1d(np.asarray(lam, dtype=np.float64)))
    if arr.shape[0] not in (1, m) or arr.ndim != 1:
        raise ValueError(f"lam has {arr.shape[0]} values for {m} rows")    # internal misuse
    return arr


def local_entries(k, itemsize):
    """The ``local_max`` of :func:`row_newton`: the entries whose item vectors a thread copies
    (up to :data:`LOCAL_BYTES` of them, and at least ``LOCAL_ENTRIES // k``)."""
    return max(16, LOCAL_ENTRIES // k, LOCAL_BYTES // (k * itemsize))


@nb.njit(inline="always", **_JIT)
def _dot4(A, j0, j1, j2, j3, v):
    """(A[j0]·v, A[j1]·v, A[j2]·v, A[j3]·v): each load of v feeds four sums, in v's dtype."""
    s0 = v.dtype.type(0.0)
    s1 = v.dtype.type(0.0)
    s2 = v.dtype.type(0.0)
    s3 = v.dtype.type(0.0)
    for r in range(v.shape[0]):
        vr = v[r]
        s0 += A[j0, r] * vr
        s1 += A[j1, r] * vr
        s2 += A[j2, r] * vr
        s3 += A[j3, r] * vr
    return s0, s1, s2, s3


@nb.njit(inline="always", **_JIT)
def _dot1(A, j, v):
    """A[j]·v, summed in v's dtype."""
    acc = v.dtype.type(0.0)
    for r in range(v.shape[0]):
        acc += A[j, r] * v[r]
    return acc


@nb.njit(inline="always", **_JIT)
def _symv(M, v, out):
    """out = M v, four rows of M at a time."""
    k = v.shape[0]
    a = 0
    while a + 4 <= k:
        out[a], out[a + 1], out[a + 2], out[a + 3] = _dot4(M, a, a + 1, a + 2, a + 3, v)
        a += 4
    while a < k:
        out[a] = _dot1(M, a, v)
        a += 1


@nb.njit(inline="always", **_JIT)
def _mprod(M, mdv, diag, v, out):
    """out = M v; with ``diag`` M is diagonal (the fit works in M's eigenbasis) and its diagonal
    is mdv: k products instead of k²."""
    if diag:
        for a in range(v.shape[0]):
            out[a] = mdv[a] * v[a]
    else:
        _symv(M, v, out)


@nb.njit(inline="always", **_JIT)
def _scores(G, idx, off, nrow, w, s):
    """s[t] = G[idx[off + t]] · w, four rows at a time."""
    t = 0
    while t + 4 <= nrow:
        j = off + t
        s[t], s[t + 1], s[t + 2], s[t + 3] = _dot4(G, idx[j], idx[j + 1], idx[j + 2],
                                                   idx[j + 3], w)
        t += 4
    while t < nrow:
        s[t] = _dot1(G, idx[off + t], w)
        t += 1


@nb.njit(inline="always", **_JIT)
def _quad_part(M, mdv, diag, kappa, abar, p_i, lam, w, g, mw):
    """p_i (wᵀMw - 2 abar wᵀκ) + lam ‖w‖²; writes M w into mw and its gradient into g."""
    k = w.shape[0]
    _mprod(M, mdv, diag, w, mw)
    quad = 0.0
    lin = 0.0
    nrm = 0.0
    for a in range(k):
        quad += np.float64(w[a]) * mw[a]
        lin += w[a] * kappa[a]
        nrm += np.float64(w[a]) * w[a]
    for a in range(k):
        g[a] = 2.0 * p_i * (mw[a] - abar * kappa[a]) + 2.0 * lam * w[a]
    return p_i * (quad - 2.0 * abar * lin) + lam * nrm


@nb.njit(inline="always", **_JIT)
def _entry_terms(kind, yl, wt, rc, abar, st, t, d1, d2):
    """Entry t's value c l(y, s) − r (ā − s)²; its first and second derivatives into d1, d2."""
    v, g1, g2 = loss_derivs(kind, yl[t], st)
    dd = abar - st
    d1[t] = wt[t] * g1 + 2.0 * rc[t] * dd
    d2[t] = wt[t] * g2 - 2.0 * rc[t]
    return wt[t] * v - rc[t] * dd * dd


@nb.njit(inline="always", **_JIT)
def _value_grad(kind, G, idx, off, nrow, yl, wt, rc, abar, M, mdv, diag, kappa, p_i, lam, w,
                s, d1, d2, g, mw, fresh, pinv, jac):
    """f_i(w), per-entry first/second derivatives d1, d2 and the gradient g in one pass.

    The row's labels, weights and corrections are yl[t], wt[t], rc[t]. The scores are
    recomputed from w if ``fresh`` (and left in s); otherwise s already holds them. M w is left
    in mw. Four item vectors at a time: their scores, their entries' terms, and then, while the
    four rows are still in the L1 cache, their part of the gradient — the same operations in
    the same order as a pass of scores, one of terms and one of accumulation. With ``jac`` the
    same pass also builds the Jacobi preconditioner pinv = 1 / diag(H) of the row's Hessian
    H = 2 p_i M + 2 λ I + Σ_t d2[t] g_t g_tᵀ (M's diagonal in mdv) through :func:`_jacobi_inv`,
    its sums in float64 and in the entries' order, from the rows already in the L1 cache: no
    pass of its own. The grid's reducers build the same from the entries' sums
    (:func:`grid_begin`).
    """
    k = w.shape[0]
    val = _quad_part(M, mdv, diag, kappa, abar, p_i, lam, w, g, mw)
    if jac:
        for a in range(k):
            pinv[a] = _jacobi_base(mdv, p_i, lam, a)
    t = 0
    while t + 4 <= nrow:
        j = off + t
        j0 = idx[j]
        j1 = idx[j + 1]
        j2 = idx[j + 2]
        j3 = idx[j + 3]
        if fresh:
            s[t], s[t + 1], s[t + 2], s[t + 3] = _dot4(G, j0, j1, j2, j3, w)
        val += _entry_terms(kind, yl, wt, rc, abar, s[t], t, d1, d2)
        val += _entry_terms(kind, yl, wt, rc, abar, s[t + 1], t + 1, d1, d2)
        val += _entry_terms(kind, yl, wt, rc, abar, s[t + 2], t + 2, d1, d2)
        val += _entry_terms(kind, yl, wt, rc, abar, s[t + 3], t + 3, d1, d2)
        z0 = d1[t]
        z1 = d1[t + 1]
        z2 = d1[t + 2]
        z3 = d1[t + 3]
        for a in range(k):
            g[a] += G[j0, a] * z0 + G[j1, a] * z1 + G[j2, a] * z2 + G[j3, a] * z3
        if jac:
            _jacobi_add(G, j0, d2[t], pinv)
            _jacobi_add(G, j1, d2[t + 1], pinv)
            _jacobi_add(G, j2, d2[t + 2], pinv)
            _jacobi_add(G, j3, d2[t + 3], pinv)
        t += 4
    while t < nrow:
        jt = idx[off + t]
        if fresh:
            s[t] = _dot1(G, jt, w)
        val += _entry_terms(kind, yl, wt, rc, abar, s[t], t, d1, d2)
        zt = d1[t]
        for a in range(k):
            g[a] += G[jt, a] * zt
        if jac:
            _jacobi_add(G, jt, d2[t], pinv)
        t += 1
    if jac:
        for a in range(k):
            pinv[a] = _jacobi_inv(pinv[a])
    return val


@nb.njit(inline="always", **_JIT)
def _quad_hessp(M, mdv, diag, p_i, lam, v, mv, out):
    """out = (2 p_i M + 2 lam I) v, the k×k part of the row's Hessian product; M v into mv."""
    _mprod(M, mdv, diag, v, mv)
    for a in range(v.shape[0]):
        out[a] = 2.0 * p_i * mv[a] + 2.0 * lam * v[a]


@nb.njit(inline="always", **_JIT)
def _sumsq(g):
    """gᵀg, accumulated in float64."""
    acc = 0.0
    for a in range(g.shape[0]):
        acc += np.float64(g[a]) * g[a]
    return acc


@nb.njit(inline="always", **_JIT)
def _cg_scale(gg):
    """The power of two near 1/‖g‖ that CG's vectors are scaled by (exact in binary floating
    point, so float64 iterates equal the unscaled CG's bit for bit): in float32 the products
    H d of a huge penalty (λ = 1e20: ‖H d‖ ~ 4λ²‖w‖) would overflow."""
    sc = 1.0
    if gg < np.inf:
        sc = math.ldexp(1.0, -math.frexp(math.sqrt(gg))[1])
    return sc


@nb.njit(inline="always", **_JIT)
def _cg_begin(g, sc, step, r, d):
    """A Newton step's CG from step = 0: r = d = −g·sc."""
    for a in range(g.shape[0]):
        step[a] = 0.0
        r[a] = -g[a] * sc
        d[a] = r[a]


@nb.njit(inline="always", **_JIT)
def _cg_take(alpha, d, Hd, step, r):
    """step += α d, r −= α H d; returns the new rᵀr."""
    rr_new = 0.0
    for a in range(d.shape[0]):
        step[a] += alpha * d[a]
        r[a] -= alpha * Hd[a]
        rr_new += r[a] * r[a]
    return rr_new


@nb.njit(inline="always", **_JIT)
def _cg_turn(rr_new, rr, r, d):
    """The next direction d = r + β d, β = rr_new / rr."""
    beta = rr_new / rr
    for a in range(d.shape[0]):
        d[a] = r[a] + beta * d[a]


@nb.njit(inline="always", **_JIT)
def _jacobi_base(mdv, p_i, lam, a):
    """Coordinate a of the k×k part of the row's Hessian diagonal, 2 p_i M_aa + 2 λ."""
    return 2.0 * p_i * mdv[a] + 2.0 * lam


@nb.njit(inline="always", **_JIT)
def _jacobi_inv(x):
    """The preconditioner's entry for a Hessian diagonal entry x: 1/x, or 0 where x is not
    positive (the Hessian's row is then zero: a PSD matrix's zero diagonal entry), so that z
    stays finite."""
    return 1.0 / x if x > 0.0 else 0.0


@nb.njit(inline="always", **_JIT)
def _jacobi_add(G, j, dt, pinv):
    """pinv += d_t g_j ∘ g_j, in float64: one entry's part of the Hessian's diagonal."""
    d = np.float64(dt)
    for a in range(pinv.shape[0]):
        x = np.float64(G[j, a])
        pinv[a] += d * x * x


@nb.njit(inline="always", **_JIT)
def _jacobi_apply(pinv, r, z):
    """z = pinv ∘ r; returns rᵀz."""
    rz = 0.0
    for a in range(r.shape[0]):
        z[a] = pinv[a] * r[a]
        rz += r[a] * z[a]
    return rz


@nb.njit(inline="always", **_JIT)
def _cg_unscale(sc, step, r):
    """Undo CG's scaling of the step and the residual (exactly: sc is a power of two)."""
    inv = 1.0 / sc
    for a in range(step.shape[0]):
        step[a] *= inv
        r[a] *= inv
    return inv


@nb.njit(inline="always", **_JIT)
def _line_sums(w, mw, step, mstep, kappa):
    """(wᵀMw, sᵀMw, sᵀMs, wᵀκ, sᵀκ, wᵀw, wᵀs, sᵀs) from M w and M s: the quadratic part of
    f_i on the line w + α s is a polynomial in α with these coefficients."""
    wmw = 0.0
    smw = 0.0
    sms = 0.0
    wk = 0.0
    sk = 0.0
    ww = 0.0
    ws = 0.0
    ss = 0.0
    for a in range(w.shape[0]):
        wmw += np.float64(w[a]) * mw[a]
        smw += step[a] * mw[a]
        sms += step[a] * mstep[a]
        wk += w[a] * kappa[a]
        sk += step[a] * kappa[a]
        ww += np.float64(w[a]) * w[a]
        ws += w[a] * step[a]
        ss += step[a] * step[a]
    return wmw, smw, sms, wk, sk, ww, ws, ss


@nb.njit(inline="always", **_JIT)
def _quad_at(sums, p_i, abar, lam, alpha):
    """p_i ((w+αs)ᵀM(w+αs) − 2ā (w+αs)ᵀκ) + λ‖w+αs‖² from :func:`_line_sums`."""
    wmw, smw, sms, wk, sk, ww, ws, ss = sums
    quad = p_i * (wmw + alpha * (2.0 * smw + alpha * sms) - 2.0 * abar * (wk + alpha * sk))
    return quad + lam * (ww + alpha * (2.0 * ws + alpha * ss))


@nb.njit(inline="always", **_JIT)
def _armijo_ok(f_new, f_cur, alpha, gs, armijo):
    """The sufficient-decrease test f(w + α s) ≤ f(w) + c α gᵀs."""
    return f_new <= f_cur + armijo * alpha * gs


@nb.njit(inline="always", **_JIT)
def _backtrack(kind, nrow, yl, wt, rc, abar, s, sd, sums, p_i, lam, f_cur, gs, armijo, shrink,
               backtracks, rounding_ok):
    """(accepted, α, f_i(w + α s), backtracks taken): α = 1, shrink, ... until the Armijo test
    holds. With ``rounding_ok`` a full step whose increase is below f's rounding level is
    accepted too (fold-in's last steps). The entries' part comes from their scores s and the
    step's scores sd, the rest from :func:`_quad_at`."""
    alpha = 1.0
    f_new = f_cur
    for b in range(backtracks):
        rest = _quad_at(sums, p_i, abar, lam, alpha)
        f_new = _entry_value(kind, nrow, yl, wt, rc, abar, s, sd, alpha)
        f_new += rest
        if _armijo_ok(f_new, f_cur, alpha, gs, armijo) or (
                rounding_ok and alpha == 1.0 and f_new - f_cur <= 1e-13 * (abs(f_cur) + 1.0)):
            return True, alpha, f_new, b
        alpha *= shrink
    return False, alpha, f_new, backtracks


@nb.njit(inline="always", **_JIT)
def _hessp(G, idx, off, nrow, d2, M, mdv, diag, p_i, lam, v, u, mv, out):
    """out = (2 p_i M + 2 lam I + Σ_t d2[t] g_t g_tᵀ) v with g_t = G[idx[off + t]].

    Also leaves M v in mv and the scores g_t·v in u. One pass over the item
    vectors: four at a time, the dot products g_t·v and then, while those four rows are still in
    the L1 cache, their contributions d2_t (g_t·v) g_t — the same operations in the same order
    as a pass of scores followed by a pass of accumulation, with half the reads of G.
    """
    k = v.shape[0]
    _quad_hessp(M, mdv, diag, p_i, lam, v, mv, out)
    t = 0
    while t + 4 <= nrow:
        j = off + t
        j0 = idx[j]
        j1 = idx[j + 1]
        j2 = idx[j + 2]
        j3 = idx[j + 3]
        s0, s1, s2, s3 = _dot4(G, j0, j1, j2, j3, v)
        u[t] = s0
        u[t + 1] = s1
        u[t + 2] = s2
        u[t + 3] = s3
        z0 = d2[t] * s0
        z1 = d2[t + 1] * s1
        z2 = d2[t + 2] * s2
        z3 = d2[t + 3] * s3
        for a in range(k):
            out[a] += G[j0, a] * z0 + G[j1, a] * z1 + G[j2, a] * z2 + G[j3, a] * z3
        t += 4
    while t < nrow:
        jt = idx[off + t]
        st = _dot1(G, jt, v)
        u[t] = st
        zt = d2[t] * st
        for a in range(k):
            out[a] += G[jt, a] * zt
        t += 1


@nb.njit(inline="always", **_JIT)
def _entry_value(kind, nrow, yl, wt, rc, abar, s, sd, alpha):
    """Σ_t c l(y, s_t + α sd_t) - r (ā - s_t - α sd_t)²: the entries' part of f_i on a line."""
    val = 0.0
    for t in range(nrow):
        st = s[t] + alpha * sd[t]
        dd = abar - st
        val += wt[t] * loss_value(kind, yl[t], st) - rc[t] * dd * dd
    return val


@nb.njit(**_JIT)
def _solve_chunk(kind, c_lo, c_hi, indptr, indices, labels, weights, corr, q, abar, E, M, diag,
                 kappa, p, lam, W, n_newton, n_cg, cg_tol, armijo, shrink, backtracks, cap,
                 f_out, f0_out, counts_out, exact_value, precondition):
    """Newton–CG steps on rows c_lo..c_hi-1 of W, one after another (updated in place).

    Row i's f_i is minimised from its current value. Its item vectors are src[idx[off + t]]
    for t < nrow (a cached copy G, or E itself for long rows); its entries' labels, weights and
    corrections are gathered into yl[t], wt[t], rc[t] first (see :func:`row_newton` for the
    compact forms), and its regularisation weight is lam[i] (lam[0] when lam holds one value).
    Along with the CG step, the loop keeps its scores sd_t = g_t·step and M step (sums of the
    CG directions' own products), so that the line search evaluates f_i(w + α step) from
    scalars and one loss per entry, without touching the item vectors or M again. The solver is
    written inside the row loop rather than as a function called per row: such a call passes
    some twenty arrays and costs about 10% here. With ``n_newton == 0`` every f_out[i] is f_i
    at the current row and W is left as it is; a non-empty f0_out receives f_i at the row it
    started from (computed by the first step anyway), a non-empty counts_out the row's Newton
    steps, CG steps and backtracks (its decisions, for tests and diagnostics).
    """
    k = W.shape[1]
    longest = 0
    for i in range(c_lo, c_hi):
        longest = max(longest, indptr[i + 1] - indptr[i])
    n_local = min(longest, cap)
    G = np.empty((n_local, k), dtype=E.dtype)
    iota = np.empty(n_local, dtype=indices.dtype)     # same type as indices: one idx variable
    for t in range(n_local):
        iota[t] = t
    # the vectors the length-k products read and write are in E's dtype (float32 products and
    # sums for float32 factors, as implicit computes); the CG scalars, the step, the scores and
    # the objective stay float64
    ct = E.dtype
    s = np.empty(longest)
    d1 = np.empty(longest, dtype=ct)
    d2 = np.empty(longest, dtype=ct)
    u = np.empty(longest)
    sd = np.empty(longest)
    yl = np.empty(longest)
    wt = np.empty(longest)
    rc = np.empty(longest)
    w = np.empty(k, dtype=ct)
    g = np.empty(k, dtype=ct)
    step = np.empty(k)
    r = np.empty(k)
    d = np.empty(k, dtype=ct)
    Hd = np.empty(k, dtype=ct)
    mw = np.empty(k, dtype=ct)
    md = np.empty(k, dtype=ct)
    mstep = np.empty(k)
    pinv = np.empty(k)                   # the Jacobi preconditioner (``precondition``)
    z = np.empty(k)
    mdv = np.empty(k, dtype=ct)          # M's diagonal, all of M when ``diag``
    for a in range(k):
        mdv[a] = M[a, a]
    # compact forms: a length-1 labels/weights/lam array holds every entry's (row's) value; an
    # empty corr means r_e = p_i q_j
    l_step = 0 if labels.shape[0] == 1 else 1
    w_step = 0 if weights.shape[0] == 1 else 1
    lam_step = 0 if lam.shape[0] == 1 else 1
    per_entry_corr = corr.shape[0] > 0
    c_step = 0 if corr.shape[0] == 1 else 1      # one value for every entry (0: no correction)
    keep_start = f0_out.shape[0] > 0
    keep_counts = counts_out.shape[0] > 0
    # a line search for non-quadratic losses. What it needs (the step's scores sd and M step)
    # is also kept for the square loss when the products are float32 (``exact_value``): f_i at
    # the new row is then summed from its entries' scores and the quadratic part's polynomial,
    # not from the CG identity f + ½(gᵀs − rᵀs), whose float32 residual r carries an error of
    # order eps·|gᵀs| (with λ = 1e20 it made a square-loss objective negative)
    line = not is_quadratic(kind)
    track = line or exact_value
    for i in range(c_lo, c_hi):
        lo = indptr[i]
        nrow = indptr[i + 1] - lo
        p_i = p[i]
        lam_i = lam[i * lam_step]
        for a in range(k):
            w[a] = W[i, a]
        for t in range(nrow):
            e = lo + t
            yl[t] = labels[e * l_step]
            wt[t] = weights[e * w_step]
            rc[t] = corr[e * c_step] if per_entry_corr else p_i * q[indices[e]]
        if nrow <= n_local:
            for t in range(nrow):
                j = indices[lo + t]
                for a in range(k):
                    G[t, a] = E[j, a]
            src = G
            idx = iota
            off = 0
        else:
            src = E
            idx = indices
            off = lo
        f_cur = 0.0
        fresh = True
        n_steps = 0
        n_cgs = 0
        n_back = 0
        for it in range(max(n_newton, 1)):
            f_cur = _value_grad(kind, src, idx, off, nrow, yl, wt, rc, abar, M, mdv, diag, kappa,
                                p_i, lam_i, w, s, d1, d2, g, mw, fresh, pinv,
                                precondition and n_newton > 0)
            if it == 0 and keep_start:
                f0_out[i] = f_cur
            if n_newton == 0:
                break
            gg = _sumsq(g)
            if gg == 0.0:
                break
            sc = _cg_scale(gg)
            _cg_begin(g, sc, step, r, d)
            if track:
                for a in range(k):
                    mstep[a] = 0.0
                for t in range(nrow):
                    sd[t] = 0.0
            rr = gg * sc * sc
            stop = cg_tol * cg_tol * rr
            if precondition:             # d = z = P⁻¹ r, and CG's ratios are of rᵀz
                rr = _jacobi_apply(pinv, r, z)    # pinv from _value_grad's pass
                for a in range(k):
                    d[a] = z[a]
            for _c in range(n_cg):
                _hessp(src, idx, off, nrow, d2, M, mdv, diag, p_i, lam_i, d, u, md, Hd)
                n_cgs += 1
                dHd = 0.0
                for a in range(k):
                    dHd += np.float64(d[a]) * Hd[a]
                if dHd <= 0.0:
                    break
                alpha = rr / dHd
                rr_new = _cg_take(alpha, d, Hd, step, r)
                if track:
                    for a in range(k):
                        mstep[a] += alpha * md[a]
                    for t in range(nrow):
                        sd[t] += alpha * u[t]
                if rr_new <= stop:
                    break
                if precondition:
                    rz_new = _jacobi_apply(pinv, r, z)
                    _cg_turn(rz_new, rr, z, d)
                    rr = rz_new
                else:
                    _cg_turn(rr_new, rr, r, d)
                    rr = rr_new
            inv = _cg_unscale(sc, step, r)
            if track:
                for a in range(k):
                    mstep[a] *= inv
                for t in range(nrow):
                    sd[t] *= inv
            gs = 0.0
            for a in range(k):
                gs += g[a] * step[a]
            if gs >= 0.0:
                break
            n_steps += 1
            if not line:
                # f_i is quadratic: CG iterates never increase it, and with H step = -g - r
                # its new value is f + gᵀstep + ½ stepᵀH step = f + ½ (gᵀstep - rᵀstep)
                if exact_value:
                    f_cur = (_entry_value(kind, nrow, yl, wt, rc, abar, s, sd, 1.0)
                             + _quad_at(_line_sums(w, mw, step, mstep, kappa), p_i, abar, lam_i,
                                        1.0))
                    for a in range(k):
                        w[a] += step[a]
                else:
                    sr = 0.0
                    for a in range(k):
                        w[a] += step[a]
                        sr += step[a] * r[a]
                    f_cur = f_cur + 0.5 * (gs - sr)
                if n_cg >= k:
                    break
                fresh = True
                continue
            # backtracking on f_i(w + α step), whose quadratic part is a polynomial in α
            accepted, alpha, f_new, back = _backtrack(
                kind, nrow, yl, wt, rc, abar, s, sd, _line_sums(w, mw, step, mstep, kappa), p_i,
                lam_i, f_cur, gs, armijo, shrink, backtracks, False)
            n_back += back
            if not accepted:
                break
            for a in range(k):
                w[a] += alpha * step[a]
            for t in range(nrow):
                s[t] += alpha * sd[t]          # the scores of the new w, for the next step
            f_cur = f_new
            fresh = False
        if n_newton > 0:
            for a in range(k):
                W[i, a] = w[a]
        f_out[i] = f_cur
        if keep_counts:
            counts_out[i, 0] = n_steps
            counts_out[i, 1] = n_cgs
            counts_out[i, 2] = n_back


_NO_COUNTS = np.empty((0, 3), dtype=np.int32)


def row_newton(kind, indptr, indices, labels, weights, corr, q, abar, E, M, kappa, p, lam,
               W, opts, local_max, f_out, f0_out, diag=False, counts_out=None):
    """Update every row of W in place by ``opts.newton_steps`` Newton–CG steps on its own f_i.

    Entry e of row i (column j = indices[e]) has label labels[e], weight weights[e] and
    correction corr[e]; a ``labels`` or ``weights`` array of length 1 gives every entry that
    value, an empty ``corr`` gives r_e = p[i] q[j] and a ``corr`` of length 1 its value to every
    entry (binary data and the Full approach need no per-entry arrays at all; ``q`` is only read
    with an empty ``corr``; ``negatives="all"`` passes ``[0.0]``: no correction). ``lam`` is the rows' regularisation
    weight: a float, or an array of one value or of one per row. ``opts`` is the
    :class:`RowOptions` record (Newton and CG steps, CG tolerance, line search). Rows with at
    most ``local_max`` entries copy their item vectors into a contiguous block first (see the
    module docstring); the result is the same either way up to rounding. ``f_out[i]`` receives
    f_i at the updated row (without the constant p_i ā² Σq), and ``f0_out[i]`` (unless it is
    empty) f_i at the row it started from; ``newton_steps == 0`` evaluates f_i at the current
    rows and leaves W unchanged. ``counts_out`` (m × 3 int32, optional) receives each row's
    Newton steps, CG steps and backtracks. E and W may be float32 or float64 (both the same);
    the length-k products are computed in that dtype, the sums over entries in float64 (see
    the module docstring). indptr and indices share one integer type (int32 from ocmf's
    boundary).

    The rows are split into one block of about equal work per thread, each solved by the
    serial, GIL-free :func:`_solve_chunk` on its own Python thread (:mod:`.rowpool`): a
    ``parallel=True`` wrapper compiled the solver two more times (most of a first fit's
    compile time). Rows are independent, so the result does not depend on the split.
    """
    cap = max(int(local_max), 0)
    M = np.ascontiguousarray(M, dtype=E.dtype)     # M's products in the factors' dtype too
    exact_value = E.dtype != np.float64
    kind, abar = int(kind), float(abar)
    lam = per_row(lam, W.shape[0])
    counts = _NO_COUNTS if counts_out is None else counts_out
    n_newton, n_cg, cg_tol = int(opts.newton_steps), int(opts.cg_steps), float(opts.cg_tol)
    armijo, shrink, backtracks = float(opts.armijo), float(opts.shrink), int(opts.backtracks)
    precondition = bool(opts.precondition)

    def block(lo, hi):
        _solve_chunk(kind, lo, hi, indptr, indices, labels, weights, corr, q, abar, E, M, diag,
                     kappa, p, lam, W, n_newton, n_cg, cg_tol, armijo, shrink, backtracks, cap,
                     f_out, f0_out, counts, exact_value, precondition)

    run_rows(block, indptr, W.shape[1], per_thread=_BLOCKS_PER_THREAD)


@nb.njit(parallel=True, **_JIT)
def _newton_rows(kind, indptr, indices, labels, weights, corr, abar, E, M, kappa, p, lam, tol,
                 max_iter, armijo, shrink, backtracks, W_out, gnorm_out, g0_out, iters_out):
    """The body of :func:`newton_rows` (options unpacked)."""
    m, k = W_out.shape
    lam_step = 0 if lam.shape[0] == 1 else 1
    for i in nb.prange(m):
        lo = indptr[i]
        nrow = indptr[i + 1] - lo
        p_i = p[i]
        lam_i = lam[i * lam_step]
        G = np.empty((nrow, k))
        Gd = np.empty((k, nrow))
        LA.gather(E, indices, lo, nrow, G)
        idx = np.arange(nrow)
        yl = labels[lo:lo + nrow]
        wt = weights[lo:lo + nrow]
        rc = corr[lo:lo + nrow]
        w = np.zeros(k)
        g = np.empty(k)
        gt = np.empty(k)
        step = np.empty(k)
        mw = np.empty(k)
        mstep = np.empty(k)
        H = np.empty((k, k))
        L = np.zeros((k, k))
        s = np.empty(nrow)
        sd = np.empty(nrow)
        st = np.empty(nrow)
        d1 = np.empty(nrow)
        d2 = np.empty(nrow)
        f = _value_grad(kind, G, idx, 0, nrow, yl, wt, rc, abar, M, kappa, False, kappa, p_i,
                        lam_i, w, s, d1, d2, g, mw, True, mw, False)
        gn = np.sqrt(np.dot(g, g))
        g0 = gn
        it = 0
        while it < max_iter and gn > tol * g0:
            LA.weighted_gram(G, d2, nrow, Gd, H)
            for a in range(k):
                for b in range(k):
                    H[a, b] += 2.0 * p_i * M[a, b]
                H[a, a] += 2.0 * lam_i
            if not LA.factor_shifted(H, L):
                break
            for a in range(k):
                gt[a] = -g[a]
            LA.cho_solve(L, gt, step)
            gs = 0.0
            for a in range(k):
                gs += g[a] * step[a]
            if not gs < 0.0:
                break
            # f_i along the step from the step's scores and M step: no pass over E per trial
            _scores(G, idx, 0, nrow, step, sd)
            _symv(M, step, mstep)
            accepted, alpha, ft, _b = _backtrack(
                kind, nrow, yl, wt, rc, abar, s, sd, _line_sums(w, mw, step, mstep, kappa), p_i,
                lam_i, f, gs, armijo, shrink, backtracks, True)
            if not accepted:
                break
            for a in range(k):
                step[a] = w[a] + alpha * step[a]          # the trial point
            ft = _value_grad(kind, G, idx, 0, nrow, yl, wt, rc, abar, M, kappa, False, kappa, p_i,
                             lam_i, step, st, d1, d2, gt, mstep, True, mw, False)
            gt_norm = np.sqrt(np.dot(gt, gt))
            if ft > f and gt_norm >= gn:
                break                      # rounding level: no progress possible
            for a in range(k):
                w[a] = step[a]
                g[a] = gt[a]
                mw[a] = mstep[a]
            for t in range(nrow):
                s[t] = st[t]
            f = ft
            gn = gt_norm
            it += 1
        for a in range(k):
            W_out[i, a] = w[a]
        gnorm_out[i] = gn
        g0_out[i] = g0
        iters_out[i] = it


def newton_rows(kind, indptr, indices, labels, weights, corr, abar, E, M, kappa, p, lam, opts,
                W_out, gnorm_out, g0_out, iters_out):
    """Minimise every row's f_i from w = 0 by Newton's method with a backtracking line search.

    Row i's entries are indptr[i]..indptr[i+1]-1 (item indices[e], label, weight c, correction
    r; per-entry arrays); ``lam`` one regularisation weight or one per row. Each Newton step
    solves with the exact k×k Hessian (a Cholesky factor) and then takes the line search of the
    fit's solver (:func:`_backtrack`, with ``opts``' constants). Stops when ‖∇f_i‖ ≤
    ``opts.grad_tol`` ‖∇f_i(0)‖, after ``opts.newton_steps`` steps, or when the line search
    cannot decrease f_i any more (rounding level). Writes the minimiser, the final and initial
    gradient norms and the number of Newton steps. Each ``prange`` iteration owns one row, so
    the result does not depend on the thread count.
    """
    _newton_rows(int(kind), indptr, indices, labels, weights, corr, float(abar), E, M, kappa, p,
                 per_row(lam, W_out.shape[0]), float(opts.grad_tol), int(opts.newton_steps),
                 float(opts.armijo), float(opts.shrink), int(opts.backtracks), W_out,
                 gnorm_out, g0_out, iters_out)


# ------------------------------------------------------------------------------------------
# The same steps on the sums of a 2-D grid's cells: a reducer's rows (fastpu/ocmf/_grid.py)
# ------------------------------------------------------------------------------------------
# A grid spreads a row's entries over the cells of its range, so each pass over the entries
# (value and gradient; one per CG step; the line search's values) is a round of tasks whose
# sums a reducer adds up. These kernels take those sums in place of the passes and make the
# fit kernel's decisions with its own steps, in float64, for every row of the reducer's range.
# ``counts`` holds each row's Newton steps, CG steps and backtracks, as counts_out does.

@nb.njit(**_JIT)
def grid_begin(w, pw, lam, M, kappa, abar, fe, ge, he, done, f, g, step, r, d, z, pinv, rr,
               stop, sc, act, cg, cg_tol):
    """A Newton step's start: f_i and ∇f_i from the entries' sums ``fe``, ``ge`` and the k×k
    part; rows with ∇f_i = 0 leave (``done``); the others start CG (``act``, ``cg``). A
    non-empty ``he`` (the entries' part of the Hessian's diagonal) preconditions the CG as
    the fit's rows do (:func:`_value_grad`)."""
    m, k = w.shape
    mdv = np.empty(k)
    for a in range(k):
        mdv[a] = M[a, a]
    mw = np.empty(k)
    lam_step = 0 if lam.shape[0] == 1 else 1
    precondition = he.shape[0] > 0
    for i in range(m):
        act[i] = False
        cg[i] = False
        for a in range(k):
            d[i, a] = 0.0
        if done[i]:
            continue
        val = _quad_part(M, mdv, False, kappa, abar, pw[i], lam[i * lam_step], w[i], g[i], mw)
        for a in range(k):
            g[i, a] += ge[i, a]
        f[i] = val + fe[i]
        gg = _sumsq(g[i])
        if gg == 0.0:
            done[i] = True
            continue
        sc[i] = _cg_scale(gg)
        _cg_begin(g[i], sc[i], step[i], r[i], d[i])
        rr[i] = gg * sc[i] * sc[i]
        stop[i] = cg_tol * cg_tol * rr[i]
        if precondition:
            lam_i = lam[i * lam_step]
            for a in range(k):
                pinv[i, a] = _jacobi_inv(_jacobi_base(mdv, pw[i], lam_i, a) + he[i, a])
            rr[i] = _jacobi_apply(pinv[i], r[i], z[i])
            for a in range(k):
                d[i, a] = z[i, a]
        act[i] = True
        cg[i] = True


@nb.njit(**_JIT)
def grid_cg(pw, lam, M, He, d, step, r, z, pinv, rr, stop, cg, counts, precondition):
    """One CG step for every row still in its CG loop, from the entries' part ``He`` of the
    Hessian products with the directions d; a row that stops gets d = 0 (nothing to send)."""
    m, k = d.shape
    mdv = np.empty(k)
    mv = np.empty(k)
    Hd = np.empty(k)
    lam_step = 0 if lam.shape[0] == 1 else 1
    for i in range(m):
        if not cg[i]:
            continue
        _quad_hessp(M, mdv, False, pw[i], lam[i * lam_step], d[i], mv, Hd)
        for a in range(k):
            Hd[a] += He[i, a]
        counts[i, 1] += 1
        dHd = 0.0
        for a in range(k):
            dHd += d[i, a] * Hd[a]
        stopped = dHd <= 0.0
        if not stopped:
            alpha = rr[i] / dHd
            rr_new = _cg_take(alpha, d[i], Hd, step[i], r[i])
            stopped = rr_new <= stop[i]
            if not stopped:
                if precondition:
                    rz_new = _jacobi_apply(pinv[i], r[i], z[i])
                    _cg_turn(rz_new, rr[i], z[i], d[i])
                    rr[i] = rz_new
                else:
                    _cg_turn(rr_new, rr[i], r[i], d[i])
                    rr[i] = rr_new
        if stopped:
            cg[i] = False
            for a in range(k):
                d[i, a] = 0.0


@nb.njit(**_JIT)
def grid_step(w, g, step, r, sc, f, act, done, line, gs, quadratic, n_cg, counts):
    """The end of the CG loop: undo the scaling; a row whose step is not a descent direction
    leaves; a quadratic row takes its step (f_i from the CG identity); the others wait for the
    line search (``line``)."""
    m, k = w.shape
    for i in range(m):
        line[i] = False
        if not act[i]:
            continue
        _cg_unscale(sc[i], step[i], r[i])
        acc = 0.0
        for a in range(k):
            acc += g[i, a] * step[i, a]
        gs[i] = acc
        if acc >= 0.0:
            done[i] = True
            act[i] = False
            continue
        counts[i, 0] += 1
        if quadratic:
            sr = 0.0
            for a in range(k):
                w[i, a] += step[i, a]
                sr += step[i, a] * r[i, a]
            f[i] = f[i] + 0.5 * (acc - sr)
            if n_cg >= k:
                done[i] = True
        else:
            line[i] = True


@nb.njit(**_JIT)
def grid_line(w, step, pw, lam, M, kappa, abar, f, gs, line, done, values, alphas, first,
              armijo, last, counts):
    """The line search's test on ``alphas`` (ladder positions ``first``, ``first`` + 1, ...)
    for every row still waiting, from the entries' values at each α (``values``, rows ×
    len(alphas)); with ``last``, a row that passed none leaves its Newton loop unchanged."""
    m, k = w.shape
    mw = np.empty(k)
    ms = np.empty(k)
    lam_step = 0 if lam.shape[0] == 1 else 1
    for i in range(m):
        if not line[i]:
            continue
        _symv(M, w[i], mw)
        _symv(M, step[i], ms)
        sums = _line_sums(w[i], mw, step[i], ms, kappa)
        for c in range(alphas.shape[0]):
            alpha = alphas[c]
            f_new = values[i, c] + _quad_at(sums, pw[i], abar, lam[i * lam_step], alpha)
            if _armijo_ok(f_new, f[i], alpha, gs[i], armijo):
                for a in range(k):
                    w[i, a] += alpha * step[i, a]
                f[i] = f_new
                line[i] = False
                counts[i, 2] += first + c
                break
        if line[i] and last:
            line[i] = False
            done[i] = True
            counts[i, 2] += first + alphas.shape[0]
