"""Serving: recommend with ids and filters, non-finite scores, bounded memory; similar_*."""

import dataclasses
import os
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from strategies import csr_matrices

import fastpu as fp
from fastpu._core import factorization as model_mod
from fastpu.datasets import Dataset
from fastpu.model import Factorization, similar_items, similar_users

# ----------------------------------------------------------------------------- references

def ref_recommend(S, seen, users, n, cand, exclude):
    """Dense brute force: per user, candidates minus seen minus exclude by (-score, index)."""
    cand = set(range(S.shape[1])) if cand is None else {int(c) for c in cand}
    cand -= {int(e) for e in (exclude if exclude is not None else [])}
    width = min(n, len(cand))
    items = np.full((len(users), width), -1)
    scores = np.full((len(users), width), -np.inf)
    for r, u in enumerate(users):
        ok = sorted(cand - set(np.flatnonzero(seen[u])), key=lambda j: (-S[u, j], j))[:width]
        items[r, :len(ok)] = ok
        scores[r, :len(ok)] = S[u, ok]
    return items, scores


def ref_cosine(F):
    norms = np.linalg.norm(F, axis=1)
    safe = np.where(norms > 0, norms, 1.0)
    Fn = np.where(norms[:, None] > 0, F / safe[:, None], 0.0)
    return Fn @ Fn.T


def _ids_model(m=6, n=5, k=2, seed=0):
    rng = np.random.default_rng(seed)
    return Factorization(rng.normal(size=(m, k)), rng.normal(size=(n, k)), method="test",
                         user_ids=np.array([f"u{i}" for i in range(m)]),
                         item_ids=np.array([100 + j for j in range(n)]))


# ----------------------------------------------------------------------------- recommend

def test_numbers_on_a_model_with_integer_ids_warn_how_they_are_read():
    """users=1 on a model whose user ids are integers could mean row 1 or user 1: without
    ids= it is row 1, with a warning that names the argument and both ways to say which;
    ids=False and ids=True are silent, and text ids never warn."""
    import warnings

    rng = np.random.default_rng(0)
    model = Factorization(rng.normal(size=(6, 2)), rng.normal(size=(5, 2)), method="test",
                          user_ids=np.array([10, 11, 12, 13, 14, 15]),
                          item_ids=np.array([f"i{j}" for j in range(5)]))
    with pytest.warns(UserWarning, match=r"users=\[1\] is read as row numbers, not as user ids.*"
                                         r"starts \[10, 11, 12\]\); pass ids=True"):
        rows, _ = fp.recommend(model, None, users=[1], n=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(fp.recommend(model, None, users=[1], n=2, ids=False)[0], rows)
        by_id, _ = fp.recommend(model, None, users=[11], n=2, ids=True)
        assert np.array_equal(by_id, model.item_ids[rows])           # user 11 is row 1
        fp.recommend(model, None, users=[1], n=2, items=[0, 3], ids=False)  # text-id side too
        fp.similar_items(model, "i2", n=2)
        fp.similar_items(model, 2, n=2)                       # numbers on a text-id side
    with pytest.warns(UserWarning, match="users=3 is read as row numbers"):
        fp.recommend(model, None, users=3, n=2)
    with pytest.raises(ValueError, match="users must lie in"):       # an error, not a warning
        fp.recommend(model, None, users=[9], n=2)


@given(Y=csr_matrices(max_rows=7, max_cols=9), k=st.integers(1, 3), n=st.integers(1, 12),
       seed=st.integers(0, 2**31 - 1), filt=st.sampled_from(["none", "items", "exclude", "both"]))
def test_recommend_matches_the_dense_reference(Y, k, n, seed, filt):
    rng = np.random.default_rng(seed)
    m_, n_ = Y.shape
    # small integer factors: exact ties, so the tie rule (lower index first) is tested exactly
    model = Factorization(rng.integers(-2, 3, size=(m_, k)).astype(float),
                          rng.integers(-2, 3, size=(n_, k)).astype(float))
    cand = rng.choice(n_, size=rng.integers(0, n_ + 1), replace=False) if filt in ("items", "both") else None
    excl = rng.choice(n_, size=rng.integers(0, n_ + 1), replace=False) if filt in ("exclude", "both") else None
    users = rng.integers(0, m_, size=rng.integers(1, 2 * m_ + 1))
    items, scores = fp.recommend(model, Y, users=users, n=n, items=cand, exclude=excl)
    ri, rs = ref_recommend(model.scores(), Y.toarray() != 0, users, n, cand, excl)
    np.testing.assert_array_equal(items, ri)
    np.testing.assert_array_equal(scores, rs)
    assert not np.isnan(scores).any()


def test_recommend_by_id_has_the_shape_of_recommend_by_number():
    """Ids in, ids out, in the same 2-d shape as numbers: a slot beyond a user's real
    recommendations holds -1 (integer ids) with score -inf, never a real id."""
    model = _ids_model()
    seen = sp.csr_array(np.array([[1, 1, 1, 1, 0]] + [[0] * 5] * 5, dtype=float))
    items, scores = fp.recommend(model, seen, users=["u0", "u3"], n=3)      # strings: ids
    idx, sc = fp.recommend(model, seen, users=[0, 3], n=3)
    assert items.shape == scores.shape == idx.shape == (2, 3)
    assert idx[0].tolist() == [4, -1, -1] and items[0].tolist() == [104, -1, -1]
    assert np.isneginf(scores[0, 1:]).all() and np.isfinite(scores[0, 0])
    np.testing.assert_array_equal(items[1], model.item_ids[idx[1]])
    np.testing.assert_array_equal(scores, sc)
    same, _ = fp.recommend(model, seen, users=["u0", "u3"], n=3, ids=True)
    np.testing.assert_array_equal(same, items)
    one, one_sc = fp.recommend(model, seen, users="u0", n=3)                # one user: real ones
    assert one.tolist() == [104] and one_sc.shape == (1,)
    # candidates and exclusions by id
    items, _ = fp.recommend(model, None, users=["u1"], n=10, ids=True, items=[101, 103, 104], exclude=[103])
    assert sorted(items[0].tolist()) == [101, 104]
    # all users by id
    items, _ = fp.recommend(model, None, n=2, ids=True)
    assert items.shape == (6, 2) and items.dtype.kind == "i"
    # string ids pad with the empty string
    named = dataclasses.replace(model, item_ids=np.array(list("abcde")))
    items, scores = fp.recommend(named, seen, users=["u0", "u3"], n=3)
    assert items[0].tolist() == ["e", "", ""] and np.isneginf(scores[0, 1:]).all()


def test_recommend_matches_a_dataset_by_id():
    data = fp.datasets.from_pairs(["a", "a", "b", "c"], ["x", "y", "y", "z"])
    model = fp.ocmf.fit(data, 2, n_iter=1)
    items, scores = fp.recommend(model, data, users=["a", "b", "c"], n=5, ids=True)
    assert [sorted(r[np.isfinite(s)].tolist()) for r, s in zip(items, scores)] == [["z"], ["x", "z"], ["x", "y"]]
    # a data set over other (and fewer) ids: matched by id, unknown ids ignored
    other = fp.datasets.from_pairs(["c", "q"], ["x", "w"])
    items, _ = fp.recommend(model, other, users="c", n=5)
    assert items.tolist() == ["y"]                    # z: c's training positive; x: other's
    items, _ = fp.recommend(model, other, users="c", n=5, exclude_seen=False)
    assert sorted(items.tolist()) == ["y", "z"]
    with pytest.raises(ValueError, match=r"Y_seen.user_ids share no id with model.user_ids"):
        fp.recommend(model, fp.datasets.from_pairs(["p", "q"], ["x", "w"]), users="c")


def test_non_finite_scores_are_never_ranked():
    @dataclasses.dataclass(frozen=True)
    class Odd(Factorization):
        def scores(self, users=None):
            S = super().scores(users)
            S[:, 1] = np.nan
            S[:, 3] = np.inf
            S[:, 4] = -np.inf
            return S

    base = Factorization(np.ones((2, 1)), np.array([[5.0], [9.0], [1.0], [8.0], [7.0], [2.0]]))
    odd = Odd(base.user_factors, base.item_factors)
    with pytest.warns(RuntimeWarning, match="6 non-finite scores .* left out"):
        items, scores = fp.recommend(odd, None, n=6)
    assert items[0].tolist() == [0, 5, 2, -1, -1, -1]
    assert not np.isnan(scores).any() and np.isfinite(scores[:, :3]).all()


def test_a_csrr_model_with_non_finite_parts_is_an_error():
    Y = fp.datasets.synthetic(12, 10, rank=2, density=0.3, seed=0).Y
    model = fp.csrr.fit(Y, variant="I", n_iter=3)
    U = model.U.copy()
    U[2, 3] = np.nan
    bad = dataclasses.replace(model, U=U)
    with pytest.raises(ValueError, match=r"model.U \(of the requested users\) has 1 non-finite"):
        fp.recommend(bad, Y, users=[1, 2], n=3)
    fp.recommend(bad, Y, users=[0, 1], n=3)                  # other users' rows are fine
    V = model.V.copy()
    V.data[:1] = np.inf
    with pytest.raises(ValueError, match="model.V has 1 non-finite"):
        fp.recommend(dataclasses.replace(model, V=V), Y, n=3)


@pytest.mark.parametrize("where", ["user", "item"])
def test_a_model_with_non_finite_factors_is_an_error(where):
    U, Vf = np.ones((3, 2)), np.ones((4, 2))
    (U if where == "user" else Vf)[1, 0] = np.nan
    model = Factorization(U, Vf)
    with pytest.raises(ValueError, match=f"model.{where}_factors.* has 1 non-finite"):
        fp.recommend(model, None, n=2)
    if where == "user":
        fp.recommend(model, None, users=[0, 2], n=2)      # finite users are still served


def test_a_huge_n_allocates_only_the_items_there_are():
    model = Factorization(np.ones((50, 3)), np.arange(60.0).reshape(20, 3))
    fp.recommend(model, None, users=[0], n=2)             # compile (or load) the kernel first
    tracemalloc.start()
    try:
        items, scores = fp.recommend(model, None, n=10**9)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert items.shape == scores.shape == (50, 20) and peak < 2**20
    items, _ = fp.recommend(model, None, n=10**9, items=[3, 4])
    assert items.shape == (50, 2)
    items, _ = fp.recommend(model, None, n=5, items=[])
    assert items.shape == (50, 0)


def test_recommend_blocks_with_filters_do_not_change_the_answer(monkeypatch):
    model = _ids_model(40, 9)
    a = fp.recommend(model, None, n=4, items=[0, 2, 4, 6, 8], exclude=[2], ids=False)
    monkeypatch.setattr(model_mod, "_BLOCK_BYTES", 8 * 9 * 3)
    b = fp.recommend(model, None, n=4, items=[0, 2, 4, 6, 8], exclude=[2], ids=False)
    np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("kw, exc, msg", [
    (dict(model="m"), TypeError, r"model must be a fitted fastpu Factorization .*got str"),
    (dict(ids="yes"), TypeError, "ids must be True or False, got 'yes'"),
    (dict(items=[9]), ValueError, r"items must lie in \[0, 5\)"),
    (dict(items=[0.5]), TypeError, "items must be integer indices"),
    (dict(exclude=[[1]]), ValueError, "exclude must be a 1-d array"),
    (dict(exclude=[-1]), ValueError, r"exclude must lie in \[0, 5\)"),
    (dict(users=["u9"], ids=True), ValueError, r"users has 1 user id\(s\) the model does not know: \['u9'\]"),
    (dict(users=[0], ids=True), TypeError, "users must hold string ids like the model's user ids"),
    (dict(items=["x"], ids=True), TypeError, "items must hold integer ids"),
    (dict(exclude=[999], ids=True), ValueError, r"exclude has 1 item id\(s\) the model does not know"),
    (dict(Y_seen=sp.csr_array((6, 4))), ValueError, "Y_seen has shape 6×4, expected 6×5"),
    (dict(n=2.0), TypeError, "n must be an integer"),
])
def test_recommend_rejects_bad_input(kw, exc, msg):
    args = dict(model=_ids_model(), Y_seen=None, n=3)
    args.update(kw)
    with pytest.raises(exc, match=msg):
        fp.recommend(args.pop("model"), args.pop("Y_seen"), **args)


@pytest.mark.parametrize("count", [3, 40])                 # one scan per id / one sort
def test_id_lookup_by_scan_and_by_sort_agree(count):
    from fastpu.model._serving import lookup

    rng = np.random.default_rng(count)
    known = np.array([f"id{j}" for j in rng.permutation(60)], dtype=object)
    pos = rng.integers(0, 60, size=count)
    np.testing.assert_array_equal(lookup(known, known[pos], name="users", what="user"), pos)
    wanted = np.concatenate([known[pos], ["nope"]])
    with pytest.raises(ValueError, match=r"users has 1 user id\(s\) the model does not know: \['nope'\]"):
        lookup(known, wanted, name="users", what="user")
    got = lookup(known, wanted, name="Y_seen.user_ids", what="user", strict=False)
    assert got[-1] == -1 and np.array_equal(got[:-1], pos)
    dup = np.concatenate([known, known[:1]])
    with pytest.raises(ValueError, match="user ids are not unique"):
        lookup(dup, np.concatenate([known[pos], known[:1]]), name="users", what="user")


def test_ids_on_a_model_without_ids_is_a_clear_error():
    model = Factorization(np.ones((2, 1)), np.ones((3, 1)))
    with pytest.raises(ValueError, match="ids=True needs the model's ids, but model.user_ids and "
                                         "model.item_ids are both None .*fitted on a bare matrix"):
        fp.recommend(model, None, users=[0], ids=True)
    with pytest.raises(ValueError, match="model.item_ids are both None"):
        fp.recommend(model, None, ids=True)
    dup = dataclasses.replace(model, user_ids=np.array([1, 1]), item_ids=np.arange(3))
    with pytest.raises(ValueError, match="user ids are not unique"):
        fp.recommend(dup, None, users=[1], ids=True)


# ----------------------------------------------------------------------------- similar_*

@given(F=st.integers(2, 9).flatmap(lambda N: st.integers(1, 4).map(lambda k: (N, k))),
       seed=st.integers(0, 2**31 - 1), n=st.integers(1, 10), side=st.sampled_from(["item", "user"]),
       zero_row=st.booleans())
def test_similar_matches_dense_cosine(F, seed, n, side, zero_row):
    N, k = F
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, k))
    if zero_row:
        X[rng.integers(N)] = 0.0
    other = rng.normal(size=(3, k))
    model = Factorization(other, X) if side == "item" else Factorization(X, other)
    fn = similar_items if side == "item" else similar_users
    q = rng.integers(0, N, size=rng.integers(1, 2 * N))
    nb, sims = fn(model, q, n=n)
    C = ref_cosine(X)
    width, real = min(n, N), min(n, N - 1)        # each query leaves out itself: one slot fewer
    assert nb.shape == sims.shape == (q.size, width)
    for r, i in enumerate(q):
        ref = sorted((j for j in range(N) if j != i), key=lambda j: (-C[i, j], j))[:real]
        got, gs = nb[r, :real], sims[r, :real]
        assert i not in got and len(set(got)) == real
        assert (nb[r, real:] == -1).all() and np.isneginf(sims[r, real:]).all()
        np.testing.assert_allclose(gs, C[i, ref], rtol=1e-12, atol=1e-12)   # the top values
        np.testing.assert_allclose(gs, C[i, got], rtol=1e-12, atol=1e-12)   # of these items
        assert np.all(np.diff(gs) <= 1e-12)
    assert np.isfinite(sims[:, :real]).all() and np.all(np.abs(sims[:, :real]) <= 1.0)


def test_similar_exact_order_blocks_and_ids(monkeypatch):
    rng = np.random.default_rng(3)
    model = _ids_model(30, 25, k=4, seed=3)
    nb, sims = similar_items(model, [0, 7, 24], n=5, ids=False)
    C = ref_cosine(model.item_factors)
    for r, i in enumerate([0, 7, 24]):
        order = [j for j in np.argsort(-C[i], kind="stable") if j != i][:5]
        assert nb[r].tolist() == order
    ids, sims_id = similar_items(model, [100, 107, 124], n=5, ids=True)
    np.testing.assert_array_equal(ids, model.item_ids[nb])
    np.testing.assert_array_equal(sims_id, sims)
    monkeypatch.setattr(model_mod, "_BLOCK_BYTES", 8 * 25 * 2)      # blocks of 2 queries
    nb2, sims2 = similar_items(model, [0, 7, 24], n=5, ids=False)
    np.testing.assert_array_equal(nb, nb2)
    # a block of one query is a matrix-vector product, summed in another order than a
    # matrix-matrix one: the cosines may differ in the last bit, the order does not
    np.testing.assert_allclose(sims2, sims, rtol=1e-15, atol=0)
    users, _ = similar_users(model, ["u3"], n=2, ids=True)
    assert users.dtype.kind == "U" and "u3" not in users[0]
    alone, cos = similar_items(Factorization(np.ones((1, 2)), np.ones((1, 2))), [0])
    assert alone.tolist() == [[-1]] and np.isneginf(cos).all()     # no other item: padding
    assert similar_items(Factorization(np.ones((1, 2)), np.ones((1, 2))), 0)[0].shape == (0,)
    del rng


def test_similar_on_csrr_uses_the_low_rank_factors():
    Y = fp.datasets.synthetic(20, 15, rank=2, density=0.3, seed=0).Y
    model = fp.csrr.fit(Y, variant="I", n_iter=5)
    nb, sims = similar_items(model, [0, 1], n=3)
    C = ref_cosine(model.item_factors)
    for r, i in enumerate([0, 1]):
        np.testing.assert_allclose(sims[r], C[i, nb[r]], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [similar_items, similar_users])
@pytest.mark.parametrize("kw, exc, msg", [
    (dict(model=3), TypeError, r"model must be a fitted fastpu Factorization .*got int"),
    (dict(q=None), TypeError, "query must be the (item|user)s to find neighbours for, got None"),
    (dict(q=[99]), ValueError, r"query must lie in \[0, 5\)"),
    (dict(q=[1.5]), TypeError, "query must be integer indices"),
    (dict(n=0), ValueError, "n must be >= 1"),
    (dict(ids=1), TypeError, "ids must be True or False"),
    (dict(q=["zz"], ids=True), (TypeError, ValueError),
     r"query must hold integer ids|query has 1 user id\(s\) the model does not know: \['zz'\]"),
])
def test_similar_rejects_bad_input(fn, kw, exc, msg):
    args = dict(model=_ids_model(5, 5), q=[0], n=2, ids=False)
    args.update(kw)
    name = "items" if fn is similar_items else "users"
    with pytest.raises(exc, match=msg.replace("must", f"{name} must") if msg.startswith("must") else msg):
        fn(args["model"], args["q"], n=args["n"], ids=args["ids"])


def test_similar_rejects_non_finite_factors():
    model = Factorization(np.ones((3, 2)), np.array([[1.0, np.inf], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="model.item_factors has 1 non-finite"):
        similar_items(model, [0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        similar_users(model, [0])                           # the user side is finite


def test_the_serving_page_example_runs(tmp_path, capsys):
    """docs/serving.md's first example, as written, on a small ratings.csv with its ids."""
    import pathlib
    import re

    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "serving.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, flags=re.S)[0]
    rng = np.random.default_rng(0)
    users = ["alice", "bob"] + [f"user{i}" for i in range(20)]
    films = ["The Matrix"] + [f"film {j}" for j in range(14)]
    lines = sorted({f"{u},{f},1" for u in users for f in films if rng.random() < 0.3}
                   | {"alice,The Matrix,1", "bob,film 3,1"})
    (tmp_path / "ratings.csv").write_text("user,item,rating\n" + "\n".join(lines) + "\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)                    # the example reads ratings.csv and saves model.npz
    try:
        namespace = {}
        exec(compile(code, "docs/serving.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out.splitlines()
    assert [ln.split(" ", 1)[0] for ln in out] == ["alice", "bob"]
    # plain ids and scores, not numpy reprs: "film 3 (0.123), The Matrix (0.045), ..."
    assert "np." not in out[0] and re.match(r"alice (film \d+|The Matrix) \(-?\d\.\d{3}\)", out[0])
    assert "The Matrix" not in out[0]     # alice has seen it
    assert namespace["neighbours"].shape == (1, 5) and "The Matrix" not in namespace["neighbours"][0]


@pytest.mark.parametrize("make, exc, msg", [
    (lambda: Factorization(np.ones(6), np.ones(5)), ValueError, r"model.user_factors must be 2-d .* got shape \(6,\)"),
    (lambda: Factorization([[1.0]] * 6, [[1.0]] * 5), TypeError, "model.user_factors must be a 2-d numpy array .* got list"),
    (lambda: Factorization(np.ones((6, 2), dtype=object), np.ones((5, 2))), TypeError, "must hold real numbers, got dtype object"),
    (lambda: Factorization(np.ones((6, 2)) * 1j, np.ones((5, 2))), TypeError, "model.user_factors must be real, got complex"),
    (lambda: Factorization(np.ones((6, 2)), np.ones((5, 2)), item_ids=np.array(["a", "b"])), ValueError,
     r"model.item_ids has 2 ids, expected 5 \(one per row of model.item_factors\)"),
])
def test_a_hand_built_model_is_checked_by_every_consumer(make, exc, msg):
    """These gave numpy's matmul/einsum errors, an AttributeError, an IndexError from an id
    lookup, or (complex factors) all-zero scores with only a ComplexWarning."""
    Y = sp.csr_array(np.eye(6, 5))
    for call in (lambda m: fp.recommend(m, None, [0]), lambda m: fp.similar_items(m, [0]),
                 lambda m: fp.similar_users(m, [0]), lambda m: fp.evaluate(m, Y, sp.csr_array(np.roll(Y.toarray(), 1, 1)))):
        with pytest.raises(exc, match=msg):
            call(make())


def test_cosines_of_huge_or_tiny_factors_neither_overflow_nor_underflow():
    """The row norms of 1e200s overflowed (1e-200s underflowed), and every cosine came out 0."""
    for scale in (1e200, 1e-200, 1e-310):
        F = np.array([[1.0, 1.0], [1.0, -1.0], [2.0, 2.0], [0.0, 0.0]])
        F[:2] *= scale
        items, cos = fp.similar_items(Factorization(np.ones((1, 2)), F), [0], n=3)
        assert items[0, 0] == 2 and cos[0, 0] == pytest.approx(1.0)
        assert abs(cos[0, 1]) < 1e-15 and abs(cos[0, 2]) < 1e-15


def test_similar_on_a_side_with_no_rows():
    items, cos = fp.similar_items(Factorization(np.ones((2, 2)), np.ones((0, 2))), [])
    assert items.shape == cos.shape == (0, 0)


def test_a_dataset_with_ids_on_one_side_only_is_matched_by_id_there_and_by_position_elsewhere():
    """A Y_seen Dataset with user ids but no item ids raised "object of type 'NoneType' has no len()"."""
    model = Factorization(np.arange(6.0).reshape(3, 2), np.arange(8.0).reshape(4, 2),
                          user_ids=np.array(["a", "b", "c"]), item_ids=np.array(list("wxyz")))
    seen = Dataset(name="d", Y=sp.csr_array(np.eye(3, 4)), user_ids=np.array(["c", "b", "a"]))
    items, _ = fp.recommend(model, seen, users=[0, 2], n=3)
    # user "a" is the data set's row 2 (it saw column 2), user "c" its row 0 (column 0)
    np.testing.assert_array_equal(items, [[3, 1, 0], [3, 2, 1]])
    bare = Factorization(model.user_factors, model.item_factors)      # no ids: all by position
    items, _ = fp.recommend(bare, dataclasses.replace(seen, item_ids=np.array(list("wxyz"))), users=[0, 2], n=3)
    np.testing.assert_array_equal(items, [[3, 2, 1], [3, 1, 0]])
    with pytest.raises(ValueError, match="Y_seen.Y has 5 items, expected 4 .* matched by position"):
        fp.recommend(model, Dataset(name="d", Y=sp.csr_array(np.eye(3, 5)), user_ids=np.array(["c", "b", "a"])), users=[0])


def test_an_unsigned_id_past_int64_is_unknown_not_wrapped():
    """2**63 + 5 as int64 is -2**63 + 5: it was reported (and could be matched) as that."""
    wrapped = int(np.array([2**63 + 5], dtype=np.uint64).astype(np.int64)[0])
    model = Factorization(np.ones((3, 2)), np.ones((4, 2)), user_ids=np.array([5, wrapped, 9]),
                          item_ids=np.arange(4))
    with pytest.raises(ValueError, match=r"1 user id\(s\) the model does not know: \[9223372036854775813\]"):
        fp.recommend(model, None, users=np.array([2**63 + 5], dtype=np.uint64), ids=True)
    items, _ = fp.recommend(model, None, users=np.array([9], dtype=np.uint64), ids=True)
    assert len(items) == 1


def test_a_number_out_of_range_on_a_model_with_ids_points_to_ids_true():
    """ML-100K's ids start at 1: users=[943] without ids=True said only 'must lie in [0, 943)'."""
    model = Factorization(np.ones((3, 2)), np.ones((4, 2)), user_ids=np.array([1, 2, 3]),
                          item_ids=np.array([1, 2, 3, 4]))
    with pytest.raises(ValueError, match=r"users must lie in \[0, 3\), got values in \[3, 3\]; users are "
                                         r"row numbers unless ids=True, .* e.g. \[1, 2, 3\]\): pass ids=True"):
        fp.recommend(model, None, users=[3])
    with pytest.raises(TypeError, match=r"users must hold integer ids like the model's user ids "
                                        r"\(e.g. \[1, 2, 3\]\), got dtype <U1"):
        fp.recommend(model, None, users=["a"])                 # a string is an id, never a number
    with pytest.raises(ValueError, match=r"query is column numbers unless ids=True"):
        fp.similar_items(model, [4])
    assert fp.recommend(model, None, users=[3], ids=True)[0][0].tolist()      # the id works
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\), got values in \[3, 3\]$"):
        fp.recommend(Factorization(model.user_factors, model.item_factors), None, users=[3])


# ----------------------------------------------------------------------------- regressions

def test_a_flat_empty_list_is_one_users_seen_items():
    """`fp.recommend(model, [], users=0)` raised although a flat list is one user's items."""
    model = _ids_model()
    items, scores = fp.recommend(model, [], users=0, n=3)
    ref, ref_sc = fp.recommend(model, [[]], users=[0], n=3)
    np.testing.assert_array_equal(items, ref[0])
    np.testing.assert_array_equal(scores, ref_sc[0])
    assert items.shape == (3,)
    with pytest.raises(ValueError, match="Y_seen has 0 list"):
        fp.recommend(model, [], users=[0, 1])


def test_a_batch_with_candidates_gives_each_query_its_results_alone():
    """N = 10, candidates 0..9, query 20: 10 results alone, 9 in a batch with queries among the
    candidates. Each query's results do not depend on the others."""
    rng = np.random.default_rng(0)
    model = Factorization(rng.normal(size=(5, 4)), rng.normal(size=(30, 4)))
    cand = list(range(10))
    alone, alone_sc = similar_items(model, 20, n=10, items=cand)
    assert alone.shape == (10,) and sorted(alone.tolist()) == cand
    batch, batch_sc = similar_items(model, [20, 3, 5], n=10, items=cand)
    assert batch.shape == (3, 10)
    np.testing.assert_array_equal(batch[0], alone)
    np.testing.assert_allclose(batch_sc[0], alone_sc, rtol=1e-15)
    for r, q in ((1, 3), (2, 5)):                  # a query among the candidates: 9 + padding
        one, _ = similar_items(model, q, n=10, items=cand)
        assert one.size == 9 and q not in one.tolist()
        np.testing.assert_array_equal(batch[r, :9], one)
        assert batch[r, 9] == -1 and np.isneginf(batch_sc[r, 9])
    users, _ = similar_users(Factorization(rng.normal(size=(30, 4)), rng.normal(size=(5, 4))),
                             [20, 3], n=10, users=cand)
    assert sorted(users[0].tolist()) == cand
