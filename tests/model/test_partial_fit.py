"""partial_fit_users / partial_fit_items: each method's row problem against a dense solve, as
fold_in is tested (tests/model/test_fold_in.py), and the model assembled around the new rows."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpu as fp
from fastpu.csrr import CSRRModel

import naive_fold_in as nv
from strategies import csr_matrices, seeds, LOSS_NAMES

REL = 1e-8


def _row(Y, i):
    row = Y[[i]].toarray().ravel()
    pos = np.zeros(Y.shape[1], bool)
    pos[Y.indices[Y.indptr[i]:Y.indptr[i + 1]]] = True
    return row, pos


@pytest.fixture(scope="module")
def data():
    return fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=2)


def _fit(method, Y, **kw):
    """A small fit; ocmf's in float64, so that the solved rows can be checked to 1e-8 (a float32
    model stores them rounded: test_a_float32_model_stores_the_rows_rounded)."""
    if method == "ocmf":
        kw.setdefault("dtype", "float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(fp, method).fit(Y, 3, n_iter=3, **kw)


# ----------------------------------------------------------------------------- ocmf

@settings(max_examples=25)
@given(Y=csr_matrices(max_rows=5, max_cols=30, min_cols=30), seed=seeds,
       rho=st.sampled_from([0.05, 1.0]), lam=st.sampled_from([0.1, 2.0]))
def test_ocmf_square_users_equal_dense_least_squares(data, Y, seed, rho, lam):
    model = _fit("ocmf", data.Y, loss="square", rho=rho, lam=lam, lam_w=lam / 2, seed=seed % 100)
    ids = list(range(Y.shape[0]))[::-1]                   # existing users, in another order
    out = fp.partial_fit_users(model, Y, user_ids=ids)
    E = model.item_factors
    for r, i in enumerate(ids):
        C, pos = _row(Y, r)
        ref = nv.ocmf_square_lstsq(E, pos, C, pw=rho, q=np.ones(30), abar=0.0, lam=lam / 2)
        np.testing.assert_allclose(out.user_factors[i], ref, rtol=1e-7, atol=1e-9)
    untouched = np.setdiff1d(np.arange(40), ids)
    np.testing.assert_array_equal(out.user_factors[untouched], model.user_factors[untouched])
    np.testing.assert_array_equal(out.item_factors, model.item_factors)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_ocmf_items_solve_the_item_row_problem(data, loss):
    """The item side with users and items exchanged: Yᵀ, p ↔ q, λ_w ↔ λ_h."""
    rng = np.random.default_rng(1)
    q = rng.uniform(0.5, 2.0, 30)
    p = rng.uniform(0.5, 2.0, 40)
    model = _fit("ocmf", data.Y, loss=loss, rho=0.2, q=q, p=p, lam=1.0, lam_w=0.3, lam_h=0.7)
    cols = sp.random_array((3, 40), density=0.2, random_state=2, format="csr")
    cols.data[:] = rng.uniform(0.5, 2.0, cols.nnz)
    out = fp.partial_fit_items(model, cols, item_ids=[4, 30, 31], p=p)
    assert out.item_factors.shape == (32, 3) and out.item_ids is None
    B = model.user_factors
    weights = [q[4], 1.0, 1.0]                          # the fitted q, 1 for new items
    np.testing.assert_allclose(out.extras["q"], np.concatenate([q, [1.0, 1.0]]))
    for r, j in enumerate([4, 30, 31]):
        C, pos = _row(cols, r)
        kw = dict(loss=loss, pw=0.2 * weights[r], q=p, abar=model.params["a_bar"], lam=0.7)
        if loss == "square":
            ref = nv.ocmf_square_lstsq(B, pos, C, pw=0.2 * weights[r], q=p,
                                       abar=model.params["a_bar"], lam=0.7)
            np.testing.assert_allclose(out.item_factors[j], ref, rtol=1e-7, atol=1e-9)
        _, g = nv.ocmf_row(out.item_factors[j], B, pos, C, **kw)
        _, g0 = nv.ocmf_row(np.zeros(3), B, pos, C, **kw)
        assert np.linalg.norm(g) <= REL * np.linalg.norm(g0)
    keep = np.setdiff1d(np.arange(30), [4])
    np.testing.assert_array_equal(out.item_factors[keep], model.item_factors[keep])
    np.testing.assert_array_equal(out.user_factors, model.user_factors)


def test_ids_are_replaced_or_appended():
    data = fp.datasets.from_pairs(["a", "a", "b", "c", "c"], [1, 2, 2, 3, 1])
    model = _fit("ocmf", data, loss="square", rho=0.1)
    out = model.partial_fit_users([[1, 2, 3], [3], [2]], ["a", "newcomer", "z"])
    assert out.user_ids.tolist() == ["a", "b", "c", "newcomer", "z"]
    folded = fp.fold_in(model, [[1, 2, 3], [3], [2]])
    np.testing.assert_allclose(out.user_factors[[0, 3, 4]], folded.user_factors, rtol=1e-12)
    np.testing.assert_array_equal(out.user_factors[1:3], model.user_factors[1:3])
    again = out.partial_fit_users(fp.datasets.from_pairs(["z"], [1]))   # ids from the Dataset
    assert again.user_ids.tolist() == out.user_ids.tolist()
    np.testing.assert_allclose(again.user_factors[4], fp.fold_in(model, [[1]]).user_factors[0])
    with pytest.warns(UserWarning, match=r"1 positive\(s\) of 1 user id\(s\) the model does not "
                                         r"know \(\['q'\]\)"):
        items = model.partial_fit_items(fp.datasets.from_pairs(["a", "b", "q"], [7, 7, 1]))
    assert items.item_ids.tolist() == [1, 2, 3, 7]


def test_a_float32_model_stores_the_rows_rounded(data):
    """ocmf's default dtype: the partial fit solves in float64 and stores the rows in float32."""
    model = _fit("ocmf", data.Y, loss="square", rho=0.1, dtype="float32")
    out = fp.partial_fit_users(model, data.Y[:2], user_ids=[0, 40])
    assert out.user_factors.dtype == np.float32
    folded = fp.fold_in(model, data.Y[:2])
    np.testing.assert_allclose(out.user_factors[[0, 40]], folded.user_factors, rtol=1e-6,
                               atol=1e-7)


def test_models_without_ids_take_numbers(data):
    model = _fit("ocmf", data.Y, loss="square", rho=0.1)
    out = fp.partial_fit_users(model, data.Y[:3], user_ids=[41, 40, 5])
    assert out.shape == (42, 30) and out.user_ids is None
    with pytest.raises(ValueError, match=r"appended numbers must continue its numbering \(40, 41"):
        fp.partial_fit_users(model, data.Y[:2], user_ids=[40, 42])
    with pytest.raises(TypeError, match=r"partial_fit_users\(\) needs user_ids"):
        fp.partial_fit_users(model, data.Y[:2])
    with pytest.raises(ValueError, match="user_ids has the id 3 more than once"):
        fp.partial_fit_users(model, data.Y[:2], user_ids=[3, 3])


# ----------------------------------------------------------------------------- fbgd

@pytest.mark.parametrize("biases", [False, True])
def test_fbgd_users_equal_dense_least_squares(data, biases):
    model = _fit("fbgd", data.Y, biases=biases, alpha0=5.0, lam=0.2)
    rows = data.Y[:4]
    out = fp.partial_fit_users(model, rows, user_ids=[7, 40, 8, 41])
    f = 3
    for r, i in enumerate([7, 40, 8, 41]):
        _, pos = _row(rows, r)
        ref = nv.fbgd_row_lstsq(model.item_factors, pos, 1.0, 1.0, model.extras["neg_weights"], 0.0,
                                0.2, biases=biases, f=f, w0=model.extras.get("w0", 0.0))
        np.testing.assert_allclose(out.user_factors[i], ref, rtol=1e-7, atol=1e-10)
    # the parameters behind the factors follow (fbgd.parameters reads them)
    np.testing.assert_allclose(out.extras["V_user"], out.user_factors[:, :f])
    if biases:
        np.testing.assert_allclose(out.extras["w_user"] + out.extras["w0"], out.user_factors[:, f])
    with pytest.raises(ValueError, match=r"refuses fBGD models: an item's unobserved pairs are "
                                         r"weighted by the item's own α⁻ \(eq. 22\).*fbgd.fit"):
        fp.partial_fit_items(model, data.Y[:2].T.tocsr()[:1], item_ids=[0])


# ----------------------------------------------------------------------------- csrr

@pytest.mark.parametrize("side", ["user", "item"])
def test_csrr_rows_meet_their_optimality_conditions(data, side):
    model = _fit("csrr", data.Y, variant="e", alpha=2.0, lam1=0.3, lam2=0.1)
    Y = data.Y if side == "user" else data.Y.T.tocsr()
    new = Y[:3]
    ids = [1, 0, Y.shape[0]]                              # two existing rows, one appended
    fn = fp.partial_fit_users if side == "user" else fp.partial_fit_items
    out = fn(model, new, ids)
    assert isinstance(out, CSRRModel)
    F = out.user_factors if side == "user" else out.item_factors
    G = model.item_factors if side == "user" else model.user_factors
    Vd = (out.V if side == "user" else out.V.T).toarray()
    k = 3
    hi = 1 / np.sqrt(k)
    for r, i in enumerate(ids):
        _, pos = _row(new, r)
        p, v = F[i], Vd[i]
        assert not v[~pos].any() and np.all((p >= 0) & (p <= hi + 1e-15))
        f, gp, gv = nv.csrr_row(p, v, G, pos, alpha=2.0, lam1=0.3, lam2=0.1)
        v0 = np.where(pos, np.clip(1.0 - 0.1 / 2.0, 0.0, 1.0), 0.0)
        _, gp0, _ = nv.csrr_row(np.zeros(k), v0, G, pos, alpha=2.0, lam1=0.3, lam2=0.1)
        assert np.linalg.norm(nv.box_kkt(p, gp, 0.0, hi)) <= REL * np.linalg.norm(gp0) + 1e-15
    keep = [i for i in range(Y.shape[0]) if i not in ids]
    np.testing.assert_array_equal(F[keep], (model.user_factors if side == "user" else model.item_factors)[keep])
    Vold = (model.V if side == "user" else model.V.T).toarray()
    np.testing.assert_array_equal(Vd[keep], Vold[keep])
    S = out.scores()
    assert S.shape == out.shape and np.isfinite(S).all()


# ----------------------------------------------------------------------------- homf

def test_homf_users_are_fold_ins_and_unchanged_rows_reproduce_the_model(data):
    model = _fit("homf", data.Y, T=3, mode="exact")
    same = fp.partial_fit_users(model, data.Y[:5], user_ids=range(5))
    np.testing.assert_allclose(same.user_factors, model.user_factors, rtol=1e-9, atol=1e-12)
    rows = data.Y[5:8]
    out = fp.partial_fit_users(model, rows, user_ids=[40, 0, 41])
    ref = fp.fold_in(model, rows).user_factors
    np.testing.assert_allclose(out.user_factors[[40, 0, 41]], ref, rtol=1e-12)
    np.testing.assert_allclose(out.extras["U"][0], ref[1])            # the node's full U row
    # appended users are not nodes of the trained graph: a second partial fit still works
    more = fp.partial_fit_users(out, data.Y[8:9], user_ids=[42])
    np.testing.assert_allclose(more.user_factors[42], fp.fold_in(model, data.Y[8:9]).user_factors[0])
    # a fold-in of a fold-in (fewer rows than training users) solves the same problem
    twice = fp.fold_in(fp.fold_in(model, rows[:1]), data.Y[8:9])
    np.testing.assert_allclose(twice.user_factors, fp.fold_in(model, data.Y[8:9]).user_factors)
    with pytest.raises(ValueError, match=r"refuses HOMF models: an item's factor .* walks"):
        fp.partial_fit_items(model, data.Y.T.tocsr()[:1], item_ids=[0])


# ----------------------------------------------------------------------------- refusals

def test_features_and_graphs_are_refused_with_a_reason(data):
    X = np.random.default_rng(0).normal(size=(40, 4))
    feat = _fit("ocmf", data.Y, user_features=X)
    with pytest.raises(ValueError, match=r"fitted with user features.*fastpu.fold_in\(model, "
                                         r"user_features=...\)"):
        fp.partial_fit_users(feat, data.Y[:1], user_ids=[0])
    Z = np.random.default_rng(1).normal(size=(30, 4))
    ifeat = _fit("ocmf", data.Y, item_features=Z)
    with pytest.raises(ValueError, match="fitted with item features"):
        fp.partial_fit_items(ifeat, data.Y.T.tocsr()[:1], item_ids=[0])
    G = sp.random_array((40, 40), density=0.1, random_state=0, format="csr")
    graph = _fit("ocmf", data.Y, user_graph=G + G.T, lam_graph=0.5)
    with pytest.raises(ValueError, match=r"fitted with a user graph, which couples the rows"):
        fp.partial_fit_users(graph, data.Y[:1], user_ids=[3])
    appended = fp.partial_fit_users(graph, data.Y[:1], user_ids=[40])      # no edges: fine
    np.testing.assert_allclose(appended.user_factors[40], fp.fold_in(graph, data.Y[:1]).user_factors[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = fp.csrr.fit(data.Y, variant="I", n_iter=2)
    with pytest.raises(ValueError, match="variant 'e' only"):
        fp.partial_fit_users(dense, data.Y[:1], user_ids=[0])
    with pytest.raises(TypeError, match="model must be a fastpu Factorization"):
        fp.partial_fit_users("model", data.Y[:1], user_ids=[0])
    with pytest.raises(TypeError, match=r"partial_fit_users\(\) needs new_rows"):
        fp.partial_fit_users(dense, None, user_ids=[0])
