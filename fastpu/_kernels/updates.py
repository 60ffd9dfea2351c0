"""Row-separable Newton–CG updates (the fast path of the ocmf sub-problem).

With no features and no graph on the side being updated, the sub-problem splits
into one k-dimensional problem per row i:

    f_i(w) = Σ_{e in row i} [c_e l(y_e, w·h_j) - r_e (abar - w·h_j)^2]
             + p_i (wᵀ M w - 2 abar wᵀ kappa) + lam ‖w‖²

with Hessian Σ_e l⁺''_e h_j h_jᵀ + 2 p_i M + 2 lam I, applied to a vector in
O(|row| k + k²) without forming it. Each row runs a few Newton steps, each
solved by conjugate gradient from zero (for the square loss one step is the
warm-started least-squares solve), with a backtracking line search on f_i for
losses that are not quadratic. Rows are independent: one prange iteration owns
one row of W, so the result does not depend on the thread count.

The row kernels allow LLVM to reassociate and contract floating-point sums
(``fastmath={"reassoc", "contract"}``) so that the length-k dot products
vectorise; they make no finite-math assumption (inf and NaN keep their meaning),
and the loss functions they call are compiled without any fastmath flag.
"""

import numba as nb
import numpy as np

from .losses import SQUARE, loss_derivs, loss_value

_JIT = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})


@nb.njit(**_JIT)
def _row_value(kind, lo, hi, indices, labels, weights, corr, abar, E, M, kappa, p_i, lam, w, s_buf):
    k = w.shape[0]
    val = 0.0
    for t in range(hi - lo):
        e = lo + t
        j = indices[e]
        acc = 0.0
        for r in range(k):
            acc += w[r] * E[j, r]
        s_buf[t] = acc
        d = abar - acc
        val += weights[e] * loss_value(kind, labels[e], acc) - corr[e] * d * d
    quad = 0.0
    lin = 0.0
    nrm = 0.0
    for a in range(k):
        mw = 0.0
        for b in range(k):
            mw += M[a, b] * w[b]
        quad += w[a] * mw
        lin += w[a] * kappa[a]
        nrm += w[a] * w[a]
    return val + p_i * (quad - 2.0 * abar * lin) + lam * nrm


@nb.njit(**_JIT)
def _row_hessp(lo, hi, indices, d2, E, M, p_i, lam, v, out):
    k = v.shape[0]
    for a in range(k):
        acc = 0.0
        for b in range(k):
            acc += M[a, b] * v[b]
        out[a] = 2.0 * p_i * acc + 2.0 * lam * v[a]
    for t in range(hi - lo):
        j = indices[lo + t]
        dot = 0.0
        for r in range(k):
            dot += E[j, r] * v[r]
        c = d2[t] * dot
        for r in range(k):
            out[r] += c * E[j, r]


@nb.njit(parallel=True, **_JIT)
def row_newton(kind, indptr, indices, labels, weights, corr, abar, E, M, kappa, p, lam,
               W, n_newton, n_cg, cg_tol, f_out):
    """Update every row of W in place by ``n_newton`` Newton–CG steps on its own f_i.

    ``f_out[i]`` receives f_i at the updated row (without the constant p_i ā² Σq).
    """
    m, k = W.shape
    n_chunks = (m + _CHUNK - 1) // _CHUNK
    for c in nb.prange(n_chunks):
        # scratch allocated once per chunk of rows, not once per row
        c_lo = c * _CHUNK
        c_hi = min(m, c_lo + _CHUNK)
        longest = 0
        for i in range(c_lo, c_hi):
            longest = max(longest, indptr[i + 1] - indptr[i])
        s_all = np.empty(longest)
        d1_all = np.empty(longest)
        d2_all = np.empty(longest)
        w = np.empty(k)
        g = np.empty(k)
        step = np.empty(k)
        r = np.empty(k)
        d = np.empty(k)
        Hd = np.empty(k)
        trial = np.empty(k)
        for i in range(c_lo, c_hi):
            _newton_row(kind, i, indptr, indices, labels, weights, corr, abar, E, M, kappa, p, lam,
                        W, n_newton, n_cg, cg_tol, f_out, s_all, d1_all, d2_all, w, g, step, r, d,
                        Hd, trial)


_CHUNK = 64


@nb.njit(**_JIT)
def _newton_row(kind, i, indptr, indices, labels, weights, corr, abar, E, M, kappa, p, lam,
                W, n_newton, n_cg, cg_tol, f_out, s_all, d1_all, d2_all, w, g, step, r, d, Hd,
                trial):
    """Newton–CG steps on row i's f_i, in the caller's scratch arrays."""
    k = W.shape[1]
    lo = indptr[i]
    hi = indptr[i + 1]
    nrow = hi - lo
    p_i = p[i]
    s_buf = s_all[:nrow]
    d1 = d1_all[:nrow]
    d2 = d2_all[:nrow]
    for a in range(k):
        w[a] = W[i, a]
    f_cur = _row_value(kind, lo, hi, indices, labels, weights, corr, abar, E, M, kappa, p_i, lam, w, s_buf)
    for _ in range(n_newton):
        # gradient at w (s_buf holds the scores of w)
        for a in range(k):
            acc = 0.0
            for b in range(k):
                acc += M[a, b] * w[b]
            g[a] = 2.0 * p_i * (acc - abar * kappa[a]) + 2.0 * lam * w[a]
        for t in range(nrow):
            e = lo + t
            j = indices[e]
            v, g1, g2 = loss_derivs(kind, labels[e], s_buf[t])
            dd = abar - s_buf[t]
            d1[t] = weights[e] * g1 + 2.0 * corr[e] * dd
            d2[t] = weights[e] * g2 - 2.0 * corr[e]
            for a in range(k):
                g[a] += d1[t] * E[j, a]
        gg = 0.0
        for a in range(k):
            gg += g[a] * g[a]
        if gg == 0.0:
            break
        # CG on H step = -g from step = 0
        for a in range(k):
            step[a] = 0.0
            r[a] = -g[a]
            d[a] = -g[a]
        rr = gg
        stop = cg_tol * cg_tol * gg
        for _c in range(n_cg):
            _row_hessp(lo, hi, indices, d2, E, M, p_i, lam, d, Hd)
            dHd = 0.0
            for a in range(k):
                dHd += d[a] * Hd[a]
            if dHd <= 0.0:
                break
            alpha = rr / dHd
            rr_new = 0.0
            for a in range(k):
                step[a] += alpha * d[a]
                r[a] -= alpha * Hd[a]
                rr_new += r[a] * r[a]
            if rr_new <= stop:
                break
            beta = rr_new / rr
            rr = rr_new
            for a in range(k):
                d[a] = r[a] + beta * d[a]
        gs = 0.0
        for a in range(k):
            gs += g[a] * step[a]
        if gs >= 0.0:
            break
        if kind == SQUARE:
            # f_i is quadratic: CG iterates never increase it, and with H step = -g - r
            # its new value is f + gᵀstep + ½ stepᵀH step = f + ½ (gᵀstep - rᵀstep)
            sr = 0.0
            for a in range(k):
                w[a] += step[a]
                sr += step[a] * r[a]
            f_cur = f_cur + 0.5 * (gs - sr)
            if n_cg >= k or _ + 1 == n_newton:
                break
            f_cur = _row_value(kind, lo, hi, indices, labels, weights, corr, abar, E, M, kappa,
                               p_i, lam, w, s_buf)
            continue
        # backtracking on f_i
        alpha = 1.0
        accepted = False
        for _b in range(30):
            for a in range(k):
                trial[a] = w[a] + alpha * step[a]
            f_new = _row_value(kind, lo, hi, indices, labels, weights, corr, abar, E, M, kappa,
                               p_i, lam, trial, s_buf)
            if f_new <= f_cur + 1e-4 * alpha * gs:
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            # restore the scores of w in s_buf and stop on this row
            _row_value(kind, lo, hi, indices, labels, weights, corr, abar, E, M, kappa, p_i, lam, w, s_buf)
            break
        for a in range(k):
            w[a] = trial[a]
        f_cur = f_new
    for a in range(k):
        W[i, a] = w[a]
    f_out[i] = f_cur
