"""ocmf against implicit's ALS from k = 64 to k = 2048 at MovieLens-20M's size, setup, and time
to EASE's quality on MovieLens-1M.

Run from the repository root, on a quiet machine::

    python benchmarks/speed/bench_highrank.py               # every part (about 2 hours)
    python benchmarks/speed/bench_highrank.py --parts speed --ks 64,1024
    python benchmarks/speed/bench_highrank.py --quick       # small sizes, a smoke run

Writes ``docs/benchmarks/bench_highrank.md`` and the raw measurements to
``benchmarks/results/bench_highrank.json``. Every measurement is one fit in a fresh Python
process, which first fits a tiny matrix with the same configuration (the compiled kernels are
loaded, not compiled, in the measured fit); the configurations take turns, round after round.
Both libraries get two threads with BLAS on one thread, and the same input (a CSR of float32
ones with int32 indices).

Parts:

speed
    A 138,000 × 27,000 power-law matrix with 20,000,000 positives (seeded, cached on disk by
    ``_common.cached_powerlaw``), k = 64, 256, 1024 and 2048: the steady seconds per iteration
    (the median of the iterations after the first) and the working memory (the peak resident set
    during the fit minus the resident set before it), for implicit's ALS (conjugate gradient,
    its defaults), SQ-wSQ (``loss="square"``), iALS's weighting (``negatives="all", nu=1``, the
    same cost) and LR-wSQ (the logistic loss).
setup
    50,000 × 20,000 with 2,000,000 positives, k = 64: the seconds from the call to the end of
    the first iteration minus a steady iteration, as a fraction of an iteration.
quality
    RecBole's MovieLens-1M protocol (``results_recbole.py``, split 0): EASE's fit time and test
    NDCG@10 at its tuned λ, and the seconds ocmf (iALS's weighting, the setting tune chose on
    that split) fits before its test NDCG@10 reaches EASE's (evaluation excluded).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import DOCS, RAW, ROOT, provenance, stamp  # noqa: E402

ROOT = str(ROOT)

THREADS = 2
IMPLICIT = "implicit ALS"
FASTPU = {
    "SQ-wSQ": dict(loss="square"),
    "iALS weighting": dict(loss="square", negatives="all", a_bar=0.0, nu=1.0, rho=0.6, lam=0.006),
    "LR-wSQ": dict(loss="logistic"),
}
FULL = dict(shape=(138_000, 27_000), nnz=20_000_000, ks=(64, 256, 1024, 2048), rounds=2,
            iters={64: 4, 256: 4, 1024: 3, 2048: 3}, setup_shape=(50_000, 20_000),
            setup_nnz=2_000_000, setup_rounds=3, quality_iters=16)
QUICK = dict(shape=(6_000, 2_000), nnz=200_000, ks=(16, 64), rounds=1, iters={16: 3, 64: 3},
             setup_shape=(3_000, 1_000), setup_nnz=50_000, setup_rounds=1, quality_iters=3)
#: the setting fastpu.select.tune chose on split 0 of RecBole's protocol (results_recbole.py)
QUALITY = dict(k=512, loss="square", negatives="all", a_bar=0.0, nu=1.0, rho=0.6, lam=0.006)
EASE_LAM = 1000.0


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _as_input(Y):
    import scipy.sparse as sp

    Y = sp.csr_matrix(Y)
    return sp.csr_matrix((np.ones(Y.nnz, dtype=np.float32), Y.indices.astype(np.int32),
                          Y.indptr.astype(np.int32)), shape=Y.shape)


def _fit(label, Y, k, n_iter, callback):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, "blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if label == IMPLICIT:
            from implicit.cpu.als import AlternatingLeastSquares

            als = AlternatingLeastSquares(factors=k, iterations=n_iter, num_threads=THREADS,
                                          random_state=0)
            als.fit(Y, show_progress=False, callback=lambda it, el, loss: callback())
            return als
        import fastpu

        return fastpu.ocmf.fit(Y, k, n_iter=n_iter, n_threads=THREADS, seed=0,
                               callback=lambda info: callback() and False, **FASTPU[label])


def child(spec):
    """One measured fit; prints one JSON line."""
    import _common

    label, k, n_iter = spec["label"], spec["k"], spec["n_iter"]
    m, n, nnz = spec["matrix"]
    Y = _as_input(_common.cached_powerlaw(m, n, nnz, seed=0))
    _fit(label, _as_input(_common.powerlaw_pu(60, 40, 400, seed=0)), min(k, 30), 2, lambda: None)
    gc.collect()
    marks = []
    with _common.PeakMemory() as mem:
        t0 = time.perf_counter()
        model = _fit(label, Y, k, n_iter, lambda: marks.append(time.perf_counter()))
    hwm = mem.hwm
    wall = np.diff([t0] + marks)
    print(json.dumps(dict(label=label, k=k, wall=wall.tolist(), load=os.getloadavg(),
                          peak_growth=max(mem.sampled, 0.0 if np.isnan(hwm) else hwm)
                          - mem.before)))
    del model


def child_quality(spec):
    """EASE's fit and ocmf's curve on RecBole's split 0; prints one JSON line."""
    import fastpu as fp
    import scipy.sparse as sp
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "quality"))
    from results_recbole import ndcg, positives, recbole_split

    train, valid, test = recbole_split(positives(), 0)
    seen = sp.csr_array(train + valid)
    fp.baselines.ease(train[:200], lam=EASE_LAM)            # warm
    t0 = time.perf_counter()
    ease = fp.baselines.ease(train, lam=EASE_LAM)
    ease_s = time.perf_counter() - t0
    ease_ndcg = ndcg(ease, seen, test)
    kw = dict(QUALITY)
    k = kw.pop("k")
    fp.ocmf.fit(train[:200], k, n_iter=1, **kw)              # warm
    curve, spent = [], [0.0]

    def callback(info):
        now = time.perf_counter()
        curve.append((now - t1 - spent[0], ndcg(info["model"](), seen, test)))
        spent[0] += time.perf_counter() - now

    t1 = time.perf_counter()
    fp.ocmf.fit(train, k, n_iter=spec["n_iter"], n_threads=THREADS, seed=0, callback=callback,
                **kw)
    print(json.dumps(dict(ease_seconds=ease_s, ease_ndcg=ease_ndcg, curve=curve,
                          load=os.getloadavg())))


def run_child(spec, quality=False):
    env = dict(os.environ, PYTHONPATH=ROOT)
    res = subprocess.run([sys.executable, os.path.abspath(__file__),
                          "--child-quality" if quality else "--child", json.dumps(spec)],
                         capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if res.returncode != 0:
        raise RuntimeError(f"child {spec} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def steady(rec):
    w = rec["wall"][1:] or rec["wall"]
    return float(np.median(w))


def part_speed(cfg, ks, labels):
    m, n = cfg["shape"]
    out = {}
    for r in range(cfg["rounds"]):
        for k in ks:
            for lab in labels:
                spec = dict(label=lab, k=k, n_iter=cfg["iters"][k], matrix=[m, n, cfg["nnz"]])
                rec = run_child(spec)
                out.setdefault(f"{lab}|{k}", []).append(rec)
                log(f"speed round {r + 1} k={k} {lab}: {steady(rec):.2f} s/iteration, peak "
                    f"growth {rec['peak_growth']:.0f} MiB, load {rec['load'][0]:.2f}")
    return out


def part_setup(cfg):
    m, n = cfg["setup_shape"]
    out = {}
    for r in range(cfg["setup_rounds"]):
        for lab in ("SQ-wSQ", "LR-wSQ"):
            rec = run_child(dict(label=lab, k=64, n_iter=4, matrix=[m, n, cfg["setup_nnz"]]))
            out.setdefault(lab, []).append(rec)
            st = steady(rec)
            log(f"setup round {r + 1} {lab}: first {rec['wall'][0]:.3f} s, steady {st:.3f} s, "
                f"setup {(rec['wall'][0] - st) / st:.2f} iteration")
    return out


def gathered_runs(raw):
    """The runs whose results the report shows, each once, with the parts it provides.

    ``raw["runs"]`` is keyed like ``raw["stamps"]`` (a part, or a speed part with its ranks), so
    a part measured again replaces the run it came from; a run that provided several parts is
    listed once. An older raw file kept a list of every run: its entries are matched to the
    parts by their stamps and the superseded ones dropped.
    """
    runs = raw.get("runs", {})
    if isinstance(runs, list):
        by_stamp = {tuple(r["stamp"]): r for r in runs}          # the last run of each stamp
        runs = {key: by_stamp[tuple(st)] for key, st in raw.get("stamps", {}).items()
                if tuple(st) in by_stamp}
        raw["runs"] = runs
    out = []
    for key, r in runs.items():
        for seen, parts in out:
            if seen == r:
                parts.append(key)
                break
        else:
            out.append((r, [key]))
    return out


def report(raw, cfg, ks, labels):
    from _common import hardware_line, md_table

    lines = ["# High rank at MovieLens-20M's size, setup, and time to EASE's quality", "",
             provenance(list(raw.get("stamps", {}).values()) or None), "",
             hardware_line(), "",
             "The runs this report gathers (nothing else running in each):", ""]
    for r, parts in gathered_runs(raw):
        command = shlex.join(["python", "benchmarks/speed/bench_highrank.py", *r["argv"]])
        lines.append(f"- {', '.join(parts)}: `{command}` at commit `{r['stamp'][0]}` "
                     f"({r['stamp'][1]}), {r['minutes']:.1f} minutes, load average "
                     f"{r['load_start']} at the start and {r['load_end']} at the end.")
    lines.append("")
    if "speed" in raw:
        m, n = cfg["shape"]
        lines += [f"## Seconds per iteration, {m:,} × {n:,}, {cfg['nnz']:,} positives", "",
                  "Steady seconds per iteration (the median over the rounds of each run's median "
                  "after the first iteration) and working memory (peak resident set growth).", ""]
        rows = []
        for k in ks:
            ref = raw["speed"].get(f"{IMPLICIT}|{k}")
            for lab in labels:
                recs = raw["speed"].get(f"{lab}|{k}")
                if not recs:
                    continue
                t = float(np.median([steady(x) for x in recs]))
                mem = float(np.median([x["peak_growth"] for x in recs]))
                if ref and lab != IMPLICIT:
                    ratio = float(np.median([steady(a) / steady(b) for a, b in zip(recs, ref)]))
                    mratio = mem / float(np.median([x["peak_growth"] for x in ref]))
                    rel, mrel = f"{ratio:.2f}×", f"{mratio:.2f}×"
                else:
                    rel = mrel = "1" if lab == IMPLICIT else ""
                rows.append([str(k), lab, f"{t:.2f}", rel, f"{mem:.0f}", mrel])
        lines += [md_table(["k", "configuration", "s / iteration", "/ implicit",
                            "working memory (MiB)", "/ implicit"], rows), ""]
    if "setup" in raw:
        rows = []
        for lab, recs in raw["setup"].items():
            fr = [(x["wall"][0] - steady(x)) / steady(x) for x in recs]
            rows.append([lab, f"{np.median([steady(x) for x in recs]):.3f}",
                         f"{np.median([x['wall'][0] for x in recs]):.3f}", f"{np.median(fr):.2f}"])
        m, n = cfg["setup_shape"]
        lines += [f"## Setup, {m:,} × {n:,}, {cfg['setup_nnz']:,} positives, k = 64", "",
                  "Setup = the first iteration's seconds (from the call) minus a steady "
                  "iteration's: checking the input, building the problem, drawing the start.",
                  "", md_table(["configuration", "steady s / iteration", "first s",
                                "setup / iteration"], rows), ""]
    if "quality" in raw:
        q = raw["quality"]
        hit = [t for t, s in q["curve"] if s >= q["ease_ndcg"]]
        best = max(s for _, s in q["curve"])
        lines += ["## Time to EASE's quality, RecBole's MovieLens-1M protocol (split 0)", "",
                  f"EASE (λ = {EASE_LAM:g}): fit {q['ease_seconds']:.1f} s, test NDCG@10 "
                  f"{q['ease_ndcg']:.4f}. ocmf ({', '.join(f'{k}={v}' for k, v in QUALITY.items())}): "
                  + (f"reaches it after {hit[0]:.1f} s of fitting" if hit else
                     f"does not reach it in {len(q['curve'])} iterations (best {best:.4f})")
                  + f"; {q['curve'][-1][0] / len(q['curve']):.2f} s per iteration.", "",
                  md_table(["iteration", "s of fitting", "test NDCG@10"],
                           [[str(i + 1), f"{t:.1f}", f"{s:.4f}"]
                            for i, (t, s) in enumerate(q["curve"])]), ""]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, a smoke run (temporary folder)")
    ap.add_argument("--parts", default="speed,setup,quality")
    ap.add_argument("--ks", default=None)
    ap.add_argument("--labels", default=None)
    ap.add_argument("--child")
    ap.add_argument("--child-quality")
    args = ap.parse_args()
    if args.child:
        return child(json.loads(args.child))
    if args.child_quality:
        return child_quality(json.loads(args.child_quality))
    cfg = QUICK if args.quick else FULL
    ks = tuple(int(x) for x in args.ks.split(",")) if args.ks else cfg["ks"]
    labels = tuple(args.labels.split(",")) if args.labels else (IMPLICIT, *FASTPU)
    docs = tempfile.mkdtemp() if args.quick else str(DOCS)
    raw_path = os.path.join(docs if args.quick else str(RAW), "bench_highrank.json")
    raw = json.load(open(raw_path)) if os.path.exists(raw_path) and not args.quick else {}
    run = dict(argv=sys.argv[1:], load_start=[round(x, 2) for x in os.getloadavg()],
               stamp=list(stamp()))
    gathered_runs(raw)  # an older raw file's list of runs becomes the keyed form
    t0 = time.perf_counter()
    for part in args.parts.split(","):
        if part == "speed":
            raw.setdefault("speed", {}).update(part_speed(cfg, ks, labels))
        elif part == "setup":
            raw["setup"] = part_setup(cfg)
        elif part == "quality":
            raw["quality"] = run_child(dict(n_iter=cfg["quality_iters"]), quality=True)
        else:
            raise SystemExit(f"unknown part {part!r}")
        run["load_end"] = [round(x, 2) for x in os.getloadavg()]
        run["minutes"] = (time.perf_counter() - t0) / 60
        key = f"speed k={','.join(map(str, ks))}" if part == "speed" else part
        raw.setdefault("stamps", {})[key] = stamp()
        raw.setdefault("runs", {})[key] = run
        with open(raw_path, "w") as fh:
            json.dump(raw, fh)
    all_ks = sorted({int(key.split("|")[1]) for key in raw.get("speed", {})})
    lines = report(raw, cfg, all_ks, (IMPLICIT, *FASTPU))
    path = os.path.join(docs, "bench_highrank.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
