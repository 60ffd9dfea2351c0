"""Nyström features for ocmf's feature-aware formulations (Yu et al., Section 4.3)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu._core.hints import Matrix, Seed

__all__ = ["NystromMap", "nystrom_features"]


@dataclasses.dataclass(frozen=True)
class NystromMap:
    """z = K^(-1/2) z̄ with z̄_t = exp(-γ‖c_t - x‖²) for K-means landmarks c_t.

    Attributes
    ----------
    centers : ndarray, shape (D, d)
    gamma : float
    k_inv_sqrt : ndarray, shape (D, D)
    """

    centers: np.ndarray
    gamma: float
    k_inv_sqrt: np.ndarray

    def transform(self, X: Matrix) -> np.ndarray:
        """Nyström features of the rows of ``X``.

        Parameters
        ----------
        X : ndarray or scipy.sparse matrix, shape (n_rows, d)
            Rows in the input space the map was fitted on (d columns, as its centres).

        Returns
        -------
        ndarray, shape (n_rows, n_landmarks)
            The approximate kernel feature map of each row, dense.

        Raises
        ------
        TypeError
            If ``X`` is not a dense array or a scipy.sparse matrix.
        ValueError
            If ``X`` does not have d columns, or has non-finite values.
        """
        if not (isinstance(X, np.ndarray) or sp.issparse(X)):
            raise TypeError(f"X must be a 2-d numpy array or a scipy.sparse matrix, got {type(X).__name__}")
        X = V.check_features(X, name="X", n_rows=X.shape[0])
        if X.shape[1] != self.centers.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns, expected {self.centers.shape[1]}")
        Zbar = np.exp(-self.gamma * _sq_dists(X, self.centers))
        return Zbar @ self.k_inv_sqrt


def _sq_dists(X: Matrix, C: np.ndarray) -> np.ndarray:
    if sp.issparse(X):
        xx = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        xc = np.asarray(X @ C.T)
    else:
        xx = np.einsum("ij,ij->i", X, X)
        xc = X @ C.T
    return np.maximum(xx[:, None] - 2.0 * xc + np.einsum("ij,ij->i", C, C)[None, :], 0.0)


def _kmeans(X: Matrix, D: int, rng: np.random.Generator, n_iter: int) -> np.ndarray:
    """Lloyd's algorithm with k-means++ seeding (deterministic for a Generator)."""
    m = X.shape[0]
    dense = X.toarray() if sp.issparse(X) and X.shape[1] <= 4096 else X
    first = rng.integers(m)
    C: Any = [np.asarray(dense[first].todense()).ravel() if sp.issparse(dense) else dense[first]]
    d2 = _sq_dists(X, np.array(C)).ravel()
    for _ in range(1, D):
        tot = d2.sum()
        idx = rng.integers(m) if tot <= 0 else int(rng.choice(m, p=d2 / tot))
        c = np.asarray(dense[idx].todense()).ravel() if sp.issparse(dense) else dense[idx]
        C.append(c)
        d2 = np.minimum(d2, _sq_dists(X, c[None, :]).ravel())
    C = np.array(C, dtype=np.float64)
    for _ in range(n_iter):
        assign = np.argmin(_sq_dists(X, C), axis=1)
        newC = C.copy()
        counts = np.bincount(assign, minlength=D)
        S = sp.csr_array((np.ones(m), (assign, np.arange(m))), shape=(D, m)) @ X
        S = S.toarray() if sp.issparse(S) else S
        nz = counts > 0
        newC[nz] = S[nz] / counts[nz, None]
        if np.allclose(newC, C):
            C = newC
            break
        C = newC
    return C


def nystrom_features(X: Matrix, n_landmarks: int = 500, *, gamma: float | None = None,
                     append: bool = True, n_kmeans_iter: int = 20, seed: Seed = 0,
                     eig_floor: float = 1e-8) -> tuple[Matrix, NystromMap]:
    """The K-means Nyström feature map of Section 4.3, and the transformed features.

    Parameters
    ----------
    X : array or sparse matrix, shape (m, d)
        Features.
    n_landmarks : int
        Number D of K-means centres (at most m).
    gamma : float, optional
        RBF parameter of K(x, y) = exp(-γ‖x - y‖²); default 1/σ² with σ² the variance of all
        feature values (the paper searches {0.5, 1, 2}/σ²).
    append : bool
        Return [X, z] (the paper appends z to x) instead of z alone.
    n_kmeans_iter : int
        Lloyd iterations.
    seed : int
        Seed of the K-means initialisation.
    eig_floor : float
        Eigenvalues of K below ``eig_floor`` · max eigenvalue are dropped in K^(-1/2).

    Returns
    -------
    features : ndarray or sparse matrix, shape (m, d + D) or (m, D)
    nmap : NystromMap
        Use ``nmap.transform(X_new)`` for new rows.

    Raises
    ------
    ValueError
        If ``n_landmarks`` is not in [1, m], ``gamma`` is not positive, or the centres and
        features would not fit in memory (the limit is ``FASTPU_MEMORY_LIMIT``, else the memory
        available).

    Examples
    --------
    >>> import numpy as np, fastpu as fp
    >>> X = np.random.default_rng(0).normal(size=(50, 4))
    >>> F, nmap = fp.ocmf.nystrom_features(X, 10)
    >>> F.shape
    (50, 14)
    """
    if X is None:
        raise TypeError("X must be an array or sparse matrix of features, got None")
    if np.ndim(X) != 2:
        raise ValueError(f"X must be a 2-dimensional feature matrix, got {np.ndim(X)} dimensions")
    X = V.check_features(X, name="X", n_rows=np.shape(X)[0])
    big = float(np.abs(X.data if sp.issparse(X) else X).max(initial=0.0))
    if big > 1e150:
        raise ValueError(f"X has values up to {big:g}, whose squared distances overflow; scale X")
    eig_floor = V.check_scalar(eig_floor, name="eig_floor", minimum=0.0, maximum=1.0)
    m = X.shape[0]
    D = V.check_int(n_landmarks, name="n_landmarks", minimum=1)
    if D > m:
        raise ValueError(f"n_landmarks must be at most the number of rows ({m}), got {D}")
    if gamma is None:
        vals = X.data if sp.issparse(X) else X.ravel()
        n_all = m * X.shape[1]
        mean = vals.sum() / n_all
        var = (np.sum(vals ** 2) / n_all) - mean ** 2
        gamma = 1.0 / var if var > 0 else 1.0
    gamma = V.check_scalar(gamma, name="gamma", minimum=0.0, strict_min=True)
    rng = V.check_seed(seed)
    d = X.shape[1]
    # dense centres (D × d, twice in Lloyd's step), the m × D distances and features, and a
    # sparse X of at most 4096 columns made dense for K-means
    densified = m * d if (sp.issparse(X) and d <= 4096) else 0
    check_alloc(8 * (2 * D * d + 3 * m * D + densified), what="nystrom_features (K-means centres, "
                "distances and the features)", names=("n_landmarks", "X"))
    C = _kmeans(X, D, rng, V.check_int(n_kmeans_iter, name="n_kmeans_iter", minimum=0))
    K = np.exp(-gamma * _sq_dists(C, C))
    evals, evecs = np.linalg.eigh((K + K.T) / 2)
    keep = evals > eig_floor * evals.max()
    k_inv_sqrt = (evecs[:, keep] / np.sqrt(evals[keep])) @ evecs[:, keep].T
    nmap = NystromMap(C, gamma, k_inv_sqrt)
    Zf = nmap.transform(X)
    if not append:
        return Zf, nmap
    if sp.issparse(X):
        return sp.csr_array(sp.hstack([X, sp.csr_array(Zf)])), nmap
    return np.hstack([X, Zf]), nmap

