"""Thread control: the one place that changes numba's (and, during a fit, BLAS's) thread count."""

from __future__ import annotations

import contextlib
import numbers
from typing import Any, Iterator

import numba
import numpy as np
from threadpoolctl import threadpool_limits


def get_num_threads() -> int:
    """The number of threads numba's parallel kernels use now.

    Parameters
    ----------
    None

    Returns
    -------
    int
        The current thread count (see :func:`set_num_threads`).

    Examples
    --------
    >>> import fastpu as fp
    >>> fp.get_num_threads() >= 1
    True
    """
    return numba.get_num_threads()


def set_num_threads(n: int) -> int:
    """Set the number of threads fastpu's parallel kernels use; return the previous count.

    Parameters
    ----------
    n : int
        Between 1 and ``numba.config.NUMBA_NUM_THREADS`` (the count numba was started with,
        set by the environment variable ``NUMBA_NUM_THREADS``).

    Returns
    -------
    int
        The previous thread count.

    Raises
    ------
    TypeError
        If ``n`` is not an integer.
    ValueError
        If ``n`` is out of range.

    Examples
    --------
    >>> import fastpu as fp
    >>> old = fp.set_num_threads(1)
    >>> _ = fp.set_num_threads(old)
    """
    n = check_threads(n)
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    return old


def check_threads(n: Any) -> int:
    limit: int = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n_threads must be an integer in [1, {limit}], got {n!r}")
    n = int(n)
    if not 1 <= n <= limit:
        raise ValueError(f"n_threads must be in [1, {limit}] (NUMBA_NUM_THREADS), got {n}")
    return int(n)


@contextlib.contextmanager
def limit_threads(n: int | None, *, blas: int | None = 1) -> Iterator[int]:
    """Run the block with ``n`` numba threads and ``blas`` BLAS threads; restore both in ``finally``.

    ``n=None`` leaves numba's count as it is. ``blas=1`` (the default) keeps BLAS to one thread
    while numba's threads do the work, so the two pools never oversubscribe the cores (OpenBLAS
    threads spin after a call and would compete with numba's); ``blas=None`` leaves BLAS alone,
    for code whose main cost is a BLAS/LAPACK call (CSRR-I/II's SVD).
    """
    if n is not None:
        n = check_threads(n)          # before BLAS's limit, which may be the same number
    if blas is not None:
        blas = check_threads(blas)    # threadpoolctl takes a Python int only
    blas_ctx = threadpool_limits(limits=blas, user_api="blas") if blas is not None else contextlib.nullcontext()
    with blas_ctx:
        if n is None:
            yield numba.get_num_threads()
            return
        old = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            yield n
        finally:
            numba.set_num_threads(old)
