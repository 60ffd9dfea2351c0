"""fBGD (``update="batch"``, plain MF) on a Dask cluster.

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

import numbers

import numpy as np

from fastpu._core import validation as V
from fastpu._core.progress import Progress
from fastpu.fbgd._fit import _OPTIMIZERS
from fastpu.fbgd._problem import _augment, _feature_csr, _result
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
        r_pos, r_neg, lr, n_iter, optimizer, biases, reg, init_std, seed, callback, verbose,
        n_threads, **other):
    """Batch fBGD over row blocks; see :func:`fastpu.distributed.fit` (which fills in
    ``fastpu.fbgd.fit``'s defaults: no default is spelled out here)."""
    _check(other)
    m, n = layout.shape
    k = V.check_k(k)
    Zx, has_ux = _feature_csr(user_features, name="user_features", n_rows=m)
    Zy, has_ix = _feature_csr(item_features, name="item_features", n_rows=n, of="column")
    workers = layout.workers
    sub = dict(allow_other_workers=True, pure=False)

    def on(b):
        return dict(workers=[_blocks.home(workers, b)], **sub)

    if neg_weights is None:
        alpha0 = 1.0 * n if alpha0 is None else alpha0
        alpha0 = V.check_scalar(alpha0, name="alpha0", minimum=0.0)
        rho = V.check_scalar(rho, name="rho", minimum=0.0)
        counts = np.concatenate(client.gather([client.submit(counts_task, c, **on(b))
                                               for b, c in enumerate(layout.item)]))
        neg = _negative_weights(counts, alpha0, rho)
    else:
        neg = V.check_vector(neg_weights, name="neg_weights", size=n, default=1.0, nonnegative=True)
    apos = _scalar_or_values(pos_weight, "pos_weight", 0.0)
    rpos = _scalar_or_values(r_pos, "r_pos", None)
    r_neg = V.check_scalar(r_neg, name="r_neg")
    lr = V.check_scalar(lr, name="lr", minimum=0.0, strict_min=True)
    n_iter = V.check_int(n_iter, name="n_iter", minimum=1)
    optimizer = V.check_choice(optimizer, name="optimizer", choices=_OPTIMIZERS)
    reg = V.check_penalty(reg, name="reg")
    init_std = V.check_scalar(init_std, name="init_std", minimum=0.0)
    rng = V.check_seed(seed)
    callback = V.check_callback(callback)
    adagrad = optimizer == "adagrad"
    if biases is None:
        biases = has_ux or has_ix
    if not isinstance(biases, (bool, np.bool_)):
        raise TypeError(f"biases must be True, False or None, got {biases!r}")
    biases = bool(biases)
    coupled = has_ux or has_ix or biases
    if coupled:                 # Θ (features + bias columns), the same draws as fbgd's init_params
        Zxa, Zya = _augment(Zx, biases), _augment(Zy, biases)
        g = k + 2 if biases else k
        px, py = Zx.shape[1], Zy.shape[1]
        theta_x, theta_y = np.zeros((Zxa.shape[1], g)), np.zeros((Zya.shape[1], g))
        theta_x[:px, :k] = rng.normal(0.0, init_std, size=(px, k))
        theta_y[:py, :k] = rng.normal(0.0, init_std, size=(py, k))
        if biases:
            theta_x[-1, k + 1] = 1.0
            theta_y[-1, k] = 1.0
    else:                       # the same draws as fbgd's init_params for plain MF
        P = np.zeros((m, k))
        Q = np.zeros((n, k))
        P[:, :] = rng.normal(0.0, init_std, size=(m, k))
        Q[:, :] = rng.normal(0.0, init_std, size=(n, k))
    params = dict(k=k, alpha0=alpha0, rho=rho, pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg,
                  lr=lr, n_iter=n_iter, update="batch", optimizer=optimizer, biases=biases,
                  reg=reg, init_std=init_std, seed=seed if isinstance(seed, numbers.Integral) else None,
                  user_features=None if not has_ux else tuple(Zx.shape),
                  item_features=None if not has_ix else tuple(Zy.shape),
                  neg_weights="given" if neg_weights is not None else "eq22",
                  neg_row_weights=None,
                  distributed=dict(n_blocks=layout.n_blocks, n_workers=len(workers)))
    neg_f = client.scatter(neg, broadcast=True, hash=False)
    ub = [client.submit(make_block, c, neg_f, apos, rpos, r_neg, False, **on(b))
          for b, c in enumerate(layout.user)]
    ib = [client.submit(make_block, c, neg_f, apos, rpos, r_neg, True, **on(b))
          for b, c in enumerate(layout.item)]
    const = r_neg * r_neg * m * float(neg.sum())
    if coupled:
        free_x, free_y = _masks(Zxa.shape[1], Zya.shape[1], k, biases)
        progress = Progress("fbgd", verbose=verbose, callback=callback)
        try:
            P, Q, init = _dask_features.fit(
                client, layout, ub, ib, Zxa, Zya, theta_x, theta_y, free_x, free_y, r_neg=r_neg,
                lr=lr, reg=reg, adagrad=adagrad, const=const, n_iter=n_iter, n_threads=n_threads,
                progress=progress)
        finally:
            for f in [neg_f] + ub + ib:
                f.release()
        return _result(P, Q, theta_x, theta_y, px, py, k, biases=biases, has_ux=has_ux,
                       has_ix=has_ix, neg=neg, neg_rows=None, init=init,
                       history=progress.history, params=params)
    prev_p = [None] * layout.n_blocks
    prev_q = [None] * layout.n_blocks
    progress = Progress("fbgd", verbose=verbose, callback=callback)
    roots = client.scatter([P, Q], broadcast=True, hash=False)
    futs = [neg_f] + ub + ib + list(roots)
    try:
        P_f, Q_f = roots
        Sq, sq = _sum(client.gather([client.submit(cache_task, blk, Q_f, n_threads, **on(b))
                                     for b, blk in enumerate(ib)]))
        Sp, sp_ = _sum(client.gather([client.submit(cache_task, blk, P_f, n_threads, **on(b))
                                      for b, blk in enumerate(ub)]))
        pos0 = sum(client.gather([client.submit(positive_task, blk, Q_f, P_f, r_neg, n_threads, **on(b))
                                  for b, blk in enumerate(ib)]))
        init = _loss(Sq, sq, Sp, sp_, r_neg, const, pos0) + _penalty(reg, P, Q)
        opts = dict(r_neg=r_neg, lr=lr, reg=reg, adagrad=adagrad, n_threads=n_threads)
        for it in range(1, n_iter + 1):
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
            penalty = 0.0 if reg == 0.0 else reg * (sq_p + sq_q)
            if progress.step(it, loss + penalty, loss=loss):
                break
        P, Q = client.gather([P_f, Q_f])
    finally:
        for f in futs:
            f.release()
    extras = dict(V_user=P.copy(), V_item=Q.copy(), neg_weights=neg, neg_row_weights=None,
                  initial_objective=init)
    return Factorization(user_factors=P, item_factors=Q, history=progress.history, params=params,
                         method="fbgd", extras=extras)


def _masks(dx, dy, f, biases):
    """The trainable entries of Θ^X, Θ^Y (fbgd's masks: bias columns fixed where eq. 11–13 fix them)."""
    fx = np.zeros((dx, f + 2 if biases else f), dtype=np.bool_)
    fy = np.zeros((dy, fx.shape[1]), dtype=np.bool_)
    if not biases:
        fx[:] = True
        fy[:] = True
        return fx, fy
    fx[:-1, :f] = True
    fx[:-1, f] = True
    fx[-1, f] = True
    fy[:-1, :f] = True
    fy[:-1, f + 1] = True
    return fx, fy


def _small(result):
    """(partial S, partial s, Σ rows², positive loss): what the client needs of a block's result."""
    return result[2], result[3], result[4], result[5]


def _negative_weights(counts, alpha0, rho):
    """Eq. 22 from the items' positive counts (the formula of fastpu.fbgd's own weights)."""
    n = counts.size
    if n == 0:
        return np.zeros(0)
    total = counts.sum()
    if rho == 0.0 or total == 0.0:
        return np.full(n, alpha0 / n)
    raw = np.expm1(counts / total) ** rho
    return alpha0 * raw / raw.sum()


def _scalar_or_values(value, name, minimum):
    if isinstance(value, str):
        if value != "values":
            raise ValueError(f"{name} must be a real number or 'values' (the stored values of Y), "
                             f"got {value!r}")
        return value
    return V.check_scalar(value, name=name, minimum=minimum)


def _penalty(reg, P, Q):
    if reg == 0.0:
        return 0.0
    return reg * (float(np.sum(P ** 2)) + float(np.sum(Q ** 2)))


#: what has a distributed form (fastpu.distributed.METHODS)
SUMMARY = ("update='batch': plain MF, and features/biases (SVDFeature) with Θ updated on the "
           "client")


def check(params):
    """Refuse, in a sentence, a setting with no distributed form."""
    if params.get("update", "batch") != "batch":
        raise ValueError(f"fbgd's update={params['update']!r} is serial (coordinate order); "
                         "the distributed fit supports update='batch', or use fastpu.fbgd.fit")
