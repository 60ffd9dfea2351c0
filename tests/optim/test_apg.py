"""The APG driver on a lasso and a nuclear-norm problem with known solutions."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fastpu import optim as optim_mod
from fastpu.optim import apg
from fastpu.optim import CALLBACK, CONVERGED
from fastpu.optim import project_box, soft_threshold, svt


class Lasso:
    """½‖A x − b‖² + lam ‖x‖₁."""

    def __init__(self, A, b, lam):
        self.A, self.b, self.lam = A, b, lam
        self.L = np.linalg.norm(A, 2) ** 2

    def fun(self, x):
        r = self.A @ x - self.b
        return 0.5 * r @ r

    def objective(self, x):
        return self.fun(x) + self.lam * np.abs(x).sum()

    def grad(self, x):
        return self.A.T @ (self.A @ x - self.b)

    def prox(self, v, step):
        return soft_threshold(v, step * self.lam)


class Completion:
    """½‖P_Ω(X − M)‖²_F + tau ‖X‖_* (matrix completion with a nuclear norm)."""

    def __init__(self, M, mask, tau):
        self.M, self.mask, self.tau = M, mask, tau

    def fun(self, X):
        R = self.mask * (X - self.M)
        return 0.5 * float((R * R).sum())

    def objective(self, X):
        return self.fun(X) + self.tau * np.linalg.svd(X, compute_uv=False).sum()

    def grad(self, X):
        return self.mask * (X - self.M)

    def prox(self, V, step):
        return svt(V, step * self.tau)


def _lasso(seed, m, n, orthonormal):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    if orthonormal:
        A = np.linalg.qr(A)[0]
    x_true = rng.standard_normal(n) * (rng.random(n) < 0.5)
    return A, A @ x_true + 0.1 * rng.standard_normal(m)


@given(st.integers(0, 10**6), st.integers(2, 8), st.floats(0.01, 2.0),
       st.sampled_from([None, "function", "gradient"]))
def test_lasso_orthonormal_design_closed_form(seed, n, lam, restart):
    # With orthonormal columns the lasso solution is soft(Aᵀ b, lam).
    A, b = _lasso(seed, n + 3, n, orthonormal=True)
    res = apg(Lasso(A, b, lam), np.zeros(n), step=1.0, n_iter=50, restart=restart)
    np.testing.assert_allclose(res.x, soft_threshold(A.T @ b, lam), atol=1e-10)


@given(st.integers(0, 10**6), st.integers(2, 6), st.floats(0.05, 1.0),
       st.sampled_from([None, "function", "gradient"]), st.booleans())
def test_lasso_general_design_kkt(seed, n, lam, restart, line_search):
    A, b = _lasso(seed, 2 * n + 2, n, orthonormal=False)
    prob = Lasso(A, b, lam)
    step = 10.0 / prob.L if line_search else 1.0 / prob.L
    res = apg(prob, np.zeros(n), step=step, n_iter=3000, restart=restart, line_search=line_search)
    g = A.T @ (A @ res.x - b)
    nz = np.abs(res.x) > 1e-8
    # KKT: g_i = −lam sign(x_i) where x_i ≠ 0, |g_i| ≤ lam where x_i = 0
    np.testing.assert_allclose(g[nz], -lam * np.sign(res.x[nz]), atol=1e-6)
    assert np.all(np.abs(g[~nz]) <= lam + 1e-6)
    if line_search:
        assert res.step <= step


def test_nuclear_norm_completion_optimality():
    rng = np.random.default_rng(0)
    m, n, tau = 12, 10, 0.5
    M = rng.standard_normal((m, 3)) @ rng.standard_normal((3, n))
    mask = (rng.random((m, n)) < 0.7).astype(float)
    prob = Completion(M, mask, tau)
    res = apg(prob, np.zeros((m, n)), step=1.0, n_iter=3000, restart="function")
    X = res.x
    # optimality: P_Ω(M − X) ∈ tau ∂‖X‖_*
    G = mask * (M - X) / tau
    L, s, R = np.linalg.svd(X, full_matrices=False)
    r = int((s > 1e-8).sum())
    L, R = L[:, :r], R[:r]
    np.testing.assert_allclose(L.T @ G @ R.T, np.eye(r), atol=1e-6)
    W = G - L @ R
    np.testing.assert_allclose(L.T @ W, 0, atol=1e-6)
    np.testing.assert_allclose(W @ R.T, 0, atol=1e-6)
    assert np.linalg.norm(W, 2) <= 1 + 1e-6


def test_fully_observed_nuclear_norm_is_svt():
    # ½ c ‖X − M‖² + tau ‖X‖_* has the known solution svt(M, tau / c).
    rng = np.random.default_rng(1)
    M = rng.standard_normal((7, 5))
    c, tau = 2.0, 0.8
    prob = Completion(M, np.full(M.shape, c), tau)
    res = apg(prob, np.zeros_like(M), step=0.1, n_iter=400)
    np.testing.assert_allclose(res.x, svt(M, tau / c), atol=1e-9)


def test_acceleration_beats_ista_and_momentum_schedule():
    A, b = _lasso(5, 60, 40, orthonormal=False)
    prob = Lasso(A, b, 0.1)
    ref = apg(prob, np.zeros(40), step=1 / prob.L, n_iter=20000, tol=1e-15).fun
    fast = apg(prob, np.zeros(40), step=1 / prob.L, n_iter=200)
    slow = apg(prob, np.zeros(40), step=1 / prob.L, n_iter=200, momentum=False)
    assert fast.fun - ref < 0.1 * (slow.fun - ref)
    tau, betas = 1.0, []
    for _ in range(5):
        tau_new = (1 + np.sqrt(1 + 4 * tau * tau)) / 2
        betas.append((tau - 1) / tau_new)
        tau = tau_new
    np.testing.assert_allclose([h["beta"] for h in fast.history[:5]], betas, rtol=1e-14)
    assert all(h["beta"] == 0.0 for h in slow.history)


def test_extrapolate_hook_projects_and_callback_stops():
    class Box(Lasso):
        def extrapolate(self, x_new, x, beta):
            return project_box(x_new + beta * (x_new - x), -0.1, 0.1)

    A, b = _lasso(2, 10, 4, orthonormal=False)
    seen = []
    res = apg(Box(A, b, 0.1), np.zeros(4), step=0.01, n_iter=50,
              callback=lambda info: seen.append(info["iter"]) or info["iter"] == 3)
    assert res.status == CALLBACK and res.nit == 3 and seen == [1, 2, 3]
    assert np.all(np.abs(res.y) <= 0.1)


def test_tol_converges():
    A, b = _lasso(3, 10, 4, orthonormal=True)
    res = apg(Lasso(A, b, 0.1), np.zeros(4), step=1.0, n_iter=100, tol=1e-12)
    assert res.status == CONVERGED and res.nit < 100


def test_apg_messages():
    A, b = _lasso(0, 5, 3, orthonormal=False)
    prob = Lasso(A, b, 0.1)
    with pytest.raises(TypeError, match="problem must have a grad"):
        apg(object(), np.zeros(3), step=1.0)

    class NoProx:
        def grad(self, x):
            return x

    with pytest.raises(TypeError, match="problem must have prox"):
        apg(NoProx(), np.zeros(3), step=1.0)
    with pytest.raises(ValueError, match="step must be > 0.0, got 0"):
        apg(prob, np.zeros(3), step=0.0)
    with pytest.raises(ValueError, match="unknown restart 'always'"):
        apg(prob, np.zeros(3), step=1.0, restart="always")
    with pytest.raises(ValueError, match="n_iter must be >= 0, got -1"):
        apg(prob, np.zeros(3), step=1.0, n_iter=-1)
    with pytest.raises(ValueError, match="shrink must be < 1.0, got 1"):
        apg(prob, np.zeros(3), step=1.0, shrink=1.0)

    class Bare:
        def grad(self, x):
            return x

        def prox(self, v, step):
            return v

    with pytest.raises(ValueError, match="line_search=True needs problem.fun"):
        apg(Bare(), np.zeros(3), step=1.0, line_search=True)
    with pytest.raises(ValueError, match="restart='function' needs problem.objective"):
        apg(Bare(), np.zeros(3), step=1.0, restart="function")
    with pytest.raises(ValueError, match="tol > 0 needs problem.objective"):
        apg(Bare(), np.zeros(3), step=1.0, tol=1e-3)
    with pytest.raises(TypeError, match="callback must be callable or None, got int"):
        apg(prob, np.zeros(3), step=1.0, callback=3)
    assert "apg" in optim_mod.__all__


def test_an_array_y0_must_have_x0s_shape():
    class Lasso:
        b = np.array([3.0, -0.5, -2.0])

        def grad(self, x):
            return x - self.b

        def prox(self, v, step):
            return soft_threshold(v, step)

    with pytest.raises(ValueError, match=r"y0 has shape \(4,\); expected x0's shape \(3,\)"):
        apg(Lasso(), np.ones(3), step=0.1, y0=np.ones(4))
    with pytest.raises(TypeError, match="y0 must be an array like x0"):
        apg(Lasso(), np.ones(3), step=0.1, y0="ones")
    res = apg(Lasso(), np.zeros(3), step=0.5, n_iter=60, y0=np.zeros(3))
    np.testing.assert_allclose(res.x, [2.0, 0.0, -1.0], atol=1e-6)


def test_callback_must_return_none_or_a_bool():
    """An array return was numpy's "truth value of an array ... is ambiguous"."""
    A, b = _lasso(2, 10, 4, orthonormal=False)
    with pytest.raises(TypeError, match=r"apg: callback must return None or a bool \(True stops "
                                        r"the fit\), got a numpy array of shape \(4,\)"):
        apg(Lasso(A, b, 0.1), np.zeros(4), step=0.01, n_iter=3, callback=lambda info: info["x"])
    res = apg(Lasso(A, b, 0.1), np.zeros(4), step=0.01, n_iter=3, callback=lambda info: np.True_)
    assert res.status == CALLBACK and res.nit == 1
