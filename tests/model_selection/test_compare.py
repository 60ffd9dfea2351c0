"""fastpu.compare: tuned on each split's training part, tested once on its test part."""

import numpy as np
import pytest

import fastpu as fp
from fastpu import compare as C
from fastpu import select
from fastpu.model_selection.split import holdout


@pytest.fixture(scope="module")
def data():
    return fp.datasets.synthetic(70, 45, rank=3, density=0.15, seed=2)


@pytest.fixture(scope="module")
def result(data):
    return C.compare(data, ["popularity", ("SQ", "ocmf", {"k": 3, "n_iter": 2, "loss": "square"})],
                     splits=2, budget=2, metric="ndcg@5", seed=4)


def test_rows_follow_the_protocol(data, result):
    assert [(r["split"], r["label"]) for r in result.rows] == \
        [(0, "popularity"), (0, "SQ"), (1, "popularity"), (1, "SQ")]
    # split 1's SQ row: tune on that split's training part only, evaluate once on its test part
    Y_train, Y_test = holdout(data.Y, test_frac=0.2, seed=5)
    res = select.tune("ocmf", Y_train, budget=2, metric="ndcg@5", seed=5, k=3, n_iter=2, loss="square")
    want = fp.evaluate(res.model, Y_train, Y_test, k=(5, 10))
    row = result.rows[3]
    for key in ("precision@5", "ndcg@10", "map@10", "auc"):
        assert row[key] == pytest.approx(want[key], rel=1e-12)
    assert row["best_params"]["loss"] == "square" and row["best_iter"] == res.best_iter


def test_summary_is_mean_and_std_over_splits(result):
    summ = result.summary()
    vals = [r["ndcg@10"] for r in result.rows if r["label"] == "SQ"]
    assert summ["SQ"]["ndcg@10"] == pytest.approx((np.mean(vals), np.std(vals, ddof=1)))
    md = result.to_markdown()
    assert "| method | P@5 | nDCG@10 | MAP@10 | AUC | fit s |" in md and "popularity" in md
    assert md.count("**") == 2                 # the best nDCG@10 is bold


def test_description_counts_the_splits(data, result):
    assert "2 random per-user 80%/20% splits (seeds 4..5)" in result.description
    one = C.compare(data, ["popularity"], splits=1, seed=7)
    assert "1 random per-user 80%/20% split (seed 7)" in one.description


def test_markdown_of_one_split_shows_no_spread():
    vals = dict(zip([key for _, key in C.COLUMNS], (0.3, 0.25, 0.2, 0.9, 1.5)))
    rows = [dict(label=lab, split=0, **{k: v * f for k, v in vals.items()})
            for lab, f in (("A", 1.0), ("B", 0.5))]
    md = C.CompareResult(rows=rows, labels=["A", "B"], description="d").to_markdown()
    assert "±" not in md and "| **A** | 0.3000 | 0.2500 | 0.2000 | 0.9000 | 1.5 |" in md
    assert "one split: no spread" in md
    two = C.CompareResult(rows=rows + [dict(r, split=1) for r in rows], labels=["A", "B"],
                          description="d").to_markdown()
    assert "0.3000 ± 0.0000" in two and "mean ± standard deviation over the splits" in two


def test_plot_writes_a_png(result, tmp_path):
    path = tmp_path / "cmp.png"
    result.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # matplotlib's own errors were a FileNotFoundError from the image writer and, for a
    # number, AttributeError: 'int' object has no attribute 'write'
    with pytest.raises(ValueError, match="the folder .* does not exist; create it first"):
        result.plot(tmp_path / "missing" / "cmp.png")
    with pytest.raises(TypeError, match="path must be a file path"):
        result.plot(3)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(methods=["nope"]), ValueError, "unknown method 'nope'"),
    (dict(methods=[]), ValueError, "methods is empty"),
    (dict(methods=["ocmf", "ocmf"]), ValueError, "labels must be unique"),
    (dict(methods=[("a", "ocmf")]), ValueError, "a method entry must be"),
    (dict(splits=0), ValueError, "splits must be >= 1"),
    (dict(budget=0), ValueError, "budget must be >= 1"),
    (dict(test_frac=0.0), ValueError, "test_frac must be >"),
])
def test_bad_input_is_named(data, kw, exc, match):
    with pytest.raises(exc, match=match):
        C.compare(data.Y, **{"methods": ["popularity"], **kw})


def test_bad_metric_is_refused_before_any_fit(data, monkeypatch):
    # a typo used to fit the first method, then fail when it was tuned
    def boom(*args, **kwargs):
        raise AssertionError("fitted before the metric was checked")

    monkeypatch.setattr(C, "tune", boom)
    monkeypatch.setattr(C, "tune", boom)
    with pytest.raises(ValueError, match=r"metric must be '<name>@<k>'.*got 'ndgc@10' \(did you mean 'ndcg'\?\)"):
        C.compare(data.Y, ["popularity", "ocmf"], splits=1, budget=1, metric="ndgc@10")


def test_unknown_fixed_kwarg_is_refused_before_any_fit(data, monkeypatch):
    monkeypatch.setattr(C, "tune", lambda *a, **k: (_ for _ in ()).throw(AssertionError("fitted")))
    with pytest.raises(TypeError, match=r"'SQ' \(ocmf\.fit\) got unknown keyword argument 'lamda' "
                                        r"\(did you mean 'lam'\?\); it takes .*\blam\b"):
        C.compare(data.Y, ["popularity", ("SQ", "ocmf", {"lamda": 1.0})], splits=1, budget=1)


def test_an_entry_may_bring_its_own_search_space(data):
    """``space`` in an entry's settings is tune's (results_compare's SQ-SQ and paper 003 rows)."""
    res = C.compare(data.Y, [("SQ-SQ", "ocmf", {"k": 3, "n_iter": 2, "loss": "square", "rho": 1.0,
                                                "space": {"lam": [0.5, 8.0]}})],
                    splits=1, budget=2, seed=1)
    assert res.rows[0]["best_params"]["lam"] in (0.5, 8.0)
    assert res.rows[0]["best_params"]["rho"] == 1.0 and res.rows[0]["best_params"]["k"] == 3
    with pytest.raises(TypeError, match="'SQ' \\(ocmf\\.fit\\) got unknown keyword argument 'lamda'"):
        C.compare(data.Y, [("SQ", "ocmf", {"lamda": 1.0, "space": {"rho": [0.1]}})], splits=1,
                  budget=1)


def test_errors_number_the_splits_from_1_like_the_progress(data):
    with pytest.raises(ValueError, match=r"compare: 'SQ' on split 1/2 \(the training part"):
        C.compare(data.Y, [("SQ", "ocmf", {"k": 0, "n_iter": 1})], splits=2, budget=1)


def test_a_params_key_that_names_no_entry_is_refused_before_any_fit(data, monkeypatch):
    """params={'ocfm': {'k': 2}} for methods=['ocmf'] was ignored: the run used k=64."""
    def boom(*args, **kwargs):
        raise AssertionError("fitted before params was checked")

    monkeypatch.setattr(C, "tune", boom)
    monkeypatch.setattr(C, "tune", boom)
    with pytest.raises(ValueError, match=r"params has key 'ocfm' that names no entry of methods "
                                         r"\(did you mean 'ocmf'\?\); its keys must be labels of the "
                                         r"compared methods: 'popularity', 'ocmf'"):
        C.compare(data.Y, ["popularity", "ocmf"], splits=1, budget=1, params={"ocfm": {"k": 2}})
    with pytest.raises(ValueError, match=r"params has keys 'x', 'ocmf' that name no entry of "
                                         r"methods; its keys must be labels .*: 'SQ'$"):
        C.compare(data.Y, [("SQ", "ocmf", {})], splits=1, budget=1,
                  params={"x": {}, "ocmf": {"k": 2}})


def test_params_reach_the_entry_they_name(data, monkeypatch):
    seen = {}

    def tune(method, Y, **kw):
        seen[method] = kw
        raise RuntimeError("stop after the first tune")

    monkeypatch.setattr(C, "tune", tune)
    with pytest.raises(RuntimeError, match="stop after"):
        C.compare(data.Y, [("SQ", "ocmf", {"loss": "square"})], splits=1, budget=1,
                  params={"SQ": {"k": 2}})
    assert seen["ocmf"]["k"] == 2 and seen["ocmf"]["loss"] == "square"


def test_implicits_baselines_are_compared_like_the_others():
    """als and bpr (implicit's, in the test extra) through compare, the code path of the
    published comparisons: tuned, refitted, scored; the ALS row is its refit scored by hand."""
    Y = fp.datasets.synthetic(60, 40, rank=3, density=0.2, seed=2).Y
    res = C.compare(Y, ["als", "bpr"], splits=1, budget=2, n_threads=1,
                    params={"als": {"n_iter": 3}, "bpr": {"n_iter": 20}})
    assert [r["label"] for r in res.rows] == ["als", "bpr"]
    assert all(0.0 <= r["ndcg@10"] <= 1.0 and 0.0 <= r["auc"] <= 1.0 for r in res.rows)
    als = res.rows[0]
    assert set(als["best_params"]) == {"k", "alpha", "regularization"} and als["best_iter"] >= 1
    train, test = fp.split.holdout(Y, test_frac=0.2, seed=0)
    model = fp.baselines.implicit_als(train, n_iter=als["best_iter"], seed=0, n_threads=1,
                                      **als["best_params"])
    by_hand = fp.evaluate(model, train, test, k=10)["ndcg@10"]
    assert als["ndcg@10"] == pytest.approx(by_hand, rel=1e-9)


def test_strong_generalization_folds_the_held_out_users_in():
    """protocol="strong": every method is fitted on the other users and scored on the held-out
    users' test part after folding in their other positives (EASE: x B)."""
    import warnings

    import fastpu as fp

    Y = fp.datasets.synthetic(120, 50, rank=3, density=0.15, seed=4).Y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fp.compare.compare(Y, ["popularity", "ease", ("mf", "ocmf", {"n_iter": 3})],
                                 splits=1, budget=2, protocol="strong", users_frac=0.25)
    assert [r["label"] for r in res.rows] == ["popularity", "ease", "mf"]
    assert all(0.0 <= r["ndcg@10"] <= 1.0 for r in res.rows)
    assert "strong generalization" in res.description
    # the EASE row is the fitted-on-the-others model folded in, scored by hand
    s = fp.split.held_out_users(Y, users_frac=0.25, test_frac=0.2, seed=0)
    lam = res.rows[1]["best_params"]["lam"]
    model = fp.fold_in(fp.baselines.ease(s.train, lam=lam), s.fold_in)
    by_hand = fp.evaluate(model, s.fold_in, s.test, k=10)["ndcg@10"]
    assert res.rows[1]["ndcg@10"] == pytest.approx(by_hand, rel=1e-12)
    with pytest.raises(ValueError, match="'bpr' \\(bpr\\) has no fold-in"):
        fp.compare.compare(Y, ["bpr"], protocol="strong")
    with pytest.raises(ValueError, match="split='rows'"):
        fp.compare.compare(Y, ["ocmf"], protocol="strong", split="rows")


def test_strong_generalization_cuts_a_user_graph_to_the_training_users():
    """A user graph has a node per user of Y; under protocol="strong" the methods are fitted on
    the training users only, so the graph given to them is theirs (it was passed whole, and
    every trial failed on its shape). User features, which fold-in from positives cannot use
    for the held-out users, are refused before any fit."""
    import warnings

    import scipy.sparse as sp

    import fastpu as fp

    Y = fp.datasets.synthetic(120, 50, rank=3, density=0.15, seed=4).Y
    rng = np.random.default_rng(0)
    G = sp.random_array((120, 120), density=0.05, random_state=rng, format="csr")
    G = ((G + G.T) > 0).astype(np.float64)
    G.setdiag(0)
    G.eliminate_zeros()
    entries = [("mf + graph", "ocmf", {"n_iter": 3, "user_graph": G}),
               ("homf + graph", "homf", {"n_iter": 3, "user_graph": G})]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fp.compare.compare(Y, entries, splits=1, budget=2, protocol="strong", users_frac=0.25)
    assert [r["label"] for r in res.rows] == ["mf + graph", "homf + graph"]
    assert all(0.0 <= r["ndcg@10"] <= 1.0 for r in res.rows)
    s = fp.split.held_out_users(Y, users_frac=0.25, test_frac=0.2, seed=0)
    cut = C._train_users_graph({"user_graph": G}, s.train_users)["user_graph"]
    assert cut.shape == (s.train.shape[0],) * 2
    np.testing.assert_array_equal(cut.toarray(), G.toarray()[np.ix_(s.train_users, s.train_users)])
    X = np.ones((120, 2))
    with pytest.raises(ValueError, match="'mf' is given user_features"):
        fp.compare.compare(Y, [("mf", "ocmf", {"user_features": X})], protocol="strong")
