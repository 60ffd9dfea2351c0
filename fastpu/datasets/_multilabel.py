"""Readers for multi-label files users download themselves: Mulan (ARFF + XML) and the extreme
classification repository's sparse text format. Both return (features, Y, names)."""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET

from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.files import read_regular
from fastpu._core.memory import check_alloc

_NUMERIC = ("numeric", "real", "integer")


def _err(path: Any, n: int, msg: str) -> ValueError:
    return ValueError(f"{path}: line {n}: {msg}")


# ----------------------------------------------------------------------------- Mulan

def read_label_xml(path: Any) -> list[str]:
    """Label names of a Mulan XML file, in document order (nested labels included)."""
    try:
        root = ET.parse(io.BytesIO(read_regular(path, name="path_xml", factor=16))).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{path}: not well-formed XML ({exc}); expected a Mulan labels file") from None
    names = []
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == "label":
            name = el.get("name")
            if not name:
                raise ValueError(f"{path}: a <label> element has no name attribute")
            names.append(name)
    if not names:
        raise ValueError(f"{path}: no <label name=...> elements; expected a Mulan labels file")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"{path}: label {dup!r} is listed twice")
    return names


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


_ATTR = re.compile(r"""@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s{]+)\s*(.*)\Z""", re.I)


def _parse_attribute(path: Any, n: int, line: str) -> tuple[str, str, Any]:
    m = _ATTR.match(line.strip())
    if not m:
        raise _err(path, n, f"cannot read the attribute declaration {line.strip()!r}")
    name, typ = _unquote(m.group(1)), m.group(2).strip()
    if typ.startswith("{"):
        if not typ.endswith("}"):
            raise _err(path, n, f"nominal attribute {name!r} has no closing brace")
        cats = [_unquote(c) for c in typ[1:-1].split(",")]
        return name, "nominal", cats
    if typ.lower() in _NUMERIC:
        return name, "numeric", None
    raise _err(path, n, f"attribute {name!r} has type {typ!r}; only numeric and nominal attributes are supported")


def _value(path: Any, n: int, attr: tuple[str, str, Any], tok: str) -> float:
    """Float value of one ARFF token for attribute (name, kind, cats)."""
    name, kind, cats = attr
    tok = _unquote(tok)
    if tok == "?":
        raise _err(path, n, f"missing value '?' for attribute {name!r}; missing values are not supported")
    if kind == "nominal" and tok not in cats:
        raise _err(path, n, f"value {tok!r} of nominal attribute {name!r} is not one of {cats}")
    try:
        v = float(tok)
    except ValueError:
        raise _err(path, n, f"value {tok!r} of attribute {name!r} is not a number "
                   f"(nominal attributes must have numeric categories such as {{0,1}})") from None
    if not math.isfinite(v):
        raise _err(path, n, f"value {tok!r} of attribute {name!r} is not finite")
    return v


def read_mulan(path_arff: Any,
               path_xml: Any) -> tuple[Any, Any, list[str], list[str], str | None]:
    """(features dense or CSR, Y CSR, feature names, label names, relation) of a Mulan data set."""
    labels = read_label_xml(path_xml)
    attrs, rel = [], None
    raw = read_regular(path_arff, name="path_arff", factor=24)
    try:
        lines = raw.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path_arff}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    k, data_at = 0, None
    for k, ln in enumerate(lines, 1):
        s = ln.strip()
        if not s or s.startswith("%"):
            continue
        low = s.lower()
        if low.startswith("@relation"):
            rel = _unquote(s[len("@relation"):])
        elif low.startswith("@attribute"):
            attrs.append(_parse_attribute(path_arff, k, s))
        elif low.startswith("@data"):
            data_at = k
            break
        else:
            raise _err(path_arff, k, f"unexpected {s[:40]!r} before @data; expected @relation, @attribute or @data")
    if data_at is None:
        raise ValueError(f"{path_arff}: no @data section; expected an ARFF file")
    names = [a[0] for a in attrs]
    twice = next((nm for i, nm in enumerate(names) if nm in names[:i]), None)
    if twice is not None:
        raise ValueError(f"{path_arff}: attribute {twice!r} is declared twice; expected unique attribute names")
    missing = [lab for lab in labels if lab not in names]
    if missing:
        raise ValueError(f"{path_arff}: labels {missing[:5]} listed in {path_xml} are not attributes of the ARFF file")
    label_pos = {names.index(lab): j for j, lab in enumerate(labels)}
    feat_idx = [c for c in range(len(attrs)) if c not in label_pos]
    feat_pos = {c: j for j, c in enumerate(feat_idx)}
    for c in label_pos:
        kind, cats = attrs[c][1], attrs[c][2]
        if kind == "nominal" and not set(cats) <= {"0", "1"}:
            raise ValueError(f"{path_arff}: label {attrs[c][0]!r} has categories {cats}; expected {{0,1}}")
    # a value left out of a sparse row is the first category of a nominal attribute (ARFF's
    # rule), which is read here as 0: refused at the first sparse row where it is not "0"
    # (labels included: {1,0} would make every omitted label a 1); dense rows are unaffected
    not_zero = [a[0] for a in attrs if a[1] == "nominal" and _value(path_arff, data_at, a, a[2][0]) != 0.0]
    n_attr = len(attrs)
    frows, fcols, fvals, lrows, lcols = [], [], [], [], []
    sparse_rows = dense_rows = 0
    r = 0
    for k in range(data_at + 1, len(lines) + 1):
        s = lines[k - 1].strip()
        if not s or s.startswith("%"):
            continue
        if s.startswith("{"):
            if not s.endswith("}"):
                raise _err(path_arff, k, "sparse row has no closing brace")
            sparse_rows += 1
            if not_zero:
                raise _err(path_arff, k, f"sparse row, but nominal attribute {not_zero[0]!r} has a first "
                           "category other than 0, which every value a sparse row leaves out would "
                           "take; write the rows dense or declare the categories starting with 0")
            body = s[1:-1].strip()
            pairs = [p.strip().split(None, 1) for p in body.split(",")] if body else []
            seen = set()
            entries = []
            for p in pairs:
                if len(p) != 2 or not p[0].isdigit() or int(p[0]) >= n_attr:
                    raise _err(path_arff, k, f"sparse entry {' '.join(p)!r} is not 'index value' with index < {n_attr}")
                c = int(p[0])
                if c in seen:
                    raise _err(path_arff, k, f"attribute index {c} appears twice")
                seen.add(c)
                entries.append((c, p[1]))
        else:
            dense_rows += 1
            toks = s.split(",")
            if len(toks) != n_attr:
                raise _err(path_arff, k, f"{len(toks)} values, expected {n_attr} (one per attribute)")
            entries = list(enumerate(toks))
        for c, tok in entries:              # one placement rule for sparse and dense rows
            v = _value(path_arff, k, attrs[c], tok)
            if c in label_pos:
                if v not in (0.0, 1.0):
                    raise _err(path_arff, k, f"label {attrs[c][0]!r} has value {tok.strip()!r}; expected 0 or 1")
                if v:
                    lrows.append(r)
                    lcols.append(label_pos[c])
            elif v != 0.0:
                frows.append(r)
                fcols.append(feat_pos[c])
                fvals.append(v)
        r += 1
    if r == 0:
        raise ValueError(f"{path_arff}: the @data section has no rows")
    X = sp.csr_array((np.asarray(fvals, dtype=np.float64), (np.asarray(frows, dtype=np.int64),
                      np.asarray(fcols, dtype=np.int64))), shape=(r, len(feat_idx)))
    if sparse_rows == 0:
        X = X.toarray()
    Y = sp.csr_array((np.ones(len(lrows)), (np.asarray(lrows, dtype=np.int64), np.asarray(lcols, dtype=np.int64))),
                     shape=(r, len(labels)))
    return X, Y, [names[c] for c in feat_idx], labels, rel


# ----------------------------------------------------------------------------- extreme classification

def read_xc_file(path: Any) -> tuple[Any, Any]:
    """(features CSR, Y CSR) of a file in the extreme classification repository's format."""
    raw = read_regular(path, name="path", factor=24)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()                     # the final newline; an empty line before it is a point
    if not lines or not lines[0].strip():
        raise ValueError(f"{path} is empty; expected a header line 'n_points n_features n_labels'")
    head = lines[0].split()
    if len(head) != 3 or not all(V.ascii_int(h) is not None for h in head):
        raise _err(path, 1, f"header {lines[0].strip()!r} is not three non-negative integers "
                   f"'n_points n_features n_labels'")
    n, d, L = (int(h) for h in head)
    if max(n, d, L) > V.INT_MAX:
        raise _err(path, 1, f"header {lines[0].strip()!r} has a count above 2**62; expected "
                   "'n_points n_features n_labels' of a file that exists")
    # the ids (n + L int64) and the two CSR row pointers are sized by the header's counts alone:
    # refuse counts that cannot fit before numpy tries (1 3 100000000000 would ask for 745 GiB)
    check_alloc(8 * (L + 3 * (n + 1)), what=(f"{path}: line 1: the header {lines[0].strip()!r} "
                                              f"(n_points n_features n_labels) announces {n:,} points and "
                                              f"{L:,} labels; holding their ids"),
                names=("the header's counts",))
    body = lines[1:]
    if len(body) != n:
        raise ValueError(f"{path}: the header announces {n} points but the file has {len(body)} data lines")
    lr, lc, fr, fc, fv = [], [], [], [], []
    for r, ln in enumerate(body):
        k = r + 2
        toks = ln.split()
        start = 0
        if toks and ":" not in toks[0]:
            start = 1
            labs = []
            for t in toks[0].split(","):
                j = V.ascii_int(t)
                if j is None or j >= L:
                    raise _err(path, k, f"label {t!r} is not an integer in [0, {L})")
                labs.append(j)
            if len(set(labs)) != len(labs):            # as numbers: '01' is label 1
                raise _err(path, k, f"a label appears twice in {toks[0]!r}")
            for j in labs:
                lr.append(r)
                lc.append(j)
        seen = set()
        for t in toks[start:]:
            raw_i, sep, val = t.partition(":")
            fi = V.ascii_int(raw_i)
            if not sep or fi is None or fi >= d:
                raise _err(path, k, f"feature {t!r} is not 'index:value' with an integer index in [0, {d})")
            try:
                v = float(val)
            except ValueError:
                raise _err(path, k, f"feature {t!r} has a non-numeric value") from None
            if not math.isfinite(v):
                raise _err(path, k, f"feature {t!r} has a non-finite value")
            if fi in seen:
                raise _err(path, k, f"feature index {fi} appears twice")
            seen.add(fi)
            fr.append(r)
            fc.append(fi)
            fv.append(v)
    X = sp.csr_array((np.asarray(fv, dtype=np.float64), (np.asarray(fr, dtype=np.int64), np.asarray(fc, dtype=np.int64))),
                     shape=(n, d))
    Y = sp.csr_array((np.ones(len(lr)), (np.asarray(lr, dtype=np.int64), np.asarray(lc, dtype=np.int64))), shape=(n, L))
    return X, Y
