"""The documentation's examples run as written (with fewer iterations where they are long), and
give what they say: each has a check of its result (``CHECKS``: the claims of its comments, the
shapes and ranges of what it computes, that seen items are left out where it says so).

Every ```python block of docs/*.md that begins with an import is listed here: a complete example
a user may paste is run (after a few lines that make the data it assumes, where it assumes
some), so that a renamed argument or a changed return value breaks a test, not the user's first
try; a signature listing is named as such. Blocks that do not begin with an import are
signatures or fragments and are not run. Iteration counts, trial budgets and split counts are lowered by
rewriting the literal in the call ("the same calls, fewer iterations"), as the README's test does.
"""

import ast
import inspect
import pathlib
import re

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp

ROOT = pathlib.Path(__file__).resolve().parents[1]

# (page, block index) -> what runs before the block (names it uses but does not define), or
# None when the block stands alone
EXAMPLES = {
    ("csrr.md", 0): None,
    ("distributed.md", 0): None,
    ("fbgd.md", 1): ("import numpy as np\n"
                     "_rng = np.random.default_rng(0)\n"
                     "n_users, n_tags, n_items = 30, 6, 40\n"
                     "user, tag, item = (_rng.integers(0, s, 400) for s in (n_users, n_tags, n_items))\n"
                     "user_te, tag_te, item_te = (_rng.integers(0, s, 50) for s in (n_users, n_tags, n_items))\n"),
    ("fbgd.md", 2): None,
    ("fold_in.md", 0): ("import fastpu as fp\n"
                        "_Y = fp.datasets.binarize(fp.datasets.load('ml-100k').Y)\n"
                        "Y_train, Y_new = _Y[:800], _Y[800:]\n"),
    ("fold_in.md", 1): None,
    ("homf.md", 1): None,
    ("ocmf.md", 0): None,
    ("ocmf.md", 1): None,
    ("ocmf.md", 2): None,
    ("partial_fit.md", 0): None,
    ("partial_fit.md", 1): None,
    ("select.md", 0): None,
    ("select.md", 2): None,
    ("serving.md", 4): None,
}
# complete examples tested elsewhere, with the data they need
TESTED_ELSEWHERE = {("serving.md", 0): "tests/model/test_serving.py::test_the_serving_page_example_runs",
                    ("getting_started.md", 0): "test_the_tutorial_runs_as_one_script (below)"}
# signatures: every argument with its default, names such as Y and k left to the reader
SIGNATURES = {("fbgd.md", 0), ("homf.md", 0)}
# complete examples that need a service this machine does not run
NOT_RUNNABLE = {
    ("distributed.md", 2): "reads s3://bucket/... (an example of a dataframe source)",
}

LOWER = [(r"\bn_iter=(\d+)", 2), (r"\bn_trials=(\d+)", 2), (r"\bbudget=(\d+)", 2),
         (r"\bsplits=(\d+)", 2)]


def _blocks(page):
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), flags=re.S)


def _lowered(code):
    for pattern, cap in LOWER:
        code = re.sub(pattern, lambda mt: mt.group(0).replace(mt.group(1), str(min(int(mt.group(1)), cap))),
                      code)
    return code


def test_every_complete_example_is_listed():
    found = {(p.name, i) for p in sorted((ROOT / "docs").glob("*.md"))
             for i, block in enumerate(_blocks(p.name)) if block.lstrip().startswith(("import", "from"))}
    listed = set(EXAMPLES) | set(TESTED_ELSEWHERE) | set(NOT_RUNNABLE) | SIGNATURES
    assert found == listed, f"unlisted: {sorted(found - listed)}; gone: {sorted(listed - found)}"


def test_lowering_keeps_the_calls_and_caps_the_counts():
    code = "f(Y, n_iter=100, budget=16, n_trials=12, splits=5, k=64)\ng(n_iter=1)"
    assert _lowered(code) == "f(Y, n_iter=2, budget=2, n_trials=2, splits=2, k=64)\ng(n_iter=1)"


def _unit(x):
    return 0.0 <= float(x) <= 1.0


def _seen(Y, row):
    return set(np.asarray(Y[[row]].indices).tolist())


def _csrr(ns, out):
    m, m1, Y_train = ns["m"], ns["m1"], ns["Y_train"]
    assert ns["items"].shape == (2, 10) and not set(ns["items"][0].tolist()) & _seen(Y_train, 0)
    assert m1.U.shape == (943, 1682) and 0.0 <= m1.U.min() and m1.U.max() <= 1.0     # "in [0, 1]"
    V = m1.V.tocoo()                                       # "stored entries ⊆ training positives"
    assert sp.issparse(m1.V) and m1.V.format == "csr"
    assert np.all(Y_train.toarray()[V.row, V.col] != 0)
    assert all(_unit(ns["cs"][key]) for key in ("recall", "specificity"))
    assert "'iter': 2" in out and "'precision@5'" in out and "'ndcg@15'" in out


def _distributed(ns, out):
    model, data = ns["model"], ns["data"]
    assert model.shape == data.Y.shape and model.user_factors.shape[1] == 64
    assert np.isfinite(model.user_factors).all() and "distributed" in model.params
    np.testing.assert_array_equal(model.item_ids, data.item_ids)


def _fbgd_tensor(ns, out):
    assert ns["model"].method == "fbgd" and _unit(ns["res"]["ndcg@10"])
    Yte, pairs = ns["Yte"], ns["te_pairs"]              # one row per test (user, tag) pair
    assert Yte.shape[1] == ns["n_items"] and pairs.shape == (Yte.shape[0], 2)


def _fbgd(ns, out):
    printed = out.split()
    assert len(printed) == 3 and all(_unit(v) for v in printed)
    assert ns["items"].shape == (1, 5) and not set(ns["items"][0].tolist()) & _seen(ns["Y_train"], 0)


def _implicit_compat(ns, out):
    ids, scores = ns["ids"], ns["scores"]                 # the batch: 4 users × N = 5
    assert ids.shape == scores.shape == (4, 5)
    assert np.all(np.diff(scores, axis=1) <= 0)           # best first
    liked = ns["user_items"][:4].toarray() != 0
    assert not any(liked[u, ids[u]].any() for u in range(4))     # liked items are left out
    assert ns["similar"][0] == 3 and ns["similar"].shape == (5,)   # "item 3 first"


def _fold_in(ns, out):
    new, Y_new = ns["new"], ns["Y_new"]
    assert new.shape == (Y_new.shape[0], Y_new.shape[1])
    assert ns["one"].shape[0] == 1
    items = ns["items"]                                    # the last: one user, 1-d
    assert items.shape == (10,) and not {50, 172, 181} & set(items.tolist())


def _fold_in_ids(ns, out):
    items = ns["items"][0]
    assert len(items) == 10 and not {50, 172, 181} & set(items.tolist())   # "seen items left out"
    assert set(items.tolist()) <= set(ns["data"].item_ids.tolist())        # item ids, not positions
    assert out.strip() == str(items[:5])


def _homf(ns, out):
    assert ns["model"].shape == (943, 1682) and ns["items"].shape == (2, 5)
    assert "'ndcg@10'" in out and "'precision@5'" in out


def _ocmf_user_weights(ns, out):
    n, p = ns["n"], ns["oriented"].params
    assert n.shape == (943,) and n.min() > 0        # every user keeps positives in training
    lines = [line.rsplit(" ", 1) for line in out.strip().splitlines()]
    assert [name for name, _ in lines[:2]] == ["uniform", "user-oriented"]
    assert all(_unit(value) for _, value in lines[:2])
    assert lines[2] == ["True"]
    assert p["negatives"] == "all" and p["nu"] == 1.0 and p["p"] == "user-oriented"


def _ocmf_graph(ns, out):
    assert ns["model"].params["lam_graph"] == 0.1 and "'precision@5'" in out


def _ocmf_features(ns, out):
    test = ns["test"]
    assert ns["scores"].shape == (int(test.sum()), 14)
    label, value = out.split()
    assert label == "P@3:" and _unit(value)


def _partial_fit(ns, out):
    assert out.strip() == "(944, 1683)"                      # what the example's comment says
    model = ns["model"]
    assert model.item_ids[-1] == 5000 and 10_000 in model.user_ids.tolist()
    items = ns["items"]
    assert items.shape == (5,) and not {50, 172, 181} & set(items.tolist())


def _approximate(ns, out):
    model, items = ns["model"], ns["items"]
    exact, _ = fp.recommend(model, None, users=range(20), n=10)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(items[:20].tolist(), exact.tolist())])
    assert items.shape == (1000, 10) and overlap >= 0.5, overlap     # HNSW: approximate, but close
    assert ns["neighbours"].shape == (2, 5) and np.all(ns["cosines"] <= 1.0 + 1e-9)


def _select(ns, out):
    res, best = ns["res"], ns["best"]
    assert set(res.best_params) >= {"rho", "lam"} and res.best_params["k"] == 64
    assert len(res.trials) == 2 and res.model.shape == ns["Y_train"].shape
    assert best.model is not None and "ndcg@10" in out


def _select_rows(ns, out):
    res = ns["res"]
    labels = ["popularity", "ocmf", "ocmf, no intercept"]
    assert [r["label"] for r in res.rows] == labels * 2
    assert all(re.search(rf"^\| (\*\*)?{re.escape(label)}(\*\*)? \|", out, flags=re.M)
               for label in labels), out                                    # one table row each
    assert ns["new"].shape == (ns["data"].Y.shape[0] - 2000, 14)


#: what each example's result must be (its comments' claims, shapes, ranges), by (page, block)
CHECKS = {
    ("csrr.md", 0): _csrr, ("distributed.md", 0): _distributed, ("fbgd.md", 1): _fbgd_tensor,
    ("fbgd.md", 2): _fbgd, ("fold_in.md", 0): _fold_in, ("fold_in.md", 1): _fold_in_ids,
    ("homf.md", 1): _homf, ("ocmf.md", 0): _ocmf_user_weights,
    ("ocmf.md", 1): _ocmf_graph, ("ocmf.md", 2): _ocmf_features,
    ("partial_fit.md", 0): _partial_fit, ("partial_fit.md", 1): _approximate,
    ("select.md", 0): _select, ("select.md", 2): _select_rows,
    ("serving.md", 4): _implicit_compat,
}


def test_every_example_has_a_check():
    assert set(CHECKS) == set(EXAMPLES)


@pytest.mark.parametrize("page, index", sorted(EXAMPLES))
def test_the_example_runs_and_gives_what_it_says(page, index, tmp_path, monkeypatch, capsys):
    code = _lowered(_blocks(page)[index])
    setup = EXAMPLES[(page, index)] or ""
    monkeypatch.chdir(tmp_path)            # an example may write files (compare.png, models)
    namespace = {"__name__": "__main__"}
    exec(compile(setup + code, f"docs/{page}", "exec"), namespace)
    CHECKS[(page, index)](namespace, capsys.readouterr().out)


def test_the_fbgd_example_prints_what_its_comment_says(capsys):
    """docs/fbgd.md's quick start, unshortened: its comment gives the printed scores."""
    code = _blocks("fbgd.md")[2]
    claimed = re.search(r"^# ([\d. ]+?)\s+\(", code, flags=re.M).group(1).split()
    exec(compile(code, "docs/fbgd.md", "exec"), {})
    assert capsys.readouterr().out.split() == claimed


def _signature_calls(code):
    """(dotted name, {keyword: literal}) of each call with literal keywords in a block."""
    out = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call):
            parts, f = [], node.func
            while isinstance(f, ast.Attribute):
                parts.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                parts.append(f.id)
            kws = {}
            for kw in node.keywords:
                try:
                    kws[kw.arg] = ast.literal_eval(kw.value)
                except ValueError:
                    pass                       # a name (alpha0, lam): not a default to check
            out.append((".".join(reversed(parts)), kws))
    return out


@pytest.mark.parametrize("page, index", sorted(SIGNATURES))
def test_signature_listings_show_the_current_defaults(page, index):
    """docs/fbgd.md's and docs/homf.md's listings kept rho=0, lr=0.05, reg=0 (fbgd) and g="exp",
    lam=1e-3 (homf) after the defaults were re-chosen."""
    modules = {"fbgd": fp.fbgd, "fp.homf": fp.homf, "fp.fbgd": fp.fbgd, "homf": fp.homf}
    checked = 0
    for name, kws in _signature_calls(_blocks(page)[index]):
        owner, _, attr = name.rpartition(".")
        if owner not in modules or not kws:
            continue
        params = inspect.signature(getattr(modules[owner], attr)).parameters
        for key, shown in kws.items():
            assert key in params, f"{page}: {name}() has no parameter {key!r}"
            assert shown == params[key].default, f"{page}: {name}({key}={shown!r}), default {params[key].default!r}"
            checked += 1
    assert checked >= 10


def test_the_tutorial_runs_as_one_script(tmp_path, monkeypatch, capsys):
    """docs/getting_started.md: its blocks are one script, from a CSV of one's own to folded-in
    users; run as written, with fewer iterations, trials and splits."""
    blocks = _blocks("getting_started.md")
    assert len(blocks) == 7 and blocks[0].lstrip().startswith("import fastpu")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    exec(compile(_lowered("\n".join(blocks)), "docs/getting_started.md", "exec"), namespace)
    out = capsys.readouterr().out
    data, train, tuned = namespace["data"], namespace["train"], namespace["tuned"]
    assert data.shape[0] == 300 and isinstance(data.user_ids[0], str)
    for name in ("ocmf", "ease", "wrmf"):                                   # the comparison table
        assert re.search(rf"^\| (\*\*)?{name}(\*\*)? \|", out, re.M), name
    assert "| **" in out                                                    # its best in bold
    u3 = int(np.flatnonzero(train.user_ids == "u3")[0])
    trained = set(train.item_ids[train.Y[[u3]].indices])
    assert namespace["items"].size and not set(namespace["items"].tolist()) & {"item1", "item4", "item9"}
    assert (namespace["newcomers"].user_ids == ["v1", "v2"]).all()
    first, _ = tuned.recommend(users="u3", n=5)
    assert first.size == 5 and not set(first.tolist()) & trained         # training items left out
    np.testing.assert_array_equal(namespace["served"].user_factors, tuned.user_factors)
    assert (tmp_path / "interactions.csv").exists() and (tmp_path / "model.npz").exists()
