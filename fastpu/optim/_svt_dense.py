"""Singular value thresholding of a dense matrix: a Gram-matrix route and a certificate.

SVT(A, τ) = Σ_{σ_i > τ} (σ_i − τ) u_i v_iᵀ. With p = min(m, n) and G = A Aᵀ (p × p after
transposing A so that it has p rows; one BLAS-3 product):

* :func:`gram_svt` takes the symmetric eigendecomposition G = U Λ Uᵀ (LAPACK's divide and
  conquer, 2–3× cheaper than the SVD of the p × max(m, n) matrix itself) and the triplets
  (u_i, σ_i = √λ_i, v_i = Aᵀ u_i / σ_i) for λ_i > τ². These satisfy Aᵀ U = V Σ exactly and
  A V = U Σ + R with R = (G U − U Λ) Σ⁻¹, so A + E with E = −R Vᵀ has them as singular
  triplets and, SVT being non-expansive, the result is within ‖R‖_F of SVT(A, τ) (up to the
  rounding of the products). The route is taken only when the computed ‖R‖_F is at most
  ``tol``·σ_1 and the rounding of λ near τ² (about ε·σ_1², i.e. ε·σ_1²/τ in σ) is below the
  same bound (checked for the eigenvalues that lie that close to τ²); otherwise the caller
  runs the SVD.
* :func:`certified` proves that a truncated SVD missed no singular value above τ: if the
  computed triplets (U_r, Σ_r, V_r) have A V_r = U_r Σ_r + R with U_rᵀ R = 0, the part of
  A outside them, C = (I − U_r U_rᵀ) A (I − V_r V_rᵀ), has C Cᵀ ⪯ P G P (P = I − U_r U_rᵀ);
  so a successful Cholesky factorisation of τ'² I − P G P shows ‖C‖₂ < τ', where τ' exceeds
  τ by a relative 1e-8 and the rounding of G (ties at τ contribute nothing to the SVT).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from fastpu._core.hints import FloatArray

#: Accepted error bound of the Gram route, relative to σ_1 = ‖A‖₂.
TOL = 1e-10

_EPS = float(np.finfo(np.float64).eps)


def oriented(A: FloatArray) -> tuple[FloatArray, bool]:
    """(A or Aᵀ with min(m, n) rows, whether it was transposed)."""
    return (A.T, True) if A.shape[0] > A.shape[1] else (A, False)


def gram(At: FloatArray) -> FloatArray:
    """G = At Atᵀ (symmetric, both triangles)."""
    return At @ At.T


def gram_svt(A: FloatArray, tau: float, *,
             tol: float = TOL) -> tuple[FloatArray, FloatArray, FloatArray] | None:
    """SVT(A, τ) of a dense A via the eigendecomposition of its Gram matrix.

    Returns ``(left, values, right)`` with values = σ − τ > 0 in decreasing order, or
    ``None`` when the a-posteriori error bound exceeds ``tol``·σ_1 (use the SVD).
    """
    m, n = A.shape
    At, flip = oriented(A)
    p = At.shape[0]
    G = gram(At)
    w, U = sla.eigh(G, driver="evd", check_finite=False)
    lam1 = max(float(w[-1]), 0.0) if w.size else 0.0
    sigma1 = np.sqrt(lam1)
    if sigma1 == 0.0:
        return np.zeros((m, 0)), np.zeros(0), np.zeros((0, n))
    # a λ within the rounding of G (δλ) of τ² may be on the wrong side: its σ − τ is then
    # at most δλ / (2τ); refuse when those could add up to more than the tolerance
    dlam = 8.0 * p * _EPS * lam1
    near = int(np.count_nonzero(np.abs(w - tau * tau) <= dlam))
    if near and (tau == 0.0 or np.sqrt(near) * dlam / (2.0 * tau) > tol * sigma1):
        return None
    keep = np.flatnonzero(w > tau * tau)[::-1]          # decreasing
    lam = w[keep]
    sig = np.sqrt(lam)
    Ur = U[:, keep]
    res = G @ Ur
    res -= Ur * lam
    res /= sig
    if float(np.linalg.norm(res)) > tol * sigma1:
        return None
    Vt = Ur.T @ At
    Vt /= sig[:, None]
    vals = sig - tau
    good = vals > 0
    Ur, Vt, vals = Ur[:, good], Vt[good], vals[good]
    if flip:
        return np.ascontiguousarray(Vt.T), vals, np.ascontiguousarray(Ur.T)
    return np.ascontiguousarray(Ur), vals, np.ascontiguousarray(Vt)


def certified(G: FloatArray, U: FloatArray, tau: float, lam1: float) -> bool:
    """Whether every singular value of A outside the triplets with left vectors U is below τ'.

    ``G`` = A Aᵀ in the orientation of ``U`` (p × p), ``U`` (p × r) orthonormal, ``lam1`` ≈
    σ_1². Cholesky of τ'² I − P G P with P G P = G − U Yᵀ − Y Uᵀ, Y = G U − ½ U (Uᵀ G U)
    (one rank-2r update).
    """
    p = G.shape[0]
    tau2 = tau * tau * (1.0 + 2e-8) + 8.0 * p * _EPS * lam1
    if U.shape[1]:
        GU = G @ U
        Y = GU - 0.5 * (U @ (U.T @ GU))
        M = sla.blas.dsyr2k(1.0, U, Y, beta=-1.0, c=G, lower=1)    # U Yᵀ + Y Uᵀ − G
    else:
        M = -G
    M[np.diag_indices_from(M)] += tau2
    _, info = sla.lapack.dpotrf(M, lower=1, overwrite_a=1, clean=0)
    return bool(info == 0)
