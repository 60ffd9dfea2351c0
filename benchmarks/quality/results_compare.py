"""Run ``fastpu.compare.compare`` for one data set and save what docs/results.md is built from.

    python benchmarks/quality/results_compare.py ml-100k [--splits 5] [--budget 16] [--threshold T]

Writes ``docs/results/<name>.md`` (the markdown table of :meth:`CompareResult.to_markdown`),
``docs/results/<name>.png`` (the bar chart) and ``docs/results/<name>.json`` (every per-split
row: test scores, the tuned parameters and iteration, seconds), where ``<name>`` is the data
set's name plus ``-t<T>`` when ``--threshold`` keeps only ratings ≥ T as positives.

The method list per data set is fixed here so that a re-run reproduces the report: the
baselines (popularity, WRMF through ocmf, implicit's ALS and BPR when installed), the two
ocmf losses of paper 002, fBGD, CSRR-e (and CSRR-I where the dense m × n iterate is small)
and HOMF; on CiaoDVD ocmf and HOMF are also run with the trust graph (FilmTrust too), and on
``ml-100k-features`` (MovieLens-100K with its user and item features) ocmf and fBGD are also
run with the features beside the ids.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import sys
import time

import numba
import numpy as np
import scipy.sparse as sp
from scipy import stats

import fastpu as fp
from fastpu._core import registry
from fastpu.model_selection.compare import CompareResult, compare

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import RESULTS_DOCS, git_state, load_data  # noqa: E402

OUT = str(RESULTS_DOCS)


def entries(name, data, Y):
    out = ["popularity", ("WRMF", "wrmf", {})]
    if importlib.util.find_spec("implicit") is not None:
        out += [("ALS (implicit)", "als", {}), ("BPR (implicit)", "bpr", {})]
    # the item-item baselines: their n × n matrix is refused, by name, where it does
    # not fit in memory
    out += [("EASE", "ease", {}), ("item-kNN", "itemknn", {})]
    # "ocmf": tune's own choice among its families (SQ-wSQ, iALS's weighting, LR-wSQ) by its
    # rank ladder; the paper's two formulations on their own beside it
    out += [("ocmf", "ocmf", {}), ("LR-wSQ", "ocmf", {"loss": "logistic"}),
            ("SQ-wSQ", "ocmf", {"loss": "square", "negatives": "full"}),
            ("fBGD", "fbgd", {}), ("CSRR-e", "csrr", {"variant": "e"})]
    if Y.shape[0] * Y.shape[1] <= 2_000_000:
        out.append(("CSRR-I", "csrr", {"variant": "I"}))
    out.append(("HOMF", "homf", {}))
    if data.user_graph is not None:
        G = data.user_graph
        out += [("LR-wSQ + graph", "ocmf", {"loss": "logistic", "user_graph": G}),
                ("HOMF + graph", "homf", {"user_graph": G})]
    if data.user_features is not None and data.item_features is not None:
        # ocmf's and fBGD's features replace the one-hot ids (user factors X W); with an identity
        # beside them every user and item keeps a factor of its own, so "+ features" adds to the
        # plain model instead of replacing it. HOMF takes graphs, not features.
        m, n = Y.shape
        X = sp.hstack([sp.identity(m, format="csr"), sp.csr_matrix(data.user_features)], format="csr")
        Z = sp.hstack([sp.identity(n, format="csr"), sp.csr_matrix(data.item_features)], format="csr")
        out += [("LR-wSQ + features", "ocmf", {"loss": "logistic", "user_features": X,
                                               "item_features": Z}),
                ("fBGD + features", "fbgd", {"user_features": X, "item_features": Z})]
    return out


# paper 002's SQ-SQ (LEML / GRALS): square loss on every entry alike, only λ searched
SQ_SQ = {"loss": "square", "rho": 1.0, "a_bar": 0.0, "space": {"lam": stats.loguniform(0.1, 100.0)}}


def multilabel_entries():
    """Paper 002's multi-label comparison: its three ocmf losses (SQ-SQ is LEML: square loss,
    ρ = 1, ā = 0, only λ searched) and fBGD, all with the instances' features, against label
    frequency."""
    return ["popularity",
            ("LR-wSQ", "ocmf", {"loss": "logistic"}),
            ("SQ-wSQ", "ocmf", {"loss": "square"}),
            ("SQ-SQ (LEML)", "ocmf", SQ_SQ),
            ("fBGD", "fbgd", {})]


def paper_003_entries():
    """Paper 003's own search (its Sec. V-A) beside fastpu's default spaces.

    CSRR: α = C_p / C_n with C_p ∈ {0.5, 0.55, ..., 0.95} (C_n = 1 − C_p, so α from 1 to 19),
    the regularisers drawn over the paper's 10⁻⁵ … 10² (log-uniform; the paper names one λ,
    fastpu's CSRR has λ1 for the nuclear norm and λ2 for the ℓ1 term: both are searched over
    that range; the step η stays fastpu's, from the Lipschitz bound, which guarantees descent,
    except in one CSRR-e entry that searches η over that range too, as the paper does), and for
    CSRR-e k ∈ {10, 15, ..., 50}. WRMF: k ∈ {10, 15, ..., 50}, λ ∈ {2⁻⁵, ..., 2⁰}, and "C = 1", read as a
    confidence of 1 + 1·r on the positives (α = 1).
    """
    cp = np.arange(0.5, 0.951, 0.05)
    alphas = [float(round(c / (1 - c), 6)) for c in cp]
    wide = stats.loguniform(1e-5, 1e2)
    csrr_space = {"alpha": alphas, "lam1": wide, "lam2": wide}
    wrmf_space = {"k": [10, 15, 20, 25, 30, 35, 40, 45, 50], "lam": [2.0 ** e for e in range(-5, 1)]}
    return ["popularity",
            ("WRMF", "wrmf", {}),
            ("WRMF, paper 003's grid", "wrmf", {"alpha": 1.0, "space": wrmf_space}),
            ("LR-wSQ", "ocmf", {"loss": "logistic"}),
            # paper 002's three losses on the same data (its ml100k is also ratings > 3)
            ("SQ-wSQ", "ocmf", {"loss": "square"}),
            ("SQ-SQ", "ocmf", SQ_SQ),
            ("CSRR-e", "csrr", {"variant": "e"}),
            ("CSRR-e, paper 003's search", "csrr",
             {"variant": "e", "space": dict(csrr_space, k=wrmf_space["k"])}),
            # and its step η over the same range (fastpu's default is the Lipschitz step)
            ("CSRR-e (paper 003's search and η)", "csrr",
             {"variant": "e", "space": dict(csrr_space, k=wrmf_space["k"], eta=wide)}),
            ("CSRR-I", "csrr", {"variant": "I"}),
            ("CSRR-I, paper 003's search", "csrr", {"variant": "I", "space": csrr_space})]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--protocol", choices=("holdout", "strong"), default="holdout",
                    help="strong: held-out users, fitted on the others and folded in")
    ap.add_argument("--users-frac", type=float, default=0.2,
                    help="with --protocol strong: the fraction of users held out")
    ap.add_argument("--only", default=None, help="comma-separated labels to run (default: all)")
    ap.add_argument("--skip", default=None, help="comma-separated labels to leave out")
    ap.add_argument("--merge-into", default=None, metavar="NAME",
                    help="with --only: afterwards replace those methods' rows in "
                         "docs/results/<NAME>.json (same splits) and rewrite its report")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite docs/results/<name>.md and .png from the saved .json, fit nothing")
    ap.add_argument("--resume", action="store_true",
                    help="keep the splits already in docs/results/<name>.json and run the rest")
    ap.add_argument("--split-ids", default=None, metavar="S,S",
                    help="run only these split numbers (each seeded by its number, as in a full "
                         "run), into docs/results/<name>-splits<S_S>.json: a second process can "
                         "take some splits while another runs the rest")
    ap.add_argument("--join-splits", default=None, metavar="NAME[,NAME]",
                    help="add to docs/results/<name>.json the splits it lacks from these files "
                         "(written by --split-ids) and rewrite its report; fit nothing")
    ap.add_argument("--paper", choices=("003",), default=None,
                    help="003: paper 003's protocol on ML-100K (ratings > 3 are the positives) "
                         "with its own search ranges beside fastpu's")
    args = ap.parse_args(argv)

    data = load_data(args.data)
    data = fp.datasets.binarize(data, threshold=args.threshold)
    Y = data.Y
    tag = args.data if args.threshold is None else f"{args.data}-t{args.threshold:g}"
    split, metric = "entries", "ndcg@10"
    if args.paper == "003":
        methods = paper_003_entries()
    elif data.user_features is not None and args.data == "yeast":
        # paper 002's protocol: held-out instances scored from their features (ocmf's intercept,
        # on by default, and fbgd's biases let a model learn how common each label is),
        # settings chosen by P@5
        methods, split, metric = multilabel_entries(), "rows", "precision@5"
    else:
        methods = entries(args.data, data, Y)
    if args.paper:
        tag += f"-paper{args.paper}"
    if args.protocol == "strong":
        tag += "-strong"
    all_labels = [m if isinstance(m, str) else m[0] for m in methods]
    if args.only:
        keep = set(args.only.split(","))
        methods = [m for m in methods if (m if isinstance(m, str) else m[0]) in keep]
    if args.skip:
        drop = set(args.skip.split(","))
        methods = [m for m in methods if (m if isinstance(m, str) else m[0]) not in drop]
    left_out = []
    if args.protocol == "strong":
        # held-out users are folded in: a method without a fold-in (BPR's pairs have no row
        # problem; CSRR-I's U is a dense m × n matrix, not factors) cannot be scored
        def folds(m):
            method, fixed = ("popularity", {}) if isinstance(m, str) else (m[1], m[2])
            return (registry.get(method).fold is not None
                    and not (method == "csrr" and fixed.get("variant", "e") != "e"))
        left_out = [m[0] for m in methods if not isinstance(m, str) and not folds(m)]
        methods = [m for m in methods if isinstance(m, str) or folds(m)]
    if args.only:
        tag += "-" + re.sub(r"[^A-Za-z0-9_-]+", "", "_".join(sorted(args.only.split(","))))
    split_ids = range(args.splits)
    if args.split_ids:
        split_ids = [int(v) for v in args.split_ids.split(",")]
        tag += "-splits" + "_".join(map(str, split_ids))
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, tag)
    if args.join_splits:
        join_splits(path, [os.path.join(OUT, name) for name in args.join_splits.split(",")],
                    argv or sys.argv[1:])
        return
    if args.report_only:
        write_report(path)
        return
    rows, wall = [], 0.0
    if args.resume and os.path.exists(path + ".json"):
        with open(path + ".json") as fh:
            saved = json.load(fh)
        rows, wall = saved["rows"], saved["wall_seconds"]
    labels = [m if isinstance(m, str) else m[0] for m in methods]
    # one split at a time (compare's split s uses seed s, so this equals one call with all the
    # splits), saved after each: a long run can be stopped and resumed with --resume
    for s in split_ids:
        if any(r["split"] == s for r in rows):
            continue
        t0 = time.perf_counter()
        extra = ({} if args.protocol == "holdout"
                 else dict(protocol="strong", users_frac=args.users_frac))
        res = compare(data, methods, splits=1, seed=s, budget=args.budget, split=split,
                      metric=metric, n_threads=args.threads, verbose=True, **extra)
        wall += time.perf_counter() - t0
        for r in res.rows:
            rows.append(dict(r, split=s))
        done = sorted({r["split"] for r in rows})
        desc = res.description
        if len(done) > 1:
            desc = count_splits(desc, done)
        head = (f"Command: `python benchmarks/quality/results_compare.py {shlex.join(argv or sys.argv[1:])}` "
                f"({wall / 60:.0f} min on this machine, {args.threads or numba.get_num_threads()} "
                f"numba thread(s)); fastpu {fp.__version__} at {git_state()}, "
                f"{time.strftime('%Y-%m-%d', time.gmtime())}.")
        if left_out:
            head += (f" Left out under this protocol (no fold-in for held-out users): "
                     f"{', '.join(left_out)}.")
        with open(path + ".json", "w") as fh:
            json.dump(dict(description=desc, labels=labels, rows=rows, wall_seconds=wall, head=head),
                      fh, indent=1, default=lambda o: o.item() if isinstance(o, np.generic) else str(o))
        write_report(path)
        print(f"wrote {path}.md, .json, .png ({len(done)} splits, {wall / 60:.1f} min)", flush=True)
    if args.merge_into:
        merge(path, os.path.join(OUT, args.merge_into), labels, all_labels, argv or sys.argv[1:])


def merge(src, dst, labels, all_labels, argv):
    """Replace ``labels``' rows of ``dst``.json by those of ``src``.json, split by split."""
    with open(src + ".json") as fh:
        new = json.load(fh)
    with open(dst + ".json") as fh:
        old = json.load(fh)
    splits = {r["split"] for r in old["rows"]}
    have = {(r["label"], r["split"]) for r in new["rows"]}
    missing = [(lab, sp_) for lab in labels for sp_ in splits if (lab, sp_) not in have]
    if missing:
        raise SystemExit(f"cannot merge: {src}.json lacks {missing}")
    rows = [r for r in old["rows"] if r["label"] not in labels]
    rows += [r for r in new["rows"] if r["split"] in splits]
    known = old["labels"] + [lab for lab in labels if lab not in old["labels"]]
    order = {lab: i for i, lab in enumerate(all_labels)}
    old["labels"] = sorted(known, key=lambda lab: order.get(lab, len(order)))
    rows.sort(key=lambda r: (r["split"], old["labels"].index(r["label"])))
    old["rows"] = rows
    old["head"] = (old.get("head", "") + f" Rows of {', '.join(labels)} re-run by "
                   f"`python benchmarks/quality/results_compare.py {shlex.join(argv)}`.")
    with open(dst + ".json", "w") as fh:
        json.dump(old, fh, indent=1)
    write_report(dst)


# "1 random per-user 80%/20% split (seed 3)", "strong generalization, 3 splits (seeds 0, 1, 2)"
SPLITS = re.compile(r"\b\d+ (random [^;:]*?)?splits? \(seeds? [0-9., ]+\)")


def count_splits(desc, done):
    """``compare``'s description of a run, made to name the splits ``done`` (more than one)."""
    return SPLITS.sub(lambda mo: f"{len(done)} {mo.group(1) or ''}splits "
                                 f"(seeds {', '.join(map(str, done))})", desc)


def join_splits(dst, srcs, argv):
    """Add to ``dst``.json the splits it lacks from each of ``srcs`` (the same methods, run by
    another process with ``--split-ids``), and rewrite its report."""
    with open(dst + ".json") as fh:
        out = json.load(fh)
    for src in srcs:
        with open(src + ".json") as fh:
            new = json.load(fh)
        if new["labels"] != out["labels"]:
            raise SystemExit(f"cannot join: {src}.json has {new['labels']}, {dst}.json {out['labels']}")
        have = {r["split"] for r in out["rows"]}
        out["rows"] += [r for r in new["rows"] if r["split"] not in have]
        out["wall_seconds"] += new["wall_seconds"]
        out["head"] += f" Splits {sorted({r['split'] for r in new['rows']} - have)} from: {new['head']}"
    done = sorted({r["split"] for r in out["rows"]})
    out["rows"].sort(key=lambda r: (r["split"], out["labels"].index(r["label"])))
    out["description"] = count_splits(out["description"], done)
    out["head"] += f" Joined by `python benchmarks/quality/results_compare.py {shlex.join(argv)}`."
    with open(dst + ".json", "w") as fh:
        json.dump(out, fh, indent=1)
    write_report(dst)


def versus(summary, labels, ref):
    """One line per method: its mean test P@5 and nDCG@10 against the reference's, in %."""
    out = []
    r5, r10 = summary[ref]["precision@5"][0], summary[ref]["ndcg@10"][0]
    for lab in labels:
        if lab == ref:
            continue
        p5, n10 = summary[lab]["precision@5"][0], summary[lab]["ndcg@10"][0]
        word = "beats" if p5 > r5 else "trails"
        out.append(f"- **{lab}** {word} {ref}: P@5 {p5:.4f} vs {r5:.4f} ({100 * (p5 / r5 - 1):+.1f}%), "
                   f"nDCG@10 {n10:.4f} vs {r10:.4f} ({100 * (n10 / r10 - 1):+.1f}%).")
    return out


def write_report(path):
    """docs/results/<name>.md and .png from the saved .json (no fitting): the table, and each
    method against tuned ALS (implicit's, else WRMF through ocmf)."""
    with open(path + ".json") as fh:
        saved = json.load(fh)
    desc = saved["description"]
    if len({r["split"] for r in saved["rows"]}) == 1:      # descriptions saved before the singular
        desc = desc.replace(" splits (seeds ", " split (seed ")
    full = CompareResult(rows=saved["rows"], labels=saved["labels"], description=desc)
    summ = full.summary()
    ref = next((lab for lab in ("ALS (implicit)", "WRMF") if lab in summ), None)
    lines = [saved.get("head", ""), "", full.to_markdown(), ""]
    if ref is not None:
        lines += [f"Against tuned {ref} (mean over the splits):", "", *versus(summ, full.labels, ref), ""]
    with open(path + ".md", "w") as fh:
        fh.write("\n".join(lines))
    full.plot(path + ".png")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
