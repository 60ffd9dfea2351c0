"""ocmf's row problem, for fold-in and partial fits: each new row with the item side fixed.

Without user features a new user's w minimises Σ_{j∈Ω+} ℓ⁺_j(w·e_j) + p (wᵀMw − 2ā wᵀκ) + λ‖w‖²
with M = Eᵀdiag(q)E, κ = Eᵀq (``negatives="full"``); with ``"sampled"`` the loss runs over the
positives and round(neg_ratio·|Ω+_i|) sampled unobserved items, with ``"full_logistic"`` over
every item. Newton's method with the exact k×k Hessian; for the square loss the first step is
the exact k×k linear solve. A user graph adds nothing: a new user has no edges. With user
features the factor is ``user_features @ W`` (cold start).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import rows as row_problem
from fastpu._core import validation as V
from fastpu._kernels import ocmf as K
from fastpu._kernels.csr import weighted_gram
from fastpu._kernels.losses import LOSS_CODES, SQUARE
from fastpu.ocmf._problem import _sample_negatives


def fold_rows(model: Any, Y: Any, X: Any, *, p: Any, q: Any, tol: float, max_iter: int,
              rng: np.random.Generator, dense_limit: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """The new rows' factors and the solver's report (see :func:`fastpu.fold_in`)."""
    prm = model.params
    if prm.get("user_features"):
        if p is not None or q is not None:
            raise ValueError("p and q are not used for a model with user features (cold start)")
        row_problem.need_keys(model, extras=("W",))
        W = row_problem.f64(model.extras["W"])
        X = row_problem.cold_start_features(X, Y, W.shape[0], "ocmf")
        return row_problem.times(X, W), {}
    Y = row_problem.need_rows(Y, X, method="ocmf")
    row_problem.need_keys(model, params=("loss", "a_bar", "lam", "rho")
               + (("neg_ratio",) if prm.get("negatives") == "sampled" else ()))
    E = row_problem.f64(model.item_factors)
    m_new, n = Y.shape
    k = E.shape[1]
    q = V.check_vector(model.extras.get("q") if q is None else q, name="q", size=n)
    p = V.check_vector(p, name="p", size=m_new)
    kind = LOSS_CODES[V.check_choice(prm["loss"], name="model.params['loss']", choices=LOSS_CODES)]
    # the users' side is regularised by λ_w (lam_w; lam when the model has none)
    lam_w = prm.get("lam_w")
    abar, lam, rho = float(prm["a_bar"]), float(prm["lam"] if lam_w is None else lam_w), float(prm["rho"])
    pw = rho * p
    negatives = prm.get("negatives", "full")
    info = {}
    if negatives == "full":
        indptr, indices = Y.indptr, Y.indices
        labels = np.ones(Y.nnz)
        weights = Y.data.copy()
        corr = pw[row_problem.rows_of(Y)] * q[Y.indices]
        M, kappa = np.empty((k, k)), np.empty(k)
        weighted_gram(E, q, M, kappa)
        p_quad = pw
    else:
        if negatives == "full_logistic":
            V.check_dense_size(m_new, n, what='fold_in of a negatives="full_logistic" model',
                               alternative="fewer new users per call", limit=dense_limit)
            neg = sp.csr_array(np.ones((m_new, n))) - (Y != 0).astype(np.float64)
            neg = V.check_csr(sp.csr_array(neg), name="negatives")
            neg.eliminate_zeros()
        else:
            neg = _sample_negatives(Y, float(prm["neg_ratio"]), rng)
            info["negatives"] = neg
        pos = sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=Y.shape)
        both = V.check_csr(pos + 2.0 * neg, name="entries")
        is_pos = both.data == 1.0
        rows = row_problem.rows_of(both)
        labels = np.where(is_pos, 1.0, abar)
        weights = np.where(is_pos, 0.0, pw[rows] * q[both.indices])
        weights[is_pos] = Y.data
        indptr, indices = both.indptr, both.indices
        corr = np.zeros(both.nnz)
        M, kappa, p_quad = np.zeros((k, k)), np.zeros(k), np.zeros(m_new)
    W = np.empty((m_new, k))
    gn, g0 = np.empty(m_new), np.empty(m_new)
    it = np.empty(m_new, dtype=np.int64)
    K.newton_rows(kind, indptr, indices, labels, weights, corr, abar, E, M, kappa, p_quad, lam,
                  tol, max_iter, W, gn, g0, it)
    info.update(row_problem.iter_info(gn, g0, it, tol))
    info["square"] = kind == SQUARE
    return W, info
