"""The row-separable Newton–CG kernel (ocmf's fast path) against dense per-row references.

Each row i of the fast path minimises its own k-dimensional function

    f_i(w) = Σ_e [c_e l(y_e, w·h_j) - r_e (ā - w·h_j)²] + p_i (wᵀMw - 2ā wᵀκ) + λ‖w‖²,

M = Σ_j q_j h_j h_jᵀ, κ = Σ_j q_j h_j. The references below evaluate f_i from that
definition with numpy and minimise it with a dense solve or scipy.
"""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu._core import validation as V
from fastpu._kernels.losses import LOSS_CODES
from fastpu._kernels.ocmf import RowOptions, row_newton
from fastpu._core.threads import limit_threads

from naive import loss as naive_loss
from strategies import csr_matrices, seeds, LOSS_NAMES, LINE_SEARCH_LOSSES


def make_problem(Y, k, loss, seed, abar=-0.5):
    Y = V.check_csr(Y)
    m, n = Y.shape
    rng = np.random.default_rng(seed)
    labels = np.ones(Y.nnz) if loss == "square" else rng.choice([-1.0, 1.0], size=Y.nnz)
    weights = rng.uniform(0.5, 2.0, size=Y.nnz)
    E = rng.normal(size=(n, k))
    q = rng.uniform(0.0, 1.0, size=n)
    p = rng.uniform(0.0, 1.0, size=m)
    # r_e ≤ p_i q_j, as in ocmf (r_e = p_i q_j there): p_i wᵀMw - Σ_e r_e s_e² ≥ 0, so every
    # f_i is strictly convex (λ > 0) and bounded below
    rows = np.repeat(np.arange(m), np.diff(Y.indptr))
    corr = p[rows] * q[Y.indices] * rng.uniform(0.0, 1.0, size=Y.nnz)
    M = (E.T * q) @ E
    kappa = E.T @ q
    W0 = rng.normal(scale=0.3, size=(m, k))
    return dict(Y=Y, labels=labels, weights=weights, corr=corr, abar=abar, E=E, M=M, kappa=kappa,
                p=p, lam=0.3, W0=W0, loss=loss)


def run(P, n_newton, n_cg, local_max=1000, dtype=np.float64, cg_tol=1e-12, precondition=False):
    Y = P["Y"]
    W = P["W0"].astype(dtype)
    f = np.empty(Y.shape[0])
    # per-entry labels, weights, corrections (the general form; q is then not read)
    row_newton(LOSS_CODES[P["loss"]], Y.indptr, Y.indices, P["labels"], P["weights"], P["corr"],
               np.empty(0), P["abar"], P["E"].astype(dtype), P["M"], P["kappa"], P["p"], P["lam"], W,
               RowOptions(newton_steps=n_newton, cg_steps=n_cg, cg_tol=cg_tol,
                          precondition=precondition), local_max, f, np.empty(0))
    return W, f


def f_row(P, i, w):
    Y = P["Y"]
    lo, hi = Y.indptr[i], Y.indptr[i + 1]
    s = P["E"][Y.indices[lo:hi]] @ w
    val = np.sum(P["weights"][lo:hi] * naive_loss(P["loss"], P["labels"][lo:hi], s)
                 - P["corr"][lo:hi] * (P["abar"] - s) ** 2)
    return (val + P["p"][i] * (w @ P["M"] @ w - 2 * P["abar"] * w @ P["kappa"])
            + P["lam"] * w @ w)


@pytest.mark.parametrize("precondition", [False, True])
@given(Y=csr_matrices(max_rows=6, max_cols=7), k=st.integers(1, 5), seed=seeds)
def test_square_loss_with_k_cg_steps_is_the_exact_row_minimiser(precondition, Y, k, seed):
    """k CG steps solve a k-dimensional quadratic, preconditioned or not."""
    P = make_problem(Y, k, "square", seed)
    W, f = run(P, 1, k, precondition=precondition)
    Yc = P["Y"]
    for i in range(Yc.shape[0]):
        lo, hi = Yc.indptr[i], Yc.indptr[i + 1]
        Hj = P["E"][Yc.indices[lo:hi]]
        c, r = P["weights"][lo:hi], P["corr"][lo:hi]
        A = (2 * (Hj.T * (c - r)) @ Hj + 2 * P["p"][i] * P["M"] + 2 * P["lam"] * np.eye(k))
        b = 2 * Hj.T @ (c * P["labels"][lo:hi] - r * P["abar"]) + 2 * P["p"][i] * P["abar"] * P["kappa"]
        w_star = np.linalg.solve(A, b)
        np.testing.assert_allclose(W[i], w_star, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(f[i], f_row(P, i, W[i]), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("precondition", [False, True])
@pytest.mark.parametrize("loss", LINE_SEARCH_LOSSES)
@given(Y=csr_matrices(max_rows=5, max_cols=7), k=st.integers(1, 4), seed=seeds)
def test_many_newton_steps_reach_the_row_minimiser(loss, precondition, Y, k, seed):
    P = make_problem(Y, k, loss, seed)
    W, f = run(P, 40, k, precondition=precondition)
    for i in range(P["Y"].shape[0]):
        res = scipy.optimize.minimize(lambda w: f_row(P, i, w), P["W0"][i], method="BFGS",
                                      options=dict(gtol=1e-10))
        assert f[i] <= res.fun + 1e-8 * max(1.0, abs(res.fun))
        np.testing.assert_allclose(f[i], f_row(P, i, W[i]), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("precondition", [False, True])
@pytest.mark.parametrize("loss", LOSS_NAMES)
@given(Y=csr_matrices(max_rows=8, max_cols=8), k=st.integers(1, 6), seed=seeds)
def test_one_step_never_increases_a_row_and_reports_its_value(loss, precondition, Y, k, seed):
    P = make_problem(Y, k, loss, seed)
    W, f = run(P, 1, 2, precondition=precondition)
    for i in range(P["Y"].shape[0]):
        f0 = f_row(P, i, P["W0"][i])
        assert f[i] <= f0 + 1e-10 * max(1.0, abs(f0))
        np.testing.assert_allclose(f[i], f_row(P, i, W[i]), rtol=1e-9, atol=1e-9)


@given(k=st.integers(1, 6), seed=seeds)
def test_one_preconditioned_step_solves_a_row_with_a_diagonal_hessian(k, seed):
    """Rows without positives and a diagonal M: each row's Hessian 2 p_i M + 2λI is diagonal,
    the Jacobi preconditioner is its inverse, and one preconditioned CG step lands on the
    row's minimiser w_a = p_i ā κ_a / (p_i M_aa + λ); one plain CG step does not (M's
    diagonal is spread over two orders of magnitude)."""
    rng = np.random.default_rng(seed)
    m, n = 4, 5
    Y = sp.csr_array((m, n))
    P = make_problem(Y, k, "square", seed)
    P["M"] = np.diag(rng.uniform(0.1, 10.0, size=k))
    P["kappa"] = rng.normal(size=k)
    P["p"] = rng.uniform(0.5, 1.0, size=m)
    W, f = run(P, 1, 1, precondition=True)
    A = 2 * P["p"][:, None] * np.diag(P["M"])[None, :] + 2 * P["lam"]
    w_star = 2 * P["p"][:, None] * P["abar"] * P["kappa"][None, :] / A
    np.testing.assert_allclose(W, w_star, rtol=1e-12, atol=1e-14)
    if k > 1 and np.ptp(np.diag(P["M"])) > 1.0 and np.abs(w_star).max() > 1e-3:
        W_plain, _ = run(P, 1, 1)
        assert np.abs(W_plain - w_star).max() > 1e-6 * max(1.0, np.abs(w_star).max())


@pytest.mark.parametrize("loss", LOSS_NAMES)
@given(Y=csr_matrices(max_rows=8, max_cols=8, values="ones"), k=st.integers(1, 6), seed=seeds)
def test_cached_and_direct_reads_of_the_item_vectors_agree(loss, Y, k, seed):
    # local_max = 0: every row reads E directly; large: every row copies its block first
    P = make_problem(Y, k, loss, seed)
    Wa, fa = run(P, 2, 3, local_max=0)
    Wb, fb = run(P, 2, 3, local_max=10**6)
    Wc, fc = run(P, 2, 3, local_max=3)              # a mix of both
    for Wx, fx in ((Wb, fb), (Wc, fc)):
        np.testing.assert_allclose(Wx, Wa, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(fx, fa, rtol=1e-11, atol=1e-12)


def test_rows_of_every_length_and_thread_counts_give_identical_results():
    rng = np.random.default_rng(3)
    m, n, k = 300, 500, 9
    lengths = rng.integers(0, 120, size=m)
    lengths[:5] = [0, 1, 3, 4, 400]                 # empty, short, unroll remainder, long
    import scipy.sparse as sp
    rows = np.repeat(np.arange(m), lengths)
    cols = np.concatenate([rng.choice(n, size=l, replace=False) for l in lengths])
    Y = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(m, n))
    P = make_problem(Y, k, "logistic", 4)
    with limit_threads(1):
        W1, f1 = run(P, 2, 4, local_max=64)
    with limit_threads(2):
        W2, f2 = run(P, 2, 4, local_max=64)
    np.testing.assert_array_equal(W1, W2)
    np.testing.assert_array_equal(f1, f2)
    for i in (0, 1, 2, 3, 4, 150):
        np.testing.assert_allclose(f1[i], f_row(P, i, W1[i]), rtol=1e-9)


@pytest.mark.parametrize("loss", LOSS_NAMES)
@given(Y=csr_matrices(max_rows=8, max_cols=8), k=st.integers(1, 6), seed=seeds)
def test_float32_factors_give_the_float64_update_to_float32_precision(loss, Y, k, seed):
    P = make_problem(Y, k, loss, seed)
    P["W0"] = P["W0"].astype(np.float32).astype(np.float64)     # same start for both
    P["E"] = P["E"].astype(np.float32).astype(np.float64)
    W64, f64 = run(P, 1, 3)
    W32, f32 = run(P, 1, 3, dtype=np.float32, local_max=2)
    assert W32.dtype == np.float32
    # float32 factors: the length-k products are float32 (the sums over entries float64), and
    # the stored result is rounded
    np.testing.assert_allclose(f32, f64, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(W32, W64, rtol=1e-5, atol=1e-6)
