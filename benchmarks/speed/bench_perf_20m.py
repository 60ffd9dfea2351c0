"""ocmf against implicit's ALS at the size of MovieLens-20M, per iteration and to quality.

Run from the repository root, on a quiet machine::

    python benchmarks/speed/bench_perf_20m.py                # every part, about 40 minutes on 2 cores
    python benchmarks/speed/bench_perf_20m.py --parts speed  # one part (speed, scale, growth, quality)
    python benchmarks/speed/bench_perf_20m.py --quick        # small sizes, a smoke run (temp report)

Writes ``docs/benchmarks/bench_perf_20m.md`` with ``bench_perf_20m_scale.png`` and
``bench_perf_20m_quality.png`` beside it, and the raw measurements to
``benchmarks/results/bench_perf_20m.json``. Every measurement is one fit in a fresh Python
process (``subprocess``) that reads its matrix from the on-disk cache of
:func:`_common.cached_powerlaw` (seeded; drawn once), first fits a tiny matrix with the same
configuration so that the compiled kernels are loaded, and then fits the measured one. The
configurations take turns round after round, so a slow spell of the machine falls on all of
them; every ratio is taken within this one run. Both libraries get two threads (fastpu's
``n_threads``, implicit's ``num_threads``) with BLAS held to one thread (threadpoolctl), and the
same input: a CSR of float32 ones with int32 indices.

Parts:

speed
    A 138,000 × 27,000 power-law matrix with 20,000,000 positives, k = 64 and k = 256: the
    steady seconds per iteration (the median of the iterations after the first, the median of
    the rounds), the CPU seconds per iteration, and the working memory (the peak resident set
    during the fit, ``VmHWM`` after resetting it and a 1 ms sampler, minus the resident set just
    before). fastpu's defaults (float32), the same with ``dtype="float64"``, and fastpu at
    commit ``BEFORE`` (before float32 factors and the eigenbasis) run from an exported copy.
scale
    The same shape with 1M, 2M, 5M, 10M and 20M positives, k = 64: seconds per iteration
    against |Ω+| for fastpu's two losses and implicit.
growth
    1,000,000 positives on 20,000 × 10,000 and on 80,000 × 40,000 (m·n 16× larger), k = 64:
    how the iteration grows with m·n at a fixed number of positives.
quality
    MovieLens-1M (every rating a positive), a per-user 80/20 split (seed 0), k = 64: nDCG@10 on
    the test part after every iteration against the seconds of fitting (the evaluation in the
    callback is not counted), for the settings ``fastpu.select.tune`` chose on split 0 in
    docs/results/ml-1m.md (SQ-wSQ, LR-wSQ and implicit's ALS), fastpu now and at ``BEFORE``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import DOCS, RAW, ROOT, log, provenance, stamp  # noqa: E402

ROOT = str(ROOT)
BEFORE = "64f2cca"          # ocmf before float32 factors and the eigenbasis
THREADS = 2
SHAPE = (138_000, 27_000)
FULL = dict(speed_nnz=20_000_000, speed_k=(64, 256), speed_iters=4, speed_rounds=3,
            scale_nnz=(1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000), scale_k=64,
            scale_iters=3, scale_rounds=2, shape=SHAPE,
            growth_shapes=((20_000, 10_000), (80_000, 40_000)), growth_nnz=1_000_000,
            growth_k=64, growth_iters=4, growth_rounds=3,
            quality_data="ml-1m", quality_iters=15, quality_rounds=3)
QUICK = dict(speed_nnz=200_000, speed_k=(16, 32), speed_iters=3, speed_rounds=1,
             scale_nnz=(50_000, 100_000, 200_000), scale_k=16, scale_iters=2, scale_rounds=1,
             shape=(6_000, 2_000), growth_shapes=((2_000, 1_000), (8_000, 4_000)),
             growth_nnz=40_000, growth_k=16, growth_iters=3, growth_rounds=1,
             quality_data="ml-100k", quality_iters=4, quality_rounds=1)

IMPLICIT = "implicit ALS"
# label: (ocmf.fit keywords, run from the exported copy of BEFORE)
FASTPU = {
    "SQ-wSQ": (dict(loss="square"), False),
    "LR-wSQ": (dict(loss="logistic"), False),
    "SQ-wSQ float64": (dict(loss="square", dtype="float64"), False),
    "LR-wSQ float64": (dict(loss="logistic", dtype="float64"), False),
    f"SQ-wSQ before ({BEFORE})": (dict(loss="square", dtype="float64"), True),
    f"LR-wSQ before ({BEFORE})": (dict(loss="logistic", dtype="float64"), True),
}
# docs/results/ml-1m.json, split 0: the settings fastpu.select.tune chose (16 trials, nDCG@10)
TUNED = {
    "SQ-wSQ": dict(loss="square", lam=11.392681428265576, rho=0.08940829824479019),
    "LR-wSQ": dict(loss="logistic", lam=0.7927489429502098, rho=0.018537948170285826),
    IMPLICIT: dict(alpha=12.225031390095301, regularization=54.99075661406088),
}


def load_average():
    return os.getloadavg()


# ------------------------------------------------------------------------------------------
# the child: one measured fit in a fresh process
# ------------------------------------------------------------------------------------------

def _as_input(Y):
    """What both libraries are given: CSR, float32 ones, int32 indices (implicit's format)."""
    import scipy.sparse as sp

    Y = sp.csr_matrix(Y)
    return sp.csr_matrix((np.ones(Y.nnz, dtype=np.float32), Y.indices.astype(np.int32),
                          Y.indptr.astype(np.int32)), shape=Y.shape)


def _fit(label, Y, k, n_iter, callback, extra):
    """One fit of ``label`` with a per-iteration callback ``callback()`` (no arguments)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, "blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if label == IMPLICIT:
            from implicit.cpu.als import AlternatingLeastSquares

            als = AlternatingLeastSquares(factors=k, iterations=n_iter, num_threads=THREADS,
                                          random_state=0, **extra)
            als.fit(Y, show_progress=False, callback=lambda it, el, loss: callback(als))
            return als
        import fastpu

        kw = dict(FASTPU[label][0], **extra)
        return fastpu.ocmf.fit(Y, k, n_iter=n_iter, n_threads=THREADS, seed=0,
                               callback=lambda info: callback(info) and False, **kw)


def child(spec):
    """Measure one fit as ``spec`` says; print one JSON line."""
    import _common

    label, k, n_iter = spec["label"], spec["k"], spec["n_iter"]
    extra = spec.get("extra", {})
    if spec.get("data"):
        Y, test = _quality_data(spec["data"])
    else:
        m, n, nnz = spec["matrix"]
        Y = _as_input(_common.cached_powerlaw(m, n, nnz, seed=0))
        test = None
    tiny = _as_input(_common.powerlaw_pu(60, 40, 400, seed=0))
    _fit(label, tiny, k, 2, lambda *_: None, extra)          # loads the compiled kernels
    gc.collect()

    marks = []                 # (wall, cpu) at the end of each iteration, evaluation excluded
    curve = []                 # (seconds of fitting, nDCG@10) per iteration
    spent = [0.0]              # seconds spent evaluating inside the callback

    def on_iteration(obj):
        now = time.perf_counter()
        marks.append((now - spent[0], time.process_time()))
        if test is not None:
            curve.append((now - t0 - spent[0], _ndcg(obj, label, Y, test)))
            spent[0] += time.perf_counter() - now
        return False

    with _common.PeakMemory() as mem:
        t0 = time.perf_counter()
        c0 = time.process_time()
        model = _fit(label, Y, k, n_iter, on_iteration, extra)
    hwm = mem.hwm
    wall = np.diff([t0] + [w for w, _ in marks])
    cpu = np.diff([c0] + [c for _, c in marks])
    import fastpu

    print(json.dumps(dict(label=label, k=k, wall=wall.tolist(), cpu=cpu.tolist(), curve=curve,
                          fastpu=os.path.dirname(os.path.dirname(fastpu.__file__)),
                          peak_growth=max(mem.sampled, 0.0 if np.isnan(hwm) else hwm) - mem.before,
                          load=load_average())))
    del model


def _quality_data(name):
    import fastpu as fp

    Y = fp.datasets.load(name).Y
    train, test = fp.split.holdout(Y, 0.2, seed=0)
    return _as_input(train), test


def _ndcg(obj, label, train, test):
    """nDCG@10 of the current iterate on the test part (training positives excluded)."""
    import fastpu as fp

    if label == IMPLICIT:
        U = np.asarray(obj.user_factors, dtype=np.float64)
        V = np.asarray(obj.item_factors, dtype=np.float64)
        model = fp.Factorization(U, V, method="implicit_als")
    else:
        model = obj["model"]()
    return float(fp.evaluate(model, train, test, k=[10])["ndcg@10"])


# ------------------------------------------------------------------------------------------
# the parent: runs the children in turns
# ------------------------------------------------------------------------------------------

def run_child(spec, old_tree=None):
    env = dict(os.environ)
    # this checkout's fastpu, whichever copy the interpreter has installed
    env["PYTHONPATH"] = ROOT
    if old_tree is not None:
        import _common

        env["PYTHONPATH"] = str(old_tree)
        env["NUMBA_CACHE_DIR"] = str(_common.numba_cache_for(old_tree))
        env["FASTPU_CACHE_DIR"] = str(_common.numba_cache_for(old_tree))
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                         capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(),
                         check=False)
    if res.returncode != 0:
        raise RuntimeError(f"child {spec} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _tree_for(label):
    if label != IMPLICIT and FASTPU[label][1]:
        import _common

        return _common.fastpu_tree(BEFORE)
    return None


def _steady(rec):
    """The median of the iterations after the first (the first holds setup and warm caches)."""
    w = rec["wall"][1:] or rec["wall"]
    c = rec["cpu"][1:] or rec["cpu"]
    return float(np.median(w)), float(np.median(c))


def rounds_of(cfg, specs, rounds, part):
    """Run every spec once per round, in turns; {(label, key): [records]}."""
    out = {}
    for r in range(rounds):
        for key, spec in specs:
            rec = run_child(spec, _tree_for(spec["label"]))
            out.setdefault((spec["label"], key), []).append(rec)
            w, c = _steady(rec)
            want = str(_tree_for(spec["label"]) or ROOT)
            if os.path.realpath(rec["fastpu"]) != os.path.realpath(want):
                raise RuntimeError(f"{spec['label']} ran fastpu from {rec['fastpu']}, not {want}")
            log(f"{part} round {r + 1} {spec['label']} {key}: {w:.3f} s/iteration "
                f"({c:.2f} CPU s), peak growth {rec['peak_growth']:.0f} MiB, "
                f"load {rec['load'][0]:.2f}")
    return out


def part_speed(cfg):
    m, n = cfg["shape"]
    specs = []
    for k in cfg["speed_k"]:
        labels = [IMPLICIT, "SQ-wSQ", "LR-wSQ"]
        if k == cfg["speed_k"][0]:
            labels += ["SQ-wSQ float64", "LR-wSQ float64", f"SQ-wSQ before ({BEFORE})",
                       f"LR-wSQ before ({BEFORE})"]
        specs += [(f"k={k}", dict(label=lab, k=k, n_iter=cfg["speed_iters"],
                                  matrix=[m, n, cfg["speed_nnz"]])) for lab in labels]
    return rounds_of(cfg, specs, cfg["speed_rounds"], "speed")


def part_scale(cfg):
    m, n = cfg["shape"]
    specs = [(f"nnz={nnz}", dict(label=lab, k=cfg["scale_k"], n_iter=cfg["scale_iters"],
                                 matrix=[m, n, nnz]))
             for nnz in cfg["scale_nnz"] for lab in (IMPLICIT, "SQ-wSQ", "LR-wSQ")]
    return rounds_of(cfg, specs, cfg["scale_rounds"], "scale")


def part_growth(cfg):
    specs = [(f"{m}x{n}", dict(label=lab, k=cfg["growth_k"], n_iter=cfg["growth_iters"],
                               matrix=[m, n, cfg["growth_nnz"]]))
             for m, n in cfg["growth_shapes"] for lab in (IMPLICIT, "SQ-wSQ", "LR-wSQ")]
    return rounds_of(cfg, specs, cfg["growth_rounds"], "growth")


def part_quality(cfg):
    specs = []
    for lab in (IMPLICIT, "SQ-wSQ", "LR-wSQ", "SQ-wSQ float64", f"SQ-wSQ before ({BEFORE})",
                f"LR-wSQ before ({BEFORE})"):
        base = lab.split(" ")[0] if lab != IMPLICIT else IMPLICIT
        extra = dict(TUNED[base])
        if lab != IMPLICIT:
            extra.pop("loss")               # FASTPU[lab] names the loss
        specs.append(("ml", dict(label=lab, k=64, n_iter=cfg["quality_iters"],
                                 data=cfg["quality_data"], extra=extra)))
    return rounds_of(cfg, specs, cfg["quality_rounds"], "quality")


# ------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------

def _med(recs, i):
    return float(np.median([_steady(r)[i] for r in recs]))


def _ratio(recs, ref):
    """The median over rounds of the per-round ratio of steady seconds."""
    return float(np.median([_steady(a)[0] / _steady(b)[0] for a, b in zip(recs, ref)]))


def report_speed(res, cfg):
    from _common import md_table

    lines = []
    goals = {("SQ-wSQ", 64): 0.7, ("LR-wSQ", 64): 1.0, ("SQ-wSQ", 256): 0.7}
    for k in cfg["speed_k"]:
        key = f"k={k}"
        ref = res[(IMPLICIT, key)]
        rows = []
        for (lab, kk), recs in res.items():
            if kk != key:
                continue
            ratio = _ratio(recs, ref)
            base = lab.split(" ")[0]
            goal = goals.get((base, k)) if lab in ("SQ-wSQ", "LR-wSQ") else None
            mem = float(np.median([r["peak_growth"] for r in recs]))
            mem_ref = float(np.median([r["peak_growth"] for r in ref]))
            rows.append([lab, f"{_med(recs, 0):.2f}", f"{_med(recs, 1):.2f}",
                         "1" if lab == IMPLICIT else f"{ratio:.2f}×",
                         "" if goal is None else f"≤ {goal}× ({'met' if ratio <= goal else 'missed'})",
                         f"{mem:.0f}", "1" if lab == IMPLICIT else f"{mem / mem_ref:.2f}×"])
        lines += [f"### k = {k}", "", md_table(
            ["configuration", "s / iteration", "CPU s / iteration", "/ implicit", "goal",
             "peak RSS growth (MiB)", "/ implicit"], rows), ""]
    return lines


def report_scale(res, cfg, png):
    from _common import md_table

    labels = (IMPLICIT, "SQ-wSQ", "LR-wSQ")
    rows, series = [], {lab: [] for lab in labels}
    for nnz in cfg["scale_nnz"]:
        key = f"nnz={nnz}"
        cells = [f"{nnz / 1e6:g}M"]
        for lab in labels:
            t = _med(res[(lab, key)], 0)
            series[lab].append(t)
            cells.append(f"{t:.3f}")
        cells += [f"{_ratio(res[(lab, key)], res[(IMPLICIT, key)]):.2f}×" for lab in labels[1:]]
        rows.append(cells)
    _plot_scale(cfg["scale_nnz"], series, png)
    return [md_table(["positives", "implicit s/it", "SQ-wSQ s/it", "LR-wSQ s/it",
                      "SQ-wSQ / implicit", "LR-wSQ / implicit"], rows), "",
            f"![seconds per iteration against positives]({os.path.basename(png)})", ""]


def report_growth(res, cfg):
    from _common import md_table

    (m1, n1), (m2, n2) = cfg["growth_shapes"]
    rows = []
    for lab in (IMPLICIT, "SQ-wSQ", "LR-wSQ"):
        a, b = res[(lab, f"{m1}x{n1}")], res[(lab, f"{m2}x{n2}")]
        grow = float(np.median([_steady(y)[0] / _steady(x)[0] for x, y in zip(a, b)]))
        rows.append([lab, f"{_med(a, 0):.3f}", f"{_med(b, 0):.3f}", f"{grow:.2f}×"])
    return [md_table(["configuration", f"{m1:,} × {n1:,} s/it", f"{m2:,} × {n2:,} s/it",
                      "growth"], rows), ""]


def report_quality(res, png):
    from _common import md_table

    curves = {}
    for (lab, _), recs in res.items():
        # the median over rounds of each iteration's fitting seconds; nDCG@10 is the same in
        # every round (same seed), the first round's is shown
        secs = np.median(np.array([[t for t, _ in r["curve"]] for r in recs]), axis=0)
        curves[lab] = (secs, np.array([s for _, s in recs[0]["curve"]]))
    target = float(curves[IMPLICIT][1].max())
    rows = []
    for lab, (secs, nd) in curves.items():
        hit = np.flatnonzero(nd >= target)
        rows.append([lab, f"{nd.max():.4f}", f"{secs[int(np.argmax(nd))]:.2f}",
                     f"{secs[hit[0]]:.2f}" if hit.size else "never",
                     f"{secs[-1] / len(secs):.3f}"])
    _plot_quality(curves, target, png)
    return [f"Target: implicit's best nDCG@10 in this run, {target:.4f}.", "",
            md_table(["configuration", "best nDCG@10", "at s", "s to the target",
                      "s / iteration"], rows), "",
            f"![nDCG@10 against seconds of fitting]({os.path.basename(png)})", ""]


def _plot_scale(nnz, series, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for lab, ys in series.items():
        ax.plot(np.array(nnz) / 1e6, ys, marker="o", label=lab)
    ax.set_xlabel("positives (millions)")
    ax.set_ylabel("seconds per iteration")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _plot_quality(curves, target, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for lab, (secs, nd) in curves.items():
        ax.plot(secs, nd, marker=".", label=lab)
    ax.axhline(target, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("seconds of fitting (evaluation excluded)")
    ax.set_ylabel("nDCG@10 (test)")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parts", default="speed,scale,growth,quality")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    from _common import hardware_line

    cfg = QUICK if args.quick else FULL
    parts = args.parts.split(",")
    docs = tempfile.mkdtemp() if args.quick else str(DOCS)
    raw_path = (os.path.join(docs, "bench_perf_20m.json") if args.quick
                else str(RAW / "bench_perf_20m.json"))
    raw = json.load(open(raw_path)) if os.path.exists(raw_path) and not args.quick else {}
    t_start = time.perf_counter()
    load0 = load_average()
    for part in parts:
        res = {"speed": part_speed, "scale": part_scale, "growth": part_growth,
               "quality": part_quality}[part](cfg)
        raw[part] = [dict(label=lab, key=key, records=recs) for (lab, key), recs in res.items()]
        raw[f"{part}_load"] = [load0, load_average()]
        raw[f"{part}_stamp"] = stamp()
    raw["hardware"] = hardware_line()
    os.makedirs(os.path.dirname(raw_path), exist_ok=True)
    with open(raw_path, "w") as fh:
        json.dump(raw, fh)
    write_report(raw, cfg, docs, time.perf_counter() - t_start, parts)


def write_report(raw, cfg, docs, seconds, parts):
    def res_of(part):
        return {(r["label"], r["key"]): r["records"] for r in raw[part]}

    out = ["# ocmf against implicit's ALS at the size of MovieLens-20M", "",
           provenance([raw.get(f"{p}_stamp") for p in ("speed", "scale", "growth", "quality")
                       if p in raw]), "",
           f"Written by `python benchmarks/speed/bench_perf_20m.py --parts {','.join(parts)}` "
           f"({seconds / 60:.0f} min). {raw['hardware']} implicit 0.7.3. Each fit runs in a "
           "fresh process after a tiny warm-up fit; configurations take turns round after "
           "round; two threads each, BLAS at one thread, the same float32 CSR input. Seconds "
           "per iteration are the median of the iterations after the first, then the median "
           "over rounds; ratios are the median of the per-round ratios. Load average "
           "(1, 5, 15 min) at the start and the end of each part is given with it.", ""]
    if "speed" in raw:
        m, n = cfg["shape"]
        out += [f"## Seconds per iteration at {cfg['speed_nnz']:,} positives", "",
                f"{m:,} × {n:,}, {cfg['speed_nnz']:,} positives (power-law popularity, "
                f"`_common.cached_powerlaw(seed=0)`), {cfg['speed_iters']} iterations per fit, "
                f"{cfg['speed_rounds']} rounds. SQ-wSQ is `ocmf.fit(Y, k, loss=\"square\")`, "
                "LR-wSQ `ocmf.fit(Y, k, loss=\"logistic\")` (float32, the default); implicit "
                "`AlternatingLeastSquares(factors=k)` (float32, conjugate gradient). Load "
                f"{_load(raw['speed_load'])}.", ""]
        out += report_speed(res_of("speed"), cfg)
    if "scale" in raw:
        png = os.path.join(docs, "bench_perf_20m_scale.png")
        out += ["## Seconds per iteration against the number of positives", "",
                f"{cfg['shape'][0]:,} × {cfg['shape'][1]:,}, k = {cfg['scale_k']}, "
                f"{cfg['scale_rounds']} rounds. Load {_load(raw['scale_load'])}.", ""]
        out += report_scale(res_of("scale"), cfg, png)
    if "growth" in raw:
        out += ["## Growth with m·n at a fixed number of positives", "",
                f"{cfg['growth_nnz']:,} positives, k = {cfg['growth_k']}, "
                f"{cfg['growth_rounds']} rounds. Load {_load(raw['growth_load'])}.", ""]
        out += report_growth(res_of("growth"), cfg)
    if "quality" in raw:
        png = os.path.join(docs, "bench_perf_20m_quality.png")
        out += [f"## Time to quality on {cfg['quality_data']}", "",
                f"{cfg['quality_data']}, every rating a positive, `fp.split.holdout(Y, 0.2, "
                f"seed=0)`, k = 64, {cfg['quality_iters']} iterations, the settings "
                "`fastpu.select.tune` chose on split 0 (docs/results/ml-1m.md): SQ-wSQ "
                "λ = 11.39, ρ = 0.0894; LR-wSQ λ = 0.793, ρ = 0.0185; implicit α = 12.2, "
                "regularization = 55. nDCG@10 of the test part after every iteration "
                "(evaluated in the callback, its time not counted). `float64` and `before` "
                f"rows give the iterates of the code at {BEFORE} (float64 factors). Load "
                f"{_load(raw['quality_load'])}.", ""]
        out += report_quality(res_of("quality"), png)
    path = os.path.join(docs, "bench_perf_20m.md")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")
    log(f"wrote {path}")


def _load(pair):
    a, b = pair
    return f"{a[0]:.2f} / {a[1]:.2f} / {a[2]:.2f} → {b[0]:.2f} / {b[1]:.2f} / {b[2]:.2f}"


if __name__ == "__main__":
    main()
