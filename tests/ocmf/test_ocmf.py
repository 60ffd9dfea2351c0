"""ocmf: the efficient objective, gradient and Hessian-vector product against equation (2)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu.ocmf import _check as ocmf_check
from fastpu.ocmf import _problem as ocmf_problem
import fastpu as fp
from fastpu import ocmf
from fastpu._core.threads import limit_threads

import naive
from strategies import csr_matrices, seeds, LOSS_NAMES


@st.composite
def problems(draw, negatives=("full", "all", "full_logistic")):
    Y = draw(csr_matrices(min_rows=2, max_rows=7, min_cols=2, max_cols=7))
    m, n = Y.shape
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(1, 3))
    kw = dict(loss_name=draw(st.sampled_from(ocmf.LOSSES)), rho=draw(st.sampled_from([0.05, 0.5, 1.0])),
              a_bar=draw(st.sampled_from([0.0, -1.0, 0.3])), lam=draw(st.sampled_from([0.0, 0.7])),
              lam_graph=draw(st.sampled_from([0.0, 1.3])), negatives=draw(st.sampled_from(negatives)))
    for side in ("lam_w", "lam_h"):              # the paper's separate λ_w, λ_h (None: lam)
        value = draw(st.sampled_from([None, 0.0, 0.4, 2.5]))
        if value is not None:
            kw[side] = value
    if draw(st.booleans()):
        kw["p"] = rng.uniform(0.2, 1.0, m)
    if draw(st.booleans()):
        kw["q"] = rng.uniform(0.2, 1.0, n)
    feat = draw(st.sampled_from(["none", "dense", "sparse", "small"]))
    if feat == "dense":
        kw["X"] = rng.normal(size=(m, 4))
    elif feat == "sparse":
        kw["X"] = sp.random(m, 3, density=0.5, random_state=rng.integers(1 << 30), format="csr")
    elif feat == "small":            # d^2 + dk < mk: the M̄ = Xᵀ diag(p) X sequence
        kw["X"] = rng.normal(size=(m, 1))
    if draw(st.booleans()):
        kw["Z"] = rng.normal(size=(n, 2))
    # the intercept: a column of ones appended to each side's features (W, H one row longer)
    kw["intercept"] = draw(st.booleans())
    if draw(st.booleans()):
        S = sp.random(m, m, density=0.5, random_state=rng.integers(1 << 30))
        kw["user_graph"] = S + S.T
    if draw(st.booleans()):
        S = sp.random(n, n, density=0.5, random_state=rng.integers(1 << 30))
        kw["item_graph"] = S + S.T
    d = m if "X" not in kw else kw["X"].shape[1] + kw["intercept"]
    e = n if "Z" not in kw else kw["Z"].shape[1] + kw["intercept"]
    W, H = rng.normal(size=(d, k)), rng.normal(size=(e, k))
    return Y, W, H, kw


def fp_kw(kw):
    """The dense reference's keyword names (the paper's X, Z) as fit's names."""
    out = dict(kw)
    out["loss"] = out.pop("loss_name")
    for paper, name in (("X", "user_features"), ("Z", "item_features")):
        if paper in out:
            out[name] = out.pop(paper)
    return out


@given(problems())
def test_objective_equals_dense_reference(case):
    Y, W, H, kw = case
    got = ocmf.objective(Y, W, H, **fp_kw(kw))
    ref = naive.ocmf_objective(Y, W, H, **kw)
    assert got == pytest.approx(ref, rel=1e-10, abs=1e-10)


@given(csr_matrices(min_rows=3, max_rows=7, min_cols=3, max_cols=7), seeds,
       st.sampled_from(ocmf.LOSSES))
def test_sampled_objective_equals_reference_on_its_sample(Y, seed, loss):
    rng = np.random.default_rng(seed)
    m, n = Y.shape
    W, H = rng.normal(size=(m, 2)), rng.normal(size=(n, 2))
    kw = dict(rho=0.5, a_bar=-1.0, lam=0.3, lam_graph=0.0)
    neg = fp.ocmf._problem._sample_negatives(fp._core.validation.check_csr(Y), 1.5, np.random.default_rng(seed))
    got = ocmf.objective(Y, W, H, loss=loss, negatives="sampled", neg_ratio=1.5,
                         seed=np.random.default_rng(seed), **kw)
    ref = naive.ocmf_objective(Y, W, H, loss_name=loss, negatives="sampled",
                               neg_mask=neg.toarray() != 0, **kw)
    assert got == pytest.approx(ref, rel=1e-10, abs=1e-10)
    # negatives are unobserved, distinct, and ratio·|Ω+_i| per user when there is room
    pos = Y.toarray() != 0
    negd = neg.toarray() != 0
    assert not np.any(pos & negd)
    want = np.minimum(np.round(1.5 * pos.sum(1)), n - pos.sum(1))
    np.testing.assert_array_equal(negd.sum(1), want)


def _sampled_negatives(Y, seeds, neg_ratio=1.0):
    """The negatives ``negatives="sampled"`` draws with each seed, read off ocmf.objective (the
    fit's own problem builder): with k = 1, the square loss, ā = 0 and λ = 0, an unobserved
    (i, j) drawn adds w_i² h_j² = 2^(i·n + j) to the objective, so the objective minus the one
    with no negatives is the bit mask of the draw, exactly (every term a power of two below
    2^53). Returns a (seeds, m, n) boolean array."""
    m, n = Y.shape
    W = (2.0 ** (np.arange(m) * n / 2))[:, None]
    H = (2.0 ** (np.arange(n) / 2))[:, None]
    kw = dict(loss="square", rho=1.0, a_bar=0.0, lam=0.0, negatives="sampled")
    none = ocmf.objective(Y, W, H, neg_ratio=1e-9, **kw)         # round(1e-9·|Ω+_i|) = 0
    out = []
    for seed in seeds:
        bits = int(round(ocmf.objective(Y, W, H, neg_ratio=neg_ratio, seed=seed, **kw) - none))
        out.append([(bits >> t) & 1 for t in range(m * n)])
    return np.array(out, dtype=bool).reshape(len(out), m, n)


def test_sampled_negatives_are_uniform_over_the_free_items():
    """Over 300 seeds every unobserved item of a user is drawn about equally often (a chi-square
    test per user at p = 1e-6, deterministic for these seeds), and for the user with 28 possible
    draws each pair of items about equally often. A sampler that always took the lowest free
    items passed every behavioural test before this one (only the pinned digests noticed)."""
    import scipy.stats as stats

    seen = {0: [0, 5], 1: [1, 2, 3], 2: [9], 3: [2, 4, 6, 8]}
    n = 10
    Y = sp.csr_array((np.ones(sum(map(len, seen.values()))),
                      (np.repeat(list(seen), [len(v) for v in seen.values()]),
                       np.concatenate(list(seen.values())))), shape=(len(seen), n))
    seeds = 300
    draws = _sampled_negatives(Y, range(seeds))
    pos = Y.toarray() != 0
    assert not (draws & pos).any()                                  # never a positive
    assert (draws.sum(axis=2) == pos.sum(axis=1)).all()             # ratio 1: |Ω+_i| each
    for i, items in seen.items():
        free = np.flatnonzero(~pos[i])
        counts = draws[:, i, free].sum(axis=0)
        expected = seeds * len(items) / free.size
        chi2 = float(np.sum((counts - expected) ** 2 / expected))
        assert chi2 < stats.chi2.ppf(1 - 1e-6, free.size - 1), (i, counts.tolist())
    pairs = {}
    for d in draws[:, 0]:
        key = tuple(np.flatnonzero(d))
        pairs[key] = pairs.get(key, 0) + 1
    assert len(pairs) == 28
    counts = np.array(list(pairs.values()))
    expected = seeds / 28
    assert float(np.sum((counts - expected) ** 2 / expected)) < stats.chi2.ppf(1 - 1e-6, 27)


def _subproblems(Y, W, H, kw):
    Y = ocmf_check.check_y(Y, fit=False)
    model = ocmf_check.check_model(
        Y.shape, loss=kw["loss_name"], rho=kw["rho"], p=kw.get("p"), q=kw.get("q"),
        a_bar=kw["a_bar"], user_features=kw.get("X"), item_features=kw.get("Z"),
        user_graph=kw.get("user_graph"), item_graph=kw.get("item_graph"), lam=kw["lam"],
        lam_w=kw.get("lam_w"), lam_h=kw.get("lam_h"), lam_graph=kw["lam_graph"],
        negatives=kw["negatives"], neg_ratio=1.0, dense_limit=None,
        intercept=kw.get("intercept", False))
    setup = ocmf_problem.build(Y, model, np.random.default_rng(0))
    E = setup.item.mul(H)
    B = setup.user.mul(W)
    pu = ocmf.SubProblem(setup, setup.entries, setup.user, E, setup.p_quad, setup.q_quad)
    pv = ocmf.SubProblem(setup, setup.entries_t, setup.item, B, setup.q_quad, setup.p_quad)
    return pu, pv


def _smooth(kw):
    return kw["loss_name"] != "squared_hinge"


@given(problems())
def test_gradient_matches_finite_differences(case):
    Y, W, H, kw = case
    for prob, x, other in zip(_subproblems(Y, W, H, kw), (W, H), ("W", "H")):
        x = x.ravel()
        g = prob.grad(x) if prob.fun(x) is not None else None
        fd = naive.num_grad(prob.fun, x, h=1e-6)
        tol = 1e-5 if _smooth(kw) else 1e-3
        np.testing.assert_allclose(g, fd, rtol=tol, atol=tol * (1 + np.abs(fd).max()))


@given(problems(), seeds)
def test_hessian_vector_product_matches_finite_differences(case, seed):
    Y, W, H, kw = case
    rng = np.random.default_rng(seed)
    for prob, x in zip(_subproblems(Y, W, H, kw), (W, H)):
        x = x.ravel()
        s = rng.normal(size=x.size)
        prob.fun(x)
        prob.grad(x)
        hs = prob.hessp(s)
        eps = 1e-6
        gp = prob.grad(x + eps * s)
        gm = prob.grad(x - eps * s)
        fd = (gp - gm) / (2 * eps)
        if _smooth(kw):
            np.testing.assert_allclose(hs, fd, rtol=1e-5, atol=1e-5 * (1 + np.abs(fd).max()))
        # hessp keeps the curvature of the last accepted point (here x - eps s) …
        prob.fun(x)
        prob.grad(x)
        h1 = prob.hessp(s)
        prob.fun(x + 10 * s)          # … and a rejected trial point does not change it
        np.testing.assert_array_equal(prob.hessp(s), h1)
        # the whole Hessian is positive semi-definite for these convex losses
        assert s @ h1 >= -1e-8 * (1 + abs(s @ h1))


@given(problems(negatives=("full",)), seeds)
def test_line_search_function_equals_objective(case, seed):
    Y, W, H, kw = case
    rng = np.random.default_rng(seed)
    prob = _subproblems(Y, W, H, kw)[0]
    w = W.ravel()
    dw = rng.normal(size=w.size)
    phi = prob.line(w, dw)
    for a in (0.0, 0.3, 1.0):
        assert phi(a) == pytest.approx(prob.fun(w + a * dw), rel=1e-10, abs=1e-10)


# ---- λ_w, λ_h: the paper's separate regularisation of the two sides ---------------------------

def _coupled_case(seed=5):
    """A problem with features on the users and a graph on each side (every λ term active)."""
    rng = np.random.default_rng(seed)
    Y = sp.random(6, 5, density=0.4, random_state=seed, format="csr")
    Su = sp.random(6, 6, density=0.5, random_state=seed + 1)
    Sv = sp.random(5, 5, density=0.5, random_state=seed + 2)
    kw = dict(loss_name="logistic", rho=0.3, a_bar=-1.0, lam=0.7, lam_graph=1.3, negatives="full",
              X=rng.normal(size=(6, 4)), user_graph=Su + Su.T, item_graph=Sv + Sv.T,
              lam_w=0.2, lam_h=3.0, intercept=False)
    return Y, rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), kw


def test_lam_w_lam_h_objective_equals_dense_reference():
    Y, W, H, kw = _coupled_case()
    got = ocmf.objective(Y, W, H, **fp_kw(kw))
    assert got == pytest.approx(naive.ocmf_objective(Y, W, H, **kw), rel=1e-10)
    # each λ weighs only its own side: the two sides' regularisers differ by the expected amounts
    base = dict(kw, lam_w=0.0, lam_h=0.0)
    reg_w = ocmf.objective(Y, W, H, **fp_kw(dict(base, lam_w=1.0))) - ocmf.objective(Y, W, H, **fp_kw(base))
    B = kw["X"] @ W
    Su = kw["user_graph"].toarray()
    assert reg_w == pytest.approx(np.sum(W * W) + 1.3 * np.trace(B.T @ (np.diag(Su.sum(1)) - Su) @ B),
                                  rel=1e-10)


def test_lam_w_lam_h_gradients_match_finite_differences():
    Y, W, H, kw = _coupled_case()
    for prob, x in zip(_subproblems(Y, W, H, kw), (W, H)):
        x = x.ravel()
        fd = naive.num_grad(prob.fun, x, h=1e-6)
        np.testing.assert_allclose(prob.grad(x), fd, rtol=1e-6, atol=1e-6 * (1 + np.abs(fd).max()))
        s = np.random.default_rng(0).normal(size=x.size)
        prob.fun(x)
        prob.grad(x)
        fd_h = (prob.grad(x + 1e-6 * s) - prob.grad(x - 1e-6 * s)) / 2e-6
        prob.fun(x)
        prob.grad(x)
        np.testing.assert_allclose(prob.hessp(s), fd_h, rtol=1e-5, atol=1e-5 * (1 + np.abs(fd_h).max()))
    # the sub-problems' regularisers use their own side's λ
    pu, pv = _subproblems(Y, W, H, kw)
    assert (pu.lam, pv.lam) == (0.2, 3.0)


@pytest.mark.parametrize("kw", [dict(loss="logistic", rho=0.1),
                                dict(loss="square", rho=0.1, fast_path=False),
                                dict(loss="logistic", rho=0.1, features=True, graph=True, lam_graph=0.5)])
def test_lam_alone_gives_the_same_model_as_before(kw):
    Y = _data(6)
    kw = dict(kw)
    rng = np.random.default_rng(1)
    if kw.pop("features", False):
        kw["user_features"] = rng.normal(size=(Y.shape[0], 5))
    if kw.pop("graph", False):
        S = sp.random(Y.shape[1], Y.shape[1], density=0.1, random_state=3)
        kw["item_graph"] = S + S.T
    a = ocmf.fit(Y, 3, n_iter=4, lam=0.5, **kw)
    b = ocmf.fit(Y, 3, n_iter=4, lam=0.5, lam_w=None, lam_h=None, **kw)
    c = ocmf.fit(Y, 3, n_iter=4, lam=9.0, lam_w=0.5, lam_h=0.5, **kw)      # lam is only a default
    for other in (b, c):
        np.testing.assert_array_equal(a.user_factors, other.user_factors)
        np.testing.assert_array_equal(a.item_factors, other.item_factors)
        assert [h["objective"] for h in a.history] == [h["objective"] for h in other.history]
    assert (a.params["lam_w"], a.params["lam_h"]) == (0.5, 0.5)


@pytest.mark.parametrize("fast_path", [True, False])
def test_fit_with_lam_w_lam_h_records_the_split_objective(fast_path):
    Y = _data(7)
    kw = dict(loss="logistic", rho=0.1, lam=1.0, lam_w=0.05, lam_h=4.0)
    model = ocmf.fit(Y, 3, n_iter=5, fast_path=fast_path, dtype="float64", **kw)
    obj = np.array([h["objective"] for h in model.history])
    assert np.all(np.diff(obj) <= 1e-9 * abs(obj[0]))
    assert obj[-1] == pytest.approx(ocmf.objective(Y, model.W, model.H, **kw), rel=1e-10)
    # a heavier λ_h shrinks the item factors more than the user factors
    assert np.linalg.norm(model.H) < np.linalg.norm(model.W)


def test_fast_path_and_tron_agree_with_lam_w_lam_h():
    Y = _data(3)
    kw = dict(loss="square", rho=0.2, lam_w=0.1, lam_h=2.0, n_iter=8)
    a = ocmf.fit(Y, 3, newton_steps=6, cg_steps=3, **kw)
    b = ocmf.fit(Y, 3, fast_path=False, n_inner=20, **kw)
    assert a.history[-1]["objective"] == pytest.approx(b.history[-1]["objective"], rel=1e-3)


def _data(seed=0, m=40, n=30):
    return fp.datasets.synthetic(m, n, rank=3, density=0.15, seed=seed).Y


@pytest.mark.parametrize("kw", [
    dict(loss="square", rho=1.0, a_bar=0.0),
    dict(loss="square", rho=0.1),
    dict(loss="logistic", rho=0.1),
    dict(loss="squared_hinge", rho=0.1),
    dict(loss="logistic", rho=0.1, fast_path=False),
    dict(loss="logistic", rho=0.1, solver="gd", fast_path=False),
    dict(loss="logistic", rho=1.0, negatives="sampled", neg_ratio=2.0),
    dict(loss="logistic", rho=0.1, negatives="full_logistic"),
    dict(loss="logistic", rho=0.1, features=True),
    dict(loss="square", rho=0.1, graph=True, lam_graph=0.5),
    dict(loss="logistic", rho=0.1, features=True, graph=True, lam_graph=0.5, solver="gd"),
])
@pytest.mark.parametrize("dtype, rel", [("float64", 1e-10), ("float32", 1e-6)])
def test_alternating_objective_never_increases(kw, dtype, rel):
    """In float64 to rounding; in float32 (the default: its products round to ~1e-7) the history
    is the objective of the returned factors to 1e-6 and never rises by more than 1e-7."""
    Y = _data()
    kw = dict(kw)
    rng = np.random.default_rng(1)
    if kw.pop("features", False):
        kw["user_features"] = rng.normal(size=(Y.shape[0], 5))
        kw["item_features"] = sp.random(Y.shape[1], 6, density=0.4, random_state=2, format="csr")
    if kw.pop("graph", False):
        S = sp.random(Y.shape[0], Y.shape[0], density=0.1, random_state=3)
        kw["user_graph"] = S + S.T
    model = ocmf.fit(Y, 4, n_iter=6, lam=0.5, dtype=dtype, **kw)
    obj = np.array([h["objective"] for h in model.history])
    assert obj.size == 6
    assert np.all(np.diff(obj) <= rel / 10 * abs(obj[0])), obj
    # the history's objective is the efficient objective of the returned factors
    refkw = {k: v for k, v in kw.items() if k not in ("solver", "fast_path")}
    assert obj[-1] == pytest.approx(ocmf.objective(Y, model.W, model.H, lam=0.5, **refkw), rel=rel)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_fast_path_and_tron_reach_the_same_objective(loss):
    Y = _data(3)
    a = ocmf.fit(Y, 3, loss=loss, rho=0.2, n_iter=8, newton_steps=6, cg_steps=3)
    b = ocmf.fit(Y, 3, loss=loss, rho=0.2, n_iter=8, fast_path=False, n_inner=20)
    assert a.history[-1]["objective"] == pytest.approx(b.history[-1]["objective"], rel=1e-3)


def test_one_and_two_threads_agree():
    Y = _data(4, 60, 50)
    X = np.random.default_rng(0).normal(size=(60, 4))
    for kw in (dict(loss="logistic"), dict(loss="square", user_features=X)):
        with limit_threads(1):
            a = ocmf.fit(Y, 4, n_iter=3, **kw)
        b = ocmf.fit(Y, 4, n_iter=3, n_threads=2, **kw)
        np.testing.assert_array_equal(a.user_factors, b.user_factors)
        np.testing.assert_array_equal(a.item_factors, b.item_factors)


@pytest.mark.parametrize("kw", [
    dict(loss="square", rho=0.1),
    dict(loss="logistic", rho=0.1),
    dict(loss="logistic", rho=0.1, features=True, graph=True, lam_graph=0.5),
])
def test_float32_factors_follow_the_float64_run(kw):
    Y = _data(6)
    kw = dict(kw)
    if kw.pop("features", False):
        kw["item_features"] = sp.random(Y.shape[1], 6, density=0.4, random_state=2, format="csr")
    if kw.pop("graph", False):
        S = sp.random(Y.shape[0], Y.shape[0], density=0.1, random_state=3)
        kw["user_graph"] = S + S.T
    a = ocmf.fit(Y, 4, n_iter=5, lam=0.5, dtype="float64", **kw)
    b = ocmf.fit(Y, 4, n_iter=5, lam=0.5, **kw)          # float32, the default
    assert b.user_factors.dtype == np.float32 and b.item_factors.dtype == np.float32
    assert b.params["dtype"] == "float32" and a.params["dtype"] == "float64"
    obj_a = np.array([h["objective"] for h in a.history])
    obj_b = np.array([h["objective"] for h in b.history])
    np.testing.assert_allclose(obj_b, obj_a, rtol=1e-5)
    np.testing.assert_allclose(b.user_factors, a.user_factors, rtol=1e-3, atol=1e-4)
    # the recorded objective (float64, at the rows before rounding) matches the returned factors
    refkw = {k: v for k, v in kw.items() if k not in ("solver", "fast_path")}
    assert obj_b[-1] == pytest.approx(ocmf.objective(Y, b.W, b.H, lam=0.5, **refkw), rel=1e-6)
    with limit_threads(1):
        c = ocmf.fit(Y, 4, n_iter=5, lam=0.5, dtype=np.float32, **kw)
    np.testing.assert_array_equal(c.user_factors, b.user_factors)


def test_init_factors_are_not_modified():
    Y = _data(7)
    rng = np.random.default_rng(2)
    W0, H0 = rng.normal(size=(Y.shape[0], 3)), rng.normal(size=(Y.shape[1], 3))
    W0c, H0c = W0.copy(), H0.copy()
    for dtype in ("float64", "float32"):
        ocmf.fit(Y, 3, n_iter=2, init=(W0, H0), dtype=dtype)
        np.testing.assert_array_equal(W0, W0c)
        np.testing.assert_array_equal(H0, H0c)


def test_deterministic_for_a_seed_and_callback_stops():
    Y = _data(5)
    a = ocmf.fit(Y, 3, n_iter=3, seed=7)
    b = ocmf.fit(Y, 3, n_iter=3, seed=7)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    seen = []
    c = ocmf.fit(Y, 3, n_iter=10, callback=lambda info: seen.append(info) or info["iter"] == 2)
    assert len(c.history) == 2 and [s["iter"] for s in seen] == [1, 2]
    assert {"iter", "objective", "seconds"} <= set(c.history[0])


def test_features_give_factors_as_products_and_scores():
    Y = _data(6)
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(40, 3)), sp.random(30, 4, density=0.5, random_state=1, format="csr")
    model = ocmf.fit(Y, 2, user_features=X, item_features=Z, n_iter=2, intercept=False)
    assert model.W.shape == (3, 2) and model.H.shape == (4, 2)
    # the factors are stored in the fit's dtype (float32 by default): equal up to its rounding
    assert model.user_factors.dtype == model.item_factors.dtype == np.float32
    np.testing.assert_allclose(model.user_factors, X @ model.W, rtol=1e-6)
    np.testing.assert_allclose(model.item_factors, Z @ model.H, rtol=1e-6)
    np.testing.assert_allclose(model.scores([0, 5]), (X @ model.W @ (Z @ model.H).T)[[0, 5]],
                               rtol=1e-5)
    # with the intercept (the default) W and H have a last row for the ones column
    model = ocmf.fit(Y, 2, user_features=X, item_features=Z, n_iter=2)
    assert model.W.shape == (4, 2) and model.H.shape == (5, 2)
    np.testing.assert_allclose(model.user_factors, X @ model.W[:3] + model.W[3], rtol=1e-5)
    np.testing.assert_allclose(model.item_factors, Z @ model.H[:4] + model.H[4], rtol=1e-5)


def test_logistic_learns_planted_structure():
    data = fp.datasets.synthetic(200, 150, rank=4, density=0.06, seed=1)
    model = ocmf.fit(data.Y, 8, loss="logistic", rho=0.05, n_iter=10)
    items, _ = fp.recommend(model, data.Y, n=5)
    hidden = data.hidden.toarray()
    hits = np.mean([hidden[i, items[i]].mean() for i in range(200)])
    rand = hidden.sum() / (200 * 150 - data.Y.nnz)
    assert hits > 3 * rand


def test_nystrom_reproduces_the_kernel_on_landmarks():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    F, nmap = ocmf.nystrom_features(X, 8, gamma=0.5, append=False)
    assert F.shape == (60, 8)
    Zc = nmap.transform(nmap.centers)
    K = np.exp(-0.5 * ((nmap.centers[:, None] - nmap.centers[None]) ** 2).sum(-1))
    np.testing.assert_allclose(Zc @ Zc.T, K, atol=1e-6)
    # inner products of mapped points approximate the kernel (exact in the landmarks' span)
    G, _ = ocmf.nystrom_features(X, 8, gamma=0.5, append=True)
    np.testing.assert_array_equal(G[:, :3], X)
    Fs, _ = ocmf.nystrom_features(sp.csr_array(X), 8, gamma=0.5, append=False)
    np.testing.assert_allclose(Fs, F, atol=1e-8)


# ---- errors: one test per message -----------------------------------------------------------

Y0 = sp.csr_array(np.array([[1.0, 0, 1], [0, 1, 0]]))


@pytest.mark.parametrize("kw, exc, msg", [
    (dict(Y=np.ones((2, 3))), TypeError, "Y must be a scipy.sparse"),
    (dict(Y=sp.csr_array(np.array([[np.nan, 1.0]]))), ValueError, "Y has 1 non-finite"),
    (dict(Y=sp.csr_array(np.array([[-1.0, 1.0]]))), ValueError, "Y has 1 negative"),
    (dict(k=0), ValueError, "k must be >= 1"),
    (dict(k=2.5), TypeError, "k must be an integer"),
    (dict(loss="hinge"), ValueError, "unknown loss 'hinge'"),
    (dict(solver="lbfgs"), ValueError, "unknown solver 'lbfgs'"),
    (dict(negatives="some"), ValueError, "unknown negatives 'some'"),
    (dict(user_features=np.ones((3, 2))), ValueError, r"user_features has 3 rows, expected 2 \(one per row of Y\)"),
    (dict(item_features=sp.csr_array(np.ones((2, 2)))), ValueError, r"item_features has 2 rows, expected 3 \(one per column of Y\)"),
    (dict(user_graph=np.ones((2, 3))), ValueError, "user_graph has shape 2×3, expected a square 2×2"),
    (dict(item_graph=np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0.0]])), ValueError, "item_graph is not symmetric"),
    (dict(user_graph=np.array([[0, -1], [-1, 0.0]])), ValueError, "user_graph has negative similarities"),
    (dict(p=np.ones(3)), ValueError, "p has shape 3, expected 2"),
    (dict(q=-np.ones(3)), ValueError, "q must be non-negative"),
    (dict(rho=-1.0), ValueError, "rho must be >= 0"),
    (dict(lam=float("nan")), ValueError, "lam must be finite"),
    (dict(lam_w=-0.5), ValueError, "lam_w must be >= 0"),
    (dict(lam_h="big"), TypeError, "lam_h must be a real number"),
    (dict(neg_ratio=0.0, negatives="sampled"), ValueError, "neg_ratio must be > 0"),
    (dict(init=(np.ones((2, 2)), np.ones((2, 2)))), ValueError, r"init\[1\] \(H0\) has shape 2×2, expected 3×2"),
    (dict(init=np.ones(3)), TypeError, "init must be a tuple"),
    (dict(callback=3), TypeError, "callback must be callable"),
    (dict(seed=-3), TypeError, "seed must be a non-negative integer"),
    (dict(n_threads=0), ValueError, "n_threads must be in"),
    (dict(dtype="float16"), ValueError, "dtype must be 'float64' or 'float32', got 'float16'"),
])
def test_fit_rejects_bad_input(kw, exc, msg):
    args = dict(Y=Y0, k=2)
    args.update(kw)
    with pytest.raises(exc, match=msg):
        ocmf.fit(args.pop("Y"), args.pop("k"), n_iter=1, **args)


def test_zero_iterations_are_refused_as_by_the_other_methods():
    """n_iter=0 returned the random starting factors as a fitted model; fbgd, csrr and homf
    refused it."""
    with pytest.raises(ValueError, match="n_iter must be >= 1, got 0"):
        ocmf.fit(Y0, 2, n_iter=0)


def test_malformed_csr_never_reaches_a_kernel():
    bad = sp.csr_array((np.ones(2), np.array([0, 7]), np.array([0, 1, 2])), shape=(2, 3))
    with pytest.raises(ValueError, match="indices out of range"):
        ocmf.fit(bad, 2)
    bad = sp.csr_array((np.ones(2), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 3))
    bad.indptr[1] = 3
    with pytest.raises(ValueError, match="indptr must start at 0 and be non-decreasing"):
        ocmf.fit(bad, 2)


def test_dense_variant_refuses_large_problems():
    Y = sp.csr_array((np.ones(1), (np.array([0]), np.array([0]))), shape=(6000, 5000))
    with pytest.raises(ValueError, match=r'full_logistic.*6000×5000.*25,000,000 entries; use negatives="full"'):
        ocmf.fit(Y, 2, negatives="full_logistic")
    with pytest.raises(ValueError, match="above the limit of 1,000 entries"):
        ocmf.fit(_data(), 2, negatives="full_logistic", dense_limit=1000)


def test_objective_rejects_mismatched_factors():
    with pytest.raises(ValueError, match="W has shape 3×2, expected 2×\\*"):
        ocmf.objective(Y0, np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="H has shape 3×1, expected 3×2"):
        ocmf.objective(Y0, np.ones((2, 2)), np.ones((3, 1)))


def test_nystrom_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n_landmarks must be at most the number of rows"):
        ocmf.nystrom_features(np.ones((3, 2)), 5)
    with pytest.raises(ValueError, match="gamma must be > 0"):
        ocmf.nystrom_features(np.ones((3, 2)), 2, gamma=0.0)
    with pytest.raises(TypeError, match="X must be an array"):
        ocmf.nystrom_features(None, 2)
    _, nmap = ocmf.nystrom_features(np.ones((6, 3)) + np.arange(6)[:, None], 2)
    with pytest.raises(TypeError, match="X must be a 2-d numpy array or a scipy.sparse matrix, got list"):
        nmap.transform([[1.0, 2.0, 3.0]])            # was AttributeError: no attribute 'shape'
    with pytest.raises(ValueError, match="X has 2 columns, expected 3"):
        nmap.transform(np.ones((2, 2)))


@pytest.mark.parametrize("name", ["lam", "lam_w", "lam_h", "lam_graph"])
def test_a_penalty_beyond_machine_precision_is_refused(name):
    """lam=1e100 gave a negative square-loss objective and 1e150 a NaN with the advice 'raise lam'."""
    Y = sp.random(8, 6, density=0.4, format="csr", random_state=0)
    Y.data[:] = 1.0
    with pytest.raises(ValueError, match=f"{name} must be at most 1e\\+20, got 1e\\+100"):
        ocmf.fit(Y, 2, n_iter=1, loss="square", **{name: 1e100})
    with pytest.raises(ValueError, match=f"{name} must be at most"):
        ocmf.objective(Y, np.ones((8, 2)), np.ones((6, 2)), **{name: 1e150})
    model = ocmf.fit(Y, 2, n_iter=1, loss="square", **{name: 1e20})    # the bound itself still fits
    assert np.isfinite(model.history[-1]["objective"])


def _memory_need(shape, k, dtype="float32", **kw):
    """The bytes ocmf.fit's memory check asks for (from the refusal under a 1-byte limit)."""
    import re
    Y = sp.csr_array((np.ones(1), ([0], [0])), shape=shape)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FASTPU_MEMORY_LIMIT", "1")
        with pytest.raises(ValueError, match="factors and work arrays") as err:
            ocmf.fit(Y, k, dtype=dtype, n_iter=1, **kw)
    return int(re.search(r"\(([\d,]+) bytes\)", str(err.value)).group(1).replace(",", ""))


def test_the_memory_check_counts_the_row_path_as_it_allocates():
    """A row-path side is charged itemsize + 16 bytes per factor entry, not the TRON path's
    ~100: ML-20M's shape at k = 2048 (2.7 GB of float32 factors) asks for about 7 GB."""
    m, n, k = 138_000, 27_000, 2048
    assert _memory_need((m, n), k) == 20 * (m + n) * k + 64 * k * k
    assert _memory_need((m, n), k, dtype="float64") == 24 * (m + n) * k + 64 * k * k
    X = sp.identity(m, format="csr")          # features: that side is solved by TRON
    tron = _memory_need((m, n), k, user_features=X, intercept=False)
    assert tron == 8 * k * (6 * m + 8 * m) + 20 * n * k + 64 * k * k


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_row_path_allocates_less_than_its_memory_check_asks_for(dtype):
    """numpy's peak allocation during a fit (tracemalloc) stays below what the check asks for
    (measured: at most 12 bytes per factor entry at float32, 10.3 at float64, against 20 and 24)."""
    import tracemalloc
    Y = fp.datasets.synthetic(3000, 1500, rank=4, density=0.002, seed=0).Y
    k = 256
    ocmf.fit(Y, k, n_iter=1, dtype=dtype)                       # compiled before measuring
    tracemalloc.start()
    try:
        ocmf.fit(Y, k, n_iter=2, dtype=dtype, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= _memory_need(Y.shape, k, dtype=dtype)


def test_nystrom_refuses_centres_that_cannot_fit(monkeypatch):
    """Dense D × d centres of a very wide sparse X: a clear refusal, not numpy's MemoryError."""
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "1G")
    rows = np.arange(30)
    X = sp.csr_matrix((np.ones(30), (rows, rows * 3_000_000)), shape=(30, 10 ** 8))
    with pytest.raises(ValueError, match="nystrom_features.*n_landmarks"):
        ocmf.nystrom_features(X, 5)


def test_feature_aware_multilabel_on_yeast_beats_label_frequency():
    """LEML-style use: instances × labels with instance features (and the default intercept),
    new instances scored by cold start."""
    data = fp.datasets.load("yeast")
    X = data.user_features
    test = np.random.default_rng(0).random(X.shape[0]) < 0.2
    model = ocmf.fit(data.Y[~test], 14, user_features=X[~test], loss="logistic", rho=0.1, lam=0.1, n_iter=4)
    assert model.params["intercept"] is True
    truth = data.Y[test].toarray()
    top = np.argsort(-fp.fold_in(model, user_features=X[test]).scores(), axis=1)[:, :3]
    p3 = np.take_along_axis(truth, top, axis=1).mean()
    freq = np.asarray(data.Y[~test].sum(axis=0)).ravel()
    p3_freq = truth[:, np.argsort(-freq)[:3]].mean()
    assert p3 > p3_freq + 0.03, (p3, p3_freq)


def test_features_past_float32_range_are_refused_not_returned_as_inf():
    """Features past 3.4e38 fit in float64, but Z H overflowed in the float32 model (the fuzz
    table found 5.8e39): the default dtype refuses by name, float64 fits."""
    rng = np.random.default_rng(0)
    Y = sp.random_array((12, 9), density=0.3, random_state=rng, format="csr")
    Y.data[:] = 1.0
    Z = np.full((9, 2), 1e41)
    with pytest.raises(FloatingPointError, match=r"item_features has entries up to 1e\+41.*dtype='float64'"):
        ocmf.fit(Y, 2, item_features=Z, n_iter=2)
    model = ocmf.fit(Y, 2, item_features=Z, n_iter=2, dtype="float64")
    assert np.isfinite(model.item_factors).all()
