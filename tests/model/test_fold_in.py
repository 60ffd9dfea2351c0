"""fold_in: each method's row problem with the item side fixed, against dense references."""

import dataclasses
import doctest
import warnings

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import fastpu as fp
from fastpu.model import _fold_in
from fastpu.model._fold_in import fold_in
from fastpu.homf._fold import new_node_rows, walk_new_rows
from fastpu.csrr import CSRRModel
from fastpu.model import Factorization

import naive_fold_in as nv
from strategies import csr_matrices, seeds, LOSS_NAMES

REL = 1e-8          # the documented guarantee: gradient at the result / gradient at zero


def _dense_row(Y, i):
    row = Y[[i]].toarray().ravel()
    pos = np.zeros(Y.shape[1], bool)
    pos[Y.indices[Y.indptr[i]:Y.indptr[i + 1]]] = True
    return row, pos


def _ocmf_model(E, *, loss, rho, abar, lam, negatives="full", neg_ratio=1.0):
    params = dict(k=E.shape[1], loss=loss, rho=rho, a_bar=abar, lam=lam, negatives=negatives,
                  neg_ratio=neg_ratio, user_features=False, item_features=False)
    return Factorization(np.zeros((1, E.shape[1])), E, params=params, method="ocmf")


# ------------------------------------------------------------------------------------ ocmf

@given(Y=csr_matrices(max_rows=5, max_cols=9), k=st.integers(1, 4), seed=seeds,
       rho=st.sampled_from([0.0, 0.05, 1.0]), lam=st.sampled_from([0.01, 0.5]),
       abar=st.sampled_from([0.0, -0.5]))
def test_ocmf_square_equals_dense_least_squares(Y, k, seed, rho, lam, abar):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(Y.shape[1], k))
    q = rng.uniform(0.2, 2.0, size=Y.shape[1])
    p = rng.uniform(0.2, 2.0, size=Y.shape[0])
    model = _ocmf_model(E, loss="square", rho=rho, abar=abar, lam=lam)
    W = fold_in(model, Y, p=p, q=q).user_factors
    for i in range(Y.shape[0]):
        C, pos = _dense_row(Y, i)
        ref = nv.ocmf_square_lstsq(E, pos, C, pw=rho * p[i], q=q, abar=abar, lam=lam)
        np.testing.assert_allclose(W[i], ref, rtol=1e-7, atol=1e-9 * (1 + np.abs(ref).max()))


@given(Y=csr_matrices(max_rows=5, max_cols=9), k=st.integers(1, 4), seed=seeds,
       loss=st.sampled_from(LOSS_NAMES),
       rho=st.sampled_from([0.0, 0.05, 1.0]), lam=st.sampled_from([0.01, 0.5]),
       negatives=st.sampled_from(["full", "all"]))
def test_ocmf_row_gradient_below_tolerance(Y, k, seed, loss, rho, lam, negatives):
    rng = np.random.default_rng(seed)
    E = rng.normal(scale=2.0, size=(Y.shape[1], k))
    q = rng.uniform(0.2, 2.0, size=Y.shape[1])
    model = _ocmf_model(E, loss=loss, rho=rho, abar=-1.0, lam=lam, negatives=negatives)
    res = fold_in(model, Y, q=q)
    W = res.user_factors
    for i in range(Y.shape[0]):
        C, pos = _dense_row(Y, i)
        kw = dict(loss=loss, pw=rho, q=q, abar=-1.0, lam=lam, negatives=negatives)
        _, g = nv.ocmf_row(W[i], E, pos, C, **kw)
        _, g0 = nv.ocmf_row(np.zeros(k), E, pos, C, **kw)
        assert np.linalg.norm(g) <= REL * np.linalg.norm(g0)
    assert res.extras["fold_in"]["converged"].all()


@pytest.mark.parametrize("negatives", ["sampled", "full_logistic"])
@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ocmf_other_negatives_gradient(negatives, loss, seed):
    rng = np.random.default_rng(seed)
    n, k = 12, 3
    Y = sp.random_array((6, n), density=0.3, format="csr", random_state=seed)
    Y.data[:] = rng.uniform(0.5, 2.0, Y.nnz)
    E = rng.normal(size=(n, k))
    model = _ocmf_model(E, loss=loss, rho=0.3, abar=-1.0, lam=0.1, negatives=negatives,
                        neg_ratio=1.5)
    res = fold_in(model, Y, seed=seed)
    W = res.user_factors
    if negatives == "sampled":
        negs = res.extras["fold_in"]["negatives"]
        assert negs.shape == Y.shape
        assert (negs.multiply(Y != 0)).nnz == 0             # never a positive
        np.testing.assert_array_equal(np.diff(negs.indptr), np.minimum(
            np.round(1.5 * np.diff(Y.indptr)), n - np.diff(Y.indptr)))
    for i in range(Y.shape[0]):
        C, pos = _dense_row(Y, i)
        if negatives == "sampled":
            neg = np.zeros(n, bool)
            neg[negs.indices[negs.indptr[i]:negs.indptr[i + 1]]] = True
        else:
            neg = ~pos
        kw = dict(loss=loss, pw=0.3, q=np.ones(n), abar=-1.0, lam=0.1, negatives=negatives, neg=neg)
        _, g = nv.ocmf_row(W[i], E, pos, C, **kw)
        _, g0 = nv.ocmf_row(np.zeros(k), E, pos, C, **kw)
        assert np.linalg.norm(g) <= REL * np.linalg.norm(g0)


def test_ocmf_sampled_negatives_deterministic_for_seed():
    E = np.random.default_rng(0).normal(size=(15, 3))
    Y = sp.random_array((4, 15), density=0.3, format="csr", random_state=1)
    model = _ocmf_model(E, loss="logistic", rho=0.3, abar=-1.0, lam=0.1, negatives="sampled")
    a = fold_in(model, Y, seed=3).user_factors
    b = fold_in(model, Y, seed=3).user_factors
    np.testing.assert_array_equal(a, b)


def test_ocmf_reference_gradient_matches_finite_differences():
    """The dense reference's gradient is itself right (central differences)."""
    rng = np.random.default_rng(4)
    E = rng.normal(size=(7, 3))
    pos = np.array([1, 0, 1, 0, 0, 1, 0], bool)
    C = rng.uniform(0.5, 2, 7)
    w = rng.normal(size=3)
    for loss in LOSS_NAMES:
        kw = dict(loss=loss, pw=0.4, q=rng.uniform(0.5, 1.5, 7), abar=-1.0, lam=0.3)
        _, g = nv.ocmf_row(w, E, pos, C, **kw)
        h = 1e-6
        fd = [(nv.ocmf_row(w + h * e, E, pos, C, **kw)[0] - nv.ocmf_row(w - h * e, E, pos, C, **kw)[0])
              / (2 * h) for e in np.eye(3)]
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_ocmf_fitted_model_with_graph_and_item_features():
    """A user graph adds nothing for a new (edge-less) user; with item features E = Z H."""
    data = fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=2)
    rng = np.random.default_rng(0)
    S = sp.random_array((30, 30), density=0.1, random_state=0, format="csr")
    S = S + S.T
    Z = rng.normal(size=(30, 5))
    G = sp.random_array((30, 30), density=0.1, random_state=1, format="csr")
    G = G + G.T
    model = fp.ocmf.fit(data.Y[:30], 3, loss="logistic", rho=0.1, user_graph=G, lam_graph=0.5,
                        item_features=Z, n_iter=3, lam=0.5, dtype="float64")
    Ynew = data.Y[30:]
    W = fold_in(model, Ynew).user_factors
    E = np.asarray(model.item_factors, float)
    np.testing.assert_allclose(E, Z @ model.extras["H"][:5] + model.extras["H"][5], rtol=1e-10)
    for i in range(Ynew.shape[0]):
        C, pos = _dense_row(Ynew, i)
        kw = dict(loss="logistic", pw=0.1, q=np.ones(30), abar=-1.0, lam=0.5)
        _, g = nv.ocmf_row(W[i], E, pos, C, **kw)
        _, g0 = nv.ocmf_row(np.zeros(3), E, pos, C, **kw)
        assert np.linalg.norm(g) <= REL * np.linalg.norm(g0)


def test_ocmf_cold_start_from_user_features():
    data = fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=2)
    X = np.random.default_rng(1).normal(size=(40, 6))
    for intercept in (False, True):
        model = fp.ocmf.fit(data.Y[:30], 3, user_features=X[:30], n_iter=2, dtype="float64",
                            intercept=intercept)
        assert model.extras["W"].shape == (6 + intercept, 3)
        res = fold_in(model, user_features=X[30:])
        # the cold start appends the fit's column of ones (with the intercept) before x W
        X_new = np.column_stack([X[30:], np.ones(10)]) if intercept else X[30:]
        np.testing.assert_allclose(res.user_factors, X_new @ model.extras["W"], rtol=1e-12)
        again = fold_in(model, user_features=sp.csr_array(X[:30])).user_factors
        np.testing.assert_allclose(again, model.user_factors, rtol=1e-10, atol=1e-12)


def test_ocmf_float32_model_and_empty_rows():
    data = fp.datasets.synthetic(30, 20, rank=2, density=0.2, seed=0)
    model = fp.ocmf.fit(data.Y, 3, loss="square", rho=0.5, dtype="float32", n_iter=2)
    Ynew = sp.csr_array((4, 20))                       # users with no positives at all
    res = fold_in(model, Ynew)
    assert np.all(np.isfinite(res.user_factors))
    E = np.asarray(model.item_factors, float)
    ref = nv.ocmf_square_lstsq(E, np.zeros(20, bool), np.zeros(20), pw=0.5, q=np.ones(20),
                               abar=0.0, lam=1.0)
    np.testing.assert_allclose(res.user_factors[0], ref, atol=1e-12)


# ------------------------------------------------------------------------------------ fbgd

@given(Y=csr_matrices(max_rows=5, max_cols=9), f=st.integers(1, 4), seed=seeds,
       biases=st.booleans(), values=st.booleans(), lam=st.sampled_from([0.01, 1.0]))
def test_fbgd_equals_dense_least_squares(Y, f, seed, biases, values, lam):
    rng = np.random.default_rng(seed)
    n = Y.shape[1]
    g = f + 2 if biases else f
    Q = rng.normal(size=(n, g))
    if biases:
        Q[:, f] = 1.0                    # q_y,f+1 = 1 (the user-bias column)
    neg = rng.uniform(0.1, 2.0, n)
    w0 = float(rng.normal())
    params = dict(k=f, biases=biases, user_features=None, pos_weight="values" if values else 2.0,
                  r_pos=1.0, r_neg=0.1, lam=lam)
    model = Factorization(np.zeros((1, g)), Q, params=params, method="fbgd",
                          extras=dict(neg_weights=neg, w0=w0))
    P = fold_in(model, Y).user_factors
    assert P.shape == (Y.shape[0], g)
    for i in range(Y.shape[0]):
        C, pos = _dense_row(Y, i)
        apos = C if values else np.full(n, 2.0)
        ref = nv.fbgd_row_lstsq(Q, pos, apos, 1.0, neg, 0.1, lam, biases=biases, f=f, w0=w0)
        np.testing.assert_allclose(P[i], ref, rtol=1e-7, atol=1e-9 * (1 + np.abs(ref).max()))


def test_fbgd_fitted_models_and_cold_start():
    data = fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=3)
    model = fp.fbgd.fit(data.Y[:30], 4, n_iter=3, alpha0=5.0, rho=0.5, biases=True, lam=0.1)
    P = fold_in(model, data.Y[30:]).user_factors
    assert P.shape == (10, 6) and np.all(P[:, -1] == 1.0)
    Q = model.item_factors
    neg = model.extras["neg_weights"]
    for i in range(10):
        _, pos = _dense_row(data.Y[30:], i)
        ref = nv.fbgd_row_lstsq(Q, pos, 1.0, 1.0, neg, 0.0, 0.1, biases=True, f=4,
                                w0=model.extras["w0"])
        np.testing.assert_allclose(P[i], ref, rtol=1e-7, atol=1e-10)
    # SVDFeature with user features: the training users' P is rebuilt from their features
    Zx = sp.random_array((40, 7), density=0.3, random_state=0, format="csr")
    mf = fp.fbgd.fit(data.Y[:30], 4, user_features=Zx[:30], n_iter=3, alpha0=5.0)
    np.testing.assert_allclose(fold_in(mf, user_features=Zx[:30]).user_factors, mf.user_factors,
                               rtol=1e-10, atol=1e-12)
    assert fold_in(mf, user_features=Zx[30:]).user_factors.shape == (10, 6)


def test_fbgd_model_files_of_earlier_releases_still_fold_in(tmp_path):
    """In earlier files fBGD's L2 penalty was params["reg"]; a model file written then holds "reg"
    and no "lam", and folds in exactly as the same model written today."""
    data = fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=5)
    for biases in (False, True):
        model = fp.fbgd.fit(data.Y[:30], 3, n_iter=2, alpha0=4.0, lam=0.3, biases=biases)
        params = {("reg" if key == "lam" else key): v for key, v in model.params.items()}
        old = dataclasses.replace(model, params=params)
        old.save(tmp_path / "old.npz")
        old = fp.load_model(tmp_path / "old.npz")
        assert "lam" not in old.params and old.params["reg"] == 0.3
        np.testing.assert_array_equal(fold_in(old, data.Y[30:]).user_factors,
                                      fold_in(model, data.Y[30:]).user_factors)
    neither = dataclasses.replace(model, params={k: v for k, v in params.items() if k != "reg"})
    with pytest.raises(ValueError, match=r"needs model.params\['lam'\], which it lacks"):
        fold_in(neither, data.Y[30:])


def test_fbgd_item_features_model_folds_in_user_rows():
    """Item features only: users keep free (V_x, w_x) with the bias columns of a real fit."""
    data = fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=4)
    Zy = sp.random_array((30, 5), density=0.4, random_state=2, format="csr")
    model = fp.fbgd.fit(data.Y[:30], 3, item_features=Zy, n_iter=3, alpha0=4.0, lam=0.05,
                        pos_weight="values")
    Ynew = data.Y[30:]
    P = fold_in(model, Ynew).user_factors
    for i in range(10):
        C, pos = _dense_row(Ynew, i)
        ref = nv.fbgd_row_lstsq(model.item_factors, pos, C, 1.0, model.extras["neg_weights"], 0.0,
                                0.05, biases=True, f=3, w0=model.extras["w0"])
        np.testing.assert_allclose(P[i], ref, rtol=1e-7, atol=1e-10)


def test_fbgd_singular_rows_fall_back_to_minimum_norm():
    Q = np.array([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]])    # rank 1: singular with lam = 0
    params = dict(k=2, biases=False, user_features=None, pos_weight=1.0, r_pos=1.0, r_neg=0.0,
                  lam=0.0)
    model = Factorization(np.zeros((1, 2)), Q, params=params, method="fbgd",
                          extras=dict(neg_weights=np.ones(3)))
    Y = sp.csr_array(np.array([[1.0, 0.0, 0.0]]))
    res = fold_in(model, Y)
    _, pos = _dense_row(Y, 0)
    ref = nv.fbgd_row_lstsq(Q, pos, 1.0, 1.0, np.ones(3), 0.0, 0.0, biases=False, f=2)
    np.testing.assert_allclose(res.user_factors[0], ref, atol=1e-10)
    assert list(res.extras["fold_in"]["singular_rows"]) == [0]


# ------------------------------------------------------------------------------------ homf

@given(R=csr_matrices(min_rows=2, max_rows=6, min_cols=2, max_cols=6, positive=True), Rn=csr_matrices(max_rows=3,
       max_cols=6), T=st.integers(1, 4), g=st.sampled_from(["exp", "linear", "step"]),
       mode=st.sampled_from(["exact", "dense"]), graph=st.booleans(), seed=seeds)
def test_homf_equals_augmented_dense_reference(R, Rn, T, g, mode, graph, seed):
    m, n = R.shape
    Rn = sp.csr_array(Rn.toarray()[:, :n]) if Rn.shape[1] >= n else sp.csr_array(
        np.hstack([Rn.toarray(), np.zeros((Rn.shape[0], n - Rn.shape[1]))]))
    S = None
    if graph:
        S = sp.random_array((m, m), density=0.5, random_state=seed % 1000, format="csr")
        S = S + S.T
    model = fp.homf.fit(R, 2, T=T, g=g, mode=mode, user_graph=S, alpha=0.3, n_iter=2, lam=0.05,
                        seed=seed % 1000)
    U = fold_in(model, Rn).user_factors
    A = model.extras["A"].toarray()
    rows, _ = nv.homf_new_rows(A, Rn.toarray(), T, m=m, g=g)
    ref = nv.homf_ridge(rows[:, :m + n], model.extras["V"], 0.05, dense=mode == "dense")
    np.testing.assert_allclose(U, ref, rtol=1e-8, atol=1e-10)


def test_homf_new_node_walk_statement():
    """Existing nodes never walk into the new node; its row is the row of f_T(A')."""
    R = sp.random_array((5, 4), density=0.5, random_state=3, format="csr")
    A = fp.homf.transition_matrix(R, g="linear")
    Rn = sp.csr_array(np.array([[0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    rows, F = nv.homf_new_rows(A.toarray(), Rn.toarray(), 3, m=5, g="linear")
    N = 9
    np.testing.assert_allclose(F[:N, N:], 0.0)                       # no walk back in
    np.testing.assert_allclose(F[:N, :N], nv.ft_dense(A.toarray(), 3), atol=1e-14)
    np.testing.assert_allclose(rows[:, N:], 0.0)                       # nor onto itself
    An = new_node_rows(Rn, 5, "linear", 0.0)
    ours = walk_new_rows(An, fp._core.validation.transpose_csr(A), 3)
    np.testing.assert_allclose(ours, rows[:, :N], atol=1e-14)
    assert not ours[1].any()                                           # no edges: zero row


@pytest.mark.parametrize("mode", ["exact", "dense"])
def test_homf_fold_in_of_training_rows_reproduces_user_factors(mode):
    """Without side graphs a training user's row folded in as a new node is its own row of f_T."""
    R = fp.datasets.synthetic(25, 15, rank=2, density=0.2, seed=1).Y
    model = fp.homf.fit(R, 3, T=3, mode=mode, n_iter=2)
    np.testing.assert_allclose(fold_in(model, R).user_factors, model.user_factors,
                               rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------------------------ csrr

def _csrr_model(Q, *, alpha, lam1, lam2, loss):
    params = dict(variant="e", alpha=alpha, lam1=lam1, lam2=lam2, k=Q.shape[1], loss=loss)
    return CSRRModel(np.zeros((1, Q.shape[1])), Q, params=params, method="csrr",
                     V=sp.csr_array((1, Q.shape[0])), variant="e")


@given(Y=csr_matrices(max_rows=4, max_cols=8), k=st.integers(1, 4), seed=seeds,
       loss=st.sampled_from(["I", "II"]), alpha=st.sampled_from([0.5, 2.0]),
       lam1=st.sampled_from([0.0, 0.3]), lam2=st.sampled_from([0.0, 0.1, 2.0]))
def test_csrr_first_order_conditions_and_lbfgsb(Y, k, seed, loss, alpha, lam1, lam2):
    rng = np.random.default_rng(seed)
    n = Y.shape[1]
    hi = 1.0 / np.sqrt(k)
    Q = rng.uniform(0.0, 3.0 * hi, size=(n, k))
    model = _csrr_model(Q, alpha=alpha, lam1=lam1, lam2=lam2, loss=loss)
    res = fold_in(model, Y)
    P, Vn = res.user_factors, res.V.toarray()
    assert res.V.shape == Y.shape
    kw = dict(alpha=alpha, lam1=lam1, lam2=lam2, loss=loss)
    for i in range(Y.shape[0]):
        _, pos = _dense_row(Y, i)
        p, v = P[i], Vn[i]
        assert np.all((p >= 0) & (p <= hi)) and np.all((v >= 0) & (v <= 1))
        assert not v[~pos].any()
        f, gp, gv = nv.csrr_row(p, v, Q, pos, **kw)
        # reference: the gradient at p = 0 with v at its best for p = 0 (v minimised out)
        c, target = (alpha, 1.0) if loss == "I" else (1.0, alpha)
        v0 = np.where(pos, np.clip(target - lam2 / c, 0.0, 1.0), 0.0)
        _, gp0, _ = nv.csrr_row(np.zeros(k), v0, Q, pos, **kw)
        # v's optimality is exact (closed form); p's to the documented tolerance
        assert np.linalg.norm(nv.box_kkt(v[pos], gv[pos], 0.0, 1.0)) <= 1e-12 * (1 + np.abs(gv).max())
        assert np.linalg.norm(nv.box_kkt(p, gp, 0.0, hi)) <= REL * np.linalg.norm(gp0) + 1e-15

        idx = np.flatnonzero(pos)

        def obj(z, idx=idx, pos=pos):
            vv = np.zeros(n)
            vv[idx] = z[k:]
            val, g1, g2 = nv.csrr_row(z[:k], vv, Q, pos, **kw)
            return val, np.concatenate([g1, g2[idx]])

        best = so.minimize(obj, np.zeros(k + idx.size), jac=True, method="L-BFGS-B",
                           bounds=[(0, hi)] * k + [(0, 1)] * idx.size,
                           options=dict(ftol=1e-15, gtol=1e-12, maxiter=5000))
        assert f <= best.fun + 1e-9 * (1 + abs(best.fun))


def test_csrr_fitted_model_scores_and_recommend():
    data = fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=5)
    model = fp.csrr.fit(data.Y[:30], 4, variant="e", n_iter=10)
    Ynew = data.Y[30:]
    res = fold_in(model, Ynew, user_ids=np.arange(100, 110))
    assert isinstance(res, CSRRModel) and res.shape == (10, 30)
    S = res.scores()
    np.testing.assert_allclose(S, res.user_factors @ model.item_factors.T + res.V.toarray())
    items, _ = fp.recommend(res, Ynew, n=5)
    assert not np.any(Ynew.toarray()[np.arange(10)[:, None], items] != 0)
    assert list(res.user_ids) == list(range(100, 110))


def test_csrr_stored_zeros_are_not_positives():
    """The row solver keeps Y_new's positives (stored values > 0) without a second check."""
    data = fp.datasets.synthetic(40, 30, rank=3, density=0.15, seed=5)
    model = fp.csrr.fit(data.Y[:30], 4, variant="e", n_iter=10)
    Ynew = sp.csr_array(data.Y[30:], dtype=np.float64)
    Ynew.data = Ynew.data * 3.0                          # weights: csrr binarises them
    with_zero = Ynew.copy()
    with_zero.data[::3] = 0.0                            # stored zeros: not positives
    without = with_zero.copy()
    without.eliminate_zeros()
    a, b = fold_in(model, with_zero), fold_in(model, without)
    np.testing.assert_array_equal(a.user_factors, b.user_factors)
    np.testing.assert_array_equal(a.V.toarray(), b.V.toarray())
    assert a.V.nnz <= without.nnz and not np.any(a.V.toarray()[with_zero.toarray() == 0])


def test_csrr_dense_variants_refused():
    Y = sp.random_array((10, 8), density=0.3, random_state=0, format="csr")
    model = fp.csrr.fit(Y, variant="I", n_iter=2)
    with pytest.raises(ValueError, match="variant 'e' only.*CSRR-I"):
        fold_in(model, Y)


# ------------------------------------------------------------------------------------ common

def test_result_serves_new_users_with_recommend():
    data = fp.datasets.synthetic(60, 40, rank=3, density=0.1, seed=0)
    model = fp.ocmf.fit(data.Y[:50], 4, n_iter=2)
    res = fold_in(model, data.Y[50:])
    assert res.method == "ocmf" and res.shape == (10, 40) and res.history == []
    items, scores = fp.recommend(res, data.Y[50:], n=4)
    np.testing.assert_allclose(scores[:, 0], (res.user_factors @ model.item_factors.T)[
        np.arange(10), items[:, 0]], rtol=1e-6)


def test_thread_count_does_not_change_results():
    data = fp.datasets.synthetic(300, 40, rank=3, density=0.1, seed=0)
    model = fp.ocmf.fit(data.Y[:100], 4, n_iter=2)
    a = fold_in(model, data.Y[100:], n_threads=1).user_factors
    b = fold_in(model, data.Y[100:], n_threads=fp.get_num_threads()).user_factors
    np.testing.assert_array_equal(a, b)


def test_unconverged_rows_warn():
    E = np.random.default_rng(0).normal(size=(10, 3))
    model = _ocmf_model(E, loss="logistic", rho=0.1, abar=-1.0, lam=0.1)
    Y = sp.random_array((3, 10), density=0.4, random_state=0, format="csr")
    with pytest.warns(RuntimeWarning, match="stopped above tol"):
        res = fold_in(model, Y, max_iter=1, tol=1e-14)
    assert not res.extras["fold_in"]["converged"].all()


def test_docstring_example():
    assert fp.fold_in is fold_in
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(_fold_in.fold_in, "fold_in", globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


# ------------------------------------------------------------------------------------ errors

@pytest.fixture(scope="module")
def models():
    data = fp.datasets.synthetic(30, 20, rank=2, density=0.2, seed=0)
    X = np.random.default_rng(0).normal(size=(30, 4))
    return dict(Y=data.Y, ocmf=fp.ocmf.fit(data.Y, 3, n_iter=1),
                feat=fp.ocmf.fit(data.Y, 3, user_features=X, n_iter=1),
                homf=fp.homf.fit(data.Y, 2, n_iter=1, mode="dense"))


def test_errors(models):
    Y, m, feat = models["Y"], models["ocmf"], models["feat"]
    with pytest.raises(TypeError, match="model must be a fastpu Factorization"):
        fold_in("model", Y)
    with pytest.raises(TypeError, match="Y_new must be a scipy.sparse"):
        fold_in(m, Y.toarray())
    with pytest.raises(ValueError, match=r"Y_new has shape \(30, 5\), expected \(m_new, 20\)"):
        fold_in(m, Y[:, :5])
    bad = Y.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="Y_new has 1 non-finite"):
        fold_in(m, bad)
    bad.data[0] = -1.0
    with pytest.raises(ValueError, match="Y_new has 1 negative"):
        fold_in(m, bad)
    with pytest.raises(ValueError, match="Y_new is required"):
        fold_in(m)
    with pytest.raises(ValueError, match="user_features was given but this ocmf model"):
        fold_in(m, Y, user_features=np.ones((30, 4)))
    with pytest.raises(ValueError, match="user_features is required.*4 columns"):
        fold_in(feat)
    with pytest.raises(ValueError, match="Y_new cannot change it; pass user_features alone"):
        fold_in(feat, Y, user_features=np.ones((30, 4)))
    with pytest.raises(ValueError, match="user_features has 3 columns, expected 4"):
        fold_in(feat, user_features=np.ones((2, 3)))
    with pytest.raises(ValueError, match="user_features must be 2-dimensional"):
        fold_in(feat, user_features=[1.0, 2.0, 3.0, 4.0])
    # the intercept's row of W is added to every new user's factor
    np.testing.assert_allclose(fold_in(feat, user_features=[[1.0, 0.0, 0.0, 0.0]]).user_factors,
                               feat.extras["W"][:1] + feat.extras["W"][4:])
    with pytest.raises(ValueError, match="user_features has 1 non-finite"):
        fold_in(feat, user_features=np.array([[np.nan, 0, 0, 0]]))
    with pytest.raises(ValueError, match="p has shape"):
        fold_in(m, Y, p=np.ones(3))
    with pytest.raises(ValueError, match="q has shape"):
        fold_in(m, Y, q=np.ones(3))
    with pytest.raises(ValueError, match="q must be non-negative"):
        fold_in(m, Y, q=-np.ones(20))
    with pytest.raises(ValueError, match="user_ids has shape"):
        fold_in(m, Y, user_ids=[1, 2])
    with pytest.raises(ValueError, match=r"user_ids has the id 'b' more than once \(positions 1 and 3\)"):
        fold_in(m, Y[:4], user_ids=["a", "b", "c", "b"])
    with pytest.raises(TypeError, match="seed must be a non-negative integer.*got -1"):
        fold_in(m, Y, seed=-1)            # refused even where no negatives are sampled
    with pytest.raises(TypeError, match="seed must be a non-negative integer.*got 'x'"):
        fold_in(models["homf"], Y, seed="x")
    with pytest.raises(ValueError, match="tol must be >= 0"):
        fold_in(m, Y, tol=-1.0)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        fold_in(m, Y, max_iter=0)
    with pytest.raises(ValueError, match="unknown model.method 'svd'"):
        fold_in(Factorization(np.ones((2, 2)), np.ones((3, 2)), method="svd"), Y)
    with pytest.raises(ValueError, match="p and q are ocmf's unlabeled weights; a homf model"):
        fold_in(models["homf"], Y, q=np.ones(20))
    with pytest.raises(ValueError, match="p and q are not used for a model with user features"):
        fold_in(feat, user_features=np.ones((2, 4)), p=np.ones(2))
    with pytest.raises(ValueError, match="user_features was given but this homf model"):
        fold_in(models["homf"], Y, user_features=np.ones((30, 4)))


def test_a_model_missing_a_param_names_it(models):
    Y, m = models["Y"], models["ocmf"]
    drop = {k: v for k, v in m.params.items() if k != "rho"}
    with pytest.raises(ValueError, match=r"fold_in of this ocmf model needs model.params\['rho'\], which it lacks"):
        fold_in(dataclasses.replace(m, params=drop), Y)
    homf = models["homf"]
    with pytest.raises(ValueError, match=r"this homf model needs model.extras\['A'\], which"):
        fold_in(dataclasses.replace(homf, extras={k: v for k, v in homf.extras.items() if k != "A"}), Y)
    feat = models["feat"]
    with pytest.raises(ValueError, match=r"this ocmf model needs model.extras\['W'\]"):
        fold_in(dataclasses.replace(feat, extras={}), user_features=np.ones((2, 4)))
    sampled = dataclasses.replace(m, params={**m.params, "negatives": "sampled"})
    sampled.params.pop("neg_ratio", None)
    with pytest.raises(ValueError, match=r"needs model.params\['neg_ratio'\]"):
        fold_in(sampled, Y)
    fb = fp.fbgd.fit(Y, 2, n_iter=1)      # an edited weight vector: was numpy's broadcast error
    edited = dataclasses.replace(fb, extras={**fb.extras, "neg_weights": fb.extras["neg_weights"][:-1]})
    with pytest.raises(ValueError, match=r"model.extras\['neg_weights'\] has shape \(\d+,\), expected"):
        fold_in(edited, Y)
    with pytest.raises(ValueError, match=r"unknown model.params\['loss'\] 'foo'"):
        fold_in(dataclasses.replace(m, params={**m.params, "loss": "foo"}), Y)
    U, E = np.ones((3, 2)), np.ones((20, 2))
    for method, first in (("ocmf", "loss"), ("fbgd", "k"), ("homf", "T")):      # built by hand
        with pytest.raises(ValueError, match=rf"this {method} model needs model.params\['{first}'\]"):
            fold_in(Factorization(U, E, method=method), Y)
    with pytest.raises(ValueError, match=r"this csrr model needs model.params\['alpha'\]"):
        fold_in(CSRRModel(U, E, method="csrr", V=sp.csr_array((3, 20)), variant="e"), Y)


def test_nothing_returns_nan_from_a_broken_model():
    E = np.ones((5, 2))
    E[1, 0] = np.inf
    model = _ocmf_model(E, loss="square", rho=0.1, abar=0.0, lam=0.1)
    with pytest.raises(ValueError, match="model.item_factors has 1 non-finite"):
        fold_in(model, sp.csr_array(np.eye(2, 5)))
    # a model whose numbers overflow in the row problem is reported, never returned as NaN
    big = _ocmf_model(np.full((5, 2), 1e200), loss="square", rho=0.1, abar=0.0, lam=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FloatingPointError, match="non-finite"):
            fold_in(big, sp.csr_array(np.eye(2, 5)))


def test_ocmf_fold_in_uses_the_fitted_q_and_the_user_sides_lambda():
    rng = np.random.default_rng(3)
    Y = sp.csr_array((rng.random((25, 12)) < 0.3).astype(float))
    q = rng.uniform(0.5, 2.0, 12)
    model = fp.ocmf.fit(Y, 3, loss="square", rho=0.2, q=q, lam=5.0, lam_w=0.25, lam_h=2.0, n_iter=3)
    np.testing.assert_array_equal(model.extras["q"], q)
    W = fold_in(model, Y[:4]).user_factors
    np.testing.assert_array_equal(W, fold_in(model, Y[:4], q=q).user_factors)
    E = np.asarray(model.item_factors, dtype=np.float64)
    for i in range(4):
        C, pos = _dense_row(Y[:4], i)
        ref = nv.ocmf_square_lstsq(E, pos, C, pw=0.2, q=q, abar=0.0, lam=0.25)
        np.testing.assert_allclose(W[i], ref, rtol=1e-7, atol=1e-10)


def test_a_dataset_of_new_users_is_matched_to_the_model_by_item_id():
    """fold_in refused a Dataset, and its advice (Y_new=data.Y) could not work: from_pairs
    numbers the new user's own few items, not the model's."""
    data = fp.datasets.from_pairs(["a", "a", "b", "c", "c", "d"], [10, 20, 20, 30, 10, 40])
    model = fp.ocmf.fit(data, 3, n_iter=2, loss="square", rho=0.1)
    new_pairs = fp.datasets.from_pairs(["x", "x", "y"], [30, 10, 40])
    by_id = fold_in(model, new_pairs)
    cols = {10: 0, 20: 1, 30: 2, 40: 3}                       # the model's item order
    Y_new = sp.csr_array((np.ones(3), ([0, 0, 1], [cols[30], cols[10], cols[40]])), shape=(2, 4))
    np.testing.assert_array_equal(by_id.user_factors, fold_in(model, Y_new).user_factors)
    assert by_id.user_ids.tolist() == ["x", "y"]
    with pytest.warns(UserWarning, match=r"1 positive\(s\) of 1 item id\(s\) the model does not know \(\[99\]\)"):
        dropped = fold_in(model, fp.datasets.from_pairs(["x", "x"], [10, 99]))
    one = sp.csr_array((np.ones(1), ([0], [cols[10]])), shape=(1, 4))
    np.testing.assert_array_equal(dropped.user_factors, fold_in(model, one).user_factors)


def test_a_fold_in_with_no_known_id_is_an_error_naming_them():
    """`fp.fold_in(model, ["zzz"])` returned a model folded from nothing after a warning."""
    data = fp.datasets.from_pairs(["a", "a", "b", "c"], ["x", "y", "y", "z"])
    model = fp.ocmf.fit(data, 2, n_iter=2)
    with pytest.raises(ValueError, match=r"Y_new: the model knows none of its 2 item id\(s\) "
                                         r"\(\['zzz', 'qq'\]\); expected the model's item ids"):
        fp.fold_in(model, ["zzz", "qq"])
    with pytest.raises(ValueError, match=r"Y_new: the model knows none of the 1 item id\(s\) of its "
                                         r"positives \(\['w'\]\)"):
        fp.fold_in(model, fp.datasets.from_pairs(["new"], ["w"]))
    with pytest.raises(ValueError, match="new_rows: the model knows none"):
        fp.partial_fit_users(model, [["zzz"]], user_ids=["a"])
    with pytest.warns(UserWarning, match=r"1 item id\(s\) the model does not know \(\['zzz'\]\)"):
        one = fp.fold_in(model, ["zzz", "x"])              # some known: the unknown left out
    assert one.seen.toarray().tolist() == [[True, False, False]]
