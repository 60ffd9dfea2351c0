"""Paper 004's protocol on MovieLens-1M: HOMF (T ≥ 2) against plain MF (T = 1).

    python benchmarks/quality/results_homf_004.py [--splits 3] [--mode exact] [--T 1,2,4,6,8]

Paper 004 (Shah, Rao, Ding, Sec. 4) factorizes the ratings of ML-1M with rank k = 10 for every
method, makes random 80/20 train/test splits of the ratings, cross-validates λ over
{10⁻⁴, ..., 10²} on 20% of the training data, takes walks of length T ∈ {2, 4, 6, 8} with the
exponential g, and scores each user's *rated* test items only, a test rating of 5 being
relevant (:func:`fastpu.metrics.evaluate_rated`). MF there is the T = 1 case (Table 2).

Here, for each split, every (T, λ) of the grid is fitted on the training part minus a random 20%
validation part of its ratings; after every outer iteration the model is scored on the
validation ratings (P@5 of ``evaluate_rated``); the best (λ, iteration) for T = 1 ("MF") and the
best (T, λ, iteration) over T ≥ 2 ("HOMF") are refitted on the whole training part and scored
once on the test ratings. Writes ``docs/results/homf-004-<mode>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import RESULTS_DOCS, load_data  # noqa: E402

import fastpu as fp  # noqa: E402
from fastpu.model_selection.metrics import evaluate_rated  # noqa: E402
from fastpu.model_selection.split import split_by_mask  # noqa: E402

OUT = str(RESULTS_DOCS)
LAMS = [10.0 ** e for e in range(-4, 3)]
KS = (5, 10)


def random_part(R, frac, rng):
    """A random ``frac`` of R's stored entries, as a sparse mask on R's pattern."""
    R = sp.csr_array(R)
    return sp.csr_array(((rng.random(R.nnz) < frac).astype(np.float64), R.indices, R.indptr),
                        shape=R.shape)


def fit_scored(R_fit, R_valid, T, lam, *, k, n_iter, mode, seed, threads):
    """Fit HOMF, scoring P@5 on the validation ratings after every iteration."""
    scores = []

    def cb(info):
        scores.append(evaluate_rated(info["model"](), R_valid, k=5, threshold=5.0,
                                     metrics=("precision",))["precision@5"])
        return False

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp.homf.fit(R_fit, k, T=T, lam=lam, g="exp", n_iter=n_iter, mode=mode, seed=seed,
                    n_threads=threads, callback=cb)
    return scores, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--mode", choices=("exact", "dense"), default="exact")
    ap.add_argument("--T", default="1,2,4,6,8")
    ap.add_argument("--n-iter", type=int, default=5)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    Ts = [int(t) for t in args.T.split(",")]
    R = load_data("ml-1m").Y
    started = time.perf_counter()
    rows, trials = [], []
    for s in range(args.splits):
        rng = np.random.default_rng(1000 + s)
        train, test = split_by_mask(R, random_part(R, 0.2, rng))
        fit_part, valid = split_by_mask(train, random_part(train, 0.2, rng))
        best = {}
        for T in Ts:
            for lam in LAMS:
                scores, secs = fit_scored(fit_part, valid, T, lam, k=args.k, n_iter=args.n_iter,
                                          mode=args.mode, seed=s, threads=args.threads)
                it = int(np.argmax(scores)) + 1
                rec = dict(split=s, T=T, lam=lam, scores=scores, best_iter=it,
                           best=float(scores[it - 1]), seconds=secs)
                trials.append(rec)
                fam = "MF (T = 1)" if T == 1 else "HOMF (T ≥ 2)"
                if fam not in best or rec["best"] > best[fam]["best"]:
                    best[fam] = rec
                print(f"[004] split {s + 1}/{args.splits} T={T} λ={lam:g}: valid P@5 "
                      f"{rec['best']:.4f} at iteration {it} ({secs:.1f}s)", file=sys.stderr, flush=True)
        for fam, rec in best.items():
            model = fp.homf.fit(train, args.k, T=rec["T"], lam=rec["lam"], g="exp",
                                n_iter=rec["best_iter"], mode=args.mode, seed=s, n_threads=args.threads)
            res = evaluate_rated(model, test, k=KS, threshold=5.0)
            rows.append(dict(family=fam, split=s, T=rec["T"], lam=rec["lam"], best_iter=rec["best_iter"],
                             valid=rec["best"], **{k: float(v) for k, v in res.items()}))
            print(f"[004] split {s + 1}: {fam} T={rec['T']} λ={rec['lam']:g} test P@5 "
                  f"{res['precision@5']:.4f}", file=sys.stderr, flush=True)
    wall = time.perf_counter() - started

    keys = [f"{m}@{k}" for m in ("precision", "recall", "map", "ndcg") for k in KS]
    fams = ["MF (T = 1)", "HOMF (T ≥ 2)"] if len(Ts) > 1 and 1 in Ts else sorted({r["family"] for r in rows})
    lines = [f"Command: `python benchmarks/quality/results_homf_004.py {' '.join(argv or sys.argv[1:])}` "
             f"({wall / 60:.0f} min). MovieLens-1M ratings ({R.shape[0]} × {R.shape[1]}, {R.nnz:,}); "
             f"{args.splits} random 80/20 splits of the ratings; k = {args.k}, g = exp, mode "
             f"\"{args.mode}\", {args.n_iter} outer iterations at most; λ ∈ 10⁻⁴ … 10², T ∈ {Ts}, "
             "chosen on a random 20% of each training part (P@5 of `evaluate_rated`); test: each "
             "user's rated test items ranked, rating 5 relevant. Mean ± std over the splits.", "",
             "| method | " + " | ".join(k.replace("precision", "P").replace("recall", "R")
                                         .replace("map", "MAP").replace("ndcg", "NDCG") for k in keys)
             + " | chosen (T, λ) per split |",
             "|---" + "|---:" * len(keys) + "|---|"]
    for fam in fams:
        rs = [r for r in rows if r["family"] == fam]
        cells = []
        for k in keys:
            v = np.array([r[k] for r in rs])
            cells.append(f"{v.mean():.4f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.4f}")
        chosen = ", ".join(f"({r['T']}, {r['lam']:g})" for r in rs)
        lines.append(f"| {fam} | " + " | ".join(cells) + f" | {chosen} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(OUT, exist_ok=True)
    tag = f"homf-004-{args.mode}"
    with open(os.path.join(OUT, f"{tag}.md"), "w") as fh:
        fh.write(text)
    with open(os.path.join(OUT, f"{tag}.json"), "w") as fh:
        json.dump(dict(rows=rows, trials=trials, wall_seconds=wall, args=vars(args)), fh, indent=1)
    print(text)


if __name__ == "__main__":
    main()
