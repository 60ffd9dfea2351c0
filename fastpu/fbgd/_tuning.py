"""fBGD's default search space for :func:`fastpu.select.tune` (see docs/select.md)."""

from __future__ import annotations

from typing import Any

import scipy.stats as stats

from fastpu._core.registry import rank_space

#: the fixed settings every trial starts from and the ranges searched (an entry may be a
#: function of the matrix shape (m, n): alpha0 scales with the number of items)
SPACE: dict[str, Any] = dict(
    fixed=dict(n_iter=30),
    space=dict(k=rank_space, alpha0=lambda m, n: stats.loguniform(0.05 * n, 5.0 * n),
               rho=stats.uniform(0.0, 1.0), lr=stats.loguniform(0.01, 0.3),
               lam=[0.0, 1e-3, 1e-2, 1e-1, 1.0]),
)


def space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) for ``tune("fbgd", Y, **fixed)``."""
    return ({k: v for k, v in SPACE["space"].items() if k not in fixed},
            {**SPACE["fixed"], **fixed})
