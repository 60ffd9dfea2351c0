"""The ``fastpu`` command line: ``fastpu demo`` and ``fastpu run``.

``fastpu demo`` trains every method's demo configurations on MovieLens-100K
(80/20 per-user holdout of the binarised ratings), with per-iteration progress,
and prints precision, nDCG and training time next to a popularity baseline.

``fastpu run`` does the same for one method on a named data set or the user's
own CSV (``user,item[,value]``) or ``.npz`` file, with parameters given as
``--param name=value``, and can save the factors.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time

import numpy as np

METHODS = ("ocmf", "fbgd", "csrr", "homf")
DATASETS = ("ml-100k", "ml-1m", "ciao", "yeast")


def _module(name):
    import importlib

    return importlib.import_module(f"fastpu.{name}")


def _parse_param(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param expects name=value, got {text!r}")
    key, raw = text.split("=", 1)
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key.strip(), value


def _parse_ks(text):
    try:
        ks = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--at expects comma-separated integers, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"--at expects positive integers, got {text!r}")
    return ks


def _parse_frac(text):
    try:
        frac = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--test-frac expects a number in [0, 1), got {text!r}") from None
    if not 0.0 <= frac < 1.0:
        raise argparse.ArgumentTypeError(
            f"--test-frac expects a number in [0, 1) (0 trains on everything), got {text!r}")
    return frac


def _load_data(source, *, threshold=None):
    """(name, binarised Y, Dataset) from a data set name, a CSV or an .npz path."""
    from . import datasets

    if source in DATASETS:
        data = datasets.load(source)
    elif os.path.exists(source):
        if source.endswith(".npz"):
            data = datasets.load_npz(source)
        else:
            data = datasets.read_csv(source)
    else:
        raise ValueError(f"--data {source!r} is neither a data set name "
                         f"({', '.join(DATASETS)}) nor an existing .csv/.npz file")
    return data, datasets.binarize(data.Y, threshold)


def _table(rows, columns):
    """Plain-text table: rows are dicts, columns are (header, key, format)."""
    cells = [[h for h, _, _ in columns]]
    for row in rows:
        cells.append([("" if row.get(key) is None else fmt.format(row[key])) for _, key, fmt in columns])
    widths = [max(len(r[c]) for r in cells) for c in range(len(columns))]
    lines = []
    for r, cell in enumerate(cells):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cell, widths))))
        if r == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _evaluate_row(label, model, Y_train, Y_test, ks, seconds):
    from .metrics import evaluate

    res = evaluate(model, Y_train, Y_test, k=ks)
    row = {"method": label, "seconds": seconds, "auc": res.get("auc")}
    for k in ks:
        row[f"p@{k}"] = res[f"precision@{k}"]
        row[f"ndcg@{k}"] = res[f"ndcg@{k}"]
    return row


def _columns(ks):
    cols = [("method", "method", "{}")]
    for k in ks:
        cols += [(f"P@{k}", f"p@{k}", "{:.4f}"), (f"nDCG@{k}", f"ndcg@{k}", "{:.4f}")]
    cols += [("AUC", "auc", "{:.4f}"), ("seconds", "seconds", "{:.1f}")]
    return cols


def _fit(method, Y_train, kwargs, *, seed, verbose):
    mod = _module(method)
    kwargs = dict(kwargs)
    t0 = time.perf_counter()
    model = mod.fit(Y_train, **kwargs, seed=seed, verbose=verbose)
    return model, time.perf_counter() - t0


def cmd_demo(args):
    from . import split
    from .metrics import popularity

    data, Y = _load_data(args.data)
    Y_train, Y_test = split.holdout(Y, test_frac=0.2, seed=args.seed)
    ks = args.at
    print(f"fastpu demo: {data.name}, {Y.shape[0]} users × {Y.shape[1]} items, {Y.nnz} positives; "
          f"80/20 per-user holdout ({Y_train.nnz} train, {Y_test.nnz} test); "
          f"{_threads_note(args.threads)}", flush=True)
    rows = []
    t0 = time.perf_counter()
    rows.append(_evaluate_row("popularity", popularity(Y_train), Y_train, Y_test, ks,
                              time.perf_counter() - t0))
    wanted = METHODS if args.methods == "all" else tuple(args.methods.split(","))
    for method in wanted:
        if method not in METHODS:
            raise ValueError(f"--methods: unknown method {method!r}; expected one of {', '.join(METHODS)}")
        configs = getattr(_module(method), "demo_configs", None)
        if configs is None:
            print(f"-- {method}: no demo configuration, skipped", file=sys.stderr)
            continue
        for label, kwargs in configs():
            print(f"-- training {label}: {_kw_str(kwargs)}", file=sys.stderr, flush=True)
            model, secs = _fit(method, Y_train, kwargs, seed=args.seed, verbose=not args.quiet)
            rows.append(_evaluate_row(label, model, Y_train, Y_test, ks, secs))
            print(_table(rows[-1:], _columns(ks)).splitlines()[-1], file=sys.stderr, flush=True)
    print()
    print(_table(rows, _columns(ks)))
    return 0


def _threads_note(n):
    import numba

    return f"{n or numba.get_num_threads()} threads"


def _kw_str(kwargs):
    return ", ".join(f"{k}={v}" for k, v in kwargs.items())


def cmd_run(args):
    from . import split

    data, Y = _load_data(args.data, threshold=args.threshold)
    params = dict(args.param or [])
    method = args.method
    if "k" not in params and method in ("ocmf", "fbgd", "homf"):
        params["k"] = 32
    if args.test_frac > 0:
        Y_train, Y_test = split.holdout(Y, test_frac=args.test_frac, seed=args.seed)
    else:
        Y_train, Y_test = Y, None
    side = {}
    if method == "ocmf" and args.side:
        if data.user_graph is not None:
            side["user_graph"] = data.user_graph
        if data.user_features is not None:
            side["user_features"] = data.user_features
    elif method == "homf" and args.side and data.user_graph is not None:
        side["user_graph"] = data.user_graph
    print(f"fastpu run: {method} on {data.name} ({Y.shape[0]}×{Y.shape[1]}, {Y.nnz} positives), "
          f"{_kw_str(params)}{' + side information' if side else ''}", flush=True)
    model, secs = _fit(method, Y_train, {**params, **side}, seed=args.seed, verbose=not args.quiet)
    if Y_test is not None:
        row = _evaluate_row(method, model, Y_train, Y_test, args.at, secs)
        print(_table([row], _columns(args.at)))
    else:
        print(f"trained in {secs:.1f}s")
    if args.save:
        arrays = {"user_factors": model.user_factors, "item_factors": model.item_factors,
                  "objective": np.array([h["objective"] for h in model.history])}
        for key, val in model.extras.items():
            if isinstance(val, np.ndarray):
                arrays[key] = val
        if data.user_ids is not None:
            arrays["user_ids"] = np.asarray(data.user_ids)
        if data.item_ids is not None:
            arrays["item_ids"] = np.asarray(data.item_ids)
        np.savez(args.save, **arrays)
        print(f"saved {', '.join(arrays)} to {args.save}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="fastpu", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--seed", type=int, default=0, help="seed of the split and the models (default 0)")
        p.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
        p.add_argument("--at", type=_parse_ks, default=(5, 10), help="cut-offs k, e.g. 5,10 (default)")
        p.add_argument("--quiet", action="store_true", help="no per-iteration progress")

    demo = sub.add_parser("demo", help="train every method on MovieLens-100K and print a metrics table")
    demo.add_argument("--data", default="ml-100k", help="data set (default ml-100k)")
    demo.add_argument("--methods", default="all", help="comma-separated subset of " + ",".join(METHODS))
    common(demo)
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="train one method on a data set or your own file")
    run.add_argument("--method", choices=METHODS, default="ocmf")
    run.add_argument("--data", default="ml-100k",
                     help="data set name (" + ", ".join(DATASETS) + ") or a .csv (user,item[,value]) / .npz path")
    run.add_argument("--param", type=_parse_param, action="append", metavar="NAME=VALUE",
                     help="a fit argument, e.g. --param k=64 --param loss=logistic (repeatable)")
    run.add_argument("--side", action="store_true",
                     help="use the data set's side information (trust graph, features) where the method takes it")
    run.add_argument("--threshold", type=float, default=None,
                     help="positives are values >= threshold (default: every stored entry)")
    run.add_argument("--test-frac", type=_parse_frac, default=0.2,
                     help="per-user test fraction for evaluation; 0 trains on everything (default 0.2)")
    run.add_argument("--save", default=None, help="write the factors to this .npz file")
    common(run)
    run.set_defaults(func=cmd_run)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    from ._threads import limit_threads
    from .datasets import DataUnavailable

    try:
        with limit_threads(args.threads, blas=None):
            return args.func(args)
    except DataUnavailable as exc:
        print(f"fastpu: {exc}", file=sys.stderr)
        return 2
    except (TypeError, ValueError, OSError, FloatingPointError) as exc:   # input errors: exit 2
        print(f"fastpu: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
