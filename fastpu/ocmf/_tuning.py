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


def starts(**fixed: Any) -> list[dict[str, Any]]:
    """Settings ``tune("ocmf", Y, **fixed)`` tries right after the defaults.

    The fit's defaults (ρ = 0.01, λ = 1) are LR-wSQ's. With the square loss and ā = 0
    (SQ-wSQ) the objective is WRMF's divided by the positives' confidence 1 + α: positives of
    weight 1, unlabeled entries of weight ρ = 1/(1 + α), and λ = λ_WRMF/(1 + α). The second
    trial is WRMF's α = 5, λ = 36 in those terms, ρ = 1/6 and λ = 6 (at the default rank): the
    region where WRMF's and implicit ALS's tune land on the validation splits of
    MovieLens-100K's training parts (docs/results.md), which SQ-wSQ's fit defaults are far
    from. Without it, 16 trials can miss that region of ρ × λ altogether (issue 26: split 1
    of MovieLens-100K).
    """
    square = fixed.get("loss") == "square" and fixed.get("a_bar") in (None, 0, 0.0)
    plain = fixed.get("p") is None and fixed.get("q") is None and \
        fixed.get("negatives", "full") == "full"
    return [dict(rho=1 / 6, lam=6.0)] if square and plain else []
