"""fBGD kernels: weighted Gram caches, all-sample gradients, coordinate and batch updates.

Notation (Yuan et al., eq. 1-2 and 6-10).  One *side* is the block of rows being
updated (users with embeddings ``E`` = P, or items with ``E`` = Q) and ``F`` is the
other side's embeddings.  The all-pairs part of the loss enters only through the
other side's caches ``S`` (g×g) and ``s`` (g), scaled per row by ``rowscale``
(1 for users, α⁻_y for items).  Positives are visited through a CSR of the side
(``indptr``, ``indices``) with per-positive arrays stored in that CSR's entry order
(the item side's copies are permuted once at the boundary): ``apos`` (α⁺), ``rpos``
(r⁺), ``aneg`` (α⁻ of the entry's item) for the loss, and for the gradients the
coefficients ``cpos`` = α⁺ − α⁻ and ``bpos`` = α⁺ r⁺ − α⁻ r⁻, so that
∂/∂r̂ of the positive correction is e = 2 (cpos · r̂ − bpos).

For one row i of a side the gradient of J with respect to its embedding is

    G[i] = rowscale[i] · 2 (S e_i − r⁻ s) + Σ_{positives (i, j)} e_ij f_j,
    e_ij = 2 (α⁺ (r̂ − r⁺) − α⁻ (r̂ − r⁻)) = 2 (cpos · r̂ − bpos).

No kernel validates its input; ``prange`` runs over rows that own their outputs.
"""

import numba as nb
import numpy as np

_JIT = dict(nogil=True, cache=True)


@nb.njit(parallel=True, **_JIT)
def positive_terms(indptr, indices, apos, rpos, aneg, P, Q, r_neg, pred_out, row_out):
    """pred_out[p] = p_x · q_y; row_out[x] = Σ_p α⁺(r⁺ − r̂)² − α⁻(r⁻ − r̂)² over row x.

    Also used on the item side with (Q, P) swapped: the dot product is symmetric.
    """
    g = P.shape[1]
    for x in nb.prange(indptr.shape[0] - 1):
        acc = 0.0
        for p in range(indptr[x], indptr[x + 1]):
            y = indices[p]
            r = 0.0
            for d in range(g):
                r += P[x, d] * Q[y, d]
            pred_out[p] = r
            a = rpos[p] - r
            b = r_neg - r
            acc += apos[p] * a * a - aneg[p] * b * b
        row_out[x] = acc


@nb.njit(parallel=True, **_JIT)
def side_gradient(indptr, indices, cpos, bpos, E, F, S, s, rowscale, r_neg, G_out):
    """G_out[i] = ∂J/∂e_i (see the module docstring); r̂ is recomputed from E and F."""
    g = E.shape[1]
    for i in nb.prange(E.shape[0]):
        c = 2.0 * rowscale[i]
        for d in range(g):
            acc = 0.0
            for t in range(g):
                acc += S[d, t] * E[i, t]
            G_out[i, d] = c * (acc - r_neg * s[d])
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            r = 0.0
            for d in range(g):
                r += E[i, d] * F[j, d]
            e = 2.0 * (cpos[p] * r - bpos[p])
            for d in range(g):
                G_out[i, d] += e * F[j, d]


@nb.njit(parallel=True, **_JIT)
def batch_update(grad, free, theta, accum, lr, reg, adagrad, eps):
    """θ ← θ − γ_t (∇ + 2 reg θ) on the free entries; Adagrad (eq. 24) or plain steps."""
    g = theta.shape[1]
    for j in nb.prange(theta.shape[0]):
        for d in range(g):
            if not free[j, d]:
                continue
            gr = grad[j, d] + 2.0 * reg * theta[j, d]
            if adagrad:
                accum[j, d] += gr * gr
                den = np.sqrt(accum[j, d])
                if den == 0.0:
                    den = eps
                theta[j, d] -= lr * gr / den
            else:
                theta[j, d] -= lr * gr


@nb.njit(**_JIT)
def coordinate_side(zt_indptr, zt_indices, zt_data, free, theta, accum,
                    indptr, indices, cpos, bpos, pred,
                    E, FT, S, s, rowscale, r_neg, lr, reg, adagrad, eps):
    """One pass of Appendix B over a side: parameter θ[j, d] by parameter, serially.

    ``zt_*`` is the transposed feature matrix (row j lists the rows i with z_ij ≠ 0);
    ``FT`` is the other side's embeddings transposed (g × n_other), so that coordinate d
    of the other side is one contiguous vector.  After each step the embeddings E[i, d]
    (eq. 20) and the cached predictions ``pred`` of the positives in those rows are
    moved by the same change, so every gradient is exact at the current point.
    """
    g = E.shape[1]
    for j in range(theta.shape[0]):
        for d in range(g):
            if not free[j, d]:
                continue
            Fd = FT[d]
            grad = 0.0
            for t in range(zt_indptr[j], zt_indptr[j + 1]):
                i = zt_indices[t]
                acc = 0.0
                for u in range(g):
                    acc += S[d, u] * E[i, u]
                gi = 2.0 * rowscale[i] * (acc - r_neg * s[d])
                for p in range(indptr[i], indptr[i + 1]):
                    gi += 2.0 * (cpos[p] * pred[p] - bpos[p]) * Fd[indices[p]]
                grad += zt_data[t] * gi
            grad += 2.0 * reg * theta[j, d]
            if adagrad:
                accum[j, d] += grad * grad
                den = np.sqrt(accum[j, d])
                if den == 0.0:
                    den = eps
                step = lr * grad / den
            else:
                step = lr * grad
            if step == 0.0:
                continue
            theta[j, d] -= step
            for t in range(zt_indptr[j], zt_indptr[j + 1]):
                i = zt_indices[t]
                delta = -zt_data[t] * step
                E[i, d] += delta
                for p in range(indptr[i], indptr[i + 1]):
                    pred[p] += delta * Fd[indices[p]]
