"""CSRR against the dense references in naive_csrr.py."""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu.csrr import _check as csrr_check, _solvers as csrr_solvers
import fastpu as fp
from fastpu import csrr
from fastpu._kernels import csrr as K
from fastpu._core.threads import limit_threads

import naive_csrr as naive

shapes = st.tuples(st.integers(1, 7), st.integers(1, 7))
seeds = st.integers(0, 10**6)
variants = st.sampled_from(["I", "II"])


@pytest.fixture(autouse=True)
def _one_thread():
    # Tiny problems: one numba thread keeps parallel-region overhead out of the suite's
    # runtime; test_deterministic_and_thread_independent compares against 2 threads.
    with limit_threads(1):
        yield


def _pu(seed, m, n, density=None):
    """A random 0/1 CSR (empty rows and columns occur) and its dense A.

    It has at least one positive: every fit refuses a Y without one (test_validation_empty.py).
    """
    rng = np.random.default_rng(seed)
    dens = rng.uniform(0.0, 0.7) if density is None else density
    A = (rng.random((m, n)) < dens).astype(float)
    if not A.any():
        A[rng.integers(m), rng.integers(n)] = 1.0
    Y = sp.csr_array(A * rng.integers(1, 6, size=(m, n)))     # ratings: binarised by csrr
    return Y, A


def _dense_v(model):
    return model.V.toarray()


# ----------------------------------------------------------------------------- kernels


@given(seeds, shapes, variants, st.floats(0.5, 5.0))
def test_positive_terms_and_gather_match_dense(seed, shape, variant, alpha):
    Y, A = _pu(seed, *shape)
    Y = fp._core.validation.check_csr(Y)
    rng = np.random.default_rng(seed + 1)
    D = rng.random(shape)
    v = rng.random(Y.nnz)
    up = np.empty(Y.nnz)
    K.gather(Y.indptr, Y.indices, D, up)
    r, c = np.nonzero(A)
    np.testing.assert_array_equal(up, D[r, c])
    g = np.empty(Y.nnz)
    row = np.empty(shape[0])
    kind = 0 if variant == "I" else 1
    K.positive_terms(Y.indptr, up + v, up, kind, alpha, g, row)
    Vd = np.zeros(shape)
    Vd[r, c] = v
    X = D + Vd
    np.testing.assert_allclose(g, naive.grad(X, A, variant, alpha)[r, c], rtol=1e-12, atol=1e-14)
    # ½‖D‖² + Σ row = Σ ℓ(D + V, A)
    total = 0.5 * np.sum(D * D) + row.sum()
    assert total == pytest.approx(naive.loss(X, A, variant, alpha), rel=1e-12, abs=1e-12)


@given(seeds, shapes, st.floats(0.01, 1.0))
def test_dense_grad_step_matches_dense(seed, shape, eta):
    Y, A = _pu(seed, *shape)
    Y = fp._core.validation.check_csr(Y)
    rng = np.random.default_rng(seed + 2)
    U = rng.random(shape)
    g_full = naive.grad(U, A, "I", 3.0)                   # V = 0
    r, c = np.nonzero(A)
    out = np.empty(shape)
    K.dense_grad_step(Y.indptr, Y.indices, g_full[r, c], eta, U, out)
    np.testing.assert_allclose(out, U - eta * g_full, rtol=1e-13, atol=1e-15)
    K.dense_grad_step(Y.indptr, Y.indices, g_full[r, c], eta, U, U)   # in place
    np.testing.assert_allclose(U, out, rtol=0, atol=0)


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=12), st.floats(0, 2))
def test_soft_box_is_clipped_soft_threshold(xs, tau):
    x = np.array(xs)
    out = np.empty_like(x)
    K.soft_box(x, tau, 0.0, 1.0, out)
    np.testing.assert_allclose(out, np.clip(naive.soft(x, tau), 0, 1), atol=1e-15)
    # and it is the prox of tau|z| + box: checking the 1-d optimality against a fine grid
    grid = np.linspace(0, 1, 2001)
    for xi, zi in zip(x, out):
        f = 0.5 * (grid - xi) ** 2 + tau * grid
        assert 0.5 * (zi - xi) ** 2 + tau * zi <= f.min() + 1e-12


# ----------------------------------------------------------------------------- objective, gradients


@given(seeds, shapes, st.integers(1, 4), variants, st.floats(0.5, 5.0), st.floats(0, 2), st.floats(0, 2))
def test_bilinear_objective_and_gradients_match_dense(seed, shape, k, variant, alpha, lam1, lam2):
    Y, A = _pu(seed, *shape)
    data = csrr_check.positives(Y)
    rng = np.random.default_rng(seed + 3)
    P, Q = rng.random((shape[0], k)), rng.random((shape[1], k))
    v = rng.random(data.nnz)
    Vd = data.csr(v).toarray()
    prob = csrr_solvers._Bilinear(data, 0 if variant == "I" else 1, alpha, lam1, lam2)
    ref = naive.bilinear_objective(P, Q, Vd, A, variant, alpha, lam1, lam2)
    assert prob.objective(P, Q, v) == pytest.approx(ref, rel=1e-10, abs=1e-10)
    assert csrr.objective(Y, P=P, Q=Q, V=data.csr(v), variant=variant, alpha=alpha, lam1=lam1,
                          lam2=lam2) == pytest.approx(ref, rel=1e-10, abs=1e-10)
    gP_ref, gQ_ref = naive.bilinear_loss_grads(P, Q, Vd, A, variant, alpha)
    gP, gQ = np.empty_like(P), np.empty_like(Q)
    prob.grad_P(P, Q, v, Q.T @ Q, gP)
    prob.grad_Q(P, Q, v, P.T @ P, gQ)
    np.testing.assert_allclose(gP, gP_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gQ, gQ_ref, rtol=1e-10, atol=1e-10)


def test_bilinear_gradients_finite_differences():
    Y, A = _pu(11, 6, 5, density=0.4)
    data = csrr_check.positives(Y)
    rng = np.random.default_rng(0)
    P, Q = rng.random((6, 3)), rng.random((5, 3))
    v = rng.random(data.nnz)
    for variant in ("I", "II"):
        prob = csrr_solvers._Bilinear(data, 0 if variant == "I" else 1, 2.5, 0.0, 0.0)
        gP, gQ = np.empty_like(P), np.empty_like(Q)
        prob.grad_P(P, Q, v, Q.T @ Q, gP)
        prob.grad_Q(P, Q, v, P.T @ P, gQ)
        h = 1e-5
        for M, G in ((P, gP), (Q, gQ)):
            for idx in [(0, 0), (2, 1), (4, 2)]:
                old = M[idx]
                M[idx] = old + h
                fp_ = prob.objective(P, Q, v)
                M[idx] = old - h
                fm = prob.objective(P, Q, v)
                M[idx] = old
                assert (fp_ - fm) / (2 * h) == pytest.approx(G[idx], rel=1e-6, abs=1e-8)


def test_loss_gradient_finite_differences():
    rng = np.random.default_rng(5)
    A = (rng.random((4, 3)) < 0.5).astype(float)
    X = rng.random((4, 3))
    for variant in ("I", "II"):
        G = naive.grad(X, A, variant, 3.0)
        h = 1e-6
        for idx in np.ndindex(X.shape):
            E = np.zeros_like(X)
            E[idx] = h
            fd = (naive.loss(X + E, A, variant, 3.0) - naive.loss(X - E, A, variant, 3.0)) / (2 * h)
            assert fd == pytest.approx(G[idx], rel=1e-6, abs=1e-8)


@given(seeds, shapes, variants, st.floats(0.5, 5.0), st.floats(0, 2), st.floats(0, 2))
def test_objective_with_dense_U_matches_dense(seed, shape, variant, alpha, lam1, lam2):
    Y, A = _pu(seed, *shape)
    rng = np.random.default_rng(seed + 4)
    U = rng.random(shape)
    Vd = A * rng.random(shape)
    ref = naive.objective(U, Vd, A, variant, alpha, lam1, lam2)
    got = csrr.objective(Y, U=U, V=sp.csr_array(Vd), variant=variant, alpha=alpha, lam1=lam1, lam2=lam2)
    assert got == pytest.approx(ref, rel=1e-10, abs=1e-10)


# ----------------------------------------------------------------------------- Algorithm 1


@given(seeds, st.tuples(st.integers(1, 6), st.integers(1, 6)), variants, st.floats(1.0, 5.0),
       st.floats(0.0, 1.5), st.floats(0.0, 0.5), st.sampled_from([None, 0.05, 0.2]))
def test_algorithm1_matches_dense_step_for_step(seed, shape, variant, alpha, lam1, lam2, eta):
    Y, A = _pu(seed, *shape)
    n_iter = 4
    seen = []
    model = csrr.fit(Y, variant=variant, alpha=alpha, lam1=lam1, lam2=lam2, eta=eta, n_iter=n_iter,
                     svd_method="full", callback=lambda info: seen.append(info) and False)
    eta_used = model.params["eta_used"]
    if eta is None:
        assert eta_used == pytest.approx(1 / (2 * (max(alpha, 1) if variant == "I" else 1)))
    ref = naive.algorithm1(A, variant, alpha, lam1, lam2, eta_used, n_iter)
    np.testing.assert_allclose([h["objective"] for h in model.history],
                               [r["objective"] for r in ref], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(model.U, ref[-1]["U"], atol=1e-10)
    np.testing.assert_allclose(_dense_v(model), ref[-1]["V"], atol=1e-12)
    np.testing.assert_allclose(model.extras["V_tilde"].toarray(), ref[-1]["Vt"], atol=1e-12)
    Ut = model.user_factors @ model.item_factors.T
    np.testing.assert_allclose(Ut, ref[-1]["Ut"], atol=1e-10)
    np.testing.assert_allclose(model.scores(), ref[-1]["U"] + ref[-1]["V"], atol=1e-10)
    assert len(seen) == n_iter


def test_v_tilde_survives_a_returned_v_of_zeros():
    # Ṽ and V are built on the same pattern of positives; pruning V's zeros once emptied Ṽ too
    Y, A = sp.csr_array(np.array([[2.0, 0.0, 1.0]])), np.array([[1.0, 0.0, 1.0]])
    with pytest.warns(fp.ConvergenceWarning):           # the returned U and V are all zero here
        model = csrr.fit(Y, variant="I", alpha=4.5, lam1=0.0, lam2=0.0, eta=0.2, n_iter=4,
                         svd_method="full")
    ref = naive.algorithm1(A, "I", 4.5, 0.0, 0.0, 0.2, 4)
    assert not ref[-1]["V"].any() and ref[-1]["Vt"].any()
    np.testing.assert_allclose(_dense_v(model), ref[-1]["V"], atol=1e-12)
    np.testing.assert_allclose(model.extras["V_tilde"].toarray(), ref[-1]["Vt"], atol=1e-12)


def test_algorithm1_truncated_svd_matches_dense():
    # large enough that the truncated SVD path (ARPACK, rank grown to the threshold) is used
    Y, A = _pu(3, 90, 80, density=0.15)
    model = csrr.fit(Y, variant="I", alpha=3.0, lam1=1.0, lam2=0.05, n_iter=5, svd_method="truncated")
    ref = naive.algorithm1(A, "I", 3.0, 1.0, 0.05, model.params["eta_used"], 5)
    assert 0 < model.history[-1]["svd_computed"] < 80
    np.testing.assert_allclose([h["objective"] for h in model.history],
                               [r["objective"] for r in ref], rtol=1e-8)
    np.testing.assert_allclose(model.U, ref[-1]["U"], atol=1e-8)
    np.testing.assert_allclose(_dense_v(model), ref[-1]["V"], atol=1e-8)


@given(seeds, shapes, variants, st.floats(1.0, 5.0), st.floats(0.0, 0.5))
def test_dense_reference_keeps_V_on_positives(seed, shape, variant, alpha, lam2):
    # the claim behind storing V sparse: in the dense algorithm V is exactly 0 off Ω+
    Y, A = _pu(seed, *shape)
    for step in naive.algorithm1(A, variant, alpha, 0.3, lam2, 0.2, 6):
        assert np.all(step["V"][A == 0] == 0) and np.all(step["Vt"][A == 0] == 0)
    model = csrr.fit(Y, variant=variant, alpha=alpha, lam2=lam2, n_iter=3)
    assert np.all(_dense_v(model)[A == 0] == 0)


def test_algorithm1_objective_goes_down_and_restart():
    Y, _ = _pu(8, 40, 30, density=0.2)
    for variant in ("I", "II"):
        model = csrr.fit(Y, variant=variant, alpha=3.0, lam1=0.5, lam2=0.05, n_iter=30)
        obj = [h["objective"] for h in model.history]
        start = csrr.objective(Y, U=np.zeros(Y.shape), variant=variant, alpha=3.0, lam1=0.5, lam2=0.05)
        assert obj[-1] < obj[0] < start
        assert obj[-1] < 0.5 * start
        assert np.all((model.U >= 0) & (model.U <= 1))
        assert model.V.nnz == 0 or (model.V.data.min() > 0 and model.V.data.max() <= 1)
    res = csrr.fit(Y, variant="I", alpha=3.0, lam1=0.5, lam2=0.05, n_iter=30, restart="function")
    obj = [h["objective"] for h in res.history]
    assert all(b <= a + 1e-12 or h["restarted"] for a, b, h in zip(obj, obj[1:], res.history[1:]))


# ----------------------------------------------------------------------------- Algorithm 2


@given(seeds, st.tuples(st.integers(1, 6), st.integers(1, 6)), st.integers(1, 3), variants,
       st.floats(1.0, 5.0), st.floats(0.0, 1.0), st.floats(0.0, 0.5), st.sampled_from([None, 0.05]))
def test_algorithm2_matches_dense_step_for_step(seed, shape, k, loss, alpha, lam1, lam2, eta):
    Y, A = _pu(seed, *shape)
    model = csrr.fit(Y, variant="e", k=k, loss=loss, alpha=alpha, lam1=lam1, lam2=lam2, eta=eta,
                     n_iter=3, seed=seed)
    rng = np.random.default_rng(seed)              # fit draws P then Q uniformly in [0, 1/√k]
    P0 = rng.uniform(0, 1 / np.sqrt(k), size=(shape[0], k))
    Q0 = rng.uniform(0, 1 / np.sqrt(k), size=(shape[1], k))
    ref = naive.algorithm2(A, P0, Q0, loss, alpha, lam1, lam2, 3, eta=eta)
    np.testing.assert_allclose([h["objective"] for h in model.history],
                               [r["objective"] for r in ref], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(model.P, ref[-1]["P"], atol=1e-10)
    np.testing.assert_allclose(model.Q, ref[-1]["Q"], atol=1e-10)
    np.testing.assert_allclose(_dense_v(model), ref[-1]["V"], atol=1e-10)
    assert np.all(_dense_v(model)[A == 0] == 0)
    np.testing.assert_allclose(model.scores(), ref[-1]["P"] @ ref[-1]["Q"].T + ref[-1]["V"], atol=1e-10)


@given(seeds, st.tuples(st.integers(2, 6), st.integers(2, 6)), st.integers(1, 3), variants,
       st.sampled_from([None, 4]), st.sampled_from([1e-2, 1e-4]))
def test_algorithm2_inner_loop_matches_dense_repeat_until_convergence(seed, shape, k, loss, n_inner, tol):
    """n_inner=None is the paper's rule (until the relative change is at most inner_tol, capped)."""
    Y, A = _pu(seed, *shape)
    model = csrr.fit(Y, variant="e", k=k, loss=loss, alpha=2.0, lam1=0.3, lam2=0.05, n_iter=3,
                     seed=seed, n_inner=n_inner, inner_tol=tol)
    rng = np.random.default_rng(seed)
    P0 = rng.uniform(0, 1 / np.sqrt(k), size=(shape[0], k))
    Q0 = rng.uniform(0, 1 / np.sqrt(k), size=(shape[1], k))
    cap = csrr.INNER_CAP if n_inner is None else n_inner
    ref = naive.algorithm2(A, P0, Q0, loss, 2.0, 0.3, 0.05, 3, max_inner=cap, tol=tol)
    assert [h["inner"] for h in model.history] == [r["inner"] for r in ref]
    np.testing.assert_allclose([h["objective"] for h in model.history],
                               [r["objective"] for r in ref], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(model.P, ref[-1]["P"], atol=1e-10)
    np.testing.assert_allclose(model.Q, ref[-1]["Q"], atol=1e-10)


def test_inner_loop_until_convergence_takes_more_passes_and_descends():
    Y, _ = _pu(11, 60, 45, density=0.1)
    one = csrr.fit(Y, variant="e", k=4, n_iter=5, seed=0)
    conv = csrr.fit(Y, variant="e", k=4, n_iter=5, seed=0, n_inner=None, inner_tol=1e-6)
    assert [h["inner"] for h in one.history] == [1] * 5
    assert conv.history[0]["inner"] > 1
    assert all(h["inner"] <= csrr.INNER_CAP for h in conv.history)
    obj = np.array([h["objective"] for h in conv.history])
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]))
    assert conv.params["n_inner"] is None
    # the default is one pass, exactly as n_inner=1
    same = csrr.fit(Y, variant="e", k=4, n_iter=5, seed=0, n_inner=1, inner_tol=0.5)
    np.testing.assert_array_equal(one.P, same.P)
    np.testing.assert_array_equal(one.V.toarray(), same.V.toarray())


def test_algorithm2_objective_non_increasing_and_box():
    Y, _ = _pu(9, 60, 45, density=0.1)
    for loss in ("I", "II"):
        model = csrr.fit(Y, variant="e", k=5, loss=loss, alpha=3.0, lam1=0.5, lam2=0.05, n_iter=40,
                         n_inner=3)
        obj = np.array([h["objective"] for h in model.history])
        assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]))
        assert obj[-1] < obj[0]
        k = model.P.shape[1]
        assert model.P.min() >= 0 and model.P.max() <= 1 / np.sqrt(k)
        U = model.P @ model.Q.T
        assert U.min() >= 0 and U.max() <= 1 + 1e-12


def test_deterministic_and_thread_independent():
    Y, _ = _pu(10, 50, 40, density=0.15)
    with limit_threads(1):
        a = csrr.fit(Y, variant="e", k=4, n_iter=5, seed=3)
        c = csrr.fit(Y, variant="I", n_iter=4, seed=3)
    b = csrr.fit(Y, variant="e", k=4, n_iter=5, seed=3, n_threads=2)
    d = csrr.fit(Y, variant="I", n_iter=4, seed=3, n_threads=2)
    np.testing.assert_allclose(a.P, b.P, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(a.V.toarray(), b.V.toarray(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(c.U, d.U, rtol=1e-12, atol=1e-13)
    e = csrr.fit(Y, variant="e", k=4, n_iter=5, seed=3, n_threads=2)
    np.testing.assert_array_equal(b.P, e.P)


def test_n_threads_also_limits_blas_in_the_svd_variants():
    """CSRR-I/II's time is LAPACK's: a given n_threads bounds BLAS too, None leaves it alone."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    Y, _ = _pu(10, 30, 20, density=0.2)
    with threadpool_limits(limits=2, user_api="blas"):     # whatever the session set before
        before, seen = blas_threads(), []
        assert before and all(n == 2 for n in before)
        csrr.fit(Y, variant="I", n_iter=2, n_threads=1, callback=lambda info: seen.append(blas_threads()))
        assert seen and all(n == [1] * len(before) for n in seen)
        seen.clear()
        csrr.fit(Y, variant="II", n_iter=2, callback=lambda info: seen.append(blas_threads()))
        assert seen and all(n == before for n in seen)
        assert blas_threads() == before
    with pytest.raises(ValueError, match="n_threads must be in"):
        csrr.fit(Y, variant="I", n_iter=1, n_threads=10 ** 6)


def test_model_scores_recommend_and_users():
    Y, A = _pu(12, 20, 15, density=0.2)
    model = csrr.fit(Y, variant="e", k=3, n_iter=5)
    S = model.scores()
    np.testing.assert_allclose(model.scores([3, 1]), S[[3, 1]])
    items, _ = fp.recommend(model, Y, users=[0, 1], n=4)
    for u in (0, 1):
        got = items[u][items[u] >= 0]
        assert not np.any(A[u, got])                     # seen items excluded
    assert model.shape == (20, 15) and model.method == "csrr" and model.variant == "e"
    assert model.params["k"] == 3
    m1 = csrr.fit(Y, variant="II", n_iter=3)
    assert m1.U.shape == (20, 15) and m1.user_factors.shape[0] == 20
    assert "box_violation" in m1.history[-1] and "rank" in m1.history[-1]


def test_demo_configs():
    configs = csrr.demo_configs()
    assert [label for label, _, _ in configs] == ["CSRR-e"]
    Y, _ = _pu(13, 30, 20, density=0.2)
    for _, kwargs, _ in configs:
        model = csrr.fit(Y, **{**kwargs, "n_iter": 2}, seed=0)
        assert len(model.history) == 2


# ----------------------------------------------------------------------------- messages


def test_messages():
    Y, _ = _pu(0, 5, 4, density=0.5)
    with pytest.raises(TypeError, match="Y must be a scipy.sparse matrix or array, got ndarray"):
        csrr.fit(np.eye(3), 2)
    with pytest.raises(ValueError, match="unknown variant 'III'; expected one of 'I', 'II', 'e'"):
        csrr.fit(Y, variant="III")
    with pytest.raises(ValueError, match="alpha must be > 0.0, got 0"):
        csrr.fit(Y, alpha=0.0)
    with pytest.raises(ValueError, match="lam1 must be >= 0.0, got -1"):
        csrr.fit(Y, lam1=-1.0)
    with pytest.raises(ValueError, match="lam2 must be >= 0.0, got -1"):
        csrr.fit(Y, lam2=-1.0)
    with pytest.raises(ValueError, match="eta must be > 0.0, got 0"):
        csrr.fit(Y, 2, eta=0.0)
    with pytest.raises(ValueError, match="n_iter must be >= 1, got 0"):
        csrr.fit(Y, 2, n_iter=0)
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        csrr.fit(Y, variant="e", k=0)
    with pytest.raises(ValueError, match="k is the rank of variant 'e'; variant 'I' has no fixed rank"):
        csrr.fit(Y, variant="I", k=3)
    with pytest.raises(ValueError, match="unknown loss 'III'"):
        csrr.fit(Y, loss="III")
    with pytest.raises(ValueError, match="unknown restart 'gradient'; expected one of None, 'function'"):
        csrr.fit(Y, variant="I", restart="gradient")
    with pytest.raises(ValueError, match="unknown svd_method 'qr'"):
        csrr.fit(Y, variant="I", svd_method="qr")
    with pytest.raises(ValueError, match="n_inner must be >= 1, got 0"):
        csrr.fit(Y, 2, n_inner=0)
    with pytest.raises(TypeError, match="n_inner must be an integer"):
        csrr.fit(Y, 2, n_inner=2.5)
    with pytest.raises(TypeError, match="callback must be callable or None, got str"):
        csrr.fit(Y, 2, callback="x")
    with pytest.raises(ValueError, match="Y has 1 negative stored values"):
        csrr.fit(sp.csr_array(np.array([[1.0, -1.0]])), 2)
    with pytest.raises(ValueError, match="Y has shape 0×3; expected at least one user and one item"):
        csrr.fit(sp.csr_array((0, 3)), 2)
    with pytest.raises(ValueError, match=r"CSRR-I \(dense U\) needs a dense 5×4 matrix .* use variant='e'"):
        csrr.fit(Y, variant="I", dense_limit=10)
    with pytest.raises(ValueError, match="give either U, or both P and Q"):
        csrr.objective(Y)
    with pytest.raises(ValueError, match="give either U, or both P and Q"):
        csrr.objective(Y, U=np.zeros((5, 4)), P=np.zeros((5, 2)), Q=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="V has 1 stored entries off the positives of Y"):
        off = np.argwhere(Y.toarray() == 0)[0]
        csrr.objective(Y, U=np.zeros((5, 4)), V=sp.csr_array(([1.0], ([off[0]], [off[1]])), shape=(5, 4)))
    with pytest.raises(ValueError, match="U has shape 4×4, expected 5×4"):
        csrr.objective(Y, U=np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"Q has shape 4×3, expected 4×2"):
        csrr.objective(Y, P=np.zeros((5, 2)), Q=np.zeros((4, 3)))
    model = csrr.fit(Y, variant="e", k=2, n_iter=1)
    with pytest.raises(ValueError, match=r"users must lie in \[0, 5\)"):
        model.scores([7])


def test_fit_signature_in_one_order():
    """data, model, penalties, solver, run-time (loss was after eta, n_threads before seed)."""
    assert list(inspect.signature(csrr.fit).parameters) == [
        "Y", "k", "variant", "loss", "alpha", "lam1", "lam2", "eta", "n_iter", "n_inner",
        "inner_tol", "restart", "svd_method", "dense_limit", "seed", "n_threads", "callback",
        "verbose"]


def test_variant_e_requires_k_like_every_rank_k_method():
    """csrr.fit(Y) used to fit CSRR-e at k = 32 without a word."""
    Y, _ = _pu(0, 6, 5, density=0.5)
    want = (r"csrr.fit\(\) missing k, the rank of variant 'e' .*: e.g. csrr.fit\(Y, 32\); "
            r"variants 'I' and 'II' choose their own rank")
    for call in (lambda: csrr.fit(Y), lambda: csrr.fit(Y, None), lambda: csrr.fit(Y, n_iter=2),
                 lambda: csrr.fit(Y, variant="e", k=None),
                 lambda: csrr.fit(fp.datasets.from_pairs([0, 1, 2], [1, 0, 2]))):
        with pytest.raises(TypeError, match=want):
            call()
    # the dense variants choose their rank and still take no k
    assert csrr.fit(Y, variant="I", n_iter=1).params["k"] is None
    assert csrr.fit(Y, variant="II", n_iter=1).params["k"] is None
    assert csrr.fit(Y, 3, n_iter=1).params["k"] == 3


def test_y_is_checked_once(monkeypatch):
    """fit, objective: one check_csr of Y (a Y with stored zeros was canonicalised twice)."""
    from fastpu._core import validation as V
    Y = sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    Y.data[1] = 0.0                                   # a stored zero is not a positive
    calls = []
    real = V.check_csr
    monkeypatch.setattr(V, "check_csr", lambda A, **kw: calls.append(kw.get("name")) or real(A, **kw))
    model = csrr.fit(Y, 2, n_iter=2)
    assert calls == ["Y"] and model.V.nnz <= 2
    calls.clear()
    csrr.fit(Y, variant="I", n_iter=2)
    assert calls == ["Y"]
    calls.clear()
    csrr.objective(Y, P=model.P, Q=model.Q)
    assert calls == ["Y"]
    np.testing.assert_array_equal(csrr_check.positives(Y).indices, [0, 1])
    np.testing.assert_array_equal(csrr_check.positives(Y).indptr, [0, 1, 2])


def test_the_dask_form_runs_the_same_checks():
    """fastpu.distributed's CSRR-e goes through csrr._check (it copied fit's preamble before,
    with its own silent k = 32); the checks raise before the cluster is touched."""
    from fastpu.distributed import _with_defaults     # first: it loads every Dask form
    from fastpu.csrr import _dask

    def call(k=None, **given):
        _dask.fit(None, None, k, n_threads=1, **_with_defaults("csrr", _dask, given))

    with pytest.raises(TypeError, match=r"fastpu.distributed.fit\(\) missing k, the rank of "
                                        r"variant 'e' .*fastpu.distributed.fit\(Y, 32, method='csrr'\)"):
        call()
    with pytest.raises(ValueError, match="alpha must be > 0.0, got 0"):
        call(3, alpha=0.0)
    with pytest.raises(ValueError, match="unknown restart 'gradient'"):
        call(3, restart="gradient")
    with pytest.raises(ValueError, match="n_inner=None has no distributed form"):
        call(3, n_inner=None)
    with pytest.raises(TypeError, match=r"got unexpected parameters \['rho'\]"):
        call(3, rho=1.0)


def test_non_finite_objective_raises():
    # iterates stay in the box, but a cost bias near the float limit overflows the loss
    Y, _ = _pu(1, 10, 8, density=0.3)
    with pytest.raises(FloatingPointError, match="csrr-I: objective became inf at iteration 1"):
        csrr.fit(Y, variant="I", alpha=1e308, eta=1e-300, n_iter=2)


@pytest.mark.parametrize("svd_method", ["full", "auto"])
def test_momentum_after_a_rank_zero_iterate_keeps_its_factor(svd_method):
    # Found by hypothesis in CI: when the previous Ũ had rank 0 the momentum point was Ũ
    # instead of (1 + β)Ũ, so from the 4th iteration on the fit left Algorithm 1.
    Y = sp.csr_array(np.array([[2.0]]))
    model = csrr.fit(Y, variant="I", alpha=5.0, lam1=1.0, lam2=0.0, eta=0.2, n_iter=4,
                     svd_method=svd_method)
    ref = naive.algorithm1(np.array([[1.0]]), "I", 5.0, 1.0, 0.0, 0.2, 4)
    np.testing.assert_allclose([h["objective"] for h in model.history],
                               [r["objective"] for r in ref], rtol=1e-9, atol=1e-10)
