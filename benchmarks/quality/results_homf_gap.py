"""Where HOMF's gap to the weighted factorizations comes from (MovieLens-100K).

    python benchmarks/quality/results_homf_gap.py [--splits 5] [--budget 16]

HOMF factorizes f_T(A), a polynomial of the random-walk matrix A of the user-item graph
(paper 004), with every node pair counted alike. Under the ranking protocol of docs/results.md
it trails the weighted factorizations by about 20%. Three rows separate the candidate causes,
every one tuned by ``fastpu.select.tune`` on the training part exactly as in the result tables:

- **HOMF, T = 1**: no walk beyond one step; f_1(A) = A, the transition probabilities. If it
  trails as much as tuned HOMF does, the higher powers are not the cause;
- **SQ-SQ**: ocmf's square loss on the 0/1 matrix with every pair weighted alike (paper 002's
  SQ-SQ, LEML's formulation: ρ = 1, ā = 0, only λ searched) — HOMF's loss and weighting on the
  unnormalised targets. If it scores with SQ-wSQ, uniform weighting is not the cause either,
  and what is left is the target: random-walk probabilities (each user's positives divided by
  their count, each item's likewise) instead of the positives themselves;
- **SQ-wSQ**: the weighted square loss of the tables.

Writes ``docs/results/homf-gap.md`` and ``.json`` (per-split rows, as results_compare does).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)                                 # results_compare, beside this script
sys.path.insert(0, os.path.join(HERE, ".."))

import fastpu as fp  # noqa: E402
from fastpu.model_selection.compare import CompareResult, compare  # noqa: E402

from _common import RESULTS_DOCS, load_data  # noqa: E402

OUT = str(RESULTS_DOCS / "homf-gap")
SQ_SQ = {"loss": "square", "rho": 1.0, "a_bar": 0.0,
         "space": {"k": [16, 32, 64, 128, 256, 512], "lam": stats.loguniform(0.1, 100.0)}}
ENTRIES = [("HOMF", "homf", {}), ("HOMF, T = 1", "homf", {"T": 1}),
           ("SQ-SQ", "ocmf", SQ_SQ), ("SQ-wSQ", "ocmf", {"loss": "square"})]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--budget", type=int, default=16)
    args = ap.parse_args()
    data = fp.datasets.binarize(load_data("ml-100k"))
    rows = []
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    for s in range(args.splits):
        res = compare(data, ENTRIES, splits=1, seed=s, budget=args.budget, verbose=True)
        rows += [dict(r, split=s) for r in res.rows]
    wall = time.perf_counter() - t0
    desc = res.description.replace("; 1 random ", f"; {args.splits} random ").replace(
        f"split (seed {args.splits - 1})", f"splits (seeds 0..{args.splits - 1})")
    full = CompareResult(rows=rows, labels=[e[0] for e in ENTRIES], description=desc)
    homf_t = [r["best_params"].get("T") for r in rows if r["label"] == "HOMF"]
    head = (f"Command: `python benchmarks/quality/results_homf_gap.py --splits {args.splits} --budget "
            f"{args.budget}` ({wall / 60:.0f} min; quality, not timing: load average "
            f"{load0[0]:.1f} → {os.getloadavg()[0]:.1f}). Tuned HOMF's T per split: {homf_t}.")
    with open(OUT + ".md", "w") as fh:
        fh.write("\n".join([head, "", full.to_markdown(), ""]))
    with open(OUT + ".json", "w") as fh:
        json.dump(dict(description=desc, labels=full.labels, rows=rows, head=head), fh, indent=1,
                  default=lambda o: o.item() if isinstance(o, np.generic) else str(o))
    print(open(OUT + ".md").read())


if __name__ == "__main__":
    main()
