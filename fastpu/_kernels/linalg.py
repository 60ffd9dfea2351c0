"""Small dense linear algebra inside row kernels: Cholesky with a shift for semi-definite
matrices, gathering a row's item vectors into a block, and weighted Grams of such a block.

Each row solver (ocmf's, fBGD's and CSRR-e's fold-in rows) calls these on its own k×k and
row×k arrays. The sums may be reassociated and contracted (``fastmath={"reassoc", "contract"}``)
so that they vectorise; no finite-math assumption is made.
"""

import numba as nb
import numpy as np

_JIT = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})


@nb.njit(**_JIT)
def cholesky(H, L):
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
def cho_solve(L, b, x):
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
def factor_shifted(H, L):
    """Cholesky of H, adding a tiny multiple of the identity if H is only semi-definite."""
    k = H.shape[0]
    if cholesky(H, L):
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
        if cholesky(H, L):
            return True
        shift *= 10.0
    return False


@nb.njit(**_JIT)
def gather(E, indices, lo, nrow, G):
    """G[t] = E[indices[lo + t]]: the row's item vectors as one contiguous block."""
    k = E.shape[1]
    for t in range(nrow):
        j = indices[lo + t]
        for a in range(k):
            G[t, a] = E[j, a]


@nb.njit(**_JIT)
def weighted_gram(G, d, nrow, Gd, H):
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
def matvec(G, nrow, w, s):
    """s[t] = G[t] · w."""
    k = w.shape[0]
    for t in range(nrow):
        acc = 0.0
        for a in range(k):
            acc += G[t, a] * w[a]
        s[t] = acc
