"""ocmf's intercept: a column of ones appended to the features at the boundary, and again
wherever features reach a fitted model (the cold start, the row-split search, the model file)."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu import ocmf, select
from fastpu.model_selection import _rows as R
from fastpu.ocmf._check import with_intercept

import naive


def _ones(F):
    """``F`` with a column of ones appended, by hand (dense or CSR)."""
    if sp.issparse(F):
        return sp.csr_array(sp.hstack([F, np.ones((F.shape[0], 1))], format="csr"))
    return np.column_stack([F, np.ones(F.shape[0])])


def _case(seed=0, m=9, n=7, sparse_x=False):
    rng = np.random.default_rng(seed)
    Y = sp.random_array((m, n), density=0.35, random_state=rng, format="csr")
    Y.data[:] = rng.uniform(0.5, 2.0, Y.nnz)
    X = rng.normal(size=(m, 4))
    if sparse_x:
        X = sp.random_array((m, 5), density=0.5, random_state=rng, format="csr")
    Z = rng.normal(size=(n, 3))
    return Y, X, Z, rng


@pytest.mark.parametrize("sparse_x", [False, True])
@pytest.mark.parametrize("loss", ocmf.LOSSES)
def test_objective_with_the_intercept_is_the_dense_reference_with_a_ones_column(loss, sparse_x):
    Y, X, Z, rng = _case(1, sparse_x=sparse_x)
    k = 2
    W, H = rng.normal(size=(X.shape[1] + 1, k)), rng.normal(size=(Z.shape[1] + 1, k))
    kw = dict(loss=loss, rho=0.3, a_bar=-0.5, lam=0.7, lam_w=0.4, lam_h=1.9)
    got = ocmf.objective(Y, W, H, user_features=X, item_features=Z, intercept=True, **kw)
    ref_kw = dict(loss_name=loss, rho=0.3, a_bar=-0.5, lam=0.7, lam_w=0.4, lam_h=1.9, lam_graph=0.0)
    # the ones column appended by hand to the paper's X and Z: the same objective
    by_hand = naive.ocmf_objective(Y, W, H, X=_ones(X), Z=_ones(Z), **ref_kw)
    assert got == pytest.approx(by_hand, rel=1e-10, abs=1e-10)
    assert got == pytest.approx(naive.ocmf_objective(Y, W, H, X=X, Z=Z, intercept=True, **ref_kw),
                                rel=1e-10, abs=1e-10)
    assert got == pytest.approx(ocmf.objective(Y, W, H, user_features=_ones(X),
                                               item_features=_ones(Z), intercept=False, **kw),
                                rel=1e-12, abs=1e-12)
    # the w_0 row counts: the objective moves with it (it is not dropped or left out of λ‖W‖²)
    W2 = W.copy()
    W2[-1] += 0.5
    assert ocmf.objective(Y, W2, H, user_features=X, item_features=Z, intercept=True, **kw) \
        == pytest.approx(naive.ocmf_objective(Y, W2, H, X=_ones(X), Z=_ones(Z), **ref_kw), rel=1e-10)


def test_with_intercept_appends_one_column_and_keeps_the_csr_canonical():
    rng = np.random.default_rng(3)
    X = sp.random_array((12, 6), density=0.3, random_state=rng, format="csr")
    X[4] = 0.0                                   # an empty row gains only the one
    X = fp._core.validation.check_csr(X, name="X", nonnegative=False)
    got = with_intercept(X)
    assert got.shape == (12, 7) and got.indices.dtype == X.indices.dtype
    np.testing.assert_array_equal(got.toarray(), _ones(X).toarray())
    assert fp._core.validation.has_canonical_indices(got.indptr, got.indices)
    D = rng.normal(size=(5, 2))
    np.testing.assert_array_equal(with_intercept(D), _ones(D))
    assert with_intercept(None) is None and with_intercept(D, False) is D


@pytest.mark.parametrize("sparse_x", [False, True])
def test_the_fit_with_the_intercept_is_the_fit_of_the_features_with_a_ones_column(sparse_x):
    """Applied at the boundary: the same numbers as appending the column by hand, bit for bit."""
    Y, X, Z, _ = _case(2, m=30, n=20, sparse_x=sparse_x)
    Y = sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=Y.shape)
    kw = dict(n_iter=3, seed=4, loss="logistic", rho=0.2, lam=0.5, dtype="float64")
    lib = ocmf.fit(Y, 3, user_features=X, item_features=Z, **kw)
    hand = ocmf.fit(Y, 3, user_features=_ones(X), item_features=_ones(Z), intercept=False, **kw)
    np.testing.assert_array_equal(lib.extras["W"], hand.extras["W"])
    np.testing.assert_array_equal(lib.extras["H"], hand.extras["H"])
    np.testing.assert_array_equal(lib.user_factors, hand.user_factors)
    assert [h["objective"] for h in lib.history] == [h["objective"] for h in hand.history]
    assert lib.params["intercept"] is True and hand.params["intercept"] is False
    assert lib.extras["W"].shape == (X.shape[1] + 1, 3)
    # the recorded objective is ocmf.objective of the result, with the same intercept
    obj = ocmf.objective(Y, lib.extras["W"], lib.extras["H"], user_features=X, item_features=Z,
                         loss="logistic", rho=0.2, lam=0.5)
    assert obj == pytest.approx(lib.history[-1]["objective"], rel=1e-9)


def test_without_features_the_intercept_changes_nothing():
    Y, _, _, _ = _case(5, m=20, n=15)
    on = ocmf.fit(Y, 3, n_iter=2, seed=1)
    off = ocmf.fit(Y, 3, n_iter=2, seed=1, intercept=False)
    np.testing.assert_array_equal(on.user_factors, off.user_factors)
    np.testing.assert_array_equal(on.item_factors, off.item_factors)


def test_the_cold_start_appends_the_column_and_a_saved_model_keeps_it(tmp_path):
    Y, X, _, rng = _case(6, m=40, n=12)
    model = ocmf.fit(Y[:30], 3, user_features=X[:30], n_iter=3, dtype="float64")
    W = model.extras["W"]
    new = fp.fold_in(model, user_features=X[30:])
    np.testing.assert_allclose(new.user_factors, X[30:] @ W[:-1] + W[-1], rtol=1e-12)
    # the training rows' factors are their cold start (the fit's factors are X W with the ones)
    np.testing.assert_allclose(fp.fold_in(model, user_features=X[:30]).user_factors,
                               model.user_factors, rtol=1e-10, atol=1e-12)
    # sparse features the same; the expected width is the user's, not W's rows
    np.testing.assert_allclose(fp.fold_in(model, user_features=sp.csr_array(X[30:])).user_factors,
                               new.user_factors, rtol=1e-12)
    with pytest.raises(ValueError, match=r"user_features has 5 columns, expected 4 \(the model's"):
        fp.fold_in(model, user_features=_ones(X[30:]))
    # through the model file: the record and the column come back
    path = tmp_path / "m.npz"
    model.save(path)
    back = fp.load_model(path)
    assert back.params["intercept"] is True
    np.testing.assert_array_equal(fp.fold_in(back, user_features=X[30:]).user_factors,
                                  new.user_factors)
    # a model without the record (files of earlier releases) has no ones column
    old = dataclasses.replace(model, params={k: v for k, v in model.params.items()
                                             if k != "intercept"}, extras={"W": W[:-1]})
    np.testing.assert_allclose(fp.fold_in(old, user_features=X[30:]).user_factors,
                               X[30:] @ W[:-1], rtol=1e-12)


def test_wrmf_with_features_takes_the_intercept_through():
    Y, X, _, _ = _case(7, m=30, n=10)
    model = fp.baselines.wrmf(Y, 3, user_features=X, n_iter=2, dtype="float64")
    assert model.params["intercept"] is True and model.extras["W"].shape == (5, 3)
    plain = fp.baselines.wrmf(Y, 3, user_features=X, n_iter=2, dtype="float64", intercept=False)
    assert plain.params["intercept"] is False and plain.extras["W"].shape == (4, 3)


def test_a_partial_fit_of_items_keeps_the_feature_side():
    Y, X, _, _ = _case(8, m=30, n=10)
    model = ocmf.fit(Y, 3, user_features=X, n_iter=2, dtype="float64")
    upd = fp.partial_fit_items(model, sp.csr_array(Y[:, :4].T), item_ids=[0, 1, 2, 3])
    np.testing.assert_array_equal(upd.user_factors, model.user_factors)
    assert upd.params["intercept"] is True
    np.testing.assert_array_equal(fp.fold_in(upd, user_features=X[:2]).user_factors,
                                  fp.fold_in(model, user_features=X[:2]).user_factors)


def test_the_row_split_search_scores_with_the_intercept_as_the_column_by_hand():
    """search(split="rows") fits with the intercept and scores the held-out rows by its cold
    start: the same scores as features with the ones column fitted without it."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(80, 4))
    # labels with very different base rates: what the intercept can express
    logits = X @ rng.normal(size=(4, 8)) + np.linspace(-2.5, 1.0, 8)
    Y = sp.csr_array((rng.random((80, 8)) < 1 / (1 + np.exp(-logits))).astype(float))
    kw = dict(split="rows", k=3, n_iter=3, metric="precision@3", seed=3, loss="logistic",
              rho=0.1, dtype="float64")
    lib = select.search("ocmf", Y, {"lam": [0.1, 1.0]}, user_features=X, **kw)
    hand = select.search("ocmf", Y, {"lam": [0.1, 1.0]}, user_features=_ones(X),
                         intercept=False, **kw)
    assert [t["scores"] for t in lib.trials] == [t["scores"] for t in hand.trials]
    assert lib.model.params["intercept"] is True and lib.model.extras["W"].shape == (5, 3)
    keep, valid = R.holdout_rows(Y, 0.2, 3, name="validation")
    assert R.cold_start(lib.model, X[valid]).user_factors.shape == (valid.size, 3)


@pytest.mark.parametrize("value", [None, "yes", 1, 0.0, np.array([True])])
def test_a_bad_intercept_is_refused_naming_it(value):
    Y, X, _, rng = _case(10)
    with pytest.raises(TypeError, match=r"intercept must be True or False .*got"):
        ocmf.fit(Y, 2, user_features=X, intercept=value, n_iter=1)
    with pytest.raises(TypeError, match=r"intercept must be True or False"):
        ocmf.objective(Y, rng.normal(size=(5, 2)), rng.normal(size=(7, 2)), user_features=X,
                       intercept=value)


def test_the_factor_shapes_name_the_intercept_row():
    Y, X, _, _ = _case(11)
    with pytest.raises(ValueError, match=r"W has shape 4×2, expected 5×\*"):
        ocmf.objective(Y, np.ones((4, 2)), np.ones((7, 2)), user_features=X)
    with pytest.raises(ValueError, match=r"init\[0\] \(W0\) has shape 4×2, expected 5×2"):
        ocmf.fit(Y, 2, user_features=X, init=(np.ones((4, 2)), np.ones((7, 2))), n_iter=1)
    ocmf.fit(Y, 2, user_features=X, init=(np.ones((4, 2)), np.ones((7, 2))), n_iter=1,
             intercept=False)


def test_an_edited_record_is_refused_before_the_cold_start(tmp_path):
    Y, X, _, _ = _case(12, m=20)
    model = ocmf.fit(Y, 2, user_features=X, n_iter=1)
    bad = dataclasses.replace(model, params={**model.params, "intercept": "yes"})
    with pytest.raises(TypeError, match=r"model.params\['intercept'\] must be True or False"):
        fp.fold_in(bad, user_features=X[:2])
    with pytest.raises(TypeError, match=r"model.params\['intercept'\] must be True or False"):
        bad.save(tmp_path / "bad.npz")
    one_row = dataclasses.replace(model, extras={"W": model.extras["W"][:1]})
    with pytest.raises(ValueError, match=r"model.extras\['W'\] has 1 row, but "
                                         r"model.params\['intercept'\] is True"):
        fp.fold_in(one_row, user_features=np.ones((2, 0)))
