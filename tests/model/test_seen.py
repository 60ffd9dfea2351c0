"""A fitted model knows its training positives: recommend leaves them out by default."""

import dataclasses
import io
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu import baselines
from fastpu._core.factorization import positives
from fastpu.model_selection.metrics import popularity


def _data(m=30, n=20, seed=0):
    return fp.datasets.synthetic(m, n, rank=3, density=0.2, seed=seed)


def _pattern(Y):
    return sp.csr_array(Y).toarray() != 0


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


FITS = {
    "ocmf": lambda Y: fp.ocmf.fit(Y, 3, n_iter=2),
    "fbgd": lambda Y: fp.fbgd.fit(Y, 3, n_iter=2),
    "csrr-e": lambda Y: fp.csrr.fit(Y, 3, variant="e", n_iter=2),
    "csrr-I": lambda Y: fp.csrr.fit(Y, variant="I", n_iter=2),
    "homf": lambda Y: fp.homf.fit(Y, 3, n_iter=2),
    "wrmf": lambda Y: baselines.wrmf(Y, 3, n_iter=2),
    "ease": lambda Y: baselines.ease(Y, lam=10.0),
    "itemknn": lambda Y: baselines.item_knn(Y),
    "popularity": popularity,
}


@pytest.mark.parametrize("name", list(FITS))
def test_every_fit_records_its_training_positives(name):
    Y = sp.csr_array(_data().Y)
    Y.data[:3] = 0.0                           # stored zeros weigh nothing: no positives
    model = _quiet(FITS[name], Y)
    assert isinstance(model.seen, sp.csr_array) and model.seen.dtype == np.bool_
    np.testing.assert_array_equal(model.seen.toarray(), _pattern(Y))
    assert model.seen.indices.dtype == np.int32          # 4 bytes per positive
    items, _ = fp.recommend(model, n=5)
    assert not any(_pattern(Y)[u, j] for u, row in enumerate(items) for j in row if j >= 0)


def test_a_dataset_fit_records_the_positives_with_the_ids():
    data = fp.datasets.from_pairs(["a", "a", "b", "c"], ["x", "y", "y", "z"])
    model = fp.ocmf.fit(data, 2, n_iter=2)
    np.testing.assert_array_equal(model.seen.toarray(), _pattern(data.Y))
    assert "seen=4 positives" in repr(model)


def test_recommend_leaves_out_the_training_positives_and_y_seen_adds_to_them():
    data = _data(40, 25, seed=1)
    model = fp.ocmf.fit(data.Y, 4, n_iter=3)
    train = _pattern(data.Y)
    S = model.scores()
    users = np.arange(10)

    def ref(mask):
        out = []
        for u in users:
            ok = sorted((j for j in range(S.shape[1]) if not mask[u, j]), key=lambda j: (-S[u, j], j))
            out.append(ok[:5])
        return np.array(out)

    default, _ = fp.recommend(model, users=users, n=5)
    np.testing.assert_array_equal(default, ref(train))
    kept, _ = fp.recommend(model, users=users, n=5, exclude_seen=False)
    np.testing.assert_array_equal(kept, ref(np.zeros_like(train)))
    more = sp.csr_array(np.eye(40, 25))                          # user u also saw item u
    added, _ = fp.recommend(model, more, users=users, n=5)
    np.testing.assert_array_equal(added, ref(train | (more.toarray() != 0)))
    only, _ = fp.recommend(model, more, users=users, n=5, exclude_seen=False)
    np.testing.assert_array_equal(only, ref(more.toarray() != 0))
    # the handle and the lists of item ids say the same
    np.testing.assert_array_equal(model.recommend(users=users, n=5)[0], default)
    lists, _ = fp.recommend(model, [[int(u)] for u in users], users=users, n=5)
    np.testing.assert_array_equal(lists, added)
    with pytest.raises(TypeError, match="exclude_seen must be True or False"):
        fp.recommend(model, exclude_seen="no")


def test_a_folded_in_user_gets_its_own_items_left_out():
    data = fp.datasets.binarize(fp.datasets.from_pairs(
        ["a", "a", "b", "b", "c", "c", "d"], ["x", "y", "y", "z", "z", "w", "x"]))
    model = fp.ocmf.fit(data, 2, n_iter=3, loss="square")
    one = fp.fold_in(model, ["x", "y"])
    assert one.seen.shape == (1, 4) and one.seen.toarray().tolist() == [[False, True, True, False]]
    items, _ = one.recommend(None, 0, n=4)
    assert {"x", "y"}.isdisjoint(set(one.item_ids[items].tolist())) and items.size == 2
    cold = fp.fold_in(fp.ocmf.fit(fp.datasets.synthetic(20, 10, rank=2, density=0.3, seed=0).Y, 2,
                                  n_iter=2, user_features=np.eye(20)), user_features=np.eye(20)[:3])
    assert cold.seen.shape == (3, 10) and cold.seen.nnz == 0    # from features: nothing seen


def test_partial_fits_replace_the_rows_positives_and_append_new_ones():
    data = fp.datasets.from_pairs(["a", "a", "b", "c", "c"], [1, 2, 2, 3, 1])
    model = fp.ocmf.fit(data, 2, n_iter=2, loss="square", rho=0.1)
    more = fp.partial_fit_users(model, [[3], [2, 3]], user_ids=["a", "new"])
    assert more.seen.shape == (4, 3)
    assert more.seen.toarray().tolist() == [[False, False, True], [False, True, False],
                                            [True, False, True], [False, True, True]]
    items = fp.partial_fit_items(model, [["a", "b"]], item_ids=[9])
    assert items.seen.shape == (3, 4)
    assert items.seen.toarray()[:, 3].tolist() == [True, True, False]
    np.testing.assert_array_equal(items.seen.toarray()[:, :3], model.seen.toarray())
    assert "9" not in [str(i) for i in fp.recommend(items, users="a", n=4)[0]]


def test_a_test_split_as_y_seen_is_warned_about():
    """The mistake the default guards against: the test split (or rows in another order) passed
    as the seen items. The model knows its training positives; Y_seen shares none of them."""
    Y = fp.datasets.synthetic(60, 40, rank=3, density=0.2, seed=2).Y
    train, test = fp.split.holdout(Y, test_frac=0.2, seed=0)
    model = fp.ocmf.fit(train, 3, n_iter=2)
    with pytest.warns(UserWarning, match=r"Y_seen shares no positive with the training positives "
                                         r"of the 60 requested user\(s\) \(model.seen\)"):
        fp.recommend(model, test, n=5)
    dense = train.toarray() != 0
    other = next(r for r in range(1, 60) if dense[r].any() and not (dense[r] & dense[0]).any())
    order = np.arange(60)
    order[[0, other]] = order[[other, 0]]
    shuffled = sp.csr_array(train.toarray()[order])           # rows in another order
    with pytest.warns(UserWarning, match="rows are not in the model's order"):
        fp.recommend(model, shuffled, users=[0], n=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fp.recommend(model, train, n=5)                       # the training matrix: no warning
        fp.recommend(model, test, n=5, exclude_seen=False)    # asked for: Y_seen alone
    with pytest.raises(ValueError, match=r"Y_seen has shape 60×39, expected 60×40 \(model.shape"):
        fp.recommend(model, train[:, :39], n=5)


def test_the_positives_survive_a_model_file_and_a_model_without_them_saves_none(tmp_path):
    model = fp.ocmf.fit(_data().Y, 3, n_iter=2)
    model.save(tmp_path / "m.npz")
    back = fp.load_model(tmp_path / "m.npz")
    assert (back.seen != model.seen).nnz == 0 and back.seen.indices.dtype == np.int32
    bare = dataclasses.replace(model, seen=None)              # the opt-out: no positives kept
    bare.save(tmp_path / "bare.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")                        # a version-2 file: no note
        assert fp.load_model(tmp_path / "bare.npz").seen is None
    assert (tmp_path / "bare.npz").stat().st_size < (tmp_path / "m.npz").stat().st_size
    # any sparse matrix of the model's shape may be set: it is saved as its pattern
    weighted = dataclasses.replace(model, seen=sp.coo_array(_data().Y * 3.0))
    buf = io.BytesIO()
    weighted.save(buf)
    again = fp.load_model(io.BytesIO(buf.getvalue()))
    assert again.seen.dtype == np.bool_ and (again.seen != model.seen).nnz == 0


def test_a_seen_matrix_of_another_shape_is_refused():
    model = fp.ocmf.fit(_data().Y, 3, n_iter=2)
    bad = dataclasses.replace(model, seen=model.seen[:5])
    with pytest.raises(ValueError, match=r"model.seen has shape 5×20, expected 30×20 \(model.shape\)"):
        fp.recommend(bad)
    with pytest.raises(TypeError, match="model.seen must be a scipy.sparse matrix"):
        fp.recommend(dataclasses.replace(model, seen=np.ones((30, 20))))


def test_positives_cost_five_bytes_each_and_leave_the_input_alone():
    Y = sp.csr_array(sp.random(200, 100, density=0.1, format="csr", random_state=0))
    before = Y.copy()
    P = positives(Y)
    assert P.data.nbytes + P.indices.nbytes == 5 * Y.nnz and P.indptr.nbytes == 4 * 201
    assert (Y != before).nnz == 0 and Y.data is not P.data
    # unsorted, duplicated COO input: the canonical pattern
    C = sp.coo_array((np.ones(3), (np.array([1, 0, 1]), np.array([2, 1, 2]))), shape=(2, 3))
    assert positives(C).toarray().tolist() == [[False, True, False], [False, False, True]]
    with pytest.raises(TypeError, match="Y must be a 2-d scipy.sparse matrix"):
        positives(np.ones((2, 2)))
