"""HOMF's default search space for :func:`fastpu.select.tune` (see docs/select.md)."""

from __future__ import annotations

from typing import Any

import scipy.stats as stats

from fastpu._core.registry import rank_space

#: the fixed settings every trial starts from and the ranges searched
SPACE: dict[str, Any] = dict(
    fixed=dict(mode="dense", n_iter=10),
    space=dict(k=rank_space, T=[1, 2, 4, 6, 8], lam=stats.loguniform(1e-4, 1.0), g=["exp", "linear", "step"]),
)


def space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) for ``tune("homf", Y, **fixed)``; a side graph adds its weight α."""
    searched = {k: v for k, v in SPACE["space"].items() if k not in fixed}
    if "alpha" not in fixed and (fixed.get("user_graph") is not None
                                 or fixed.get("item_graph") is not None):
        searched["alpha"] = stats.uniform(0.0, 1.0)
    return searched, {**SPACE["fixed"], **fixed}
