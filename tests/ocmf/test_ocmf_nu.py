"""ocmf's frequency-scaled regularisation (``nu=``): λ_i = λ (|Ω+_i| + ρ p_i Σq)^ν per row.

The objective against the dense reference, gradients and Hessian products against finite
differences, the row solver and fold-in against their optimality conditions, and ν = 0 as the
paper's model bit for bit.
"""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from hypothesis import given, strategies as st

import fastpu as fp
from fastpu import ocmf
from fastpu._kernels.losses import LOSS_CODES
from fastpu._kernels.ocmf import RowOptions, row_newton
from fastpu.ocmf import _check as ocmf_check
from fastpu.ocmf import _problem as ocmf_problem

import naive
from strategies import LOSS_NAMES, csr_matrices, seeds


@st.composite
def problems(draw):
    """Problems without features (ν is refused with them), with or without graphs."""
    Y = draw(csr_matrices(min_rows=2, max_rows=7, min_cols=2, max_cols=7))
    m, n = Y.shape
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(1, 3))
    kw = dict(loss_name=draw(st.sampled_from(LOSS_NAMES)),
              rho=draw(st.sampled_from([0.0, 0.05, 0.5])),
              a_bar=draw(st.sampled_from([0.0, -1.0])), lam=draw(st.sampled_from([0.01, 0.7])),
              lam_graph=draw(st.sampled_from([0.0, 1.3])), nu=draw(st.sampled_from([0.5, 1.0, 2.0])),
              negatives=draw(st.sampled_from(["full", "all"])))
    if draw(st.booleans()):
        kw["lam_w"] = 0.3
    if draw(st.booleans()):
        kw["p"] = rng.uniform(0.2, 1.0, m)
    if draw(st.booleans()):
        kw["q"] = rng.uniform(0.2, 1.0, n)
    if draw(st.booleans()):
        S = sp.random(m, m, density=0.5, random_state=rng.integers(1 << 30))
        kw["user_graph"] = S + S.T
    if draw(st.booleans()):
        S = sp.random(n, n, density=0.5, random_state=rng.integers(1 << 30))
        kw["item_graph"] = S + S.T
    return Y, rng.normal(size=(m, k)), rng.normal(size=(n, k)), kw


def _fit_kw(kw):
    out = dict(kw)
    out["loss"] = out.pop("loss_name")
    return out


def _subproblems(Y, W, H, kw):
    Y = ocmf_check.check_y(Y, fit=False)
    model = ocmf_check.check_model(
        Y.shape, loss=kw["loss_name"], rho=kw["rho"], p=kw.get("p"), q=kw.get("q"),
        a_bar=kw["a_bar"], user_features=None, item_features=None,
        user_graph=kw.get("user_graph"), item_graph=kw.get("item_graph"), lam=kw["lam"],
        lam_w=kw.get("lam_w"), lam_h=None, lam_graph=kw["lam_graph"], negatives=kw["negatives"],
        neg_ratio=1.0, dense_limit=None, nu=kw["nu"])
    setup = ocmf_problem.build(Y, model, np.random.default_rng(0))
    return (ocmf.SubProblem(setup, setup.entries, setup.user, H, setup.p_quad, setup.q_quad),
            ocmf.SubProblem(setup, setup.entries_t, setup.item, W, setup.q_quad, setup.p_quad))


@given(problems())
def test_objective_with_nu_equals_the_dense_reference(case):
    Y, W, H, kw = case
    got = ocmf.objective(Y, W, H, **_fit_kw(kw))
    assert got == pytest.approx(naive.ocmf_objective(Y, W, H, **kw), rel=1e-10, abs=1e-10)


@given(problems(), seeds)
def test_gradient_and_hessian_products_with_nu_match_finite_differences(case, seed):
    """The TRON path (a graph on the side) and the row path share these λ_i."""
    Y, W, H, kw = case
    smooth = kw["loss_name"] != "squared_hinge"
    rng = np.random.default_rng(seed)
    for prob, x in zip(_subproblems(Y, W, H, kw), (W, H)):
        x = x.ravel()
        prob.fun(x)
        g = prob.grad(x)
        fd = naive.num_grad(prob.fun, x, h=1e-6)
        tol = 1e-5 if smooth else 1e-3
        np.testing.assert_allclose(g, fd, rtol=tol, atol=tol * (1 + np.abs(fd).max()))
        if smooth:
            s = rng.normal(size=x.size)
            hs = prob.hessp(s)
            fd_h = (prob.grad(x + 1e-6 * s) - prob.grad(x - 1e-6 * s)) / 2e-6
            np.testing.assert_allclose(hs, fd_h, rtol=1e-4, atol=1e-4 * (1 + np.abs(fd_h).max()))


@pytest.mark.parametrize("loss", LOSS_NAMES)
@given(Y=csr_matrices(min_rows=2, max_rows=6, max_cols=6, positive=True), seed=seeds)
def test_row_solver_with_per_row_penalties_reaches_each_rows_minimiser(loss, Y, seed):
    """row_newton with λ_i per row, many Newton steps with exact CG: each row ends at the
    minimiser of its own f_i (BFGS on the dense formula), so λ_i is the row's own."""
    rng = np.random.default_rng(seed)
    m, n = Y.shape
    k = 3
    Y = sp.csr_array(Y)
    E, W0 = rng.normal(size=(n, k)), rng.normal(scale=0.3, size=(m, k))
    q, p = rng.uniform(0.2, 1.0, n), rng.uniform(0.0, 0.2, m)
    lam = rng.uniform(0.05, 3.0, m)
    abar = 0.0 if loss == "square" else -1.0
    M, kappa = (E.T * q) @ E, E.T @ q
    W, f = W0.copy(), np.empty(m)
    row_newton(LOSS_CODES[loss], Y.indptr.astype(np.int64), Y.indices.astype(np.int64),
               np.ones(1), np.ones(1), np.empty(0), q, abar, E, M, kappa, p, lam, W,
               RowOptions(newton_steps=40, cg_steps=k, cg_tol=0.0), 100, f, np.empty(0))
    for i in range(m):
        cols = Y.indices[Y.indptr[i]:Y.indptr[i + 1]]
        unl = np.setdiff1d(np.arange(n), cols)

        def f_row(w, i=i, cols=cols, unl=unl):
            s = E @ w
            return (naive.loss(loss, 1.0, s[cols]).sum()
                    + (p[i] * q[unl] * (abar - s[unl]) ** 2).sum() + lam[i] * w @ w)

        res = scipy.optimize.minimize(f_row, W0[i], method="BFGS", options=dict(gtol=1e-10))
        assert f_row(W[i]) <= res.fun + 1e-7 * max(1.0, abs(res.fun))
        # f_out holds f_i without the constant p_i ā² Σ_j q_j
        assert f[i] == pytest.approx(f_row(W[i]) - p[i] * abar ** 2 * q.sum(), rel=1e-8,
                                     abs=1e-9)


def _data(seed=0, m=40, n=30):
    return fp.datasets.synthetic(m, n, rank=3, density=0.15, seed=seed).Y


@pytest.mark.parametrize("kw", [dict(loss="square", rho=0.2), dict(loss="logistic", rho=0.1),
                                dict(loss="squared_hinge", rho=0.1),
                                dict(loss="square", rho=0.2, fast_path=False),
                                dict(loss="logistic", rho=0.1, graph=True, lam_graph=0.5)])
def test_a_fit_with_nu_decreases_the_objective_it_records(kw):
    Y = _data(1)
    kw = dict(kw)
    if kw.pop("graph", False):
        S = sp.random(Y.shape[0], Y.shape[0], density=0.1, random_state=3)
        kw["user_graph"] = S + S.T
    model = ocmf.fit(Y, 4, n_iter=6, lam=0.02, nu=1.0, dtype="float64", **kw)
    obj = np.array([h["objective"] for h in model.history])
    assert np.all(np.diff(obj) <= 1e-10 * abs(obj[0])), obj
    refkw = {k: v for k, v in kw.items() if k != "fast_path"}
    assert obj[-1] == pytest.approx(ocmf.objective(Y, model.W, model.H, lam=0.02, nu=1.0,
                                                   **refkw), rel=1e-10)
    assert model.params["nu"] == 1.0


def test_nu_zero_is_the_unscaled_model_bit_for_bit():
    Y = _data(2)
    for kw in (dict(loss="square"), dict(loss="logistic", fast_path=False)):
        a = ocmf.fit(Y, 3, n_iter=3, **kw)
        b = ocmf.fit(Y, 3, n_iter=3, nu=0.0, **kw)
        np.testing.assert_array_equal(a.user_factors, b.user_factors)
        np.testing.assert_array_equal(a.item_factors, b.item_factors)
        assert [h["objective"] for h in a.history] == [h["objective"] for h in b.history]


def test_nu_shrinks_busy_rows_more_than_quiet_ones():
    """With ν = 1 a row's penalty grows with its count: the busiest users' factors shrink
    relative to the unscaled fit with the same average penalty."""
    Y = _data(3, 80, 60)
    counts = np.diff(sp.csr_array(Y).indptr)
    model = ocmf.fit(Y, 4, n_iter=8, loss="square", rho=0.0, lam=0.01, nu=1.0, dtype="float64")
    flat = ocmf.fit(Y, 4, n_iter=8, loss="square", rho=0.0, lam=0.01 * counts.mean(),
                    dtype="float64")
    busy, quiet = counts >= np.quantile(counts, 0.8), counts <= np.quantile(counts, 0.2)
    ratio = np.linalg.norm(model.W, axis=1) / np.maximum(np.linalg.norm(flat.W, axis=1), 1e-12)
    assert ratio[busy].mean() < ratio[quiet].mean()


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_fold_in_with_nu_solves_the_row_with_its_own_count(loss):
    """A folded-in user's gradient vanishes at λ_w (|Ω+_i| + ρ Σq)^ν, its own count."""
    Y = sp.csr_array(_data(4))
    model = ocmf.fit(Y[:30], 3, loss=loss, rho=0.1, lam=0.05, nu=1.0, n_iter=4, dtype="float64")
    rows = sp.csr_array(Y[30:34])
    W = fp.fold_in(model, rows).user_factors
    E = np.asarray(model.item_factors, dtype=np.float64)
    n = E.shape[0]
    abar = model.params["a_bar"]
    for r in range(rows.shape[0]):
        cols = rows.indices[rows.indptr[r]:rows.indptr[r + 1]]
        unl = np.setdiff1d(np.arange(n), cols)
        lam_r = 0.05 * (cols.size + 0.1 * n) ** 1.0

        def f_row(w, cols=cols, unl=unl, lam_r=lam_r):
            s = E @ w
            return (naive.loss(loss, 1.0, s[cols]).sum() + (0.1 * (abar - s[unl]) ** 2).sum()
                    + lam_r * w @ w)

        g = naive.num_grad(f_row, np.asarray(W[r], dtype=np.float64), h=1e-6)
        tol = 1e-4 if loss != "squared_hinge" else 1e-3
        assert np.abs(g).max() <= tol * max(1.0, np.abs(E).sum())


@pytest.mark.parametrize("kw, msg", [
    (dict(nu=-1.0), "nu must be >= 0"),
    (dict(nu=11.0), "nu must be at most 10"),
    (dict(nu="1"), "nu"),
    (dict(nu=1.0, user_features=np.ones((40, 2))), "nu=1 scales each user's .* user_features"),
    (dict(nu=0.5, item_features=np.ones((30, 2))), "item_features"),
])
def test_bad_nu_is_refused_by_name(kw, msg):
    with pytest.raises((TypeError, ValueError), match=msg):
        ocmf.fit(_data(), 2, n_iter=1, **kw)


def test_the_model_file_carries_nu_and_fold_in_uses_it(tmp_path):
    Y = sp.csr_array(_data(5))
    model = ocmf.fit(Y[:30], 3, loss="square", rho=0.1, lam=0.05, nu=1.0, n_iter=3)
    model.save(tmp_path / "m.npz")
    back = fp.load_model(tmp_path / "m.npz")
    assert back.params["nu"] == 1.0
    rows = sp.csr_array(Y[30:33])
    a, b = fp.fold_in(model, rows), fp.fold_in(back, rows)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    # the unscaled model folds in a different row: the count enters its penalty
    flat = ocmf.fit(Y[:30], 3, loss="square", rho=0.1, lam=0.05, n_iter=3)
    assert not np.allclose(fp.fold_in(flat, rows).user_factors, a.user_factors)


def test_cg_tol_is_carried_to_the_row_solver_and_recorded():
    """A loose CG tolerance stops the rows' CG earlier (fewer CG steps in the kernel's counts)
    and gives another model; a fit records the tolerance it used."""
    Y = sp.csr_array(_data(6))
    m, n = Y.shape
    rng = np.random.default_rng(0)
    E, W0 = rng.normal(size=(n, 8)), rng.normal(size=(m, 8))
    q, p = np.ones(n) * 0.1, np.ones(m)
    M, kappa = (E.T * q) @ E, E.T @ q
    steps = {}
    for tol in (0.5, 1e-12):
        counts = np.zeros((m, 3), dtype=np.int32)
        row_newton(LOSS_CODES["square"], Y.indptr.astype(np.int64), Y.indices.astype(np.int64),
                   np.ones(1), np.ones(1), np.empty(0), q, 0.0, E, M, kappa, p, 1.0, W0.copy(),
                   RowOptions(newton_steps=1, cg_steps=8, cg_tol=tol), 100, np.empty(m),
                   np.empty(0), counts_out=counts)
        steps[tol] = counts[:, 1].sum()
    assert steps[0.5] < steps[1e-12] <= 8 * m
    a = ocmf.fit(Y, 4, n_iter=2, loss="square", cg_steps=6, cg_tol=0.5)
    b = ocmf.fit(Y, 4, n_iter=2, loss="square", cg_steps=6)
    assert a.params["cg_tol"] == 0.5 and b.params["cg_tol"] == 1e-3
    assert (a.params["newton_steps"], a.params["cg_steps"]) == (1, 6)
    assert not np.array_equal(a.user_factors, b.user_factors)


@pytest.mark.parametrize("bad, exc, msg", [(1.0, ValueError, "cg_tol must be below 1"),
                                           (-0.1, ValueError, "cg_tol must be >= 0"),
                                           ("x", TypeError, "cg_tol")])
def test_bad_cg_tol_is_refused_by_name(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        ocmf.fit(_data(), 2, n_iter=1, cg_tol=bad)


def test_a_partial_fit_with_nu_gives_the_row_its_own_count():
    """Recomputing a user's row from its positives uses λ_w (|Ω+_i| + ρ Σq)^ν, as fold-in
    does: the partial fit's row equals the fold-in of the same positives."""
    Y = sp.csr_array(_data(7))
    model = ocmf.fit(Y, 3, loss="square", rho=0.1, lam=0.05, nu=1.0, n_iter=3, dtype="float64")
    items = [list(Y.indices[Y.indptr[2]:Y.indptr[3]][:3])]
    part = fp.partial_fit_users(model, items, user_ids=[2])
    one = fp.fold_in(model, items)
    np.testing.assert_allclose(part.user_factors[2], one.user_factors[0], rtol=1e-10, atol=1e-12)
