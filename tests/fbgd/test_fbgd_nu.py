"""fBGD's frequency-scaled regularisation (``nu=``): λ_x = lam (|P_x| + α⁻_x Σ_y α⁻_y)^ν per
user row, λ_y = lam (|P_y| + α⁻_y Σ_x α⁻_x)^ν per item row.

The objective against the dense reference, every update rule against the dense algorithm
with per-row penalties, the batch step's gradient against finite differences, the fit's
recorded objectives against the dense objective, fold-in against its optimality condition,
ν = 0 as one lam bit for bit, the model file, and the errors.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import fastpu as fp
from fastpu import fbgd
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu.fbgd import _problem as fbgd_problem
from fastpu.fbgd._check import free_masks

import naive_fbgd as naive
from test_fbgd import _build, _one_run, _planted, _same_iterates, problems


def _dense_weights(pb):
    D = pb["Y"].toarray() > 0
    Y = sp.csr_array(pb["Y"])
    A = sp.csr_array((fbgd_problem.per_positive(pb["pos_weight"], Y), Y.indices, Y.indptr),
                     shape=Y.shape).toarray()
    R = sp.csr_array((fbgd_problem.per_positive(pb["r_pos"], Y), Y.indices, Y.indptr),
                     shape=Y.shape).toarray()
    return D, A, R


# --------------------------------------------------------------------------- the objective
@given(problems(features=False), st.sampled_from([0.0, 0.5, 1.0, 2.0]),
       st.sampled_from([0.0, 0.01, 0.7]))
def test_objective_with_nu_equals_the_dense_reference(pb, nu, lam):
    Y = pb["Y"]
    m, n = Y.shape
    rng = pb["rng"]
    P, Q = rng.normal(size=(m, pb["k"])), rng.normal(size=(n, pb["k"]))
    J = fbgd.objective(Y, P, Q, neg_weights=pb["neg"], neg_row_weights=pb["neg_rows"],
                       pos_weight=pb["pos_weight"], r_pos=pb["r_pos"], r_neg=pb["r_neg"],
                       lam=lam, nu=nu)
    D, A, R = _dense_weights(pb)
    ref = naive.objective(D, P, Q, A, R, np.asarray(pb["neg"], float), pb["r_neg"],
                          pb["neg_rows"], lam=lam, nu=nu)
    np.testing.assert_allclose(J, ref, rtol=1e-10, atol=1e-10)


@given(problems(features=False), st.sampled_from([0.5, 1.0, 3.0]))
def test_row_penalties_are_the_counts_of_loss_2(pb, nu):
    """The fit's λ of every Θ row (with biases: the constant row's lam last) from the dense
    definition: positives plus Σ_y α⁻_x α⁻_y over every column."""
    prob, _, _, dense = _build(pb)
    Y = sp.csr_array(pb["Y"])
    got = fbgd_problem.row_penalties(0.3, nu, np.diff(Y.indptr),
                                     np.bincount(Y.indices, minlength=Y.shape[1]), prob.arow,
                                     prob.neg, pb["biases"])
    want = naive.frequency_penalties(dense["D"], dense["neg"], pb["neg_rows"], 0.3, nu,
                                     pb["biases"])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)


def test_nu_zero_is_the_compact_form():
    Y = _planted(m=12, n=9, seed=1)
    a, b = fbgd_problem.row_penalties(0.25, 0.0, np.diff(Y.indptr), np.ones(9), np.ones(12),
                                      np.ones(9), True)
    assert a.tolist() == [0.25] and b.tolist() == [0.25]


# --------------------------------------------------------------------------- the updates
def _random_penalties(prob, rng):
    return (rng.uniform(0.0, 0.8, prob.free_x.shape[0]), rng.uniform(0.0, 0.8, prob.free_y.shape[0]))


@given(problems(), st.sampled_from(["coordinate", "batch"]), st.booleans())
def test_epochs_with_a_penalty_per_row_match_the_dense_algorithm(pb, update, adagrad):
    """Every update rule — the row-parallel coordinate kernel (plain ids), the serial one
    (features, the global bias), the batch step; Adagrad and plain steps — takes λ_j of each
    parameter row (drawn at random here, features included: the kernels do not care where λ_j
    comes from)."""
    prob, tx, ty, dense = _build(pb)
    lam = _random_penalties(prob, pb["rng"])
    nx, ny = tx.copy(), ty.copy()
    progress = Progress("test")
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            fbgd_problem._train(prob, tx, ty, lr=0.01, n_iter=2, update=update, adagrad=adagrad,
                                lam=lam, progress=progress)
            n_iter = 2
        except FloatingPointError:          # plain steps may diverge: as many epochs as ran
            n_iter = len(progress.history) + 1
        ax, ay = np.zeros_like(nx), np.zeros_like(ny)
        step = naive.coordinate_epoch if update == "coordinate" else naive.batch_epoch
        for _ in range(n_iter):
            step(dense["D"], dense["Zx"], dense["Zy"], nx, ny, ax, ay, prob.free_x, prob.free_y,
                 pb["k"], pb["biases"], dense["apos"], dense["rpos"], dense["neg"],
                 dense["r_neg"], 0.01, adagrad, neg_rows=dense["neg_rows"], reg_rows=lam)
    _same_iterates(tx, nx)
    _same_iterates(ty, ny)
    tame = all(np.isfinite(T).all() and np.abs(T).max(initial=0.0) < 1e50 for T in (tx, ty))
    if progress.history and tame:       # (a diverged plain-step run overflows the dense loss)
        want = naive.full_loss(dense["D"], dense["Zx"], dense["Zy"], nx, ny, pb["biases"],
                               dense["apos"], dense["rpos"], dense["neg"], dense["r_neg"],
                               free_x=prob.free_x, free_y=prob.free_y,
                               neg_rows=dense["neg_rows"], reg_rows=lam)
        assert progress.history[-1]["objective"] == pytest.approx(want, rel=1e-8, abs=1e-8)


def test_a_scalar_penalty_and_its_compact_form_are_the_same_run():
    """_train with one number and with the pair of single values [lam]: the same arithmetic."""
    Y = _planted(m=20, n=15, seed=2)
    pb = dict(Y=Y, Zx=sp.identity(20, format="csr"), Zy=sp.identity(15, format="csr"), k=3,
              biases=False, neg=np.full(15, 0.4), pos_weight=1.0, r_pos=1.0, r_neg=0.0,
              neg_rows=None, rng=np.random.default_rng(0))
    for update in ("coordinate", "batch"):
        (a, _), _, _ = _one_run(dict(pb, rng=np.random.default_rng(0)), update, True, 3, 0.05, 0.1)
        prob, tx, ty, _ = _build(dict(pb, rng=np.random.default_rng(0)))
        fbgd_problem._train(prob, tx, ty, lr=0.05, n_iter=3, update=update, adagrad=True,
                            lam=(np.array([0.1]), np.array([0.1])), progress=Progress("test"))
        np.testing.assert_array_equal(a, tx)


@given(problems(), st.sampled_from([0.5, 1.0]))
def test_the_batch_step_follows_the_gradient_of_the_dense_objective(pb, nu):
    """One plain batch step on the user side moves Θ^X by −lr ∇ with ∇ the gradient of the
    dense objective with the frequency-scaled penalty (central differences)."""
    if pb["Zx"].shape != (pb["Y"].shape[0],) * 2:
        pb = dict(pb, Zx=sp.identity(pb["Y"].shape[0], format="csr"),
                  Zy=sp.identity(pb["Y"].shape[1], format="csr"))
    prob, tx, ty, dense = _build(pb)
    lam = fbgd_problem.row_penalties(0.2, nu, np.diff(prob.Y.indptr),
                                     np.bincount(prob.Y.indices, minlength=prob.n), prob.arow,
                                     prob.neg, pb["biases"])
    P, Q = prob.embed(prob.Zx, tx), prob.embed(prob.Zy, ty)
    Sq, sq = prob.gram(prob.neg, Q)
    lr = 1e-3
    moved = tx.copy()
    fbgd_problem._update_side(prob, prob.x_side, prob.ZxT, prob.free_x, moved,
                              np.zeros_like(tx), P, Q, Sq, sq, prob.arow, np.empty_like(P),
                              np.empty_like(tx), np.empty(prob.Y.nnz), update="batch", lr=lr,
                              lam=lam[0], adagrad=False)
    grad = (tx - moved) / lr
    want = naive.frequency_penalties(dense["D"], dense["neg"], pb["neg_rows"], 0.2, nu,
                                     pb["biases"])

    def f(theta_x):
        return naive.full_loss(dense["D"], dense["Zx"], dense["Zy"], theta_x, ty, pb["biases"],
                               dense["apos"], dense["rpos"], dense["neg"], dense["r_neg"],
                               free_x=prob.free_x, free_y=prob.free_y,
                               neg_rows=dense["neg_rows"], reg_rows=want)

    h = 1e-5
    with limit_threads(1):
        for j, d in zip(*np.nonzero(prob.free_x)):
            up, down = tx.copy(), tx.copy()
            up[j, d] += h
            down[j, d] -= h
            fd = (f(up) - f(down)) / (2 * h)
            assert abs(fd - grad[j, d]) <= 1e-5 * max(1.0, abs(fd)), (j, d, fd, grad[j, d])
    assert np.all(moved[~prob.free_x] == tx[~prob.free_x])


# --------------------------------------------------------------------------- fits
def _data(seed=0, m=40, n=30):
    return sp.csr_array(fp.datasets.synthetic(m, n, rank=3, density=0.15, seed=seed).Y)


@pytest.mark.parametrize("kw", [
    dict(update="coordinate"), dict(update="batch"), dict(update="coordinate", biases=True),
    dict(update="batch", biases=True, rho=0.5), dict(update="batch", optimizer="gd", lr=1e-3),
    dict(update="coordinate", neg_row_weights="rows", alpha0=12.0),
])
def test_every_recorded_objective_is_the_dense_objective_with_nu(kw):
    """Each epoch's ``objective`` (and the start's) equals the dense objective, with the
    frequency-scaled penalty, at the iterate the callback sees."""
    Y = _data(1, 14, 10)
    kw = dict(kw)
    if kw.get("neg_row_weights") == "rows":
        kw["neg_row_weights"] = np.random.default_rng(3).uniform(0.2, 2.0, Y.shape[0])
    iterates = []
    model = fbgd.fit(Y, 3, n_iter=4, lam=0.05, nu=1.0, init_std=0.3,
                     callback=lambda info: iterates.append(fbgd.parameters(info["model"]())), **kw)
    assert model.params["nu"] == 1.0 and len(iterates) == 4
    D = Y.toarray() > 0
    neg = model.extras["neg_weights"]
    biases = bool(model.params["biases"])
    reg_rows = naive.frequency_penalties(D, neg, kw.get("neg_row_weights"), 0.05, 1.0, biases)
    g = 3 + 2 * biases
    free_x, free_y = free_masks(Y.shape[0] + biases, Y.shape[1] + biases, 3, biases)
    ones = np.ones_like(D, dtype=float)
    for info, (tx, ty) in zip(model.history, iterates):
        want = naive.full_loss(D, np.eye(Y.shape[0]), np.eye(Y.shape[1]), tx, ty, biases, ones,
                               ones, neg, 0.0, free_x=free_x, free_y=free_y,
                               neg_rows=kw.get("neg_row_weights"), reg_rows=reg_rows)
        assert info["objective"] == pytest.approx(want, rel=1e-9)
        assert tx.shape[1] == g
    if not biases:
        assert model.history[-1]["objective"] == pytest.approx(fbgd.objective(
            Y, model.user_factors, model.item_factors, neg_weights=neg,
            neg_row_weights=kw.get("neg_row_weights"), lam=0.05, nu=1.0), rel=1e-10)


@pytest.mark.parametrize("update", ["coordinate", "batch"])
def test_small_plain_steps_never_raise_the_objective_with_nu(update):
    """fBGD guarantees a non-increasing objective only for small enough plain gradient steps
    (each step descends a smooth function of the side it updates); Adagrad's steps do not
    (with lr=0.3 its objective rises on these data with ν = 0 and ν = 1 alike)."""
    Y = _data(2)
    model = fbgd.fit(Y, 4, n_iter=15, optimizer="gd", lr=3e-3, lam=0.01, nu=1.0, update=update,
                     init_std=0.3)
    obj = np.array([model.extras["initial_objective"]] + [h["objective"] for h in model.history])
    assert np.all(np.diff(obj) <= 1e-12 * obj[0]), obj
    assert obj[-1] < 0.9 * obj[0]
    with pytest.warns(fp.ConvergenceWarning, match="the objective grew"):
        ada = fbgd.fit(Y, 4, n_iter=15, lr=0.3, lam=0.01, nu=1.0, update=update)
    rises = np.diff([ada.extras["initial_objective"]] + [h["objective"] for h in ada.history])
    assert rises.max() > 0.0               # the statement above is true of these data


@pytest.mark.parametrize("kw", [dict(), dict(update="batch"), dict(biases=True),
                                dict(optimizer="gd", lr=1e-3)])
def test_nu_zero_is_the_unscaled_fit_bit_for_bit(kw):
    Y = _data(3)
    a = fbgd.fit(Y, 3, n_iter=3, **kw)
    b = fbgd.fit(Y, 3, n_iter=3, nu=0.0, **kw)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert [h["objective"] for h in a.history] == [h["objective"] for h in b.history]
    c = fbgd.fit(Y, 3, n_iter=3, nu=1.0, lam=0.1 / 30, **kw)
    assert not np.allclose(a.user_factors, c.user_factors)


def test_nu_shrinks_busy_rows_more_than_quiet_ones():
    """With ν = 1 and rho = 0 a user's penalty grows with its positives: the busiest users'
    embeddings shrink relative to a fit with one penalty of the same mean."""
    Y = _data(4, 80, 60)
    counts = np.diff(Y.indptr)
    c = counts + 60.0 * 0.1           # alpha0 = 6: c_x = |P_x| + 6
    kw = dict(alpha0=6.0, rho=0.0, n_iter=20, lr=0.1, update="batch")
    model = fbgd.fit(Y, 4, lam=0.02, nu=1.0, **kw)
    flat = fbgd.fit(Y, 4, lam=0.02 * c.mean(), **kw)
    busy, quiet = counts >= np.quantile(counts, 0.8), counts <= np.quantile(counts, 0.2)
    ratio = np.linalg.norm(model.user_factors, axis=1) / np.linalg.norm(flat.user_factors, axis=1)
    assert ratio[busy].mean() < ratio[quiet].mean()


# --------------------------------------------------------------------------- fold-in
@pytest.mark.parametrize("biases", [False, True])
@pytest.mark.parametrize("nu", [0.5, 1.0])
def test_fold_in_with_nu_solves_the_row_with_its_own_count(biases, nu):
    """A folded-in user's objective (loss (2) of its row + λ (‖v‖² + w²)) has zero gradient at
    the returned row, with λ = lam (|P_x| + Σ_y α⁻_y)^ν from its own positives."""
    Y = _data(5)
    model = fbgd.fit(Y[:30], 3, alpha0=4.0, rho=0.5, lam=0.05, nu=nu, biases=biases, n_iter=4)
    rows = sp.csr_array(Y[30:35])
    Pn = fp.fold_in(model, rows).user_factors
    Q = np.asarray(model.item_factors, dtype=np.float64)
    neg = model.extras["neg_weights"]
    f = 3
    for r in range(rows.shape[0]):
        cols = rows.indices[rows.indptr[r]:rows.indptr[r + 1]]
        pos = np.zeros(Q.shape[0], dtype=bool)
        pos[cols] = True
        lam_r = 0.05 * (cols.size + neg.sum()) ** nu
        w0 = model.extras["w0"] if biases else 0.0

        def f_row(u, pos=pos, lam_r=lam_r, w0=w0):
            p = np.concatenate([u, [1.0]]) if biases else u       # p = [v, w + w0, 1]
            s = Q @ p
            own = u.copy()
            if biases:
                own[f] -= w0                                       # the user's own bias w
            return (np.sum(np.where(pos, (1.0 - s) ** 2, neg * s ** 2)) + lam_r * own @ own)

        u = Pn[r, :f + 1] if biases else Pn[r]
        eps = 1e-6
        grad = np.array([(f_row(u + eps * e) - f_row(u - eps * e)) / (2 * eps)
                         for e in np.eye(u.size)])
        assert np.abs(grad).max() <= 1e-6 * max(1.0, np.abs(Q).sum()), grad
        if biases:
            assert Pn[r, f + 1] == 1.0


def test_the_model_file_carries_nu_and_fold_in_uses_it(tmp_path):
    Y = _data(6)
    model = fbgd.fit(Y[:30], 3, alpha0=4.0, lam=0.05, nu=1.0, n_iter=3)
    model.save(tmp_path / "m.npz")
    back = fp.load_model(tmp_path / "m.npz")
    assert back.params["nu"] == 1.0
    rows = sp.csr_array(Y[30:34])
    a, b = fp.fold_in(model, rows), fp.fold_in(back, rows)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    # without nu in its params (a file of an earlier release) the model folds in with one lam:
    # the count enters the penalty
    import dataclasses
    flat = dataclasses.replace(model, params={k: v for k, v in model.params.items() if k != "nu"})
    assert not np.allclose(fp.fold_in(flat, rows).user_factors, a.user_factors)
    edited = dataclasses.replace(model, params=dict(model.params, nu=-1.0))
    with pytest.raises(ValueError, match=r"model.params\['nu'\]: nu must be >= 0"):
        edited.save(tmp_path / "bad.npz")


def test_a_partial_fit_with_nu_gives_the_row_its_own_count():
    Y = _data(7)
    model = fbgd.fit(Y, 3, alpha0=4.0, lam=0.05, nu=1.0, n_iter=3)
    items = [list(Y.indices[Y.indptr[2]:Y.indptr[3]][:3])]
    part = fp.partial_fit_users(model, items, user_ids=[2])
    one = fp.fold_in(model, items)
    np.testing.assert_allclose(part.user_factors[2], one.user_factors[0], rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kw, exc, msg", [
    (dict(nu=-1.0), ValueError, r"nu must be >= 0.0, got -1"),
    (dict(nu=11.0), ValueError, r"nu must be at most 10 \(row x's penalty is lam·c_x\^nu\), got 11"),
    (dict(nu="1"), TypeError, r"nu must be a real number"),
    (dict(nu=float("nan")), ValueError, r"nu must be finite, got nan"),
    (dict(nu=True), TypeError, r"nu must be a real number, got True"),
    (dict(nu=1.0, user_features="X"), ValueError,
     r"nu=1 scales each user's \(item's\) penalty .* with user_features the rows of Θ\^X are the "
     r"features' coefficients"),
    (dict(nu=0.5, item_features="Z"), ValueError, r"with item_features the rows of Θ\^Y"),
])
def test_bad_nu_is_refused_by_name(kw, exc, msg):
    Y = _data()
    kw = {k: {"X": np.ones((40, 2)), "Z": sp.csr_array(np.ones((30, 2)))}.get(v, v)
          if isinstance(v, str) and v in "XZ" else v for k, v in kw.items()}
    with pytest.raises(exc, match=msg):
        fbgd.fit(Y, 2, n_iter=1, **kw)


def test_objective_and_overflow_errors_name_nu():
    Y = _data()
    P, Q = np.ones((40, 2)), np.ones((30, 2))
    with pytest.raises(ValueError, match=r"nu must be at most 10"):
        fbgd.objective(Y, P, Q, lam=1.0, nu=12.0)
    with pytest.raises(ValueError, match=r"nu must be >= 0.0, got -0.5"):
        fbgd.objective(Y, P, Q, nu=-0.5)
    with pytest.raises(ValueError, match=r"nu=10 overflows a row's penalty lam·c\^nu"):
        fbgd.fit(Y, 2, n_iter=1, lam=1e10, nu=10.0, neg_weights=np.full(30, 1e30))
    # nu = 0 with features stays allowed
    fbgd.fit(Y, 2, n_iter=1, nu=0.0, user_features=np.ones((40, 2)))


def test_distributed_fit_with_nu_and_features_is_refused(dask_client):
    with pytest.raises(ValueError, match=r"with user_features the rows of Θ\^X"):
        fp.distributed.fit(_data(), 2, method="fbgd", client=dask_client, n_iter=1, nu=1.0,
                           user_features=np.ones((40, 2)), update="batch", n_threads=1)
