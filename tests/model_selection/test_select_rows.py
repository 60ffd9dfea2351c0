"""fastpu.select with split="rows": held-out instances scored from their features (paper 002)."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu.model_selection import _rows as R
from fastpu import select


def planted_multilabel(m=120, n=10, d=6, rank=3, per_row=2, seed=0):
    """Instances with features X; each row's labels are its top ``per_row`` of X W Hᵀ. Column 0
    of X is the row's index (a feature that lets the tests see which rows a fit was given);
    rows 0 and 1 get no label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    X[:, 0] = np.arange(m) / m
    S = X @ rng.normal(size=(d, rank)) @ rng.normal(size=(n, rank)).T
    top = np.argsort(-S, axis=1)[:, :per_row]
    Y = np.zeros((m, n))
    np.put_along_axis(Y, top, 1.0, axis=1)
    Y[:2] = 0.0
    return sp.csr_array(Y), X


@pytest.fixture(scope="module")
def planted():
    return planted_multilabel()


def _recording_fit(seen):
    """ocmf.fit that records the Y and user_features of every call."""
    def fit(Y, k, *, user_features=None, lam=1.0, **kw):
        seen.append((Y.copy(), None if user_features is None else np.array(user_features)))
        return fp.ocmf.fit(Y, k, user_features=user_features, lam=lam, **kw)
    return fit


def _ids(X):
    return set(np.rint(np.asarray(X)[:, 0] * 120).astype(int).tolist())


def test_rows_search_finds_the_planted_lambda(planted):
    Y, X = planted
    # the planted scores are x W Hᵀ with no per-label term: the paper's model, no intercept
    res = select.search("ocmf", Y, {"lam": [1.0, 1e4]}, split="rows", user_features=X, k=3,
                        n_iter=6, loss="logistic", rho=0.1, metric="ndcg@3", seed=0,
                        intercept=False)
    by_lam = {t["params"]["lam"]: t["best_score"] for t in res.trials}
    assert res.best_params["lam"] == 1.0
    assert by_lam[1.0] > 0.8 and by_lam[1.0] > by_lam[1e4] + 0.15   # a too-large λ clearly loses
    # the refit saw every row and all features: its W maps X to the user factors (rounded to
    # float32, ocmf's default dtype)
    np.testing.assert_allclose(res.model.user_factors, X @ res.model.extras["W"], rtol=1e-6)
    assert res.model.shape == Y.shape


@pytest.mark.parametrize("method, fixed, space", [
    ("ocmf", dict(k=3, loss="logistic", rho=0.1), {"lam": [0.1, 3.0]}),
    ("fbgd", dict(k=3, update="batch"), {"lam": [0.0, 0.1]}),
    ("wrmf", dict(k=3), {"alpha": [1.0, 10.0]}),
])
def test_each_iteration_is_scored_by_cold_start_of_the_fit_rows(planted, method, fixed, space):
    Y, X = planted
    res = select.search(method, Y, space, split="rows", user_features=X, n_iter=3,
                        metric="precision@3", seed=2, **fixed)
    assert all(t["error"] is None and len(t["scores"]) == 3 for t in res.trials)
    keep, valid = R.holdout_rows(Y, 0.2, 2, name="validation")
    kw = {**fixed, **{p: v for p, v in res.best_params.items() if p in space}}
    k = kw.pop("k")
    again = select._fit_function(method)[0](Y[keep], k, user_features=X[keep],
                                              n_iter=res.best_iter, seed=2, **kw)
    new = R.cold_start(again, X[valid])
    # by hand: the held-out rows' factors from their features, ranked over every label
    if method == "fbgd":
        ex = again.extras
        P = np.column_stack([X[valid] @ ex["V_user"], X[valid] @ ex["w_user"] + ex["w0"],
                             np.ones(valid.size)])
    else:        # ocmf's intercept (on by default, wrmf's too): a column of ones, W's last row
        assert again.params["intercept"] is True
        P = np.column_stack([X[valid], np.ones(valid.size)]) @ again.extras["W"]
    np.testing.assert_allclose(new.user_factors, P, rtol=1e-12, atol=1e-12)
    want = fp.evaluate(new, sp.csr_array(Y[valid].shape), Y[valid], k=3)["precision@3"]
    assert res.best_score == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_no_validation_row_reaches_a_fit(planted):
    Y, X = planted
    seen = []
    res = select.search(_recording_fit(seen), Y, {"lam": [0.1, 1.0, 10.0]}, split="rows",
                        user_features=X, k=3, n_iter=2, validation=0.25, seed=7)
    labelled = set(np.flatnonzero(np.diff(Y.indptr)).tolist())
    trials, refit = seen[:-1], seen[-1]
    assert len(trials) == 3
    fit_rows = _ids(trials[0][1])
    valid = set(range(120)) - fit_rows
    assert len(valid) == round(0.25 * len(labelled)) and valid <= labelled   # labelled rows only
    assert {0, 1} <= fit_rows                        # rows without a label stay with the fit
    for Yseen, Xseen in trials:
        assert _ids(Xseen) == fit_rows               # the same rows, none of validation
        rows = np.array(sorted(fit_rows))
        assert (Yseen != Y[rows]).nnz == 0           # their labels, aligned with their features
    assert _ids(refit[1]) == set(range(120)) and (refit[0] != Y).nnz == 0
    assert res.model.shape == Y.shape


def test_explicit_rows_and_dataset_features(planted):
    Y, X = planted
    rows_fit, rows_valid = np.arange(0, 90), np.arange(90, 120)
    seen = []
    data = fp.datasets.Dataset(name="planted", Y=Y, user_features=X, user_ids=np.arange(120) + 1000,
                               item_ids=np.arange(10))
    res = select.search(_recording_fit(seen), data, {"lam": [1.0]}, split="rows", k=3, n_iter=2,
                        validation=(rows_fit, rows_valid))
    assert _ids(seen[0][1]) == set(range(90)) and _ids(seen[-1][1]) == set(range(120))
    np.testing.assert_array_equal(res.model.user_ids, data.user_ids)
    # given features take precedence over the Dataset's
    seen2 = []
    X2 = np.hstack([X, np.ones((120, 1))])
    select.search(_recording_fit(seen2), data, {"lam": [1.0]}, split="rows", k=3, n_iter=1,
                  user_features=X2)
    assert seen2[0][1].shape[1] == 7


def test_sparse_features_give_the_dense_result(planted):
    Y, X = planted
    kw = dict(split="rows", k=3, n_iter=2, seed=1, refit=False)
    dense = select.search("ocmf", Y, {"lam": [0.5, 5.0]}, user_features=X, **kw)
    sparse = select.search("ocmf", Y, {"lam": [0.5, 5.0]}, user_features=sp.csr_array(X), **kw)
    for a, b in zip(dense.trials, sparse.trials):
        np.testing.assert_allclose(a["scores"], b["scores"], rtol=1e-9)


def test_same_seed_same_trials_and_tune_passes_split_through(planted):
    Y, X = planted
    kw = dict(budget=3, split="rows", user_features=X, k=3, n_iter=2, metric="ndcg@3")
    r1, r2 = select.tune("ocmf", Y, seed=4, **kw), select.tune("ocmf", Y, seed=4, **kw)
    r3 = select.tune("ocmf", Y, seed=5, **kw)
    strip = [(t["params"], t["scores"]) for t in r1.trials]
    assert strip == [(t["params"], t["scores"]) for t in r2.trials]
    assert strip != [(t["params"], t["scores"]) for t in r3.trials]
    np.testing.assert_array_equal(r1.model.extras["W"], r2.model.extras["W"])
    # the same search with the rows split done by hand: tune used split="rows"
    keep, valid = R.holdout_rows(Y, 0.2, 4, name="validation")
    assert sorted(keep.tolist() + valid.tolist()) == list(range(120))


def test_entries_split_is_the_default_and_unchanged(planted):
    Y, X = planted
    kw = dict(k=3, n_iter=2, seed=3, user_features=X, metric="ndcg@5", validation=0.5)
    a = select.search("ocmf", Y, {"lam": [0.5, 5.0]}, **kw)
    b = select.search("ocmf", Y, {"lam": [0.5, 5.0]}, split="entries", **kw)
    assert [t["scores"] for t in a.trials] == [t["scores"] for t in b.trials]
    # entries: the fit sees every row (the held-out positives, not rows), scored as before
    Y_fit, Y_valid = fp.split.validation_split(Y, 0.5, seed=3)
    m = fp.ocmf.fit(Y_fit, 3, lam=a.best_params["lam"], user_features=X, n_iter=a.best_iter, seed=3)
    assert a.best_score == fp.evaluate(m, Y_fit, Y_valid, k=5)["ndcg@5"]


def _bad(Y, X, **kw):
    return select.search("ocmf", Y, {"lam": [1.0]}, k=2, n_iter=1, **kw)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(split="nope"), ValueError, "unknown split 'nope'; expected one of 'entries', 'rows'"),
    (dict(split=1), TypeError, "split must be 'entries' or 'rows'"),
    (dict(split="rows", user_features="X"), TypeError, "user_features must be a numeric array"),
    (dict(split="rows", validation=0.001), ValueError,
     "validation=0.001 of the 118 rows of Y that have a positive holds out 0 rows"),
])
def test_bad_split_values(planted, kw, exc, match):
    Y, X = planted
    kw = {"user_features": X, **kw}
    with pytest.raises(exc, match=match):
        _bad(Y, X, **kw)


@pytest.mark.parametrize("call, exc, match", [
    (lambda Y, X: _bad(Y, X, split="rows"), ValueError,
     "search with split='rows' needs user_features .*pass user_features=X, or a Dataset"),
    (lambda Y, X: _bad(Y, X[:5], split="rows", user_features=X[:5]), ValueError,
     "user_features has 5 rows, expected 120"),
    (lambda Y, X: select.search("csrr", Y, {"lam1": [1.0]}, split="rows", user_features=X),
     ValueError, "cold start from their features, which csrr does not support"),
    (lambda Y, X: select.search("homf", Y, {"T": [1]}, split="rows", user_features=X),
     ValueError, "which homf does not support"),
    (lambda Y, X: select.search("als", Y, {"alpha": [1.0]}, split="rows", user_features=X),
     ValueError, "als does not take user_features"),
    (lambda Y, X: _bad(Y, X, split="rows", user_features=X, validation=0.9999), ValueError,
     "holds out 118 rows; split='rows' needs at least one held-out row and one kept row"),
    (lambda Y, X: _bad(Y, X, split="rows", user_features=X, validation=([0, 1], [1, 2])),
     ValueError, "must be disjoint row indices; 1 rows are in both"),
    (lambda Y, X: _bad(Y, X, split="rows", user_features=X, validation=([0], [2, 500])),
     ValueError, r"validation\[1\] \(rows_valid\) must lie in \[0, 120\)"),
    (lambda Y, X: _bad(Y, X, split="rows", user_features=X, validation=([5, 6], [0, 1])),
     ValueError, "rows_valid\\) has no row with a positive"),
    (lambda Y, X: _bad(Y, X, split="rows", user_features=X, validation=([], [5])),
     ValueError, r"rows_fit\) is empty"),
    (lambda Y, X: _bad(Y, X, split="rows", user_features=X, validation=([0], [1], [2])),
     ValueError, r"pair \(rows_fit, rows_valid\), got 3 items"),
    (lambda Y, X: _bad(Y, X, split="rows", user_features=X, validation=(["a"], [2])),
     TypeError, "rows_fit\\) must be integer indices"),
])
def test_rows_errors_are_named(planted, call, exc, match):
    Y, X = planted
    with pytest.raises(exc, match=match):
        call(Y, X)


def test_a_dataset_without_features_is_refused(planted):
    Y, _ = planted
    data = dataclasses.replace(fp.datasets.synthetic(30, 10, rank=2, density=0.3, seed=0))
    with pytest.raises(ValueError, match="needs user_features"):
        select.tune("ocmf", data, budget=1, split="rows", k=2, n_iter=1)


@pytest.mark.parametrize("fit, kw", [(fp.ocmf.fit, dict(loss="logistic")),
                                     (fp.fbgd.fit, dict(update="batch")),
                                     (fp.fbgd.fit, dict(update="coordinate", biases=False))])
def test_callback_iterates_carry_the_feature_map(planted, fit, kw):
    """A fit's callback model holds the current W (ocmf) / V_user and biases (fbgd): the last
    iterate's cold start equals the returned model's."""
    Y, X = planted
    iterates = []
    model = fit(Y, 3, user_features=X, n_iter=3, seed=0, **kw,
                callback=lambda info: iterates.append(info["model"]()) or False)
    assert len(iterates) == 3
    for key in ("W", "V_user", "w_user", "w0"):
        if key in model.extras:
            np.testing.assert_array_equal(iterates[-1].extras[key], model.extras[key])
    assert not np.array_equal(iterates[0].extras["W"], iterates[-1].extras["W"])   # copies per step
    np.testing.assert_array_equal(fp.fold_in(iterates[-1], user_features=X[:7]).user_factors,
                                  fp.fold_in(model, user_features=X[:7]).user_factors)
