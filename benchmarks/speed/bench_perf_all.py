"""Run the reports behind docs/performance.md's table of goals, one after another.

    python benchmarks/speed/bench_perf_all.py            # all six (about 20 minutes on 2 cores)
    python benchmarks/speed/bench_perf_all.py ocmf csrr  # a subset

The table in "Memory, first run and the slow iterations" rests on the ``bench_perf_<area>.py``
scripts beside this one; each measures its ratios within its own run (configurations taking
turns) and writes ``docs/benchmarks/bench_perf_<area>.md``. Running them one at a time, on a quiet
machine, keeps them from competing for the cores. ``bench_perf_20m.py`` (the page's first section,
about 40 minutes) is run on its own.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
AREAS = {
    "ocmf": ["bench_perf_ocmf.py"],
    "fbgd": ["bench_perf_fbgd.py"],
    "homf": ["bench_perf_homf.py"],
    "csrr": ["bench_perf_csrr.py"],
    "firstrun": ["bench_perf_firstrun.py", "--base-demo"],
    "warm": ["bench_perf_warm.py"],
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("areas", nargs="*", metavar="AREA",
                    help=f"the reports to run (default all): {', '.join(AREAS)}")
    args = ap.parse_args(argv)
    unknown = [a for a in args.areas if a not in AREAS]
    if unknown:
        ap.error(f"unknown area(s) {', '.join(unknown)}; expected some of {', '.join(AREAS)}")
    failed = []
    for area in args.areas or list(AREAS):
        script, *extra = AREAS[area]
        t0 = time.perf_counter()
        print(f"== {area}: {script} {' '.join(extra)}", flush=True)
        rc = subprocess.call([sys.executable, str(HERE / script), *extra], cwd=HERE.parent.parent)
        print(f"== {area}: exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
        if rc != 0:
            failed.append(area)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
