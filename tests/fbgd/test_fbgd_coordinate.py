"""fBGD's row-parallel coordinate update against the serial kernel it replaces and the
dense reference of Appendix B: the same iterate up to reassociated sums, at 1 and 2 threads, for
one-hot ids, biases, features with one-row and shared columns, and rows too long for the tile."""

import contextlib

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpu._core import validation as V
from fastpu.fbgd import _problem as FP
from fastpu.fbgd._check import identity
from fastpu import fbgd
from fastpu._kernels import fbgd as K
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads

import naive_fbgd as naive
import reference_fbgd as serial

_LAYOUTS = ("ids", "ids+shared", "shared+ids", "ids+ids", "shared", "one-row columns")


def _csr(A):
    return V.check_csr(sp.csr_array(A), nonnegative=False)


def _features(rng, n, layout):
    """Feature matrices whose columns mix one-row parameters (row-parallel) and shared ones."""
    return _csr(_feature_layout(rng, n, layout))


def _feature_layout(rng, n, layout):
    ident = sp.identity(n, format="csr") * rng.uniform(0.5, 1.5)
    shared = sp.csr_array(np.where(rng.random((n, 2)) < 0.6, rng.uniform(-1.5, 1.5, (n, 2)), 0.0))
    if layout == "ids":
        return sp.identity(n, format="csr")
    if layout == "ids+shared":
        return sp.hstack([ident, shared], format="csr")
    if layout == "shared+ids":
        return sp.hstack([shared, ident], format="csr")
    if layout == "ids+ids":             # two parameters per row: the runs must not share rows
        return sp.hstack([ident, sp.identity(n, format="csr")], format="csr")
    if layout == "shared":
        return shared
    cols = rng.permutation(n + 1)[:n]   # one entry per row, in shuffled columns, one empty column
    return sp.csr_array((rng.uniform(-2, 2, n), cols, np.arange(n + 1)), shape=(n, n + 1))


@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    mask = rng.random((m, n)) < draw(st.sampled_from([0.0, 0.3, 0.7]))
    Y = _csr(np.where(mask, rng.uniform(0.5, 3.0, (m, n)), 0.0))
    Zx = _features(rng, m, draw(st.sampled_from(_LAYOUTS)))
    Zy = _features(rng, n, draw(st.sampled_from(_LAYOUTS)))
    return dict(Y=Y, Zx=Zx, Zy=Zy, k=draw(st.integers(1, 3)), biases=draw(st.booleans()),
                neg=rng.uniform(0.0, 2.0, n), pos_weight=draw(st.sampled_from([1.0, "values"])),
                r_neg=draw(st.sampled_from([0.0, -0.4])), adagrad=draw(st.booleans()),
                lam=draw(st.sampled_from([0.0, 0.1])),
                neg_rows=rng.uniform(0.0, 2.0, m) if draw(st.booleans()) else None, rng=rng)


def _build(pb):
    Y = V.check_csr(pb["Y"])
    apos = FP.per_positive(pb["pos_weight"], Y)
    rpos = np.ones(Y.nnz)
    prob = FP._Problem(Y, pb["Zx"], pb["Zy"], pb["k"], pb["biases"], pb["neg"], apos, rpos,
                       pb["r_neg"], pb["neg_rows"])
    tx, ty = prob.init_params(pb["rng"], 0.5)
    tx[prob.free_x] = pb["rng"].normal(0.0, 0.5, size=int(prob.free_x.sum()))
    ty[prob.free_y] = pb["rng"].normal(0.0, 0.5, size=int(prob.free_y.sum()))
    return prob, tx, ty, apos


def _train(prob, tx, ty, pb, n_iter, threads, reference=False, monkeypatch=None):
    tx, ty = tx.copy(), ty.copy()
    in_order = serial.in_order(monkeypatch) if reference else contextlib.nullcontext()
    with in_order, limit_threads(threads):
        FP._train(prob, tx, ty, lr=0.02, n_iter=n_iter, update="coordinate", adagrad=pb["adagrad"],
                  lam=pb["lam"], progress=Progress("test"))
    return tx, ty


@settings(max_examples=60, deadline=None)
@given(problems())
def test_row_parallel_epochs_equal_the_serial_kernel_at_1_and_2_threads(pb):
    monkeypatch = pytest.MonkeyPatch()
    prob, tx, ty, _ = _build(pb)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = _train(prob, tx, ty, pb, 3, 1, reference=True, monkeypatch=monkeypatch)
        one = _train(prob, tx, ty, pb, 3, 1, monkeypatch=monkeypatch)
        two = _train(prob, tx, ty, pb, 3, 2, monkeypatch=monkeypatch)
    for got, want in zip(one, ref):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    for a, b in zip(one, two):                     # rows own their outputs: bit for bit
        np.testing.assert_array_equal(a, b)


@settings(max_examples=40, deadline=None)
@given(problems(), st.sampled_from([1, 2]))
def test_row_parallel_epochs_match_the_dense_appendix_b(pb, threads):
    monkeypatch = pytest.MonkeyPatch()
    prob, tx, ty, apos = _build(pb)
    with np.errstate(over="ignore", invalid="ignore"):
        got = _train(prob, tx, ty, pb, 2, threads, monkeypatch=monkeypatch)
    Y = prob.Y
    D = Y.toarray() > 0
    A = sp.csr_array((apos, Y.indices, Y.indptr), shape=Y.shape).toarray()
    R = np.ones(Y.shape)
    nx, ny = tx.copy(), ty.copy()
    ax, ay = np.zeros_like(nx), np.zeros_like(ny)
    for _ in range(2):
        naive.coordinate_epoch(D, pb["Zx"].toarray(), pb["Zy"].toarray(), nx, ny, ax, ay,
                               prob.free_x, prob.free_y, pb["k"], pb["biases"], A, R, pb["neg"],
                               pb["r_neg"], 0.02, pb["adagrad"], pb["lam"], pb["neg_rows"])
    np.testing.assert_allclose(got[0], nx, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got[1], ny, rtol=1e-8, atol=1e-10)


def _plan_kinds(Z, biases, k=2, nnz_rows=None):
    Y = _csr(np.ones((Z.shape[0], 3)))
    prob = FP._Problem(Y, _csr(Z), _csr(sp.identity(3, format="csr")), k, biases, np.ones(3), np.ones(Y.nnz),
                       np.ones(Y.nnz), 0.0)
    segments, needs_dots = prob.coordinate_plan(prob.x_side, prob.ZxT, prob.free_x)
    return [(s[0], int(s[1][0]), int(s[1][-1])) if s[0] == "rows" else s for s in segments], needs_dots


def test_coordinate_plan_keeps_the_serial_order():
    I4 = sp.identity(4, format="csr")
    Z = sp.csr_array(np.array([[1.0, 0], [1, 1], [0, 1], [1, 0]]))
    assert _plan_kinds(I4, False) == ([("rows", 0, 4)], False)
    # biases: the ids run in parallel, then the global bias w0 (the constant column) serially
    assert _plan_kinds(I4, True) == ([("rows", 0, 4), ("serial", 4, 5)], True)
    assert _plan_kinds(sp.hstack([Z, I4], format="csr"), False) == (
        [("serial", 0, 2), ("rows", 2, 6)], True)
    # [I, I]: two parameters on each row; one run would share rows, so it runs serially
    assert _plan_kinds(sp.hstack([I4, I4], format="csr"), False) == ([("serial", 0, 8)], True)
    # the item side with biases: its constant column has no free coordinate and is left out
    Y = _csr(np.ones((2, 3)))
    prob = FP._Problem(Y, _csr(sp.identity(2)), _csr(sp.identity(3)), 2, True,
                       np.ones(3), np.ones(6), np.ones(6), 0.0)
    segments, needs_dots = prob.coordinate_plan(prob.y_side, prob.ZyT, prob.free_y)
    assert [s[0] for s in segments] == ["rows"] and segments[0][1][-1] == 3 and not needs_dots


def test_rows_longer_than_the_tile_gather_instead(monkeypatch):
    """A row with more positives than the tile holds (g = 1: 2**18) takes the gathering path."""
    rng = np.random.default_rng(0)
    n = (1 << 18) + 5
    cols = np.sort(rng.choice(n, size=n - 3, replace=False))
    Y = _csr(sp.csr_array((np.ones(cols.size), cols, np.array([0, cols.size, cols.size])),
                          shape=(2, n)))
    assert Y.indptr[1] > K._TILE_MAX
    prob = FP._Problem(Y, identity(2), identity(n), 1, False,
                       np.full(n, 1e-5), np.ones(Y.nnz), np.ones(Y.nnz), 0.0)
    tx, ty = prob.init_params(rng, 0.1)
    pb = dict(adagrad=True, lam=0.01)
    got = _train(prob, tx, ty, pb, 2, 2, monkeypatch=monkeypatch)
    want = _train(prob, tx, ty, pb, 2, 1, reference=True, monkeypatch=monkeypatch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-15)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 40), st.integers(1, 30), st.integers(1, 70))
def test_positive_terms_equal_the_in_order_reference(seed, m, n, g):
    rng = np.random.default_rng(seed)
    Y = _csr((rng.random((m, n)) < 0.3).astype(float))
    P, Q = rng.normal(size=(m, g)), rng.normal(size=(n, g))
    apos, rpos, aneg = rng.uniform(0, 2, Y.nnz), rng.uniform(0, 2, Y.nnz), rng.uniform(0, 2, Y.nnz)
    out = [(np.empty(Y.nnz), np.empty(m)) for _ in range(2)]
    K.positive_terms(Y.indptr, Y.indices, apos, rpos, aneg, P, Q, 0.3, *out[0])
    serial.positive_terms_in_order(Y.indptr, Y.indices, apos, rpos, aneg, P, Q, 0.3, *out[1])
    dense = (P @ Q.T)[Y.nonzero()]
    np.testing.assert_allclose(out[0][0], dense, rtol=1e-12, atol=1e-12 * g)
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12, atol=1e-12 * g)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-10, atol=1e-10 * g)


# --------------------------------------------------------------------------- fused loss
def _train_history(prob, tx, ty, pb, n_iter, fused, threads=1):
    """(Θ^X, Θ^Y, objectives) of ``n_iter`` epochs, the item side's fused loss on or off."""
    tx, ty = tx.copy(), ty.copy()
    progress = Progress("test")
    with pytest.MonkeyPatch().context() as mp, limit_threads(threads):
        if not fused:
            mp.setattr(FP._Problem, "fused_loss_terms", lambda self: None)
            mp.setattr(FP._Problem, "fused_user_perm", lambda self: None)
        FP._train(prob, tx, ty, lr=0.02, n_iter=n_iter, update="coordinate", adagrad=pb["adagrad"],
                  lam=pb["lam"], progress=progress)
    return tx, ty, np.array([h["objective"] for h in progress.history])


_FUSE_LAYOUTS = ["ids", "one-row columns", "ids+shared"]


@settings(max_examples=80, deadline=None)
@given(problems(), st.sampled_from(_FUSE_LAYOUTS), st.sampled_from(_FUSE_LAYOUTS),
       st.sampled_from([1, 2]), st.sampled_from([1, 4]))
def test_fused_passes_equal_the_separate_pass_and_the_dense_loss(pb, x_layout, y_layout, threads,
                                                                 n_iter):
    """Plain ids on a side: its kernel hands the predictions it has moved to the other side,
    and on the item side also sums the positive part of the loss. The iterates and the
    objective agree to rounding with fresh dot products and the separate loss pass, and the
    objective with the dense loss (2) at the final point."""
    m, n = pb["Y"].shape
    pb = dict(pb, Zx=_features(pb["rng"], m, x_layout), Zy=_features(pb["rng"], n, y_layout))
    prob, tx, ty, apos = _build(pb)
    # an empty or a shared column, or biases: not fused
    assert (prob.fused_user_perm() is not None) == (x_layout == "ids" and not pb["biases"])
    assert (prob.fused_loss_terms() is not None) == (y_layout == "ids" and not pb["biases"])
    with np.errstate(over="ignore", invalid="ignore"):
        fx, fy, fobj = _train_history(prob, tx, ty, pb, n_iter, True, threads)
        sx, sy, sobj = _train_history(prob, tx, ty, pb, n_iter, False, threads)
    if not (np.isfinite(sobj).all() and np.isfinite(sx).all() and np.isfinite(sy).all()):
        return
    np.testing.assert_allclose(fx, sx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fy, sy, rtol=1e-9, atol=1e-12)
    scale = 1.0 + np.abs(sobj).max()
    np.testing.assert_allclose(fobj, sobj, rtol=1e-11, atol=1e-11 * scale)
    Y = prob.Y
    P, Q = prob.embed(prob.Zx, fx), prob.embed(prob.Zy, fy)
    R = P @ Q.T
    D = Y.toarray() > 0
    A = sp.csr_array((apos, Y.indices, Y.indptr), shape=Y.shape).toarray()
    Wneg = np.outer(prob.arow, prob.neg)
    dense = float(np.sum(np.where(D, A * (1.0 - R) ** 2, Wneg * (pb["r_neg"] - R) ** 2)))
    dense += pb["lam"] * (float(np.sum(fx[prob.free_x] ** 2)) + float(np.sum(fy[prob.free_y] ** 2)))
    np.testing.assert_allclose(fobj[-1], dense, rtol=1e-10, atol=1e-10 * scale)


def test_fused_item_loss_on_an_item_longer_than_the_tile():
    """An item with more positives than the tile holds (g = 1: 2**18) sums its loss on the
    gathering path."""
    rng = np.random.default_rng(1)
    m = (1 << 18) + 5
    rows = np.sort(rng.choice(m, size=m - 3, replace=False))
    r = np.concatenate([rows, [7]])
    c = np.concatenate([np.zeros(rows.size, dtype=np.int64), [1]])
    Y = _csr(sp.coo_array((np.ones(r.size), (r, c)), shape=(m, 2)).tocsr())
    assert np.diff(FP.V.transpose_csr(Y).indptr)[0] > K._TILE_MAX
    prob = FP._Problem(Y, identity(m), identity(2), 1, False,
                       np.full(2, 1e-5), np.ones(Y.nnz), np.ones(Y.nnz), 0.0)
    assert prob.fused_loss_terms() is not None
    tx, ty = prob.init_params(rng, 0.1)
    pb = dict(adagrad=True, lam=0.01)
    fx, fy, fobj = _train_history(prob, tx, ty, pb, 2, True, threads=2)
    sx, sy, sobj = _train_history(prob, tx, ty, pb, 2, False, threads=2)
    np.testing.assert_allclose(fx, sx, rtol=1e-9)
    np.testing.assert_allclose(fy, sy, rtol=1e-9)
    np.testing.assert_allclose(fobj, sobj, rtol=1e-11)
