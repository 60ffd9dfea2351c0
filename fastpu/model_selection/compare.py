"""One comparison: every method tuned on the training part of several random splits, tested once.

For each of ``splits`` per-user holdout splits of the data, every method is tuned with
:func:`fastpu.select.tune` on the training part only (its own validation split is carved from
that training part), refitted there with the winner, and evaluated once on the test part.
The result reports each metric as mean ± standard deviation over the splits.

With ``split="rows"`` (multi-label learning, paper 002's protocol) each split holds out whole
instances (rows with at least one label) instead: every method is tuned with
``tune(..., split="rows")`` on the training instances, refitted there, and the test instances'
labels are ranked from their features alone (cold start, :func:`fastpu.fold_in`).
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from typing import Any, BinaryIO, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from fastpu.model_selection import _rows as R
from fastpu._core import registry
from fastpu._core import validation as V
from fastpu._core.files import check_save_path
from fastpu._core.names import did_you_mean
from fastpu._core.dataset import Dataset
from fastpu._core.hints import Sparse, StrPath, Threads
from fastpu.model_selection.metrics import evaluate
from fastpu.model_selection.select import NAMES, _check_fixed, _check_metric, _fit_function, tune
from fastpu.model import fold_in
from fastpu.model_selection.split import held_out_users, holdout

__all__ = ["COLUMNS", "CompareResult", "compare"]

#: The columns of the comparison: (header, key of the per-split row).
#: ``methods="all"``: the baselines that need no optional package, then the methods
ALL = tuple(e.name for e in registry.entries("baseline") if e.requires is None) + registry.names("method")

COLUMNS = (("P@5", "precision@5"), ("nDCG@10", "ndcg@10"), ("MAP@10", "map@10"), ("AUC", "auc"),
           ("fit s", "fit_seconds"))


@dataclasses.dataclass(frozen=True)
class CompareResult:
    """Per-split results of :func:`compare`.

    Attributes
    ----------
    rows : list of dict
        One per (split, method): ``label``, ``method``, ``split``, every metric of
        :data:`COLUMNS`, ``best_params`` and ``best_iter`` of the tuning.
    labels : list of str
        The methods in the order they were given.
    description : str
        Data, splits, budget and metric, for the report's header.
    """

    rows: list
    labels: list
    description: str

    def summary(self) -> dict:
        """Mean and standard deviation of each metric per method.

        Returns
        -------
        dict
            ``{label: {key: (mean, std)}}`` over the splits (std with ddof=1; 0 for one split).
        """
        out: dict[str, dict[str, tuple[float, float]]] = {}
        for label in self.labels:
            rows = [r for r in self.rows if r["label"] == label]
            out[label] = {}
            for _, key in COLUMNS:
                vals = np.array([r[key] for r in rows], dtype=float)
                sd = float(vals.std(ddof=1)) if vals.size > 1 else 0.0
                out[label][key] = (float(vals.mean()), sd)
        return out

    def to_markdown(self) -> str:
        """The summary as a markdown table (mean ± std over the splits), best nDCG@10 in bold.

        With a single split there is no spread: the cells hold the value alone.

        Returns
        -------
        str
        """
        summ = self.summary()
        best = max(self.labels, key=lambda lab: summ[lab]["ndcg@10"][0])
        n_splits = len({r["split"] for r in self.rows})
        head = ["method", *(h for h, _ in COLUMNS)]
        lines = [self.description, "", "| " + " | ".join(head) + " |", "|---" + "|---:" * len(COLUMNS) + "|"]
        for label in self.labels:
            cells = []
            for h, key in COLUMNS:
                mu, sd = summ[label][key]
                fmt = ".1f" if key == "fit_seconds" else ".4f"
                cells.append(f"{mu:{fmt}} ± {sd:{fmt}}" if n_splits > 1 else f"{mu:{fmt}}")
            name = f"**{label}**" if label == best else label
            lines.append("| " + " | ".join([name, *cells]) + " |")
        spread = "mean ± standard deviation over the splits" if n_splits > 1 else "one split: no spread"
        lines += ["", f"Test scores, {spread}; in bold the method with the best mean nDCG@10."]
        return "\n".join(lines) + "\n"

    def plot(self, path: StrPath | BinaryIO) -> None:
        """A bar chart of nDCG@10 and P@5 (mean ± std) per method, written to ``path``.

        Parameters
        ----------
        path : str, os.PathLike or binary file object
            Output image (PNG).

        Raises
        ------
        ImportError
            If matplotlib is not installed.
        TypeError
            If ``path`` is neither a path nor a file object.
        ValueError
            If ``path`` is a directory, or its folder does not exist or is not writable.
        """
        if not hasattr(path, "write"):       # matplotlib also writes to a binary file object
            path = check_save_path(path, example="compare.png")
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("CompareResult.plot needs matplotlib: pip install matplotlib "
                              "(or the fastpu[bench] extra)") from None
        summ = self.summary()
        x = np.arange(len(self.labels))
        fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(self.labels)), 3.4))
        for off, (h, key) in zip((-0.2, 0.2), (("nDCG@10", "ndcg@10"), ("P@5", "precision@5"))):
            mu = [summ[lab][key][0] for lab in self.labels]
            sd = [summ[lab][key][1] for lab in self.labels]
            ax.bar(x + off, mu, 0.4, yerr=sd, capsize=3, label=h)
        ax.set_xticks(x, self.labels, rotation=30, ha="right")
        ax.set_ylabel("test score (mean ± std over splits)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _train_users_graph(fixed: dict[str, Any], users: np.ndarray) -> dict[str, Any]:
    """``fixed`` with its ``user_graph`` (a row and column per user of Y) cut down to the
    training users of a strong-generalization split; the held-out users are new nodes to the
    fitted model, folded in from their positives."""
    graph = fixed.get("user_graph")
    if graph is None:
        return fixed
    graph = sp.csr_array(graph) if sp.issparse(graph) else np.asarray(graph)
    return {**fixed, "user_graph": graph[users][:, users]}


def _entries(methods: Any, params: dict[str, dict[str, Any]] | None, split: str = "entries",
             ) -> list[tuple[str, Any, dict[str, Any]]]:
    """(label, method, fixed kwargs) triples from names, tuples or "all"."""
    if methods == "all":
        methods = R.all_rows() if split == "rows" else ALL
    if isinstance(methods, str):
        methods = tuple(m.strip() for m in methods.split(","))
    if not isinstance(methods, (list, tuple)):
        raise TypeError(f"methods must be 'all', a comma-separated string or a list of names and "
                        f"(label, method, fixed kwargs) tuples, got {type(methods).__name__}")
    if params is not None and not isinstance(params, dict):
        raise TypeError(f"params must be a dict of label -> fixed kwargs or None, got {type(params).__name__}")
    out = []
    for entry in methods:
        if isinstance(entry, tuple):
            if len(entry) != 3 or not isinstance(entry[2], dict):
                raise ValueError(f"a method entry must be a name or (label, method, fixed kwargs) in "
                                 f"methods, got {entry!r}")
            label, method, fixed = entry
        elif isinstance(entry, str):
            label, method, fixed = entry, entry, {}
        else:
            raise TypeError(f"a method entry must be a name or (label, method, fixed kwargs) in "
                            f"methods, got {entry!r}")
        if not isinstance(method, str) or method not in NAMES:
            raise ValueError(f"unknown method {method!r} in methods; expected one of "
                             f"{', '.join(NAMES)}")
        extra = (params or {}).get(label, {})
        if not isinstance(extra, dict):
            raise TypeError(f"params[{label!r}] must be a dict of fixed kwargs, got {type(extra).__name__}")
        fixed = {**extra, **fixed}
        out.append((label, method, fixed))
    if not out:
        raise ValueError("methods is empty; give at least one method")
    labels = [lab for lab, _, _ in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"method labels must be unique, got {labels}")
    unknown = [key for key in (params or {}) if key not in labels]
    if unknown:        # a misspelt label would silently leave that method at its defaults
        hint = did_you_mean(str(unknown[0]), set(labels)) if len(unknown) == 1 else ""
        raise ValueError(f"params has key{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))} that name{'' if len(unknown) > 1 else 's'} "
                         f"no entry of methods{hint}; its keys must be labels of the compared methods: "
                         f"{', '.join(map(repr, labels))}")
    return out


def compare(Y: Sparse | Dataset,
            methods: str | Sequence[str | tuple[str, str | Callable[..., Any], dict[str, Any]]]
            = "all", *, splits: int = 5,
            test_frac: float = 0.2, budget: int = 16, metric: str = "ndcg@10", seed: int = 0,
            params: dict[str, dict[str, Any]] | None = None, split: str = "entries",
            protocol: str = "holdout", users_frac: float = 0.2, n_threads: Threads = None,
            verbose: bool = False) -> CompareResult:
    """Tune every method on the training part of each split and evaluate it once on the test part.

    Parameters
    ----------
    Y : scipy.sparse matrix or Dataset
        All positives (binarise ratings first if they should not act as weights).
    methods : "all", str or sequence
        Names of :data:`fastpu.select.NAMES` (the registry's methods and baselines,
        :mod:`fastpu._core.registry`; a comma-separated string works too) or ``(label, method,
        fixed kwargs)`` triples, e.g. ``("LR-wSQ", "ocmf", {"loss": "logistic"})``. ``"all"``:
        :data:`ALL`, the registry's baselines that need no optional package, then its
        methods, with their defaults; with ``split="rows"``, those of them whose fits take
        ``user_features`` and whose models can score a new row from them.
    splits : int
        Number of random holdout splits (seeds ``seed``, ``seed + 1``, ...).
    test_frac : float
        Fraction of each user's positives in the test part (``split="entries"``), or of the
        rows with at least one positive (``split="rows"``; rows without one always train).
    budget : int
        Trials of :func:`fastpu.select.tune` per method and split.
    metric : str
        The validation metric tuning maximises.
    seed : int
        First split's seed.
    params : dict, optional
        ``{label: fixed kwargs}`` added to the entries (e.g. ``{"homf": {"mode": "exact"}}``).
        Every key must be the label of an entry of ``methods`` (a name's label is the name).
    split : {"entries", "rows"}
        ``"entries"`` (default): per-user holdout of positives; a Dataset is reduced to its
        ``Y``. ``"rows"``: held-out instances, scored by cold start from their
        ``user_features``. ocmf and fbgd entries use the Dataset's ``user_features`` unless
        their fixed kwargs give ``user_features`` (one row per row of ``Y``); wrmf needs
        them in its fixed kwargs; an entry whose fit takes no features, or whose models cannot
        start cold from them (the registry's ``cold_start``), is refused. Popularity ranks labels
        by their frequency on the training instances.
    protocol : {"holdout", "strong"}
        With ``split="entries"``: ``"holdout"`` (default) holds out part of every user's
        positives and scores it with the model fitted on the rest; ``"strong"`` (strong
        generalization, Liang et al. 2018, as EASE's and Rendle et al.'s papers) holds out
        ``users_frac`` of the users (:func:`fastpu.split.held_out_users`): every method is
        tuned and fitted on the other users, each held-out user's ``1 - test_frac`` of positives
        is folded in (:func:`fastpu.fold_in`; EASE's x B) and the rest scored. Methods without a
        fold-in (implicit's ALS and BPR) are refused.
    users_frac : float
        With ``protocol="strong"``: the fraction of the users with two or more positives held out.
    n_threads : int, optional
        Threads for the fits and the evaluation.
    verbose : bool
        Print one line per (split, method).

    Returns
    -------
    CompareResult
        ``.rows``, ``.summary()``, ``.to_markdown()``, ``.plot(path)``.

    Raises
    ------
    TypeError, ValueError
        Unknown method or ``metric``, a fixed keyword argument a method's fit does not take
        (TypeError; both checked before any fit), duplicate labels, a key of ``params`` that is
        not the label of an entry (ValueError), a ``verbose`` that is not a bool or an int
        (TypeError), ``splits``/``budget`` < 1, a
        test fraction outside (0, 1), an unknown ``split``, or as :func:`fastpu.select.tune`. With
        ``split="rows"``: an entry without user features, features with the wrong number of rows, a
        method that does not take them or cannot start cold from them, or a test fraction that
        holds out no row or every row with a label.

    Examples
    --------
    >>> import fastpu as fp
    >>> Y = fp.datasets.synthetic(80, 50, rank=3, density=0.15, seed=0).Y
    >>> res = fp.compare.compare(Y, ["popularity", ("ocmf", "ocmf", {"k": 4, "n_iter": 3})],
    ...                          splits=2, budget=2)
    >>> sorted(res.summary())
    ['ocmf', 'popularity']

    Held-out instances scored from their features (``Y`` a Dataset with ``user_features``):

    >>> import dataclasses, numpy as np
    >>> data = fp.datasets.synthetic(80, 50, rank=3, density=0.15, seed=0)
    >>> data = dataclasses.replace(data, user_features=np.random.default_rng(0).normal(size=(80, 6)))
    >>> res = fp.compare.compare(data, ["popularity", ("ocmf", "ocmf", {"k": 4, "n_iter": 3})],
    ...                          splits=2, budget=2, split="rows")
    >>> [r["label"] for r in res.rows]
    ['popularity', 'ocmf', 'popularity', 'ocmf']
    """
    split = R.check_split(split)
    protocol = V.check_choice(protocol, name="protocol", choices=("holdout", "strong"))
    strong = protocol == "strong"
    if strong and split != "entries":
        raise ValueError("protocol='strong' holds out users and folds their positives in; with "
                         "split='rows' the held-out rows are already new instances (scored from "
                         "their features): use protocol='holdout' there")
    if strong:
        users_frac = V.check_scalar(users_frac, name="users_frac", minimum=0.0, maximum=1.0,
                                    strict_min=True, strict_max=True)
    entries = _entries(methods, params, split)
    if strong:                # before any fit: every entry must fold new users in
        for label, method, fixed in entries:
            if not isinstance(method, str) or registry.get(method).fold is None:
                raise ValueError(f"protocol='strong' folds the held-out users into each fitted "
                                 f"model, and {label!r} ({method}) has no fold-in; leave it out")
            if fixed.get("user_features") is not None:
                raise ValueError(f"protocol='strong' folds the held-out users in from their "
                                 f"positives, and {label!r} is given user_features (a row per "
                                 "user of Y, held-out users included); leave it out, or use "
                                 "split='rows' to score new users from their features")
    splits = V.check_int(splits, name="splits", minimum=1)
    budget = V.check_int(budget, name="budget", minimum=1)
    seed = V.check_int(seed, name="seed", minimum=0)
    verbose = V.check_verbose(verbose)
    test_frac = V.check_scalar(test_frac, name="test_frac", minimum=0.0, maximum=1.0,
                               strict_min=True, strict_max=True)
    name = Y.name if isinstance(Y, Dataset) else "matrix"
    data = Y
    Y = V.check_csr(Y.Y if isinstance(Y, Dataset) else Y, name="Y", nonnegative=False)
    feats = _row_features(entries, data, Y.shape[0]) if split == "rows" else {}
    _check_metric(metric)                  # before any fit, not inside the first tuned method
    for label, method, fixed in entries:   # likewise the fixed kwargs each method's fit takes
        # (``space`` is tune's own: a search space of the entry)
        _check_fixed(_fit_function(method)[0], f"{label!r} ({method}.fit)",
                     {k: v for k, v in fixed.items() if k != "space"})
    ks = (5, 10)
    rows = []
    for s in range(splits):
        if split == "rows":
            keep, out = R.holdout_rows(Y, test_frac, seed + s, name="test_frac")
            Y_train, Y_test = Y[keep], Y[out]
            Y_seen = sp.csr_array(Y_test.shape, dtype=np.float64)   # new rows have seen nothing
        elif strong:
            us = held_out_users(Y, users_frac=users_frac, test_frac=test_frac, seed=seed + s)
            Y_train, Y_seen, Y_test = us.train, us.fold_in, us.test
        else:
            Y_train, Y_test = holdout(Y, test_frac=test_frac, seed=seed + s)
            Y_seen = Y_train
            if Y_test.nnz == 0:
                counts = np.diff(Y.indptr)
                why = ("no user has 2 or more positives (a user gives test positives only when "
                       "one stays in training)" if not np.any(counts >= 2) else
                       f"round({test_frac:g} × a user's positives) is 0 for every user; raise test_frac")
                raise ValueError(f"test_frac={test_frac:g} holds out no positive of Y on split "
                                 f"{s + 1}/{splits}: {why}")
        for label, method, fixed in entries:
            t0 = time.perf_counter()
            if strong:            # a user graph covers every user of Y: keep the training users'
                fixed = _train_users_graph(fixed, us.train_users)
            kw = fixed if split == "entries" else {**fixed, "user_features": R.take_rows(feats[label], keep)}
            try:
                res = tune(method, Y_train, budget=budget, metric=metric, seed=seed + s,
                           split=split, n_threads=n_threads, **kw)
            except ValueError as exc:
                part = f"test_frac={test_frac:g}" if split == "entries" else \
                    f"holding out {test_frac:g} of the rows"
                raise ValueError(f"compare: {label!r} on split {s + 1}/{splits} (the training "
                                 f"part of Y after {part}): {exc}") from exc
            model, best, best_iter = res.model, res.best_params, res.best_iter
            fit_s = float(model.history[-1]["seconds"]) if model.history else float("nan")
            if split == "rows":       # the test rows from their features alone
                model = R.cold_start(model, R.take_rows(feats[label], out), n_threads)
            elif strong:              # the held-out users from their fold-in positives
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)   # rows above tol
                    model = fold_in(model, Y_seen, n_threads=n_threads)
            scores = evaluate(model, Y_seen, Y_test, k=ks, metrics=("precision", "ndcg", "map", "auc"),
                              n_threads=n_threads)
            row: dict[str, Any] = dict(label=label, method=method, split=s, fit_seconds=fit_s,
                                       best_params=_plain(best), best_iter=best_iter,
                                       tune_seconds=time.perf_counter() - t0)
            row.update({key: scores[key] for _, key in COLUMNS if key in scores})
            rows.append(row)
            if verbose:
                print(f"[compare] split {s + 1}/{splits}  {label:<16} P@5 {row['precision@5']:.4f}  "
                      f"nDCG@10 {row['ndcg@10']:.4f}  ({row['tune_seconds']:.1f}s)", file=sys.stderr, flush=True)
    seeds = f"splits (seeds {seed}..{seed + splits - 1})" if splits > 1 else f"split (seed {seed})"
    if split == "rows":
        desc = (f"{name}: {Y.shape[0]} instances × {Y.shape[1]} labels, {Y.nnz} positives; {splits} "
                f"random {1 - test_frac:.0%}/{test_frac:.0%} {seeds} of the instances that have a label; "
                f"every method tuned by fastpu.select.tune("
                f"split='rows') ({budget} trials, {metric} on 20% of the training instances held "
                "out), refitted on the training instances, evaluated once on the test instances "
                "scored from their features alone (cold start).")
    elif strong:
        desc = (f"{name}: {Y.shape[0]} × {Y.shape[1]}, {Y.nnz} positives; strong generalization, "
                f"{splits} {seeds}: {users_frac:.0%} of the users held out, every method tuned by "
                f"fastpu.select.tune ({budget} trials, {metric} on a validation split of the other "
                f"users' positives) and refitted on the other users; each held-out user's "
                f"{1 - test_frac:.0%} of positives folded in (fastpu.fold_in), the other "
                f"{test_frac:.0%} scored.")
    else:
        desc = (f"{name}: {Y.shape[0]} × {Y.shape[1]}, {Y.nnz} positives; {splits} random per-user "
                f"{1 - test_frac:.0%}/{test_frac:.0%} {seeds}; every "
                f"method tuned by fastpu.select.tune ({budget} trials, {metric} on a validation split of "
                f"the training part), refitted on the training part, evaluated once on the test part.")
    return CompareResult(rows=rows, labels=[lab for lab, _, _ in entries], description=desc)


def _row_features(entries: list[tuple[str, Any, dict[str, Any]]], data: Any,
                  m: int) -> dict[str, Any]:
    """Each entry's user features for split="rows" (its own, else ocmf's/fbgd's from the Dataset)."""
    own = data.user_features if isinstance(data, Dataset) else None
    out = {}
    for label, method, fixed in entries:
        fit = _fit_function(method)[0]
        R.check_method(method, fit)
        X = fixed.get("user_features")
        takes_own = R.names_features(fit)     # a fit that names them gets the Dataset's own
        if X is None and takes_own:
            X = own
        if X is None:
            where = ("pass a Dataset with user_features, or " if takes_own
                     else f"{method} is given no features by default; ")
            raise ValueError(f"compare with split='rows': {label!r} ({method}) needs user_features "
                             f"(held-out rows are scored from them); {where}give them in its fixed "
                             f"kwargs, e.g. ({label!r}, {method!r}, {{'user_features': X}})")
        out[label] = V.check_features(X, name=f"user_features of {label!r}", n_rows=m)
    return out


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    """Tuned parameters without arrays or matrices (graphs, features), for reports."""
    return {k: v for k, v in params.items() if isinstance(v, (int, float, str, bool, type(None)))}

