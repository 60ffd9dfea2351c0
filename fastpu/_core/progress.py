"""Per-iteration progress shared by every ``fit``: history, ``verbose`` output, ``callback``.

With ``verbose`` a fit shows its progress as **one updating line** (each iteration rewrites it:
``[ocmf] iter   7  objective 1234.5  0.81s``), drawn by tqdm when it is installed and by a plain
carriage-return fallback otherwise (``FASTPU_PROGRESS=plain``); the line stays on screen when the
fit ends, and notes and warnings print on lines of their own. When the stream is not a terminal
(output redirected to a log or a pipe) progress prints lines of their own instead of rewriting
one: at most one every :data:`LOG_INTERVAL` seconds while a fit runs, and the line the terminal
would end with. The first fit of a method whose numba kernels are not
compiled yet also prints a one-line notice (how long compiling takes, once, and that
``fastpu warmup`` does it ahead): see :func:`compile_notice`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from typing import IO, Any, Callable, Iterator

import numpy as np

from fastpu._core.exceptions import user_stacklevel
from fastpu._core.hints import Callback
from fastpu._core.exceptions import ConvergenceWarning

logger = logging.getLogger("fastpu")

# the one updating line on screen (at most one at a time), and the label the command line gives
_state: dict[str, Any] = {"line": None, "label": None, "noticed": set()}


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


#: On a stream that is not a terminal, the least seconds between two progress lines of a fit
#: (and from its start to the first); the line it ends with is always written.
LOG_INTERVAL = 10.0


class _Line:
    """One updating line on ``stream``: tqdm's when it is installed, else carriage returns. On a
    stream that is not a terminal (a log file, a pipe) updates are written as lines of their own,
    at most one per :data:`LOG_INTERVAL` and the last: a carriage return there would pile every
    iteration onto one line of the log."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.width = 0
        self.bar: Any = None
        plain = os.environ.get("FASTPU_PROGRESS", "").lower() == "plain"
        terminal = _is_terminal(stream)
        self.lines = not plain and not terminal
        self.last: str | None = None          # the last line written (lines mode)
        self.pending: str | None = None       # the latest text, not yet written
        self.written = time.monotonic()       # when a line was last written (or the start)
        if not plain and terminal:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=None, file=stream, bar_format="{desc}", leave=True,
                                dynamic_ncols=True, mininterval=0.0, delay=0.0)

    def show(self, text: str, last: bool = False) -> None:
        if self.lines:
            self.pending = text
            now = time.monotonic()
            if last or now - self.written >= LOG_INTERVAL:
                self._write_pending()
                self.written = now
            return
        if self.bar is not None:
            self.bar.set_description_str(text, refresh=True)
            return
        pad = max(0, self.width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self.width = len(text)

    def _write_pending(self) -> None:
        if self.pending is not None and self.pending != self.last:
            self.stream.write(self.pending + "\n")
            self.stream.flush()
            self.last = self.pending
        self.pending = None

    def close(self, text: str | None = None) -> None:
        if self.lines:                         # what a terminal's line ends up showing
            if text is not None:
                self.pending = text
            self._write_pending()
            return
        if text is not None:
            self.show(text)
        if self.bar is not None:
            self.bar.close()
        else:
            self.stream.write("\n")
            self.stream.flush()


def line_open() -> bool:
    """Whether a progress line is open (its text would be overwritten by the next one)."""
    return _state["line"] is not None


def end_line(text: str | None = None) -> None:
    """End the updating progress line (replacing its text with ``text`` when given), so that
    what is printed next starts on a line of its own. Nothing happens when no line is open."""
    line = _state["line"]
    _state["line"] = None
    if line is not None:
        try:
            line.close(text)
        except (ValueError, OSError):        # its stream was closed meanwhile (a test's capture)
            pass


@contextlib.contextmanager
def labelled(label: str) -> Iterator[None]:
    """Show ``label`` instead of ``[method]`` on the progress lines of the fits run inside."""
    before = _state["label"]
    _state["label"] = label
    try:
        yield
    finally:
        _state["label"] = before


def uncompiled(method: str) -> bool:
    """Whether ``method``'s own numba kernels (``fastpu._kernels.<method>``) are neither compiled
    in this process nor in the kernel cache: its first fit will compile them."""
    import importlib

    base = method.split("-")[0]
    try:
        module = importlib.import_module(f"fastpu._kernels.{base}")
    except ImportError:
        return False
    found = False
    for obj in vars(module).values():
        cache = getattr(obj, "_cache", None)
        if getattr(obj, "py_func", None) is None or obj.__module__ != module.__name__:
            continue
        found = True
        if obj.signatures:
            return False
        index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
        if index is None or os.path.exists(index):
            return False
    return found


def compile_notice(methods: list[str] | tuple[str, ...], *, stream: IO[str] | None = None,
                   force: bool = False) -> str | None:
    """Print (and return) a one-line notice when some of ``methods`` have uncompiled kernels.

    The notice gives the seconds compiling is expected to take (measured per method, in the
    method registry) and names ``fastpu warmup``. It is printed once per method and process:
    the command line prints it always, a fit with ``verbose`` when the command line has not.
    """
    from fastpu._core import registry

    todo = [m for m in dict.fromkeys(x.split("-")[0] for x in methods)
            if m not in _state["noticed"] and uncompiled(m)]
    if not todo:
        return None
    _state["noticed"].update(todo)
    secs = 0.0
    for m in todo:
        try:
            secs += registry.get(m).compile_seconds or 0.0
        except KeyError:
            pass
    about = f"about {secs:.0f} s, " if secs >= 1 else ""
    text = (f"fastpu: compiling the numba kernels of {', '.join(todo)} on first use ({about}once "
            "per installation; later runs load them from the cache; `fastpu warmup` compiles "
            "them ahead of time)")
    end_line()
    print(text, file=stream if stream is not None else sys.stderr, flush=True)
    return text


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
                 stream: IO[str] | None = None, advice: str | None = None,
                 total: int | None = None) -> None:
        self.method = method
        self.verbose = bool(verbose)
        self.callback = callback
        self.stream = stream if stream is not None else sys.stderr
        self.advice = advice or self._DEFAULT_ADVICE
        self.total = total
        self.history: list[dict[str, Any]] = []
        self.initial: float | None = None
        self.prefix = _state["label"] or f"[{method}]"
        if self.verbose:
            end_line()                      # a line left open by an earlier fit
            compile_notice([method], stream=self.stream)
        self.t0 = time.perf_counter()

    def start(self, objective: float) -> None:
        """Record the objective at the starting point (before iteration 1)."""
        objective = float(objective)
        self.initial = objective if np.isfinite(objective) else None

    def close(self) -> None:
        """End the fit's progress line, for a fit that makes none of :meth:`finish`'s checks."""
        if self.verbose and _state["label"] is None:
            end_line()

    def note(self, text: str) -> None:
        """Print one ``[method] text`` line when ``verbose`` (what the reported numbers mean)."""
        if self.verbose:
            end_line()
            print(f"[{self.method}] {text}", file=self.stream, flush=True)

    def finish(self, *factors: Any, zero_advice: str | None = None,
               all_zero: bool | None = None) -> list[str]:
        """Warn if the objective grew past its start or if every score is zero.

        ``factors`` are arrays whose product (or sum) gives the scores: the scores are all
        zero when any one of them is all zero (pass ``(P, Q)`` for P Qᵀ); ``all_zero``
        gives that verdict directly instead.  Returns the list of warning messages issued.
        """
        issued: list[str] = []
        if _state["label"] is None:         # a fit of its own: its line ends with it
            end_line()
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
            warnings.warn(msg, ConvergenceWarning, stacklevel=user_stacklevel())
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
            # an iteration that ran no inner solver iterations (ocmf's row path) does not show
            # "inner 0": the count is kept in the history, the line shows what happened
            extra = "".join(
                f"  {k} {v:.4g}" if isinstance(v, float) else f"  {k} {v}"
                for k, v in info.items() if not (k == "inner" and v == 0)
            )
            of = f"/{self.total}" if self.total else ""
            text = (f"{self.prefix} iter {iter:3d}{of}  objective {objective:>12.6g}  "
                    f"{rec['seconds']:7.2f}s{extra}")
            line = _state["line"]
            if line is None or line.stream is not self.stream:
                end_line()
                line = _state["line"] = _Line(self.stream)
            line.show(text, last=self.total is not None and iter >= self.total)
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
