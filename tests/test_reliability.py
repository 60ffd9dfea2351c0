"""Reliability: memory guard, divergence and zero-factor warnings, clear errors.

One regression test per reported failure; the property-based sweep over every public
function is in ``test_fuzz.py``.
"""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu._core import validation as V
from fastpu._core import memory
from fastpu._core.progress import Progress
from fastpu import ConvergenceWarning

import naive


def _Y(m=30, n=20, seed=0):
    return fp.datasets.synthetic(m, n, rank=3, density=0.2, seed=seed).Y


# ----------------------------------------------------------------------------- memory guard

def test_check_alloc_counts_bytes_without_overflow_and_names_the_arguments():
    assert memory.check_alloc((3, 4), what="x", names=("k",), limit=96) == 96
    assert memory.check_alloc(10, what="x", names=("k",), limit=10) == 10
    with pytest.raises(ValueError, match=r"block needs 97 bytes .*lower k, n_iter"):
        memory.check_alloc(97, what="block", names=("k", "n_iter"), limit=96)
    # a shape whose product overflows int64 is still counted exactly
    with pytest.raises(ValueError, match=r"needs .* \(147,573,952,589,676,412,928 bytes\)"):
        memory.check_alloc((2**32, 2**32), what="x", names=("k",), limit=2**40)


def test_memory_limit_sources(monkeypatch):
    monkeypatch.setattr(memory, "MEMORY_LIMIT", None)
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "2G")
    assert memory.memory_limit() == 2 * 2**30
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "1.5MiB")
    assert memory.memory_limit() == int(1.5 * 2**20)
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="FASTPU_MEMORY_LIMIT must be a number of bytes"):
        memory.memory_limit()
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "-5")
    with pytest.raises(ValueError, match="FASTPU_MEMORY_LIMIT must be a positive number of bytes"):
        memory.memory_limit()
    monkeypatch.delenv("FASTPU_MEMORY_LIMIT")
    avail = memory.memory_limit()                # this machine reports MemAvailable
    assert avail is None or avail > 0
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 1234)
    assert memory.memory_limit() == 1234


HUGE_K = [
    ("ocmf", lambda Y, k: fp.ocmf.fit(Y, k, n_iter=1)),
    ("fbgd", lambda Y, k: fp.fbgd.fit(Y, k, n_iter=1)),
    ("csrr", lambda Y, k: fp.csrr.fit(Y, k, n_iter=1)),
    ("homf", lambda Y, k: fp.homf.fit(Y, k, n_iter=1, mode="dense")),
    ("homf-exact", lambda Y, k: fp.homf.fit(Y, k, n_iter=1, mode="exact")),
]


@pytest.mark.parametrize("name, call", HUGE_K, ids=[h[0] for h in HUGE_K])
def test_huge_k_is_refused_naming_k_before_allocating(name, call):
    # used to be numpy's "Unable to allocate 2.18 TiB"
    with pytest.raises(ValueError, match=r"needs [\d.]+ TiB .* lower k"):
        call(_Y(), 10**10)


@pytest.mark.parametrize("name, call", HUGE_K, ids=[h[0] for h in HUGE_K])
def test_memory_limit_from_the_environment(name, call, monkeypatch):
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "1M")
    with pytest.raises(ValueError, match=r"only 1.0 MiB are available; lower k"):
        call(_Y(), 3000)
    monkeypatch.setenv("FASTPU_MEMORY_LIMIT", "1G")
    assert np.isfinite(call(_Y(), 3).user_factors).all()


_X5 = np.random.default_rng(3).normal(size=(30, 5))
_Y3, _PAIRS = fp.fbgd.triples_to_pairs([0, 1, 2, 2, 3], [0, 1, 0, 1, 1], [1, 0, 2, 2, 3])
RANK_FITS = [
    # (label, fit of rank k, the bound, what the message names as the bound)
    ("ocmf", lambda k: fp.ocmf.fit(_Y(), k, n_iter=1), 20, r"min\(m, n\) = 20 of the 30 × 20 matrix Y"),
    ("ocmf features", lambda k: fp.ocmf.fit(_Y(), k, n_iter=1, user_features=_X5,
                                            intercept=False), 5, "the 5 columns of user_features"),
    ("ocmf item features", lambda k: fp.ocmf.fit(_Y(), k, n_iter=1, item_features=_X5[:20, :4],
                                                 intercept=False), 4,
     "the 4 columns of item_features"),
    # the intercept's column of ones raises the bound by one, and the message says why
    ("ocmf features intercept", lambda k: fp.ocmf.fit(_Y(), k, n_iter=1, user_features=_X5), 6,
     "the 6 columns of user_features with the intercept's column of ones"),
    ("fbgd", lambda k: fp.fbgd.fit(_Y(), k, n_iter=1), 20, r"min\(m, n\) = 20 of the 30 × 20 matrix Y"),
    ("fbgd features", lambda k: fp.fbgd.fit(_Y(), k, n_iter=1, user_features=_X5), 5,
     "the 5 columns of user_features"),
    ("fbgd tensor", lambda k: fp.fbgd.fit_tensor(_Y3, k, pairs=_PAIRS, n_iter=1), 4,
     r"min\(m, n\) = 4 of the 5 × 4 matrix Y"),
    ("csrr e", lambda k: fp.csrr.fit(_Y(), k, n_iter=2), 20, r"min\(m, n\) = 20 of the 30 × 20 matrix Y"),
    ("homf", lambda k: fp.homf.fit(_Y(), k, n_iter=1, T=2), 20, r"min\(m, n\) = 20 of the 30 × 20 matrix Y"),
]


@pytest.mark.parametrize("label, fit, top, bound", RANK_FITS, ids=[r[0] for r in RANK_FITS])
def test_a_rank_above_what_the_scores_can_have_warns_naming_both_and_the_cost(label, fit, top, bound):
    """ocmf.fit(train, 5000) on 1,682 items said nothing (one iteration took 49.8 s): a rank above
    min(m, n), or above a side's feature width, warns at the user's line, naming k, the bound and
    what the extra columns cost; at the bound it says nothing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(top + 3)
    mine = [w for w in caught if "is above" in str(w.message)]
    assert len(mine) == 1 and mine[0].category is UserWarning and mine[0].filename == __file__
    msg = str(mine[0].message)
    assert re.search(rf"k={top + 3} is above {bound}: the scores have rank at most {top} ", msg), msg
    assert re.search(rf"the other 3 columns .* times as long as with k={top}, and the .* factor "
                     rf"rows take .* instead of .*; use k <= {top}$", msg), msg
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(top)
    assert not [w for w in caught if "is above" in str(w.message)]


def test_the_rank_warning_quotes_the_costs():
    with pytest.warns(UserWarning, match=r"k=5,000 is above min\(m, n\) = 943 of the 943 × 1,682 "
                                         r"matrix Y: .* the other 4,057 columns .* about 5\.3 \(its "
                                         r"\|Ω\+\|·k terms\) to 28\.1 \(its k×k terms\) times as "
                                         r"long as with k=943, and the 2,625 factor rows take 100\.1 "
                                         r"MiB instead of 18\.9 MiB; use k <= 943"):
        V.warn_rank(5000, (943, 1682), where="ocmf.fit")


def test_homf_exact_on_a_huge_sparse_matrix_is_refused_at_once():
    # 10^6 × 10^6 with 10 positives: exact mode walks N = 2·10^6 dense columns (minutes, GBs)
    Y = sp.csr_array((np.ones(10), (np.arange(10), np.arange(10))), shape=(10**6, 10**6))
    with pytest.raises(ValueError, match=r'mode="exact"\) walks all 2,000,000 columns.*use mode="dense"'):
        fp.homf.fit(Y, 4, mode="exact", n_iter=1)
    A = fp.homf.transition_matrix(Y)
    U = np.zeros((A.shape[0], 1))
    with pytest.raises(ValueError, match="homf.objective walks all 2,000,000 columns"):
        fp.homf.objective(A, U, U, T=2, lam=0.1)
    model = fp.homf.fit(Y, 2, mode="dense", n_iter=1)        # the fast path answers at once
    assert model.user_factors.shape == (10**6, 2)


def test_homf_exact_limit_is_adjustable(monkeypatch):
    Y = _Y()
    monkeypatch.setattr(fp.homf, "EXACT_LIMIT", 49)          # N = 50: N² = 2500 > 49
    with pytest.raises(ValueError, match="EXACT_LIMIT = 49"):
        fp.homf.fit(Y, 2, mode="exact", n_iter=1)
    monkeypatch.setattr(fp.homf, "EXACT_LIMIT", 2500)
    assert np.isfinite(fp.homf.fit(Y, 2, mode="exact", n_iter=1).user_factors).all()


def test_homf_exact_block_memory_names_block_size(monkeypatch):
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 50_000)
    # a block of 10,000 columns is all 50 columns of f_T(A) (m + n = 50): 100,000 bytes
    with pytest.raises(ValueError, match="one block of 50 columns.*lower block_size"):
        fp.homf.fit(_Y(), 2, mode="exact", n_iter=1, block_size=10_000)


def test_evaluate_huge_k_ranks_only_the_items_there_are():
    # k = 10**12 was refused for memory; past n a list holds only empty slots (tests/model_selection/test_metrics.py)
    Y = _Y()
    model = fp.ocmf.fit(Y, 2, n_iter=1)
    tr, te = fp.split.holdout(Y, test_frac=0.3, seed=0)
    big, n = fp.evaluate(model, tr, te, k=10**12), fp.evaluate(model, tr, te, k=Y.shape[1])
    assert big[f"recall@{10**12}"] == n[f"recall@{Y.shape[1]}"] == 1.0


def test_dense_limit_must_be_an_integer():
    Y = _Y()
    with pytest.raises(TypeError, match="dense_limit must be an integer >= 0, got 'abc'"):
        fp.csrr.fit(Y, variant="I", dense_limit="abc", n_iter=1)
    with pytest.raises(TypeError, match="dense_limit must be an integer >= 0, got 'abc'"):
        fp.ocmf.fit(Y, 2, negatives="full_logistic", dense_limit="abc", n_iter=1)
    with pytest.raises(TypeError, match="dense_limit must be an integer"):
        fp.ocmf.fit(Y, 2, dense_limit="abc", n_iter=1)       # checked even when unused
    with pytest.raises(ValueError, match="dense_limit must be >= 0, got -1"):
        fp.csrr.fit(Y, variant="II", dense_limit=-1, n_iter=1)


# ----------------------------------------------------------------------------- divergence

def _convergence_warnings(call):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in rec if issubclass(w.category, ConvergenceWarning)]


def test_fbgd_huge_lr_warns_that_it_diverged():
    model, msgs = _convergence_warnings(lambda: fp.fbgd.fit(_Y(), 4, lr=1e6, n_iter=5))
    start = model.extras["initial_objective"]
    assert max(h["objective"] for h in model.history) > start
    assert len(msgs) == 1
    assert "fbgd: the objective grew from" in msgs[0] and "lower lr (now 1e+06)" in msgs[0]


def _diverging_fbgd_fits():
    rng = np.random.default_rng(0)
    x, h, y = rng.integers(0, 6, 40), rng.integers(0, 3, 40), rng.integers(0, 5, 40)
    T, pairs = fp.fbgd.triples_to_pairs(x, h, y, shape=(6, 3, 5))
    return {
        "gd lr=1": lambda: fp.fbgd.fit(_Y(), 4, optimizer="gd", lr=1.0, n_iter=5),
        "gd features": lambda: fp.fbgd.fit(_Y(), 4, user_features=rng.normal(size=(30, 3)) * 100,
                                           optimizer="gd", lr=10.0, lam=0.1, n_iter=5),
        "tensor cp": lambda: fp.fbgd.fit_tensor(T, 2, pairs=pairs, tensor="cp", optimizer="gd",
                                                lr=100.0, lam=0.1, n_iter=8),
        "tensor pitf": lambda: fp.fbgd.fit_tensor(T, 2, pairs=pairs, tensor="pitf", optimizer="gd",
                                                  lr=1.0, lam=0.1, n_iter=8),
    }


@pytest.mark.parametrize("case", list(_diverging_fbgd_fits()))
def test_a_diverging_fbgd_fit_raises_its_own_error_and_no_numpy_warning(case):
    """The penalty lam·‖Θ‖² overflows first in a diverging run: numpy's 'overflow encountered in
    square' used to leak before fastpu's own FloatingPointError said what to lower."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(FloatingPointError, match="objective became nan .*lower lr"):
            _diverging_fbgd_fits()[case]()
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


_NAN = r"objective became nan at iteration 1; start from smaller factors \(init_std="
_FUN = r"problem\.fun at x0 is not finite \(f = nan\): .*start from smaller factors \(init_std="


@pytest.mark.parametrize("kw, message", [
    (dict(), _NAN + r"1e\+100, or init; largest \|value\|"),
    (dict(loss="square", init_std=1e200), _NAN + r"1e\+200"),
    (dict(solver="gd"), _NAN + r"1e\+100"),
    (dict(fast_path=False), _FUN + r"1e\+100"),
    (dict(user_features="normal"), _FUN + r"1e\+100"),
    (dict(fast_path=False, init_std=1e150), _FUN + r"1e\+150"),
    (dict(user_features="normal", init_std=1e150), _FUN + r"1e\+150"),
    (dict(dtype="float32"), r"the starting factors are not finite in float32 \(the drawn start "
                            r"\(init_std=1e\+100\)\); start from smaller factors \(lower init_std\), "
                            r"or pass dtype='float64'"),
], ids=["logistic", "square", "gd", "tron", "features", "tron-1e150", "features-1e150",
        "float32"])
def test_a_diverging_ocmf_fit_raises_its_own_error_and_no_numpy_warning(kw, message):
    """Huge starting factors overflow ‖W‖², the row objectives (inf - inf) and TRON's sub-problem:
    numpy's warnings used to come before fastpu's FloatingPointError naming init_std. At float64
    (every case but the last) the start is finite, so the fit reaches those overflows: the fast
    path's first objective, and TRON's first value on a coupled side; float32 stops at its
    check of the start. At 1e150 the first value is not finite and the gradient's products
    would overflow: TRON stops at the value, before evaluating the gradient."""
    kw = dict(dict(init_std=1e100, dtype="float64"), **kw)
    if kw.get("user_features") == "normal":
        kw["user_features"] = np.random.default_rng(0).normal(size=(30, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(FloatingPointError, match=rf"^ocmf: {message}"):
            fp.ocmf.fit(_Y(), 2, n_iter=3, **kw)
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


def test_a_diverging_fbgd_fit_still_warns_in_its_own_words():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fp.fbgd.fit(_Y(), 4, lr=1e6, lam=0.1, n_iter=5)
    assert [w.category for w in caught] == [ConvergenceWarning]
    assert "the iteration diverged" in str(caught[0].message)


def test_fbgd_huge_features_advice_names_the_features():
    X = np.full((30, 3), 1e6)
    _, msgs = _convergence_warnings(lambda: fp.fbgd.fit(_Y(), 4, user_features=X, n_iter=3))
    assert msgs and "scale user_features down (largest |value| 1e+06" in msgs[0]


def test_fbgd_gd_non_finite_names_lr():
    with pytest.raises(FloatingPointError, match=r"lower lr \(now 10, plain gd\)"):
        fp.fbgd.fit(_Y(), 4, optimizer="gd", lr=10.0, n_iter=5)


def test_fbgd_huge_rho_is_finite():
    # used to give all-NaN weights, then "objective became nan ... lower the step size"
    Y = _Y()
    for rho in (1e3, 1e6, 1e300, np.finfo(float).max):
        w = fp.fbgd.negative_weights(Y, 10.0, rho=rho)
        assert np.isfinite(w).all() and w.sum() == pytest.approx(10.0)
    counts = np.bincount(Y.indices, minlength=Y.shape[1])
    w = fp.fbgd.negative_weights(Y, 10.0, rho=1e6)
    top = counts == counts.max()
    np.testing.assert_allclose(w[top], 10.0 / top.sum())    # the limit: all on the most popular
    assert np.isfinite(fp.fbgd.fit(Y, 3, rho=1e6, n_iter=2).user_factors).all()


def test_fbgd_moderate_rho_keeps_the_direct_formula():
    Y = _Y()
    counts = np.bincount(Y.indices, minlength=Y.shape[1]).astype(float)
    raw = np.expm1(counts / counts.sum()) ** 0.7
    np.testing.assert_array_equal(fp.fbgd.negative_weights(Y, 5.0, 0.7), 5.0 * raw / raw.sum())


def test_csrr_huge_eta_warns():
    _, msgs = _convergence_warnings(lambda: fp.csrr.fit(_Y(), 4, eta=1e6, n_iter=10))
    assert msgs and all("eta (now 1e+06)" in m for m in msgs)


def test_csrr_all_zero_result_warns():
    Y = _Y()
    model, msgs = _convergence_warnings(lambda: fp.csrr.fit(Y, 3, lam1=1e6, lam2=1e6, n_iter=3))
    assert np.abs(model.scores()).max() < 1e-12
    assert any("every score is 0; lower lam1" in m for m in msgs)


def test_ocmf_init_std_zero_warns():
    model, msgs = _convergence_warnings(lambda: fp.ocmf.fit(_Y(), 4, init_std=0, n_iter=3))
    assert not np.any(model.user_factors)
    assert len(msgs) == 1 and "init_std=0 starts at W = H = 0" in msgs[0]


def test_fbgd_init_std_zero_warns():
    _, msgs = _convergence_warnings(lambda: fp.fbgd.fit(_Y(), 4, init_std=0, n_iter=3))
    assert len(msgs) == 1 and "init_std=0" in msgs[0]


def test_an_empty_Y_is_refused_without_a_warning():
    """A Y with no positive is an error (not a model and a misleading warning): see
    test_validation_empty.py for every fit."""
    Y = sp.csr_array((6, 5))
    for call in (lambda: fp.csrr.fit(Y, 2, n_iter=2), lambda: fp.fbgd.fit(Y, 2, init_std=0, n_iter=2),
                 lambda: fp.ocmf.fit(Y, 2, init_std=0, loss="square", n_iter=2)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="Y has shape 6×5 but no positive entries"):
                call()
        assert caught == []


@pytest.mark.parametrize("features", [sp.csr_array((30, 0)), np.zeros((30, 0))], ids=["sparse", "dense"])
def test_features_with_no_columns_are_refused(features):
    for fit in (fp.ocmf.fit, fp.fbgd.fit):
        with pytest.raises(ValueError, match="user_features has no columns"):
            fit(_Y(), 2, user_features=features, n_iter=1)


def test_healthy_default_fits_do_not_warn():
    Y = _Y()
    calls = [lambda: fp.ocmf.fit(Y, 4, n_iter=4), lambda: fp.ocmf.fit(Y, 4, loss="square", n_iter=3),
             lambda: fp.fbgd.fit(Y, 4, n_iter=5), lambda: fp.fbgd.fit(Y, 4, update="batch", n_iter=5),
             lambda: fp.csrr.fit(Y, 4, n_iter=5), lambda: fp.csrr.fit(Y, variant="I", n_iter=5),
             lambda: fp.csrr.fit(Y, variant="II", n_iter=5),
             lambda: fp.homf.fit(Y, 4, mode="dense", n_iter=3), lambda: fp.homf.fit(Y, 4, n_iter=2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for call in calls:
            call()


def test_progress_start_and_finish():
    p = Progress("m", advice="do X")
    p.start(10.0)
    p.step(1, 9.0)
    assert p.finish(np.ones(2), zero_advice="z") == []
    p.step(2, 11.0)
    p.step(3, 9.5)
    with pytest.warns(ConvergenceWarning, match=r"grew from 10 at the start to 11 at iteration 2 \(last 9.5\).*do X"):
        p.finish(np.ones(2))
    q = Progress("m")
    q.step(1, 1.0)
    with pytest.warns(ConvergenceWarning, match="every score is 0; try Y"):
        q.finish(np.ones(2), np.zeros(3), zero_advice="try Y")
    assert q.finish(np.zeros(2)) == []                       # no advice: no zero check
    with pytest.raises(FloatingPointError, match="objective became nan at iteration 2; do X"):
        p.step(2, float("nan"))


# ----------------------------------------------------------------------------- clear errors

def test_ocmf_huge_a_bar_is_a_value_error():
    Y = _Y()
    for loss in ("logistic", "square"):
        with pytest.raises(ValueError, match=r"a_bar=1e\+300 is too large"):
            fp.ocmf.fit(Y, 2, a_bar=1e300, loss=loss, n_iter=1)
    with pytest.raises(ValueError, match=r"unlabeled weights overflow.*rho=1e\+307"):
        fp.ocmf.fit(Y, 2, rho=1e307, n_iter=1)
    with pytest.raises(ValueError, match=r"a_bar=-1e\+300 is too large"):
        fp.ocmf.objective(Y, np.zeros((30, 2)), np.zeros((20, 2)), a_bar=-1e300)


def test_ocmf_full_logistic_with_explicit_zeros():
    # used to fail with a numpy boolean-indexing message
    Y = sp.csr_array(_Y(8, 6, seed=1))
    i, j = 0, int(np.setdiff1d(np.arange(6), Y.indices[Y.indptr[0]:Y.indptr[1]])[0])
    rows = np.repeat(np.arange(8), np.diff(Y.indptr))
    Yz = sp.csr_array((np.append(Y.data, 0.0), (np.append(rows, i), np.append(Y.indices, j))), shape=Y.shape)
    assert Yz.nnz == Y.nnz + 1
    rng = np.random.default_rng(0)
    W, H = rng.normal(size=(8, 2)), rng.normal(size=(6, 2))
    kw = dict(loss="logistic", rho=0.3, a_bar=-1.0, lam=0.5, negatives="full_logistic")
    got = fp.ocmf.objective(Yz, W, H, **kw)
    # a stored zero is a positive of weight 0 (as in negatives="full"): it drops out of the sum
    ref = naive.ocmf_objective(Y, W, H, loss_name="logistic", rho=0.3, a_bar=-1.0, lam=0.5,
                               lam_graph=0.0, negatives="full_logistic")
    ref -= 0.3 * naive.loss("logistic", -1.0, W[i] @ H[j])
    assert got == pytest.approx(ref, rel=1e-10)
    model = fp.ocmf.fit(Yz, 2, negatives="full_logistic", n_iter=2)
    assert np.isfinite(model.user_factors).all()


def test_empty_users_selection():
    Y = _Y()
    model = fp.ocmf.fit(Y, 2, n_iter=1)
    assert model.scores([]).shape == (0, 20)
    assert V.check_users(np.array([]), 5).dtype == np.int64
    with pytest.raises(ValueError, match="no user has a test item"):
        fp.evaluate(model, Y, Y, users=[])
    with pytest.raises(TypeError, match="users must be integer indices, got dtype float64"):
        model.scores([1.5])
    with pytest.raises(TypeError, match="users must be integer indices, got str"):
        model.scores("0")


def test_factor_width_mismatch_is_named():
    model = fp.Factorization(np.ones((30, 3)), np.ones((20, 4)))
    Y = _Y()
    tr, te = fp.split.holdout(Y, test_frac=0.3, seed=0)
    with pytest.raises(ValueError, match="user_factors of width 3 and item_factors of width 4"):
        fp.evaluate(model, tr, te)


def test_model_none_is_a_type_error():
    Y = _Y()
    with pytest.raises(TypeError, match="model must be a fitted fastpu Factorization.*NoneType"):
        fp.evaluate(None, Y, Y)


def test_numpy_integers_are_accepted_for_n_threads_like_k():
    Y = _Y()
    model = fp.ocmf.fit(Y, np.int64(3), n_threads=np.int64(1), n_iter=1)
    assert model.user_factors.shape == (30, 3)
    old = fp.set_num_threads(np.int32(1))
    fp.set_num_threads(old)
    with pytest.raises(TypeError, match="n_threads must be an integer"):
        fp.ocmf.fit(Y, 2, n_threads=1.0, n_iter=1)
    with pytest.raises(TypeError, match="n_threads must be an integer"):
        fp.ocmf.fit(Y, 2, n_threads=np.True_, n_iter=1)


# ----------------------------------------------------------------------------- found by tests/test_fuzz.py

def test_recommend_refuses_none_and_mismatched_models():
    Y = _Y()
    with pytest.raises(TypeError, match="model must be a fitted fastpu Factorization.*NoneType"):
        fp.recommend(None, Y)
    with pytest.raises(ValueError, match="user_factors of width 3 and item_factors of width 2"):
        fp.recommend(fp.Factorization(np.ones((30, 3)), np.ones((20, 2))), Y)
    with pytest.raises(ValueError, match=r"Y_seen has shape 30×20, expected 31×20 \(model.shape"):
        fp.recommend(fp.Factorization(np.ones((31, 2)), np.ones((20, 2))), Y)


def test_synthetic_refuses_huge_sizes_and_a_density_with_no_positives():
    with pytest.raises(ValueError, match=r"synthetic data needs .* lower m, n, rank, density"):
        fp.datasets.synthetic(10**9, 10**9, rank=2, density=0.5)
    with pytest.raises(ValueError, match=r"synthetic data needs .* lower m, n, rank"):
        fp.datasets.synthetic(10, 10, rank=10**12)
    tiny = fp.datasets.synthetic(12, 9, rank=2, density=1e-300)     # no positive, a finite threshold
    assert tiny.Y.nnz + tiny.hidden.nnz == 0 and np.isfinite(tiny.extras["threshold"])
    ds = fp.datasets.synthetic(12, 9, rank=2, density=1 / 108)      # exactly one true positive
    assert ds.Y.nnz + ds.hidden.nnz == 1


def _pairs_file(tmp_path, text="user,item,value\nu1,i1,1\nu2,i1,3\nu2,i2,1\n"):
    p = tmp_path / "pairs.csv"
    p.write_text(text)
    return str(p)


def test_read_csv_and_load_npz_name_a_bad_path(tmp_path):
    csv = _pairs_file(tmp_path)
    npz = str(tmp_path / "y.npz")
    sp.save_npz(npz, sp.csr_matrix(np.eye(3)))
    for fn in (fp.datasets.read_csv, fp.datasets.load_npz, fp.datasets.read_xc):
        with pytest.raises(TypeError, match="path must be a file path .*got NoneType"):
            fn(None)
        with pytest.raises(TypeError, match="path must be a file path .*got int"):
            fn(3)
        with pytest.raises(ValueError, match="path .* is a directory"):
            fn(str(tmp_path))
        with pytest.raises(FileNotFoundError, match="path .*nope.csv does not exist"):
            fn(str(tmp_path / "nope.csv"))
    with pytest.raises(ValueError, match="path .* is a zip archive .*load_npz"):
        fp.datasets.read_csv(npz)
    with pytest.raises(ValueError, match="path .* is not a .npz archive .*read_csv"):
        fp.datasets.load_npz(csv)
    model_file = str(tmp_path / "model.npz")
    fp.Factorization(np.ones((3, 2)), np.ones((4, 2))).save(model_file)
    with pytest.raises(ValueError, match="path .* not a sparse matrix saved by scipy.sparse.save_npz"):
        fp.datasets.load_npz(model_file)
    with pytest.raises(TypeError, match="path_xml must be a file path"):
        fp.datasets.read_arff(csv, None)


def test_read_csv_header_false_on_a_header_line_gives_a_hint(tmp_path):
    csv = _pairs_file(tmp_path)
    with pytest.raises(ValueError, match="line 1 looks like a header: pass header=True"), \
            pytest.warns(UserWarning, match="names columns"):      # warned first, then refused
        fp.datasets.read_csv(csv, header=False)
    assert fp.datasets.read_csv(csv).Y.nnz == 3


def test_from_pairs_refuses_non_sequences():
    for bad in (None, 3, {0: 1}, {1, 2, 3}, np.array(5)):
        with pytest.raises(TypeError, match="users must be a 1-d sequence of ids"):
            fp.datasets.from_pairs(bad, [1, 2, 3])
        with pytest.raises(TypeError, match="items must be a 1-d sequence of ids"):
            fp.datasets.from_pairs([1, 2, 3], bad)


def test_unhashable_choices_are_refused_with_the_argument_named():
    Y = _Y()
    with pytest.raises(ValueError, match=r"unknown loss \['a'\]"):
        fp.ocmf.fit(Y, 2, loss=["a"], n_iter=1)
    with pytest.raises(TypeError, match=r"method must be a method name .*got list \['a'\]"):
        fp.select.default_space(["a"])
    with pytest.raises(ValueError, match=r"method must be one of .*got \['a'\]"):
        fp.distributed.fit(Y, 2, method=["a"])          # refused before any cluster starts
    with pytest.raises(TypeError, match="Y must be"):
        fp.select.default_space("ocmf", "Y")


def test_compare_names_methods_params_and_test_frac():
    Y = _Y()
    with pytest.raises(TypeError, match="methods must be 'all'"):
        fp.compare.compare(Y, None)
    with pytest.raises(ValueError, match="unknown method 'bogus' in methods"):
        fp.compare.compare(Y, "bogus")
    with pytest.raises(TypeError, match="a method entry must be .* in methods"):
        fp.compare.compare(Y, [3])
    with pytest.raises(TypeError, match="params must be a dict"):
        fp.compare.compare(Y, "popularity", params="x")
    with pytest.raises(ValueError, match=r"test_frac=1e-300 holds out no positive .*: round\(1e-300 × a "
                                         r"user's positives\) is 0 for every user; raise test_frac"):
        fp.compare.compare(Y, "popularity", test_frac=1e-300, splits=1)
    # every user with one positive: the message used to suggest test_frac=0.2, the value given
    single = sp.csr_array((np.ones(6), np.arange(6), np.arange(7)), shape=(6, 8))
    with pytest.raises(ValueError, match="holds out no positive .*: no user has 2 or more positives"):
        fp.compare.compare(single, "popularity", test_frac=0.2, splits=1)


def test_implicit_baselines_check_their_step_sizes():
    Y = _Y()
    with pytest.raises(TypeError, match="learning_rate must be a real number"):
        fp.baselines.implicit_bpr(Y, 2, learning_rate=None, n_iter=1)
    with pytest.raises(ValueError, match="regularization must be finite"):
        fp.baselines.implicit_als(Y, 2, regularization=float("nan"), n_iter=1)
    with pytest.raises(ValueError, match="n_threads must be in"):
        fp.baselines.implicit_bpr(Y, 2, n_threads=-1, n_iter=1)
    with pytest.raises(ValueError, match="implicit ALS's factors needs .* lower k"):
        fp.baselines.implicit_als(Y, 10**12, n_iter=1)
    with pytest.raises(FloatingPointError, match="diverged.*lower learning_rate, regularization"):
        fp.baselines.implicit_bpr(Y, 2, learning_rate=1e30, n_iter=3, n_threads=1)


def test_wrmf_divergence_names_alpha():
    with pytest.raises(FloatingPointError, match=r"lower alpha \(now 1e\+300\)"):
        fp.baselines.wrmf(_Y(), 2, alpha=1e300, n_iter=2)


def test_tensor_model_errors_name_their_arguments():
    Y, pairs = fp.fbgd.triples_to_pairs([0, 1, 2], [0, 1, 0], [1, 0, 2])
    with pytest.raises(ValueError, match=r"shape must be \(\|X\|, \|H\|, \|Y\|\), got nan"):
        fp.fbgd.triples_to_pairs([0], [0], [0], shape=float("nan"))
    with pytest.raises(ValueError, match="fbgd.tensor_objective is (inf|nan) .*VX, VH, VY"):
        fp.fbgd.tensor_objective(Y, np.full((3, 1), 1e200), np.ones((2, 1)), np.full((3, 1), 1e200),
                                 pairs=pairs, tensor="cp")
    with pytest.raises(ValueError, match="VH has shape 2×1, expected 2×2 .*VX has 2"):
        fp.fbgd.tensor_objective(Y, np.ones((3, 2)), np.ones((2, 1)), np.ones((3, 2)), pairs=pairs, tensor="cp")
    with pytest.raises(ValueError, match="fit_tensor's factors and Gram matrices needs .* lower k, n_x, n_h"):
        fp.fbgd.fit_tensor(Y, 10**7, pairs=pairs, n_iter=1)
    with pytest.raises(FloatingPointError, match="lower lr or init_std, or bring the targets r_pos"):
        fp.fbgd.fit_tensor(Y, 2, pairs=pairs, tensor="cp", r_pos=1e300, n_iter=2)


def test_fold_in_overflow_names_the_inputs():
    Y = _Y()
    # the square loss's row problem is solved exactly: q = 1e300 on the unlabeled term gives
    # rows near zero, finite; the logistic loss's Newton steps overflow, and say where to look
    model = fp.ocmf.fit(Y, 2, n_iter=2)
    folded = fp.fold_in(model, Y[:3], q=np.full(20, 1e300), max_iter=5)
    assert np.isfinite(folded.user_factors).all()
    model = fp.ocmf.fit(Y, 2, n_iter=2, loss="logistic")
    with pytest.raises(FloatingPointError, match="check the scale of the inputs model, Y_new, user_features, p, q"):
        fp.fold_in(model, Y[:3], q=np.full(20, 1e300), max_iter=5)


def test_cost_sensitive_names_the_model_shape_and_y_train():
    Y = _Y()
    tr, te = fp.split.holdout(Y, test_frac=0.3, seed=0)
    model = fp.ocmf.fit(tr, 2, n_iter=1)
    with pytest.raises(ValueError, match=r"expected 31×20 \(model.shape"):
        fp.metrics.cost_sensitive(fp.Factorization(np.ones((31, 2)), np.ones((20, 2))), tr, te)
    with pytest.raises(ValueError, match="not in Y_train"):
        fp.metrics.cost_sensitive(model, Y, te)


@pytest.mark.parametrize("fit", [fp.ocmf.fit, fp.fbgd.fit, fp.csrr.fit, fp.homf.fit, fp.baselines.wrmf],
                         ids=["ocmf", "fbgd", "csrr", "homf", "wrmf"])
def test_a_misspelt_keyword_of_a_fit_gets_the_closest_name(fit):
    """Python's bare 'unexpected keyword argument' named no alternative; select and the CLI did."""
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'niter' \(did you mean "
                                        r"'n_iter'\?\); it takes .*n_iter"):
        fit(_Y(), 2, niter=2)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'zzz'; it takes"):
        fit(_Y(), 2, zzz=2)


@pytest.mark.parametrize("theirs, ours", [("iterations", "n_iter"), ("regularization", "lam"),
                                          ("factors", "k"), ("random_state", "seed")])
def test_another_librarys_name_suggests_fastpus(theirs, ours):
    # a new user's trial: iterations= suggested 'neg_ratio' (the closest spelling), and
    # n_factors= without k was reported as a missing k rather than as a misnamed one
    with pytest.raises(TypeError, match=rf"argument '{theirs}' \(did you mean '{ours}'\?\)"):
        fp.ocmf.fit(_Y(), **({} if ours == "k" else {"k": 2}), **{theirs: 2})
    with pytest.raises(TypeError, match=r"argument 'n_factors' \(did you mean 'k'\?\)"):
        fp.fbgd.fit(_Y(), n_factors=2)


def test_a_dataset_where_a_matrix_is_expected_is_told_to_pass_its_y():
    data = fp.datasets.synthetic(20, 10, rank=2, density=0.3, seed=0)
    model = fp.ocmf.fit(data, 2, n_iter=1)
    with pytest.raises(TypeError, match=r"Y_train must be a scipy.sparse .*got Dataset; pass the data "
                                        r"set's matrix, Y_train=data.Y"):
        fp.metrics.sampled_auc(model, data, data.Y)
    # evaluate takes Datasets (matched to the model by id)
    train, test = fp.split.holdout(data, seed=0)
    assert fp.evaluate(model, train, test, k=2) == fp.evaluate(model, train.Y, test.Y, k=2)
