"""HOMF (``mode="dense"``) on a Dask cluster.

A dense half-step computes Z = f_T(P) L = (1/T) Σ_{l=1}^T P^l L by Horner's rule
(a_1 = P L, a_t = a_1 + P a_{t-1}; P = A or Aᵀ) and solves (LᵀL + 2λI) new = Zᵀ for every row.
Each Horner step is a sparse × dense product over row blocks of P: a block needs its own rows of
P and the whole previous a_{t-1}, assembled by a task and fetched once per worker and step. The k×k system is the same for
every row, so the rows of the new factor are solved block by block with the Cholesky factor
computed on the client from the blocks' partial Grams.

The transition matrix A is built on the client from Y (and the side graphs) by the same code as
:func:`fastpu.homf.fit`'s (the arguments through the same checks, :mod:`fastpu.homf._check`),
then its row blocks and those of Aᵀ are sent to the workers once.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from fastpu._kernels import homf as _K
from fastpu._kernels.csr import csr_dense, weighted_gram
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu.homf._check import check_g, check_graph, check_run
from fastpu.homf._fit import _params
from fastpu.homf._graph import transition
from fastpu.homf._solvers import DENSE_OBJECTIVE_NOTE
from fastpu._core.factorization import Factorization
from fastpu.distributed import blocks as _blocks


def first_task(block, L, n_threads):
    """Rows lo:hi of a_1 = P L."""
    with limit_threads(n_threads):
        out = np.empty((block.n_rows, L.shape[1]))
        if block.n_rows:
            csr_dense(block.indptr, block.indices, block.data, L, out)
        return out


def step_task(block, first, prev, n_threads):
    """Rows lo:hi of a_t = a_1 + P a_{t-1}."""
    with limit_threads(n_threads):
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


def gram_task(block, F, n_threads):
    with limit_threads(n_threads):
        Fb = np.ascontiguousarray(F[block.lo:block.hi])
        k = F.shape[1]
        G = np.zeros((k, k))
        if Fb.shape[0]:
            weighted_gram(Fb, np.ones(Fb.shape[0]), G, np.empty(k))
        return G, float(np.sum(Fb * Fb))


def fit(client, Y, workers, n_blocks, k, *, user_graph, item_graph, alpha, T, g, g_user_graph,
        g_item_graph, mode, lam, n_iter, block_size, seed, n_threads, callback, verbose):
    """Dense-mode HOMF over row blocks of A and Aᵀ; see :func:`fastpu.distributed.fit` (which
    fills in ``fastpu.homf.fit``'s defaults, with ``mode="dense"``, and checks Y). The other
    arguments go through the same checks as ``fastpu.homf.fit``'s (:mod:`fastpu.homf._check`);
    ``block_size`` (exact mode's column blocks) is checked only: the walk is blocked by rows."""
    run = check_run(k, T=T, lam=lam, n_iter=n_iter, mode=mode, block_size=block_size,
                    callback=callback, verbose=verbose, seed=seed)
    g, g1, g3 = check_g(g, g_user_graph, g_item_graph)
    graph = check_graph(Y.shape, user_graph=user_graph, item_graph=item_graph, alpha=alpha, g=g,
                        g_user_graph=g1, g_item_graph=g3)
    A = transition(Y, graph)
    k, T, lam, n_iter = run.k, run.T, run.lam, run.n_iter
    m, n = Y.shape
    N = m + n
    params = dict(_params(run, graph, alpha=alpha, block_size=None, n_threads=n_threads, seed=seed),
                  distributed=dict(n_blocks=n_blocks, n_workers=len(workers)))
    U = run.rng.uniform(0.0, 1.0, size=(N, k))
    Vf = run.rng.uniform(0.0, 1.0, size=(N, k))
    # blocks of A ("user" side of the layout) and of Aᵀ ("item" side): the N nodes cut in ranges
    layout = _blocks.layout_from_csr(client, A, n_blocks, workers)
    a_blocks, at_blocks = layout.user, layout.item
    progress = Progress("homf", verbose=run.verbose, callback=run.callback)
    progress.note(DENSE_OBJECTIVE_NOTE)
    on = [dict(workers=[_blocks.home(workers, b)], allow_other_workers=True, pure=False)
          for b in range(n_blocks)]
    try:
        U_f = client.scatter(U, broadcast=True, hash=False)
        parts = client.gather([client.submit(gram_task, blk, U_f, n_threads, **on[b])
                               for b, blk in enumerate(a_blocks)])
        U_f.release()
        UtU = _sum_mats([p[0] for p in parts])
        sq_u = sum(p[1] for p in parts)
        for it in range(1, n_iter + 1):
            # V = f_T(A)ᵀ U (LᵀL+2λI)⁻¹ with the walk on Aᵀ; then U likewise on A
            Vf, cross, VtV, sq_v = _half(client, at_blocks, on, U, UtU, T, lam, n_threads)
            obj_v = -cross + 0.5 * float(np.sum(UtU * VtV)) + lam * (sq_u + sq_v)
            U, cross, UtU, sq_u = _half(client, a_blocks, on, Vf, VtV, T, lam, n_threads)
            obj = -cross + 0.5 * float(np.sum(UtU * VtV)) + lam * (sq_u + sq_v)
            if progress.step(it, obj, objective_v=obj_v):
                break
    finally:
        layout.release()
    return Factorization(user_factors=np.ascontiguousarray(U[:m]),
                         item_factors=np.ascontiguousarray(Vf[m:]), history=progress.history,
                         params=params, method="homf", extras={"U": U, "V": Vf, "A": A})


def _half(client, blocks, on, L, LtL, T, lam, n_threads):
    """One dense half-step: the T Horner products, then the row solves.

    Each step's full a_{t-1} is assembled by a task on a worker and fetched once by every worker
    that runs a block; the client gets only the k×k sums and, at the end, the new factor's rows.
    The previous factor ``L`` is the client's (it is the model's output anyway), scattered once.
    """
    k = L.shape[1]
    cho = sla.cho_factor(LtL + 2.0 * lam * np.eye(k), lower=True)
    L_f = client.scatter(L, broadcast=True, hash=False)
    try:
        first = [client.submit(first_task, blk, L_f, n_threads, **on[b])
                 for b, blk in enumerate(blocks)]
        prev = first
        for _ in range(2, T + 1):
            full = client.submit(_blocks.concat, *prev, pure=False)
            prev = [client.submit(step_task, blk, first[b], full, n_threads, **on[b])
                    for b, blk in enumerate(blocks)]
        res = client.gather([client.submit(solve_task, prev[b], T, cho, n_threads, **on[b])
                             for b in range(len(blocks))])
    finally:
        L_f.release()
    new = np.concatenate([r[0] for r in res])
    return (new, float(sum(r[1] for r in res)), _sum_mats([r[2] for r in res]),
            float(sum(r[3] for r in res)))


def _sum_mats(parts):
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


#: what has a distributed form (fastpu.distributed.METHODS)
SUMMARY = "mode='dense' (with or without side graphs), on a scipy.sparse Y"
#: where the distributed fit's default differs from the single-machine fit's: its only form
DEFAULTS = {"mode": "dense"}
#: the fit builds its blocks from the whole Y (the walk matrix), not from a layout of Y: why
WHOLE_MATRIX = "HOMF builds its random-walk matrix from the whole Y on the client"


def check(params):
    """Refuse, in a sentence, a setting with no distributed form."""
    if params.get("mode", "dense") != "dense":
        raise ValueError(f"HOMF's mode={params['mode']!r} (the paper's Ω_T) has no distributed "
                         "form; use mode='dense', or fastpu.homf.fit on one machine")


def values_may_be_negative(params):
    """With g = "exp" or "step" a stored value is an edge weight's argument: any finite value is
    allowed, as in ``fastpu.homf.fit`` (g = "linear" uses the value as the weight)."""
    return params["g"] != "linear"
