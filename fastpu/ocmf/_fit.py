"""The fit and the objective of ocmf: check, build the problem, alternate the sides, wrap the result."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu._core.dataset import Dataset
from fastpu.ocmf._nystrom import NystromMap, nystrom_features
from fastpu.ocmf._check import (FIT_ARGS, LOSSES, NEGATIVES, SOLVERS, Fit, Model, Run,
                                check_factor, check_fit, check_fit_run, check_model, check_y,
                                dims, resolve_p)
from fastpu.ocmf._problem import (SubProblem, _eigen_basis, _full_objective, _latent, _side_reg,
                                  _update_side, build, eigen_rows)
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu._core.hints import ArrayLike, Callback, DTypeLike, Matrix, Seed, Sparse, Threads
from fastpu._core.factorization import Factorization, accepts_dataset
from fastpu.optim import gd, tron

__all__ = ["fit", "objective", "nystrom_features", "NystromMap", "demo_configs",
           "LOSSES", "NEGATIVES", "SOLVERS", "SubProblem"]


def objective(Y: Sparse, W: ArrayLike, H: ArrayLike, *, user_features: Matrix | None = None,
              item_features: Matrix | None = None, user_graph: Matrix | None = None,
              item_graph: Matrix | None = None, loss: str = "square", rho: float | None = None,
              p: ArrayLike | str | None = None, q: ArrayLike | None = None, a_bar: float | None = None,
              negatives: str = "full", neg_ratio: float = 1.0, lam: float | None = None,
              lam_w: float | None = None, lam_h: float | None = None, lam_graph: float = 0.0,
              nu: float = 0.0, intercept: bool = True, dense_limit: int | None = None,
              seed: Seed = 0, n_threads: Threads = None) -> float:
    """The objective f(W, H) of equation (2), computed in O(|Ω+|k + (m+n)k² + nnz(X, Z, L)k).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Observed positives; the stored values are the weights C_ij (1 for binary data).
    W : array, shape (d, k) with ``user_features`` X (m×d), else (m, k)
        (d + 1 rows with ``intercept``: the last one multiplies the ones column).
    H : array, shape (e, k) with ``item_features`` Z (n×e), else (n, k)
        (e + 1 rows with ``intercept``).
    user_features, item_features, user_graph, item_graph, loss, rho, p, q, a_bar, negatives, neg_ratio, lam, lam_w, lam_h, lam_graph, nu, intercept, dense_limit, seed
        As in :func:`fit` (``lam_w``, ``lam_h``: λ_w and λ_h of equation (2); ``None``: ``lam``).
        With ``nu`` > 0 the counts of frequency-scaled regularisation are ``Y``'s, and so are
        those of ``p="user-oriented"``.
    n_threads : int, optional
        Threads for the kernels (restored afterwards).

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        On invalid input (see :func:`fit`) or factor shapes that do not match.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import fastpu as fp
    >>> Y = sp.csr_array(np.eye(3))
    >>> W = np.ones((3, 2)); H = np.ones((3, 2))
    >>> # scores are all 2: three positives (1 - 2)² and six unlabeled (0 - 2)²
    >>> round(fp.ocmf.objective(Y, W, H, loss="square", rho=1.0, a_bar=0.0, lam=0.0), 6)
    27.0
    """
    with limit_threads(n_threads):
        Y = check_y(Y, fit=False)
        p, _ = resolve_p(p, Y)
        model = check_model(Y.shape, loss=loss, rho=rho, p=p, q=q, a_bar=a_bar,
                            user_features=user_features, item_features=item_features,
                            user_graph=user_graph, item_graph=item_graph, lam=lam, lam_w=lam_w,
                            lam_h=lam_h, lam_graph=lam_graph, negatives=negatives,
                            neg_ratio=neg_ratio, dense_limit=dense_limit, nu=nu,
                            intercept=intercept)
        setup = build(Y, model, V.check_seed(seed))
        W = check_factor(W, "W", setup.user.dim)
        H = check_factor(H, "H", setup.item.dim, W.shape[1])
        return float(V.check_finite_result(_full_objective(setup, W, H), what="ocmf.objective",
                                           names=("W", "H", "Y", "rho", "p", "q", "a_bar",
                                                  "user_features", "item_features", "lam",
                                                  "lam_w", "lam_h")))


@accepts_dataset
def fit(Y: Sparse | Dataset, k: int, *, user_features: Matrix | None = None,
        item_features: Matrix | None = None, user_graph: Matrix | None = None,
        item_graph: Matrix | None = None, loss: str = "square", rho: float | None = None,
        p: ArrayLike | str | None = None, q: ArrayLike | None = None, a_bar: float | None = None,
        negatives: str = "full", neg_ratio: float = 1.0, lam: float | None = None,
        lam_w: float | None = None, lam_h: float | None = None, lam_graph: float = 0.0,
        nu: float = 0.0, intercept: bool = True, solver: str = "tron", n_iter: int = 15,
        n_inner: int = 5,
        fast_path: bool = True, newton_steps: int | None = None, cg_steps: int | None = None,
        cg_tol: float = 1e-3, precondition: bool | None = None,
        init: tuple[ArrayLike, ArrayLike] | None = None,
        init_std: float | None = None,
        dtype: DTypeLike = "float32", dense_limit: int | None = None, seed: Seed = 0,
        n_threads: Threads = None, callback: Callback = None,
        verbose: bool = False) -> Factorization:
    """Fit one-class structured matrix factorization by alternating minimisation.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Observed positives (stored entries); values are the positive weights C_ij.
    k : int
        Rank.
    user_features : array or sparse matrix, shape (m, d), optional
        User features X (then ``W`` is d×k and the user factors are X W; (d + 1)×k with
        ``intercept``).
    item_features : array or sparse matrix, shape (n, e), optional
        Item features Z (then ``H`` is e×k and the item factors are Z H; (e + 1)×k with
        ``intercept``).
    user_graph, item_graph : sparse or dense matrix, optional
        Symmetric non-negative similarities S; the regulariser uses L = D - S.
    loss : {"square", "logistic", "squared_hinge"}
        Loss on the positives: l(1, s). The default, the square loss with the Full approach
        (SQ-wSQ at ρ = 1/6, λ = 6), led more of the five-split tables of docs/results.md than
        the paper's LR-wSQ (``loss="logistic"``); ``fastpu.select.tune`` chooses between
        them and iALS's weighting (``negatives="all", nu=1``).
    rho : float, optional
        Constant scaling of the unlabeled weight: p_i q_j ← rho · p_i · q_j. With ``p`` and
        ``q`` left at ``None`` (ones) the weight is ``rho`` everywhere (the paper's setting).
        The largest weight rho · p_i · q_j is at most 1e20, as a penalty is. ``None``
        (default): 0.01 for the logistic and squared hinge losses, 1/6 for the square loss
        (the loss table's defaults, :data:`fastpu._kernels.losses.LOSS_TABLE`, chosen on the
        tables of docs/results.md).
    p : array-like or "user-oriented", optional
        Per-user unlabeled weights (non-negative, default ones), or the rule
        ``"user-oriented"`` (Pan et al., ICDM 2008): p_i = c_i / mean(c), with c_i user i's
        positives in ``Y`` counted as at least 1, so that a user with more positives weighs
        her unlabeled entries more, and the weights average 1. With iALS's weighting
        (``negatives="all", nu=1``) it led RecBole's MovieLens-1M splits (docs/results.md).
        The rule and the mean count are recorded in ``params`` (``"p"``, ``"p_mean"``), the
        weights in ``extras["p"]``: :func:`fastpu.fold_in` and
        :func:`fastpu.partial_fit_users` give new rows c_i / ``p_mean`` from their own
        positives, :func:`fastpu.partial_fit_items` uses the fitted users' weights.
    q : array-like, optional
        Per-item unlabeled weights (non-negative, default ones).
    a_bar : float, optional
        Target score of unlabeled entries; ``None`` gives -1 for logistic/squared hinge, 0 for square.
    negatives : {"full", "all", "sampled", "full_logistic"}
        "full": every unlabeled entry, weighted square loss (the paper's Full approach, linear in
        |Ω+|). "all": the weighted square term on every entry, the positives included:
        Σ_Ω+ C ℓ(1, s) + Σ_all p_i q_j (ā − s)², the form of iALS (Rendle et al.'s
        C (1 − s)² + α₀ s² on a positive, α₀ = ρ), at the same cost. "sampled": the loss on Ω+ and ``neg_ratio``·|Ω+_i| unobserved items drawn uniformly
        per user (label ``a_bar``, weight p_i q_j; the paper uses rho=1). "full_logistic": the loss
        on every entry (LR-wLR), dense O(mnk): refused above ``dense_limit`` entries.
    neg_ratio : float
        Sampled negatives per positive with ``negatives="sampled"``.
    lam : float, optional
        Regularisation λ shared by both sides: the default of ``lam_w`` and ``lam_h``.
        ``None`` (default): 1 for the logistic and squared hinge losses, 6 for the square loss.
    lam_w, lam_h : float, optional
        The paper's λ_w and λ_h of equation (2): separate regularisation weights of the
        users' side W (with its graph term) and the items' side H. ``None`` (default): ``lam``,
        which reproduces the shared-λ model exactly.
    lam_graph : float
        Graph weight λ_g (terms λ_w λ_g tr(Bᵀ L_u B) and λ_h λ_g tr(Eᵀ L_v E)).
    nu : float
        Frequency-scaled regularisation (ν of Rendle, Krichene, Zhang and Koren, 2022, "Revisiting
        the Performance of iALS"): user i's penalty λ_w‖w_i‖² becomes λ_w c_i^ν ‖w_i‖² with
        c_i = |Ω+_i| + ρ p_i Σ_j q_j (its positives plus the unlabeled weight its row carries),
        and item j's λ_h c_j^ν ‖h_j‖² with c_j = |Ω+_j| + q_j Σ_i ρ p_i. ``0`` (default) is
        the paper's model, bit for bit; ν = 1 with a λ of order 1e-3 and a rank in the
        hundreds is the iALS recipe (docs/ocmf.md). The graph term keeps λ_w and λ_h. Refused
        (above 0) with features, whose W and H rows are features' coefficients, not users or
        items.
    intercept : bool
        Append a column of ones to each side's features (``user_features`` and
        ``item_features``; a side without features is unchanged), so that W gains a last row
        w_0 and a user's factor is x_iᵀ W_x + w_0: the score x_iᵀ W_x h_j + w_0ᵀ h_j then carries
        a per-item term, a label's base rate in multi-label learning, which scores linear in
        the features cannot express. w_0 is penalised by λ_w with the rest of W. Recorded in
        ``params``; :func:`fastpu.fold_in` appends the same column to new users' features.
        ``True`` (default) is chosen on paper 002's multi-label protocol (docs/results.md: on
        yeast it lifts P@3 from 46.9 to 70.6, on bibtex it ties); ``False`` is the paper's
        model x_iᵀ W h_j, bit for bit. No effect without features.
    solver : {"tron", "gd"}
        Solver of a coupled sub-problem (features or a graph on that side): the trust-region
        Newton method, or gradient descent with the O(|Ω+|k) line search.
    n_iter : int
        Alternating (outer) iterations.
    n_inner : int
        Solver iterations per coupled sub-problem.
    fast_path : bool
        Solve a side with no features and no graph row by row (independent k-dimensional
        Newton–CG problems, in parallel) instead of with ``solver``.
    newton_steps, cg_steps : int, optional
        Newton steps and CG steps per row and outer iteration on the fast path (defaults: 1 and
        3 for the square loss, 1 and 4 otherwise, fewer with ``precondition``; the rows are
        warm-started, and on MovieLens-100K more steps change P@5 by less than 0.002 — see
        docs/ocmf.md).
    cg_tol : float
        Each row's CG solve stops once its residual is at most ``cg_tol`` times the first (or
        after ``cg_steps`` steps), in [0, 1).
    precondition : bool, optional
        Precondition the rows' CG by the diagonal of each row's Hessian (Jacobi, summed in the
        gradient's pass over the row's positives). In M's eigenbasis (float32, k ≥ 64) it
        inverts the k×k part exactly, and one preconditioned CG step reduces a row's objective
        as much as three plain ones; ``cg_steps`` then defaults to 1 (square loss) or 2. The
        iterates differ from plain CG's, and so does the iteration at which validation peaks
        with little regularisation. ``None`` (default): on with frequency-scaled
        regularisation (``nu`` > 0) at k ≥ 64, off otherwise (docs/ocmf.md, "Solvers").
    init : tuple (W0, H0), optional
        Starting factors; default Gaussian noise with standard deviation ``init_std``.
    init_std : float, optional
        Standard deviation of each entry of the default start; ``None``: 0.1/√k.
    dtype : {"float32", "float64"}
        Precision in which the factors are stored between side updates and returned (default
        "float32"). The fast path reads them in float32 — half
        the memory and the memory traffic of float64 — and accumulates every sum in float64;
        coupled sides are solved in float64 and rounded back. The objective is always computed
        in float64. On MovieLens-100K and -1M the float32 and float64 fits rank alike (the
        same P@5 and nDCG@10 to four decimals); pass "float64" for the factors of a fit to
        compare with float64 references to rounding.
    dense_limit : int, optional
        Largest m·n the dense ``negatives="full_logistic"`` accepts (default 25,000,000).
    seed : int
        Seed of the initialisation and of sampled negatives.
    n_threads : int, optional
        Numba threads for this call (restored afterwards).
    callback : callable, optional
        Called with each history dict; returning True stops early (it must return None or a
        bool). ``info["model"]()`` is the current iterate as a :class:`~fastpu.Factorization`
        (copies of the factors).
    verbose : bool
        Print one progress line per outer iteration.

    Returns
    -------
    Factorization
        ``user_factors`` = X W (m×k), ``item_factors`` = Z H (n×k), both of ``dtype``; with
        features, ``W`` and ``H`` are in ``extras``. ``history`` holds per outer iteration
        ``iter``, ``objective``, ``seconds``, ``inner`` (solver iterations of the coupled sides).

    Raises
    ------
    TypeError, ValueError
        Non-sparse ``Y``; complex ``Y``, features, graphs or ``init`` (TypeError); NaN/inf or negative stored values; shape mismatches between ``Y``,
        ``X``, ``Z``, graphs, ``p``, ``q``, ``init``; a graph that is not square, symmetric and
        non-negative; ``k < 1``; unknown ``loss``, ``solver``, ``negatives`` or ``dtype``;
        malformed CSR; a dense variant above its size limit; a ``k`` (or feature width) whose
        factors and work arrays exceed the available memory; ``a_bar``, ``rho``, ``p``, ``q``
        so large that the unlabeled term overflows; ``lam``, ``lam_w``, ``lam_h`` or
        ``lam_graph`` above 1e20 (every factor zero to machine precision); a ``Y`` with no row or no column
        (ValueError: at least one user and one item are expected), or with no positive (no
        stored nonzero value); a ``callback`` that returns something other than None or a
        bool, or a ``verbose`` that is not a bool or an int (TypeError).
    FloatingPointError
        If the objective becomes non-finite; the message names the inputs to scale.

    Warns
    -----
    ConvergenceWarning
        If an outer iteration's objective is above the objective of the starting factors, or
        if W or H comes back all zero (e.g. ``init_std=0``: W = H = 0 is a stationary
        point). These read the history and the result only; they change nothing.

    Examples
    --------
    >>> import fastpu as fp
    >>> data = fp.datasets.synthetic(60, 40, rank=3, density=0.1, seed=0)
    >>> model = fp.ocmf.fit(data.Y, 4, loss="logistic", rho=0.05, n_iter=3)
    >>> model.user_factors.shape, model.item_factors.shape
    ((60, 4), (40, 4))
    >>> [h["iter"] for h in model.history]
    [1, 2, 3]
    """
    args = {name: value for name, value in locals().items() if name in FIT_ARGS}
    run = check_fit_run(args)
    with limit_threads(n_threads):
        Y = check_y(Y, fit=True)
        scheme = p if isinstance(p, str) else None
        args["p"], p_mean = resolve_p(p, Y)
        c = check_fit(Y.shape, args, run)
        run, model = c.run, c.model
        _check_memory(Y.shape, model, run)
        setup = build(Y, model, run.rng)
        W, H = c.start if c.start is not None else _draw_start(run, dims(model, Y.shape))
        _check_finite_start(W, H, run, from_init=c.start is not None)
        params = c.params()
        if scheme is not None:               # fold-in and partial_fit apply the same rule
            params.update(p=scheme, p_mean=p_mean)
        progress = Progress("ocmf", verbose=run.verbose, callback=run.callback,
                            advice=_advice(Y, setup, model.rho, model.lam, run.init_std, W, H),
                            total=run.n_iter)
        W, H = _alternate(setup, W, H, c, progress, params)
        with np.errstate(over="ignore"):        # an overflow is refused just below, by name
            U = np.ascontiguousarray(_latent(setup.user, W), dtype=run.dtype)
            Vf = np.ascontiguousarray(_latent(setup.item, H), dtype=run.dtype)
        _check_finite_latent(U, Vf, model, run)
    progress.finish(W, H, zero_advice=_zero_advice(Y, init, run.init_std, model.lam))
    extras = {}
    if q is not None:                      # the item weights: fold_in solves new rows with them
        extras["q"] = model.q
    if scheme is not None:                 # the users' weights: partial_fit_items needs them
        extras["p"] = model.p
    extras.update(_feature_extras(W, H, model))
    return Factorization(U if model.user_features is not None else W,
                         Vf if model.item_features is not None else H,
                         progress.history, params, "ocmf", extras)


def _check_memory(shape: tuple[int, int], model: Model, run: Run) -> None:
    """Refuse a rank (or feature width) whose factors and work arrays exceed the memory.

    A side solved row by row (``fast_path``, no features, no graph) holds its factor and work
    arrays of its size: the blocks of the eigenbasis turns, the float64 squares of the
    regulariser, a callback's copy. It is charged itemsize + 16 bytes per entry; numpy's traced
    peak of such fits was at most 12 (float32) and 10.3 (float64) bytes per entry (tests), and
    the working memory measured at k = 1024 and 20M positives 5.7 (docs/performance.md, "High
    rank"). A side solved by TRON or gradient descent holds about six float64 arrays of its
    rows × k and eight of its feature width × k. Both hold a few k × k float64 matrices (the
    Grams, their eigenvectors, each thread's sums).
    """
    du, dv = dims(model, shape)
    m, n = shape
    k = run.k
    graphs = (model.L_user, model.L_item)
    features = (model.user_features, model.item_features)
    need = 8 * 8 * k * k
    for rows, width, graph, feats in zip((m, n), (du, dv), graphs, features):
        if run.fast_path and graph is None and feats is None:
            need += (run.dtype.itemsize + 16) * rows * k
        else:
            need += 8 * k * (6 * rows + 8 * width)
    check_alloc(need, what="ocmf.fit (factors and work arrays)",
                names=("k",) + tuple(name for name, f in zip(("user_features", "item_features"),
                                                             features) if f is not None))


def _check_finite_start(W: np.ndarray, H: np.ndarray, run: Run, *, from_init: bool) -> None:
    """Refuse starting factors that are not finite in the fit's precision (a float32 start
    overflows above 3.4e38)."""
    for F in (W, H):
        if not np.isfinite(F).all():
            where = "init" if from_init else f"the drawn start (init_std={run.init_std:g})"
            raise FloatingPointError(
                f"ocmf: the starting factors are not finite in {run.dtype.name} ({where}); "
                f"start from smaller factors{'' if from_init else ' (lower init_std)'}, or pass "
                "dtype='float64'")


def _check_finite_latent(U: np.ndarray, Vf: np.ndarray, model: Model, run: Run) -> None:
    """Refuse a model whose factors X W or Z H overflow the fit's precision (features of
    magnitude past float32's 3.4e38 fit in float64 and overflow only in the product's cast)."""
    for F, name in ((U, "user_features"), (Vf, "item_features")):
        if getattr(model, name) is not None and not np.isfinite(F).all():
            side = "X W" if name == "user_features" else "Z H"
            feats = getattr(model, name)
            vals = np.asarray(feats.data if sp.issparse(feats) else feats)
            raise FloatingPointError(
                f"ocmf: the model's factors {side} are not finite in {run.dtype.name} "
                f"({name} has entries up to {float(np.abs(vals).max(initial=0.0)):.3g}); "
                f"rescale {name}, or pass dtype='float64'")


def _draw_start(run: Run, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The default start: W and H with N(0, init_std²) entries, W drawn first."""
    return (_init_factor(run.rng, rows[0], run.k, run.init_std, run.dtype),
            _init_factor(run.rng, rows[1], run.k, run.init_std, run.dtype))


def _alternate(setup: Any, W: np.ndarray, H: np.ndarray, c: Fit, progress: Progress,
               params: dict[str, Any]) -> tuple[Any, Any]:
    """The solver: W ← argmin, then H ← argmin, ``run.n_iter`` times (or until the callback stops).

    On the row path the first user-side update evaluates f(W0, H0) anyway (each row's first
    Newton step); otherwise it is computed here before the first update.
    """
    run, model, rows = c.run, c.model, c.rows
    start: list[float] | None = None
    if run.fast_path and setup.user.identity and setup.user.L is None:
        start = []
    else:
        progress.start(_full_objective(setup, W, H))
    solve = _with_advice(tron if run.solver == "tron" else gd, progress.advice)
    # float32 rows at large k: each half-step turns W and H into the eigenbasis of its M, where
    # the rows' k×k products are diagonal (the same iterates up to rounding; W Hᵀ unchanged)
    eigen = (start is not None and setup.item.identity and setup.item.L is None
             and eigen_rows(run.k, run.dtype))
    for it in range(1, run.n_iter + 1):
        E = _latent(setup.item, H)
        gram = _eigen_basis(E, setup.q_quad, (W, H)) if eigen else None
        W, inner_w, _ = _update_side(setup, setup.entries, setup.user, W, E, setup.p_quad,
                                     setup.q_quad, run.fast_path, solve, run.n_inner, rows,
                                     start=start if it == 1 else None, gram=gram)
        if it == 1 and start is not None:       # f(W0, H0): H is still the starting H
            progress.start(start[0] + _side_reg(setup, setup.item, H, E))
        B = _latent(setup.user, W)
        gram = _eigen_basis(B, setup.p_quad, (W, H)) if eigen else None
        H, inner_h, sub_value = _update_side(setup, setup.entries_t, setup.item, H, B,
                                             setup.q_quad, setup.p_quad, run.fast_path, solve,
                                             run.n_inner, rows, gram=gram)
        # f(W, H) = the H sub-problem's value + the W side's regulariser
        obj = sub_value + _side_reg(setup, setup.user, W, B)
        if progress.step(it, obj, inner=inner_w + inner_h, model=lambda: Factorization(
                np.array(_latent(setup.user, W), dtype=run.dtype),
                np.array(_latent(setup.item, H), dtype=run.dtype), params=params, method="ocmf", extras=_feature_extras(W, H, model, copy=True))):
            break
    return W, H


def _feature_extras(W: Any, H: Any, model: Model, copy: bool = False) -> dict[str, Any]:
    """W / H in ``extras`` for a model with features (fold_in's cold start reads ``extras["W"]``);
    copies for an iterate."""
    out = {}
    if model.user_features is not None:
        out["W"] = np.array(W) if copy else W
    if model.item_features is not None:
        out["H"] = np.array(H) if copy else H
    return out


def _init_factor(rng: np.random.Generator, rows: int, k: int, scale: float, dtype: Any,
                 block: int = 8192) -> np.ndarray:
    """``(rng.standard_normal((rows, k)) * scale).astype(dtype)``: the same numbers, drawn a
    block of rows at a time (the generator's stream does not depend on the block size), so
    that float32 factors need no full-size float64 temporary."""
    if np.dtype(dtype) == np.float64:
        A = rng.standard_normal((rows, k))
        A *= scale
        return A
    A = np.empty((rows, k), dtype=dtype)
    buf = np.empty((min(rows, block), k))
    for lo in range(0, rows, block):
        b = buf[:min(rows, lo + block) - lo]
        rng.standard_normal(out=b)
        b *= scale
        with np.errstate(over="ignore"):      # inf in float32: the objective's check names init_std
            A[lo:lo + b.shape[0]] = b
    return A


def _with_advice(solve: Callable[..., Any], advice: str) -> Callable[..., Any]:
    """The solver, re-raising a FloatingPointError (a non-finite value) with the likely cause."""
    def run(problem: Any, x0: Any, **kw: Any) -> Any:
        try:
            return solve(problem, x0, **kw)
        except FloatingPointError as exc:
            raise FloatingPointError(f"ocmf: {exc}; {advice}") from exc
    return run


def _advice(Y: Sparse, setup: Any, rho: float, lam: float, init_std: float, W: np.ndarray,
            H: np.ndarray) -> str:
    """What to change when the objective overflows or grows: the largest inputs first."""
    tips = []
    start = max(_max_abs(W), _max_abs(H))
    if start > 1e3:
        tips.append(f"start from smaller factors (init_std={init_std:g}, or init; largest |value| {start:g})")
    big = float(Y.data.max(initial=0.0))
    if big > 1e3:
        tips.append(f"scale Y's stored values (the weights C_ij, up to {big:g})")
    for F, name in ((setup.user.X, "user_features"), (setup.item.X, "item_features")):
        if F is not None:
            vals = F if isinstance(F, np.ndarray) else F.data
            top = float(np.abs(vals).max(initial=0.0))
            if top > 1e2:
                tips.append(f"scale {name} down (largest |value| {top:g})")
    w = float(np.max(setup.p_quad, initial=0.0)) * float(np.max(setup.q_quad, initial=0.0))
    if w > 1e3:
        tips.append(f"lower rho (now {float(rho):g}) or p, q (largest unlabeled weight {w:g})")
    tips.append(f"raise lam (now {float(lam):g})")
    return "; or ".join(tips)


def _max_abs(A: np.ndarray) -> float:
    """max |A| (0 when empty) without an |A| temporary."""
    return max(float(A.max(initial=0.0)), -float(A.min(initial=0.0)))


def _zero_advice(Y: Sparse, init: Any, init_std: float, lam: float) -> str | None:
    """Advice for all-zero factors; ``None`` (no warning) when Y has no positive."""
    if Y.nnz == 0:
        return None
    if init is None and init_std == 0.0:
        return ("init_std=0 starts at W = H = 0, a stationary point the alternating updates "
                "never leave; use init_std > 0 (default 0.1/√k)")
    if init is not None:
        return ("a zero factor in init is a stationary point the alternating updates never "
                f"leave; start from nonzero factors, or lower lam (now {float(lam):g})")
    return f"lower lam (now {float(lam):g}), which shrinks every factor to zero"


def demo_configs() -> list[tuple[str, dict[str, Any], str]]:
    """The ocmf formulations ``fastpu demo`` trains on MovieLens-100K, at fit's defaults.

    Returns
    -------
    list of (str, dict, str)
        ``(label, fit_kwargs, legend)``: SQ-wSQ (fit's defaults), LR-wSQ (the paper's loss at
        its defaults) and SQ-SQ (the paper's baseline, LEML / GRALS), each passed to
        ``fit(Y_train, **fit_kwargs, seed=0, verbose=True)``; the legend is one line saying
        what the row is.
    """
    common = dict(k=64, n_iter=10)
    return [
        ("SQ-wSQ (ocmf)", dict(common),
         "ocmf's defaults: square loss on the positives, weight 1/6 on every unlabeled entry"),
        ("LR-wSQ (ocmf)", dict(common, loss="logistic"),
         "Yu et al.'s logistic loss on the positives, weighted square loss on the unlabeled"),
        ("SQ-SQ (ocmf)", dict(common, loss="square", rho=1.0, a_bar=0.0, lam=16.0),
         "the square loss with unlabeled weight 1 (LEML / GRALS, the paper's baseline)"),
    ]
