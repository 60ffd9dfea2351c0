"""The tasks both of fBGD's Dask forms (plain MF and features) run on a row block: the block's
coefficients, its caches S = Fᵀ diag(w) F, s = Fᵀ w, the positives' correction and the
Adagrad update of its rows."""

from __future__ import annotations

import dataclasses

import numpy as np

from fastpu._core.threads import limit_threads
from fastpu._kernels import fbgd as _k
from fastpu.distributed import blocks as _blocks
from fastpu.fbgd._problem import _EPS


@dataclasses.dataclass
class FbgdBlock:
    """Per-entry coefficients of a block (same values as fbgd's x_side / y_side) and row weights."""

    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray
    cpos: np.ndarray       # α⁺ − α⁻
    bpos: np.ndarray       # α⁺ r⁺ − α⁻ r⁻
    apos: np.ndarray
    rpos: np.ndarray
    aneg: np.ndarray
    rowscale: np.ndarray   # 1 for users, α⁻_y for items


def make_block(csr, neg, apos, rpos, r_neg, is_item):
    """The fBGD coefficients of a CSR block; ``apos``/``rpos`` are scalars or ``"values"``."""
    item_of_entry = csr.rows() if is_item else csr.indices
    aneg = np.ascontiguousarray(neg[item_of_entry])
    a = csr.data.copy() if isinstance(apos, str) else np.full(csr.nnz, float(apos))
    r = csr.data.copy() if isinstance(rpos, str) else np.full(csr.nnz, float(rpos))
    rowscale = np.ascontiguousarray(neg[csr.lo:csr.hi]) if is_item else np.ones(csr.n_rows)
    return FbgdBlock(csr.lo, csr.hi, csr.indptr, csr.indices, a - aneg, a * r - aneg * r_neg,
                     a, r, aneg, rowscale)


def counts_task(csr):
    """Positives per row of the block (per item for an item block)."""
    return np.diff(csr.indptr).astype(np.float64)


def cache_task(block, F, n_threads):
    with limit_threads(n_threads):
        return _blocks.gram(np.ascontiguousarray(F[block.lo:block.hi]), block.rowscale, F.shape[1])


def positive_task(block, F, E, r_neg, n_threads):
    """Σ over the block's positives of α⁺(r⁺ − r̂)² − α⁻(r⁻ − r̂)² (F: this side, E: the other)."""
    with limit_threads(n_threads):
        Fb = np.ascontiguousarray(F[block.lo:block.hi])
        pred, rows = np.empty(block.indices.size), np.empty(Fb.shape[0])
        if Fb.shape[0]:
            _k.positive_terms(block.indptr, block.indices, block.apos, block.rpos, block.aneg,
                              Fb, E, r_neg, pred, rows)
        return float(rows.sum())


def update_task(block, F, E, S, s, prev, r_neg, lr, lam, adagrad, with_loss, n_threads):
    """One batch step on rows lo:hi of F with the other side's caches (S, s).

    ``prev`` is this block's previous result (its Adagrad accumulators), None at the start.
    Returns (new rows, new accumulators, partial cache S, partial s, Σ rows², positive loss).
    """
    with limit_threads(n_threads):
        theta = np.array(F[block.lo:block.hi], order="C")
        accum = np.zeros_like(theta) if prev is None else np.array(prev[1], order="C")
        g = theta.shape[1]
        G = np.empty_like(theta)
        if theta.shape[0]:
            _k.side_gradient(block.indptr, block.indices, block.cpos, block.bpos, theta, E, S, s,
                             block.rowscale, r_neg, G)
            free = np.ones(theta.shape, dtype=np.bool_)
            _k.batch_update(G, free, theta, accum, lr, lam, adagrad, _EPS)
        Sp, sp_ = _blocks.gram(theta, block.rowscale, g)
        pos = 0.0
        if with_loss and theta.shape[0]:
            pred, rows = np.empty(block.indices.size), np.empty(theta.shape[0])
            _k.positive_terms(block.indptr, block.indices, block.apos, block.rpos, block.aneg,
                              theta, E, r_neg, pred, rows)
            pos = float(rows.sum())
        return theta, accum, Sp, sp_, float(np.sum(theta * theta)), pos


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
