"""HOMF on a Dask cluster: ``mode="exact"`` (the paper's Ω_T, ``fastpu.homf.fit``'s default) and
``mode="dense"``.

Both modes alternate V ← argmin over the columns of f_T(A) = (A + … + A^T)/T with U fixed, then U
over its rows; the transition matrix A is built on the client from Y (and the side graphs) by
the same code as :func:`fastpu.homf.fit`'s (the arguments through the same checks,
:mod:`fastpu.homf._check`), and its row blocks and those of Aᵀ — the N = m + n nodes cut into
ranges — are sent to the workers once.

Dense mode. A half-step computes Z = f_T(P) L = (1/T) Σ_{l=1}^T P^l L by Horner's rule
(a_1 = P L, a_t = a_1 + P a_{t-1}; P = Aᵀ for V, A for U) and solves (LᵀL + 2λI) new = Zᵀ for
every row. Each Horner step is a sparse × dense product over row blocks of P: a block reads the
rows of a_{t-1} (and of L, for a_1) at its columns only, which are routed to it from the blocks
that computed them (:mod:`fastpu.distributed.routing`). The k×k system is the same for every row:
its Cholesky factor is computed on the client from the blocks' partial Grams, and the new rows
are solved on the blocks' workers, where they stay for the next half-step.

Exact mode. Every column of f_T(A) is its own ridge regression over its nonzeros Ω_T^i; a
column is computed by Algorithm 1's recursion, which walks T steps from the column's node, so
it reads the whole of A, and its Ω_T^i — the nodes within T steps — reads the rows of L there.
The columns are split into the node ranges of the blocks: each worker holds one copy of A and
Aᵀ (assembled there from the blocks, once) and, per half-step, the whole fixed factor L
(assembled from the blocks' rows by one task and fetched once per worker). Each column's
numbers are those of the single-machine fit (the same kernels, column by column). The mode
costs O(T·nnz(A)·N + N²k) per half-step (every column is walked as a dense N-vector), so it is
for graphs where that work, not the N×k factor each worker receives, is what a cluster
spreads; see docs/distributed.md.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from fastpu._kernels import homf as _K
from fastpu._kernels.csr import csr_dense, weighted_gram
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu.homf._check import check_g, check_graph, check_run, warn_rank
from fastpu.homf._fit import _check_fit_work, _params
from fastpu.homf._graph import transition
from fastpu.homf._solvers import DENSE_OBJECTIVE_NOTE
from fastpu.homf._solvers import _exact_half as solve_columns
from fastpu.homf._walk import _Walker
from fastpu._core.factorization import Factorization
from fastpu.distributed import blocks as _blocks
from fastpu.distributed import routing


def compact_task(block, touch):
    """A block of A (or Aᵀ) with its columns re-indexed into the nodes it touches."""
    return dataclasses.replace(block, indices=routing.compact(block.indices, touch),
                               n_cols=touch.size)


def first_task(block, k, n_threads, *pieces):
    """The block's rows of a_1 = P L (``pieces``: the rows of L at its columns)."""
    with limit_threads(n_threads):
        L = routing.assemble(k, "float64", *pieces)
        out = np.empty((block.n_rows, k))
        if block.n_rows:
            csr_dense(block.indptr, block.indices, block.data, L, out)
        return out


def step_task(block, first, k, n_threads, *pieces):
    """The block's rows of a_t = a_1 + P a_{t-1} (``pieces``: the rows of a_{t-1} at its columns)."""
    with limit_threads(n_threads):
        prev = routing.assemble(k, "float64", *pieces)
        out = np.empty_like(first)
        if block.n_rows:
            _K.walk_step(block.indptr, block.indices, block.data, first, prev, out)
        return out


def solve_task(last, T, cho, n_threads):
    """New rows = Z (LᵀL + 2λI)⁻¹ with Z = a_T / T; returns (rows, ⟨rows, Z⟩, rowsᵀrows, ‖rows‖²)."""
    with limit_threads(n_threads):
        Z = last * (1.0 / T)
        k = Z.shape[1]
        G = np.zeros((k, k))
        if Z.shape[0] == 0:
            return np.empty((0, k)), 0.0, G, 0.0
        new = np.ascontiguousarray(sla.cho_solve(cho, Z.T).T)
        weighted_gram(new, np.ones(new.shape[0]), G, np.empty(k))
        return new, float(np.sum(new * Z)), G, float(np.sum(new * new))


def gram_task(own, n_threads):
    """(FᵀF, ‖F‖²) of a block's rows ``own`` (an array or a result holding them)."""
    with limit_threads(n_threads):
        Fb = np.ascontiguousarray(_blocks.first(own))
        k = Fb.shape[1]
        G = np.zeros((k, k))
        if Fb.shape[0]:
            weighted_gram(Fb, np.ones(Fb.shape[0]), G, np.empty(k))
        return G, float(np.sum(Fb * Fb))


def _small(result):
    return result[1:]


def fit(client, Y, workers, n_blocks, k, *, user_graph, item_graph, alpha, T, g, g_user_graph,
        g_item_graph, mode, lam, n_iter, block_size, seed, n_threads, callback, verbose):
    """HOMF over row blocks of A and Aᵀ; see :func:`fastpu.distributed.fit` (which fills in
    ``fastpu.homf.fit``'s defaults and checks Y). The other arguments go through the same checks
    as ``fastpu.homf.fit``'s (:mod:`fastpu.homf._check`); ``block_size`` is exact mode's column
    blocks, as on one machine (checked only in dense mode, whose walk is blocked by rows)."""
    run = check_run(k, T=T, lam=lam, n_iter=n_iter, mode=mode, block_size=block_size,
                    callback=callback, verbose=verbose, seed=seed)
    g, g1, g3 = check_g(g, g_user_graph, g_item_graph)
    graph = check_graph(Y.shape, user_graph=user_graph, item_graph=item_graph, alpha=alpha, g=g,
                        g_user_graph=g1, g_item_graph=g3)
    warn_rank(run, Y.shape)
    m, n = Y.shape
    N = m + n
    block = _check_fit_work(N, run)
    A = transition(Y, graph)
    params = dict(_params(run, graph, alpha=alpha, block_size=run.block_size,
                          n_threads=n_threads, seed=seed),
                  distributed=dict(n_blocks=n_blocks, n_workers=len(workers)))
    U = run.rng.uniform(0.0, 1.0, size=(N, run.k))
    Vf = run.rng.uniform(0.0, 1.0, size=(N, run.k))
    # blocks of A ("user" side of the layout) and of Aᵀ ("item" side): the N nodes cut in ranges
    layout = _blocks.layout_from_csr(client, A, n_blocks, workers)
    progress = Progress("homf", verbose=run.verbose, callback=run.callback,
                        advice=f"raise lam (now {run.lam:g}), which keeps the ridge systems well "
                               "conditioned", total=run.n_iter)

    def iterate(U, V):          # the callback's info["model"], as fastpu.homf.fit makes it
        return Factorization(U[:m].copy(), V[m:].copy(), params=params, method="homf")

    try:
        if run.mode == "dense":
            U, Vf = _dense(client, layout, U, run, n_threads, progress, iterate)
        else:
            U, Vf = _exact(client, layout, U, run, m, block, n_threads, progress, iterate)
    finally:
        layout.release()
    progress.finish(U, Vf, zero_advice=f"lower lam (now {run.lam:g})")
    return Factorization(user_factors=np.ascontiguousarray(U[:m]),
                         item_factors=np.ascontiguousarray(Vf[m:]), history=progress.history,
                         params=params, method="homf", extras={"U": U, "V": Vf, "A": A})


# --------------------------------------------------------------------------- dense mode

def _dense(client, layout, U, run, n_threads, progress, iterate):
    """Dense-mode iterations; returns (U, V) gathered on the client at the end."""
    progress.note(DENSE_OBJECTIVE_NOTE)
    workers = layout.workers
    on = [dict(workers=[_blocks.home(workers, b)], allow_other_workers=True, pure=False)
          for b in range(layout.n_blocks)]
    routes = routing.Routes(client, layout)
    try:
        a_blocks = [client.submit(compact_task, blk, routes.user.touch[b], **on[b])
                    for b, blk in enumerate(layout.user)]
        at_blocks = [client.submit(compact_task, blk, routes.item.touch[b], **on[b])
                     for b, blk in enumerate(layout.item)]
        routes.held += a_blocks + at_blocks
        U_src = _blocks.hold_slices(client, U, layout.ub, workers, "U")
        parts = client.gather([client.submit(gram_task, U_src[b], n_threads, **on[b])
                               for b in range(layout.n_blocks)])
        UtU = _sum_mats([p[0] for p in parts])
        sq_u = sum(p[1] for p in parts)
        V_src = None
        lam, T = run.lam, run.T
        for it in range(1, run.n_iter + 1):
            # V = f_T(A)ᵀ U (UᵀU+2λI)⁻¹ with the walk on Aᵀ; then U likewise on A
            V_src, cross, VtV, sq_v = _half(client, routes.item, at_blocks, on, U_src, UtU, T,
                                            lam, n_threads)
            obj_v = -cross + 0.5 * float(np.sum(UtU * VtV)) + lam * (sq_u + sq_v)
            U_src, cross, UtU, sq_u = _half(client, routes.user, a_blocks, on, V_src, VtV, T,
                                            lam, n_threads)
            obj = -cross + 0.5 * float(np.sum(UtU * VtV)) + lam * (sq_u + sq_v)
            if progress.step(it, obj, objective_v=obj_v, model=lambda: iterate(
                    _blocks.gather_rows(client, U_src, workers),
                    _blocks.gather_rows(client, V_src, workers))):
                break
        return (_blocks.gather_rows(client, U_src, workers),
                _blocks.gather_rows(client, V_src, workers))
    finally:
        routes.release()


def _half(client, router, blocks, on, L_src, LtL, T, lam, n_threads):
    """One dense half-step: the T Horner products, then the row solves.

    Every product reads, per block, the rows of the previous iterate at its columns, routed to
    it; the client gets only the k×k sums. The new factor's rows stay on the workers.
    """
    k = LtL.shape[0]
    cho = sla.cho_factor(LtL + 2.0 * lam * np.eye(k), lower=True)
    first = [client.submit(first_task, blk, k, n_threads, *router.pieces(L_src, b), **on[b])
             for b, blk in enumerate(blocks)]
    prev = first
    for _ in range(2, T + 1):
        prev = [client.submit(step_task, blk, first[b], k, n_threads, *router.pieces(prev, b),
                              **on[b])
                for b, blk in enumerate(blocks)]
    res = [client.submit(solve_task, prev[b], T, cho, n_threads, **on[b])
           for b in range(len(blocks))]
    small = client.gather([client.submit(_small, r, **on[b]) for b, r in enumerate(res)])
    return (res, float(sum(r[0] for r in small)), _sum_mats([r[1] for r in small]),
            float(sum(r[2] for r in small)))


# --------------------------------------------------------------------------- exact mode

def walkers_task(T, m, N, n_blocks, *blocks):
    """One worker's copy of A and Aᵀ (from the row blocks of both) and the two walks of the exact
    mode over them: columns of f_T(A) and rows (the columns of f_T(Aᵀ))."""
    A = _whole(blocks[:n_blocks], N)
    At = _whole(blocks[n_blocks:], N)
    return _Walker(A, At, T, m), _Walker(At, A, T, m)


def _whole(blocks, N):
    indptr = [np.zeros(1, dtype=np.int64)]
    off = 0
    for b in blocks:
        indptr.append(b.indptr[1:] + off)
        off += b.nnz
    indices = np.concatenate([b.indices for b in blocks])
    data = np.concatenate([b.data for b in blocks])
    return sp.csr_array((data, indices, np.concatenate(indptr)), shape=(N, N))


def exact_task(walkers, L, which, lo, hi, lam, block, n_threads):
    """The ridge solves of columns lo:hi of f_T(A) (``which`` = 0) or of its rows (1) against
    the whole fixed factor L, in column blocks of ``block`` (never straddling the user/item
    split, as on one machine). Returns (the new rows lo:hi, Σ_Ω residual², their ‖·‖²)."""
    with limit_threads(n_threads):
        out = np.empty((hi - lo, L.shape[1]))
        total = solve_columns(walkers[which], L, out, lam, block, lo, hi)
        return out, total, float(np.sum(out * out))


def _exact(client, layout, U, run, m, block, n_threads, progress, iterate):
    """Exact-mode iterations, columns split by the blocks' node ranges; returns (U, V)."""
    workers = layout.workers
    nb = layout.n_blocks
    N = layout.shape[0]
    cuts = layout.ub
    blocks = list(layout.user) + list(layout.item)
    # one copy of A, Aᵀ and their walks per worker, built there from the blocks (so Dask can
    # build it again from them); the columns of block b use the copy on b's worker
    copies = [client.submit(walkers_task, run.T, m, N, nb, *blocks, workers=[w],
                            allow_other_workers=True, key=f"fastpu-walkers-{i}-{_blocks.token()}")
              for i, w in enumerate(workers[:nb])]
    on = [dict(workers=[_blocks.home(workers, b)], allow_other_workers=True, pure=False)
          for b in range(nb)]
    lam = run.lam
    try:
        U_src = _blocks.hold_slices(client, U, cuts, workers, "U")
        sq_u = float(np.sum(U * U))
        for it in range(1, run.n_iter + 1):
            V_src, res_v, sq_v = _exact_half(client, copies, U_src, 0, cuts, lam, block, on,
                                             n_threads)
            obj_v = 0.5 * res_v + lam * (sq_u + sq_v)
            U_src, res_u, sq_u = _exact_half(client, copies, V_src, 1, cuts, lam, block, on,
                                             n_threads)
            obj = 0.5 * res_u + lam * (sq_u + sq_v)
            if progress.step(it, obj, objective_v=obj_v, model=lambda: iterate(
                    _blocks.gather_rows(client, U_src, workers),
                    _blocks.gather_rows(client, V_src, workers))):
                break
        return (_blocks.gather_rows(client, U_src, workers),
                _blocks.gather_rows(client, V_src, workers))
    finally:
        for f in copies:
            f.release()


def _exact_half(client, copies, L_src, which, cuts, lam, block, on, n_threads):
    """One exact half-step: the whole L assembled by one task (each worker fetches it once), then
    one task per node range of columns."""
    L = client.submit(_blocks.concat, *[client.submit(_blocks.first, s, **on[b])
                                        for b, s in enumerate(L_src)], pure=False)
    res = [client.submit(exact_task, copies[b % len(copies)], L, which, int(cuts[b]),
                         int(cuts[b + 1]), lam, block, n_threads, **on[b])
           for b in range(cuts.size - 1)]
    small = client.gather([client.submit(_small, r, **on[b]) for b, r in enumerate(res)])
    return res, float(sum(s[0] for s in small)), float(sum(s[1] for s in small))


def _sum_mats(parts):
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


#: what has a distributed form (fastpu.distributed.METHODS)
SUMMARY = ("mode='exact' (the default: whole A and L on every worker, columns split) and "
           "mode='dense' (routed rows), with or without side graphs, on a scipy.sparse Y")
#: the fit builds its blocks from the whole Y (the walk matrix), not from a layout of Y: why
WHOLE_MATRIX = "HOMF builds its random-walk matrix from the whole Y on the client"


def check(params):
    """Refuse, in a sentence, a setting with no distributed form (none: both modes have one)."""
    return None


def values_may_be_negative(params):
    """With g = "exp" or "step" a stored value is an edge weight's argument: any finite value is
    allowed, as in ``fastpu.homf.fit`` (g = "linear" uses the value as the weight)."""
    return params["g"] != "linear"
