"""Paper 002's multi-label protocol (Yu et al., Section 4, Table 3, Supp-2) on files you point it at.

    python benchmarks/quality/results_multilabel.py --data-dir DIR bibtex delicious
    python benchmarks/quality/results_multilabel.py --data-dir DIR --format xc --k 150 mydata

The data are not part of fastpu: download them yourself (the Mulan repository's multi-label
data sets, or the Extreme Classification Repository's) and give the folder. ``--format mulan``
(default) reads ``DIR/NAME-train.arff``, ``DIR/NAME-test.arff`` and ``DIR/NAME.xml``
(:func:`fastpu.datasets.read_arff`); ``--format xc`` reads ``DIR/NAME_train.txt`` and
``DIR/NAME_test.txt`` (:func:`fastpu.datasets.read_xc`). Instances are the rows of Y, labels
its columns, and the instances' features are ``user_features``.

The protocol, as the paper's Supp-2 describes it: LR-wSQ (``loss="logistic"``, ā = −1, the
weight ρ on every unlabeled entry), rank k of the paper's Table 2 (bibtex 150, delicious 300),
a grid log2 ρ ∈ {−9, −7, −5, −3, −1, 0} × log2 λ ∈ {−6, −4, −2, 0, 2, 4, 6} (λ_w = λ_h),
15 alternating iterations, each setting and iteration scored by P@5 on a fifth of the training
instances held out and scored from their features (``fp.select.search(..., split="rows",
metric="precision@5")``); the best (setting, iteration) is refitted on every training instance
and scored on the test instances from their features alone (cold start, ``fp.fold_in``).
Test instances without a label are left out (the paper's Supp-2.1). Each row is run with and
without ocmf's intercept (``--intercept both``). The paper's rule of taking the second-best
setting when the best one is poor at P@1–P@4 is not applied (it is a judgement, not a rule).
``--grid cross`` is a subset for data too large for the whole grid: ρ over its six values at
log2 λ = 0, then λ over its other six values at the ρ chosen there (12 settings instead of 42),
the best of the 12 by validation P@5 refitted. ``--rho``, ``--lam`` and ``--C`` give other
values (log2, comma-separated); ``--threads 1`` is what to use on a machine shared with other
work (numba's threads then wait on each other: two threads took 2.8 times the processor time of
one for the same bibtex fit at a load average of 6–8).

Beside it, scikit-learn's one-vs-rest logistic regression (liblinear, one binary problem per
label), its C chosen by P@5 on the same held-out fifth and refitted on every training instance.
That row needs scikit-learn, which is not a fastpu dependency (``pip install scikit-learn``);
``--no-sklearn`` leaves it out.

The script prints a markdown table (P@1, P@3, P@5 in percent, with the paper's LR-wSQ figures
as published beside them) and, with ``--out FILE``, writes every trial to a JSON file. It
records the commit, the date, the processor seconds of each search and the load average at the
start and the end: on a shared machine the wall time means little.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

import fastpu as fp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import git_commit  # noqa: E402

#: the paper's Table 2 (a): m, n, |Ω+|, d, nnz(X), m_test and the rank k it used
PAPER_COUNTS = {
    "bibtex": dict(m=4880, n=159, pos=11729, d=1836, nnz_x=335455, m_test=2512, k=150),
    "delicious": dict(m=12920, n=983, pos=245810, d=500, nnz_x=234740, m_test=3182, k=300),
}
#: the paper's LR-wSQ P@1, P@3, P@5 (Table 3 and Table Supp-2/3), in percent, as published
PAPER_P = {"bibtex": (63.22, 39.89, 29.50), "delicious": (67.47, 61.85, 56.73)}
RHO_LOG2 = (-9, -7, -5, -3, -1, 0)
LAM_LOG2 = (-6, -4, -2, 0, 2, 4, 6)
C_LOG2 = (-4, -2, 0, 2, 4, 6)
KS = (1, 3, 5)


def log2_list(text):
    return tuple(float(v) for v in text.split(","))


def read(fmt, folder, name):
    """(train, test) Datasets of ``name`` in ``folder``."""
    if fmt == "mulan":
        xml = os.path.join(folder, f"{name}.xml")
        return tuple(fp.datasets.read_arff(os.path.join(folder, f"{name}-{part}.arff"), xml)
                     for part in ("train", "test"))
    return tuple(fp.datasets.read_xc(os.path.join(folder, f"{name}_{part}.txt"))
                 for part in ("train", "test"))


def labelled(Y):
    return np.flatnonzero(np.diff(sp.csr_array(Y).indptr) > 0)


def held_out_fifth(Y, seed):
    """(rows fitted, rows held out): a fifth of the training instances that have a label."""
    cand = labelled(Y)
    rng = np.random.default_rng(seed)
    valid = np.sort(rng.choice(cand, size=int(round(0.2 * cand.size)), replace=False))
    return np.setdiff1d(np.arange(Y.shape[0]), valid), valid


def precisions(scores, Y):
    """P@1, P@3, P@5 (percent) of dense score rows against the 0/1 rows of Y."""
    Yd = sp.csr_array(Y).toarray() > 0
    top = np.argsort(-scores, axis=1, kind="stable")[:, :max(KS)]
    hits = np.take_along_axis(Yd, top, axis=1)
    return tuple(100.0 * float(hits[:, :k].sum(axis=1).mean() / k) for k in KS)


def counts(train, test):
    X, Y = train.user_features, train.Y
    return dict(m=Y.shape[0], n=Y.shape[1], pos=int(Y.nnz), d=X.shape[1],
                nnz_x=int(X.nnz if sp.issparse(X) else np.count_nonzero(X)),
                m_test=int(labelled(test.Y).size), m_test_all=int(test.Y.shape[0]),
                unlabelled_train=int(Y.shape[0] - labelled(Y).size))


def run_ocmf(train, test, rows, *, k, intercept, rhos, lams, grid, n_iter, seed, threads):
    """The search on the held-out fifth, the refit, the test P@k from features.

    ``grid="full"``: every (ρ, λ). ``grid="cross"``: ρ over ``rhos`` at λ = 1 (log2 λ = 0),
    then λ over the other ``lams`` at the ρ chosen there; the best of those settings (by
    validation P@5, its best iteration) is refitted."""
    fixed = dict(validation=rows, split="rows", metric="precision@5",
                 user_features=train.user_features, k=k, n_iter=n_iter, loss="logistic",
                 intercept=intercept, seed=seed, n_threads=threads, verbose=True, refit=False)
    cpu0, t0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=fp.ConvergenceWarning)
        if grid == "full":
            stages = [fp.select.search("ocmf", train.Y, {"rho": [2.0 ** v for v in rhos],
                                                         "lam": [2.0 ** v for v in lams]},
                                       **fixed)]
        else:
            first = fp.select.search("ocmf", train.Y, {"rho": [2.0 ** v for v in rhos],
                                                       "lam": [1.0]}, **fixed)
            stages = [first, fp.select.search(
                "ocmf", train.Y, {"rho": [first.best_params["rho"]],
                                  "lam": [2.0 ** v for v in lams if v != 0]}, **fixed)]
        trials = [t for res in stages for t in res.trials]
        # the winner of the search's own rule: the best validation score, the earlier trial
        # on a tie (stages in order)
        win = max(stages, key=lambda res: res.best_score)
        model = fp.ocmf.fit(train.Y, k, user_features=train.user_features, loss="logistic",
                            intercept=intercept, rho=win.best_params["rho"],
                            lam=win.best_params["lam"], n_iter=win.best_iter, seed=seed,
                            n_threads=threads)
    keep = labelled(test.Y)
    new = fp.fold_in(model, user_features=test.user_features[keep], n_threads=threads)
    p = precisions(new.scores(), test.Y[keep])
    return dict(method="ocmf LR-wSQ", intercept=intercept, k=k, p=p,
                best_params=dict(rho=win.best_params["rho"], lam=win.best_params["lam"]),
                best_iter=win.best_iter, valid_p5=100.0 * win.best_score,
                cpu_seconds=time.process_time() - cpu0, wall_seconds=time.perf_counter() - t0,
                trials=[dict(params=t["params"], scores=t["scores"], error=t["error"])
                        for t in trials])


def run_sklearn(train, test, rows, *, cs, seed):
    """One-vs-rest logistic regression (liblinear), C chosen by P@5 on the held-out fifth."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    def int32(F):       # scikit-learn's liblinear takes sparse matrices with 32-bit indices only
        if not sp.issparse(F):
            return F
        F = sp.csr_matrix(F)
        return sp.csr_matrix((F.data, F.indices.astype(np.int32), F.indptr.astype(np.int32)),
                             shape=F.shape)

    X, Y = int32(train.user_features), sp.csr_array(train.Y)
    X_test = int32(test.user_features)
    fit_rows, valid = rows

    def model(C):
        return OneVsRestClassifier(LogisticRegression(C=C, solver="liblinear",
                                                      random_state=seed))

    def fit(C, R):
        with warnings.catch_warnings():     # a label absent from R is predicted constant
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.simplefilter("ignore", category=ConvergenceWarning)
            return model(C).fit(X[R], Y[R].toarray().astype(int))

    cpu0, t0 = time.process_time(), time.perf_counter()
    trials = []
    for c in cs:
        p = precisions(fit(2.0 ** c, fit_rows).decision_function(X[valid]), Y[valid])
        trials.append(dict(C=2.0 ** c, valid_p=p))
        print(f"[multilabel] sklearn C=2^{c:g}: valid P@5 {p[2]:.2f}", file=sys.stderr, flush=True)
    best = max(trials, key=lambda t: t["valid_p"][2])
    keep = labelled(test.Y)
    clf = fit(best["C"], np.arange(X.shape[0]))
    p = precisions(clf.decision_function(X_test[keep]), test.Y[keep])
    return dict(method="scikit-learn one-vs-rest LR", p=p, best_params=dict(C=best["C"]),
                valid_p5=best["valid_p"][2], cpu_seconds=time.process_time() - cpu0,
                wall_seconds=time.perf_counter() - t0, trials=trials)


def table(results):
    """The markdown table of every data set's rows."""
    lines = ["| data set | method | P@1 | P@3 | P@5 | chosen (valid P@5) | CPU s |",
             "|---|---|---:|---:|---:|---|---:|"]
    for name, block in results.items():
        for r in block["rows"]:
            if r["method"].startswith("ocmf"):
                what = "ocmf LR-wSQ, " + ("intercept" if r["intercept"] else "no intercept")
                bp = r["best_params"]
                chosen = (f"log2 ρ = {np.log2(bp['rho']):g}, log2 λ = {np.log2(bp['lam']):g}, "
                          f"{r['best_iter']} it. ({r['valid_p5']:.2f})")
            else:
                what = r["method"]
                chosen = f"log2 C = {np.log2(r['best_params']['C']):g} ({r['valid_p5']:.2f})"
            cells = " | ".join(f"{v:.2f}" for v in r["p"])
            lines.append(f"| {name} | {what} | {cells} | {chosen} | {r['cpu_seconds']:.0f} |")
        if name in PAPER_P:
            cells = " | ".join(f"{v:.2f}" for v in PAPER_P[name])
            lines.append(f"| {name} | paper 002's LR-wSQ (as published) | {cells} | | |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="+", help="data set names (the files' stem)")
    ap.add_argument("--data-dir", required=True, help="the folder that holds the files")
    ap.add_argument("--format", choices=("mulan", "xc"), default="mulan")
    ap.add_argument("--k", type=int, default=None,
                    help="rank (default: the paper's Table 2 value for bibtex and delicious)")
    ap.add_argument("--intercept", choices=("both", "on", "off"), default="both")
    ap.add_argument("--grid", choices=("full", "cross"), default="full",
                    help="full: every (rho, lam); cross: rho at log2 lam = 0, then lam at the "
                         "chosen rho (a subset for large data)")
    ap.add_argument("--rho", type=log2_list, default=RHO_LOG2, help="log2 ρ values, comma-separated")
    ap.add_argument("--lam", type=log2_list, default=LAM_LOG2, help="log2 λ values, comma-separated")
    ap.add_argument("--C", type=log2_list, default=C_LOG2, help="log2 C values of scikit-learn's row")
    ap.add_argument("--n-iter", type=int, default=15)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--no-ocmf", action="store_true", help="scikit-learn's row alone")
    ap.add_argument("--out", default=None, help="write every trial to this JSON file")
    args = ap.parse_args(argv)
    head, dirty = git_commit()
    started = dict(date=datetime.date.today().isoformat(), commit=head, dirty=dirty,
                   load_start=os.getloadavg())
    variants = () if args.no_ocmf else {"both": (True, False), "on": (True,), "off": (False,)}[args.intercept]
    results = {}
    for name in args.names:
        train, test = read(args.format, args.data_dir, name)
        k = args.k or PAPER_COUNTS.get(name, {}).get("k")
        if k is None:
            ap.error(f"--k is required for {name!r} (the paper's rank is known for "
                     f"{', '.join(PAPER_COUNTS)} only)")
        got = counts(train, test)
        print(f"[multilabel] {name}: {got}; paper's Table 2: {PAPER_COUNTS.get(name)}",
              file=sys.stderr, flush=True)
        rows = held_out_fifth(train.Y, args.seed)
        block = dict(counts=got, paper_counts=PAPER_COUNTS.get(name), k=k, rows=[])
        for intercept in variants:
            r = run_ocmf(train, test, rows, k=k, intercept=intercept, rhos=args.rho,
                         lams=args.lam, grid=args.grid, n_iter=args.n_iter, seed=args.seed,
                         threads=args.threads)
            block["rows"].append(r)
            print(f"[multilabel] {name} intercept={intercept}: test P@1/3/5 "
                  f"{r['p'][0]:.2f} / {r['p'][1]:.2f} / {r['p'][2]:.2f} "
                  f"({r['cpu_seconds']:.0f} CPU s)", file=sys.stderr, flush=True)
        if not args.no_sklearn:
            r = run_sklearn(train, test, rows, cs=args.C, seed=args.seed)
            block["rows"].append(r)
            print(f"[multilabel] {name} sklearn: test P@1/3/5 "
                  f"{r['p'][0]:.2f} / {r['p'][1]:.2f} / {r['p'][2]:.2f}", file=sys.stderr, flush=True)
        results[name] = block
    meta = dict(started, load_end=os.getloadavg(), args={k: v for k, v in vars(args).items()})
    text = table(results)
    print(f"Measured {meta['date']} on commit {head}{' (uncommitted changes)' if dirty else ''}; "
          f"load average {meta['load_start'][0]:.1f} at the start, {meta['load_end'][0]:.1f} at "
          f"the end; {args.grid} grid over log2 ρ ∈ {list(args.rho)}, log2 λ ∈ "
          f"{list(args.lam)}, {args.n_iter} iterations.\n")
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(dict(meta=meta, results=results), fh, indent=1, default=float)


if __name__ == "__main__":
    main()
