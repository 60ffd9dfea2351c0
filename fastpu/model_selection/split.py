"""Per-user train/test splits of a positive-unlabeled matrix.

Every function here keeps the stored values of ``Y`` (ratings, counts or 1) and
splits the stored entries of each row (user) between a training and a test CSR of
the same shape, so that every stored entry lands in exactly one of them.  The
randomness comes from one ``numpy.random.Generator`` built from ``seed``; the
result depends only on ``seed`` and the input (no threads are involved).

Each function also takes a :class:`~fastpu.datasets.Dataset` and then returns two Datasets:
the same users and items (ids, side information and description kept) with the training and
the test entries, each with its part of the data set's timestamps. :func:`leave_one_out` of a
Dataset holds out each user's latest entry when the data set has timestamps, and
:func:`split_by_mask` uses the data set's own ``test_mask`` when none is given.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp


from fastpu._core import validation as V
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, IntArray, Seed, Sparse

__all__ = ["UserSplit", "held_out_users", "holdout", "leave_one_out", "validation_split", "split_by_mask"]


def _rows_of(Y: Sparse) -> IntArray:
    """Row index of every stored entry of a canonical CSR."""
    return np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(Y.indptr))


def _split_by_entry_mask(Y: Sparse, test_mask: Any) -> tuple[Sparse, Sparse]:
    """(train, test) CSR from a boolean mask over the stored entries of canonical ``Y``."""
    rows = _rows_of(Y)
    out = []
    for keep in (~test_mask, test_mask):
        counts = np.bincount(rows[keep], minlength=Y.shape[0])
        indptr = np.zeros(Y.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        out.append(sp.csr_array(
            (Y.data[keep].copy(), Y.indices[keep].copy(), indptr), shape=Y.shape))
    return out[0], out[1]


def _datasets(data: Dataset, parts: tuple[Sparse, Sparse]) -> tuple[Dataset, Dataset]:
    """The two parts of a split of ``data.Y`` as Datasets of the same users and items."""
    out = []
    T = None
    if data.timestamps is not None:
        T = V.check_csr(data.timestamps, name="timestamps", shape=data.Y.shape, nonnegative=False,
                        shape_from="Y.shape", keep_integers=True)
    for label, part in zip(("train", "test"), parts):
        times = None
        if T is not None and part.nnz:
            times = sp.csr_array((_values_on_pattern(T, part), part.indices.copy(), part.indptr.copy()),
                                 shape=part.shape)
        elif T is not None:
            times = sp.csr_array(part.shape, dtype=T.dtype)
        out.append(dataclasses.replace(data, Y=part, timestamps=times, hidden=None, test_mask=None,
                                       name=f"{data.name} ({label})"))
    return out[0], out[1]


def _rank_within_rows(Y: Sparse, keys: tuple[Any, ...]) -> IntArray:
    """Position (0-based) of each stored entry when its row is sorted by ``keys`` ascending.

    ``keys`` is a tuple of arrays, last one primary, as for ``numpy.lexsort``.
    """
    rows = _rows_of(Y)
    order = np.lexsort(tuple(keys) + (rows,))
    rank = np.empty(Y.nnz, dtype=np.int64)
    rank[order] = np.arange(Y.nnz, dtype=np.int64) - Y.indptr[rows[order]]
    return rank


def holdout(Y: Sparse | Dataset, test_frac: float = 0.2, seed: Seed = 0) -> tuple[Any, Any]:
    """Random per-user holdout: a fraction of each user's positives goes to test.

    For a user (row) with ``n_u >= 2`` stored entries, ``round(test_frac * n_u)``
    of them (rounded half up, and capped at ``n_u - 1`` so that at least one
    stays in training) are drawn uniformly at random without replacement and
    moved to the test matrix. Users with fewer than two stored entries stay
    entirely in training.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n), or Dataset
        Stored entries are the observed positives (any finite values). A Dataset gives two
        Datasets (see the module's description).
    test_frac : float
        Fraction of each user's positives to hold out, in (0, 1).
    seed : int, numpy.random.Generator or None
        Randomness; the split is a deterministic function of an int seed.

    Returns
    -------
    Y_train, Y_test : scipy.sparse.csr_array, shape (m, n)
        Disjoint, with ``Y_train + Y_test == Y``; stored values are preserved.

    Raises
    ------
    TypeError
        If ``Y`` is not sparse, ``test_frac`` is not a real number or ``seed``
        is not a non-negative int / Generator / None.
    ValueError
        If ``Y`` is malformed or has non-finite values, or ``test_frac`` is not
        strictly between 0 and 1.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from fastpu.model_selection.split import holdout
    >>> Y = sp.random(20, 30, density=0.3, format="csr", random_state=0)
    >>> tr, te = holdout(Y, test_frac=0.2, seed=0)
    >>> tr.nnz + te.nnz == Y.nnz
    True
    >>> import fastpu as fp
    >>> data = fp.datasets.from_pairs(["a", "a", "a", "b", "b"], [1, 2, 3, 1, 2])
    >>> train, test = holdout(data, seed=0)
    >>> test.user_ids.tolist(), test.Y.nnz
    (['a', 'b'], 1)
    """
    if isinstance(Y, Dataset):
        return _datasets(Y, holdout(Y.Y, test_frac, seed))
    Y = V.check_csr(Y, name="Y", nonnegative=False)
    test_frac = V.check_scalar(test_frac, name="test_frac", minimum=0.0, maximum=1.0,
                               strict_min=True, strict_max=True)
    rng = V.check_seed(seed)
    counts = np.diff(Y.indptr)
    n_test = np.floor(test_frac * counts + 0.5).astype(np.int64)
    n_test = np.minimum(n_test, np.maximum(counts - 1, 0))
    rank = _rank_within_rows(Y, (rng.random(Y.nnz),))
    test_mask = rank < np.repeat(n_test, counts)
    return _split_by_entry_mask(Y, test_mask)


def validation_split(Y_train: Sparse | Dataset, frac: float = 0.2, seed: Seed = 0) -> tuple[Any, Any]:
    """Carve a validation split out of a training matrix (a :func:`holdout` of it).

    Parameters
    ----------
    Y_train : scipy.sparse matrix, shape (m, n), or Dataset
        The training matrix to split again (a Dataset gives two Datasets).
    frac : float
        Fraction of each user's training positives moved to validation, in (0, 1).
    seed : int, numpy.random.Generator or None
        Randomness.

    Returns
    -------
    Y_fit, Y_valid : scipy.sparse.csr_array, shape (m, n)
        Disjoint, summing to ``Y_train``.

    Raises
    ------
    TypeError, ValueError
        As :func:`holdout`; ``frac`` outside (0, 1) is a ValueError naming ``frac``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from fastpu.model_selection.split import validation_split
    >>> Y = sp.random(20, 30, density=0.3, format="csr", random_state=0)
    >>> fit_part, valid = validation_split(Y, 0.25, seed=1)
    >>> fit_part.nnz + valid.nnz == Y.nnz
    True
    """
    if isinstance(Y_train, Dataset):
        return _datasets(Y_train, validation_split(Y_train.Y, frac, seed))
    Y_train = V.check_csr(Y_train, name="Y_train", nonnegative=False)
    # checked here with holdout's bounds, so that the message names frac (it said test_frac)
    frac = V.check_scalar(frac, name="frac", minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    return holdout(Y_train, test_frac=frac, seed=seed)


def _values_on_pattern(T: Sparse, Y: Sparse) -> Any:
    """T's stored values at each stored entry of Y (T's pattern must contain Y's)."""
    if np.array_equal(T.indptr, Y.indptr) and np.array_equal(T.indices, Y.indices):
        return T.data
    n = np.int64(Y.shape[1])
    tkey = _rows_of(T) * n + T.indices          # sorted: canonical CSR is row-major sorted
    ykey = _rows_of(Y) * n + Y.indices
    pos = np.searchsorted(tkey, ykey)
    found = np.zeros(ykey.size, dtype=bool)
    inside = pos < tkey.size
    found[inside] = tkey[pos[inside]] == ykey[inside]
    if not found.all():
        raise ValueError(
            f"timestamps must store a time for every stored entry of Y (the same sparsity pattern, "
            f"or a larger one); {int((~found).sum())} of Y's {Y.nnz} entries have none"
        )
    return T.data[pos]


def leave_one_out(Y: Sparse | Dataset, timestamps: Sparse | None = None, seed: Seed = 0
                  ) -> tuple[Any, Any]:
    """Leave-one-out split: one positive per user goes to test.

    Every user with at least two stored entries gives up one: the latest one
    (largest timestamp; ties broken uniformly at random with ``seed``) when
    ``timestamps`` is given, a uniformly random one otherwise. Users with fewer
    than two stored entries stay entirely in training.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n), or Dataset
        Stored entries are the observed positives. A Dataset gives two Datasets, and its own
        ``timestamps`` are used when ``timestamps`` is not given.
    timestamps : scipy.sparse matrix, shape (m, n), optional
        Interaction times with the sparsity pattern of ``Y`` (for example
        ``Dataset.timestamps``); a larger pattern is accepted (its values on
        ``Y``'s entries are used), so the full data's timestamps can serve a
        nested split of a training matrix.
    seed : int, numpy.random.Generator or None
        Randomness (tie-breaking, or the random choice without timestamps).

    Returns
    -------
    Y_train, Y_test : scipy.sparse.csr_array, shape (m, n)
        Disjoint, summing to ``Y``; ``Y_test`` has at most one entry per row.

    Raises
    ------
    TypeError
        If ``Y`` or ``timestamps`` is not sparse.
    ValueError
        If either is malformed or non-finite, or ``timestamps`` does not have
        ``Y``'s shape or lacks a time for some stored entry of ``Y``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model_selection.split import leave_one_out
    >>> Y = sp.csr_array(np.array([[1., 1, 0], [0, 1, 1]]))
    >>> T = sp.csr_array(np.array([[5., 9, 0], [0, 3, 2]]))
    >>> tr, te = leave_one_out(Y, T)
    >>> te.toarray()
    array([[0., 1., 0.],
           [0., 1., 0.]])
    """
    if isinstance(Y, Dataset):
        times = Y.timestamps if timestamps is None else timestamps
        return _datasets(Y, leave_one_out(Y.Y, times, seed))
    Y = V.check_csr(Y, name="Y", nonnegative=False)
    rng = V.check_seed(seed)
    noise = rng.random(Y.nnz)
    keys: tuple[Any, ...]
    if timestamps is None:
        keys = (noise,)
    else:
        # explicit zeros would be dropped by some constructions: compare patterns as stored
        # integer times stay int64: as float64, times above 2**53 (nanoseconds) would tie
        T = V.check_csr(timestamps, name="timestamps", shape=Y.shape, nonnegative=False,
                        shape_from="Y.shape", keep_integers=True)
        keys = (noise, _values_on_pattern(T, Y))
    counts = np.diff(Y.indptr)
    rank = _rank_within_rows(Y, keys)
    # the last entry in each row's ascending order is the latest (or the random pick)
    test_mask = (rank == np.repeat(counts - 1, counts)) & np.repeat(counts >= 2, counts)
    return _split_by_entry_mask(Y, test_mask)


def split_by_mask(Y: Sparse | Dataset, test_mask: ArrayLike | Sparse | None = None
                  ) -> tuple[Any, Any]:
    """Split ``Y`` by a given test pattern (for example ML-1M's published test file).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n), or Dataset
        All positives (a Dataset gives two Datasets).
    test_mask : scipy.sparse matrix, shape (m, n)
        Entries of ``Y`` that belong to the test split (any stored value that is
        non-zero marks a test entry; its pattern must lie inside ``Y``'s). For a Dataset,
        its own ``test_mask`` when not given.

    Returns
    -------
    Y_train, Y_test : scipy.sparse.csr_array, shape (m, n)
        Disjoint, summing to ``Y``, values preserved.

    Raises
    ------
    TypeError
        If an argument is not sparse.
    ValueError
        If shapes differ or ``test_mask`` marks entries that ``Y`` does not store.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model_selection.split import split_by_mask
    >>> Y = sp.csr_array(np.array([[3., 4, 0], [0, 5, 1]]))
    >>> M = sp.csr_array(np.array([[0., 1, 0], [0, 0, 1]]))
    >>> tr, te = split_by_mask(Y, M)
    >>> te.toarray()
    array([[0., 4., 0.],
           [0., 0., 1.]])
    """
    if isinstance(Y, Dataset):
        mask = Y.test_mask if test_mask is None else test_mask
        if mask is None:
            raise ValueError(f"split_by_mask: data set {Y.name!r} ships no test split "
                             "(test_mask is None); pass test_mask, or use holdout / leave_one_out")
        return _datasets(Y, split_by_mask(Y.Y, mask))
    if test_mask is None:
        raise TypeError("split_by_mask() needs test_mask (a sparse matrix marking the test "
                        "entries) unless Y is a Dataset that ships one")
    Y = V.check_csr(Y, name="Y", nonnegative=False)
    M = V.check_csr(test_mask, name="test_mask", shape=Y.shape, nonnegative=False, shape_from="Y.shape")
    M.eliminate_zeros()
    rows = _rows_of(Y)
    mrows = _rows_of(M)
    n = np.int64(Y.shape[1])
    ykey = rows * n + Y.indices
    mkey = mrows * n + M.indices
    mask = np.isin(ykey, mkey)
    if int(mask.sum()) != M.nnz:
        raise ValueError(
            f"test_mask marks {M.nnz - int(mask.sum())} entries that Y does not store; "
            "expected a pattern inside Y's"
        )
    return _split_by_entry_mask(Y, mask)


@dataclasses.dataclass(frozen=True)
class UserSplit:
    """The strong-generalization split of :func:`held_out_users`.

    Attributes
    ----------
    train : scipy.sparse.csr_array, shape (m - h, n)
        Every positive of the users a model is fitted on.
    fold_in, test : scipy.sparse.csr_array, shape (h, n)
        The h held-out users' positives: the part folded into the fitted model and the part it
        is scored on (disjoint; their sum is those users' rows of Y).
    train_users, test_users : ndarray of int64
        Rows of Y of ``train`` and of ``fold_in`` / ``test``, in order.
    """

    train: Sparse
    fold_in: Sparse
    test: Sparse
    train_users: IntArray
    test_users: IntArray


def held_out_users(Y: Sparse, users_frac: float = 0.2, test_frac: float = 0.2,
                   seed: Seed = 0) -> UserSplit:
    """Strong generalization (Liang et al., WWW 2018): held-out users, not held-out entries.

    ``round(users_frac · r)`` of the r users that :func:`holdout` gives a test positive (at
    least two positives, and ``round(test_frac · n_u) >= 1``) are held out at random; a model is
    fitted on every other user, each held-out user's ``1 - test_frac`` of positives is folded
    in (:func:`fastpu.fold_in`) and the other ``test_frac`` is scored (as :func:`holdout` splits a
    user's positives). The other users always train.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Stored entries are the observed positives.
    users_frac : float
        Fraction of the users that have a test positive to give held out, in (0, 1).
    test_frac : float
        Fraction of a held-out user's positives scored, in (0, 1).
    seed : int, numpy.random.Generator or None
        Randomness; the split is a deterministic function of an int seed.

    Returns
    -------
    UserSplit
        ``train`` (the other users' rows), ``fold_in`` and ``test`` (the held-out users' rows,
        split), ``train_users`` and ``test_users`` (their rows in Y).

    Raises
    ------
    TypeError
        If ``Y`` is not sparse or a fraction is not a real number.
    ValueError
        If a fraction is not strictly between 0 and 1, or it holds out no user (or every user
        that has a test positive to give).

    Examples
    --------
    >>> import fastpu as fp
    >>> Y = fp.datasets.synthetic(50, 30, rank=3, density=0.2, seed=0).Y
    >>> s = fp.split.held_out_users(Y, users_frac=0.2, seed=0)
    >>> s.train.shape[0] + s.fold_in.shape[0] == 50, s.fold_in.shape == s.test.shape
    (True, True)
    """
    Y = V.check_csr(Y, name="Y", nonnegative=False)
    users_frac = V.check_scalar(users_frac, name="users_frac", minimum=0.0, maximum=1.0,
                                strict_min=True, strict_max=True)
    test_frac = V.check_scalar(test_frac, name="test_frac", minimum=0.0, maximum=1.0,
                               strict_min=True, strict_max=True)
    rng = V.check_seed(seed)
    counts = np.diff(Y.indptr)
    eligible = np.flatnonzero((counts >= 2) & (np.floor(test_frac * counts + 0.5) >= 1))
    h = int(np.floor(users_frac * eligible.size + 0.5))
    if h < 1 or h >= eligible.size:
        raise ValueError(f"users_frac={users_frac:g} holds out {h} of the {eligible.size} users "
                         f"with a test positive to give (test_frac={test_frac:g}); expected at "
                         "least one held out and one left to train on")
    test_users = np.sort(rng.choice(eligible, size=h, replace=False)).astype(np.int64)
    keep = np.ones(Y.shape[0], dtype=bool)
    keep[test_users] = False
    train_users = np.flatnonzero(keep).astype(np.int64)
    fold, test = holdout(Y[test_users], test_frac=test_frac, seed=rng)
    return UserSplit(sp.csr_array(Y[train_users]), fold, test, train_users, test_users)
