"""fastpu.compat.implicit: implicit's interface over fastpu's models, one test per behaviour."""

import io
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu.compat.implicit import ParameterWarning, Recommender

FLT_MIN = float(np.finfo(np.float32).min)


def _blocks(m=12, n=10, seed=0):
    """Two blocks of users and items (even users like even items), a few left out at random."""
    rng = np.random.default_rng(seed)
    D = (np.add.outer(np.arange(m), np.arange(n)) % 2 == 0) & (rng.random((m, n)) < 0.8)
    return sp.csr_matrix(D.astype(float))


@pytest.fixture(scope="module")
def fitted():
    Y = _blocks()
    rec = Recommender(factors=3, iterations=8, random_state=1)
    rec.fit(Y, show_progress=False)
    return rec, Y


def test_fit_fits_the_fastpu_method_and_exposes_its_factors(fitted):
    rec, Y = fitted
    ref = fp.ocmf.fit(Y, 3, n_iter=8, seed=1)
    np.testing.assert_array_equal(rec.user_factors, ref.user_factors)
    np.testing.assert_array_equal(rec.item_factors, ref.item_factors)
    assert rec.model.method == "ocmf" and "12 users × 10 items" in repr(rec)


def test_a_matrix_that_is_not_csr_warns_and_is_converted():
    Y = _blocks()
    for other in (Y.tocoo(), Y.tolil()):
        rec = Recommender(factors=2, iterations=2)
        with pytest.warns(ParameterWarning, match=r"fit expects CSR input and was passed"):
            rec.fit(other, show_progress=False)
        assert rec.model.shape == Y.shape
    implicit = pytest.importorskip("implicit.utils")
    assert issubclass(ParameterWarning, implicit.ParameterWarning)   # caught as implicit's


def test_recommend_leaves_out_the_given_rows_items_as_fastpu_does(fitted):
    rec, Y = fitted
    users = np.array([0, 3, 5])
    ids, scores = rec.recommend(users, Y[users], N=3)
    seen = sp.csr_array(Y)
    ref, ref_sc = fp.recommend(rec.model, seen, users=users, n=3, exclude_seen=False)
    np.testing.assert_array_equal(ids, ref)
    np.testing.assert_allclose(scores, ref_sc, rtol=1e-6)
    assert ids.dtype == np.int32 and scores.dtype == np.float32     # implicit's dtypes
    one, one_sc = rec.recommend(3, Y[3], N=3)
    np.testing.assert_array_equal(one, ids[1])
    assert one.ndim == one_sc.ndim == 1


def test_liked_items_come_last_instead_of_being_dropped(fitted):
    rec, Y = fitted
    liked = set(Y[0].indices.tolist())
    ids, scores = rec.recommend(0, Y[0], N=20, items=[0, 1, 2, 3, 4, 5])
    assert sorted(ids.tolist()) == [0, 1, 2, 3, 4, 5]
    tail = [i for i in ids.tolist() if i in liked & {0, 1, 2, 3, 4, 5}]
    assert ids[len(ids) - len(tail):].tolist() == tail and (scores[len(ids) - len(tail):] == FLT_MIN).all()
    assert np.all(np.diff(scores) <= 0)
    everything, _ = rec.recommend(0, Y[0], N=20, filter_already_liked_items=False)
    assert sorted(everything.tolist()) == list(range(10))


def test_user_items_must_be_csr_with_a_row_per_user(fitted):
    rec, Y = fitted
    with pytest.raises(ValueError, match="user_items needs to be a CSR sparse matrix"):
        rec.recommend(0, Y[0].tocoo())
    with pytest.raises(ValueError, match=r"1 row for every user in userid: got 12 rows for 1 user"):
        rec.recommend(0, Y)
    with pytest.raises(ValueError, match="can't set both items and filter_items in recommend"):
        rec.recommend(0, Y[0], items=[1], filter_items=[2])


def test_numbers_outside_the_model_are_index_errors(fitted):
    rec, Y = fitted
    with pytest.raises(IndexError, match=r"itemids in items are not in the model: expected numbers "
                                         r"in \[0, 10\), got values in \[-1, 3\]"):
        rec.recommend(0, Y[0], items=[3, -1])
    with pytest.raises(IndexError, match="userids are not in the model"):
        rec.recommend(12, Y[0])
    with pytest.raises(IndexError, match="itemids are not in the model"):
        rec.similar_items(10)


def test_recalculate_user_is_fastpus_fold_in(fitted):
    rec, Y = fitted
    new = fp.fold_in(rec.model, sp.csr_array(Y[[2]]))
    np.testing.assert_array_equal(rec.recalculate_user(2, Y[2]), new.user_factors[0])
    ids, _ = rec.recommend(2, Y[2], N=4, recalculate_user=True)
    ref, _ = fp.recommend(new, sp.csr_array(Y[[2]]), users=[0], n=4, exclude_seen=False)
    np.testing.assert_array_equal(ids, ref[0])


def test_similar_items_gives_the_query_first(fitted):
    rec, _ = fitted
    ids, scores = rec.similar_items([0, 1], N=4)
    nb, sc = fp.similar_items(rec.model, [0, 1], n=4)
    assert ids[:, 0].tolist() == [0, 1] and np.allclose(scores[:, 0], 1.0)
    np.testing.assert_array_equal(ids[:, 1:], nb[:, :3])
    np.testing.assert_allclose(scores[:, 1:], sc[:, :3], rtol=1e-6)
    # a query that is not a candidate is not returned: the candidates only
    ids, _ = rec.similar_items(0, N=3, items=[2, 4, 6])
    assert sorted(ids.tolist()) == [2, 4, 6]
    ids, _ = rec.similar_items(0, N=3, filter_items=[0, 2])
    assert 0 not in ids.tolist() and 2 not in ids.tolist() and len(ids) == 3


def test_similar_users_gives_the_query_first(fitted):
    rec, _ = fitted
    ids, scores = rec.similar_users(4, N=3)
    nb, _ = fp.similar_users(rec.model, 4, n=2)
    assert ids.tolist() == [4] + nb.tolist() and scores[0] == pytest.approx(1.0)
    ids, _ = rec.similar_users([4, 5], N=10, users=np.arange(4))
    assert [sorted(r.tolist()) for r in ids] == [[0, 1, 2, 3]] * 2


def test_recalculate_item_is_fastpus_partial_fit_and_fbgd_cannot(fitted):
    rec, Y = fitted
    item_users = sp.csr_array(Y.T)[[3]]
    ids, _ = rec.similar_items(3, N=4, recalculate_item=True, item_users=item_users)
    again = fp.partial_fit_items(rec.model, item_users, item_ids=[3])
    nb, _ = fp.similar_items(again, 3, n=3)
    assert ids.tolist() == [3] + nb.tolist()
    other = Recommender(factors=2, iterations=2, method="fbgd")
    other.fit(Y, show_progress=False)
    with pytest.raises(NotImplementedError, match="partial_fit_items refuses fBGD models"):
        other.similar_items(3, recalculate_item=True, item_users=item_users)


def test_partial_fits_append_and_fill_a_gap(fitted):
    rec, Y = fitted
    copy = pickle.loads(pickle.dumps(rec))
    copy.partial_fit_users([14], Y[[0]])                 # users 12 and 13 are the gap
    assert copy.model.shape == (15, 10)
    np.testing.assert_array_equal(copy.model.seen[[12, 13]].toarray(), 0)
    ref = fp.partial_fit_users(rec.model, sp.vstack([Y[[0]], sp.csr_array((2, 10))]),
                               [14, 12, 13])
    np.testing.assert_array_equal(copy.user_factors, ref.user_factors)
    copy.partial_fit_items([10], sp.csr_array(np.ones((1, 15))))   # a new item, every user's
    assert copy.model.shape == (15, 11)
    with pytest.raises(ValueError, match=r"must contain 1 row for every user in userids"):
        copy.partial_fit_users([1, 2], Y[[0]])


def test_save_appends_npz_and_load_reads_it_back(fitted, tmp_path):
    rec, Y = fitted
    rec.save(str(tmp_path / "model"))
    back = Recommender.load(str(tmp_path / "model"))
    assert (tmp_path / "model.npz").exists()
    np.testing.assert_array_equal(back.similar_items(1)[0], rec.similar_items(1)[0])
    buf = io.BytesIO()
    rec.save(buf)
    buf.seek(0)
    np.testing.assert_array_equal(Recommender.load(buf).recommend(0, Y[0])[0], rec.recommend(0, Y[0])[0])
    bare = Recommender(factors=5, iterations=3, random_state=None, loss="square", lam=2.0)
    bare.save(str(tmp_path / "bare.npz"))
    assert Recommender.load(str(tmp_path / "bare.npz")).__dict__ == bare.__dict__


def test_a_pickled_recommender_serves_the_same(fitted):
    rec, Y = fitted
    again = pickle.loads(pickle.dumps(rec))
    np.testing.assert_array_equal(again.recommend(0, Y[0])[0], rec.recommend(0, Y[0])[0])
    pickle.loads(pickle.dumps(Recommender()))            # unfitted too


def test_a_fitted_fastpu_model_is_wrapped_as_it_is(fitted):
    _, Y = fitted
    model = fp.baselines.ease(sp.csr_array(Y), lam=5.0)
    rec = Recommender(model=model)
    ids, _ = rec.recommend([0, 1], Y[[0, 1]], N=2)
    ref, _ = fp.recommend(model, sp.csr_array(Y), users=[0, 1], n=2, exclude_seen=False)
    np.testing.assert_array_equal(ids, ref)
    with pytest.raises(ValueError, match="this Recommender is not fitted"):
        Recommender().recommend(0, Y[0])


def test_the_callback_gets_the_iteration_and_seconds():
    calls = []
    rec = Recommender(factors=2, iterations=3)
    rec.fit(_blocks(), show_progress=False, callback=lambda it, secs: calls.append((it, secs)))
    assert [it for it, _ in calls] == [0, 1, 2] and all(s >= 0 for _, s in calls)
    with pytest.raises(ValueError, match="method must be one of"):
        Recommender(method="als").fit(_blocks(), show_progress=False)


def test_fastpu_in_implicits_order_points_to_the_compat_class(fitted):
    rec, Y = fitted
    with pytest.raises(TypeError, match=r"recommend\(userid, user_items\).*fastpu.compat.implicit"):
        fp.recommend(rec.model, 0, sp.csr_array(Y[[0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rec.recommend(0, Y[0])                               # no warning of fastpu's own
