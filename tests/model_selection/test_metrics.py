import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

import fastpu as fp
import fastpu._core.factorization as model_mod
from fastpu.model_selection.metrics import METRICS, evaluate, evaluate_rated, popularity, sampled_auc
from fastpu.model import Factorization

import naive_metrics as naive


def _model_from_scores(S):
    """A Factorization whose scores are exactly S (user factors = identity rows)."""
    m, n = S.shape
    return Factorization(np.eye(m), np.ascontiguousarray(S.T))


def _problem(seed, m, n, ties, overlap):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(m, n))
    if ties:
        S = np.round(S)                     # many tied scores
    train = rng.random((m, n)) < 0.3
    test = rng.random((m, n)) < 0.3
    if not overlap:
        test &= ~train
    return S, train, test


problems = st.tuples(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(2, 9),
                     st.booleans(), st.booleans())


@given(problems, st.lists(st.integers(1, 12), min_size=1, max_size=3))
def test_evaluate_matches_naive(problem, ks):
    S, train, test = _problem(*problem)
    if not np.any(test & ~train):
        with pytest.raises(ValueError, match="no user has a test item"):
            evaluate(_model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 1.0), k=ks)
        return
    got = evaluate(_model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 2.0), k=ks)
    want = naive.evaluate(S, train, test, sorted(set(ks)))
    assert got["n_users"] == want["n_users"]
    assert set(got) == set(want)
    for key, val in want.items():
        if isinstance(val, float) and math.isnan(val):
            assert math.isnan(got[key])
        else:
            assert got[key] == pytest.approx(val, rel=1e-12, abs=1e-12), key


@given(problems)
def test_auc_matches_naive_with_ties(problem):
    S, train, test = _problem(*problem)
    users = [u for u in range(S.shape[0]) if np.any(test[u] & ~train[u])]
    aucs = [a for a in (naive.user_auc(S[u], train[u], test[u]) for u in users) if a is not None]
    if not aucs:
        return
    got = evaluate(_model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 1.0),
                   metrics=["auc"])
    assert set(got) == {"auc", "n_users"}
    assert got["auc"] == pytest.approx(np.mean(aucs), rel=1e-12)


def test_hand_computed_case():
    S = np.array([[0.9, 0.8, 0.7, 0.6, 0.5]])
    Y_train = sp.csr_array((1, 5))
    Y_test = sp.csr_array(np.array([[0.0, 1, 0, 1, 0]]))
    r = evaluate(_model_from_scores(S), Y_train, Y_test, k=(1, 5))
    assert r["precision@1"] == 0 and r["recall@1"] == 0 and r["ndcg@1"] == 0 and r["mrr@1"] == 0
    assert r["precision@5"] == pytest.approx(0.4)
    assert r["recall@5"] == pytest.approx(1.0)
    assert r["f1@5"] == pytest.approx(2 * 0.4 / 1.4)
    assert r["ndcg@5"] == pytest.approx((1 / np.log2(3) + 1 / np.log2(5)) / (1 + 1 / np.log2(3)))
    assert r["map@5"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert r["mrr@5"] == pytest.approx(0.5)
    assert r["auc"] == pytest.approx(3 / 6)        # 0.8 beats 0.7, 0.5; 0.6 beats 0.5
    assert r["n_users"] == 1


def test_training_items_are_excluded_from_the_ranking():
    # the best-scored item is a training item: the test item becomes rank 1
    S = np.array([[5.0, 4.0, 1.0]])
    r = evaluate(_model_from_scores(S), sp.csr_array(np.array([[1.0, 0, 0]])),
                 sp.csr_array(np.array([[0.0, 1, 0]])), k=1)
    assert r["precision@1"] == 1.0 and r["auc"] == 1.0


def test_ties_in_topk_broken_by_lower_index():
    S = np.zeros((1, 4))
    r = evaluate(_model_from_scores(S), sp.csr_array((1, 4)), sp.csr_array(np.array([[0.0, 0, 1, 0]])),
                 k=(1, 3))
    assert r["precision@1"] == 0 and r["mrr@3"] == pytest.approx(1 / 3) and r["auc"] == 0.5


def test_blocks_threads_and_users_subset(monkeypatch):
    S, train, test = _problem(7, 11, 13, False, False)
    Ytr, Yte = sp.csr_array(train * 1.0), sp.csr_array(test * 1.0)
    M = _model_from_scores(S)
    whole = evaluate(M, Ytr, Yte, k=(2, 5), n_threads=2)
    assert evaluate(M, Ytr, Yte, k=(2, 5), n_threads=1) == whole
    monkeypatch.setattr(model_mod, "block_size", lambda n: 3)
    assert evaluate(M, Ytr, Yte, k=(2, 5)) == pytest.approx(whole, rel=1e-12)
    sub = evaluate(M, Ytr, Yte, k=2, users=[0, 3, 3])
    want = naive.evaluate(S[[0, 3]], train[[0, 3]], test[[0, 3]], [2])
    assert sub == pytest.approx(want, rel=1e-12)


def test_nothing_users_by_items_is_allocated_for_topk(monkeypatch):
    # scores are requested in blocks of users no larger than the block size
    S, train, test = _problem(3, 10, 6, False, False)
    M = _model_from_scores(S)
    seen = []
    orig = Factorization.scores
    monkeypatch.setattr(model_mod, "block_size", lambda n: 4)
    monkeypatch.setattr(Factorization, "scores", lambda self, users=None: seen.append(len(users)) or orig(self, users))
    evaluate(M, sp.csr_array(train * 1.0), sp.csr_array(test * 1.0))
    assert seen and max(seen) <= 4


def test_metrics_selection_and_keys():
    S, train, test = _problem(1, 5, 7, False, False)
    r = evaluate(_model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 1.0),
                 k=[3], metrics=("ndcg", "precision"))
    assert list(r) == ["precision@3", "ndcg@3", "n_users"]
    assert set(METRICS) == {"precision", "recall", "f1", "ndcg", "map", "mrr", "auc"}


# --------------------------------------------------------------------------- evaluate_rated

@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(1, 9),
       st.lists(st.integers(1, 10), min_size=1, max_size=3), st.sampled_from([2.0, 3.5, 4.0]),
       st.booleans())
def test_evaluate_rated_matches_naive(seed, m, n, ks, threshold, ties):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(m, n))
    if ties:
        S = np.round(S)
    rated = rng.random((m, n)) < 0.6
    ratings = rng.integers(1, 6, size=(m, n)).astype(float) * rated
    R = sp.csr_array(ratings)
    if not np.any(rated & (ratings >= threshold)):
        with pytest.raises(ValueError, match="no .*user has a test rating >= threshold"):
            evaluate_rated(_model_from_scores(S), R, k=ks, threshold=threshold)
        return
    got = evaluate_rated(_model_from_scores(S), R, k=ks, threshold=threshold)
    want = naive.evaluate_rated(S, rated, ratings, sorted(set(ks)), threshold)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_a_cut_off_beyond_the_items_costs_no_memory():
    """k = 10**9 on 7 items: evaluate refused it for memory ("needs 89 GiB") and evaluate_rated
    built an ideal-DCG table of k entries (16 GB). Past n, a list only adds empty slots: every
    metric equals its value at k = n, except precision, which still divides by k."""
    import tracemalloc

    S, train, test = _problem(3, 5, 7, False, False)
    model, Ytr, Yte = _model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 1.0)
    R = sp.csr_array(np.where(test, np.arange(35).reshape(5, 7) % 5 + 1.0, 0.0))
    big = 10**9
    tracemalloc.start()
    try:
        got = evaluate(model, Ytr, Yte, k=(3, big))
        got_r = evaluate_rated(model, R, k=(3, big), threshold=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    at_n, at_n_r = evaluate(model, Ytr, Yte, k=(3, 7)), evaluate_rated(model, R, k=(3, 7), threshold=3)
    for name in ("recall", "ndcg", "map", "mrr", "f1", "precision"):
        if name == "precision":
            assert got[f"precision@{big}"] == pytest.approx(at_n["precision@7"] * 7 / big, rel=1e-12)
            assert got_r[f"precision@{big}"] == pytest.approx(at_n_r["precision@7"] * 7 / big, rel=1e-12)
            continue
        if name != "f1":
            assert got[f"{name}@{big}"] == at_n[f"{name}@7"], name
        if name in ("recall", "ndcg", "map"):
            assert got_r[f"{name}@{big}"] == at_n_r[f"{name}@7"], name
    assert got["precision@3"] == at_n["precision@3"] and got_r["ndcg@3"] == at_n_r["ndcg@3"]


def test_evaluate_rated_hand_case_and_blocks(monkeypatch):
    M = _model_from_scores(np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]]))
    R = sp.csr_array(np.array([[2.0, 5.0, 4.0], [5.0, 1.0, 0.0]]))
    r = evaluate_rated(M, R, k=2, threshold=4)
    # user 0: order 0,1,2 with relevance 0,1,1; user 1: order 1,0 with relevance 0,1
    ndcg0 = (1 / np.log2(3)) / (1 + 1 / np.log2(3))
    ndcg1 = (1 / np.log2(3)) / 1.0
    assert r["precision@2"] == pytest.approx(0.5)
    assert r["recall@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert r["map@2"] == pytest.approx(((1 / 2) / 2 + (1 / 2) / 1) / 2)
    assert r["ndcg@2"] == pytest.approx((ndcg0 + ndcg1) / 2)
    monkeypatch.setattr(model_mod, "block_size", lambda n: 1)
    assert evaluate_rated(M, R, k=2, threshold=4) == pytest.approx(r)
    assert list(evaluate_rated(M, R, k=2, threshold=4, metrics=["map"])) == ["map@2", "n_users"]
    only1 = evaluate_rated(M, R, k=2, threshold=4, users=[1])
    assert only1["n_users"] == 1 and only1["ndcg@2"] == pytest.approx(ndcg1) and only1["recall@2"] == 1.0


# --------------------------------------------------------------------------- sampled_auc

@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(3, 9), st.booleans())
def test_sampled_auc_with_all_negatives_equals_exact(seed, m, n, ties):
    S, train, test = _problem(seed, m, n, ties, False)
    users = [u for u in range(m) if test[u].any() and (~(train[u] | test[u])).any()]
    if not users:
        return
    want = np.mean([naive.auc_against(S[u], np.flatnonzero(test[u]), np.flatnonzero(~(train[u] | test[u])))
                    for u in users])
    got = sampled_auc(_model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 1.0),
                      n_negatives=n, users=users)
    assert got == pytest.approx(want, rel=1e-12)


def test_sampled_auc_is_seeded_and_sampled(monkeypatch):
    S, train, test = _problem(5, 8, 40, False, False)
    args = (_model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 1.0))
    a = sampled_auc(*args, n_negatives=5, seed=3)
    assert sampled_auc(*args, n_negatives=5, seed=3) == a
    values = {sampled_auc(*args, n_negatives=5, seed=s) for s in range(6)}
    assert len(values) > 1                       # really sampled
    monkeypatch.setattr(model_mod, "block_size", lambda n: 3)
    assert sampled_auc(*args, n_negatives=5, seed=3) == pytest.approx(a, rel=1e-12)


# --------------------------------------------------------------------------- popularity

def test_popularity_scores_are_item_counts():
    Y = sp.csr_array(np.array([[3.0, 0, 1], [0, 0, 5], [2.0, 0, 0]]))
    p = popularity(Y)
    assert p.method == "popularity" and p.user_factors.shape == (3, 1) and p.item_factors.shape == (3, 1)
    np.testing.assert_array_equal(p.scores(), np.tile([2.0, 0.0, 2.0], (3, 1)))


def test_popularity_is_a_fit_like_the_others():
    """popularity(Y, k=None, *, ...) has the fit calling convention: one history entry whose
    objective is min_h Σ_ij (x_ij − h_j)² (dense reference), the callback called once with the
    model, tune fitting it once (nothing to search), a new user's row of ones from positives or
    from features alone."""
    rng = np.random.default_rng(5)
    Y = sp.csr_array((rng.random((30, 12)) < 0.3).astype(float))
    X = (Y.toarray() != 0).astype(float)
    seen = []
    p = popularity(Y, callback=lambda info: seen.append(info["model"]().scores([0])) and False)
    want = float(np.sum((X - X.mean(axis=0)) ** 2))
    assert len(p.history) == 1 and p.history[0]["objective"] == pytest.approx(want, rel=1e-12)
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], p.scores([0]))
    with pytest.raises(TypeError, match="popularity has no rank"):
        popularity(Y, 3)
    with pytest.raises(ValueError, match="user_features has 5 rows, expected 30"):
        popularity(Y, user_features=np.ones((5, 2)))
    res = fp.select.tune("popularity", Y, budget=8, metric="ndcg@5")
    assert len(res.trials) == 1 and res.best_params == {} and res.best_iter == 1
    np.testing.assert_array_equal(res.model.item_factors, p.item_factors)
    assert fp.fold_in(p, user_features=np.ones((4, 3))).user_factors.tolist() == [[1.0]] * 4
    assert fp.fold_in(p, Y[:2]).user_factors.tolist() == [[1.0]] * 2


def test_popularity_beats_random_on_popularity_data():
    from fastpu.datasets import synthetic
    from fastpu.model_selection.split import holdout
    ds = synthetic(200, 150, rank=2, density=0.1, seed=1)
    tr, te = holdout(ds.Y, 0.3, seed=0)
    rng = np.random.default_rng(0)
    rand = Factorization(rng.normal(size=(200, 2)), rng.normal(size=(150, 2)))
    assert evaluate(popularity(tr), tr, te)["auc"] > evaluate(rand, tr, te)["auc"] + 0.1


# --------------------------------------------------------------------------- validation

def _small():
    M = Factorization(np.ones((2, 1)), np.ones((3, 1)))
    return M, sp.csr_array(np.array([[1.0, 0, 0], [0, 0, 0]])), sp.csr_array(np.array([[0.0, 1, 0], [0, 0, 1]]))


def test_validation_messages():
    M, tr, te = _small()
    with pytest.raises(TypeError, match="model must be a fitted fastpu Factorization"):
        evaluate(np.ones((2, 3)), tr, te)
    with pytest.raises(ValueError, match=r"Y_train has shape 3×3, expected 2×3"):
        evaluate(M, sp.csr_array((3, 3)), te)
    with pytest.raises(TypeError, match="Y_test must be a scipy.sparse"):
        evaluate(M, tr, te.toarray())
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        evaluate(M, tr, te, k=(0, 5))
    with pytest.raises(TypeError, match="k must be an integer >= 1 or a sequence of them"):
        evaluate(M, tr, te, k=2.5)
    with pytest.raises(ValueError, match="got an empty sequence"):
        evaluate(M, tr, te, k=[])
    with pytest.raises(ValueError, match="unknown metric 'hit'; expected one of"):
        evaluate(M, tr, te, metrics=["hit"])
    with pytest.raises(ValueError, match="metrics must name at least one"):
        evaluate(M, tr, te, metrics=[])
    with pytest.raises(TypeError, match="metrics must be None or a sequence"):
        evaluate(M, tr, te, metrics=3)
    with pytest.raises(ValueError, match="no user has a test item outside its training items"):
        evaluate(M, tr, tr)
    with pytest.raises(ValueError, match="users must lie in"):
        evaluate(M, tr, te, users=[5])
    with pytest.raises(ValueError, match="n_threads must be in"):
        evaluate(M, tr, te, n_threads=10**6)
    bad = Factorization(np.array([[np.nan], [1.0]]), np.ones((3, 1)))
    with pytest.raises(ValueError, match="model.scores returned 3 non-finite scores"):
        evaluate(bad, tr, te)
    with pytest.raises(ValueError, match="n_negatives must be >= 1"):
        sampled_auc(M, tr, te, n_negatives=0)
    with pytest.raises(ValueError, match="no \\(selected\\) user has a test item"):
        sampled_auc(M, tr, sp.csr_array((2, 3)))
    full = sp.csr_array(np.array([[0.0, 1, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match="no evaluated user has an unobserved item"):
        sampled_auc(M, tr, full)
    with pytest.raises(TypeError, match="threshold must be a real number"):
        evaluate_rated(M, te, threshold="5")
    with pytest.raises(ValueError, match="no \\(selected\\) user has a test rating >= threshold=5"):
        evaluate_rated(M, te, threshold=5)
    with pytest.raises(TypeError, match="Y must be a scipy.sparse"):
        popularity([[1, 0]])


def test_auc_undefined_warns_and_is_reported_nan():
    M = Factorization(np.ones((1, 1)), np.ones((2, 1)))
    tr = sp.csr_array(np.array([[1.0, 0]]))
    te = sp.csr_array(np.array([[0.0, 1]]))
    with pytest.warns(RuntimeWarning, match="auc is undefined"):
        r = evaluate(M, tr, te, k=1)
    assert math.isnan(r["auc"]) and r["precision@1"] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "auc" not in evaluate(M, tr, te, k=1, metrics=["precision"])


def test_swapped_train_and_test_are_warned_about():
    """evaluate(model, Y_test, Y_train) gave nDCG@10 0.91 for a model whose real score is 0.43."""
    rng = np.random.default_rng(0)
    mask = rng.random((200, 60)) < 0.4
    test = mask & (rng.random((200, 60)) < 0.2)
    Ytr, Yte = sp.csr_array((mask & ~test) * 1.0), sp.csr_array(test * 1.0)
    model = _model_from_scores(rng.normal(size=(200, 60)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate(model, Ytr, Yte, k=5)                 # the right order: no warning
        evaluate(model, sp.csr_array((200, 60)), Yte, k=5)   # nothing seen (cold start): none
    with pytest.warns(UserWarning, match=r"Y_test holds 4\.\d× as many positives as Y_train .* swapped"):
        evaluate(model, Yte, Ytr, k=5)
