"""ocmf's working memory, setup before the first iteration, time per iteration and its growth with
m·n, each against implicit's ALS in the same run.

Run from the repository root::

    python benchmarks/speed/bench_perf_ocmf.py          # default sizes, about 3 minutes on 2 cores
    python benchmarks/speed/bench_perf_ocmf.py --quick  # small sizes, smoke run (report to a temp dir)

Writes ``docs/benchmarks/bench_perf_ocmf.md``. Parts:

1. Memory: each configuration fits once in a fresh process (``subprocess``, nothing else
   loaded but the data, read from a file so that no freed temporaries of its generation are
   reused), after a tiny warm-up fit that loads the compiled kernels. Peak growth = the
   process's peak resident set during the fit (``VmHWM`` after resetting it through
   ``/proc/self/clear_refs``, cross-checked by a 1 ms sampler thread) minus the resident set
   just before; growth = resident set after minus before (the returned model included).
   The configurations take turns over the rounds; the table shows the median.
2. Setup: seconds from the call of ``fit`` to the start of its first iteration (for fastpu the
   first side update, for implicit its first iteration's start, i.e. the time of its first
   callback minus that iteration's own duration), against one iteration.
3. Time per iteration on the 50,000 × 20,000 matrix (2,000,000 positives, k = 64): SQ-wSQ and
   LR-wSQ (``loss="logistic", negatives="full"``), float64 and float32, against implicit's ALS.
4. Growth of the time per iteration when m·n grows 16× at a fixed number of positives.

Parts 2–4 let the configurations take turns (round after round) so that a slow spell of the
shared machine falls on all of them; every ratio is taken within this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import (DOCS, ROOT, PeakMemory, git_state, hardware_line, log, md_table,  # noqa: E402
                     powerlaw_pu, provenance, require)

sys.path.insert(0, str(ROOT))

THREADS = 2
RHO, LAM = 0.01, 1.0
FULL = dict(shape=(50_000, 20_000), nnz=2_000_000, k=64, iters=3, rounds=3, mem_rounds=2,
            grow_sizes=(5_000, 10_000, 20_000), grow_nnz=300_000, grow_k=32, grow_iters=3,
            grow_rounds=3)
QUICK = dict(shape=(5_000, 2_000), nnz=100_000, k=32, iters=2, rounds=2, mem_rounds=1,
             grow_sizes=(1_000, 4_000), grow_nnz=30_000, grow_k=16, grow_iters=2, grow_rounds=2)
CONFIGS = {   # label: ocmf.fit keywords (fast path settings as the library's defaults)
    "SQ-wSQ float64": dict(loss="square", rho=RHO, lam=LAM, dtype="float64"),
    "SQ-wSQ float32": dict(loss="square", rho=RHO, lam=LAM, dtype="float32"),
    "LR-wSQ float64": dict(loss="logistic", rho=RHO, lam=LAM, negatives="full", dtype="float64"),
    "LR-wSQ float32": dict(loss="logistic", rho=RHO, lam=LAM, negatives="full", dtype="float32"),
}
IMPLICIT = "implicit ALS float32"
LAST_CPU: list = []      # CPU seconds (all threads) per iteration of the last fit
GOALS = {"memory": 2.0, "setup": 0.3, "SQ-wSQ": None, "LR-wSQ": 1.0, "growth": 1.5}


# ------------------------------------------------------------------------------------------
# fits (shared by the parent and the memory children)
# ------------------------------------------------------------------------------------------

def blas_one():
    from threadpoolctl import threadpool_limits
    return threadpool_limits(1, "blas")


def as_input(Y):
    """What both libraries are given: CSR, float32 ones, int32 indices (implicit's own format)."""
    return sp.csr_matrix((Y.data.astype(np.float32), Y.indices.astype(np.int32),
                          Y.indptr.astype(np.int32)), shape=Y.shape)


def fit_fastpu(Y, k, label, n_iter):
    """(seconds to the first iteration, per-iteration seconds, model) of one ocmf fit."""
    import fastpu.ocmf._fit as ocmf_mod     # the module whose fit calls _update_side
    from fastpu import ocmf

    starts = []
    orig = ocmf_mod._update_side

    def spy(*a, **kw):
        starts.append((time.perf_counter(), time.process_time()))
        return orig(*a, **kw)

    ocmf_mod._update_side = spy
    try:
        t0 = time.perf_counter()
        model = ocmf.fit(Y, k, n_iter=n_iter, n_threads=THREADS, **CONFIGS[label])
        t_end = (time.perf_counter(), time.process_time())
    finally:
        ocmf_mod._update_side = orig
    begins = np.array(starts[::2] + [t_end])         # two side updates per outer iteration
    LAST_CPU[:] = np.diff(begins[:, 1]).tolist()
    return begins[0, 0] - t0, np.diff(begins[:, 0]), model


def fit_implicit(Y32, k, n_iter):
    from implicit.cpu.als import AlternatingLeastSquares

    marks = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        als = AlternatingLeastSquares(factors=k, iterations=n_iter, num_threads=THREADS,
                                      random_state=0)
        t0 = time.perf_counter()
        c0 = time.process_time()
        als.fit(Y32, show_progress=False, callback=lambda it, el, loss: marks.append(
            (time.perf_counter(), el, time.process_time())))
    per = np.array([el for _, el, _ in marks])
    LAST_CPU[:] = np.diff([c0] + [c for _, _, c in marks])[1:].tolist()  # the 1st has setup
    first_start = marks[0][0] - marks[0][1]
    return first_start - t0, per, als


def tiny():
    Y = powerlaw_pu(60, 40, 400, seed=0)
    return as_input(Y)


def warm_up():
    t0 = time.perf_counter()
    with blas_one():
        for label in CONFIGS:
            fit_fastpu(tiny(), 8, label, 2)
        fit_implicit(tiny(), 8, 1)
    return time.perf_counter() - t0


# ------------------------------------------------------------------------------------------
# 1. memory, one fresh process per configuration and round
# ------------------------------------------------------------------------------------------

def child(path, label, k, n_iter):
    """Measure one fit's memory in this (fresh) process; print a JSON line."""
    z = np.load(path)
    Y = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    with blas_one():
        if label == IMPLICIT:
            fit_implicit(tiny(), k, 1)
        else:
            fit_fastpu(tiny(), k, label, 2)
    import gc
    gc.collect()
    with blas_one(), PeakMemory() as mem:
        if label == IMPLICIT:
            _, _, model = fit_implicit(Y, k, n_iter)
        else:
            _, _, model = fit_fastpu(Y, k, label, n_iter)
    before, after, hwm = mem.before, mem.after, mem.hwm
    print(json.dumps(dict(label=label, before=before, after=after, sampled=mem.sampled, hwm=hwm)))
    del model


def part_memory(cfg, path, labels):
    out = {lab: [] for lab in labels}
    for rnd in range(cfg["mem_rounds"]):
        for lab in labels:
            res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path, lab,
                                  str(cfg["k"]), "2"], capture_output=True, text=True, check=True)
            rec = json.loads(res.stdout.strip().splitlines()[-1])
            peak = max(rec["sampled"], rec["hwm"] if rec["hwm"] == rec["hwm"] else 0.0)
            rec["peak_growth"] = peak - rec["before"]
            rec["growth"] = rec["after"] - rec["before"]
            out[lab].append(rec)
            log(f"(1) round {rnd + 1} {lab}: peak growth {rec['peak_growth']:.1f} MiB, "
                f"growth {rec['growth']:.1f} MiB")
    return out


# ------------------------------------------------------------------------------------------
# 2 + 3. setup and time per iteration, interleaved
# ------------------------------------------------------------------------------------------

def part_speed(cfg, Y32, labels):
    k, it = cfg["k"], cfg["iters"]
    res = {lab: dict(setup=[], iters=[], rounds=[], cpu=[]) for lab in labels + [IMPLICIT]}
    for rnd in range(cfg["rounds"]):
        for lab in [IMPLICIT] + labels:
            with blas_one():
                if lab == IMPLICIT:
                    setup, per, _ = fit_implicit(Y32, k, it)
                else:
                    setup, per, _ = fit_fastpu(Y32, k, lab, it)
            r = res[lab]
            r["setup"].append(setup)
            r["iters"].extend(per.tolist())
            r["rounds"].append(float(np.median(per)))
            r["cpu"].extend(LAST_CPU)
            log(f"(2,3) round {rnd + 1} {lab}: setup {setup * 1e3:.0f} ms, iterations "
                + ", ".join(f"{t * 1e3:.0f}" for t in per) + " ms")
    return res


# ------------------------------------------------------------------------------------------
# 4. growth with m·n at fixed positives
# ------------------------------------------------------------------------------------------

def part_growth(cfg):
    k, it = cfg["grow_k"], cfg["grow_iters"]
    mats = {m: as_input(powerlaw_pu(m, m, cfg["grow_nnz"], seed=1)) for m in cfg["grow_sizes"]}
    labels = ["LR-wSQ float64", "SQ-wSQ float64", IMPLICIT]
    times = {(lab, m): [] for lab in labels for m in mats}
    cpu = {(lab, m): [] for lab in labels for m in mats}
    for rnd in range(cfg["grow_rounds"]):
        for m, Y in mats.items():
            for lab in labels:
                with blas_one():
                    if lab == IMPLICIT:
                        _, per, _ = fit_implicit(Y, k, it)
                    else:
                        _, per, _ = fit_fastpu(Y, k, lab, it)
                times[(lab, m)].append(float(np.median(per)))
                cpu[(lab, m)].append(float(np.median(LAST_CPU)))
        log(f"(4) round {rnd + 1}: " + ", ".join(
            f"{lab} m=n={m} {times[(lab, m)][-1] * 1e3:.0f} ms" for lab in labels for m in mats))
    return labels, list(mats), times, cpu


# ------------------------------------------------------------------------------------------
# 5. profile: where an iteration goes, and its per-row part (the same rows without entries)
# ------------------------------------------------------------------------------------------

def _setup_of(Y, label):
    from _common import ocmf_setup

    kw = CONFIGS[label]
    return ocmf_setup(Y, loss=kw["loss"], rho=kw["rho"], lam=kw["lam"])[0]


def _side_times(setup, label, W0, H0, repeat, ncg=None):
    """Median (wall, CPU) seconds of: the two Grams, the user-side and item-side row sweeps."""
    from fastpu.ocmf import _problem as P
    from fastpu._core.threads import limit_threads
    from fastpu._kernels.ocmf import RowOptions

    if ncg is None:
        ncg = 3 if CONFIGS[label]["loss"] == "square" else 4
    rows = RowOptions(newton_steps=1, cg_steps=ncg)
    out = {"Grams (M, κ) of both sides": [], "user side row sweep": [],
           "item side row sweep": []}
    with blas_one(), limit_threads(THREADS):
        for _ in range(repeat):
            W, H = W0.copy(), H0.copy()
            for key, fn in (
                    ("Grams (M, κ) of both sides",
                     lambda: (P._gram(H, setup.q_quad), P._gram(W, setup.p_quad))),
                    ("user side row sweep",
                     lambda: P._update_side(setup, setup.entries, setup.user, W, H, setup.p_quad,
                                            setup.q_quad, True, None, 1, rows)),
                    ("item side row sweep",
                     lambda: P._update_side(setup, setup.entries_t, setup.item, H, W,
                                            setup.q_quad, setup.p_quad, True, None, 1, rows))):
                w0, c0 = time.perf_counter(), time.process_time()
                fn()
                out[key].append((time.perf_counter() - w0, time.process_time() - c0))
    return {key: tuple(np.median(np.array(v), axis=0)) for key, v in out.items()}


def part_profile(cfg, Y32):
    """Side sweeps with the real entries and with none (the per-row k×k work alone)."""
    m, n = Y32.shape
    k = cfg["k"]
    empty = sp.csr_matrix((m, n), dtype=np.float32)
    rng = np.random.default_rng(0)
    out = {}
    # the same sweeps of SQ-wSQ with LR-wSQ's 4 CG steps: what LR-wSQ adds beyond the step count
    # (logistic value and derivatives per entry, the line search) is the difference
    for label, ncg in (("SQ-wSQ float64", None), ("SQ-wSQ float64, cg_steps=4", 4),
                       ("LR-wSQ float64", None), ("LR-wSQ float32", None)):
        base = label.split(",")[0]
        dt = CONFIGS[base].get("dtype", "float64")
        W0 = (rng.standard_normal((m, k)) * 0.1).astype(dt)
        H0 = (rng.standard_normal((n, k)) * 0.1).astype(dt)
        full = _side_times(_setup_of(Y32, base), base, W0, H0, 3, ncg)
        rows = _side_times(_setup_of(empty, base), base, W0, H0, 3, ncg)
        out[label] = (full, rows)
        log(f"(5) {label}: " + ", ".join(f"{key} {v[0] * 1e3:.0f} ms (rows only "
                                         f"{rows[key][0] * 1e3:.0f} ms)" for key, v in full.items()))
    return out


def growth_rows_share(cfg):
    """Per method and size: CPU seconds of the side sweeps with the entries and without them."""
    k = cfg["grow_k"]
    rng = np.random.default_rng(0)
    out = {}
    for m in cfg["grow_sizes"]:
        Y = as_input(powerlaw_pu(m, m, cfg["grow_nnz"], seed=1))
        W0, H0 = rng.standard_normal((m, k)) * 0.1, rng.standard_normal((m, k)) * 0.1
        for label in ("LR-wSQ float64", "SQ-wSQ float64"):
            full = _side_times(_setup_of(Y, label), label, W0, H0, 3)
            rows = _side_times(_setup_of(sp.csr_matrix((m, m), dtype=np.float32), label), label,
                               W0, H0, 3)
            out[(label, m)] = (sum(v[1] for v in full.values()), sum(v[1] for v in rows.values()))
            log(f"(5) growth profile {label} m=n={m}: CPU {out[(label, m)][0] * 1e3:.0f} ms, "
                f"of which rows without entries {out[(label, m)][1] * 1e3:.0f} ms")
    return out


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------

def _met(value, goal):
    return "—" if goal is None else ("**met**" if value <= goal else "**not met**")


def report(cfg, args, mem, speed, growth, prof, grow_prof, warm, seconds, load0, load1):
    m, n = cfg["shape"]
    k = cfg["k"]
    imp = speed.get(IMPLICIT)
    if imp is None:                     # --skip speed
        speed, imp = {}, dict(iters=[1.0], cpu=[1.0], rounds=[], setup=[0.0])
    t_imp = float(np.median(imp["iters"]))
    c_imp = float(np.median(imp["cpu"]))
    lines = [
        "# fastpu.ocmf — performance (memory, setup, iteration, growth)", "",
        provenance(), "",
        hardware_line(), "",
        f"Generated by `python benchmarks/speed/bench_perf_ocmf.py{' --quick' if args.quick else ''}` "
        f"on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in {seconds / 60:.1f} min "
        f"(warm-up / compiled-cache load {warm:.1f} s, not timed), fastpu at "
        f"{git_state()}. 1-minute load average {load0:.2f} at the start and {load1:.2f} at the "
        "end (this run keeps about 2 busy on 2 cores; more means other work shared the "
        "machine and the ratios are noisy).", "",
        f"Data: `powerlaw_pu({m}, {n}, {cfg['nnz']})` (binary, power-law activity), given to "
        "both libraries as the same CSR with float32 ones and int32 indices (implicit's own "
        f"input format). k = {k}, {THREADS} threads for both (numba threads for fastpu, "
        "`num_threads` for implicit), BLAS held to 1 thread (threadpoolctl). implicit "
        "0.7.3 `implicit.cpu.als.AlternatingLeastSquares(factors=k, num_threads=2, "
        "random_state=0)` with its defaults (float32 factors, CG with 3 steps). fastpu "
        "`ocmf.fit` with the library's defaults (fast path: 1 Newton step, 3 CG steps for "
        "SQ-wSQ, 4 for LR-wSQ); SQ-wSQ = `loss=\"square\", rho=0.01`, LR-wSQ = "
        "`loss=\"logistic\", rho=0.01, negatives=\"full\"`, `lam=1`; float64 / float32 = "
        "`dtype=` of the factors (every sum is still accumulated in float64).", "",
    ]
    rows = []
    # memory
    imp_peak = float(np.median([r["peak_growth"] for r in mem[IMPLICIT]])) if mem else 1.0
    for lab in [lab for lab in mem if lab != IMPLICIT]:
        pk = float(np.median([r["peak_growth"] for r in mem[lab]]))
        rows.append([f"(1) peak memory growth of a fit, {lab} / implicit",
                     f"{pk:.1f} / {imp_peak:.1f} MiB = {pk / imp_peak:.2f}×",
                     f"≤ {GOALS['memory']}×", _met(pk / imp_peak, GOALS["memory"])])
    # setup
    for lab in [lab for lab in speed if lab != IMPLICIT]:
        st = float(np.median(speed[lab]["setup"]))
        ti = float(np.median(speed[lab]["iters"]))
        rows.append([f"(2) setup before the 1st iteration, {lab}",
                     f"{st * 1e3:.0f} ms = {st / ti:.2f} iteration", f"≤ {GOALS['setup']} iteration",
                     _met(st / ti, GOALS["setup"])])
    # iteration
    for lab in [lab for lab in speed if lab != IMPLICIT]:
        ti = float(np.median(speed[lab]["iters"]))
        goal = GOALS[lab.split()[0]]
        goal_s = "no regression (was ≈0.9×)" if goal is None else f"≤ {goal}×"
        ci = float(np.median(speed[lab]["cpu"]))
        rows.append([f"(3) time per iteration, {lab} / implicit ALS",
                     f"{ti / t_imp:.2f}× (rounds " + ", ".join(
                         f"{a / b:.2f}" for a, b in zip(speed[lab]["rounds"], imp["rounds"]))
                     + f"); CPU time {ci / c_imp:.2f}×",
                     goal_s, _met(ti / t_imp, goal if goal is not None else 1.0)])
    # growth
    g_labels, sizes, times, gcpu = growth if growth else ([], [0, 1], {}, {})
    lo, hi = sizes[0], sizes[-1]
    for lab in g_labels:
        g = float(np.median(times[(lab, hi)])) / float(np.median(times[(lab, lo)]))
        per_round = [a / b for a, b in zip(times[(lab, hi)], times[(lab, lo)])]
        goal = None if lab == IMPLICIT else GOALS["growth"]
        gc = float(np.median(gcpu[(lab, hi)])) / float(np.median(gcpu[(lab, lo)]))
        rows.append([f"(4) time growth m·n ×{(hi / lo) ** 2:.0f} at fixed positives, {lab}",
                     f"{g:.2f}× (rounds " + ", ".join(f"{x:.2f}" for x in per_round)
                     + f"); CPU time {gc:.2f}×",
                     "reference" if goal is None else f"≤ {goal}×", _met(g, goal)])
    lines += ["## Summary", "", md_table(["measured", "this run", "goal", "result"], rows), "",
              "*Result* judges the wall-time ratio. When the load average above is well over "
              "2, the machine was shared: wall times then include waiting for a core (see the "
              "per-round spread) and the CPU-time ratios next to them are the steadier "
              "comparison.", ""]

    lines += [] if not mem else ["## (1) Memory", "",
              "Each configuration: a fresh Python process loads the matrix, runs a tiny warm-up "
              "fit (loads the compiled kernels), then one fit of 2 iterations. *Peak growth* is "
              "the highest resident set during the fit minus the resident set before it "
              "(kernel high-water mark, reset just before the fit, and a 1 ms sampler thread; "
              "the larger of the two); *growth* is what is still resident after the fit (the "
              "returned factors included). Median over "
              f"{cfg['mem_rounds']} round(s) in which the configurations took turns.", ""]
    mrows = []
    for lab, recs in mem.items():  # noqa: B007
        mrows.append([lab, f"{np.median([r['peak_growth'] for r in recs]):.1f}",
                      f"{np.median([r['growth'] for r in recs]):.1f}",
                      f"{np.median([r['before'] for r in recs]):.0f}",
                      ", ".join(f"{r['peak_growth']:.1f}" for r in recs)])
    if mem:
        lines += [md_table(["configuration", "peak growth (MiB)", "growth after (MiB)",
                            "resident before (MiB)", "peak growth per round"], mrows), ""]
    fk = (m + n) * k
    lines += [] if not mem else [f"For scale: the factors alone are {fk * 4 / 2**20:.1f} MiB in float32 and "
              f"{fk * 8 / 2**20:.1f} MiB in float64; one int32 index per positive is "
              f"{cfg['nnz'] * 4 / 2**20:.1f} MiB. fastpu keeps the input's arrays as they are "
              "(a canonical CSR is not copied), adds the transposed pattern (int32 indices, "
              "built by one counting pass) and no per-positive float array for binary data "
              "under the Full approach (labels are all 1, weights constant, and the correction "
              "p_i q_j is computed where it is used).", ""]

    lines += [] if not speed else ["## (2) and (3) Setup and time per iteration", "",
              f"{cfg['rounds']} rounds; in each, implicit and the {len(CONFIGS)} fastpu "
              f"configurations fit {cfg['iters']} iterations one after another. *Setup* = from "
              "the call of `fit` to the start of the first iteration (median over rounds); "
              "*iteration* = median over all iterations of all rounds (fastpu: between the "
              "starts of successive user-side updates, so it includes the objective recorded "
              "each iteration; implicit: its own per-iteration callback).", ""]
    srows = []
    for lab, r in [(IMPLICIT, imp)] + [(lab, speed[lab]) for lab in speed if lab != IMPLICIT]:
        ti = float(np.median(r["iters"]))
        st = float(np.median(r["setup"]))
        ci = float(np.median(r["cpu"]))
        srows.append([lab, f"{st * 1e3:.0f} ms", f"{ti * 1e3:.0f} ms", f"{st / ti:.2f}",
                      f"{ti / t_imp:.2f}×", f"{ci * 1e3:.0f} ms ({ci / c_imp:.2f}×)",
                      ", ".join(f"{t * 1e3:.0f}" for t in r["iters"])])
    lines += [] if not speed else [md_table(["configuration", "setup", "iteration", "setup / iteration",
                        "iteration vs implicit", "CPU time / iteration (vs implicit)",
                        "all iterations (ms)"], srows), "",
              "*CPU time* = the process's CPU seconds (both threads) over the same iterations "
              "(implicit: its 2nd and later iterations), median. On a machine shared with other "
              "work it is steadier than wall time, which also counts the time a thread waits "
              "for a core.", ""]

    lines += [] if not growth else ["## (4) Growth with m·n at fixed positives", "",
              f"m = n ∈ {list(sizes)}, {cfg['grow_nnz']:,} positives (`powerlaw_pu(m, m, "
              f"{cfg['grow_nnz']}, seed=1)`), k = {cfg['grow_k']}, {cfg['grow_iters']} "
              f"iterations per fit, {cfg['grow_rounds']} rounds (sizes and methods take turns); "
              "median per-iteration time of each fit, then the median over rounds.", ""]
    grows = []
    for lab in g_labels:
        grows.append([lab] + [f"{np.median(times[(lab, s)]) * 1e3:.1f} ms (CPU "
                              f"{np.median(gcpu[(lab, s)]) * 1e3:.1f} ms)" for s in sizes])
    lines += [] if not growth else [md_table(["method"] + [f"m = n = {s:,}" for s in sizes], grows), ""]
    if prof:
        lines += ["## (5) Profile: where an iteration goes, and its per-row floor", "",
                  f"The two parts of one fastpu iteration timed alone on the {m:,} × {n:,} "
                  "matrix (median of 3, wall and CPU), with the real entries and with the same "
                  "rows and no entries at all. The second is the per-row work that does not "
                  "depend on the positives: each row's Newton–CG step multiplies by the k×k "
                  "Gram M once per CG step and once for the value (k² per product, (m+n)k² per "
                  "side sweep), plus the k-vector updates of CG. implicit's CG does the same "
                  "per-row products (YᵀY p each step).", ""]
        prow = []
        for lab, (full, rws) in prof.items():
            for key, v in full.items():
                prow.append([lab, key, f"{v[0] * 1e3:.0f} ms", f"{v[1] * 1e3:.0f} ms",
                             f"{rws[key][0] * 1e3:.0f} ms", f"{rws[key][1] * 1e3:.0f} ms"])
        lines += [md_table(["configuration", "part", "wall", "CPU", "wall, no entries",
                            "CPU, no entries"], prow), ""]

        def cpu_total(lab, which=0):
            return sum(v[1] for v in prof[lab][which].values())

        if "SQ-wSQ float64, cg_steps=4" in prof:
            sq3, sq4 = cpu_total("SQ-wSQ float64"), cpu_total("SQ-wSQ float64, cg_steps=4")
            lr = cpu_total("LR-wSQ float64")
            lines += [
                f"CPU seconds of one iteration's parts: SQ-wSQ {sq3 * 1e3:.0f} ms; the same with "
                f"4 CG steps {sq4 * 1e3:.0f} ms ({sq4 / sq3:.2f}×); LR-wSQ {lr * 1e3:.0f} ms "
                f"({lr / sq3:.2f}× SQ-wSQ). LR-wSQ's iteration is SQ-wSQ's plus one more CG step "
                f"per row (4 instead of 3: {(sq4 - sq3) / sq3:.0%} of SQ-wSQ) plus the logistic "
                f"loss and the line search ({(lr - sq4) / sq3:.0%}: per positive and side, one "
                "exp and one log1p for the value and derivatives and one exp and one log1p per "
                "line-search trial). Each CG step is one pass over the row's positives to score "
                "them and one to accumulate, like an ALS CG step; SQ-wSQ does 1 + 3 such pairs "
                "per row, as implicit does (its residual plus 3 steps), and LR-wSQ 1 + 4. So "
                "with the library's default of 4 CG steps for the logistic loss, LR-wSQ costs "
                "up to (1 + 4)/(1 + 3) = 1.25× an ALS-like iteration (less where a row's CG reaches its tolerance early, as the measurement above shows) before any loss is "
                "evaluated; with SQ-wSQ at the ratio in (3), its floor is that ratio × "
                f"{lr / sq3:.2f}. Fewer CG steps, a cheaper logistic (an approximate exp) or "
                "skipping the line search would reach ≤ 1×, but each changes the iterates, which "
                "this issue rules out.", ""]
    if grow_prof:
        sizes_p = sorted({sz for _, sz in grow_prof})
        lo_p, hi_p = sizes_p[0], sizes_p[-1]
        lines += ["### Growth: the per-row part", "",
                  "CPU seconds of one iteration's Grams and two row sweeps (as above), with the "
                  "entries and without them, at each size of (4). *P* = with − without (the "
                  "positives' part), *R* = without (the rows' part).", ""]
        grow_rows = []
        for lab in ("LR-wSQ float64", "SQ-wSQ float64"):
            for sz in sizes_p:
                tot, rws = grow_prof[(lab, sz)]
                grow_rows.append([lab, f"{sz:,}", f"{tot * 1e3:.0f} ms", f"{(tot - rws) * 1e3:.0f} ms",
                                  f"{rws * 1e3:.0f} ms", f"{rws / tot:.0%}"])
        lines += [md_table(["method", "m = n", "CPU, with entries", "P", "R", "R's share"],
                           grow_rows), ""]
        for lab in ("LR-wSQ float64", "SQ-wSQ float64"):
            tl, rl = grow_prof[(lab, lo_p)]
            th, rh = grow_prof[(lab, hi_p)]
            lines += [f"{lab}: P goes from {(tl - rl) * 1e3:.0f} ms to {(th - rh) * 1e3:.0f} ms "
                      f"(×{(th - rh) / max(tl - rl, 1e-9):.2f}), R from {rl * 1e3:.0f} ms to "
                      f"{rh * 1e3:.0f} ms (×{rh / max(rl, 1e-9):.1f}); together ×{th / tl:.2f}.", ""]
        lines += ["The positives' part P grows too although the positives are the same: they "
                  "are spread over more rows (fewer per row, so a row's CG may take more of its "
                  "steps before the tolerance), and their factor rows are gathered from factor "
                  "matrices 4× larger, so fewer of them are found in cache. The rows' part R — each row's k×k products with M "
                  "in every CG step, whether or not the row has positives, and the Grams — grows "
                  "with m + n by construction. implicit's CG has the same two terms (YᵀY p per "
                  "row and step). Without changing the iterates a row's Newton–CG step cannot "
                  "skip its k×k products (its Hessian is 2p_iM + 2λI plus the positives' part), "
                  "so (P(hi) + R(hi)) / (P(lo) + R(lo)) above is the floor of this method's "
                  "growth at these sizes; SQ-wSQ's is higher than LR-wSQ's because its P is "
                  "smaller (3 CG steps, no loss evaluation) while R is nearly the same.", ""]
    if args.extra:
        lines += args.extra
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1], argv[2], int(argv[3]), int(argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (report to a temp dir)")
    ap.add_argument("--out", default=None, help="output directory (default docs/benchmarks/)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: memory,speed,growth")
    args = ap.parse_args(argv)
    require("implicit", purpose="the ALS configuration every ratio is taken against")
    args.extra = []
    cfg = QUICK if args.quick else FULL
    out_dir = args.out or (tempfile.mkdtemp(prefix="bench_perf_ocmf_") if args.quick
                           else str(DOCS))
    skip = set(filter(None, args.skip.split(",")))
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    warm = warm_up()
    log(f"warm-up {warm:.1f} s")
    m, n = cfg["shape"]
    Y32 = as_input(powerlaw_pu(m, n, cfg["nnz"], seed=0))
    labels = list(CONFIGS)
    mem = {}
    if "memory" not in skip:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "Y.npz")
            np.savez(path, data=Y32.data, indices=Y32.indices, indptr=Y32.indptr,
                     shape=np.array(Y32.shape))
            mem = part_memory(cfg, path, [IMPLICIT, "SQ-wSQ float64", "SQ-wSQ float32",
                                          "LR-wSQ float64"])
    speed = part_speed(cfg, Y32, labels) if "speed" not in skip else {IMPLICIT: None}
    growth = part_growth(cfg) if "growth" not in skip else None
    prof = part_profile(cfg, Y32) if "profile" not in skip else {}
    grow_prof = growth_rows_share(cfg) if "profile" not in skip else {}
    text = report(cfg, args, mem, speed, growth, prof, grow_prof, warm,
                  time.perf_counter() - t_start, load0, os.getloadavg()[0])
    path = os.path.join(out_dir, "bench_perf_ocmf.md")
    with open(path, "w") as fh:
        fh.write(text)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
