"""Splits of a Dataset give Datasets (split, evaluate and select take Datasets)."""

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp


@pytest.fixture(scope="module")
def data():
    users = ["a"] * 4 + ["b"] * 3 + ["c"]
    items = [1, 2, 3, 4, 1, 2, 5, 3]
    d = fp.datasets.from_pairs(users, items, [5.0, 4, 3, 2, 1, 2, 3, 4])
    T = sp.csr_array((np.arange(1, d.Y.nnz + 1, dtype=np.int64), d.Y.indices, d.Y.indptr), shape=d.Y.shape)
    return fp.datasets.Dataset("toy", d.Y, timestamps=T, user_ids=d.user_ids, item_ids=d.item_ids,
                               test_mask=sp.csr_array((np.ones(1), ([0], [0])), shape=d.Y.shape))


@pytest.mark.parametrize("split", ["holdout", "validation_split", "leave_one_out", "split_by_mask"])
def test_a_dataset_splits_into_datasets(data, split):
    fn = getattr(fp.split, split)
    train, test = fn(data)
    ref_train, ref_test = fn(data.Y, data.test_mask) if split == "split_by_mask" else (
        fn(data.Y, data.timestamps) if split == "leave_one_out" else fn(data.Y))
    for part, ref in ((train, ref_train), (test, ref_test)):
        assert isinstance(part, fp.datasets.Dataset)
        assert (part.Y != ref).nnz == 0
        assert part.user_ids is data.user_ids and part.item_ids is data.item_ids
        assert part.test_mask is None and part.timestamps.shape == data.Y.shape
        # each part keeps the timestamps of its own entries
        np.testing.assert_array_equal(part.timestamps.indices, part.Y.indices)
        full = data.timestamps.toarray()
        np.testing.assert_array_equal(part.timestamps.toarray(), np.where(part.Y.toarray() != 0, full, 0))
    assert train.name == "toy (train)" and test.name == "toy (test)"


def test_leave_one_out_of_a_dataset_holds_out_the_latest(data):
    _, test = fp.split.leave_one_out(data)
    latest = [data.Y.indices[data.Y.indptr[r + 1] - 1] for r in range(2)]   # times increase
    assert [test.Y[[r]].indices.tolist() for r in range(3)] == [[latest[0]], [latest[1]], []]


def test_split_by_mask_needs_a_mask():
    d = fp.datasets.from_pairs(["a", "a"], [1, 2])
    with pytest.raises(ValueError, match="ships no test split"):
        fp.split.split_by_mask(d)
    with pytest.raises(TypeError, match="needs test_mask"):
        fp.split.split_by_mask(d.Y)


def test_evaluate_matches_datasets_by_id():
    d = fp.datasets.from_pairs(["a", "b", "c"], [1, 1, 2], )
    d = fp.datasets.Dataset("d", sp.csr_array((np.ones(3), ([0, 1, 2], [0, 0, 1])), shape=(3, 4)),
                            user_ids=np.array(["a", "b", "c"]), item_ids=np.array([1, 2, 3, 4]))
    rng = np.random.default_rng(0)
    model = fp.Factorization(rng.normal(size=(3, 2)), rng.normal(size=(4, 2)),
                             user_ids=d.user_ids, item_ids=d.item_ids)
    test = fp.datasets.from_pairs(["c", "a", "zz"], [1, 3, 1])      # other ids, other order
    Y_test = sp.csr_array((np.ones(2), ([2, 0], [0, 2])), shape=(3, 4))
    assert fp.evaluate(model, d, test, k=1) == fp.evaluate(model, d.Y, Y_test, k=1)
