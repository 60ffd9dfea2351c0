"""Standard baselines in fastpu's calling convention, so they can be tuned and compared alike.

The baselines that ``tune``, ``compare`` and the command line know are the entries of kind
"baseline" of :mod:`fastpu._core.registry` (``registry.names("baseline")``); this module holds
their fits and search spaces:

- :func:`popularity` — every user ranks items by their training count;
- :func:`wrmf` — WRMF / implicit ALS (Hu, Koren, Volinsky 2008) expressed through ocmf's square
  loss with confidence weights: confidence c_ij = 1 + ``alpha`` · r_ij on the positives and 1 on
  every other entry, target 1 on the positives and 0 elsewhere, λ(‖W‖² + ‖H‖²). This is
  :func:`fastpu.ocmf.fit` with ``loss="square", rho=1, a_bar=0`` on the matrix ``1 + alpha·Y``:
  ocmf's Full objective is then term for term the WRMF objective (tested). The `implicit`
  package's ALS weights a positive by ``alpha · r`` instead of ``1 + alpha · r`` (its solver
  adds ``(c − 1) y yᵀ`` per positive): on binary data implicit's ``alpha=a`` is ``wrmf``'s
  ``alpha=a − 1``, and its ``regularization`` is ``lam``;
- :func:`ease` — EASE (Steck, WWW 2019), the closed-form item-item model B = I − P·diagMat(1/diag P),
  P = (XᵀX + λI)⁻¹, diag(B) = 0; scores x B;
- :func:`item_knn` — item-based kNN with cosine similarities, scores x B with B the neighbours'
  similarities;
- :func:`implicit_als`, :func:`implicit_bpr` — the `implicit` package's ALS and BPR (optional:
  only when `implicit` is installed), wrapped as ``fit(Y, k, *, ...)`` functions that report
  every iteration's model to the callback.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu.model_selection._item_item import ItemItemModel, ease, item_knn
from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu._core.names import did_you_mean, fit_names
from fastpu import ocmf
from fastpu._core.progress import Progress
from fastpu._core.threads import check_threads, limit_threads
from fastpu.model_selection.metrics import popularity
from fastpu._core.factorization import Factorization, accepts_dataset
from fastpu._core.dataset import Dataset
from fastpu._core.hints import Callback, Seed, Sparse, Threads

__all__ = ["ItemItemModel", "ease", "implicit_als", "implicit_bpr", "item_knn",
           "popularity", "wrmf", "wrmf_weights"]


def wrmf_weights(Y: Sparse, alpha: float) -> Sparse:
    """The confidence matrix 1 + alpha · r on the positives of ``Y`` (its stored values r).

    Parameters
    ----------
    Y : scipy.sparse matrix
        Observed positives (values are counts, ratings or ones).
    alpha : float
        Confidence slope α >= 0.

    Returns
    -------
    scipy.sparse.csr_array
        Same pattern as ``Y``, values 1 + α r.

    Raises
    ------
    TypeError, ValueError
        If ``Y`` is not a valid non-negative sparse matrix or ``alpha`` is not a finite number >= 0.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model_selection.baselines import wrmf_weights
    >>> wrmf_weights(sp.csr_array(np.array([[2.0, 0.0]])), 10.0).toarray()
    array([[21.,  0.]])
    """
    Y = V.check_csr(Y, name="Y")
    alpha = V.check_scalar(alpha, name="alpha", minimum=0.0)
    C = Y.copy()
    C.data = 1.0 + alpha * C.data
    return C


_WRMF_OWN = ("alpha", "lam", "n_iter", "seed", "n_threads", "callback", "verbose")
#: what wrmf sets or fixes: not among the ocmf.fit arguments it passes on
_WRMF_SETS = {"Y", "k", "loss", "rho", "a_bar", "p", "q", "negatives", *_WRMF_OWN}
#: the ocmf.fit arguments wrmf passes on (its **ocmf_params)
_WRMF_PASSED_ON = sorted((fit_names(ocmf.fit) or set()) - _WRMF_SETS)


def _check_ocmf_params(ocmf_params: dict[str, Any]) -> None:
    """Refuse keyword arguments neither wrmf nor ocmf.fit takes, naming them and the accepted ones."""
    passed_on = _WRMF_PASSED_ON
    unknown = [key for key in ocmf_params if key not in passed_on]
    if not unknown:
        return
    hint = did_you_mean(unknown[0], [*_WRMF_OWN, *passed_on]) if len(unknown) == 1 else ""
    what = (f"an unexpected keyword argument {unknown[0]!r}" if len(unknown) == 1 else
            f"unexpected keyword arguments {', '.join(map(repr, unknown))}")
    raise TypeError(f"wrmf got {what}{hint}; it takes {', '.join(_WRMF_OWN)} and these of "
                    f"fastpu.ocmf.fit: {', '.join(passed_on)}")


@accepts_dataset
def wrmf(Y: Sparse | Dataset, k: int, *, alpha: float = 5.0, lam: float = 36.0, n_iter: int = 15,
         seed: Seed = 0, n_threads: Threads = None, callback: Callback = None,
         verbose: bool = False, **ocmf_params: Any) -> Factorization:
    """WRMF / implicit ALS through ocmf's square loss with confidence weights.

    Minimises Σ_ij c_ij (p_ij − w_i·h_j)² + λ(‖W‖² + ‖H‖²) with p_ij = 1 on the positives and 0
    elsewhere, c_ij = 1 + α r_ij on the positives and 1 elsewhere (Hu, Koren, Volinsky 2008).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n), or Dataset
        Observed positives; the stored values r_ij scale the confidence (ones for binary data).
    k : int
        Rank.
    alpha : float
        Confidence slope α: c = 1 + α r on the positives (on binary data implicit's
        ``alpha=a`` is ``alpha=a - 1`` here; see the module docstring). The defaults α = 5,
        λ = 36 are ocmf's default SQ-wSQ (ρ = 1/6, λ = 6) in WRMF's terms: the same objective
        times 1 + α = 6.
    lam : float
        Regularisation λ (implicit's ``regularization``).
    n_iter, seed, n_threads, callback, verbose
        As in :func:`fastpu.ocmf.fit`.
    **ocmf_params
        Further :func:`fastpu.ocmf.fit` arguments (``newton_steps``, ``cg_steps``, ``dtype``, ...).

    Returns
    -------
    Factorization
        ``method`` is ``"wrmf"``; ``params`` records ``alpha`` and ``lam``.

    Raises
    ------
    TypeError, ValueError
        As :func:`fastpu.ocmf.fit`, and for a loss, ``rho`` or ``a_bar`` that is not WRMF's; a
        keyword argument that neither wrmf nor :func:`fastpu.ocmf.fit` takes (TypeError naming
        it and the accepted names, before any work).

    Examples
    --------
    >>> import fastpu as fp
    >>> Y = fp.datasets.synthetic(40, 30, rank=3, density=0.2, seed=0).Y
    >>> fp.baselines.wrmf(Y, 4, alpha=5.0, n_iter=2).method
    'wrmf'
    """
    for fixed in ("loss", "rho", "a_bar", "p", "q", "negatives"):
        if fixed in ocmf_params:
            raise ValueError(f"wrmf fixes {fixed}; use fastpu.ocmf.fit for other formulations")
    _check_ocmf_params(ocmf_params)
    try:
        model = ocmf.fit(wrmf_weights(Y, alpha), k, loss="square", rho=1.0, a_bar=0.0, lam=lam,
                         n_iter=n_iter, seed=seed, n_threads=n_threads, callback=callback,
                         verbose=verbose, **ocmf_params)
    except FloatingPointError as exc:
        raise FloatingPointError(f"{exc}; for WRMF the weights are 1 + alpha·Y: lower alpha "
                                 f"(now {float(alpha):g})") from None
    params = dict(model.params, alpha=float(alpha), lam=float(lam))
    return Factorization(model.user_factors, model.item_factors, model.history, params, "wrmf",
                         model.extras)


# the keywords wrmf takes, for fastpu.select's checks (its signature shows only **ocmf_params):
# a misspelt keyword in search("wrmf", ...) is refused before any trial, not at the first one
wrmf.keyword_names = frozenset({"k", *_WRMF_OWN, *_WRMF_PASSED_ON})  # type: ignore[attr-defined]


def _implicit_model(kind: str) -> Any:
    try:
        if kind == "als":
            from implicit.cpu.als import AlternatingLeastSquares as cls
        else:
            from implicit.cpu.bpr import BayesianPersonalizedRanking as cls
    except ImportError:
        raise ImportError(f"the implicit {kind.upper()} baseline needs the `implicit` package: "
                          "pip install implicit (it is in fastpu's bench and test extras)") from None
    return cls


def _implicit_fit(kind: str, Y: Sparse, k: int, n_iter: int, seed: int, n_threads: Threads,
                  callback: Callback, verbose: bool, **kw: Any) -> Factorization:
    Y = V.check_csr(Y, name="Y")
    k = V.check_k(k)
    # float32 factors (BPR adds a bias column) with implicit's work copies, and the k × k Gram
    check_alloc(4 * (3 * sum(Y.shape) * (k + 1) + (k + 1) ** 2), what=f"implicit {kind.upper()}'s factors",
                names=("k",))
    n_iter = V.check_int(n_iter, name="n_iter", minimum=1)
    seed = V.check_int(seed, name="seed", minimum=0)
    callback = V.check_callback(callback)
    verbose = V.check_verbose(verbose)
    if n_threads is not None:
        n_threads = check_threads(n_threads)
    cls = _implicit_model(kind)      # after the checks: bad arguments are named with or without it
    steps = ", ".join(kw)            # the step-size parameters to lower when the fit diverges
    progress = Progress(f"implicit-{kind}", verbose=verbose, callback=callback)
    stop: list[bool] = []

    def snapshot() -> Factorization:
        return Factorization(np.array(model.user_factors, dtype=np.float64),
                             np.array(model.item_factors, dtype=np.float64), method=kind)

    def report(it: int, elapsed: float, *extra: Any) -> None:
        # ALS passes its training loss (None unless asked to compute it), BPR its sample counts
        loss = extra[0] if kind == "als" and extra[0] is not None else 0.0
        if not stop and progress.step(it + 1, loss, model=snapshot):
            stop.append(True)
            raise StopIteration

    # implicit's BLAS calls should run single-threaded next to its own threads (its authors' advice)
    with limit_threads(None, blas=1):
        model = cls(factors=k, iterations=n_iter, random_state=seed,
                    num_threads=0 if n_threads is None else int(n_threads), dtype=np.float32, **kw)
        try:
            model.fit(sp.csr_matrix(Y, dtype=np.float32), show_progress=False, callback=report)
        except StopIteration:
            pass
        except Exception as exc:
            if type(exc).__name__ != "ModelFitError":        # implicit's "NaN encountered in factors"
                raise
            raise FloatingPointError(f"implicit {kind.upper()} diverged ({exc}); lower {steps}") from None
    out = snapshot()
    if not (np.isfinite(out.user_factors).all() and np.isfinite(out.item_factors).all()):
        raise FloatingPointError(f"implicit {kind.upper()} diverged (non-finite factors); lower {steps}")
    return Factorization(out.user_factors, out.item_factors, progress.history,
                         dict(k=k, n_iter=n_iter, seed=seed, **kw), kind)


@accepts_dataset
def implicit_als(Y: Sparse | Dataset, k: int, *, regularization: float = 0.01, alpha: float = 1.0,
                 n_iter: int = 15, seed: int = 0, n_threads: Threads = None,
                 callback: Callback = None, verbose: bool = False) -> Factorization:
    """implicit's AlternatingLeastSquares (float32, conjugate gradient) as a fastpu fit.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n), or Dataset
        Observed positives (implicit weights them by 1 + alpha · value).
    k : int
        Number of factors.
    regularization, alpha : float
        implicit's λ and confidence slope.
    n_iter, seed, n_threads, callback, verbose
        As every fastpu fit (``callback`` gets ``info["model"]``; the objective reported is 0:
        implicit computes no loss unless asked to).

    Returns
    -------
    Factorization

    Raises
    ------
    ImportError
        If `implicit` is not installed.
    TypeError, ValueError
        On bad input.

    Examples
    --------
    ``fp.baselines.implicit_als(Y, 64, regularization=0.05, alpha=10.0)`` — with `implicit`
    installed — returns a :class:`~fastpu.Factorization` that ``fp.evaluate`` and
    ``fp.recommend`` take like any other.
    """
    return _implicit_fit("als", Y, k, n_iter, seed, n_threads, callback, verbose,
                         regularization=V.check_scalar(regularization, name="regularization", minimum=0.0),
                         alpha=V.check_scalar(alpha, name="alpha", minimum=0.0))


@accepts_dataset
def implicit_bpr(Y: Sparse | Dataset, k: int, *, learning_rate: float = 0.01,
                 regularization: float = 0.01, n_iter: int = 100, seed: int = 0,
                 n_threads: Threads = None, callback: Callback = None,
                 verbose: bool = False) -> Factorization:
    """implicit's BayesianPersonalizedRanking as a fastpu fit (see :func:`implicit_als`).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n), or Dataset
        Observed positives.
    k : int
        Number of factors (implicit adds one item-bias column to its factors).
    learning_rate, regularization : float
        implicit's SGD step and λ.
    n_iter, seed, n_threads, callback, verbose
        As :func:`implicit_als`.

    Returns
    -------
    Factorization

    Raises
    ------
    ImportError
        If `implicit` is not installed.
    TypeError, ValueError
        On bad input.

    Examples
    --------
    ``fp.baselines.implicit_bpr(Y, 64, learning_rate=0.05)`` with `implicit` installed.
    """
    return _implicit_fit("bpr", Y, k, n_iter, seed, n_threads, callback, verbose,
                         learning_rate=V.check_scalar(learning_rate, name="learning_rate", minimum=0.0,
                                                      strict_min=True),
                         regularization=V.check_scalar(regularization, name="regularization", minimum=0.0))


# Default search spaces of :func:`fastpu.select.tune` for the baselines (their registry entries
# name them). implicit's ALS minimises WRMF's objective (its `regularization` is wrmf's λ, its
# `alpha` wrmf's α + 1 on binary data): the same ranges, or tuned ALS is cut off where WRMF wins.
def _space(space: dict[str, Any], defaults: dict[str, Any],
           fixed: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space without the fixed names, the defaults updated by the fixed settings)."""
    return {k: v for k, v in space.items() if k not in fixed}, {**defaults, **fixed}


def wrmf_space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) of ``tune("wrmf", Y, **fixed)``."""
    import scipy.stats as stats       # on first use: importing this module stays cheap

    from fastpu._core.registry import rank_space

    return _space(dict(k=rank_space, alpha=stats.loguniform(1.0, 100.0),
                       lam=stats.loguniform(1e-2, 100.0)), dict(n_iter=15), fixed)


def als_space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) of ``tune("als", Y, **fixed)``."""
    import scipy.stats as stats

    from fastpu._core.registry import rank_space

    return _space(dict(k=rank_space, alpha=stats.loguniform(1.0, 100.0),
                       regularization=stats.loguniform(1e-2, 100.0)), dict(n_iter=15), fixed)


def bpr_space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) of ``tune("bpr", Y, **fixed)``."""
    import scipy.stats as stats

    from fastpu._core.registry import rank_space

    return _space(dict(k=rank_space, learning_rate=stats.loguniform(1e-3, 0.1),
                       regularization=stats.loguniform(1e-4, 0.1)), dict(n_iter=300), fixed)


def popularity_space(**fixed: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(space, fixed settings) of ``tune("popularity", Y, **fixed)``: nothing to search (tune
    fits it once)."""
    return {}, dict(fixed)


# ----------------------------------------------------------------------------- fold-in rows
# (the registry's "fold" parts of the baselines: fastpu.fold_in finds them there)

def _wrmf_fold_rows(model: Any, Y: Any, X: Any, **solver: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """WRMF's new rows: ocmf's row problem on their confidence weights 1 + alpha·r."""
    import dataclasses

    from fastpu._core import registry

    alpha = float(model.params["alpha"])
    Yw = None if Y is None else wrmf_weights(Y, alpha)
    as_ocmf = dataclasses.replace(model, method="ocmf")
    return registry.get("ocmf").resolve("fold").fold_rows(as_ocmf, Yw, X, **solver)


def _als_fold_rows(model: Any, Y: Any, X: Any, **solver: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """implicit ALS's new rows: its row problem, Σ_j c_j (p_j − w·h_j)² + λ‖w‖² with confidence
    c_j = alpha·r_j on the positives (implicit's weighting: it adds (c − 1) h hᵀ per positive to
    HᵀH) and 1 elsewhere; ocmf's square-loss row solver on those weights (ρ = 1, ā = 0), solved
    exactly (implicit's own ``recalculate_user`` runs 3 CG steps from the training factors)."""
    import dataclasses

    from fastpu._core import registry
    from fastpu._core import rows as row_problem

    row_problem.need_keys(model, params=("alpha", "regularization"))
    alpha = V.check_scalar(model.params["alpha"], name="model.params['alpha']", minimum=0.0)
    lam = V.check_scalar(model.params["regularization"], name="model.params['regularization']",
                         minimum=0.0)
    Yw = None
    if Y is not None:
        Yw = sp.csr_array(Y, dtype=np.float64, copy=True)
        Yw.data *= alpha
    params = dict(model.params, loss="square", rho=1.0, a_bar=0.0, lam=lam, lam_w=None,
                  negatives="full")
    as_ocmf = dataclasses.replace(model, method="ocmf", params=params)
    return registry.get("ocmf").resolve("fold").fold_rows(as_ocmf, Yw, X, **solver)


def _popularity_fold_rows(model: Any, Y: Any, X: Any, **solver: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """New users of the popularity baseline score every item by its count, as every user does:
    one row of ones per new user, given by its positives ``Y`` or by its features ``X`` (a
    cold start, ``compare(..., split="rows")``), never both."""
    from fastpu._core import rows as row_problem

    row_problem.no_weights(model, solver.get("p"), solver.get("q"))
    if X is not None and Y is None:
        X = V.check_features(X, name="user_features", n_rows=np.shape(X)[0])
        return np.ones((X.shape[0], 1)), {}
    Y = row_problem.need_rows(Y, X, method="popularity")
    return np.ones((Y.shape[0], 1)), {}


#: the row solvers fold_in uses for WRMF and popularity models (their registry entries' "fold")
WRMF_FOLD = types.SimpleNamespace(fold_rows=_wrmf_fold_rows)
ALS_FOLD = types.SimpleNamespace(fold_rows=_als_fold_rows)
POPULARITY_FOLD = types.SimpleNamespace(fold_rows=_popularity_fold_rows)
