"""EASE and item-kNN against dense references written from their definitions."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import fastpu as fp
from fastpu._core import memory

from strategies import csr_matrices


def _dense_x(Y):
    return (Y.toarray() != 0).astype(np.float64)


def _naive_ease(X, lam):
    """Steck (WWW 2019), section 3: P = (XᵀX + λI)⁻¹, B = I − P diagMat(1/diag P)."""
    P = np.linalg.inv(X.T @ X + lam * np.eye(X.shape[1]))
    return np.eye(X.shape[1]) - P / np.diag(P)[None, :]


def _naive_knn(X, n_neighbors, shrink):
    C = X.T @ X
    norm = np.sqrt(np.diag(C))
    S = np.zeros_like(C)
    n = C.shape[0]
    for i in range(n):
        for j in range(n):
            d = norm[i] * norm[j] + shrink
            if i != j and d > 0:
                S[i, j] = C[i, j] / d
    if n_neighbors is not None:
        for j in range(n):               # item j keeps its n_neighbors most similar items
            keep = sorted(range(n), key=lambda i: (-S[i, j], i))[:n_neighbors]
            S[[i for i in range(n) if i not in keep], j] = 0.0
    return S


def _trainable(Y):
    return Y.nnz > 0


@given(Y=csr_matrices(max_rows=8, max_cols=6).filter(_trainable),
       lam=st.sampled_from([0.1, 1.0, 50.0]))
def test_ease_equals_the_closed_form(Y, lam):
    model = fp.baselines.ease(Y, lam=lam)
    X = _dense_x(Y)
    B = _naive_ease(X, lam)
    np.testing.assert_allclose(model.B, B, rtol=1e-9, atol=1e-12)
    assert np.all(np.diag(model.B) == 0)
    np.testing.assert_allclose(model.scores(), X @ B, rtol=1e-9, atol=1e-12)
    R = X - X @ B
    assert model.history[0]["objective"] == pytest.approx(np.sum(R * R) + lam * np.sum(B * B),
                                                          rel=1e-9, abs=1e-12)


@given(Y=csr_matrices(max_rows=8, max_cols=6).filter(_trainable),
       n_neighbors=st.sampled_from([1, 2, None]), shrink=st.sampled_from([0.0, 2.0]))
def test_item_knn_equals_the_definition(Y, n_neighbors, shrink):
    model = fp.baselines.item_knn(Y, n_neighbors=n_neighbors, shrink=shrink)
    X = _dense_x(Y)
    np.testing.assert_allclose(model.B, _naive_knn(X, n_neighbors, shrink), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(model.scores(), X @ model.B, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n_neighbors, shrink", [(1, 0.0), (3, 0.0), (7, 1.0), (38, 0.0)])
def test_item_knn_keeps_tied_neighbours_as_a_stable_sort(n_neighbors, shrink):
    # 40 items built from a few repeated columns, so that most columns hold long runs of equal
    # similarities: the kept ones must be those of lower item number, at any thread count
    rng = np.random.default_rng(3)
    base = (rng.random((25, 5)) < 0.4).astype(np.float64)
    Y = sp.csr_array(base[:, rng.integers(0, 5, size=40)])
    X = _dense_x(Y)
    want = _naive_knn(X, None, shrink)
    order = np.argsort(-want, axis=0, kind="stable")
    np.put_along_axis(want, order[n_neighbors:], 0.0, axis=0)
    for threads in (1, 2):
        got = fp.baselines.item_knn(Y, n_neighbors=n_neighbors, shrink=shrink, n_threads=threads).B
        np.testing.assert_array_equal(got != 0, want != 0)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_ease_and_knn_serve_save_load_and_fold_in(tmp_path):
    Y = fp.datasets.synthetic(60, 30, rank=3, density=0.15, seed=0).Y
    for model in (fp.baselines.ease(Y, lam=20.0), fp.baselines.item_knn(Y, n_neighbors=5)):
        model.save(tmp_path / "m.npz")
        back = fp.load_model(tmp_path / "m.npz")
        np.testing.assert_array_equal(back.B, model.B)
        np.testing.assert_array_equal(back.scores([0, 3]), model.scores([0, 3]))
        items, _ = fp.recommend(back, Y, users=[0, 1], n=4)
        assert items.shape == (2, 4) and not np.isin(items[0], Y.indices[Y.indptr[0]:Y.indptr[1]]).any()
        # a new user's scores are x B, whatever the training rows
        rows = sp.csr_array(Y[[2, 5]])
        new = fp.fold_in(model, rows)
        np.testing.assert_allclose(new.scores(), _dense_x(rows) @ model.B, rtol=1e-12)
        assert new.shape == (2, 30)
        res = fp.evaluate(model, *fp.split.holdout(Y, test_frac=0.3, seed=1), k=5)
        assert 0 <= res["ndcg@5"] <= 1
        with pytest.raises(ValueError, match="similar_users compares user vectors, and this .* "
                                             "model has none"):
            fp.similar_users(model, [0])
        assert fp.similar_items(model, [1], n=3)[0].shape == (1, 3)


def test_an_item_item_matrix_too_large_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 1 << 20)          # 1 MiB
    Y = sp.random_array((10, 400), density=0.05, random_state=0, format="csr")
    with pytest.raises(ValueError, match=r"ease.s n×n item-item matrix \(400 items\) needs 3.7 MiB.*lower the number of items"):
        fp.baselines.ease(Y)
    with pytest.raises(ValueError, match=r"item_knn.s n×n item-item matrix \(400 items\)"):
        fp.baselines.item_knn(Y)


@pytest.mark.parametrize("call, error, match", [
    (lambda Y: fp.baselines.ease(Y, 8), TypeError, "ease has no rank.*leave k out"),
    (lambda Y: fp.baselines.ease(Y, lam=0.0), ValueError, "lam"),
    (lambda Y: fp.baselines.ease(Y, lam="x"), TypeError, "lam"),
    (lambda Y: fp.baselines.ease(sp.csr_array((3, 4))), ValueError, "positive"),
    (lambda Y: fp.baselines.ease(Y.toarray()), TypeError, "Y must be a scipy.sparse"),
    (lambda Y: fp.baselines.item_knn(Y, n_neighbors=0), ValueError, "n_neighbors"),
    (lambda Y: fp.baselines.item_knn(Y, shrink=-1.0), ValueError, "shrink"),
    (lambda Y: fp.baselines.item_knn(Y, 4), TypeError, "item_knn has no rank"),
])
def test_bad_input_is_named(call, error, match):
    Y = sp.csr_array(np.array([[1.0, 0, 1, 0], [0, 1, 1, 0], [1, 1, 0, 1]]))
    with pytest.raises(error, match=match):
        call(Y)


def test_tune_and_compare_know_ease_and_item_knn():
    Y = fp.datasets.synthetic(80, 40, rank=3, density=0.15, seed=2).Y
    res = fp.select.tune("ease", Y, budget=2, metric="ndcg@5")
    assert set(res.best_params) == {"lam"} and res.model.method == "ease"
    assert "ease" in fp.compare.ALL and "itemknn" in fp.compare.ALL


def test_repr_shows_the_item_item_matrix_not_a_rank():
    Y = fp.datasets.synthetic(30, 20, rank=2, density=0.2, seed=0).Y
    text = repr(fp.baselines.ease(Y, lam=10.0))
    assert text.startswith("ItemItemModel(method='ease', 30 users × 20 items, ")
    assert "item_factors=<ndarray 20×20>" in text and "k=" not in text
