"""What every method's row solver (fold-in, partial fits) needs from a model and from new rows.

A row problem is solved with the model's other side fixed; these helpers check that the model
carries the entries of ``params`` / ``extras`` the solver reads, that the rows or features given
fit the model, and build the small arrays every solver uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V


def need_keys(model: Any, params: tuple = (), extras: tuple = ()) -> None:
    """A ValueError naming the entries of model.params / model.extras this fold-in needs and lacks."""
    missing = ([f"model.params[{k!r}]" for k in params if k not in model.params]
               + [f"model.extras[{k!r}]" for k in extras if k not in model.extras])
    if missing:
        raise ValueError(f"fold_in of this {model.method} model needs {', '.join(missing)}, which it "
                         f"lacks; a model returned by fastpu.{model.method}.fit (or read by fastpu.load_model) "
                         "has them, so fold in that model rather than one built by hand or edited")


def need_rows(Y: Any, X: Any, *, method: str) -> Any:
    """Y_new alone for a model without user features, with a clear error otherwise."""
    if X is not None:
        raise ValueError(f"user_features was given but this {method} model was fitted without user "
                         "features; pass the new users' positives as Y_new")
    if Y is None:
        raise ValueError(f"Y_new is required: a {method} model without user features folds in new "
                         "users from their positives")
    return Y


def cold_start_features(X: Any, Y: Any, d: int, method: str) -> Any:
    if Y is not None:
        raise ValueError(f"this {method} model was fitted with user features: a user's factor is a "
                         "function of its features only (the row problem has no per-user "
                         "variable), so Y_new cannot change it; pass user_features alone")
    if X is None:
        raise ValueError(f"user_features is required: this {method} model was fitted with user "
                         f"features (expected a matrix with {d} columns)")
    if not sp.issparse(X):
        X = V.check_dense(X, name="user_features")       # lists too; 2-d, finite
    X = V.check_features(X, name="user_features", n_rows=X.shape[0])
    if X.shape[1] != d:
        raise ValueError(f"user_features has {X.shape[1]} columns, expected {d} (the model's "
                         "number of user features)")
    return X


def times(X: Any, W: Any) -> np.ndarray:
    out = X @ W
    return np.asarray(out, dtype=np.float64)


def rows_of(Y: Any) -> np.ndarray:
    return np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(Y.indptr))


def f64(A: Any) -> np.ndarray:
    return np.ascontiguousarray(A, dtype=np.float64)


def iter_info(gn: np.ndarray, g0: np.ndarray, it: np.ndarray, tol: float) -> dict[str, Any]:
    return dict(grad_norm=gn, grad_norm0=g0, n_iter=it, tol=tol, converged=gn <= tol * g0)


def no_weights(model: Any, p: Any, q: Any) -> None:
    """p and q are ocmf's unlabeled weights: refused for the other methods."""
    if p is not None or q is not None:
        raise ValueError(f"p and q are ocmf's unlabeled weights; a {model.method} model does not "
                         "use them (leave them None)")


#: the named rules for ocmf's per-user unlabeled weights ``p`` (besides an array)
P_SCHEMES = ("user-oriented",)


def user_oriented(counts: Any, mean: float | None = None) -> tuple[np.ndarray, float]:
    """Pan et al.'s user-oriented unlabeled weights (ICDM 2008): p_i = c_i / mean, with c_i
    the row's positives, counted as at least 1 (a user with none keeps a weight and a strictly
    convex row problem). ``mean``: the mean of the c_i of the rows the rule was fitted on
    (``None``: these rows', so that the p_i average 1). Returns (p, mean)."""
    c = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    if mean is None:
        mean = float(c.mean())
    return np.ascontiguousarray(c / float(mean)), float(mean)


def rule_weights(params: dict[str, Any], Y: Any) -> np.ndarray | None:
    """The unlabeled weights p of the rows of CSR ``Y`` (new or recomputed users) under the
    rule a model was fitted with (``params["p"]``, scaled by the fit's mean count
    ``params["p_mean"]``); None for a model fitted without a rule."""
    if params.get("p") != "user-oriented":
        return None
    return user_oriented(np.diff(Y.indptr), float(params["p_mean"]))[0]


def scaled_penalty(lam: float, nu: float, count: Any) -> np.ndarray:
    """Frequency-scaled regularisation (Rendle, Krichene, Zhang, Koren, 2022): row i's weight
    λ_i = lam · count_i^nu, where count_i is the weight the row's terms carry (its positives and
    its unlabeled mass; each method says which). With ``nu = 0`` the single value ``[lam]``:
    every row lam, the kernels' compact form, and not one bit different from a scalar lam."""
    if nu == 0.0:
        return np.array([float(lam)])
    with np.errstate(over="ignore"):
        out = float(lam) * np.power(np.asarray(count, dtype=np.float64), float(nu))
    return np.ascontiguousarray(out)
