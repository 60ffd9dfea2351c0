"""Approximate search (faiss HNSW): results re-scored exactly, filtered like the exact path,
close to it in recall; refusals. Skipped when faiss is not installed (the ``ann`` extra)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu.model import ApproximateIndex, Factorization

pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((50, 16))
    items = centres[rng.integers(0, 50, 5000)] + 0.5 * rng.standard_normal((5000, 16))
    users = centres[rng.integers(0, 50, 300)] + 0.5 * rng.standard_normal((300, 16))
    model = Factorization(users, items, item_ids=np.arange(5000) + 10_000)
    seen = sp.random_array((300, 5000), density=0.004, random_state=1, format="csr")
    return model, seen


def _recall(a, b):
    return np.mean([len(set(x[x >= 0]) & set(y[y >= 0])) / max(1, (y >= 0).sum())
                    for x, y in zip(a, b)])


def test_recommend_is_close_to_exact_and_scores_are_exact(big):
    model, seen = big
    index = ApproximateIndex(model)
    exact, _ = fp.recommend(model, seen, n=10)
    approx, scores = fp.recommend(model, seen, n=10, approximate=index)
    assert _recall(approx, exact) >= 0.95
    S = model.user_factors @ model.item_factors.T
    np.testing.assert_allclose(scores, np.take_along_axis(S, approx, axis=1), rtol=1e-12)
    assert not np.any(seen.toarray()[np.arange(300)[:, None], approx] != 0)
    assert np.all(np.diff(scores, axis=1) <= 0)
    again, _ = model.recommend(seen, n=10, approximate=True)         # a throw-away index
    assert _recall(again, exact) >= 0.95


def test_filters_and_ids(big):
    model, seen = big
    index = ApproximateIndex(model)
    cand = np.arange(0, 5000, 2)
    a, _ = fp.recommend(model, seen, n=5, items=cand, exclude=[0, 2, 4], approximate=index,
                         ids=False)
    e, _ = fp.recommend(model, seen, n=5, items=cand, exclude=[0, 2, 4], ids=False)
    assert np.all(np.isin(a, cand)) and not np.isin(a, [0, 2, 4]).any()
    assert _recall(a, e) >= 0.9
    few, _ = fp.recommend(model, seen, n=5, items=[1, 3, 5, 7], approximate=index,  # exact path
                          ids=False)
    np.testing.assert_array_equal(few, fp.recommend(model, seen, n=5, items=[1, 3, 5, 7],
                                                         ids=False)[0])
    ids, _ = fp.recommend(model, seen, users=[3], n=5, ids=True, approximate=index)
    assert all(10_000 <= i < 15_000 for i in ids[0])


def test_similar_is_close_to_exact(big):
    model, _ = big
    index = ApproximateIndex(model, similarity="cosine")
    q = np.arange(0, 5000, 50)
    e, ecos = fp.similar_items(model, q, n=10, ids=False)
    a, acos = fp.similar_items(model, q, n=10, approximate=index, ids=False)
    assert _recall(a, e) >= 0.95 and not np.any(a == q[:, None])
    users = ApproximateIndex(model, side="user", similarity="cosine")
    e, _ = fp.similar_users(model, [0, 1, 2], n=5)
    a, _ = model.similar_users([0, 1, 2], n=5, approximate=users)
    assert _recall(a, e) >= 0.9


def test_csrr_sparse_part_is_added_back():
    data = fp.datasets.synthetic(60, 200, rank=3, density=0.1, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fp.csrr.fit(data.Y, 4, variant="e", n_iter=5, lam2=0.0)
    exact, escore = fp.recommend(model, None, n=5)
    approx, ascore = fp.recommend(model, None, n=5, approximate=True)
    S = model.scores()
    np.testing.assert_allclose(ascore, np.take_along_axis(S, approx, axis=1), rtol=1e-12)
    assert _recall(approx, exact) >= 0.9


def test_ivf_kind(big):
    model, seen = big
    index = ApproximateIndex(model, kind="ivf", n_probe=20)
    assert "kind='ivf'" in repr(index) and index.n_cells == int(4 * np.sqrt(5000))
    exact, _ = fp.recommend(model, seen, n=10)
    approx, _ = fp.recommend(model, seen, n=10, approximate=index)
    assert _recall(approx, exact) >= 0.9


def test_refusals(big):
    model, seen = big
    index = ApproximateIndex(model)
    with pytest.raises(ValueError, match="built with side='item', similarity='dot'; this call "
                                         "needs side='item', similarity='cosine'"):
        fp.similar_items(model, [0], approximate=index, ids=False)
    other = Factorization(model.user_factors, model.item_factors * 2)
    with pytest.raises(ValueError, match="built from other item factors than this model's"):
        fp.recommend(other, None, n=3, approximate=index)
    with pytest.raises(ValueError, match='similarity="dot" ranks items for users'):
        ApproximateIndex(model, side="user")
    with pytest.raises(TypeError, match="approximate must be True, False or a "
                                        "fastpu.model.ApproximateIndex, got str"):
        fp.recommend(model, None, approximate="yes")
    Y = fp.datasets.synthetic(20, 15, rank=2, density=0.3, seed=0).Y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = fp.csrr.fit(Y, variant="I", n_iter=2)
    with pytest.raises(ValueError, match="dense m × n matrix U"):
        ApproximateIndex(dense)

    class Shifted(Factorization):
        def scores(self, users=None):
            return super().scores(users) + 1.0

    with pytest.raises(ValueError, match="Shifted's scores are not the product of its factors"):
        ApproximateIndex(Shifted(model.user_factors, model.item_factors))
