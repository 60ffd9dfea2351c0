"""Item-item baselines: EASE (Steck, "Embarrassingly Shallow Autoencoders for Sparse Data",
WWW 2019) and item-kNN with cosine similarities. Both score a user's items as ``x_u B``: the
user's positives (0/1) times an n×n item-item matrix B.

EASE's B minimises ‖X − X B‖²_F + λ‖B‖²_F subject to diag(B) = 0, in closed form::

    P = (XᵀX + λI)⁻¹,   B = I − P · diagMat(1 / diag(P))   (so B_ij = −P_ij / P_jj, B_jj = 0).

Item-kNN's B holds each item's cosine similarity to the others, c_ij = (XᵀX)_ij / (‖x_i‖ ‖x_j‖ +
shrink), zero on the diagonal, keeping for each item j only its ``n_neighbors`` most similar items.

B is dense n×n (8n² bytes, about three times that while it is computed): both refuse, before
allocating, a catalogue whose matrix would not fit in the available memory (or
``FASTPU_MEMORY_LIMIT``), naming the number of items and the bytes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from fastpu._core import rows as row_problem
from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu._core.dataset import Dataset
from fastpu._core.factorization import Factorization, accepts_dataset
from fastpu._core.hints import ArrayLike, Callback, Seed, Sparse, Threads
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu._kernels.topk import topk_rows

__all__ = ["ItemItemModel", "ease", "item_knn"]


@dataclasses.dataclass(frozen=True)
class ItemItemModel(Factorization):
    """A fitted item-item model: score(i, j) = Σ_l X_il B_lj, the user's positives times B.

    Attributes
    ----------
    X : scipy.sparse.csr_array, shape (m, n)
        The users' positives (0/1): the rows the scores are made from.
    item_factors : ndarray, shape (n, n)
        The item-item matrix B (its property ``B``): row l holds how item l's presence scores
        every item; the diagonal is zero (an item does not recommend itself).
    user_factors : ndarray, shape (m, 0)
        Empty: an item-item model has no user vectors (``similar_users`` is refused).

    :func:`fastpu.fold_in` gives new users their rows of X (their scores are x B), and
    :func:`fastpu.similar_items` compares the rows of B by cosine.
    """

    X: Sparse | None = None

    def scores_are_products(self) -> bool:
        """False: the scores are X B (the factors are an empty user side and B).

        Returns
        -------
        bool
        """
        return False

    @property
    def B(self) -> np.ndarray:
        """The n×n item-item matrix (``item_factors``)."""
        return self.item_factors

    @property
    def shape(self) -> tuple[int, int]:
        """(number of users, number of items)."""
        return (self._rows().shape[0], self.item_factors.shape[0])

    def _rows(self) -> Sparse:
        if self.X is None:
            raise ValueError("this ItemItemModel has no X (the users' positives its scores are "
                             "made from); a model from ease or item_knn has it")
        return self.X

    def scores(self, users: ArrayLike | None = None) -> np.ndarray:
        """Dense score rows X[users] B.

        Parameters
        ----------
        users : array-like of int, optional
            Row indices in ``[0, m)`` (all users when ``None``).

        Returns
        -------
        ndarray, shape (len(users), n)

        Raises
        ------
        TypeError, ValueError
            If ``users`` are not valid row indices.

        Examples
        --------
        >>> import numpy as np, scipy.sparse as sp
        >>> from fastpu import baselines
        >>> Y = sp.csr_array(np.array([[1.0, 1, 0], [0, 1, 1], [1, 0, 1]]))
        >>> baselines.ease(Y, lam=1.0).scores([0]).shape
        (1, 3)
        """
        users = V.check_users(users, self.shape[0])
        X = self._rows()[users]
        return np.asarray(X @ self.item_factors, dtype=np.float64)


def _check_rank(k: Any, name: str) -> None:
    if k is not None:
        raise TypeError(f"{name} has no rank: its scores are x B with an n×n item-item matrix B; "
                        f"leave k out (got k={k!r})")


def _start(name: str, Y: Any, n_iter: Any, seed: Any, callback: Callback,
           verbose: Any) -> tuple[Sparse, Progress]:
    """The checks both item-item fits share, after their own: (X, the 0/1 pattern of Y, and the
    fit's progress). ``n_iter`` and ``seed`` are checked and unused (closed forms)."""
    V.check_int(n_iter, name="n_iter", minimum=1)
    V.check_seed(seed)
    callback = V.check_callback(callback)
    verbose = V.check_verbose(verbose)
    X = V.check_trainable(_binary(Y))
    return X, Progress(name, verbose=verbose, callback=callback)


def _gram(X: Sparse, n_threads: Threads, name: str) -> np.ndarray:
    """XᵀX as a dense float64 n×n matrix, after the memory check of the n×n work."""
    n = X.shape[1]
    check_alloc(3 * 8 * n * n, what=f"{name}'s n×n item-item matrix ({n:,} items)",
                names=("the number of items (columns of Y)",))
    return np.asarray((X.T @ X).toarray(), dtype=np.float64)


def _wrap(name: str, X: Sparse, B: np.ndarray, params: dict[str, Any], progress: Progress,
          objective: float) -> ItemItemModel:
    model = ItemItemModel(np.zeros((X.shape[0], 0)), B, params=params, method=name, X=X)
    progress.step(1, objective, model=lambda: model)
    return dataclasses.replace(model, history=progress.history)


@accepts_dataset
def ease(Y: Sparse | Dataset, k: None = None, *, lam: float = 500.0, n_iter: int = 1,
         seed: Seed = 0, n_threads: Threads = None, callback: Callback = None,
         verbose: bool = False) -> ItemItemModel:
    """EASE: the closed-form item-item model of Steck (WWW 2019), B = I − P diagMat(1/diag P).

    P = (XᵀX + λI)⁻¹ with X the positives' 0/1 pattern; diag(B) = 0; a user's scores are x B.

    Parameters
    ----------
    Y : scipy.sparse matrix or Dataset, shape (m, n)
        The positives (stored nonzero values; their values are not used).
    k : None
        EASE has no rank (``fastpu.select`` passes ``k=None``).
    lam : float
        λ > 0, the L2 penalty on B (Steck used 200–1000 on MovieLens and Netflix).
    n_iter, seed : int
        Accepted for the fastpu calling convention; the fit is one closed-form step.
    n_threads : int, optional
        BLAS threads for the inversion (restored afterwards).
    callback : callable, optional
        Called once with the history dict (``info["model"]()`` is the model).
    verbose : bool
        Print the one progress line.

    Returns
    -------
    ItemItemModel
        ``item_factors`` = B (n×n), ``X`` = the positives; ``history`` has one entry whose
        ``objective`` is ‖X − XB‖²_F + λ‖B‖²_F.

    Raises
    ------
    TypeError
        Non-sparse ``Y``, a ``k``, or a wrongly typed argument.
    ValueError
        ``lam <= 0``; a ``Y`` with no user, item or positive; an n×n matrix that exceeds the
        available memory (the message names the items and the bytes).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu import baselines
    >>> Y = sp.csr_array(np.array([[1.0, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1]]))
    >>> model = baselines.ease(Y, lam=1.0)
    >>> model.B.shape, bool(np.all(np.diag(model.B) == 0))
    ((3, 3), True)
    """
    _check_rank(k, "ease")
    lam = V.check_scalar(lam, name="lam", minimum=0.0, strict_min=True)
    X, progress = _start("ease", Y, n_iter, seed, callback, verbose)
    with limit_threads(n_threads, blas=n_threads):
        G = _gram(X, n_threads, "ease")
        G[np.diag_indices_from(G)] += lam
        P = _spd_inverse(G)
        del G
        B = P / (-np.diag(P))[None, :]
        B[np.diag_indices_from(B)] = 0.0
        objective = _ease_objective(X, B, lam)
    return _wrap("ease", X, B, dict(lam=lam), progress, objective)


def _spd_inverse(G: np.ndarray) -> np.ndarray:
    """The inverse of the symmetric positive definite G (overwritten), by LAPACK's potrf/potri."""
    c, info = sla.lapack.dpotrf(G, lower=False, overwrite_a=True)
    if info != 0:
        raise np.linalg.LinAlgError(f"XᵀX + λI is not positive definite (LAPACK potrf info {info}); "
                                    "raise lam")
    inv, info = sla.lapack.dpotri(c, lower=False, overwrite_c=True)
    if info != 0:
        raise np.linalg.LinAlgError(f"the inverse of XᵀX + λI failed (LAPACK potri info {info})")
    upper = np.triu(inv)
    return upper + np.triu(inv, 1).T


def _ease_objective(X: Sparse, B: np.ndarray, lam: float) -> float:
    """‖X − X B‖²_F + λ‖B‖²_F, by blocks of users (nothing m×n)."""
    total = lam * float(np.sum(B * B))
    step = max(1, (64 << 20) // (8 * max(1, B.shape[0])))
    for lo in range(0, X.shape[0], step):
        rows = X[lo:lo + step]
        R = np.asarray(rows @ B)
        R = rows.toarray() - R
        total += float(np.sum(R * R))
    return total


@accepts_dataset
def item_knn(Y: Sparse | Dataset, k: None = None, *, n_neighbors: int | None = 100,
             shrink: float = 0.0, n_iter: int = 1, seed: Seed = 0, n_threads: Threads = None,
             callback: Callback = None, verbose: bool = False) -> ItemItemModel:
    """Item-kNN: a user's score of item j is Σ_{l ∈ user} c_lj over the ``n_neighbors`` items l
    most similar to j, with cosine similarities c_lj = (XᵀX)_lj / (‖x_l‖ ‖x_j‖ + shrink).

    Parameters
    ----------
    Y : scipy.sparse matrix or Dataset, shape (m, n)
        The positives (stored nonzero values; their values are not used).
    k : None
        Item-kNN has no rank.
    n_neighbors : int or None
        Neighbours kept per item (the most similar; ties by lower item number); None keeps all.
    shrink : float
        A non-negative term added to the denominator (shrinks the similarity of rare pairs).
    n_iter, seed : int
        Accepted for the fastpu calling convention; the fit is one step.
    n_threads : int, optional
        BLAS threads (restored afterwards).
    callback : callable, optional
        Called once with the history dict.
    verbose : bool
        Print the one progress line.

    Returns
    -------
    ItemItemModel
        ``item_factors`` = B with B_lj = c_lj for l among j's neighbours, 0 elsewhere (and on
        the diagonal); ``history`` has one entry (``objective`` 0: nothing is minimised).

    Raises
    ------
    TypeError, ValueError
        As :func:`ease`, and for ``n_neighbors < 1`` or ``shrink < 0``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu import baselines
    >>> Y = sp.csr_array(np.array([[1.0, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1]]))
    >>> baselines.item_knn(Y, n_neighbors=1).B.round(3)
    array([[0.   , 0.667, 0.667],
           [0.667, 0.   , 0.   ],
           [0.   , 0.   , 0.   ]])
    """
    _check_rank(k, "item_knn")
    if n_neighbors is not None:
        n_neighbors = V.check_int(n_neighbors, name="n_neighbors", minimum=1)
    shrink = V.check_scalar(shrink, name="shrink", minimum=0.0)
    X, progress = _start("itemknn", Y, n_iter, seed, callback, verbose)
    with limit_threads(n_threads, blas=n_threads):
        C = _gram(X, n_threads, "item_knn")
        norms = np.sqrt(np.diag(C).copy())
        step = 1024                     # rows at a time: no second n×n array for the denominator
        for lo in range(0, C.shape[0], step):
            rows = C[lo:lo + step]
            denom = np.multiply.outer(norms[lo:lo + step], norms) + shrink
            np.divide(rows, denom, out=rows, where=denom > 0)
            rows[denom <= 0] = 0.0
        C[np.diag_indices_from(C)] = 0.0
        n = C.shape[0]
        if n_neighbors is not None and n_neighbors < n - 1:
            _keep_neighbours(C, n_neighbors)
    return _wrap("itemknn", X, C, dict(n_neighbors=n_neighbors, shrink=shrink), progress, 0.0)


def _keep_neighbours(C: np.ndarray, n_neighbors: int) -> None:
    """Zero in place all but each column's ``n_neighbors`` largest entries (ties: lower row).

    C is symmetric (XᵀX of a 0/1 X holds exact integer counts, and the cosine's denominator
    ‖x_l‖ ‖x_j‖ + shrink is symmetric too), so column j's candidates are row j: the parallel
    top-k of the metrics, with nothing excluded, ranks them by value, then by lower index, as a
    stable sort of each column would. It replaces that sort (an n×n int64 order, O(n² log n)).
    """
    n = C.shape[0]
    kept = np.empty((n, n_neighbors), dtype=np.int64)        # kept[j]: column j's rows
    topk_rows(C, np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64),
              np.arange(n, dtype=np.int64), n_neighbors, kept, np.empty((n, n_neighbors)))
    cols = np.broadcast_to(np.arange(n)[:, None], kept.shape)
    values = C[kept, cols]
    C[...] = 0.0
    C[kept, cols] = values


def _binary(Y: Any) -> Sparse:
    """The 0/1 pattern of Y's stored nonzero values (canonical CSR)."""
    Yc = V.check_csr(Y.Y if isinstance(Y, Dataset) else Y, name="Y", nonnegative=False)
    X = sp.csr_array((np.ones(Yc.nnz), Yc.indices.copy(), Yc.indptr.copy()), shape=Yc.shape)
    X.data[Yc.data == 0] = 0.0
    X.eliminate_zeros()
    return X


# ----------------------------------------------------------------------------- fold-in

def fold_rows(model: Any, Y: Any, X: Any, *, p: Any, q: Any, tol: float, max_iter: int,
              rng: np.random.Generator, dense_limit: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """New users of an item-item model: their rows of X are their positives (scores x B); there
    is nothing to solve."""
    row_problem.no_weights(model, p, q)
    Y = row_problem.need_rows(Y, X, method=model.method)
    return np.zeros((Y.shape[0], 0)), {"fields": {"X": _binary(Y)}}


# ----------------------------------------------------------------------------- search spaces

def ease_space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) of ``tune("ease", Y, **fixed)``: λ log-uniform in [1, 10⁴]."""
    import scipy.stats as stats

    space = {"lam": stats.loguniform(1.0, 1e4)}
    return {k: v for k, v in space.items() if k not in fixed}, dict(fixed)


def item_knn_space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) of ``tune("itemknn", Y, **fixed)``."""
    space: dict[str, Any] = {"n_neighbors": [10, 20, 50, 100, 200, 500],
                             "shrink": [0.0, 1.0, 10.0, 100.0]}
    return {k: v for k, v in space.items() if k not in fixed}, dict(fixed)
