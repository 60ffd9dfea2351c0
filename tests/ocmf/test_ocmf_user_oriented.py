"""ocmf's user-oriented unlabeled weights (``p="user-oriented"``): p_i = c_i / mean(c), c_i the
user's positives counted as at least 1, resolved by the fit from Y and applied by fold-in and
partial fits to new rows with the fit's mean count.

Each rule is checked against the same fit, objective or row solve given the weights as an
array written here from the definition, and the row solves against their optimality condition.
"""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastpu as fp
from fastpu import ocmf
from fastpu.ocmf import _check as ocmf_check
from fastpu.ocmf import _dask as ocmf_dask

import naive
from strategies import csr_matrices, seeds

IALS = dict(loss="square", negatives="all", a_bar=0.0, nu=1.0, rho=0.6, lam=0.01)


def _weights(Y):
    """The rule, written from its definition: counts floored at 1, divided by their mean."""
    c = np.array([max(1, Y[[i]].nnz) for i in range(Y.shape[0])], dtype=np.float64)
    return c / c.mean(), c.mean()


def _data(seed=0, m=40, n=30):
    Y = sp.csr_array(fp.datasets.synthetic(m, n, rank=3, density=0.15, seed=seed).Y)
    Y = sp.lil_array(Y)
    Y[3, :] = 0                   # a user with no positive: counted as one
    Y = sp.csr_array(Y)
    Y.eliminate_zeros()
    return Y


@given(csr_matrices(min_rows=2, max_rows=7, min_cols=2, max_cols=7), seeds,
       st.sampled_from(["full", "all"]), st.sampled_from([0.0, 1.0]))
@settings(max_examples=40)
def test_the_objective_with_the_rule_equals_the_dense_reference_with_its_weights(Y, seed, neg, nu):
    rng = np.random.default_rng(seed)
    m, n = Y.shape
    W, H = rng.normal(size=(m, 2)), rng.normal(size=(n, 2))
    p, _ = _weights(sp.csr_array(Y))
    kw = dict(rho=0.3, a_bar=0.0, lam=0.2, negatives=neg, nu=nu)
    got = ocmf.objective(Y, W, H, loss="square", p="user-oriented", **kw)
    want = naive.ocmf_objective(Y, W, H, loss_name="square", p=p, lam_graph=0.0, **kw)
    assert got == pytest.approx(want, rel=1e-10, abs=1e-10)


def test_a_fit_with_the_rule_is_the_fit_with_its_weights_bit_for_bit_and_records_it():
    Y = _data()
    p, mean = _weights(Y)
    a = ocmf.fit(Y, 4, p="user-oriented", n_iter=3, **IALS)
    b = ocmf.fit(Y, 4, p=p, n_iter=3, **IALS)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    assert a.params["p"] == "user-oriented" and a.params["p_mean"] == pytest.approx(mean)
    np.testing.assert_allclose(a.extras["p"], p, rtol=1e-15)
    assert p[3] == pytest.approx(1 / mean)       # the user with no positive weighs as one
    assert "p" not in b.params and "p" not in b.extras        # an array is the caller's to keep


def test_fold_in_applies_the_rule_to_the_new_rows_with_the_fits_mean_count():
    """A folded-in user's weight is c_i / p_mean from its own positives: the same rows as
    fold-in given that weight, and at the minimum of its row objective (gradient zero)."""
    Y = _data(1)
    model = ocmf.fit(Y[:30], 3, p="user-oriented", n_iter=4, dtype="float64", **IALS)
    rows = sp.csr_array(Y[30:36])
    mean = model.params["p_mean"]
    p_new = np.maximum(np.diff(rows.indptr), 1) / mean
    got = fp.fold_in(model, rows).user_factors
    np.testing.assert_array_equal(got, fp.fold_in(model, rows, p=p_new).user_factors)
    E = np.asarray(model.item_factors, dtype=np.float64)
    n = E.shape[0]
    for r in range(rows.shape[0]):
        cols = rows.indices[rows.indptr[r]:rows.indptr[r + 1]]
        pw = IALS["rho"] * p_new[r]
        lam_r = IALS["lam"] * (cols.size + pw * n)

        def f_row(w, cols=cols, pw=pw, lam_r=lam_r):
            s = E @ w
            return ((1.0 - s[cols]) ** 2).sum() + pw * (s ** 2).sum() + lam_r * w @ w

        g = naive.num_grad(f_row, np.asarray(got[r], dtype=np.float64), h=1e-6)
        assert np.abs(g).max() <= 1e-5 * max(1.0, np.abs(E).sum())
    # and the rule matters: ones (the default of a model fitted with an array) differ
    flat = ocmf.fit(Y[:30], 3, p=_weights(Y[:30])[0], n_iter=4, dtype="float64", **IALS)
    np.testing.assert_array_equal(flat.user_factors, model.user_factors)
    assert not np.allclose(fp.fold_in(flat, rows).user_factors, got)


def test_partial_fits_apply_the_rule_and_keep_the_users_weights():
    Y = _data(2)
    model = ocmf.fit(Y, 3, p="user-oriented", n_iter=3, dtype="float64", **IALS)
    mean = model.params["p_mean"]
    rows = sp.csr_array(Y[[5, 7]])
    rows = sp.csr_array(sp.vstack([rows, sp.csr_array(Y[[9]])]))
    part = fp.partial_fit_users(model, rows, user_ids=[5, 7, 40])       # 40 is appended
    one = fp.fold_in(model, rows)
    np.testing.assert_allclose(part.user_factors[[5, 7, 40]], one.user_factors,
                               rtol=1e-10, atol=1e-12)
    want = np.append(model.extras["p"], 0.0)
    want[[5, 7, 40]] = np.maximum(np.diff(rows.indptr), 1) / mean
    np.testing.assert_allclose(part.extras["p"], want, rtol=1e-15)
    # the items' rows are solved with the fitted users' weights, as if passed by hand
    cols = sp.csr_array(Y.T[[2, 4]])
    a = fp.partial_fit_items(model, cols, item_ids=[2, 4])
    b = fp.partial_fit_items(model, cols, item_ids=[2, 4], p=model.extras["p"])
    np.testing.assert_array_equal(a.item_factors, b.item_factors)
    c = fp.partial_fit_items(model, cols, item_ids=[2, 4], p=np.ones(Y.shape[0]))
    assert not np.allclose(a.item_factors[[2, 4]], c.item_factors[[2, 4]])
    assert a.params == model.params
    np.testing.assert_array_equal(a.extras["p"], model.extras["p"])


def test_the_model_file_carries_the_rule(tmp_path):
    Y = _data(3)
    model = ocmf.fit(Y[:30], 3, p="user-oriented", n_iter=2, **IALS)
    model.save(tmp_path / "m.npz")
    back = fp.load_model(tmp_path / "m.npz")
    assert back.params["p"] == "user-oriented"
    assert back.params["p_mean"] == model.params["p_mean"]
    np.testing.assert_array_equal(back.extras["p"], model.extras["p"])
    rows = sp.csr_array(Y[30:34])
    np.testing.assert_array_equal(fp.fold_in(model, rows).user_factors,
                                  fp.fold_in(back, rows).user_factors)


@pytest.mark.parametrize("bad, exc, msg", [
    ("item-oriented", ValueError, r"p must be an array .* 'user-oriented'; got 'item-oriented'"),
    ("", ValueError, "p must be an array"),
])
def test_an_unknown_rule_is_refused_by_name(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        ocmf.fit(_data(), 2, n_iter=1, p=bad)
    with pytest.raises(exc, match=msg):
        ocmf.objective(_data(), np.ones((40, 2)), np.ones((30, 2)), p=bad)


def test_an_edited_model_is_refused_naming_the_entry():
    model = ocmf.fit(_data(), 2, p="user-oriented", n_iter=1, **IALS)
    edited = dataclasses.replace(model, params=dict(model.params, p="item-oriented"))
    with pytest.raises(ValueError, match=r"model.params\['p'\]"):
        ocmf_check.check_fitted(edited)
    lost = dataclasses.replace(model, extras={k: v for k, v in model.extras.items() if k != "p"})
    with pytest.raises(ValueError, match=r"model.extras\['p'\] .* is missing"):
        ocmf_check.check_fitted(lost)
    short = dataclasses.replace(model, extras=dict(model.extras, p=np.ones(3)))
    with pytest.raises(ValueError, match=r"model.extras\['p'\]"):
        ocmf_check.check_fitted(short)


def test_the_distributed_fit_asks_for_the_array():
    """Its workers hold Y in blocks: the rule's counts are the whole Y's (checked before any
    cluster work, by the same function fastpu.distributed.fit calls first)."""
    with pytest.raises(ValueError, match=r"takes p as an array, not the rule p='user-oriented'"):
        ocmf_dask._check_unsupported(dict(p="user-oriented"))
    ocmf_dask._check_unsupported(dict(p=np.ones(3)))
