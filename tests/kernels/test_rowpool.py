"""Row blocks on Python threads (fastpu/_kernels/rowpool.py) and the kernels that use them.

The row solver and the Gram kernel run a serial GIL-free kernel on one block of rows per
thread; these tests check that the blocks cover every row once, that errors come back to the
caller, and that the split never changes a result: row_newton on row blocks equals the same
solver run on the whole matrix as one block, and row by row.
"""

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu._kernels import ocmf as updates
from fastpu._kernels.losses import LOSS_CODES
from fastpu._kernels.rowpool import row_blocks, run_rows
from fastpu._core.threads import limit_threads

from strategies import seeds, LOSS_NAMES


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 8), st.integers(0, 64))
def test_row_blocks_are_contiguous_nonempty_and_cover_every_row(lengths, n_blocks, row_cost):
    indptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    m = len(lengths)
    b = row_blocks(indptr, n_blocks, row_cost)
    assert b[0] == 0 and b[-1] == m
    assert len(b) - 1 <= max(1, min(n_blocks, m))
    if m:
        assert all(lo < hi for lo, hi in zip(b[:-1], b[1:]))


def test_row_blocks_balance_the_work_not_the_row_count():
    # one long row then many short ones: the first block must end right after the long row
    lengths = [1000] + [1] * 999
    indptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    assert row_blocks(indptr, 2, 0) == [0, 1, 1000]
    assert row_blocks(np.zeros(11, dtype=np.int64), 2, 1) == [0, 5, 10]


@given(st.integers(0, 30), st.integers(1, 4), st.integers(1, 8))
def test_run_rows_calls_each_row_exactly_once(m, n_threads, per_thread):
    hits = np.zeros(m, dtype=np.int64)
    calls = []
    lock = threading.Lock()

    def block(lo, hi):
        with lock:
            hits[lo:hi] += 1
            calls.append((lo, hi))

    run_rows(block, np.arange(m + 1, dtype=np.int64), 1, n_threads=n_threads,
             per_thread=per_thread)
    np.testing.assert_array_equal(hits, np.ones(m, dtype=np.int64))
    # the blocks are row_blocks' cut, each called once (dynamically claimed when per_thread > 1)
    bounds = row_blocks(np.arange(m + 1, dtype=np.int64), n_threads * per_thread
                        if n_threads > 1 else 1, 1)
    assert sorted(calls) == list(zip(bounds[:-1], bounds[1:]))


def test_dynamic_blocks_raise_an_error_of_any_block_after_the_others_ran():
    done = []
    lock = threading.Lock()

    def block(lo, hi):
        with lock:
            done.append(lo)
        if lo == 3:
            raise ValueError(f"block {lo} failed")

    with pytest.raises(ValueError, match="block 3 failed"):
        run_rows(block, np.arange(13, dtype=np.int64), 1, n_threads=2, per_thread=2)
    assert sorted(done) == [0, 3, 6, 9]


def test_run_rows_raises_an_error_of_any_block_after_all_blocks_ran():
    done = []

    def block(lo, hi):
        done.append(lo)
        if lo > 0:
            raise ValueError(f"block {lo} failed")

    with pytest.raises(ValueError, match="block .* failed"):
        run_rows(block, np.arange(11, dtype=np.int64), 1, n_threads=2)
    assert sorted(done) == [0, 5]


def _problem(seed, m=40, n=30, k=5, loss="logistic"):
    rng = np.random.default_rng(seed)
    # skewed rows: a few long rows and many short or empty ones, so that blocks differ in size
    counts = np.minimum(n, rng.zipf(1.6, size=m) - 1)
    rows = np.repeat(np.arange(m), counts)
    cols = np.concatenate([rng.choice(n, size=c, replace=False) for c in counts] or [[]])
    Y = sp.csr_array((np.ones(rows.size), (rows, cols.astype(np.int64))), shape=(m, n))
    Y.sort_indices()
    indptr, indices = Y.indptr.astype(np.int64), Y.indices.astype(np.int64)
    nnz = indices.size
    E = rng.normal(size=(n, k))
    q = rng.uniform(size=n)
    return dict(kind=LOSS_CODES[loss], indptr=indptr, indices=indices, labels=np.ones(nnz),
                weights=rng.uniform(0.5, 2.0, size=nnz), corr=rng.uniform(0.0, 0.01, size=nnz),
                q=q, abar=-1.0, E=E, M=(E.T * q) @ E, kappa=E.T @ q, p=rng.uniform(size=m) * 0.01,
                lam=0.5, W=rng.normal(scale=0.3, size=(m, k)))


def _solve(P, lo, hi, W, f, local_max, f0):
    updates._solve_chunk(P["kind"], lo, hi, P["indptr"], P["indices"], P["labels"], P["weights"],
                         P["corr"], P["q"], P["abar"], P["E"], P["M"], False, P["kappa"],
                         P["p"], np.array([P["lam"]]), W, 1, 4, 1e-3, 1e-4, 0.5, 30, local_max,
                         f, f0, np.empty((0, 3), dtype=np.int32),
                         P["E"].dtype != np.float64,      # row_newton's exact_value
                         False)                           # precondition


@given(seeds, st.sampled_from(LOSS_NAMES), st.sampled_from([2, 1000]))
def test_row_newton_on_thread_blocks_equals_one_block_and_row_by_row(seed, loss, local_max):
    P = _problem(seed, loss=loss)
    m = P["W"].shape[0]
    W1, f1, g1 = P["W"].copy(), np.empty(m), np.empty(m)
    with limit_threads(2):
        updates.row_newton(P["kind"], P["indptr"], P["indices"], P["labels"], P["weights"],
                           P["corr"], P["q"], P["abar"], P["E"], P["M"], P["kappa"], P["p"],
                           P["lam"], W1, updates.RowOptions(newton_steps=1, cg_steps=4), local_max,
                           f1, g1)
    W2, f2, g2 = P["W"].copy(), np.empty(m), np.empty(m)
    _solve(P, 0, m, W2, f2, local_max, g2)
    W3, f3, g3 = P["W"].copy(), np.empty(m), np.empty(m)
    for i in range(m):
        _solve(P, i, i + 1, W3, f3, local_max, g3)
    for W, f, g in ((W2, f2, g2), (W3, f3, g3)):
        np.testing.assert_array_equal(W1, W)
        np.testing.assert_array_equal(f1, f)
        np.testing.assert_array_equal(g1, g)


def test_a_forked_child_gets_its_own_thread_pool():
    import multiprocessing

    run_rows(lambda lo, hi: None, np.arange(5, dtype=np.int64), 1, n_threads=2)   # pool exists
    ctx = multiprocessing.get_context("fork")

    def child():
        hits = np.zeros(4, dtype=np.int64)

        def block(lo, hi):
            hits[lo:hi] += 1

        run_rows(block, np.arange(5, dtype=np.int64), 1, n_threads=2)
        raise SystemExit(0 if hits.tolist() == [1, 1, 1, 1] else 1)

    proc = ctx.Process(target=child)
    proc.start()
    proc.join(60)
    if proc.is_alive():              # hung on the parent's dead pool threads
        proc.terminate()
        proc.join()
    assert proc.exitcode == 0
