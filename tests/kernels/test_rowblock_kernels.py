"""Serial kernels on row blocks (fastpu/_kernels/rowpool.py) against one block.

HOMF's ``ridge_columns``, fbgd's ``positive_terms`` and ``side_gradient``, the csr products and
the evaluation's top-k and AUC kernels used to be ``parallel=True`` kernels; they now call a
serial GIL-free kernel on one block of rows per thread. Each row is still computed whole by one thread, so the result must be bit for bit that
of the same serial kernel run once over every row, at 1 and 2 threads and for any chunking.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpu._kernels import fbgd as KF
from fastpu._kernels import homf as KH
from fastpu._core.threads import limit_threads

seeds = st.integers(0, 2**31 - 1)


def _chunks(n, rng):
    """Random increasing cuts 0 = c_0 < ... < c_q = n (at least one chunk when n > 0)."""
    if n <= 1:
        return np.array([0, n], dtype=np.int64)
    inner = np.sort(rng.choice(np.arange(1, n), size=rng.integers(0, n), replace=False))
    return np.concatenate(([0], inner, [n])).astype(np.int64)


def _skewed_csr(m, n, rng, values=True):
    """A CSR m×n with a few long rows and many short or empty ones (blocks of unequal size)."""
    counts = np.minimum(n, rng.zipf(1.6, size=m) - 1)
    rows = np.repeat(np.arange(m), counts)
    cols = np.concatenate([rng.choice(n, size=c, replace=False) for c in counts] + [[]])
    data = rng.uniform(0.5, 2.0, rows.size) if values else np.ones(rows.size)
    Y = sp.csr_array((data, (rows, cols.astype(np.int64))), shape=(m, n))
    Y.sort_indices()
    return Y


# ----------------------------------------------------------------------------- homf

@settings(max_examples=40, deadline=None)
@given(seed=seeds, b=st.integers(1, 30), N=st.integers(1, 12), k=st.integers(1, 4),
       dense=st.booleans())
def test_ridge_columns_on_row_blocks_equal_one_block(seed, b, N, k, dense):
    rng = np.random.default_rng(seed)
    dens = rng.random(b)[:, None]
    Ct = rng.random((b, N)) * (rng.random((b, N)) < dens)
    U = rng.normal(size=(N, k))
    UtU = U.T @ U

    def run(fn):
        out, loss, ok = np.full((b, k), np.nan), np.full(b, np.nan), np.zeros(b, dtype=np.bool_)
        fn(Ct, U, UtU, 0.3, dense, out, loss, ok)
        return out, loss, ok

    ref = run(lambda *a: KH.ridge_block(0, b, *a))
    assert ref[2].all() and np.isfinite(ref[0]).all()
    for threads in (1, 2):
        with limit_threads(threads):
            for a, r in zip(run(KH.ridge_columns), ref):
                np.testing.assert_array_equal(a, r)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dense", [False, True])
def test_empty_inputs(threads, dense):
    """No column: nothing is read or written. A column with no nonzero, or no rows of U at all:
    the ridge solution of (G + λI) v = 0 is v = 0, with loss 0, and the solve succeeds."""
    rng = np.random.default_rng(1)
    U = rng.normal(size=(4, 3))
    UtU = U.T @ U
    U0, UtU0 = U.copy(), UtU.copy()
    with limit_threads(threads):
        out = np.empty((0, 3))
        KH.ridge_columns(np.empty((0, 4)), U, UtU, 0.1, dense, out, np.empty(0),
                         np.empty(0, dtype=np.bool_))
        np.testing.assert_array_equal(U, U0)
        np.testing.assert_array_equal(UtU, UtU0)
        for Ct, Ui in ((np.zeros((5, 4)), U), (np.empty((5, 0)), np.empty((0, 3)))):
            out, loss, ok = np.full((5, 3), np.nan), np.full(5, np.nan), np.zeros(5, dtype=np.bool_)
            KH.ridge_columns(Ct, Ui, Ui.T @ Ui, 0.1, dense, out, loss, ok)
            np.testing.assert_array_equal(out, np.zeros((5, 3)))
            np.testing.assert_array_equal(loss, np.zeros(5))
            assert ok.all()


# ----------------------------------------------------------------------------- small kernels
# The small kernels run as one block below MIN_BLOCK_WORK; the tests set it to 1 so that even
# these small inputs are split into one block per thread.

def _split_runs(rows_kernel, m, args, rng):
    """``rows_kernel`` over random contiguous blocks of 0 .. m, one call per block, serially."""
    for lo, hi in zip((c := _chunks(m, rng))[:-1], c[1:]):
        rows_kernel(lo, hi, *args)


def _check_blocks(monkeypatch, module, name, m, make_args, rng):
    """``module.name`` (row blocks at 1 and 2 threads) and random splits of ``_name_rows``
    equal one ``_name_rows`` call over every row, bit for bit, in every output."""
    rows_kernel = getattr(module, f"_{name}_rows")
    ref = make_args()
    rows_kernel(0, m, *ref)
    monkeypatch.setattr(module, "MIN_BLOCK_WORK", 1)
    runs = []
    for threads in (1, 2):
        with limit_threads(threads):
            args = make_args()
            getattr(module, name)(*args)
            runs.append(args)
    args = make_args()
    _split_runs(rows_kernel, m, args, rng)
    runs.append(args)
    for args in runs:
        for a, r in zip(args, ref):
            if isinstance(r, np.ndarray):
                np.testing.assert_array_equal(a, r)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, m=st.integers(1, 30), n=st.integers(1, 12), k=st.integers(1, 6))
def test_csr_kernels_on_row_blocks_equal_one_block(seed, m, n, k):
    from fastpu._kernels import csr
    rng = np.random.default_rng(seed)
    A = _skewed_csr(m, n, rng)
    ip, ix = A.indptr.astype(np.int64), A.indices.astype(np.int64)
    B, H, D = rng.normal(size=(m, k)), rng.normal(size=(n, k)), rng.normal(size=(n, k))
    perm = rng.permutation(A.nnz).astype(np.int64)
    mp = pytest.MonkeyPatch()
    try:
        _check_blocks(mp, csr, "sampled_dots", m,
                      lambda: (ip, ix, B, H, np.full(A.nnz, np.nan)), rng)
        mp.undo()
        _check_blocks(mp, csr, "csr_dense", m,
                      lambda: (ip, ix, A.data, D, np.full((m, k), np.nan)), rng)
        mp.undo()
        _check_blocks(mp, csr, "csr_dense_perm", m,
                      lambda: (ip, ix, perm, A.data, D, np.full((m, k), np.nan)), rng)
    finally:
        mp.undo()
    out = np.empty((m, k))
    csr.csr_dense(ip, ix, A.data, D, out)
    np.testing.assert_allclose(out, A @ D, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, m=st.integers(1, 30), n=st.integers(1, 12), k=st.integers(1, 5))
def test_fbgd_small_kernels_on_row_blocks_equal_one_block(seed, m, n, k):
    rng = np.random.default_rng(seed)
    A = _skewed_csr(m, n, rng)
    ip, ix, nnz = A.indptr.astype(np.int64), A.indices.astype(np.int64), A.nnz
    P, Q = rng.normal(size=(m, k)), rng.normal(size=(n, k))
    S = rng.normal(size=(k, k))
    s, rowscale = rng.normal(size=k), rng.uniform(0.5, 2.0, m)
    w = [rng.uniform(0.1, 2.0, nnz) for _ in range(3)]
    mp = pytest.MonkeyPatch()
    try:
        _check_blocks(mp, KF, "positive_terms", m, lambda: (
            ip, ix, w[0], w[1], w[2], P, Q, -0.3, np.full(nnz, np.nan), np.full(m, np.nan)), rng)
        mp.undo()
        _check_blocks(mp, KF, "side_gradient", m, lambda: (
            ip, ix, w[0], w[1], P, Q, S, s, rowscale, -0.3, np.full((m, k), np.nan)), rng)
    finally:
        mp.undo()


@settings(max_examples=25, deadline=None)
@given(seed=seeds, b=st.integers(1, 30), n=st.integers(1, 15), kmax=st.integers(1, 6))
def test_ranking_kernels_on_row_blocks_equal_one_block(seed, b, n, kmax):
    from fastpu._kernels import ranking, topk
    rng = np.random.default_rng(seed)
    m = b + 3
    train, rel = _skewed_csr(m, n, rng), _skewed_csr(m, n, rng)
    rel = sp.csr_array((rel - rel.multiply(train > 0)) > 0, dtype=np.float64)
    rel.sort_indices()
    tr = (train.indptr.astype(np.int64), train.indices.astype(np.int64))
    rl = (rel.indptr.astype(np.int64), rel.indices.astype(np.int64))
    rows = rng.permutation(m)[:b].astype(np.int64)
    S = np.round(rng.normal(size=(b, n)), 1)          # ties
    items = rng.integers(-1, n, size=(b, kmax))
    ks = np.arange(1, kmax + 1, dtype=np.int64)
    neg = S.copy()
    mp = pytest.MonkeyPatch()
    try:
        _check_blocks(mp, topk, "topk_rows", b, lambda: (
            S, *tr, rows, kmax, np.zeros((b, kmax), dtype=np.int64), np.zeros((b, kmax))), rng)
        mp.undo()
        _check_blocks(mp, ranking, "topk_metrics", b, lambda: (
            items, rows, *rl, ks, np.zeros((b, kmax), dtype=np.int64),
            *(np.zeros((b, kmax)) for _ in range(3))), rng)
        mp.undo()
        ranking.mask_rows(neg, rows, *tr, np.nan)
        ranking.mask_rows(neg, rows, *rl, np.nan)
        neg.sort(axis=1)
        _check_blocks(mp, ranking, "auc_sorted", b, lambda: (
            S, neg, rows, tr[0], *rl, np.full(b, -1.0)), rng)
    finally:
        mp.undo()
