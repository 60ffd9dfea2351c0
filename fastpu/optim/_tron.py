"""Method-agnostic smooth solvers over a problem object.

A *problem* has three methods:

``fun(x) -> float``
    The objective at ``x``. May cache work for ``x`` (a *trial* point).
``grad(x) -> ndarray``
    The gradient at ``x``; always called right after ``fun(x)`` at the same
    ``x``. It marks ``x`` as the *accepted* point.
``hessp(s) -> ndarray``
    The Hessian of the last accepted point times ``s``. A rejected trial point
    (``fun`` called, ``grad`` not) must not change it.

Optionally ``line(x, d) -> callable`` returning ``phi(alpha) = fun(x + alpha d)``
computed more cheaply than ``fun`` (Supp-1.4 of Yu et al.: the quadratic parts
are expanded once per direction); :func:`gd` uses it when present.

:func:`tron` is the trust-region Newton method with conjugate gradient of Lin,
Weng and Keerthi (2008), as in Algorithms 4–5 of Yu et al.'s supplement, with
LIBLINEAR's constants; :func:`gd` is gradient descent with backtracking
(Algorithm 6).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from fastpu._core import validation as V
from fastpu._core.hints import FloatArray
from fastpu.optim._result import CONVERGED, MAX_ITER, NO_PROGRESS, OptimizeResult

__all__ = ["OptimizeResult", "tron", "gd", "trust_region_cg"]

logger = logging.getLogger("fastpu")

# LIBLINEAR's trust-region constants (Lin, Weng & Keerthi 2008).
ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0


def trust_region_cg(hessp: Callable[[FloatArray], FloatArray], g: FloatArray, delta: float, *,
                    tol: float = 0.1, max_iter: int | None = None
                    ) -> tuple[FloatArray, FloatArray, int]:
    """Approximately minimise gᵀs + ½ sᵀHs subject to ‖s‖ ≤ delta (Algorithm 4).

    Parameters
    ----------
    hessp : callable
        ``s -> H s``.
    g : ndarray
        Gradient at the current point.
    delta : float
        Trust-region radius (> 0).
    tol : float
        Stop when ‖r‖ ≤ tol ‖g‖.
    max_iter : int, optional
        CG iteration cap (default: the dimension).

    Returns
    -------
    s : ndarray
        The step.
    r : ndarray
        The residual ``-g - H s``.
    n_iter : int
        CG iterations performed.

    Raises
    ------
    TypeError
        If ``hessp`` is not callable or fails on a vector.
    ValueError
        If ``g``, ``delta``, ``tol`` or ``max_iter`` is invalid, or ``hessp`` returns a vector
        of the wrong shape.
    FloatingPointError
        If ``hessp`` returns a non-finite value.
    """
    if not callable(hessp):
        raise TypeError(f"hessp must be callable (s -> H s), got {type(hessp).__name__}")
    g = V.check_dense(g, name="g", ndim=1)
    delta = V.check_scalar(delta, name="delta", minimum=0.0, maximum=1e150, strict_min=True)
    tol = V.check_scalar(tol, name="tol", minimum=0.0)
    n = g.size
    max_iter = n if max_iter is None else V.check_int(max_iter, name="max_iter", minimum=0)
    return _trust_region_cg(_checked_hessp(hessp, n), g, delta, tol, max_iter)


def _checked_hessp(hessp: Callable[[FloatArray], Any], n: int,
                   name: str = "hessp") -> Callable[[FloatArray], FloatArray]:
    """hessp whose output is checked to be a finite length-n vector."""
    def hv(d: FloatArray) -> FloatArray:
        try:
            out = np.asarray(hessp(d), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must map a length-{n} vector to a length-{n} vector; calling it "
                            f"failed: {exc}") from exc
        if out.shape != (n,):
            raise ValueError(f"{name} returned shape {out.shape}, expected ({n},)")
        if not np.isfinite(out).all():
            raise FloatingPointError(f"{name} returned a non-finite value (NaN or inf) for a finite "
                                     "direction: the Hessian-vector product overflowed or is broken")
        return out
    return hv


def _trust_region_cg(hessp: Callable[[FloatArray], FloatArray], g: FloatArray, delta: float, tol: float,
                     max_iter: int) -> tuple[FloatArray, FloatArray, int]:
    s = np.zeros_like(g)
    r = -g.copy()
    d = r.copy()
    rr = float(r @ r)
    stop = tol * np.sqrt(rr)
    it = 0
    while it < max_iter:
        if np.sqrt(rr) <= stop:
            break
        it += 1
        Hd = hessp(d)
        dHd = float(d @ Hd)
        if dHd <= 0.0:
            # non-positive curvature: go to the boundary along d
            tau = _to_boundary(s, d, delta)
            s += tau * d
            r -= tau * Hd
            break
        alpha = rr / dHd
        s_next = s + alpha * d
        if np.linalg.norm(s_next) >= delta:
            tau = _to_boundary(s, d, delta)
            s += tau * d
            r -= tau * Hd
            break
        s = s_next
        r -= alpha * Hd
        rr_new = float(r @ r)
        d = r + (rr_new / rr) * d
        rr = rr_new
    return s, r, it


def _to_boundary(s: FloatArray, d: FloatArray, delta: float) -> float:
    """tau >= 0 with ‖s + tau d‖ = delta."""
    sd = float(s @ d)
    dd = float(d @ d)
    ss = float(s @ s)
    rad = np.sqrt(max(sd * sd + dd * (delta * delta - ss), 0.0))
    if dd == 0.0:
        return 0.0
    if sd >= 0.0:
        return (delta * delta - ss) / (sd + rad) if sd + rad > 0 else 0.0
    return (rad - sd) / dd


def tron(problem: Any, x0: Any, *, tol: float = 1e-3, max_iter: int = 100, cg_tol: float = 0.1,
         max_cg: int | None = None) -> OptimizeResult:
    """Minimise ``problem.fun`` by the trust-region Newton method (TRON).

    Stops when ‖∇f(x)‖ ≤ ``tol`` · ‖∇f(x0)‖, after ``max_iter`` accepted steps,
    or when neither the actual nor the predicted reduction can progress.

    Parameters
    ----------
    problem : object
        With ``fun``, ``grad``, ``hessp`` as described in the module docstring.
    x0 : ndarray
        Starting point (not modified).
    tol : float
        Relative gradient-norm tolerance.
    max_iter : int
        Maximum number of outer iterations (accepted or rejected trial steps).
    cg_tol : float
        Relative tolerance ξ of the inner conjugate gradient.
    max_cg : int, optional
        Cap on CG iterations per outer iteration.

    Returns
    -------
    OptimizeResult

    Raises
    ------
    ValueError
        If ``tol`` or ``cg_tol`` is not in (0, 1), ``max_iter`` < 0, or ``problem.grad``
        returns a vector of another shape than ``x0``.
    FloatingPointError
        If ``problem.fun`` or ``problem.grad`` is not finite at ``x0``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu.optim import tron
    >>> A = np.array([[3.0, 1.0], [1.0, 2.0]]); b = np.array([1.0, 1.0])
    >>> class Quad:
    ...     def fun(self, x): return 0.5 * x @ A @ x - b @ x
    ...     def grad(self, x): return A @ x - b
    ...     def hessp(self, s): return A @ s
    >>> res = tron(Quad(), np.zeros(2), tol=1e-10)
    >>> bool(np.allclose(res.x, np.linalg.solve(A, b)))
    True
    """
    tol = V.check_scalar(tol, name="tol")
    cg_tol = V.check_scalar(cg_tol, name="cg_tol")
    max_iter = V.check_int(max_iter, name="max_iter", minimum=0)
    if not 0.0 < tol < 1.0:
        raise ValueError(f"tol must be in (0, 1), got {tol}")
    if not 0.0 < cg_tol < 1.0:
        raise ValueError(f"cg_tol must be in (0, 1), got {cg_tol}")
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    x, tol, max_iter = _check_start(problem, x0, tol, max_iter, ("fun", "grad", "hessp"))
    cg_tol = V.check_scalar(cg_tol, name="cg_tol", minimum=0.0)
    if max_cg is not None:
        max_cg = V.check_int(max_cg, name="max_cg", minimum=1)
    f, g = _start_value(problem, x)
    gnorm0 = gnorm = float(np.linalg.norm(g))
    delta = gnorm0
    n_cg_total = 0
    n_acc = 0
    it = 0
    status, message = MAX_ITER, "iteration limit reached"
    if gnorm <= tol * gnorm0 or gnorm == 0.0:
        return OptimizeResult(x, f, 0, CONVERGED, "gradient is already small enough", grad_norm=gnorm)
    while it < max_iter:
        it += 1
        s, r, n_cg = _trust_region_cg(problem.hessp, g, delta, cg_tol, x.size if max_cg is None else max_cg)
        n_cg_total += n_cg
        gs = float(g @ s)
        prered = -0.5 * (gs - float(s @ r))
        x_new = x + s
        f_new = float(problem.fun(x_new))
        actred = f - f_new
        snorm = float(np.linalg.norm(s))
        if it == 1:
            delta = min(delta, snorm)
        # step length minimising the 1-d quadratic interpolating f along s
        denom = f_new - f - gs
        alpha = SIGMA3 if denom <= 0 else max(SIGMA1, -0.5 * gs / denom)
        if actred < ETA0 * prered:
            delta = min(max(alpha, SIGMA1) * snorm, SIGMA2 * delta)
        elif actred < ETA1 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
        elif actred < ETA2 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
        else:
            delta = max(delta, min(alpha * snorm, SIGMA3 * delta))
        logger.debug("tron it %d f %.6g actred %.3g prered %.3g delta %.3g cg %d",
                     it, f, actred, prered, delta, n_cg)
        if actred > ETA0 * prered:
            n_acc += 1
            x, f = x_new, f_new
            g = np.asarray(problem.grad(x), dtype=np.float64)
            gnorm = float(np.linalg.norm(g))
            if gnorm <= tol * gnorm0:
                status, message = CONVERGED, "relative gradient norm below tol"
                break
        if f < -1e32:
            status, message = NO_PROGRESS, "objective is unbounded below"
            break
        if actred <= 0 and prered <= 0:
            status, message = NO_PROGRESS, "no reduction predicted or achieved"
            break
        if abs(actred) <= 1e-12 * abs(f) and abs(prered) <= 1e-12 * abs(f):
            status, message = NO_PROGRESS, "reductions below machine precision"
            break
    return OptimizeResult(x, f, n_acc, status, message, grad_norm=gnorm, n_inner=n_cg_total)


def gd(problem: Any, x0: Any, *, tol: float = 1e-3, max_iter: int = 100, beta: float = 0.5,
       sigma: float = 0.01, max_backtrack: int = 40) -> OptimizeResult:
    """Gradient descent with backtracking line search (Algorithm 6 of Yu et al.'s supplement).

    At each iteration the step ``alpha = 1, beta, beta^2, ...`` along ``-grad`` is
    accepted once f(x + alpha d) < f(x) + sigma * alpha * <grad, d>. When the
    problem has ``line(x, d)``, each trial uses it (cheap trials); otherwise ``fun``.

    Parameters
    ----------
    problem : object
        With ``fun`` and ``grad`` (``hessp`` unused), optionally ``line``.
    x0 : ndarray
        Starting point (not modified).
    tol : float
        Stop when ‖∇f(x)‖ ≤ tol ‖∇f(x0)‖.
    max_iter : int
        Maximum number of iterations.
    beta : float
        Step shrink factor in (0, 1).
    sigma : float
        Sufficient-decrease constant in (0, 1/2).
    max_backtrack : int
        Trials per iteration before giving up.

    Returns
    -------
    OptimizeResult

    Raises
    ------
    ValueError
        If ``beta`` is not in (0, 1), ``sigma`` not in (0, 1/2), or ``problem.grad`` returns a
        vector of another shape than ``x0``.
    FloatingPointError
        If ``problem.fun`` or ``problem.grad`` is not finite at ``x0``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu.optim import gd
    >>> class Quad:
    ...     def fun(self, x): return float(x @ x)
    ...     def grad(self, x): return 2 * x
    >>> res = gd(Quad(), np.ones(3), tol=1e-8)
    >>> bool(np.allclose(res.x, 0))
    True
    """
    beta = V.check_scalar(beta, name="beta")
    sigma = V.check_scalar(sigma, name="sigma")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta}")
    if not 0.0 < sigma < 0.5:
        raise ValueError(f"sigma must be in (0, 1/2), got {sigma}")
    x, tol, max_iter = _check_start(problem, x0, tol, max_iter, ("fun", "grad"))
    max_backtrack = V.check_int(max_backtrack, name="max_backtrack", minimum=1)
    f, g = _start_value(problem, x)
    gnorm0 = gnorm = float(np.linalg.norm(g))
    n_trials = 0
    if gnorm == 0.0:
        return OptimizeResult(x, f, 0, CONVERGED, "gradient is zero", grad_norm=0.0)
    status, message = MAX_ITER, "iteration limit reached"
    line = getattr(problem, "line", None)
    it = 0
    for it in range(1, max_iter + 1):
        d = -g
        c = float(g @ d)
        phi = line(x, d) if line is not None else (lambda a, x=x, d=d: problem.fun(x + a * d))
        alpha = 1.0
        accepted = False
        for _ in range(max_backtrack):
            n_trials += 1
            f_new = float(phi(alpha))
            if f_new - f < sigma * alpha * c:
                accepted = True
                break
            alpha *= beta
        if not accepted:
            status, message = NO_PROGRESS, "line search failed to find a sufficient decrease"
            it -= 1
            break
        x = x + alpha * d
        f = float(problem.fun(x))
        g = np.asarray(problem.grad(x), dtype=np.float64)
        gnorm = float(np.linalg.norm(g))
        if gnorm <= tol * gnorm0:
            status, message = CONVERGED, "relative gradient norm below tol"
            break
    return OptimizeResult(x, f, it, status, message, grad_norm=gnorm, n_inner=n_trials)


def _check_start(problem: Any, x0: Any, tol: float, max_iter: int,
                 methods: tuple[str, ...]) -> tuple[FloatArray, float, int]:
    """The boundary of the drivers: the problem's methods, a finite 1-d start, the stopping rule."""
    missing = [m for m in methods if not callable(getattr(problem, m, None))]
    if missing:
        raise TypeError(f"problem must have the methods {', '.join(methods)}; "
                        f"{type(problem).__name__} lacks {', '.join(missing)}")
    x = V.check_dense(x0, name="x0", ndim=1)
    tol = V.check_scalar(tol, name="tol", minimum=0.0)
    max_iter = V.check_int(max_iter, name="max_iter", minimum=0)
    return x, tol, max_iter


def _start_value(problem: Any, x: FloatArray) -> tuple[float, FloatArray]:
    """(f, ∇f) at the start x, refused (FloatingPointError) where either is not finite. f is
    checked before the gradient is evaluated: at a start that overflows, the gradient's products
    would overflow too, and numpy would warn before the error that explains it."""
    f = float(problem.fun(x))
    if not np.isfinite(f):
        raise FloatingPointError(f"problem.fun at x0 is not finite (f = {f}): start from a "
                                 "smaller x0")
    g = np.asarray(problem.grad(x), dtype=np.float64)
    if g.shape != x.shape:
        raise ValueError(f"problem.grad returned shape {g.shape}; expected x0's shape {x.shape}")
    if not np.all(np.isfinite(g)):
        raise FloatingPointError(f"problem.grad at x0 is not finite (f = {f}): start from a "
                                 "smaller x0")
    return f, g
