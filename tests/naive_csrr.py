"""Dense O(mn) references for CSRR, written straight from Section IV of Yang et al.

A is the dense 0/1 matrix (users × items). Everything here forms m×n matrices on purpose.
V's proximal step includes its box (the exact prox of λ2‖V‖₁ + [0 ≤ V ≤ 1]); see fastpu.csrr.
"""

import numpy as np


def loss(X, A, variant, alpha):
    """Σ_ij ℓ(X_ij, A_ij), eqs. (5)/(6) with ½ squares."""
    pos = A == 1
    if variant == "I":
        return float(np.sum(alpha * 0.5 * (X[pos] - 1) ** 2) + np.sum(0.5 * X[~pos] ** 2))
    return float(np.sum(0.5 * (X[pos] - alpha) ** 2) + np.sum(0.5 * X[~pos] ** 2))


def grad(X, A, variant, alpha):
    """∂ℓ/∂X, eqs. (19)/(20)."""
    if variant == "I":
        return np.where(A == 1, alpha * (X - 1), X)
    return np.where(A == 1, X - alpha, X)


def nuclear(U):
    return float(np.linalg.svd(U, compute_uv=False).sum()) if U.size else 0.0


def objective(U, V, A, variant, alpha, lam1, lam2):
    """(10) without the constraint."""
    return lam1 * nuclear(U) + lam2 * float(np.abs(V).sum()) + loss(U + V, A, variant, alpha)


def svt(M, tau):
    L, s, R = np.linalg.svd(M, full_matrices=False)
    return (L * np.maximum(s - tau, 0.0)) @ R


def soft(x, tau):
    return np.sign(x) * np.maximum(np.abs(x) - tau, 0.0)


def algorithm1(A, variant, alpha, lam1, lam2, eta, n_iter):
    """Algorithm 1 densely: returns one dict per iteration (U, V after (18), Ũ, Ṽ, objective at Ũ, Ṽ)."""
    m, n = A.shape
    U = np.zeros((m, n))
    V = np.zeros((m, n))
    Ut = np.zeros((m, n))
    Vt = np.zeros((m, n))
    tau = 1.0
    out = []
    for _ in range(n_iter):
        G = grad(U + V, A, variant, alpha)
        Uh = U - eta * G                                            # step I (Lemma 2)
        Vh = V - eta * G
        Ut_new = svt(Uh, eta * lam1)                                # (16)
        Vt_new = np.clip(soft(Vh, eta * lam2), 0.0, 1.0)            # (17) with V's box
        tau_new = (1 + np.sqrt(1 + 4 * tau * tau)) / 2
        beta = (tau - 1) / tau_new
        U = np.clip(Ut_new + beta * (Ut_new - Ut), 0.0, 1.0)        # (18)
        V = np.clip(Vt_new + beta * (Vt_new - Vt), 0.0, 1.0)
        Ut, Vt, tau = Ut_new, Vt_new, tau_new
        out.append(dict(U=U.copy(), V=V.copy(), Ut=Ut.copy(), Vt=Vt.copy(),
                        objective=objective(Ut, Vt, A, variant, alpha, lam1, lam2)))
    return out


def bilinear_objective(P, Q, V, A, variant, alpha, lam1, lam2):
    """(10) with U = P Qᵀ and λ1‖U‖_* replaced by λ1/2(‖P‖² + ‖Q‖²) (Theorem 2)."""
    return (0.5 * lam1 * (np.sum(P * P) + np.sum(Q * Q)) + lam2 * float(np.abs(V).sum())
            + loss(P @ Q.T + V, A, variant, alpha))


def bilinear_loss_grads(P, Q, V, A, variant, alpha):
    """∂/∂P and ∂/∂Q of Σ ℓ(P Qᵀ + V, A): G Q and Gᵀ P with G = ∂ℓ/∂X."""
    G = grad(P @ Q.T + V, A, variant, alpha)
    return G @ Q, G.T @ P


def algorithm2(A, P, Q, variant, alpha, lam1, lam2, n_iter, eta=None, max_inner=1, tol=0.0):
    """Algorithm 2 densely: P, Q passes ("repeat … until convergence"), then V, per outer iteration.

    Steps: given ``eta`` everywhere, else 1/(c λmax(QᵀQ)), 1/(c λmax(PᵀP)) and 1/c (a
    vanishing Gram matrix gets the step 1e12: the block's loss is then flat). The inner loop
    makes at most ``max_inner`` passes and stops after the first pass whose objective changed
    by at most ``tol`` · max(1, |previous objective|); ``inner`` records the passes made.
    """
    c = max(alpha, 1.0) if variant == "I" else 1.0
    hi = 1.0 / np.sqrt(P.shape[1])
    V = np.zeros(A.shape)
    out = []
    f_prev = bilinear_objective(P, Q, V, A, variant, alpha, lam1, lam2)
    for _ in range(n_iter):
        f_inner = f_prev
        for inner in range(1, max_inner + 1):
            eP = eta if eta is not None else 1.0 / max(c * np.linalg.eigvalsh(Q.T @ Q)[-1], 1e-12)
            gP, _ = bilinear_loss_grads(P, Q, V, A, variant, alpha)
            P = np.clip((P - eP * gP) / (1 + eP * lam1), 0.0, hi)             # (22), (23)
            eQ = eta if eta is not None else 1.0 / max(c * np.linalg.eigvalsh(P.T @ P)[-1], 1e-12)
            _, gQ = bilinear_loss_grads(P, Q, V, A, variant, alpha)
            Q = np.clip((Q - eQ * gQ) / (1 + eQ * lam1), 0.0, hi)
            f_new = bilinear_objective(P, Q, V, A, variant, alpha, lam1, lam2)
            converged = abs(f_inner - f_new) <= tol * max(1.0, abs(f_inner))
            f_inner = f_new
            if converged:
                break
        eV = eta if eta is not None else 1.0 / c
        G = grad(P @ Q.T + V, A, variant, alpha)
        V = np.clip(soft(V - eV * G, eV * lam2), 0.0, 1.0)                  # (17) with V's box
        f_prev = bilinear_objective(P, Q, V, A, variant, alpha, lam1, lam2)
        out.append(dict(P=P.copy(), Q=Q.copy(), V=V.copy(), objective=f_prev, inner=inner))
    return out
