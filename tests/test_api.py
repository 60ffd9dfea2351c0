"""One vocabulary: every method's fit is fit(Y, k, *, ...) with the shared names spelled the same."""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu.datasets import from_pairs

FITS = {"ocmf": fp.ocmf.fit, "fbgd": fp.fbgd.fit, "csrr": fp.csrr.fit, "homf": fp.homf.fit}

# every fit has these; the others are shared where the method has the concept
REQUIRED = ("n_iter", "seed", "n_threads", "callback", "verbose")
SHARED = REQUIRED + ("user_features", "item_features", "user_graph", "item_graph", "dtype")
# spellings the one-interface change retired: none may come back as an alias
RETIRED = ("X", "Z", "R", "n_epochs", "epochs", "iterations", "random_state", "n_jobs",
           "factors", "rank", "regularization", "features", "graph", "reg", "inner_iter",
           "init_scale")


@pytest.mark.parametrize("name", sorted(FITS))
def test_fit_takes_data_then_rank_then_keywords(name):
    params = list(inspect.signature(FITS[name]).parameters.values())
    assert [p.name for p in params[:2]] == ["Y", "k"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params[:2])
    rest = params[2:]
    assert rest and all(p.kind is p.KEYWORD_ONLY for p in rest), \
        [p.name for p in rest if p.kind is not p.KEYWORD_ONLY]


@pytest.mark.parametrize("name", ["ocmf", "fbgd", "homf"])
def test_a_forgotten_rank_is_named(name):
    """Python's message was "fit() missing 1 required positional argument: 'k'"."""
    with pytest.raises(TypeError, match=rf"{name}\.fit\(\) missing k, the rank .*: e\.g\. {name}\.fit\(Y, 32\)"):
        FITS[name](sp.csr_array(np.eye(4)))
    with pytest.raises(TypeError, match=r"wrmf\(\) missing k, the rank"):
        fp.baselines.wrmf(sp.csr_array(np.eye(4)))


@pytest.mark.parametrize("name", sorted(FITS))
def test_fit_uses_the_shared_names(name):
    names = set(inspect.signature(FITS[name]).parameters)
    assert set(REQUIRED) <= names, set(REQUIRED) - names
    assert not names & set(RETIRED), names & set(RETIRED)
    # a shared meaning is never spelled differently: user_* / item_* side information only
    side = {n for n in names if n.startswith(("user_", "item_"))}
    assert side <= {"user_features", "item_features", "user_graph", "item_graph"}, side


def test_shared_defaults_agree():
    for name, fit in FITS.items():
        sig = inspect.signature(fit).parameters
        assert sig["seed"].default == 0, name
        assert sig["n_threads"].default is None, name
        assert sig["callback"].default is None, name
        assert sig["verbose"].default is False, name


def test_docstrings_document_every_parameter():
    for name, fit in FITS.items():
        doc = inspect.getdoc(fit)
        for p in inspect.signature(fit).parameters:
            assert f"\n{p}" in doc or f", {p}" in doc or f"{p}," in doc, (name, p)


def test_csrr_rank_is_second_and_optional_for_the_dense_variants():
    sig = inspect.signature(fp.csrr.fit).parameters
    assert sig["k"].default is None
    Y = sp.random_array((12, 9), density=0.3, random_state=0, format="csr")
    assert fp.csrr.fit(Y, 3, variant="e", n_iter=2).user_factors.shape == (12, 3)
    with pytest.raises(ValueError, match="variant 'I' has no fixed rank"):
        fp.csrr.fit(Y, 3, variant="I", n_iter=2)


@pytest.mark.parametrize("name", sorted(FITS))
def test_fit_accepts_a_dataset_and_keeps_its_ids(name):
    rng = np.random.default_rng(0)
    users = [f"u{i}" for i in rng.integers(0, 15, 80)]
    items = [int(j) * 10 for j in rng.integers(0, 12, 80)]
    data = from_pairs(users, items)
    kw = dict(n_iter=2)
    if name == "csrr":
        kw["variant"] = "e"
    model = FITS[name](data, 3, **kw)
    bare = FITS[name](data.Y, 3, **kw)
    np.testing.assert_array_equal(model.user_ids, data.user_ids)
    np.testing.assert_array_equal(model.item_ids, data.item_ids)
    assert bare.user_ids is None and bare.item_ids is None
    # the same model as on the bare matrix
    np.testing.assert_array_equal(model.user_factors, bare.user_factors)
    np.testing.assert_array_equal(model.item_factors, bare.item_factors)
    assert type(model) is type(bare)


@pytest.mark.parametrize("name, kw", [
    ("ocmf", dict(loss="logistic")),
    ("ocmf", dict(loss="square", user_features=np.eye(15)[:, :4] + 0.1)),
    ("fbgd", dict()),
    ("csrr", dict(variant="e")),
    ("csrr", dict(variant="I", k=None)),
    ("homf", dict(mode="dense")),
])
def test_callback_sees_the_current_model(name, kw):
    """info["model"]() is the iterate of that iteration: the last one scores like the result."""
    rng = np.random.default_rng(1)
    Y = sp.csr_array((rng.random((15, 11)) < 0.3).astype(float))
    kw = dict(kw)
    k = kw.pop("k", 3)
    seen = []
    model = FITS[name](Y, k, n_iter=3, callback=lambda info: seen.append(
        (info["iter"], info["model"]().scores())) and False, **kw)
    assert [it for it, _ in seen] == [1, 2, 3]
    np.testing.assert_allclose(seen[-1][1], model.scores(), rtol=1e-12, atol=1e-12)
    assert not np.allclose(seen[0][1], seen[-1][1])      # an iterate, not the final model
    assert all("model" not in h for h in model.history)


@pytest.mark.parametrize("name", sorted(FITS))
def test_blas_runs_single_threaded_during_every_fit(name):
    """numba's threads do the work; BLAS is held to one thread so the pools never oversubscribe."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    seen = []
    Y = sp.random_array((14, 10), density=0.3, random_state=1, format="csr")
    kw = dict(variant="e") if name == "csrr" else {}
    with threadpool_limits(limits=2, user_api="blas"):          # the user's setting
        assert blas_threads() == {2}
        FITS[name](Y, 3, n_iter=2, callback=lambda info: seen.append(blas_threads()) and False, **kw)
        assert blas_threads() == {2}                            # restored afterwards
    assert seen == [{1}, {1}]


@pytest.mark.parametrize("name", sorted(FITS))
@pytest.mark.parametrize("ret, shown", [
    (np.array([True, False]), r"a numpy array of shape \(2,\)"),
    (1, "int 1"),
    ("stop", "str 'stop'"),
])
def test_callback_returning_neither_none_nor_a_bool_is_a_type_error(name, ret, shown):
    """Was numpy's "truth value of an array ... is ambiguous" (or a silent guess at the truth)."""
    Y = fp.datasets.synthetic(30, 20, rank=2, density=0.3, seed=1).Y
    kw = dict(variant="e") if name == "csrr" else {}
    with pytest.raises(TypeError, match=r"callback must return None or a bool \(True stops the "
                                        rf"fit\), got {shown}"):
        FITS[name](Y, 2, n_iter=2, callback=lambda info: ret, **kw)


@pytest.mark.parametrize("name", sorted(FITS))
def test_callback_may_return_none_false_true_or_a_numpy_bool(name):
    Y = fp.datasets.synthetic(30, 20, rank=2, density=0.3, seed=1).Y
    kw = dict(variant="e") if name == "csrr" else {}
    for ret, n in ((None, 2), (False, 2), (np.False_, 2), (True, 1), (np.True_, 1)):
        model = FITS[name](Y, 2, n_iter=2, callback=lambda info: ret, **kw)
        assert len(model.history) == n, (ret, model.history)
