"""Speed of fastpu.ocmf: efficient vs dense objective, scaling at fixed |Ω+|, implicit's ALS, threads.

Run from the repository root::

    python benchmarks/speed/bench_ocmf_speed.py          # everything, < 10 min on 2 quiet cores
    python benchmarks/speed/bench_ocmf_speed.py --quick  # tiny sizes, smoke run (< 1 min)

Writes ``docs/benchmarks/bench_ocmf_speed.md`` (tables) and ``docs/benchmarks/bench_ocmf_speed.png``
(plot of part a), overwriting them. Parts:

(a) objective + gradient of one sub-problem (LR-wSQ, k = 32, ~20 positives per row): the
    efficient O(|Ω+|k + mk²) path (``ocmf.SubProblem``) against a dense O(mnk) numpy
    reference, as m = n grows; the two agree to 1e-8 relative (checked at every size).
(b) time per outer iteration as m·n grows 16× at fixed |Ω+| (LR-wSQ on the row-wise fast
    path, and LR-wSQ with a user graph solved by TRON; implicit's ALS as a reference).
(c) time per outer iteration against implicit's AlternatingLeastSquares on the same
    50,000 × 20,000 matrix with 2,000,000 positives, k = 64, 2 threads (float64 and float32
    factors), with a profile of where fastpu's iteration goes (the library's side updates).

(b) and (c) let their configurations take turns over several rounds, so that a slow spell of
a shared machine falls on all of them, and report the ratio of each round next to the
ratio of the pooled medians.
(d) fastpu (and implicit) at 1 and 2 threads on the (c) matrix.

Each experiment has its own module beside this script: ``_ocmf_speed_a.py``,
``_ocmf_speed_b.py``, ``_ocmf_speed_cd.py``; ``_ocmf_speed_report.py`` writes the report and
``_ocmf_speed_common.py`` holds the configuration they share (the helpers come from
``benchmarks/_common.py``).
"""


from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _ocmf_speed_report as report  # noqa: E402
from _ocmf_speed_a import efficient_fun_grad, part_a, plot_a  # noqa: E402
from _ocmf_speed_b import part_b  # noqa: E402
from _ocmf_speed_cd import part_cd  # noqa: E402
from _ocmf_speed_common import (FULL, QUICK, RHO, THREADS, _setup, hardware,  # noqa: E402
                                hardware_line, log, ocmf, powerlaw_pu, random_graph)
from _common import DOCS, git_state  # noqa: E402


def warm_up():
    """Compile (or load from numba's cache) every kernel the timed runs use, on tiny problems."""
    t0 = time.perf_counter()
    Y = powerlaw_pu(60, 40, 400, seed=0)
    S = random_graph(60, 4, seed=0)
    for th in (1, THREADS):
        for loss in ("square", "logistic"):
            for dtype in ("float64", "float32"):
                ocmf.fit(Y, 8, loss=loss, rho=RHO, n_iter=2, n_threads=th, dtype=dtype)
                ocmf.fit(Y, 8, loss=loss, rho=RHO, user_graph=S, lam_graph=1.0, n_iter=2,
                         n_threads=th, dtype=dtype)
    setup, _ = _setup(Y, "logistic")
    efficient_fun_grad(setup, np.ones((60, 8)), np.ones((40, 8)))
    return time.perf_counter() - t0



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, smoke run (< 1 minute)")
    ap.add_argument("--out", default=None,
                    help="directory for bench_ocmf_speed.md and .png (default: docs/benchmarks/; with "
                         "--quick a temporary directory, so a smoke run never overwrites the "
                         "real tables)")
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.out is None:
        args.out = tempfile.mkdtemp(prefix="bench_ocmf_quick_") if args.quick else \
            str(DOCS)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()
    report.GIT_STATE = git_state()
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
    report.write_report(md, hw, cfg, args.quick, a, b, c, elapsed, warm)
    log(f"wrote {md} and bench_ocmf_speed.png in {elapsed / 60:.1f} min")


if __name__ == "__main__":
    main()
