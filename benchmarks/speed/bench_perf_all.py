"""Run every performance report of issue 13, one after another, on a quiet machine.

    python benchmarks/bench_perf.py            # all seven reports (about 20 minutes on 2 cores)
    python benchmarks/bench_perf.py ocmf csrr  # a subset

Each script measures its ratios within its own run (configurations interleaved) and writes
``docs/bench_perf_<area>.md``; docs/performance.md summarises them. Running them one at a time
keeps them from competing for the cores.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
AREAS = {
    "ocmf": ["bench_perf_ocmf.py"],
    "ocmf-base": ["bench_perf_ocmf_base.py"],
    "fbgd": ["bench_perf_fbgd.py"],
    "homf": ["bench_perf_homf.py"],
    "csrr": ["bench_perf_csrr.py"],
    "firstrun": ["bench_perf_firstrun.py", "--base-demo"],
    "warm": ["bench_perf_warm.py"],
}


def main(argv: list[str]) -> int:
    wanted = argv or list(AREAS)
    unknown = [a for a in wanted if a not in AREAS]
    if unknown:
        print(f"unknown area(s) {unknown}; expected some of {list(AREAS)}", file=sys.stderr)
        return 2
    failed = []
    for area in wanted:
        script, *args = AREAS[area]
        t0 = time.perf_counter()
        print(f"== {area}: {script} {' '.join(args)}", flush=True)
        rc = subprocess.call([sys.executable, str(HERE / script), *args], cwd=HERE.parent)
        print(f"== {area}: exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
        if rc != 0:
            failed.append(area)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
