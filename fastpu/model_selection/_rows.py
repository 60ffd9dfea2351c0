"""Held-out instances for :mod:`fastpu.select` and :mod:`fastpu.compare` (paper 002's protocol).

In multi-label learning the rows of Y are instances with feature vectors. The protocol holds
out whole rows: a model is fitted on the other rows (their labels and features), and a
held-out row's labels are ranked from its features alone, by cold start
(:func:`fastpu.fold_in` with ``user_features``: ``x W Hᵀ`` for ocmf). Rows without any
positive are never held out (their nDCG would be 0/0); they stay with the fitted rows.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from fastpu._core import registry
from fastpu._core import validation as V
from fastpu._core.dataset import Dataset
from fastpu.model import fold_in
from fastpu._core.hints import IntArray, Matrix, Sparse, Threads
from fastpu.model_selection.metrics import evaluate

SPLITS = ("entries", "rows")
#: Methods refused with split="rows": their fitted models cannot score a row from features.
NO_COLD_START = {e.name: e.cold_start for e in registry.entries() if e.cold_start is not None}


def names_features(fit: Callable[..., Any]) -> bool:
    """Whether ``fit`` names ``user_features`` among its parameters (``**kwargs`` does not)."""
    return "user_features" in inspect.signature(fit).parameters


def all_rows() -> tuple[str, ...]:
    """compare's ``methods="all"`` with ``split="rows"``: the registry's baselines that need no
    optional package, then its methods, those whose fits name user features and whose models
    score a new row from them (no ``cold_start`` reason against it)."""
    return tuple(e.name for kind in ("baseline", "method") for e in registry.entries(kind)
                 if e.requires is None and e.cold_start is None
                 and names_features(e.resolve("fit")))


def check_split(split: Any) -> str:
    """``split`` as one of :data:`SPLITS`."""
    if not isinstance(split, str):
        raise TypeError(f"split must be 'entries' or 'rows', got {split!r}")
    return V.check_choice(split, name="split", choices=SPLITS)


def check_method(name: str, fit: Callable[..., Any]) -> None:
    """Raise unless ``fit`` takes user features and its models allow a cold start."""
    if name in NO_COLD_START:
        raise ValueError(f"split='rows' scores held-out rows by cold start from their features, "
                         f"which {name} does not support: {NO_COLD_START[name]}; use ocmf or fbgd "
                         "with user_features, or split='entries'")
    params = inspect.signature(fit).parameters
    if "user_features" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise ValueError(f"split='rows' fits on user_features, but {name} does not take "
                         "user_features; use ocmf or fbgd, or split='entries'")


def with_features(fixed: dict[str, Any], data: Any, m: int, *, what: str = "search") -> dict[str, Any]:
    """``fixed`` with ``user_features`` checked: given, else the Dataset's; required."""
    X = fixed.get("user_features")
    if X is None and isinstance(data, Dataset):
        X = data.user_features
    if X is None:
        raise ValueError(f"{what} with split='rows' needs user_features (one feature row per row "
                         f"of Y; held-out rows are scored from them): pass user_features=X, or a "
                         "Dataset that has user_features")
    return {**fixed, "user_features": V.check_features(X, name="user_features", n_rows=m)}


def positive_rows(Y: Sparse) -> IntArray:
    """Rows of canonical CSR ``Y`` with at least one non-zero stored value."""
    rows = np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(Y.indptr))
    counts = np.bincount(rows[Y.data != 0], minlength=Y.shape[0])
    return np.flatnonzero(counts > 0)


def holdout_rows(Y: Sparse, frac: float, seed: int, *, name: str) -> tuple[IntArray, IntArray]:
    """(kept rows, held-out rows), sorted: ``round(frac · r)`` of the r rows with a positive.

    Raises a ValueError naming ``name`` (the fraction's argument) when that holds out no row or
    every row with a positive.
    """
    cand = positive_rows(Y)
    n_out = int(round(frac * cand.size))
    if n_out < 1 or n_out >= cand.size:
        raise ValueError(f"{name}={frac:g} of the {cand.size} rows of Y that have a positive holds "
                         f"out {n_out} rows; split='rows' needs at least one held-out row and one "
                         "kept row with a positive (change the fraction or use more rows)")
    rng = np.random.default_rng(seed)
    out = np.sort(rng.choice(cand, size=n_out, replace=False)).astype(np.int64)
    keep = np.setdiff1d(np.arange(Y.shape[0], dtype=np.int64), out)
    return keep, out


def explicit_rows(validation: tuple[Any, ...], Y: Sparse) -> tuple[IntArray, IntArray]:
    """Checked ``validation=(rows_fit, rows_valid)`` index arrays."""
    if len(validation) != 2:
        raise ValueError(f"validation must be a fraction or a pair (rows_fit, rows_valid), got "
                         f"{len(validation)} items")
    m = Y.shape[0]
    fit = V.check_indices(validation[0], name="validation[0] (rows_fit)", size=m, size_from="rows of Y")
    valid = V.check_indices(validation[1], name="validation[1] (rows_valid)", size=m, size_from="rows of Y")
    if np.intersect1d(fit, valid).size:
        raise ValueError("validation=(rows_fit, rows_valid) must be disjoint row indices; "
                         f"{np.intersect1d(fit, valid).size} rows are in both")
    if fit.size == 0:
        raise ValueError("validation[0] (rows_fit) is empty; give the rows the fits may see")
    if np.intersect1d(valid, positive_rows(Y)).size == 0:
        raise ValueError("validation[1] (rows_valid) has no row with a positive; nothing to score")
    return fit, valid


def take_rows(X: Matrix, rows: IntArray) -> Matrix:
    """Rows of a dense array or a CSR matrix (a CSR again)."""
    if sp.issparse(X):
        return sp.csr_array(X[rows])
    return np.ascontiguousarray(X[rows])


def cold_start(model: Any, X: Matrix, n_threads: Threads = None) -> Any:
    """The model's factors for new rows from their features alone (WRMF as its ocmf model)."""
    if getattr(model, "method", None) == "wrmf":
        new = fold_in(dataclasses.replace(model, method="ocmf"), user_features=X, n_threads=n_threads)
        return dataclasses.replace(new, method="wrmf")
    return fold_in(model, user_features=X, n_threads=n_threads)


def cold_scores(model: Any, X: Matrix, Y_rows: Sparse, ks: Any, metrics: Any,
                n_threads: Threads = None) -> dict[str, float]:
    """:func:`fastpu.evaluate` of the held-out rows ``Y_rows`` scored from their features ``X``."""
    new = cold_start(model, X, n_threads)
    empty = sp.csr_array(Y_rows.shape, dtype=np.float64)
    return evaluate(new, empty, Y_rows, k=ks, metrics=metrics, n_threads=n_threads)
