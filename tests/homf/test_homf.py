"""HOMF against dense references written from the paper (tests/naive_homf.py)."""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from fastpu.homf import _solvers as homf_solvers, _walk as homf_walk
import fastpu as fp
from fastpu import homf
from fastpu._kernels import homf as K

import naive_homf as nh


# ----------------------------------------------------------------------------- problems

def _problem(m, n, density, seed, values="ratings", graphs=False):
    """A random R (possibly with stored zeros, empty rows/columns) and optional side graphs."""
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < density
    if values == "ratings":
        Rd = rng.integers(0, 6, (m, n)).astype(float)          # 0 may be stored
    else:
        Rd = rng.normal(size=(m, n))
    R = sp.csr_array(sp.coo_array((Rd[mask], np.nonzero(mask)), shape=(m, n)))
    Su = Si = None
    if graphs:
        Su = rng.random((m, m)) * (rng.random((m, m)) < 0.4)
        Su = np.triu(Su) + np.triu(Su, 1).T
        Si = rng.random((n, n)) * (rng.random((n, n)) < 0.4)
        Si = np.triu(Si) + np.triu(Si, 1).T
    return R, Rd, mask, Su, Si


sizes = st.integers(min_value=1, max_value=6)
seeds = st.integers(min_value=0, max_value=2**31 - 1)
densities = st.floats(min_value=0.0, max_value=1.0)


def _small_model_problem(seed, m=5, n=4, density=0.5):
    R, _, _, _, _ = _problem(m, n, density, seed)
    return R


# ----------------------------------------------------------------------------- graph (3)

@given(m=sizes, n=sizes, density=densities, seed=seeds, g=st.sampled_from(["exp", "linear", "step"]),
       alpha=st.floats(0.0, 1.0, allow_subnormal=False), which=st.sampled_from(["none", "user", "item", "both"]))
def test_transition_matrix_equals_dense_equation_3(m, n, density, seed, g, alpha, which):
    R, Rd, mask, Su, Si = _problem(m, n, density, seed, graphs=True)
    Su = Su if which in ("user", "both") else None
    Si = Si if which in ("item", "both") else None
    A = homf.transition_matrix(R, user_graph=Su, item_graph=Si, alpha=alpha, g=g)
    ref = nh.row_normalise(nh.graph(Rd, mask, g, alpha, Su=Su, Si=Si))
    assert A.shape == (m + n, m + n)
    assert A.indices.dtype == np.int64 and A.data.dtype == np.float64
    np.testing.assert_allclose(A.toarray(), ref, rtol=1e-12, atol=1e-15)
    rows = A.toarray().sum(axis=1)
    assert np.all((np.abs(rows - 1) < 1e-12) | (rows == 0))


_GS = st.sampled_from(["exp", "linear", "step"])


@given(m=sizes, n=sizes, density=densities, seed=seeds, g=_GS, g1=_GS, g3=_GS,
       alpha=st.floats(0.0, 1.0, allow_subnormal=False), which=st.sampled_from(["user", "item", "both"]),
       scale=st.sampled_from([1.0, 30.0]))
def test_block_functions_g1_g2_g3_equal_dense_equation_3(m, n, density, seed, g, g1, g3, alpha,
                                                          which, scale):
    """Each block of (3) with its own function: α g₁(G_r), (1−α) g₂(R), α g₃(G_c)."""
    R, Rd, mask, Su, Si = _problem(m, n, density, seed, graphs=True)
    R = R * scale                       # larger values exercise the per-row exp shift
    Rd, Su, Si = Rd * scale, Su * scale, Si * scale
    Su = Su if which in ("user", "both") else None
    Si = Si if which in ("item", "both") else None
    A = homf.transition_matrix(R, user_graph=Su, item_graph=Si, alpha=alpha, g=g,
                               g_user_graph=g1, g_item_graph=g3)
    ref = nh.row_normalise(nh.graph(Rd, mask, g, alpha, Su=Su, Si=Si, g1=g1, g3=g3))
    np.testing.assert_allclose(A.toarray(), ref, rtol=1e-11, atol=1e-15)


@pytest.mark.parametrize("g", ["exp", "linear", "step"])
def test_g_alone_still_gives_the_same_A(g):
    R, _, _, Su, Si = _problem(6, 5, 0.5, 3, graphs=True)
    A = homf.transition_matrix(R, user_graph=Su, item_graph=Si, alpha=0.4, g=g)
    B = homf.transition_matrix(R, user_graph=Su, item_graph=Si, alpha=0.4, g=g,
                               g_user_graph=g, g_item_graph=g)
    C = homf.transition_matrix(R, Su, Si, 0.4, g, g_user_graph=None, g_item_graph=None)
    for other in (B, C):
        np.testing.assert_array_equal(A.indptr, other.indptr)
        np.testing.assert_array_equal(A.indices, other.indices)
        np.testing.assert_array_equal(A.data, other.data)
    a = homf.fit(R, 2, T=2, n_iter=2, user_graph=Su, alpha=0.4, g=g, mode="dense")
    b = homf.fit(R, 2, T=2, n_iter=2, user_graph=Su, alpha=0.4, g=g, mode="dense",
                 g_user_graph=g, g_item_graph=g)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    assert (a.params["g_user_graph"], a.params["g_item_graph"]) == (g, g)


def test_mixed_exp_and_linear_blocks_do_not_overflow():
    # R through exp at 800 (the shift), the user graph linear: row 0 mixes both kinds
    R = sp.csr_array(np.array([[800.0, 801.0], [0.0, 2.0]]))
    Su = np.array([[0.0, 3.0], [3.0, 0.0]])
    A = homf.transition_matrix(R, user_graph=Su, alpha=0.5, g="exp", g_user_graph="linear").toarray()
    assert np.all(np.isfinite(A))
    np.testing.assert_allclose(A[0, 2:], [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-12)
    assert A[0, 1] < 1e-300                                     # 3 against e^800: no weight
    d1 = 0.5 * 3.0 + 0.5 * np.exp(2.0)                          # row 1: linear 3 and exp(2)
    np.testing.assert_allclose(A[1], [0.5 * 3.0 / d1, 0.0, 0.0, 0.5 * np.exp(2.0) / d1], rtol=1e-12)
    fit = homf.fit(R, 1, T=2, n_iter=1, user_graph=Su, alpha=0.5, g="exp", g_user_graph="linear", mode="dense")
    np.testing.assert_array_equal(fit.extras["A"].toarray(), A)


def test_g_acts_on_stored_entries_only():
    # a stored 0 is an edge of weight exp(0) = 1; an absent entry is no edge
    R = sp.csr_array(sp.coo_array(([0.0, 1.0], ([0, 0], [0, 1])), shape=(2, 2)))
    A = homf.transition_matrix(R, g="exp").toarray()
    e = np.e
    np.testing.assert_allclose(A[0, 2:], [1 / (1 + e), e / (1 + e)])
    assert np.all(A[1] == 0)                                    # user 1 has no stored entry
    A = homf.transition_matrix(R, g="step").toarray()           # step: stored 0 is no edge
    np.testing.assert_allclose(A[0, 2:], [0.0, 1.0])


def test_alpha_forced_to_zero_without_side_graphs():
    R, *_ = _problem(4, 3, 0.6, 1)
    A0 = homf.transition_matrix(R, alpha=0.0)
    A7 = homf.transition_matrix(R, alpha=0.7)
    np.testing.assert_array_equal(A0.toarray(), A7.toarray())


def test_exp_does_not_overflow_on_large_values():
    R = sp.csr_array(np.array([[800.0, 801.0]]))
    A = homf.transition_matrix(R, g="exp").toarray()
    assert np.all(np.isfinite(A))
    np.testing.assert_allclose(A[0, 1:], [1 / (1 + np.e), np.e / (1 + np.e)])


# ----------------------------------------------------------------------------- Algorithm 1

@given(N=st.integers(1, 9), density=densities, seed=seeds, T=st.integers(1, 6), data=st.data())
def test_walk_columns_and_rows_equal_matrix_powers(N, density, seed, T, data):
    rng = np.random.default_rng(seed)
    Ad = rng.normal(size=(N, N)) * (rng.random((N, N)) < density)   # any square matrix
    idx = np.array(data.draw(st.lists(st.integers(0, N - 1), min_size=1, max_size=2 * N)), dtype=np.int64)
    F = nh.f_T(Ad, T)
    scale = max(1.0, np.abs(F).max())
    C = homf.walk_columns(sp.csr_array(Ad), idx, T)
    np.testing.assert_allclose(C, F[:, idx], rtol=1e-10, atol=1e-12 * scale)
    Rw = homf.walk_rows(sp.csr_array(Ad), idx, T)
    np.testing.assert_allclose(Rw, F[idx, :], rtol=1e-10, atol=1e-12 * scale)


@given(m=sizes, n=sizes, density=densities, seed=seeds, T=st.integers(1, 5))
def test_walk_columns_on_transition_matrix(m, n, density, seed, T):
    R, Rd, mask, Su, Si = _problem(m, n, density, seed, graphs=True)
    A = homf.transition_matrix(R, user_graph=Su, alpha=0.4)
    F = nh.f_T(A.toarray(), T)
    cols = np.arange(m + n)
    np.testing.assert_allclose(homf.walk_columns(A, cols, T), F, rtol=1e-12, atol=1e-14)
    # exact zeros stay exact zeros (Ω_T is the structural pattern)
    assert np.array_equal(homf.walk_columns(A, cols, T) != 0, F != 0)


@given(m=sizes, n=sizes, density=densities, seed=seeds, T=st.integers(1, 6),
       block=st.integers(1, 5), graph=st.booleans())
def test_bipartite_walker_equals_matrix_powers(m, n, density, seed, T, block, graph):
    # without side graphs the exact mode walks only the user-item blocks of A
    R, Rd, mask, Su, Si = _problem(m, n, density, seed, graphs=True)
    A = homf.transition_matrix(R, user_graph=Su if graph else None, alpha=0.5)
    At = fp._core.validation.transpose_csr(A)
    F = nh.f_T(A.toarray(), T)
    for P, Pt, ref in ((A, At, F), (At, A, F.T)):
        w = homf_walk._Walker(P, Pt, T, m)
        assert (w.m is not None) == (not graph or not np.any(Su))
        got = np.hstack([w.columns(np.arange(a, b)) for a, b in w.ranges(block)])
        if w.m is not None:
            assert all(not (a < m < b) for a, b in w.ranges(block))
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- ridge steps

@given(N=st.integers(1, 10), b=st.integers(1, 6), k=st.integers(1, 4), seed=seeds,
       density=densities, lam=st.floats(1e-4, 10.0), dense=st.booleans())
def test_ridge_columns_equal_lstsq_on_omega(N, b, k, seed, density, lam, dense):
    rng = np.random.default_rng(seed)
    # columns of mixed density exercise both the direct and the complement Gram
    dens = rng.random(b) * density
    F = rng.random((N, b)) * (rng.random((N, b)) < dens)
    L = rng.normal(size=(N, k))
    LtL = np.empty((k, k))
    homf_solvers._gram(L, LtL)
    np.testing.assert_allclose(LtL, L.T @ L, rtol=1e-12, atol=1e-12)
    out = np.empty((b, k))
    loss = np.empty(b)
    ok = np.empty(b, dtype=np.bool_)
    K.ridge_columns(np.ascontiguousarray(F.T), L, LtL, 2 * lam, dense, out, loss, ok)
    assert ok.all()
    ref = nh.ridge_lstsq(F, L, lam, dense=dense)
    np.testing.assert_allclose(out, ref, rtol=1e-8, atol=1e-10)
    E = F - L @ out.T
    if not dense:
        E = np.where(F != 0, E, 0.0)
    np.testing.assert_allclose(loss, (E * E).sum(axis=0), rtol=1e-7, atol=1e-9)


@given(seed=seeds, T=st.integers(1, 4), mode=st.sampled_from(["exact", "dense"]),
       block=st.sampled_from([None, 1, 3]), graph=st.booleans())
def test_each_half_step_is_the_least_squares_solution(seed, T, mode, block, graph):
    m, n, k, lam = 5, 4, 3, 0.01
    R, Rd, mask, Su, Si = _problem(m, n, 0.5, seed, graphs=True)
    Si = Si if graph else None
    model = homf.fit(R, k, T=T, alpha=0.3, item_graph=Si, lam=lam, n_iter=2, mode=mode,
                     seed=seed, block_size=block, g="exp")   # transition_matrix's default g
    A = homf.transition_matrix(R, item_graph=Si, alpha=0.3)
    F = nh.f_T(A.toarray(), T)
    rng = np.random.default_rng(seed)
    U0 = rng.uniform(0, 1, (m + n, k))
    V0 = rng.uniform(0, 1, (m + n, k))
    U, V, objs = nh.fit(F, U0, V0, lam, 2, dense=(mode == "dense"))
    np.testing.assert_allclose(model.extras["U"], U, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(model.extras["V"], V, rtol=1e-8, atol=1e-10)
    offset = 0.0 if mode == "exact" else 0.5 * np.sum(F * F)
    got = [x + offset for h in model.history for x in (h["objective_v"], h["objective"])]
    np.testing.assert_allclose(got, objs, rtol=1e-8, atol=1e-10)


# ----------------------------------------------------------------------------- objective (4)

@given(m=sizes, n=sizes, density=densities, seed=seeds, T=st.integers(1, 4),
       mode=st.sampled_from(["exact", "dense"]), lam=st.floats(0.0, 1.0))
def test_objective_equals_dense_reference(m, n, density, seed, T, mode, lam):
    R, *_ = _problem(m, n, density, seed)
    A = homf.transition_matrix(R)
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(m + n, 2))
    V = rng.normal(size=(m + n, 2))
    F = nh.f_T(A.toarray(), T)
    want = nh.objective(F, U, V, lam, dense=(mode == "dense"))
    assert homf.objective(A, U, V, T, lam, mode=mode, block_size=2) == pytest.approx(want, rel=1e-10)
    assert homf.objective(A, U, V, T, lam, mode=mode, m_users=m) == pytest.approx(want, rel=1e-10)


def test_a_block_wider_than_the_matrix_is_all_its_columns(monkeypatch):
    """block_size above N = m + n was checked for memory as given (a refusal for 10**9)."""
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "1G")
    R, *_ = _problem(6, 5, 0.4, 0)
    A = homf.transition_matrix(R)
    U = np.random.default_rng(0).normal(size=(11, 2))
    want = homf.objective(A, U, U, 2, 0.1, mode="exact", block_size=11)
    assert homf.objective(A, U, U, 2, 0.1, mode="exact", block_size=10 ** 9) == want
    a = homf.fit(R, 2, n_iter=2, seed=0, block_size=10 ** 9)
    b = homf.fit(R, 2, n_iter=2, seed=0, block_size=11)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)


@given(seed=seeds, T=st.integers(1, 5), mode=st.sampled_from(["exact", "dense"]),
       graphs=st.booleans())
def test_objective_never_increases(seed, T, mode, graphs):
    R, _, _, Su, Si = _problem(8, 6, 0.3, seed, graphs=graphs)
    model = homf.fit(R, 3, T=T, user_graph=Su, item_graph=Si, lam=1e-3, n_iter=6,
                     mode=mode, seed=seed)
    seq = [x for h in model.history for x in (h["objective_v"], h["objective"])]
    scale = max(1.0, max(abs(x) for x in seq))
    assert all(b <= a + 1e-12 * scale for a, b in zip(seq, seq[1:])), seq


def test_history_objective_is_objective_4_at_the_result():
    R, *_ = _problem(7, 5, 0.4, 3)
    model = homf.fit(R, 2, T=3, lam=0.05, n_iter=3, mode="exact", seed=1)
    A = model.extras["A"]
    val = homf.objective(A, model.extras["U"], model.extras["V"], 3, 0.05)
    assert model.history[-1]["objective"] == pytest.approx(val, rel=1e-10)


# ----------------------------------------------------------------------------- dense vs exact

@given(m=st.integers(1, 5), n=st.integers(1, 5), seed=seeds, T=st.integers(2, 4))
def test_dense_equals_exact_where_f_T_has_no_zeros(m, n, seed, T):
    rng = np.random.default_rng(seed)
    R = sp.csr_array(rng.integers(1, 6, (m, n)).astype(float))      # complete bipartite graph
    F = nh.f_T(homf.transition_matrix(R).toarray(), T)
    assert np.all(F != 0)
    ex = homf.fit(R, 2, T=T, lam=0.01, n_iter=3, mode="exact", seed=seed, g="exp")
    de = homf.fit(R, 2, T=T, lam=0.01, n_iter=3, mode="dense", seed=seed, g="exp")
    np.testing.assert_allclose(ex.extras["U"], de.extras["U"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ex.extras["V"], de.extras["V"], rtol=1e-8, atol=1e-10)
    half = 0.5 * np.sum(F * F)
    for a, b in zip(ex.history, de.history):
        assert a["objective"] == pytest.approx(b["objective"] + half, rel=1e-8, abs=1e-10)


# ----------------------------------------------------------------------------- the result

def test_result_factors_and_scores():
    R, *_ = _problem(6, 4, 0.5, 7)
    model = homf.fit(R, 3, T=2, n_iter=2, mode="dense")
    U, V = model.extras["U"], model.extras["V"]
    np.testing.assert_array_equal(model.user_factors, U[:6])
    np.testing.assert_array_equal(model.item_factors, V[6:])
    np.testing.assert_allclose(model.scores([1, 4]), U[[1, 4]] @ V[6:].T)
    assert model.method == "homf" and model.params["T"] == 2 and model.params["mode"] == "dense"
    assert [h["iter"] for h in model.history] == [1, 2]
    assert all({"iter", "objective", "seconds", "objective_v"} <= set(h) for h in model.history)
    items, _ = fp.recommend(model, R, n=2)
    assert items.shape == (6, 2)


@pytest.mark.parametrize("mode", ["exact", "dense"])
def test_isolated_nodes_and_empty_matrix(mode):
    R = sp.csr_array(np.array([[1.0, 0, 0], [0, 0, 0], [1.0, 1.0, 0]]))   # user 1, item 2 empty
    model = homf.fit(R, 2, T=3, n_iter=3, mode=mode)
    U, V = model.extras["U"], model.extras["V"]
    assert np.all(np.isfinite(U)) and np.all(np.isfinite(V))
    if mode == "exact":                       # an all-zero column / row of f_T(A): Ω empty
        assert np.all(V[[1, 3 + 2]] == 0) and np.all(U[[1, 3 + 2]] == 0)
    with pytest.raises(ValueError, match="Y has shape 3×2 but no positive entries"):
        homf.fit(sp.csr_array((3, 2)), 2, n_iter=2, mode=mode)     # nothing to learn from


@pytest.mark.parametrize("mode", ["exact", "dense"])
def test_deterministic_and_thread_count_independent(mode):
    R, *_ = _problem(12, 9, 0.3, 5)
    a = homf.fit(R, 3, T=3, n_iter=2, mode=mode, seed=4, n_threads=1)
    b = homf.fit(R, 3, T=3, n_iter=2, mode=mode, seed=4, n_threads=2)
    c = homf.fit(R, 3, T=3, n_iter=2, mode=mode, seed=4)
    np.testing.assert_array_equal(a.extras["U"], b.extras["U"])
    np.testing.assert_array_equal(a.extras["V"], c.extras["V"])


def test_callback_stops_and_verbose_prints(capsys):
    R, *_ = _problem(6, 5, 0.5, 2)
    seen = []
    model = homf.fit(R, 2, n_iter=5, mode="dense", callback=lambda info: seen.append(info) or True,
                     verbose=True)
    assert len(model.history) == 1 and seen[0]["iter"] == 1
    err = capsys.readouterr().err
    assert "[homf] iter   1" in err
    # dense mode leaves a constant out of its objective: the verbose output says so, once
    assert err.count("leaves out the constant ½‖f_T(A)‖²_F, so it can be negative") == 1
    homf.fit(R, 2, n_iter=1, mode="exact", verbose=True)
    assert "leaves out the constant" not in capsys.readouterr().err
    homf.fit(R, 2, n_iter=1, mode="dense")
    assert capsys.readouterr().err == ""


def test_demo_configs_run():
    R, *_ = _problem(20, 15, 0.3, 0)
    configs = homf.demo_configs()
    assert configs and all(isinstance(lbl, str) and isinstance(kw, dict) and legend
                           for lbl, kw, legend in configs)
    for _, kw, _ in configs:
        model = homf.fit(R, **{**kw, "n_iter": 1}, seed=0, verbose=False)
        assert model.user_factors.shape == (20, kw["k"])


# ----------------------------------------------------------------------------- bad input

R0 = sp.csr_array(np.array([[1.0, 0.0], [2.0, 3.0]]))
A0 = homf.transition_matrix(R0)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: homf.transition_matrix(np.ones((2, 2))), TypeError, "R must be a scipy.sparse"),
    (lambda: homf.transition_matrix(R0, g="cubic"), ValueError, "unknown g 'cubic'; expected one of"),
    (lambda: homf.transition_matrix(R0, alpha=1.5), ValueError, "alpha must be <= 1.0, got 1.5"),
    (lambda: homf.transition_matrix(R0, g_user_graph="cubic"), ValueError,
     "unknown g_user_graph 'cubic'; expected one of"),
    (lambda: homf.fit(R0, 1, g_item_graph="log"), ValueError, "unknown g_item_graph 'log'; expected one of"),
    (lambda: homf.transition_matrix(R0, alpha="a"), TypeError, "alpha must be a real number"),
    (lambda: homf.transition_matrix(sp.csr_array(np.array([[-1.0, 1.0]])), g="linear"),
     ValueError, "R has 1 negative stored values"),
    (lambda: homf.transition_matrix(sp.csr_array(np.array([[np.nan, 1.0]]))),
     ValueError, "R has 1 non-finite"),
    (lambda: homf.transition_matrix(R0, user_graph=np.eye(3)), ValueError,
     "user_graph has shape 3×3, expected a square 2×2"),
    (lambda: homf.transition_matrix(R0, item_graph=np.array([[0, 1.0], [0, 0]])), ValueError,
     "item_graph is not symmetric"),
    (lambda: homf.transition_matrix(R0, item_graph=-np.ones((2, 2))), ValueError,
     "item_graph has negative similarities"),
    (lambda: homf.walk_columns(R0[:, :1], [0], 2), ValueError, "A has shape 2×1, expected a square"),
    (lambda: homf.walk_columns(np.eye(2), [0], 2), TypeError, "A must be a scipy.sparse"),
    (lambda: homf.walk_columns(A0, [0, 4], 2), ValueError, r"cols must lie in \[0, 4\), got values in \[0, 4\]"),
    (lambda: homf.walk_columns(A0, [0.5], 2), TypeError, "cols must be integer indices, got dtype float64"),
    (lambda: homf.walk_columns(A0, [[0]], 2), ValueError, "cols must be a 1-d array"),
    (lambda: homf.walk_columns(A0, [0], 0), ValueError, "T must be >= 1, got 0"),
    (lambda: homf.walk_columns(A0, [0], 2.0), TypeError, "T must be an integer >= 1, got 2.0"),
    (lambda: homf.walk_rows(A0, [-1], 2), ValueError, r"rows must lie in \[0, 4\)"),
    (lambda: homf.objective(A0, np.zeros((3, 2)), np.zeros((4, 2)), 2, 0.1), ValueError,
     r"U has shape 3×2, expected 4×\*"),
    (lambda: homf.objective(A0, np.zeros((4, 2)), np.zeros((4, 3)), 2, 0.1), ValueError,
     "V has shape 4×3, expected 4×2"),
    (lambda: homf.objective(A0, np.zeros((4, 2)), np.zeros((4, 2)), 2, -1.0), ValueError,
     "lam must be >= 0.0, got -1"),
    (lambda: homf.objective(A0, np.zeros((4, 2)), np.zeros((4, 2)), 2, 0.1, mode="x"), ValueError,
     "unknown mode 'x'"),
    (lambda: homf.objective(A0, np.zeros((4, 2)), np.zeros((4, 2)), 2, 0.1, m_users=-1), ValueError,
     "m_users must be >= 0, got -1"),
    (lambda: homf.fit(R0, 0), ValueError, "k must be >= 1, got 0"),
    (lambda: homf.fit(R0, 2, T=0), ValueError, "T must be >= 1, got 0"),
    (lambda: homf.fit(R0, 2, lam=0.0), ValueError, "lam must be > 0.0, got 0"),
    (lambda: homf.fit(R0, 2, n_iter=0), ValueError, "n_iter must be >= 1, got 0"),
    (lambda: homf.fit(R0, 2, mode="fast"), ValueError, "unknown mode 'fast'; expected one of 'exact', 'dense'"),
    (lambda: homf.fit(R0, 2, block_size=0), ValueError, "block_size must be >= 1, got 0"),
    (lambda: homf.fit(R0, 2, callback=3), TypeError, "callback must be callable"),
    (lambda: homf.fit(R0, 2, seed=-1), TypeError, "seed must be a non-negative integer"),
    (lambda: homf.fit(R0, 2, n_threads=0), ValueError, r"n_threads must be in \[1, "),
    (lambda: homf.fit([[1.0]], 2), TypeError, "Y must be a scipy.sparse"),
])
def test_bad_input_is_rejected_with_a_clear_message(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_fit_signature_in_one_order():
    """data, model, penalty, solver, run-time (g_user_graph, g_item_graph were after verbose)."""
    assert list(inspect.signature(homf.fit).parameters) == [
        "Y", "k", "user_graph", "item_graph", "alpha", "T", "g", "g_user_graph", "g_item_graph",
        "mode", "lam", "n_iter", "block_size", "seed", "n_threads", "callback", "verbose"]


@pytest.mark.parametrize("mode", ["exact", "dense"])
def test_each_argument_is_checked_once(monkeypatch, mode):
    """Y went through check_csr three times in a fit (fit, transition_matrix, the built A)."""
    from fastpu._core import validation as V
    R, _, _, Su, _ = _problem(6, 5, 0.5, 3, graphs=True)
    calls = []
    real = V.check_csr
    monkeypatch.setattr(V, "check_csr", lambda A, **kw: calls.append(kw.get("name")) or real(A, **kw))
    model = homf.fit(R, 2, T=2, n_iter=1, mode=mode)
    assert calls == ["Y"]
    calls.clear()
    homf.fit(R, 2, T=2, n_iter=1, mode=mode, user_graph=Su, alpha=0.3)
    assert calls == ["Y", "user_graph"]
    calls.clear()
    # the public helpers keep their own checks, at their own boundary
    A = homf.transition_matrix(R, g="linear")         # fit's default g
    assert calls == ["R"]
    B = model.extras["A"]                             # the same A, built by the same code
    for part in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(A, part), getattr(B, part))
    calls.clear()
    homf.objective(model.extras["A"], model.extras["U"], model.extras["V"], 2, 0.1)
    assert calls == ["A"]


def test_the_dask_form_runs_the_same_checks():
    """fastpu.distributed's HOMF goes through homf._check (it copied fit's preamble before, and
    took no g_user_graph / g_item_graph); the checks raise before the cluster is touched."""
    from fastpu.distributed import _with_defaults     # first: it loads every Dask form
    from fastpu.homf import _dask

    def call(k=2, **given):
        _dask.fit(None, R0, [], 1, k, n_threads=1, **_with_defaults("homf", _dask, given))

    for k, given, exc, match in [
            (0, {}, ValueError, "k must be >= 1, got 0"),
            (2, dict(lam=0.0), ValueError, "lam must be > 0.0, got 0"),
            (2, dict(block_size=0), ValueError, "block_size must be >= 1, got 0"),
            (2, dict(g_user_graph="log"), ValueError, "unknown g_user_graph 'log'"),
            (2, dict(user_graph=np.eye(3)), ValueError, "user_graph has shape 3×3"),
            (2, dict(alpha=1.5), ValueError, "alpha must be <= 1.0, got 1.5")]:
        with pytest.raises(exc, match=match):
            call(k, **given)


def test_the_dask_form_takes_the_side_graphs_functions():
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client, LocalCluster

    R, _, _, Su, _ = _problem(8, 6, 0.5, 4, graphs=True)
    kw = dict(T=2, n_iter=2, seed=3, user_graph=Su, alpha=0.4, g="exp", g_user_graph="linear")
    ref = homf.fit(R, 2, mode="dense", **kw)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        mod = fp.distributed.fit(R, 2, method="homf", client=client, n_threads=1, mode="dense",
                                 **kw)
    np.testing.assert_allclose(mod.extras["A"].toarray(), ref.extras["A"].toarray(), rtol=1e-15)
    np.testing.assert_allclose(mod.scores(), ref.scores(), rtol=1e-8, atol=1e-12)
    assert (mod.params["g_user_graph"], mod.params["g_item_graph"]) == ("linear", "exp")


def test_subnormal_alpha_is_refused():
    """α·g(S) with a subnormal α keeps a few bits only: refused, naming the remedy."""
    R = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    S = sp.csr_array(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match=r"alpha=4\.94066e-324 is below the smallest normal.*alpha=0"):
        homf.transition_matrix(R, user_graph=S, alpha=5e-324)
    A = homf.transition_matrix(R, user_graph=S, alpha=np.finfo(np.float64).tiny)
    assert np.isfinite(A.data).all()
