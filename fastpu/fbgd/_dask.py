"""fBGD on a Dask cluster: plain MF here (``update="coordinate"``, fbgd.fit's default, and
``"batch"``), features and biases (``"batch"``) in :mod:`fastpu.fbgd._dask_features`; the
arguments go through :mod:`fastpu.fbgd._check` as ``fastpu.fbgd.fit``'s do.

Given the other side's caches S = Fᵀ diag(w) F and s = Fᵀ w (eq. 6–8 of Yuan et al.), one side's
update is row-separable in both modes: the batch gradient of a row and its Adagrad step, and
Appendix B's coordinate updates of plain MF, where a row's parameters are its own embedding
(the single-machine fit runs them parallel over rows too). A half-step is one task per row
block: the same ``side_gradient`` / ``batch_update`` or ``coordinate_rows`` kernels as
:func:`fastpu.fbgd.fit` on the block's rows, given the pieces of the other side's rows its
positives touch (:mod:`fastpu.distributed.routing`), returning the new rows, their Adagrad
accumulators and the block's partial caches. The item half-step also returns the block's share
of the loss on the positives, so the objective costs no extra pass.

The rows and their Adagrad accumulators are per-row state kept on the workers: each block's task
starts from the block's previous result, and the next half-step routes the new rows from there;
the client receives only the g×g caches and scalars. Every input of a task is the output of
another task, or data of the task graph (the initial factors, the weights), so a result lost
with a worker is recomputed from its lineage and a re-run gives the same numbers.

With frequency-scaled regularisation (``nu`` > 0) the client computes every row's penalty
λ = lam · c^ν as :func:`fastpu.fbgd.fit` does (:func:`fastpu.fbgd._problem.row_penalties`, from
the rows' and columns' positives counted on the workers); each block's task receives its rows'
slice, held on its worker, and returns Σ_j λ_j ‖θ_j‖² of its rows.

The coordinate mode's one difference from the single-machine arithmetic: ``fbgd.fit`` hands each
side the predictions of the positives that the other side's kernel moved along with its steps,
while a block computes them afresh from the rows (the same sums up to rounding, about 1e-16).
"""

from __future__ import annotations


import numpy as np

from fastpu._core.progress import Progress
from fastpu.fbgd._check import check_model, check_run, check_start, free_masks, warn_rank
from fastpu.fbgd._fit import fit_params
from fastpu.fbgd._problem import _augment, _result, draw_start, eq22, row_penalties
from fastpu.fbgd import _dask_features
from fastpu.fbgd._dask_blocks import (_loss, _sum, cache_task, coordinate_task, counts_task,
                                      make_block, positive_task, update_task)
from fastpu._core.factorization import Factorization
from fastpu.distributed import blocks as _blocks
from fastpu.distributed import routing


def _check(other):
    if other.get("neg_row_weights") is not None:
        raise ValueError("neg_row_weights (fBGD's α⁻_x) has no distributed form yet; "
                         "use fastpu.fbgd.fit, or leave it at None")
    unknown = set(other) - {"neg_row_weights"}
    if unknown:
        raise TypeError(f"fastpu.distributed.fit(method='fbgd') got unexpected parameters "
                        f"{sorted(unknown)}; see fastpu.fbgd.fit for the accepted ones")


def fit(client, layout, k, *, user_features, item_features, alpha0, rho, neg_weights, pos_weight,
        r_pos, r_neg, biases, lam, nu, lr, n_iter, update, optimizer, init, init_std, seed,
        callback, verbose, n_threads, **other):
    """fBGD over row blocks; see :func:`fastpu.distributed.fit` (which fills in
    ``fastpu.fbgd.fit``'s defaults: no default is spelled out here). The arguments go through
    the same checks as ``fastpu.fbgd.fit``'s (:mod:`fastpu.fbgd._check`)."""
    _check(other)
    m = layout.shape[0]
    run = check_run(k, lr=lr, n_iter=n_iter, update=update, optimizer=optimizer,
                    init_std=init_std, seed=seed, callback=callback, verbose=verbose)
    model = check_model(layout.shape, user_features=user_features, item_features=item_features,
                        alpha0=alpha0, rho=rho, neg_weights=neg_weights, neg_row_weights=None,
                        pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg, biases=biases, lam=lam,
                        nu=nu)
    if run.update == "coordinate" and not model.plain:
        raise ValueError(
            "fbgd's update='coordinate' (fastpu.fbgd.fit's default) with features or biases "
            "updates each feature's (and the global bias's) parameters over all of its rows in "
            "turn, which has no distributed form; pass update='batch' (fastpu.fbgd.fit("
            "update='batch') gives the same model), or fit on one machine. Plain MF (no "
            "features, biases=False) runs update='coordinate' on the cluster")
    warn_rank(run, layout.shape, model)
    start = check_start(init, model, run)
    k, w, lam = run.k, model.weights, model.lam
    workers = layout.workers
    routes = routing.Routes(client, layout)
    try:
        def counts(side):       # positives per user (per item), counted on the workers
            return np.concatenate(client.gather([client.submit(counts_task, c, **routes.on(b))
                                                 for b, c in enumerate(side)]))

        counts_y = counts(layout.item) if (w.neg is None or model.nu != 0.0) else None
        # eq. 22 from the items' positive counts
        neg = eq22(counts_y, w.alpha0, w.rho) if w.neg is None else w.neg
        # every row's penalty, as fbgd.fit computes it (α⁻_x = 1: no row weights here)
        penalties = row_penalties(lam, model.nu, None if model.nu == 0.0 else counts(layout.user),
                                  counts_y, np.ones(m), neg, model.biases)
        Zx, Zy = model.Zx, model.Zy
        px, py = Zx.shape[1], Zy.shape[1]
        # Θ (features + bias columns), or P and Q for plain MF: the same draws as fbgd.fit's
        theta_x, theta_y = start if start is not None else draw_start(run.rng, px, py, k,
                                                                      model.biases, run.init_std)
        params = dict(fit_params(run, model, update=run.update, pos_weight=pos_weight,
                                 r_pos=r_pos, seed=seed),
                      distributed=dict(n_blocks=layout.n_blocks, n_workers=len(workers)))
        neg_src = _blocks.hold_slices(client, neg, layout.ib, workers, "neg")
        routes.held += neg_src
        coef = (w.pos_weight, w.r_pos, w.r_neg)
        ub = routes.blocks(make_block, "user", *coef, False, other=neg_src)
        ib = routes.blocks(make_block, "item", *coef, True, own=neg_src)
        const = w.r_neg * w.r_neg * m * float(neg.sum())
        progress = Progress("fbgd", verbose=run.verbose, callback=run.callback, total=run.n_iter)
        if not model.plain:
            Zxa, Zya = _augment(Zx, model.biases), _augment(Zy, model.biases)
            free_x, free_y = free_masks(Zxa.shape[1], Zya.shape[1], k, model.biases)
            def wrap(P, Q, tx, ty):     # the callback's info["model"] of an iterate
                return _result(P, Q, tx, ty, px, py, k, biases=model.biases, has_ux=model.has_ux,
                               has_ix=model.has_ix, neg=neg, neg_rows=None, init=None,
                               history=[], params=params)

            P, Q, init0 = _dask_features.fit(
                client, routes, ub, ib, Zxa, Zya, theta_x, theta_y, free_x, free_y,
                r_neg=w.r_neg, lr=run.lr, lam=penalties, adagrad=run.adagrad, const=const,
                n_iter=run.n_iter, n_threads=n_threads, progress=progress, wrap=wrap)
            return _result(P, Q, theta_x, theta_y, px, py, k, biases=model.biases,
                           has_ux=model.has_ux, has_ix=model.has_ix, neg=neg, neg_rows=None,
                           init=init0, history=progress.history, params=params)
        P, Q, init0 = _plain(client, routes, ub, ib, theta_x, theta_y, run, lam,
                             penalties if model.nu != 0.0 else None, w.r_neg, const, n_threads,
                             progress)
    finally:
        routes.release()
        progress.close()
    extras = dict(V_user=P.copy(), V_item=Q.copy(), neg_weights=neg, neg_row_weights=None,
                  initial_objective=init0)
    return Factorization(user_factors=P, item_factors=Q, history=progress.history, params=params,
                         method="fbgd", extras=extras)


def _plain(client, routes, ub, ib, P, Q, run, lam, penalties, r_neg, const, n_threads, progress):
    """Plain MF: epochs with the factors and their Adagrad accumulators on the workers, each
    block given the other side's rows its positives touch (and its rows' penalties: the one
    ``lam``, or with ``penalties``, a λ per row, their slice). Returns (P, Q, initial objective)."""
    layout, on = routes.layout, routes.on
    workers = layout.workers
    scaled = penalties is not None
    if scaled:                  # λ per row: each block's slice held on its worker
        lam_src = (_blocks.hold_slices(client, penalties[0], layout.ub, workers, "lam"),
                   _blocks.hold_slices(client, penalties[1], layout.ib, workers, "lam"))
        routes.held += lam_src[0] + lam_src[1]
    else:                       # one lam: the kernels' compact form
        one = np.array([float(lam)])
        lam_src = ([one] * len(ub), [one] * len(ib))
    P_src = _blocks.hold_slices(client, P, layout.ub, workers, "P")
    Q_src = _blocks.hold_slices(client, Q, layout.ib, workers, "Q")
    Sq, sq = _sum(client.gather([client.submit(cache_task, blk, Q_src[b], n_threads, **on(b))
                                 for b, blk in enumerate(ib)]))
    Sp, sp_ = _sum(client.gather([client.submit(cache_task, blk, P_src[b], n_threads, **on(b))
                                  for b, blk in enumerate(ub)]))
    pos0 = sum(client.gather([client.submit(positive_task, blk, Q_src[b], r_neg, n_threads,
                                            *routes.item.pieces(P_src, b), **on(b))
                              for b, blk in enumerate(ib)]))
    init = _loss(Sq, sq, Sp, sp_, r_neg, const, pos0) + (
        _scaled_penalty(penalties, P, Q) if scaled else _penalty(lam, P, Q))
    task = coordinate_task if run.update == "coordinate" else update_task
    opts = dict(r_neg=r_neg, lr=run.lr, scaled=scaled, adagrad=run.adagrad, n_threads=n_threads)

    def half(router, blocks, own, other, S, s, with_loss):
        lams = lam_src[0] if blocks is ub else lam_src[1]
        futs = [client.submit(task, blk, own[b], lams[b], S, s, with_loss, opts,
                              *router.pieces(other, b), pure=False, **on(b))
                for b, blk in enumerate(blocks)]
        return futs, client.gather([client.submit(_small, r, **on(b)) for b, r in enumerate(futs)])

    for it in range(1, run.n_iter + 1):
        P_src, res = half(routes.user, ub, P_src, Q_src, Sq, sq, False)
        Sp, sp_ = _sum(res)
        sq_p = sum(r[2] for r in res)
        Q_src, res = half(routes.item, ib, Q_src, P_src, Sp, sp_, True)
        Sq, sq = _sum(res)
        sq_q = sum(r[2] for r in res)
        loss = _loss(Sq, sq, Sp, sp_, r_neg, const, sum(r[3] for r in res))
        # the blocks' Σ θ² (times the one lam here), or their Σ_j λ_j ‖θ_j‖²
        penalty = sq_p + sq_q if scaled else (0.0 if lam == 0.0 else lam * (sq_p + sq_q))
        if progress.step(it, loss + penalty, loss=loss, model=lambda: Factorization(
                _blocks.gather_rows(client, P_src, workers),
                _blocks.gather_rows(client, Q_src, workers), method="fbgd")):
            break
    return (_blocks.gather_rows(client, P_src, workers), _blocks.gather_rows(client, Q_src, workers),
            init)


def _small(result):
    """(partial S, partial s, the rows' Σ θ² or Σ_j λ_j ‖θ_j‖², positive loss): what the client
    needs of a block's result."""
    return result[2], result[3], result[4], result[5]


def _penalty(lam, P, Q):
    if lam == 0.0:
        return 0.0
    return lam * (float(np.sum(P ** 2)) + float(np.sum(Q ** 2)))


def _scaled_penalty(penalties, P, Q):
    """Σ_x λ_x ‖p_x‖² + Σ_y λ_y ‖q_y‖² (plain MF: the embeddings are the parameters)."""
    return float(penalties[0] @ np.sum(P * P, axis=1)) + float(penalties[1] @ np.sum(Q * Q, axis=1))


#: what has a distributed form (fastpu.distributed.METHODS)
SUMMARY = ("plain MF with update='coordinate' (the default) or 'batch', and features/biases "
           "(SVDFeature) with update='batch', Θ updated on the client")


def check(params):
    """Refuse, in a sentence, a setting with no distributed form (the rest is refused by
    :func:`fit` once the model is checked: coordinate updates with features or biases)."""
    return None
