"""Sparse × dense products over CSR arrays, in scipy's argument order.

Each ``prange`` iteration owns one output row, so results do not depend on the
thread count.  Column-side products (Aᵀ D) run the row kernel on a transposed
CSR built once at the boundary, with ``perm`` mapping its entries back to the
original entry order so that per-entry values computed in row order can be reused.
"""

import numba as nb
import numpy as np

from .rowpool import MIN_BLOCK_WORK, run_rows, uniform_rows

_JIT = dict(nogil=True, cache=True)


# Dot products may be reassociated so that they vectorise (no finite-math assumption).
_JIT_DOT = dict(_JIT, fastmath={"reassoc", "contract"})


@nb.njit(**_JIT_DOT)
def _sampled_dots_rows(lo, hi, indptr, indices, B, H, out):
    """``sampled_dots`` for the rows lo .. hi − 1 (serial, GIL-free)."""
    k = B.shape[1]
    for i in range(lo, hi):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            acc = 0.0
            for r in range(k):
                acc += B[i, r] * H[j, r]
            out[p] = acc


def sampled_dots(indptr, indices, B, H, out):
    """out[p] = B[i] · H[j] for every stored entry p = (i, j).

    Rows in contiguous blocks, one per thread (:func:`.rowpool.run_rows`).
    """
    run_rows(lambda lo, hi: _sampled_dots_rows(lo, hi, indptr, indices, B, H, out),
             indptr, 1, min_work=MIN_BLOCK_WORK)


@nb.njit(**_JIT)
def _csr_dense_rows(lo, hi, indptr, indices, data, D, out):
    """``csr_dense`` for the rows lo .. hi − 1 (serial, GIL-free)."""
    k = D.shape[1]
    for i in range(lo, hi):
        for r in range(k):
            out[i, r] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            a = data[p]
            j = indices[p]
            for r in range(k):
                out[i, r] += a * D[j, r]


def csr_dense(indptr, indices, data, D, out):
    """out = A @ D for A = (indptr, indices, data).

    Rows in contiguous blocks, one per thread (:func:`.rowpool.run_rows`).
    """
    run_rows(lambda lo, hi: _csr_dense_rows(lo, hi, indptr, indices, data, D, out),
             indptr, 1, min_work=MIN_BLOCK_WORK)


@nb.njit(**_JIT)
def _csr_dense_perm_rows(lo, hi, indptr, indices, perm, data, D, out):
    """``csr_dense_perm`` for the rows lo .. hi − 1 (serial, GIL-free)."""
    k = D.shape[1]
    for i in range(lo, hi):
        for r in range(k):
            out[i, r] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            a = data[perm[p]]
            j = indices[p]
            for r in range(k):
                out[i, r] += a * D[j, r]


def csr_dense_perm(indptr, indices, perm, data, D, out):
    """out = A @ D where A's p-th stored value is data[perm[p]] (transposed-CSR products).

    Rows in contiguous blocks, one per thread (:func:`.rowpool.run_rows`).
    """
    run_rows(lambda lo, hi: _csr_dense_perm_rows(lo, hi, indptr, indices, perm, data, D, out),
             indptr, 1, min_work=MIN_BLOCK_WORK)


@nb.njit(parallel=True, **_JIT)
def row_scaled_product(p, B, M, out):
    """out = diag(p) · B · M."""
    k = B.shape[1]
    l = M.shape[1]
    for i in nb.prange(B.shape[0]):
        for c in range(l):
            out[i, c] = 0.0
        for r in range(k):
            b = p[i] * B[i, r]
            for c in range(l):          # contiguous axpy: vectorises without reassociation
                out[i, c] += b * M[r, c]


_GRAM_CHUNK = 2048      # rows per partial Gram (the unit of work of a thread)
_GRAM_BLOCK = 64        # rows transposed into a contiguous block inside a chunk (fits L1)


@nb.njit(**_JIT_DOT)
def _gram_partials(E, q, c_lo, c_hi, partM, partk):
    """partM[c] = upper triangle of Eᵀ diag(q) E and partk[c] = Eᵀ q over chunk c's rows.

    Serial and GIL-free: :func:`weighted_gram` runs blocks of chunks on its threads.
    """
    n, k = E.shape
    Et = np.empty((k, _GRAM_BLOCK))
    Qt = np.empty((k, _GRAM_BLOCK))
    for c in range(c_lo, c_hi):
        lo = c * _GRAM_CHUNK
        hi = min(n, lo + _GRAM_CHUNK)
        for b_lo in range(lo, hi, _GRAM_BLOCK):
            nb_ = min(hi, b_lo + _GRAM_BLOCK) - b_lo
            for t in range(nb_):
                qj = q[b_lo + t]
                for a in range(k):
                    e = E[b_lo + t, a]
                    Et[a, t] = e
                    Qt[a, t] = qj * e
            for a in range(k):
                acc = 0.0
                for t in range(nb_):
                    acc += Qt[a, t]
                partk[c, a] += acc
                for b in range(a, k):
                    acc = 0.0
                    for t in range(nb_):
                        acc += Qt[a, t] * Et[b, t]
                    partM[c, a, b] += acc


@nb.njit(**_JIT)
def _gram_sum(partM, partk, M_out, kappa_out):
    """M_out, kappa_out = the partials added in chunk order, M_out made symmetric."""
    n_chunks, k = partk.shape
    for a in range(k):
        kappa_out[a] = 0.0
        for b in range(k):
            M_out[a, b] = 0.0
    for c in range(n_chunks):
        for a in range(k):
            kappa_out[a] += partk[c, a]
            for b in range(a, k):
                M_out[a, b] += partM[c, a, b]
    for a in range(k):
        for b in range(a):
            M_out[a, b] = M_out[b, a]


def weighted_gram(E, q, M_out, kappa_out):
    """M_out = Eᵀ diag(q) E and kappa_out = Eᵀ q.

    Rows are summed in fixed chunks of 2048 (one partial each), and the partials are added in
    chunk order: the result does not depend on the thread count. Inside a chunk, blocks of 64
    rows are copied transposed (float64) so that every entry of the upper triangle is one
    contiguous dot product over the block. The chunks are split into one block per thread,
    each computed by the serial, GIL-free :func:`_gram_partials` (:mod:`.rowpool`; a
    ``parallel=True`` kernel cost three times as much to compile).
    """
    n, k = E.shape
    n_chunks = (n + _GRAM_CHUNK - 1) // _GRAM_CHUNK
    partM = np.zeros((n_chunks, k, k))
    partk = np.zeros((n_chunks, k))
    run_rows(lambda lo, hi: _gram_partials(E, q, lo, hi, partM, partk),
             np.zeros(n_chunks + 1, dtype=np.int64), 1)
    _gram_sum(partM, partk, M_out, kappa_out)
