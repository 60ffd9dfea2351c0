"""What a partial fit needs to know of each method beyond its row solver (named by the registry).

A partial fit recomputes rows of one side with the other side fixed, by the method's fold-in row
solver (``fastpu.<method>._fold``). For the user side that is the solver as it is. For the item
side it is the same solver on the model with the roles of users and items exchanged
(:meth:`Sides.swap`), where the method's item-side problem is a row problem of the same kind;
where it is not, ``swap`` refuses in a sentence that says why and what to do instead. A method
whose model keeps per-row parts besides the factors (fBGD's ``V_user`` and biases, HOMF's full
``U``) brings them up to date in :meth:`Sides.rows_changed`.

Each method's entry in ``fastpu._core.registry`` names its object here (``partial``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fastpu._core.factorization import Factorization

__all__ = ["Sides"]   # and one instance per method, named in the registry


class Sides:
    """The default: users and items swap by exchanging the factors; no other per-row parts."""

    #: per side, the params that say the side has features (no per-row variable: cold start)
    features = {"user": ("user_features",), "item": ("item_features",)}
    #: per side, the params that say the side has a graph coupling its rows
    graphs = {"user": ("has_user_graph", "user_graph"), "item": ("has_item_graph", "item_graph")}

    def swap(self, model: Factorization, p: Any) -> Factorization:
        """The model with users and items exchanged (its user side is the item side)."""
        raise NotImplementedError

    def fitted_users(self, model: Factorization) -> int:
        """How many leading user rows the solver's model must have (default: all of them)."""
        return model.shape[0]

    def rows_changed(self, model: Factorization, side: str, old: int,
                     positions: np.ndarray, factors: np.ndarray) -> dict[str, Any]:
        """Changes to ``model.extras`` after rows ``positions`` of ``side`` became ``factors``
        (positions >= ``old`` are appended rows)."""
        return {}


class _Ocmf(Sides):
    """ocmf's objective is symmetric: Yᵀ with p ↔ q, X ↔ Z, λ_w ↔ λ_h, user ↔ item graph."""

    def swap(self, model: Factorization, p: Any) -> Factorization:
        prm = dict(model.params)
        for a, b in (("lam_w", "lam_h"), ("user_features", "item_features"),
                     ("has_user_graph", "has_item_graph")):
            prm[a], prm[b] = model.params.get(b), model.params.get(a)
        prm.pop("p", None)                       # a users' rule does not apply to items
        prm.pop("p_mean", None)
        extras = {key: v for key, v in model.extras.items() if key not in ("p", "q", "W", "H")}
        if p is None:
            p = model.extras.get("p")            # the fit's users' weights (p="user-oriented")
        if p is not None:
            extras["q"] = p                      # the fixed side's (users') weights
        if "H" in model.extras:
            extras["W"] = model.extras["H"]
        return Factorization(model.item_factors, model.user_factors, params=prm,
                             method=model.method, extras=extras)


class _Csrr(Sides):
    """CSRR-e's objective is symmetric in P and Q (the same λ1 and box), V transposes."""

    def swap(self, model: Factorization, p: Any) -> Factorization:
        Vt = getattr(model, "V", None)
        return dataclasses.replace(model, user_factors=model.item_factors,  # type: ignore[call-arg]
                                   item_factors=model.user_factors,
                                   V=None if Vt is None else Vt.T.tocsr())


class _Fbgd(Sides):
    def swap(self, model: Factorization, p: Any) -> Factorization:
        raise ValueError(
            "partial_fit_items refuses fBGD models: an item's unobserved pairs are weighted by "
            "the item's own α⁻ (eq. 22), a function of every item's frequency among all "
            "positives, so an item's new interactions change its weight and every other item's; "
            "its row is not a row problem with the other side fixed, as a user's is. Refit on the "
            "updated data (fastpu.fbgd.fit(Y, k, init=fastpu.fbgd.parameters(model)) warm-starts "
            "from this model when the items are the same); partial_fit_users works")

    def rows_changed(self, model: Factorization, side: str, old: int,
                     positions: np.ndarray, factors: np.ndarray) -> dict[str, Any]:
        ex = model.extras
        if side != "user" or "V_user" not in ex:
            return {}
        f = int(model.params["k"])
        biases = bool(model.params.get("biases"))
        out: dict[str, Any] = {}
        parts = {"V_user": factors[:, :f]}
        if biases and "w_user" in ex:
            parts["w_user"] = factors[:, f] - float(ex["w0"])
        for key, rows in parts.items():
            cur = np.asarray(ex[key])
            grown = np.concatenate([cur, np.zeros((positions.max(initial=old - 1) + 1 - old,)
                                                  + cur.shape[1:], dtype=cur.dtype)])
            grown[positions] = rows
            out[key] = grown
        return out


class _Homf(Sides):
    def swap(self, model: Factorization, p: Any) -> Factorization:
        raise ValueError(
            "partial_fit_items refuses HOMF models: an item's factor (its row of V) is fitted to "
            "the walks that end at the item, and those start from the users' transition rows, "
            "which a new or changed item changes (each is normalised to sum 1 over the user's "
            "items); every node's walks change, so the item's row is not a row problem with the "
            "other side fixed. Refit with fastpu.homf.fit on the updated data; "
            "partial_fit_users works")

    def fitted_users(self, model: Factorization) -> int:
        A = model.extras.get("A")
        return model.shape[0] if A is None else int(A.shape[0]) - model.shape[1]

    def rows_changed(self, model: Factorization, side: str, old: int,
                     positions: np.ndarray, factors: np.ndarray) -> dict[str, Any]:
        if side != "user" or "U" not in model.extras:
            return {}
        fitted = self.fitted_users(model)
        inside = positions < fitted                 # nodes of the trained graph
        if not inside.any():
            return {}
        U = np.array(model.extras["U"], copy=True)
        U[positions[inside]] = factors[inside]
        return {"U": U}


ocmf = _Ocmf()
fbgd = _Fbgd()
csrr = _Csrr()
homf = _Homf()
