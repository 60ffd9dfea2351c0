"""fBGD's fit, objective and negative weights (the method is described in the package docstring)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu.fbgd._check import (Model, Run, check_embeddings, check_fitted, check_model,
                                check_nu, check_run, check_start, check_weights, check_y,
                                fixed_entries, identity, warn_rank)
from fastpu.fbgd._problem import (_Problem, _penalty, _result, _train, build, fit_penalties,
                                  negative_weights, per_positive, row_penalties)
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, Callback, Matrix, Seed, Sparse, Threads
from fastpu._core.factorization import Factorization, accepts_dataset

__all__ = ["demo_configs", "fit", "negative_weights", "objective", "parameters"]


# --------------------------------------------------------------------------- objective
def objective(Y: Sparse, P: ArrayLike, Q: ArrayLike, *, neg_weights: ArrayLike | None = None,
              neg_row_weights: ArrayLike | None = None, pos_weight: float | str = 1.0,
              r_pos: float | str = 1.0, r_neg: float = 0.0, lam: float = 0.0,
              nu: float = 0.0) -> float:
    """Loss (2) of embeddings P, Q, plus a penalty, computed without forming any m×n array.

    J = Σ_P α⁺ (r⁺ − p_x·q_y)² + Σ_U α⁻_x α⁻_y (r⁻ − p_x·q_y)², via the caches
    S^q = Qᵀ diag(α⁻_y) Q, s^q = Qᵀ α⁻_y, S^p = Pᵀ diag(α⁻_x) P, s^p = Pᵀ α⁻_x
    (eq. 6-10) in O((m + n) g² + |P| g), plus Σ_x λ_x ‖p_x‖² + Σ_y λ_y ‖q_y‖² with
    λ_x = lam · c_x^ν, c_x = |P_x| + α⁻_x Σ_y α⁻_y and λ_y = lam · c_y^ν,
    c_y = |P_y| + α⁻_y Σ_x α⁻_x (with ν = 0 every row's λ is lam). This is the objective of a
    plain-MF fit (no features, no biases: the embeddings are its parameters) with the same
    weights, ``lam`` and ``nu``.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Positives (stored entries), non-negative values.
    P : array_like, shape (m, g)
        Row embeddings p_x (for SVDFeature, including the two bias columns).
    Q : array_like, shape (n, g)
        Column embeddings q_y.
    neg_weights : array_like, shape (n,), optional
        α⁻_y, e.g. from :func:`negative_weights`; ``None`` means 1 for every item.
    neg_row_weights : array_like, shape (m,), optional
        α⁻_x, the row-side weight of the unlabeled entries (the paper's α⁻_xy = α⁻_x);
        the unlabeled entry (x, y) weighs α⁻_x α⁻_y.  ``None`` means 1 for every row.
    pos_weight : float or "values"
        α⁺: one weight for every positive, or ``"values"`` to use Y's stored values.
    r_pos : float or "values"
        Target r⁺ of the positives (or Y's stored values).
    r_neg : float
        Target r⁻ of the unlabeled entries.
    lam : float
        L2 penalty of every row of P and Q (0, the default: loss (2) alone).
    nu : float
        Exponent ν of the frequency-scaled penalty λ_x = lam · c_x^ν (see :func:`fit`); 0 is one
        lam for every row.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``Y`` is not sparse or a scalar argument is not a real number.
    ValueError
        On shape mismatches, non-finite values, negative weights, ``nu`` outside [0, 10].

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu import fbgd
    >>> Y = sp.csr_array(np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> P = np.array([[1.0], [0.0]]); Q = np.array([[1.0], [1.0]])
    >>> fbgd.objective(Y, P, Q)      # positives (0,0): 0, (1,1): 1; unlabeled (0,1): 1
    2.0
    >>> # + lam c^ν (‖p_0‖² + ‖q_0‖² + ‖q_1‖²): every row's count c is 1 positive + 2 (Σ α⁻)
    >>> fbgd.objective(Y, P, Q, lam=0.5, nu=1.0)
    6.5
    """
    Y = check_y(Y, fit=False)
    P, Q = check_embeddings(P, Q, Y.shape)
    w = check_weights(Y.shape, neg_weights=neg_weights, neg_row_weights=neg_row_weights,
                      pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg)
    lam = V.check_penalty(lam, name="lam")
    nu = check_nu(nu)
    m, n = Y.shape
    neg = w.neg if w.neg is not None else np.ones(n)
    prob = _Problem(Y, identity(m), identity(n), P.shape[1], False, neg,
                    per_positive(w.pos_weight, Y), per_positive(w.r_pos, Y), w.r_neg, w.neg_rows)
    Sq, sq = prob.gram(prob.neg, Q)
    Sp, sp_ = prob.gram(prob.arow, P)
    with np.errstate(over="ignore", invalid="ignore"):
        loss = prob.loss(P, Q, Sq, sq, Sp, sp_)
    if lam != 0.0:
        penalties = row_penalties(lam, nu, np.diff(Y.indptr), np.bincount(Y.indices, minlength=n),
                                  prob.arow, prob.neg, False)
        loss += _penalty(penalties, prob, P, Q)
    return V.check_finite_result(loss, what="fbgd.objective",
                                 names=("P", "Q", "Y", "neg_weights", "neg_row_weights", "pos_weight",
                                        "r_pos", "r_neg", "lam"))


# --------------------------------------------------------------------------- fit
@accepts_dataset
def fit(Y: Sparse | Dataset, k: int, *, user_features: Matrix | None = None,
        item_features: Matrix | None = None, alpha0: float | None = None, rho: float = 0.05,
        neg_weights: ArrayLike | None = None, neg_row_weights: ArrayLike | None = None,
        pos_weight: float | str = 1.0, r_pos: float | str = 1.0, r_neg: float = 0.0,
        biases: bool | None = None, lam: float = 0.1, nu: float = 0.0, lr: float = 0.03,
        n_iter: int = 30, update: str = "coordinate", optimizer: str = "adagrad",
        init: tuple[ArrayLike, ArrayLike] | None = None, init_std: float = 0.01, seed: Seed = 0,
        n_threads: Threads = None, callback: Callback = None,
        verbose: bool = False) -> Factorization:
    """Fit an fBGD embedding model (plain MF or SVDFeature) on all positive and unlabeled pairs.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Positives: every stored entry is an observed (x, y) pair; values >= 0
        (used only with ``pos_weight="values"`` or ``r_pos="values"``).
    k : int
        Latent size f of the embeddings (g = f + 2 with ``biases``).
    user_features, item_features : scipy.sparse matrix or ndarray, optional
        Feature matrices Z^X (m×pX) and Z^Y (n×pY), e.g. stacked one-hot fields.
        ``None`` means the one-hot id (plain MF).  Ids are not added automatically:
        stack an identity to keep a free embedding per row.
    alpha0 : float, optional
        Total weight of one user's unlabeled entries (eq. 22).  Default ``1.0 * n`` (about
        weight 1 per unlabeled entry).  The defaults of ``alpha0``, ``rho``, ``lr`` and ``lam``
        were chosen by ``fastpu.select.tune`` on the training parts of MovieLens-100K and -1M
        (docs/results/defaults.md).
    rho : float
        Popularity exponent of eq. 22 (0: uniform; default 0.05).
    neg_weights : array_like, shape (n,), optional
        α⁻_y given directly; overrides ``alpha0`` and ``rho``.
    neg_row_weights : array_like, shape (m,), optional
        α⁻_x, a weight of the unlabeled entries per row (the paper's α⁻_xy = α⁻_x, under
        eq. 9); combined with α⁻_y the unlabeled entry (x, y) weighs α⁻_x α⁻_y, which keeps
        the cached form (S^p = Pᵀ diag(α⁻_x) P).  ``None`` (default) means 1 for every row
        and gives exactly the results of a fit without it.
    pos_weight : float or "values"
        α⁺ of every positive, or ``"values"`` for Y's stored values.
    r_pos : float or "values"
        Target r⁺ of the positives.
    r_neg : float
        Target r⁻ of the unlabeled entries.
    biases : bool, optional
        Add the global and feature biases (g = f + 2, eq. 13).  Default: True when
        any features are given, False for plain MF.
    lam : float
        L2 penalty lam·‖Θ‖² on the free parameters (default 0.1; the paper has none, ``lam=0``).
    nu : float
        Frequency-scaled regularisation (ν of Rendle, Krichene, Zhang and Koren, 2022,
        "Revisiting the Performance of iALS"; not in the paper): user x's penalty
        lam‖θ^X_x‖² becomes λ_x‖θ^X_x‖² with λ_x = lam · c_x^ν, c_x = |P_x| + α⁻_x Σ_y α⁻_y
        (its positives plus the unlabeled weight α⁻_x α⁻_y it is paired with over every item),
        and item y's λ_y = lam · c_y^ν with c_y = |P_y| + α⁻_y Σ_x α⁻_x. With eq. 22's weights
        Σ_y α⁻_y = ``alpha0`` and, without ``neg_row_weights``, α⁻_x = 1, so c_x = |P_x| +
        alpha0 and c_y = |P_y| + m α⁻_y. ``0`` (default): one lam for every parameter, bit for
        bit. With ``biases`` (and no features) a user's row holds its embedding and its bias,
        both penalised by λ_x, and the global bias w0 keeps lam. Refused (above 0) with
        ``user_features`` or ``item_features``, whose Θ rows are features' coefficients shared
        by many users or items. At most 10.
    lr : float
        Step size γ (Adagrad's base rate, eq. 24; the raw step with ``optimizer="gd"``); 0.03.
    n_iter : int
        Number of epochs (outer iterations); one epoch updates the user side, then the item side.
    update : {"coordinate", "batch"}
        ``"coordinate"``: Appendix B, parameter by parameter with the embeddings kept
        in sync (eq. 20); parameters of a single row (the one-hot ids) run row-parallel,
        features shared by several rows serially.  ``"batch"``: the full gradient of a
        side, then all of its parameters at once, row-parallel.
    optimizer : {"adagrad", "gd"}
        Adagrad with per-parameter steps γ/√(Σ g²) (ε = 1e-4 where the sum is zero), or
        plain gradient steps (unstable with skewed features, section 4.1).
    init : tuple (P0, Q0), optional
        A warm start: the parameters the epochs start from instead of random ones.  Plain MF
        (no features, no biases): the embeddings P0 (m×k) and Q0 (n×k), e.g. a previous
        model's ``user_factors`` and ``item_factors``.  With features or biases: the
        parameter matrices (Θ^X, Θ^Y) of eq. 13, one row per feature (per user or item on a
        side without features) plus, with biases, the constant feature's row, and k (k + 2
        with biases) columns; :func:`parameters` gives them for a fitted model, and the
        entries the bias layout fixes must hold their values.  ``init_std`` and ``seed`` are
        then unused.  The optimizer's state is not part of the start: Adagrad's accumulators
        begin at zero, so ``n`` epochs from a model of ``m`` epochs are not ``m + n`` epochs
        of one fit (plain ``optimizer="gd"`` with ``update="batch"`` is: the same numbers).
    init_std : float
        Standard deviation of the normal initialisation of the embeddings (biases start at 0).
    seed : int, numpy Generator or None
        Seed of the initialisation.
    n_threads : int, optional
        Threads for the parallel kernels (restored afterwards).
    callback : callable, optional
        Called with each epoch's history dict; returning True stops training (it must return
        None or a bool).
        ``info["model"]()`` is the current iterate as a :class:`~fastpu.Factorization` (copies
        of P and Q).
    verbose : bool
        Print one line per epoch.

    Returns
    -------
    Factorization
        ``user_factors`` = P (m×g) and ``item_factors`` = Q (n×g), so ``scores`` = P Qᵀ
        includes the biases.  ``extras`` holds ``V_user``, ``V_item`` (feature
        embeddings), ``w_user``, ``w_item``, ``w0`` (biases, with ``biases``),
        ``neg_weights``, ``neg_row_weights`` (``None`` unless given) and ``initial_objective``; ``W``/``H`` are the feature embeddings
        when features are given.  ``history`` has ``iter``, ``objective``, ``loss``, ``seconds``.

    Raises
    ------
    TypeError
        On wrongly typed arguments (complex ``Y``, features or graphs included); a ``callback``
        that returns something other than None or a bool; a ``verbose`` that is not a bool or
        an int; an ``init`` that is not a tuple of two arrays.
    ValueError
        On bad shapes (``init``'s included, or fixed bias entries of ``init`` set otherwise),
        NaN/inf, negative weights or unknown options; ``lam`` above 1e20; ``nu`` outside
        [0, 10], above 0 with features, or so large that a row's penalty overflows; if ``Y``
        has no row or no column (at least one user and one item are expected), or no positive
        (no stored nonzero value).
    FloatingPointError
        If the objective becomes non-finite (plain ``gd`` with too large ``lr``); the message
        names the likely cause (``lr``, feature or weight scale).

    Warns
    -----
    ConvergenceWarning
        If an epoch's objective is above the starting objective (the run diverged: lower
        ``lr``, or scale the features), or if the returned P or Q is all zero (e.g.
        ``init_std=0``). These checks read the history only; they change no result.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu import fbgd
    >>> Y = sp.random_array((40, 30), density=0.15, format="csr", random_state=0)
    >>> Y.data[:] = 1.0
    >>> model = fbgd.fit(Y, 4, alpha0=3.0, n_iter=5)
    >>> model.scores([0, 1]).shape
    (2, 30)
    >>> model.history[-1]["objective"] < model.extras["initial_objective"]
    True
    >>> # five more epochs from where it stopped (a warm start)
    >>> more = fbgd.fit(Y, 4, alpha0=3.0, n_iter=5, init=(model.user_factors, model.item_factors))
    >>> bool(np.isclose(more.extras["initial_objective"], model.history[-1]["objective"]))
    True
    """
    Y = check_y(Y, fit=True)
    run = check_run(k, lr=lr, n_iter=n_iter, update=update, optimizer=optimizer,
                    init_std=init_std, seed=seed, callback=callback, verbose=verbose)
    model = check_model(Y.shape, user_features=user_features, item_features=item_features,
                        alpha0=alpha0, rho=rho, neg_weights=neg_weights,
                        neg_row_weights=neg_row_weights, pos_weight=pos_weight, r_pos=r_pos,
                        r_neg=r_neg, biases=biases, lam=lam, nu=nu)
    warn_rank(run, Y.shape, model)
    start = check_start(init, model, run)
    _check_memory(Y.shape, model, run)
    prob = build(Y, model, run.k)
    penalties = fit_penalties(Y, model, prob)
    theta_x, theta_y = start if start is not None else prob.init_params(run.rng, run.init_std)
    params = fit_params(run, model, update=run.update, pos_weight=pos_weight, r_pos=r_pos,
                        seed=seed)
    progress = Progress("fbgd", verbose=run.verbose,
                        callback=_with_parameters(run.callback, prob, model, theta_x, theta_y, params),
                        advice=_advice(prob, run, model), total=run.n_iter)
    with limit_threads(n_threads):
        P, Q, initial = _train(prob, theta_x, theta_y, lr=run.lr, n_iter=run.n_iter,
                               update=run.update, adagrad=run.adagrad, lam=penalties,
                               progress=progress)
    progress.finish(P, Q, zero_advice=_zero_advice(Y, run, model, init))
    return _wrap(P, Q, prob, model, theta_x, theta_y, initial, progress.history, params)


def fit_params(run: Run, model: Model, *, update: str, pos_weight: Any, r_pos: Any,
               seed: Any) -> dict[str, Any]:
    """What the model records of its fit (``Factorization.params``); ``pos_weight``, ``r_pos``
    and ``seed`` as given. The Dask form records the same."""
    w = model.weights
    return dict(k=run.k, alpha0=w.alpha0, rho=w.rho, pos_weight=pos_weight, r_pos=r_pos,
                r_neg=w.r_neg, lr=run.lr, n_iter=run.n_iter, update=update,
                optimizer=run.optimizer, biases=model.biases, lam=model.lam, nu=model.nu,
                init_std=run.init_std, seed=seed if isinstance(seed, numbers.Integral) else None,
                user_features=tuple(model.Zx.shape) if model.has_ux else None,
                item_features=tuple(model.Zy.shape) if model.has_ix else None,
                neg_weights="given" if w.neg is not None else "eq22",
                neg_row_weights=None if w.neg_rows is None else "given")


def _check_memory(shape: tuple[int, int], model: Model, run: Run) -> None:
    """Refuse a rank (or feature width) whose parameters and work arrays exceed the memory."""
    m, n = shape
    g = run.k + 2 if model.biases else run.k
    check_alloc(8 * g * (5 * (m + n) + 4 * (model.Zx.shape[1] + model.Zy.shape[1] + 2) + 8 * g),
                what="fbgd.fit", names=("k",) + (("user_features",) if model.has_ux else ())
                + (("item_features",) if model.has_ix else ()))


def _wrap(P, Q, prob, model, theta_x, theta_y, initial, history, params):
    """The Factorization of a trained model (its iterates too: ``_with_parameters``)."""
    return _result(P, Q, theta_x, theta_y, model.Zx.shape[1], model.Zy.shape[1], prob.f,
                   biases=model.biases, has_ux=model.has_ux, has_ix=model.has_ix, neg=prob.neg,
                   neg_rows=model.weights.neg_rows, init=initial, history=history, params=params)


def _with_parameters(callback, prob, model, theta_x, theta_y, params):
    """``callback`` whose ``info["model"]()`` carries the current parameters (``extras``, ``params``)
    like a finished fit; the training loop updates ``theta_x`` / ``theta_y`` in place."""
    if callback is None:
        return None

    def wrapped(info):
        base = info.get("model")
        if base is not None:
            def iterate():
                it = base()
                return _wrap(it.user_factors, it.item_factors, prob, model, theta_x.copy(),
                             theta_y.copy(), None, [], params)
            info = dict(info, model=iterate)
        return callback(info)
    return wrapped


def _advice(prob, run, model):
    """What to change when the objective diverges or overflows, most likely cause first."""
    w = model.weights
    tips = [f"lower init_std (now {run.init_std:g})"] if run.init_std > 1e2 else []
    for Z, given, name in ((prob.Zx, model.has_ux, "user_features"),
                           (prob.Zy, model.has_ix, "item_features")):
        big = float(np.abs(Z.data).max()) if (given and Z.nnz) else 0.0
        if big > 1e2:
            tips.append(f"scale {name} down (largest |value| {big:g}; unit-norm rows work well)")
    scale = max([abs(w.r_neg)] + [float(np.abs(a).max()) for a in (prob.apos, prob.rpos) if a.size])
    if scale > 1e3 or float(prob.neg.max(initial=0.0)) > 1e6:
        tips.append("scale down the weights and targets (pos_weight, r_pos, r_neg, alpha0, neg_weights)")
    tips.append(f"lower lr (now {run.lr:g}{', plain gd' if run.optimizer == 'gd' else ''})")
    return "; or ".join(tips)


def _zero_advice(Y, run, model, init):
    """Advice for an all-zero P or Q; ``None`` (no warning) when Y has no positive."""
    if Y.nnz == 0:
        return None
    if init is None and run.init_std == 0.0:
        return ("init_std=0 starts every embedding at 0, a stationary point without biases; "
                "use init_std > 0")
    advice = f"lower lam (now {model.lam:g}) or raise lr (now {run.lr:g}) or n_iter"
    return advice if init is None else f"start from nonzero init, or {advice}"


def parameters(model: Factorization) -> tuple[np.ndarray, np.ndarray]:
    """The parameter matrices (Θ^X, Θ^Y) of a model from :func:`fit`: what ``init`` continues.

    P = [Z^X, 1] Θ^X and Q = [Z^Y, 1] Θ^Y (eq. 13; without biases P = Z^X Θ^X): one row per
    feature (per user or item on a side without features), then with biases the constant
    feature's row; columns the k latent coordinates, then with biases the user-bias and the
    item-bias coordinates.  Θ^X's rows are [V_user, w_user, 0] and its last row
    [0, …, 0, w0, 1]; Θ^Y's [V_item, 0, w_item] and [0, …, 0, 1, 0].  Without features and
    biases they are copies of ``user_factors`` and ``item_factors``.

    Parameters
    ----------
    model : Factorization
        A result of :func:`fit` (or of its Dask form, or one read by :func:`fastpu.load_model`).

    Returns
    -------
    theta_x, theta_y : ndarray of float64
        New arrays, shapes (pX [+ 1], k [+ 2]) and (pY [+ 1], k [+ 2]).

    Raises
    ------
    TypeError
        If ``model`` is not a Factorization of :func:`fit` (a tensor model's are not).
    ValueError
        If its ``extras`` lack the parts the matrices are made of (an edited model).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from fastpu import fbgd
    >>> Y = sp.random_array((40, 30), density=0.15, format="csr", random_state=0)
    >>> Zx = sp.random_array((40, 5), density=0.4, format="csr", random_state=1)
    >>> model = fbgd.fit(Y, 4, user_features=Zx, n_iter=3)
    >>> tx, ty = fbgd.parameters(model)
    >>> tx.shape, ty.shape                        # 5 features + 1, 30 items + 1; 4 + 2 columns
    ((6, 6), (31, 6))
    >>> more = fbgd.fit(Y, 4, user_features=Zx, n_iter=3, init=(tx, ty))
    """
    if not isinstance(model, Factorization):
        raise TypeError(f"model must be a Factorization returned by fastpu.fbgd.fit, got "
                        f"{type(model).__name__}")
    if model.method != "fbgd" or "tensor" in model.extras:
        what = ("a model of fastpu.fbgd.fit_tensor (its factors V_x, V_h, V_y are in extras)"
                if model.method == "fbgd" else f"a model of method {model.method!r}")
        raise TypeError(f"model must be a Factorization returned by fastpu.fbgd.fit, got {what}")
    check_fitted(model)                 # an edited model: refused, naming the entry
    ex = model.extras
    biases = bool(model.params.get("biases", "w0" in ex))
    need = ("V_user", "V_item") + (("w_user", "w_item", "w0") if biases else ())
    missing = [key for key in need if ex.get(key) is None]
    if missing:
        raise ValueError(f"model.extras lacks {', '.join(repr(m) for m in missing)}, which the "
                         "parameter matrices are made of; pass a model returned by fastpu.fbgd.fit "
                         "(or read by fastpu.load_model), not an edited one")
    Vu, Vi = np.asarray(ex["V_user"], dtype=np.float64), np.asarray(ex["V_item"], dtype=np.float64)
    px, k = Vu.shape
    py = Vi.shape[0]
    tx, ty = fixed_entries(px + biases, py + biases, k, biases)
    tx[:px, :k], ty[:py, :k] = Vu, Vi
    if biases:
        tx[:px, k] = ex["w_user"]
        tx[px, k] = float(ex["w0"])
        ty[:py, k + 1] = ex["w_item"]
    return tx, ty


# --------------------------------------------------------------------------- demo
def demo_configs() -> list[tuple[str, dict[str, Any], str]]:
    """Settings for ``fastpu demo`` (MovieLens-100K, 80/20 per-user holdout, 2 cores).

    Returns
    -------
    list of (str, dict, str)
        ``(label, fit_kwargs, legend)``; ``fit(Y_train, **fit_kwargs, seed=0, verbose=True)``
        trains each in a few seconds; the legend is one line saying what the row is.

    Examples
    --------
    >>> from fastpu import fbgd
    >>> label, kwargs, legend = fbgd.demo_configs()[0]
    >>> kwargs["k"] > 0
    True
    """
    return [
        # the defaults: alpha0 = n_items, rho = 0.05, lr = 0.03 (Adagrad), lam = 0.1
        ("fBGD MF (coordinate, Adagrad)", dict(k=32, n_iter=30, update="coordinate"),
         "Yuan et al.'s all-sample gradient, coordinate by coordinate (their Appendix B)"),
        ("fBGD MF (batch, Adagrad)", dict(k=32, n_iter=30, update="batch"),
         "the same loss, every gradient of a side first, then all its steps"),
    ]

