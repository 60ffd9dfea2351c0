"""Part (b) of bench_ocmf_speed.py: time per outer iteration as m·n grows at fixed |Ω+|."""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _ocmf_speed_common import (best_of, blas_limit, fmt_s, LAM, LAM_GRAPH, limit_threads,  # noqa: E402
                                log, ocmf, per_iteration, powerlaw_pu, random_graph, RHO, _setup,
                                THREADS)
from _ocmf_speed_cd import implicit_iteration_seconds  # noqa: E402


@contextlib.contextmanager
def count_hessp():
    """Count SubProblem.hessp calls (TRON's CG steps) while the block runs."""
    counter = {"n": 0}
    orig = ocmf.SubProblem.hessp

    def hessp(self, s):
        counter["n"] += 1
        return orig(self, s)

    ocmf.SubProblem.hessp = hessp
    try:
        yield counter
    finally:
        ocmf.SubProblem.hessp = orig


def part_b(cfg):
    k, nnz, it = cfg["b_k"], cfg["b_nnz"], cfg["b_iter"]
    mats = {m: powerlaw_pu(m, m, nnz, seed=1) for m in cfg["b_sizes"]}
    # fast path: the sizes take turns, round after round, so that a slow spell of the machine
    # hits every size alike; each fit's first iteration is dropped (first touch of its memory)
    fast_times = {m: [] for m in mats}
    fast_rounds = {m: [] for m in mats}
    imp_times = {m: [] for m in mats}
    imp_rounds = {m: [] for m in mats}
    for rnd in range(cfg["b_rounds"]):
        for m, Y in mats.items():
            with blas_limit(1):
                fast = ocmf.fit(Y, k, loss="logistic", rho=RHO, lam=LAM, n_iter=it + 1,
                                n_threads=THREADS, dtype="float64")
            t = per_iteration(fast.history)[1:]
            fast_times[m].extend(t)
            fast_rounds[m].append(float(np.median(t)))
            # reference: implicit's ALS on the same matrix (same k, threads), same turns
            t, _ = implicit_iteration_seconds(sp.csr_matrix(Y.astype(np.float32)), k, it,
                                              THREADS)
            imp_times[m].extend(t)
            imp_rounds[m].append(float(np.median(t)))
        log(f"(b) fast path round {rnd + 1}: " + ", ".join(
            f"m=n={m} {fmt_s(float(np.median(v[-it:])))}" for m, v in fast_times.items()))
    rows = []
    for m, Y in mats.items():
        t_fast = float(np.median(fast_times[m]))
        S = random_graph(m, 10, seed=2)
        with count_hessp() as cnt, blas_limit(1):
            coup = ocmf.fit(Y, k, loss="logistic", rho=RHO, lam=LAM, user_graph=S,
                            lam_graph=LAM_GRAPH, solver="tron", n_iter=it, n_threads=THREADS,
                            dtype="float64")
        t_coup = float(np.median(per_iteration(coup.history)))
        tron_it = sum(h["inner"] for h in coup.history) / len(coup.history)
        # the coupled sub-problem's own cost, independent of how many TRON steps it takes
        setup, _ = _setup(Y, "logistic", user_graph=S, lam_graph=LAM_GRAPH)
        rng = np.random.default_rng(4)
        W0, E0 = rng.standard_normal((m, k)) * 0.1, rng.standard_normal((m, k)) * 0.1
        v = rng.standard_normal(m * k)

        def fgh():
            prob = ocmf.SubProblem(setup, setup.entries, setup.user, E0, setup.p_quad,
                                   setup.q_quad)
            prob.fun(W0.ravel())
            prob.grad(W0.ravel())
            prob.hessp(v)

        with blas_limit(1), limit_threads(THREADS):
            t_fgh = best_of(fgh, repeat=3, min_time=0.5)
        rows.append(dict(m=m, nnz=Y.nnz, graph_nnz=S.nnz, fast=t_fast,
                         fast_rounds=fast_rounds[m], implicit=float(np.median(imp_times[m])),
                         implicit_rounds=imp_rounds[m], coupled=t_coup,
                         tron_iter=tron_it, hessp=cnt["n"] / len(coup.history), fgh=t_fgh))
        log(f"(b) m=n={m}: LR-wSQ fast path {fmt_s(t_fast)}/iter, user graph + TRON "
            f"{fmt_s(t_coup)}/iter ({tron_it:.1f} TRON iterations, {cnt['n'] / it:.1f} Hessian-"
            f"vector products per outer iteration); graph sub-problem fun+grad+hessp "
            f"{fmt_s(t_fgh)}")
    return rows

