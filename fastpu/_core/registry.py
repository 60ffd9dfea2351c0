"""The one list of fastpu's methods and baselines, and where each one's parts live.

Every consumer that handles "each method" reads this list instead of spelling the methods out:
the command line (its ``--method`` choices, the demo, warm-up), :mod:`fastpu.model_selection`
(search spaces, ``compare``'s "all"), :func:`fastpu.fold_in` (each method's row solver),
:func:`fastpu.distributed.fit` (each method's Dask form) and the model file reader (the model
classes a file may name). Adding a method is adding an entry here and a package beside the others.

An entry names each part by its dotted path (``"package.module:attribute"``) and the part is
imported on first use, so reading the list imports no method: this module sits at the bottom of
the layers (docs/layout.md) although what it names sits above it.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

__all__ = ["Entry", "BASELINES", "DEFAULT_RANK", "Family", "METHODS", "RANKS", "check_fitted", "entries",
           "get", "names", "rank_space", "resolve"]


@dataclasses.dataclass(frozen=True)
class Entry:
    """One method or baseline: its name, what it is, and where its parts live.

    Attributes
    ----------
    name : str
        The name users pass (``fastpu.<name>.fit``, ``method="ocmf"``, ``--method ocmf``).
    kind : {"method", "baseline"}
        A published method of its own package, or a baseline for comparisons.
    summary : str
        One line for listings and messages.
    fit : str
        The fit function, ``fit(Y, k, *, ...)``.
    default_rank : int, str or None
        The rank the command line uses when none is given: a number, None (the fit takes no
        rank), or the dotted path of ``default_rank(params) -> int or None`` when it depends on
        the other parameters (CSRR-I/II choose their own rank). See :meth:`rank_for`.
    fold : str or None
        The module (or object) of the row solver of fold-in and partial fits:
        ``fold_rows(model, Y_new, X, *, p, q, tol, max_iter, rng, dense_limit) -> (factors,
        info)``, and optionally ``values_may_be_negative(model) -> bool`` (default: stored
        values must be >= 0).
    partial : str or None
        What partial fits (:func:`fastpu.partial_fit_users`, ``partial_fit_items``) need beyond
        the row solver: an object with ``swap(model, p)`` (the model with the roles of users
        and items exchanged, or a ValueError saying why the item side is not a row problem of
        the same kind), ``fitted_users(model)`` and ``rows_changed(...)``
        (``fastpu/model/_sides.py``).
    dask : str or None
        The module of the Dask form: ``fit(client, layout, k, **params)`` and
        ``check(params)`` (refuses, in a sentence, a variant with no distributed form).
    space : str or None
        ``space(**fixed) -> (space, fixed)``: the default search space of ``tune`` (an empty
        space when there is nothing to search: ``tune`` fits the entry once). An entry without
        one is not searched (:data:`fastpu.select.NAMES`).
    families : str or None
        ``families(**fixed) -> list of Family or None``: the model families ``tune`` draws its
        settings from, each with fixed settings of its own, its space, its first setting and
        the rank its ladder starts from (ocmf: iALS's square loss and LR-wSQ); None (or a
        function returning None for these fixed arguments): one family, ``space``'s.
    defaults : str or None
        ``defaults(**fixed) -> dict``: the values of the fit's parameters whose signature
        default is None because they depend on other arguments (ocmf's ρ and λ depend on the
        loss), for ``tune``'s first trial, the method's defaults.
    demo : str or None
        ``demo_configs() -> [(label, fit kwargs, legend), ...]``: ``fastpu demo`` (which prints
        each row's one-line legend under its table) and the warm-up.
    model_class : str
        The class of the fitted model, the one a model file may name for this entry.
    fitted : str or None
        ``check_fitted(model)``: checks a fitted model's ``params`` and ``extras`` (and parts)
        against its factors with the checks the fit uses, raising a TypeError or ValueError
        naming the entry. Model files (written and read), fold-in and the method's own uses of
        a model call it: an edited model never reaches a kernel.
    side : tuple of str
        The side information of a :class:`~fastpu.datasets.Dataset` the command line passes
        to ``fit`` (``--side``).
    cold_start : str or None
        Why held-out rows cannot be scored from their features (``split="rows"``), or None
        when they can (a fit with ``user_features``).
    requires : str or None
        An optional package the entry needs (left out of ``compare``'s "all").
    compile_seconds : float or None
        Seconds the method's first fit spends compiling its numba kernels in an empty cache
        (measured on the project's 2-core machine by benchmarks/speed/bench_first_demo.py, see
        docs/benchmarks/bench_first_demo.md; the first-run notice quotes it).
    """

    name: str
    kind: str
    summary: str
    fit: str
    default_rank: int | str | None = 64
    fold: str | None = None
    partial: str | None = None
    dask: str | None = None
    space: str | None = None
    families: str | None = None
    defaults: str | None = None
    demo: str | None = None
    model_class: str = "fastpu._core.factorization:Factorization"
    fitted: str | None = None
    side: tuple[str, ...] = ()
    cold_start: str | None = None
    requires: str | None = None
    compile_seconds: float | None = None

    def rank_for(self, params: dict[str, Any]) -> int | None:
        """The rank to fit with ``params`` when the caller gives none (None: no rank)."""
        if isinstance(self.default_rank, str):
            return resolve(self.default_rank)(params)
        return self.default_rank

    def resolve(self, part: str) -> Any:
        """The object the entry's ``part`` names (imported on first use)."""
        where = getattr(self, part)
        if where is None:
            raise LookupError(f"{self.name} has no {part}")
        return resolve(where)


def resolve(where: str) -> Any:
    """The object at ``"package.module:attribute"`` (or the module, without ``:attribute``),
    imported on first use. This is how the layers below reach the parts above them that they
    name (a method's row solver, the model file writer) without importing them: see
    docs/layout.md."""
    module, _, attr = where.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attr) if attr else obj


METHODS = (
    Entry("ocmf", "method", "one-class structured MF with side information (Yu et al.)",
          fit="fastpu.ocmf:fit", fold="fastpu.ocmf._fold", dask="fastpu.ocmf._dask",
          partial="fastpu.model._sides:ocmf", compile_seconds=7.5,
          fitted="fastpu.ocmf._check:check_fitted",
          space="fastpu.ocmf._tuning:space", families="fastpu.ocmf._tuning:families",
          defaults="fastpu.ocmf._check:loss_defaults",
          demo="fastpu.ocmf:demo_configs",
          side=("user_graph", "user_features")),
    Entry("fbgd", "method", "fBGD, all-sample batch gradient with Adagrad (Yuan et al.)",
          fit="fastpu.fbgd:fit", fold="fastpu.fbgd._fold", dask="fastpu.fbgd._dask",
          partial="fastpu.model._sides:fbgd", compile_seconds=5.5,
          fitted="fastpu.fbgd._check:check_fitted",
          space="fastpu.fbgd._tuning:space", demo="fastpu.fbgd:demo_configs"),
    Entry("csrr", "method", "CSRR, cost-sensitive low rank + sparse (Yang et al.)",
          # k is optional (CSRR-I/II choose their rank) but the default variant "e" needs it:
          # the command line gives it the usual rank when --param k is not given
          fit="fastpu.csrr:fit", default_rank="fastpu.csrr._check:default_rank",
          fold="fastpu.csrr._fold", dask="fastpu.csrr._dask", partial="fastpu.model._sides:csrr",
          compile_seconds=1.2,
          space="fastpu.csrr._tuning:space", demo="fastpu.csrr:demo_configs",
          model_class="fastpu.csrr:CSRRModel", fitted="fastpu.csrr._check:check_fitted",
          cold_start="CSRR's user factors are free parameters of the training rows (no map "
                     "from features)"),
    Entry("homf", "method", "HOMF, factorizing a polynomial of a random walk (Shah, Rao, Ding)",
          fit="fastpu.homf:fit", fold="fastpu.homf._fold", dask="fastpu.homf._dask",
          partial="fastpu.model._sides:homf", compile_seconds=3,
          fitted="fastpu.homf._check:check_fitted",
          space="fastpu.homf._tuning:space", demo="fastpu.homf:demo_configs",
          side=("user_graph",),
          cold_start="HOMF's user factors come from walks on the training graph (a new row has "
                     "no edges)"),
)

BASELINES = (
    Entry("popularity", "baseline", "every user scores an item by its number of training positives",
          fit="fastpu.model_selection.metrics:popularity", default_rank=None,
          fold="fastpu.model_selection.baselines:POPULARITY_FOLD",
          space="fastpu.model_selection.baselines:popularity_space"),
    Entry("wrmf", "baseline", "WRMF / implicit ALS through ocmf's square loss",
          fit="fastpu.model_selection.baselines:wrmf",
          fold="fastpu.model_selection.baselines:WRMF_FOLD",
          space="fastpu.model_selection.baselines:wrmf_space"),
    Entry("ease", "baseline", "EASE, the closed-form item-item model (Steck)",
          fit="fastpu.model_selection.baselines:ease", default_rank=None,
          fold="fastpu.model_selection._item_item",
          space="fastpu.model_selection._item_item:ease_space",
          model_class="fastpu.model_selection._item_item:ItemItemModel",
          cold_start="EASE scores a user from its positives (no map from features)"),
    Entry("itemknn", "baseline", "item-based kNN with cosine similarities",
          fit="fastpu.model_selection.baselines:item_knn", default_rank=None,
          fold="fastpu.model_selection._item_item",
          space="fastpu.model_selection._item_item:item_knn_space",
          model_class="fastpu.model_selection._item_item:ItemItemModel",
          cold_start="item-kNN scores a user from its positives (no map from features)"),
    Entry("als", "baseline", "implicit's ALS (when implicit is installed)",
          fit="fastpu.model_selection.baselines:implicit_als",
          fold="fastpu.model_selection.baselines:ALS_FOLD",
          space="fastpu.model_selection.baselines:als_space", requires="implicit"),
    Entry("bpr", "baseline", "implicit's BPR (when implicit is installed)",
          fit="fastpu.model_selection.baselines:implicit_bpr",
          space="fastpu.model_selection.baselines:bpr_space", requires="implicit"),
)

_ALL = {e.name: e for e in METHODS + BASELINES}

#: the ranks ``select.tune`` searches (log scale; its ladder doubles the rank from a family's
#: start while validation improves), and the rank of a family's first trial by default
RANKS = (16, 32, 64, 128, 256, 512, 1024, 2048)
DEFAULT_RANK = 64


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family of ``select.tune``: fixed settings of its own, the space its other
    parameters are drawn from, its first setting (of the space's parameters other than ``k``;
    None: drawn), and the rank its ladder starts from."""

    label: str
    fixed: dict[str, Any]
    space: dict[str, Any]
    first: dict[str, Any] | None = None
    start_rank: int = DEFAULT_RANK


def rank_space(m: int, n: int) -> list[int]:
    """The ranks of :data:`RANKS` an m × n matrix allows (at most min(m, n); the smallest such
    rank when none of them fits)."""
    top = min(m, n)
    return [r for r in RANKS if r <= top] or [max(1, top)]


def entries(kind: str | None = None) -> tuple[Entry, ...]:
    """Every entry, or those of one ``kind`` ("method" or "baseline"), in the listed order."""
    return tuple(e for e in _ALL.values() if kind is None or e.kind == kind)


def names(kind: str | None = None) -> tuple[str, ...]:
    """The names of :func:`entries`."""
    return tuple(e.name for e in entries(kind))


def get(name: str) -> Entry:
    """The entry called ``name`` (KeyError when there is none: callers name the choices)."""
    return _ALL[name]


def check_fitted(model: Any) -> None:
    """Run the ``fitted`` check of the entry that ``model.method`` names, or else of the entry
    whose own model class ``model`` is (a CSRRModel is checked as CSRR's whatever its method
    says); nothing for a baseline or a model built by hand under another name."""
    entry = _ALL.get(model.method) if isinstance(model.method, str) else None
    if entry is None or entry.fitted is None:
        base = Entry.__dataclass_fields__["model_class"].default
        entry = next((e for e in _ALL.values() if e.fitted is not None and e.model_class != base
                      and resolve(e.model_class) is type(model)), None)
    if entry is not None and entry.fitted is not None:
        resolve(entry.fitted)(model)
