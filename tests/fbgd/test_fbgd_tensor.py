"""fBGD's tensor models (Appendix A, PITF and CP): the cached loss and gradients against dense
all-(x, h, y) references written from eq. 25-28, finite differences, the epochs against a
literal batch gradient, scoring of (x, h) pairs, and the boundary's error messages."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from fastpu._core import validation as V
import fastpu as fp
from fastpu.fbgd import _tensor as T
from fastpu.fbgd._check import check_tensor_model
from fastpu import fbgd
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads

import naive_fbgd as naive
import reference_fbgd as reference


# --------------------------------------------------------------------------- problems
@st.composite
def tensor_problems(draw):
    """A small 3-way PU problem: a subset of the (x, h) pairs (possibly none, possibly all),
    positives among their triples (rows may be empty), weights, targets and random factors."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n_x, n_h, n_y = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 5))
    f = draw(st.integers(1, 3))
    tensor = draw(st.sampled_from(["pitf", "cp"]))
    pair_mask = rng.random((n_x, n_h)) < draw(st.sampled_from([0.4, 0.8, 1.0]))
    density = draw(st.sampled_from([0.0, 0.3, 0.6]))
    D3 = (rng.random((n_x, n_h, n_y)) < density) & pair_mask[:, :, None]
    values = rng.uniform(0.5, 3.0, size=D3.shape) * D3
    pairs = np.argwhere(pair_mask).astype(np.int64)
    dense_rows = values[pairs[:, 0], pairs[:, 1], :] if pairs.size else np.zeros((0, n_y))
    Y = sp.csr_array(dense_rows.reshape(len(pairs), n_y))
    if draw(st.booleans()):
        neg = fbgd.negative_weights(Y, draw(st.floats(0.0, 5.0)), draw(st.sampled_from([0.0, 1.0])))
    else:
        neg = rng.uniform(0.0, 2.0, size=n_y)
    neg_rows = rng.uniform(0.0, 2.0, size=len(pairs)) if draw(st.booleans()) else None
    pos_weight = draw(st.sampled_from([1.0, 2.5, "values"]))
    r_pos = draw(st.sampled_from([1.0, "values"]))
    r_neg = draw(st.sampled_from([0.0, -0.4, 0.3]))
    VX, VH, VY = (rng.normal(0.0, 0.7, size=(s, f)) for s in (n_x, n_h, n_y))
    # dense inputs of the reference
    apos3 = values if pos_weight == "values" else np.full(D3.shape, float(pos_weight))
    rpos3 = values if r_pos == "values" else np.ones(D3.shape)
    neg_pairs = None
    if neg_rows is not None:
        neg_pairs = np.zeros((n_x, n_h))
        neg_pairs[pairs[:, 0], pairs[:, 1]] = neg_rows
    return dict(Y=Y, pairs=pairs, n_x=n_x, n_h=n_h, f=f, tensor=tensor, neg=neg, neg_rows=neg_rows,
                pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg, VX=VX, VH=VH, VY=VY,
                dense=dict(D3=D3, pair_mask=pair_mask, tensor=tensor, apos3=apos3, rpos3=rpos3,
                           neg=np.asarray(neg, float), r_neg=r_neg, neg_pairs=neg_pairs))


def _build(pb):
    Y = V.check_csr(pb["Y"])
    model = check_tensor_model(Y.shape, pairs=pb["pairs"], n_x=pb["n_x"], n_h=pb["n_h"],
                               alpha0=None, rho=0.0, neg_weights=pb["neg"],
                               neg_row_weights=pb["neg_rows"], pos_weight=pb["pos_weight"],
                               r_pos=pb["r_pos"], r_neg=pb["r_neg"], tensor=pb["tensor"], lam=0.0)
    tp = T._Tensor(model.px, model.ph, model.n_x, model.n_h, pb["f"], model.tensor)
    prob = T._problem(Y, tp.g, model.weights, model.weights.neg)
    return prob, tp


def _dense_loss(pb, VX, VH, VY):
    d = pb["dense"]
    return naive.tensor_loss(d["D3"], d["pair_mask"], VX, VH, VY, d["tensor"], d["apos3"], d["rpos3"],
                             d["neg"], d["r_neg"], d["neg_pairs"])


def _dense_grads(pb, VX, VH, VY, lam=0.0):
    d = pb["dense"]
    return naive.tensor_gradients(d["D3"], d["pair_mask"], VX, VH, VY, d["tensor"], d["apos3"],
                                  d["rpos3"], d["neg"], d["r_neg"], d["neg_pairs"], lam)


# --------------------------------------------------------------------------- eq. 25-28
@given(tensor_problems())
def test_pair_embeddings_are_the_dot_product_structure_of_eq26_28(pb):
    _, tp = _build(pb)
    P, Q = tp.embed_pairs(pb["VX"], pb["VH"]), tp.embed_items(pb["VY"])
    assert P.shape[1] == Q.shape[1] == (pb["f"] + 1 if pb["tensor"] == "pitf" else pb["f"])
    for r, (x, h) in enumerate(pb["pairs"]):
        for y in range(Q.shape[0]):
            ref = naive.tensor_score(pb["VX"], pb["VH"], pb["VY"], x, h, y, pb["tensor"])
            np.testing.assert_allclose(P[r] @ Q[y], ref, rtol=1e-12, atol=1e-12)


@given(tensor_problems())
def test_objective_matches_dense_all_triples(pb):
    J = fbgd.tensor_objective(pb["Y"], pb["VX"], pb["VH"], pb["VY"], pairs=pb["pairs"],
                              tensor=pb["tensor"], neg_weights=pb["neg"], neg_row_weights=pb["neg_rows"],
                              pos_weight=pb["pos_weight"], r_pos=pb["r_pos"], r_neg=pb["r_neg"])
    np.testing.assert_allclose(J, _dense_loss(pb, pb["VX"], pb["VH"], pb["VY"]), rtol=1e-10, atol=1e-10)


@given(tensor_problems())
def test_gradients_match_dense_all_triples(pb):
    prob, tp = _build(pb)
    got = reference.tensor_gradients(prob, tp, pb["VX"], pb["VH"], pb["VY"])
    for g, ref in zip(got, _dense_grads(pb, pb["VX"], pb["VH"], pb["VY"])):
        np.testing.assert_allclose(g, ref, rtol=1e-9, atol=1e-9)


def _fast_loss(prob, tp, VX, VH, VY):
    P, Q = tp.embed_pairs(VX, VH), tp.embed_items(VY)
    Sq, sq = prob.gram(prob.neg, Q)
    Sp, sp_ = prob.gram(prob.arow, P)
    return prob.loss(P, Q, Sq, sq, Sp, sp_)


@given(tensor_problems())
def test_gradients_match_finite_differences(pb):
    prob, tp = _build(pb)
    VX, VH, VY = pb["VX"].copy(), pb["VH"].copy(), pb["VY"].copy()
    grads = reference.tensor_gradients(prob, tp, VX, VH, VY)
    h = 1e-5
    with limit_threads(1):
        for V, g in zip((VX, VH, VY), grads):
            for j, d in np.ndindex(*V.shape):
                old = V[j, d]
                V[j, d] = old + h
                up, up_ref = _fast_loss(prob, tp, VX, VH, VY), _dense_loss(pb, VX, VH, VY)
                V[j, d] = old - h
                down, down_ref = _fast_loss(prob, tp, VX, VH, VY), _dense_loss(pb, VX, VH, VY)
                V[j, d] = old
                scale = max(1.0, abs(g[j, d]))
                assert abs((up - down) / (2 * h) - g[j, d]) <= 1e-5 * scale
                assert abs((up_ref - down_ref) / (2 * h) - g[j, d]) <= 1e-5 * scale


@given(tensor_problems(), st.booleans(), st.sampled_from([0.0, 0.1]))
def test_epochs_match_the_literal_batch_gradient(pb, adagrad, lam):
    prob, tp = _build(pb)
    VX, VH, VY = pb["VX"].copy(), pb["VH"].copy(), pb["VY"].copy()
    progress = Progress("test")
    T._train(prob, tp, VX, VH, VY, lr=0.01, n_iter=2, adagrad=adagrad, lam=lam, progress=progress)
    nX, nH, nY = pb["VX"].copy(), pb["VH"].copy(), pb["VY"].copy()
    accs = [np.zeros_like(nX), np.zeros_like(nH), np.zeros_like(nY)]
    d = pb["dense"]
    for _ in range(2):
        naive.tensor_batch_epoch(d["D3"], d["pair_mask"], nX, nH, nY, accs, d["tensor"], d["apos3"],
                                 d["rpos3"], d["neg"], d["r_neg"], 0.01, adagrad, d["neg_pairs"], lam)
    for got, ref in ((VX, nX), (VH, nH), (VY, nY)):
        np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10)
    objective = progress.history[-1]["objective"]
    penalty = lam * (np.sum(nX ** 2) + np.sum(nH ** 2) + np.sum(nY ** 2))
    np.testing.assert_allclose(objective, _dense_loss(pb, nX, nH, nY) + penalty, rtol=1e-8, atol=1e-9)


# --------------------------------------------------------------------------- fit
def _planted_triples(n_x=30, n_h=12, n_y=25, f=3, n_pos=400, seed=0):
    """Triples whose pairs (x, h) are drawn at random and whose y follows a planted CP score."""
    rng = np.random.default_rng(seed)
    A, B, C = (rng.normal(size=(s, f)) for s in (n_x, n_h, n_y))
    x, h = rng.integers(0, n_x, n_pos), rng.integers(0, n_h, n_pos)
    S = np.einsum("nd,nd,yd->ny", A[x], B[h], C)
    y = np.argmax(S + rng.gumbel(size=S.shape), axis=1)
    return fbgd.triples_to_pairs(x, h, y, shape=(n_x, n_h, n_y))


@pytest.mark.parametrize("tensor", ["pitf", "cp"])
def test_fit_lowers_the_objective_and_reports_it(tensor):
    Y, pairs = _planted_triples()
    model = fbgd.fit_tensor(Y, 4, pairs=pairs, tensor=tensor, alpha0=5.0, n_iter=25, init_std=0.1)
    objs = [model.extras["initial_objective"]] + [h["objective"] for h in model.history]
    assert objs[-1] < 0.7 * objs[0] and all(np.isfinite(objs))
    e = model.extras
    J = fbgd.tensor_objective(Y, e["V_x"], e["V_h"], e["V_y"], pairs=pairs, tensor=tensor,
                              neg_weights=e["neg_weights"])
    np.testing.assert_allclose(J, objs[-1], rtol=1e-10)
    assert model.user_factors.shape == (Y.shape[0], 5 if tensor == "pitf" else 4)
    assert model.item_factors.shape == (25, 5 if tensor == "pitf" else 4)


@pytest.mark.parametrize("tensor", ["pitf", "cp"])
def test_deterministic_for_a_seed_and_across_thread_counts(tensor):
    Y, pairs = _planted_triples(seed=1)
    a = fbgd.fit_tensor(Y, 3, pairs=pairs, tensor=tensor, n_iter=3, seed=5, n_threads=1)
    b = fbgd.fit_tensor(Y, 3, pairs=pairs, tensor=tensor, n_iter=3, seed=5, n_threads=2)
    c = fbgd.fit_tensor(Y, 3, pairs=pairs, tensor=tensor, n_iter=3, seed=6, n_threads=2)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert not np.array_equal(a.user_factors, c.user_factors)


def test_callback_stops_early():
    Y, pairs = _planted_triples(seed=2)
    model = fbgd.fit_tensor(Y, 2, pairs=pairs, n_iter=10, callback=lambda info: info["iter"] == 4)
    assert len(model.history) == 4
    assert {"iter", "objective", "loss", "seconds"} <= set(model.history[0])


@pytest.mark.parametrize("tensor", ["pitf", "cp"])
def test_learns_a_planted_tensor_better_than_popularity(tensor):
    # held-out triples of a tensor planted with the model's own structure (eq. 25 or 27): the
    # context-aware model ranks them well above item popularity (a check that it learns)
    rng = np.random.default_rng(3)
    n_x, n_h, n_y, f = 40, 15, 30, 3
    A, B, C = (rng.normal(size=(s, f)) for s in (n_x, n_h, n_y))
    x, h = rng.integers(0, n_x, 2500), rng.integers(0, n_h, 2500)
    if tensor == "cp":
        S = np.einsum("nd,nd,yd->ny", A[x], B[h], C)
    else:
        S = (A[x] + B[h]) @ C.T
    y = np.argmax(S + 0.3 * rng.gumbel(size=S.shape), axis=1)
    test = rng.random(2500) < 0.2
    Ytr, pairs = fbgd.triples_to_pairs(x[~test], h[~test], y[~test], shape=(n_x, n_h, n_y))
    model = fbgd.fit_tensor(Ytr, 6, pairs=pairs, tensor=tensor, alpha0=10.0, n_iter=60, lr=0.1,
                            init_std=0.1, seed=0)
    Yte, te_pairs = fbgd.triples_to_pairs(x[test], h[test], y[test], shape=(n_x, n_h, n_y))
    none_seen = sp.csr_array(Yte.shape)
    res = fp.evaluate(fbgd.pair_model(model, te_pairs), none_seen, Yte, k=(5,))
    pop = np.bincount(Ytr.indices, minlength=n_y).astype(float)
    popular = fp.Factorization(user_factors=np.ones((len(te_pairs), 1)), item_factors=pop[:, None])
    res_pop = fp.evaluate(popular, none_seen, Yte, k=(5,))
    assert res["auc"] > res_pop["auc"] + 0.05, (res, res_pop)
    assert res["ndcg@5"] > res_pop["ndcg@5"] + 0.1, (res, res_pop)


# --------------------------------------------------------------------------- scoring
@pytest.mark.parametrize("tensor", ["pitf", "cp"])
def test_pair_model_scores_any_pair_by_eq25_27(tensor):
    Y, pairs = _planted_triples(seed=4)
    model = fbgd.fit_tensor(Y, 3, pairs=pairs, tensor=tensor, n_iter=3, init_std=0.3)
    same = fbgd.pair_model(model, pairs)
    np.testing.assert_array_equal(same.user_factors, model.user_factors)
    e = model.extras
    new = np.array([[0, 0], [29, 11], [3, 7], [3, 7]])
    S = fbgd.pair_model(model, new).scores()
    for r, (x, h) in enumerate(new):
        for y in range(25):
            ref = naive.tensor_score(e["V_x"], e["V_h"], e["V_y"], x, h, y, tensor)
            np.testing.assert_allclose(S[r, y], ref, rtol=1e-10, atol=1e-12)


def test_recommend_and_evaluate_run_on_the_pair_matrix():
    Y, pairs = _planted_triples(seed=5)
    model = fbgd.fit_tensor(Y, 3, pairs=pairs, n_iter=3)
    items, _ = fp.recommend(model, Y, users=[0, 1], n=4)
    assert items.shape == (2, 4)
    for r in (0, 1):
        assert not set(items[r]) & set(Y.indices[Y.indptr[r]:Y.indptr[r + 1]])
    res = fp.evaluate(model, sp.csr_array(Y.shape), Y, k=(5,))
    assert 0.0 <= res["auc"] <= 1.0


def test_triples_to_pairs_matches_a_dense_tensor():
    rng = np.random.default_rng(6)
    x, h, y = rng.integers(0, 5, 60), rng.integers(0, 4, 60), rng.integers(0, 7, 60)
    vals = rng.uniform(0.5, 2.0, 60)
    Y, pairs = fbgd.triples_to_pairs(x, h, y, vals, shape=(5, 4, 8))
    dense = np.zeros((5, 4, 8))
    np.add.at(dense, (x, h, y), vals)          # repeated triples are summed
    present = np.argwhere(np.abs(dense).sum(axis=2) > 0)
    np.testing.assert_array_equal(pairs, present)
    np.testing.assert_allclose(Y.toarray(), dense[pairs[:, 0], pairs[:, 1]], rtol=1e-12)
    assert Y.shape == (len(present), 8)
    Y0, pairs0 = fbgd.triples_to_pairs([], [], [], shape=(2, 3, 4))
    assert Y0.shape == (0, 4) and pairs0.shape == (0, 2)


def test_never_forms_the_dense_tensor():
    # |X|·|H|·|Y| = 10^15 triples; the fit touches only the pairs, the factors and the positives
    n = 1_000_000
    rng = np.random.default_rng(7)
    x, h, y = rng.integers(0, n, 300), rng.integers(0, n, 300), rng.integers(0, n, 300)
    Y, pairs = fbgd.triples_to_pairs(x, h, y, shape=(n, n, n))
    model = fbgd.fit_tensor(Y, 2, pairs=pairs, tensor="cp", alpha0=1.0, n_iter=1)
    assert model.user_factors.shape == (Y.shape[0], 2) and model.item_factors.shape == (n, 2)


# --------------------------------------------------------------------------- boundary
def test_bad_inputs_get_clear_errors():
    Y, pairs = fbgd.triples_to_pairs([0, 1, 2], [0, 1, 0], [1, 0, 2])
    with pytest.raises(ValueError, match=r"unknown tensor 'tucker'; expected one of 'pitf', 'cp'"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, tensor="tucker")
    with pytest.raises(ValueError, match=r"pairs has 2 rows and Y has 3; expected one \(x, h\) pair per row"):
        fbgd.fit_tensor(Y, 2, pairs=pairs[:2])
    with pytest.raises(ValueError, match=r"pairs must have shape \(n_pairs, 2\), got \(3, 3\)"):
        fbgd.fit_tensor(Y, 2, pairs=np.zeros((3, 3), dtype=int))
    with pytest.raises(TypeError, match=r"pairs must be integer \(x, h\) indices, got dtype float64"):
        fbgd.fit_tensor(Y, 2, pairs=pairs.astype(float))
    with pytest.raises(ValueError, match=r"pairs has 1 repeated \(x, h\) pairs"):
        fbgd.fit_tensor(Y, 2, pairs=np.array([[0, 0], [1, 1], [0, 0]]))
    with pytest.raises(ValueError, match=r"pairs must be non-negative indices, got minimum -1"):
        fbgd.fit_tensor(Y, 2, pairs=np.array([[0, 0], [1, -1], [2, 0]]))
    with pytest.raises(ValueError, match=r"n_x is 2 but pairs uses index 2; expected n_x >= 3"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, n_x=2)
    with pytest.raises(ValueError, match=r"n_h is 1 but pairs uses index 1; expected n_h >= 2"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, n_h=1)
    with pytest.raises(ValueError, match=r"neg_row_weights has shape 2, expected 3"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, neg_row_weights=np.ones(2))
    with pytest.raises(ValueError, match=r"neg_weights has shape 2, expected 3"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, neg_weights=np.ones(2))
    with pytest.raises(ValueError, match=r"lam must be at most 1e\+20, got 1e\+200"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, lam=1e200)     # the bound fbgd.fit has
    with pytest.raises(ValueError, match=r"alpha0 must be >= 0.0, got -1"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, alpha0=-1.0)
    with pytest.raises(ValueError, match=r"unknown optimizer 'adam'"):
        fbgd.fit_tensor(Y, 2, pairs=pairs, optimizer="adam")
    with pytest.raises(ValueError, match=r"k must be >= 1, got 0"):
        fbgd.fit_tensor(Y, 0, pairs=pairs)
    with pytest.raises(TypeError, match=r"Y must be a scipy.sparse matrix or array, got ndarray"):
        fbgd.fit_tensor(Y.toarray(), 2, pairs=pairs)
    with pytest.raises(TypeError, match=r"pairs must be a dense integer array"):
        fbgd.fit_tensor(Y, 2, pairs=sp.csr_array(pairs))
    with pytest.raises(TypeError, match=r"missing 1 required keyword-only argument: 'pairs'"):
        fbgd.fit_tensor(Y, 2)
    ones = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"VY has shape 2×2, expected 3×2"):
        fbgd.tensor_objective(Y, ones, ones[:2], ones[:2], pairs=pairs)
    with pytest.raises(ValueError, match=r"the number of rows of VX is 2 but pairs uses index 2"):
        fbgd.tensor_objective(Y, ones[:2], ones[:2], ones, pairs=pairs)
    with pytest.raises(ValueError, match=r"VH has 1 rows but pairs uses h index 1"):
        fbgd.tensor_objective(Y, ones, ones[:1], ones, pairs=pairs)
    with pytest.raises(ValueError, match=r"VH has shape 2×1, expected 2×2"):
        fbgd.tensor_objective(Y, ones, np.ones((2, 1)), ones, pairs=pairs)
    model = fbgd.fit_tensor(Y, 2, pairs=pairs, n_iter=1)
    with pytest.raises(ValueError, match=r"pairs\[:, 1\] \(h\) must lie in \[0, 2\), got values in \[5, 5\]"):
        fbgd.pair_model(model, [[0, 5]])
    with pytest.raises(TypeError, match=r"model must be a result of fbgd.fit_tensor, got Factorization"):
        fbgd.pair_model(fbgd.fit(Y, 2, n_iter=1), pairs)
    with pytest.raises(ValueError, match=r"x, h and y must have the same length, got 3, 2, 3"):
        fbgd.triples_to_pairs([0, 1, 2], [0, 1], [1, 0, 2])
    with pytest.raises(ValueError, match=r"y has index 2, outside shape \(3, 2, 2\)"):
        fbgd.triples_to_pairs([0, 1, 2], [0, 1, 0], [1, 0, 2], shape=(3, 2, 2))
    with pytest.raises(TypeError, match=r"h must be integer indices, got dtype float64"):
        fbgd.triples_to_pairs([0, 1], [0.5, 1.0], [1, 0])


def test_plain_gd_divergence_raises_instead_of_returning_nan():
    Y, pairs = _planted_triples(seed=8)
    with pytest.raises(FloatingPointError, match=r"fbgd-pitf: objective became (nan|inf)"):
        fbgd.fit_tensor(Y, 3, pairs=pairs, optimizer="gd", lr=5.0, init_std=0.5, n_iter=30)
