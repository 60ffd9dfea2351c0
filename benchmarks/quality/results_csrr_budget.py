"""Is CSRR-e short of iterations? (In docs/results.md's MovieLens-1M table it picked the last of its
100 iterations on 4 of 5 splits.)

Run from the repository root::

    python benchmarks/quality/results_csrr_budget.py            # ML-1M, split 0, 400 iterations
    python benchmarks/quality/results_csrr_budget.py --data ml-100k --n-iter 200

One CSRR-e fit at its defaults (``fastpu.csrr.fit(train, 32)``, variant "e") on the training
part of split 0 (``fastpu.split.holdout(Y, 0.2, seed=0)``, every rating a positive), run for
``--n-iter`` outer iterations; the callback scores the model on the test part (nDCG@10 and P@5,
training positives excluded) after the iterations listed in ``--at``. Quality, not timing: the
seconds are the fit's own, the evaluation excluded. Writes ``docs/results/csrr-budget.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import RESULTS_DOCS, load_data  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="ml-1m")
    ap.add_argument("--n-iter", type=int, default=400)
    ap.add_argument("--at", default="25,50,100,200,400")
    ap.add_argument("--out", default=str(RESULTS_DOCS / "csrr-budget.md"))
    args = ap.parse_args()
    import fastpu as fp

    at = sorted({int(a) for a in args.at.split(",") if int(a) <= args.n_iter})
    data = fp.datasets.binarize(load_data(args.data))
    train, test = fp.split.holdout(data, 0.2, seed=0)
    rows = []
    clock = {"fit": 0.0, "last": time.perf_counter()}

    def callback(info):
        now = time.perf_counter()
        clock["fit"] += now - clock["last"]
        clock["calls"] = clock.get("calls", 0) + 1       # outer iterations done (one call each)
        it = clock["calls"]
        if it in at and "model" in info:
            got = fp.evaluate(info["model"](), train, test, k=[5, 10])
            rows.append((it, float(got["precision@5"]), float(got["ndcg@10"]), clock["fit"]))
            print(f"iteration {it}: P@5 {rows[-1][1]:.4f}  nDCG@10 {rows[-1][2]:.4f}  "
                  f"({clock['fit']:.1f} s of fitting)", flush=True)
        clock["last"] = time.perf_counter()
        return None

    fp.csrr.fit(train, 32, n_iter=args.n_iter, callback=callback)
    base = rows[[r[0] for r in rows].index(100)] if any(r[0] == 100 for r in rows) else rows[0]
    lines = [f"Command: `python benchmarks/quality/results_csrr_budget.py --data {args.data} --n-iter "
             f"{args.n_iter}`. CSRR-e at its defaults (k = 32), {args.data} split 0 "
             "(per-user 80/20, seed 0, every rating a positive); test scores after each listed "
             "outer iteration of one fit.", "",
             "| iterations | P@5 | nDCG@10 | nDCG@10 / at 100 | seconds of fitting |",
             "|---:|---:|---:|---:|---:|"]
    lines += [f"| {it} | {p5:.4f} | {nd:.4f} | {nd / base[2]:.3f} | {s:.1f} |" for it, p5, nd, s in rows]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
