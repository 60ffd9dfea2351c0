"""ocmf on a 2-D grid of cells (``distributed.fit(..., grid=(p, q))``): the same model as one
machine's fit, on real Dask clusters; the rounds' arithmetic against the row kernel."""

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

import fastpu as fp
from fastpu import distributed
from fastpu._kernels.losses import LOSS_CODES
from fastpu._kernels.ocmf import RowOptions, row_newton
from fastpu.distributed import blocks as _blocks
from fastpu.ocmf import _grid

from test_distributed import OCMF_VARIANTS, _matrix, _pairs, assert_same

dfit = functools.partial(distributed.fit, n_threads=1)


class _InProcess:
    """Runs each task at once, in this process (``submit`` returns the result): the grid's
    rounds without a cluster, for the property test below; the tests after it run the same
    rounds on real workers."""

    def submit(self, fn, *args, **placement):
        return fn(*args)

    def gather(self, results):
        return list(results)


class _Cells:
    """The cells of one side, as :class:`fastpu.ocmf._grid.Grid` holds them (in-process)."""

    def __init__(self, Y, own_w, other_w, own_cuts, other_cuts):
        self.cells = {"user": [[_grid.make_cell(*_blocks.slice_csr(
            Y[:, int(other_cuts[j]):int(other_cuts[j + 1])].tocsr(), int(own_cuts[i]),
            int(own_cuts[i + 1])), own_w[int(own_cuts[i]):int(own_cuts[i + 1])],
            other_w[int(other_cuts[j]):int(other_cuts[j + 1])])
            for j in range(other_cuts.size - 1)] for i in range(own_cuts.size - 1)]}

    def cell_on(self, side, i, j):
        return {}

    def reducer_on(self, side, i):
        return {}


@given(m=st.integers(1, 9), n=st.integers(1, 8), k=st.integers(1, 4),
       loss=st.sampled_from(sorted(LOSS_CODES)), nsteps=st.integers(1, 3),
       csteps=st.integers(1, 5), seed=st.integers(0, 2**31 - 1),
       p=st.integers(1, 3), q=st.integers(1, 3), density=st.sampled_from([0.0, 0.3, 0.8]),
       scale=st.sampled_from([1.0, 6.0]))
def test_the_rounds_of_a_half_step_equal_the_row_kernel(m, n, k, loss, nsteps, csteps, seed, p, q,
                                                        density, scale):
    """One half-step over p × q cells (rows with no entries, cells with none, more ranges than
    the rows allow) against ``row_newton`` on the whole matrix, in float64; large factors
    (``scale``) make the line search backtrack far down its ladder."""
    _check_half_step(m, n, k, LOSS_CODES[loss], nsteps, csteps, np.random.default_rng(seed), p, q,
                     density, scale, 10 ** np.random.default_rng(seed + 1).uniform(-2, 0),
                     decisions=nsteps == 1)


def _check_half_step(m, n, k, kind, nsteps, csteps, rng, p, q, density, scale, lam, tol=1e-9,
                     per_row=False, cg_tol=1e-3, decisions=True, precondition=False):
    """``per_row``: each row its own λ_i (frequency-scaled regularisation). ``decisions``:
    each row's Newton steps, CG steps and backtracks are the kernel's, count for count.
    ``precondition``: both run the Jacobi-preconditioned CG."""
    A = (rng.random((m, n)) < density) * rng.uniform(0.5, 2.0, (m, n))
    Y = sp.csr_array(A)
    Y.sort_indices()
    pw, qw = rng.uniform(0.0, 1.0, m), rng.uniform(0.2, 1.5, n)
    W, E = rng.normal(scale=scale, size=(m, k)), rng.normal(scale=scale, size=(n, k))
    abar = float(rng.choice([0.0, 0.3]))
    M, kappa = E.T @ (qw[:, None] * E), E.T @ qw
    lams = lam * rng.uniform(0.5, 4.0, m) if per_row else np.array([lam])
    opts_rows = RowOptions(newton_steps=nsteps, cg_steps=csteps, cg_tol=cg_tol,
                           precondition=precondition)
    # the kernel, on the whole rows
    Wk = W.copy()
    f_rows = np.empty(m)
    counts = np.zeros((m, 3), dtype=np.int32)
    rows = np.repeat(np.arange(m), np.diff(Y.indptr))
    row_newton(kind, Y.indptr.astype(np.int64), Y.indices.astype(np.int64), np.ones(1),
               Y.data.astype(np.float64), pw[rows] * qw[Y.indices], np.empty(0), abar, E, M,
               kappa, pw, lams, Wk, opts_rows, 100, f_rows, np.empty(0), counts_out=counts)
    # the grid's rounds, p ranges of rows × q ranges of columns
    own_cuts, other_cuts = _blocks.bounds(m, min(p, m)), _blocks.bounds(n, min(q, n))
    cells = _Cells(Y, pw, qw, own_cuts, other_cuts)

    def cut(A, c, i):
        return A[int(c[i]):int(c[i + 1])]

    own = [cut(W, own_cuts, i) for i in range(own_cuts.size - 1)]
    other = [cut(E, other_cuts, j) for j in range(other_cuts.size - 1)]
    weights = [cut(pw, own_cuts, i) for i in range(own_cuts.size - 1)]
    lam_ranges = [cut(lams, own_cuts, i) if per_row else lams for i in range(own_cuts.size - 1)]
    opts = dict(kind=kind, abar=abar, rows=opts_rows, k=k, n_threads=1, dtype="float64")
    out = _grid.half_step(_InProcess(), cells, "user", own, other, weights, lam_ranges, M, kappa,
                          opts)
    Wg = np.concatenate([o[0] for o in out])
    scale = max(1.0, np.abs(Wk).max())
    np.testing.assert_allclose(Wg, Wk, rtol=0, atol=tol * scale)
    f_scale = max(1.0, np.abs(f_rows).sum())
    assert abs(sum(o[1] for o in out) - f_rows.sum()) <= tol * f_scale
    if decisions:
        np.testing.assert_array_equal(np.concatenate([o[4] for o in out]), counts)
    # the reducers' partial Grams and penalty are those of the new rows
    G = sum(o[2][0] for o in out)
    np.testing.assert_allclose(G, Wg.T @ (pw[:, None] * Wg), rtol=1e-10, atol=1e-10)
    penalty = (lams if per_row else lams[0]) * np.sum(Wg ** 2, axis=1)
    assert sum(o[3] for o in out) == pytest.approx(penalty.sum(), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("loss", sorted(LOSS_CODES))
@pytest.mark.parametrize("seed", range(4))
def test_the_grid_and_the_kernel_make_the_same_decisions_with_per_row_penalties(loss, seed):
    """Frequency-scaled λ_i, a loose and a tight CG tolerance, rows far from their minimum
    (factors of scale 2): the reducers take the kernel's Newton steps, CG steps and backtracks
    row by row (``counts_out``). One Newton step: a second one starts near the row's minimum,
    where the Armijo test compares values equal to rounding, and the two orders of summation
    may then take different (equally good) step lengths."""
    for cg_tol in (0.3, 1e-2, 1e-6):
        _check_half_step(9, 7, 3, LOSS_CODES[loss], 1, 4, np.random.default_rng(seed), 2, 3,
                         0.5, 2.0, 0.05, per_row=True, cg_tol=cg_tol)


@given(m=st.integers(1, 9), n=st.integers(1, 8), k=st.integers(1, 4),
       loss=st.sampled_from(sorted(LOSS_CODES)), nsteps=st.integers(1, 3),
       csteps=st.integers(1, 5), seed=st.integers(0, 2**31 - 1),
       p=st.integers(1, 3), q=st.integers(1, 3), density=st.sampled_from([0.0, 0.3, 0.8]),
       per_row=st.booleans())
def test_the_preconditioned_rounds_equal_the_row_kernel(m, n, k, loss, nsteps, csteps, seed, p, q,
                                                        density, per_row):
    """The Jacobi-preconditioned CG: the cells send the entries' part of each row's Hessian
    diagonal with its gradient, and the reducers precondition as the kernel does (one Newton
    step: the same CG steps and backtracks, row by row)."""
    _check_half_step(m, n, k, LOSS_CODES[loss], nsteps, csteps, np.random.default_rng(seed), p, q,
                     density, 1.0, 10 ** np.random.default_rng(seed + 1).uniform(-2, 0),
                     per_row=per_row, decisions=nsteps == 1, precondition=True)


@pytest.mark.parametrize("seed", range(10))
def test_the_line_search_backtracks_as_the_kernel_does(seed):
    """Large factors and a small penalty: the logistic Newton steps overshoot and rows backtrack
    past the ladder's first round (α < 1/8); measured: a ladder cut at α = ½ (or at 2⁻⁷)
    leaves rows orders of magnitude away from the kernel's in these problems. They are
    ill-conditioned (λ = 1e-4 against entries' curvature up to ~10²), so the two orders of
    summation agree to ~1e-7 relative, not 1e-9."""
    _check_half_step(8, 7, 3, LOSS_CODES["logistic"], 2, 4, np.random.default_rng(seed), 2, 2,
                     0.6, 6.0, 1e-4, tol=1e-6, decisions=False)
    _check_half_step(8, 7, 3, LOSS_CODES["logistic"], 1, 4, np.random.default_rng(seed), 2, 2,
                     0.6, 6.0, 1e-4, tol=1e-6)


GRIDS = [(1, 1), (2, 3), (3, 2)]


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("variant", list(OCMF_VARIANTS))
def test_ocmf_on_a_grid_equals_single_machine(dask_client, variant, grid):
    """Every ocmf variant with a distributed row path, on grids with empty cells (the first
    users and the last items have no positives), in float64: the single-machine model to 1e-8."""
    Y = _matrix(1)
    kw = dict(OCMF_VARIANTS[variant], dtype="float64")
    if kw.get("p") == "p":
        rng = np.random.default_rng(3)
        kw["p"], kw["q"] = rng.uniform(0.5, 2, Y.shape[0]), rng.uniform(0.5, 2, Y.shape[1])
    ref = fp.ocmf.fit(Y, 3, n_iter=3, seed=7, n_threads=1, **kw)
    mod = dfit(Y, 3, method="ocmf", client=dask_client, grid=grid, n_iter=3, seed=7, **kw)
    assert_same(ref, mod)
    assert mod.params["distributed"]["grid"] == grid
    assert mod.user_factors.dtype == np.float64


def test_ocmf_on_a_grid_in_float32_is_the_float32_model_to_its_rounding(dask_client):
    """The defaults (float32; k = 64 works in the eigenbasis on one machine, not on the grid):
    the grid's factors are float32 and its scores agree to float32 rounding."""
    Y = _matrix(5, m=120, n=90, empty_rows=10, empty_cols=5, density=0.08)
    for k in (3, 64):
        ref = fp.ocmf.fit(Y, k, n_iter=3, seed=1)
        mod = dfit(Y, k, client=dask_client, grid=(2, 2), n_iter=3, seed=1)
        assert mod.user_factors.dtype == mod.item_factors.dtype == np.float32
        s_ref, s_mod = ref.scores(), mod.scores()
        np.testing.assert_allclose(s_mod, s_ref, rtol=0, atol=1e-4 * np.abs(s_ref).max())
        h_ref = [h["objective"] for h in ref.history]
        np.testing.assert_allclose([h["objective"] for h in mod.history], h_ref, rtol=1e-5)


def test_grid_with_init_and_progress(dask_client, capsys):
    Y = _matrix(9)
    rng = np.random.default_rng(0)
    init = (rng.normal(size=(13, 2)), rng.normal(size=(9, 2)))
    kw = dict(loss="square", dtype="float64", init=init, n_iter=2)
    ref = fp.ocmf.fit(Y, 2, **kw)
    mod = dfit(Y, 2, client=dask_client, grid=np.array([2, 2]), verbose=True, **kw)
    assert_same(ref, mod)
    assert "ocmf" in capsys.readouterr().err


def test_bad_grids_are_refused_in_a_sentence(dask_client):
    Y = _matrix(12)
    with pytest.raises(ValueError, match="grid= runs method='ocmf'.*method='fbgd' runs on row "
                                         "blocks: drop grid="):
        dfit(Y, 2, method="fbgd", grid=(2, 2), client=dask_client)
    with pytest.raises(TypeError, match="grid= needs Y as a scipy.sparse matrix"):
        dfit(_pairs(Y), 2, grid=(2, 2), client=dask_client)
    with pytest.raises(ValueError, match="grid= and n_blocks=3 both set the layout"):
        dfit(Y, 2, grid=(2, 2), n_blocks=3, client=dask_client)
    with pytest.raises(ValueError, match="grid= runs ocmf's row-separable fast path.*features"):
        dfit(Y, 2, grid=(2, 2), item_features=np.ones((9, 2)), client=dask_client)
    with pytest.raises(TypeError, match=r"grid must be a pair \(p, q\) of ints.*got 4"):
        dfit(Y, 2, grid=4, client=dask_client)
    with pytest.raises(TypeError, match=r"grid must be a pair.*got \(2, 2.0\)"):
        dfit(Y, 2, grid=(2, 2.0), client=dask_client)
    with pytest.raises(TypeError, match=r"grid must be a pair.*got array\(\[2., 2.\]\)"):
        dfit(Y, 2, grid=np.array([2.0, 2.0]), client=dask_client)
    with pytest.raises(ValueError, match="fast_path=False. Use fastpu.ocmf.fit on one machine "
                                         "for fast_path=False"):
        dfit(Y, 2, grid=(2, 2), fast_path=False, client=dask_client)
    with pytest.raises(ValueError, match=r"1 <= p <= 13 \(rows of Y\).*got \(14, 1\)"):
        dfit(Y, 2, grid=(14, 1), client=dask_client)
    with pytest.raises(ValueError, match=r"1 <= q <= 9 \(columns of Y\).*got \(1, 0\)"):
        dfit(Y, 2, grid=(1, 0), client=dask_client)
    with pytest.raises(ValueError, match="negatives='sampled' has no distributed form"):
        dfit(Y, 2, grid=(2, 2), negatives="sampled", client=dask_client)
    with pytest.raises(ValueError, match="k must be >= 1"):
        dfit(Y, 0, grid=(2, 2), client=dask_client)
