"""Saving and loading fitted models: one ``.npz`` file, read back without pickle.

Layout of a model file (format version 2)
-----------------------------------------
``__fastpu__``
    A 0-d unicode array holding a JSON header: ``format`` (``"fastpu.model"``),
    ``format_version``, ``fastpu_version`` (of the writer), ``class`` (the model class,
    one of a fixed list), ``fields`` (every dataclass field of the model, encoded as
    below) and ``arrays`` (for each stored array its dtype, shape and SHA-256).

    Among the fields, ``seen`` holds the training positives (a boolean CSR of the model's
    shape, int32 indices: about 5 bytes per positive) or ``None``. Files of format version 1
    have no ``seen`` field: they load with ``seen=None`` and a warning, and ``recommend``
    then leaves out only the ``Y_seen`` it is given.
``__checksum__``
    A 0-d unicode array: the SHA-256 of the header text.
``a0``, ``a1``, ...
    The arrays (factors, ids, extras, the parts of sparse matrices).

Values are encoded as JSON: ``None``, bools, ints, floats and strings as themselves;
every container as a tagged object (``{"t": "list"|"tuple"|"dict", "v": ...}``) so that
tuples, lists and non-string dict keys come back as they went in; numpy scalars as
``{"t": "scalar", "dtype", "v"}``; arrays as ``{"t": "array", "key"}`` pointing at a
stored array (object arrays of strings are stored as unicode and flagged); scipy sparse
matrices and arrays as ``{"t": "sparse", "format", "kind", "shape", "parts"}``.

Nothing is unpickled (``np.load(..., allow_pickle=False)``) and the class to rebuild is
looked up in :data:`_CLASSES` by name, never imported from a name found in the file.
The checksums catch truncation and accidental corruption; the structural checks after
decoding (shapes, dtypes, sparse index ranges) make sure that whatever passes them is a
well-formed model, also when a file was edited and its checksums recomputed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import io
import json
import os
import tempfile
import warnings
import zipfile

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import registry
from fastpu._core import validation as V
from fastpu._core.files import check_npz_members, check_save_path, open_regular
from fastpu._core.memory import check_alloc
from fastpu._core.hints import PathOrFile
from fastpu._core.version import __version__

if TYPE_CHECKING:
    from fastpu._core.factorization import Factorization

FORMAT = "fastpu.model"
FORMAT_VERSION = 2
# the first format version whose models record their training positives (the ``seen`` field)
_SEEN_VERSION = 2
_HEADER_KEY = "__fastpu__"
_CHECKSUM_KEY = "__checksum__"

# The only classes a model file may name: (module, attribute) inside fastpu.
_CLASSES = {where.rpartition(":")[2]: where for where in
            sorted({e.model_class for e in registry.entries()})}
_ARRAY_KINDS = "biufcUS"
_SPARSE_PARTS = {"csr": ("data", "indices", "indptr"), "csc": ("data", "indices", "indptr"),
                 "coo": ("data", "row", "col")}


class ModelFileError(ValueError):
    """A file that is not a readable fastpu model (wrong kind, newer format, damaged)."""


# ------------------------------------------------------------------------------ encoding

class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def _store(self, arr: np.ndarray) -> str:
        key = f"a{len(self.arrays)}"
        self.arrays[key] = np.ascontiguousarray(arr)
        return key

    def array(self, arr: Any, where: str) -> dict[str, Any]:
        arr = np.asarray(arr)
        tag: dict[str, Any] = {"t": "array"}
        if arr.dtype.kind == "O":
            flat = arr.ravel()
            if not all(isinstance(x, str) for x in flat):
                kinds = sorted({type(x).__name__ for x in flat if not isinstance(x, str)})
                raise TypeError(
                    f"cannot save {where}: an object array may only hold strings, found "
                    f"{', '.join(kinds)}; convert it to a numeric or string dtype first")
            arr = arr.astype(str) if arr.size else np.zeros(arr.shape, dtype="<U1")
            tag["object"] = True
        elif arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields is not None:
            raise TypeError(f"cannot save {where}: arrays of dtype {arr.dtype} are not supported "
                            "(numeric, bool and string arrays are)")
        tag["key"] = self._store(arr)
        return tag

    def sparse(self, M: Any, where: str) -> dict[str, Any]:
        fmt = M.format if M.format in _SPARSE_PARTS else "coo"
        src = M if fmt == M.format else M.tocoo()
        parts = {name: self.array(getattr(src, name), f"{where} ({name})")["key"]
                 for name in _SPARSE_PARTS[fmt]}
        return {"t": "sparse", "format": M.format, "stored": fmt,
                "kind": "array" if isinstance(M, sp.sparray) else "matrix",
                "shape": [int(s) for s in M.shape], "parts": parts}

    def value(self, x: Any, where: str, *, lenient: bool = False) -> Any:
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, np.generic):
            if x.dtype.kind not in _ARRAY_KINDS:
                return self._unsupported(x, where, lenient)
            return {"t": "scalar", "dtype": x.dtype.str, "v": x.item()}
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            return float(x)
        if isinstance(x, np.ndarray):
            return self.array(x, where)
        if sp.issparse(x):
            return self.sparse(x, where)
        if isinstance(x, (list, tuple)):
            return {"t": type(x).__name__,
                    "v": [self.value(v, f"{where}[{i}]", lenient=lenient) for i, v in enumerate(x)]}
        if isinstance(x, dict):
            items = []
            for k, v in x.items():
                if not (k is None or isinstance(k, (bool, str, int, float))):
                    raise TypeError(f"cannot save {where}: dict keys must be str, int, float, bool "
                                    f"or None, got {type(k).__name__}")
                items.append([k, self.value(v, f"{where}[{k!r}]", lenient=lenient)])
            return {"t": "dict", "v": items}
        return self._unsupported(x, where, lenient)

    @staticmethod
    def _unsupported(x: Any, where: str, lenient: bool) -> dict[str, Any]:
        if lenient:
            warnings.warn(f"{where} is a {type(x).__name__}, which a model file cannot hold; "
                          "it is saved as its repr string", UserWarning, stacklevel=4)
            return {"t": "repr", "v": repr(x)}
        raise TypeError(
            f"cannot save {where}: a {type(x).__name__} is not one of None, bool, int, float, str, "
            "list, tuple, dict, numpy scalar or array, scipy sparse matrix")


def _sha(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data).hexdigest()


def _fastpu_version() -> str:
    return __version__


def save(model: Any, path: PathOrFile) -> None:
    """Write ``model`` to ``path`` (see :meth:`fastpu.Factorization.save`)."""
    from fastpu._core.factorization import Factorization

    if not isinstance(model, Factorization):
        raise TypeError(f"model must be a fitted fastpu Factorization, got {type(model).__name__}")
    cls = type(model).__name__
    if cls not in _CLASSES or _class(cls) is not type(model):
        raise TypeError(f"cannot save a {cls}: model files hold {', '.join(sorted(_CLASSES))}")
    # what load_model() checks, refused here rather than written to a file it then calls damaged
    from fastpu.model._serving import check_model

    check_model(model)
    for side in ("user", "item"):
        F = getattr(model, f"{side}_factors")
        if F.dtype.kind != "f":
            raise TypeError(f"model.{side}_factors has dtype {F.dtype}; a model file holds float "
                            f"factors: convert them first ({side}_factors.astype(float))")
        ids = getattr(model, f"{side}_ids")
        if ids is not None:
            _check_ids(ids, f"model.{side}_ids", F.shape[0])
    if not isinstance(model.method, str) or not isinstance(model.params, dict) \
            or not isinstance(model.extras, dict) or not isinstance(model.history, list):
        raise TypeError("model.method must be a str, model.params and model.extras dicts and "
                        "model.history a list (of dicts), as every fit returns them")
    registry.check_fitted(model)          # params and extras against the factors, as load does
    from fastpu._core.factorization import check_seen

    seen = check_seen(model)
    if seen is not None and not (isinstance(seen, sp.csr_array) and seen.dtype == np.bool_
                                 and V.has_canonical_indices(seen.indptr, seen.indices)):
        from fastpu._core.factorization import positives

        model = dataclasses.replace(model, seen=positives(seen))     # its pattern, as a fit makes it
    if hasattr(path, "write"):
        _check_writable_file(path)
    enc = _Encoder()
    fields = {}
    for f in dataclasses.fields(model):
        fields[f.name] = enc.value(getattr(model, f.name), f"model.{f.name}", lenient=f.name == "params")
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "fastpu_version": _fastpu_version(),
        "class": cls,
        "fields": fields,
        "arrays": {k: {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": _sha(a)}
                   for k, a in enc.arrays.items()},
    }
    text = json.dumps(header, sort_keys=True)
    payload: dict[str, Any] = {_HEADER_KEY: np.array(text), _CHECKSUM_KEY: np.array(hashlib.sha256(text.encode()).hexdigest()),
               **enc.arrays}
    if hasattr(path, "write"):
        np.savez(path, **payload)
        return
    path = check_save_path(path)
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".fastpu-", suffix=".npz.tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **payload)
        umask = os.umask(0)                      # mkstemp makes 0600; a saved model gets the
        os.umask(umask)                          # permissions of any file the user writes
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _check_writable_file(f: Any) -> None:
    """A file object np.savez can write a zip archive to: open, binary, writable."""
    if getattr(f, "closed", False):
        raise ValueError("path is a closed file object; pass an open one (or a file path)")
    if isinstance(f, io.TextIOBase):
        raise TypeError("path is a text-mode file object; a model file is binary: open it with "
                        "open(name, 'wb') (or pass the file path)")
    writable = getattr(f, "writable", None)
    if callable(writable) and not writable():
        raise ValueError("path is a file object open for reading only; open it with "
                         "open(name, 'wb') (or pass the file path)")


# ------------------------------------------------------------------------------ decoding

def _class(name: str) -> Any:
    module, _, attr = _CLASSES[name].partition(":")
    return getattr(importlib.import_module(module), attr)


class _Decoder:
    def __init__(self, arrays: Any, where: str) -> None:
        self.arrays = arrays
        self.where = where
        self.used: set[str] = set()

    def bad(self, msg: str) -> ModelFileError:
        return ModelFileError(f"{self.where} is damaged or was edited: {msg}")

    def array(self, key: Any) -> np.ndarray:
        if not isinstance(key, str) or key not in self.arrays:
            raise self.bad(f"it refers to array {key!r}, which the file does not hold")
        self.used.add(key)
        return self.arrays[key]

    def value(self, x: Any) -> Any:
        if x is None or isinstance(x, (bool, str, int, float)):
            return x
        if isinstance(x, list) or not isinstance(x, dict) or "t" not in x:
            raise self.bad(f"unexpected JSON value {str(x)[:60]!r}")
        t = x["t"]
        if t in ("list", "tuple"):
            items = [self.value(v) for v in self._list(x.get("v"))]
            return items if t == "list" else tuple(items)
        if t == "dict":
            out = {}
            for pair in self._list(x.get("v")):
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise self.bad("a dict entry is not a [key, value] pair")
                if isinstance(pair[0], (list, dict)):
                    raise self.bad("a dict key is not a plain value")
                out[pair[0]] = self.value(pair[1])
            return out
        if t == "scalar":
            dt = self._dtype(x.get("dtype"))
            try:
                return np.array(x.get("v"), dtype=dt)[()]
            except (TypeError, ValueError, OverflowError):
                raise self.bad(f"scalar {x.get('v')!r} does not fit dtype {dt}") from None
        if t == "array":
            arr = self.array(x.get("key"))
            if x.get("object"):
                if arr.dtype.kind != "U":
                    raise self.bad("an object array is not stored as unicode")
                arr = arr.astype(object)
            return arr
        if t == "sparse":
            return self.sparse(x)
        if t == "repr":
            return str(x.get("v"))
        raise self.bad(f"unknown value tag {t!r}")

    def _list(self, v: Any) -> list[Any]:
        if not isinstance(v, list):
            raise self.bad("a container has no list of items")
        return v

    def _dtype(self, s: Any) -> np.dtype[Any]:
        try:
            dt = np.dtype(s)
        except TypeError:
            raise self.bad(f"unknown dtype {s!r}") from None
        if dt.kind not in _ARRAY_KINDS:
            raise self.bad(f"dtype {dt} is not allowed")
        return dt

    def _check_conversion(self, fmt: str, stored: str, shape: list[int], p: dict[str, np.ndarray]) -> None:
        nbytes = _conversion_bytes(fmt, stored, shape, p)
        try:
            check_alloc(nbytes, what=f"a {shape[0]}×{shape[1]} {fmt} matrix declared by the file",
                        names=("the matrix's declared shape",))
        except ValueError as exc:
            raise self.bad(str(exc)) from None

    def sparse(self, x: Any) -> Any:
        fmt, stored, kind, shape, parts = (x.get(k) for k in ("format", "stored", "kind", "shape", "parts"))
        if stored not in _SPARSE_PARTS or not isinstance(parts, dict) or set(parts) != set(_SPARSE_PARTS[stored]):
            raise self.bad(f"a sparse matrix has format {stored!r} with parts {parts!r}")
        if fmt not in ("csr", "csc", "coo", "bsr", "dia", "dok", "lil") or kind not in ("array", "matrix"):
            raise self.bad(f"a sparse matrix has format {fmt!r} and kind {kind!r}")
        if not (isinstance(shape, list) and len(shape) == 2
                and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)):
            raise self.bad(f"a sparse matrix has shape {shape!r}")
        p = {name: self.array(parts[name]) for name in _SPARSE_PARTS[stored]}
        for name, arr in p.items():
            if arr.ndim != 1 or arr.dtype.kind not in ("biufc" if name == "data" else "iu"):
                raise self.bad(f"the {name} of a sparse matrix has dtype {arr.dtype} and shape {arr.shape}")
        self._check_conversion(fmt, stored, shape, p)
        cls = {"csr": (sp.csr_array, sp.csr_matrix), "csc": (sp.csc_array, sp.csc_matrix),
               "coo": (sp.coo_array, sp.coo_matrix)}[stored][kind == "matrix"]
        try:
            if stored == "coo":
                if not (p["row"].size == p["col"].size == p["data"].size):
                    raise ValueError("row, col and data differ in length")
                for name, lim in (("row", shape[0]), ("col", shape[1])):
                    a = p[name]
                    if a.size and (a.min() < 0 or a.max() >= lim):
                        raise ValueError(f"{name} indices out of range [0, {lim})")
                M = cls((p["data"], (p["row"], p["col"])), shape=tuple(shape))
            else:
                M = cls((p["data"], p["indices"], p["indptr"]), shape=tuple(shape))
                M.check_format(full_check=True)
                # keep the stored index dtypes (scipy may pick another one)
                M.indices, M.indptr = p["indices"], p["indptr"]
        except (ValueError, TypeError, IndexError) as exc:
            raise self.bad(f"a sparse matrix is malformed ({exc})") from None
        return M if fmt == stored else M.asformat(fmt)


def _remaining(fh: Any) -> int | None:
    """Bytes from the position of the binary file object ``fh`` to its end (None: unknown)."""
    try:
        here = fh.tell()
        end = fh.seek(0, os.SEEK_END)
        fh.seek(here)
    except (OSError, AttributeError, ValueError):
        return None
    return int(end - here)


def _conversion_bytes(fmt: str, stored: str, shape: list[int], parts: dict[str, np.ndarray]) -> int:
    """Bytes the sparse matrix of the declared ``shape`` needs in ``fmt`` beyond its stored parts
    (the shape is the file's word: a COO declared with 10¹¹ rows needs 800 GB of CSR pointers)."""
    m, n = shape
    nnz = int(parts["data"].size)
    if fmt == stored:
        return 0
    if fmt in ("csr", "csc", "bsr"):
        return 8 * (max(m, n) + 1) + 24 * nnz
    if fmt == "lil":
        return 120 * m + 80 * nnz
    if fmt == "dok":
        return 200 * nnz
    if fmt == "dia" and stored == "coo":
        diagonals = np.unique(parts["col"].astype(np.int64) - parts["row"].astype(np.int64)).size
        return diagonals * n * parts["data"].dtype.itemsize + 8 * diagonals
    return 8 * (max(m, n) + 1) + 24 * nnz


def _open(path: Any) -> tuple[Any, str, Any]:
    """(NpzFile, the file's name for messages, the file object to close or None).

    Nothing is allocated from what the file declares before :func:`check_npz_members` has
    bounded it: a path must be a regular file (a FIFO or a device is refused, not waited on or
    read for ever), a single ``.npy`` array is refused without loading it, and every member's
    declared size is checked against the file's size and the memory limit."""
    if not (isinstance(path, (str, os.PathLike)) or hasattr(path, "read")):
        raise TypeError(f"path must be a file path (str or os.PathLike) or a readable file object, "
                        f"got {type(path).__name__}")
    if isinstance(path, io.TextIOBase):
        raise TypeError("path is a text-mode file object; a model file is binary: open it with "
                        "open(name, 'rb') (or pass the file path)")
    where = repr(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else "the model file"
    own = open_regular(path, name="path") if isinstance(path, (str, os.PathLike)) else None
    src = own if own is not None else path
    try:
        size = _remaining(src)
        start = src.tell() if size is not None else None
        magic = src.read(6)
        if start is not None:
            src.seek(start)
        if magic == b"\x93NUMPY":
            raise ModelFileError(f"{where} is a single .npy array, not a fastpu model file (.npz)")
        if not magic.startswith(b"PK"):
            raise ModelFileError(f"{where} is not a fastpu model file (.npz written by "
                                 "Factorization.save)")
        try:
            npz = np.load(src, allow_pickle=False)
        except ValueError:
            # numpy's message for a non-array file talks about allow_pickle: never the advice here
            raise ModelFileError(f"{where} is not a fastpu model file (.npz written by "
                                 "Factorization.save)") from None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ModelFileError(f"{where} is not a readable .npz file (truncated or damaged?): {exc}") from None
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise ModelFileError(f"{where} is a single .npy array, not a fastpu model file (.npz)")
        try:
            check_npz_members(npz.zip, where=where, file_size=size, error=ModelFileError)
        except BaseException:
            npz.close()
            raise
    except BaseException:
        if own is not None:
            own.close()
        raise
    return npz, where, own


def load_model(path: PathOrFile) -> Factorization:
    """Read a model written by :meth:`fastpu.Factorization.save`.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The ``.npz`` file.

    Returns
    -------
    Factorization
        The saved model, of the class that was saved (``CSRRModel`` for CSRR), with its
        factors, extras, method, params, history and ids exactly as they were.

    Raises
    ------
    TypeError
        If ``path`` is neither a path nor a file object, or is a text-mode file object.
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        (:class:`ModelFileError`) If the file is not a fastpu model (another ``.npz``, a
        ``.npy``, not a zip), was written by a newer fastpu (a format version this one does
        not read), is truncated, or fails its checksums or structural checks.

    Examples
    --------
    >>> import io, fastpu as fp
    >>> Y = fp.datasets.synthetic(20, 15, rank=2, density=0.2, seed=0)
    >>> model = fp.ocmf.fit(Y, 3, n_iter=2)
    >>> buf = io.BytesIO(); model.save(buf); _ = buf.seek(0)
    >>> from fastpu.model import load_model
    >>> same = load_model(buf)
    >>> bool((same.user_factors == model.user_factors).all()), same.method, same.item_ids[:3]
    (True, 'ocmf', array([0, 1, 2]))
    """
    npz, where, own = _open(path)
    with npz, (own if own is not None else contextlib.nullcontext()):
        try:
            names = set(npz.files)
            if _HEADER_KEY not in names:
                raise ModelFileError(
                    f"{where} is an .npz file but not a fastpu model (it has no {_HEADER_KEY!r} entry; "
                    f"it holds {', '.join(sorted(names)[:5]) or 'nothing'}); "
                    "write models with model.save(path)")
            if _CHECKSUM_KEY not in names:
                raise ModelFileError(f"{where} is damaged or was edited: its header checksum is missing")
            text = _text(npz[_HEADER_KEY], where)
            checksum = _text(npz[_CHECKSUM_KEY], where)
            header = _header(text, where)
            if hashlib.sha256(text.encode()).hexdigest() != checksum:
                raise ModelFileError(f"{where} is damaged or was edited: its header fails its checksum")
            table = header["arrays"]
            if not isinstance(table, dict):
                raise ModelFileError(f"{where} is damaged or was edited: bad array table")
            stored = names - {_HEADER_KEY, _CHECKSUM_KEY}
            if stored != set(table):
                missing, extra = sorted(set(table) - stored), sorted(stored - set(table))
                raise ModelFileError(
                    f"{where} is damaged or was edited: arrays missing {missing[:5]}, unexpected {extra[:5]}")
            arrays = {}
            for key in sorted(table):
                arr = npz[key]
                meta = table[key]
                if (not isinstance(meta, dict) or arr.dtype.str != meta.get("dtype")
                        or list(arr.shape) != meta.get("shape") or _sha(arr) != meta.get("sha256")):
                    raise ModelFileError(f"{where} is damaged or was edited: array {key!r} fails its checksum")
                arrays[key] = arr
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ModelFileError(f"{where} is truncated or damaged: {exc}") from None
        except ValueError as exc:
            if isinstance(exc, ModelFileError):
                raise
            raise ModelFileError(f"{where} is damaged or was edited: {exc}") from None
    dec = _Decoder(arrays, where)
    cls = _class(header["class"])
    fields = header["fields"]
    want = {f.name for f in dataclasses.fields(cls)}
    old_format = header["format_version"] < _SEEN_VERSION
    if old_format:
        want.discard("seen")
    if not isinstance(fields, dict) or set(fields) != want:
        got = sorted(fields) if isinstance(fields, dict) else fields
        raise dec.bad(f"a {header['class']} has fields {sorted(want)}, the file has {got}")
    try:
        values = {name: dec.value(v) for name, v in fields.items()}
    except RecursionError:
        raise dec.bad("its values are nested too deeply") from None
    _check_model(values, header["class"], dec)
    if dec.used != set(arrays):
        raise dec.bad(f"arrays {sorted(set(arrays) - dec.used)[:5]} are not used by the model")
    if old_format:
        values["seen"] = None
        warnings.warn(
            f"{where} was written in model format version {header['format_version']}, which does "
            "not record the training positives (model.seen is None): recommend leaves out only "
            "the Y_seen it is given. Pass the training matrix as Y_seen, or set it once with "
            "dataclasses.replace(model, seen=Y_train) and save the model again",
            UserWarning, stacklevel=2)
    model = cls(**values)
    try:
        registry.check_fitted(model)      # params and extras against the factors, as a fit makes them
    except (TypeError, ValueError) as exc:
        raise dec.bad(str(exc)) from None
    return model


def _check_ids(ids: Any, name: str, size: int) -> None:
    """Ids of one side: a 1-d array of ``size`` distinct integers or strings (a repeated id was
    recommended twice, and cannot be looked up)."""
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or ids.shape[0] != size:
        raise ValueError(f"{name} do not match the {size} rows of the factors")
    if ids.dtype.kind not in "iuUS" and not (ids.dtype.kind == "O"
                                             and all(isinstance(x, str) for x in ids.tolist())):
        raise TypeError(f"{name} must be integers or strings, got dtype {ids.dtype}")
    V.check_ids(ids, name=name, size=size, expected="one identifier per row of the factors")


def _text(arr: Any, where: str) -> str:
    if arr.dtype.kind != "U" or arr.ndim != 0:
        raise ModelFileError(f"{where} is damaged or was edited: its header is not a text entry")
    return str(arr[()])


def _header(text: str, where: str) -> dict[str, Any]:
    try:
        header = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{where} is damaged or was edited: its header is not JSON ({exc})") from None
    except RecursionError:
        raise ModelFileError(f"{where} is damaged or was edited: its header is nested too deeply") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ModelFileError(f"{where} is not a fastpu model file (its header is not {FORMAT!r})")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelFileError(f"{where} is damaged or was edited: format version {version!r}")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{where} was written by fastpu {header.get('fastpu_version', '?')} in model format "
            f"version {version}; this fastpu reads format versions up to {FORMAT_VERSION}: "
            "upgrade fastpu to load it")
    for key in ("class", "fields", "arrays"):
        if key not in header:
            raise ModelFileError(f"{where} is damaged or was edited: its header has no {key!r}")
    if header["class"] not in _CLASSES:
        raise ModelFileError(f"{where} names model class {header['class']!r}; expected one of "
                             f"{', '.join(sorted(_CLASSES))}")
    return header


def _check_model(v: dict[str, Any], cls: str, dec: _Decoder) -> None:
    """Structural checks: a decoded model must be usable by every serving function."""
    U, Vf = v["user_factors"], v["item_factors"]
    for name, F in (("user_factors", U), ("item_factors", Vf)):
        if not isinstance(F, np.ndarray) or F.ndim != 2 or F.dtype.kind != "f":
            raise dec.bad(f"{name} is not a 2-d float array")
    m, n = U.shape[0], Vf.shape[0]
    if cls == "ItemItemModel":           # scores X B: no user vectors, B is n×n
        if U.shape[1] != 0 or Vf.shape != (n, n):
            raise dec.bad(f"an item-item model has user_factors of 0 columns and an n×n B, got "
                          f"{U.shape} and {Vf.shape}")
        Xs = v["X"]
        if not sp.issparse(Xs) or Xs.shape != (m, n):
            raise dec.bad(f"the positives X are not a sparse {m}×{n} matrix")
    elif U.shape[1] != Vf.shape[1]:
        raise dec.bad(f"user_factors have {U.shape[1]} columns, item_factors {Vf.shape[1]}")
    for name, ids, size in (("user_ids", v["user_ids"], m), ("item_ids", v["item_ids"], n)):
        if ids is not None:
            try:
                _check_ids(ids, name, size)
            except (TypeError, ValueError) as exc:
                raise dec.bad(str(exc)) from None
    if not isinstance(v["method"], str) or not isinstance(v["params"], dict) \
            or not isinstance(v["extras"], dict) or not isinstance(v["history"], list) \
            or not all(isinstance(h, dict) for h in v["history"]):
        raise dec.bad("method, params, extras or history has the wrong type")
    if v.get("seen") is not None:
        try:
            V.check_stored_csr(v["seen"], name="seen", shape=(m, n),
                               what="the training positives, one row per user")
        except (TypeError, ValueError) as exc:
            raise dec.bad(str(exc)) from None
    if cls == "CSRRModel":
        Vs, Ud, variant = v["V"], v["U"], v["variant"]
        if not sp.issparse(Vs) or Vs.shape != (m, n):
            raise dec.bad(f"the sparse part V is not a sparse {m}×{n} matrix")
        if Ud is not None and (not isinstance(Ud, np.ndarray) or Ud.shape != (m, n)):
            raise dec.bad(f"the dense part U is not an {m}×{n} array")
        if variant not in ("I", "II", "e") or (variant == "e") != (Ud is None):
            raise dec.bad(f"variant {variant!r} does not match the parts stored")
