"""Baselines: WRMF through ocmf's square loss equals the WRMF objective and ALS's exact solves."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpu as fp
from fastpu import baselines


def _wrmf_dense(Y, W, H, alpha, lam):
    """Hu, Koren, Volinsky (2008): Σ_ij c_ij (p_ij − w_i·h_j)² + λ(‖W‖² + ‖H‖²), c = 1 + α r."""
    R = Y.toarray()
    P = (R != 0).astype(float)
    C = 1.0 + alpha * R
    S = W @ H.T
    return float(np.sum(C * (P - S) ** 2)) + lam * (float(np.sum(W * W)) + float(np.sum(H * H)))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(0, 2**31 - 1),
       st.floats(0.0, 40.0), st.floats(0.0, 5.0))
def test_wrmf_objective_is_ocmf_square_loss_with_confidence(m, n, k, seed, alpha, lam):
    rng = np.random.default_rng(seed)
    R = (rng.random((m, n)) < 0.35) * rng.integers(1, 5, size=(m, n))
    Y = sp.csr_array(R.astype(float))
    W, H = rng.normal(size=(m, k)), rng.normal(size=(n, k))
    got = fp.ocmf.objective(baselines.wrmf_weights(Y, alpha), W, H, loss="square", rho=1.0,
                            a_bar=0.0, lam=lam)
    assert got == pytest.approx(_wrmf_dense(Y, W, H, alpha, lam), rel=1e-10, abs=1e-10)


def _als_half(C, P, H, lam):
    """Exact ALS user update: (Hᵀ C_i H + λ I) w_i = Hᵀ C_i p_i, row by row (dense)."""
    k = H.shape[1]
    return np.array([np.linalg.solve(H.T @ (C[i][:, None] * H) + lam * np.eye(k), H.T @ (C[i] * P[i]))
                     for i in range(C.shape[0])])


def test_wrmf_fit_minimises_the_wrmf_objective_as_exact_als_does():
    rng = np.random.default_rng(0)
    m, n, k, alpha, lam = 30, 20, 4, 5.0, 0.7
    R = (rng.random((m, n)) < 0.25).astype(float)
    Y = sp.csr_array(R)
    W0, H0 = rng.normal(size=(m, k)) * 0.1, rng.normal(size=(n, k)) * 0.1
    model = baselines.wrmf(Y, k, alpha=alpha, lam=lam, n_iter=30, init=(W0, H0), cg_steps=k)
    # the recorded objective is the WRMF objective of the returned factors (float32 factors,
    # the default: the fit's sums round in float32, the dense reference's in float64)
    got = _wrmf_dense(Y, model.user_factors, model.item_factors, alpha, lam)
    assert model.history[-1]["objective"] == pytest.approx(got, rel=1e-6)
    # exact alternating least squares from the same start reaches the same value (the fast
    # path's CG stops at a 1e-3 relative residual, so the iterates agree only to that order)
    C, P = 1.0 + alpha * R, (R != 0).astype(float)
    W, H = W0, H0
    for _ in range(30):
        W = _als_half(C, P, H, lam)
        H = _als_half(C.T, P.T, W, lam)
    assert got == pytest.approx(_wrmf_dense(Y, W, H, alpha, lam), rel=1e-6)
    np.testing.assert_allclose(model.scores(), W @ H.T, atol=2e-3)
    assert model.method == "wrmf" and model.params["alpha"] == alpha


def test_implicits_weighting_is_wrmf_with_alpha_minus_one_on_binary_data():
    """implicit's normal equations: A = HᵀH + λI + Σ_pos (c − 1) h hᵀ, b = Σ_pos c h, c = a·r."""
    rng = np.random.default_rng(1)
    m, n, k, a, lam = 12, 9, 3, 8.0, 0.3
    R = (rng.random((m, n)) < 0.4).astype(float)
    H = rng.normal(size=(n, k))
    implicit_rows = []
    for i in range(m):
        A, b = H.T @ H + lam * np.eye(k), np.zeros(k)
        for j in np.flatnonzero(R[i]):
            c = a * R[i, j]
            A += (c - 1.0) * np.outer(H[j], H[j])
            b += c * H[j]
        implicit_rows.append(np.linalg.solve(A, b))
    wrmf_rows = _als_half(1.0 + (a - 1.0) * R, (R != 0).astype(float), H, lam)
    np.testing.assert_allclose(np.array(implicit_rows), wrmf_rows, rtol=1e-10)


def test_wrmf_refuses_other_formulations():
    Y = sp.csr_array(np.eye(3))
    with pytest.raises(ValueError, match="wrmf fixes loss"):
        baselines.wrmf(Y, 2, loss="logistic")
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        baselines.wrmf_weights(Y, -1.0)


def test_wrmf_unknown_keyword_arguments_are_named():
    # were ocmf's "fit() got an unexpected keyword argument 'lamda'", naming neither wrmf nor lam
    Y = sp.csr_array(np.eye(3))
    with pytest.raises(TypeError, match=r"^wrmf got an unexpected keyword argument 'lamda' \(did you "
                                        r"mean 'lam'\?\); it takes alpha, lam, n_iter, seed, n_threads, "
                                        r"callback, verbose and these of fastpu\.ocmf\.fit: .*\bcg_steps\b"):
        baselines.wrmf(Y, 2, lamda=1.0)
    with pytest.raises(TypeError, match=r"^wrmf got unexpected keyword arguments 'foo', 'bar'; it takes "):
        baselines.wrmf(Y, 2, foo=1, bar=2)
    with pytest.raises(TypeError) as exc:
        baselines.wrmf(Y, 2, foo=1)
    taken = str(exc.value).split("fastpu.ocmf.fit: ")[1].split(", ")
    assert "newton_steps" in taken and not {"loss", "rho", "a_bar", "lam", "Y", "k"} & set(taken)


def test_implicit_baselines_fit_as_fastpu_fits():
    """implicit is in the test extra: its baselines run here, never skipped."""
    Y = fp.datasets.synthetic(40, 30, rank=3, density=0.2, seed=0).Y
    seen = []
    als = baselines.implicit_als(Y, 4, n_iter=3, callback=lambda info: seen.append(info["model"]().shape))
    assert als.user_factors.shape == (40, 4) and len(als.history) == 3 and seen == [(40, 30)] * 3
    stop = baselines.implicit_als(Y, 4, n_iter=5, callback=lambda info: info["iter"] == 2)
    assert len(stop.history) == 2
    bpr = baselines.implicit_bpr(Y, 4, n_iter=3)
    assert bpr.user_factors.shape[0] == 40 and np.isfinite(bpr.scores()).all()
    # named as the registry names them: ALS folds new users in through its entry
    assert (als.method, bpr.method) == ("als", "bpr")
    assert fp.fold_in(als, Y[:3]).user_factors.shape == (3, 4)


@pytest.mark.parametrize("fit", [baselines.implicit_als, baselines.implicit_bpr])
def test_implicit_baselines_without_implicit_say_what_to_install(fit, monkeypatch):
    """Where implicit is not installed (simulated: its import fails), each baseline's error says
    what to install, after checking its arguments."""
    Y = fp.datasets.synthetic(40, 30, rank=3, density=0.2, seed=0).Y
    for name in [m for m in sys.modules if m == "implicit" or m.startswith("implicit.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "implicit", None)
    with pytest.raises(ImportError, match=r"needs the `implicit` package: pip install implicit"):
        fit(Y, 4, n_iter=2)
    with pytest.raises(TypeError, match="must be a real number"):     # checked first
        fit(Y, 4, n_iter=2, regularization="x")


def test_als_fold_in_solves_implicits_row_problem():
    """A new user of an implicit ALS model: (HᵀH + λI + Σ_pos (c − 1) h hᵀ) w = Σ_pos c h, c = a·r
    (implicit's own normal equations), solved exactly; no implicit needed to fold in."""
    rng = np.random.default_rng(4)
    n, k, a, lam = 9, 3, 6.0, 0.4
    H = rng.normal(size=(n, k))
    model = fp.Factorization(rng.normal(size=(5, k)), H, method="als",
                             params=dict(k=k, alpha=a, regularization=lam, n_iter=3, seed=0))
    R = (rng.random((4, n)) < 0.4) * rng.integers(1, 4, size=(4, n)).astype(float)
    R[0, :2] = 1.0                                    # every new row has a positive
    new = fp.fold_in(model, sp.csr_array(R))
    for i in range(4):
        A, b = H.T @ H + lam * np.eye(k), np.zeros(k)
        for j in np.flatnonzero(R[i]):
            c = a * R[i, j]
            A += (c - 1.0) * np.outer(H[j], H[j])
            b += c * H[j]
        np.testing.assert_allclose(new.user_factors[i], np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(new.item_factors, H)
