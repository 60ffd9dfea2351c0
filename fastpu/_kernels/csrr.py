"""CSRR kernels: cost-sensitive square losses on the positives, dense gradient steps.

``kind`` selects the loss on a positive entry (A_ij = 1) with prediction x:

- ``0`` (ℓ^I):  α·½(x − 1)²,  derivative α(x − 1);
- ``1`` (ℓ^II): ½(x − α)²,    derivative x − α.

Every unobserved entry (A_ij = 0) costs ½x² with derivative x. The kernels work on the
positives only; the sum over all entries is assembled by the caller from Gram
matrices (or singular values) plus the per-row corrections returned here. Each
``prange`` iteration owns one row, so results do not depend on the thread count.

:func:`box_rows` is CSRR-e's row problem for fold-in: p ∈ [0, hi]^k with the sparse part v
eliminated in closed form, by projected Newton (Bertsekas) with an Armijo search along the
projection arc.
"""

import numba as nb
import numpy as np

from . import linalg as LA

_JIT = dict(nogil=True, cache=True)
_JIT_DOT = dict(_JIT, fastmath={"reassoc", "contract"})   # the fold-in rows' linear algebra


@nb.njit(**_JIT)
def _pos_loss(x, kind, alpha):
    """value and derivative of the positive-entry loss at x."""
    if kind == 0:
        d = x - 1.0
        return 0.5 * alpha * d * d, alpha * d
    d = x - alpha
    return 0.5 * d * d, d


@nb.njit(parallel=True, **_JIT)
def positive_terms(indptr, x, base, kind, alpha, g_out, row_out):
    """g_out[p] = ℓ⁺'(x_p); row_out[i] = Σ_{p in row i} ℓ⁺(x_p) − ½ base_p².

    ``x`` is the prediction U + V on the positives and ``base`` the part that the
    all-entries term ½‖base‖²_F already counted there (the low-rank part), so that
    loss = ½‖low rank‖²_F + Σ_i row_out[i].
    """
    for i in nb.prange(indptr.shape[0] - 1):
        acc = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v, g = _pos_loss(x[p], kind, alpha)
            g_out[p] = g
            acc += v - 0.5 * base[p] * base[p]
        row_out[i] = acc


@nb.njit(parallel=True, **_JIT)
def gather(indptr, indices, D, out):
    """out[p] = D[i, j] for every stored entry p = (i, j)."""
    for i in nb.prange(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            out[p] = D[i, indices[p]]


@nb.njit(parallel=True, **_JIT)
def dense_grad_step(indptr, indices, g, eta, D, out):
    """out = D − η ∂ℓ/∂X for a dense low-rank block D with V = 0 off the positives.

    Off the positives ∂ℓ/∂X = X = D, so out = (1 − η) D there; on a positive p,
    out = D − η g[p]. ``out`` may be ``D`` itself.
    """
    n = D.shape[1]
    shrink = 1.0 - eta
    for i in nb.prange(D.shape[0]):
        p = indptr[i]
        end = indptr[i + 1]
        for j in range(n):                 # indices are sorted: one merge pass per row
            d = D[i, j]
            if p < end and indices[p] == j:
                out[i, j] = d - eta * g[p]
                p += 1
            else:
                out[i, j] = shrink * d


@nb.njit(parallel=True, **_JIT)
def clip_inplace(D, lo, hi):
    """D = min(max(D, lo), hi), row-parallel."""
    for i in nb.prange(D.shape[0]):
        for j in range(D.shape[1]):
            v = D[i, j]
            if v < lo:
                D[i, j] = lo
            elif v > hi:
                D[i, j] = hi


@nb.njit(**_JIT)
def soft_box(x, tau, lo, hi, out):
    """out = clip(sign(x)·max(|x| − τ, 0), lo, hi): prox of τ‖·‖₁ plus the box [lo, hi]."""
    for p in range(x.shape[0]):
        v = x[p]
        if v > tau:
            v = v - tau
        elif v < -tau:
            v = v + tau
        else:
            v = 0.0
        if v < lo:
            v = lo
        elif v > hi:
            v = hi
        out[p] = v


# ------------------------------------------------------------------ fold-in rows (CSRR-e)

@nb.njit(**_JIT_DOT)
def _v_star(s, c, target, lam2):
    """argmin over v in [0, 1] of c/2 (s + v − target)² + lam2 v, and h''(s) (c at a bound, else 0)."""
    v = target - s - lam2 / c
    if v <= 0.0:
        return 0.0, c
    if v >= 1.0:
        return 1.0, c
    return v, 0.0


@nb.njit(**_JIT_DOT)
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
    LA.matvec(G, nrow, p, s)
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


@nb.njit(**_JIT_DOT)
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


@nb.njit(parallel=True, **_JIT_DOT)
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
        LA.gather(Q, indices, lo, nrow, G)
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
                LA.weighted_gram(G, hs, nrow, Gd, H)
                for a in range(k):
                    for b in range(k):
                        H[a, b] += GQ[a, b]
                    H[a, a] += lam1
            else:
                if not have_base:
                    LA.weighted_gram(G, minus, nrow, Gd, base)
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
                if not LA.factor_shifted(Hs, Ls):
                    break
                LA.cho_solve(Ls, rhs[:nf], sol[:nf])
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
