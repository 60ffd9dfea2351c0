"""Speed of fastpu.ocmf: efficient vs dense objective, scaling at fixed |Ω+|, implicit's ALS, threads.

Run from the repository root::

    python benchmarks/bench_ocmf_speed.py            # everything, < 10 min on 2 quiet cores
    python benchmarks/bench_ocmf_speed.py --quick    # tiny sizes, smoke run (< 1 min)

Writes ``docs/bench_ocmf_speed.md`` (tables) and ``docs/bench_ocmf_speed.png`` (plot of part a),
overwriting them. Parts:

(a) objective + gradient of one sub-problem (LR-wSQ, k = 32, ~20 positives per row): the
    efficient O(|Ω+|k + mk²) path (``ocmf.SubProblem``) against a dense O(mnk) numpy
    reference, as m = n grows; the two agree to 1e-8 relative (checked at every size).
(b) time per outer iteration as m·n grows 16× at fixed |Ω+| (LR-wSQ on the row-wise fast
    path, and LR-wSQ with a user graph solved by TRON; implicit's ALS as a reference).
(c) time per outer iteration against implicit's AlternatingLeastSquares on the same
    50,000 × 20,000 matrix with 2,000,000 positives, k = 64, 2 threads (float64 and float32
    factors), with a profile of where fastpu's iteration goes.

(b) and (c) let their configurations take turns over several rounds, so that a slow spell of
a shared machine falls on all of them, and report the ratio of each round next to the
ratio of the pooled medians.
(d) fastpu (and implicit) at 1 and 2 threads on the (c) matrix.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from _common import best_of, hardware, hardware_line, md_table, per_iteration, powerlaw_pu  # noqa: E402

from fastpu import ocmf  # noqa: E402
from fastpu._kernels.csr import sampled_dots  # noqa: E402
from fastpu._kernels.updates import LOCAL_ENTRIES  # noqa: E402
from fastpu._threads import limit_threads  # noqa: E402

FULL = dict(
    a_sizes=[250, 500, 1000, 2000, 4000], a_per_row=20, a_k=32,
    b_sizes=[5000, 10000, 20000], b_nnz=300_000, b_k=32, b_iter=3, b_rounds=3,
    c_shape=(50_000, 20_000), c_nnz=2_000_000, c_k=64, c_iter=3, c_iter_1thread=3, c_rounds=3,
)
QUICK = dict(
    a_sizes=[100, 200, 400], a_per_row=20, a_k=32,
    b_sizes=[500, 1000, 2000], b_nnz=20_000, b_k=32, b_iter=2, b_rounds=2,
    c_shape=(5_000, 2_000), c_nnz=100_000, c_k=64, c_iter=2, c_iter_1thread=2, c_rounds=2,
)
RHO, LAM, LAM_GRAPH = 0.01, 1.0, 1.0
GIT_STATE = "unknown commit"
THREADS = 2


def fmt_s(t):
    return f"{t * 1e3:.1f} ms" if t < 1.0 else f"{t:.2f} s"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ----------------------------------------------------------------------------------------------
# (a) efficient vs dense objective + gradient
# ----------------------------------------------------------------------------------------------

def _setup(Y, loss, **kw):
    args = dict(loss=loss, rho=RHO, p=None, q=None, a_bar=None, X=None, Z=None, user_graph=None,
                item_graph=None, lam=LAM, lam_graph=0.0, negatives="full", neg_ratio=1.0, seed=0)
    args.update(kw)
    setup, Yc = ocmf._prepare(Y, **args)
    return setup, Yc


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


# ----------------------------------------------------------------------------------------------
# (b) time per outer iteration as m·n grows at fixed |Ω+|
# ----------------------------------------------------------------------------------------------

def random_graph(m, degree, seed):
    """Symmetric 0/1 similarity graph, ~``degree`` neighbours per node, no self loops."""
    rng = np.random.default_rng(seed)
    half = max(1, degree // 2)
    r = np.repeat(np.arange(m, dtype=np.int64), half)
    c = rng.integers(0, m, size=r.size)
    keep = r != c
    A = sp.csr_array((np.ones(int(keep.sum())), (r[keep], c[keep])), shape=(m, m))
    S = A + A.T
    S.data[:] = 1.0
    return sp.csr_array(S)


@contextlib.contextmanager
def blas_limit(n):
    """Limit BLAS (numpy's OpenBLAS/MKL) to ``n`` threads in the block; ``None``: leave as is."""
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(n, "blas"):
        yield


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
                                n_threads=THREADS)
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
                            lam_graph=LAM_GRAPH, solver="tron", n_iter=it, n_threads=THREADS)
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


# ----------------------------------------------------------------------------------------------
# (c) against implicit's ALS, (d) threads
# ----------------------------------------------------------------------------------------------

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


# newton_steps / cg_steps are given explicitly (the library's defaults when this was written)
# so that the settings stated next to the numbers stay true if the defaults change.
FASTPU_C = [
    ("SQ-wSQ", dict(loss="square", rho=RHO, lam=LAM, newton_steps=1, cg_steps=3)),
    ("SQ-wSQ float32", dict(loss="square", rho=RHO, lam=LAM, newton_steps=1, cg_steps=3,
                            dtype="float32")),
    ("LR-wSQ", dict(loss="logistic", rho=RHO, lam=LAM, newton_steps=1, cg_steps=4)),
    ("LR-wSQ float32", dict(loss="logistic", rho=RHO, lam=LAM, newton_steps=1, cg_steps=4,
                            dtype="float32")),
]
F64_C = [(lab, kw) for lab, kw in FASTPU_C if "dtype" not in kw]   # also run with default BLAS,
#                                                                   # at 1 thread, and profiled
GOALS_C = {"SQ-wSQ": 1.0, "LR-wSQ": 3.0}


def _goal(label):
    return GOALS_C[label.split()[0]]


def fastpu_iteration_seconds(Y, k, kw, n_iter, threads):
    model = ocmf.fit(Y, k, n_iter=n_iter, n_threads=threads, **kw)
    return per_iteration(model.history), model


def _kernel_copy(mod, name, mode):
    """A diagnostic copy of kernel ``name`` of module ``mod`` (the library is not touched).

    The module's current source is re-compiled without numba's cache, with every kernel
    ``mode`` = "strict" (no fastmath flag at all, strict IEEE order of every sum) or
    "reassoc" (``fastmath={"reassoc", "contract"}`` on every kernel of the module, so that
    LLVM may vectorise the dot-product reductions). Returns None if the source has an
    unexpected shape.
    """
    import inspect
    import re

    import numba as nb

    src = inspect.getsource(mod)
    src = re.sub(r"^from \.(\w+) import", r"from fastpu._kernels.\1 import", src, flags=re.M)
    src = re.sub(r"\bcache=True", "cache=False", src)
    src = re.sub(r",\s*fastmath=\{[^}]*\}", "", src)
    if mode == "reassoc":
        if "dict(nogil=True, cache=False)" not in src:
            return None
        src = src.replace("dict(nogil=True, cache=False)",
                          'dict(nogil=True, cache=False, fastmath={"reassoc", "contract"})')
    ns = {"__name__": f"_probe_{mode}_{name}", "nb": nb, "np": np}
    exec(compile(src, f"<{mode} copy of {mod.__name__}>", "exec"), ns)
    return ns.get(name)


def _probe_variants():
    """Strict-IEEE and reassociating copies of row_newton and sampled_dots."""
    from fastpu._kernels import csr as csr_mod
    from fastpu._kernels import updates as upd_mod

    return {f"{name} {mode}": _kernel_copy(mod, name, mode)
            for mod, name in ((upd_mod, "row_newton"), (csr_mod, "sampled_dots"))
            for mode in ("strict", "reassoc")}


def profile_iteration(Y, model, kw, threads, repeat=2, probes=None):
    """Time the pieces of one outer iteration on the fast path (the kernels ``fit`` calls).

    Starts from the factors of ``model`` (a fit on ``Y``), so that the logistic line searches
    behave as in a running fit. BLAS is limited to one thread. With ``probes`` (from
    :func:`_probe_variants`), also times those copies of the kernels.
    """
    from threadpoolctl import threadpool_limits

    setup, _ = _setup(Y, kw["loss"], rho=kw["rho"], lam=kw["lam"])
    ns, cs = kw["newton_steps"], kw["cg_steps"]
    W, H = model.user_factors, model.item_factors

    def gram(E, q):
        return (E.T * q) @ E, E.T @ q

    def lib_side(ent, side_, W, E, pq, qq):
        """The library's own side update, exactly as ``fit`` calls it on the fast path.

        It updates W in place (as in ``fit``), so the caller passes a private copy; repeated
        calls continue from the updated rows like successive outer iterations do.
        """
        return ocmf._update_side(setup, ent, side_, W, E, pq, qq, True, None, 1, ns, cs)[0]

    def side(kernel, ent, side_, W, E, pq, qq):
        """The same update with a copy of row_newton (Grams by numpy)."""
        M, kap = gram(E, qq)
        W = np.array(W, copy=True, order="C")
        kernel(setup.kind, ent.indptr, ent.indices, ent.labels, ent.weights, ent.corr,
               setup.abar, np.ascontiguousarray(E), M, kap, pq, setup.lam, W, ns, cs, 1e-3,
               max(16, LOCAL_ENTRIES // W.shape[1]), np.empty(W.shape[0]))
        return W

    s = np.empty(Y.nnz)
    ent = setup.entries
    out = {}
    with limit_threads(threads), threadpool_limits(1, "blas"):
        user = (setup.entries, setup.user, W, H, setup.p_quad, setup.q_quad)
        item = (setup.entries_t, setup.item, H, W, setup.q_quad, setup.p_quad)
        user_own = (setup.entries, setup.user, W.copy(), H, setup.p_quad, setup.q_quad)
        item_own = (setup.entries_t, setup.item, H.copy(), W, setup.q_quad, setup.p_quad)
        out["library: user side (_update_side, m rows)"] = best_of(
            lambda: lib_side(*user_own), repeat=repeat, warmup=0)
        out["library: item side (_update_side, n rows)"] = best_of(
            lambda: lib_side(*item_own), repeat=repeat, warmup=0)
        out["library: sampled_dots over Ω+ (TRON path, objective())"] = best_of(
            lambda: sampled_dots(ent.indptr, ent.indices, W, H, s), repeat=repeat)
        if probes is not None:
            ref = lib_side(setup.entries, setup.user, W.copy(), H, setup.p_quad, setup.q_quad)
            for mode in ("strict", "reassoc"):
                rn = probes.get(f"row_newton {mode}")
                if rn is not None:
                    b = side(rn, *user)
                    out[f"_{mode}_rel_diff"] = float(np.abs(ref - b).max() / np.abs(ref).max())
                    out[f"{mode} copy: user side row_newton"] = best_of(
                        lambda: side(rn, *user), repeat=repeat, warmup=0)
                    out[f"{mode} copy: item side row_newton"] = best_of(
                        lambda: side(rn, *item), repeat=repeat, warmup=0)
                sd = probes.get(f"sampled_dots {mode}")
                if sd is not None:
                    out[f"{mode} copy: sampled_dots"] = best_of(
                        lambda: sd(ent.indptr, ent.indices, W, H, s), repeat=repeat)
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
    probes = _probe_variants()
    prof = {}
    for label, kw in F64_C:
        prof[label] = profile_iteration(Y, models[label], kw, THREADS, probes=probes)
        log(f"(c) profile {label}: " + ", ".join(
            f"{a} {fmt_s(b) if not a.startswith('_') else f'{b:.1e}'}" for a, b in prof[label].items()))
    res["profile"] = prof
    return res


# ----------------------------------------------------------------------------------------------
# warm-up and report
# ----------------------------------------------------------------------------------------------

def warm_up():
    """Compile (or load from numba's cache) every kernel the timed runs use, on tiny problems."""
    t0 = time.perf_counter()
    Y = powerlaw_pu(60, 40, 400, seed=0)
    S = random_graph(60, 4, seed=0)
    for th in (1, THREADS):
        for loss in ("square", "logistic"):
            ocmf.fit(Y, 8, loss=loss, rho=RHO, n_iter=2, n_threads=th)
            ocmf.fit(Y, 8, loss=loss, rho=RHO, user_graph=S, lam_graph=1.0, n_iter=2, n_threads=th)
    setup, _ = _setup(Y, "logistic")
    efficient_fun_grad(setup, np.ones((60, 8)), np.ones((40, 8)))
    return time.perf_counter() - t0


def verdict(ok):
    return "**met**" if ok else "**missed**"


def write_report(path, hw, cfg, quick, a, b, c, elapsed, warm):
    L = []
    L.append("# fastpu.ocmf — speed benchmarks")
    L.append("")
    L.append(hardware_line(hw))
    L.append("")
    L.append(f"Generated by `python benchmarks/bench_ocmf_speed.py{' --quick' if quick else ''}` "
             f"on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in {elapsed / 60:.1f} min "
             f"(JIT warm-up / cache load {warm:.1f} s, not included in any timing), fastpu at "
             f"{GIT_STATE}. "
             f"All fastpu runs use n_threads={THREADS} unless stated; all ratios come from one run.")
    if quick:
        L.append("")
        L.append("> **Quick smoke run (`--quick`): tiny sizes, the numbers say nothing about the "
                 "goals.** Run without `--quick` for the real tables.")
    L.append("")
    load_end = os.getloadavg()[0]
    L.append(f"> **Machine load.** 1-minute load average {LOAD_START:.2f} when the run started and "
             f"{load_end:.2f} when it ended (this run itself keeps about 2 busy on 2 cores). A value "
             "well above that means other work shared the machine: absolute times are then "
             "inflated and the ratios noisy.")
    L.append("")
    L.append("Matrices are random binary PU matrices with power-law item popularity "
             "(`benchmarks/_common.py: powerlaw_pu`, item weight ∝ rank^-0.7, user weight ∝ "
             "rank^-0.5). Formulations: SQ-wSQ = `loss=\"square\", rho=0.01`; LR-wSQ = "
             "`loss=\"logistic\", rho=0.01` (ā = -1); `lam=1`. Row-wise fast path settings in "
             "(c)/(d): " + "; ".join(f"{lab} `newton_steps={kw['newton_steps']}, "
                                      f"cg_steps={kw['cg_steps']}`" for lab, kw in FASTPU_C)
             + " (elsewhere the library's defaults); factors in float64 unless a row says "
             "`float32` (`dtype=\"float32\"`: factors stored in float32, every sum still "
             "accumulated in float64). Per-iteration times of `fit` come from the `seconds` of its "
             "`history` (differences of the cumulative times, so they cover everything `fit` does in "
             "an outer iteration, including the recorded objective); tables show the median over "
             "the iterations.")

    L.extend(summary_lines(a, b, c))

    # (a)
    L.append("")
    L.append(f"## (a) Objective + gradient: efficient path vs dense O(mn) reference")
    L.append("")
    L.append(f"One user-side sub-problem of LR-wSQ (k = {cfg['a_k']}, ≈{cfg['a_per_row']} positives "
             "per row, m = n): `ocmf.SubProblem` built from scratch (Grams M, κ) plus `fun` and "
             "`grad`, against vectorised numpy on the dense m×n score matrix S = W Eᵀ (loss "
             "matrix, D, then D E). Both give the same value and gradient (relative differences "
             "below, checked at every size; the script stops if one exceeds 1e-8). Best of "
             "several calls.")
    L.append("")
    L.append(md_table(
        ["m = n", "\\|Ω+\\|", "efficient", "dense", "dense / efficient", "rel. diff f", "rel. diff ∇"],
        [[f"{r['m']:,}", f"{r['nnz']:,}", fmt_s(r["eff"]), fmt_s(r["dense"]), f"{r['ratio']:.1f}×",
          f"{r['rel_f']:.1e}", f"{r['rel_g']:.1e}"] for r in a]))
    L.append("")
    L.append("![efficient vs dense](bench_ocmf_speed.png)")

    # (b)
    g_fast = b[-1]["fast"] / b[0]["fast"]
    g_coup = b[-1]["coupled"] / b[0]["coupled"]
    mn_growth = (b[-1]["m"] / b[0]["m"]) ** 2
    L.append("")
    L.append(f"## (b) Time per outer iteration as m·n grows {mn_growth:.0f}× at fixed |Ω+|")
    L.append("")
    L.append(f"|Ω+| = {cfg['b_nnz']:,}, k = {cfg['b_k']}, LR-wSQ. *Fast path*: no side "
             f"information, both sides row by row; {cfg['b_rounds']} rounds in which the sizes take "
             f"turns, each a fit of {cfg['b_iter'] + 1} outer iterations whose first is dropped; the "
             f"table shows the median over all kept iterations. *User graph + TRON* (one fit of "
             f"{cfg['b_iter']} outer iterations per size, median): "
             "a random symmetric user graph with ≈10 neighbours per user (so nnz(L) grows "
             f"with m), `lam_graph={LAM_GRAPH}`, `solver=\"tron\"`, `inner_iter=5`; the user side "
             "is solved by TRON over all of W, the item side by the fast path. The last two columns "
             "are the per-iteration work terms the design promises to be linear in.")
    L.append("")
    k = cfg["b_k"]
    L.append(md_table(
        ["m = n", "m·n", "fast path / iter", "implicit ALS / iter (reference)",
         "user graph + TRON / iter", "TRON iters (HVPs) / outer",
         "graph sub-problem fun + grad + HVP", "\\|Ω+\\|·k", "(m+n)·k²"],
        [[f"{r['m']:,}", f"{r['m'] * r['m']:.1e}", fmt_s(r["fast"]), fmt_s(r["implicit"]),
          fmt_s(r["coupled"]), f"{r['tron_iter']:.1f} ({r['hessp']:.0f})", fmt_s(r["fgh"]),
          f"{r['nnz'] * k:.1e}", f"{2 * r['m'] * k * k:.1e}"] for r in b]))
    g_fgh = b[-1]["fgh"] / b[0]["fgh"]
    g_rounds = [x / y for x, y in zip(b[-1]["fast_rounds"], b[0]["fast_rounds"])]
    L.append("")
    L.append(f"Growth from m = n = {b[0]['m']:,} to {b[-1]['m']:,} (m·n ×{mn_growth:.0f}): fast path "
             f"**{g_fast:.2f}×** (round by round: "
             + ", ".join(f"{g:.2f}×" for g in g_rounds) + f"), user graph + TRON **{g_coup:.2f}×** per outer iteration "
             f"(**{g_fgh:.2f}×** for one fun + grad + Hessian-vector product of the graph "
             f"sub-problem). Goal ≤ 1.5× per outer iteration: fast path {verdict(g_fast <= 1.5)}, "
             f"coupled side {verdict(g_coup <= 1.5)}. A dense method would grow {mn_growth:.0f}×. "
             "The number of TRON steps (and so of Hessian-vector products) depends on the data: "
             "with |Ω+| fixed, larger m means fewer positives per row and a different "
             "conditioning. One evaluation of the graph sub-problem is not held to the goal: its "
             "nnz(L)k and mk² terms grow 4× here by construction (the graph keeps ≈10 neighbours "
             "per user), only its |Ω+|k term stays fixed, so its growth lies between 1× and 4×. The "
             "(m+n)k² term (Grams, the k×k part of every row's Hessian-vector products on the fast "
             "path, diag(p)BM in the coupled one) grows with m + n by design, so growth is expected "
             "once it is comparable to |Ω+|k. At m = n = 20,000 with k = 32 the rows hold only "
             "15 positives each, so the per-row work (k×k products in every CG step) is already "
             "as large as the per-positive work. implicit's ALS (float32, `factors=k`, same "
             "threads, BLAS 1 thread, taking turns with fastpu in the same rounds) has the same "
             "cost structure and is shown for reference: it grows "
             f"**{b[-1]['implicit'] / b[0]['implicit']:.2f}×** over the same sizes (round by "
             "round: " + ", ".join(f"{x / y:.2f}×" for x, y in zip(b[-1]["implicit_rounds"],
                                                                b[0]["implicit_rounds"])) + ").")

    # (c)
    imp = c["implicit"]
    t_imp = float(np.median(imp[THREADS]))
    m, n = c["shape"]
    n_rounds = len(c["implicit_rounds"])
    L.append("")
    L.append(f"## (c) Against implicit's AlternatingLeastSquares ({m:,} × {n:,}, "
             f"{c['nnz']:,} positives, k = {c['k']}, {THREADS} threads)")
    L.append("")
    L.append(f"implicit {_implicit_version()}: `implicit.cpu.als.AlternatingLeastSquares(factors="
             f"{c['k']}, iterations={cfg['c_iter']}, num_threads={THREADS}, random_state=0)` with its "
             f"defaults: conjugate gradient with cg_steps = {c['implicit_cg_steps']} per row, "
             f"dtype {c['implicit_dtype']} (users × items CSR float32 input), regularization "
             f"{c['implicit_reg']}, alpha 1.0; seconds per iteration from its own per-iteration "
             "callback, after a one-iteration warm-up fit, with BLAS limited to 1 thread as implicit "
             "recommends (`threadpoolctl`). Its model (weight 1 + α on positives, 1 on the rest, "
             "targets 1/0) has the same structure as SQ-wSQ; the work per iteration is the same "
             "kind (per-row CG on k×k systems with a shared Gram).")
    L.append("")
    L.append(f"implicit and the {len(FASTPU_C)} fastpu configurations take turns in {n_rounds} "
             f"rounds (each a fit of {cfg['c_iter']} iterations), so that a slow spell of the "
             "shared machine falls on all of them. *vs implicit* = median of all of a "
             "configuration's iterations / median of all of implicit's; *per round* = the same "
             "ratio within each round.")
    L.append("")
    rows = [["implicit ALS", f"CG, cg_steps={c['implicit_cg_steps']}, float32; BLAS 1 thread",
             fmt_s(t_imp), "1.00×", "—", "—", "—"]]
    settings = {lab: f"newton_steps={kw['newton_steps']}, cg_steps={kw['cg_steps']}, "
                     f"{kw.get('dtype', 'float64')}" for lab, kw in FASTPU_C}
    misses = []
    for label, _ in FASTPU_C:
        blas_modes = ("1", "default") if (label, THREADS, "default") in c["fastpu"] else ("1",)
        for blas in blas_modes:
            t = float(np.median(c["fastpu"][(label, THREADS, blas)]))
            ratio = t / t_imp
            goal = _goal(label)
            ok = ratio <= goal
            per_round = "—"
            if blas == "1":
                rr = _round_ratios(c, label)
                per_round = ", ".join(f"{x:.2f}×" for x in rr)
            if not ok:
                misses.append(f"{label} (BLAS {blas}) is {ratio:.2f}× implicit's iteration (goal "
                              f"≤ {goal:g}×, missed by a factor {ratio / goal:.2f})")
            bl = "BLAS 1 thread" if blas == "1" else "BLAS default threads"
            rows.append([f"fastpu {label.split()[0]}", f"{settings[label]}; {bl}", fmt_s(t),
                         f"{ratio:.2f}×", per_round, f"≤ {goal:g}×", verdict(ok)])
    L.append(md_table(["method", "settings", "time / iteration", "vs implicit", "per round",
                       "goal", "result"], rows))
    L.append("")
    obj = c["objective"]
    rel = {lab: abs(obj[f"{lab} float32"] - obj[lab]) / abs(obj[lab])
           for lab, _ in F64_C if f"{lab} float32" in obj}
    L.append("Final objective after the timed fit: " + "; ".join(
        f"{lab} {obj[lab]:.10g}" for lab, _ in FASTPU_C)
        + ". Relative difference float32 vs float64: "
        + ", ".join(f"{lab} {r:.1e}" for lab, r in rel.items()) + ".")
    L.append("")
    L.append("Per-iteration times (s), all iterations: implicit "
             + ", ".join(f"{x:.2f}" for x in imp[THREADS]) + "; "
             + "; ".join(f"{label} (BLAS {blas}) "
                         + ", ".join(f"{x:.2f}" for x in c["fastpu"][(label, THREADS, blas)])
                         for label, _ in FASTPU_C for blas in ("1", "default")
                         if (label, THREADS, blas) in c["fastpu"]) + ".")
    if misses:
        L.append("")
        L.append("Goal missed: " + "; ".join(misses) + ".")
    L.append("")
    L.append("\"BLAS 1 thread\" runs `fit` inside `threadpoolctl.threadpool_limits(1, \"blas\")` "
             "(numba still uses 2 threads); \"BLAS default\" is how a user runs it out of the box "
             "(OpenBLAS with as many threads as cores). fastpu's own kernels do not call BLAS on "
             "the fast path; OpenBLAS's threads, once started by any numpy call, can still compete "
             "with numba's OpenMP threads for the 2 cores (`import fastpu` makes idle OpenMP "
             "threads sleep rather than spin, see the README).")
    L.append("")
    L.append("### Where fastpu's iteration goes")
    L.append("")
    L.append("Pieces of one outer iteration timed alone (" + f"{THREADS} numba threads, BLAS 1 "
             "thread, best of 2, starting from the factors of the timed fit). *library* rows call "
             "`ocmf._update_side` exactly as `fit` does on the fast path. The *copy* rows time "
             "diagnostic copies of the library's current kernel source built by this script (the "
             "library is not changed), with Grams by numpy: *strict* = every fastmath flag removed "
             "(strict IEEE order of every sum, so LLVM cannot vectorise the length-k dot "
             "products); *reassoc* = `fastmath={\"reassoc\", \"contract\"}` on every kernel of "
             "the module. Their ratio is what vectorising the reductions is worth.")
    L.append("")
    labels = [lab for lab, _ in F64_C]
    keys = [key for key in c["profile"][labels[0]] if not key.startswith("_")]
    L.append(md_table(["piece"] + labels,
                      [[key] + [fmt_s(c["profile"][lab][key]) for lab in labels] for key in keys]))
    for key, what in (("_strict_rel_diff", "strict"), ("_reassoc_rel_diff", "reassoc")):
        if key in c["profile"][labels[0]]:
            L.append("")
            L.append(f"Largest relative difference between the library's and the {what} copy's "
                     "user factors after one side update: " + ", ".join(
                         f"{lab} {c['profile'][lab][key]:.0e}" for lab in labels) + ".")

    # (d)
    L.append("")
    L.append(f"## (d) 1 vs {THREADS} threads on the (c) matrix")
    L.append("")
    drows = []
    for label, _ in F64_C:
        t1 = float(np.median(c["fastpu"][(label, 1, "1")]))
        t2 = float(np.median(c["fastpu"][(label, THREADS, "1")]))
        drows.append([f"fastpu {label}", fmt_s(t1), fmt_s(t2), f"{t1 / t2:.2f}×"])
    t1, t2 = float(np.median(imp[1])), float(np.median(imp[THREADS]))
    drows.append(["implicit ALS", fmt_s(t1), fmt_s(t2), f"{t1 / t2:.2f}×"])
    L.append(md_table(["method", "1 thread / iter", f"{THREADS} threads / iter", "speed-up"], drows))
    L.append("")
    L.append(f"BLAS at 1 thread in every row. fastpu at 1 thread: {cfg['c_iter_1thread']} outer "
             f"iterations (median); at {THREADS}: {cfg['c_iter']}. Row-parallel kernels give the "
             "same factors at any thread count. On a loaded machine the speed-up says little: a "
             "second thread only helps when a second core is free.")
    L.append("")
    L.append("## Re-running")
    L.append("")
    L.append("```")
    L.append("python benchmarks/bench_ocmf_speed.py            # full run, overwrites this file and "
             "docs/bench_ocmf_speed.png")
    L.append("python benchmarks/bench_ocmf_speed.py --quick    # smoke run with tiny sizes")
    L.append("```")
    with open(path, "w") as fh:
        fh.write("\n".join(L) + "\n")


def _round_ratios(c, label):
    """fastpu / implicit median time per iteration, within each round of part (c)."""
    return [float(np.median(f)) / float(np.median(i))
            for f, i in zip(c["fastpu_rounds"][label], c["implicit_rounds"])]


def summary_lines(a, b, c):
    """The goals and the main bottleneck, computed from this run's numbers."""
    med = lambda x: float(np.median(x))  # noqa: E731
    t_imp = med(c["implicit"][THREADS])
    g_fast = b[-1]["fast"] / b[0]["fast"]
    g_rounds = [x / y for x, y in zip(b[-1]["fast_rounds"], b[0]["fast_rounds"])]
    g_coup = b[-1]["coupled"] / b[0]["coupled"]
    g_fgh = b[-1]["fgh"] / b[0]["fgh"]
    rng = lambda v: f"{min(v):.2f}–{max(v):.2f}×"  # noqa: E731
    rows = [
        [f"(a) dense / efficient at m = n = {a[-1]['m']:,}", f"{a[-1]['ratio']:.0f}×", "—",
         "efficient ≪ dense", "—"],
        ["(a) largest relative difference efficient vs dense",
         f"{max(max(r['rel_f'], r['rel_g']) for r in a):.0e}", "—", "≤ 1e-8",
         verdict(all(max(r['rel_f'], r['rel_g']) <= 1e-8 for r in a))],
        ["(b) growth per outer iteration, fast path (LR-wSQ)", f"{g_fast:.2f}×", rng(g_rounds),
         "≤ 1.5×", verdict(g_fast <= 1.5)],
        ["(b) same sizes, implicit ALS for reference",
         f"{b[-1]['implicit'] / b[0]['implicit']:.2f}×",
         rng([x / y for x, y in zip(b[-1]["implicit_rounds"], b[0]["implicit_rounds"])]), "—",
         "—"],
        ["(b) growth per outer iteration, user graph + TRON", f"{g_coup:.2f}×", "—", "≤ 1.5×",
         verdict(g_coup <= 1.5)],
        ["(b) growth per graph sub-problem fun + grad + HVP", f"{g_fgh:.2f}×", "—", "—",
         "(see (b))"],
    ]
    for label, _ in FASTPU_C:
        r = med(c["fastpu"][(label, THREADS, "1")]) / t_imp
        rows.append([f"(c) {label} / implicit ALS per iteration", f"{r:.2f}×",
                     rng(_round_ratios(c, label)), f"≤ {_goal(label):g}×",
                     verdict(r <= _goal(label))])
    for label, _ in F64_C:
        t2 = med(c["fastpu"][(label, THREADS, "1")])
        rows.append([f"(d) fastpu {label} speed-up 1 → 2 threads",
                     f"{med(c['fastpu'][(label, 1, '1')]) / t2:.2f}×", "—", "—", "—"])
    L = ["", "## Summary", ""]
    L.append(md_table(["measurement", "this run", "range over rounds", "goal", "result"], rows))
    for label, _ in F64_C:
        t_fit = med(c["fastpu"][(label, THREADS, "1")])
        P = c["profile"][label]
        sweeps = P["library: user side (_update_side, m rows)"] + \
            P["library: item side (_update_side, n rows)"]
        msg = (f"{label}: the two side updates (Grams + row_newton sweeps) take {fmt_s(sweeps)} of "
               f"a {fmt_s(t_fit)} iteration")
        st = P.get("strict copy: user side row_newton")
        ra = P.get("reassoc copy: user side row_newton")
        if st is not None and ra is not None:
            st += P["strict copy: item side row_newton"]
            ra += P["reassoc copy: item side row_newton"]
            msg += (f"; strict-IEEE copies of the kernel take {fmt_s(st)}, reassociating copies "
                    f"{fmt_s(ra)} ({st / ra:.1f}× from vectorised reductions)")
        L.append("")
        L.append(msg + ".")
    return L


def _git_state():
    """Short commit hash of the repository and whether fastpu/ has uncommitted changes."""
    import subprocess

    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "fastpu"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return f"commit {head}" + (" with uncommitted changes under fastpu/" if dirty else "")


def _implicit_version():
    try:
        import implicit
        return implicit.__version__
    except Exception:          # pragma: no cover - report only
        return "(version unknown)"


LOAD_START = os.getloadavg()[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, smoke run (< 1 minute)")
    ap.add_argument("--out", default=None,
                    help="directory for bench_ocmf_speed.md and .png (default: docs/; with "
                         "--quick a temporary directory, so a smoke run never overwrites the "
                         "real tables)")
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.out is None:
        args.out = tempfile.mkdtemp(prefix="bench_ocmf_quick_") if args.quick else \
            os.path.join(ROOT, "docs")
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()
    global GIT_STATE
    GIT_STATE = _git_state()
    hw = hardware()
    log(hardware_line(hw))
    warm = warm_up()
    log(f"warm-up (JIT compile / cache load) {warm:.1f} s")
    rng = np.random.default_rng(0)
    a = part_a(cfg, rng)
    plot_a(a, os.path.join(args.out, "bench_ocmf_speed.png"), hw)
    b = part_b(cfg)
    c = part_cd(cfg)
    elapsed = time.perf_counter() - t_start
    md = os.path.join(args.out, "bench_ocmf_speed.md")
    write_report(md, hw, cfg, args.quick, a, b, c, elapsed, warm)
    log(f"wrote {md} and bench_ocmf_speed.png in {elapsed / 60:.1f} min")


if __name__ == "__main__":
    main()
