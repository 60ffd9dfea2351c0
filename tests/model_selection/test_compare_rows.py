"""fastpu.compare with split="rows": tuned on training instances, tested once on held-out ones."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu.model_selection import _rows as R
from fastpu import compare as C
from fastpu import select
from fastpu.cli import main

from test_select_rows import _ids, planted_multilabel

SQ = ("SQ", "ocmf", {"k": 3, "n_iter": 2, "loss": "square"})


@pytest.fixture(scope="module")
def data():
    Y, X = planted_multilabel()
    return fp.datasets.Dataset(name="planted", Y=Y, user_features=X, user_ids=np.arange(120),
                               item_ids=np.arange(10))


@pytest.fixture(scope="module")
def result(data):
    return C.compare(data, ["popularity", SQ], splits=2, budget=2, metric="ndcg@5", seed=4,
                     split="rows")


def test_rows_follow_the_protocol(data, result):
    assert [(r["split"], r["label"]) for r in result.rows] == \
        [(0, "popularity"), (0, "SQ"), (1, "popularity"), (1, "SQ")]
    Y, X = data.Y, data.user_features
    keep, test = R.holdout_rows(Y, 0.2, 5, name="test_frac")          # split 1
    assert test.size == round(0.2 * 118) and np.all(np.diff(Y.indptr)[test] > 0)
    # SQ: tuned with split="rows" on the training instances only, scored from test features
    res = select.tune("ocmf", Y[keep], budget=2, metric="ndcg@5", seed=5, split="rows",
                      user_features=X[keep], k=3, n_iter=2, loss="square")
    # the cold start: the test rows' features with the intercept's column of ones, times W
    X1 = np.column_stack([X[test], np.ones(test.size)])
    scores = X1 @ res.model.extras["W"] @ res.model.item_factors.T
    model = fp.Factorization(scores, np.eye(10))
    empty = sp.csr_array((test.size, 10))
    want = fp.evaluate(model, empty, Y[test], k=(5, 10))
    row = result.rows[3]
    for key in ("precision@5", "ndcg@10", "map@10", "auc"):
        assert row[key] == pytest.approx(want[key], rel=1e-12)
    assert row["best_params"]["loss"] == "square" and row["best_iter"] == res.best_iter
    assert "user_features" not in row["best_params"]
    # popularity: label frequencies of the training instances, the same ranking for every test row
    freq = np.asarray(Y[keep].sum(axis=0)).ravel()
    pop = fp.Factorization(np.ones((test.size, 1)), freq[:, None])
    want = fp.evaluate(pop, empty, Y[test], k=(5, 10))
    assert result.rows[2]["ndcg@10"] == pytest.approx(want["ndcg@10"], rel=1e-12)
    assert "instances" in result.description and "cold start" in result.description


def test_no_test_instance_reaches_a_fit(data, monkeypatch):
    seen = []
    real = fp.ocmf.fit

    def recording(Y, k, *, user_features=None, lam=1.0, rho=0.01, **kw):
        seen.append((Y.copy(), np.array(user_features)))
        return real(Y, k, user_features=user_features, lam=lam, rho=rho, **kw)

    monkeypatch.setattr(fp.ocmf, "fit", recording)
    C.compare(data, [SQ], splits=2, budget=3, seed=0, split="rows", test_frac=0.25)
    assert len(seen) == 2 * (3 + 1)                  # per split: 3 trials and the refit
    Y = data.Y
    for s in range(2):
        calls = seen[4 * s:4 * s + 4]
        keep, test = R.holdout_rows(Y, 0.25, s, name="test_frac")
        trained = set(keep.tolist())
        for Yseen, Xseen in calls:
            rows = _ids(Xseen)
            assert rows <= trained and not rows & set(test.tolist())
            assert (Yseen != Y[np.array(sorted(rows))]).nnz == 0
        assert _ids(calls[-1][1]) == trained         # the refit: every training instance
        assert all(len(_ids(x)) < len(trained) for _, x in calls[:-1])   # trials: less


def test_same_seed_same_table(data, result):
    again = C.compare(data, ["popularity", SQ], splits=2, budget=2, metric="ndcg@5", seed=4,
                      split="rows")
    keys = ("label", "split", "precision@5", "ndcg@10", "map@10", "auc", "best_params", "best_iter")
    assert [[r[k] for k in keys] for r in again.rows] == [[r[k] for k in keys] for r in result.rows]
    other = C.compare(data, ["popularity", SQ], splits=2, budget=2, metric="ndcg@5", seed=5,
                      split="rows")
    assert [r["ndcg@10"] for r in other.rows] != [r["ndcg@10"] for r in result.rows]


def test_entries_split_ignores_the_features_as_before():
    syn = fp.datasets.synthetic(70, 45, rank=3, density=0.15, seed=2)
    feat = dataclasses.replace(syn, user_features=np.random.default_rng(0).normal(size=(70, 4)))
    kw = dict(splits=1, budget=1, metric="ndcg@5", seed=1)
    a = C.compare(feat, ["popularity", SQ], **kw)
    b = C.compare(syn.Y, ["popularity", SQ], split="entries", **kw)
    assert [r["ndcg@10"] for r in a.rows] == [r["ndcg@10"] for r in b.rows]
    assert "per-user" in a.description


def test_all_means_the_cold_start_methods_and_fixed_features_override(data):
    entries = C._entries("all", None, "rows")
    assert [m for _, m, _ in entries] == ["popularity", "ocmf", "fbgd"]
    X1 = np.hstack([data.user_features, np.ones((120, 1))])
    feats = C._row_features([("a", "ocmf", {}), ("b", "ocmf", {"user_features": X1}),
                             ("w", "wrmf", {"user_features": sp.csr_array(X1)})], data, 120)
    assert feats["a"].shape[1] == 6 and feats["b"].shape[1] == 7 and sp.issparse(feats["w"])
    res = C.compare(data, [("wrmf", "wrmf", {"k": 3, "n_iter": 2, "user_features": X1})],
                    splits=1, budget=1, split="rows")
    assert np.isfinite(res.rows[0]["ndcg@10"])


@pytest.mark.parametrize("Y_of, methods, kw, match", [
    (lambda d: d.Y, [SQ], {}, r"'SQ' \(ocmf\) needs user_features .*pass a Dataset with user_features"),
    (lambda d: d, ["wrmf"], {}, "wrmf is given no features by default"),
    (lambda d: d, ["csrr"], {}, "which csrr does not support"),
    (lambda d: d, ["homf"], {}, "which homf does not support"),
    (lambda d: d, [("b", "bpr", {"user_features": 1})], {}, "bpr does not take user_features"),
    (lambda d: d, [("x", "ocmf", {"user_features": np.ones((3, 2))})], {},
     r"user_features of 'x' has 3 rows, expected 120"),
    (lambda d: d, [SQ], {"test_frac": 0.001}, "test_frac=0.001 of the 118 rows .* holds out 0 rows"),
    (lambda d: d, [SQ], {"split": "users"}, "unknown split 'users'"),
])
def test_rows_errors_are_named(data, Y_of, methods, kw, match):
    with pytest.raises(ValueError, match=match):
        C.compare(Y_of(data), methods, **{"split": "rows", "splits": 1, "budget": 1, **kw})


def test_cli_compare_rows_on_yeast(tmp_path):
    out = tmp_path / "yeast.md"
    code = main(["compare", "--data", "yeast", "--split", "rows", "--methods",
                 "popularity,ocmf", "--splits", "1", "--budget", "1", "--out", str(out), "--quiet"])
    assert code == 0
    text = out.read_text()
    assert "yeast: 2417 instances × 14 labels" in text and "| ocmf |" in text.replace("**", "")
