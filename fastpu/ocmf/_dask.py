"""ocmf on a Dask cluster: the row-separable fast path, one task per block and half-step.

With no features and no graph, the sub-problem of one side separates into one k-dimensional
problem per row (see :mod:`fastpu._kernels.ocmf`); a row needs only its own entries, the other
side's rows its positives touch, and the k×k / k-vector sums M = Eᵀ diag(q) E, κ = Eᵀ q. A
half-step is therefore one task per row block (on the worker that holds the block) that

1. receives the pieces of the other side's current rows its positives touch
   (:mod:`fastpu.distributed.routing`: cut by a task where each source block lives, moved worker
   to worker, never through the client), and M, κ, which the client summed from the k×k
   partials the previous half-step returned;
2. starts from its own current rows (on its worker), runs the same ``row_newton`` kernel as the
   single-machine fit on its compact entries, and returns the new rows with their own partial
   Gram (the next half-step's M, κ), the block's part of the objective and of the regulariser.
   The new rows stay on the worker: the next half-step routes them from there.

Everything a task reads is its block and its inputs, so a re-run gives the same numbers; and
every input is the output of a task — the initial factors and the weights included, which are
data of the task graph (:func:`fastpu.distributed.blocks.hold`) — so whatever a lost worker held
is recomputed from its lineage.
"""

from __future__ import annotations

import inspect
import types

import numpy as np

from fastpu._core import validation as V
from fastpu._kernels.csr import GRAM_GROUP
from fastpu.ocmf._check import FIT_ARGS, check_fit, dims
from fastpu._core.progress import Progress
from fastpu._core.factorization import Factorization
from fastpu.distributed import blocks as _blocks
from fastpu.distributed import routing
from fastpu.ocmf import _dask_tron, _grid
from fastpu.ocmf._dask_blocks import _sum_parts, gram_task, make_block, turned, update_task
from fastpu.ocmf._problem import eigen_rows, eigen_turn

# parameters of fastpu.ocmf.fit that have no distributed form yet, with the value that is supported
UNSUPPORTED = {"negatives": ("full", "all"), "fast_path": True, "lam_w": None, "lam_h": None}
IGNORED = ("dense_limit", "neg_ratio")        # only used by the dense / sampled variants


def _check_unsupported(params):
    if isinstance(params.get("p"), str):
        raise ValueError(
            f"fastpu.distributed.fit(method='ocmf') takes p as an array, not the rule "
            f"p={params['p']!r} (its counts are the whole Y's, which the workers hold in "
            "blocks); pass the weights themselves, e.g. c = np.maximum(np.diff(Y.indptr), 1); "
            "p = c / c.mean(), or use fastpu.ocmf.fit on one machine")
    for name, ok in UNSUPPORTED.items():
        if name in params and not _same(params[name], ok):
            raise ValueError(
                f"fastpu.distributed.fit(method='ocmf') supports the row-separable fast path and "
                f"features/graphs with TRON (negatives='full' or 'all', fast_path=True); got "
                f"{name}={_short(params[name])}. "
                f"Use fastpu.ocmf.fit on one machine for {name}={_short(params[name])}."
            )


def _same(v, ok):
    if ok is None:
        return v is None
    if isinstance(ok, tuple):
        return isinstance(v, str) and v in ok
    return isinstance(v, type(ok)) and v == ok


def _short(v):
    return type(v).__name__ if hasattr(v, "shape") else repr(v)


def fit_args(k, params):
    """``params`` completed with :func:`fastpu.ocmf.fit`'s defaults: the arguments
    :func:`fastpu.ocmf._check.check_fit` reads. A name ``fit`` does not take is a TypeError."""
    from fastpu.ocmf._fit import fit as single

    known = {name: par.default for name, par in inspect.signature(single).parameters.items()
             if name in FIT_ARGS}
    unknown = set(params) - set(known)
    if unknown:
        raise TypeError(f"fastpu.distributed.fit(method='ocmf') got unexpected parameters "
                        f"{sorted(unknown)}; see fastpu.ocmf.fit for the accepted ones")
    return dict(known, **params, k=k)


def _setup(shape, k, params, where):
    """The checks and the start shared by the row-block and the grid fit: ``fastpu.ocmf.fit``'s
    checked record (:func:`fastpu.ocmf._check.check_fit`) of the same arguments, its initial
    factors (the same draws in the same order) and its params record."""
    from fastpu.ocmf._fit import _draw_start

    _check_unsupported(params)
    c = check_fit(shape, fit_args(k, params))
    run, model = c.run, c.model
    if model.coupled and run.solver != "tron":
        raise ValueError("solver='gd' has no distributed form here (use TRON for features and graphs); "
                         "use solver='tron' (the default), or fastpu.ocmf.fit")
    if model.coupled and model.nu != 0.0:
        raise ValueError(f"nu={model.nu:g} with a user or item graph has no distributed form "
                         "(the graph's TRON side keeps one λ); use nu=0 with graphs, or "
                         "fastpu.ocmf.fit on one machine")
    W, H = c.start if c.start is not None else _draw_start(run, dims(model, shape))
    pw = model.rho * model.p
    const = model.abar ** 2 * float(pw.sum()) * float(model.q.sum())
    progress = Progress("ocmf", verbose=run.verbose, callback=run.callback, total=run.n_iter)
    # each side's rule for its rows' λ_i (make_block applies it to the block's rows)
    penalty = {"user": (model.lam_w, model.nu, float(model.q.sum())),
               "item": (model.lam_h, model.nu, float(pw.sum()))}
    return types.SimpleNamespace(c=c, model=model, W=W, H=H, pw=pw, q=model.q, progress=progress,
                                 const=const, penalty=penalty, every=model.negatives == "all",
                                 params=dict(c.params(), distributed=where))


def fit_grid(client, Y, workers, grid, k, *, n_threads, **params):
    """The fast path on a p × q grid of Y's cells (:mod:`fastpu.ocmf._grid`); the same
    arguments and checks as :func:`fit`, and a sentence for what the grid does not run."""
    grid = _grid.check_grid(grid, Y.shape)
    if any(params.get(name) is not None
           for name in ("user_features", "item_features", "user_graph", "item_graph")):
        raise ValueError("grid= runs ocmf's row-separable fast path (no features, no graphs); "
                         "user/item features and graphs run on row blocks: drop grid= (and use "
                         "n_blocks= if needed)")
    s = _setup(Y.shape, k, params, dict(grid=grid, n_workers=len(workers)))
    W, H = _grid.fit(client, Y, grid, workers, s.W, s.H, s.pw, s.q, s.c, const=s.const,
                     n_threads=n_threads, progress=s.progress,
                     wrap=lambda W, H: Factorization(W, H, params=s.params, method="ocmf"))
    s.progress.close()
    return Factorization(W, H, s.progress.history, s.params, "ocmf", {})


def fit(client, layout, k, *, n_threads, **params):
    """Alternating row-block updates; see :func:`fastpu.distributed.fit`. ``params`` are
    ``fastpu.ocmf.fit``'s arguments, completed with its defaults and checked by its own checks
    (:func:`fastpu.ocmf._check.check_fit`): no default or check is spelled out here."""
    s = _setup(layout.shape, k, params, dict(n_blocks=layout.n_blocks,
                                             n_workers=len(layout.workers)))
    c, model, W, H, pw, q, progress = s.c, s.model, s.W, s.H, s.pw, s.q, s.progress
    run, rows = c.run, c.rows
    k, n_iter, n_inner, abar, lam, const = run.k, run.n_iter, run.n_inner, model.abar, model.lam, s.const
    kind, coupled, params = model.kind, model.coupled, s.params
    X, Z, Lu, Lv = model.user_features, model.item_features, model.L_user, model.L_item
    lam_g = model.lam_graph
    fdt = run.dtype
    workers = layout.workers
    half = dict(kind=kind, abar=abar, rows=rows, n_threads=n_threads)
    # the other side's rows each block touches, and the weights of the rows: once, for the fit
    routes = routing.Routes(client, layout)
    try:
        pw_src = _blocks.hold_slices(client, pw, layout.ub, workers, "p")
        q_src = _blocks.hold_slices(client, q, layout.ib, workers, "q")
        routes.held += pw_src + q_src
        if coupled:
            def wrap(Wc, Hc, U, Vf, history=()):
                extras = {}
                if X is not None:
                    extras["W"] = Wc
                if Z is not None:
                    extras["H"] = Hc
                return Factorization(U, Vf, list(history), params, "ocmf", extras)

            Wc, Hc, U, Vf = _dask_tron.fit(
                client, layout, routes, (X, Z, Lu, Lv), W, H, lam=lam, lam_g=lam_g, abar=abar,
                kind=kind, const=const, has_quad=bool(np.any(pw)) and bool(np.any(q)), pw=pw,
                q=q, pw_src=pw_src, q_src=q_src, n_iter=n_iter, n_inner=n_inner, rows=rows,
                penalty=s.penalty, every=s.every, n_threads=n_threads, progress=progress,
                wrap=wrap)
            progress.close()
            return wrap(Wc, Hc, U, Vf, progress.history)
        ublocks = routes.blocks(make_block, "user", s.penalty["user"], s.every, own=pw_src,
                                other=q_src)
        iblocks = routes.blocks(make_block, "item", s.penalty["item"], s.every, own=q_src,
                                other=pw_src)
        # the initial factors are the roots of every later task's lineage: data of the graph
        W_src = _blocks.hold_slices(client, W, layout.ub, workers, "W")
        H_src = _blocks.hold_slices(client, H, layout.ib, workers, "H")
        # float32 at large k: each half-step works in the eigenbasis of its M, as the
        # single-machine fit does (fastpu.ocmf._problem._eigen_basis), and gets its numbers bit
        # for bit: M is summed by gram_parts, and every row is turned once per half-step by
        # turn_rows, where it lives, in the same fixed chunks of rows as on one machine (the
        # layout cuts rows at multiples of GRAM_GROUP: row_align below)
        eigen = eigen_rows(k, fdt)
        half["exact"] = eigen
        parts = client.gather([client.submit(gram_task, blk, H_src[b], n_threads, eigen,
                                             pure=False, **_on(workers, b))
                               for b, blk in enumerate(iblocks)])
        M_h, kappa_h = _sum_parts(parts, eigen)
        for it in range(1, n_iter + 1):
            # (the rows a name held before are released as it is rebound: a worker holds one
            # copy of a side's rows, plus the new one while a task writes it)
            M_h, kappa_h, opts = _turn(M_h, kappa_h, eigen, dict(half, dtype=H.dtype.name))
            H_src = _turned_rows(client, workers, H_src, opts)
            W_src, _, M_w, kappa_w, reg_w = _half_step(client, workers, routes.user, ublocks,
                                                       W_src, H_src, M_h, kappa_h, opts)
            M_w, kappa_w, opts = _turn(M_w, kappa_w, eigen, dict(half, dtype=W.dtype.name))
            W_src = _turned_rows(client, workers, W_src, opts)
            H_src, f_h, M_h, kappa_h, _ = _half_step(client, workers, routes.item, iblocks,
                                                     H_src, W_src, M_w, kappa_w, opts)
            obj = f_h + const + reg_w
            if progress.step(it, obj, inner=0, model=lambda: Factorization(
                    _blocks.gather_rows(client, W_src, workers),
                    _blocks.gather_rows(client, H_src, workers), params=params, method="ocmf")):
                break
        # both in the last half-step's basis: W was turned there as the routed side
        W = _blocks.gather_rows(client, W_src, workers)
        H = _blocks.gather_rows(client, H_src, workers)
    finally:
        routes.release()
    progress.close()
    return Factorization(W, H, progress.history, params, "ocmf", {})


def row_align(k, params):
    """The layout's cuts fall at multiples of this many rows: ``GRAM_GROUP`` when the fit works in
    the eigenbasis (float32, k ≥ EIGEN_MIN_K, the row path), so that the blocks' partial Grams
    add up to one machine's M bit for bit (:func:`fastpu._kernels.csr.gram_parts`); else 1.
    Arguments the fit's own checks will refuse give 1 (the refusal comes from those checks)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or _coupled(params):
        return 1
    try:
        eigen = eigen_rows(int(k), V.check_float_dtype(fit_args(k, params)["dtype"]))
    except (TypeError, ValueError):
        return 1
    return GRAM_GROUP if eigen else 1


def _coupled(params):
    return any(params.get(name) is not None
               for name in ("user_features", "item_features", "user_graph", "item_graph"))


def _on(workers, b):
    return dict(workers=[_blocks.home(workers, b)], allow_other_workers=True)


def _turn(M, kappa, eigen, opts):
    """This half-step's (M, κ, task options): with ``eigen``, M's eigenbasis (M diagonal, κ turned,
    and the turn Q in ``opts["turn"]`` for both sides' rows)."""
    turn = eigen_turn(M, kappa) if eigen else None
    if turn is None:                        # none wanted, or M not finite: keep the basis
        return M, kappa, opts
    Q, D, kappa = turn
    Qc = np.ascontiguousarray(Q, dtype=opts["dtype"])
    return D, kappa, dict(opts, turn=Qc)


def _turned_rows(client, workers, sources, opts):
    """The blocks' rows turned by this half-step's turn, each where it lives (one task per
    block, as the single-machine fit turns the routed factor in place); ``sources`` when the
    half-step makes no turn."""
    if opts.get("turn") is None:
        return sources
    # Q (k×k) goes in each of the P tasks: one more task holding it would cost a round trip
    return [client.submit(turned, opts["turn"], src, opts["n_threads"], pure=False,
                          **_on(workers, c))
            for c, src in enumerate(sources)]


def _half_step(client, workers, router, blocks, F_src, E_src, M, kappa, half):
    """One task per block, each given the pieces of E its positives touch (E already in the
    half-step's basis: :func:`_turned_rows`); the new rows stay on the workers (the next
    half-step routes them), the client gets only the k×k sums."""
    futs = [client.submit(update_task, blk, F_src[b], M, kappa, half,
                          *router.pieces(E_src, b), pure=False, **_on(workers, b))
            for b, blk in enumerate(blocks)]
    res = client.gather([client.submit(_blocks.drop_first, f, **_on(workers, b))
                         for b, f in enumerate(futs)])
    f = float(sum(r[0] for r in res))
    M_new, kappa_new = _sum_parts([r[1] for r in res], half.get("exact", False))
    reg = float(sum(r[2] for r in res))
    return futs, f, M_new, kappa_new, reg


#: what has a distributed form (fastpu.distributed.METHODS)
SUMMARY = ("the row-separable fast path, and user/item features and graphs with TRON "
           "(negatives='full' or 'all')")


def check(params):
    """Refuse, in a sentence, a setting with no distributed form."""
    if params.get("negatives", "full") not in ("full", "all"):
        raise ValueError(
            f"negatives={params['negatives']!r} has no distributed form (LR-wLR is dense O(mn), "
            "sampled negatives are drawn user by user); use negatives='full' (e.g. LR-wSQ) or "
            "'all', or fastpu.ocmf.fit on one machine")
