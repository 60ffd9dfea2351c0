"""fBGD kernels: weighted Gram caches, all-sample gradients, coordinate and batch updates.

Notation (Yuan et al., eq. 1-2 and 6-10).  One *side* is the block of rows being
updated (users with embeddings ``E`` = P, or items with ``E`` = Q) and ``F`` is the
other side's embeddings.  The all-pairs part of the loss enters only through the
other side's caches ``S`` (g×g) and ``s`` (g), scaled per row by ``rowscale``
(1 for users, α⁻_y for items).  Positives are visited through a CSR of the side
(``indptr``, ``indices``) with per-positive arrays stored in that CSR's entry order
(the item side's copies are permuted once at the boundary): ``apos`` (α⁺), ``rpos``
(r⁺), ``aneg`` (α⁻ of the entry's item) for the loss, and for the gradients the
coefficients ``cpos`` = α⁺ − α⁻ and ``bpos`` = α⁺ r⁺ − α⁻ r⁻, so that
∂/∂r̂ of the positive correction is e = 2 (cpos · r̂ − bpos).

For one row i of a side the gradient of J with respect to its embedding is

    G[i] = rowscale[i] · 2 (S e_i − r⁻ s) + Σ_{positives (i, j)} e_ij f_j,
    e_ij = 2 (α⁺ (r̂ − r⁺) − α⁻ (r̂ − r⁻)) = 2 (cpos · r̂ − bpos).

The update kernels take the L2 penalty as an array ``lam_rows``: λ_j of parameter row j of Θ
(frequency-scaled regularisation gives every row its own), or a single value for every row
(the compact form: the same arithmetic as a scalar penalty, bit for bit).

No kernel validates its input; ``prange`` (or a thread of :func:`.rowpool.run_rows`) runs
over rows that own their outputs.

:func:`wls_rows` is fBGD's row problem for fold-in: a weighted least-squares row
(H0 + λ_i I + Σ_t d_t g_t g_tᵀ) x = b0 + λ_i u0 + Σ_t e_t g_t, one k×k Cholesky solve per row.
"""

import numba as nb
import numpy as np

from . import linalg as LA
from .rowpool import MIN_BLOCK_WORK, run_rows

_JIT = dict(nogil=True, cache=True)
_JIT_DOT = dict(_JIT, fastmath={"reassoc", "contract"})   # sums that may be reassociated


@nb.njit(**_JIT_DOT)
def _row_dot(A, a, B, b):
    """A[a] · B[b] (reassociated, so it vectorises)."""
    acc = 0.0
    for u in range(A.shape[1]):
        acc += A[a, u] * B[b, u]
    return acc


@nb.njit(**_JIT)
def _positive_terms_rows(lo, hi, indptr, indices, apos, rpos, aneg, P, Q, r_neg, pred_out, row_out):
    """``positive_terms`` for the rows lo .. hi − 1 (serial, GIL-free)."""
    for x in range(lo, hi):
        acc = 0.0
        for p in range(indptr[x], indptr[x + 1]):
            r = _row_dot(P, x, Q, indices[p])
            pred_out[p] = r
            a = rpos[p] - r
            b = r_neg - r
            acc += apos[p] * a * a - aneg[p] * b * b
        row_out[x] = acc


def positive_terms(indptr, indices, apos, rpos, aneg, P, Q, r_neg, pred_out, row_out):
    """pred_out[p] = p_x · q_y; row_out[x] = Σ_p α⁺(r⁺ − r̂)² − α⁻(r⁻ − r̂)² over row x.

    Also used on the item side with (Q, P) swapped: the dot product is symmetric.  The dot
    products are reassociated (they vectorise).

    Rows in contiguous blocks, one per thread (:func:`.rowpool.run_rows`).
    """
    def block(lo, hi):
        _positive_terms_rows(lo, hi, indptr, indices, apos, rpos, aneg, P, Q, r_neg,
                             pred_out, row_out)

    run_rows(block, indptr, 1, min_work=MIN_BLOCK_WORK)


@nb.njit(**_JIT)
def _side_gradient_rows(lo, hi, indptr, indices, cpos, bpos, E, F, S, s, rowscale, r_neg, G_out):
    """``side_gradient`` for the rows lo .. hi − 1 (serial, GIL-free)."""
    g = E.shape[1]
    for i in range(lo, hi):
        c = 2.0 * rowscale[i]
        for d in range(g):
            acc = 0.0
            for t in range(g):
                acc += S[d, t] * E[i, t]
            G_out[i, d] = c * (acc - r_neg * s[d])
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            r = 0.0
            for d in range(g):
                r += E[i, d] * F[j, d]
            e = 2.0 * (cpos[p] * r - bpos[p])
            for d in range(g):
                G_out[i, d] += e * F[j, d]


def side_gradient(*args):
    """side_gradient(indptr, indices, cpos, bpos, E, F, S, s, rowscale, r_neg, G_out).

    G_out[i] = ∂J/∂e_i (see the module docstring); r̂ is recomputed from E and F.  Rows in
    contiguous blocks, one per thread (:func:`.rowpool.run_rows`).  (``*args``: the callers
    pass a side's arrays as ``*side``, which mypy cannot count against named parameters.)
    """
    indptr, E = args[0], args[4]
    run_rows(lambda lo, hi: _side_gradient_rows(lo, hi, *args), indptr, E.shape[1],
             min_work=MIN_BLOCK_WORK)


@nb.njit(**_JIT)
def _step(accum, j, d, grad, lr, adagrad, eps):
    """The step γ_t·grad of parameter (j, d): Adagrad (eq. 24, accumulating grad²) or plain."""
    if not adagrad:
        return lr * grad
    accum[j, d] += grad * grad
    den = np.sqrt(accum[j, d])
    if den == 0.0:
        den = eps
    return lr * grad / den


@nb.njit(**_JIT)
def _lam(lam_rows, j):
    """λ_j of parameter row j: ``lam_rows[j]``, or the one value of the compact form."""
    return lam_rows[0] if lam_rows.shape[0] == 1 else lam_rows[j]


@nb.njit(parallel=True, **_JIT)
def batch_update(grad, free, theta, accum, lr, lam_rows, adagrad, eps):
    """θ_j ← θ_j − γ_t (∇_j + 2 λ_j θ_j) on the free entries; Adagrad (eq. 24) or plain steps."""
    g = theta.shape[1]
    for j in nb.prange(theta.shape[0]):
        lam = _lam(lam_rows, j)
        for d in range(g):
            if not free[j, d]:
                continue
            gr = grad[j, d] + 2.0 * lam * theta[j, d]
            theta[j, d] -= _step(accum, j, d, gr, lr, adagrad, eps)


@nb.njit(**_JIT)
def coordinate_side(j_lo, j_hi, zt_indptr, zt_indices, zt_data, free, theta, accum,
                    indptr, indices, cpos, bpos, pred,
                    E, FT, S, s, rowscale, r_neg, lr, lam_rows, adagrad, eps):
    """Appendix B over the parameters j_lo .. j_hi − 1 of a side: θ[j, d] by θ[j, d], serially
    (penalty λ_j of ``lam_rows``).

    ``zt_*`` is the transposed feature matrix (row j lists the rows i with z_ij ≠ 0);
    ``FT`` is the other side's embeddings transposed (g × n_other), so that coordinate d
    of the other side is one contiguous vector.  After each step the embeddings E[i, d]
    (eq. 20) and the cached predictions ``pred`` of the positives in those rows are
    moved by the same change, so every gradient is exact at the current point.
    """
    g = E.shape[1]
    for j in range(j_lo, j_hi):
        lam = _lam(lam_rows, j)
        for d in range(g):
            if not free[j, d]:
                continue
            Fd = FT[d]
            grad = 0.0
            for t in range(zt_indptr[j], zt_indptr[j + 1]):
                i = zt_indices[t]
                acc = 0.0
                for u in range(g):
                    acc += S[d, u] * E[i, u]
                gi = 2.0 * rowscale[i] * (acc - r_neg * s[d])
                for p in range(indptr[i], indptr[i + 1]):
                    gi += 2.0 * (cpos[p] * pred[p] - bpos[p]) * Fd[indices[p]]
                grad += zt_data[t] * gi
            grad += 2.0 * lam * theta[j, d]
            step = _step(accum, j, d, grad, lr, adagrad, eps)
            if step == 0.0:
                continue
            theta[j, d] -= step
            for t in range(zt_indptr[j], zt_indptr[j + 1]):
                i = zt_indices[t]
                delta = -zt_data[t] * step
                E[i, d] += delta
                for p in range(indptr[i], indptr[i + 1]):
                    pred[p] += delta * Fd[indices[p]]


# --------------------------------------------------------------------------- row-parallel coordinates
# With the other side (F, S, s) fixed, the loss separates over the rows of this side: the
# partial derivative for θ[j, d] reads only the rows i with z_ij ≠ 0 (their embeddings and the
# predictions of their positives).  A parameter whose feature column has a single entry
# (z_ij ≠ 0 for one row i, e.g. the one-hot id) therefore touches row i alone, and consecutive
# such parameters on distinct rows commute: running them in parallel gives exactly the serial
# iterate of ``coordinate_side``, up to the reassociated sums below.

_JIT_REASSOC = dict(_JIT, fastmath={"reassoc"})     # no contraction: p + δ·f rounds as in the serial kernel
_TILE_MAX = 1 << 18         # doubles of one row's positives copied transposed (2 MiB); longer rows gather


@nb.njit(**_JIT_DOT)
def _positive_part(c, b, p, v):
    """Σ_t 2 (c_t p_t − b_t) v_t (reassociated)."""
    acc = 0.0
    for t in range(p.shape[0]):
        acc += 2.0 * (c[t] * p[t] - b[t]) * v[t]
    return acc


@nb.njit(**_JIT_REASSOC)
def _moved_positive_part(c, b, p, v, delta, v_prev):
    """p_t += delta · v_prev_t (the previous coordinate's step), then ``_positive_part``."""
    acc = 0.0
    for t in range(p.shape[0]):
        q = p[t] + delta * v_prev[t]
        p[t] = q
        acc += 2.0 * (c[t] * q - b[t]) * v[t]
    return acc


@nb.njit(parallel=True, **_JIT)
def coordinate_rows(bounds, fresh, zt_indptr, zt_indices, zt_data, free, theta, accum,
                    indptr, indices, cpos, bpos, pred,
                    E, F, FT, S, s, rowscale, r_neg, lr, lam_rows, adagrad, eps,
                    apos, rpos, aneg, perm, row_loss, pred_out):
    """Appendix B over the parameters bounds[0] .. bounds[-1], each of one row, in parallel.

    Every parameter j in the range either has no free coordinate (skipped) or exactly one
    feature entry (row i, value z), and no two of the latter share a row (the caller
    checks).  Chunk c = bounds[c] .. bounds[c + 1] is one ``prange`` iteration.  For each
    parameter, the predictions r̂ = e_i · f_y of the row's positives are read from ``pred``
    (its CSR slice), or computed there first with ``fresh``; then coordinate d = 0 .. g − 1
    takes the step of ``coordinate_side`` with the same Adagrad arithmetic and penalty λ_j.  Only the sums
    S[d] · e_i and Σ_p e_p f_yd are reassociated.  The rows f_y of the positives are copied
    once, transposed, into a scratch tile T (T[d] = coordinate d of each f_y, contiguous);
    rows too long for the tile gather FT[d] per coordinate instead.  Coordinate d's step
    moves the predictions inside the next coordinate's pass (the same additions, one pass
    fewer).  The result does not depend on the thread count.

    Fused passes.  With a non-empty ``pred_out`` the final pass that moves the
    predictions also writes each updated r̂ to ``pred_out[perm[p]]`` (the other side's entry
    order, ready for its update); with a non-empty ``row_loss`` it sums the row's positive
    part of loss (2) at the updated point, Σ_p α⁺(r⁺ − r̂)² − α⁻(r⁻ − r̂)², into
    ``row_loss[i]`` (``apos``, ``rpos``, ``aneg`` in the side's entry order, as
    ``positive_terms`` takes them).  r̂ is the moved prediction, the same sum as a fresh dot
    product up to rounding.  The caller asks for either only when every row of the side is
    one parameter with all coordinates free (plain ids), so that every row is visited; empty
    arrays leave the kernel as it was.
    """
    want_loss = row_loss.shape[0] > 0
    want_pred = pred_out.shape[0] > 0
    g = E.shape[1]
    tile_rows = max(1, _TILE_MAX // g)
    for c in nb.prange(bounds.shape[0] - 1):
        longest = 0
        for j in range(bounds[c], bounds[c + 1]):
            if zt_indptr[j + 1] - zt_indptr[j] == 1:
                i = zt_indices[zt_indptr[j]]
                longest = max(longest, indptr[i + 1] - indptr[i])
        tile = np.empty(g * min(longest, tile_rows))
        buf_a = np.empty(longest if longest > tile_rows else 0)
        buf_b = np.empty(buf_a.shape[0])
        for j in range(bounds[c], bounds[c + 1]):
            if zt_indptr[j + 1] - zt_indptr[j] != 1 or not free[j].any():
                continue            # a parameter without free coordinates is a no-op
            i = zt_indices[zt_indptr[j]]
            z = zt_data[zt_indptr[j]]
            lam = _lam(lam_rows, j)
            lo = indptr[i]
            hi = indptr[i + 1]
            cnt = hi - lo
            p = pred[lo:hi]
            idx = indices[lo:hi]
            cp = cpos[lo:hi]
            bp = bpos[lo:hi]
            tiled = cnt <= tile_rows
            T = tile[:g * cnt].reshape((g, cnt)) if tiled else tile[:0].reshape((g, 0))
            bt = buf_a[:cnt]
            bt_prev = buf_b[:cnt]
            if tiled:                   # T[d] = coordinate d of the positives' f_y
                for t in range(cnt):
                    y = idx[t]
                    if fresh:
                        p[t] = _row_dot(E, i, F, y)
                    for d in range(g):
                        T[d, t] = F[y, d]
            elif fresh:
                for t in range(cnt):
                    p[t] = _row_dot(E, i, F, idx[t])
            last = -1                   # the coordinate whose step still has to move p
            delta = 0.0
            for d in range(g):
                if not free[j, d]:
                    continue
                gi = 2.0 * rowscale[i] * (_row_dot(S, d, E, i) - r_neg * s[d])
                if tiled:
                    v = T[d]
                else:
                    f = FT[d]
                    for t in range(cnt):    # scalar loads, outside the vectorised sums
                        bt[t] = f[idx[t]]
                    v = bt
                if last >= 0:
                    gi += _moved_positive_part(cp, bp, p, v, delta, T[last] if tiled else bt_prev)
                else:
                    gi += _positive_part(cp, bp, p, v)
                last = -1
                grad = 0.0
                grad += z * gi
                grad += 2.0 * lam * theta[j, d]
                step = _step(accum, j, d, grad, lr, adagrad, eps)
                if step == 0.0:
                    continue
                theta[j, d] -= step
                delta = -z * step
                E[i, d] += delta
                last = d
                if not tiled:
                    bt, bt_prev = bt_prev, bt
            if last >= 0 or want_loss or want_pred:     # the last step's move, and the fused passes
                v = T[last] if tiled and last >= 0 else bt_prev
                acc = 0.0
                for t in range(cnt):
                    r = p[t]
                    if last >= 0:
                        r = r + delta * v[t]
                        p[t] = r
                    if want_pred:
                        pred_out[perm[lo + t]] = r
                    if want_loss:
                        a = rpos[lo + t] - r
                        b = r_neg - r
                        acc += apos[lo + t] * a * a - aneg[lo + t] * b * b
                if want_loss:
                    row_loss[i] = acc


# ------------------------------------------------------------------ fold-in rows

@nb.njit(parallel=True, **_JIT_DOT)
def wls_rows(indptr, indices, d, e, E, H0, b0, lam_rows, u0, X_out, ok_out):
    """X_out[i] solves (H0 + λ_i I + Σ_t d_t E[j_t] E[j_t]ᵀ) x = b0 + λ_i u0 + Σ_t e_t E[j_t]
    over row i's entries, λ_i = ``lam_rows[i]``.

    An empty ``lam_rows`` adds nothing (one penalty for every row is then part of H0 and b0).
    ``ok_out[i]`` is False when the matrix is not positive definite (the caller then solves that
    row by a minimum-norm least-squares solve).
    """
    own = lam_rows.shape[0] > 0
    m, k = X_out.shape
    for i in nb.prange(m):
        lo = indptr[i]
        nrow = indptr[i + 1] - lo
        G = np.empty((nrow, k))
        Gd = np.empty((k, nrow))
        LA.gather(E, indices, lo, nrow, G)
        H = np.empty((k, k))
        L = np.zeros((k, k))
        b = np.empty(k)
        x = np.zeros(k)
        LA.weighted_gram(G, d[lo:lo + nrow], nrow, Gd, H)
        for a in range(k):
            b[a] = b0[a]
            for c in range(k):
                H[a, c] += H0[a, c]
        if own:
            lam = lam_rows[i]
            for a in range(k):
                H[a, a] += lam
                b[a] += lam * u0[a]
        for t in range(nrow):
            et = e[lo + t]
            for a in range(k):
                b[a] += et * G[t, a]
        ok = LA.cholesky(H, L)
        if ok:
            LA.cho_solve(L, b, x)
        ok_out[i] = ok
        for a in range(k):
            X_out[i, a] = x[a]
