"""ocmf's default search space and model families for :func:`fastpu.select.tune` (see
docs/select.md)."""

from __future__ import annotations

from typing import Any

import scipy.stats as stats

from fastpu._core.registry import Family, rank_space

#: the fixed settings every trial starts from and the ranges searched (``default_space``, and
#: the one family of a call whose fixed arguments leave out both families below)
SPACE: dict[str, Any] = dict(
    fixed=dict(n_iter=16),
    space=dict(k=rank_space, rho=stats.loguniform(1e-3, 1.0), lam=stats.loguniform(0.1, 100.0)),
)

#: the families ``tune("ocmf", Y)`` draws from, each with the rank its ladder starts at: the
#: paper's SQ-wSQ (``fit``'s default) and LR-wSQ at the loss table's defaults, and iALS's
#: weighting (the square term on every entry with frequency-scaled regularisation: Rendle,
#: Krichene, Zhang and Koren's recipe, whose ρ is their α₀ and whose λ is per count) from the
#: setting that led the validation part of RecBole's MovieLens-1M split 0 (docs/results.md).
FAMILIES = (
    Family("SQ-wSQ", dict(loss="square", negatives="full", nu=0.0),
           dict(k=rank_space, rho=stats.loguniform(1e-3, 1.0), lam=stats.loguniform(0.1, 100.0)),
           first=dict(rho=1 / 6, lam=6.0), start_rank=128),
    Family("iALS", dict(loss="square", negatives="all", a_bar=0.0, nu=1.0),
           dict(k=rank_space, rho=stats.loguniform(0.05, 2.0), lam=stats.loguniform(5e-4, 0.03)),
           first=dict(rho=0.6, lam=0.006), start_rank=128),
    Family("LR-wSQ", dict(loss="logistic", negatives="full", nu=0.0),
           dict(k=rank_space, rho=stats.loguniform(1e-3, 1.0), lam=stats.loguniform(0.1, 100.0)),
           first=dict(rho=0.01, lam=1.0), start_rank=128),
)


def space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) for ``tune("ocmf", Y, **fixed)``; a side graph adds λ_g
    (``lam_graph``, whose default 0 would ignore it)."""
    return _with_graph({k: v for k, v in SPACE["space"].items() if k not in fixed}, fixed), \
        {**SPACE["fixed"], **fixed}


def _with_graph(searched: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    if "lam_graph" not in fixed and (fixed.get("user_graph") is not None
                                     or fixed.get("item_graph") is not None):
        searched = dict(searched, lam_graph=stats.loguniform(1e-3, 10.0))
    return searched


def families(**fixed: Any) -> list[Family] | None:
    """The families of :data:`FAMILIES` that the caller's fixed arguments allow: a family whose
    own fixed settings the caller fixes to other values is left out (``loss="logistic"`` keeps
    LR-wSQ alone), and what the caller fixes leaves the families' spaces. None when no family is
    left (``tune`` then searches :func:`space`). Features keep the paper's family only (the
    frequency-scaled penalty has no per-row count there)."""
    features = fixed.get("user_features") is not None or fixed.get("item_features") is not None
    out = []
    for fam in FAMILIES:
        if any(key in fixed and fixed[key] != value for key, value in fam.fixed.items()):
            continue
        if features and fam.fixed.get("nu", 0.0) != 0.0:
            continue
        own = {key: value for key, value in fam.fixed.items() if key not in fixed}
        searched = _with_graph({k: v for k, v in fam.space.items() if k not in fixed}, fixed)
        first = None if fam.first is None else \
            {k: v for k, v in fam.first.items() if k in searched}
        if first is not None and set(first) != set(searched) - {"k"}:
            first = None                  # a searched parameter with no first value: drawn
        out.append(Family(fam.label, own, searched, first, fam.start_rank))
    return out or None
