"""Per-iteration progress shared by every ``fit``: history, ``verbose`` lines, ``callback``."""

from __future__ import annotations

import logging
import sys
import time
import warnings
from typing import IO, Any, Callable

import numpy as np

from fastpu._core import validation as V
from fastpu._core.hints import Callback
from fastpu._core.exceptions import ConvergenceWarning

logger = logging.getLogger("fastpu")


class Progress:
    """Collects one dict per outer iteration and reports it.

    ``step(**info)`` appends ``{"iter", "objective", "seconds", **info}`` to
    ``history`` (``seconds`` counts from construction), prints it when ``verbose``,
    logs it at DEBUG level, and returns True when the callback asks to stop
    (by returning True; it must return None or a bool, else TypeError). A non-finite objective raises ``FloatingPointError``
    instead of letting a run silently return NaN; its message ends with ``advice``,
    which each method builds from its arguments so that it names the likely cause.

    ``start(objective)`` records the objective of the starting point; ``finish(...)``
    then warns (:class:`fastpu.ConvergenceWarning`) when a recorded objective is above
    it, and when the returned factors make every score zero. Neither check changes
    anything the fit returns.

    ``model``, when the method passes it, is a function of no arguments that returns the
    current iterate as a model (fresh copies of the factors); the callback receives it as
    ``info["model"]`` (it is not stored in ``history``), so that a callback can evaluate
    every outer iteration (:func:`fastpu.select.search` picks the best iteration this way).
    """

    _DEFAULT_ADVICE = "lower the step size / learning rate or raise the regularisation"

    def __init__(self, method: str, *, verbose: bool = False, callback: Callback = None,
                 stream: IO[str] | None = None, advice: str | None = None) -> None:
        self.method = method
        self.verbose = bool(verbose)
        self.callback = callback
        self.stream = stream if stream is not None else sys.stderr
        self.advice = advice or self._DEFAULT_ADVICE
        self.history: list[dict[str, Any]] = []
        self.initial: float | None = None
        self.t0 = time.perf_counter()

    def start(self, objective: float) -> None:
        """Record the objective at the starting point (before iteration 1)."""
        objective = float(objective)
        self.initial = objective if np.isfinite(objective) else None

    def note(self, text: str) -> None:
        """Print one ``[method] text`` line when ``verbose`` (what the reported numbers mean)."""
        if self.verbose:
            print(f"[{self.method}] {text}", file=self.stream, flush=True)

    def finish(self, *factors: Any, zero_advice: str | None = None,
               all_zero: bool | None = None) -> list[str]:
        """Warn if the objective grew past its start or if every score is zero.

        ``factors`` are arrays whose product (or sum) gives the scores: the scores are all
        zero when any one of them is all zero (pass ``(P, Q)`` for P Qᵀ); ``all_zero``
        gives that verdict directly instead.  Returns the list of warning messages issued.
        """
        issued: list[str] = []
        if self.initial is not None and self.history:
            objs = np.array([h["objective"] for h in self.history])
            worst = int(np.argmax(objs))
            tol = 1e-9 * max(1.0, abs(self.initial))
            if objs[worst] > self.initial + tol:
                issued.append(
                    f"{self.method}: the objective grew from {self.initial:.6g} at the start to "
                    f"{objs[worst]:.6g} at iteration {self.history[worst]['iter']} (last "
                    f"{objs[-1]:.6g}); the iteration diverged: {self.advice}")
        if all_zero is None:
            all_zero = bool(factors) and any(not np.any(f) for f in factors)
        if zero_advice and all_zero:
            issued.append(f"{self.method}: the fitted factors are all zero, so every score is 0; "
                          f"{zero_advice}")
        for msg in issued:       # at the user's call, however many of fastpu's wrappers between
            warnings.warn(msg, ConvergenceWarning, stacklevel=V.user_stacklevel())
        return issued

    def step(self, iter: int, objective: float, *, model: Callable[[], Any] | None = None,
             **info: Any) -> bool:
        objective = float(objective)
        if objective != objective or objective in (float("inf"), float("-inf")):
            raise FloatingPointError(
                f"{self.method}: objective became {objective} at iteration {iter}; {self.advice}"
            )
        rec = {"iter": int(iter), "objective": objective,
               "seconds": time.perf_counter() - self.t0, **info}
        self.history.append(rec)
        logger.debug("%s %s", self.method, rec)
        if self.verbose:
            extra = "".join(
                f"  {k} {v:.4g}" if isinstance(v, float) else f"  {k} {v}"
                for k, v in info.items()
            )
            print(f"[{self.method}] iter {iter:3d}  objective {objective:>12.6g}  "
                  f"{rec['seconds']:7.2f}s{extra}", file=self.stream, flush=True)
        if self.callback is not None:
            stop = self.callback(dict(rec) if model is None else dict(rec, model=model))
            return callback_stops(stop, self.method)
        return False


def callback_stops(value: Any, method: str) -> bool:
    """Whether a callback's return value asks to stop: None and False go on, True stops.

    Anything else (an array, a number, a string) is a TypeError rather than a guess at its
    truth value (an array's is ambiguous, and ``0.0``/``"no"`` would read as a request).
    """
    if value is None or isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.ndarray):
        got = f"a numpy array of shape {value.shape} and dtype {value.dtype}"
    else:
        text = repr(value)
        got = f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
    raise TypeError(f"{method}: callback must return None or a bool (True stops the fit), "
                    f"got {got}")
