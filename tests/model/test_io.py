"""Model files: save / load round-trips every method exactly; bad files get clear errors."""

import dataclasses
import hashlib
import io
import json
import os
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu.model import _io
from fastpu.csrr import CSRRModel
from fastpu.model import Factorization, load_model as load

# ----------------------------------------------------------------------------- helpers

def assert_same(a, b, where="model"):
    """Exact, type-preserving equality of two saved values."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        if a.dtype.kind == "O":
            assert a.tolist() == b.tolist(), where
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif sp.issparse(a):
        assert a.format == b.format and a.dtype == b.dtype and a.shape == b.shape, where
        if a.format in ("csr", "csc"):
            for part in ("data", "indices", "indptr"):
                assert_same(getattr(a, part), getattr(b, part), f"{where}.{part}")
        else:
            np.testing.assert_array_equal(a.toarray(), b.toarray(), err_msg=where)
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and a != a:
        assert b != b, where
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and (a == b or (a != a and b != b)), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def roundtrip(model, tmp_path, name="m.npz"):
    path = tmp_path / name
    model.save(path)
    back = load(path)
    assert_same(model, back)
    return back, path


def _data(m=24, n=18, seed=0):
    return fp.datasets.synthetic(m, n, rank=2, density=0.25, seed=seed)


def _string_ids(data):
    return dataclasses.replace(data, user_ids=np.array([f"user {i}" for i in range(data.shape[0])]),
                               item_ids=np.array([f"item-{i}" for i in range(data.shape[1])], dtype=object))


# ----------------------------------------------------------------------------- round trips

def test_ocmf_plain_float32_and_features_roundtrip(tmp_path):
    data = _data()
    rng = np.random.default_rng(1)
    X = rng.normal(size=(24, 4))
    Z = sp.random_array((18, 5), density=0.5, random_state=2, format="csr")
    g = sp.csr_array(np.ones((24, 24)) - np.eye(24))
    for kw in (dict(), dict(dtype="float32"), dict(user_features=X, item_features=Z),
               dict(user_graph=g, lam_graph=0.1, loss="logistic", rho=0.1)):
        model = fp.ocmf.fit(_string_ids(data), 3, n_iter=2, **kw)
        back, _ = roundtrip(model, tmp_path)
        assert back.method == "ocmf" and back.item_ids.dtype == object
        if "dtype" in kw:
            assert back.user_factors.dtype == np.float32
        if "user_features" in kw:
            # one row more than the features have columns: the intercept's (the default)
            assert set(back.extras) == {"W", "H"} and back.W.shape == (5, 3) and back.H.shape == (6, 3)
            assert back.params["intercept"] is True
        np.testing.assert_array_equal(back.scores([0, 5]), model.scores([0, 5]))


def test_fbgd_plain_features_and_biases_roundtrip(tmp_path):
    data = _data()
    X = sp.random_array((24, 6), density=0.4, random_state=3, format="csr")
    for kw in (dict(), dict(user_features=X, biases=True)):
        model = fp.fbgd.fit(data, 3, n_iter=2, **kw)
        back, _ = roundtrip(model, tmp_path)
        if kw:
            assert {"w_user", "w_item", "w0", "W"} <= set(back.extras)
        assert back.params == model.params and back.history == model.history


@pytest.mark.parametrize("variant", ["I", "II", "e"])
def test_csrr_every_variant_roundtrip(tmp_path, variant):
    data = _data()
    kw = dict(k=3) if variant == "e" else {}
    model = fp.csrr.fit(data, variant=variant, n_iter=4, **kw)
    back, _ = roundtrip(model, tmp_path)
    assert isinstance(back, CSRRModel) and back.variant == variant
    assert sp.issparse(back.V) and back.V.format == "csr"
    assert (back.U is None) == (variant == "e")
    if variant != "e":
        assert isinstance(back.extras["status"], str) and sp.issparse(back.extras["V_tilde"])
    np.testing.assert_array_equal(back.scores(), model.scores())
    a = fp.recommend(model, data.Y, n=4)
    b = fp.recommend(back, data.Y, n=4)
    np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("mode", ["exact", "dense"])
def test_homf_roundtrip_keeps_the_sparse_transition_matrix(tmp_path, mode):
    data = _data()
    g = sp.csr_array(np.eye(24, k=1) + np.eye(24, k=-1))
    model = fp.homf.fit(data, 3, T=2, n_iter=2, mode=mode, user_graph=g)
    back, _ = roundtrip(model, tmp_path)
    assert sp.issparse(back.extras["A"]) and back.extras["A"].shape == (42, 42)
    assert back.params["mode"] == mode


def test_values_of_every_supported_kind_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    extras = {
        "f32": rng.normal(size=(3, 2)).astype(np.float32), "ints": np.arange(5, dtype=np.int32),
        "bools": np.array([True, False]), "str": "converged", "float": 0.1 + 0.2,
        "nan": float("nan"), "inf": -float("inf"), "big": 2**70, "none": None,
        "np_scalar": np.float32(1.5), "np_int": np.int16(-3),
        "nested": {"a": (1, 2.5, "x", None, [True]), 3: [np.arange(2)]},
        "csr_matrix": sp.csr_matrix(np.eye(3)), "csc": sp.csc_array(np.eye(3, 4)),
        "coo": sp.coo_array(np.eye(2)), "lil": sp.lil_matrix(np.eye(2)),
        "csr32": sp.csr_array((np.ones(2, np.float32), np.array([0, 1], np.int32),
                               np.array([0, 1, 2], np.int32)), shape=(2, 2)),
        "empty": np.zeros((0, 4)), "bytes_ids": np.array([b"a", b"bc"]),
        "unicode": np.array(["é", "日本"]),
    }
    model = Factorization(rng.normal(size=(4, 2)), rng.normal(size=(3, 2)),
                          history=[{"iter": 1, "objective": 2.0, "seconds": 0.1}],
                          params={"k": 2, "shape": (4, 3), "seed": None, "lam": 1e-3, "mode": "x"},
                          method="custom", extras=extras,
                          user_ids=np.array([10, 20, 30, 40]), item_ids=np.array(["a", "b", "c"], dtype=object))
    back, path = roundtrip(model, tmp_path)
    assert back.extras["csr32"].indices.dtype == np.int32
    assert back.extras["lil"].format == "lil" and isinstance(back.extras["lil"], sp.spmatrix)
    assert isinstance(back.params["shape"], tuple) and 3 in back.extras["nested"]
    with np.load(path, allow_pickle=False) as f:          # a plain npz, readable without pickle
        assert "__fastpu__" in f.files
        assert all(f[k].dtype.kind != "O" for k in f.files)
    header = json.loads(str(np.load(path)["__fastpu__"]))
    assert header["format_version"] == _io.FORMAT_VERSION and header["fastpu_version"] == fp.__version__


def test_save_to_a_file_object_and_no_suffix_is_added(tmp_path):
    model = Factorization(np.ones((2, 1)), np.ones((3, 1)))
    buf = io.BytesIO()
    model.save(buf)
    assert_same(load(io.BytesIO(buf.getvalue())), model)
    model.save(tmp_path / "plain")
    assert os.listdir(tmp_path) == ["plain"]              # no .npz appended, no temporary left
    assert_same(load(str(tmp_path / "plain")), model)


def test_a_generator_seed_is_saved_as_its_repr_with_a_warning(tmp_path):
    model = fp.ocmf.fit(_data().Y, 2, n_iter=1, seed=np.random.default_rng(0))
    with pytest.warns(UserWarning, match=r"model.params\['seed'\] is a Generator"):
        model.save(tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert back.params["seed"].startswith("Generator(")
    np.testing.assert_array_equal(back.user_factors, model.user_factors)


# ----------------------------------------------------------------------------- bad input to save

def _tiny(**kw):
    return Factorization(np.ones((2, 1)), np.ones((3, 1)), **kw)


@pytest.mark.parametrize("kw, msg", [
    (dict(extras={"f": len}), r"cannot save model.extras\['f'\]: a builtin_function_or_method"),
    (dict(extras={"o": np.array([1, "a"], dtype=object)}), r"object array may only hold strings, found int"),
    (dict(extras={"c": np.zeros(2, dtype=[("a", "f8")])}), "arrays of dtype .* are not supported"),
    (dict(extras={(1, 2): 3}), "dict keys must be"),
    (dict(history=[{"f": object()}]), r"cannot save model.history\[0\]\['f'\]: a object"),
])
def test_save_rejects_values_a_file_cannot_hold(tmp_path, kw, msg):
    with pytest.raises(TypeError, match=msg):
        _tiny(**kw).save(tmp_path / "m.npz")
    assert not os.listdir(tmp_path)


def test_save_rejects_bad_paths_and_subclasses(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        _tiny().save(tmp_path)
    with pytest.raises(ValueError, match="does not exist; create it first"):
        _tiny().save(tmp_path / "missing" / "m.npz")
    with pytest.raises(TypeError, match="path must be a file path"):
        _tiny().save(3.5)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):                   # root can write anywhere
            with pytest.raises(ValueError, match="is not writable"):
                _tiny().save(ro / "m.npz")
    finally:
        ro.chmod(0o700)

    @dataclasses.dataclass(frozen=True)
    class Mine(Factorization):
        pass

    with pytest.raises(TypeError, match="cannot save a Mine"):
        Mine(np.ones((1, 1)), np.ones((1, 1))).save(tmp_path / "m.npz")
    with pytest.raises(TypeError, match="model must be a fitted fastpu Factorization"):
        _io.save("not a model", tmp_path / "m.npz")
    with pytest.raises(ValueError, match="path is empty; expected a file name such as model.npz"):
        _tiny().save("")


@pytest.mark.parametrize("make, exc, msg", [
    (lambda: Factorization(np.ones((3, 2), dtype=int), np.ones((4, 2), dtype=int)), TypeError,
     r"model.user_factors has dtype int64; a model file holds float factors"),
    (lambda: Factorization(np.ones(3), np.ones(4)), ValueError, r"model.user_factors must be 2-d"),
    (lambda: Factorization([[1.0]] * 3, [[1.0]] * 4), TypeError, r"model.user_factors must be a 2-d numpy array"),
    (lambda: Factorization(np.ones((3, 2)), np.ones((4, 2)), user_ids=np.arange(2)), ValueError,
     r"model.user_ids has 2 ids, expected 3"),
])
def test_save_refuses_a_model_that_load_would_call_damaged(tmp_path, make, exc, msg):
    """These were written, and load() then said the file 'is damaged or was edited'."""
    with pytest.raises(exc, match=msg):
        make().save(tmp_path / "m.npz")
    assert not os.listdir(tmp_path)


def test_save_to_a_file_object_it_cannot_write_is_refused_up_front(tmp_path):
    target = tmp_path / "m.npz"
    target.write_bytes(b"")
    with open(target, "w") as fh, pytest.raises(TypeError, match="text-mode file object; a model file is binary"):
        _tiny().save(fh)
    with open(target, "rb") as fh, pytest.raises(ValueError, match="open for reading only"):
        _tiny().save(fh)
    fh = open(target, "wb")
    fh.close()
    with pytest.raises(ValueError, match="closed file object"):
        _tiny().save(fh)
    _tiny().save(target)
    with open(target) as fh, pytest.raises(TypeError, match=r"text-mode file object; .* open\(name, 'rb'\)"):
        load(fh)                                    # was "not a fastpu model file"


# ----------------------------------------------------------------------------- bad files

def _rewrite(src, dst, *, header=None, arrays=None, fix_checksums=True):
    """Copy a model file, editing its header dict and/or arrays; optionally re-sign it."""
    with np.load(src, allow_pickle=False) as f:
        content = {k: f[k] for k in f.files}
    h = json.loads(str(content.pop("__fastpu__")))
    checksum = content.pop("__checksum__")
    if arrays:
        arrays(content)
    if fix_checksums:
        h["arrays"] = {k: {"dtype": a.dtype.str, "shape": list(a.shape),
                           "sha256": hashlib.sha256(np.ascontiguousarray(a).reshape(-1).view(np.uint8)).hexdigest()}
                       for k, a in content.items() if a.dtype.kind != "O"}
    if header:
        header(h)
    text = json.dumps(h, sort_keys=True)
    if fix_checksums:
        checksum = np.array(hashlib.sha256(text.encode()).hexdigest())
    np.savez(dst, __fastpu__=np.array(text), __checksum__=checksum, **content)


@pytest.fixture
def saved(tmp_path):
    model = fp.csrr.fit(_string_ids(_data()), variant="e", k=2, n_iter=2)
    path = tmp_path / "good.npz"
    model.save(path)
    return path


def _key_of(path, field):
    h = json.loads(str(np.load(path)["__fastpu__"]))
    return h["fields"][field]["key"]


def test_a_newer_format_version_asks_for_an_upgrade(saved, tmp_path):
    _rewrite(saved, tmp_path / "new.npz", header=lambda h: h.update(format_version=99, fastpu_version="9.0"))
    with pytest.raises(ValueError, match=r"written by fastpu 9.0 in model format version 99; this "
                                         r"fastpu reads format versions up to 2: upgrade fastpu"):
        load(tmp_path / "new.npz")


def test_truncated_and_non_zip_files(saved, tmp_path):
    raw = saved.read_bytes()
    for cut in (len(raw) // 2, len(raw) - 30, 100):
        (tmp_path / "cut.npz").write_bytes(raw[:cut])
        with pytest.raises(_io.ModelFileError, match="truncated or damaged"):
            load(tmp_path / "cut.npz")
    (tmp_path / "text.npz").write_text("user,item\n1,2\n")
    with pytest.raises(ValueError, match="not a fastpu model file"):
        load(tmp_path / "text.npz")
    np.save(tmp_path / "one.npy", np.arange(3))
    with pytest.raises(ValueError, match=r"a single .npy array, not a fastpu model file"):
        load(tmp_path / "one.npy")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nothing.npz")
    with pytest.raises(TypeError, match="path must be a file path"):
        load(3)


def test_a_flipped_byte_in_an_array_or_the_header_is_caught(saved, tmp_path):
    key = _key_of(saved, "user_factors")

    def flip(content):
        content[key] = content[key].copy()
        content[key][0, 0] += 1e-12

    _rewrite(saved, tmp_path / "a.npz", arrays=flip, fix_checksums=False)
    with pytest.raises(ValueError, match=f"array '{key}' fails its checksum"):
        load(tmp_path / "a.npz")
    _rewrite(saved, tmp_path / "h.npz", header=lambda h: h["fields"].update(method="ocmf"),
             fix_checksums=False)
    with pytest.raises(ValueError, match="header fails its checksum"):
        load(tmp_path / "h.npz")
    _rewrite(saved, tmp_path / "d.npz", arrays=lambda c: c.pop(key), fix_checksums=False)
    with pytest.raises(ValueError, match=rf"arrays missing \['{key}'\]"):
        load(tmp_path / "d.npz")


def test_other_npz_files_are_not_models(tmp_path):
    np.savez(tmp_path / "factors.npz", user_factors=np.ones((2, 2)))
    with pytest.raises(ValueError, match="is an .npz file but not a fastpu model .*user_factors"):
        load(tmp_path / "factors.npz")
    sp.save_npz(tmp_path / "Y.npz", sp.csr_array(np.eye(2)))
    with pytest.raises(ValueError, match="not a fastpu model"):
        load(tmp_path / "Y.npz")


class _Boom:
    def __reduce__(self):
        return (exec, ("import os; os.environ['FASTPU_PWNED'] = '1'",))


def test_a_pickle_inside_a_model_file_never_runs(saved, tmp_path):
    def add(content):
        content["a999"] = np.array([_Boom()], dtype=object)

    _rewrite(saved, tmp_path / "evil.npz", arrays=add)
    os.environ.pop("FASTPU_PWNED", None)
    with pytest.raises(ValueError):
        load(tmp_path / "evil.npz")
    assert "FASTPU_PWNED" not in os.environ


@pytest.mark.parametrize("edit, msg", [
    (lambda h: h.update({"class": "os.system"}), "names model class 'os.system'"),
    (lambda h: h.update(format="numpy"), "not a fastpu model file"),
    (lambda h: h["fields"].pop("variant"), "a CSRRModel has fields"),
    (lambda h: h["fields"].update(variant="I"), "variant 'I' does not match"),
    (lambda h: h["fields"].update(method={"t": "eval", "v": "1"}), "unknown value tag 'eval'"),
    (lambda h: h["fields"].update(method=[1]), "unexpected JSON value"),
    (lambda h: h["fields"]["params"].update(v=5), "a container has no list"),
    (lambda h: h["fields"].update(item_ids=h["fields"]["user_ids"]), "item_ids do not match"),
    (lambda h: h["fields"].update(item_factors={"t": "array", "key": "zzz"}), "refers to array 'zzz'"),
    (lambda h: h["fields"]["extras"]["v"].append(["x", {"t": "scalar", "dtype": "|O", "v": 1}]),
     "dtype object is not allowed"),
])
def test_re_signed_but_malformed_headers_are_rejected(saved, tmp_path, edit, msg):
    _rewrite(saved, tmp_path / "bad.npz", header=edit)
    with pytest.raises(ValueError, match=msg):
        load(tmp_path / "bad.npz")


@pytest.mark.parametrize("depth", [100_000, 700])
def test_deeply_nested_headers_are_rejected(saved, tmp_path, depth):
    with np.load(saved, allow_pickle=False) as f:
        content = {k: f[k] for k in f.files}
    text = str(content.pop("__fastpu__"))
    content.pop("__checksum__")
    deep = '{"t": "list", "v": [' * depth + '"x"' + "]}" * depth
    text = text.replace('"method": "csrr"', '"method": ' + deep)
    np.savez(tmp_path / "deep.npz", __fastpu__=np.array(text),
             __checksum__=np.array(hashlib.sha256(text.encode()).hexdigest()), **content)
    with pytest.raises(ValueError, match="nested too deeply"):
        load(tmp_path / "deep.npz")


def test_re_signed_sparse_parts_out_of_range_are_rejected(saved, tmp_path):
    h = json.loads(str(np.load(saved)["__fastpu__"]))
    key = h["fields"]["V"]["parts"]["indices"]

    def corrupt(content):
        content[key] = content[key].copy()
        content[key][0] = 10**6

    _rewrite(saved, tmp_path / "bad.npz", arrays=corrupt)
    with pytest.raises(ValueError, match="a sparse matrix is malformed"):
        load(tmp_path / "bad.npz")

    def unused(content):
        content["a500"] = np.zeros(3)

    _rewrite(saved, tmp_path / "extra.npz", arrays=unused)
    with pytest.raises(ValueError, match=r"arrays \['a500'\] are not used"):
        load(tmp_path / "extra.npz")

    def shorten(content):
        k = _key_of(saved, "user_factors")
        content[k] = content[k][:, :1].copy()

    _rewrite(saved, tmp_path / "short.npz", arrays=shorten)
    with pytest.raises(ValueError, match="user_factors have 1 columns, item_factors 2"):
        load(tmp_path / "short.npz")


def test_a_foreign_file_is_refused_without_pickle_advice(tmp_path):
    path = tmp_path / "notes.py"
    path.write_text("print('hello')\n")
    with pytest.raises(ValueError, match="is not a fastpu model file") as exc:
        fp.load_model(path)
    assert "allow_pickle" not in str(exc.value)


def test_saved_model_gets_the_users_file_permissions(tmp_path):
    import os

    model = fp.Factorization(np.ones((2, 1)), np.ones((3, 1)))
    old = os.umask(0o022)
    try:
        model.save(tmp_path / "m.npz")
    finally:
        os.umask(old)
    assert (os.stat(tmp_path / "m.npz").st_mode & 0o777) == 0o644


# ------------------------------------------------------------------ files of earlier releases

OLD = pathlib.Path(__file__).resolve().parents[1] / "data" / "models-before-redesign"


@pytest.mark.parametrize("name", ["ocmf", "ocmf-ids", "fbgd", "csrr-e", "csrr-I", "homf"])
def test_model_files_written_before_the_redesign_still_load_and_serve(name):
    """Files written by fastpu 0.1.0 before the packages moved load into the same
    model (the digest of every array it holds), and serve and fold in (fBGD's old files name
    the penalty ``reg``)."""
    import json
    import warnings as w

    from test_digests import digest

    with pytest.warns(UserWarning, match=r"model format version 1, which does not record the "
                                         r"training positives \(model.seen is None\)"):
        model = fp.load_model(OLD / f"{name}.npz")
    assert model.seen is None
    assert digest(model) == json.loads((OLD / "digests.json").read_text())[name]
    items, _ = fp.recommend(model, None, users=[0, 1], n=3)
    assert items.shape == (2, 3)
    if name != "csrr-I":                       # CSRR-I/II have no user factors to fold in
        rows = sp.csr_array(np.eye(1, model.shape[1]))
        with w.catch_warnings():
            w.simplefilter("ignore", RuntimeWarning)
            new = fp.fold_in(model, rows)
        assert new.user_factors.shape[0] == 1 and np.all(np.isfinite(new.user_factors))
