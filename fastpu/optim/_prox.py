"""Proximal maps: singular value thresholding, soft-thresholding, box projection.

Each map solves a small optimisation problem in closed form:

- ``svt(M, tau)``           argmin_X ½‖X − M‖²_F + τ‖X‖_*   (shrink the singular values by τ)
- ``soft_threshold(x, tau)`` argmin_z ½‖z − x‖² + τ‖z‖₁        (shrink every entry towards 0 by τ)
- ``project_box(x, lo, hi)`` argmin_{lo ≤ z ≤ hi} ½‖z − x‖²     (clip)

``svt`` computes only the singular triplets above the threshold where that is cheaper: a
truncated SVD (ARPACK, through :func:`scipy.sparse.linalg.svds`) whose rank doubles until the
smallest computed singular value falls to τ or below — for a dense matrix accepted only with a
Cholesky certificate that no singular value above τ was missed — and a full decomposition
where the rank is a large fraction of the smaller dimension (or the matrix is small): for a
dense matrix the eigendecomposition of its Gram matrix when an a-posteriori error bound
shows it as accurate as the SVD to 1e-10·‖M‖₂, else LAPACK's SVD
(:mod:`fastpu.optim._svt_dense`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from fastpu._core import validation as V
from fastpu.optim import _svt_dense as SD
from fastpu._core.hints import ArrayLike, FloatArray, Seed

__all__ = ["SVTResult", "project_box", "soft_threshold", "svt", "svt_factors"]

# Below this smaller dimension a full SVD is cheaper than ARPACK.
_FULL_SVD_DIM = 64
# A truncated SVD asking for more than this fraction of min(m, n) triplets switches to a full SVD.
_FULL_SVD_FRACTION = 0.25


@dataclasses.dataclass(frozen=True)
class SVTResult:
    """Thresholded SVD ``X = left @ diag(s) @ right``, only singular values > 0 kept.

    Attributes
    ----------
    left : ndarray, shape (m, r)
        Left singular vectors (orthonormal columns).
    s : ndarray, shape (r,)
        Thresholded singular values ``σ_i − τ > 0``, in decreasing order.
    right : ndarray, shape (r, n)
        Right singular vectors (orthonormal rows).
    n_computed : int
        How many singular triplets were computed to pass the threshold.
    full : bool
        Whether a full SVD was used.
    """

    left: np.ndarray
    s: np.ndarray
    right: np.ndarray
    n_computed: int
    full: bool

    @property
    def rank(self) -> int:
        """Number of singular values left above zero."""
        return int(self.s.size)

    @property
    def nuclear_norm(self) -> float:
        """‖X‖_* = Σ s."""
        return float(self.s.sum())

    def dense(self) -> np.ndarray:
        """The thresholded matrix as a dense array.

        Returns
        -------
        ndarray, shape (m, n)
            ``left · diag(s) · right``: allocated in full, so only for matrices that fit.
        """
        return (self.left * self.s) @ self.right


def soft_threshold(x: ArrayLike, tau: float) -> Any:
    """Entrywise soft-thresholding ``sign(x) · max(|x| − τ, 0)``.

    It is the proximal map of ``τ‖·‖₁``: the unique minimiser of ½‖z − x‖² + τ‖z‖₁.

    Parameters
    ----------
    x : array-like or float
        Values to shrink (any shape; finite).
    tau : float
        Threshold, ``τ >= 0``.

    Returns
    -------
    ndarray or float
        Same shape as ``x`` (a float for a scalar ``x``), float64.

    Raises
    ------
    TypeError
        If ``x`` is not numeric or is complex, or ``tau`` is not a real number.
    ValueError
        If ``x`` has non-finite values or ``tau < 0``.

    Examples
    --------
    >>> from fastpu.optim import soft_threshold
    >>> soft_threshold([-2.0, 0.5, 3.0], 1.0)
    array([-1.,  0.,  2.])
    """
    tau = V.check_scalar(tau, name="tau", minimum=0.0)
    scalar = np.ndim(x) == 0
    arr = _as_values(x, "x")
    out = np.sign(arr) * np.maximum(np.abs(arr) - tau, 0.0) + 0.0   # + 0.0: no -0.0
    return float(out) if scalar else out


def project_box(x: ArrayLike, lo: float = 0.0, hi: float = 1.0) -> Any:
    """Euclidean projection onto the box ``lo <= z <= hi`` (entrywise clip).

    Parameters
    ----------
    x : array-like or float
        Values to project (any shape; finite).
    lo, hi : float
        Bounds with ``lo <= hi``.

    Returns
    -------
    ndarray or float
        Same shape as ``x`` (a float for a scalar ``x``), float64.

    Raises
    ------
    TypeError
        If ``x`` is not numeric or is complex, or a bound is not a real number.
    ValueError
        If ``x`` has non-finite values or ``lo > hi``.

    Examples
    --------
    >>> from fastpu.optim import project_box
    >>> project_box([-0.5, 0.3, 1.7], 0.0, 1.0)
    array([0. , 0.3, 1. ])
    """
    lo = V.check_scalar(lo, name="lo")
    hi = V.check_scalar(hi, name="hi")
    if lo > hi:
        raise ValueError(f"lo must be <= hi, got lo={lo:g} > hi={hi:g}")
    scalar = np.ndim(x) == 0
    arr = _as_values(x, "x")
    out = np.clip(arr, lo, hi)
    return float(out) if scalar else out


def svt(M: Any, tau: float, *, method: str = "auto", k0: int | None = None, seed: Seed = 0) -> FloatArray:
    """Singular value thresholding: the proximal map of ``τ‖·‖_*``.

    Returns ``X = L diag(max(σ − τ, 0)) R`` for the SVD ``M = L diag(σ) R``, the unique
    minimiser of ½‖X − M‖²_F + τ‖X‖_*. Only the singular triplets with σ > τ are
    computed (see :func:`svt_factors`).

    Parameters
    ----------
    M : ndarray, scipy.sparse matrix or scipy.sparse.linalg.LinearOperator, shape (m, n)
        The matrix to threshold. A linear operator needs ``matvec`` and ``rmatvec``.
    tau : float
        Threshold, ``τ >= 0``.
    method : {"auto", "truncated", "full"}
        ``"truncated"``: ARPACK with a growing rank (certified for a dense ``M``); ``"full"``:
        LAPACK SVD of the dense matrix; ``"auto"``: a full decomposition only where cheaper,
        for a dense ``M`` by its Gram matrix when that is shown accurate to 1e-10·‖M‖₂.
    k0 : int, optional
        First rank to try for the truncated SVD (e.g. the previous rank + a few).
    seed : int
        Seed of ARPACK's starting vector (results are deterministic for a fixed seed).

    Returns
    -------
    ndarray, shape (m, n)
        The thresholded matrix (dense; use :func:`svt_factors` to keep it factored).

    Raises
    ------
    TypeError
        If ``M`` is not a matrix or linear operator, has a complex dtype, or ``tau`` is not a
        real number.
    ValueError
        If ``M`` has non-finite values, ``tau < 0``, ``method`` is unknown, or the dense
        output would be too large.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu.optim import svt
    >>> M = np.diag([3.0, 1.0, 0.5])
    >>> np.round(np.diag(svt(M, 1.0)), 6)
    array([2., 0., 0.])
    """
    res = svt_factors(M, tau, method=method, k0=k0, seed=seed)
    m, n = res.left.shape[0], res.right.shape[1]
    V.check_dense_size(m, n, what="svt's dense output", alternative="svt_factors (factored output)")
    return res.dense()


def svt_factors(M: Any, tau: float, *, method: str = "auto", k0: int | None = None,
                seed: Seed = 0) -> SVTResult:
    """Singular value thresholding that returns the factors of the result.

    Parameters
    ----------
    M : ndarray, scipy.sparse matrix or scipy.sparse.linalg.LinearOperator, shape (m, n)
        The matrix to threshold.
    tau : float
        Threshold, ``τ >= 0``.
    method : {"auto", "truncated", "full"}
        As in :func:`svt`.
    k0 : int, optional
        First rank to try for the truncated SVD.
    seed : int
        Seed of ARPACK's starting vector.

    Returns
    -------
    SVTResult
        ``left``, ``s`` (only values > 0), ``right``; ``dense()`` gives the matrix.

    Raises
    ------
    TypeError
        If ``M`` is not a matrix or linear operator, has a complex dtype, or ``tau`` is not a
        real number.
    ValueError
        If ``M`` has non-finite values, ``tau < 0`` or ``method`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu.optim import svt_factors
    >>> r = svt_factors(np.diag([3.0, 1.0, 0.5]), 0.75)
    >>> r.rank, np.round(r.s, 6)
    (2, array([2.25, 0.25]))
    """
    tau = V.check_scalar(tau, name="tau", minimum=0.0)
    method = V.check_choice(method, name="method", choices=("auto", "truncated", "full"))
    if k0 is not None:
        k0 = V.check_k(k0, name="k0")
    rng = V.check_seed(seed)
    op, dense = _as_operator(M)
    return svt_operator(op, dense, tau, method=method, k0=k0, rng=rng)


def svt_operator(op: Any, dense: FloatArray | None, tau: float, *, method: str, k0: int | None,
                 rng: np.random.Generator) -> SVTResult:
    """SVT of a canonical operator, without validation (for fastpu's own solvers, whose inputs
    were checked at their boundary); ``dense`` is the ndarray or None.

    Truncated: ARPACK with a rank that doubles until the smallest computed singular value is
    at most τ; for a dense matrix the result is accepted only with the certificate of
    :func:`fastpu.optim._svt_dense.certified` (no singular value above τ was missed). Full: for
    ``method="auto"`` and a dense matrix the Gram eigendecomposition of
    :func:`fastpu.optim._svt_dense.gram_svt` when its error bound holds, else LAPACK's SVD.
    """
    m, n = op.shape
    p = min(m, n)
    if p == 0:
        return SVTResult(np.zeros((m, 0)), np.zeros(0), np.zeros((0, n)), 0, True)
    use_full = method == "full" or (method == "auto" and (p <= _FULL_SVD_DIM or tau == 0.0))
    k = min(p, 6 if k0 is None else k0)
    G = None
    while not use_full:
        if k >= p - 1 or (method == "auto" and k > _FULL_SVD_FRACTION * p):
            use_full = True
            break
        v0 = rng.standard_normal(p)
        try:
            L, s, R = spla.svds(op, k=k, tol=0, v0=v0, return_singular_vectors=True, solver="arpack")
        except spla.ArpackError:
            # ARPACK cannot start where the operator maps its start to zero: the zero matrix
            # (a thresholded iterate can be one) has every singular value 0 <= τ, rank 0
            if _is_zero(op, dense, rng):
                return SVTResult(np.zeros((m, 0)), np.zeros(0), np.zeros((0, n)), k, False)
            use_full = True             # anything else ARPACK refuses: the exact full route
            break
        order = np.argsort(s)[::-1]
        L, s, R = L[:, order], s[order], R[order]
        if s[-1] <= tau:
            top = float(s[0])
            keep = s > tau
            L, s, R = np.ascontiguousarray(L[:, keep]), s[keep] - tau, np.ascontiguousarray(R[keep])
            if dense is None:
                return SVTResult(L, s, R, k, False)
            At, flip = SD.oriented(dense)
            G = SD.gram(At) if G is None else G
            if SD.certified(G, R.T if flip else L, tau, top * top):
                return SVTResult(L, s, R, k, False)
        k = min(p - 1, 2 * k)
    A = dense if dense is not None else _materialise(op)
    if method == "auto" and tau > 0.0 and p > _FULL_SVD_DIM:
        part = SD.gram_svt(A, tau)
        if part is not None:
            return SVTResult(part[0], part[1], part[2], p, True)
    L, s, R = np.linalg.svd(A, full_matrices=False)
    keep = s > tau
    return SVTResult(np.ascontiguousarray(L[:, keep]), s[keep] - tau,
                     np.ascontiguousarray(R[keep]), int(s.size), True)


def _is_zero(op: Any, dense: FloatArray | None, rng: np.random.Generator) -> bool:
    """Whether the operator is the zero matrix (for an operator: zero on two random vectors,
    which a nonzero matrix is with probability 0)."""
    if dense is not None:
        return not dense.any()
    m, n = op.shape
    return not (np.any(op.matvec(rng.standard_normal(n))) or np.any(op.rmatvec(rng.standard_normal(m))))


def _materialise(op: Any) -> FloatArray:
    m, n = op.shape
    V.check_dense_size(m, n, what="a full SVD of the operator", alternative="method='truncated'")
    return np.ascontiguousarray(op.matmat(np.eye(n)))


def _as_values(x: Any, name: str) -> FloatArray:
    if sp.issparse(x):
        raise TypeError(f"{name} must be a dense array or a number, got a scipy.sparse {x.format} matrix")
    V.check_real(x, name=name)
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {type(x).__name__}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has {int(arr.size - np.isfinite(arr).sum())} non-finite (NaN or inf) values")
    return arr


def _as_operator(M: Any) -> tuple[Any, FloatArray | None]:
    """(LinearOperator, dense ndarray or None) for a dense array, sparse matrix or operator."""
    if isinstance(M, spla.LinearOperator):
        if len(M.shape) != 2:
            raise ValueError(f"M must be 2-dimensional, got shape {M.shape}")
        V.check_real(M, name="M")
        return M, None
    if sp.issparse(M):
        M = V.check_csr(M, name="M", nonnegative=False)
        _check_svd_range(M.data)
        return spla.aslinearoperator(M), None
    if not isinstance(M, (np.ndarray, list, tuple)):
        raise TypeError(
            f"M must be a dense array, a scipy.sparse matrix or a LinearOperator, got {type(M).__name__}"
        )
    A = V.check_dense(M, name="M")
    _check_svd_range(A)
    return spla.aslinearoperator(A), A


def _check_svd_range(A: np.ndarray) -> None:
    """An SVD squares the entries: refuse magnitudes whose squares overflow (the result would be NaN)."""
    big = float(np.abs(A).max(initial=0.0))
    if big > 1e150:
        raise ValueError(f"M has entries up to {big:g}, whose squares overflow in the SVD; scale M down")
