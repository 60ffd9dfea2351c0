"""Choosing a method's settings on a validation split carved from the training data.

The protocol is the one the four papers use: hold out part of each user's *training*
positives as a validation set, fit every candidate setting on the rest, evaluate on the
validation set after every outer iteration, keep the best (setting, iteration) pair, and
refit on all of the training data with that setting for that many iterations. The test
split never enters: :func:`search` and :func:`tune` only ever see the matrix they are given.
With ``split="rows"`` the validation set is whole rows instead (paper 002's multi-label
protocol: held-out instances, scored from their features by cold start).

- :func:`search` — grid or random search over a space you give;
- :func:`tune` — the same over a documented default space per method (:data:`SPACES`).

A space maps a ``fit`` parameter name to a list of candidate values (grid search) or to a
distribution with an ``rvs(random_state=...)`` method such as ``scipy.stats.loguniform(1e-3, 1)``
(random search). Results are reproducible for a fixed ``seed``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import math
import numbers
import sys
import time
import warnings
from typing import Any, Callable

import numpy as np

from fastpu.model_selection import _rows as R
from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu._core.names import did_you_mean, fit_names
from fastpu._core.dataset import Dataset
from fastpu._core.threads import check_threads
from fastpu._core.hints import Sparse, Threads
from fastpu._core import registry
from fastpu.model_selection.metrics import METRICS, evaluate
from fastpu._core.factorization import brief
from fastpu.model_selection.split import validation_split

__all__ = ["NAMES", "SPACES", "SearchResult", "default_space", "search", "tune"]

#: Every name :func:`search` and :func:`tune` take: the entries of the registry (its methods and
#: baselines, fastpu._core.registry) that have a default search space.
NAMES = tuple(e.name for e in registry.entries() if e.space is not None)


_CALL = "fit(Y, k, *, n_iter, seed, callback, n_threads, ...)"


def _callable_name(fn: Callable[..., Any]) -> str:
    """A fit function's name for messages: its own, a partial's function's, or its class's."""
    if isinstance(fn, functools.partial):
        return _callable_name(fn.func)
    return getattr(fn, "__name__", None) or type(fn).__name__


def _fit_function(method: str | Callable[..., Any]) -> tuple[Callable[..., Any], str]:
    if callable(method) and not isinstance(method, str):
        name = _callable_name(method)
        try:
            sig = inspect.signature(method)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"method {name}() has no signature the search can read ({exc}); pass a "
                            f"Python function {_CALL}") from None
        try:     # what every trial and the refit pass; the searched and fixed names come later
            sig.bind_partial(None, None, n_iter=1, seed=0, callback=None, n_threads=None)
        except TypeError as exc:
            raise TypeError(f"method {name}() must take {_CALL} as the search calls it; {exc}") from None
        return method, name
    if not isinstance(method, str):
        raise TypeError(f"method must be a method name ({', '.join(map(repr, NAMES))}) or a fit "
                        f"function {_CALL}, got {type(method).__name__} {method!r}")
    if method not in NAMES:
        raise ValueError(f"method must be one of {', '.join(map(repr, NAMES))} or a fit function, "
                         f"got {method!r}{did_you_mean(method, set(NAMES))}")
    return registry.get(method).resolve("fit"), method


def _spaces() -> dict[str, dict[str, Any]]:
    """Each name's default space and fixed settings, from its registry entry."""
    out = {}
    for name in NAMES:
        space, fixed = registry.get(name).resolve("space")()
        out[name] = dict(fixed=fixed, space=space)
    return out


# Default search spaces of :func:`tune`: the fixed settings each trial starts from, and the
# ranges searched; each method's lives in its package (``fastpu.<method>._tuning``), each
# baseline's in :mod:`fastpu.baselines`. An entry may be a function of the matrix shape (m, n)
# where the paper's scale depends on it. The ranges bracket the papers' own grids and the
# settings chosen on validation splits of the *training* data by the benchmarks (docs/select.md
# says which).
SPACES: dict[str, dict[str, Any]] = _spaces()


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """What :func:`search` and :func:`tune` found.

    Attributes
    ----------
    model : Factorization or None
        The winner refitted on all of ``Y`` for ``best_iter`` outer iterations (``None`` with
        ``refit=False``).
    best_params : dict
        The winning setting (the searched parameters and the fixed ones, ``n_iter`` excluded).
    best_iter : int
        The outer iteration at which the winner scored best on the validation split.
    best_score : float
        Its validation score.
    metric : str
        The metric that was maximised, e.g. ``"ndcg@10"``.
    trials : list of dict
        One per trial: ``trial``, ``params``, ``scores`` (validation metric after each outer
        iteration), ``best_iter``, ``best_score``, ``fit_seconds``, ``eval_seconds`` and
        ``error`` (``None``, or the message of a fit that failed; its score is ``-inf``) and
        ``stopped_at`` (the iteration at which the median rule stopped it, or ``None``).
    """

    model: Any
    best_params: dict
    best_iter: int
    best_score: float
    metric: str
    trials: list

    def __repr__(self) -> str:
        """A one-line summary: metric, winner, its score and iteration, trials, model or not."""
        params = ", ".join(f"{k!r}: {brief(v)}" for k, v in self.best_params.items())
        model = "none" if self.model is None else f"attached ({type(self.model).__name__})"
        return (f"SearchResult(metric={self.metric!r}, best_params={{{params}}}, "
                f"best_iter={self.best_iter}, best_score={self.best_score:.6g}, "
                f"trials={len(self.trials)}, model={model})")

    def table(self) -> str:
        """The trials as a markdown table, best first.

        Returns
        -------
        str
        """
        keys = sorted({k for t in self.trials for k in t["params"]})
        head = ["trial", *keys, f"best {self.metric}", "best iter", "fit s", "note"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for t in sorted(self.trials, key=lambda t: -t["best_score"]):
            cells = [str(t["trial"]), *(_fmt(t["params"].get(k)) for k in keys),
                     f"{t['best_score']:.4f}", str(t["best_iter"]), f"{t['fit_seconds']:.1f}",
                     t["error"] or (f"stopped at iteration {t['stopped_at']}: trailing the median"
                                    if t.get("stopped_at") else "")]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _check_metric(metric: Any) -> tuple[str, int | None]:
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string such as 'ndcg@10' or 'auc', got {metric!r}")
    if metric == "auc":
        return "auc", None
    name, _, digits = metric.partition("@")
    k = V.ascii_int(digits)             # ASCII digits only: '²' and '٥' pass str.isdigit()
    if name not in METRICS or name == "auc" or k is None or k < 1:
        ranked = [m for m in METRICS if m != "auc"]
        hint = did_you_mean(name, set(ranked)) if name not in METRICS else ""
        raise ValueError(f"metric must be '<name>@<k>' with name in {', '.join(ranked)} "
                         f"and k >= 1, or 'auc'; got {metric!r}{hint}")
    if k > V.INT_MAX:                   # the cut-off reaches the kernels as an int64
        shown = metric if len(metric) <= 40 else metric[:37] + "..."
        raise ValueError(f"metric {shown!r} has the cut-off k = {k:.3g}, above 2**62; expected "
                         f"'<name>@<k>' with k a number of items to rank, e.g. '{name}@10'")
    return name, k


def _check_fixed(fit: Callable[..., Any], label: str, fixed: dict[str, Any]) -> None:
    """Refuse fixed keyword arguments that ``fit`` does not take, before any trial runs.

    ``label`` names the fit in the message (``"ocmf.fit"``); a fit taking ``**kwargs`` passes.
    ``callback`` is refused for every fit: the search passes its own, which scores each
    iteration on the validation split.
    """
    if "callback" in fixed:
        raise TypeError(f"{label} got callback=; the search passes its own callback (it scores "
                        "every outer iteration on the validation split), so give none")
    names = fit_names(fit)
    if names is None:
        return
    unknown = [key for key in fixed if key not in names]
    if unknown:
        current = sorted(names)
        hint = did_you_mean(unknown[0], current) if len(unknown) == 1 else ""
        raise TypeError(f"{label} got unknown keyword argument{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(map(repr, unknown))}{hint}; it takes {', '.join(current)}")


#: The space :func:`tune` searches when there is nothing to search (popularity, or every
#: parameter of a default space fixed): one trial, the fit with its fixed settings.
_NOTHING: dict[str, Any] = {}


def _is_distribution(v: Any) -> bool:
    return callable(getattr(v, "rvs", None))


def _check_space(space: Any, fit: Callable[..., Any], fixed: dict[str, Any], m: int,
                 n: int) -> dict[str, Any]:
    """Validate a space against fit's parameters; resolve shape-dependent entries."""
    if not isinstance(space, dict):
        raise TypeError(f"space must be a dict of parameter name -> list of values or distribution, "
                        f"got {type(space).__name__}")
    if not space and space is not _NOTHING:
        raise ValueError("space is empty; give at least one parameter to search")
    names = fit_names(fit)
    out: dict[str, Any] = {}
    for key, val in space.items():
        if names is not None and key not in names:
            raise ValueError(f"space has unknown parameter {key!r}{did_you_mean(key, names)}; "
                             f"the fit takes {', '.join(sorted(names))}")
        if key in fixed:
            raise ValueError(f"{key!r} is both searched (in space) and fixed (a keyword argument); give it once")
        if key in ("n_iter", "callback", "verbose", "seed"):
            raise ValueError(f"space must not search {key!r}: the search sets it (n_iter is chosen "
                             "as the best iteration)")
        if callable(val) and not _is_distribution(val):
            val = val(m, n)
        if _is_distribution(val):
            out[key] = val
            continue
        if isinstance(val, (str, bytes)) or not hasattr(val, "__len__"):
            raise TypeError(f"space[{key!r}] must be a list of candidate values or a distribution with "
                            f"rvs(), got {val!r}")
        if len(val) == 0:
            raise ValueError(f"space[{key!r}] is an empty list; give at least one candidate value")
        out[key] = list(val)
    return out


def _draw(space: dict[str, Any], n_trials: int | None,
          rng: np.random.Generator) -> list[dict[str, Any]]:
    """Candidate settings: the whole grid, a sample of it, or random draws."""
    keys = sorted(space)
    if all(isinstance(space[k], list) for k in keys):
        sizes = [len(space[k]) for k in keys]
        size = math.prod(sizes)
        if n_trials is None or n_trials >= size:
            # the whole grid, one setting per point: refused before it is listed when it cannot
            # fit (a dict of the parameters per point, about 100 bytes per parameter)
            check_alloc(size * (240 + 100 * len(keys)),
                        what=f"the grid of space ({' × '.join(map(str, sizes))} = {size:,} settings)",
                        names=("the lists of space", "or give n_trials to sample it"))
            return [dict(zip(keys, vals)) for vals in itertools.product(*(space[k] for k in keys))]
        if size > V.INT_MAX:
            raise ValueError(f"space is a grid of {size:,} settings ({' × '.join(map(str, sizes))}), "
                             f"more than 2**62 to draw {n_trials} from; shorten its lists, or give "
                             "distributions (random search)")
        # the same draw as from the listed grid, without listing it: point i of
        # itertools.product is the mixed-radix number i (the last key varying fastest)
        pick = np.sort(rng.choice(size, size=n_trials, replace=False))
        out = []
        for i in pick.tolist():
            vals = []
            for n in reversed(sizes):
                i, r = divmod(i, n)
                vals.append(r)
            out.append({key: space[key][r] for key, r in zip(keys, reversed(vals))})
        return out
    if n_trials is None:
        raise ValueError("n_trials is required when the space holds distributions (random search); "
                         "give n_trials, or lists only for a grid search")
    check_alloc(n_trials * (240 + 100 * len(keys)),
                what=f"the settings of {n_trials:,} random trials", names=("n_trials (tune's budget)",))
    out = []
    for _ in range(n_trials):
        trial: dict[str, Any] = {}
        for k in keys:
            v = space[k]
            if isinstance(v, list):
                trial[k] = v[int(rng.integers(len(v)))]
            else:
                trial[k] = _python(v.rvs(random_state=rng))
        out.append(trial)
    return out


def _python(v: Any) -> Any:
    """A numpy scalar drawn from a distribution as a plain float or int."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return v


def search(method: str | Callable[..., Any], Y: Sparse | Dataset, space: dict[str, Any], *,
           validation: float | tuple[Any, Any] = 0.2, metric: str = "ndcg@10",
           n_trials: int | None = None, seconds: float | None = None,
           first: dict[str, Any] | list[dict[str, Any]] | None = None, stop_trailing: bool = False, seed: int = 0,
           refit: bool = True, split: str = "entries", n_threads: Threads = None,
           verbose: bool = False, **fixed: Any) -> SearchResult:
    """Search a method's settings on a validation split carved from ``Y``, keep the best iteration.

    Parameters
    ----------
    method : str or callable
        A name of :data:`NAMES` (a method or a baseline of the registry; those that need an
        optional package, such as implicit's, need it installed), or any function
        ``fit(Y, k, *, n_iter, seed, callback, ...)`` with the fastpu calling convention (the
        callback receives ``info["model"]``).
    Y : scipy.sparse matrix, shape (m, n), or Dataset
        The training positives. Nothing else is seen: pass the training part of your split.
    space : dict
        Parameter name -> list of candidate values (grid) or a distribution with
        ``rvs(random_state=...)`` (random search), e.g. ``{"lam": [1, 10], "rho":
        scipy.stats.loguniform(1e-3, 1)}``.
    validation : float or (Y_fit, Y_valid) or (rows_fit, rows_valid)
        With ``split="entries"``: the fraction of each user's positives of ``Y`` held out for
        validation (per user, as :func:`fastpu.split.holdout`), or an explicit pair of
        matrices whose sum is ``Y``. With ``split="rows"``: the fraction of the rows of ``Y``
        that have a positive held out as validation instances (``round(validation · r)`` of
        those r rows, drawn with ``seed``; rows without a positive are never held out and
        stay with the fitted rows), or an explicit pair of disjoint row-index arrays.
    metric : str
        Validation metric to maximise: ``"<name>@<k>"`` with a name from
        :data:`fastpu.metrics.METRICS` (e.g. ``"ndcg@10"``, ``"precision@5"``) or ``"auc"``.
    n_trials : int, optional
        Number of settings to try. ``None``: the whole grid (the space must hold lists only),
        or as many random draws as ``seconds`` allows. Fewer than the grid's size: a random
        sample of the grid without repetition.
    seconds : float, optional
        A wall-time budget: no trial starts once this many seconds have passed (the trial under
        way finishes; the first trial always runs). With ``n_trials``, whichever runs out first.
    first : dict or list of dict, optional
        A setting of the searched parameters (or a list of them, tried in order) tried before
        the drawn ones (``tune`` passes the method's defaults), counted in ``n_trials``.
    stop_trailing : bool
        Stop a trial whose best validation score so far trails the median of the earlier
        trials' best at the same iteration (the median stopping rule of Google Vizier), from the
        third iteration on and once two earlier trials reached it: a setting that is clearly
        losing stops early, so the same time buys more trials. A stopped trial's
        ``stopped_at`` is that iteration.
    seed : int
        Seeds the validation split, the sampling of settings and every fit.
    refit : bool
        Refit the winner on all of ``Y`` for ``best_iter`` iterations (``result.model``).
    split : {"entries", "rows"}
        What validation holds out. ``"entries"`` (default): positives of each user, scored
        with the rest of that user's positives excluded from the ranking. ``"rows"``: whole
        rows (instances, as in multi-label learning; Yu et al. 2017, Supp-2.2): every trial
        fits on the other rows and their ``user_features``, and after every outer iteration
        the validation rows are scored from their features alone by cold start
        (:func:`fastpu.fold_in` with ``user_features``). Needs ``user_features`` (a keyword
        argument, else the Dataset's) and a method whose models allow a cold start (ocmf,
        fbgd; wrmf with ``user_features``). The refit sees all rows and all features.
    n_threads : int, optional
        Threads for the fits and the evaluation.
    verbose : bool
        Print one line per trial.
    **fixed
        Passed to every fit unchanged (``n_iter`` is the largest number of iterations a trial
        runs; the method's own default otherwise). With ``split="rows"`` the trials receive
        the fitted rows of ``user_features`` (dense array or sparse matrix, one row per row of
        ``Y``) and the refit all of it.

    Returns
    -------
    SearchResult
        ``.model`` (the refitted winner), ``.best_params``, ``.best_iter``, ``.best_score``,
        ``.trials`` (every trial's scores per iteration) and ``.table()``.

    Raises
    ------
    TypeError, ValueError
        Unknown method name (ValueError) or metric, a ``method`` that is neither a name nor a
        callable, or a function that cannot be called as ``fit(Y, k, *, n_iter, seed,
        callback, n_threads, ...)`` (TypeError, before any trial; a TypeError raised inside
        such a function is re-raised naming it and the trial, and one that returns None on
        the refit is a TypeError), a fixed keyword argument (TypeError) or a space that names
        a parameter (ValueError) the fit does not take (checked before any trial), a
        ``callback`` keyword (TypeError: the search passes its own), a ``verbose`` that is
        not a bool or an int (TypeError), an
        empty candidate list, a parameter both searched and fixed, ``n_trials < 1``, a
        validation fraction outside (0, 1), or when every trial failed (ValueError: how many,
        and the first one's error). ``split`` other than
        "entries"/"rows"; with ``split="rows"``: no ``user_features``, features with the wrong
        number of rows, a method that does not take them (als, bpr) or cannot start cold
        from them (csrr, homf), a fraction that holds out no row or every row with a positive,
        or row indices that overlap, lie outside Y or leave no positive to validate.

    Warns
    -----
    UserWarning
        Once, after the trials, when some (not all) of them failed: a fit raised a ValueError,
        FloatingPointError or LinAlgError, or gave no finite validation score. The message
        says how many of how many and the first one's error; those trials are skipped (score
        ``-inf``, their ``error`` in ``.trials``).

    Examples
    --------
    >>> import fastpu as fp
    >>> Y = fp.datasets.synthetic(60, 40, rank=3, density=0.15, seed=0).Y
    >>> res = fp.select.search("ocmf", Y, {"lam": [0.1, 10.0]}, k=4, n_iter=3, metric="ndcg@5")
    >>> sorted(res.best_params), 1 <= res.best_iter <= 3, res.model.shape
    (['k', 'lam'], True, (60, 40))

    Held-out instances, scored from their features (multi-label learning):

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(60, 5))
    >>> res = fp.select.search("ocmf", Y, {"lam": [0.1, 10.0]}, split="rows", user_features=X,
    ...                        k=4, n_iter=3, metric="precision@3")
    >>> res.model.extras["W"].shape          # one row per feature and the intercept's
    (6, 4)
    """
    return _search(method, Y, space, validation=validation, metric=metric, n_trials=n_trials,
                   seconds=seconds, first=first, stop_trailing=stop_trailing, seed=seed,
                   refit=refit, split=split, n_threads=n_threads, verbose=verbose,
                   families=None, **fixed)


def _search(method: str | Callable[..., Any], Y: Sparse | Dataset, space: dict[str, Any], *,
            validation: float | tuple[Any, Any], metric: str, n_trials: int | None,
            seconds: float | None, first: Any, stop_trailing: bool, seed: int, refit: bool,
            split: str, n_threads: Threads, verbose: bool,
            families: list[registry.Family] | None, **fixed: Any) -> SearchResult:
    """:func:`search`, or with ``families`` :func:`tune`'s rank ladder over them (``space``
    and ``first`` then unused)."""
    _families = families
    fit, name = _fit_function(method)
    mname, mk = _check_metric(metric)
    metric = mname if mk is None else f"{mname}@{mk}"     # 'ndcg@05' is evaluate's 'ndcg@5'
    if n_trials is not None:
        n_trials = V.check_int(n_trials, name="n_trials", minimum=1)
    rng = V.check_seed(seed)
    verbose = V.check_verbose(verbose)
    if not isinstance(refit, (bool, np.bool_)):
        raise TypeError(f"refit must be True or False, got {refit!r}")
    # what every trial passes on: refused here, not once per trial and then as "every trial failed"
    if n_threads is not None:
        check_threads(n_threads)
    for key in ("k", "n_iter"):
        if fixed.get(key) is not None:          # CSRR-I/II take k=None
            V.check_int(fixed[key], name=key, minimum=1)
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
        raise TypeError(f"seed must be a non-negative integer (every trial is refitted from it), got {seed!r}")
    split = R.check_split(split)
    ids = (Y.user_ids, Y.item_ids) if isinstance(Y, Dataset) else (None, None)
    data = Y
    Y = V.check_csr(Y.Y if isinstance(Y, Dataset) else Y, name="Y", nonnegative=False)
    holdout, fixed = _holdout(fit, name, data, Y, validation, split, int(seed), fixed,
                              (mk,) if mk is not None else (1,), mname, metric, n_threads)
    # after split="rows"'s own check of the method, whose message says more than this one
    _check_fixed(fit, f"{name}.fit" if isinstance(method, str) else f"{name}()", fixed)
    if _families is None:
        space = _check_space(space, fit, fixed, *Y.shape)
    if seconds is not None:
        seconds = V.check_scalar(seconds, name="seconds", minimum=0.0, strict_min=True)
    stop = _MedianRule() if V.check_bool(stop_trailing, name="stop_trailing") else None
    trials: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    if _families is None:
        first = _check_first(first, space)
        settings = _settings(space, n_trials, seconds, first, rng)
        total = n_trials if n_trials is not None else (len(settings) if isinstance(settings, list)
                                                       else None)
        plan = ((setting, True) for setting in settings)
    else:
        fams = [dataclasses.replace(fam, space=_check_space(fam.space, fit, {**fixed, **fam.fixed},
                                                            *Y.shape)) for fam in _families]
        total = n_trials
        plan = _ladder(fams, n_trials, seconds, rng, trials, t0)
    for t, (setting, stoppable) in enumerate(plan, 1):
        if seconds is not None and trials and time.perf_counter() - t0 >= seconds:
            break
        trials.append(_trial(fit, name, isinstance(method, str), t, total, setting, fixed,
                             holdout, int(seed), n_threads, verbose,
                             stop if stoppable else None))
    win = _winner(trials, name)
    best_params = {**{p: v for p, v in fixed.items() if p != "n_iter"}, **win["params"]}
    model = _refit(fit, name, Y, best_params, win["best_iter"], int(seed), n_threads,
                   ids) if refit else None
    return SearchResult(model=model, best_params=best_params, best_iter=win["best_iter"],
                        best_score=win["best_score"], metric=metric, trials=trials)


@dataclasses.dataclass
class _Holdout:
    """The validation split of a search: what every trial fits on (``Y_fit`` and the fit's extra
    keyword arguments, the fitted rows' features with ``split="rows"``) and how it is scored."""

    Y_fit: Any
    fit_kw: dict[str, Any]
    score: Callable[[Any], float]
    metric: str


def _holdout(fit: Callable[..., Any], name: str, data: Any, Y: Any, validation: Any, split: str,
             seed: int, fixed: dict[str, Any], ks: tuple[int, ...], mname: str, metric: str,
             n_threads: Threads) -> tuple[_Holdout, dict[str, Any]]:
    """The validation split carved from ``Y`` (entries of each user, or whole rows), checked,
    and the scorer of a model on it; ``fixed`` gains the Dataset's features with ``split="rows"``."""
    wanted = [mname]
    fit_kw: dict[str, Any] = {}
    if split == "rows":
        R.check_method(name, fit)
        fixed = R.with_features(fixed, data, Y.shape[0])
        if isinstance(validation, tuple):
            rows_fit, rows_valid = R.explicit_rows(validation, Y)
        else:
            frac = V.check_scalar(validation, name="validation", minimum=0.0, maximum=1.0,
                                  strict_min=True, strict_max=True)
            rows_fit, rows_valid = R.holdout_rows(Y, frac, seed, name="validation")
        X = fixed["user_features"]
        Y_fit, fit_kw["user_features"] = Y[rows_fit], R.take_rows(X, rows_fit)
        X_valid, Y_valid = R.take_rows(X, rows_valid), Y[rows_valid]

        def score(model: Any) -> float:
            return R.cold_scores(model, X_valid, Y_valid, ks, wanted, n_threads)[metric]

        return _Holdout(Y_fit, fit_kw, score, metric), fixed
    if isinstance(validation, tuple):
        if len(validation) != 2:
            raise ValueError(f"validation must be a fraction or a pair (Y_fit, Y_valid), got {len(validation)} items")
        Y_fit = V.check_csr(validation[0], name="validation[0] (Y_fit)", shape=Y.shape, nonnegative=False)
        Y_valid = V.check_csr(validation[1], name="validation[1] (Y_valid)", shape=Y.shape, nonnegative=False)
        union = (Y_fit != 0).astype(np.int8) + (Y_valid != 0).astype(np.int8)
        if (union.nnz and union.max() > 1) or ((union != 0) != (Y != 0)).nnz:
            raise ValueError("validation=(Y_fit, Y_valid) must split Y's positives into two disjoint "
                             "parts; they do not add up to Y")
    else:
        frac = V.check_scalar(validation, name="validation", minimum=0.0, maximum=1.0,
                              strict_min=True, strict_max=True)
        Y_fit, Y_valid = validation_split(Y, frac, seed=seed)
    if Y_valid.nnz == 0:
        raise ValueError("the validation split of Y holds no positives (users need at least 2 "
                         "positives to give one to validation); lower validation or use more data")

    def score_entries(model: Any) -> float:
        return evaluate(model, Y_fit, Y_valid, k=ks, metrics=wanted, n_threads=n_threads)[metric]

    return _Holdout(Y_fit, fit_kw, score_entries, metric), fixed


def _trial(fit: Callable[..., Any], name: str, named: bool, t: int, n_trials: int | None,
           setting: dict[str, Any], fixed: dict[str, Any], holdout: _Holdout, seed: int,
           n_threads: Threads, verbose: bool, stop: _MedianRule | None = None) -> dict[str, Any]:
    """Fit one setting on the validation split, scoring every outer iteration; a fit that fails
    with a numerical or value error is recorded (score -inf), a TypeError of a user's function
    names the trial; with a stopping ``stop`` rule a trailing trial stops early."""
    params = {**fixed, **setting, **holdout.fit_kw}
    shown = ", ".join(f"{p}={_fmt(v)}" for p, v in setting.items())
    scores: list[float] = []
    eval_s = [0.0]
    stopped: list[int] = []

    def callback(info: dict[str, Any]) -> bool:
        t0 = time.perf_counter()
        scores.append(holdout.score(info["model"]()))
        eval_s[0] += time.perf_counter() - t0
        if stop is not None and stop.trails(scores):
            stopped.append(len(scores))
            return True
        return False

    k = params.pop("k", None)
    error = None
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(holdout.Y_fit, k, seed=seed, callback=callback, n_threads=n_threads, **params)
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
        error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    except TypeError as exc:
        if named:
            raise
        raise TypeError(f"method {name}() raised on trial {t}/{n_trials} ({shown}): "
                        f"{type(exc).__name__}: {exc}") from exc
    fit_s = time.perf_counter() - t0 - eval_s[0]
    finite = [s for s in scores if math.isfinite(s)]
    if finite and error is None:
        best_i = int(np.argmax(scores)) + 1
        best = float(scores[best_i - 1])
    else:
        best_i, best = 0, -math.inf
    if stop is not None and error is None:
        stop.add(scores)
    if verbose:
        msg = error or f"best {holdout.metric} {best:.4f} at iteration {best_i}"
        if stopped:
            msg += f" (stopped at iteration {stopped[0]}: trailing the median)"
        print(f"[select {name}] trial {t}/{n_trials or '?'}  {shown}  {msg}  ({fit_s:.1f}s)",
              file=sys.stderr, flush=True)
    return dict(trial=t, params=dict(setting), scores=[float(s) for s in scores],
                best_iter=best_i, best_score=best, fit_seconds=fit_s, eval_seconds=eval_s[0],
                error=error, stopped_at=stopped[0] if stopped else None)


class _MedianRule:
    """The median stopping rule: a trial stops at iteration t (t >= ``grace``) when its best
    score so far is below the median of the earlier trials' best-so-far at t (over at least
    ``min_trials`` earlier trials that reached t)."""

    def __init__(self, grace: int = 3, min_trials: int = 2) -> None:
        self.grace, self.min_trials = grace, min_trials
        self.curves: list[np.ndarray] = []           # earlier trials' best-so-far per iteration

    def add(self, scores: list[float]) -> None:
        vals = np.asarray(scores, dtype=np.float64)
        if vals.size:
            self.curves.append(np.maximum.accumulate(np.where(np.isfinite(vals), vals, -np.inf)))

    def trails(self, scores: list[float]) -> bool:
        t = len(scores)
        if t < self.grace:
            return False
        ref = [c[t - 1] for c in self.curves if c.size >= t]
        if len(ref) < self.min_trials:
            return False
        best = max((s for s in scores if math.isfinite(s)), default=-math.inf)
        return best < float(np.median(ref))


def _check_first(first: Any, space: dict[str, Any]) -> list[dict[str, Any]]:
    """``first`` as a list of settings of exactly the searched parameters (empty for None)."""
    if first is None:
        return []
    many = isinstance(first, (list, tuple))
    out = []
    for one in (first if many else [first]):
        if not isinstance(one, dict):
            raise TypeError(f"first must be a dict of the searched parameters' values (or a list "
                            f"of such dicts), got {type(one).__name__}")
        if set(one) != set(space):
            raise ValueError(f"first must set exactly the searched parameters {sorted(space)}, got "
                             f"{sorted(one)}")
        out.append(dict(one))
    return out


def _settings(space: dict[str, Any], n_trials: int | None, seconds: float | None,
              first: list[dict[str, Any]], rng: np.random.Generator) -> Any:
    """The settings to try, ``first``'s first: a list (a grid, a sample of it, ``n_trials`` random
    draws), or an endless stream of random draws when only ``seconds`` bounds the search."""
    lead = list(first)
    rest = None if n_trials is None else n_trials - len(lead)
    if rest is not None and rest <= 0:
        return lead[:n_trials]
    if rest is None and seconds is not None and not all(isinstance(v, list) for v in space.values()):
        def stream() -> Any:
            yield from lead
            while True:
                yield _draw(space, 1, rng)[0]
        return stream()
    return lead + _draw(space, rest, rng)


def _ladder(families: list[registry.Family], budget: int | None, seconds: float | None,
            rng: np.random.Generator, trials: list[dict[str, Any]],
            t0: float) -> Any:
    """tune's settings, one at a time as (setting, the median rule applies), reading the trials
    run so far (``trials`` grows as the search runs them).

    1. At each family's start rank: each family's first setting, then draws from the families
       in turn — half the budget (all of it when the rank is fixed or cannot grow), or half the
       seconds; the median rule stops trailing trials here, where they are comparable.
    2. The ladder: the best setting so far at the next rank up (the rank doubles), and, while
       the budget leaves room to climb further, one setting drawn around it (:func:`_near`);
       climb again while the best at the new rank beats the best below it.
    3. Whatever budget is left: settings drawn around the best trial, at its rank.
    """
    ranks = families[0].space.get("k")
    climb = isinstance(ranks, list) and len(ranks) > 1 and (budget is None or budget >= 2)
    ladder: list[Any] = ranks if isinstance(ranks, list) else []
    origin: list[registry.Family] = []            # the family of each trial, in order

    def at(fam: registry.Family, k: Any, values: dict[str, Any]) -> dict[str, Any]:
        setting = dict(fam.fixed)
        if isinstance(ranks, list):
            setting["k"] = k
        setting.update(values)
        origin.append(fam)
        return setting

    def drawn(fam: registry.Family) -> dict[str, Any]:
        rest = {p: v for p, v in fam.space.items() if p != "k"}
        return _draw(rest, 1, rng)[0] if rest else {}

    def start(fam: registry.Family) -> Any:
        if not isinstance(ranks, list):
            return None
        if not climb:
            return ranks[int(rng.integers(len(ranks)))] if len(ranks) > 1 else ranks[0]
        below = [r for r in ranks if r <= fam.start_rank]
        return below[-1] if below else ranks[0]

    def left() -> float:
        return math.inf if budget is None else budget - len(trials)

    def best(pred: Callable[[dict[str, Any]], bool] = lambda t: True) -> dict[str, Any] | None:
        ok = [t for t in trials if t["error"] is None and t["best_iter"] > 0 and pred(t)]
        return max(ok, key=lambda t: (t["best_score"], -t["trial"])) if ok else None

    explore = (budget if not climb else max(len(families), -(-budget // 2))) \
        if budget is not None else None
    queue = [(fam, fam.first) for fam in families if fam.first is not None]
    i = 0
    while (explore is None or i < min(explore, budget or explore)):
        if explore is None and seconds is not None and trials \
                and time.perf_counter() - t0 >= (seconds / 2 if climb else seconds):
            break
        if queue:
            fam, values = queue.pop(0)
        else:
            fam = families[i % len(families)]
            values = drawn(fam)
        yield at(fam, start(fam), values), True
        i += 1
    top = best()
    if top is None:
        return                                    # every trial failed: nothing to climb from
    if climb:
        while left() > 0:
            higher = [r for r in ladder if r > top["params"]["k"]]
            if not higher:
                break
            fam = origin[top["trial"] - 1]
            yield at(fam, higher[0], {p: v for p, v in top["params"].items()
                                      if p != "k" and p not in fam.fixed}), False
            if left() > len(higher) - 1 and left() > 0:
                yield at(fam, higher[0], _near(top["params"], fam, rng)), False
            rank = higher[0]
            rung = best(lambda t: bool(t["params"].get("k") == rank))
            if rung is None or rung["best_score"] <= top["best_score"]:
                break
            top = rung
    while left() > 0:
        top = best()
        if top is None:
            return
        fam = origin[top["trial"] - 1]
        yield at(fam, top["params"].get("k"), _near(top["params"], fam, rng)), False


def _near(params: dict[str, Any], fam: registry.Family, rng: np.random.Generator) -> dict[str, Any]:
    """A setting drawn around ``params``: each searched value of a log-uniform range times
    e^N(0, 0.5²), of another range plus N(0, (a tenth of its width)²), inside the range; a
    list's value stays."""
    out = {}
    for p, dist in fam.space.items():
        if p == "k" or p not in params:
            continue
        v = params[p]
        if isinstance(dist, list) or not _is_distribution(dist) or \
                not isinstance(v, numbers.Real) or isinstance(v, bool):
            out[p] = v                   # a list's value, or a default such as None, stays
            continue
        lo, hi = (float(x) for x in dist.support())
        if getattr(getattr(dist, "dist", None), "name", "") in ("loguniform", "reciprocal"):
            w = float(v) * math.exp(rng.normal(0.0, 0.5))
        else:
            w = float(v) + rng.normal(0.0, 0.1 * (hi - lo if math.isfinite(hi - lo) else 1.0))
        out[p] = float(min(max(w, lo), hi))
    return out


def _winner(trials: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The best trial (earliest on ties); failed trials are skipped with one warning, and all
    of them failing is an error naming the first one's."""
    ok = [tr for tr in trials if tr["error"] is None and tr["best_iter"] > 0]
    failed = [tr for tr in trials if tr["error"] is not None or tr["best_iter"] == 0]
    if failed:
        tr = failed[0]
        why = tr["error"] or ("no finite validation score (the fit never called its callback, or "
                              "every score was NaN or inf)")
        shown = ", ".join(f"{p}={_fmt(v)}" for p, v in tr["params"].items())
        first = f"first: trial {tr['trial']} with {shown}: {why}"
        if not ok:
            raise ValueError(f"every trial failed ({len(trials)} of {len(trials)} trials of {name}; "
                             f"{first}); check the space and the fixed arguments")
        warnings.warn(f"{len(failed)} of {len(trials)} trials of {name} failed and were skipped "
                      f"({first}); result.trials has every trial's error", UserWarning, stacklevel=3)
    return max(ok, key=lambda tr: (tr["best_score"], -tr["trial"]))


def _refit(fit: Callable[..., Any], name: str, Y: Any, best_params: dict[str, Any],
           best_iter: int, seed: int, n_threads: Threads, ids: tuple[Any, Any]) -> Any:
    """The winner refitted on all of ``Y`` for its best number of iterations, with Y's ids."""
    kw = dict(best_params)
    k = kw.pop("k", None)
    model = fit(Y, k, n_iter=best_iter, seed=seed, n_threads=n_threads, **kw)
    if model is None:
        raise TypeError(f"method {name}() returned None on the refit; a fit function must return "
                        "the fitted model (or pass refit=False)")
    if ids[0] is not None:
        model = dataclasses.replace(model, user_ids=ids[0], item_ids=ids[1])
    return model


def _check_name(method: Any, where: str) -> None:
    """A name of :data:`SPACES`, the methods with a default space."""
    names = ", ".join(map(repr, SPACES))
    if callable(method) and not isinstance(method, str):
        raise TypeError(f"{where} takes a method name ({names}), got the function "
                        f"{_callable_name(method)}; it has a default space for those only: call "
                        "fastpu.select.search(fit, Y, space, n_trials=...) with a space of your own")
    if not isinstance(method, str):
        raise TypeError(f"method must be a method name ({names}), got {type(method).__name__} {method!r}")
    if method not in SPACES:
        raise ValueError(f"method must be one of {names}, got {method!r}"
                         f"{did_you_mean(method, set(SPACES))}")


def default_space(method: str, Y: Sparse | Dataset | None = None,
                  **fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The space and fixed settings :func:`tune` uses for ``method`` when it has no families.

    ocmf's :func:`tune` draws from its families (SQ-wSQ, iALS's weighting, LR-wSQ: each a fixed
    part and a space like this one); this space is the one it searches when the fixed
    arguments leave none of them.

    Parameters
    ----------
    method : str
        A name of :data:`NAMES`.
    Y : scipy.sparse matrix, optional
        Needed where a range scales with the data (fBGD's ``alpha0`` with the number of items).
    **fixed
        Keyword arguments the user fixes: they leave the space and override the defaults.

    Returns
    -------
    space, fixed : dict, dict

    Raises
    ------
    TypeError, ValueError
        For a ``method`` that is not a string (TypeError) or not one of the names (ValueError).

    Examples
    --------
    >>> from fastpu.model_selection.select import default_space
    >>> space, fixed = default_space("ocmf", loss="square")
    >>> sorted(space), fixed["loss"], fixed["n_iter"]
    (['k', 'lam', 'rho'], 'square', 16)
    >>> import fastpu as fp
    >>> default_space("ocmf", fp.datasets.synthetic(900, 700, seed=0).Y)[0]["k"]
    [16, 32, 64, 128, 256, 512]
    """
    _check_name(method, "default_space")
    space, fixed_out = registry.get(method).resolve("space")(**fixed)
    if Y is not None:
        m, n = V.check_csr(Y.Y if isinstance(Y, Dataset) else Y, name="Y", nonnegative=False).shape
        space = {k: (v(m, n) if callable(v) and not _is_distribution(v) else v) for k, v in space.items()}
    return space, fixed_out


def tune(method: str, Y: Sparse | Dataset, *, budget: int | None = 16,
         seconds: float | None = None, space: dict[str, Any] | None = None,
         validation: float | tuple[Any, Any] = 0.2, metric: str = "ndcg@10", seed: int = 0,
         refit: bool = True, split: str = "entries", n_threads: Threads = None,
         verbose: bool = False, **fixed: Any) -> SearchResult:
    """A search of the method's settings on a validation split: its families, then a rank ladder.

    A method's settings come in families (:func:`fastpu._core.registry.get`'s ``families``;
    a method without them has one, its default space :data:`SPACES` with its defaults first).
    ocmf's are SQ-wSQ (``fit``'s default), iALS's weighting (``negatives="all"``, ``nu=1``)
    and LR-wSQ, each with a first setting. The search runs in three parts:

    1. at each family's start rank (128 for ocmf, 64 for the others, as far as the matrix
       allows), each family's first setting, then settings drawn from the families in turn,
       for half the budget (all of it when the rank is fixed);
    2. the rank ladder: the best setting at the next rank up (k doubles, to 2048 as far as
       the matrix allows) and one setting drawn around it, climbing again while the new rank
       beats the one below;
    3. whatever budget is left refines around the best trial, at its rank.

    A trial whose best validation score trails the median of the earlier trials' at the same
    iteration stops there (:func:`search`'s ``stop_trailing``) while the families are explored,
    so the budget buys more settings. Keyword arguments the search does not cover are passed
    to ``fit`` unchanged and leave the space: ``tune("ocmf", Y, loss="logistic")`` tunes LR-wSQ
    alone, ``tune("ocmf", Y, k=64)`` keeps the rank (no ladder). With nothing to search
    (popularity's space is empty, or the keyword arguments fix every parameter of the space)
    the one trial is the fit with the fixed settings, its best iteration chosen on the
    validation split as usual.

    Parameters
    ----------
    method : str
        A name of :data:`NAMES` (the methods and baselines of the registry,
        :func:`fastpu._core.registry.names`).
    Y : scipy.sparse matrix or Dataset
        Training positives only (the validation split is carved from it).
    budget : int or None
        Number of trials (the defaults included). None: as many as ``seconds`` allows.
    seconds : float, optional
        A wall-time budget in seconds: no trial starts after it (see :func:`search`).
    space : dict, optional
        Replaces the default space (then this is :func:`search` with ``n_trials=budget`` and no
        defaults-first trial); a parameter it searches leaves the default fixed settings.
    validation, metric, seed, refit, split, n_threads, verbose
        As in :func:`search` (``split="rows"``: held-out instances scored from their
        ``user_features``).
    **fixed
        Passed to every fit.

    Returns
    -------
    SearchResult
        The refitted winner is ``.model``; ``.trials[0]`` is the first family's first setting
        (for ocmf, ``fit``'s defaults at the start rank).

    Raises
    ------
    TypeError, ValueError
        As :func:`search` (a keyword argument the method's fit does not take is a TypeError
        before any trial); ``budget < 1``, or neither ``budget`` nor ``seconds``; a ``method``
        that is not one of the names (a function is a TypeError: call :func:`search` with a
        space of your own).

    Warns
    -----
    UserWarning
        As :func:`search`: once, when some of the trials failed.

    Examples
    --------
    >>> import fastpu as fp
    >>> Y = fp.datasets.synthetic(60, 40, rank=3, density=0.15, seed=0).Y
    >>> res = fp.select.tune("ocmf", Y, budget=2, n_iter=2, metric="ndcg@5")
    >>> sorted(res.best_params), res.trials[0]["params"]["k"], res.model.shape
    (['k', 'lam', 'loss', 'negatives', 'nu', 'rho'], 32, (60, 40))
    """
    if budget is not None:
        budget = V.check_int(budget, name="budget", minimum=1)
    elif seconds is None:
        raise ValueError("tune needs a budget: a number of trials (budget=16), a number of "
                         "seconds (seconds=300), or both")
    _check_name(method, "tune")
    data = Y.Y if isinstance(Y, Dataset) else Y
    default, fixed_all = default_space(method, data, **fixed)
    if space is not None or not default:
        if space is not None:   # the defaults yield to what the given space searches (e.g. k)
            fixed_all = {p: v for p, v in fixed_all.items() if p in fixed or p not in space}
        else:                   # nothing to search: the fit once, with the fixed settings
            space, budget, seconds = _NOTHING, 1, None
        return search(method, Y, space, validation=validation, metric=metric, n_trials=budget,
                      seconds=seconds, stop_trailing=True, seed=seed, refit=refit, split=split,
                      n_threads=n_threads, verbose=verbose, **fixed_all)
    fams = _families_of(method, data, default, fixed_all)
    return _search(method, Y, default, validation=validation, metric=metric, n_trials=budget,
                   seconds=seconds, first=None, stop_trailing=True, seed=seed, refit=refit,
                   split=split, n_threads=n_threads, verbose=verbose, families=fams, **fixed_all)


def _families_of(method: str, data: Any, default: dict[str, Any],
                 fixed: dict[str, Any]) -> list[registry.Family]:
    """The families tune draws from: the entry's (their shape-dependent ranges resolved), or
    one family of the default space whose first setting is the method's defaults."""
    entry = registry.get(method)
    fams = entry.resolve("families")(**fixed) if entry.families is not None else None
    if fams:
        m, n = V.check_csr(data, name="Y", nonnegative=False).shape
        return [dataclasses.replace(fam, space={
            k: (v(m, n) if callable(v) and not _is_distribution(v) else v)
            for k, v in fam.space.items()}) for fam in fams]
    first = _defaults_of(method, default, fixed)
    if first is not None:
        first = {p: v for p, v in first.items() if p != "k"}
    return [registry.Family(method, {}, default, first, registry.DEFAULT_RANK)]


def _defaults_of(method: str, space: dict[str, Any],
                 fixed: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The method's own default of every parameter the space searches: the fit's defaults
    (where the fit's signature says None, the value its registry entry's ``defaults`` gives for
    the ``fixed`` arguments: ocmf's ρ and λ depend on the loss), and rank 64 (or the largest
    the space allows below it); None when a parameter has no default."""
    entry = registry.get(method)
    params = inspect.signature(entry.resolve("fit")).parameters
    chosen = entry.resolve("defaults")(**(fixed or {})) if entry.defaults is not None else {}
    out: dict[str, Any] = {}
    for name, values in space.items():
        if name == "k" and isinstance(values, list):
            fits = [r for r in values if r <= registry.DEFAULT_RANK]
            out["k"] = max(fits) if fits else min(values)
        elif name in params and params[name].default is None and name in chosen:
            out[name] = chosen[name]
        elif name in params and params[name].default is not inspect.Parameter.empty:
            out[name] = params[name].default
        else:
            return None
    return out
