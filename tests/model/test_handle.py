"""The model as the user's handle, and the inputs users have.

Each wall a new user met has a regression test here, named after it.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu.csrr import CSRRModel
from fastpu.model import Factorization


@pytest.fixture(scope="module")
def ml():
    data = fp.datasets.binarize(fp.datasets.load("ml-100k"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fp.ocmf.fit(data, 8, n_iter=2, loss="square", rho=0.05)
    return data, model


@pytest.fixture(scope="module")
def small():
    data = fp.datasets.from_pairs(["ann", "ann", "bob", "cy", "cy", "dan"],
                                  ["tea", "jam", "tea", "jam", "oat", "rye"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return data, fp.ocmf.fit(data, 2, n_iter=2), fp.csrr.fit(data, 2, variant="e", n_iter=3)


# ----------------------------------------------------------------------------- methods

def test_methods_call_the_free_functions(small):
    data, model, csrr = small
    for m in (model, csrr):
        a = m.recommend(data, ["ann", "bob"], n=3, ids=True)
        b = fp.recommend(m, data, ["ann", "bob"], n=3, ids=True)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(m.similar_items([0, 1], n=2)[0],
                                      fp.similar_items(m, [0, 1], n=2)[0])
        np.testing.assert_array_equal(m.similar_users([0], n=2)[1], fp.similar_users(m, [0], n=2)[1])
        np.testing.assert_array_equal(m.fold_in([["tea"]]).user_factors,
                                      fp.fold_in(m, [["tea"]]).user_factors)
    assert isinstance(csrr.fold_in([["tea"]]), CSRRModel)
    Y = data.Y
    res = model.evaluate(Y, Y[:, ::-1].tocsr(), k=2)
    assert res == fp.evaluate(model, Y, Y[:, ::-1].tocsr(), k=2)


def test_a_scalar_user_gives_1d_arrays_a_list_2d(small):
    data, model, csrr = small
    for m in (model, csrr):
        items, scores = m.recommend(data, "ann", n=2, ids=True)
        assert items.ndim == scores.ndim == 1 and items.tolist() == ["oat", "rye"][:items.size]
        idx, sc = m.recommend(data.Y, 0, n=2)
        assert idx.shape == sc.shape == (2,)
        idx2, _ = m.recommend(data.Y, [0], n=2)
        assert idx2.shape == (1, 2) and np.array_equal(idx2[0], idx)
        nb, cos = m.similar_items("tea", n=2, ids=True)
        assert nb.shape == cos.shape == (2,) and "tea" not in nb.tolist()
        nb2, _ = m.similar_users(np.int64(1), n=1)
        assert nb2.shape == (1,)


# ----------------------------------------------------------------------------- a new user's walls

def test_fold_in_takes_a_list_of_item_ids(ml):
    """`fp.fold_in(model, [50, 172, 181])` was a TypeError whose hint led to a ValueError."""
    data, model = ml
    one = fp.fold_in(model, [50, 172, 181])
    cols = np.searchsorted(model.item_ids, [50, 172, 181])
    Y = sp.csr_array((np.ones(3), ([0, 0, 0], cols)), shape=(1, model.shape[1]))
    np.testing.assert_array_equal(one.user_factors, fp.fold_in(model, Y).user_factors)
    two = model.fold_in([[50, 172, 181], [1]])
    np.testing.assert_array_equal(two.user_factors[0], one.user_factors[0])
    assert two.shape[0] == 2
    with pytest.warns(UserWarning, match=r"1 item id\(s\) the model does not know \(\[99999\]\)"):
        fp.fold_in(model, [[50, 99999]])
    with pytest.raises(TypeError, match=r"Y_new must be a scipy.sparse matrix .*a Dataset, or item "
                                        r"ids \(one list per new user"):
        fp.fold_in(model, np.ones(model.shape[1]))
    with pytest.raises(TypeError, match="csr_array"):
        fp.fold_in(model, np.ones((2, model.shape[1])))
    # a model without item ids takes positions
    bare = Factorization(model.user_factors, model.item_factors, params=model.params, method="ocmf")
    np.testing.assert_array_equal(fp.fold_in(bare, [int(c) for c in cols]).user_factors,
                                  one.user_factors)
    with pytest.raises(ValueError, match="positions of the model's 1682 items: it has no item ids"):
        fp.fold_in(bare, [[1682]])


def test_recommend_by_id_after_a_fold_in_without_user_ids(ml):
    """`fp.recommend(new, None, users=[0], ids=True)` after a fold-in into a model fitted on a
    Dataset said "the model was fitted on a bare matrix" (it was not)."""
    _, model = ml
    new = fp.fold_in(model, [[50, 172, 181]])
    assert new.user_ids is None and new.item_ids is not None
    items, scores = fp.recommend(new, [[50, 172, 181]], users=[0], n=5, ids=True)
    assert len(items) == 1 and items[0].size == 5
    assert not {50, 172, 181} & set(items[0].tolist())        # its own items left out
    one, _ = new.recommend([50, 172, 181], 0, n=5, ids=True)
    np.testing.assert_array_equal(one, items[0])


def test_the_newbie_is_not_served_its_own_items(ml):
    """fold_in.md served the newbie's own items back at ranks 1, 2 and 10."""
    _, model = ml
    Y_new = fp.datasets.from_pairs(["newbie"] * 3, [50, 172, 181])
    new = fp.fold_in(model, Y_new)
    items, _ = fp.recommend(new, Y_new, users=["newbie"], ids=True)
    assert not {50, 172, 181} & set(items[0].tolist())
    items2, _ = new.recommend([50, 172, 181], "newbie", ids=True)
    np.testing.assert_array_equal(items2, items[0])


def test_evaluate_takes_datasets(ml):
    """`fp.evaluate(model, data, data, k=10)` was a TypeError (Y_train ... got Dataset)."""
    data, model = ml
    train, test = fp.split.holdout(data, seed=0)
    assert train.user_ids is data.user_ids and train.Y.nnz + test.Y.nnz == data.Y.nnz
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fp.ocmf.fit(train, 8, n_iter=2, loss="square", rho=0.05)
    assert fp.evaluate(m, train, test, k=10) == fp.evaluate(m, train.Y, test.Y, k=10)
    with pytest.raises(ValueError, match="Y_test minus Y_train is empty"):
        fp.evaluate(model, data, data, k=10)           # taken; a test set equal to train is empty


def test_from_pairs_takes_a_dataframe():
    """`fp.datasets.from_pairs(df)` said: missing 1 required positional argument: 'items'."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"userId": [1, 1, 2], "movieId": [10, 20, 10], "rating": [4.0, 3.0, 5.0]})
    data = fp.datasets.from_pairs(df)
    ref = fp.datasets.from_pairs([1, 1, 2], [10, 20, 10], [4.0, 3.0, 5.0])
    assert (data.Y != ref.Y).nnz == 0 and data.item_ids.tolist() == [10, 20]


def test_similar_items_takes_candidate_filters(ml):
    """`fp.similar_items(model, [50], n=5, items=[1, 2, 3])`: no way to restrict the candidates."""
    _, model = ml
    nb, cos = fp.similar_items(model, [50], n=5, items=[1, 2, 3], ids=True)
    assert sorted(nb[0].tolist()) == [1, 2, 3] and nb.shape == (1, 3)
    full, fcos = fp.similar_items(model, [50], n=1682, ids=True)
    order = [i for i in full[0].tolist() if i in (1, 2, 3)]
    assert nb[0].tolist() == order
    nb2, _ = model.similar_items(50, n=5, exclude=full[0][:2], ids=True)
    assert nb2.tolist() == full[0][2:7].tolist()
    users, _ = model.similar_users(1, n=3, users=[5, 6, 7, 1], ids=True)
    assert sorted(users.tolist()) == [5, 6, 7]
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'query'"):
        fp.similar_items(model, items=[50], n=5, ids=True)      # items= is only ever candidates


def test_recommend_takes_lists_of_seen_items(ml):
    data, model = ml
    users = [1, 5]
    seen = [data.item_ids[data.Y[[int(np.searchsorted(data.user_ids, u))]].indices].tolist()
            for u in users]
    by_lists, _ = fp.recommend(model, seen, users=users, n=10, ids=True)
    by_data, _ = fp.recommend(model, data, users=users, n=10, ids=True)
    for a, b in zip(by_lists, by_data):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="Y_seen has 1 list"):
        fp.recommend(model, [seen[0]], users=users, ids=True)


def test_as_frame(ml, small):
    pd = pytest.importorskip("pandas")
    data, model, _ = small
    frame = model.recommend(data, ["ann", "bob"], n=2, ids=True, as_frame=True)
    assert list(frame.columns) == ["user", "rank", "item", "score"]
    items, scores = model.recommend(data, ["ann", "bob"], n=2, ids=True)
    assert frame["item"].tolist() == [x for row in items for x in row.tolist()]
    assert frame["user"].tolist() == ["ann"] * items[0].size + ["bob"] * items[1].size
    sim = model.similar_items(["tea", "jam"], n=2, ids=True, as_frame=True)
    assert list(sim.columns) == ["query", "rank", "item", "similarity"] and len(sim) == 4
    train, test = fp.split.holdout(ml[0], seed=1)
    res = ml[1].evaluate(train, test, k=(5, 10), as_frame=True)
    assert isinstance(res, pd.DataFrame) and res.attrs["n_users"] > 0
    assert set(res["metric"]) == {"precision", "recall", "f1", "ndcg", "map", "mrr", "auc"}


def test_a_user_passed_where_y_seen_goes_says_to_use_users(small):
    """model.recommend(user) is how implicit's recommend(userid, ...) reads; here the first
    argument is Y_seen, and the error says so."""
    data, model, _ = small
    for user in ("ann", 0, np.int64(0)):
        with pytest.raises(TypeError, match=r"recommend's first argument is Y_seen .*pass the user as users="):
            model.recommend(user, n=2)
    # implicit's full order, recommend(userid, user_items): a new user's trial got "users must
    # be integer indices, got dtype object"
    row = sp.csr_array(data.Y)[[0]]
    for user in (0, np.int64(0)):
        with pytest.raises(TypeError, match=r"recommend takes \(Y_seen, users\), got a user \(0\) "
                                            r"first and a sparse row second .*users=0"):
            model.recommend(user, row, n=2)
