"""Quality of ocmf's formulations against implicit's ALS, tuned with the same budget.

For each data set (MovieLens-100K; CiaoDVD without and with its trust graph):
an 80/20 per-user holdout gives train/test; a further 80/20 holdout of train gives
a validation split. Every method gets the same number of grid points, chosen on
the validation split by P@5, refitted on the whole training split and scored on
the test split (P@5, nDCG@5, AUC; training items excluded from the ranking).

Run: ``python benchmarks/quality/bench_ocmf_quality.py`` (writes
docs/benchmarks/bench_ocmf_quality.md); ``--quick`` for a smoke run on a small grid (its report in
a temporary folder).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import DOCS, hardware_line, load_data, provenance, require  # noqa: E402

import fastpu as fp  # noqa: E402


def grid(space):
    keys = list(space)
    return [dict(zip(keys, vals)) for vals in itertools.product(*space.values())]


def als_model(Y_train, params, k, seed):
    import scipy.sparse as sp
    from implicit.cpu.als import AlternatingLeastSquares
    from threadpoolctl import threadpool_limits

    model = AlternatingLeastSquares(factors=k, iterations=params.get("iterations", 15),
                                    regularization=params["regularization"], alpha=params["alpha"],
                                    num_threads=fp.get_num_threads(), random_state=seed)
    with threadpool_limits(1, "blas"):          # as implicit's authors recommend
        model.fit(sp.csr_matrix(Y_train.astype(np.float32)), show_progress=False)
    return fp.Factorization(np.asarray(model.user_factors, dtype=np.float64),
                            np.asarray(model.item_factors, dtype=np.float64), method="implicit-als")


def ocmf_model(Y_train, params, k, seed, side):
    return fp.ocmf.fit(Y_train, k, seed=seed, **params, **side)


def tune_and_test(name, fit_fn, space, Y_train, Y_test, seed):
    """Pick the grid point with the best validation P@5; refit on train; score on test."""
    Y_fit, Y_val = fp.split.holdout(Y_train, test_frac=0.2, seed=seed + 1)
    best, best_p, log = None, -1.0, []
    for params in grid(space):
        model = fit_fn(Y_fit, params)
        p5 = fp.evaluate(model, Y_fit, Y_val, k=(5,), metrics=("precision",))["precision@5"]
        log.append((params, p5))
        if p5 > best_p:
            best, best_p = params, p5
    t0 = time.perf_counter()
    model = fit_fn(Y_train, best)
    secs = time.perf_counter() - t0
    res = fp.evaluate(model, Y_train, Y_test, k=(5,))
    return dict(method=name, params=best, val_p5=best_p, p5=res["precision@5"], ndcg5=res["ndcg@5"],
                auc=res["auc"], seconds=secs, n_grid=len(log))


def run(quick=False, seed=0):
    k = 16 if quick else 64
    n_iter = 3 if quick else 10
    lams = [1.0, 8.0] if quick else [0.5, 2.0, 8.0, 32.0]
    rhos = [0.03] if quick else [0.01, 0.1]
    # the same budget for every method: len(grid) points each
    spaces = {
        "SQ-SQ": {"loss": ["square"], "rho": [1.0], "a_bar": [0.0], "lam": lams + ([] if quick else [64.0, 128.0, 4.0, 16.0])},
        "SQ-wSQ": {"loss": ["square"], "rho": rhos, "lam": lams},
        "LR-wSQ": {"loss": ["logistic"], "rho": rhos, "lam": lams},
    }
    als_space = {"regularization": [0.01, 1.0] if quick else [0.01, 0.1, 1.0, 10.0],
                 "alpha": [1.0] if quick else [1.0, 10.0]}
    sets = [("ml-100k", False), ("ciao", False), ("ciao", True)]
    rows = []
    for data_name, with_graph in sets:
        data = load_data(data_name)
        Y = fp.datasets.binarize(data.Y)
        Y_train, Y_test = fp.split.holdout(Y, test_frac=0.2, seed=seed)
        label = data_name + (" + trust graph" if with_graph else "")
        print(f"== {label}: {Y.shape}, {Y.nnz} positives", file=sys.stderr, flush=True)
        for name, space in spaces.items():
            space = dict(space)
            side = {}
            if with_graph:
                side["user_graph"] = data.user_graph
                # lam_graph joins the grid; the grid size stays the same by halving lam choices
                space["lam"] = space["lam"][::2] if len(space["lam"]) > 1 else space["lam"]
                space["lam_graph"] = [0.1, 1.0]
            fit_fn = lambda Yt, p, side=side: ocmf_model(Yt, dict(p, n_iter=n_iter), k, seed, side)
            r = tune_and_test(name, fit_fn, space, Y_train, Y_test, seed)
            r["data"] = label
            rows.append(r)
            print(f"   {name}: {r}", file=sys.stderr, flush=True)
        if not with_graph:
            als_fit = lambda Yt, p: als_model(Yt, p, k, seed)
            r = tune_and_test("implicit ALS", als_fit, als_space, Y_train, Y_test, seed)
            r["data"] = label
            rows.append(r)
            print(f"   ALS: {r}", file=sys.stderr, flush=True)
        pop = fp.metrics.popularity(Y_train)
        res = fp.evaluate(pop, Y_train, Y_test, k=(5,))
        rows.append(dict(method="popularity", data=label, params={}, val_p5=None, p5=res["precision@5"],
                         ndcg5=res["ndcg@5"], auc=res["auc"], seconds=0.0, n_grid=0))
    return rows, dict(k=k, n_iter=n_iter, spaces=spaces, als_space=als_space)


def write(rows, settings, path):
    lines = ["# ocmf quality against implicit's ALS", "",
             provenance(), "",
             hardware_line(), "",
             f"Protocol: 80/20 per-user holdout of the binarised data (seed 0); a further 80/20 holdout of "
             f"the training split for validation. Each method picks its best grid point by validation "
             f"P@5, is refitted on the whole training split and scored on the test split, training items "
             f"excluded. k = {settings['k']}; ocmf runs {settings['n_iter']} alternating iterations, "
             f"implicit's ALS 15 iterations. Every method on a data set gets a grid of the same size "
             f"(listed under 'grid'); with the trust graph, λ_g joins the grid and the λ values are "
             f"thinned to keep the size.", "",
             "| data | method | P@5 | nDCG@5 | AUC | fit seconds | grid | chosen parameters |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(f"| {r['data']} | {r['method']} | {r['p5']:.4f} | {r['ndcg5']:.4f} | {r['auc']:.4f} | "
                     f"{r['seconds']:.1f} | {r['n_grid']} | {params} |")
    lines += ["", "LR-wSQ against the tuned ALS on the same split (differences of test scores):", ""]
    for data in dict.fromkeys(r["data"] for r in rows):
        by = {r["method"]: r for r in rows if r["data"] == data}
        base = by.get("implicit ALS") or next((r for r in rows if r["method"] == "implicit ALS"
                                               and data.startswith(r["data"])), None)
        if "LR-wSQ" in by and base is not None:
            lr = by["LR-wSQ"]
            lines.append(f"- {data}: P@5 {lr['p5'] - base['p5']:+.4f}, nDCG@5 {lr['ndcg5'] - base['ndcg5']:+.4f} "
                         f"(ALS on the same split, without side information)")
    lines += ["", "Generated by `python benchmarks/quality/bench_ocmf_quality.py`.", ""]
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small grid, report in a temporary folder")
    parser.add_argument("--out", default=None,
                        help="the report (default docs/benchmarks/bench_ocmf_quality.md)")
    args = parser.parse_args(argv)
    require("implicit", purpose="the ALS rows")
    out = args.out or (os.path.join(tempfile.mkdtemp(prefix="bench_ocmf_quality_"), "bench_ocmf_quality.md")
                       if args.quick else str(DOCS / "bench_ocmf_quality.md"))
    rows, settings = run(quick=args.quick)
    write(rows, settings, out)
    print(open(out).read())


if __name__ == "__main__":
    main()
