"""CSRR-e's row problem, for fold-in and partial fits: p ∈ [0, 1/√k]^k and v ∈ [0, 1] on the user's
positives minimising the cost-sensitive loss + λ1/2‖p‖² + λ2‖v‖₁, by projected Newton with v
eliminated in closed form.
"""

from __future__ import annotations

from typing import Any

import math

import numpy as np
import scipy.sparse as sp

from fastpu._core import rows as row_problem
from fastpu._core import validation as V
from fastpu._kernels import csrr as K
from fastpu._kernels.csr import weighted_gram


def fold_rows(model: Any, Y: Any, X: Any, *, p: Any, q: Any, tol: float, max_iter: int,
              rng: np.random.Generator, dense_limit: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """The new rows' factors and sparse part (see :func:`fastpu.fold_in`)."""
    row_problem.no_weights(model, p, q)
    if getattr(model, "variant", "") != "e":
        raise ValueError(f"fold_in supports CSRR variant 'e' only; this model is CSRR-"
                         f"{getattr(model, 'variant', '?')}, whose dense low-rank U has no user "
                         "factor to fold in (refit with variant='e')")
    Y = row_problem.need_rows(Y, X, method="csrr")
    row_problem.need_keys(model, params=("alpha", "lam1", "lam2"))
    prm = model.params
    Q = row_problem.f64(model.item_factors)
    k = Q.shape[1]
    alpha, lam1, lam2 = float(prm["alpha"]), float(prm["lam1"]), float(prm["lam2"])
    c, target = (alpha, 1.0) if prm.get("loss", "I") == "I" else (1.0, alpha)
    Yb = _binary(Y)
    GQ, tmp = np.empty((k, k)), np.empty(k)
    weighted_gram(Q, np.ones(Q.shape[0]), GQ, tmp)
    hi = 1.0 / math.sqrt(k)
    m_new = Yb.shape[0]
    P = np.empty((m_new, k))
    pg, g0 = np.empty(m_new), np.empty(m_new)
    it = np.empty(m_new, dtype=np.int64)
    K.box_rows(Yb.indptr, Yb.indices, Q, GQ, lam1, c, target, lam2, hi, tol, max_iter, P, pg, g0, it)
    s = np.einsum("ij,ij->i", P[row_problem.rows_of(Yb)], Q[Yb.indices])
    v = np.clip(target - s - lam2 / c, 0.0, 1.0)
    Vnew = sp.csr_array((v, Yb.indices.copy(), Yb.indptr.copy()), shape=Yb.shape)
    Vnew.eliminate_zeros()
    info = row_problem.iter_info(pg, g0, it, tol)
    info["fields"] = {"V": Vnew}
    return P, info


def _binary(Y: Any) -> Any:
    """The positives of the canonical Y_new (``fastpu.fold_in`` checked it) as a canonical CSR of
    ones: stored values <= 0 are not positives."""
    keep = Y.data > 0
    m = Y.shape[0]
    counts = np.bincount(row_problem.rows_of(Y)[keep], minlength=m)
    indptr = np.zeros(m + 1, dtype=V.INDEX_DTYPE)
    np.cumsum(counts, out=indptr[1:])
    indices = np.ascontiguousarray(Y.indices[keep], dtype=V.INDEX_DTYPE)
    Yb = sp.csr_array((np.ones(indices.size), indices, indptr), shape=Y.shape)
    Yb.indptr, Yb.indices = indptr, indices      # scipy may pick its own index type
    return Yb
