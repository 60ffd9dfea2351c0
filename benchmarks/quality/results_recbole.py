"""RecBole's MovieLens-1M full-ranking protocol, run on fastpu, beside RecBole's published table.

    python benchmarks/quality/results_recbole.py [--splits 5] [--budget 16] [--methods ease,ocmf,als]
        [--p user-oriented]

The protocol of RecBole's published MovieLens-1M leaderboard (RecBole v1.1.1, general
recommendation, "ml-1m", full ranking): ratings of 3 and above are the positives; users and items
with fewer than 10 positives are removed, repeatedly, until none is left (the result holds
834,449 positives, as RecBole's); each user's positives are shuffled and cut 80/10/10 into
training, validation and test parts (RecBole's ``RS`` split: the validation and test parts hold
⌊0.1 n⌋ each, the training part the rest); every item is ranked for every user, the user's
training positives (and at test time its validation positives) left out; metrics at 10 are
averaged over the users with a test positive. Each model is tuned on the validation part,
trained on the training part only, and evaluated once on the test part.

Here the split is drawn with ``numpy.random.default_rng(seed)`` for seeds 0, 1, ..., and
every method is tuned the way fastpu tunes it:

* ``ease``: λ from a log grid on the validation part;
* ``ocmf``: ``fastpu.select.tune("ocmf", ..., validation=(train, valid))`` (its rank ladder over
  iALS's square loss and LR-wSQ), then refitted on the training part for the best iteration;
  with ``--p user-oriented``, every trial and the refit use ``p="user-oriented"`` (each fit
  takes the counts of the part it is trained on);
* ``als``: implicit's ALS on a grid of factors × regularisation × α (the ``bench`` extra).

Writes ``docs/results/recbole-ml1m.md`` (the table, RecBole's published figures quoted beside
ours) and ``docs/results/recbole-ml1m.json`` (every split's scores and chosen settings).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fastpu as fp  # noqa: E402
from _common import RESULTS_DOCS, git_commit, load_data, require  # noqa: E402

OUT = str(RESULTS_DOCS)

#: RecBole v1.1.1's published MovieLens-1M table (test NDCG@10), as RecBole reports it
RECBOLE = {"ADMMSLIM": 0.2904, "EASE": 0.2865, "RecVAE": 0.2795, "SLIMElastic": 0.2782,
           "NCEPLRec": 0.2748, "MultiVAE": 0.2523, "LightGCN": 0.2476, "BPR": 0.2407,
           "ItemKNN": 0.2389}
EASE_GRID = (100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0)
ALS_GRID = dict(k=(128, 256), regularization=(0.1, 1.0, 10.0), alpha=(1.0, 5.0, 20.0))


def positives():
    """MovieLens-1M as RecBole's protocol keeps it: ratings ≥ 3, then the 10-core of users and
    items (repeated until stable)."""
    Y = sp.csr_array(load_data("ml-1m").Y)
    Y = sp.csr_array((Y >= 3).astype(np.float64))
    Y.eliminate_zeros()
    while True:
        rows, cols = np.diff(Y.indptr) >= 10, np.bincount(Y.indices, minlength=Y.shape[1]) >= 10
        if rows.all() and cols.all():
            return Y
        Y = sp.csr_array(Y[rows][:, cols])


def recbole_split(Y, seed):
    """(train, valid, test): each user's positives shuffled, then ⌊0.1 n⌋ to validation, ⌊0.1 n⌋
    to test and the rest to training (RecBole's ratio split; every user here has n ≥ 10)."""
    rng = np.random.default_rng(seed)
    parts = ([], [], [])
    for i in range(Y.shape[0]):
        items = Y.indices[Y.indptr[i]:Y.indptr[i + 1]]
        items = items[rng.permutation(items.size)]
        n = items.size
        n_valid = n_test = int(0.1 * n)
        cut = n - n_valid - n_test
        for part, sel in zip(parts, (items[:cut], items[cut:cut + n_valid], items[cut + n_valid:])):
            part.append(sel)

    def matrix(rows):
        r = np.repeat(np.arange(len(rows)), [x.size for x in rows])
        M = sp.csr_array((np.ones(r.size), (r, np.concatenate(rows))), shape=Y.shape)
        M.sort_indices()
        return M

    return tuple(matrix(p) for p in parts)


def ndcg(model, exclude, target):
    return float(fp.evaluate(model, exclude, target, k=(10,))["ndcg@10"])


def run_ease(train, valid, test, seen):
    scores = {lam: ndcg(fp.baselines.ease(train, lam=lam), train, valid) for lam in EASE_GRID}
    lam = max(scores, key=scores.get)
    t0 = time.perf_counter()
    model = fp.baselines.ease(train, lam=lam)
    fit_s = time.perf_counter() - t0
    return dict(test=ndcg(model, seen, test), valid=scores[lam], params=dict(lam=lam),
                fit_seconds=fit_s)


def run_ocmf(train, valid, test, seen, budget, seed, p=None):
    fixed = {} if p is None else dict(p=p)
    res = fp.select.tune("ocmf", train + valid, validation=(train, valid), budget=budget,
                         refit=False, seed=seed, **fixed)
    params = {k: v for k, v in res.best_params.items() if k != "n_iter"}
    k = params.pop("k")
    t0 = time.perf_counter()
    model = fp.ocmf.fit(train, k, n_iter=res.best_iter, seed=seed, **params)
    fit_s = time.perf_counter() - t0
    return dict(test=ndcg(model, seen, test), valid=res.best_score,
                params=dict(res.best_params, n_iter=res.best_iter), fit_seconds=fit_s,
                trials=[dict(params=t["params"], best_score=t["best_score"],
                             best_iter=t["best_iter"]) for t in res.trials])


def run_als(train, valid, test, seen, seed):
    best = None
    for k in ALS_GRID["k"]:
        for reg in ALS_GRID["regularization"]:
            for alpha in ALS_GRID["alpha"]:
                scores = []
                fp.baselines.implicit_als(train, k, regularization=reg, alpha=alpha, n_iter=15,
                                          seed=seed, callback=lambda info: scores.append(
                                              ndcg(info["model"](), train, valid)))
                it = int(np.argmax(scores)) + 1
                if best is None or scores[it - 1] > best[0]:
                    best = (scores[it - 1], dict(k=k, regularization=reg, alpha=alpha, n_iter=it))
    score, params = best
    p = dict(params)
    model = fp.baselines.implicit_als(train, p.pop("k"), seed=seed, **p)
    return dict(test=ndcg(model, seen, test), valid=score, params=params)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--methods", default="ease,ocmf,als")
    ap.add_argument("--p", default=None, choices=("user-oriented",),
                    help="ocmf's unlabeled user weights, fixed in every trial")
    ap.add_argument("--out", default=None, help="default: docs/results/recbole-ml1m[-<p>]")
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = os.path.join(OUT, "recbole-ml1m" + ("" if args.p is None else f"-{args.p}"))
    methods = args.methods.split(",")
    Y = positives()
    print(f"positives: {Y.shape[0]} users × {Y.shape[1]} items, {Y.nnz} positives", flush=True)
    path = args.out + ".json"
    raw = json.load(open(path)) if os.path.exists(path) else {}
    for seed in range(args.splits):
        train, valid, test = recbole_split(Y, seed)
        seen = sp.csr_array(train + valid)
        for name in methods:
            key = f"{name}/{seed}"
            if key in raw:
                continue
            t0 = time.perf_counter()
            if name == "ease":
                row = run_ease(train, valid, test, seen)
            elif name == "ocmf":
                row = run_ocmf(train, valid, test, seen, args.budget, seed, args.p)
            elif name == "als":
                row = run_als(train, valid, test, seen, seed)
            else:
                raise SystemExit(f"unknown method {name!r}")
            row["seconds"] = time.perf_counter() - t0
            raw[key] = row
            print(f"split {seed} {name}: test {row['test']:.4f} valid {row['valid']:.4f} "
                  f"{row['params']} ({row['seconds']:.0f} s)", flush=True)
            json.dump(raw, open(path, "w"), indent=1, default=float)
    write_report(raw, args, Y, methods)


def write_report(raw, args, Y, methods):
    commit, dirty = git_commit()
    labels = {"ease": "EASE (fastpu.baselines.ease)",
              "ocmf": "ocmf, fastpu.select.tune" + ("" if args.p is None else f' (p="{args.p}")'),
              "als": "implicit's ALS, grid"}
    lines = [
        "# RecBole's MovieLens-1M protocol",
        "",
        f"*Measured at commit `{commit}`{' (with uncommitted changes)' if dirty else ''} on "
        f"{time.strftime('%Y-%m-%d')} (load average {os.getloadavg()[0]:.1f} at the end); "
        f"`benchmarks/quality/results_recbole.py --splits {args.splits} --budget {args.budget}"
        f"{'' if args.p is None else ' --p ' + args.p}"
        f"{'' if args.methods == 'ease,ocmf,als' else ' --methods ' + args.methods}`.*",
        "",
        f"The positives: {Y.shape[0]:,} users × {Y.shape[1]:,} items, {Y.nnz:,} positives "
        "(RecBole's protocol; the module docstring of the script gives it). Test NDCG@10, mean ± "
        f"standard deviation over {args.splits} splits (seeds 0 to {args.splits - 1}).",
        "",
        "| model | test NDCG@10 (ours) | RecBole's published test NDCG@10 |",
        "|---|---:|---:|",
    ]
    ours = {}
    for name in methods:
        vals = [raw[f"{name}/{s}"]["test"] for s in range(args.splits) if f"{name}/{s}" in raw]
        if vals:
            ours[name] = vals
            pub = {"ease": RECBOLE["EASE"]}.get(name)
            lines.append(f"| {labels.get(name, name)} | {np.mean(vals):.4f} ± {np.std(vals):.4f}"
                         f" | {'' if pub is None else f'{pub:.4f}'} |")
    for model, value in RECBOLE.items():
        if model != "EASE":
            lines.append(f"| {model} (RecBole) | | {value:.4f} |")
    lines += ["", "Per split (test NDCG@10, and what tuning chose):", ""]
    for name in ours:
        for s in range(args.splits):
            row = raw.get(f"{name}/{s}")
            if row:
                shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in row["params"].items())
                lines.append(f"- {labels.get(name, name)}, split {s}: {row['test']:.4f} "
                             f"(validation {row['valid']:.4f}; {shown})")
    open(args.out + ".md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
