"""fBGD: efficient loss and gradients against dense all-pairs references, optimiser behaviour,
the eq. 22 weights, determinism, and the boundary's error messages."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from fastpu._core import validation as V
from fastpu.fbgd import _problem as fbgd_problem
from fastpu import fbgd
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads

import naive_fbgd as naive
import reference_fbgd as reference
from machine import platform


# --------------------------------------------------------------------------- helpers
def _random_csr(rng, m, n, density, values=False, nonneg=True):
    mask = rng.random((m, n)) < density
    vals = rng.uniform(0.5, 3.0, size=(m, n)) if values else np.ones((m, n))
    if not nonneg:
        vals = vals * rng.choice([-1.0, 1.0], size=(m, n))
    return sp.csr_array(np.where(mask, vals, 0.0))


@st.composite
def problems(draw, features=None):
    """A small PU problem: Y with possibly empty rows/columns/nnz = 0, optional sparse
    features, biases, eq. 22 weights or a random vector, scalar or per-positive α⁺, r⁺."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    m, n = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    Y = _random_csr(rng, m, n, draw(st.sampled_from([0.0, 0.3, 0.6])), values=True)
    k = draw(st.integers(1, 3))
    use_features = draw(st.booleans()) if features is None else features
    if use_features:
        Zx = _random_csr(rng, m, draw(st.integers(1, 4)), 0.6, values=True, nonneg=False)
        Zy = _random_csr(rng, n, draw(st.integers(1, 4)), 0.6, values=True, nonneg=False)
        biases = draw(st.booleans())
    else:
        Zx, Zy = sp.identity(m, format="csr"), sp.identity(n, format="csr")
        biases = draw(st.booleans())
    if draw(st.booleans()):
        neg = fbgd.negative_weights(Y, draw(st.floats(0.0, 5.0)), draw(st.sampled_from([0.0, 0.5, 2.0])))
    else:
        neg = rng.uniform(0.0, 2.0, size=n)
    pos_weight = draw(st.sampled_from([1.0, 3.5, "values"]))
    r_pos = draw(st.sampled_from([1.0, "values"]))
    r_neg = draw(st.sampled_from([0.0, -0.5, 0.3]))
    neg_rows = rng.uniform(0.0, 2.0, size=m) if draw(st.booleans()) else None   # α⁻_x
    return dict(Y=Y, Zx=Zx, Zy=Zy, k=k, biases=biases, neg=neg, pos_weight=pos_weight,
                r_pos=r_pos, r_neg=r_neg, neg_rows=neg_rows, rng=rng)


def _build(pb):
    """The fastpu problem and random parameters Θ^X, Θ^Y, plus the dense inputs of naive."""
    Y = V.check_csr(pb["Y"])
    Zx = V.check_csr(pb["Zx"], nonnegative=False)
    Zy = V.check_csr(pb["Zy"], nonnegative=False)
    apos = fbgd_problem.per_positive(pb["pos_weight"], Y)
    rpos = fbgd_problem.per_positive(pb["r_pos"], Y)
    prob = fbgd_problem._Problem(Y, Zx, Zy, pb["k"], pb["biases"], pb["neg"], apos, rpos, pb["r_neg"],
                         pb["neg_rows"])
    tx, ty = prob.init_params(pb["rng"], 0.7)
    tx[prob.free_x] = pb["rng"].normal(0.0, 0.7, size=int(prob.free_x.sum()))
    ty[prob.free_y] = pb["rng"].normal(0.0, 0.7, size=int(prob.free_y.sum()))
    D = Y.toarray() > 0
    A = sp.csr_array((apos, Y.indices, Y.indptr), shape=Y.shape).toarray()
    R = sp.csr_array((rpos, Y.indices, Y.indptr), shape=Y.shape).toarray()
    dense = dict(D=D, Zx=pb["Zx"].toarray(), Zy=pb["Zy"].toarray(), apos=A, rpos=R,
                 neg=np.asarray(pb["neg"], float), r_neg=pb["r_neg"], neg_rows=pb["neg_rows"])
    return prob, tx, ty, dense


def _naive_loss(dense, tx, ty, biases):
    return naive.full_loss(dense["D"], dense["Zx"], dense["Zy"], tx, ty, biases, dense["apos"],
                           dense["rpos"], dense["neg"], dense["r_neg"], neg_rows=dense["neg_rows"])


def _naive_grads(dense, tx, ty, f, biases, lam=0.0):
    return naive.param_gradients(dense["D"], dense["Zx"], dense["Zy"], tx, ty, f, biases,
                                 dense["apos"], dense["rpos"], dense["neg"], dense["r_neg"], lam,
                                 dense["neg_rows"])


# --------------------------------------------------------------------------- eq. 22
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 6), n=st.integers(1, 8),
       density=st.sampled_from([0.0, 0.2, 0.7]), alpha0=st.floats(0.0, 100.0),
       rho=st.sampled_from([0.0, 0.3, 1.0, 4.0]))
def test_negative_weights_match_eq22(seed, m, n, density, alpha0, rho):
    Y = _random_csr(np.random.default_rng(seed), m, n, density)
    w = fbgd.negative_weights(Y, alpha0, rho)
    counts = np.asarray((Y.toarray() > 0).sum(axis=0)).ravel()
    np.testing.assert_allclose(w, naive.negative_weights(counts, alpha0, rho), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(w.sum(), alpha0, rtol=1e-12)
    assert w.min() >= 0.0


@pytest.mark.parametrize("counts, rho", [
    ([5000, 4500, 1, 0], 100.0),          # the rare item's (e^z − 1)^ρ underflows (1e-400)
    ([5000, 4500, 300, 1], 100.0),
    ([30, 20, 10, 1, 1], 200.0),
    ([7, 5, 3, 2], 1500.0),               # every power underflows
    ([9, 1], 0.25),                       # ... and direct where float64 suffices
])
def test_negative_weights_in_log_space_equal_the_direct_formula(counts, rho):
    """Where float64's powers (e^z − 1)^ρ underflow (or overflow), eq. 22 is normalised in log
    space; its weights must be the direct formula's, computed here in 80-digit decimals, wherever
    those are finite: log(z) in place of log(e^z − 1) gave 0.117 where 0.075 is right."""
    counts = np.asarray(counts)
    Y = sp.csr_array((np.ones(counts.sum()), (np.arange(counts.sum()), np.repeat(np.arange(counts.size), counts))),
                     shape=(int(counts.sum()), counts.size))
    w = fbgd.negative_weights(Y, 3.0, rho)
    want = naive.negative_weights_exact(counts, 3.0, rho)
    assert np.isfinite(want).all() and want.sum() == pytest.approx(3.0)
    np.testing.assert_allclose(w, want, rtol=1e-12, atol=1e-300)
    with np.errstate(under="ignore", over="ignore"):
        direct = np.expm1(counts[counts > 0] / counts.sum()) ** rho
    # the first four cases take the log-space branch (the direct powers leave float64's range)
    assert (direct.min() < np.finfo(float).tiny or not np.isfinite(direct.sum())) == (rho >= 100)


def test_negative_weights_uniform_at_rho_zero_and_grow_with_popularity():
    Y = sp.csr_array(np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0.0]]))
    np.testing.assert_array_equal(fbgd.negative_weights(Y, 8.0, 0.0), np.full(4, 2.0))
    w = fbgd.negative_weights(Y, 8.0, 1.0)
    assert w[0] > w[1] > w[2] > w[3] == 0.0


# --------------------------------------------------------------------------- loss (2)
@given(problems(features=False))
def test_objective_matches_dense_all_pairs(pb):
    Y = pb["Y"]
    m, n = Y.shape
    rng = pb["rng"]
    g = pb["k"]
    P, Q = rng.normal(size=(m, g)), rng.normal(size=(n, g))
    J = fbgd.objective(Y, P, Q, neg_weights=pb["neg"], pos_weight=pb["pos_weight"],
                       r_pos=pb["r_pos"], r_neg=pb["r_neg"], neg_row_weights=pb["neg_rows"])
    _, _, _, dense = _build(pb)
    ref = naive.loss(dense["D"], P, Q, dense["apos"], dense["rpos"], dense["neg"], pb["r_neg"],
                     pb["neg_rows"])
    np.testing.assert_allclose(J, ref, rtol=1e-10, atol=1e-10)


@given(problems())
def test_svdfeature_loss_matches_dense(pb):
    prob, tx, ty, dense = _build(pb)
    f = pb["k"]
    # fastpu's embeddings are exactly eq. 13 built from the parts
    parts = naive.theta_to_parts(tx, ty, f, pb["biases"])
    P_ref, Q_ref = naive.svdfeature_embeddings(dense["Zx"], dense["Zy"], *parts)
    np.testing.assert_allclose(prob.embed(prob.Zx, tx), P_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(prob.embed(prob.Zy, ty), Q_ref, rtol=1e-12, atol=1e-12)
    ref = naive.loss(dense["D"], P_ref, Q_ref, dense["apos"], dense["rpos"], dense["neg"], dense["r_neg"],
                     dense["neg_rows"])
    np.testing.assert_allclose(prob.loss_at(tx, ty), ref, rtol=1e-10, atol=1e-10)


def test_objective_never_forms_the_full_matrix():
    # 10^6 × 10^6 would need 8 TB dense; the cached form only touches rows and positives.
    m = n = 1_000_000
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, m, 500), rng.integers(0, n, 500)
    Y = sp.csr_array((np.ones(500), (rows, cols)), shape=(m, n))
    P, Q = rng.normal(size=(m, 2)) * 0.1, rng.normal(size=(n, 2)) * 0.1
    neg = np.full(n, 1e-6)
    J = fbgd.objective(Y, P, Q, neg_weights=neg)
    Yc = V.check_csr(Y)
    R = np.einsum("ij,ij->i", P[np.repeat(np.arange(m), np.diff(Yc.indptr))], Q[Yc.indices])
    pos = np.sum((1 - R) ** 2) - np.sum(1e-6 * R ** 2)
    allpairs = 1e-6 * np.sum((P.T @ P) * (Q.T @ Q))
    np.testing.assert_allclose(J, pos + allpairs, rtol=1e-9)


# --------------------------------------------------------------------------- gradients
@given(problems())
def test_gradients_match_dense_all_pairs(pb):
    prob, tx, ty, dense = _build(pb)
    gx, gy = reference.gradients(prob, tx, ty)
    rx, ry = _naive_grads(dense, tx, ty, pb["k"], pb["biases"])
    np.testing.assert_allclose(gx, rx, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gy, ry, rtol=1e-9, atol=1e-9)


@given(problems())
def test_gradients_match_finite_differences(pb):
    prob, tx, ty, dense = _build(pb)
    gx, gy = reference.gradients(prob, tx, ty)
    h = 1e-5
    with limit_threads(1):      # many tiny loss evaluations: skip the parallel launches
        _check_fd(prob, tx, ty, gx, gy, dense, pb["biases"], h)


def _check_fd(prob, tx, ty, gx, gy, dense, biases, h):
    for theta, grad, free in ((tx, gx, prob.free_x), (ty, gy, prob.free_y)):
        for j, d in zip(*np.nonzero(free)):
            old = theta[j, d]
            theta[j, d] = old + h
            up = prob.loss_at(tx, ty)
            up_ref = _naive_loss(dense, tx, ty, biases)
            theta[j, d] = old - h
            down = prob.loss_at(tx, ty)
            down_ref = _naive_loss(dense, tx, ty, biases)
            theta[j, d] = old
            scale = max(1.0, abs(grad[j, d]))
            assert abs((up - down) / (2 * h) - grad[j, d]) <= 1e-5 * scale
            assert abs((up_ref - down_ref) / (2 * h) - grad[j, d]) <= 1e-5 * scale


# --------------------------------------------------------------------------- updates
def _one_run(pb, update, adagrad, n_iter, lr, lam):
    prob, tx, ty, dense = _build(pb)
    nx, ny = tx.copy(), ty.copy()
    progress = Progress("test")
    try:
        fbgd_problem._train(prob, tx, ty, lr=lr, n_iter=n_iter, update=update, adagrad=adagrad, lam=lam,
                    progress=progress)
    except FloatingPointError:
        # plain gradient steps can diverge on a drawn problem: the epoch that raised has updated
        # the parameters, so the reference runs as many epochs and must diverge the same way
        n_iter = len(progress.history) + 1
    ax, ay = np.zeros_like(nx), np.zeros_like(ny)
    step = naive.coordinate_epoch if update == "coordinate" else naive.batch_epoch
    for _ in range(n_iter):
        step(dense["D"], dense["Zx"], dense["Zy"], nx, ny, ax, ay, prob.free_x, prob.free_y,
             pb["k"], pb["biases"], dense["apos"], dense["rpos"], dense["neg"], dense["r_neg"],
             lr, adagrad, lam, dense["neg_rows"])
    return (tx, ty), (nx, ny), progress


def _same_iterates(got, want):
    """Equal where finite; non-finite in the same places (past an overflow, inf or nan depends
    on the order of operations, which the reference does not share)."""
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-8, atol=1e-10)


@given(problems(), st.sampled_from(["coordinate", "batch"]), st.booleans(), st.sampled_from([0.0, 0.1]))
def test_epochs_match_naive_algorithm(pb, update, adagrad, lam):
    with np.errstate(over="ignore", invalid="ignore"):
        (tx, ty), (nx, ny), progress = _one_run(pb, update, adagrad, 2, 0.01, lam)
    _same_iterates(tx, nx)
    _same_iterates(ty, ny)
    finite = np.isfinite(tx).all() and np.isfinite(ty).all()
    assert len(progress.history) == 2 or (not adagrad and not finite), progress.history


def _planted(m=60, n=50, rank=3, density=0.12, seed=0):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(m, rank)), rng.normal(size=(n, rank))
    S = A @ B.T + rng.normal(scale=0.5, size=(m, n))
    thr = np.quantile(S, 1 - density)
    return sp.csr_array((S > thr).astype(float))


@pytest.mark.parametrize("update", ["coordinate", "batch"])
@pytest.mark.parametrize("features", [False, True])
def test_both_update_modes_lower_the_objective(update, features):
    Y = _planted()
    kw = {}
    if features:
        rng = np.random.default_rng(1)
        kw = dict(user_features=sp.hstack([sp.identity(60), _random_csr(rng, 60, 4, 0.5)], format="csr"),
                  item_features=sp.hstack([sp.identity(50), _random_csr(rng, 50, 3, 0.5)], format="csr"))
    model = fbgd.fit(Y, 4, alpha0=10.0, n_iter=20, update=update, **kw)
    objs = [model.extras["initial_objective"]] + [h["objective"] for h in model.history]
    assert objs[-1] < 0.7 * objs[0]
    assert objs[-1] <= min(objs[:5])
    assert all(np.isfinite(objs))


def _skewed_problem():
    """Users described by their one-hot id plus one feature shared by every user (value 5):
    the shared feature's gradient sums over all users (section 4.1)."""
    Y = _planted(m=120, n=40, density=0.15, seed=3)
    Zx = sp.hstack([sp.identity(120), np.full((120, 1), 5.0)], format="csr")
    return Y, Zx


def test_plain_gd_diverges_or_stalls_on_skewed_features_where_adagrad_does_not():
    Y, Zx = _skewed_problem()
    kw = dict(user_features=Zx, alpha0=10.0, n_iter=25, update="batch", seed=0)
    ada = fbgd.fit(Y, 4, lr=0.05, optimizer="adagrad", **kw)
    j0 = ada.extras["initial_objective"]
    j_ada = ada.history[-1]["objective"]
    assert j_ada < 0.8 * j0
    outcomes = {}
    for lr in [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6]:
        try:
            gd = fbgd.fit(Y, 4, lr=lr, optimizer="gd", **kw)
        except FloatingPointError:
            outcomes[lr] = "diverged"
            continue
        objs = [h["objective"] for h in gd.history]
        if objs[-1] > j0:
            outcomes[lr] = "diverging"
        else:
            # stalls: stays far above Adagrad's objective after the same number of epochs
            outcomes[lr] = "stalled" if objs[-1] > 1.5 * j_ada else "fine"
    assert "fine" not in outcomes.values(), outcomes
    assert "diverged" in outcomes.values() or "diverging" in outcomes.values()


def test_adagrad_accumulator_zero_uses_epsilon():
    # A feature column that is zero everywhere has gradient 0: its parameters must stay put
    # (0 / ε, not 0 / 0 = NaN).
    Y = _planted(m=20, n=15, seed=5)
    Zx = sp.hstack([sp.identity(20), sp.csr_array((20, 1))], format="csr")
    model = fbgd.fit(Y, 2, user_features=Zx, alpha0=3.0, n_iter=3, update="batch", init_std=0.0)
    assert np.all(np.isfinite(model.user_factors))
    assert model.extras["V_user"][-1].tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- the model
def test_scores_include_the_biases_of_eq13():
    rng = np.random.default_rng(2)
    Y = _planted(m=30, n=20, seed=2)
    Zx = _random_csr(rng, 30, 5, 0.5, values=True)
    Zy = _random_csr(rng, 20, 4, 0.5, values=True)
    model = fbgd.fit(Y, 3, user_features=Zx, item_features=Zy, alpha0=4.0, n_iter=3)
    e = model.extras
    ref = (Zx.toarray() @ e["V_user"]) @ (Zy.toarray() @ e["V_item"]).T
    ref += e["w0"] + (Zx.toarray() @ e["w_user"])[:, None] + (Zy.toarray() @ e["w_item"])[None, :]
    np.testing.assert_allclose(model.scores(), ref, rtol=1e-10, atol=1e-12)
    assert model.user_factors.shape == (30, 5) and model.W is e["V_user"]
    assert e["w0"] != 0.0


def test_plain_mf_has_no_biases_and_matches_objective():
    Y = _planted(m=25, n=20, seed=4)
    model = fbgd.fit(Y, 3, alpha0=5.0, rho=0.5, n_iter=4, update="batch")
    assert model.user_factors.shape == (25, 3) and "w0" not in model.extras
    J = fbgd.objective(Y, model.user_factors, model.item_factors,
                       neg_weights=fbgd.negative_weights(Y, 5.0, 0.5))
    np.testing.assert_allclose(J, model.history[-1]["loss"], rtol=1e-10)


@pytest.mark.parametrize("update", ["coordinate", "batch"])
def test_deterministic_for_a_seed_and_across_thread_counts(update):
    Y = _planted(seed=6)
    a = fbgd.fit(Y, 4, alpha0=5.0, n_iter=4, update=update, seed=3, n_threads=1)
    b = fbgd.fit(Y, 4, alpha0=5.0, n_iter=4, update=update, seed=3, n_threads=2)
    c = fbgd.fit(Y, 4, alpha0=5.0, n_iter=4, update=update, seed=4, n_threads=2)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert not np.array_equal(a.user_factors, c.user_factors)


def test_callback_stops_early_and_history_is_complete():
    Y = _planted(seed=7)
    seen = []
    model = fbgd.fit(Y, 2, alpha0=5.0, n_iter=10, callback=lambda info: seen.append(info) or len(seen) == 3)
    assert len(model.history) == 3 and len(seen) == 3
    assert {"iter", "objective", "loss", "seconds"} <= set(model.history[0])


def test_pos_weight_values_uses_stored_values():
    Y = _planted(m=20, n=15, seed=8)
    Y2 = Y.copy()
    Y2.data = Y2.data * 4.0
    a = fbgd.fit(Y, 2, alpha0=3.0, n_iter=2, pos_weight=4.0, update="batch")
    b = fbgd.fit(Y2, 2, alpha0=3.0, n_iter=2, pos_weight="values", update="batch")
    np.testing.assert_allclose(a.user_factors, b.user_factors, rtol=1e-12)


def test_demo_configs_are_valid_fit_arguments():
    Y = _planted(m=30, n=25, seed=9)
    configs = fbgd.demo_configs()
    assert configs and all(isinstance(label, str) and legend for label, _, legend in configs)
    for _, kw, _ in configs:
        kw = dict(kw, n_iter=1)
        model = fbgd.fit(Y, **kw, seed=0, verbose=False)
        assert model.scores([0]).shape == (1, 25)


# --------------------------------------------------------------------------- α⁻_x
def _golden_problem():
    rng = np.random.default_rng(2024)
    Y = sp.csr_array((rng.random((30, 24)) < 0.2).astype(float))
    Zx = sp.csr_array(np.where(rng.random((30, 6)) < 0.4, rng.uniform(0.5, 2, (30, 6)), 0.0))
    Zy = sp.csr_array(np.where(rng.random((24, 5)) < 0.4, rng.uniform(0.5, 2, (24, 5)), 0.0))
    return Y, Zx, Zy


def _digest(model):
    import hashlib
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(model.user_factors).tobytes())
    h.update(np.ascontiguousarray(model.item_factors).tobytes())
    h.update(np.array([r["objective"] for r in model.history]).tobytes())
    return h.hexdigest()[:16]


# the defaults of that time, pinned (rho, lr and lam were re-chosen later; lam was called reg then)
_THEN = dict(rho=0.0, lr=0.05, lam=0.0)
_GOLDEN = {   # digests of fits made by the code before neg_row_weights existed (commit d6e0d7e)
    "mf_coordinate": (dict(_THEN, k=3, alpha0=4.0, rho=0.5, r_neg=-0.2, n_iter=4, update="coordinate"),
                      "37b140908b9fc929"),
    "mf_batch": (dict(_THEN, k=3, alpha0=4.0, n_iter=4, update="batch", lam=0.01), "1f540aff9880fed3"),
    "svdf_coordinate": (dict(_THEN, k=2, features=True, alpha0=3.0, n_iter=3, update="coordinate"),
                        "1e61c881cc81af9a"),
    "svdf_batch_gd": (dict(_THEN, k=2, features=True, alpha0=3.0, n_iter=3, update="batch",
                           optimizer="gd", lr=0.01), "aaf8e012c01eaba2"),
}


#: the same fits' digests on machines whose machine code rounds differently (tests/machine.py),
#: recorded there at a commit whose other pins (tests/test_digests.py) matched
_GOLDEN_BY_PLATFORM = {
    "znver3": {"mf_batch": "9e6d550b6d11ae7c", "mf_coordinate": "f22edd9f1b2f29fc",
                "svdf_batch_gd": "0304cb29a84df990",
                "svdf_coordinate": "9ac18d4f834a6b5f"},
}


@pytest.mark.parametrize("name", sorted(_GOLDEN))
def test_default_row_weights_keep_the_previous_results_bit_for_bit(name, monkeypatch):
    Y, Zx, Zy = _golden_problem()
    kw, digest = _GOLDEN[name]
    digest = _GOLDEN_BY_PLATFORM.get(platform(), {}).get(name, digest)
    kw = dict(kw)
    k = kw.pop("k")
    if kw.pop("features", False):
        kw.update(user_features=Zx, item_features=Zy)
    default = fbgd.fit(Y, k, seed=1, **kw)
    # the default kernels reassociate sums (the dot products of the loss, and the row-parallel
    # coordinate update of one-hot parameters); the serial in-order reference (reference_fbgd)
    # reproduces the pinned digest bit for bit, and the default agrees with it to rounding
    with reference.in_order(monkeypatch):
        ref = fbgd.fit(Y, k, seed=1, **kw)
    assert _digest(ref) == digest
    np.testing.assert_allclose(default.user_factors, ref.user_factors, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(default.item_factors, ref.item_factors, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose([h["objective"] for h in default.history],
                               [h["objective"] for h in ref.history], rtol=1e-12)
    ones = fbgd.fit(Y, k, seed=1, neg_row_weights=np.ones(Y.shape[0]), **kw)
    np.testing.assert_array_equal(ones.user_factors, default.user_factors)
    np.testing.assert_array_equal(ones.item_factors, default.item_factors)
    assert default.extras["neg_row_weights"] is None and default.params["neg_row_weights"] is None


def test_objective_default_row_weights_bit_for_bit():
    Y, _, _ = _golden_problem()
    P, Q = np.linspace(-1, 1, 60).reshape(30, 2), np.linspace(0, 1, 48).reshape(24, 2)
    J = fbgd.objective(Y, P, Q, neg_weights=np.linspace(0.1, 1, 24), r_neg=0.3)
    assert J.hex() == "0x1.d9250230f03f2p+8"      # the value before neg_row_weights existed


@pytest.mark.parametrize("update", ["coordinate", "batch"])
def test_fit_with_row_weights_reports_the_dense_objective(update):
    Y = _planted(m=12, n=9, density=0.25, seed=11)
    rng = np.random.default_rng(0)
    ax = rng.uniform(0.0, 3.0, size=12)
    ax[3] = 0.0                      # a row whose unlabeled entries do not count at all
    neg = fbgd.negative_weights(Y, 2.0, 0.5)
    model = fbgd.fit(Y, 2, alpha0=2.0, rho=0.5, neg_row_weights=ax, r_neg=0.1, n_iter=3,
                     update=update, seed=2)
    D = Y.toarray() > 0
    ref = naive.loss(D, model.user_factors, model.item_factors, np.ones(D.shape), np.ones(D.shape),
                     neg, 0.1, ax)
    np.testing.assert_allclose(model.history[-1]["loss"], ref, rtol=1e-10)
    plain = fbgd.fit(Y, 2, alpha0=2.0, rho=0.5, r_neg=0.1, n_iter=3, update=update, seed=2)
    assert not np.allclose(plain.user_factors, model.user_factors)
    np.testing.assert_array_equal(model.extras["neg_row_weights"], ax)


def test_row_weights_equal_folding_them_into_a_uniform_item_weight():
    # α⁻_x = c for every row is the same loss as α⁻_y scaled by c.
    Y = _planted(m=15, n=10, density=0.2, seed=12)
    rng = np.random.default_rng(1)
    P, Q = rng.normal(size=(15, 3)), rng.normal(size=(10, 3))
    neg = rng.uniform(0.1, 1.0, size=10)
    a = fbgd.objective(Y, P, Q, neg_weights=neg, neg_row_weights=np.full(15, 2.5), r_neg=-0.3)
    b = fbgd.objective(Y, P, Q, neg_weights=2.5 * neg, r_neg=-0.3)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_row_weight_errors():
    Y = _planted(m=10, n=8, seed=10)
    with pytest.raises(ValueError, match=r"neg_row_weights has shape 8, expected 10"):
        fbgd.fit(Y, 2, neg_row_weights=np.ones(8))
    with pytest.raises(ValueError, match=r"neg_row_weights must be non-negative, got minimum -1"):
        fbgd.fit(Y, 2, neg_row_weights=-np.ones(10))
    bad = np.ones(10)
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"neg_row_weights has 1 non-finite"):
        fbgd.objective(Y, np.ones((10, 2)), np.ones((8, 2)), neg_row_weights=bad)


# --------------------------------------------------------------------------- boundary
def test_bad_inputs_get_clear_errors():
    Y = _planted(m=10, n=8, seed=10)
    with pytest.raises(ValueError, match=r"alpha0 must be >= 0.0, got -1"):
        fbgd.fit(Y, 2, alpha0=-1.0)
    with pytest.raises(ValueError, match=r"alpha0 must be >= 0.0, got -1"):
        fbgd.negative_weights(Y, -1.0, 0.0)
    with pytest.raises(ValueError, match=r"rho must be >= 0.0, got -0.5"):
        fbgd.negative_weights(Y, 1.0, -0.5)
    with pytest.raises(ValueError, match=r"user_features has 9 rows, expected 10"):
        fbgd.fit(Y, 2, user_features=sp.csr_array(np.ones((9, 3))))
    with pytest.raises(ValueError, match=r"item_features has 7 rows, expected 8"):
        fbgd.fit(Y, 2, item_features=np.ones((7, 3)))
    bad = Y.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match=r"Y has 1 non-finite \(NaN or inf\) stored values"):
        fbgd.fit(bad, 2)
    Z = np.ones((10, 2))
    Z[3, 1] = np.inf
    with pytest.raises(ValueError, match=r"user_features has 1 non-finite"):
        fbgd.fit(Y, 2, user_features=Z)
    with pytest.raises(TypeError, match=r"Y must be a scipy.sparse matrix or array, got ndarray"):
        fbgd.fit(Y.toarray(), 2)
    with pytest.raises(ValueError, match=r"unknown update 'sgd'; expected one of 'coordinate', 'batch'"):
        fbgd.fit(Y, 2, update="sgd")
    with pytest.raises(ValueError, match=r"unknown optimizer 'adam'"):
        fbgd.fit(Y, 2, optimizer="adam")
    with pytest.raises(ValueError, match=r"lr must be > 0.0, got 0"):
        fbgd.fit(Y, 2, lr=0.0)
    with pytest.raises(ValueError, match=r"lam must be at most 1e\+20, got 1e\+200"):
        fbgd.fit(Y, 2, lam=1e200)      # was a run that never moved, with no warning
    with pytest.raises(ValueError, match=r"pos_weight must be a real number or 'values'"):
        fbgd.fit(Y, 2, pos_weight="ratings")
    with pytest.raises(ValueError, match=r"pos_weight must be >= 0.0, got -2"):
        fbgd.fit(Y, 2, pos_weight=-2.0)
    with pytest.raises(ValueError, match=r"neg_weights has shape 3, expected 8"):
        fbgd.fit(Y, 2, neg_weights=np.ones(3))
    with pytest.raises(ValueError, match=r"neg_weights must be non-negative, got minimum -1"):
        fbgd.fit(Y, 2, neg_weights=-np.ones(8))
    with pytest.raises(TypeError, match=r"biases must be True, False or None, got 'yes'"):
        fbgd.fit(Y, 2, biases="yes")
    with pytest.raises(ValueError, match=r"n_iter must be >= 1, got 0"):
        fbgd.fit(Y, 2, n_iter=0)
    with pytest.raises(ValueError, match=r"k must be >= 1, got 0"):
        fbgd.fit(Y, 0)
    with pytest.raises(ValueError, match=r"P has 2 columns and Q has 3; expected the same embedding size"):
        fbgd.objective(Y, np.ones((10, 2)), np.ones((8, 3)))
    with pytest.raises(ValueError, match=r"Q has shape 7×2, expected 8×\*"):
        fbgd.objective(Y, np.ones((10, 2)), np.ones((7, 2)))
    with pytest.raises(ValueError, match=r"Y has 1 negative stored values"):
        neg = sp.csr_array(([-1.0], ([0], [0])), shape=(10, 8))
        fbgd.objective(neg, np.ones((10, 2)), np.ones((8, 2)))


def test_plain_gd_divergence_raises_instead_of_returning_nan():
    Y, Zx = _skewed_problem()
    with pytest.raises(FloatingPointError, match=r"fbgd: objective became (nan|inf)"):
        fbgd.fit(Y, 4, user_features=Zx, alpha0=10.0, n_iter=40, update="batch", optimizer="gd", lr=1.0)


def test_a_diverging_plain_gd_run_diverges_like_the_reference():
    """Plain steps on large features overflow; the fast epochs and the reference agree to the end."""
    rng = np.random.default_rng(0)
    pb = dict(Y=sp.csr_array(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])),
              Zx=sp.csr_array(rng.uniform(30, 60, size=(2, 3))),
              Zy=sp.csr_array(rng.uniform(30, 60, size=(3, 4))), k=2, biases=False,
              neg=np.array([1.5, 1.0, 0.5]), pos_weight=1.0, r_pos=1.0, r_neg=0.0,
              neg_rows=None, rng=np.random.default_rng(1))
    with np.errstate(over="ignore", invalid="ignore"):
        (tx, ty), (nx, ny), progress = _one_run(pb, "coordinate", False, 6, 0.01, 0.0)
    assert len(progress.history) < 6                         # it did diverge
    assert not (np.isfinite(tx).all() and np.isfinite(ty).all())
    _same_iterates(tx, nx)
    _same_iterates(ty, ny)


# --------------------------------------------------------------------------- one vocabulary
def test_signatures_run_data_model_penalties_solver_runtime():
    import inspect

    order = ["Y", "k", "user_features", "item_features", "alpha0", "rho", "neg_weights",
             "neg_row_weights", "pos_weight", "r_pos", "r_neg", "biases", "lam", "nu", "lr", "n_iter",
             "update", "optimizer", "init", "init_std", "seed", "n_threads", "callback", "verbose"]
    assert list(inspect.signature(fbgd.fit).parameters) == order
    tensor = ["Y", "k", "pairs", "n_x", "n_h", "alpha0", "rho", "neg_weights", "neg_row_weights",
              "pos_weight", "r_pos", "r_neg", "tensor", "lam", "lr", "n_iter", "optimizer",
              "init_std", "seed", "n_threads", "callback", "verbose"]
    assert list(inspect.signature(fbgd.fit_tensor).parameters) == tensor
    params = inspect.signature(fbgd.objective).parameters
    assert list(params) == ["Y", "P", "Q", "neg_weights", "neg_row_weights", "pos_weight", "r_pos",
                            "r_neg", "lam", "nu"]
    assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in list(params)[3:])


# --------------------------------------------------------------------------- warm start
def _features_problem():
    Y = _planted(m=30, n=24, seed=14)
    rng = np.random.default_rng(4)
    return Y, _random_csr(rng, 30, 5, 0.5, values=True), _random_csr(rng, 24, 4, 0.5, values=True)


@pytest.mark.parametrize("features", [False, True])
def test_plain_batch_steps_continue_a_fit_exactly(features):
    """Plain gradient steps carry no state: 2 epochs, then 3 from their result, are the 5 epochs
    of one fit, bit for bit (embeddings for plain MF, fbgd.parameters with features)."""
    Y, Zx, Zy = _features_problem()
    kw = dict(alpha0=4.0, update="batch", optimizer="gd", lr=5e-4, lam=0.05, seed=2)
    if features:
        kw.update(user_features=Zx, item_features=Zy)
    five = fbgd.fit(Y, 3, n_iter=5, **kw)
    two = fbgd.fit(Y, 3, n_iter=2, **kw)
    start = fbgd.parameters(two) if features else (two.user_factors, two.item_factors)
    more = fbgd.fit(Y, 3, n_iter=3, init=start, **kw)
    np.testing.assert_array_equal(more.user_factors, five.user_factors)
    np.testing.assert_array_equal(more.item_factors, five.item_factors)
    for key in ("V_user", "V_item") + (("w_user", "w_item", "w0") if features else ()):
        np.testing.assert_array_equal(more.extras[key], five.extras[key])
    assert [h["objective"] for h in two.history + more.history] == [h["objective"] for h in five.history]
    assert more.extras["initial_objective"] == two.history[-1]["objective"]


def test_coordinate_steps_continue_a_fit_to_rounding():
    """The coordinate epochs hand the predictions of the positives from one side's kernel to the
    other's, where a new fit computes them afresh: the same iterate to rounding."""
    Y = _planted(m=30, n=24, seed=15)
    kw = dict(alpha0=4.0, update="coordinate", optimizer="gd", lr=0.002, seed=2)
    five = fbgd.fit(Y, 3, n_iter=5, **kw)
    two = fbgd.fit(Y, 3, n_iter=2, **kw)
    more = fbgd.fit(Y, 3, n_iter=3, init=(two.user_factors, two.item_factors), **kw)
    np.testing.assert_allclose(more.user_factors, five.user_factors, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(more.item_factors, five.item_factors, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("update", ["coordinate", "batch"])
def test_adagrad_continues_from_the_point_but_restarts_its_steps(update):
    """A warm start carries the parameters, not Adagrad's accumulators: the continued fit starts
    at the previous fit's objective and lowers it, but its first steps are as large as a new
    fit's, so 2 + 3 epochs are not the 5 epochs of one fit."""
    Y, Zx, _ = _features_problem()
    kw = dict(alpha0=4.0, update=update, seed=2, user_features=Zx)
    five = fbgd.fit(Y, 3, n_iter=5, **kw)
    two = fbgd.fit(Y, 3, n_iter=2, **kw)
    more = fbgd.fit(Y, 3, n_iter=3, init=fbgd.parameters(two), **kw)
    np.testing.assert_allclose(more.extras["initial_objective"], two.history[-1]["objective"],
                               rtol=1e-12)
    assert more.history[-1]["objective"] < two.history[-1]["objective"]
    assert not np.allclose(more.user_factors, five.user_factors)


def test_a_warm_start_draws_nothing():
    Y = _planted(m=20, n=15, seed=16)
    model = fbgd.fit(Y, 2, n_iter=2)
    start = (model.user_factors, model.item_factors)
    a = fbgd.fit(Y, 2, n_iter=2, init=start, seed=1)
    b = fbgd.fit(Y, 2, n_iter=2, init=start, seed=7, init_std=5.0)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(start[0], model.user_factors)      # init is not written to


def test_parameters_rebuild_the_embeddings():
    """P = [Z^X, 1] Θ^X and Q = [Z^Y, 1] Θ^Y (eq. 13): what fbgd.parameters returns is the model."""
    Y, Zx, Zy = _features_problem()
    model = fbgd.fit(Y, 3, user_features=Zx, item_features=Zy, n_iter=3)
    tx, ty = fbgd.parameters(model)
    assert tx.shape == (6, 5) and ty.shape == (5, 5)
    ones = np.ones((30, 1)), np.ones((24, 1))
    np.testing.assert_allclose(np.hstack([Zx.toarray(), ones[0]]) @ tx, model.user_factors, rtol=1e-12)
    np.testing.assert_allclose(np.hstack([Zy.toarray(), ones[1]]) @ ty, model.item_factors, rtol=1e-12)
    plain = fbgd.fit(Y, 3, n_iter=2)
    P0, Q0 = fbgd.parameters(plain)
    np.testing.assert_array_equal(P0, plain.user_factors)
    assert P0 is not plain.extras["V_user"]
    with pytest.raises(TypeError, match="model must be a Factorization returned by fastpu.fbgd.fit, "
                                        "got a model of fastpu.fbgd.fit_tensor"):
        Y3, pairs = fbgd.triples_to_pairs([0, 1], [0, 1], [1, 0])
        fbgd.parameters(fbgd.fit_tensor(Y3, 2, pairs=pairs, n_iter=1))
    with pytest.raises(TypeError, match="got a model of method 'ocmf'"):
        import fastpu as fp
        fbgd.parameters(fp.ocmf.fit(Y, 2, n_iter=1))
    with pytest.raises(TypeError, match="got ndarray"):
        fbgd.parameters(np.ones((3, 3)))
    import dataclasses
    edited = dataclasses.replace(model, extras={k: v for k, v in model.extras.items() if k != "w0"})
    with pytest.raises(ValueError, match=r"model.extras lacks 'w0'"):
        fbgd.parameters(edited)


def test_bad_warm_starts_are_refused_naming_init():
    Y, Zx, _ = _features_problem()
    P, Q = np.ones((30, 3)), np.ones((24, 3))
    with pytest.raises(TypeError, match=r"init must be a tuple \(P0, Q0\) .*got list"):
        fbgd.fit(Y, 3, init=[P, Q])
    with pytest.raises(TypeError, match=r"init must be a tuple"):
        fbgd.fit(Y, 3, init=(P, Q, Q))
    with pytest.raises(ValueError, match=r"init\[0\] \(P0\) has shape 29×3, expected 30×3 "
                                         r"\(one row per user, k columns\)"):
        fbgd.fit(Y, 3, init=(P[:29], Q))
    with pytest.raises(ValueError, match=r"init\[1\] \(Q0\) has shape 24×2, expected 24×3"):
        fbgd.fit(Y, 3, init=(P, Q[:, :2]))
    bad = Q.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"init\[1\] \(Q0\) has 1 non-finite"):
        fbgd.fit(Y, 3, init=(P, bad))
    # with biases: the parameter matrices, not the embeddings
    model = fbgd.fit(Y, 3, user_features=Zx, n_iter=1)
    with pytest.raises(ValueError, match=r"init\[0\] \(Θ\^X\) has shape 30×5, expected 6×5 \(one row "
                                         r"per user feature plus the constant feature's row, k \+ 2 "
                                         r"columns; fastpu.fbgd.parameters\(model\)"):
        fbgd.fit(Y, 3, user_features=Zx, init=(model.user_factors, model.item_factors))
    tx, ty = fbgd.parameters(model)
    with pytest.raises(ValueError, match=r"init\[1\] \(Θ\^Y\) has shape 24×5, expected 25×5 \(one row "
                                         r"per item plus the constant"):
        fbgd.fit(Y, 3, user_features=Zx, init=(tx, ty[:-1]))
    tx[-1, -1] = 2.0                                   # p_x,f+2 must be 1
    with pytest.raises(ValueError, match=r"init\[0\] \(Θ\^X\) has 1 entries that the bias layout "
                                         r"of eq. 13 fixes set otherwise; expected its last row "
                                         r"\[0, …, 0, w0, 1\]"):
        fbgd.fit(Y, 3, user_features=Zx, init=(tx, ty))
    tx, ty = fbgd.parameters(model)
    ty[0, 3] = 0.5                                     # q_y,f+1 = 1 comes from the constant row
    with pytest.raises(ValueError, match=r"init\[1\] \(Θ\^Y\) has 1 entries .* 0 in its column k \+ 1"):
        fbgd.fit(Y, 3, user_features=Zx, init=(tx, ty))
    # features without biases: Θ is the feature embeddings
    with pytest.raises(ValueError, match=r"init\[0\] \(Θ\^X\) has shape 30×3, expected 5×3 \(one row "
                                         r"per user feature, k columns\)"):
        fbgd.fit(Y, 3, user_features=Zx, biases=False, init=(P, Q))
