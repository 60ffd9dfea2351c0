"""CSRR kernels: cost-sensitive square losses on the positives, dense gradient steps.

``kind`` selects the loss on a positive entry (A_ij = 1) with prediction x:

- ``0`` (ℓ^I):  α·½(x − 1)²,  derivative α(x − 1);
- ``1`` (ℓ^II): ½(x − α)²,    derivative x − α.

Every unobserved entry (A_ij = 0) costs ½x² with derivative x. The kernels work on the
positives only; the sum over all entries is assembled by the caller from Gram
matrices (or singular values) plus the per-row corrections returned here. Each
``prange`` iteration owns one row, so results do not depend on the thread count.
"""

import numba as nb

_JIT = dict(nogil=True, cache=True)


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
