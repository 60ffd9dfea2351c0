"""Accelerated proximal gradient (APG / FISTA) over a problem object.

Minimises F(x) = f(x) + h(x), f smooth, h with a cheap proximal map. From
``x_0 = y_0`` and ``τ_0 = 1`` every iteration takes

    x_{t+1} = prox_{η h}(y_t − η ∇f(y_t))                         (proximal gradient step)
    τ_{t+1} = (1 + √(1 + 4 τ_t²)) / 2
    y_{t+1} = x_{t+1} + (τ_t − 1)/τ_{t+1} · (x_{t+1} − x_t)         (momentum)

with optional adaptive restart (O'Donoghue & Candès: reset τ to 1 when the objective
goes up, ``restart="function"``, or when the momentum points against the gradient step,
``restart="gradient"``) and optional backtracking on the step η (Beck & Teboulle).

The driver is method-agnostic: the problem object supplies

- ``grad(y)``                 ∇f at y (required);
- ``prox(v, step)``           prox_{step·h}(v), or instead
  ``prox_step(y, g, step)``   the whole step prox_{step·h}(y − step·g), for problems whose
  iterates are not plain arrays (structured or factored iterates);
- ``extrapolate(x_new, x, beta)`` (optional) the momentum point; the default is
  ``x_new + beta (x_new − x)``. A problem may project here (CSRR's box, eq. 18);
- ``objective(x)`` (optional) F(x), recorded in the history and used by
  ``restart="function"`` and ``tol``;
- ``fun(x)`` (optional) f(x), needed by ``line_search=True``.

Line search and ``restart="gradient"`` use inner products of the iterates, so they need
iterates that are numpy arrays.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.progress import callback_stops
from fastpu._core.hints import Callback
from fastpu.optim._result import CALLBACK, CONVERGED, MAX_ITER, OptimizeResult

__all__ = ["apg"]

logger = logging.getLogger("fastpu")


def apg(problem: Any, x0: Any, *, step: float, n_iter: int = 100, restart: str | None = None,
        momentum: bool = True, line_search: bool = False, shrink: float = 0.5, tol: float = 0.0,
        callback: Callback = None, y0: Any = None) -> OptimizeResult:
    """Run accelerated proximal gradient on ``problem`` from ``x0``.

    Parameters
    ----------
    problem : object
        Provides ``grad`` and ``prox`` (or ``prox_step``); optionally ``extrapolate``,
        ``objective``, ``fun`` (see the module docstring).
    x0 : object
        Starting point (a numpy array unless the problem defines ``prox_step`` and
        ``extrapolate``).
    step : float
        Step size η > 0 (``1/L`` for an L-Lipschitz gradient); the first trial step with
        ``line_search``.
    n_iter : int
        Maximum number of iterations.
    restart : {None, "function", "gradient"}
        Adaptive momentum restart.
    momentum : bool
        ``False`` gives the plain proximal gradient method (ISTA).
    line_search : bool
        Backtrack ``step *= shrink`` until f(x⁺) ≤ f(y) + ⟨∇f(y), x⁺ − y⟩ + ‖x⁺ − y‖²/(2η).
    shrink : float
        Backtracking factor in (0, 1).
    tol : float
        Stop when |F(x_{t+1}) − F(x_t)| ≤ tol · max(1, |F(x_t)|) (needs ``objective``;
        0 disables).
    callback : callable, optional
        ``callback(info)`` with the history dict of each iteration, plus the new iterate
        ``info["x"]`` and the extrapolated point ``info["y"]`` (not kept in ``history``);
        returning True stops (it must return None or a bool).
    y0 : object, optional
        The first momentum point, for problems whose momentum points are stored differently
        from their iterates; it must represent the same point as ``x0`` (default ``x0``).

    Returns
    -------
    OptimizeResult
        ``x`` the last proximal iterate, ``fun`` F(x) (None without ``objective``), ``nit`` the
        iterations run, ``status`` (0 converged: relative objective change below ``tol``, 1
        iteration limit, 3 stopped by the callback), ``message``, and apg's own ``y`` (the last
        momentum point), ``step`` (the final step size), ``n_restarts`` and ``history``.

    Raises
    ------
    TypeError
        If ``problem`` lacks ``grad`` or a proximal map, or an argument has the wrong type; a
        ``callback`` that returns something other than None or a bool.
    ValueError
        If ``step``, ``n_iter``, ``shrink``, ``tol`` or ``restart`` is out of range, an
        option needs a method the problem does not have, or an array ``y0`` does not have
        ``x0``'s shape.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu.optim import apg
    >>> from fastpu.optim import soft_threshold
    >>> class Lasso:                       # ½‖x − b‖² + ‖x‖₁, solution soft(b, 1)
    ...     b = np.array([3.0, -0.5, -2.0])
    ...     def grad(self, x): return x - self.b
    ...     def prox(self, v, step): return soft_threshold(v, step)
    >>> apg(Lasso(), np.zeros(3), step=0.5, n_iter=60).x.round(6)
    array([ 2.,  0., -1.])
    """
    if not callable(getattr(problem, "grad", None)):
        raise TypeError(f"problem must have a grad(y) method, got {type(problem).__name__} without one")
    has_prox_step = callable(getattr(problem, "prox_step", None))
    if not has_prox_step and not callable(getattr(problem, "prox", None)):
        raise TypeError(
            f"problem must have prox(v, step) or prox_step(y, g, step), got {type(problem).__name__} with neither"
        )
    if x0 is None or isinstance(x0, (str, bytes)) or sp.issparse(x0):
        raise TypeError(f"x0 must be a point of the problem (usually a numpy array), got {type(x0).__name__}")
    if isinstance(x0, (np.ndarray, list)):
        x0 = V.check_dense(x0, name="x0", ndim=np.ndim(x0))
        if y0 is not None:             # an array point: its momentum point is the same kind
            if sp.issparse(y0) or not isinstance(y0, (np.ndarray, list)):
                raise TypeError(f"y0 must be an array like x0, got {type(y0).__name__}")
            y0 = V.check_dense(y0, name="y0", ndim=x0.ndim)
            if y0.shape != x0.shape:
                raise ValueError(f"y0 has shape {y0.shape}; expected x0's shape {x0.shape} "
                                 "(y0 is the same point as x0, stored for the momentum)")
    step = V.check_scalar(step, name="step", minimum=0.0, strict_min=True)
    n_iter = V.check_int(n_iter, name="n_iter", minimum=0)
    restart = V.check_choice(restart, name="restart", choices=(None, "function", "gradient"))
    shrink = V.check_scalar(shrink, name="shrink", minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    tol = V.check_scalar(tol, name="tol", minimum=0.0)
    callback = V.check_callback(callback)
    has_objective = callable(getattr(problem, "objective", None))
    if line_search and not callable(getattr(problem, "fun", None)):
        raise ValueError("line_search=True needs problem.fun(x) (the smooth part f); the problem has none")
    if restart == "function" and not has_objective:
        raise ValueError("restart='function' needs problem.objective(x); the problem has none")
    if tol > 0 and not has_objective:
        raise ValueError("tol > 0 needs problem.objective(x); the problem has none")

    if has_prox_step:
        prox_step = problem.prox_step
    else:
        def prox_step(y: Any, g: Any, eta: float) -> Any:
            return problem.prox(y - eta * g, eta)
    extrapolate = getattr(problem, "extrapolate", None)
    if not callable(extrapolate):
        def extrapolate(x_new: Any, x_old: Any, beta: float) -> Any:
            return x_new + beta * (x_new - x_old) if beta else x_new

    x = x0
    y = x0 if y0 is None else y0
    tau = 1.0
    f_x: Any = problem.objective(x) if has_objective else None
    history: list[dict[str, Any]] = []
    n_restarts = 0
    status, message = MAX_ITER, f"stopped after n_iter={n_iter} iterations"
    t = 0
    for t in range(1, n_iter + 1):
        g = problem.grad(y)
        if line_search:
            f_y = problem.fun(y)
            while True:
                x_new = prox_step(y, g, step)
                d = np.asarray(x_new - y)
                bound = f_y + float(np.vdot(g, d)) + float(np.vdot(d, d)) / (2.0 * step)
                if problem.fun(x_new) <= bound + 1e-12 * max(1.0, abs(f_y)):
                    break
                step *= shrink
        else:
            x_new = prox_step(y, g, step)
        f_new: Any = problem.objective(x_new) if has_objective else None
        tau_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * tau * tau))
        beta = (tau - 1.0) / tau_new if momentum else 0.0
        restarted = False
        if restart == "function" and f_new > f_x:
            restarted = True
        elif restart == "gradient" and float(np.vdot(np.asarray(y - x_new), np.asarray(x_new - x))) > 0:
            restarted = True
        if restarted:
            tau_new, beta = 1.0, 0.0
            n_restarts += 1
        y = extrapolate(x_new, x, beta)
        info = {"iter": t, "objective": f_new, "step": step, "beta": beta, "restarted": restarted}
        history.append(info)
        logger.debug("apg %s", info)
        converged = (tol > 0 and abs(f_new - f_x) <= tol * max(1.0, abs(f_x)))
        x, tau, f_x = x_new, tau_new, f_new
        if callback is not None and callback_stops(callback(dict(info, x=x_new, y=y)), "apg"):
            status, message = CALLBACK, f"the callback asked to stop at iteration {t}"
            break
        if converged:
            status, message = CONVERGED, f"relative objective change below tol={tol:g} at iteration {t}"
            break
    if isinstance(x, np.ndarray) and not np.all(np.isfinite(x)):
        raise FloatingPointError(f"apg: the iterate became non-finite by iteration {t}; lower step "
                                 f"(now {step:g}) or use line_search=True")
    return OptimizeResult(x=x, fun=f_x, nit=t, status=status, message=message, y=y, step=step,
                          n_restarts=n_restarts, history=history)
