"""The tasks fBGD's Dask forms (batch and coordinate plain MF, and features) run on a row block:
the block's coefficients, its caches S = Fᵀ diag(w) F, s = Fᵀ w, the positives' correction and
the update of its rows.

A block's column indices are compact (:mod:`fastpu.distributed.routing`): they index the matrix
of the other side's rows the block touches, which its task assembles from the pieces routed to
it; a block's own rows (and Adagrad accumulators) come from its previous result on its worker."""

from __future__ import annotations

import dataclasses

import numpy as np

from fastpu._core.threads import limit_threads
from fastpu._kernels import fbgd as _k
from fastpu.distributed import blocks as _blocks
from fastpu.distributed import routing
from fastpu.fbgd._problem import _EPS, _ROW_CHUNKS


@dataclasses.dataclass
class FbgdBlock:
    """Per-entry coefficients of a block (same values as fbgd's x_side / y_side) and row weights."""

    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray    # compact: positions among the other side's rows the block touches
    cpos: np.ndarray       # α⁺ − α⁻
    bpos: np.ndarray       # α⁺ r⁺ − α⁻ r⁻
    apos: np.ndarray
    rpos: np.ndarray
    aneg: np.ndarray
    rowscale: np.ndarray   # 1 for users, α⁻_y for items

    @property
    def n_rows(self):
        return self.hi - self.lo


def make_block(csr, touch, apos, rpos, r_neg, is_item, *neg):
    """The fBGD coefficients of a CSR block; ``apos``/``rpos`` are scalars or ``"values"``.

    ``neg`` is α⁻ of the items the block needs: an item block's own items (one array), or the
    pieces (in source order) of the items a user block touches.
    """
    neg_here = np.concatenate(neg) if neg else np.empty(0)
    cols = routing.compact(csr.indices, touch)
    if is_item:
        local = np.repeat(np.arange(csr.n_rows, dtype=np.int64), np.diff(csr.indptr))
        aneg = np.ascontiguousarray(neg_here[local])
        rowscale = np.ascontiguousarray(neg_here)
    else:
        aneg = np.ascontiguousarray(neg_here[cols])
        rowscale = np.ones(csr.n_rows)
    a = csr.data.copy() if isinstance(apos, str) else np.full(csr.nnz, float(apos))
    r = csr.data.copy() if isinstance(rpos, str) else np.full(csr.nnz, float(rpos))
    return FbgdBlock(csr.lo, csr.hi, csr.indptr, cols, a - aneg, a * r - aneg * r_neg,
                     a, r, aneg, rowscale)


def counts_task(csr):
    """Positives per row of the block (per item for an item block)."""
    return np.diff(csr.indptr).astype(np.float64)


def cache_task(block, own, n_threads):
    """The block's partial caches over its rows ``own`` (an array or a result holding them)."""
    with limit_threads(n_threads):
        F = np.ascontiguousarray(_blocks.first(own))
        return _blocks.gram(F, block.rowscale, F.shape[1])


def positive_task(block, own, r_neg, n_threads, *pieces):
    """Σ over the block's positives of α⁺(r⁺ − r̂)² − α⁻(r⁻ − r̂)² (own: this side's rows,
    pieces: the other side's rows the block touches)."""
    with limit_threads(n_threads):
        Fb = np.ascontiguousarray(_blocks.first(own))
        E = routing.assemble(Fb.shape[1], Fb.dtype.name, *pieces)
        pred, rows = np.empty(block.indices.size), np.empty(Fb.shape[0])
        if Fb.shape[0]:
            _k.positive_terms(block.indptr, block.indices, block.apos, block.rpos, block.aneg,
                              Fb, E, r_neg, pred, rows)
        return float(rows.sum())


def _start(own):
    """(a copy of the block's current rows, a copy of its Adagrad accumulators): from its previous
    result, or zeros at the start (``own`` is then the initial rows)."""
    if isinstance(own, tuple):
        return np.array(own[0], order="C"), np.array(own[1], order="C")
    theta = np.array(own, order="C")
    return theta, np.zeros_like(theta)


def _norms(theta, lam, scaled):
    """Σ θ² of the block's rows (``scaled`` False: the client multiplies by the one lam), or
    Σ_j λ_j ‖θ_j‖² with ``lam`` the rows' own penalties."""
    if scaled:
        return float(lam @ np.sum(theta * theta, axis=1))
    return float(np.sum(theta * theta))


def update_task(block, own, lam, S, s, with_loss, opts, *pieces):
    """One batch step on the block's rows with the other side's caches (S, s) and the rows'
    penalties ``lam`` (one value for all, or one per row).

    ``own`` is this block's previous result (rows, Adagrad accumulators, ...) or, at the start,
    its initial rows. Returns (new rows, new accumulators, partial cache S, partial s, the rows'
    :func:`_norms`, positive loss).
    """
    with limit_threads(opts["n_threads"]):
        theta, accum = _start(own)
        g = theta.shape[1]
        E = routing.assemble(g, theta.dtype.name, *pieces)
        G = np.empty_like(theta)
        r_neg = opts["r_neg"]
        if theta.shape[0]:
            _k.side_gradient(block.indptr, block.indices, block.cpos, block.bpos, theta, E, S, s,
                             block.rowscale, r_neg, G)
            free = np.ones(theta.shape, dtype=np.bool_)
            _k.batch_update(G, free, theta, accum, opts["lr"], lam, opts["adagrad"], _EPS)
        Sp, sp_ = _blocks.gram(theta, block.rowscale, g)
        pos = 0.0
        if with_loss and theta.shape[0]:
            pred, rows = np.empty(block.indices.size), np.empty(theta.shape[0])
            _k.positive_terms(block.indptr, block.indices, block.apos, block.rpos, block.aneg,
                              theta, E, r_neg, pred, rows)
            pos = float(rows.sum())
        return theta, accum, Sp, sp_, _norms(theta, lam, opts["scaled"]), pos


_NO = np.empty(0)
_NO_INT = np.empty(0, dtype=np.int64)


def _chunks(indptr, g):
    """Chunk bounds of the row-parallel coordinate kernel: about equal work (positives + g per
    row), as fbgd's single-machine plan cuts them. Rows are independent, so the cuts change
    the threads' shares only, never a result."""
    n = indptr.size - 1
    work = np.diff(indptr) + g
    cum = np.concatenate([[0], np.cumsum(work)])
    n_chunks = min(_ROW_CHUNKS, n)
    marks = np.searchsorted(cum, cum[-1] * np.arange(1, n_chunks) / n_chunks)
    return np.unique(np.concatenate([[0], marks, [n]])).astype(np.int64)


def coordinate_task(block, own, lam, S, s, with_loss, opts, *pieces):
    """Appendix B's coordinate updates of the block's rows (plain MF: a parameter per row), with
    the other side's caches (S, s): the same ``coordinate_rows`` kernel as ``fbgd.fit``, the
    predictions of the block's positives computed afresh. With ``with_loss`` the kernel also sums
    each row's positive part of loss (2) at the updated point, as the single-machine item side's
    fused pass does. Returns what :func:`update_task` returns.
    """
    with limit_threads(opts["n_threads"]):
        theta, accum = _start(own)
        n, g = theta.shape
        F = routing.assemble(g, theta.dtype.name, *pieces)
        E = theta.copy()                    # the embeddings, kept equal to Θ by the kernel
        pos = 0.0
        if n:
            eye = np.arange(n + 1, dtype=np.int64)
            free = np.ones(theta.shape, dtype=np.bool_)
            pred = np.empty(block.indices.size)
            row_loss = np.zeros(n) if with_loss else _NO
            fused = ((block.apos, block.rpos, block.aneg, _NO_INT, row_loss, _NO) if with_loss
                     else (_NO, _NO, _NO, _NO_INT, _NO, _NO))
            _k.coordinate_rows(_chunks(block.indptr, g), True, eye, eye[:-1], np.ones(n), free,
                               theta, accum, block.indptr, block.indices, block.cpos, block.bpos,
                               pred, E, F, np.ascontiguousarray(F.T), S, s, block.rowscale,
                               opts["r_neg"], opts["lr"], lam, opts["adagrad"], _EPS,
                               *fused)
            pos = float(row_loss.sum()) if with_loss else 0.0
        Sp, sp_ = _blocks.gram(E, block.rowscale, g)
        return E, accum, Sp, sp_, _norms(theta, lam, opts["scaled"]), pos


def _sum(parts):
    S, s = parts[0][0].copy(), parts[0][1].copy()
    for r in parts[1:]:
        S += r[0]
        s += r[1]
    return S, s


def _loss(Sq, sq, Sp, sp_, r_neg, const, pos):
    with np.errstate(over="ignore", invalid="ignore"):
        allpairs = float(np.sum(Sq * Sp)) - 2.0 * r_neg * float(sq @ sp_) + const
    return allpairs + pos
