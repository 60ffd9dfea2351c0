"""Per-entry losses on raw scores: value, first and second derivative in the score.

``kind``: 0 square (y - s)^2, 1 logistic log(1 + exp(-y s)), 2 squared hinge
max(0, 1 - y s)^2.  Accumulation is in float64 and there is no fastmath here:
the logistic never exponentiates a positive argument. Every ``if`` chain on ``kind`` names each
loss and ends in a branch that returns NaN, so a code without a branch of its own cannot pass
for another loss (the objective's check then refuses the non-finite value).

:data:`LOSS_TABLE` is the one place that says what each loss is to the rest of fastpu: its
name and code, whether a row's problem is quadratic (one CG solve, no line search), and ocmf's
defaults for it. Adding a loss means a row there, a branch in each function below, and their
tests (which are parametrised over the table).
"""

import dataclasses

import numba as nb
import numpy as np

_JIT = dict(nogil=True, cache=True)


@dataclasses.dataclass(frozen=True)
class Loss:
    """What fastpu knows of one loss ℓ(y, s) on the positives.

    Attributes
    ----------
    name : str
        The ``loss=`` value.
    code : int
        The ``kind`` the kernels branch on.
    quadratic : bool
        ℓ is quadratic in s: a row's problem is a least-squares problem (no line search; one
        Newton step is its CG solve).
    a_bar : float
        ocmf's default target score of the unlabeled entries (``a_bar=None``).
    rho, lam : float
        ocmf's default unlabeled weight scale ρ and regularisation λ (``rho=None``,
        ``lam=None``; chosen on the five-split tables of docs/results.md).
    newton_steps, cg_steps : int
        ocmf's default Newton steps per row and half-step, and CG steps per Newton step.
    pcg_steps : int
        The CG steps per Newton step when CG is preconditioned (``precondition``).
    """

    name: str
    code: int
    quadratic: bool
    a_bar: float
    rho: float
    lam: float
    newton_steps: int
    cg_steps: int
    pcg_steps: int


SQUARE, LOGISTIC, SQUARED_HINGE = 0, 1, 2
#: every loss, by code. The square loss's ρ = 1/6, λ = 6 (WRMF's α = 5, λ = 36 in SQ-wSQ's
#: terms) won the search on 17 of the 20 MovieLens-100K and FilmTrust splits of
#: docs/results.md; the logistic and squared hinge losses keep the paper's LR-wSQ settings.
LOSS_TABLE = (
    Loss("square", SQUARE, True, 0.0, 1 / 6, 6.0, 1, 3, 1),
    Loss("logistic", LOGISTIC, False, -1.0, 0.01, 1.0, 1, 4, 2),
    Loss("squared_hinge", SQUARED_HINGE, False, -1.0, 0.01, 1.0, 1, 4, 2),
)
LOSS_CODES = {loss.name: loss.code for loss in LOSS_TABLE}
LOSSES = {loss.name: loss for loss in LOSS_TABLE}
#: the codes of the quadratic losses (a compile-time constant of the kernels)
QUADRATIC_CODES = tuple(loss.code for loss in LOSS_TABLE if loss.quadratic)


@nb.njit(inline="always", **_JIT)
def is_quadratic(kind):
    """Whether loss ``kind`` is quadratic in the score (:data:`LOSS_TABLE`). Written as
    comparisons with the table's constant codes, so that a kernel's branch on it also tells the
    compiler which loss the branch computes (it then specialises the loss inside)."""
    for code in QUADRATIC_CODES:
        if kind == code:
            return True
    return False


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
    v = t * t if t > 0.0 else 0.0
    return v if kind == SQUARED_HINGE else np.nan


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
    if kind == SQUARED_HINGE:
        t = 1.0 - z
        if t > 0.0:
            return t * t, -2.0 * y * t, 2.0 * y * y
        return 0.0, 0.0, 0.0
    return np.nan, np.nan, np.nan


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
