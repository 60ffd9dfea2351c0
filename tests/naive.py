"""Dense O(mn) references written straight from the papers' formulas (tests only)."""

import numpy as np


def dense(A):
    if A is None:
        return None
    return A.toarray() if hasattr(A, "toarray") else np.asarray(A, dtype=float)


def loss(kind, y, s):
    """l(y, s) elementwise: square (y - s)^2, logistic log(1 + e^{-ys}), squared hinge."""
    if kind == "square":
        return (y - s) ** 2
    if kind == "logistic":
        return np.logaddexp(0.0, -y * s)
    return np.maximum(0.0, 1.0 - y * s) ** 2


def ocmf_objective(Y, W, H, *, loss_name, rho, p=None, q=None, a_bar, X=None, Z=None,
                   user_graph=None, item_graph=None, lam, lam_graph, negatives="full",
                   neg_mask=None, lam_w=None, lam_h=None, nu=0.0, intercept=False):
    """Equation (2) of Yu et al. with C_ij from (3), every entry visited explicitly.

    With ``intercept`` a column of ones is appended to X and to Z (each one given): W and H
    then have one row more than the features have columns.

    Regulariser λ_w (‖W‖² + λ_g tr(Bᵀ L_u B)) + λ_h (‖H‖² + λ_g tr(Eᵀ L_v E)), where
    λ_w, λ_h default to ``lam``. With ``nu`` (frequency-scaled regularisation, Rendle et al.
    2022; no features) the ‖W‖² term is Σ_i λ_w c_i^ν ‖w_i‖², c_i = (positives of row i) +
    Σ_j ρ p_i q_j (the unlabeled weight of every entry of the row), and likewise for H.

    negatives="full": positives C_ij l(1, s_ij), every other entry p_i q_j (a - s_ij)^2.
    negatives="all": the same, and the positives also p_i q_j (a - s_ij)^2 (iALS's form).
    negatives="full_logistic": every other entry p_i q_j l(a, s_ij).
    negatives="sampled": only entries in ``neg_mask`` get p_i q_j l(a, s_ij).
    """
    Yd = dense(Y)
    m, n = Yd.shape
    p = np.ones(m) if p is None else np.asarray(p, float)
    q = np.ones(n) if q is None else np.asarray(q, float)
    Xd = np.eye(m) if X is None else dense(X)
    Zd = np.eye(n) if Z is None else dense(Z)
    if intercept:
        Xd = Xd if X is None else np.column_stack([Xd, np.ones(m)])
        Zd = Zd if Z is None else np.column_stack([Zd, np.ones(n)])
    B, E = Xd @ W, Zd @ H
    S = B @ E.T
    pos = Yd != 0
    total = 0.0
    for i in range(m):
        for j in range(n):
            w = rho * p[i] * q[j]
            if pos[i, j]:
                total += Yd[i, j] * loss(loss_name, 1.0, S[i, j])
                if negatives == "all":
                    total += w * (a_bar - S[i, j]) ** 2
            elif negatives in ("full", "all"):
                total += w * (a_bar - S[i, j]) ** 2
            elif negatives == "full_logistic" or (neg_mask is not None and neg_mask[i, j]):
                total += w * loss(loss_name, a_bar, S[i, j])
    lam_w = lam if lam_w is None else lam_w
    lam_h = lam if lam_h is None else lam_h
    weight = rho * np.outer(p, q)               # every entry's unlabeled weight
    counts = (pos.sum(axis=1) + weight.sum(axis=1), pos.sum(axis=0) + weight.sum(axis=0))
    for lam_side, F, G, M, c in ((lam_w, W, user_graph, B, counts[0]),
                                 (lam_h, H, item_graph, E, counts[1])):
        scale = np.ones(F.shape[0]) if nu == 0 else c.astype(float) ** nu
        reg = sum(scale[r] * np.sum(F[r] * F[r]) for r in range(F.shape[0]))
        if G is not None and lam_graph > 0:
            Sg = dense(G)
            Lg = np.diag(Sg.sum(axis=1)) - Sg
            reg += lam_graph * np.trace(M.T @ Lg @ M)
        total += lam_side * reg
    return total


def num_grad(f, x, h=1e-6):
    """Central finite differences."""
    g = np.zeros_like(x)
    for t in range(x.size):
        e = np.zeros_like(x)
        e[t] = h
        g[t] = (f(x + e) - f(x - e)) / (2 * h)
    return g
