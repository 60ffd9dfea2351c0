"""Issue 13, ocmf rows: this checkout's iteration against fastpu before issue 13 and implicit.

    python benchmarks/bench_perf_ocmf_base.py [--base 454f026] [--rounds 3]

The ratio of an ocmf iteration to implicit's ALS iteration moves with the load on this 2-core
machine (implicit's iteration slows more than fastpu's when other work shares the cores), so
"no regression" is judged against fastpu itself: the same fits of fastpu at ``--base`` (the
commit before issue 13's work) and of this checkout, and implicit's ALS, each in a fresh
process with its own numba cache, taking turns round by round. Data and settings are those of
``bench_perf_ocmf.py`` (50,000 × 20,000, 2M positives, k = 64, 2 threads, BLAS on 1 thread).
Writes docs/bench_perf_ocmf_base.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

M, N, NNZ, K, ITERS = 50_000, 20_000, 2_000_000, 64, 4
CONFIGS = [("SQ-wSQ float64", dict(loss="square", rho=0.01, lam=1.0)),
           ("LR-wSQ float64", dict(loss="logistic", rho=0.01, lam=1.0, negatives="full"))]

CHILD = r"""
import json, sys
sys.path[:0] = [{tree!r}, {bench!r}]
import numpy as np
from threadpoolctl import threadpool_limits
threadpool_limits(1, "blas")
from _common import powerlaw_pu
Y = powerlaw_pu({m}, {n}, {nnz})
cfg = {cfg!r}
if cfg is None:
    import scipy.sparse as sp
    from implicit.cpu.als import AlternatingLeastSquares
    marks = []
    als = AlternatingLeastSquares(factors={k}, num_threads=2, random_state=0, iterations={iters},
                                  calculate_training_loss=False)
    als.fit(sp.csr_matrix(Y, dtype=np.float32), show_progress=False,
            callback=lambda it, elapsed, loss: marks.append(elapsed))
    per_iter = marks[1:]                      # implicit reports each iteration's own seconds
else:
    import fastpu as fp
    fp.ocmf.fit(Y[:2000], {k}, n_iter=1, **cfg)      # compile / load the cache
    model = fp.ocmf.fit(Y, {k}, n_iter={iters}, n_threads=2, **cfg)
    cum = [h["seconds"] for h in model.history]
    per_iter = np.diff(cum).tolist()             # between the starts of successive iterations
print(json.dumps(per_iter))
"""


def tree_at(ref):
    """fastpu at ``ref`` extracted once into a temp folder (reused by later runs)."""
    dest = pathlib.Path(tempfile.gettempdir()) / f"fastpu_bench_old_{ref}"
    if not (dest / "fastpu" / "__init__.py").exists():
        dest.mkdir(parents=True, exist_ok=True)
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "fastpu"],
                              check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)
    return dest


def run(tree, cfg):
    cache = pathlib.Path(tempfile.gettempdir()) / f"fastpu_bench_numba_{zlib.crc32(str(tree).encode()):08x}"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("PYTHONPATH", None)
    code = CHILD.format(tree=str(tree), bench=str(HERE), m=M, n=N, nnz=NNZ, k=K, iters=ITERS, cfg=cfg)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="454f026", help="git ref of fastpu before issue 13")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench_perf_ocmf_base.md"))
    args = ap.parse_args(argv)
    from _common import hardware_line, md_table

    base = tree_at(args.base)
    started, load0 = time.perf_counter(), os.getloadavg()[0]
    runs = [("implicit ALS float32", None, None)]
    for label, cfg in CONFIGS:
        runs += [(f"{label}, fastpu at {args.base}", base, cfg), (f"{label}, this checkout", ROOT, cfg)]
    for _, tree, cfg in runs:                   # compile every version once, untimed
        if tree is not None:
            run(tree, dict(cfg))
    times = {label: [] for label, _, _ in runs}
    for r in range(args.rounds):
        for label, tree, cfg in runs:
            per_iter = run(tree, cfg)
            times[label].append(statistics.median(per_iter))
            print(f"round {r + 1}: {label}: {times[label][-1]:.3f} s", flush=True)
    load1 = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in times.items()}
    als = med["implicit ALS float32"]
    rows = [[label, f"{med[label]:.3f}", f"{med[label] / als:.2f}×",
             ", ".join(f"{t:.3f}" for t in times[label])] for label, _, _ in runs]
    cmp_rows = []
    for label, _ in CONFIGS:
        b, c = med[f"{label}, fastpu at {args.base}"], med[f"{label}, this checkout"]
        cmp_rows.append([label, f"{b:.3f}", f"{c:.3f}", f"{c / b:.2f}×"])
    text = f"""# ocmf's iteration against fastpu before issue 13 (no regression) and implicit

{hardware_line()}

Generated by `python benchmarks/bench_perf_ocmf_base.py --base {args.base} --rounds {args.rounds}` in
{(time.perf_counter() - started) / 60:.1f} min; 1-minute load average {load0:.2f} at the start and
{load1:.2f} at the end (this run keeps about 2 busy on 2 cores).

Data: `powerlaw_pu({M}, {N}, {NNZ})`, k = {K}, 2 threads, BLAS on 1 thread; fastpu `ocmf.fit`
with `rho=0.01, lam=1` (LR-wSQ with `negatives="full"`), {ITERS} iterations; implicit 0.7.3's ALS
with its defaults (float32, CG with 3 steps). Each fit runs in a fresh process with its own numba
cache (compiled once before the rounds); the versions take turns within every round. Per fit the
median iteration (fastpu: between the starts of successive iterations, so the objective it records
is included; implicit: its own per-iteration seconds, the first dropped), then the median over
{args.rounds} rounds.

{md_table(["configuration", "s / iteration", "vs implicit", "per round"], rows)}

{md_table(["configuration", f"fastpu at {args.base}", "this checkout", "this / before"], cmp_rows)}
"""
    pathlib.Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
