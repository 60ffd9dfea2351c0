"""CSRR's default search space for :func:`fastpu.select.tune` (see docs/select.md)."""

from __future__ import annotations

from typing import Any

import scipy.stats as stats

from fastpu._core.registry import rank_space

#: the fixed settings every trial starts from and the ranges searched (variant "e")
SPACE: dict[str, Any] = dict(
    fixed=dict(variant="e", n_iter=100),
    space=dict(k=rank_space, alpha=stats.loguniform(1.0, 20.0), lam1=stats.loguniform(1e-2, 10.0),
               lam2=stats.loguniform(1e-3, 1.0)),
)


def space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) for ``tune("csrr", Y, **fixed)``; CSRR-I/II have no rank and run
    60 iterations by default."""
    out = {**SPACE["fixed"], **fixed}
    searched = {k: v for k, v in SPACE["space"].items() if k not in fixed}
    if out.get("variant") in ("I", "II"):
        searched.pop("k", None)
        out["n_iter"] = fixed.get("n_iter", 60)
    return searched, out
