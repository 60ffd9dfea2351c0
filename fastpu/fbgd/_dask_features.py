"""fBGD batch mode with features and/or biases (SVDFeature, eq. 11–13) on a Dask cluster.

With features, the parameters of a side are Θ (d×g) and the embeddings are P = Z Θ; the batch
gradient ∂J/∂Θ = Zᵀ G, with G the row-separable gradient with respect to the embeddings, is a sum
over row blocks: Σ_b Z_bᵀ G_b. Per half-step each block's task embeds its rows (P_b = Z_b Θ),
computes G_b with the same ``side_gradient`` kernel as :func:`fastpu.fbgd.fit` and returns
Z_bᵀ G_b (d×g); the client adds the blocks' parts and takes the Adagrad step on Θ with the same
``batch_update`` kernel; then the blocks embed the new Θ and return their partial caches.

Θ travels to the workers once per half-step and d×g partial sums come back — small with real
features. The gradient of a block reads the other side's embedding rows its positives touch,
routed to it from the blocks that computed them (:mod:`fastpu.distributed.routing`). A side without features (but with the bias columns that features on the other side
switch on) has Z = [I, 1], so its Θ and its gradient have a row per user: correct, but it moves
rows·g per half-step through the client. (Plain MF without biases uses :mod:`fastpu.fbgd._dask`.)
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastpu._kernels import fbgd as _k
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu.fbgd._problem import _EPS, penalty_value
from fastpu.distributed import blocks as _blocks
from fastpu.distributed import routing
from fastpu.fbgd._dask_blocks import _loss, _sum, positive_task


def feat_block(block, Z):
    return block, Z


def embed_task(fb, theta, n_threads):
    """(rows P_b = Z_b Θ, partial cache P_bᵀ diag(w) P_b, P_bᵀ w)."""
    with limit_threads(n_threads):
        blk, Z = fb
        P = _blocks.sparse_times(Z, theta)
        S, s = _blocks.gram(P, blk.rowscale, theta.shape[1])
        return P, S, s


def grad_task(fb, own, S, s, r_neg, n_threads, *pieces):
    """Z_bᵀ G_b for the block, with G_b the gradient with respect to its embedding rows (``own``:
    the block's embed result; ``pieces``: the other side's rows its positives touch)."""
    with limit_threads(n_threads):
        blk, Z = fb
        E = np.ascontiguousarray(_blocks.first(own))
        F = routing.assemble(E.shape[1], E.dtype.name, *pieces)
        G = np.empty_like(E)
        if E.shape[0]:
            _k.side_gradient(blk.indptr, blk.indices, blk.cpos, blk.bpos, E, F, S, s,
                             blk.rowscale, r_neg, G)
        return np.asarray(Z.T @ G)


def _rows(Z, cuts):
    return [sp.csr_array(Z[int(cuts[b]):int(cuts[b + 1])]) for b in range(cuts.size - 1)]


class _Side:
    def __init__(self, client, routes, blocks, Z, side):
        layout = routes.layout
        cuts = layout.ub if side == "user" else layout.ib
        self.router = routes.router(side)
        self.on = [routes.on(b) for b in range(len(blocks))]
        self.fb = [client.submit(feat_block, blk, z, **self.on[b])
                   for b, (blk, z) in enumerate(zip(blocks, _rows(Z, cuts)))]
        routes.held += self.fb

    def embed(self, client, theta, n_threads):
        futs = [client.submit(embed_task, fb, theta, n_threads, pure=False, **self.on[b])
                for b, fb in enumerate(self.fb)]
        parts = client.gather([client.submit(_blocks.drop_first, f, **self.on[b])
                               for b, f in enumerate(futs)])
        S, s = _sum(parts)
        return futs, S, s

    def grad(self, client, own, other, S, s, r_neg, n_threads):
        return _sum_dense(client.gather([
            client.submit(grad_task, fb, own[b], S, s, r_neg, n_threads,
                          *self.router.pieces(other, b), pure=False, **self.on[b])
            for b, fb in enumerate(self.fb)]))


def _sum_dense(parts):
    out = np.array(parts[0], dtype=np.float64)
    for p in parts[1:]:
        out += p
    return out


def fit(client, routes, ub, ib, Zx, Zy, theta_x, theta_y, free_x, free_y, *, r_neg, lr, lam,
        adagrad, const, n_iter, n_threads, progress: Progress, wrap):
    """Batch epochs with Θ on the client; returns (P, Q, initial objective). ``lam``: the
    penalties of Θ^X's and Θ^Y's rows (:func:`fastpu.fbgd._problem.row_penalties`). ``wrap(P,
    Q, Θx, Θy)`` makes the callback's ``info["model"]`` of an iterate."""
    user = _Side(client, routes, ub, Zx, "user")
    item = _Side(client, routes, ib, Zy, "item")
    workers = routes.layout.workers
    acc_x, acc_y = np.zeros_like(theta_x), np.zeros_like(theta_y)

    def penalty():
        return penalty_value(lam, free_x, free_y, theta_x, theta_y)

    def positive(Q_src, P_src):
        return sum(client.gather([client.submit(positive_task, blk, Q_src[b], r_neg, n_threads,
                                                *routes.item.pieces(P_src, b), **item.on[b])
                                  for b, blk in enumerate(ib)]))

    Q_src, Sq, sq = item.embed(client, theta_y, n_threads)
    P_src, Sp, sp_ = user.embed(client, theta_x, n_threads)
    init = _loss(Sq, sq, Sp, sp_, r_neg, const, positive(Q_src, P_src)) + penalty()
    for epoch in range(1, n_iter + 1):
        gx = user.grad(client, P_src, Q_src, Sq, sq, r_neg, n_threads)
        _k.batch_update(gx, free_x, theta_x, acc_x, lr, lam[0], adagrad, _EPS)
        P_src, Sp, sp_ = user.embed(client, theta_x, n_threads)
        gy = item.grad(client, Q_src, P_src, Sp, sp_, r_neg, n_threads)
        _k.batch_update(gy, free_y, theta_y, acc_y, lr, lam[1], adagrad, _EPS)
        Q_src, Sq, sq = item.embed(client, theta_y, n_threads)
        loss = _loss(Sq, sq, Sp, sp_, r_neg, const, positive(Q_src, P_src))
        if progress.step(epoch, loss + penalty(), loss=loss, model=lambda: wrap(
                _blocks.gather_rows(client, P_src, workers),
                _blocks.gather_rows(client, Q_src, workers), theta_x.copy(), theta_y.copy())):
            break
    return (_blocks.gather_rows(client, P_src, workers), _blocks.gather_rows(client, Q_src, workers),
            init)
