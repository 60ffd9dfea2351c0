"""Row blocks of a serial, GIL-free kernel run on Python threads (a compile-light ``prange``).

A numba ``parallel=True`` kernel costs far more to compile than the same loop compiled serial:
numba outlines the ``prange`` body into a gufunc, links every function the body calls into it
and optimises the result again, then once more in the kernel's own library. For ocmf's row
solver that re-optimisation was most of the first fit (docs/benchmarks/bench_perf_firstrun.md).
The kernels that go through this module are compiled once, serial, with ``nogil=True``;
:func:`run_rows` splits the rows into one contiguous block per thread and calls the kernel on each
block from a small pool of Python threads, which run it concurrently because it releases the GIL.

Each block owns its rows, so the result does not depend on the split or the thread count. The
thread count is numba's (``fastpu.set_num_threads``, the ``n_threads=`` of a fit), read in the
calling thread.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numba
import numpy as np

__all__ = ["MIN_BLOCK_WORK", "row_blocks", "run_rows", "uniform_rows"]

#: Least work of a block (entries, each a short vector operation) for the small kernels that
#: go through :func:`run_rows`: below about twice this, handing a block to the pool costs more
#: than it saves.
MIN_BLOCK_WORK = 8192

_lock = threading.Lock()
_pool: dict[str, Any] = {"executor": None, "size": 0, "pid": None}


def row_blocks(indptr: np.ndarray, n_blocks: int, row_cost: int) -> list[int]:
    """Bounds ``[0, b_1, ..., m]`` of at most ``n_blocks`` contiguous row blocks of equal work.

    A row's work is counted as its number of entries plus ``row_cost`` (its fixed part, in
    entries). Blocks are never empty.
    """
    m = int(indptr.shape[0]) - 1
    n_blocks = max(1, min(int(n_blocks), m))
    if n_blocks == 1:
        return [0, m]
    work = indptr[1:] + np.arange(1, m + 1, dtype=np.int64) * int(row_cost)   # cumulative
    targets = work[-1] * np.arange(1, n_blocks, dtype=np.float64) / n_blocks
    cuts = np.searchsorted(work, targets, side="left") + 1
    bounds = [0]
    for c in cuts.tolist():
        if bounds[-1] < c < m:
            bounds.append(int(c))
    bounds.append(m)
    return bounds


def uniform_rows(m: int) -> np.ndarray:
    """An ``indptr`` of ``m`` rows without entries: with ``row_cost`` c, every row costs c."""
    return np.zeros(int(m) + 1, dtype=np.int64)


def _executor(n: int) -> ThreadPoolExecutor:
    with _lock:
        if _pool["pid"] != os.getpid():         # a forked child has the pool but not its threads
            _pool["executor"], _pool["size"], _pool["pid"] = None, 0, os.getpid()
        if _pool["executor"] is None or _pool["size"] < n:
            old = _pool["executor"]
            _pool["executor"] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="fastpu-rows")
            _pool["size"] = n
            if old is not None:
                old.shutdown(wait=False)
        ex: ThreadPoolExecutor = _pool["executor"]
        return ex


def run_rows(block: Callable[[int, int], Any], indptr: np.ndarray, row_cost: int,
             n_threads: int | None = None, min_work: int = 0, per_thread: int = 1) -> None:
    """Call ``block(lo, hi)`` on contiguous row blocks covering every row, one per thread.

    With ``per_thread`` > 1 the rows are cut into that many blocks per thread, and each thread
    takes the next unclaimed block when it finishes one (dynamic scheduling: the work estimate
    of :func:`row_blocks` need not be exact, and a thread slowed by other work on the machine
    holds up at most one small block).

    ``block`` must release the GIL (a ``nogil=True`` numba kernel) to run concurrently, and
    must touch only its own rows' outputs. The first block runs in the calling thread; an
    exception in any block is raised here after every block has finished. With ``min_work``
    (in the units of ``row_blocks``), no block gets less than that much work: a small call
    runs as one block in the calling thread, sparing the pool's hand-off (tens of µs).
    """
    n = numba.get_num_threads() if n_threads is None else int(n_threads)
    if min_work > 0 and n > 1:
        m = int(indptr.shape[0]) - 1
        work = int(indptr[-1] - indptr[0]) + m * int(row_cost) if m > 0 else 0
        n = max(1, min(n, work // int(min_work)))
    bounds = row_blocks(indptr, n * max(int(per_thread), 1) if n > 1 else 1, row_cost)
    if len(bounds) <= 2:
        block(bounds[0], bounds[-1])
        return
    n_blocks = len(bounds) - 1
    if n_blocks > n:
        _run_dynamic(block, bounds, n)
        return
    ex = _executor(len(bounds) - 2)
    futures: list[Future[Any]] = [ex.submit(block, lo, hi)
                                  for lo, hi in zip(bounds[1:-1], bounds[2:])]
    try:
        block(bounds[0], bounds[1])
    finally:
        errors = [f.exception() for f in futures]
    for err in errors:
        if err is not None:
            raise err


def _run_dynamic(block: Callable[[int, int], Any], bounds: list[int], n: int) -> None:
    """``n`` threads (the caller and n - 1 pool threads) take the blocks in order, each the
    next unclaimed one; every block still runs exactly once, whole, on one thread."""
    claim = itertools.count()           # next() on a count is atomic under the GIL
    n_blocks = len(bounds) - 1

    def work() -> None:
        while True:
            b = next(claim)
            if b >= n_blocks:
                return
            block(bounds[b], bounds[b + 1])

    ex = _executor(n - 1)
    futures: list[Future[Any]] = [ex.submit(work) for _ in range(n - 1)]
    try:
        work()
    finally:
        errors = [f.exception() for f in futures]
    for err in errors:
        if err is not None:
            raise err
