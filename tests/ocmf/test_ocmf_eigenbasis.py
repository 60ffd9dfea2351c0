"""ocmf's float32 row path at large k works in the eigenbasis of each half-step's M
(fastpu/ocmf/_problem.py, ``_eigen_basis``): W and H are turned by M's eigenvectors, so that the
rows' products M·v are diagonal.

The rows then solve the same problems in other coordinates, so the fit must be the same one up
to rounding: the objective after every iteration, and the scores W Hᵀ, equal the fit that keeps
M whole. These tests lower the threshold (``EIGEN_MIN_K``) to reach the rotated path at small k,
check the pieces against their definitions (a rotation is A Q; the rotated E's M is Λ; κ turns
with it), and that the kernel's diagonal products equal its full products with a diagonal M.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastpu as fp
from fastpu._core.threads import limit_threads
from fastpu._kernels import ocmf as K
from fastpu._kernels.losses import LOSS_CODES
from fastpu.ocmf import _fit, _problem

from strategies import seeds, LOSS_NAMES


def _fit_both(monkeypatch, Y, k, **kw):
    """(objectives, W, H) of the fit with M kept whole, and of the same fit in M's eigenbasis."""
    out = []
    for threshold in (10**9, 1):
        monkeypatch.setattr(_problem, "EIGEN_MIN_K", threshold)
        objs = []
        model = fp.ocmf.fit(Y, k, seed=0, dtype="float32",
                            callback=lambda info: objs.append(info["objective"]) and False, **kw)
        out.append((np.array(objs), model.W, model.H))
    return out


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_the_rotated_fit_is_the_same_fit_up_to_rounding(monkeypatch, loss):
    Y = sp.random(120, 90, density=0.08, random_state=3, format="csr")
    Y.data[:] = 1.0
    (f0, W0, H0), (f1, W1, H1) = _fit_both(monkeypatch, Y, 12, loss=loss, n_iter=6)
    np.testing.assert_allclose(f1, f0, rtol=1e-5)
    S0, S1 = W0.astype(np.float64) @ H0.T, W1.astype(np.float64) @ H1.T
    np.testing.assert_allclose(S1, S0, atol=1e-4 * np.abs(S0).max())
    # the factors themselves differ by an orthogonal turn, not equal entry by entry
    assert not np.allclose(W1, W0, atol=1e-3)
    np.testing.assert_allclose(np.linalg.norm(W1), np.linalg.norm(W0), rtol=1e-4)


def test_the_default_reaches_the_rotated_path_at_large_k_in_float32_only(monkeypatch):
    calls = []
    real = _problem._eigen_basis
    monkeypatch.setattr(_fit, "_eigen_basis", lambda *a: calls.append(1) or real(*a))
    Y = sp.random(60, 50, density=0.1, random_state=1, format="csr")
    Y.data[:] = 1.0
    fp.ocmf.fit(Y, _problem.EIGEN_MIN_K, n_iter=2, seed=0)                   # float32 default
    assert len(calls) == 4                                                 # two per iteration
    fp.ocmf.fit(Y, _problem.EIGEN_MIN_K, n_iter=2, seed=0, dtype="float64")   # bit for bit as before
    fp.ocmf.fit(Y, _problem.EIGEN_MIN_K - 1, n_iter=2, seed=0)
    fp.ocmf.fit(Y, _problem.EIGEN_MIN_K, n_iter=2, seed=0,
                user_features=sp.identity(60, format="csr"))              # not the row path
    assert len(calls) == 4


def test_the_rotated_fit_does_not_depend_on_the_thread_count(monkeypatch):
    monkeypatch.setattr(_problem, "EIGEN_MIN_K", 1)
    Y = sp.random(150, 70, density=0.1, random_state=5, format="csr")
    Y.data[:] = 1.0
    a = fp.ocmf.fit(Y, 16, n_iter=3, seed=2, n_threads=1)      # k = 16: the turns use 2 threads
    b = fp.ocmf.fit(Y, 16, n_iter=3, seed=2, n_threads=2)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.H, b.H)


@settings(max_examples=25, deadline=None)
@given(seeds, st.integers(1, 70), st.integers(1, 9), st.sampled_from([np.float32, np.float64]))
def test_turn_rows_is_a_times_q_in_place(seed, n, k, dtype):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, k)).astype(dtype)
    Q = np.linalg.qr(rng.standard_normal((k, k)))[0].astype(dtype)
    expect = A.astype(np.float64) @ Q.astype(np.float64)
    with limit_threads(2):
        _problem.turn_rows(A, Q)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(A, expect, atol=tol * max(1.0, np.abs(expect).max()))


@settings(max_examples=25, deadline=None)
@given(seeds, st.integers(2, 40), st.integers(1, 8))
def test_eigen_basis_makes_m_diagonal_and_keeps_the_scores(seed, n, k):
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((n, k))
    W = rng.standard_normal((n + 3, k))
    q = rng.uniform(0.1, 1.0, size=n)
    S, M, kappa = W @ H.T, (H.T * q) @ H, H.T @ q
    D, kap, diag = _problem._eigen_basis(H, q, (W, H))
    assert diag
    scale = np.abs(M).max()
    np.testing.assert_allclose(D, np.diag(np.diag(D)))                  # a diagonal matrix
    np.testing.assert_allclose((H.T * q) @ H, D, atol=1e-10 * scale)    # the rotated H's M
    np.testing.assert_allclose(H.T @ q, kap, atol=1e-10 * max(1.0, np.abs(kappa).max()))
    np.testing.assert_allclose(W @ H.T, S, atol=1e-10 * np.abs(S).max())
    np.testing.assert_allclose(np.sort(np.diag(D)), np.linalg.eigvalsh(M), atol=1e-10 * scale)


def test_eigen_basis_leaves_a_diverged_side_alone():
    H = np.array([[np.inf, 1.0], [0.0, 1.0]])
    W = np.ones((3, 2))
    M, kappa, diag = _problem._eigen_basis(H, np.ones(2), (W, H))
    assert not diag
    np.testing.assert_array_equal(W, np.ones((3, 2)))


@settings(max_examples=20, deadline=None)
@given(seeds, st.sampled_from(LOSS_NAMES), st.sampled_from([np.float32, np.float64]))
def test_row_newton_with_diagonal_products_equals_the_full_products(seed, loss, dtype):
    rng = np.random.default_rng(seed)
    m, n, k = 9, 13, 5
    Y = sp.random(m, n, density=0.4, random_state=rng, format="csr")
    indptr, indices = Y.indptr.astype(np.int32), Y.indices.astype(np.int32)
    nnz = indices.size
    E = rng.standard_normal((n, k)).astype(dtype)
    q = rng.uniform(size=n)
    M = np.diag(rng.uniform(0.5, 3.0, size=k))
    kappa = rng.standard_normal(k)
    p = rng.uniform(size=m) * 0.1
    W0 = rng.normal(scale=0.3, size=(m, k)).astype(dtype)
    corr = rng.uniform(0.0, 0.01, size=nnz)
    out = []
    for diag in (False, True):
        W, f = W0.copy(), np.empty(m)
        K.row_newton(LOSS_CODES[loss], indptr, indices, np.ones(nnz), np.ones(1), corr, q, -1.0,
                     E, M, kappa, p, 0.5, W, K.RowOptions(newton_steps=1, cg_steps=3), 4, f,
                     np.empty(0), diag=diag)
        out.append((W, f))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-6)
