"""Where a fresh process's first (cached) ocmf fit goes: numba's own start-up vs fastpu.

    python benchmarks/bench_perf_warm.py [--rounds 5]

Each round is a fresh interpreter with the compiled kernels already in the cache (one warm-up
process first). It times, in order: numba's first-dispatch set-up of its typing and target
contexts (paid once per process by any numba function's first call, here forced by itself),
then the first default ocmf fit (loading fastpu's compiled kernels from the cache), then a
second fit (the fit alone). Prints the medians; docs/performance.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time
sys.path[:0] = [{bench!r}, {root!r}]
from _common import powerlaw_pu
Y = powerlaw_pu(2000, 1000, 40000, seed=0)
import fastpu
from numba.core.registry import cpu_target
t0 = time.perf_counter()
cpu_target.target_context.refresh()
cpu_target.typing_context.refresh()
t1 = time.perf_counter()
fastpu.ocmf.fit(Y, 16, n_threads=2)
t2 = time.perf_counter()
fastpu.ocmf.fit(Y, 16, n_threads=2)
t3 = time.perf_counter()
print(json.dumps(dict(numba_setup=t1 - t0, first_fit=t2 - t1, second_fit=t3 - t2)))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    code = CHILD.format(bench=str(HERE), root=str(HERE.parent))
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)   # warm the cache
    rows = []
    for _ in range(args.rounds):
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                             text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    for key in ("numba_setup", "first_fit", "second_fit"):
        vals = [r[key] for r in rows]
        print(f"{key:12s} median {statistics.median(vals):.3f} s  "
              f"({', '.join(f'{v:.3f}' for v in vals)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
