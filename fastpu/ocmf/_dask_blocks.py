"""The tasks both of ocmf's Dask forms run on a row block: the block's entries, its rows' partial
Gram (M, κ for the next half-step), and the row-separable Newton–CG update of its rows.

A block's column indices are compact (:mod:`fastpu.distributed.routing`): they index the
matrix of the other side's rows the block touches, which its task assembles from the pieces
routed to it."""

from __future__ import annotations

import dataclasses

import numpy as np

from fastpu._core.rows import scaled_penalty
from fastpu._core.threads import limit_threads
from fastpu._kernels.csr import gram_parts, sum_gram_parts, turn_rows
from fastpu._kernels.ocmf import local_entries, row_newton
from fastpu.distributed import blocks as _blocks
from fastpu.distributed import routing
from fastpu.ocmf._problem import kernel_indices

_NO_Q = np.empty(0)


@dataclasses.dataclass
class OcmfBlock:
    """A block's loss entries (value: weights·l(1, s) − corr·(ā − s)²) and its rows' weights.

    ``indices`` are compact: positions among the ``n_touched`` other-side rows the block touches.
    """

    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    corr: np.ndarray
    w: np.ndarray          # unlabeled weight of each row of the block (p_i for users, q_j for items)
    lam: np.ndarray        # the rows' regularisation weights (one value, or one per row)
    n_touched: int


def make_block(csr, touch, penalty, every, own_w, *other_w):
    """The ocmf entries of a CSR block: corr = own_w[row] · other_w[col] (the same products as
    ocmf's), or 0 with ``every`` (``negatives="all"``: the unlabeled term covers the positives
    too); ``own_w`` holds the block's rows' weights, ``other_w`` the pieces (in source order) of
    the other side's weights at the rows the block touches (``touch``). ``penalty`` is (λ, ν, Σ
    of the other side's weights): the rows' λ_i = λ (|Ω+_i| + w_i Σ)^ν, as
    :func:`fastpu.ocmf._problem.row_penalties` computes them for the whole side."""
    other = np.concatenate(other_w) if other_w else np.empty(0)
    local = np.repeat(np.arange(csr.n_rows, dtype=np.int64), np.diff(csr.indptr))
    cols = routing.compact(csr.indices, touch)
    own = np.ascontiguousarray(own_w, dtype=np.float64)
    lam, nu, other_sum = penalty
    count = np.diff(csr.indptr).astype(np.float64) + own * other_sum if nu != 0.0 else None
    corr = np.zeros(csr.nnz) if every else own[local] * other[cols]
    return OcmfBlock(csr.lo, csr.hi, csr.indptr, cols, np.ones(csr.nnz), csr.data, corr, own,
                     scaled_penalty(lam, nu, count), touch.size)


def gram_task(block, own, n_threads, exact=False):
    """The block's partial (Fᵀ diag(w) F, Fᵀ w) over its rows ``own`` (or a result holding them);
    with ``exact``, as the pairs of :func:`fastpu._kernels.csr.gram_parts`."""
    with limit_threads(n_threads):
        F = np.ascontiguousarray(_blocks.first(own))
        return _partial_gram(F, block.w, exact)


def _partial_gram(F, w, exact):
    if exact:           # the eigenbasis path: the same M as one machine's, whatever the blocks
        return gram_parts(F, w)
    return _blocks.gram(F, w, F.shape[1])


def turned(Q, rows, n_threads):
    """A copy of a block's rows (an array or a result holding them) turned into the eigenbasis
    of Q (A ← A Q): the routed side's rows of a half-step, turned once where they live, as the
    single-machine fit turns that factor in place."""
    with limit_threads(n_threads):
        A = np.array(_blocks.first(rows), order="C")
        turn_rows(A, Q)
        return A


def update_task(block, own, M, kappa, opts, *pieces):
    """New rows of the block (Newton–CG per row, warm-started from its current rows ``own``, an
    array or the previous result) and the block's sums; ``pieces`` are the other side's rows it
    touches, routed to it in source order.

    Returns (rows, Σ f_i, the rows' partial Gram (:func:`gram_task`'s), Σ λ_i‖row_i‖²).
    ``own`` is read only; ``opts["rows"]`` is the row solver's
    :class:`~fastpu._kernels.ocmf.RowOptions`.

    In the eigenbasis of M (``opts["turn"]``: the single-machine fit's ``_eigen_basis``), M is
    diagonal, the block's rows are first turned by this half-step's turn Q (``opts["turn"]``)
    and the routed rows arrive turned by it (cut from the other side's rows turned by
    :func:`turned`), as the single-machine fit turns both factors in place.
    """
    with limit_threads(opts["n_threads"]):
        W = np.array(_blocks.first(own), order="C")
        k = W.shape[1]
        E = routing.assemble(k, opts["dtype"], *pieces)
        if opts.get("turn") is not None:
            turn_rows(W, opts["turn"])
        lam = block.lam
        f_rows = np.empty(W.shape[0])
        local_max = local_entries(k, E.dtype.itemsize)
        if W.shape[0]:
            # the kernel's one index type (int32 when it fits); per-entry corr, so no column weights
            indptr, indices = kernel_indices(block.indptr, block.indices, E.shape[0])
            row_newton(opts["kind"], indptr, indices, block.labels, block.weights, block.corr,
                       _NO_Q, opts["abar"], E, M, kappa, block.w, lam, W, opts["rows"],
                       local_max, f_rows, _NO_Q, diag=opts.get("turn") is not None)
        gram = _partial_gram(W, block.w, opts.get("exact", False))
        sq = np.square(W, dtype=np.float64)
        reg = (float(lam[0]) * float(np.sum(sq)) if lam.shape[0] == 1
               else float(lam @ sq.sum(axis=1)))
        return W, float(f_rows.sum()), gram, reg


def _sum_parts(grams, exact=False):
    """(M, κ): Σ of the blocks' partial Grams, in block order (deterministic); with ``exact``,
    the pairs added and rounded once (:func:`fastpu._kernels.csr.sum_gram_parts`)."""
    if exact:
        return sum_gram_parts(grams)
    M = grams[0][0].copy()
    kappa = grams[0][1].copy()
    for g in grams[1:]:
        M += g[0]
        kappa += g[1]
    return M, kappa
