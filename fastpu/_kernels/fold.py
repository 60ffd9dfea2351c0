"""Fold-in kernels: each new user's row problem solved to convergence, one row per prange step.

Three row problems (see :mod:`fastpu._fold_in` for where each comes from):

* ``newton_rows`` — ocmf's row problem for any loss,

      f(w) = Σ_t [c_t l(y_t, s_t) − r_t (ā − s_t)²] + p (wᵀMw − 2ā wᵀκ) + λ‖w‖²,   s_t = e_jt · w,

  by Newton's method with the exact k×k Hessian (a Cholesky solve per step) and an Armijo
  backtracking line search, stopped when ‖∇f(w)‖ ≤ tol ‖∇f(0)‖. For the square loss the first
  step is the exact minimiser; the next iteration only confirms the gradient.
* ``wls_rows`` — a weighted least-squares row: (H0 + Σ_t d_t g_t g_tᵀ) x = b0 + Σ_t e_t g_t.
* ``box_rows`` — CSRR-e's row problem over p ∈ [0, hi]^k with the sparse part v eliminated
  in closed form, by projected Newton (Bertsekas) with an Armijo search along the projection arc.

Each prange iteration owns one output row, so results do not depend on the thread count.
A row first copies its item vectors into a contiguous block G; the k×k Hessian GᵀDG is one
BLAS product (single-threaded BLAS inside the parallel loop: the caller limits BLAS to one
thread). Everything is accumulated in float64. The linear algebra here lets LLVM reassociate
and contract sums (``fastmath={"reassoc", "contract"}``) so that dot products vectorise; it
makes no finite-math assumption, and the loss functions it calls are compiled without any
fastmath flag.
"""

import numba as nb
import numpy as np

from .losses import loss_derivs, loss_value

_JIT = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})


@nb.njit(**_JIT)
def _cholesky(H, L):
    """Lower Cholesky factor of the symmetric H (lower triangle read) into L; False if not PD."""
    k = H.shape[0]
    for j in range(k):
        s = H[j, j]
        for q in range(j):
            s -= L[j, q] * L[j, q]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, k):
            s = H[i, j]
            for q in range(j):
                s -= L[i, q] * L[j, q]
            L[i, j] = s / d
    return True


@nb.njit(**_JIT)
def _cho_solve(L, b, x):
    """Solve L Lᵀ x = b."""
    k = b.shape[0]
    for i in range(k):
        s = b[i]
        for q in range(i):
            s -= L[i, q] * x[q]
        x[i] = s / L[i, i]
    for i in range(k - 1, -1, -1):
        s = x[i]
        for q in range(i + 1, k):
            s -= L[q, i] * x[q]
        x[i] = s / L[i, i]


@nb.njit(**_JIT)
def _factor_shifted(H, L):
    """Cholesky of H, adding a tiny multiple of the identity if H is only semi-definite."""
    k = H.shape[0]
    if _cholesky(H, L):
        return True
    scale = 0.0
    for a in range(k):
        scale = max(scale, abs(H[a, a]))
    if scale == 0.0:
        scale = 1.0
    shift = 1e-13 * scale
    for _ in range(12):
        for a in range(k):
            H[a, a] += shift
        if _cholesky(H, L):
            return True
        shift *= 10.0
    return False


@nb.njit(**_JIT)
def _gather(E, indices, lo, nrow, G):
    """G[t] = E[indices[lo + t]]: the row's item vectors as one contiguous block."""
    k = E.shape[1]
    for t in range(nrow):
        j = indices[lo + t]
        for a in range(k):
            G[t, a] = E[j, a]


@nb.njit(**_JIT)
def _weighted_gram(G, d, nrow, Gd, H):
    """H = Σ_t d_t G[t] G[t]ᵀ (full k×k) as one BLAS product; Gd is k×nrow scratch."""
    k = G.shape[1]
    if nrow == 0:
        for a in range(k):
            for b in range(k):
                H[a, b] = 0.0
        return
    for t in range(nrow):
        for a in range(k):
            Gd[a, t] = d[t] * G[t, a]
    H[:, :] = np.dot(Gd, G)


@nb.njit(**_JIT)
def _matvec(G, nrow, w, s):
    """s[t] = G[t] · w."""
    k = w.shape[0]
    for t in range(nrow):
        acc = 0.0
        for a in range(k):
            acc += G[t, a] * w[a]
        s[t] = acc


@nb.njit(**_JIT)
def _ocmf_value(kind, lo, nrow, labels, weights, corr, abar, G, M, kappa, p_i, lam, w, s):
    """f(w) of the ocmf row problem (item vectors G[t]); leaves the scores in s."""
    k = w.shape[0]
    _matvec(G, nrow, w, s)
    val = 0.0
    for t in range(nrow):
        e = lo + t
        dd = abar - s[t]
        val += weights[e] * loss_value(kind, labels[e], s[t]) - corr[e] * dd * dd
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
def _ocmf_grad(kind, lo, nrow, labels, weights, corr, abar, G, M, kappa, p_i, lam, w, s, d2, g):
    """Gradient at w (scores in s) into g, per-entry second derivatives into d2; returns ‖g‖."""
    k = w.shape[0]
    for a in range(k):
        mw = 0.0
        for b in range(k):
            mw += M[a, b] * w[b]
        g[a] = 2.0 * p_i * (mw - abar * kappa[a]) + 2.0 * lam * w[a]
    for t in range(nrow):
        e = lo + t
        _, g1, g2 = loss_derivs(kind, labels[e], s[t])
        dd = abar - s[t]
        d1 = weights[e] * g1 + 2.0 * corr[e] * dd
        d2[t] = weights[e] * g2 - 2.0 * corr[e]
        for a in range(k):
            g[a] += d1 * G[t, a]
    nrm = 0.0
    for a in range(k):
        nrm += g[a] * g[a]
    return np.sqrt(nrm)


@nb.njit(parallel=True, **_JIT)
def newton_rows(kind, indptr, indices, labels, weights, corr, abar, E, M, kappa, p, lam, tol,
                max_iter, W_out, gnorm_out, g0_out, iters_out):
    """Minimise ocmf's row problem of every row from w = 0 by Newton's method with line search.

    Row i's entries are lo..hi-1 = indptr[i]..indptr[i+1]-1 (item indices[e], label, weight c,
    correction r). Stops when ‖∇f‖ ≤ tol ‖∇f(0)‖, after ``max_iter`` steps, or when the line
    search cannot decrease f any more (rounding level). Writes the minimiser, the final and
    initial gradient norms and the number of Newton steps.
    """
    m, k = W_out.shape
    for i in nb.prange(m):
        lo = indptr[i]
        nrow = indptr[i + 1] - lo
        p_i = p[i]
        G = np.empty((nrow, k))
        Gd = np.empty((k, nrow))
        _gather(E, indices, lo, nrow, G)
        w = np.zeros(k)
        wt = np.empty(k)
        g = np.empty(k)
        step = np.empty(k)
        H = np.empty((k, k))
        L = np.zeros((k, k))
        s = np.empty(nrow)
        st = np.empty(nrow)
        d2 = np.empty(nrow)
        f = _ocmf_value(kind, lo, nrow, labels, weights, corr, abar, G, M, kappa, p_i, lam, w, s)
        gn = _ocmf_grad(kind, lo, nrow, labels, weights, corr, abar, G, M, kappa, p_i, lam, w, s,
                        d2, g)
        g0 = gn
        it = 0
        while it < max_iter and gn > tol * g0:
            _weighted_gram(G, d2, nrow, Gd, H)
            for a in range(k):
                for b in range(k):
                    H[a, b] += 2.0 * p_i * M[a, b]
                H[a, a] += 2.0 * lam
            if not _factor_shifted(H, L):
                break
            for a in range(k):
                g[a] = -g[a]
            _cho_solve(L, g, step)
            gs = 0.0
            for a in range(k):
                g[a] = -g[a]
                gs += g[a] * step[a]
            if not gs < 0.0:
                break
            alpha = 1.0
            accepted = False
            ft = f
            for _b in range(60):
                for a in range(k):
                    wt[a] = w[a] + alpha * step[a]
                ft = _ocmf_value(kind, lo, nrow, labels, weights, corr, abar, G, M, kappa, p_i,
                                 lam, wt, st)
                # Armijo, or a full Newton step whose decrease is below f's rounding level
                if ft <= f + 1e-4 * alpha * gs or (
                        alpha == 1.0 and ft - f <= 1e-13 * (abs(f) + 1.0)):
                    accepted = True
                    break
                alpha *= 0.5
            if not accepted:
                break
            gt_norm = _ocmf_grad(kind, lo, nrow, labels, weights, corr, abar, G, M, kappa, p_i,
                                 lam, wt, st, d2, step)
            if ft > f and gt_norm >= gn:
                break                      # rounding level: no progress possible
            for a in range(k):
                w[a] = wt[a]
                g[a] = step[a]
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


@nb.njit(parallel=True, **_JIT)
def wls_rows(indptr, indices, d, e, E, H0, b0, X_out, ok_out):
    """X_out[i] solves (H0 + Σ_t d_t E[j_t] E[j_t]ᵀ) x = b0 + Σ_t e_t E[j_t] over row i's entries.

    ``ok_out[i]`` is False when the matrix is not positive definite (the caller then solves that
    row by a minimum-norm least-squares solve).
    """
    m, k = X_out.shape
    for i in nb.prange(m):
        lo = indptr[i]
        nrow = indptr[i + 1] - lo
        G = np.empty((nrow, k))
        Gd = np.empty((k, nrow))
        _gather(E, indices, lo, nrow, G)
        H = np.empty((k, k))
        L = np.zeros((k, k))
        b = np.empty(k)
        x = np.zeros(k)
        _weighted_gram(G, d[lo:lo + nrow], nrow, Gd, H)
        for a in range(k):
            b[a] = b0[a]
            for c in range(k):
                H[a, c] += H0[a, c]
        for t in range(nrow):
            et = e[lo + t]
            for a in range(k):
                b[a] += et * G[t, a]
        ok = _cholesky(H, L)
        if ok:
            _cho_solve(L, b, x)
        ok_out[i] = ok
        for a in range(k):
            X_out[i, a] = x[a]


@nb.njit(**_JIT)
def _v_star(s, c, target, lam2):
    """argmin over v in [0, 1] of c/2 (s + v − target)² + lam2 v, and h''(s) (c at a bound, else 0)."""
    v = target - s - lam2 / c
    if v <= 0.0:
        return 0.0, c
    if v >= 1.0:
        return 1.0, c
    return v, 0.0


@nb.njit(**_JIT)
def _box_value_grad(nrow, G, GQ, lam1, c, target, lam2, p, s, hs, g, want_grad):
    """φ(p) = ½ pᵀ(GQ + λ1 I)p + Σ_t [h(s_t) − ½ s_t²] (item vectors G[t]); gradient into g
    and h''(s_t) − 1 (the entry's Hessian weight) into hs."""
    k = p.shape[0]
    val = 0.0
    for a in range(k):
        acc = 0.0
        for b in range(k):
            acc += GQ[a, b] * p[b]
        acc += lam1 * p[a]
        val += 0.5 * p[a] * acc
        if want_grad:
            g[a] = acc
    _matvec(G, nrow, p, s)
    for t in range(nrow):
        st = s[t]
        v, h2 = _v_star(st, c, target, lam2)
        r = st + v - target
        val += 0.5 * c * r * r + lam2 * v - 0.5 * st * st
        if want_grad:
            hs[t] = h2 - 1.0
            dh = c * r - st
            for a in range(k):
                g[a] += dh * G[t, a]
    return val


@nb.njit(**_JIT)
def _proj_grad_norm(p, g, hi):
    """‖KKT violation‖ on the box [0, hi]: g inside, min(g, 0) at 0, max(g, 0) at hi."""
    acc = 0.0
    for a in range(p.shape[0]):
        ga = g[a]
        if p[a] <= 0.0 and ga > 0.0:
            ga = 0.0
        elif p[a] >= hi and ga < 0.0:
            ga = 0.0
        acc += ga * ga
    return np.sqrt(acc)


@nb.njit(parallel=True, **_JIT)
def box_rows(indptr, indices, Q, GQ, lam1, c, target, lam2, hi, tol, max_iter, P_out, pg_out,
             g0_out, iters_out):
    """Minimise CSRR-e's row problem over p ∈ [0, hi]^k (v eliminated) by projected Newton.

    Stops when the projected gradient's norm is ≤ tol ‖∇φ(0)‖ (or after ``max_iter`` steps,
    or when the search along the projection arc cannot decrease φ any more).
    """
    m, k = P_out.shape
    for i in nb.prange(m):
        lo = indptr[i]
        nrow = indptr[i + 1] - lo
        G = np.empty((nrow, k))
        Gd = np.empty((k, nrow))
        _gather(Q, indices, lo, nrow, G)
        p = np.zeros(k)
        pt = np.empty(k)
        g = np.empty(k)
        gt = np.empty(k)
        d = np.zeros(k)
        rhs = np.empty(k)
        sol = np.empty(k)
        free = np.empty(k, dtype=np.int64)
        H = np.empty((k, k))
        Hf = np.empty((k, k))
        Lf = np.zeros((k, k))
        s = np.empty(nrow)
        hs = np.empty(nrow)
        hst = np.empty(nrow)
        base = np.empty((k, k))
        minus = np.full(nrow, -1.0)
        have_base = False
        f = _box_value_grad(nrow, G, GQ, lam1, c, target, lam2, p, s, hs, g, True)
        g0 = 0.0
        for a in range(k):
            g0 += g[a] * g[a]
        g0 = np.sqrt(g0)
        pg = _proj_grad_norm(p, g, hi)
        it = 0
        while it < max_iter and pg > tol * g0:
            # ε-active set: at (or within eps of) a bound with the gradient pushing outwards
            eps = 0.0
            for a in range(k):
                r = p[a] - min(max(p[a] - g[a], 0.0), hi)
                eps += r * r
            eps = min(np.sqrt(eps), 1e-3 * hi)
            nf = 0
            for a in range(k):
                if (p[a] <= eps and g[a] > 0.0) or (p[a] >= hi - eps and g[a] < 0.0):
                    continue
                free[nf] = a
                nf += 1
            # Hessian GQ + λ1 I + Σ_t (h''(s_t) − 1) q_t q_tᵀ: h'' is c where v* sits at a bound
            # and 0 elsewhere, so H = base + c Σ_{t at a bound} q_t q_tᵀ, base built once per row
            n_bound = 0
            for t in range(nrow):
                if hs[t] != -1.0:
                    n_bound += 1
            if 4 * n_bound > nrow:
                _weighted_gram(G, hs, nrow, Gd, H)
                for a in range(k):
                    for b in range(k):
                        H[a, b] += GQ[a, b]
                    H[a, a] += lam1
            else:
                if not have_base:
                    _weighted_gram(G, minus, nrow, Gd, base)
                    for a in range(k):
                        for b in range(k):
                            base[a, b] += GQ[a, b]
                        base[a, a] += lam1
                    have_base = True
                for a in range(k):
                    for b in range(k):
                        H[a, b] = base[a, b]
                for t in range(nrow):
                    w_t = hs[t] + 1.0
                    if w_t != 0.0:
                        for a in range(k):
                            ca = w_t * G[t, a]
                            for b in range(k):
                                H[a, b] += ca * G[t, b]
            for a in range(k):
                d[a] = -g[a] / H[a, a] if H[a, a] > 0.0 else -g[a]
            if nf > 0:
                Hs = Hf[:nf, :nf]
                Ls = Lf[:nf, :nf]
                for x in range(nf):
                    for y in range(nf):
                        Hs[x, y] = H[free[x], free[y]]
                    rhs[x] = -g[free[x]]
                if not _factor_shifted(Hs, Ls):
                    break
                _cho_solve(Ls, rhs[:nf], sol[:nf])
                for x in range(nf):
                    d[free[x]] = sol[x]
            alpha = 1.0
            accepted = False
            ft = f
            for _b in range(60):
                decr = 0.0
                for a in range(k):
                    pt[a] = min(max(p[a] + alpha * d[a], 0.0), hi)
                    decr += g[a] * (pt[a] - p[a])
                ft = _box_value_grad(nrow, G, GQ, lam1, c, target, lam2, pt, s, hst, gt, False)
                if (decr < 0.0 and ft <= f + 1e-4 * decr) or (
                        alpha == 1.0 and ft - f <= 1e-13 * (abs(f) + 1.0)):
                    accepted = True
                    break
                alpha *= 0.5
            if not accepted:
                break
            ft = _box_value_grad(nrow, G, GQ, lam1, c, target, lam2, pt, s, hst, gt, True)
            pgt = _proj_grad_norm(pt, gt, hi)
            if ft > f and pgt >= pg:
                break                      # rounding level
            for a in range(k):
                p[a] = pt[a]
                g[a] = gt[a]
            for t in range(nrow):
                hs[t] = hst[t]
            f = ft
            pg = pgt
            it += 1
        for a in range(k):
            P_out[i, a] = p[a]
        pg_out[i] = pg
        g0_out[i] = g0
        iters_out[i] = it
