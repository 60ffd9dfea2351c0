"""The one result type of fastpu's solvers (after ``scipy.optimize.OptimizeResult``)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["CALLBACK", "CONVERGED", "MAX_ITER", "NO_PROGRESS", "OptimizeResult", "Status"]


class Status(int):
    """Why a solver stopped: 0 converged, 1 iteration limit, 2 no further progress possible,
    3 stopped by the callback.

    An ``int`` that shows its name (:attr:`name`).
    """

    _NAMES = {0: "converged", 1: "max_iter", 2: "no_progress", 3: "callback"}

    @property
    def name(self) -> str:
        """``"converged"``, ``"max_iter"``, ``"no_progress"`` or ``"callback"``."""
        return self._NAMES.get(int(self), "unknown")

    def __repr__(self) -> str:
        return f"{int(self)} ({self.name})"


CONVERGED, MAX_ITER, NO_PROGRESS, CALLBACK = (Status(i) for i in range(4))


@dataclasses.dataclass(frozen=True)
class OptimizeResult:
    """What every solver of :mod:`fastpu.optim` returns.

    Attributes
    ----------
    x : ndarray or object
        The final (accepted) point; for :func:`~fastpu.optim.apg` the last proximal iterate.
    fun : float or None
        The objective at ``x`` (``None`` from ``apg`` when the problem has no ``objective``).
    nit : int
        Iterations run (accepted steps).
    status : Status
        0 converged, 1 iteration limit, 2 no further progress possible, 3 stopped by the
        callback (:data:`CONVERGED`, :data:`MAX_ITER`, :data:`NO_PROGRESS`, :data:`CALLBACK`).
    message : str
        Why it stopped, in a sentence.
    grad_norm : float or None
        The gradient's norm at ``x`` (TRON and GD).
    n_inner : int
        Inner iterations in total: conjugate-gradient steps (TRON), trial step sizes (GD).
    y : object or None
        ``apg``'s last momentum point (where the next gradient would be taken).
    step : float or None
        ``apg``'s final step size (smaller than the first after backtracking).
    n_restarts : int
        How many times ``apg`` reset its momentum.
    history : list of dict
        ``apg``: one dict per iteration (``iter``, ``objective``, ``step``, ``beta``,
        ``restarted``).
    """

    x: Any
    fun: float | None
    nit: int
    status: Status
    message: str
    grad_norm: float | None = None
    n_inner: int = 0
    y: Any = None
    step: float | None = None
    n_restarts: int = 0
    history: list = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @property
    def success(self) -> bool:
        """Whether the solver converged (``status == 0``)."""
        return self.status == CONVERGED
