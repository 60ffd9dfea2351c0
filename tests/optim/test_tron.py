"""TRON and line-search gradient descent against scipy and optimality conditions."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.optimize import minimize

from fastpu.optim import gd, tron, trust_region_cg

from strategies import seeds


class Logistic:
    """Regularised logistic regression: a smooth strictly convex test problem."""

    def __init__(self, A, y, lam):
        self.A, self.y, self.lam = A, y, lam
        self.n_fun = 0
        self._d2 = None

    def fun(self, w):
        self.n_fun += 1
        z = self.y * (self.A @ w)
        return float(np.logaddexp(0, -z).sum() + 0.5 * self.lam * w @ w)

    def grad(self, w):
        z = self.y * (self.A @ w)
        sig = 1 / (1 + np.exp(z))
        self._d2 = sig * (1 - sig)
        return -self.A.T @ (self.y * sig) + self.lam * w

    def hessp(self, s):
        return self.A.T @ (self._d2 * (self.A @ s)) + self.lam * s


def make_problem(seed, n=30, d=5, lam=0.1):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))
    y = np.sign(A @ rng.normal(size=d) + 0.5 * rng.normal(size=n))
    y[y == 0] = 1
    return Logistic(A, y, lam)


@given(seeds, st.sampled_from([1e-3, 0.1, 1.0]))
def test_tron_matches_scipy_trust_ncg(seed, lam):
    prob = make_problem(seed, lam=lam)
    res = tron(prob, np.zeros(5), tol=1e-7, max_iter=200)
    ref = minimize(prob.fun, np.zeros(5), jac=prob.grad,
                   hess=lambda w: prob.A.T @ np.diag(_d2(prob, w)) @ prob.A + lam * np.eye(5),
                   method="trust-ncg", options={"gtol": 1e-10})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-5, atol=1e-5)
    assert res.fun == pytest.approx(ref.fun, rel=1e-9)


def _d2(prob, w):
    z = prob.y * (prob.A @ w)
    sig = 1 / (1 + np.exp(z))
    return sig * (1 - sig)


@given(seeds)
def test_tron_stopping_rule(seed):
    prob = make_problem(seed)
    g0 = np.linalg.norm(prob.grad(np.zeros(5)))
    res = tron(prob, np.zeros(5), tol=1e-2)
    assert res.status == 0
    assert np.linalg.norm(prob.grad(res.x)) <= 1e-2 * g0
    assert res.grad_norm == pytest.approx(np.linalg.norm(prob.grad(res.x)))
    # it stops at the first accepted iterate that satisfies the rule
    res_loose = tron(prob, np.zeros(5), tol=0.5)
    assert res_loose.nit <= res.nit


def test_tron_iteration_limit_and_monotone():
    prob = make_problem(3, lam=1e-4)
    res = tron(prob, np.zeros(5), tol=1e-12, max_iter=2)
    assert res.status in (0, 1)
    assert res.fun <= prob.fun(np.zeros(5))


def test_trust_region_cg_respects_radius_and_solves_inside():
    rng = np.random.default_rng(0)
    Q = rng.normal(size=(6, 6))
    A = Q @ Q.T + np.eye(6)
    g = rng.normal(size=6)
    s, r, it = trust_region_cg(lambda v: A @ v, g, 1e-3, tol=1e-12)
    assert np.linalg.norm(s) == pytest.approx(1e-3)
    s, r, it = trust_region_cg(lambda v: A @ v, g, 1e6, tol=1e-12)
    np.testing.assert_allclose(s, np.linalg.solve(A, -g), rtol=1e-8)
    np.testing.assert_allclose(r, -g - A @ s, atol=1e-10)


@given(seeds)
def test_gd_reaches_the_minimiser(seed):
    prob = make_problem(seed, lam=1.0)
    res = gd(prob, np.zeros(5), tol=1e-7, max_iter=5000)
    ref = tron(prob, np.zeros(5), tol=1e-10)
    assert res.status == 0
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5)


def test_gd_uses_cheap_line_when_present():
    prob = make_problem(1)
    calls = []

    def line(x, d):
        calls.append(1)
        return lambda a: prob.fun(x + a * d)

    prob.line = line
    res = gd(prob, np.zeros(5), max_iter=3)
    assert len(calls) == res.nit


@pytest.mark.parametrize("kw, msg", [(dict(tol=0.0), "tol must be in"), (dict(cg_tol=1.5), "cg_tol"),
                                     (dict(max_iter=-1), "max_iter")])
def test_tron_rejects_bad_settings(kw, msg):
    with pytest.raises(ValueError, match=msg):
        tron(make_problem(0), np.zeros(5), **kw)


@pytest.mark.parametrize("kw, msg", [(dict(beta=1.0), "beta"), (dict(sigma=0.6), "sigma")])
def test_gd_rejects_bad_settings(kw, msg):
    with pytest.raises(ValueError, match=msg):
        gd(make_problem(0), np.zeros(5), **kw)


def test_trust_region_cg_refuses_a_non_finite_hessian_product():
    with pytest.raises(FloatingPointError, match="hessp returned a non-finite value"):
        trust_region_cg(lambda v: v * np.nan, np.ones(3), 1.0)


class _Quadratic:
    """f(x) = xᵀx with a given (broken) gradient or value."""

    def __init__(self, grad=lambda x: 2 * x, fun=lambda x: float(x @ x)):
        self.grad = grad
        self.fun = fun

    def hessp(self, s):
        return 2 * s


@pytest.mark.parametrize("solver", [tron, gd])
def test_a_gradient_of_the_wrong_shape_is_a_value_error(solver):
    bad = _Quadratic(lambda x: np.ones(x.size + 1))
    with pytest.raises(ValueError, match=r"problem.grad returned shape \(4,\); expected x0's shape \(3,\)"):
        solver(bad, np.ones(3))


@pytest.mark.parametrize("solver", [tron, gd])
def test_a_non_finite_start_names_fun_or_grad(solver):
    with pytest.raises(FloatingPointError, match="problem.grad at x0 is not finite"):
        solver(_Quadratic(grad=lambda x: x * np.nan), np.ones(3))
    with pytest.raises(FloatingPointError, match=r"problem.fun at x0 is not finite \(f = inf\)"):
        solver(_Quadratic(fun=lambda x: np.inf), np.ones(3))


def test_one_result_type_for_every_solver():
    """tron, gd and apg return the same OptimizeResult, whose status is an int with a name."""
    import fastpu.optim as O

    prob = make_problem(0)
    w0 = np.zeros(prob.A.shape[1])
    results = [O.tron(prob, w0, tol=1e-3), O.gd(prob, w0, tol=1e-3, max_iter=1000)]

    class Ridge:
        def grad(self, x):
            return x - 1.0

        def prox(self, v, step):
            return v

        def objective(self, x):
            return 0.5 * float(np.sum((x - 1.0) ** 2))

    results.append(O.apg(Ridge(), np.zeros(3), step=0.5, n_iter=50, tol=1e-12))
    for res in results:
        assert type(res) is O.OptimizeResult and res.status == O.CONVERGED and res.success
        assert isinstance(res.nit, int) and res.fun is not None
    res = results[2]
    assert not hasattr(res, "n_iter") and not hasattr(res, "objective")
    assert res.status.name == "converged" and res.status != "converged"
    assert repr(O.MAX_ITER) == "1 (max_iter)" and O.Status(3) == O.CALLBACK
