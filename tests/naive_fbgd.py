"""Dense brute-force references for fBGD, written from the paper's formulas (Yuan et al.).

Everything here is O(|X|·|Y|) on purpose: sums run over every (x, y) pair exactly
as written in eq. 2 (loss, with α⁻_xy = α⁻_x α⁻_y: the paper's α⁻_y, α⁻_x or both), eq. 4 (gradient over all samples), eq. 11-13
(SVDFeature embeddings with the g = f + 2 bias augmentation) and eq. 22 (weights), and the
frequency-scaled penalty of Rendle et al. (2022) written from its definition.
Parameters use the layout of ``fastpu.fbgd``: Θ^X has one row per user feature plus,
with biases, a last row for the constant feature (global bias w0 and the fixed 1).
"""

import numpy as np


def negative_weights(counts, alpha0, rho):
    """Eq. 22 item by item: α0 (e^{z_y} − 1)^ρ / Σ (e^{z_y'} − 1)^ρ, z_y = p_y / |P|."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    n = counts.size
    if rho == 0.0 or total == 0.0:
        return np.array([alpha0 / n] * n)
    raw = np.array([(np.exp(c / total) - 1.0) ** rho for c in counts])
    return np.array([alpha0 * r / raw.sum() for r in raw])


def negative_weights_exact(counts, alpha0, rho, digits=80):
    """Eq. 22 in decimal arithmetic of ``digits`` digits, whose exponents do not over- or
    underflow where float64's do ((e^z − 1)^ρ of 1e-400 or 1e400); the weights as float64."""
    import decimal

    ctx = decimal.Context(prec=digits)
    counts = [int(c) for c in counts]
    total = sum(counts)
    n = len(counts)
    if rho == 0.0 or total == 0:
        return np.array([alpha0 / n] * n)
    r = decimal.Decimal(repr(float(rho)))
    raw = []
    for c in counts:
        if c == 0:
            raw.append(decimal.Decimal(0))
            continue
        z = ctx.divide(decimal.Decimal(c), decimal.Decimal(total))
        raw.append(ctx.power(ctx.subtract(ctx.exp(z), decimal.Decimal(1)), r))
    s = sum(raw, decimal.Decimal(0))
    a = decimal.Decimal(repr(float(alpha0)))
    return np.array([float(ctx.divide(ctx.multiply(a, w), s)) for w in raw])


def svdfeature_embeddings(Zx, Zy, Vx, Vy, wx=None, wy=None, w0=0.0):
    """Eq. 13: p_x,d = Σ_j z_xj v_jd; with biases p_x,f+1 = w0 + Σ w_j z_xj, p_x,f+2 = 1,
    q_y,f+1 = 1, q_y,f+2 = Σ w'_j z_yj."""
    Zx, Zy = np.asarray(Zx, float), np.asarray(Zy, float)
    m, n = Zx.shape[0], Zy.shape[0]
    f = Vx.shape[1]
    P_core = np.array([[sum(Zx[x, j] * Vx[j, d] for j in range(Zx.shape[1])) for d in range(f)]
                       for x in range(m)]).reshape(m, f)
    Q_core = np.array([[sum(Zy[y, j] * Vy[j, d] for j in range(Zy.shape[1])) for d in range(f)]
                       for y in range(n)]).reshape(n, f)
    if wx is None:
        return P_core, Q_core
    p_bias = np.array([w0 + sum(wx[j] * Zx[x, j] for j in range(Zx.shape[1])) for x in range(m)])
    q_bias = np.array([sum(wy[j] * Zy[y, j] for j in range(Zy.shape[1])) for y in range(n)])
    P = np.column_stack([P_core, p_bias, np.ones(m)])
    Q = np.column_stack([Q_core, np.ones(n), q_bias])
    return P, Q


def theta_to_parts(theta_x, theta_y, f, biases):
    """Split fastpu's Θ^X, Θ^Y into (Vx, Vy, wx, wy, w0)."""
    if not biases:
        return theta_x[:, :f], theta_y[:, :f], None, None, 0.0
    return (theta_x[:-1, :f], theta_y[:-1, :f], theta_x[:-1, f], theta_y[:-1, f + 1],
            theta_x[-1, f])


def _unlabeled_weight(neg, neg_rows, x, y):
    """α⁻_xy = α⁻_x α⁻_y (α⁻_x = 1 when no row weights are given)."""
    return neg[y] * (1.0 if neg_rows is None else neg_rows[x])


def loss(D, P, Q, apos, rpos, neg, r_neg, neg_rows=None):
    """Eq. 2 pair by pair: Σ_P α⁺(r⁺ − r̂)² + Σ_U α⁻_x α⁻_y (r⁻ − r̂)².

    ``D`` is the dense 0/1 positive mask; ``apos``, ``rpos`` dense matrices (read on P only).
    """
    m, n = D.shape
    J = 0.0
    for x in range(m):
        for y in range(n):
            r = float(P[x] @ Q[y])
            if D[x, y]:
                J += apos[x, y] * (rpos[x, y] - r) ** 2
            else:
                J += _unlabeled_weight(neg, neg_rows, x, y) * (r_neg - r) ** 2
    return J


def score_gradient(D, P, Q, apos, rpos, neg, r_neg, neg_rows=None):
    """∂J/∂r̂_xy for every pair (eq. 4 before the chain rule): −2 α (r − r̂)."""
    R = P @ Q.T
    A = np.array([[_unlabeled_weight(neg, neg_rows, x, y) for y in range(D.shape[1])]
                  for x in range(D.shape[0])]).reshape(D.shape)
    return np.where(D, -2.0 * apos * (rpos - R), -2.0 * A * (r_neg - R))


def frequency_penalties(D, neg, neg_rows, lam, nu, biases=False):
    """λ of every row of Θ^X and Θ^Y for plain ids, pair by pair: user x carries its positives
    and the unlabeled weight α⁻_x α⁻_y of every item y, c_x = Σ_y [D_xy] + Σ_y α⁻_x α⁻_y, and
    λ_x = lam c_x^ν; the same for item y over every user. With biases the constant feature's
    row (the global bias) gets lam."""
    m, n = D.shape
    lam_x, lam_y = [], []
    for x in range(m):
        c = sum(1.0 for y in range(n) if D[x, y]) + sum(_unlabeled_weight(neg, neg_rows, x, y)
                                                       for y in range(n))
        lam_x.append(lam * c ** nu)
    for y in range(n):
        c = sum(1.0 for x in range(m) if D[x, y]) + sum(_unlabeled_weight(neg, neg_rows, x, y)
                                                       for x in range(m))
        lam_y.append(lam * c ** nu)
    if biases:
        lam_x.append(lam)
        lam_y.append(lam)
    return np.array(lam_x), np.array(lam_y)


def objective(D, P, Q, apos, rpos, neg, r_neg, neg_rows=None, lam=0.0, nu=0.0):
    """Eq. 2 plus Σ_x λ_x ‖p_x‖² + Σ_y λ_y ‖q_y‖² (:func:`frequency_penalties`): the objective
    of plain MF, whose parameters are the embeddings."""
    lam_x, lam_y = frequency_penalties(D, neg, neg_rows, lam, nu)
    J = loss(D, P, Q, apos, rpos, neg, r_neg, neg_rows)
    J += sum(lam_x[x] * float(P[x] @ P[x]) for x in range(P.shape[0]))
    J += sum(lam_y[y] * float(Q[y] @ Q[y]) for y in range(Q.shape[0]))
    return J


def _per_row(reg, reg_rows, side):
    """The penalty of every row of one side's Θ as a column (a scalar reg, or reg_rows[side])."""
    if reg_rows is None:
        return np.reshape(float(reg), (1, 1))
    return np.asarray(reg_rows[side], dtype=float).reshape(-1, 1)


def param_gradients(D, Zx, Zy, theta_x, theta_y, f, biases, apos, rpos, neg, r_neg, reg=0.0,
                    neg_rows=None, reg_rows=None):
    """Eq. 4 with eq. 15/17 (∂p_x,d/∂θ_jd = z_xj): ∂J/∂Θ^X, ∂J/∂Θ^Y over all pairs, plus
    2 reg θ (or 2 λ_j θ_j with ``reg_rows`` = (λ of Θ^X's rows, λ of Θ^Y's rows)).

    With biases, the last row of Θ multiplies a constant-1 feature.
    """
    Zx, Zy = np.asarray(Zx, float), np.asarray(Zy, float)
    if biases:
        Zx = np.column_stack([Zx, np.ones(Zx.shape[0])])
        Zy = np.column_stack([Zy, np.ones(Zy.shape[0])])
    P, Q = Zx @ theta_x, Zy @ theta_y
    G = score_gradient(D, P, Q, apos, rpos, neg, r_neg, neg_rows)
    gx = np.zeros_like(theta_x)
    gy = np.zeros_like(theta_y)
    for x in range(D.shape[0]):
        for y in range(D.shape[1]):
            gx += G[x, y] * np.outer(Zx[x], Q[y])   # ∂r̂/∂θ^X_jd = z_xj q_yd
            gy += G[x, y] * np.outer(Zy[y], P[x])
    return (gx + 2.0 * _per_row(reg, reg_rows, 0) * theta_x,
            gy + 2.0 * _per_row(reg, reg_rows, 1) * theta_y)


def full_loss(D, Zx, Zy, theta_x, theta_y, biases, apos, rpos, neg, r_neg, reg=0.0,
              free_x=None, free_y=None, neg_rows=None, reg_rows=None):
    """Eq. 2 at Θ plus reg ‖Θ‖² on the free entries (or Σ_j λ_j ‖θ_j‖² with ``reg_rows``)."""
    Zx, Zy = np.asarray(Zx, float), np.asarray(Zy, float)
    if biases:
        Zx = np.column_stack([Zx, np.ones(Zx.shape[0])])
        Zy = np.column_stack([Zy, np.ones(Zy.shape[0])])
    J = loss(D, Zx @ theta_x, Zy @ theta_y, apos, rpos, neg, r_neg, neg_rows)
    if reg_rows is not None:
        for theta, free, lam in ((theta_x, free_x, reg_rows[0]), (theta_y, free_y, reg_rows[1])):
            for j in range(theta.shape[0]):
                J += lam[j] * sum(theta[j, d] ** 2 for d in range(theta.shape[1]) if free[j, d])
    elif reg:
        J += reg * (np.sum(theta_x[free_x] ** 2) + np.sum(theta_y[free_y] ** 2))
    return J


def _step(theta, acc, j, d, grad, lr, adagrad, eps=1e-4):
    if adagrad:
        acc[j, d] += grad * grad
        den = np.sqrt(acc[j, d]) if acc[j, d] > 0 else eps
        theta[j, d] -= lr * grad / den
    else:
        theta[j, d] -= lr * grad


def coordinate_epoch(D, Zx, Zy, theta_x, theta_y, acc_x, acc_y, free_x, free_y, f, biases,
                     apos, rpos, neg, r_neg, lr, adagrad, reg=0.0, neg_rows=None, reg_rows=None):
    """Appendix B, Algorithm 1 literally: every free θ^X_jd in order, each with the exact
    all-pairs gradient at the current point, then every θ^Y_jd.  In place."""
    for theta, acc, free, side in ((theta_x, acc_x, free_x, 0), (theta_y, acc_y, free_y, 1)):
        for j in range(theta.shape[0]):
            for d in range(theta.shape[1]):
                if not free[j, d]:
                    continue
                grads = param_gradients(D, Zx, Zy, theta_x, theta_y, f, biases, apos, rpos, neg,
                                        r_neg, reg, neg_rows, reg_rows)
                _step(theta, acc, j, d, grads[side][j, d], lr, adagrad)


def batch_epoch(D, Zx, Zy, theta_x, theta_y, acc_x, acc_y, free_x, free_y, f, biases,
                apos, rpos, neg, r_neg, lr, adagrad, reg=0.0, neg_rows=None, reg_rows=None):
    """All gradients of the user side at one point, update them all; then the item side."""
    gx, _ = param_gradients(D, Zx, Zy, theta_x, theta_y, f, biases, apos, rpos, neg, r_neg, reg,
                            neg_rows, reg_rows)
    for j, d in zip(*np.nonzero(free_x)):
        _step(theta_x, acc_x, j, d, gx[j, d], lr, adagrad)
    _, gy = param_gradients(D, Zx, Zy, theta_x, theta_y, f, biases, apos, rpos, neg, r_neg, reg,
                            neg_rows, reg_rows)
    for j, d in zip(*np.nonzero(free_y)):
        _step(theta_y, acc_y, j, d, gy[j, d], lr, adagrad)


# --------------------------------------------------------------------------- Appendix A
def tensor_score(VX, VH, VY, x, h, y, tensor):
    """r̂_xhy literally: eq. 25 (PITF, shared factors) or eq. 27 (rank-f CP)."""
    f = VX.shape[1]
    if tensor == "pitf":
        return (sum(VX[x, d] * VH[h, d] for d in range(f)) + sum(VX[x, d] * VY[y, d] for d in range(f))
                + sum(VH[h, d] * VY[y, d] for d in range(f)))
    return sum(VX[x, d] * VH[h, d] * VY[y, d] for d in range(f))


def tensor_score_grads(VX, VH, VY, x, h, y, tensor):
    """∂r̂_xhy/∂v^X_x, ∂/∂v^H_h, ∂/∂v^Y_y (vectors over d) of eq. 25 / 27."""
    if tensor == "pitf":
        return VH[h] + VY[y], VX[x] + VY[y], VX[x] + VH[h]
    return VH[h] * VY[y], VX[x] * VY[y], VX[x] * VH[h]


def tensor_loss(D3, pair_mask, VX, VH, VY, tensor, apos3, rpos3, neg, r_neg, neg_pairs=None):
    """Eq. 2 over every (x, h) with ``pair_mask[x, h]`` and every y, triple by triple.

    ``D3`` is the dense |X|×|H|×|Y| positive mask, ``apos3``/``rpos3`` dense α⁺, r⁺ (read on
    the positives), ``neg`` α⁻_y and ``neg_pairs`` a dense |X|×|H| α⁻_xh (1 when ``None``).
    """
    J = 0.0
    for x, h in zip(*np.nonzero(pair_mask)):
        for y in range(D3.shape[2]):
            r = tensor_score(VX, VH, VY, x, h, y, tensor)
            if D3[x, h, y]:
                J += apos3[x, h, y] * (rpos3[x, h, y] - r) ** 2
            else:
                a = neg[y] * (1.0 if neg_pairs is None else neg_pairs[x, h])
                J += a * (r_neg - r) ** 2
    return J


def tensor_gradients(D3, pair_mask, VX, VH, VY, tensor, apos3, rpos3, neg, r_neg, neg_pairs=None,
                     reg=0.0):
    """Eq. 4 for the tensor models: Σ over all triples of ∂J/∂r̂ · ∂r̂/∂v, plus 2 reg v."""
    gX, gH, gY = np.zeros_like(VX), np.zeros_like(VH), np.zeros_like(VY)
    for x, h in zip(*np.nonzero(pair_mask)):
        for y in range(D3.shape[2]):
            r = tensor_score(VX, VH, VY, x, h, y, tensor)
            if D3[x, h, y]:
                e = -2.0 * apos3[x, h, y] * (rpos3[x, h, y] - r)
            else:
                a = neg[y] * (1.0 if neg_pairs is None else neg_pairs[x, h])
                e = -2.0 * a * (r_neg - r)
            dx, dh, dy = tensor_score_grads(VX, VH, VY, x, h, y, tensor)
            gX[x] += e * dx
            gH[h] += e * dh
            gY[y] += e * dy
    return gX + 2.0 * reg * VX, gH + 2.0 * reg * VH, gY + 2.0 * reg * VY


def tensor_batch_epoch(D3, pair_mask, VX, VH, VY, accs, tensor, apos3, rpos3, neg, r_neg, lr, adagrad,
                       neg_pairs=None, reg=0.0):
    """One epoch of the two sides: V^X and V^H from one gradient, then V^Y.  In place."""
    gX, gH, _ = tensor_gradients(D3, pair_mask, VX, VH, VY, tensor, apos3, rpos3, neg, r_neg,
                                 neg_pairs, reg)
    for V, g, acc in ((VX, gX, accs[0]), (VH, gH, accs[1])):
        for j in range(V.shape[0]):
            for d in range(V.shape[1]):
                _step(V, acc, j, d, g[j, d], lr, adagrad)
    _, _, gY = tensor_gradients(D3, pair_mask, VX, VH, VY, tensor, apos3, rpos3, neg, r_neg,
                                neg_pairs, reg)
    for j in range(VY.shape[0]):
        for d in range(VY.shape[1]):
            _step(VY, accs[2], j, d, gY[j, d], lr, adagrad)
