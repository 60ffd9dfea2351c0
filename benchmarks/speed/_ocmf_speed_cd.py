"""Parts (c) and (d) of bench_ocmf_speed.py: against implicit's ALS, and 1 vs 2 threads."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))      # the script's own parts

from _ocmf_speed_common import (best_of, blas_limit, fmt_s, LAM, limit_threads, log, ocmf,  # noqa: E402
                                per_iteration, powerlaw_pu, RHO, sampled_dots, _setup, THREADS)
from fastpu._kernels.ocmf import RowOptions  # noqa: E402
from fastpu.ocmf import _problem  # noqa: E402


def implicit_iteration_seconds(Y32, k, n_iter, threads):
    """Seconds per ALS iteration of implicit (its own per-iteration timer), after a warm-up fit."""
    from implicit.cpu.als import AlternatingLeastSquares
    from threadpoolctl import threadpool_limits

    with warnings.catch_warnings(), threadpool_limits(1, "blas"):
        warnings.simplefilter("ignore")
        warm = AlternatingLeastSquares(factors=k, iterations=1, num_threads=threads, random_state=0)
        warm.fit(Y32, show_progress=False)
        times = []
        als = AlternatingLeastSquares(factors=k, iterations=n_iter, num_threads=threads,
                                      random_state=0)
        als.fit(Y32, show_progress=False, callback=lambda it, elapsed, loss: times.append(elapsed))
    return np.array(times), als


# newton_steps, cg_steps and dtype are given explicitly so that the settings stated next to the
# numbers stay true if the defaults change.
FASTPU_C = [
    ("SQ-wSQ", dict(loss="square", rho=RHO, lam=LAM, newton_steps=1, cg_steps=3,
                    dtype="float64")),
    ("SQ-wSQ float32", dict(loss="square", rho=RHO, lam=LAM, newton_steps=1, cg_steps=3,
                            dtype="float32")),
    ("LR-wSQ", dict(loss="logistic", rho=RHO, lam=LAM, newton_steps=1, cg_steps=4,
                    dtype="float64")),
    ("LR-wSQ float32", dict(loss="logistic", rho=RHO, lam=LAM, newton_steps=1, cg_steps=4,
                            dtype="float32")),
]
F64_C = [(lab, kw) for lab, kw in FASTPU_C if kw["dtype"] == "float64"]   # also run with default
#                                                             # BLAS, at 1 thread, and profiled
GOALS_C = {"SQ-wSQ": 1.0, "LR-wSQ": 3.0}


def _goal(label):
    return GOALS_C[label.split()[0]]


def fastpu_iteration_seconds(Y, k, kw, n_iter, threads):
    model = ocmf.fit(Y, k, n_iter=n_iter, n_threads=threads, **kw)
    return per_iteration(model.history), model


def profile_iteration(Y, model, kw, threads, repeat=2):
    """Time the pieces of one outer iteration on the fast path (the calls ``fit`` makes).

    Starts from the factors of ``model`` (a fit on ``Y``), so that the logistic line searches
    behave as in a running fit. BLAS is limited to one thread.
    """
    from threadpoolctl import threadpool_limits

    setup, _ = _setup(Y, kw["loss"], rho=kw["rho"], lam=kw["lam"])
    rows = RowOptions(newton_steps=kw["newton_steps"], cg_steps=kw["cg_steps"])
    W, H = model.user_factors, model.item_factors

    def lib_side(ent, side_, W, E, pq, qq):
        """The library's own side update, as ``fit`` calls it on the fast path.

        It updates W in place (as in ``fit``), so the caller passes a private copy; repeated
        calls continue from the updated rows like successive outer iterations do.
        """
        return _problem._update_side(setup, ent, side_, W, E, pq, qq, True, None, 1, rows)[0]

    s = np.empty(Y.nnz)
    ent = setup.entries
    out = {}
    with limit_threads(threads), threadpool_limits(1, "blas"):
        user_own = (setup.entries, setup.user, W.copy(), H, setup.p_quad, setup.q_quad)
        item_own = (setup.entries_t, setup.item, H.copy(), W, setup.q_quad, setup.p_quad)
        out["library: user side (_update_side, m rows)"] = best_of(
            lambda: lib_side(*user_own), repeat=repeat, warmup=0)
        out["library: item side (_update_side, n rows)"] = best_of(
            lambda: lib_side(*item_own), repeat=repeat, warmup=0)
        out["library: sampled_dots over Ω+ (TRON path, objective())"] = best_of(
            lambda: sampled_dots(ent.indptr, ent.indices, W, H, s), repeat=repeat)
    return out


def part_cd(cfg):
    (m, n), nnz, k = cfg["c_shape"], cfg["c_nnz"], cfg["c_k"]
    log(f"(c) drawing the {m}×{n} matrix with {nnz} positives")
    Y = powerlaw_pu(m, n, nnz, seed=3)
    Y32 = sp.csr_matrix(Y.astype(np.float32))
    res = {"shape": (m, n), "nnz": Y.nnz, "k": k}
    # implicit and every fastpu configuration take turns, round after round (BLAS 1 thread,
    # 2 threads): a slow spell of the machine then hits all of them, and the per-round ratios
    # show how much the comparison moves from one round to the next
    imp_rounds = []
    fp_rounds = {label: [] for label, _ in FASTPU_C}
    models = {}
    for rnd in range(cfg["c_rounds"]):
        t, als = implicit_iteration_seconds(Y32, k, cfg["c_iter"], THREADS)
        imp_rounds.append(t)
        log(f"(c) round {rnd + 1}: implicit ALS {np.round(t, 3)} s per iteration")
        for label, kw in FASTPU_C:
            with blas_limit(1):
                t, model = fastpu_iteration_seconds(Y, k, kw, cfg["c_iter"], THREADS)
            fp_rounds[label].append(t)
            models[label] = model
            log(f"(c) round {rnd + 1}: fastpu {label} {np.round(t, 3)} s per iteration "
                f"(objective {model.history[-1]['objective']:.6g})")
    res["implicit_rounds"] = imp_rounds
    res["fastpu_rounds"] = fp_rounds
    res["implicit_cg_steps"] = als.cg_steps
    res["implicit_dtype"] = str(als.dtype)
    res["implicit_reg"] = als.regularization
    res["objective"] = {label: models[label].history[-1]["objective"] for label, _ in FASTPU_C}
    # once: BLAS at its default thread count, and everything at 1 thread for (d)
    imp = {THREADS: np.concatenate(imp_rounds)}
    t, _ = implicit_iteration_seconds(Y32, k, cfg["c_iter"], 1)
    imp[1] = t
    log(f"(c) implicit ALS, 1 thread: {np.round(t, 3)} s per iteration")
    res["implicit"] = imp
    fp = {(label, THREADS, "1"): np.concatenate(fp_rounds[label]) for label, _ in FASTPU_C}
    for label, kw in F64_C:
        for th, blas, it in ((THREADS, "default", cfg["c_iter"]), (1, "1", cfg["c_iter_1thread"])):
            with blas_limit(None if blas == "default" else 1):
                t, model = fastpu_iteration_seconds(Y, k, kw, it, th)
            fp[(label, th, blas)] = t
            log(f"(c) fastpu {label}, {th} thread(s), BLAS threads {blas}: {np.round(t, 3)} s per "
                f"iteration (objective {model.history[-1]['objective']:.6g})")
    res["fastpu"] = fp
    prof = {}
    for label, kw in F64_C:
        prof[label] = profile_iteration(Y, models[label], kw, THREADS)
        log(f"(c) profile {label}: " + ", ".join(
            f"{a} {fmt_s(b) if not a.startswith('_') else f'{b:.1e}'}" for a, b in prof[label].items()))
    res["profile"] = prof
    return res

