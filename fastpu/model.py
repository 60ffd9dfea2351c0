"""The result type shared by every method, and top-N recommendation."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from . import _validation as V
from ._dataset import Dataset
from ._kernels.topk import topk_rows

# Scores are produced in blocks of users so that nothing m×n is ever allocated.
_BLOCK_BYTES = 64 * 2**20


@dataclasses.dataclass(frozen=True)
class Factorization:
    """A fitted model: score(i, j) = user_factors[i] · item_factors[j] (+ method extras).

    Attributes
    ----------
    user_factors : ndarray, shape (m, k)
        One row per user (for feature models, ``X @ W``).
    item_factors : ndarray, shape (n, k)
        One row per item (for feature models, ``Z @ H``).
    history : list of dict
        One dict per outer iteration with at least ``iter``, ``objective``, ``seconds``.
    params : dict
        The arguments the model was fitted with.
    method : str
        Name of the method that produced it (``"ocmf"``, ``"fbgd"``, ...).
    extras : dict
        Method-specific parts (``W``, ``H`` for feature models, ...).
    user_ids, item_ids : ndarray or None
        The original identifier of each row / column when the model was fitted on a
        :class:`fastpu.datasets.Dataset`; ``None`` when it was fitted on a bare matrix.

    Methods whose scores are not a plain product subclass this and override
    :meth:`scores`.
    """

    user_factors: np.ndarray
    item_factors: np.ndarray
    history: list = dataclasses.field(default_factory=list)
    params: dict = dataclasses.field(default_factory=dict)
    method: str = ""
    extras: dict = dataclasses.field(default_factory=dict)
    user_ids: np.ndarray | None = None
    item_ids: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(number of users, number of items)."""
        return (self.user_factors.shape[0], self.item_factors.shape[0])

    @property
    def W(self) -> Any:
        """User-side coefficients (``d×k`` with features, else the user factors)."""
        return self.extras.get("W", self.user_factors)

    @property
    def H(self) -> Any:
        """Item-side coefficients (``e×k`` with features, else the item factors)."""
        return self.extras.get("H", self.item_factors)

    def scores(self, users=None) -> np.ndarray:
        """Dense score rows for ``users`` (all users when ``None``).

        Parameters
        ----------
        users : array-like of int, optional
            Row indices in ``[0, m)``.

        Returns
        -------
        ndarray, shape (len(users), n)
        """
        users = V.check_users(users, self.shape[0])
        return self.user_factors[users] @ self.item_factors.T


def accepts_dataset(fit):
    """Let a method's ``fit(Y, k, ...)`` take a :class:`~fastpu.datasets.Dataset` as ``Y``.

    The data set's ``Y`` is fitted as given (binarise first if its values are ratings you do
    not want as weights) and its ``user_ids`` / ``item_ids`` are kept on the model.
    """
    @functools.wraps(fit)
    def wrapper(Y, *args, **kwargs):
        if not isinstance(Y, Dataset):
            return fit(Y, *args, **kwargs)
        model = fit(Y.Y, *args, **kwargs)
        return dataclasses.replace(model, user_ids=Y.user_ids, item_ids=Y.item_ids)
    return wrapper


def _block_size(n_items):
    return max(1, min(4096, _BLOCK_BYTES // (8 * max(1, n_items))))


def recommend(model, Y_seen, users=None, n=10):
    """Top-``n`` items per user by score, excluding the items each user has seen.

    Parameters
    ----------
    model : Factorization
        Any fitted fastpu model.
    Y_seen : scipy.sparse matrix, shape (m, n_items) or None
        Items to exclude per user (usually the training matrix). ``None`` excludes nothing.
    users : array-like of int, optional
        Users to recommend for (all when ``None``).
    n : int
        Number of items per user.

    Returns
    -------
    items : ndarray of int64, shape (len(users), n)
        Best first; ``-1`` where a user has fewer than ``n`` unseen items.
    scores : ndarray of float64, shape (len(users), n)
        The matching scores (``-inf`` in empty slots).

    Raises
    ------
    ValueError
        If ``Y_seen`` does not have the model's shape or ``n < 1``.

    Examples
    --------
    >>> import fastpu as fp
    >>> Y = fp.datasets.synthetic(30, 20, rank=3, density=0.2, seed=0).Y
    >>> m = fp.ocmf.fit(Y, 4, n_iter=2)
    >>> items, scores = fp.recommend(m, Y, users=[0, 1], n=5)
    >>> items.shape
    (2, 5)
    """
    n = V.check_k(n, name="n")
    m_users, n_items = model.shape
    if Y_seen is None:
        import scipy.sparse as sp
        Y_seen = sp.csr_array((m_users, n_items))
    Y_seen = V.check_csr(Y_seen, name="Y_seen", shape=(m_users, n_items), nonnegative=False)
    users = V.check_users(users, m_users)
    n_take = min(n, n_items)
    items = np.full((users.size, n), -1, dtype=np.int64)
    scores = np.full((users.size, n), -np.inf)
    start = 0
    for rows, S in iter_score_blocks(model, users):
        it = np.empty((rows.size, n_take), dtype=np.int64)
        sc = np.empty((rows.size, n_take))
        topk_rows(S, Y_seen.indptr, Y_seen.indices, rows, n_take, it, sc)
        items[start:start + rows.size, :n_take] = it
        scores[start:start + rows.size, :n_take] = sc
        start += rows.size
    return items, scores


def iter_score_blocks(model, users):
    """Yield ``(rows, dense scores)`` for ``users`` in memory-bounded blocks."""
    step = _block_size(model.shape[1])
    for start in range(0, users.size, step):
        rows = users[start:start + step]
        yield rows, np.ascontiguousarray(model.scores(rows), dtype=np.float64)
