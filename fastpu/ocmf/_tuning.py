"""ocmf's default search space for :func:`fastpu.select.tune` (see docs/select.md)."""

from __future__ import annotations

from typing import Any

import scipy.stats as stats

from fastpu._core.registry import rank_space

#: the fixed settings every trial starts from and the ranges searched
SPACE: dict[str, Any] = dict(
    fixed=dict(n_iter=15),
    space=dict(k=rank_space, rho=stats.loguniform(1e-3, 1.0), lam=stats.loguniform(0.1, 100.0)),
)


def space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) for ``tune("ocmf", Y, **fixed)``; a side graph adds λ_g
    (``lam_graph``, whose default 0 would ignore it)."""
    searched = {k: v for k, v in SPACE["space"].items() if k not in fixed}
    if "lam_graph" not in fixed and (fixed.get("user_graph") is not None
                                     or fixed.get("item_graph") is not None):
        searched["lam_graph"] = stats.loguniform(1e-3, 10.0)
    return searched, {**SPACE["fixed"], **fixed}
