"""RecBole's MovieLens-1M protocol: one fixed iALS setting at high rank, scored every epoch.

    python benchmarks/quality/results_recbole_epochs.py [--seeds 1,4] [--ks 1024] [--epochs 32]

A check of what ``results_recbole.py``'s ``tune("ocmf")`` chose: on the splits given (the same
splits, drawn by that script's ``recbole_split``), ocmf is fitted with iALS's weighting at the
first setting tune's rank ladder tries for that family (square loss, ``negatives="all"``,
``a_bar=0``, ``nu=1``, ρ = 0.6, λ = 0.006) at each rank of ``--ks``, for ``--epochs`` epochs.
After every epoch the model is scored on the validation part (training positives left out)
and on the test part (training and validation positives left out); the epoch kept is the one
best on validation, as tune keeps it, so the test part chooses nothing.

Writes ``docs/results/recbole-epochs.md`` and ``docs/results/recbole-epochs.json`` (every
epoch's two scores).
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fastpu as fp  # noqa: E402
from _common import RESULTS_DOCS, provenance, stamp  # noqa: E402
import results_recbole as R  # noqa: E402

#: the first setting of tune's iALS family (fastpu.ocmf's tuning families)
SETTING = dict(loss="square", negatives="all", a_bar=0.0, nu=1.0, rho=0.6, lam=0.006)


def curve(train, valid, test, k, epochs, seed, **fit_args):
    """[(validation NDCG@10, test NDCG@10)] after each epoch, and the fit's seconds
    (``fit_args``: further ``ocmf.fit`` arguments beside :data:`SETTING`)."""
    seen = sp.csr_array(train + valid)
    out = []

    def score(info):
        model = info["model"]()
        out.append((R.ndcg(model, train, valid), R.ndcg(model, seen, test)))

    t0 = time.perf_counter()
    fp.ocmf.fit(train, k, n_iter=epochs, seed=seed, callback=score, **SETTING, **fit_args)
    return out, time.perf_counter() - t0


def best_epoch(c):
    """The index of the epoch of ``c`` (a :func:`curve`) best on validation, earliest on ties."""
    return int(np.argmax([v for v, _ in c]))


def sweep(seeds, values, name, fit_curve):
    """{"seed/value": {"curve", "seconds"}} over RecBole's splits of ``seeds`` and ``values``
    (ranks, weight exponents, ...): ``fit_curve(train, valid, test, seed, value)`` gives a
    :func:`curve` and its seconds. Prints each one's epoch best on validation as it goes."""
    Y = R.positives()
    out = {}
    for seed in seeds:
        train, valid, test = R.recbole_split(Y, seed)
        for v in values:
            c, secs = fit_curve(train, valid, test, seed, v)
            out[f"{seed}/{v:g}"] = dict(curve=c, seconds=secs)
            b = best_epoch(c)
            print(f"split {seed} {name} = {v:g}: epoch {b + 1} best on validation "
                  f"({c[b][0]:.4f}), test {c[b][1]:.4f} ({secs:.0f} s)", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,4")
    ap.add_argument("--ks", default="1024")
    ap.add_argument("--epochs", type=int, default=32)
    ap.add_argument("--out", default=os.path.join(str(RESULTS_DOCS), "recbole-epochs"))
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    fp.set_num_threads(2)
    raw = dict(setting=SETTING, epochs=args.epochs, stamp=list(stamp()),
               load_start=[round(x, 2) for x in os.getloadavg()])
    raw["curves"] = sweep(seeds, ks, "k", lambda train, valid, test, seed, k: curve(
        train, valid, test, k, args.epochs, seed))
    raw["load_end"] = [round(x, 2) for x in os.getloadavg()]
    with open(args.out + ".json", "w") as fh:
        json.dump(raw, fh)
    tuned = {}
    path = os.path.join(str(RESULTS_DOCS), "recbole-ml1m.json")
    if os.path.exists(path):
        tuned = json.load(open(path))
    lines = ["# RecBole's MovieLens-1M protocol: iALS's first setting at high rank, every epoch", "",
             provenance([tuple(raw["stamp"])]), "",
             f"`python benchmarks/quality/results_recbole_epochs.py --seeds {args.seeds} --ks "
             f"{args.ks} --epochs {args.epochs}`; the setting: "
             + ", ".join(f"{key}={v}" for key, v in SETTING.items())
             + f". The epoch kept is the one best on validation. Load average (1, 5, 15 min) "
             f"{raw['load_start']} at the start and {raw['load_end']} at the end; the seconds "
             "are the fit's, with its per-epoch scoring.", "",
             "| split | k | epoch kept | validation NDCG@10 | test NDCG@10 | test at epoch 16 | "
             "`tune(\"ocmf\")`'s test (results_recbole) | EASE's test | seconds |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, row in raw["curves"].items():
        seed, k = key.split("/")
        c = row["curve"]
        b = best_epoch(c)
        at16 = f"{c[15][1]:.4f}" if len(c) >= 16 else ""
        t = tuned.get(f"ocmf/{seed}", {}).get("test")
        e = tuned.get(f"ease/{seed}", {}).get("test")
        lines.append(f"| {seed} | {k} | {b + 1} | {c[b][0]:.4f} | {c[b][1]:.4f} | {at16} | "
                     f"{'' if t is None else f'{t:.4f}'} | {'' if e is None else f'{e:.4f}'} | "
                     f"{row['seconds']:.0f} |")
    with open(args.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
