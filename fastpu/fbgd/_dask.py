"""fBGD (``update="batch"``) on a Dask cluster: plain MF here, features and biases in
:mod:`fastpu.fbgd._dask_features`; the arguments go through :mod:`fastpu.fbgd._check` as
``fastpu.fbgd.fit``'s do.

The batch gradient of one side is row-separable given the other side's caches
S = Fᵀ diag(w) F and s = Fᵀ w (eq. 6–8 of Yuan et al.), and the Adagrad step is per parameter.
A half-step is one task per row block: the same ``side_gradient`` and ``batch_update`` kernels
as :func:`fastpu.fbgd.fit` on the block's rows, returning the new rows, their Adagrad
accumulators and the block's partial caches. The item half-step also returns the block's share
of the loss on the positives, so the objective costs no extra pass.

The Adagrad accumulators are per-row state kept on the workers: each block's task reads them
from the block's previous result. The new factors are assembled by a task on a worker from the
blocks' rows, and the client receives only the g×g caches and scalars. Every input of a task is
the output of another task (or the initial factors, held for the whole fit), so a result lost
with a worker is recomputed from its lineage and a re-run gives the same numbers.
"""

from __future__ import annotations


import numpy as np

from fastpu._core.progress import Progress
from fastpu.fbgd._check import check_model, check_run, check_start, free_masks
from fastpu.fbgd._fit import fit_params
from fastpu.fbgd._problem import _augment, _result, draw_start, eq22
from fastpu.fbgd import _dask_features
from fastpu.fbgd._dask_blocks import (_loss, _sum, cache_task, counts_task, make_block,
                                      positive_task, update_task)
from fastpu._core.factorization import Factorization
from fastpu.distributed import blocks as _blocks


def _check(other):
    if other.get("neg_row_weights") is not None:
        raise ValueError("neg_row_weights (fBGD's α⁻_x) has no distributed form yet; "
                         "use fastpu.fbgd.fit, or leave it at None")
    unknown = set(other) - {"update", "neg_row_weights"}
    if unknown:
        raise TypeError(f"fastpu.distributed.fit(method='fbgd') got unexpected parameters "
                        f"{sorted(unknown)}; see fastpu.fbgd.fit for the accepted ones")


def fit(client, layout, k, *, user_features, item_features, alpha0, rho, neg_weights, pos_weight,
        r_pos, r_neg, biases, lam, lr, n_iter, optimizer, init, init_std, seed, callback, verbose,
        n_threads, **other):
    """Batch fBGD over row blocks; see :func:`fastpu.distributed.fit` (which fills in
    ``fastpu.fbgd.fit``'s defaults: no default is spelled out here). The arguments go through
    the same checks as ``fastpu.fbgd.fit``'s (:mod:`fastpu.fbgd._check`)."""
    _check(other)
    m = layout.shape[0]
    run = check_run(k, lr=lr, n_iter=n_iter, update="batch", optimizer=optimizer,
                    init_std=init_std, seed=seed, callback=callback, verbose=verbose)
    model = check_model(layout.shape, user_features=user_features, item_features=item_features,
                        alpha0=alpha0, rho=rho, neg_weights=neg_weights, neg_row_weights=None,
                        pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg, biases=biases, lam=lam)
    start = check_start(init, model, run)
    k, w, lam = run.k, model.weights, model.lam
    workers = layout.workers
    sub = dict(allow_other_workers=True, pure=False)

    def on(b):
        return dict(workers=[_blocks.home(workers, b)], **sub)

    if w.neg is None:           # eq. 22 from the items' positive counts, counted on the workers
        counts = np.concatenate(client.gather([client.submit(counts_task, c, **on(b))
                                               for b, c in enumerate(layout.item)]))
        neg = eq22(counts, w.alpha0, w.rho)
    else:
        neg = w.neg
    Zx, Zy = model.Zx, model.Zy
    px, py = Zx.shape[1], Zy.shape[1]
    # Θ (features + bias columns), or P and Q for plain MF: the same draws as fbgd.fit's
    theta_x, theta_y = start if start is not None else draw_start(run.rng, px, py, k,
                                                                  model.biases, run.init_std)
    params = dict(fit_params(run, model, update="batch", pos_weight=pos_weight, r_pos=r_pos,
                             seed=seed),
                  distributed=dict(n_blocks=layout.n_blocks, n_workers=len(workers)))
    neg_f = client.scatter(neg, broadcast=True, hash=False)
    ub = [client.submit(make_block, c, neg_f, w.pos_weight, w.r_pos, w.r_neg, False, **on(b))
          for b, c in enumerate(layout.user)]
    ib = [client.submit(make_block, c, neg_f, w.pos_weight, w.r_pos, w.r_neg, True, **on(b))
          for b, c in enumerate(layout.item)]
    const = w.r_neg * w.r_neg * m * float(neg.sum())
    progress = Progress("fbgd", verbose=run.verbose, callback=run.callback)
    if not model.plain:
        Zxa, Zya = _augment(Zx, model.biases), _augment(Zy, model.biases)
        free_x, free_y = free_masks(Zxa.shape[1], Zya.shape[1], k, model.biases)
        try:
            P, Q, init0 = _dask_features.fit(
                client, layout, ub, ib, Zxa, Zya, theta_x, theta_y, free_x, free_y, r_neg=w.r_neg,
                lr=run.lr, lam=lam, adagrad=run.adagrad, const=const, n_iter=run.n_iter,
                n_threads=n_threads, progress=progress)
        finally:
            for f in [neg_f] + ub + ib:
                f.release()
        return _result(P, Q, theta_x, theta_y, px, py, k, biases=model.biases,
                       has_ux=model.has_ux, has_ix=model.has_ix, neg=neg, neg_rows=None,
                       init=init0, history=progress.history, params=params)
    P, Q, init0 = _plain(client, layout, ub, ib, theta_x, theta_y, on, run, lam, w.r_neg, const,
                         n_threads, progress, [neg_f] + ub + ib)
    extras = dict(V_user=P.copy(), V_item=Q.copy(), neg_weights=neg, neg_row_weights=None,
                  initial_objective=init0)
    return Factorization(user_factors=P, item_factors=Q, history=progress.history, params=params,
                         method="fbgd", extras=extras)


def _plain(client, layout, ub, ib, P, Q, on, run, lam, r_neg, const, n_threads, progress, held):
    """Plain MF: batch epochs with the factors and their Adagrad accumulators on the workers;
    releases ``held`` (and its own futures) at the end. Returns (P, Q, initial objective)."""
    prev_p = [None] * layout.n_blocks
    prev_q = [None] * layout.n_blocks
    roots = client.scatter([P, Q], broadcast=True, hash=False)
    futs = held + list(roots)
    try:
        P_f, Q_f = roots
        Sq, sq = _sum(client.gather([client.submit(cache_task, blk, Q_f, n_threads, **on(b))
                                     for b, blk in enumerate(ib)]))
        Sp, sp_ = _sum(client.gather([client.submit(cache_task, blk, P_f, n_threads, **on(b))
                                      for b, blk in enumerate(ub)]))
        pos0 = sum(client.gather([client.submit(positive_task, blk, Q_f, P_f, r_neg, n_threads, **on(b))
                                  for b, blk in enumerate(ib)]))
        init = _loss(Sq, sq, Sp, sp_, r_neg, const, pos0) + _penalty(lam, P, Q)
        opts = dict(r_neg=r_neg, lr=run.lr, lam=lam, adagrad=run.adagrad, n_threads=n_threads)
        for it in range(1, run.n_iter + 1):
            prev_p = [client.submit(update_task, blk, P_f, Q_f, Sq, sq, prev_p[b],
                                    with_loss=False, **opts, **on(b)) for b, blk in enumerate(ub)]
            P_f = client.submit(_blocks.concat_first, *prev_p, pure=False)
            res = client.gather([client.submit(_small, r, **on(b)) for b, r in enumerate(prev_p)])
            Sp, sp_ = _sum(res)
            sq_p = sum(r[2] for r in res)
            prev_q = [client.submit(update_task, blk, Q_f, P_f, Sp, sp_, prev_q[b],
                                    with_loss=True, **opts, **on(b)) for b, blk in enumerate(ib)]
            Q_f = client.submit(_blocks.concat_first, *prev_q, pure=False)
            res = client.gather([client.submit(_small, r, **on(b)) for b, r in enumerate(prev_q)])
            Sq, sq = _sum(res)
            sq_q = sum(r[2] for r in res)
            loss = _loss(Sq, sq, Sp, sp_, r_neg, const, sum(r[3] for r in res))
            penalty = 0.0 if lam == 0.0 else lam * (sq_p + sq_q)
            if progress.step(it, loss + penalty, loss=loss):
                break
        P, Q = client.gather([P_f, Q_f])
    finally:
        for f in futs:
            f.release()
    return P, Q, init


def _small(result):
    """(partial S, partial s, Σ rows², positive loss): what the client needs of a block's result."""
    return result[2], result[3], result[4], result[5]


def _penalty(lam, P, Q):
    if lam == 0.0:
        return 0.0
    return lam * (float(np.sum(P ** 2)) + float(np.sum(Q ** 2)))


#: what has a distributed form (fastpu.distributed.METHODS)
SUMMARY = ("update='batch': plain MF, and features/biases (SVDFeature) with Θ updated on the "
           "client")


def check(params):
    """Refuse, in a sentence, a setting with no distributed form."""
    if params.get("update", "batch") != "batch":
        raise ValueError(f"fbgd's update={params['update']!r} is serial (coordinate order); "
                         "the distributed fit supports update='batch', or use fastpu.fbgd.fit")
