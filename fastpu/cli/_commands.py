"""The sub-commands of the command line and its argument parser."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import sys
import time
from typing import Any

import numpy as np

from fastpu._core import registry
from fastpu._core import validation as V
from fastpu._core.files import check_save_path
from fastpu._core.names import did_you_mean, fit_names
from fastpu._core.progress import compile_notice, end_line, labelled
from fastpu._core.dataset import Dataset
from fastpu.datasets import NAMES as DATASETS

#: the methods the command line trains (fastpu._core.registry lists them)
METHODS = registry.names("method")


def _part(method: str, part: str) -> Any:
    """A part of ``method``'s registry entry (its fit, its demo configurations)."""
    return registry.get(method).resolve(part)


def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param expects name=value, got {text!r}")
    key, raw = text.split("=", 1)
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key.strip(), value


def _parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--at expects comma-separated integers, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"--at expects positive integers, got {text!r}")
    if max(ks) > V.INT_MAX:               # was evaluate's "k must be <= 2**62", naming k
        raise argparse.ArgumentTypeError(f"--at expects cut-offs of at most 2**62 (a list that long "
                                         f"holds every item), got {text!r}")
    return ks


def _check_metric(text: str) -> None:
    """--metric: 'auc' or '<name>@<k>' with a cut-off select can rank (a 30-digit cut-off was
    reported after tuning as "every trial failed")."""
    name, at, digits = text.partition("@")
    k = V.ascii_int(digits) if at else None
    if at and (k is None or k < 1 or k > V.INT_MAX):
        raise ValueError(f"--metric {text!r}: the cut-off after '@' must be an integer in [1, 2**62], "
                         "e.g. ndcg@10")


def _parse_frac(text: str) -> float:
    try:
        frac = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--test-frac expects a number in [0, 1), got {text!r}") from None
    if not 0.0 <= frac < 1.0:
        raise argparse.ArgumentTypeError(
            f"--test-frac expects a number in [0, 1) (0 trains on everything), got {text!r}")
    return frac


def _load_data(source: str, *, threshold: float | None = None, header: bool | None = None,
               option: str = "--data") -> tuple[Dataset, Any]:
    """(Dataset, binarised Y) from a data set name, a CSV or an .npz path."""
    from fastpu import datasets

    if source in DATASETS:
        data = datasets.load(source)
    elif os.path.exists(source):
        try:
            if source.endswith(".npz"):
                data = datasets.load_npz(source)
            else:
                data = datasets.read_csv(source, header=header)
        except ValueError as exc:          # the reader names the file; say which option gave it
            raise ValueError(f"{option}: {exc}") from None
    else:
        raise ValueError(f"{option} {source!r} is neither a data set name "
                         f"({', '.join(DATASETS)}) nor an existing .csv/.npz file"
                         f"{_closest_name(source, DATASETS)}")
    if threshold is None:
        _refuse_negative_values(data.Y, source, option)
    return data, datasets.binarize(data.Y, threshold)


def _closest_name(text: str, names: tuple[str, ...]) -> str:
    """``"; did you mean 'ml-100k'?"`` for a data set name written without its dash or in
    capitals (``ml100k``, ``ML-100K``), else the usual did-you-mean."""
    squash = {n.replace("-", "").replace("_", "").lower(): n for n in names}
    hit = squash.get(text.replace("-", "").replace("_", "").lower())
    return f"; did you mean {hit!r}?" if hit else did_you_mean(text, names)


def _refuse_negative_values(Y: Any, source: str, option: str) -> None:
    """Without --threshold every stored entry becomes a positive: a negative value (a dislike)
    is refused, as every fit refuses it, instead of being trained as a like."""
    data = np.asarray(Y.data)
    negative = int((data < 0).sum())
    if negative:
        raise ValueError(
            f"{option} {source!r} has {negative} negative stored value(s) (min {data.min():g}); "
            "without --threshold every stored entry would become a positive, a dislike trained "
            "as a like (fastpu's fits refuse negative values): pass --threshold T to keep the "
            "entries with value >= T as positives (e.g. --threshold 1)")


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
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


def _row_summary(row: dict[str, Any], columns: list[tuple[str, str, str]]) -> str:
    """One row as a labelled line (``-- label: P@5 0.3296  ...  seconds 0.2``), for progress
    output printed before the table and its header."""
    (_, label_key, _), *rest = columns
    cells = [f"{h} {fmt.format(row[key])}" for h, key, fmt in rest if row.get(key) is not None]
    return f"-- {row[label_key]}: " + "  ".join(cells)


def _evaluate_row(label: str, model: Any, Y_train: Any, Y_test: Any, ks: tuple[int, ...],
                  seconds: float) -> dict[str, Any]:
    from fastpu.model_selection.metrics import evaluate

    res = evaluate(model, Y_train, Y_test, k=ks)
    row = {"method": label, "seconds": seconds, "auc": res.get("auc")}
    for k in ks:
        row[f"p@{k}"] = res[f"precision@{k}"]
        row[f"ndcg@{k}"] = res[f"ndcg@{k}"]
    return row


def _columns(ks: tuple[int, ...]) -> list[tuple[str, str, str]]:
    cols = [("method", "method", "{}")]
    for k in ks:
        cols += [(f"P@{k}", f"p@{k}", "{:.4f}"), (f"nDCG@{k}", f"ndcg@{k}", "{:.4f}")]
    cols += [("AUC", "auc", "{:.4f}"), ("seconds", "seconds", "{:.1f}")]
    return cols


def _fit(method: str, Y_train: Any, kwargs: dict[str, Any], *, seed: int,
         verbose: bool) -> tuple[Any, float]:
    fit = _part(method, "fit")
    kwargs = dict(kwargs)
    t0 = time.perf_counter()
    model = fit(Y_train, **kwargs, seed=seed, verbose=verbose)
    return model, time.perf_counter() - t0


def cmd_demo(args: argparse.Namespace) -> int:
    from fastpu.model_selection import split
    from fastpu.model_selection.metrics import popularity

    data, Y = _load_data(args.data)
    Y_train, Y_test = split.holdout(Y, test_frac=0.2, seed=args.seed)
    ks = args.at
    print(f"fastpu demo: {data.name}, {Y.shape[0]} users × {Y.shape[1]} items, {Y.nnz} positives; "
          f"80/20 per-user holdout ({Y_train.nnz} train, {Y_test.nnz} test); "
          f"{_threads_note(args.threads)}", flush=True)
    rows = []
    legends = {"popularity": "every user's top items are the most popular ones (the floor)"}
    t0 = time.perf_counter()
    rows.append(_evaluate_row("popularity", popularity(Y_train), Y_train, Y_test, ks,
                              time.perf_counter() - t0))
    wanted = METHODS if args.methods == "all" else tuple(args.methods.split(","))
    for method in wanted:
        if method not in METHODS:
            raise ValueError(f"--methods: unknown method {method!r}; expected one of {', '.join(METHODS)}")
    compile_notice(list(wanted))
    helper = (_start_warmup(wanted, Y_train, force=args.background_compile == "on")
              if args.background_compile != "off" else None)
    try:
        _demo_fits(wanted, Y_train, Y_test, ks, rows, args, legends)
    finally:
        if helper is not None and helper.is_alive():
            helper.terminate()
            helper.join(5)
    if args.methods == "all":       # the baselines beside the methods (not with --methods)
        _demo_baselines(Y_train, Y_test, ks, rows, args, legends)
    end_line()
    print()
    print(_table(rows, _columns(ks)))
    print()
    width = max(len(row["method"]) for row in rows)
    for row in rows:
        print(f"{row['method']:<{width}}  {legends.get(row['method'], '')}")
    print("seconds: the fit's wall time; the first fit of each method in a process also compiles "
          "its numba kernels, unless they are cached (`fastpu warmup`).")
    return 0


def _start_warmup(wanted: tuple[str, ...], Y_train: Any, force: bool = False) -> Any:
    """On a machine with an idle second core, a spawned process that compiles the later methods'
    kernels (one iteration of each demo configuration, last first) while the demo trains the
    first ones: most of a first run is numba compiling (fastpu/cli/_warmup.py). Unless ``force``,
    not started when the other cores are busy (load average): it would only compete with the
    demo."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    if not force and (cores < 2 or load > cores - 1.5):
        return None
    from fastpu.cli import _warmup

    job_list = [(method, label, kw) for method in wanted
                for label, kw, _ in _part(method, "demo")()]
    return _warmup.start_background(job_list[::-1], Y_train)


def _demo_fits(wanted: tuple[str, ...], Y_train: Any, Y_test: Any, ks: tuple[int, ...],
               rows: list[dict[str, Any]], args: argparse.Namespace,
               legends: dict[str, str]) -> None:
    # one line per configuration: its progress while it trains (the label, the iteration, the
    # objective), replaced by its scores when it is done; --verbose adds the settings
    for method in wanted:
        for label, kwargs, legend in _part(method, "demo")():
            legends[label] = legend
            if args.verbose:
                print(f"-- training {label}: {_kw_str(kwargs)}", file=sys.stderr, flush=True)
            with labelled(f"-- {label}:"):
                model, secs = _fit(method, Y_train, kwargs, seed=args.seed, verbose=not args.quiet)
                rows.append(_evaluate_row(label, model, Y_train, Y_test, ks, secs))
            summary = _row_summary(rows[-1], _columns(ks))
            if _progress_line_open():
                end_line(summary)
            else:
                print(summary, file=sys.stderr, flush=True)


#: the baselines ``fastpu demo`` shows beside the methods: (label, registry name, fit
#: arguments, legend)
_DEMO_BASELINES: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("WRMF", "wrmf", dict(k=64, n_iter=10),
     "Hu, Koren and Volinsky's weighted MF (implicit's ALS objective): at its defaults, "
     "SQ-wSQ's objective times 6"),
    ("EASE", "ease", {}, "Steck's closed-form item-item model: the strongest simple baseline"),
)


def _demo_baselines(Y_train: Any, Y_test: Any, ks: tuple[int, ...], rows: list[dict[str, Any]],
                    args: argparse.Namespace, legends: dict[str, str]) -> None:
    """WRMF and EASE at their defaults, one row each, beside the methods."""
    for label, name, kwargs, legend in _DEMO_BASELINES:
        legends[label] = legend
        fit = registry.get(name).resolve("fit")
        with labelled(f"-- {label}:"):
            t0 = time.perf_counter()
            model = fit(Y_train, **kwargs, seed=args.seed, verbose=not args.quiet)
            rows.append(_evaluate_row(label, model, Y_train, Y_test, ks, time.perf_counter() - t0))
        summary = _row_summary(rows[-1], _columns(ks))
        if _progress_line_open():
            end_line(summary)
        else:
            print(summary, file=sys.stderr, flush=True)


def _progress_line_open() -> bool:
    from fastpu._core import progress

    return progress.line_open()


def cmd_cache(args: argparse.Namespace) -> int:
    from fastpu._core.cache import cache_dir, clear_cache

    if args.prune or args.clear:
        removed = clear_cache(stale=not args.clear)
        what = "every installation's" if args.clear else "deleted installations'"
        print(f"fastpu cache: removed {len(removed)} folder(s) of {what} compiled kernels"
              + "".join(f"\n  {p}" for p in removed))
    else:
        print(cache_dir())
    return 0


def cmd_warmup(args: argparse.Namespace) -> int:
    from fastpu.cli import _warmup
    from fastpu._core.cache import cache_dir

    wanted = METHODS if args.methods == "all" else tuple(args.methods.split(","))
    for method in wanted:
        if method not in METHODS:
            raise ValueError(f"--methods: unknown method {method!r}; expected one of {', '.join(METHODS)}")
    where = os.environ.get("NUMBA_CACHE_DIR") or str(cache_dir())
    print(f"fastpu warmup: compiling the kernels of {', '.join(wanted)} into {where} "
          f"with {args.processes} processes", flush=True)
    secs = _warmup.warm(wanted, processes=args.processes)
    print(f"done in {secs:.1f} s; later processes load the compiled kernels from the cache")
    return 0


def _threads_note(n: int | None) -> str:
    import numba

    return f"{n or numba.get_num_threads()} threads"


def _kw_str(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in kwargs.items())


# fit arguments the command line sets itself: --param would clash with them inside the fit
_OWN = {"seed": "--seed (e.g. --seed {value!r})",
        "verbose": "--quiet (per-iteration progress is on unless --quiet is given)"}


def _check_params(parser: argparse.ArgumentParser, method: str, params: dict[str, Any]) -> None:
    """Refuse --param names the method's fit does not take, before any data is loaded."""
    for key, option in _OWN.items():
        if key in params:
            parser.error(f"argument --param: {key} is set with {option.format(value=params[key])}, "
                         f"not --param {key}={params[key]!r}")
    fit = _part(method, "fit")
    names = fit_names(fit)
    if names is None:
        return
    names -= {*_OWN, "callback"}
    unknown = [key for key in params if key not in names]
    if unknown:
        current = sorted(names)
        hint = did_you_mean(unknown[0], current) if len(unknown) == 1 else ""
        parser.error(f"argument --param: {method}.fit takes no parameter{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(map(repr, unknown))}{hint}; it takes {', '.join(current)}")


def cmd_run(args: argparse.Namespace) -> int:
    from fastpu.model_selection import split

    params = dict(args.param or [])
    _check_params(args.parser, args.method, params)
    if "k" in params and registry.get(args.method).default_rank is not None:
        V.check_int(params["k"], name="k", minimum=1)      # before the data are loaded
    if args.save is not None:             # --save '' is an error, not "do not save"
        check_save_path(args.save, name="--save")     # before training, not after
    data, Y = _load_data(args.data, threshold=args.threshold, header=args.header)
    method = args.method
    entry = registry.get(method)
    rank = entry.rank_for(params)
    if "k" not in params and rank is not None:
        params["k"] = rank
    if args.test_frac > 0:
        Y_train, Y_test = split.holdout(Y, test_frac=args.test_frac, seed=args.seed)
    else:
        Y_train, Y_test = Y, None
    # the data set's side information the method's fit takes (--side)
    side = {name: getattr(data, name) for name in entry.side
            if args.side and getattr(data, name, None) is not None}
    print(f"fastpu run: {method} on {data.name} ({Y.shape[0]}×{Y.shape[1]}, {Y.nnz} positives), "
          f"{_kw_str(params)}{' + side information' if side else ''}", flush=True)
    compile_notice([method])
    if args.scheduler or args.workers:       # the same fit on a Dask cluster (fastpu.distributed)
        from fastpu import distributed
        kw = dict(params, method=method, seed=args.seed, verbose=not args.quiet, **side)
        t0 = time.perf_counter()
        model = distributed.fit(Y_train, kw.pop("k", None), client=args.scheduler,
                                n_workers=args.workers, **kw)
        secs = time.perf_counter() - t0
    else:
        model, secs = _fit(method, Y_train, {**params, **side}, seed=args.seed, verbose=not args.quiet)
    end_line()
    if Y_test is not None:
        row = _evaluate_row(method, model, Y_train, Y_test, args.at, secs)
        print(_table([row], _columns(args.at)))
    else:
        print(f"trained in {secs:.1f}s")
    if args.save is not None:
        model = dataclasses.replace(model, user_ids=data.user_ids, item_ids=data.item_ids)
        model.save(args.save)
        part = ("all positives" if Y_test is None else
                f"the {1 - args.test_frac:.0%} training split; --test-frac 0 trains on all of them")
        print(f"saved the {method} model ({model.shape[0]} users × {model.shape[1]} items"
              f"{', with ids' if data.user_ids is not None else ''}; trained on {part}) to "
              f"{args.save}; serve it with: fastpu recommend --model {args.save}")
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _parse_users(text: str, model: Any) -> tuple[list[Any], bool]:
    """The --users list as the model's ids (or row numbers when the model has no ids)."""
    tokens = [t.strip() for t in text.split(",") if t.strip()]
    if not tokens:
        raise ValueError(f"--users expects comma-separated user ids, got {text!r}")
    ids = model.user_ids
    if ids is None or np.asarray(ids).dtype.kind in "iu":
        what = "row numbers (the model has no user ids)" if ids is None else "integer user ids"
        try:
            return [int(t) for t in tokens], ids is not None
        except ValueError:
            raise ValueError(f"--users expects {what}, got {text!r}") from None
    return tokens, True


def _check_shared_ids(model: Any, data: Dataset, source: str) -> None:
    """--exclude-seen data that shares no user or no item id with the model is other data."""
    for side in ("user", "item"):
        theirs, ours = getattr(data, f"{side}_ids"), getattr(model, f"{side}_ids")
        if theirs is None or ours is None:
            continue
        if not {str(i) for i in theirs} & {str(i) for i in ours}:
            raise ValueError(
                f"--exclude-seen {source!r} shares no {side} id with the model (its {side}s e.g. "
                f"{[str(i) for i in theirs[:3]]}, the model's e.g. {[str(i) for i in ours[:3]]}); "
                "expected data about the model's users and items")


def cmd_recommend(args: argparse.Namespace) -> int:
    import dataclasses
    import warnings

    from fastpu.model import load_model, recommend

    if not os.path.exists(args.model):
        raise ValueError(f"--model {args.model!r}: no such file; write one with fastpu run --save")
    if args.out is not None:              # before any work, not after
        check_save_path(args.out, name="--out", example="recommendations.csv")
    try:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            model = load_model(args.model)
    except ValueError as exc:              # the reader names the file; say which option gave it
        raise ValueError(f"--model: {exc}") from None
    for note in notes:                     # a file that holds no training positives says so
        print(f"fastpu: {note.message}", file=sys.stderr)
    if args.users is None:
        users = None
        by_id = model.user_ids is not None
    else:
        users, by_id = _parse_users(args.users, model)
    seen = None
    if args.exclude_seen is not None:
        data, Y = _load_data(args.exclude_seen, threshold=args.threshold, header=args.header,
                             option="--exclude-seen")
        if by_id and model.item_ids is not None:
            _check_shared_ids(model, data, args.exclude_seen)
            seen = dataclasses.replace(data, Y=Y)
        else:
            seen = Y
    try:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            items, scores = recommend(model, seen, users, n=args.n, ids=by_id,
                                      exclude_seen=not args.keep_seen)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        if msg.startswith("users "):
            msg = f"--{msg}"
        elif msg.startswith("Y_seen"):
            msg = f"--exclude-seen {args.exclude_seen!r}: {msg}"
        raise ValueError(msg) from None
    for note in notes:                     # Y_seen that looks like other data (a test split)
        text = str(note.message)
        if text.startswith("Y_seen"):
            text = f"--exclude-seen {args.exclude_seen!r}: {text}"
        print(f"fastpu: warning: {text}", file=sys.stderr)
    user_labels: Any = (users if users is not None else
                        model.user_ids if by_id else range(model.shape[0]))
    rows = []
    for user, its, scs in zip(user_labels, items, scores):
        real = np.isfinite(scs)                # padding slots (no more items) have score -inf
        for rank, (item, score) in enumerate(zip(its[real], scs[real]), start=1):
            rows.append({"user": str(user), "rank": rank, "item": str(item), "score": float(score)})
    left_out = [] if args.keep_seen or model.seen is None else ["the items each user was trained on"]
    if args.exclude_seen is not None:
        left_out.append(f"the items seen in {args.exclude_seen}")
    header = (f"fastpu recommend: {model.method} model, {model.shape[0]} users × {model.shape[1]} "
              f"items; top {args.n}" + (f" excluding {' and '.join(left_out)}" if left_out else ""))
    if args.out is not None:
        _write_csv(args.out, rows)
        print(f"{header}; wrote {len(rows)} rows (user,rank,item,score) to {args.out}")
        return 0
    print(header)
    print(_table(rows, [("user", "user", "{}"), ("rank", "rank", "{}"), ("item", "item", "{}"),
                        ("score", "score", "{:.4f}")]))
    return 0


def _write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    """The recommendations as a CSV file: a header line, then one line per recommendation."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["user", "rank", "item", "score"])
        for row in rows:
            out.writerow([row["user"], row["rank"], row["item"], repr(row["score"])])


def cmd_compare(args: argparse.Namespace) -> int:
    from fastpu.model_selection.compare import compare

    _check_metric(args.metric)            # before loading and tuning, not after every trial
    if args.plot and not args.out:        # before loading and tuning, not silently after
        raise ValueError(f"--plot {args.plot!r} needs --out (the markdown table written next to "
                         "the chart); add --out FILE.md")
    if args.out:                          # likewise a path that cannot be written
        check_save_path(args.out, name="--out", example="table.md")
        if args.plot:
            check_save_path(args.plot, name="--plot", example="chart.png")
            import importlib.util

            if importlib.util.find_spec("matplotlib") is None:
                raise ValueError(f"--plot {args.plot!r} needs matplotlib, which is not installed: "
                                 "pip install matplotlib (or the fastpu[bench] extra), or leave out --plot")
    data, Y = _load_data(args.data, threshold=args.threshold, header=args.header)
    data = dataclasses.replace(data, Y=Y)
    named = METHODS if args.methods == "all" else tuple(
        m.strip() for m in args.methods.split(",") if m.strip() in METHODS)
    compile_notice(list(named))
    res = compare(data, args.methods, splits=args.splits,
                  test_frac=args.test_frac, budget=args.budget, metric=args.metric, seed=args.seed,
                  split=args.split, protocol=args.protocol, users_frac=args.users_frac,
                  n_threads=args.threads, verbose=not args.quiet)
    md = res.to_markdown()
    print(md)
    if args.out:
        with open(args.out, "w") as f:
            f.write(md)
        if args.plot:
            res.plot(args.plot)
        print(f"wrote {args.out}" + (f" and {args.plot}" if args.plot else ""))
    return 0


def _fit_parameters() -> set[str]:
    """Every keyword some method's fit takes (for the hint on a misplaced ``--k 32``)."""
    names: set[str] = set()
    for entry in registry.entries():
        try:
            names |= fit_names(entry.resolve("fit")) or set()
        except ImportError:                  # an entry whose optional package is missing
            continue
    return names


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose "unrecognized arguments" says how a fit parameter is given."""

    def error(self, message: str) -> Any:
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            tokens = message[len(prefix):].split()
            for i, token in enumerate(tokens):
                if not token.startswith("--"):
                    continue
                name, _, value = token[2:].partition("=")
                if not value and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                    value = tokens[i + 1]
                key = name.replace("-", "_")
                if key in _fit_parameters():
                    message += (f"; a fit parameter is given as --param NAME=VALUE: "
                                f"--param {key}={value or 'VALUE'} (fastpu run)")
                    break
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fastpu", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--seed", type=int, default=0, help="seed of the split and the models (default 0)")
        p.add_argument("--threads", type=int, default=None, help="threads for numba and BLAS (default: all)")
        p.add_argument("--at", type=_parse_ks, default=(5, 10), help="cut-offs k, e.g. 5,10 (default)")
        p.add_argument("--quiet", action="store_true", help="no per-iteration progress")

    demo = sub.add_parser("demo", help="train every method on MovieLens-100K and print a metrics table")
    demo.add_argument("--data", default="ml-100k", help="data set (default ml-100k)")
    demo.add_argument("--methods", default="all", help="comma-separated subset of " + ",".join(METHODS)
                      + " (\"all\", the default, adds WRMF and EASE beside them)")
    demo.add_argument("--verbose", action="store_true",
                      help="also print each configuration's settings before it trains")
    demo.add_argument("--background-compile", choices=("auto", "on", "off"), default="auto",
                      help="compile later methods' kernels in a second process while the first "
                           "ones train: auto (default) when a core is idle, on, off; it only "
                           "matters on a first run (see `fastpu warmup`)")
    common(demo)
    demo.set_defaults(func=cmd_demo)

    warmup = sub.add_parser("warmup", help="compile every method's kernels once (a first run is "
                                           "mostly numba compiling; later processes load the cache)")
    warmup.add_argument("--methods", default="all", help="comma-separated subset of " + ",".join(METHODS))
    warmup.add_argument("--processes", type=_positive_int, default=2,
                        help="processes compiling at once (default 2)")
    warmup.set_defaults(func=cmd_warmup, threads=None)

    cache = sub.add_parser("cache", help="print the folder of this installation's compiled kernels, "
                                         "or delete folders of others")
    which = cache.add_mutually_exclusive_group()
    which.add_argument("--prune", action="store_true",
                       help="delete the folders of installations and checkouts that no longer exist")
    which.add_argument("--clear", action="store_true",
                       help="delete every installation's folder, this one's included (kernels "
                            "compile again on next use)")
    cache.set_defaults(func=cmd_cache, threads=None)

    run = sub.add_parser("run", help="train one method on a data set or your own file")
    run.add_argument("--method", choices=METHODS, default="ocmf", help="the method to train (default ocmf)")
    run.add_argument("--data", default="ml-100k",
                     help="data set name (" + ", ".join(DATASETS) + ") or a .csv (user,item[,value]) / .npz path")
    run.add_argument("--param", type=_parse_param, action="append", metavar="NAME=VALUE",
                     help="a keyword of the method's fit, e.g. --param k=64 --param loss=logistic "
                          "(repeatable; the names are those of help(fastpu.<method>.fit); the seed "
                          "and progress are --seed and --quiet)")
    run.add_argument("--side", action="store_true",
                     help="use the data set's side information (trust graph, features) where the method takes it")
    run.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                     help="a CSV's first line is (--header) or is not (--no-header) a header "
                          "(default: detected; see fastpu.datasets.read_csv)")
    run.add_argument("--threshold", type=float, default=None,
                     help="positives are values >= threshold (default: every stored entry)")
    run.add_argument("--test-frac", type=_parse_frac, default=0.2,
                     help="per-user test fraction for evaluation; 0 trains on everything (default 0.2)")
    run.add_argument("--save", default=None, metavar="FILE",
                     help="write the fitted model to this .npz file (read it back with fastpu.load_model "
                          "or serve it with fastpu recommend)")
    run.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="fit on the Dask cluster at this scheduler address (fastpu.distributed)")
    run.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                     help="fit on a local Dask cluster of N single-thread worker processes")
    common(run)
    run.set_defaults(func=cmd_run, parser=run)

    cmp_ = sub.add_parser("compare", help="tune every method on several splits and tabulate the test scores")
    cmp_.add_argument("--data", default="ml-100k",
                      help="data set name (" + ", ".join(DATASETS) + ") or a .csv / .npz path")
    cmp_.add_argument("--methods", default="all",
                      help="'all' or a comma-separated list of " + ", ".join(registry.names("baseline") + METHODS))
    cmp_.add_argument("--splits", type=int, default=5, help="random per-user splits (default 5)")
    cmp_.add_argument("--budget", type=int, default=16, help="tuning trials per method and split (default 16)")
    cmp_.add_argument("--metric", default="ndcg@10", help="validation metric tuning maximises (default ndcg@10)")
    cmp_.add_argument("--test-frac", type=float, default=0.2,
                      help="per-user test fraction, or with --split rows the fraction of instances (default 0.2)")
    cmp_.add_argument("--split", choices=("entries", "rows"), default="entries",
                      help="entries: hold out part of each user's positives (default); rows: hold out "
                           "whole instances and score them from their features (multi-label, e.g. yeast)")
    cmp_.add_argument("--protocol", choices=("holdout", "strong"), default="holdout",
                      help="holdout: part of every user's positives is scored (default); strong: "
                           "held-out users, whose positives are folded in and scored in part")
    cmp_.add_argument("--users-frac", type=float, default=0.2,
                      help="with --protocol strong: the fraction of users held out (default 0.2)")
    cmp_.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                      help="a CSV's first line is (--header) or is not (--no-header) a header "
                           "(default: detected; see fastpu.datasets.read_csv)")
    cmp_.add_argument("--threshold", type=float, default=None,
                      help="positives are values >= threshold (default: every stored entry)")
    cmp_.add_argument("--out", default=None, help="write the markdown table to this file")
    cmp_.add_argument("--plot", default=None, help="with --out (required): also write a PNG bar chart here")
    cmp_.add_argument("--seed", type=int, default=0, help="seed of the first split (default 0)")
    cmp_.add_argument("--threads", type=int, default=None, help="threads for numba and BLAS (default: all)")
    cmp_.add_argument("--quiet", action="store_true", help="no per-trial progress")
    cmp_.set_defaults(func=cmd_compare)

    rec = sub.add_parser("recommend", help="print the top items of a saved model, by id")
    rec.add_argument("--model", required=True, metavar="FILE", help="a model written by fastpu run --save")
    rec.add_argument("--users", default=None,
                     help="comma-separated user ids as in the data (row numbers when the model has no "
                          "ids); default every user")
    rec.add_argument("-n", type=_positive_int, default=10, help="items per user (default 10)")
    rec.add_argument("--exclude-seen", default=None, metavar="DATA",
                     help="also leave out the items each user has in this data set name or "
                          ".csv/.npz file (the items each user was trained on are left out anyway)")
    rec.add_argument("--keep-seen", action="store_true",
                     help="do not leave out the items each user was trained on (the model's "
                          "record of its training positives)")
    rec.add_argument("--out", default=None, metavar="FILE",
                     help="write the recommendations to this CSV file (user,rank,item,score) "
                          "instead of printing a table")
    rec.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                     help="a CSV's first line is (--header) or is not (--no-header) a header "
                          "(default: detected; see fastpu.datasets.read_csv)")
    rec.add_argument("--threshold", type=float, default=None,
                     help="with --exclude-seen: seen items are values >= threshold (default: every stored entry)")
    rec.add_argument("--threads", type=int, default=None, help="threads for numba and BLAS (default: all)")
    rec.set_defaults(func=cmd_recommend)
    # `fastpu run --help` opens with what the sub-command does (its one-line help)
    for action in sub._get_subactions():
        text = action.help or ""
        sub.choices[action.dest].description = text[:1].upper() + text[1:] + "."
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from fastpu._core.threads import limit_threads
    from fastpu.datasets import DataUnavailable

    try:
        with limit_threads(args.threads, blas=args.threads):     # --threads bounds BLAS's too
            return args.func(args)
    except DataUnavailable as exc:
        print(f"fastpu: {exc}", file=sys.stderr)
        return 2
    except (TypeError, ValueError, OSError, FloatingPointError) as exc:   # input errors: exit 2
        print(f"fastpu: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
