"""CSRR-e (Algorithm 2 of Yang et al., U = P Qᵀ) on a Dask cluster.

One outer iteration is a projected gradient step on P, one on Q (each with the other side's
d×d Gram), then the prox step on the sparse part V, whose values live on the positives. The
gradient of a side is S F + E (FᵀF) with S = ℓ'(PQᵀ + V) − PQᵀ on Ω+, so a row block of P needs
only its rows' positives, its rows of V and the rows of Q its positives touch, routed to it
from the item blocks (:mod:`fastpu.distributed.routing`); symmetrically for Q.

V is per-positive state. Each user block keeps its copy of V in row order and each item block its
copy in column order; both apply the same elementwise prox step to the same numbers, so they stay
equal, and V never leaves the workers until the end. Because V is state kept on the workers, every
step here is a task in the graph (the initial factors are data of the graph, not scattered), so
whatever a lost worker held is recomputed from its lineage and the fit ends with the same model.
"""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np
import scipy.sparse as sp

from fastpu._kernels import csrr as K
from fastpu._kernels.csr import csr_dense, sampled_dots
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu.csrr._check import check_model, check_run, warn_rank
from fastpu.csrr._fit import _params
from fastpu.csrr._model import CSRRModel
from fastpu.csrr._solvers import lam_max, start_factors
from fastpu.distributed import blocks as _blocks
from fastpu.distributed import routing


@dataclasses.dataclass
class PosBlock:
    """The positives (stored values > 0) of a block; only the structure matters to CSRR."""

    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray

    @property
    def n_rows(self):
        return self.hi - self.lo


def make_block(csr):
    keep = csr.data > 0
    if keep.all():
        return PosBlock(csr.lo, csr.hi, csr.indptr, csr.indices)
    local = np.repeat(np.arange(csr.n_rows, dtype=np.int64), np.diff(csr.indptr))
    counts = np.bincount(local[keep], minlength=csr.n_rows)
    indptr = np.zeros(csr.n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return PosBlock(csr.lo, csr.hi, indptr, np.ascontiguousarray(csr.indices[keep]))


def zeros_task(block):
    return np.zeros(block.indices.size)


def compact_task(block, touch):
    """The block with its columns re-indexed into the rows it touches (routing.compact)."""
    return dataclasses.replace(block, indices=routing.compact(block.indices, touch))


def gram_task(block, own):
    Fb = _blocks.first(own)
    return Fb.T @ Fb


def _v_of(state):
    """A block's V values: its previous result's second element, or the initial zeros."""
    return state[1] if isinstance(state, tuple) else state


def _terms(block, E, F, v, kind, alpha):
    """dots = E·F on the block's positives, g = ℓ'(dots + v), per-row (ℓ⁺ − ½dots²) sums."""
    dots = np.empty(block.indices.size)
    g = np.empty_like(dots)
    rows = np.empty(block.n_rows)
    if block.n_rows:
        sampled_dots(block.indptr, block.indices, E, F, dots)
        K.positive_terms(block.indptr, dots + v, dots, kind, alpha, g, rows)
    return dots, g, rows


def _v_step(block, E, F, v, kind, alpha, eV, lam2):
    _, g, _ = _terms(block, E, F, v, kind, alpha)
    out = np.empty_like(v)
    K.soft_box(v - eV * g, eV * lam2, 0.0, 1.0, out)
    return out


def _side(block, own, F, v, GF, eta, hi, lam1, kind, alpha, v_first, eV, lam2):
    E = np.ascontiguousarray(_blocks.first(own))
    if v_first:
        v = _v_step(block, E, F, v, kind, alpha, eV, lam2)
    dots, g, _ = _terms(block, E, F, v, kind, alpha)
    grad = np.empty_like(E)
    if block.n_rows:
        csr_dense(block.indptr, block.indices, g - dots, F, grad)
    grad += E @ GF
    E = np.clip((E - eta * grad) / (1.0 + eta * lam1), 0.0, hi)
    return E, v, E.T @ E


def side_task(block, own, v, GF, eta, opts, v_first, *pieces):
    """The block's rows after one projected gradient step (with V first moved to the last
    (P, Q) if ``v_first``); ``own``: its current rows (or its previous result), ``v``: its V (or
    its previous result), ``pieces``: the other side's rows its positives touch. Returns (rows,
    v, rowsᵀrows)."""
    with limit_threads(opts["n_threads"]):
        F = routing.assemble(opts["k"], "float64", *pieces)
        return _side(block, own, F, _v_of(v), GF, eta, opts["hi"], opts["lam1"], opts["kind"],
                     opts["alpha"], v_first, opts["eV"], opts["lam2"])


def item_task(block, own, v, GF, eta, opts, *pieces):
    """The Q step on an item block, then the V step at the new (P, Q) and the block's objective:
    (rows, v, rowsᵀrows, Σ_Ω(ℓ⁺ − ½dots²) at the new rows, Σv, nnz v)."""
    with limit_threads(opts["n_threads"]):
        F = routing.assemble(opts["k"], "float64", *pieces)
        kind, alpha, eV, lam2 = opts["kind"], opts["alpha"], opts["eV"], opts["lam2"]
        E, _, G = _side(block, own, F, _v_of(v), GF, eta, opts["hi"], opts["lam1"], kind, alpha,
                        False, eV, lam2)
        v = _v_step(block, E, F, _v_of(v), kind, alpha, eV, lam2)
        _, _, rows = _terms(block, E, F, v, kind, alpha)
        return E, v, G, float(rows.sum()), float(v.sum()), int(np.count_nonzero(v))


def v_task(block, own, v, opts, *pieces):
    with limit_threads(opts["n_threads"]):
        F = routing.assemble(opts["k"], "float64", *pieces)
        E = np.ascontiguousarray(_blocks.first(own))
        return _v_step(block, E, F, _v_of(v), opts["kind"], opts["alpha"], opts["eV"],
                       opts["lam2"])


def fit(client, layout, k, *, variant, loss, alpha, lam1, lam2, eta, n_iter, n_inner, inner_tol,
        restart, svd_method, dense_limit, seed, n_threads, callback, verbose, **other):
    """CSRR-e over row blocks; see :func:`fastpu.distributed.fit` (which fills in
    ``fastpu.csrr.fit``'s defaults: no default is spelled out here). The arguments go through
    the same checks as ``fastpu.csrr.fit``'s (:mod:`fastpu.csrr._check`); ``restart``,
    ``svd_method`` and ``dense_limit`` belong to CSRR-I/II and ``inner_tol`` to ``n_inner > 1``,
    so they are checked and recorded only."""
    del dense_limit                        # CSRR-I/II only, unchecked by the single-machine "e"
    if other:
        raise TypeError(f"fastpu.distributed.fit(method='csrr') got unexpected parameters "
                        f"{sorted(other)}; see fastpu.csrr.fit for the accepted ones")
    model = check_model(variant=variant, loss=loss, alpha=alpha, lam1=lam1, lam2=lam2)
    run = check_run(k, model, eta=eta, n_iter=n_iter, n_inner=n_inner, inner_tol=inner_tol,
                    restart=restart, svd_method=svd_method, seed=seed, callback=callback,
                    verbose=verbose, where="fastpu.distributed.fit",
                    example="fastpu.distributed.fit(Y, 32, method='csrr')")
    if run.n_inner != 1:
        raise ValueError(f"n_inner={run.n_inner} has no distributed form (its inner stopping test "
                         "needs the objective after every pass); use n_inner=1, or fastpu.csrr.fit")
    m, n = layout.shape
    if m == 0 or n == 0:
        raise ValueError(f"Y has shape {m}×{n}; expected at least one user and one item")
    warn_rank(run, layout.shape)
    assert run.k is not None                     # variant "e" has a rank (check_rank)
    k, eta, lam1, lam2, alpha, kind = run.k, run.eta, model.lam1, model.lam2, model.alpha, model.kind
    c = model.curvature
    hi = 1.0 / math.sqrt(k)
    P, Q = start_factors(run.rng, m, n, k)
    params = dict(_params(model, run, seed),
                  distributed=dict(n_blocks=layout.n_blocks, n_workers=len(layout.workers)))
    workers = layout.workers
    on = [dict(workers=[_blocks.home(workers, b)], allow_other_workers=True)
          for b in range(layout.n_blocks)]
    nb_ = layout.n_blocks
    # the positives of each block, which rows of the other side they touch, and the blocks
    # re-indexed into those rows
    pos_u = [client.submit(make_block, c_, **on[b]) for b, c_ in enumerate(layout.user)]
    pos_i = [client.submit(make_block, c_, **on[b]) for b, c_ in enumerate(layout.item)]
    to_u = routing.Router(client, pos_u, layout.ib, workers)
    to_i = routing.Router(client, pos_i, layout.ub, workers)
    ub = [client.submit(compact_task, blk, to_u.touch[b], **on[b]) for b, blk in enumerate(pos_u)]
    ib = [client.submit(compact_task, blk, to_i.touch[b], **on[b]) for b, blk in enumerate(pos_i)]
    held = pos_u + pos_i + ub + ib
    vu = [client.submit(zeros_task, blk, **on[b]) for b, blk in enumerate(ub)]
    vi = [client.submit(zeros_task, blk, **on[b]) for b, blk in enumerate(ib)]
    # the roots of the lineage: data of the task graph
    P_src = _blocks.hold_slices(client, P, layout.ub, workers, "P")
    Q_src = _blocks.hold_slices(client, Q, layout.ib, workers, "Q")
    progress = Progress("csrr-e", verbose=run.verbose, callback=run.callback, total=run.n_iter)
    eV = eta if eta is not None else 1.0 / c
    opts = dict(k=k, hi=hi, lam1=lam1, kind=kind, alpha=alpha, eV=eV, lam2=lam2,
                n_threads=n_threads)

    def current(history=()):
        """The model at the current iterate (P, Q and V gathered on the client)."""
        vfin = [client.submit(v_task, ub[b], P_src[b], vu[b], opts, *to_u.pieces(Q_src, b),
                              **on[b]) for b in range(nb_)]
        P = _blocks.gather_rows(client, P_src, workers)
        Q = _blocks.gather_rows(client, Q_src, workers)
        vals = client.gather(vfin)
        structure = client.gather([client.submit(_structure, blk, to_u.touch[b], **on[b])
                                   for b, blk in enumerate(ub)])
        return CSRRModel(user_factors=P, item_factors=Q, history=list(history), params=params,
                         method="csrr", extras={}, U=None, V=_assemble(structure, vals, (m, n)),
                         variant="e")

    try:
        GQ = _sum(client.gather([client.submit(gram_task, blk, Q_src[b], **on[b])
                                 for b, blk in enumerate(ib)]))
        for t in range(1, run.n_iter + 1):
            eP = eta if eta is not None else 1.0 / max(c * lam_max(GQ), 1e-12)
            res = [client.submit(side_task, ub[b], P_src[b], vu[b], GQ, eP, opts, t > 1,
                                 *to_u.pieces(Q_src, b), pure=False, **on[b])
                   for b in range(nb_)]
            P_src = vu = res
            GP = _sum(client.gather([client.submit(operator.getitem, r, 2, **on[b])
                                     for b, r in enumerate(res)]))
            eQ = eta if eta is not None else 1.0 / max(c * lam_max(GP), 1e-12)
            res = [client.submit(item_task, ib[b], Q_src[b], vi[b], GP, eQ, opts,
                                 *to_i.pieces(P_src, b), pure=False, **on[b])
                   for b in range(nb_)]
            Q_src = vi = res
            small = client.gather([client.submit(_small, r, **on[b]) for b, r in enumerate(res)])
            GQ = _sum([s[0] for s in small])
            corr = sum(s[1] for s in small)
            vsum = sum(s[2] for s in small)
            nnz_v = sum(s[3] for s in small)
            f = (0.5 * lam1 * (float(np.trace(GP)) + float(np.trace(GQ))) + lam2 * vsum
                 + 0.5 * float(np.sum(GP * GQ)) + corr)
            if progress.step(t, f, inner=1, nnz_V=int(nnz_v), model=current):
                break
        result = current()
    finally:
        for f_ in held:
            f_.release()
        to_u.release()
        to_i.release()
    progress.close()
    return dataclasses.replace(result, history=progress.history)


def _small(r):
    return r[2], r[3], r[4], r[5]


def _structure(block, touch):
    """The block's indptr and its positives' global column ids."""
    return block.indptr, touch.ids[block.indices]


def _assemble(structure, vals, shape):
    indptr = [np.zeros(1, dtype=np.int64)]
    off = 0
    for (ip, _), _v in zip(structure, vals):
        indptr.append(ip[1:] + off)
        off += int(ip[-1])
    indices = np.concatenate([s[1] for s in structure]) if structure else np.zeros(0, np.int64)
    data = np.concatenate(vals) if vals else np.zeros(0)
    V_ = sp.csr_array((data, indices, np.concatenate(indptr)), shape=shape)
    V_.eliminate_zeros()
    return V_


def _sum(parts):
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


#: what has a distributed form (fastpu.distributed.METHODS)
SUMMARY = "variant='e' (U = P Qᵀ) with n_inner=1"


def check(params):
    """Refuse, in a sentence, a setting with no distributed form."""
    if params.get("variant", "e") != "e":
        raise ValueError(f"CSRR-{params['variant']} keeps a dense m×n U (singular value "
                         "thresholding of the whole matrix) and has no distributed form; use "
                         "variant='e' (U = P Qᵀ), or fastpu.csrr.fit on one machine")
