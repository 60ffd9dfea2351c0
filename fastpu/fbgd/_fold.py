"""fBGD's row problem, for fold-in and partial fits: each new row with the item side fixed.

Plain ids: a weighted least-squares row (α⁺ on positives, α⁻_j on every other item), one k×k
Cholesky solve; with frequency-scaled regularisation (``params["nu"]`` > 0) the row's penalty is
lam (|P_x| + Σ_y α⁻_y)^ν from its own positives (a new row's α⁻_x is 1). With user features:
cold start, ``[Z V_user, Z w_user + w0, 1]`` (bias columns).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastpu._core import rows as row_problem
from fastpu._kernels import fbgd as K
from fastpu._kernels.csr import weighted_gram


def fold_rows(model: Any, Y: Any, X: Any, *, p: Any, q: Any, tol: float, max_iter: int,
              rng: np.random.Generator, dense_limit: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """The new rows' factors and the solver's report (see :func:`fastpu.fold_in`)."""
    row_problem.no_weights(model, p, q)
    prm, ex = model.params, model.extras
    row_problem.need_keys(model, params=("k", "biases"))
    f = int(prm["k"])
    biases = bool(prm["biases"])
    if prm.get("user_features") is not None:
        row_problem.need_keys(model, extras=("V_user",) + (("w_user", "w0") if biases else ()))
        Vu = row_problem.f64(ex["V_user"])
        X = row_problem.cold_start_features(X, Y, Vu.shape[0], "fbgd")
        P = row_problem.times(X, Vu)
        if biases:
            bias = row_problem.times(X, row_problem.f64(ex["w_user"])[:, None])[:, 0] + float(ex["w0"])
            P = np.column_stack([P, bias, np.ones(P.shape[0])])
        return P, {}
    Y = row_problem.need_rows(Y, X, method="fbgd")
    # the L2 penalty is params["lam"]; model files written before it was renamed hold "reg"
    penalty = "lam" if "lam" in prm or "reg" not in prm else "reg"
    row_problem.need_keys(model, params=("r_neg", penalty, "pos_weight", "r_pos"),
                          extras=("neg_weights",) + (("w0",) if biases else ()))
    Q = row_problem.f64(model.item_factors)
    n = Q.shape[0]
    neg = row_problem.f64(ex["neg_weights"])
    if neg.shape != (n,):
        raise ValueError(f"model.extras['neg_weights'] has shape {neg.shape}, expected ({n},) (one "
                         "per item); fold in a model returned by fastpu.fbgd.fit, not an edited one")
    r_neg, lam = float(prm["r_neg"]), float(prm[penalty])
    nu = float(prm.get("nu") or 0.0)        # files without it: one lam for every row
    apos = _per_positive(prm["pos_weight"], Y)
    rpos = _per_positive(prm["r_pos"], Y)
    if biases:
        # p_x = [V_x, w_x + w0, 1]: solve for u = (V_x, w_x + w0), penalty lam ‖u − u0‖²
        Qt, cvec = np.ascontiguousarray(Q[:, :f + 1]), Q[:, f + 1].copy()
        u0 = np.zeros(f + 1)
        u0[f] = float(ex["w0"])
    else:
        Qt, cvec, u0 = Q, np.zeros(n), np.zeros(f)
    g = Qt.shape[1]
    H0, sq = np.empty((g, g)), np.empty(g)
    weighted_gram(Qt, neg, H0, sq)
    b0 = Qt.T @ (neg * (r_neg - cvec))
    if nu == 0.0:               # one lam: part of H0 and b0 (lam_rows empty)
        H0 += lam * np.eye(g)
        b0 += lam * u0
        lam_rows = np.empty(0)
    else:                       # each row's own count: |P_x| + α⁻_x Σ_y α⁻_y with α⁻_x = 1
        lam_rows = row_problem.scaled_penalty(lam, nu, np.diff(Y.indptr) + float(neg.sum()))
    aneg, cy = neg[Y.indices], cvec[Y.indices]
    d = apos - aneg
    e = apos * (rpos - cy) - aneg * (r_neg - cy)
    U = np.empty((Y.shape[0], g))
    ok = np.empty(Y.shape[0], dtype=np.bool_)
    K.wls_rows(Y.indptr, Y.indices, d, e, Qt, H0, b0, lam_rows, u0, U, ok)
    for i in np.flatnonzero(~ok):           # singular (lam = 0): the minimum-norm minimiser
        lo, hi = Y.indptr[i], Y.indptr[i + 1]
        G = Qt[Y.indices[lo:hi]]
        H = H0 + (G.T * d[lo:hi]) @ G
        b = b0 + G.T @ e[lo:hi]
        if lam_rows.size:
            H = H + lam_rows[i] * np.eye(g)
            b = b + lam_rows[i] * u0
        U[i] = np.linalg.lstsq(H, b, rcond=None)[0]
    if biases:
        U = np.column_stack([U, np.ones(U.shape[0])])
    return U, {"singular_rows": np.flatnonzero(~ok)}


def _per_positive(value: Any, Y: Any) -> np.ndarray:
    if isinstance(value, str):            # "values": the stored values of Y_new, as in fit
        return Y.data.copy()
    return np.full(Y.nnz, float(value))
