"""The user's own data: pairs, CSV files, ``.npz`` matrices and multi-label files.

Public through :mod:`fastpu.datasets` (the functions are documented there).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping, Set as AbstractSet
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from fastpu.datasets import _multilabel
from fastpu.datasets import _readers
from fastpu._core import validation as V
from fastpu._core.files import check_npz_members, open_regular
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, IntArray, Sparse, StrPath


def _csr(rows: np.ndarray, cols: np.ndarray, vals: ArrayLike, shape: tuple[int, int]) -> Sparse:
    A = sp.csr_array((np.asarray(vals, dtype=np.float64), (rows, cols)), shape=shape)
    return V.check_csr(A, name="data", nonnegative=False)


def _pairs_dataset(user_ids: np.ndarray, u: IntArray, item_ids: np.ndarray, i: IntArray,
                   values: np.ndarray | None, *, name: str, description: str) -> Dataset:
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


_ZIP_MAGIC = b"PK\x03\x04"


def check_path(path: Any, *, name: str = "path") -> str:
    """An existing file's path as a str; TypeError/ValueError/FileNotFoundError naming ``name``.

    The readers then open it with :func:`fastpu._core.files.open_regular`, which refuses
    anything but a regular file (a named pipe, a device such as /dev/zero, a socket)."""
    if isinstance(path, bool) or not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or os.PathLike), got {type(path).__name__}: {path!r:.80}")
    path = os.fsdecode(os.fspath(path))
    if not path:
        raise ValueError(f"{name} is empty; expected a file path")
    if os.path.isdir(path):
        raise ValueError(f"{name} {path!r} is a directory; expected a file")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{name} {path} does not exist")
    return path


def _is_zip(path: str, name: str = "path") -> bool:
    with open_regular(path, name=name) as fh:
        return bool(fh.read(4) == _ZIP_MAGIC)


def from_pairs(users: Sequence[Any] | np.ndarray | Any, items: Sequence[Any] | np.ndarray | None = None,
               values: ArrayLike | None = None, *, user: str | None = None, item: str | None = None,
               value: str | None = None) -> Dataset:
    """Build a Dataset from (user, item[, value]) triples, keeping the id maps.

    The triples come as three sequences, or as one pandas DataFrame (``from_pairs(df)``) whose
    columns are named by ``user=``, ``item=``, ``value=`` or else guessed from their names
    (case-insensitive): the user column is the one called ``user``, ``user_id``, ``userId``,
    ``uid``, ``customer``, ``customer_id``, ``session``, ``visitor``, ``member``, ``account``
    or ``client``; the item column ``item``, ``item_id``, ``itemId``, ``iid``, ``movie``,
    ``movie_id``, ``movieId``, ``product``, ``product_id``, ``sku``, ``song``, ``track``,
    ``artist``, ``article``, ``book``, ``label`` or ``tag``; the value column (optional)
    ``value``, ``rating``, ``score``, ``weight``, ``count``, ``quantity``, ``qty``, ``clicks``
    or ``plays``. A frame of two or three columns none of whose names is known is read in
    column order (user, item[, value]); anything else is a ValueError listing the columns.

    Ids must be all integers (Python or numpy integers, or whole-number floats) or all
    strings in each of ``users`` and ``items``; a sequence mixing the two (``[1, "1"]``) is
    an error rather than a silent merge, and strings are kept as written (``"01"`` and
    ``"1"`` are two ids). Rows and columns follow the sorted unique ids
    (``Dataset.user_ids[r]`` is the original id of row r). A repeated (user, item) pair
    keeps its last value.

    Parameters
    ----------
    users, items : sequence
        Equal-length sequences of ids; or ``users`` a pandas DataFrame and ``items`` left out.
    values : sequence of float, optional
        Stored values (ratings, counts); 1 when ``None``.
    user, item, value : str, optional, keyword-only
        With a DataFrame: the names of its user, item and value columns (guessed when not
        given; ``value`` is optional).

    Returns
    -------
    Dataset

    Raises
    ------
    TypeError
        If ids are neither integers nor strings, or one sequence mixes the two; if ``items``
        is missing for sequences; if column names are given with sequences.
    ValueError
        If an id is ``None`` (or a bool, NaN or a fractional float), lengths differ, there
        are no pairs, or a value is not finite; for a DataFrame, if a named column does not
        exist or the user and item columns cannot be told from the names.

    Examples
    --------
    >>> from fastpu.datasets import from_pairs
    >>> ds = from_pairs(["ann", "bob", "ann"], [10, 20, 20], [4.0, 5.0, 3.0])
    >>> ds.Y.toarray()
    array([[4., 3.],
           [0., 5.]])
    >>> ds.user_ids.tolist(), ds.item_ids.tolist()
    (['ann', 'bob'], [10, 20])
    >>> import pandas as pd
    >>> df = pd.DataFrame({"userId": ["ann", "bob"], "movieId": [10, 20], "rating": [4.0, 5.0]})
    >>> from_pairs(df).Y.toarray()
    array([[4., 0.],
           [0., 5.]])
    """
    if type(users).__name__ == "DataFrame" and hasattr(users, "columns"):
        if items is not None or values is not None:
            raise TypeError("from_pairs(df) takes the DataFrame alone: name its columns with "
                            "user=, item=, value= (e.g. from_pairs(df, user='customer', "
                            "item='sku')), not as items / values")
        df = users
        columns = [str(c) for c in df.columns]
        lower = {c.lower(): c for c in reversed(columns)}        # the first spelling wins
        known = {
            "user": ("user", "user_id", "userid", "uid", "users", "customer", "customer_id",
                     "customerid", "session", "session_id", "visitor", "member", "account", "client"),
            "item": ("item", "item_id", "itemid", "iid", "items", "movie", "movie_id", "movieid",
                     "product", "product_id", "productid", "sku", "song", "track", "artist",
                     "article", "book", "label", "tag"),
            "value": ("value", "rating", "ratings", "score", "weight", "count", "quantity",
                      "qty", "clicks", "plays"),
        }
        given = {"user": user, "item": item, "value": value}
        chosen: dict[str, Any] = {}
        for role, name in given.items():
            if name is not None:
                if str(name) not in columns:
                    raise ValueError(f"from_pairs: {role}={name!r} is not a column of the "
                                     f"DataFrame; its columns are {columns}")
                chosen[role] = df.columns[columns.index(str(name))]
                continue
            hit = next((lower[w] for w in known[role] if w in lower), None)
            if hit is not None:
                chosen[role] = df.columns[columns.index(hit)]
        if "user" not in chosen or "item" not in chosen:
            taken = set(map(str, chosen.values()))
            rest = [c for c in columns if c not in taken]
            if not chosen and len(columns) in (2, 3):        # unnamed columns: in order
                chosen = dict(zip(("user", "item", "value"), df.columns))
            else:
                missing = [r for r in ("user", "item") if r not in chosen]
                raise ValueError(
                    f"from_pairs: cannot tell the {' and '.join(missing)} column of the DataFrame "
                    f"from its names {columns} (unclaimed: {rest}); name them, e.g. "
                    f"from_pairs(df, user={(rest or columns)[0]!r}, item={(rest or columns)[-1]!r})")
        users, items = df[chosen["user"]].to_numpy(), df[chosen["item"]].to_numpy()
        values = None if "value" not in chosen else df[chosen["value"]].to_numpy(dtype=np.float64)
    elif user is not None or item is not None or value is not None:
        raise TypeError("from_pairs: user=, item=, value= name the columns of a DataFrame; with "
                        "sequences pass from_pairs(users, items, values)")
    if items is None:
        raise TypeError(f"items must be a 1-d sequence of ids (a list, tuple, array or Series), got "
                        f"None: from_pairs(users, items[, values]) takes equal-length sequences of "
                        f"ids, or one pandas DataFrame alone (from_pairs(df)), not "
                        f"{type(users).__name__} alone")
    for name, ids in (("users", users), ("items", items)):
        # a str or an array of the wrong shape gets encode_ids' own message
        if ids is None or isinstance(ids, (Mapping, AbstractSet)) or not hasattr(ids, "__len__") \
                or (isinstance(ids, np.ndarray) and ids.ndim == 0):
            raise TypeError(f"{name} must be a 1-d sequence of ids (a list, tuple, array or Series), "
                            f"got {type(ids).__name__}: {ids!r:.80}")
    nu, ni = len(users), len(items)
    if nu != ni:
        raise ValueError(f"users and items must have the same length, got {nu} and {ni}")
    if nu == 0:
        raise ValueError("from_pairs needs at least one (user, item) pair, got none")
    user_ids, u = _readers.encode_ids(users, "users")
    item_ids, i = _readers.encode_ids(items, "items")
    vals = None if values is None else V.check_dense(values, name="values", ndim=1, shape=(nu,))
    return _pairs_dataset(user_ids, u, item_ids, i, vals, name="pairs", description="")


def read_csv(path: StrPath, delimiter: str | None = None, header: bool | None = None,
             encoding: str = "utf-8") -> Dataset:
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
      the first line); runs of whitespace when none of them has one. A comma found in a line
      that also has a semicolon (and no quote) is ambiguous (``1;2;3,5``: decimal commas?),
      and a ValueError asks for the delimiter.
    * **Header** (when ``None``): the first non-blank line, split by its own sniffed
      delimiter (so a tab-separated header over comma-separated data works), is a
      header when none of its fields is a number and the second line shows it cannot be
      data: the second line has a numeric third field, or (two columns) a numeric id. A
      first line with a number in it, or whose third field parses as a float (``nan``,
      ``inf`` too), is always data (``1,2,abc`` and ``u1,a,nan`` are errors, never a
      silently dropped header). A first line whose first two fields are column names (``user``, ``item``,
      ``user_id``, ``movie``, ``rating``, ...: ``fastpu.datasets._readers.HEADER_WORDS``) is a header.
      Otherwise, when both lines are text-only pairs (``u0,a`` over ``u1,b``) the answer is
      ambiguous and a ValueError asks for ``header=True`` or ``header=False`` (the command
      line's ``--header`` / ``--no-header``).
      ``header=True`` always drops the first non-blank line; ``header=False`` never does
      (with a warning when that line's first two fields are column names). A header is
      read for its names too: one that names the item column first (``item,user``,
      ``movieId,userId``) is a ValueError, since the first column is always the users; one
      whose third name is a time (``timestamp``, ``time``, ``date``) gets a warning, since a
      third column is always read as the values.
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
        question is ambiguous, or the header names the item column first.

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
    path = check_path(path)
    if _is_zip(path):                    # also refuses a FIFO or a device before anything waits
        raise ValueError(f"path {path!r} is a zip archive (a .npz?), not a text file of pairs; read a "
                         "scipy.sparse.save_npz file with fastpu.datasets.load_npz")
    if not isinstance(encoding, str):
        raise TypeError(f"encoding must be a string such as 'utf-8' or 'latin-1', got {encoding!r}")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise ValueError(f"delimiter must be one character (or None to sniff), got {delimiter!r}")
    if header is not None and not isinstance(header, (bool, np.bool_)):
        raise TypeError(f"header must be True, False or None, got {header!r}")
    (user_ids, u), (item_ids, i), values = _readers.tokenize(path, delimiter, header, encoding)
    return _pairs_dataset(user_ids, u, item_ids, i, values, name=os.path.basename(path),
                          description=f"{path}: ")


def load_npz(path: StrPath) -> Dataset:
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
    TypeError
        If the stored matrix is complex (its imaginary part is never dropped silently).
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
    path = check_path(path)
    where = f"path {path!r}"
    with open_regular(path, name="path") as fh:
        if fh.read(4) != _ZIP_MAGIC:
            raise ValueError(f"{where} is not a .npz archive (saved by scipy.sparse.save_npz); read a "
                             "text file of pairs with fastpu.datasets.read_csv")
        fh.seek(0)
        try:
            with zipfile.ZipFile(fh) as zf:
                # every member's declared size, before numpy allocates what a header announces
                check_npz_members(zf, where=where, file_size=os.fstat(fh.fileno()).st_size)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ValueError(f"{where} is not a readable .npz archive (truncated or damaged?): "
                             f"{exc}") from None
        fh.seek(0)
        try:
            loaded = sp.load_npz(fh)
        except (KeyError, ValueError, TypeError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{where} is a .npz archive but not a sparse matrix saved by "
                             f"scipy.sparse.save_npz ({type(exc).__name__}: {exc}); a saved model is read "
                             "with fastpu.load_model") from None
    V.check_real(loaded, name=f"the matrix in {where}")
    if loaded.dtype.kind not in "biuf":
        raise TypeError(f"the matrix in {where} must hold numbers, got dtype {loaded.dtype}")
    Y = V.check_csr(loaded, name=f"the matrix in {where}", nonnegative=False)
    return Dataset(name=os.path.basename(path), Y=Y, user_ids=np.arange(Y.shape[0]),
                   item_ids=np.arange(Y.shape[1]), description=f"{path}: {Y.shape[0]} × {Y.shape[1]}, {Y.nnz} stored")


def read_arff(path_arff: StrPath, path_xml: StrPath) -> Dataset:
    """Read a Mulan multi-label data set (an ARFF file and its XML label list).

    Instances become rows; the attributes named in the XML file (``<label name="...">``,
    nested labels included, in document order) become the columns of ``Y``, and every other
    attribute a column of ``user_features``. Dense (``v1,v2,...``) and sparse
    (``{index value, ...}``) data rows are both read; features are a dense array when
    every row is dense and a CSR matrix as soon as one row is sparse. Attributes must be
    numeric (``numeric``, ``real``, ``integer``) or nominal with numeric categories (such
    as ``{0,1}``); labels must take the values 0 and 1. Missing values (``?``) are refused.

    Parameters
    ----------
    path_arff : str or os.PathLike
        The ``.arff`` file (UTF-8).
    path_xml : str or os.PathLike
        The Mulan ``.xml`` file listing the labels.

    Returns
    -------
    Dataset
        ``Y`` (instances × labels, 1 where a label is present), ``user_features`` (instances
        × features), ``item_ids`` = label names, ``user_ids`` = 0..n-1, and
        ``extras["feature_names"]``.

    Raises
    ------
    FileNotFoundError
        If a file does not exist.
    ValueError
        If the XML is malformed or lists no labels, a label is not an attribute of the ARFF
        file or is not 0/1, an attribute type is unsupported, a value is missing, not a
        number or not finite, or a row has the wrong number of values (each naming the file
        and line).

    Examples
    --------
    >>> import os, tempfile
    >>> from fastpu.datasets import read_arff
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "t.xml"), "w").write('<labels><label name="a"/><label name="b"/></labels>')
    >>> _ = open(os.path.join(d, "t.arff"), "w").write(
    ...     "@relation t\\n@attribute x numeric\\n@attribute a {0,1}\\n@attribute b {0,1}\\n@data\\n0.5,1,0\\n2,1,1\\n")
    >>> ds = read_arff(os.path.join(d, "t.arff"), os.path.join(d, "t.xml"))
    >>> ds.Y.toarray(), ds.user_features
    (array([[1., 0.],
           [1., 1.]]), array([[0.5],
           [2. ]]))
    """
    path_arff, path_xml = check_path(path_arff, name="path_arff"), check_path(path_xml, name="path_xml")
    X, Y, feats, labels, rel = _multilabel.read_mulan(path_arff, path_xml)
    Y = V.check_csr(Y, name="Y")
    X = V.check_csr(X, name="user_features", nonnegative=False) if sp.issparse(X) else np.ascontiguousarray(X)
    return Dataset(
        name=os.path.basename(path_arff), Y=Y, user_features=X, user_ids=np.arange(Y.shape[0]),
        item_ids=np.array(labels), extras={"feature_names": feats, "relation": rel},
        description=(f"{path_arff} (Mulan, labels from {os.path.basename(path_xml)}): {Y.shape[0]} instances, "
                     f"{X.shape[1]} features, {Y.shape[1]} labels, {Y.nnz} positive labels"))


def read_xc(path: StrPath) -> Dataset:
    """Read a multi-label file in the extreme classification repository's sparse text format.

    The first line is ``n_points n_features n_labels``; then one line per point:
    comma-separated label indices, then ``feature:value`` pairs, separated by spaces
    (``3,17 0:0.5 9:1.25``). A point may have no labels (the line starts with a feature or
    is empty). Indices are 0-based and must be below the header's counts.

    Parameters
    ----------
    path : str or os.PathLike
        The text file (UTF-8).

    Returns
    -------
    Dataset
        ``Y`` (points × labels, values 1), ``user_features`` (points × features, CSR),
        ``user_ids`` = 0..n-1, ``item_ids`` = 0..L-1.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the header is not three integers, its counts need more memory than is available
        (the ids of ``n_points`` points and ``n_labels`` labels), the number of lines differs
        from the header's count, or a label or feature is malformed, out of range, repeated or not finite
        (each naming the file and line).

    Examples
    --------
    >>> import os, tempfile
    >>> from fastpu.datasets import read_xc
    >>> p = os.path.join(tempfile.mkdtemp(), "train.txt")
    >>> _ = open(p, "w").write("2 3 4\\n0,2 1:0.5\\n3 0:1 2:2\\n")
    >>> ds = read_xc(p)
    >>> ds.Y.toarray()
    array([[1., 0., 1., 0.],
           [0., 0., 0., 1.]])
    >>> ds.user_features.toarray()
    array([[0. , 0.5, 0. ],
           [1. , 0. , 2. ]])
    """
    path = check_path(path)
    X, Y = _multilabel.read_xc_file(path)
    X = V.check_csr(X, name=f"the features of {path}", nonnegative=False)
    Y = V.check_csr(Y, name=f"the labels of {path}")
    return Dataset(
        name=os.path.basename(path), Y=Y, user_features=X, user_ids=np.arange(Y.shape[0]),
        item_ids=np.arange(Y.shape[1]),
        description=(f"{path} (extreme classification format): {Y.shape[0]} points, {X.shape[1]} features "
                     f"({X.nnz} stored), {Y.shape[1]} labels, {Y.nnz} positive labels"))
