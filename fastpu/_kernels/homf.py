"""Kernels for HOMF: blocks of columns of f_T(A) and the per-column ridge solves.

A block of ``b`` columns of f_T(A) = (A + ... + A^T)/T is built by the column
recursion a_1 = A e_c, a_t = a_1 + A a_{t-1}, run for all ``b`` columns at once
as sparse × dense-block products (``walk_step``).  Each ``prange`` iteration (or
each thread's block of :func:`.rowpool.run_rows`) owns whole output rows (walk) or
columns of the block (solves), so results do not depend on the thread count.

Dense mode's f_T(P) L = (1/T) Σ_l P^l L runs all T sparse × (N×k) products of Horner's rule in
one call (``horner_walk``).  Its rows add eight stored entries' terms (as a balanced tree)
before touching the output row: a reassociation of the sum that cuts the loads and stores of
the output row, and the dependency through them, eightfold; the rows are handed out to the
threads in chunks of equal nonzeros instead of equal rows.
"""

import numba as nb
import numpy as np

from .rowpool import run_rows

_JIT = dict(nogil=True, cache=True)


@nb.njit(parallel=True, **_JIT)
def scatter_columns(t_indptr, t_indices, t_data, cols, out):
    """out[:, c] = A[:, cols[c]] given Aᵀ as CSR (row cols[c] of Aᵀ is column cols[c] of A)."""
    n_rows = out.shape[0]
    b = cols.shape[0]
    for r in nb.prange(n_rows):
        for c in range(b):
            out[r, c] = 0.0
    for c in nb.prange(b):
        j = cols[c]
        for p in range(t_indptr[j], t_indptr[j + 1]):
            out[t_indices[p], c] = t_data[p]


@nb.njit(parallel=True, **_JIT)
def walk_step(indptr, indices, data, first, prev, out):
    """out = first + A @ prev (one step of a_t = a_1 + A a_{t-1} on a dense block)."""
    b = prev.shape[1]
    for i in nb.prange(indptr.shape[0] - 1):
        for c in range(b):
            out[i, c] = first[i, c]
        for p in range(indptr[i], indptr[i + 1]):
            a = data[p]
            j = indices[p]
            for c in range(b):
                out[i, c] += a * prev[j, c]


@nb.njit(**_JIT)
def _walk_row(indptr, indices, data, X, i, first, add_first, scale, out):
    """out[i] = scale · (first[i] + Σ_p data[p] X[indices[p]]) over row i, eight entries at a time.

    The eight terms of a group are summed as a balanced tree before they are added to out[i]
    (then a group of four, then single entries): out[i] is loaded and stored once per group
    and the groups' sums are independent of each other.  Indices are read as unsigned (they
    are never negative), which spares the wrap-around of a negative index.
    """
    b = X.shape[1]
    o = out[i]
    if add_first:
        f = first[i]
        for c in range(b):
            o[c] = f[c]
    else:
        for c in range(b):
            o[c] = 0.0
    p = indptr[i]
    stop = indptr[i + 1]
    while p + 8 <= stop:
        a0 = data[p]
        a1 = data[p + 1]
        a2 = data[p + 2]
        a3 = data[p + 3]
        a4 = data[p + 4]
        a5 = data[p + 5]
        a6 = data[p + 6]
        a7 = data[p + 7]
        x0 = X[nb.uint64(indices[p])]
        x1 = X[nb.uint64(indices[p + 1])]
        x2 = X[nb.uint64(indices[p + 2])]
        x3 = X[nb.uint64(indices[p + 3])]
        x4 = X[nb.uint64(indices[p + 4])]
        x5 = X[nb.uint64(indices[p + 5])]
        x6 = X[nb.uint64(indices[p + 6])]
        x7 = X[nb.uint64(indices[p + 7])]
        for c in range(b):
            o[c] += (((a0 * x0[c] + a1 * x1[c]) + (a2 * x2[c] + a3 * x3[c]))
                     + ((a4 * x4[c] + a5 * x5[c]) + (a6 * x6[c] + a7 * x7[c])))
        p += 8
    if p + 4 <= stop:
        a0 = data[p]
        a1 = data[p + 1]
        a2 = data[p + 2]
        a3 = data[p + 3]
        x0 = X[nb.uint64(indices[p])]
        x1 = X[nb.uint64(indices[p + 1])]
        x2 = X[nb.uint64(indices[p + 2])]
        x3 = X[nb.uint64(indices[p + 3])]
        for c in range(b):
            o[c] += (a0 * x0[c] + a1 * x1[c]) + (a2 * x2[c] + a3 * x3[c])
        p += 4
    while p < stop:
        a0 = data[p]
        x0 = X[nb.uint64(indices[p])]
        for c in range(b):
            o[c] += a0 * x0[c]
        p += 1
    if scale != 1.0:
        for c in range(b):
            o[c] *= scale


@nb.njit(parallel=True, **_JIT)
def horner_walk(indptr, indices, data, chunks, L, T, first, work, out):
    """out = (1/T) Σ_{l=1}^T P^l L by Horner: a_1 = P L, a_t = a_1 + P a_{t-1}, out = a_T / T.

    ``first`` and ``work`` are N×k scratch (a_1 and the odd/even iterates; a_T lands in
    ``out``).  ``chunks`` (increasing, from 0 to N) cuts the rows into ranges of about equal
    nonzeros, one per ``prange`` iteration; every row is computed whole by one thread, so the
    result depends neither on the thread count nor on ``chunks``.
    """
    n_chunks = chunks.shape[0] - 1
    src = L
    for t in range(1, T + 1):
        # a_1 goes to first (to out when T = 1); then out and work alternate, a_T lands in out
        if t == 1:
            dst = out if T == 1 else first
        else:
            dst = out if (T - t) % 2 == 0 else work
        scale = 1.0 / T if t == T else 1.0
        for q in nb.prange(n_chunks):        # one parallel loop for every step: compiled once
            for i in range(chunks[q], chunks[q + 1]):
                _walk_row(indptr, indices, data, src, i, first, t > 1, scale, dst)
        src = dst


@nb.njit(**_JIT)
def _cholesky_solve(G, rhs, x):
    """Solve G x = rhs for symmetric positive definite G in place (G is overwritten by L)."""
    k = G.shape[0]
    for j in range(k):
        s = G[j, j]
        for q in range(j):
            s -= G[j, q] * G[j, q]
        if s <= 0.0:
            return False
        d = np.sqrt(s)
        G[j, j] = d
        for i in range(j + 1, k):
            s = G[i, j]
            for q in range(j):
                s -= G[i, q] * G[j, q]
            G[i, j] = s / d
    for i in range(k):
        s = rhs[i]
        for q in range(i):
            s -= G[i, q] * x[q]
        x[i] = s / G[i, i]
    for i in range(k - 1, -1, -1):
        s = x[i]
        for q in range(i + 1, k):
            s -= G[q, i] * x[q]
        x[i] = s / G[i, i]
    return True


@nb.njit(**_JIT)
def ridge_block(lo, hi, Ct, U, UtU, lam2, dense, out, loss_out, ok_out):
    """For each row c = lo .. hi − 1 of Ct (a column x of f_T(A)), solve
    (U_Ωᵀ U_Ω + lam2 I) v = U_Ωᵀ x_Ω.

    Ω = nonzeros of x (every entry when ``dense``).  The Gram over Ω is summed over Ω
    or taken as UtU minus the sum over the complement, whichever is shorter.
    loss_out[c] = Σ_Ω (x_r - u_r·v)², computed from the pieces of the solve.
    """
    n = Ct.shape[1]
    k = U.shape[1]
    for c in range(lo, hi):
        rhs = np.zeros(k)
        G = np.empty((k, k))
        v = np.empty(k)
        sumsq = 0.0
        nnz = 0
        for r in range(n):
            x = Ct[c, r]
            if x != 0.0:
                nnz += 1
                sumsq += x * x
                for a in range(k):
                    rhs[a] += x * U[r, a]
        if dense or 2 * nnz > n:
            for a in range(k):
                for q in range(k):
                    G[a, q] = UtU[a, q]
            if not dense:
                for r in range(n):
                    if Ct[c, r] == 0.0:
                        for a in range(k):
                            ua = U[r, a]
                            for q in range(a, k):
                                G[a, q] -= ua * U[r, q]
        else:
            for a in range(k):
                for q in range(k):
                    G[a, q] = 0.0
            for r in range(n):
                if Ct[c, r] != 0.0:
                    for a in range(k):
                        ua = U[r, a]
                        for q in range(a, k):
                            G[a, q] += ua * U[r, q]
        for a in range(k):
            for q in range(a):
                G[a, q] = G[q, a]
        # Ω-loss after the solve: sumsq - 2 v·rhs + vᵀ G_Ω v, with G_Ω = G before the ridge.
        Gs = G.copy()
        for a in range(k):
            G[a, a] += lam2
        ok = _cholesky_solve(G, rhs, v)
        ok_out[c] = ok
        quad = 0.0
        lin = 0.0
        for a in range(k):
            lin += v[a] * rhs[a]
            acc = 0.0
            for q in range(k):
                acc += Gs[a, q] * v[q]
            quad += v[a] * acc
        loss_out[c] = sumsq - 2.0 * lin + quad
        for a in range(k):
            out[c, a] = v[a]


def ridge_columns(Ct, U, UtU, lam2, dense, out, loss_out, ok_out):
    """``ridge_block`` for every row of Ct, in contiguous blocks of rows, one per thread.

    Each column's solve is done whole by one thread, so the result does not depend on the
    thread count; the serial GIL-free kernel on Python threads (:func:`.rowpool.run_rows`)
    compiles in a fraction of a ``parallel=True`` kernel's time.
    """
    b = Ct.shape[0]
    if b == 0:
        return
    run_rows(lambda lo, hi: ridge_block(lo, hi, Ct, U, UtU, lam2, dense, out, loss_out, ok_out),
             np.zeros(b + 1, dtype=np.int64), 1)


@nb.njit(parallel=True, **_JIT)
def block_loss(Ct, U, Vb, dense, loss_out):
    """loss_out[c] = Σ_r (Ct[c, r] - U[r]·Vb[c])² over Ω = nonzeros of Ct[c] (all r when dense)."""
    b, n = Ct.shape
    k = U.shape[1]
    for c in nb.prange(b):
        acc = 0.0
        for r in range(n):
            x = Ct[c, r]
            if dense or x != 0.0:
                s = 0.0
                for a in range(k):
                    s += U[r, a] * Vb[c, a]
                d = x - s
                acc += d * d
        loss_out[c] = acc
