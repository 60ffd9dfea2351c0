"""Part (a) of bench_ocmf_speed.py: efficient vs dense objective and gradient of one sub-problem."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _ocmf_speed_common import (best_of, blas_limit, fmt_s, LAM, limit_threads, log, ocmf,
                                powerlaw_pu, RHO, _setup, THREADS)  # noqa: E402


def efficient_fun_grad(setup, W, E):
    """Sub-problem value and gradient in W (user side, E fixed) by the O(|Ω+|k + mk²) path."""
    prob = ocmf.SubProblem(setup, setup.entries, setup.user, E, setup.p_quad, setup.q_quad)
    w = W.ravel()
    f = prob.fun(w)
    g = prob.grad(w)
    return f, g.reshape(W.shape)


def dense_fun_grad(C, mask, W, E, rho, abar, lam):
    """Same value and gradient from the m×n score matrix (logistic on Ω+, rho(ā - s)² elsewhere).

    g(W) = Σ_Ω+ C_ij log(1 + exp(-s_ij)) + Σ_∉Ω+ rho (ā - s_ij)² + lam ‖W‖²,  S = W Eᵀ;
    ∇g = D E + 2 lam W with D_ij = -C_ij σ(-s_ij) on Ω+ and -2 rho (ā - s_ij) elsewhere.
    """
    S = W @ E.T
    t = abar - S
    pos = C * np.logaddexp(0.0, -S)
    neg = rho * t * t
    f = float(np.sum(np.where(mask, pos, neg))) + lam * float(np.sum(W * W))
    sig = 0.5 * (1.0 - np.tanh(0.5 * S))          # σ(-s), no overflow
    D = np.where(mask, -C * sig, -2.0 * rho * t)
    G = D @ E + 2.0 * lam * W
    return f, G


def part_a(cfg, rng):
    k, rows = cfg["a_k"], []
    for m in cfg["a_sizes"]:
        n = m
        Y = powerlaw_pu(m, n, cfg["a_per_row"] * m, seed=m)
        setup, Yc = _setup(Y, "logistic")
        W = rng.standard_normal((m, k)) * 0.3
        E = rng.standard_normal((n, k)) * 0.3
        Yd = Yc.toarray()
        mask = Yd != 0
        with blas_limit(1):
            fe, ge = efficient_fun_grad(setup, W, E)
        fd, gd_ = dense_fun_grad(Yd, mask, W, E, RHO, setup.abar, LAM)
        rel_f = abs(fe - fd) / abs(fd)
        rel_g = np.linalg.norm(ge - gd_) / np.linalg.norm(gd_)
        if not (rel_f <= 1e-8 and rel_g <= 1e-8):
            raise AssertionError(f"m=n={m}: efficient and dense disagree (objective {rel_f:.2e}, "
                                 f"gradient {rel_g:.2e} relative)")
        reps = 5 if m <= 1000 else 3
        with blas_limit(1), limit_threads(THREADS):
            t_eff = best_of(lambda: efficient_fun_grad(setup, W, E), repeat=reps, min_time=1.0)
        t_den = best_of(lambda: dense_fun_grad(Yd, mask, W, E, RHO, setup.abar, LAM), repeat=reps,
                        warmup=1)
        rows.append(dict(m=m, nnz=Y.nnz, eff=t_eff, dense=t_den, ratio=t_den / t_eff, rel_f=rel_f,
                         rel_g=rel_g))
        log(f"(a) m=n={m}: efficient {fmt_s(t_eff)}, dense {fmt_s(t_den)}, "
            f"ratio {t_den / t_eff:.1f}, rel err f {rel_f:.1e} g {rel_g:.1e}")
        del Yd, mask
    return rows


def plot_a(rows, path, hw):
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ms = [r["m"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.loglog(ms, [r["dense"] for r in rows], "o-", label="dense reference, O(mnk) (numpy)")
    ax.loglog(ms, [r["eff"] for r in rows], "s-", label="fastpu.ocmf, O(|Ω+|k + mk²)")
    for r in rows:
        ax.annotate(f"{r['ratio']:.1f}×" if r["ratio"] < 10 else f"{r['ratio']:.0f}×",
                    (r["m"], r["dense"]), textcoords="offset points",
                    xytext=(-10, 6), fontsize=8)
    ax.set_xticks(ms)
    ax.set_xticklabels([f"{m:,}" for m in ms])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("m = n  (≈20 positives per row, k = 32)")
    ax.set_ylabel("objective + gradient time [s]")
    ax.set_title("ocmf LR-wSQ sub-problem: efficient vs dense", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, f"{hw['cpu']}, {hw['cores']} cores, numba {hw['threading_layer']}",
             fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)

