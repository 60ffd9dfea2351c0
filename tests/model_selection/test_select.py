"""fastpu.select: search / tune on a validation split carved from the training data."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.stats as stats

import fastpu as fp
from fastpu import select
from fastpu._core.progress import Progress
from fastpu.model import Factorization
from fastpu.model_selection.split import validation_split


@pytest.fixture(scope="module")
def planted():
    return fp.datasets.synthetic(80, 50, rank=3, density=0.12, seed=0)


def _oracle_fit(data, seen):
    """A fit whose model is the planted score matrix plus noise that grows with |a - 0.7| and
    with the distance of the iteration from 2: the planted optimum is a = 0.7 at iteration 2."""
    U, Vf = data.extras["U"], data.extras["V"]

    def fit(Y, k, *, a=0.0, n_iter=4, seed=0, callback=None, n_threads=None, verbose=False):
        seen.append((Y.copy(), a, n_iter))
        rng = np.random.default_rng(seed)
        noise_u, noise_v = rng.normal(size=U.shape), rng.normal(size=Vf.shape)
        progress = Progress("oracle", callback=callback)
        for t in range(1, n_iter + 1):
            w = abs(a - 0.7) + 0.3 * abs(t - 2)
            P = np.hstack([U, w * noise_u])
            Q = np.hstack([Vf, w * noise_v])
            if progress.step(t, w, model=lambda P=P, Q=Q: Factorization(P, Q, method="oracle")):
                break
        return Factorization(P, Q, history=progress.history, params=dict(a=a, n_iter=n_iter))
    return fit


def test_search_finds_the_planted_optimum_and_its_iteration(planted):
    seen = []
    res = select.search(_oracle_fit(planted, seen), planted.Y, {"a": [0.1, 0.4, 0.7, 1.0]},
                        n_iter=4, metric="ndcg@10", seed=3)
    assert res.best_params == {"a": 0.7}
    assert res.best_iter == 2
    assert res.model.params == {"a": 0.7, "n_iter": 2}      # refitted for the best iteration
    assert len(res.trials) == 4 and all(len(t["scores"]) == 4 for t in res.trials)
    # every trial saw the fit part only, the refit saw all of Y
    Y_fit, Y_valid = validation_split(planted.Y, 0.2, seed=3)
    for Yseen, _, _ in seen[:-1]:
        assert (Yseen != Y_fit).nnz == 0
    assert (seen[-1][0] != planted.Y).nnz == 0
    assert Y_valid.nnz > 0 and (Y_valid.multiply(Y_fit)).nnz == 0
    assert "| trial |" in res.table().splitlines()[0]


def test_random_search_draws_from_distributions_reproducibly(planted):
    space = {"a": stats.uniform(0.0, 1.4)}
    r1 = select.search(_oracle_fit(planted, []), planted.Y, space, n_trials=6, n_iter=3, seed=5)
    r2 = select.search(_oracle_fit(planted, []), planted.Y, space, n_trials=6, n_iter=3, seed=5)
    r3 = select.search(_oracle_fit(planted, []), planted.Y, space, n_trials=6, n_iter=3, seed=6)
    assert [t["params"] for t in r1.trials] == [t["params"] for t in r2.trials]
    assert [t["scores"] for t in r1.trials] == [t["scores"] for t in r2.trials]
    assert [t["params"] for t in r1.trials] != [t["params"] for t in r3.trials]
    assert all(isinstance(t["params"]["a"], float) for t in r1.trials)
    # the winner is the drawn value nearest the planted 0.7
    drawn = [t["params"]["a"] for t in r1.trials]
    assert r1.best_params["a"] == min(drawn, key=lambda a: abs(a - 0.7))


def test_grid_sample_without_repetition(planted):
    res = select.search(_oracle_fit(planted, []), planted.Y, {"a": [0.0, 0.2, 0.4, 0.6, 0.8]},
                        n_trials=3, n_iter=2, seed=0, refit=False)
    drawn = [t["params"]["a"] for t in res.trials]
    assert len(set(drawn)) == 3 and res.model is None


CASES = [
    ("ocmf", dict(k=4, loss="logistic"), {"lam": [0.5, 5.0]}),
    ("fbgd", dict(k=4, update="batch"), {"lam": [0.0, 0.1]}),
    ("csrr", dict(k=4, variant="e"), {"lam1": [0.1, 1.0]}),
    ("csrr", dict(variant="I"), {"lam1": [0.5, 2.0]}),
    ("homf", dict(k=4, mode="dense"), {"T": [1, 3]}),
    ("wrmf", dict(k=4), {"alpha": [1.0, 20.0]}),
]


@pytest.mark.parametrize("method, fixed, space", CASES)
def test_each_method_is_scored_per_iteration_as_evaluate_would(planted, method, fixed, space):
    Y = planted.Y
    res = select.search(method, Y, space, n_iter=3, metric="precision@5", seed=1, **fixed)
    assert len(res.trials) == 2 and all(t["error"] is None for t in res.trials)
    assert all(len(t["scores"]) == 3 for t in res.trials)
    # the recorded score is evaluate() of the same fit stopped at that iteration
    Y_fit, Y_valid = validation_split(Y, 0.2, seed=1)
    kw = {**fixed, **res.best_params}
    k = kw.pop("k", None)
    again = select._fit_function(method)[0](Y_fit, k, n_iter=res.best_iter, seed=1, **kw)
    want = fp.evaluate(again, Y_fit, Y_valid, k=5)["precision@5"]
    assert res.best_score == pytest.approx(want, rel=1e-12, abs=1e-12)
    # the refit saw all of Y for the best number of iterations
    assert res.model.shape == Y.shape and len(res.model.history) == res.best_iter


def test_tune_fixes_what_the_user_fixes(planted):
    # loss="square" keeps the two families of the square loss, SQ-wSQ and iALS's weighting,
    # each with its own settings; negatives="full" as well leaves SQ-wSQ alone
    res = select.tune("ocmf", planted.Y, budget=3, k=4, n_iter=2, loss="square", metric="ndcg@5")
    assert res.model.params["loss"] == "square"
    assert [t["params"]["negatives"] for t in res.trials[:2]] == ["full", "all"]
    assert res.trials[1]["params"] == dict(negatives="all", a_bar=0.0, nu=1.0, rho=0.6, lam=0.006)
    assert all("loss" not in t["params"] and "k" not in t["params"] for t in res.trials)
    assert {"k", "loss", "lam", "rho", "negatives", "nu"} <= set(res.best_params)
    res = select.tune("ocmf", planted.Y, budget=3, k=4, n_iter=2, loss="square",
                      negatives="full", metric="ndcg@5")
    assert res.model.params["negatives"] == "full" and res.model.params["nu"] == 0.0
    assert set(res.best_params) == {"k", "loss", "lam", "rho", "negatives", "nu"}
    assert all(set(t["params"]) == {"lam", "rho", "nu"} for t in res.trials)
    assert res.trials[0]["params"] == dict(nu=0.0, rho=1 / 6, lam=6.0)     # the fit's own defaults
    space, fixed = select.default_space("ocmf", lam=1.0)
    assert set(space) == {"k", "rho"} and fixed["lam"] == 1.0


def test_tune_climbs_the_rank_ladder_while_validation_improves(monkeypatch):
    """Half the budget at the start rank over both families, then the best setting at twice the
    rank (and one drawn around it) while the best at the new rank beats the one below; the rest
    around the best. The ladder reads the trials' scores: here a fit whose validation score
    grows with k up to 256 and falls above it."""
    from fastpu.model_selection import select as S

    Y = fp.datasets.synthetic(700, 600, rank=4, density=0.03, seed=1).Y      # ranks to 512
    seen_k = []

    def score_by_rank(holdout_score):
        def score(model):
            k = model.user_factors.shape[1]
            seen_k.append(k)
            return {64: 0.1, 128: 0.2, 256: 0.3, 512: 0.25}.get(k, 0.0) + 1e-3 * model.params["rho"]
        return score

    real = S._holdout

    def holdout(*a, **kw):
        h, fixed = real(*a, **kw)
        return S._Holdout(h.Y_fit, h.fit_kw, score_by_rank(h.score), h.metric), fixed

    monkeypatch.setattr(S, "_holdout", holdout)
    res = select.tune("ocmf", Y, budget=8, n_iter=1, refit=False)
    ks = [t["params"]["k"] for t in res.trials]
    assert ks[:4] == [128] * 4                                  # half the budget at the start
    assert {t["params"]["loss"] for t in res.trials[:4]} == {"square", "logistic"}
    assert ks[4:8] == [256, 256, 512, 512]                     # climb, climb, then stop above 256
    assert res.best_params["k"] == 256 and 512 in seen_k
    # a fixed rank: every trial at it, no ladder
    res = select.tune("ocmf", Y, budget=3, k=32, n_iter=1, refit=False)
    assert all("k" not in t["params"] for t in res.trials)


def test_tune_with_a_space_that_searches_a_default_fixed_setting(planted):
    """A given space may search k, which the default settings fix at 64: the default yields,
    but a parameter the user fixes and searches is still refused."""
    res = select.tune("wrmf", planted.Y, budget=2, space={"k": [2, 3], "lam": [1.0]}, n_iter=2,
                      metric="ndcg@5")
    assert res.best_params["k"] in (2, 3) and res.model.user_factors.shape[1] == res.best_params["k"]
    assert all(set(t["params"]) == {"k", "lam"} for t in res.trials)
    with pytest.raises(ValueError, match="'k' is both searched"):
        select.tune("wrmf", planted.Y, budget=2, space={"k": [2, 3]}, k=4, n_iter=2)


def test_default_spaces_are_valid_for_every_method(planted):
    for method in select.NAMES:
        space, fixed = select.default_space(method, planted.Y)
        fit = select._fit_function(method)[0]
        if space:                 # popularity has nothing to search (tune fits it once)
            select._check_space(space, fit, fixed, *planted.Y.shape)   # raises if a name is wrong
    assert [m for m in select.NAMES if not select.default_space(m)[0]] == ["popularity"]
    space, _ = select.default_space("homf", planted.Y, user_graph=sp.eye(80))
    assert "alpha" in space
    # a graph is useless to ocmf with its default lam_graph = 0: searched when a graph is given
    space, _ = select.default_space("ocmf", planted.Y, item_graph=sp.eye(planted.Y.shape[1]))
    assert "lam_graph" in space
    space, fixed = select.default_space("ocmf", planted.Y, user_graph=sp.eye(80), lam_graph=0.5)
    assert "lam_graph" not in space and fixed["lam_graph"] == 0.5
    assert "lam_graph" not in select.default_space("ocmf", planted.Y)[0]


def test_dataset_ids_survive_the_refit():
    data = fp.datasets.from_pairs([f"u{i % 9}" for i in range(60)], [i % 7 for i in range(60)])
    res = select.search("ocmf", data, {"lam": [1.0]}, k=2, n_iter=2, validation=0.3)
    np.testing.assert_array_equal(res.model.user_ids, data.user_ids)


@pytest.mark.parametrize("call, exc, match", [
    (lambda Y: select.search("nope", Y, {"lam": [1]}), ValueError, "method must be one of"),
    (lambda Y: select.search("ocmf", Y, {"lamb": [1]}, k=2), ValueError, "unknown parameter 'lamb'"),
    (lambda Y: select.search("ocmf", Y, {"lam": []}, k=2), ValueError, r"space\['lam'\] is an empty list"),
    (lambda Y: select.search("ocmf", Y, {"lam": 3.0}, k=2), TypeError, r"space\['lam'\] must be a list"),
    (lambda Y: select.search("ocmf", Y, {}, k=2), ValueError, "space is empty"),
    (lambda Y: select.search("ocmf", Y, [("lam", 1)], k=2), TypeError, "space must be a dict"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, lam=2, k=2), ValueError, "both searched"),
    (lambda Y: select.search("ocmf", Y, {"n_iter": [1, 2]}, k=2), ValueError, "must not search 'n_iter'"),
    (lambda Y: select.search("ocmf", Y, {"lam": stats.uniform()}, k=2), ValueError, "n_trials is required"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, n_trials=0), ValueError, "n_trials must be >= 1"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, metric="ndcg"), ValueError, "metric must be"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, metric="nope@5"), ValueError, "metric must be"),
    # non-ASCII digits pass str.isdigit(); '²' then broke int() and '٥' a lookup (KeyError)
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, metric="ndcg@²"), ValueError, "metric must be"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, metric="ndcg@٥"), ValueError, "metric must be"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, validation=1.0), ValueError, "validation must be <"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, validation=(Y,)), ValueError, "pair"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, seed=None), TypeError, "seed must be"),
    (lambda Y: select.search("ocmf", Y.toarray(), {"lam": [1]}, k=2), TypeError, "Y must be a scipy.sparse"),
    (lambda Y: select.search("ocmf", Y, {"lam": [-1.0]}, k=2), ValueError, "every trial failed .*lam"),
    (lambda Y: select.tune("ocmf", Y, budget=0), ValueError, "budget must be >= 1"),
    # refused before the trials (each trial failed, then "every trial failed"; refit="no" refitted)
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, refit="no"), TypeError, "refit must be True or False"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=0), ValueError, "k must be >= 1, got 0"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, n_iter=1.5), TypeError, "n_iter must be an integer"),
    (lambda Y: select.search("ocmf", Y, {"lam": [1]}, k=2, n_threads=0), ValueError, "n_threads must be in"),
    (lambda Y: select.tune("ocmf", Y, budget=2, n_threads="2"), TypeError, "n_threads must be an integer"),
    (lambda Y: select.tune("svd", Y), ValueError, "method must be one of"),
])
def test_bad_input_is_named(planted, call, exc, match):
    with pytest.raises(exc, match=match):
        call(planted.Y)


def test_a_cut_off_with_a_leading_zero_is_the_same_metric(planted):
    """'ndcg@05' passed the check, then the score lookup raised KeyError: 'ndcg@05'."""
    a = select.search("ocmf", planted.Y, {"lam": [1.0]}, k=2, n_iter=2, metric="ndcg@05")
    b = select.search("ocmf", planted.Y, {"lam": [1.0]}, k=2, n_iter=2, metric="ndcg@5")
    assert a.best_score == b.best_score and a.best_iter == b.best_iter


def test_explicit_validation_pair_must_split_y(planted):
    Y = planted.Y
    Y_fit, Y_valid = validation_split(Y, 0.25, seed=0)
    res = select.search("ocmf", Y, {"lam": [1.0]}, k=2, n_iter=2, validation=(Y_fit, Y_valid))
    want = fp.evaluate(fp.ocmf.fit(Y_fit, 2, lam=1.0, n_iter=res.best_iter), Y_fit, Y_valid, k=10)
    assert res.best_score == pytest.approx(want["ndcg@10"], rel=1e-12)
    with pytest.raises(ValueError, match="do not add up to Y"):
        select.search("ocmf", Y, {"lam": [1.0]}, k=2, validation=(Y_fit, Y_fit))


@pytest.mark.parametrize("call, match", [
    (lambda Y, f: select.tune("ocmf", Y, budget=2, lamda=1.0),
     r"ocmf\.fit got unknown keyword argument 'lamda' \(did you mean 'lam'\?\); it takes .*\blam\b"),
    (lambda Y, f: select.search("ocmf", Y, {"lam": [1.0]}, k=2, lamda=1.0, bogus=2),
     r"ocmf\.fit got unknown keyword arguments 'lamda', 'bogus'; it takes .*\blam\b"),
    (lambda Y, f: select.search(f, Y, {"a": [0.7]}, n_iter=2, b=1.0),
     r"fit\(\) got unknown keyword argument 'b'; it takes a, callback, k, n_iter, n_threads, seed, verbose"),
    (lambda Y, f: select.search(f, Y, {"a": [0.7]}, n_iter=2, callback=print),
     r"fit\(\) got callback=; the search passes its own callback"),
    (lambda Y, f: select.tune("ocmf", Y, budget=2, callback=print),
     r"ocmf\.fit got callback=; the search passes its own callback"),
    # wrmf's signature shows only **ocmf_params; its declared names are checked (was: every
    # trial failed with wrmf's own TypeError, reported once all trials had run)
    (lambda Y, f: select.search("wrmf", Y, {"lam": [1.0]}, k=2, bogus=1),
     r"wrmf\.fit got unknown keyword argument 'bogus'; it takes .*\binit_std\b"),
    (lambda Y, f: select.tune("wrmf", Y, budget=2, lamda=1.0),
     r"wrmf\.fit got unknown keyword argument 'lamda' \(did you mean 'lam'\?\)"),
])
def test_unknown_fixed_kwargs_are_refused_before_any_trial(planted, call, match):
    # used to surface as a bare "fit() got an unexpected keyword argument" from the first trial
    seen = []
    with pytest.raises(TypeError, match=match):
        call(planted.Y, _oracle_fit(planted, seen))
    assert seen == []                      # the oracle fit was never called


def test_space_key_typo_suggests_the_close_name(planted):
    with pytest.raises(ValueError, match=r"unknown parameter 'lamda' \(did you mean 'lam'\?\)"):
        select.search("ocmf", planted.Y, {"lamda": [1.0]}, k=2)
    with pytest.raises(ValueError, match=r"unknown parameter 'alfa' \(did you mean 'alpha'\?\)"):
        select.search("wrmf", planted.Y, {"alfa": [1.0]}, k=2)


def test_fits_taking_kwargs_still_take_any_fixed_or_searched_name(planted):
    # wrmf passes **ocmf_params on to ocmf: names only ocmf knows are fine in either place
    res = select.search("wrmf", planted.Y, {"init_std": [0.05]}, k=2, n_iter=1, n_inner=2)
    assert res.best_params["n_inner"] == 2 and res.best_params["init_std"] == 0.05

    def fit(Y, k, **kw):
        return Factorization(np.ones((Y.shape[0], 1)), np.ones((Y.shape[1], 1)))

    with pytest.raises(ValueError, match="every trial failed"):   # no callback: no score, but no TypeError
        select.search(fit, planted.Y, {"anything": [1]}, other=2)


def test_search_result_repr_is_short_and_names_the_key_fields(planted):
    # print(result) used to print ~16 KB: the whole model, every trial's scores
    X = np.ones((planted.Y.shape[0], 3))
    res = select.search("ocmf", planted.Y, {"lam": [0.1, 1.0, 10.0]}, k=2, n_iter=3,
                        user_features=X, metric="ndcg@5")
    text = repr(res)
    assert len(text) < 500 and "\n" not in text and str(res) == text
    for part in ("metric='ndcg@5'", f"best_iter={res.best_iter}", f"best_score={res.best_score:.6g}",
                 "trials=3", "model=attached (Factorization)", "'k': 2",
                 f"'lam': {res.best_params['lam']!r}", "'user_features': <ndarray 80×3>"):
        assert part in text, (part, text)
    bare = select.search("ocmf", planted.Y, {"lam": [1.0]}, k=2, n_iter=1, refit=False)
    assert "model=none" in repr(bare) and "trials=1" in repr(bare)
    import dataclasses                   # dataclass equality is unchanged (field by field)
    assert bare == dataclasses.replace(bare) and bare != dataclasses.replace(bare, best_iter=9)


def test_rows_split_method_check_comes_before_the_unknown_kwarg_check(planted):
    # als takes no user_features: the split="rows" message says why, not just "unknown keyword"
    X = np.ones((planted.Y.shape[0], 2))
    with pytest.raises(ValueError, match="split='rows' fits on user_features, but als does not take"):
        select.search("als", planted.Y, {"alpha": [1.0]}, split="rows", user_features=X, k=2)


def test_failed_trials_are_reported_once_at_the_end(planted):
    # a trial whose fit raised was dropped in silence; the result looked like a full search
    with pytest.warns(UserWarning, match=r"^1 of 3 trials of ocmf failed and were skipped \(first: "
                                         r"trial 1 with lam=-1: ValueError: lam must be >= 0"):
        res = select.search("ocmf", planted.Y, {"lam": [-1.0, 1.0, 10.0]}, k=2, n_iter=1,
                            refit=False)
    assert res.best_params["lam"] in (1.0, 10.0)
    with pytest.warns(UserWarning) as record:          # tune: the same, and once per search
        select.tune("ocmf", planted.Y, budget=3, space={"lam": [-1.0, -0.5, 1.0]}, k=2,
                    n_iter=1, refit=False)
    failed = [w for w in record if "trials of ocmf failed" in str(w.message)]
    assert len(failed) == 1 and str(failed[0].message).startswith("2 of 3 trials")


def test_every_trial_failed_says_how_many_and_why(planted):
    with pytest.raises(ValueError, match=r"every trial failed \(2 of 2 trials of ocmf; first: trial 1 "
                                         r"with lam=-2: ValueError: lam must be >= 0"):
        select.search("ocmf", planted.Y, {"lam": [-2.0, -1.0]}, k=2, n_iter=1)

    def fit(Y, k, **kw):                  # never calls the callback: no score, but no error
        return Factorization(np.ones((Y.shape[0], 1)), np.ones((Y.shape[1], 1)))

    with pytest.raises(ValueError, match=r"every trial failed \(1 of 1 trials of fit; first: trial 1 "
                                         r"with anything=1: no finite validation score"):
        select.search(fit, planted.Y, {"anything": [1]})


def _fit_without_n_threads(Y, k, *, a=0.0, n_iter=2, seed=0, callback=None):
    return Factorization(np.ones((Y.shape[0], 1)), np.ones((Y.shape[1], 1)))


class _FitObject:
    def __call__(self, Y, k, *, a=0.0, n_iter=2, seed=0, callback=None, n_threads=None):
        raise TypeError("a bug inside the user's fit")


@pytest.mark.parametrize("method, exc, match", [
    # a fit function the search cannot call: said before any trial, naming the function
    (_fit_without_n_threads, TypeError,
     r"method _fit_without_n_threads\(\) must take fit\(Y, k, \*, n_iter, seed, callback, "
     r"n_threads, \.\.\.\) as the search calls it; .*'n_threads'"),
    (lambda Y: None, TypeError, r"method <lambda>\(\) must take fit\(Y, k, \*, n_iter"),
    (max, TypeError, r"method max\(\) has no signature the search can read"),
    # a TypeError from inside a trial names the function and the trial
    (_FitObject(), TypeError, r"method _FitObject\(\) raised on trial 1/1 \(a=1\): TypeError: a bug "
                              r"inside the user's fit"),
    # neither a name nor a callable
    (5, TypeError, r"method must be a method name \('ocmf', .*'bpr'\) or a fit function "
               r"fit\(Y, k, \*, n_iter, seed, callback, n_threads, \.\.\.\), got int 5"),
    (None, TypeError, r"method must be a method name .* got NoneType None"),
    ("ocfm", ValueError, r"method must be one of 'ocmf', .* or a fit function, got 'ocfm' "
                         r"\(did you mean 'ocmf'\?\)"),
])
def test_method_that_is_not_a_usable_fit_is_named(planted, method, exc, match):
    with pytest.raises(exc, match=match):
        select.search(method, planted.Y, {"a": [1]})


def test_a_fit_function_that_returns_no_model_is_named(planted):
    fit = _oracle_fit(planted, [])

    def forgets_return(Y, k, **kw):
        fit(Y, k, **kw)

    with pytest.raises(TypeError, match=r"method forgets_return\(\) returned None on the refit; "
                                        r"a fit function must return the fitted model"):
        select.search(forgets_return, planted.Y, {"a": [0.7]}, n_iter=2)
    assert select.search(forgets_return, planted.Y, {"a": [0.7]}, n_iter=2, refit=False).model is None


@pytest.mark.parametrize("method, exc, match", [
    (lambda Y, k, **kw: None, TypeError,
     r"tune takes a method name \('ocmf', .*'bpr'\), got the function <lambda>; it has a default "
     r"space for those only: call fastpu\.select\.search\(fit, Y, space, n_trials=\.\.\.\)"),
    (3, TypeError, r"method must be a method name \('ocmf', .*'bpr'\), got int 3"),
    ("ocmf2", ValueError, r"method must be one of 'ocmf', .*, got 'ocmf2' \(did you mean 'ocmf'\?\)"),
])
def test_tune_method_must_be_a_name(planted, method, exc, match):
    with pytest.raises(exc, match=match):
        select.tune(method, planted.Y, budget=1)


def test_tune_tries_the_defaults_first_searches_the_rank_and_stops_trailing_trials(planted):
    """The families' first settings are the first trials, at the ladder's start rank (128,
    capped by the data; a method without families: its defaults at rank 64), and a trial
    trailing the median of the earlier ones at the same iteration stops (its stopped_at), so
    that the same time buys more trials."""
    # 12 trials: six explore the start rank (three families' first settings, three draws), where
    # the median rule applies (a trial stopped on each of seeds 0-5)
    res = select.tune("ocmf", planted.Y, budget=12, n_iter=6, metric="ndcg@5", seed=3)
    top = min(planted.Y.shape)
    start = max(r for r in (16, 32, 64, 128) if r <= top)
    assert res.trials[0]["params"] == dict(loss="square", negatives="full", nu=0.0, k=start,
                                           rho=1 / 6, lam=6.0)
    assert res.trials[1]["params"] == dict(loss="square", negatives="all", a_bar=0.0, nu=1.0,
                                           k=start, rho=0.6, lam=0.006)
    assert res.trials[2]["params"] == dict(loss="logistic", negatives="full", nu=0.0, k=start,
                                           rho=0.01, lam=1.0)
    assert {t["params"]["k"] for t in res.trials} <= set(fp._core.registry.RANKS)
    res_fbgd = select.tune("fbgd", planted.Y, budget=2, n_iter=2, metric="ndcg@5")
    assert res_fbgd.trials[0]["params"]["k"] == max(r for r in (16, 32, 64) if r <= top)
    stopped = [t for t in res.trials if t["stopped_at"] is not None]
    assert stopped and all(len(t["scores"]) == t["stopped_at"] >= 3 for t in stopped)
    # the table says so too (its note column was empty for them: a new user's trial)
    rows = {ln.split(" | ")[0].strip("| "): ln for ln in res.table().splitlines()[2:]}
    for t in stopped:
        assert f"stopped at iteration {t['stopped_at']}: trailing the median" in rows[str(t["trial"])]
    # the rule itself: a trial stops when its best trails the median of the earlier trials'
    rule = select._MedianRule(grace=3, min_trials=2)
    rule.add([0.1, 0.2, 0.3])
    rule.add([0.2, 0.3, 0.4])
    assert not rule.trails([0.5, 0.4]) and not rule.trails([0.5, 0.4, 0.3])
    assert rule.trails([0.1, 0.2, 0.3]) and not rule.trails([0.0, 0.0, 0.36])


def test_unknown_keyword_messages_offer_the_names_the_fit_takes(planted):
    """An unknown keyword's message offers the fit's own names, nothing else: the retired
    spellings (ocmf's inner_iter, init_scale) are unknown keywords like any other."""
    with pytest.raises(TypeError, match="unknown keyword argument 'n_iters'") as exc:
        select.tune("ocmf", planted.Y, budget=1, n_iters=3)
    msg = str(exc.value)
    assert "n_inner" in msg and "init_std" in msg
    assert "inner_iter" not in msg and "init_scale" not in msg
    with pytest.raises(TypeError, match="unknown keyword argument 'inner_iter'"):
        select.tune("ocmf", planted.Y, budget=1, inner_iter=3)


def test_tune_starts_from_the_defaults_of_the_loss(planted):
    """ocmf's rho and lam default by loss (fit's None): LR-wSQ's 0.01 and 1, SQ-wSQ's
    1/6 and 6 (WRMF's alpha = 5, lam = 36 in SQ-wSQ's terms, re-chosen from docs/results.md).
    tune's first trial is the defaults of the loss it is given; the random draws after it do
    not depend on the loss."""
    top = min(planted.Y.shape)
    k0 = max(r for r in (16, 32, 64) if r <= top)
    kw = dict(n_iter=2, metric="ndcg@5", seed=3, refit=False)
    # the paper's SQ-wSQ (negatives="full" leaves out iALS's family): the fit's own defaults
    sq = select.tune("ocmf", planted.Y, budget=3, loss="square", negatives="full", **kw)
    assert sq.trials[0]["params"] == {"k": k0, "nu": 0.0, "rho": 1 / 6, "lam": 6.0}
    lr = select.tune("ocmf", planted.Y, budget=3, loss="logistic", **kw)
    assert lr.trials[0]["params"] == {"k": k0, "negatives": "full", "nu": 0.0, "rho": 0.01,
                                      "lam": 1.0}
    drawn = [{p: t["params"][p] for p in ("k", "rho", "lam")} for t in (sq.trials[1], lr.trials[1])]
    assert drawn[0] == drawn[1]                                  # the same draw after them
    # a fixed rho leaves the space; lam still starts from the loss's default
    res = select.tune("ocmf", planted.Y, budget=2, loss="square", negatives="full", rho=0.05,
                      **kw)
    assert res.trials[0]["params"] == {"k": k0, "nu": 0.0, "lam": 6.0}
    # the first trial is the fit with no rho or lam given: the same validation score
    fit = fp.ocmf.fit(planted.Y, k0, loss="square", n_iter=2)
    ref = fp.ocmf.fit(planted.Y, k0, loss="square", rho=1 / 6, lam=6.0, n_iter=2)
    np.testing.assert_array_equal(fit.user_factors, ref.user_factors)
    assert fit.params["rho"] == 1 / 6 and fit.params["lam"] == 6.0
    assert fp.ocmf.fit(planted.Y, k0, n_iter=1).params["rho"] == 1 / 6
    assert fp.ocmf.fit(planted.Y, k0, loss="logistic", n_iter=1).params["rho"] == 0.01
    # search takes a list of first settings, tried in order, each checked
    res = select.search("ocmf", planted.Y, {"lam": stats.loguniform(0.1, 10)}, n_trials=3, k=2,
                        n_iter=2, first=[{"lam": 0.5}, {"lam": 2.0}], refit=False)
    assert [t["params"]["lam"] for t in res.trials[:2]] == [0.5, 2.0]
    with pytest.raises(TypeError, match="first must be a dict"):
        select.search("ocmf", planted.Y, {"lam": [1.0]}, k=2, first=[{"lam": 1.0}, 3.0])


def test_tune_with_a_time_budget_stops_starting_trials(planted):
    import time

    t0 = time.perf_counter()
    res = select.tune("ocmf", planted.Y, budget=None, seconds=0.5, n_iter=3, metric="ndcg@5")
    assert len(res.trials) >= 1 and time.perf_counter() - t0 < 30
    with pytest.raises(ValueError, match="tune needs a budget"):
        select.tune("ocmf", planted.Y, budget=None)
    with pytest.raises(ValueError, match="seconds"):
        select.tune("ocmf", planted.Y, seconds=0.0)
    with pytest.raises(TypeError, match="stop_trailing must be True or False"):
        select.search("ocmf", planted.Y, {"lam": [1.0]}, k=2, stop_trailing="yes")
    with pytest.raises(ValueError, match="first must set exactly the searched parameters"):
        select.search("ocmf", planted.Y, {"lam": [1.0]}, k=2, first={"rho": 1.0})


@pytest.mark.parametrize("metric", ["ndcg@" + "9" * 30, f"precision@{2**62 + 1}"])
def test_a_metric_cut_off_past_int64_is_refused_up_front_naming_metric(planted, metric, monkeypatch):
    """search failed with "every trial failed ... k must be <= 2**62" (the cut-off reached
    evaluate in every trial); search, tune and compare now refuse it before any fit, naming
    metric."""
    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before the metric was checked")

    # the largest cut-off an int64 kernel takes is a cut-off like any other
    res = select.search("ocmf", planted.Y, {"lam": [1.0]}, k=2, n_iter=1, refit=False,
                        metric=f"precision@{2**62}")
    assert 0.0 <= res.best_score <= 1.0
    want = rf"metric '{metric[:37]}.*' has the cut-off k = .*, above 2\*\*62"
    with pytest.raises(ValueError, match=want):
        select.search(no_fit, planted.Y, {"lam": [1.0]}, metric=metric)
    monkeypatch.setattr(fp.ocmf, "fit", no_fit)
    with pytest.raises(ValueError, match=want):
        select.tune("ocmf", planted.Y, metric=metric)
    import fastpu.model_selection.compare as C

    monkeypatch.setattr(C, "tune", no_fit)
    with pytest.raises(ValueError, match=want):
        C.compare(planted.Y, ["popularity", "ocmf"], splits=1, budget=1, metric=metric)
