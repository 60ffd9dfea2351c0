"""CSRR's cost-sensitive measures (Yang et al. equations (2) and (3)) against a dense reference."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

import fastpu as fp
import fastpu._core.factorization as model_mod
from fastpu.model_selection.metrics import cost_sensitive
from fastpu.model import Factorization

import naive_metrics as naive


def _model_from_scores(S):
    return Factorization(np.eye(S.shape[0]), np.ascontiguousarray(S.T))


def _problem(seed, m, n, ties, overlap):
    rng = np.random.default_rng(seed)
    S = rng.uniform(size=(m, n))
    if ties:
        S = np.round(S * 4) / 4             # scores equal to the threshold 0.5 occur
    train = rng.random((m, n)) < 0.3
    test = rng.random((m, n)) < 0.3
    if not overlap:
        test &= ~train
    test[0, np.argmax(~train[0])] |= not train[0].all()       # usually at least one positive
    return S, train, test


@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(2, 9), st.booleans(), st.booleans(),
       st.sampled_from([0.25, 0.5, 0.75]), st.floats(0.0, 1.0), st.floats(0.0, 1.0),
       st.sampled_from([None, [0], [1, 0, 1]]))
def test_cost_sensitive_matches_dense_reference(seed, m, n, ties, overlap, q, mu_p, c_p, users):
    S, train, test = _problem(seed, m, n, ties, overlap)
    if users is not None:
        users = [u for u in users if u < m]
    want_users = None if users is None else users
    rel = test & ~train
    sel = range(m) if users is None else sorted(set(users))
    M = _model_from_scores(S)
    Ytr, Yte = sp.csr_array(train * 1.0), sp.csr_array(test * 1.0)
    if not any(rel[u].any() for u in sel):
        with pytest.raises(ValueError, match="no test item outside the training items"):
            cost_sensitive(M, Ytr, Yte, threshold=q, mu_p=mu_p, c_p=c_p, users=users)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = cost_sensitive(M, Ytr, Yte, threshold=q, mu_p=mu_p, c_p=c_p, users=users)
        want = naive.cost_sensitive(S, train, test, q, mu_p, c_p, users=want_users)
    assert got.keys() == want.keys()
    for key in want:
        if isinstance(want[key], float) and np.isnan(want[key]):
            assert np.isnan(got[key])
        else:
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-12), key


def test_hand_computed_case_and_equation_forms():
    S = np.array([[0.9, 0.2, 0.7], [0.9, 0.2, 0.7]])
    train = np.array([[1, 0, 0], [0, 0, 0]], bool)
    test = np.array([[0, 1, 0], [1, 0, 0]], bool)
    res = cost_sensitive(_model_from_scores(S), sp.csr_array(train * 1.0), sp.csr_array(test * 1.0),
                         threshold=0.5, mu_p=0.3, c_p=0.8)
    assert (res["n_positives"], res["n_negatives"]) == (2, 3)
    assert (res["false_negatives"], res["false_positives"]) == (1, 2)
    assert res["recall"] == 0.5 and res["specificity"] == pytest.approx(1 / 3)
    assert res["weighted_sum"] == pytest.approx(0.3 * 0.5 + 0.7 / 3)
    assert res["weighted_cost"] == pytest.approx(0.8 * 1 + 0.2 * 2)
    assert res["weighted_cost_rate"] == pytest.approx(1.2 / 5)
    # Lemma 1: cost = c_n [α Σ_pos I(X ≤ q) + Σ_neg I(X > q)] with α = c_p / c_n
    assert res["weighted_cost"] == pytest.approx(0.2 * (4.0 * 1 + 2))
    # a score equal to the threshold is a predicted negative (I(X > q))
    tie = cost_sensitive(_model_from_scores(np.full((2, 3), 0.5)), sp.csr_array(train * 1.0),
                         sp.csr_array(test * 1.0), threshold=0.5)
    assert (tie["false_negatives"], tie["false_positives"]) == (2, 0)


def test_blocks_threads_and_no_users_by_items_scores(monkeypatch):
    S, train, test = _problem(7, 11, 13, False, False)
    M = _model_from_scores(S)
    Ytr, Yte = sp.csr_array(train * 1.0), sp.csr_array(test * 1.0)
    whole = cost_sensitive(M, Ytr, Yte, n_threads=2)
    assert cost_sensitive(M, Ytr, Yte, n_threads=1) == whole
    seen = []
    orig = Factorization.scores
    monkeypatch.setattr(model_mod, "block_size", lambda n: 3)
    monkeypatch.setattr(Factorization, "scores",
                        lambda self, users=None: seen.append(len(users)) or orig(self, users))
    assert cost_sensitive(M, Ytr, Yte) == whole
    assert seen and max(seen) <= 3


def test_on_a_csrr_model():
    Y = fp.datasets.synthetic(40, 30, rank=3, density=0.2, seed=0).Y
    Y_train, Y_test = fp.split.holdout(Y, test_frac=0.2, seed=0)
    model = fp.csrr.fit(Y_train, 4, alpha=2.0, n_iter=20)
    res = cost_sensitive(model, Y_train, Y_test, threshold=0.5, c_p=2.0 / 3.0)
    S = model.scores()
    want = naive.cost_sensitive(S, Y_train.toarray() != 0, Y_test.toarray() != 0, 0.5, 0.5, 2.0 / 3.0)
    assert res == pytest.approx(want, rel=1e-12)


def test_no_negative_candidate_warns_and_reports_nan():
    S = np.array([[0.9, 0.1]])
    with pytest.warns(RuntimeWarning, match="specificity is undefined"):
        res = cost_sensitive(_model_from_scores(S), sp.csr_array((1, 2)), sp.csr_array(np.ones((1, 2))))
    assert np.isnan(res["specificity"]) and np.isnan(res["weighted_sum"])
    assert res["recall"] == 0.5


M0 = _model_from_scores(np.array([[0.9, 0.1], [0.3, 0.6]]))
Y0 = sp.csr_array(np.array([[1.0, 0], [0, 0]]))
T0 = sp.csr_array(np.array([[0.0, 1], [1, 0]]))


@pytest.mark.parametrize("kw, exc, match", [
    (dict(model=3), TypeError, "model must be a fitted fastpu Factorization"),
    (dict(Y_train=np.ones((2, 2))), TypeError, "Y_train must be a scipy.sparse"),
    (dict(Y_test=sp.csr_array((3, 2))), ValueError, "Y_test has shape 3×2"),
    (dict(threshold=float("nan")), ValueError, "threshold must be finite"),
    (dict(threshold="high"), TypeError, "threshold must be a real number"),
    (dict(mu_p=1.5), ValueError, "mu_p must be <= 1.0, got 1.5"),
    (dict(c_p=-0.1), ValueError, "c_p must be >= 0.0, got -0.1"),
    (dict(Y_test=sp.csr_array((2, 2))), ValueError, "no test item outside the training items"),
    (dict(users=[5]), ValueError, "users"),
])
def test_bad_input_is_rejected(kw, exc, match):
    args = dict(model=M0, Y_train=Y0, Y_test=T0)
    args.update(kw)
    with pytest.raises(exc, match=match):
        cost_sensitive(args.pop("model"), args.pop("Y_train"), args.pop("Y_test"), **args)


def test_non_finite_scores_are_refused():
    bad = _model_from_scores(np.array([[np.nan, 0.1], [0.3, 0.6]]))
    with pytest.raises(ValueError, match="non-finite scores"):
        cost_sensitive(bad, Y0, T0)
