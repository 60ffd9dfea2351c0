"""HOMF's walks: blocks of columns (rows) of f_T(A) = (A + … + A^T)/T by Algorithm 1's recursion.

a_1 = A e_i, a_t = a_1 + A a_{t−1}, column = a_T / T, for a block of columns at once (sparse ×
dense-block products); rows are the columns of f_T(Aᵀ). :class:`_Walker` serves ``homf.fit``'s
exact mode, :func:`walk_columns` / :func:`walk_rows` are the public entry points (re-exported by
:mod:`fastpu.homf`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V_
from fastpu._kernels import homf as _K
from fastpu.homf._check import check_T
from fastpu._kernels.csr import csr_dense
from fastpu._core.threads import limit_threads
from fastpu._core.hints import ArrayLike, IntArray, Sparse, Threads

__all__ = ["walk_columns", "walk_rows"]


def _walk_block(P, Pt, cols, T):
    """Columns ``cols`` of f_T(P) as a dense N×b block (P and Pᵀ canonical CSR)."""
    N = P.shape[0]
    b = cols.size
    first = np.empty((N, b))
    _K.scatter_columns(Pt.indptr, Pt.indices, Pt.data, cols, first)
    if T == 1:
        return first
    prev = first
    out = np.empty((N, b))
    spare = np.empty((N, b))
    for _ in range(2, T + 1):
        _K.walk_step(P.indptr, P.indices, P.data, first, prev, out)
        if prev is first:
            prev, out = out, spare
        else:
            prev, out = out, prev
    prev *= 1.0 / T
    return prev


def _is_bipartite(P, m):
    """True when P has no entry inside its users×users or items×items blocks."""
    rows = np.repeat(np.arange(P.shape[0], dtype=np.int64), np.diff(P.indptr))
    return not np.any((rows < m) == (P.indices < m))


def _sub_csr(P, r0, r1, c0, c1):
    S = sp.csr_array(P[r0:r1][:, c0:c1])
    S.sort_indices()
    return sp.csr_array((S.data.astype(np.float64), S.indices.astype(np.int64),
                         S.indptr.astype(np.int64)), shape=S.shape)


class _Walker:
    """Blocks of columns of f_T(P), taking the bipartite shortcut when P has no side graphs.

    Without side graphs P = [[0, B], [C, 0]]: the l-th power maps a user column onto items
    when l is odd and onto users when l is even, so each step needs only B or C — half of
    the nonzeros of P.  The powers are then summed instead of run through the recursion.
    """

    def __init__(self, P, Pt, T, m=None):
        self.P, self.Pt, self.T, self.N = P, Pt, T, P.shape[0]
        self.m = m if (m is not None and 0 < m < self.N and _is_bipartite(P, m)) else None
        if self.m is not None:
            self.B = _sub_csr(P, 0, m, m, self.N)          # users <- items
            self.C = _sub_csr(P, m, self.N, 0, m)          # items <- users

    def ranges(self, block, lo=0, hi=None):
        """(start, stop) of consecutive column blocks of columns lo:hi (all by default), never
        straddling the user/item split."""
        hi = self.N if hi is None else hi
        cuts = set(range(lo, hi, block)) | {hi}
        if self.m is not None and lo < self.m < hi:
            cuts.add(self.m)
        order = sorted(cuts)
        return list(zip(order[:-1], order[1:]))

    def columns(self, cols):
        if self.m is None or self.T == 1:
            return _walk_block(self.P, self.Pt, cols, self.T)
        m, N, b = self.m, self.N, cols.size
        first = np.empty((N, b))
        _K.scatter_columns(self.Pt.indptr, self.Pt.indices, self.Pt.data, cols, first)
        on_items = bool(cols[0] < m)                # A e_c for a user column lives on items
        S_user = np.zeros((m, b))
        S_item = np.zeros((N - m, b))
        x = np.ascontiguousarray(first[m:] if on_items else first[:m])
        (S_item if on_items else S_user)[:] = x
        for _ in range(2, self.T + 1):
            M = self.B if on_items else self.C
            y = np.empty((M.shape[0], b))
            csr_dense(M.indptr, M.indices, M.data, x, y)
            on_items = not on_items
            if on_items:
                S_item += y
            else:
                S_user += y
            x = y
        first[:m] = S_user
        first[m:] = S_item
        first *= 1.0 / self.T
        return first


def _check_walk_args(A: Sparse, idx: ArrayLike, T: int, name: str) -> tuple[Sparse, IntArray, int]:
    A = V_.check_square_csr(A, name="A")
    if A.shape[0] == 0:
        raise ValueError("A has shape 0×0; expected at least one node")
    idx = V_.check_indices(idx, name=name, size=A.shape[0], size_from=f"A is {A.shape[0]}×{A.shape[0]}")
    T = check_T(T)
    return A, idx, T


def walk_columns(A: Sparse, cols: ArrayLike, T: int, *, n_threads: Threads = None) -> np.ndarray:
    """Columns ``cols`` of f_T(A) = (A + … + A^T)/T, without ever forming a power of A.

    Algorithm 1 for a whole block at once: ``a_1 = A[:, cols]``, then
    ``a_t = a_1 + A a_{t-1}`` (one sparse × dense-block product per step, parallel over
    the rows of A); the result is ``a_T / T``.

    Parameters
    ----------
    A : scipy.sparse matrix, shape (N, N)
        Usually :func:`transition_matrix`'s output; any square sparse matrix works.
    cols : array-like of int
        Column indices in ``[0, N)``.
    T : int in [1, 1000]
        Walk length.
    n_threads : int, optional
        numba threads for this call (default: the current setting).

    Returns
    -------
    ndarray, shape (N, len(cols))
        ``f_T(A)[:, cols]``.

    Raises
    ------
    TypeError
        If ``A`` is not sparse, ``cols`` is not integer or ``T`` is not an integer.
    ValueError
        If ``A`` is not square or has non-finite values, ``cols`` is out of range,
        ``T`` is outside [1, 1000], or the N × len(cols) result is above the dense-size limit.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import fastpu as fp
    >>> A = sp.csr_array(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> fp.homf.walk_columns(A, [0], T=2)
    array([[0.5],
           [0.5]])
    """
    A, cols, T = _check_walk_args(A, cols, T, "cols")
    V_.check_dense_size(A.shape[0], cols.size, what="walk_columns",
                        alternative="fewer columns per call")
    At = V_.transpose_csr(A)
    with limit_threads(n_threads):
        return _walk_block(A, At, cols, T)


def walk_rows(A: Sparse, rows: ArrayLike, T: int, *, n_threads: Threads = None) -> np.ndarray:
    """Rows ``rows`` of f_T(A): the column recursion run on Aᵀ.

    Parameters
    ----------
    A : scipy.sparse matrix, shape (N, N)
        Any square sparse matrix (usually :func:`transition_matrix`'s output).
    rows : array-like of int
        Row indices in ``[0, N)``.
    T : int in [1, 1000]
        Walk length.
    n_threads : int, optional
        numba threads for this call.

    Returns
    -------
    ndarray, shape (len(rows), N)
        ``f_T(A)[rows, :]``.

    Raises
    ------
    TypeError
        If ``A`` is not sparse, ``rows`` is not integer or ``T`` is not an integer.
    ValueError
        If ``A`` is not square or has non-finite values, ``rows`` is out of range,
        ``T`` is outside [1, 1000], or the result is above the dense-size limit.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import fastpu as fp
    >>> A = sp.csr_array(np.array([[0.0, 1.0], [0.0, 0.0]]))
    >>> fp.homf.walk_rows(A, [0], T=1)
    array([[0., 1.]])
    """
    A, rows, T = _check_walk_args(A, rows, T, "rows")
    V_.check_dense_size(A.shape[0], rows.size, what="walk_rows",
                        alternative="fewer rows per call")
    At = V_.transpose_csr(A)
    with limit_threads(n_threads):
        return np.ascontiguousarray(_walk_block(At, A, rows, T).T)
