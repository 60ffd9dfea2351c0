"""Per-iteration progress shared by every ``fit``: history, ``verbose`` lines, ``callback``."""

from __future__ import annotations

import logging
import sys
import time
from typing import IO, Any, Callable

from ._typing import Callback

logger = logging.getLogger("fastpu")


class Progress:
    """Collects one dict per outer iteration and reports it.

    ``step(**info)`` appends ``{"iter", "objective", "seconds", **info}`` to
    ``history`` (``seconds`` counts from construction), prints it when ``verbose``,
    logs it at DEBUG level, and returns True when the callback asks to stop
    (by returning True). A non-finite objective raises ``FloatingPointError``
    instead of letting a run silently return NaN.

    ``model``, when the method passes it, is a function of no arguments that returns the
    current iterate as a model (fresh copies of the factors); the callback receives it as
    ``info["model"]`` (it is not stored in ``history``), so that a callback can evaluate
    every outer iteration (:func:`fastpu.select.search` picks the best iteration this way).
    """

    def __init__(self, method: str, *, verbose: bool = False, callback: Callback = None,
                 stream: IO[str] | None = None) -> None:
        self.method = method
        self.verbose = bool(verbose)
        self.callback = callback
        self.stream = stream if stream is not None else sys.stderr
        self.history: list[dict[str, Any]] = []
        self.t0 = time.perf_counter()

    def step(self, iter: int, objective: float, *, model: Callable[[], Any] | None = None,
             **info: Any) -> bool:
        objective = float(objective)
        if objective != objective or objective in (float("inf"), float("-inf")):
            raise FloatingPointError(
                f"{self.method}: objective became {objective} at iteration {iter}; "
                "lower the step size / learning rate or raise the regularisation"
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
            print(f"[{self.method}] iter {iter:3d}  objective {objective:.6g}  "
                  f"{rec['seconds']:7.2f}s{extra}", file=self.stream, flush=True)
        if self.callback is not None:
            return bool(self.callback(dict(rec) if model is None else dict(rec, model=model)))
        return False
