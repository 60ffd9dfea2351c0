"""Parsing for :func:`fastpu.datasets.read_csv` and the id maps of ``from_pairs``.

Two tokenizers share one set of rules. pandas (optional) splits well-formed files fast; the
``csv``-module reader is the reference: it is used when pandas is missing, and whenever the
pandas pass sees anything unusual (a short line, an empty field, a non-numeric or non-finite
value, a decoding error), so that every error message, and every result, comes from the same
code whichever path ran. The id and value rules below are applied to the tokens of both.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
import warnings
from typing import Any, Sequence

import numpy as np

from fastpu._core.files import read_regular

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
# bytes beyond printable ASCII, tab, line feed and carriage return
_OTHER_SPACE = re.compile(rb"[^\t\n\r\x20-\x7e]")
_DELIMS = (",", "\t", ";")
_INT64_MAX = np.iinfo(np.int64).max
_DELIM_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", None: "whitespace"}


class _Anomaly(Exception):
    """The pandas pass met something only the reference reader can diagnose."""


def _import_pandas() -> Any:
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _is_number(s: str) -> bool:
    return _NUMBER.match(s.strip()) is not None


def _is_float(s: str) -> bool:
    """Whether the value column's parser reads ``s`` as a float (nan, inf and 1e400 included)."""
    try:
        float(s)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- ids

def _canonical_ints(strings: Sequence[str]) -> np.ndarray | None:
    """int64 array if every string is an integer written canonically, else None."""
    out = np.empty(len(strings), dtype=np.int64)
    for k, s in enumerate(strings):
        if not s or not (s.isdigit() or (s[0] == "-" and s[1:].isdigit())) or not s.isascii():
            return None
        v = int(s)
        if str(v) != s or not -_INT64_MAX <= v <= _INT64_MAX:
            return None
        out[k] = v
    return out


def ids_from_tokens(codes: np.ndarray, tokens: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted id array and row codes from raw tokens.

    ``tokens[codes[r]]`` is the raw text of row r. Tokens are stripped of surrounding
    whitespace; the ids are integers when every stripped token is an integer written
    canonically (no sign other than '-', no leading zero, fits int64), else the stripped
    strings as written. Ids are sorted (numerically or by code point).
    """
    stripped = [str(t).strip() for t in tokens]
    ints = _canonical_ints(stripped)
    keys = ints if ints is not None else np.array(stripped, dtype=str)
    ids, remap = np.unique(keys, return_inverse=True)
    return ids, remap.astype(np.int64)[codes]


def _classify(x: object) -> str:
    if x is None:
        return "none"
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, (int, np.integer)):
        return "int"
    if isinstance(x, (float, np.floating)):
        return "float" if x == x else "nan"
    if isinstance(x, str):
        return "str"
    if isinstance(x, bytes):
        return "bytes"
    return type(x).__name__


def encode_ids(ids: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique ids, int64 codes) for ``from_pairs``; integers or strings, never mixed."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of ids, got a single {type(ids).__name__} {ids!r}")
    arr = np.asarray(ids) if hasattr(ids, "__array__") else None      # numpy arrays, pandas Series
    if arr is None or arr.dtype.kind == "O":
        seq = ids if arr is None else arr
        try:
            objs = np.empty(len(seq), dtype=object)
            objs[:] = list(seq)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a 1-d sequence of ids, got {type(ids).__name__}") from None
        kinds = [_classify(x) for x in objs]
        found = set(kinds)
        for bad, what in (("none", "None"), ("nan", "NaN (a missing id)"), ("bool", "a bool")):
            if bad in found:
                pos = kinds.index(bad)
                raise ValueError(f"{name}[{pos}] is {what}; expected an integer or string id")
        odd = found - {"int", "float", "str", "bytes"}
        if odd:
            pos = next(k for k, c in enumerate(kinds) if c in odd)
            raise TypeError(f"{name} must hold integer or string ids, got {type(objs[pos]).__name__} "
                            f"{objs[pos]!r} at position {pos}")
        group = {"int": "integer", "float": "integer", "str": "string", "bytes": "bytes"}
        first: dict[str, int] = {}
        for k, c in enumerate(kinds):
            first.setdefault(group[c], k)
        if len(first) > 1:
            a, b = sorted(first.values())[:2]
            raise TypeError(
                f"{name} mixes id types: {name}[{a}] is {type(objs[a]).__name__} {objs[a]!r} and "
                f"{name}[{b}] is {type(objs[b]).__name__} {objs[b]!r}; ids must be all integers or all "
                f"strings (convert them, e.g. [str(x) for x in {name}])")
        if found <= {"int", "float"}:
            try:
                arr = np.array(list(objs), dtype=np.float64 if "float" in found else np.int64)
            except OverflowError:
                raise ValueError(f"{name} has integer ids outside the int64 range; pass them as strings") from None
        elif found == {"bytes"}:
            arr = np.array(list(objs), dtype=bytes)
        else:
            arr = np.array(list(objs), dtype=str)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d sequence of ids, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(f"{name} has non-finite ids (first at position {int(np.argmax(bad))}); "
                             f"expected integers or strings")
        if np.abs(arr).max(initial=0) >= 2.0 ** 63:
            raise ValueError(f"{name} has ids outside the int64 range; pass them as integers or strings")
        if not np.all(arr == np.round(arr)):
            pos = int(np.argmax(arr != np.round(arr)))
            raise ValueError(f"{name}[{pos}] is {float(arr[pos])!r}, not a whole number; expected integer or string ids")
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iuUS":
        raise TypeError(f"{name} must hold integer or string ids, got dtype {arr.dtype}")
    uniq, inv = np.unique(arr, return_inverse=True)
    return uniq, inv.astype(np.int64)


# ----------------------------------------------------------------------------- text

def _norm_encoding(encoding: Any) -> str:
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"encoding {encoding!r} is not a known text encoding; expected e.g. 'utf-8' or "
                         f"'latin-1'") from None
    if not getattr(info, "_is_text_encoding", True):
        # 'hex', 'base64', 'zlib', 'rot13': bytes-to-bytes or str-to-str codecs (LookupError
        # "is not a text encoding" from bytes.decode)
        raise ValueError(f"encoding {encoding!r} is a {info.name} codec, not a text encoding; expected "
                         "the encoding of the file's text, e.g. 'utf-8' or 'latin-1'")
    name = info.name
    return "utf-8-sig" if name in ("utf-8", "utf-8-sig") else name


def _decode_error(path: str, data: bytes, encoding: str, exc: UnicodeDecodeError) -> ValueError:
    line = data[:exc.start].count(b"\n") + 1
    return ValueError(
        f"{path}: cannot decode byte {data[exc.start:exc.start + 1]!r} at offset {exc.start} (line {line}) "
        f"as {encoding.replace('-sig', '')}; pass the file's encoding, e.g. read_csv(path, encoding='latin-1')")


def _clean(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _codec_error(path: str, encoding: str, exc: UnicodeError) -> ValueError:
    """A decoder that fails otherwise than on a byte ('undefined', 'idna' on a long label)."""
    return ValueError(f"{path}: cannot decode the file as {encoding.replace('-sig', '')} ({exc}); pass "
                      "the file's text encoding, e.g. read_csv(path, encoding='latin-1')")


def read_text(path: str, encoding: str, data: bytes | None = None) -> tuple[bytes, str]:
    """(bytes, text with universal newlines and no BOM), or a ValueError naming file and encoding."""
    if data is None:
        data = read_file(path)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _decode_error(path, data, encoding, exc) from None
    except UnicodeError as exc:
        raise _codec_error(path, encoding, exc) from None
    return data, _clean(text)


#: A text file's bytes are read whole, then decoded and split into lines and tokens: at most
#: about this many times its size in all (measured on 20-30 MB files of short lines: 10 to 13
#: times with pandas, 13 to 24 with the reference reader).
TEXT_FACTOR = 24


def read_file(path: str, name: str = "path") -> bytes:
    """The bytes of a text file the readers parse: a regular file (a FIFO, a device such as
    /dev/zero or a directory is refused) whose parsing fits in memory (TEXT_FACTOR times its
    size; :func:`fastpu._core.files.check_file_memory`)."""
    return read_regular(path, name=name, factor=TEXT_FACTOR)


def _head_lines(path: str, data: bytes, encoding: str, size: int = 1 << 16) -> list[str]:
    """The complete lines among the first ``size`` bytes (all lines of a small file)."""
    if len(data) <= size:
        return read_text(path, encoding, data)[1].split("\n")
    dec = codecs.getincrementaldecoder(encoding)()
    try:
        text = _clean(dec.decode(data[:size], final=False))
    except UnicodeDecodeError as exc:
        raise _decode_error(path, data, encoding, exc) from None
    except UnicodeError as exc:
        raise _codec_error(path, encoding, exc) from None
    lines = text.split("\n")[:-1]          # the last one may be cut
    return lines if lines else read_text(path, encoding, data)[1].split("\n")


def _encoded(text: str, encoding: str) -> bytes | None:
    """``text`` in ``encoding`` (unencodable characters replaced), None when the codec cannot
    encode with replacement (idna, punycode)."""
    try:             # utf-8-sig would put a byte-order mark first: the text's own bytes are utf-8's
        return text.encode("utf-8" if encoding == "utf-8-sig" else encoding, errors="replace")
    except UnicodeError:
        return None


def _sniff(line: str) -> str | None:
    return next((d for d in _DELIMS if d in line), None)


def _split(line: str, delim: str | None) -> list[str]:
    if delim is None:
        return line.split()
    if '"' not in line:                 # no quoting: the csv module would split exactly here
        return [c.strip() for c in line.split(delim)]
    return [c.strip() for c in next(csv.reader([line], delimiter=delim, skipinitialspace=True))]


def _check_quotes(path: str, data: bytes, encoding: str, delim: str) -> None:
    """Refuse a quoted field that is not closed on its own line.

    Both parsers read one pair per line, so a quoted id with a line break in it was cut in
    two: one parser dropped the record, the other made an id of its tail. A quote that the
    csv module rejects (strict) on a line with an odd number of quotes is such a field; a
    literal quote inside an id (``O"Brien``) parses and passes. Only the lines with an odd
    number of quotes are parsed (found on the bytes, for an ASCII-compatible encoding).
    """
    candidates = None
    if _encoded('"\n', encoding) == b'"\n' and b"\r" not in data:
        b = np.frombuffer(data, dtype=np.uint8)
        quote_line = np.searchsorted(np.flatnonzero(b == ord("\n")), np.flatnonzero(b == ord('"')))
        candidates = np.flatnonzero(np.bincount(quote_line) % 2)      # 0-based line numbers
        if candidates.size == 0:
            return                      # every line's quotes pair up: nothing to decode and parse
    lines = read_text(path, encoding, data)[1].split("\n")
    for i in (range(len(lines)) if candidates is None else candidates):
        n, ln = int(i) + 1, lines[i]
        if '"' not in ln:
            continue
        try:
            next(csv.reader([ln], delimiter=delim, skipinitialspace=True, strict=True))
        except csv.Error:
            if ln.count('"') % 2:
                raise ValueError(
                    f"{path}: line {n}: a quoted field is not closed on its line "
                    f"({ln.strip()[:60]!r}); fastpu reads one user,item[,value] per line, so an id "
                    "cannot contain a line break") from None


def _first_lines(lines: list[str], k: int = 2) -> list[tuple[int, str]]:
    out = []
    for n, ln in enumerate(lines, 1):
        if ln.strip():
            out.append((n, ln))
            if len(out) == k:
                break
    return out


#: a header's names of the user column, of the item column, and of a time column
USER_WORDS = frozenset({"user", "users", "user_id", "userid", "uid", "customer", "customer_id",
                        "session"})
ITEM_WORDS = frozenset({"item", "items", "item_id", "itemid", "iid", "movie", "movie_id",
                        "movieid", "product", "product_id", "label", "labels", "tag"})
TIME_WORDS = frozenset({"timestamp", "time", "date", "datetime", "ts"})

#: First-line fields that name columns: a first line whose first two fields are among these is a
#: header, even over two columns of text ids.
HEADER_WORDS = USER_WORDS | ITEM_WORDS | frozenset({
    "rating", "ratings", "value", "score", "weight", "count", "timestamp", "time"})


def _fields(line: str, delimiter: str | None) -> list[str]:
    """``line`` split by ``delimiter``, or by its own sniffed delimiter when that is None (so a
    tab-separated header over comma-separated data splits right)."""
    own = delimiter if delimiter is not None else _sniff(line)
    return _split(line, None if own == " " else own)


def layout(path: str, lines: list[str], delimiter: str | None,
           header: bool | None) -> tuple[str | None, bool]:
    """(delimiter, header) after sniffing and header detection (see read_csv's docstring); a
    header that contradicts the reader's column order is refused, one that names a time
    column as the third (the values) warned about."""
    delim, has_header = _layout(path, lines, delimiter, header)
    if has_header:
        n, line = _first_lines(lines, 1)[0]
        names = [c.strip().lower() for c in _fields(line, delimiter)]
        if len(names) >= 2 and names[0] in ITEM_WORDS and names[1] in USER_WORDS:
            raise ValueError(
                f"{path}: the header (line {n}: {_shown(line.strip())}) names the item column "
                f"first, but the first column is read as the users and the second as the items; "
                "write the columns as user,item, or pass the table to "
                "fastpu.datasets.from_pairs(pandas.read_csv(path)), which finds the columns by "
                "their names")
        if len(names) >= 3 and names[2] in TIME_WORDS:
            warnings.warn(
                f"{path}: the third column is named {names[2]!r}, and a third column is read as "
                "each pair's value (its weight); if it holds times, drop the column, or pass the "
                "table to fastpu.datasets.from_pairs(pandas.read_csv(path)), which takes a value "
                "column only by a value's name (rating, weight, count, ...)",
                UserWarning, stacklevel=4)
    return delim, has_header


def _layout(path: str, lines: list[str], delimiter: str | None,
            header: bool | None) -> tuple[str | None, bool]:
    """:func:`layout` before its check of the header's names."""
    sample = _first_lines(lines, 6)
    if not sample:
        raise ValueError(f"{path} is empty; expected user,item[,value] lines")
    first = sample[:2]
    delim = delimiter
    if delim is None:
        lines_in_order = sample[1:] + sample[:1]
        found = [_sniff(ln) for _, ln in lines_in_order]
        delim = next((d for d in found if d is not None), None)
        if delim == ",":
            n, ln = lines_in_order[found.index(",")]
            if ";" in ln and '"' not in ln:
                raise ValueError(
                    f"{path}: line {n} ({_shown(ln.strip())}) has both ',' and ';', so the field "
                    "separator is ambiguous (';' with decimal commas?); pass delimiter=',' or "
                    "delimiter=';'")
    if delim == " ":
        delim = None
    head = _fields(first[0][1], delimiter)
    names_columns = len(head) >= 2 and all(c.strip().lower() in HEADER_WORDS for c in head[:2])
    if header is not None:
        if not header and names_columns:
            warnings.warn(f"{path}: header=False reads line {first[0][0]} "
                          f"({_shown(first[0][1].strip())}) as data, but it names columns: "
                          f"{head[0]!r} becomes a user and {head[1]!r} an item; pass header=True "
                          "(--header) or header=None to detect it", UserWarning, stacklevel=5)
        return delim, bool(header)
    if any(_is_number(c) for c in head) or (len(head) >= 3 and _is_float(head[2])):
        return delim, False             # a number (even nan or inf) in line 1: data, never dropped
    if names_columns:
        return delim, True              # user,item / userId,movieId / ...: column names
    if len(first) == 1:
        if len(head) >= 3:
            return delim, True          # a text value column cannot be data
        raise ValueError(f"{path}: cannot tell whether line {first[0][0]} ({_shown(first[0][1].strip())}) is a header "
                         f"or a pair of string ids; pass header=True or header=False (--header / --no-header on the command line)")
    second = _split(first[1][1], delim)
    if len(second) >= 3:
        return delim, _is_number(second[2])
    if len(second) == 2 and not any(_is_number(c) for c in second):
        raise ValueError(
            f"{path}: cannot tell whether line {first[0][0]} ({_shown(first[0][1].strip())}) is a header: the file has "
            f"two columns of text ids; pass header=True or header=False (--header / --no-header on the command line)")
    return delim, True


def _shown(text: str, limit: int = 60) -> str:
    """``repr`` of a token or line for a message, cut to ``limit`` characters (a 100,000-
    character field was quoted in full)."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _bad_value(path: str, n: int, tok: str) -> ValueError | None:
    try:
        v = float(tok)
    except ValueError:
        return ValueError(f"{path}: line {n}: value {_shown(tok)} in the third column is not a number; "
                          f"expected user,item[,value] with a numeric value")
    if not np.isfinite(v):
        return ValueError(f"{path}: line {n}: value {_shown(tok)} in the third column is not finite")
    return None


def parse_python(path: str, lines: list[str], delim: str | None,
                 header: bool) -> tuple[list[str], list[str], np.ndarray | None]:
    """Reference tokenizer: (user tokens, item tokens, values or None)."""
    users, items, vals = [], [], []
    width, width_line, skip = None, None, header
    for n, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        if skip:
            skip = False
            continue
        f = _split(ln, delim)
        if width is None:
            if len(f) < 2:
                raise ValueError(f"{path}: line {n} has {len(f)} field under the {_DELIM_NAMES[delim]} delimiter; "
                                 f"expected user,item[,value]")
            width, width_line = min(len(f), 3), n
        if len(f) < width or (width == 2 and len(f) > 2):
            raise ValueError(
                f"{path}: line {n} has {len(f)} field{'s' * (len(f) != 1)} but line {width_line} has "
                f"{width if width == 2 else 'at least 3'}; every line must be user,item"
                f"{',value' if width == 3 else ''}{' (a missing value is not read as 1)' if width == 3 else ''}")
        for col, what in ((0, "user"), (1, "item")):
            if not f[col]:
                raise ValueError(f"{path}: line {n}: empty {what} id")
        users.append(f[0])
        items.append(f[1])
        if width == 3:
            vals.append(f[2])
    if width is None:
        raise ValueError(f"{path} has a header but no data lines")
    values = None
    if width == 3:
        try:
            values = np.array(vals, dtype=object).astype(np.float64) if vals else np.zeros(0)
        except ValueError:
            values = None
        if values is None or not np.all(np.isfinite(values)):
            data_lines = [n for n, ln in enumerate(lines, 1) if ln.strip()][1 if header else 0:]
            for n, tok in zip(data_lines, vals):
                err = _bad_value(path, n, tok)
                if err is not None:
                    if not header and n == data_lines[0] and not _is_float(tok):
                        raise ValueError(f"{err}; line {n} looks like a header: pass header=True (or "
                                         "header=None to detect it)")
                    raise err
    return users, items, values


def _tokens_python(path: str, lines: list[str], delim: str | None, header: bool) -> Any:
    users, items, values = parse_python(path, lines, delim, header)
    out = []
    for toks in (users, items):
        index: dict[Any, int] = {}
        codes = np.fromiter((index.setdefault(t, len(index)) for t in toks), dtype=np.int64, count=len(toks))
        out.append(ids_from_tokens(codes, list(index)))
    return out[0], out[1], values


def _leading_zero_or_sign(data: bytes) -> bool:
    """True if an ASCII byte buffer has a '+', a '-0' or a number starting with 0 then a digit
    (a conservative test: when False, every integer in the file is written canonically)."""
    if b"+" in data or b"-0" in data:
        return True
    b = np.frombuffer(data, dtype=np.uint8)
    idx = np.flatnonzero(b[:-1] == ord("0"))
    nxt, prv = b[idx + 1], b[np.maximum(idx - 1, 0)]
    starts = (idx == 0) | (((prv < ord("0")) | (prv > ord("9"))) & (prv != ord(".")))
    return bool(((nxt >= ord("0")) & (nxt <= ord("9")) & starts).any())


def parse_pandas(pd: Any, path: str, data: bytes, text_lines: list[str], delim: str | None,
                 header: bool, encoding: str) -> Any:
    """Fast tokenizer; raises _Anomaly for anything the reference reader should diagnose."""
    first = _first_lines(text_lines, 2 if header else 1)
    if len(first) < (2 if header else 1):
        raise _Anomaly
    data_line = first[-1][1]
    width = min(len(_split(data_line, delim)), 3)
    if width < 2:
        raise _Anomaly
    skip = first[0][0] if header else 0
    ascii_like = _encoded("0+-.,;\t\n\r ", encoding) == b"0+-.,;\t\n\r "
    body = data[3:] if data.startswith(codecs.BOM_UTF8) else data
    if delim is None and (not ascii_like or _OTHER_SPACE.search(body)):
        # between fields pandas' whitespace is ' ' and '\t', Python's str.split() every Unicode
        # space (a no-break space inside an id split it on one parser only): anything beyond
        # printable ASCII, tab and newlines takes the reference reader
        raise _Anomaly
    fast_ints = ascii_like and not _leading_zero_or_sign(data)
    # two columns: no usecols, so that a line with a third field is an error (as in the reference)
    kw = dict(header=None, skiprows=skip, usecols=[0, 1, 2] if width == 3 else None, na_filter=False,
              engine="c", encoding=encoding, skip_blank_lines=True)
    if int(pd.__version__.split(".")[0]) < 3:
        kw["float_precision"] = "round_trip"       # pandas 3's default parser is already exact
    if delim is None:
        kw.update(sep=r"\s+", quoting=csv.QUOTE_NONE)
    else:
        kw.update(sep=delim, skipinitialspace=True)
    for ints in ((True, False) if fast_ints else (False,)):
        dtype: dict[int, Any] = {2: np.float64} if width == 3 else {}
        if not ints:
            dtype.update({0: object, 1: object})
        try:
            df = pd.read_csv(io.BytesIO(data), dtype=dtype, **kw)
        except Exception:
            raise _Anomaly from None
        if len(df.columns) != width:
            raise _Anomaly
        if not ints or all(df[c].dtype in (np.int64, object) for c in (0, 1)):
            break
    out = []
    for col in (0, 1):
        s = df[col].to_numpy()
        if s.dtype == np.int64:
            ids, codes = np.unique(s, return_inverse=True)
            out.append((ids, codes.astype(np.int64)))
            continue
        codes, uniq = pd.factorize(s.astype(object), sort=False)
        if any(not str(t).strip() or "\n" in str(t) or "\r" in str(t) for t in uniq):
            raise _Anomaly          # an empty id, or a quoted line break (one pair per line)
        out.append(ids_from_tokens(codes.astype(np.int64), list(uniq)))
    values = None
    if width == 3:
        # pandas reads TRUE/false as 1/0 even into a float column; the reference reader calls
        # them what they are (not a number). Any such word (an id too) takes the reference path.
        if re.search(rb"true|false", data, flags=re.IGNORECASE):
            raise _Anomaly
        values = np.ascontiguousarray(df[2].to_numpy(dtype=np.float64))
        if not np.all(np.isfinite(values)):
            raise _Anomaly
    return out[0], out[1], values


def tokenize(path: Any, delimiter: str | None, header: bool | None, encoding: Any,
             engine: str | None = None) -> Any:
    """((user_ids, u), (item_ids, i), values or None) of a pairs file. ``engine`` (tests only):
    None = pandas when installed, "python" = reference reader, "pandas" = require pandas."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist")
    enc = _norm_encoding(encoding)
    data = read_file(path)
    head = _head_lines(path, data, enc)          # enough for the layout and the pandas pass
    delim, header = layout(path, head, delimiter, header)
    if delim is not None and b'"' in data:
        _check_quotes(path, data, enc, delim)
    pd = None if engine == "python" else _import_pandas()
    if engine == "pandas" and pd is None:
        raise ImportError("pandas is not installed")
    if pd is not None:
        try:
            return parse_pandas(pd, path, data, head, delim, header, enc)
        except _Anomaly:
            pass
    return _tokens_python(path, read_text(path, enc, data)[1].split("\n"), delim, header)
