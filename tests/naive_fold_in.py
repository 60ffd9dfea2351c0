"""Dense references for fold-in: every new user's row problem written over all n items.

Written from the papers' objectives (not from the fold-in code): each function takes the new
user's full dense row and the model's dense item side.
"""

import numpy as np

# ------------------------------------------------------------------------------ losses


def loss_parts(loss, y, s):
    """value, d/ds, d2/ds2 of the loss of label y at score s (arrays)."""
    y, s = np.broadcast_arrays(np.asarray(y, float), np.asarray(s, float))
    if loss == "square":
        return (y - s) ** 2, 2.0 * (s - y), np.full_like(s, 2.0)
    z = y * s
    if loss == "logistic":
        v = np.logaddexp(0.0, -z)
        sig = 0.5 * (1.0 - np.tanh(0.5 * z))          # 1 / (1 + exp(z))
        return v, -y * sig, y * y * sig * (1.0 - sig)
    t = np.maximum(0.0, 1.0 - z)
    return t * t, -2.0 * y * t, np.where(t > 0, 2.0 * y * y, 0.0)


# ------------------------------------------------------------------------------ ocmf


def ocmf_row(w, E, pos, C, *, loss, pw, q, abar, lam, negatives="full", neg=None):
    """Value and gradient of ocmf's row problem, over all n items.

    Full:      Σ_{j∈Ω+} C_j ℓ(1, s_j) + Σ_{j∉Ω+} pw q_j (ā − s_j)² + λ‖w‖²      (paper eq. 2)
    all:       Σ_{j∈Ω+} C_j ℓ(1, s_j) + Σ_j pw q_j (ā − s_j)² + λ‖w‖²          (iALS's form)
    Sampled / full_logistic: Σ_{j∈Ω+} C_j ℓ(1, s_j) + Σ_{j∈neg} pw q_j ℓ(ā, s_j) + λ‖w‖².
    ``pos`` and ``neg`` are boolean masks of length n; C has length n (used on pos).
    """
    s = E @ w
    v1, g1, _ = loss_parts(loss, 1.0, s)
    val = np.sum(C[pos] * v1[pos]) + lam * w @ w
    d = np.where(pos, C * g1, 0.0)
    if negatives in ("full", "all"):
        un = ~pos if negatives == "full" else np.ones_like(pos)
        r = abar - s
        val += np.sum(pw * q[un] * r[un] ** 2)
        d = d + np.where(un, -2.0 * pw * q * r, 0.0)
    else:
        vn, gn, _ = loss_parts(loss, abar, s)
        val += np.sum(pw * q[neg] * vn[neg])
        d = d + np.where(neg, pw * q * gn, 0.0)
    return val, E.T @ d + 2.0 * lam * w


def ocmf_square_lstsq(E, pos, C, *, pw, q, abar, lam):
    """The square-loss row problem (full negatives) as one dense least-squares problem."""
    k = E.shape[1]
    wts = np.where(pos, C, pw * q)
    target = np.where(pos, 1.0, abar)
    r = np.sqrt(wts)
    A = np.vstack([r[:, None] * E, np.sqrt(lam) * np.eye(k)])
    b = np.concatenate([r * target, np.zeros(k)])
    return np.linalg.lstsq(A, b, rcond=None)[0]


# ------------------------------------------------------------------------------ fbgd


def fbgd_row_lstsq(Q, pos, apos, rpos, neg, r_neg, reg, *, biases, f, w0=0.0):
    """fBGD loss (eq. 2) of one row as a dense weighted least-squares problem in its free
    parameters (V_x, and w_x with biases), returning the row embedding p_x.

    Σ_{y∈P} α⁺_y (r⁺_y − p·q_y)² + Σ_{y∉P} α⁻_y (r⁻ − p·q_y)² + reg (‖V_x‖² + w_x²),
    p = [V_x, w_x + w0, 1] with biases, p = V_x without.
    """
    n = Q.shape[0]
    wts = np.where(pos, apos, neg)
    target = np.where(pos, rpos, r_neg)
    if biases:
        Z = Q[:, :f + 1]                       # free coordinates (V_x, w_x)
        offset = w0 * Q[:, f] + Q[:, f + 1]
    else:
        Z, offset = Q, np.zeros(n)
    r = np.sqrt(wts)
    nfree = Z.shape[1]
    A = np.vstack([r[:, None] * Z, np.sqrt(reg) * np.eye(nfree)])
    b = np.concatenate([r * (target - offset), np.zeros(nfree)])
    theta = np.linalg.lstsq(A, b, rcond=None)[0]
    if biases:
        return np.concatenate([theta[:f], [theta[f] + w0, 1.0]])
    return theta


# ------------------------------------------------------------------------------ homf


def homf_new_rows(A, R_new, T, *, m, g="exp"):
    """f_T of the augmented matrix A' = [[A, 0], [a, 0]] by explicit powers.

    a = row-normalised g(R_new) placed on the item nodes (columns m..N-1); the existing rows of
    A are kept and no existing node has an edge into a new node. Returns (the new rows of
    f_T(A') over all N + m_new columns, f_T(A') itself).
    """
    A = np.asarray(A, float)
    N = A.shape[0]
    mn = R_new.shape[0]
    Gn = np.zeros((mn, N))
    for i in range(mn):
        for j in range(R_new.shape[1]):
            x = R_new[i, j]
            if x != 0.0:
                Gn[i, m + j] = np.exp(x) if g == "exp" else (x if g == "linear" else float(x > 0))
    deg = Gn.sum(axis=1, keepdims=True)
    an = np.divide(Gn, deg, out=np.zeros_like(Gn), where=deg > 0)
    Ap = np.zeros((N + mn, N + mn))
    Ap[:N, :N] = A
    Ap[N:, :N] = an
    F = np.zeros_like(Ap)
    P = np.eye(N + mn)
    for _ in range(T):
        P = P @ Ap
        F += P
    F /= T
    return F[N:], F


def ft_dense(A, T):
    A = np.asarray(A, float)
    F = np.zeros_like(A)
    P = np.eye(A.shape[0])
    for _ in range(T):
        P = P @ A
        F += P
    return F / T


def homf_ridge(Frows, L, lam, *, dense):
    """Per row x: argmin_u ½ Σ_Ω (x_r − L_r·u)² + λ‖u‖², Ω = nonzeros of x (or all)."""
    k = L.shape[1]
    out = np.empty((Frows.shape[0], k))
    for i, x in enumerate(Frows):
        om = np.ones(x.size, bool) if dense else x != 0
        Lo = L[om]
        out[i] = np.linalg.solve(Lo.T @ Lo + 2.0 * lam * np.eye(k), Lo.T @ x[om])
    return out


# ------------------------------------------------------------------------------ csrr


def csrr_row(p, v, Q, pos, *, alpha, lam1, lam2, loss="I"):
    """CSRR-e row objective over all n items (v is length n, zero off the positives) and its
    gradient in (p, v): Σ_j ℓ(p·q_j + v_j, a_j) + λ1/2‖p‖² + λ2 Σ v_j (v ≥ 0)."""
    x = Q @ p + v
    if loss == "I":
        val_pos, d_pos = 0.5 * alpha * (x - 1.0) ** 2, alpha * (x - 1.0)
    else:
        val_pos, d_pos = 0.5 * (x - alpha) ** 2, x - alpha
    val = np.where(pos, val_pos, 0.5 * x * x)
    d = np.where(pos, d_pos, x)
    f = val.sum() + 0.5 * lam1 * p @ p + lam2 * v.sum()
    return f, Q.T @ d + lam1 * p, d + lam2


def box_kkt(x, g, lo, hi):
    """KKT violation of min over the box [lo, hi]: g inside, min(g, 0) at lo, max(g, 0) at hi."""
    r = g.copy()
    r[(x <= lo) & (g > 0)] = 0.0
    r[(x >= hi) & (g < 0)] = 0.0
    return r
