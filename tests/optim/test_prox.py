"""Proximal maps against their defining optimality conditions."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from hypothesis import given, strategies as st

from fastpu import optim as prox

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


def _matrix(seed, m, n, rank=None):
    rng = np.random.default_rng(seed)
    if rank is None:
        return rng.standard_normal((m, n)) * rng.uniform(0.1, 3)
    return rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))


# ----------------------------------------------------------------- soft-threshold, box


@given(st.lists(finite, min_size=1, max_size=20), st.floats(0, 5))
def test_soft_threshold_subgradient_condition(xs, tau):
    x = np.array(xs)
    z = prox.soft_threshold(x, tau)
    nz = z != 0
    # z ≠ 0: z − x + τ sign(z) = 0 ;  z = 0: |x| ≤ τ
    np.testing.assert_allclose(z[nz] - x[nz] + tau * np.sign(z[nz]), 0.0, atol=1e-12)
    assert np.all(np.abs(x[~nz]) <= tau + 1e-12)


def test_soft_threshold_scalar_and_zero_tau():
    assert prox.soft_threshold(-3.0, 1.0) == -2.0
    x = np.array([-1.5, 0.0, 2.5])
    np.testing.assert_array_equal(prox.soft_threshold(x, 0.0), x)


@given(st.lists(finite, min_size=1, max_size=20), finite, st.floats(0, 5))
def test_project_box_variational_inequality(xs, lo, width):
    x = np.array(xs)
    hi = lo + width
    z = prox.project_box(x, lo, hi)
    assert np.all(z >= lo) and np.all(z <= hi)
    # (x − z)(w − z) ≤ 0 for every w in the box: checking the two corners suffices per entry
    for w in (lo, hi):
        assert np.all((x - z) * (w - z) <= 1e-12)


def test_box_and_threshold_messages():
    with pytest.raises(ValueError, match="lo must be <= hi, got lo=2 > hi=1"):
        prox.project_box([0.5], 2.0, 1.0)
    with pytest.raises(ValueError, match="tau must be >= 0.0, got -1"):
        prox.soft_threshold([1.0], -1.0)
    with pytest.raises(TypeError, match="tau must be a real number, got 'a'"):
        prox.soft_threshold([1.0], "a")
    with pytest.raises(ValueError, match="x has 1 non-finite"):
        prox.soft_threshold([1.0, np.nan], 1.0)
    with pytest.raises(TypeError, match="x must be a dense array or a number, got a scipy.sparse"):
        prox.project_box(sp.csr_array(np.eye(2)), 0, 1)
    with pytest.raises(TypeError, match="x must be numeric, got list"):
        prox.soft_threshold(["a", None], 1.0)


# ----------------------------------------------------------------- singular value thresholding


def _check_svt_optimality(M, tau, X):
    """M − X ∈ τ ∂‖X‖_*:  M − X = τ (L R + W), Lᵀ W = 0, W Rᵀ = 0, ‖W‖₂ ≤ 1."""
    L, s, R = np.linalg.svd(X, full_matrices=False)
    r = int((s > 1e-9 * max(1.0, s.max(initial=0))).sum())
    L, R = L[:, :r], R[:r]
    G = M - X
    if tau == 0:
        np.testing.assert_allclose(G, 0, atol=1e-9)
        return
    G = G / tau
    # M − X carries rounding of order ε‖M‖₂, which the division by τ amplifies: a tiny τ
    # (hypothesis found 2e-8) needs the tolerance to grow with ‖M‖₂ / τ
    tol = 1e-7 + 1e3 * np.finfo(float).eps * np.linalg.norm(M, 2) / tau
    np.testing.assert_allclose(L.T @ G @ R.T, np.eye(r), atol=tol)
    W = G - L @ R
    np.testing.assert_allclose(L.T @ W, 0, atol=tol)
    np.testing.assert_allclose(W @ R.T, 0, atol=tol)
    assert np.linalg.norm(W, 2) <= 1 + tol


@given(st.integers(0, 10**6), st.integers(1, 9), st.integers(1, 9), st.floats(0, 3),
       st.sampled_from(["auto", "full"]))
def test_svt_subgradient_condition(seed, m, n, tau, method):
    M = _matrix(seed, m, n)
    X = prox.svt(M, tau, method=method)
    _check_svt_optimality(M, tau, X)


@given(st.integers(0, 10**6), st.integers(1, 8), st.integers(1, 8))
def test_svt_identity_at_zero(seed, m, n):
    M = _matrix(seed, m, n)
    np.testing.assert_allclose(prox.svt(M, 0.0), M, atol=1e-10)


@given(st.integers(0, 10**6), st.integers(1, 8), st.integers(1, 8), st.floats(0, 3))
def test_svt_nonexpansive(seed, m, n, tau):
    A = _matrix(seed, m, n)
    B = _matrix(seed + 1, m, n)
    d_out = np.linalg.norm(prox.svt(A, tau) - prox.svt(B, tau))
    assert d_out <= np.linalg.norm(A - B) + 1e-10


@given(st.integers(0, 10**6), st.integers(20, 40), st.integers(20, 40), st.integers(1, 6))
def test_svt_truncated_stops_at_threshold_and_matches_full(seed, m, n, rank):
    rng = np.random.default_rng(seed)
    M = _matrix(seed, m, n, rank=rank) + 0.01 * rng.standard_normal((m, n))
    s = np.linalg.svd(M, compute_uv=False)
    tau = float(0.5 * (s[rank - 1] + s[rank]))        # between the signal and the noise
    trunc = prox.svt_factors(M, tau, method="truncated", k0=2)
    full = prox.svt_factors(M, tau, method="full")
    assert trunc.rank == full.rank == rank
    assert not trunc.full and trunc.n_computed < min(m, n)
    np.testing.assert_allclose(trunc.dense(), full.dense(), atol=1e-8)
    np.testing.assert_allclose(trunc.s, s[:rank] - tau, rtol=1e-10)
    _check_svt_optimality(M, tau, trunc.dense())


def test_svt_accepts_linear_operator_and_sparse():
    M = _matrix(3, 30, 25, rank=3) + 0.01 * _matrix(4, 30, 25)
    tau = 1.0
    ref = prox.svt(M, tau, method="full")
    op = spla.LinearOperator(M.shape, matvec=lambda x: M @ x, rmatvec=lambda y: M.T @ y,
                             matmat=lambda X: M @ X, dtype=np.float64)
    np.testing.assert_allclose(prox.svt(op, tau, method="truncated"), ref, atol=1e-8)
    np.testing.assert_allclose(prox.svt(op, tau, method="full"), ref, atol=1e-8)
    np.testing.assert_allclose(prox.svt(sp.csr_array(M), tau), ref, atol=1e-8)


def test_svt_deterministic_and_nuclear_norm():
    M = _matrix(7, 80, 70)
    a = prox.svt_factors(M, 2.0, method="truncated", seed=3)
    b = prox.svt_factors(M, 2.0, method="truncated", seed=3)
    np.testing.assert_array_equal(a.dense(), b.dense())
    assert a.nuclear_norm == pytest.approx(np.linalg.svd(a.dense(), compute_uv=False).sum(), rel=1e-10)


def test_svt_messages():
    with pytest.raises(TypeError, match="M must be a dense array, a scipy.sparse matrix or a LinearOperator, got str"):
        prox.svt("abc", 1.0)
    with pytest.raises(ValueError, match="M has 1 non-finite"):
        prox.svt(np.array([[1.0, np.inf]]), 1.0)
    with pytest.raises(ValueError, match="unknown method 'qr'; expected one of"):
        prox.svt(np.eye(2), 1.0, method="qr")
    with pytest.raises(ValueError, match="tau must be >= 0.0, got -0.5"):
        prox.svt(np.eye(2), -0.5)
    with pytest.raises(ValueError, match="k0 must be >= 1, got 0"):
        prox.svt(np.eye(2), 0.5, k0=0)
    with pytest.raises(ValueError, match="M must be 2-dimensional"):
        prox.svt(np.ones(3), 0.5)


@pytest.mark.parametrize("kind", ["dense", "sparse", "operator"])
@pytest.mark.parametrize("method", ["auto", "truncated"])
def test_svt_of_the_zero_matrix_is_rank_zero(kind, method):
    """ARPACK cannot start on the zero matrix (its error -9); a CSRR-I fit met one in tuning.
    Above the full-SVD size the truncated route must still return the rank-0 result."""
    m, n = 300, 400
    Z = np.zeros((m, n))
    M = {"dense": Z, "sparse": sp.csr_array((m, n)), "operator": spla.aslinearoperator(Z)}[kind]
    res = prox.svt_factors(M, 0.5, method=method)
    assert res.s.size == 0 and res.left.shape == (m, 0) and res.right.shape == (0, n)
    np.testing.assert_array_equal(prox.svt(M, 0.5, method=method), Z)
