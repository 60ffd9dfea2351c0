"""ocmf's compact entry storage: int32 indices, no per-positive arrays for binary data, the linear
transpose, the uncopied input, and the kernel's compact forms against per-entry arrays."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu.ocmf import _problem as P
from fastpu._core import validation as V
from fastpu import ocmf
from fastpu.ocmf import _check as C
from fastpu._kernels.losses import LOSS_CODES
from fastpu._kernels.ocmf import RowOptions, row_newton

from strategies import csr_matrices, seeds, LOSS_NAMES


def _prepare(Y, *, X, Z, seed, **model):
    """ocmf's boundary and problem: the canonical Y, its checked model, the built setup."""
    Y = C.check_y(Y, fit=False)
    m = C.check_model(Y.shape, user_features=X, item_features=Z, lam_w=model.pop("lam_w", None),
                      lam_h=model.pop("lam_h", None), dense_limit=None, **model)
    return P.build(Y, m, V.check_seed(seed)), Y


def _prep(Y, **kw):
    args = dict(loss="logistic", rho=0.3, p=None, q=None, a_bar=None, X=None, Z=None,
                user_graph=None, item_graph=None, lam=0.5, lam_graph=0.0, negatives="full",
                neg_ratio=1.0, seed=0)
    args.update(kw)
    return _prepare(Y, **args)


def _dense_values(ent, a):
    """The dense matrix holding per-entry array ``a`` (broadcast when compact) at the entries."""
    m, n = ent.shape
    full = a if a.shape[0] == ent.nnz else np.full(ent.nnz, a[0])
    return sp.csr_array((full, ent.indices, ent.indptr), shape=(m, n)).toarray()


@given(csr_matrices(max_rows=9, max_cols=9), seeds,
       st.sampled_from(["full", "sampled", "full_logistic"]))
def test_transpose_matches_scipy_and_carries_the_per_entry_values(Y, seed, negatives):
    setup, _ = _prep(Y, negatives=negatives, seed=np.random.default_rng(seed))
    ent, ent_t = setup.entries, setup.entries_t
    T = sp.csr_array(sp.csr_array((np.ones(ent.nnz), ent.indices, ent.indptr),
                                  shape=ent.shape).T)
    T.sort_indices()
    np.testing.assert_array_equal(ent_t.indptr, T.indptr)
    np.testing.assert_array_equal(ent_t.indices, T.indices)
    assert ent_t.shape == ent.shape[::-1]
    assert ent_t.indptr.dtype == ent_t.indices.dtype == ent.indices.dtype == np.int32
    for name in ("labels", "weights"):
        np.testing.assert_array_equal(_dense_values(ent_t, getattr(ent_t, name)),
                                      _dense_values(ent, getattr(ent, name)).T)
    assert ent.corr.size == 0 and ent_t.corr.size == 0


@given(csr_matrices(max_rows=8, max_cols=8, values="ones"))
def test_binary_data_stores_no_per_positive_float_array(Y):
    setup, _ = _prep(Y)
    for ent in (setup.entries, setup.entries_t):
        assert ent.labels.shape == (1,) and ent.weights.shape == (1,) and ent.corr.shape == (0,)
        assert ent.labels[0] == 1.0 and ent.weights[0] == 1.0


def test_weighted_data_keeps_its_weights_in_both_orientations():
    Y = sp.csr_array(np.array([[0.0, 2.0, 0.5], [3.0, 0.0, 1.0]]))
    setup, _ = _prep(Y)
    np.testing.assert_array_equal(setup.entries.weights, [2.0, 0.5, 3.0, 1.0])
    np.testing.assert_array_equal(setup.entries_t.weights, [3.0, 2.0, 0.5, 1.0])
    assert setup.entries.labels.shape == (1,)


@given(csr_matrices(max_rows=8, max_cols=8), seeds, st.sampled_from(["full", "sampled"]))
def test_expanded_entries_are_the_old_per_entry_arrays(Y, seed, negatives):
    """labels, weights and r_e = p_i q_j per entry, exactly as before the compact storage."""
    rng = np.random.default_rng(seed)
    m, n = Y.shape
    p, q = rng.uniform(0.1, 1.0, m), rng.uniform(0.1, 1.0, n)
    setup, Yc = _prep(Y, p=p, q=q, negatives=negatives, seed=np.random.default_rng(seed))
    for ent, pr, qc in ((setup.entries, setup.p_quad, setup.q_quad),
                        (setup.entries_t, setup.q_quad, setup.p_quad)):
        full = ent.expanded(pr, qc)
        assert full.indices.dtype == np.int64 and full.indptr.dtype == np.int64
        assert full.labels.size == full.weights.size == full.corr.size == ent.nnz
        rows = np.repeat(np.arange(ent.shape[0]), np.diff(ent.indptr))
        np.testing.assert_array_equal(full.corr, pr[rows] * qc[ent.indices])
        assert ent.expanded(pr, qc) is full                 # built once
    if negatives == "full":
        full = setup.entries.expanded(setup.p_quad, setup.q_quad)
        Yd = V.check_csr(Y)
        np.testing.assert_array_equal(full.weights, Yd.data)
        np.testing.assert_array_equal(full.labels, np.ones(Yd.nnz))
        rows = np.repeat(np.arange(m), np.diff(Yd.indptr))
        np.testing.assert_array_equal(full.corr, (0.3 * p)[rows] * q[Yd.indices])


def test_canonical_input_is_read_without_copying_its_data():
    rng = np.random.default_rng(0)
    Y = sp.random(30, 20, density=0.2, format="csr", random_state=1, dtype=np.float64)
    Y.data[:] = rng.uniform(0.5, 2.0, Y.nnz)
    Yc = C.check_y(Y, fit=False)
    assert np.shares_memory(Yc.data, Y.data)
    assert Yc.indices.dtype == np.int32 and Yc.indptr.dtype == np.int32
    Y32 = sp.csr_matrix((Y.data.astype(np.float32), Y.indices.astype(np.int32),
                         Y.indptr.astype(np.int32)), shape=Y.shape)
    Yc32 = C.check_y(Y32, fit=False)
    assert np.shares_memory(Yc32.indices, Y32.indices) and np.shares_memory(Yc32.data, Y32.data)


def test_non_canonical_input_goes_through_check_csr():
    # unsorted indices with a duplicate: summed and sorted as check_csr does
    Y = sp.csr_array((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3, 3])),
                     shape=(2, 3))
    Yc = C.check_y(Y, fit=False)
    ref = V.check_csr(Y)
    np.testing.assert_array_equal(Yc.indices, ref.indices)
    np.testing.assert_array_equal(Yc.data, ref.data)
    np.testing.assert_array_equal(Yc.indptr, ref.indptr)
    assert Yc.indices.dtype == np.int32


@pytest.mark.parametrize("bad, match", [(-1.0, "negative stored values"),
                                        (np.nan, "non-finite"), (np.inf, "non-finite")])
def test_canonical_input_with_bad_values_raises_check_csrs_error(bad, match):
    Y = sp.csr_array(np.array([[1.0, 0.0], [0.0, 1.0]]))
    Y.data[1] = bad
    with pytest.raises(ValueError, match=match):
        ocmf.fit(Y, 2, n_iter=1)


def test_malformed_canonical_looking_input_is_refused():
    Y = sp.csr_array(np.eye(3))
    Y.indices[1] = 7                        # out of range for 3 columns
    with pytest.raises(ValueError, match="out of range"):
        ocmf.fit(Y, 2, n_iter=1)


def test_index_type_falls_back_to_int64_only_when_needed():
    assert P.index_dtype(10, 20, 30) is np.int32
    assert P.index_dtype(2**31 - 1) is np.int32
    assert P.index_dtype(5, 2**31) is np.int64


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_int32_and_int64_indices_give_identical_fits(monkeypatch, loss, dtype):
    Y = sp.random(40, 30, density=0.15, format="csr", random_state=3)
    Y.data[:] = 1.0
    Y.data[::3] = 2.5                       # weighted: per-entry weights in both orientations
    a = ocmf.fit(Y, 4, loss=loss, rho=0.05, n_iter=3, dtype=dtype, seed=1)
    monkeypatch.setattr(C, "_INT32_MAX", 0)            # force the int64 fallback
    setup, _ = _prep(Y)
    assert setup.entries.indices.dtype == np.int64 and setup.entries_t.indptr.dtype == np.int64
    b = ocmf.fit(Y, 4, loss=loss, rho=0.05, n_iter=3, dtype=dtype, seed=1)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert [h["objective"] for h in a.history] == [h["objective"] for h in b.history]


def test_float32_ones_and_float64_ones_give_identical_fits():
    Y = sp.random(40, 30, density=0.15, format="csr", random_state=4)
    Y.data[:] = 1.0
    Y32 = sp.csr_matrix((Y.data.astype(np.float32), Y.indices.astype(np.int32),
                         Y.indptr.astype(np.int32)), shape=Y.shape)
    a = ocmf.fit(Y, 3, n_iter=2)
    b = ocmf.fit(Y32, 3, n_iter=2)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)


def _kernel_run(ent, labels, weights, corr, q, p, E, W0, kind, abar, n_newton, q_gram):
    M = (E.T * q_gram) @ E
    kappa = E.T @ q_gram
    W = W0.copy()
    f = np.empty(W.shape[0])
    row_newton(kind, ent.indptr, ent.indices, labels, weights, corr, q, abar, E, M, kappa, p,
               0.4, W, RowOptions(newton_steps=n_newton, cg_steps=3), 4, f, np.empty(0))
    return W, f


@pytest.mark.parametrize("loss", LOSS_NAMES)
@given(Y=csr_matrices(max_rows=8, max_cols=8), k=st.integers(1, 5), seed=seeds,
       n_newton=st.integers(0, 2))
def test_compact_forms_give_the_per_entry_kernel_result(loss, Y, k, seed, n_newton):
    """labels/weights of length 1 and r_e = p_i q_j from p, q: the same numbers as arrays."""
    rng = np.random.default_rng(seed)
    m, n = Y.shape
    pw, q = 0.2 * rng.uniform(0.0, 1.0, m), rng.uniform(0.0, 1.0, n)
    setup, _ = _prep(Y, loss=loss, rho=0.2, p=pw / 0.2, q=q)
    kind = LOSS_CODES[loss]
    for ent, p_row, q_col, rows, cols in ((setup.entries, setup.p_quad, setup.q_quad, m, n),
                                          (setup.entries_t, setup.q_quad, setup.p_quad, n, m)):
        E = rng.normal(size=(cols, k))
        W0 = rng.normal(scale=0.3, size=(rows, k))
        full = ent.expanded(p_row, q_col)
        Wa, fa = _kernel_run(ent, ent.labels, ent.weights, ent.corr, q_col, p_row, E, W0, kind,
                             setup.abar, n_newton, q_col)
        Wb, fb = _kernel_run(ent, full.labels, full.weights, full.corr, np.empty(0), p_row, E,
                             W0, kind, setup.abar, n_newton, q_col)
        np.testing.assert_array_equal(Wa, Wb)
        np.testing.assert_array_equal(fa, fb)
        if n_newton == 0:
            np.testing.assert_array_equal(Wa, W0)           # evaluation only


@given(csr_matrices(min_rows=1, max_rows=7, min_cols=1, max_cols=7), seeds,
       st.sampled_from(ocmf.LOSSES), st.sampled_from(["float64", "float32"]))
def test_row_kernel_objective_equals_the_subproblem_objective(Y, seed, loss, dtype):
    """f(W, H) from the rows' kernel (fit's starting objective) vs SubProblem.fun."""
    rng = np.random.default_rng(seed)
    m, n = Y.shape
    setup, _ = _prep(Y, loss=loss, rho=0.4)
    W = rng.normal(size=(m, 3)).astype(dtype)
    H = rng.normal(size=(n, 3)).astype(dtype)
    got = P._full_objective(setup, W, H)
    W64, H64 = W.astype(np.float64), H.astype(np.float64)
    prob = ocmf.SubProblem(setup, setup.entries, setup.user, H64, setup.p_quad, setup.q_quad)
    ref = prob.fun(W64.ravel()) + setup.item.lam * float(np.sum(H64 * H64))
    # float32 factors: the kernel's length-k products are float32 (sums over entries float64)
    tol = 1e-11 if dtype == "float64" else 1e-6
    assert got == pytest.approx(ref, rel=tol, abs=tol)


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_starting_objective_from_the_first_update_equals_objective(monkeypatch, loss, dtype):
    """fit records f(W0, H0) from its first user-side update (no separate pass)."""
    from fastpu._core import progress as _progress

    seen = []
    orig = _progress.Progress.start
    monkeypatch.setattr(_progress.Progress, "start",
                        lambda self, value: (seen.append(value), orig(self, value))[1])
    rng = np.random.default_rng(5)
    Y = sp.random(30, 25, density=0.2, format="csr", random_state=5)
    W0 = rng.normal(scale=0.3, size=(30, 3)).astype(dtype)
    H0 = rng.normal(scale=0.3, size=(25, 3)).astype(dtype)
    ocmf.fit(Y, 3, loss=loss, rho=0.1, lam=0.5, n_iter=2, init=(W0, H0), dtype=dtype)
    ref = ocmf.objective(Y, W0.astype(np.float64), H0.astype(np.float64), loss=loss, rho=0.1,
                         lam=0.5)
    assert len(seen) == 1
    assert seen[0] == pytest.approx(ref, rel=1e-12 if dtype == "float64" else 1e-6)


@pytest.mark.parametrize("rows, block", [(0, 8), (5, 8), (64, 8), (100, 7)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_blockwise_initial_factors_are_the_one_shot_draw(rows, block, dtype):
    from fastpu.ocmf._fit import _init_factor

    ref = (np.random.default_rng(9).standard_normal((rows, 3)) * 0.25).astype(dtype)
    got = _init_factor(np.random.default_rng(9), rows, 3, 0.25, np.dtype(dtype), block=block)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, ref)


@given(csr_matrices(max_rows=9, max_cols=9), seeds, st.sampled_from(["full", "sampled"]))
def test_transpose_built_in_the_background_equals_the_one_built_in_line(Y, seed, negatives):
    """Large fits transpose on a background thread (beside the starting factors' draws); the
    result, and so a fit, is the same as the in-line transpose's."""
    trainable = Y.count_nonzero() > 0          # a fit needs a positive
    eager, _ = _prep(Y, negatives=negatives, seed=np.random.default_rng(seed))
    fit_eager = ocmf.fit(Y, 3, n_iter=2, seed=seed) if trainable else None
    old = P._DEFER_TRANSPOSE_NNZ
    P._DEFER_TRANSPOSE_NNZ = 0
    try:
        deferred, _ = _prep(Y, negatives=negatives, seed=np.random.default_rng(seed))
        assert isinstance(deferred._entries_t, P._Deferred)
        fit_deferred = ocmf.fit(Y, 3, n_iter=2, seed=seed) if trainable else None
    finally:
        P._DEFER_TRANSPOSE_NNZ = old
    a, b = eager.entries_t, deferred.entries_t
    for name in ("indptr", "indices", "labels", "weights", "corr"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert getattr(a, name).dtype == getattr(b, name).dtype
    assert a.shape == b.shape
    if trainable:
        np.testing.assert_array_equal(fit_deferred.user_factors, fit_eager.user_factors)
        np.testing.assert_array_equal(fit_deferred.item_factors, fit_eager.item_factors)


def test_deferred_work_reraises_its_error_in_the_caller():
    def fail():
        raise MemoryError("no room for the transpose")

    job = P._Deferred(fail)
    with pytest.raises(MemoryError, match="no room"):
        job.get()
    assert P._Deferred(lambda a, b: a + b, 2, 3).get() == 5
