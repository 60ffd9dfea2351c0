"""Dense numpy references for HOMF, written straight from the paper (Shah, Rao, Ding).

Everything here forms the full (m+n)×(m+n) matrices: small problems only.
"""

import numpy as np


def graph(R, mask_R, g, alpha, Su=None, Si=None, g1=None, g3=None):
    """Equation (3) as a dense matrix; ``mask_R`` marks the stored entries of R.

    G = [[α g₁(G_r), (1−α) g₂(R)], [(1−α) g₂(R)ᵀ, α g₃(G_c)]] with g₂ = ``g`` and g₁, g₃
    defaulting to ``g``; exp is taken literally (small values only).
    """
    m, n = R.shape
    g1 = g if g1 is None else g1
    g3 = g if g3 is None else g3

    def gw(M, mask, g=g):
        if g == "exp":
            W = np.exp(M)
        elif g == "linear":
            W = M.astype(float).copy()
        else:
            W = (M > 0).astype(float)
        return np.where(mask, W, 0.0)

    if Su is None and Si is None:
        alpha = 0.0
    G = np.zeros((m + n, m + n))
    G[:m, m:] = (1 - alpha) * gw(R, mask_R)
    G[m:, :m] = G[:m, m:].T
    if Su is not None:
        G[:m, :m] = alpha * gw(Su, Su != 0, g1)
    if Si is not None:
        G[m:, m:] = alpha * gw(Si, Si != 0, g3)
    return G


def row_normalise(G):
    d = G.sum(axis=1)
    A = np.zeros_like(G)
    nz = d > 0
    A[nz] = G[nz] / d[nz, None]
    return A


def f_T(A, T):
    """(A + A² + ... + A^T) / T by explicit matrix powers."""
    P = np.eye(A.shape[0])
    S = np.zeros_like(A)
    for _ in range(T):
        P = P @ A
        S += P
    return S / T


def objective(F, U, V, lam, dense=False):
    """Equation (4): ½ Σ_Ω (F − U Vᵀ)² + λ(‖U‖² + ‖V‖²), Ω = nonzeros of F (all if dense)."""
    E = F - U @ V.T
    if not dense:
        E = np.where(F != 0, E, 0.0)
    return 0.5 * np.sum(E * E) + lam * (np.sum(U * U) + np.sum(V * V))


def ridge_lstsq(F, L, lam, dense=False):
    """Each column x of F: argmin_v ½‖x_Ω − L_Ω v‖² + λ‖v‖², by numpy least squares on
    the augmented system [L_Ω; √(2λ) I] v = [x_Ω; 0]."""
    N, k = L.shape
    out = np.zeros((F.shape[1], k))
    for c in range(F.shape[1]):
        x = F[:, c]
        om = np.ones(N, bool) if dense else x != 0
        M = np.vstack([L[om], np.sqrt(2 * lam) * np.eye(k)])
        y = np.concatenate([x[om], np.zeros(k)])
        out[c] = np.linalg.lstsq(M, y, rcond=None)[0]
    return out


def fit(F, U0, V0, lam, n_iter, dense=False):
    """Alternating exact minimisation of (4): V from columns of F, then U from its rows."""
    U, V = U0.copy(), V0.copy()
    objs = []
    for _ in range(n_iter):
        V = ridge_lstsq(F, U, lam, dense)
        objs.append(objective(F, U, V, lam, dense))
        U = ridge_lstsq(F.T, V, lam, dense)
        objs.append(objective(F, U, V, lam, dense))
    return U, V, objs
