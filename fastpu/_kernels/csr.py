"""Sparse × dense products over CSR arrays, in scipy's argument order.

Each ``prange`` iteration owns one output row, so results do not depend on the
thread count.  Column-side products (Aᵀ D) run the row kernel on a transposed
CSR built once at the boundary, with ``perm`` mapping its entries back to the
original entry order so that per-entry values computed in row order can be reused.
"""

import numba as nb
import numpy as np
from threadpoolctl import ThreadpoolController

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
def _group_dots(E, q, b_lo, nb_, Et, Qt, G, g):
    """G[a, b] (b ≥ a) = Σ_t q_t E[t, a] E[t, b] and g[a] = Σ_t q_t E[t, a] over the ``nb_``
    rows from ``b_lo``: the block is copied transposed (float64), so that every entry is one
    contiguous dot product. The same rows give the same numbers wherever they are computed."""
    k = E.shape[1]
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
        g[a] = acc
        for b in range(a, k):
            acc = 0.0
            for t in range(nb_):
                acc += Qt[a, t] * Et[b, t]
            G[a, b] = acc


@nb.njit(**_JIT_DOT)
def _gram_partials(E, q, c_lo, c_hi, partM, partk, first):
    """partM[c - first] = upper triangle of Eᵀ diag(q) E and partk[c - first] = Eᵀ q over
    chunk c's rows, for the chunks c_lo:c_hi (zeroed by the caller).

    Serial and GIL-free: :func:`weighted_gram` runs blocks of chunks on its threads.
    """
    n, k = E.shape
    Et = np.empty((k, _GRAM_BLOCK))
    Qt = np.empty((k, _GRAM_BLOCK))
    G = np.empty((k, k))
    g = np.empty(k)
    for c in range(c_lo, c_hi):
        lo = c * _GRAM_CHUNK
        hi = min(n, lo + _GRAM_CHUNK)
        for b_lo in range(lo, hi, _GRAM_BLOCK):
            _group_dots(E, q, b_lo, min(hi, b_lo + _GRAM_BLOCK) - b_lo, Et, Qt, G, g)
            for a in range(k):
                partk[c - first, a] += g[a]
                for b in range(a, k):
                    partM[c - first, a, b] += G[a, b]


@nb.njit(**_JIT)
def _gram_add(partM, partk, n_parts, M_out, kappa_out):
    """M_out, kappa_out += the first ``n_parts`` partials, added in order (upper triangle)."""
    k = partk.shape[1]
    for c in range(n_parts):
        for a in range(k):
            kappa_out[a] += partk[c, a]
            for b in range(a, k):
                M_out[a, b] += partM[c, a, b]


#: chunks whose partials are held at once (per wave of :func:`weighted_gram` and
#: :func:`gram_parts`): the partials of a wave are computed on the threads, then added to the
#: total in chunk order, so memory is WAVE k×k matrices however many rows, and the sums are
#: those of adding every chunk's partial in chunk order.
_WAVE = 8


def _waves(n_chunks, compute, add):
    """``compute(lo, hi, offset)`` the partials of chunks lo:hi (on fastpu's threads), then
    ``add(count)`` them, wave after wave of :data:`_WAVE` chunks."""
    for w_lo in range(0, n_chunks, _WAVE):
        w_hi = min(n_chunks, w_lo + _WAVE)
        run_rows(lambda lo, hi: compute(w_lo + lo, w_lo + hi, w_lo),
                 np.zeros(w_hi - w_lo + 1, dtype=np.int64), 1)
        add(w_hi - w_lo)


def weighted_gram(E, q, M_out, kappa_out):
    """M_out = Eᵀ diag(q) E and kappa_out = Eᵀ q.

    Rows are summed in fixed chunks of 2048 (one partial each), and the partials are added in
    chunk order: the result does not depend on the thread count. Inside a chunk, blocks of 64
    rows are copied transposed (float64) so that every entry of the upper triangle is one
    contiguous dot product over the block. The chunks' partials are computed a wave of
    :data:`_WAVE` chunks at a time on fastpu's threads (:mod:`.rowpool`; the serial, GIL-free
    :func:`_gram_partials`), so that memory stays a few k×k matrices.
    """
    n, k = E.shape
    n_chunks = (n + _GRAM_CHUNK - 1) // _GRAM_CHUNK
    waves = min(n_chunks, _WAVE)
    partM = np.zeros((waves, k, k))
    partk = np.zeros((waves, k))
    M_out[...] = 0.0
    kappa_out[...] = 0.0

    def compute(lo, hi, offset):
        partM[lo - offset:hi - offset] = 0.0
        partk[lo - offset:hi - offset] = 0.0
        _gram_partials(E, q, lo, hi, partM[lo - offset:], partk[lo - offset:], lo)

    _waves(n_chunks, compute, lambda count: _gram_add(partM, partk, count, M_out, kappa_out))
    for a in range(k):
        M_out[a, :a] = M_out[:a, a]


#: Rows per group of :func:`gram_parts` and per BLAS product of :func:`turn_rows`, counted from
#: the first row of the whole matrix. A group's Gram is one BLAS product of its rows, and the
#: groups' Grams are added without rounding error: two calls whose rows are cut at multiples of
#: this many rows give the same parts' sum (a Dask fit's blocks are cut so). 1024 rows make
#: every product BLAS-3 sized (an (k × 1024)·(1024 × k) product at k = 1024 runs near the
#: machine's peak), where 64-row products were a third of that.
GRAM_GROUP = 1024


@nb.njit(**_JIT)                # no fastmath: the error-free sums below must stay as written
def _two_sum_add(G, g, hiM, loM, hik, lok):
    """(hiM, loM) += G (upper triangle) and (hik, lok) += g, each by a two-sum: the high
    parts' rounded sum, its exact error into the low parts."""
    k = g.shape[0]
    for a in range(k):
        x = g[a]
        h = hik[a]
        s = h + x
        v = s - h
        lok[a] += (h - (s - v)) + (x - v)
        hik[a] = s
        for b in range(a, k):
            x = G[a, b]
            h = hiM[a, b]
            s = h + x
            v = s - h
            loM[a, b] += (h - (s - v)) + (x - v)
            hiM[a, b] = s


def _group_grams(E, q, g_lo, g_hi, acc):
    """The groups g_lo:g_hi: each group's Xqᵀ X and Xqᵀ 1 (X its rows in float64, Xq = diag(q)
    X) by one BLAS product, added into the pairs ``acc`` = (hiM, loM, hik, lok) by two-sums.

    A group whose weights are all one value c (the default weights, and ρ·p with the default p)
    takes c XᵀX, whose product NumPy hands to BLAS's symmetric rank-k update: half the
    multiply-adds of the general product Xqᵀ X, which it equals up to rounding (bit for bit
    when c = 1 on OpenBLAS here; the tests compare them to a tolerance). NumPy's casts,
    products and BLAS calls release the GIL, so threads run side by side."""
    n = E.shape[0]
    for grp in range(g_lo, g_hi):
        lo = grp * GRAM_GROUP
        hi = min(n, lo + GRAM_GROUP)
        X = E[lo:hi].astype(np.float64)
        qg = q[lo:hi]
        c = qg[0]                        # a group has at least one row (lo < n)
        if (qg == c).all():
            G = X.T @ X                  # the same buffer twice: NumPy calls syrk
            if c != 1.0:
                G *= c
            Xq = X if c == 1.0 else X * c
        else:
            Xq = X * qg[:, None]
            G = Xq.T @ X
        _two_sum_add(G, Xq.sum(axis=0), *acc)


def _pair_add(hi, lo, x_hi, x_lo):
    """(hi, lo) += (x_hi, x_lo) in place: the high parts' two-sum, its error into the low part."""
    s = hi + x_hi
    v = s - hi
    lo += x_lo + ((hi - (s - v)) + (x_hi - v))
    hi[...] = s


def gram_parts(E, q):
    """Eᵀ diag(q) E (upper triangle) and Eᵀ q as unevaluated sums ``hi + lo`` of float64 pairs:
    ``(M_hi, M_lo, kappa_hi, kappa_lo)``; :func:`sum_gram_parts` adds and rounds them.

    The rows are taken in groups of :data:`GRAM_GROUP`, each group's Gram one BLAS product of
    its rows in float64 (on one BLAS thread), and the groups' results are added with their
    rounding errors kept (Ogita, Rump and Oishi's Sum2: about twice float64's precision). The
    rounded total therefore does not depend on the order of the additions, except when it lies
    within about 10⁻³⁰ of a rounding boundary: a matrix cut into row blocks at multiples of
    ``GRAM_GROUP`` gives, block by block, the same M as in one call, whatever the threads and
    blocks. Each thread keeps one pair of k×k sums for its groups, whatever the number of rows.
    """
    n, k = E.shape
    n_groups = (n + GRAM_GROUP - 1) // GRAM_GROUP
    parts = {}

    def block(lo, hi):
        acc = (np.zeros((k, k)), np.zeros((k, k)), np.zeros(k), np.zeros(k))
        _group_grams(E, q, lo, hi, acc)
        parts[lo] = acc                  # one pair per thread's block of groups

    if n_groups:
        with _blas_controller().limit(limits=1, user_api="blas"):
            run_rows(block, uniform_rows(n_groups), 1)
    else:
        parts[0] = (np.zeros((k, k)), np.zeros((k, k)), np.zeros(k), np.zeros(k))
    first, *rest = sorted(parts)
    tot = parts[first]
    for lo in rest:
        _pair_add(tot[0], tot[1], parts[lo][0], parts[lo][1])
        _pair_add(tot[2], tot[3], parts[lo][2], parts[lo][3])
    return tot


def sum_gram_parts(parts):
    """(M, κ) from a sequence of :func:`gram_parts` results, added as pairs and rounded once
    (M made symmetric from its upper triangle)."""
    parts = list(parts)
    Mh, Ml, kh, kl = (np.array(a, dtype=np.float64) for a in parts[0])
    for p in parts[1:]:
        _pair_add(Mh, Ml, p[0], p[1])
        _pair_add(kh, kl, p[2], p[3])
    M = np.triu(Mh + Ml)
    M += np.triu(M, 1).T
    return M, kh + kl


_CONTROLLER: list[ThreadpoolController] = []


def _blas_controller():
    """The BLAS libraries loaded in this process, found once (finding them costs about 1 ms)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


#: Rows per BLAS product of :func:`turn_rows`, counted from the first row of the whole matrix.
TURN_ROWS = GRAM_GROUP


@nb.njit(**_JIT)
def _turn_chunks(A, Q, c_lo, c_hi):
    """A[r] ← A[r] Q for the rows of chunks c_lo:c_hi (TURN_ROWS rows each), one BLAS product
    (numba's ``np.dot``, GIL-free) per chunk."""
    n, k = A.shape
    tmp = np.empty((TURN_ROWS, k), dtype=A.dtype)
    for c in range(c_lo, c_hi):
        a = c * TURN_ROWS
        b = min(n, a + TURN_ROWS)
        np.dot(A[a:b], Q, tmp[:b - a])
        A[a:b] = tmp[:b - a]


def turn_rows(A, Q, n_threads=None):
    """A ← A Q in place (A C-contiguous, Q of A's dtype, shape (k, k)), on fastpu's threads.

    The rows go through one BLAS product per chunk of :data:`TURN_ROWS` rows. A product's sums
    depend on the rows it is given (the same rows in another product may round differently), so
    the chunks are fixed by row number: a matrix cut into blocks at multiples of ``TURN_ROWS``
    rows, each block turned on its own, gets the same numbers as the whole (on the same CPU and
    BLAS), whatever fastpu's threads. Each product runs on one BLAS thread (the numbers of
    OpenBLAS's products depend on its thread count). The chunks cost about 1.1× one product
    over all rows.
    """
    m, k = A.shape
    n_chunks = -(-m // TURN_ROWS)
    if n_chunks:
        with _blas_controller().limit(limits=1, user_api="blas"):
            run_rows(lambda lo, hi: _turn_chunks(A, Q, lo, hi), uniform_rows(n_chunks),
                     TURN_ROWS * k * k, n_threads=n_threads, min_work=MIN_BLOCK_WORK)
