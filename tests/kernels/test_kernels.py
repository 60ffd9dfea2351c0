"""Every kernel against a dense numpy reference (hypothesis, with empty rows/columns and nnz = 0)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu._core import validation as V
from fastpu._kernels import csr as K
from fastpu._kernels.losses import LOSS_CODES, entry_losses, entry_values, loss_derivs, loss_value
from fastpu._kernels.topk import topk_candidates, topk_rows

from naive import loss as naive_loss
from strategies import csr_matrices, seeds


def canon(Y):
    return V.check_csr(Y, nonnegative=False)


@given(csr_matrices(values="signed"), st.integers(1, 5), seeds)
def test_sampled_dots(Y, k, seed):
    Y = canon(Y)
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(Y.shape[0], k))
    H = rng.normal(size=(Y.shape[1], k))
    out = np.empty(Y.nnz)
    K.sampled_dots(Y.indptr, Y.indices, B, H, out)
    ref = (B @ H.T)[Y.nonzero()]
    rows, cols = np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr)), Y.indices
    np.testing.assert_allclose(out, (B @ H.T)[rows, cols], rtol=1e-12, atol=1e-12)
    assert out.size == ref.size


@given(csr_matrices(values="signed"), st.integers(1, 5), seeds)
def test_csr_dense_and_transpose(Y, k, seed):
    Y = canon(Y)
    rng = np.random.default_rng(seed)
    D = rng.normal(size=(Y.shape[1], k))
    out = np.empty((Y.shape[0], k))
    K.csr_dense(Y.indptr, Y.indices, Y.data, D, out)
    np.testing.assert_allclose(out, Y.toarray() @ D, rtol=1e-12, atol=1e-12)
    # transposed product through a permutation back to the row-order values
    perm_src = sp.csr_array((np.arange(Y.nnz, dtype=float) + 1, Y.indices, Y.indptr), shape=Y.shape)
    T = V.transpose_csr(perm_src)
    perm = (T.data - 1).astype(np.int64)
    G = rng.normal(size=(Y.shape[0], k))
    out_t = np.empty((Y.shape[1], k))
    K.csr_dense_perm(T.indptr, T.indices, perm, Y.data, G, out_t)
    np.testing.assert_allclose(out_t, Y.toarray().T @ G, rtol=1e-12, atol=1e-12)


@given(st.integers(0, 6), st.integers(1, 4), st.integers(1, 4), seeds)
def test_row_scaled_product(m, k, l, seed):
    rng = np.random.default_rng(seed)
    p, B, M = rng.uniform(size=m), rng.normal(size=(m, k)), rng.normal(size=(k, l))
    out = np.empty((m, l))
    K.row_scaled_product(p, B, M, out)
    np.testing.assert_allclose(out, np.diag(p) @ B @ M, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(LOSS_CODES))
@given(y=st.sampled_from([1.0, -1.0, 0.0, -0.5]), s=st.floats(-30, 30))
def test_loss_derivatives_match_reference_and_finite_differences(name, y, s):
    kind = LOSS_CODES[name]
    v, g, h = loss_derivs(kind, y, s)
    assert v == pytest.approx(naive_loss(name, y, s), rel=1e-12, abs=1e-12)
    assert loss_value(kind, y, s) == pytest.approx(v, rel=1e-14, abs=1e-300)
    eps = 1e-6
    kink = name == "squared_hinge" and abs(1 - y * s) < 1e-4
    if not kink:
        fd = (naive_loss(name, y, s + eps) - naive_loss(name, y, s - eps)) / (2 * eps)
        assert g == pytest.approx(fd, rel=1e-5, abs=1e-7)
        g_p = loss_derivs(kind, y, s + eps)[1]
        g_m = loss_derivs(kind, y, s - eps)[1]
        assert h == pytest.approx((g_p - g_m) / (2 * eps), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("s", [1e4, -1e4, 745.0, -745.0, 0.0])
def test_logistic_is_stable_without_warnings(s):
    with np.errstate(all="raise"):
        v, g, h = loss_derivs(LOSS_CODES["logistic"], 1.0, s)
    assert np.isfinite([v, g, h]).all()
    if s > 0:
        assert v == pytest.approx(np.log1p(np.exp(-s)), abs=1e-300)
    elif s < 0:
        assert v == pytest.approx(-s, rel=1e-12)


@pytest.mark.parametrize("name", list(LOSS_CODES))
@given(seed=seeds, n=st.integers(0, 12))
def test_entry_losses_vectorised(name, seed, n):
    rng = np.random.default_rng(seed)
    kind = LOSS_CODES[name]
    y = rng.choice([1.0, -1.0], size=n)
    c, r, s = rng.uniform(0, 2, n), rng.uniform(0, 1, n), rng.normal(size=n)
    abar = -0.3
    val, d1, d2, val2 = (np.empty(n) for _ in range(4))
    entry_losses(kind, y, c, r, abar, s, val, d1, d2)
    entry_values(kind, y, c, r, abar, s, val2)
    ref = c * naive_loss(name, y, s) - r * (abar - s) ** 2
    np.testing.assert_allclose(val, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(val2, ref, rtol=1e-12, atol=1e-12)
    eps = 1e-6
    fd = (c * naive_loss(name, y, s + eps) - r * (abar - s - eps) ** 2
          - c * naive_loss(name, y, s - eps) + r * (abar - s + eps) ** 2) / (2 * eps)
    smooth = (name != "squared_hinge") | (np.abs(1 - y * s) > 1e-4)
    np.testing.assert_allclose(d1[smooth], fd[smooth], rtol=1e-5, atol=1e-6)


@given(csr_matrices(max_rows=6, max_cols=9), st.integers(1, 12), seeds)
def test_topk_skips_seen_and_matches_sort(Y, k, seed):
    Y = canon(Y)
    m, n = Y.shape
    rng = np.random.default_rng(seed)
    S = np.round(rng.normal(size=(m, n)), 1)        # rounding makes ties happen
    rows = np.arange(m, dtype=np.int64)
    items = np.empty((m, k), dtype=np.int64)
    sc = np.empty((m, k))
    topk_rows(S, Y.indptr, Y.indices, rows, k, items, sc)
    seen = Y.toarray() != 0
    for i in range(m):
        cand = [j for j in range(n) if not seen[i, j]]
        ref = sorted(cand, key=lambda j: (-S[i, j], j))[:k]
        got = [j for j in items[i] if j >= 0]
        assert got == ref
        assert np.all(items[i, len(ref):] == -1)
        assert np.all(np.isneginf(sc[i, len(ref):]))
        np.testing.assert_array_equal(sc[i, :len(ref)], S[i, ref])


@given(csr_matrices(max_rows=6, max_cols=12), st.integers(1, 12), seeds)
def test_topk_candidates_matches_sort_and_counts_non_finite_scores(Y, k, seed):
    """The best k of a sorted candidate subset, unseen and finite, ties by lower index; every
    unseen non-finite candidate (NaN, ±inf — also after the k kept are full) is counted."""
    Y = canon(Y)
    m, n = Y.shape
    rng = np.random.default_rng(seed)
    S = np.round(rng.normal(size=(m, n)), 1)        # rounding makes ties happen
    S[rng.random((m, n)) < 0.15] = np.nan
    S[rng.random((m, n)) < 0.1] = np.inf
    S[rng.random((m, n)) < 0.1] = -np.inf
    cand = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
    rows = np.arange(m, dtype=np.int64)
    items = np.empty((m, k), dtype=np.int64)
    sc = np.empty((m, k))
    bad = np.empty(m, dtype=np.int64)
    topk_candidates(S, Y.indptr, Y.indices, rows, cand, k, items, sc, bad)
    seen = Y.toarray() != 0
    for i in range(m):
        unseen = [j for j in cand if not seen[i, j]]
        ok = [j for j in unseen if np.isfinite(S[i, j])]
        ref = sorted(ok, key=lambda j: (-S[i, j], j))[:k]
        assert [j for j in items[i] if j >= 0] == ref
        assert np.all(items[i, len(ref):] == -1)
        np.testing.assert_array_equal(sc[i, :len(ref)], S[i, ref])
        assert bad[i] == len(unseen) - len(ok)


@given(st.integers(0, 5000), st.integers(1, 6), seeds)
def test_weighted_gram_is_thread_count_independent(n, k, seed):
    from fastpu._core.threads import limit_threads

    rng = np.random.default_rng(seed)
    E, q = rng.normal(size=(n, k)), rng.uniform(size=n) * (rng.random(n) < 0.7)
    M, kap = np.empty((k, k)), np.empty(k)
    K.weighted_gram(E, q, M, kap)
    np.testing.assert_allclose(M, (E.T * q) @ E, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(kap, E.T @ q, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(M, M.T)
    M1, k1 = np.empty((k, k)), np.empty(k)
    with limit_threads(1):
        K.weighted_gram(E, q, M1, k1)
    np.testing.assert_array_equal(M, M1)
    np.testing.assert_array_equal(kap, k1)


@given(st.integers(0, 5000), st.integers(1, 70), st.sampled_from([np.float32, np.float64]),
       st.lists(st.integers(0, 80), max_size=4),
       st.sampled_from(["random", "ones", "constant", "mixed"]), seeds)
def test_gram_parts_sum_to_the_gram_whatever_the_blocks(n, k, dtype, cuts, weights, seed):
    """The pairs of ``gram_parts`` are Eᵀdiag(q)E and Eᵀq; over row blocks cut at multiples of
    GRAM_GROUP, added in any order and with any thread count, they round to the same M and κ
    bit for bit as one call over all rows (what lets a Dask fit reproduce one machine's M).
    Weights of one value (all ones, or ρ) take the symmetric product; "mixed" has groups of
    each kind."""
    from fastpu._core.threads import limit_threads

    rng = np.random.default_rng(seed)
    E = (rng.normal(size=(n, k)) * rng.uniform(0.01, 100, size=k)).astype(dtype)
    q = rng.uniform(size=n) * (rng.random(n) < 0.7)
    if weights == "ones":
        q = np.ones(n)
    elif weights == "constant":
        q = np.full(n, 1 / 6)
    elif weights == "mixed":
        q[:K.GRAM_GROUP] = 0.6
    M, kap = K.sum_gram_parts([K.gram_parts(E, q)])
    E64 = E.astype(np.float64)
    ref = (E64.T * q) @ E64
    np.testing.assert_allclose(M, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max(initial=1.0))
    np.testing.assert_allclose(kap, E64.T @ q, rtol=1e-12,
                               atol=1e-12 * n * np.abs(E64).max(initial=1.0))
    np.testing.assert_array_equal(M, M.T)
    g = K.GRAM_GROUP
    bounds = [0] + sorted({n, *(min(n, c * g) for c in cuts)})   # empty blocks included
    parts = []
    with limit_threads(1):
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            parts.append(K.gram_parts(np.ascontiguousarray(E[lo:hi]), q[lo:hi]))
    for order in (parts, parts[::-1]):
        M2, k2 = K.sum_gram_parts(order)
        np.testing.assert_array_equal(M2, M)
        np.testing.assert_array_equal(k2, kap)


@given(st.integers(0, 3000), st.integers(1, 70), st.sampled_from([np.float32, np.float64]),
       st.integers(0, 5), st.integers(0, 5), seeds)
def test_turn_rows_turns_each_row_to_the_same_numbers_in_any_call(n, k, dtype, a, b, seed):
    """turn_rows is A Q in place; a block of rows cut at multiples of TURN_ROWS (or at the
    end), turned on its own with 1 or 2 threads and 1 or 2 BLAS threads, gives the rows of the
    whole call bit for bit (what a Dask block relies on)."""
    from fastpu._core.threads import limit_threads

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, k)).astype(dtype)
    Q = np.linalg.qr(rng.normal(size=(k, k)))[0].astype(dtype)
    expect = A.astype(np.float64) @ Q.astype(np.float64)
    whole = A.copy()
    K.turn_rows(whole, Q)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(whole, expect, atol=tol * np.abs(expect).max(initial=1.0))
    lo, hi = sorted((min(a * K.TURN_ROWS, n), min(b * K.TURN_ROWS, n) if b < 5 else n))
    for threads, blas in ((1, 1), (2, 2)):
        part = A[lo:hi].copy()
        with limit_threads(threads, blas=blas):
            K.turn_rows(part, Q)
        np.testing.assert_array_equal(part, whole[lo:hi])


def test_the_loss_table_names_every_code_once_and_an_unknown_code_is_nan():
    """Each kernel's ``if`` chain on the loss code ends in an explicit branch: a code with no
    branch of its own is NaN (the objective's check refuses it), never another loss."""
    from fastpu._kernels.losses import (LOSS_CODES, LOSS_TABLE, QUADRATIC_CODES, is_quadratic,
                                        loss_derivs, loss_value)

    assert [loss.code for loss in LOSS_TABLE] == list(range(len(LOSS_TABLE)))
    assert LOSS_CODES == {loss.name: loss.code for loss in LOSS_TABLE}
    for loss in LOSS_TABLE:
        assert is_quadratic(loss.code) == loss.quadratic == (loss.code in QUADRATIC_CODES)
        v, g, h = loss_derivs(loss.code, 1.0, 0.3)
        assert np.isfinite([v, g, h]).all() and v == loss_value(loss.code, 1.0, 0.3)
    unknown = len(LOSS_TABLE)
    assert not is_quadratic(unknown)
    assert np.isnan(loss_value(unknown, 1.0, 0.3))
    assert np.isnan(loss_derivs(unknown, 1.0, 0.3)).all()
