"""ocmf's row problem, for fold-in and partial fits: each new row with the item side fixed.

Without user features a new user's w minimises Σ_{j∈Ω+} ℓ⁺_j(w·e_j) + p (wᵀMw − 2ā wᵀκ) + λ‖w‖²
with M = Eᵀdiag(q)E, κ = Eᵀq (``negatives="full"``); with ``"sampled"`` the loss runs over the
positives and round(neg_ratio·|Ω+_i|) sampled unobserved items, with ``"full_logistic"`` over
every item. Newton's method with the exact k×k Hessian; for the square loss the first step is
the exact k×k linear solve. A user graph adds nothing: a new user has no edges. With user
features the factor is ``user_features @ W`` (cold start), with the column of ones appended
first when the model was fitted with ``intercept``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastpu._core import rows as row_problem
from fastpu._core import validation as V
from fastpu._kernels import ocmf as K
from fastpu._kernels.csr import weighted_gram
from fastpu._kernels.losses import LOSS_CODES, LOSSES
from fastpu.ocmf._check import with_intercept
from fastpu.ocmf._problem import loss_entries, negative_entries

#: fold-in's line search tries more step lengths than a fit's (its rows start from w = 0)
FOLD_BACKTRACKS = 60


def fold_rows(model: Any, Y: Any, X: Any, *, p: Any, q: Any, tol: float, max_iter: int,
              rng: np.random.Generator, dense_limit: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """The new rows' factors and the solver's report (see :func:`fastpu.fold_in`).

    A new row's regularisation weight is the fitted users' rule applied to its own row: λ_w,
    or with frequency-scaled regularisation (``params["nu"]`` > 0) λ_w (|Ω+_i| + ρ p_i Σ_j
    q_j)^ν from its own positives; with ``p=None`` and a model fitted with
    ``p="user-oriented"``, p_i is that rule applied to its own positives."""
    prm = model.params
    if prm.get("user_features"):
        if p is not None or q is not None:
            raise ValueError("p and q are not used for a model with user features (cold start)")
        row_problem.need_keys(model, extras=("W",))
        W = row_problem.f64(model.extras["W"])
        ones = bool(prm.get("intercept"))        # W's last row multiplies the ones column
        X = row_problem.cold_start_features(X, Y, W.shape[0] - ones, "ocmf")
        return row_problem.times(with_intercept(X, ones), W), {}
    Y = row_problem.need_rows(Y, X, method="ocmf")
    row_problem.need_keys(model, params=("loss", "a_bar", "lam", "rho")
               + (("neg_ratio",) if prm.get("negatives") == "sampled" else ()))
    E = row_problem.f64(model.item_factors)
    m_new, n = Y.shape
    k = E.shape[1]
    q = V.check_vector(model.extras.get("q") if q is None else q, name="q", size=n)
    if p is None:       # the fit's rule (if any) on the new rows' own positives
        p = row_problem.rule_weights(prm, Y)
    p = V.check_vector(p, name="p", size=m_new)
    kind = LOSS_CODES[V.check_choice(prm["loss"], name="model.params['loss']", choices=LOSS_CODES)]
    # the users' side is regularised by λ_w (lam_w; lam when the model has none)
    lam_w = prm.get("lam_w")
    abar, lam, rho = float(prm["a_bar"]), float(prm["lam"] if lam_w is None else lam_w), float(prm["rho"])
    nu = float(prm.get("nu") or 0.0)
    pw = rho * p
    lam_rows = row_problem.scaled_penalty(lam, nu, np.diff(Y.indptr) + pw * float(q.sum()))
    negatives = prm.get("negatives", "full")
    info = {}
    if negatives in ("full", "all"):
        indptr, indices = Y.indptr, Y.indices
        labels = np.ones(Y.nnz)
        weights = Y.data.copy()
        corr = pw[row_problem.rows_of(Y)] * q[Y.indices] if negatives == "full" else \
            np.zeros(Y.nnz)
        M, kappa = np.empty((k, k)), np.empty(k)
        weighted_gram(E, q, M, kappa)
        p_quad = pw
    else:
        neg = negative_entries(Y, negatives, float(prm.get("neg_ratio", 1.0)), rng, dense_limit,
                               what='fold_in of a negatives="full_logistic" model',
                               alternative="fewer new users per call")
        if negatives == "sampled":
            info["negatives"] = neg
        indptr, indices, labels, weights = loss_entries(Y, neg, pw, q, abar)
        corr = np.zeros(indices.size)
        M, kappa, p_quad = np.zeros((k, k)), np.zeros(k), np.zeros(m_new)
    W = np.empty((m_new, k))
    gn, g0 = np.empty(m_new), np.empty(m_new)
    it = np.empty(m_new, dtype=np.int64)
    opts = K.RowOptions(newton_steps=max_iter, grad_tol=tol, backtracks=FOLD_BACKTRACKS)
    K.newton_rows(kind, indptr, indices, labels, weights, corr, abar, E, M, kappa, p_quad,
                  lam_rows, opts, W, gn, g0, it)
    info.update(row_problem.iter_info(gn, g0, it, tol))
    info["square"] = LOSSES[prm["loss"]].quadratic
    return W, info
