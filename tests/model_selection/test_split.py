import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu.model_selection.split import holdout, leave_one_out, split_by_mask, validation_split


def _random_Y(seed, m, n, density):
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < density
    vals = rng.integers(1, 6, size=(m, n)).astype(float)
    return sp.csr_array(vals * mask), vals * mask, mask


def _check_partition(Y_dense, tr, te):
    tr_d, te_d = tr.toarray(), te.toarray()
    # every stored entry exactly once, values preserved
    np.testing.assert_array_equal(tr_d + te_d, Y_dense)
    assert not np.any((tr_d != 0) & (te_d != 0))
    assert tr.nnz + te.nnz == np.count_nonzero(Y_dense)
    assert tr.indices.dtype == np.int64 and te.data.dtype == np.float64
    assert tr.has_sorted_indices and te.has_sorted_indices


@given(st.integers(0, 2**31 - 1), st.integers(1, 8), st.integers(1, 12), st.floats(0.0, 1.0),
       st.floats(0.01, 0.99))
def test_holdout_partition_and_per_user_counts(seed, m, n, density, frac):
    Y, Yd, mask = _random_Y(seed, m, n, density)
    tr, te = holdout(Y, test_frac=frac, seed=seed)
    _check_partition(Yd, tr, te)
    for u in range(m):
        n_u = int(mask[u].sum())
        want = 0 if n_u < 2 else min(int(np.floor(frac * n_u + 0.5)), n_u - 1)
        assert np.diff(te.indptr)[u] == want
    tr2, te2 = holdout(Y, test_frac=frac, seed=seed)
    assert (tr2 != tr).nnz == 0 and (te2 != te).nnz == 0


def test_holdout_rounds_half_up_and_keeps_one():
    Y = sp.csr_array(np.ones((4, 10)) * (np.arange(10) < np.array([[1], [2], [5], [10]])))
    tr, te = holdout(Y, test_frac=0.5, seed=0)
    np.testing.assert_array_equal(np.diff(te.indptr), [0, 1, 3, 5])   # 0.5*5 = 2.5 -> 3
    tr, te = holdout(Y, test_frac=0.95, seed=0)
    np.testing.assert_array_equal(np.diff(tr.indptr), [1, 1, 1, 1])   # at least one stays


def test_holdout_is_uniform_over_entries():
    # each of a user's 10 entries should be held out about test_frac of the time
    Y = sp.csr_array(np.ones((1, 10)))
    counts = np.zeros(10)
    for s in range(400):
        counts += holdout(Y, 0.3, seed=s)[1].toarray()[0]
    assert counts.min() > 0.3 * 400 * 0.7 and counts.max() < 0.3 * 400 * 1.3


def test_seed_changes_split_and_generator_accepted():
    Y, _, _ = _random_Y(0, 20, 30, 0.4)
    a = holdout(Y, seed=1)[1]
    b = holdout(Y, seed=2)[1]
    assert (a != b).nnz > 0
    c = holdout(Y, seed=np.random.default_rng(1))[1]
    assert (a != c).nnz == 0


@given(st.integers(0, 2**31 - 1), st.integers(1, 8), st.integers(1, 12), st.floats(0.0, 1.0),
       st.booleans())
def test_leave_one_out_latest(seed, m, n, density, with_time):
    Y, Yd, mask = _random_Y(seed, m, n, density)
    rng = np.random.default_rng(seed + 1)
    times = rng.integers(0, 4, size=(m, n)).astype(float) * mask       # many ties
    # keep the timestamp pattern equal to Y's even where the time is 0
    T = sp.csr_array((times[mask], np.nonzero(mask)[1], Y.indptr), shape=Y.shape)
    tr, te = leave_one_out(Y, T if with_time else None, seed=seed)
    _check_partition(Yd, tr, te)
    for u in range(m):
        n_u = int(mask[u].sum())
        row = te.indices[te.indptr[u]:te.indptr[u + 1]]
        assert row.size == (1 if n_u >= 2 else 0)
        if row.size and with_time:
            assert times[u, row[0]] == times[u][mask[u]].max()


def test_leave_one_out_breaks_ties_at_random_by_seed():
    Y = sp.csr_array(np.ones((1, 6)))
    T = sp.csr_array(np.array([[1.0, 9, 9, 9, 2, 3]]))
    picks = {int(leave_one_out(Y, T, seed=s)[1].indices[0]) for s in range(30)}
    assert picks == {1, 2, 3}
    assert leave_one_out(Y, T, seed=4)[1].indices[0] == leave_one_out(Y, T, seed=4)[1].indices[0]


def test_leave_one_out_nested_with_full_timestamps():
    # the full data's timestamps (a larger pattern) serve a second split of the training part
    Y, Yd, mask = _random_Y(9, 7, 9, 0.6)
    rng = np.random.default_rng(1)
    times = rng.permutation(mask.size).reshape(mask.shape).astype(float) + 1.0
    T = sp.csr_array(times * mask)
    tr, _ = leave_one_out(Y, T, seed=0)
    fit_part, valid = leave_one_out(tr, T, seed=0)
    _check_partition(tr.toarray(), fit_part, valid)
    trd = tr.toarray() != 0
    for u in range(7):
        row = valid.indices[valid.indptr[u]:valid.indptr[u + 1]]
        if row.size:
            assert times[u, row[0]] == times[u][trd[u]].max()


def test_leave_one_out_ranks_integer_timestamps_exactly():
    """Nanosecond times differ by less than a float64's spacing there (256): as floats they
    tied, and the "latest" entry was a random one."""
    base = 1_700_000_000_000_000_000
    T = sp.csr_array((np.array([base + 30, base + 10, base + 20], dtype=np.int64), [0, 1, 2], [0, 3]),
                     shape=(1, 3))
    assert float(base + 10) == float(base + 30)
    picks = {int(leave_one_out(sp.csr_array(np.ones((1, 3))), T, seed=s)[1].indices[0]) for s in range(12)}
    assert picks == {0}


def test_validation_split_is_holdout():
    Y, _, _ = _random_Y(3, 10, 10, 0.5)
    a, b = validation_split(Y, 0.25, seed=7)
    c, d = holdout(Y, test_frac=0.25, seed=7)
    assert (a != c).nnz == 0 and (b != d).nnz == 0


def test_split_by_mask():
    Y, Yd, mask = _random_Y(4, 6, 7, 0.5)
    rng = np.random.default_rng(0)
    pick = mask & (rng.random(mask.shape) < 0.5)
    tr, te = split_by_mask(Y, sp.csr_array(pick * 1.0))
    _check_partition(Yd, tr, te)
    np.testing.assert_array_equal(te.toarray() != 0, pick)


def test_validation_messages():
    Y = sp.csr_array(np.ones((2, 3)))
    with pytest.raises(TypeError, match="Y must be a scipy.sparse matrix"):
        holdout(np.ones((2, 3)))
    with pytest.raises(ValueError, match="test_frac must be > 0.0, got 0"):
        holdout(Y, test_frac=0.0)
    with pytest.raises(ValueError, match="test_frac must be < 1.0, got 1"):
        holdout(Y, test_frac=1.0)
    with pytest.raises(TypeError, match="test_frac must be a real number"):
        holdout(Y, test_frac="0.2")
    with pytest.raises(TypeError, match="seed must be a non-negative integer"):
        holdout(Y, seed=-1)
    with pytest.raises(ValueError, match="Y has 1 non-finite"):
        holdout(sp.csr_array(np.array([[np.nan, 1.0]])))
    with pytest.raises(ValueError, match="timestamps has shape 3×2, expected 2×3"):
        leave_one_out(Y, sp.csr_array(np.ones((3, 2))))
    with pytest.raises(ValueError, match="timestamps must store a time for every stored entry of Y.*1 of Y's 6"):
        leave_one_out(Y, sp.csr_array(np.array([[1.0, 0, 1], [1, 1, 1]])))
    with pytest.raises(ValueError, match="6 of Y's 6 entries have none"):
        leave_one_out(Y, sp.csr_array((2, 3)))
    with pytest.raises(ValueError, match="test_mask marks 1 entries that Y does not store"):
        split_by_mask(sp.csr_array(np.array([[1.0, 0, 1]])), sp.csr_array(np.array([[0.0, 1, 1]])))


def test_held_out_users_is_a_strong_generalization_split():
    """round(users_frac · r) of the r users with two or more positives are held out;
    the others train whole; a held-out user's positives are split into fold-in and test parts."""
    import fastpu as fp

    Y = fp.datasets.synthetic(60, 40, rank=3, density=0.15, seed=1).Y
    Y = sp.csr_array(Y)
    s = fp.split.held_out_users(Y, users_frac=0.25, test_frac=0.2, seed=3)
    counts = np.diff(Y.indptr)
    r = int(np.sum((counts >= 2) & (np.floor(0.2 * counts + 0.5) >= 1)))
    assert s.test_users.size == int(np.floor(0.25 * r + 0.5))
    assert np.array_equal(np.sort(np.concatenate([s.train_users, s.test_users])), np.arange(60))
    assert (s.train != Y[s.train_users]).nnz == 0
    assert ((s.fold_in + s.test) != Y[s.test_users]).nnz == 0
    assert (s.fold_in.multiply(s.test)).nnz == 0 and np.all(np.diff(s.test.indptr) >= 1)
    again = fp.split.held_out_users(Y, users_frac=0.25, test_frac=0.2, seed=3)
    assert np.array_equal(again.test_users, s.test_users)
    with pytest.raises(ValueError, match="users_frac"):
        fp.split.held_out_users(Y, users_frac=0.0)
    with pytest.raises(ValueError, match="holds out 0 of the"):
        fp.split.held_out_users(Y, users_frac=0.001)
