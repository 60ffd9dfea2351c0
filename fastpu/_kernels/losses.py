"""Per-entry losses on raw scores: value, first and second derivative in the score.

``kind``: 0 square (y - s)^2, 1 logistic log(1 + exp(-y s)), 2 squared hinge
max(0, 1 - y s)^2.  Accumulation is in float64 and there is no fastmath here:
the logistic never exponentiates a positive argument.
"""

import numba as nb
import numpy as np

_JIT = dict(nogil=True, cache=True)

SQUARE, LOGISTIC, SQUARED_HINGE = 0, 1, 2
LOSS_CODES = {"square": SQUARE, "logistic": LOGISTIC, "squared_hinge": SQUARED_HINGE}


@nb.njit(**_JIT)
def loss_value(kind, y, s):
    """value of the loss of label y at score s."""
    if kind == SQUARE:
        r = y - s
        return r * r
    z = y * s
    if kind == LOGISTIC:
        if z >= 0.0:
            return np.log1p(np.exp(-z))
        return -z + np.log1p(np.exp(z))
    t = 1.0 - z
    return t * t if t > 0.0 else 0.0


@nb.njit(**_JIT)
def loss_derivs(kind, y, s):
    """(value, d/ds, d2/ds2) of the loss of label y at score s."""
    if kind == SQUARE:
        r = s - y
        return r * r, 2.0 * r, 2.0
    z = y * s
    if kind == LOGISTIC:
        if z >= 0.0:
            e = np.exp(-z)
            v = np.log1p(e)
            sig = e / (1.0 + e)          # sigmoid(-z)
        else:
            e = np.exp(z)
            v = -z + np.log1p(e)
            sig = 1.0 / (1.0 + e)
        return v, -y * sig, y * y * sig * (1.0 - sig)
    t = 1.0 - z
    if t > 0.0:
        return t * t, -2.0 * y * t, 2.0 * y * y
    return 0.0, 0.0, 0.0


@nb.njit(parallel=True, **_JIT)
def entry_losses(kind, labels, weights, corr, abar, scores, val_out, d1_out, d2_out):
    """Per stored entry e: c_e l(y_e, s_e) - r_e (abar - s_e)^2 with its two derivatives.

    ``corr`` holds r_e = p_i q_j for the Full approach (0 when the entry carries no
    correction). Writes value, first and second derivative into the ``*_out`` arrays.
    """
    for e in nb.prange(scores.shape[0]):
        v, g, h = loss_derivs(kind, labels[e], scores[e])
        c = weights[e]
        r = corr[e]
        t = abar - scores[e]
        val_out[e] = c * v - r * t * t
        d1_out[e] = c * g + 2.0 * r * t
        d2_out[e] = c * h - 2.0 * r


@nb.njit(parallel=True, **_JIT)
def entry_values(kind, labels, weights, corr, abar, scores, val_out):
    """Values only of :func:`entry_losses` (used in line searches)."""
    for e in nb.prange(scores.shape[0]):
        v = loss_value(kind, labels[e], scores[e])
        t = abar - scores[e]
        val_out[e] = weights[e] * v - corr[e] * t * t
