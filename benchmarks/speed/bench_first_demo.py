"""First run as a new user meets it: the first `fastpu demo` and each method's first fit.

    python benchmarks/speed/bench_first_demo.py --python /path/to/fresh-venv/bin/python [--rounds 1]

Run it with the Python of a fresh virtual environment where the README's first command
(``pip install ".[data]"``) installed fastpu. Every measurement starts a new process with
``FASTPU_CACHE_DIR`` pointed at a new, empty folder, so numba compiles every kernel it uses:

* ``fastpu demo`` (its defaults): wall seconds, lines printed (stdout + stderr), the first-run
  notice it printed, the seconds it reports per configuration;
* each method's first default fit (``fastpu.<method>.fit(Y, 16)`` on a 2,000 × 1,000 matrix of
  40,000 positives, CSRR variant "e"), and the same fit again in a second process that loads
  the cache: their difference is the compile time quoted by the first-run notice
  (``compile_seconds`` in fastpu/_core/registry.py).

Writes docs/benchmarks/bench_first_demo.md with the machine's load average before and after each
step.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import DOCS, demo_table_rows, provenance  # noqa: E402

FIT = r"""
import time, warnings
warnings.simplefilter("ignore")
import fastpu as fp
Y = fp.datasets.synthetic(2000, 1000, rank=8, density=0.02, seed=0).Y
fit = getattr(fp, {method!r}).fit
t = time.perf_counter()
fit(Y, 16, **{kwargs!r})
print(time.perf_counter() - t)
"""

KWARGS = {"ocmf": {}, "fbgd": {}, "csrr": {"variant": "e"}, "homf": {}}


def _load() -> float:
    return os.getloadavg()[0]


def _run(python: str, args: list[str], cache: str, cwd: str) -> tuple[float, str, str]:
    env = dict(os.environ, FASTPU_CACHE_DIR=cache)
    env.pop("PYTHONPATH", None)
    env.pop("NUMBA_CACHE_DIR", None)
    t = time.perf_counter()
    proc = subprocess.run([python, *args], env=env, cwd=cwd, capture_output=True, check=True)
    # bytes, decoded as they are: text mode would turn the progress line's carriage returns
    # into line ends
    return time.perf_counter() - t, proc.stdout.decode(), proc.stderr.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="the Python of a fresh virtual environment")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default=str(DOCS), help="folder of the report (default docs/benchmarks/)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="fastpu-first-")
    rows = []
    demo_rows = []
    for r in range(args.rounds):
        load0 = _load()
        secs, out, err = _run(args.python, ["-m", "fastpu", "demo"], f"{work}/demo{r}", work)
        lines = out.count("\n") + err.count("\n")
        notice = next((ln for ln in err.splitlines() if ln.startswith("fastpu: compiling")), "")
        # the table's last column is the seconds
        per = {ln.split("  ")[0].strip(): ln.split()[-1] for ln in demo_table_rows(out)}
        demo_rows.append((secs, lines, notice, per, load0, _load()))
        for method, kw in KWARGS.items():
            code = FIT.format(method=method, kwargs=kw)
            cache = f"{work}/{method}{r}"
            l0 = _load()
            cold_wall, cold, _ = _run(args.python, ["-c", code], cache, work)
            warm_wall, warm, _ = _run(args.python, ["-c", code], cache, work)
            rows.append((method, float(cold), float(warm), cold_wall, warm_wall, l0, _load()))
    py = subprocess.run([args.python, "-c", "import sys, numba, numpy; print(sys.version.split()[0], "
                         "numba.__version__, numpy.__version__)"], capture_output=True, text=True).stdout.split()
    lines = [
        "# First run as a new user meets it: `fastpu demo` and each method's first fit",
        "",
        provenance(),
        "",
        f"**Machine:** {platform.machine()}, {os.cpu_count()} cores; Python "
        f"{py[0]}, numba {py[1]}, numpy {py[2]}, in a fresh virtual environment where the README's "
        "first command installed fastpu (no tqdm: the plain progress line). Every process below "
        "started with `FASTPU_CACHE_DIR` pointed at a new, empty folder.",
        "",
        "Command: `python benchmarks/speed/bench_first_demo.py --python <fresh venv>/bin/python`. The "
        "1-minute load average before and after each step is given: on a machine shared "
        "with other work, seconds grow with the load (this script's own processes keep it near 1).",
        "",
        "## `fastpu demo`, empty kernel cache",
        "",
        "| wall s | lines printed (stdout + stderr) | load before → after |",
        "|---|---|---|",
    ]
    for secs, n, notice, per, l0, l1 in demo_rows:
        lines.append(f"| {secs:.1f} | {n} | {l0:.1f} → {l1:.1f} |")
    secs, n, notice, per, *_ = demo_rows[-1]
    lines += ["", f"The notice it printed first: `{notice}`", "",
              "Seconds the demo reported per configuration (the first fit of each method includes "
              "its compiling):", "", "| configuration | seconds |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in per.items()]
    lines += ["", "## Each method's first fit, empty cache, then cached", "",
              "`fastpu.<method>.fit(Y, 16)` on 2,000 × 1,000 with 40,000 positives (CSRR variant "
              "\"e\"), seconds of the fit alone (import excluded); each in its own empty cache.", "",
              "| method | first fit (compiling) | same fit, cache loaded | compile ≈ | load before → after |",
              "|---|---|---|---|---|"]
    for method in KWARGS:
        mine = [x for x in rows if x[0] == method]
        cold = statistics.median(x[1] for x in mine)
        warm = statistics.median(x[2] for x in mine)
        lines.append(f"| {method} | {cold:.1f} | {warm:.2f} | {cold - warm:.1f} | "
                     f"{mine[-1][5]:.1f} → {mine[-1][6]:.1f} |")
    text = "\n".join(lines) + "\n"
    (pathlib.Path(args.out) / "bench_first_demo.md").write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
