"""fBGD's fit, objective and negative weights (the method is described in the package docstring)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from fastpu._core import validation as V
from fastpu.fbgd._problem import (_ident, _negative_weights, negative_weights, _EPS, _Problem, _augment, _check_embedding_pair,  # noqa: F401
                            _feature_csr, _gradients, _neg_row_vector, _neg_vector, _penalty,
                            _positive_array, _result, _train, _transpose_with_perm, _update_side)
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, Callback, Matrix, Seed, Sparse, Threads
from fastpu._core.factorization import Factorization, accepts_dataset

__all__ = ["demo_configs", "fit", "negative_weights", "objective"]

_UPDATES = ("coordinate", "batch")
_OPTIMIZERS = ("adagrad", "gd")


# --------------------------------------------------------------------------- objective
def objective(Y: Sparse, P: ArrayLike, Q: ArrayLike, neg_weights: ArrayLike | None = None,
              pos_weight: float | str = 1.0, r_pos: float | str = 1.0, r_neg: float = 0.0,
              neg_row_weights: ArrayLike | None = None) -> float:
    """Loss (2) of embeddings P, Q, computed without forming any m×n array.

    J = Σ_P α⁺ (r⁺ − p_x·q_y)² + Σ_U α⁻_x α⁻_y (r⁻ − p_x·q_y)², via the caches
    S^q = Qᵀ diag(α⁻_y) Q, s^q = Qᵀ α⁻_y, S^p = Pᵀ diag(α⁻_x) P, s^p = Pᵀ α⁻_x
    (eq. 6-10) in O((m + n) g² + |P| g).

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
    pos_weight : float or "values"
        α⁺: one weight for every positive, or ``"values"`` to use Y's stored values.
    r_pos : float or "values"
        Target r⁺ of the positives (or Y's stored values).
    r_neg : float
        Target r⁻ of the unlabeled entries.
    neg_row_weights : array_like, shape (m,), optional
        α⁻_x, the row-side weight of the unlabeled entries (the paper's α⁻_xy = α⁻_x);
        the unlabeled entry (x, y) weighs α⁻_x α⁻_y.  ``None`` means 1 for every row.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``Y`` is not sparse or a scalar argument is not a real number.
    ValueError
        On shape mismatches, non-finite values, negative weights.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu import fbgd
    >>> Y = sp.csr_array(np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> P = np.array([[1.0], [0.0]]); Q = np.array([[1.0], [1.0]])
    >>> fbgd.objective(Y, P, Q)      # positives (0,0): 0, (1,1): 1; unlabeled (0,1): 1
    2.0
    """
    Y = V.check_csr(Y, name="Y")
    m, n = Y.shape
    P, Q = _check_embedding_pair(P, Q, m, n)
    neg = _neg_vector(neg_weights, n)
    apos = _positive_array(pos_weight, name="pos_weight", Y=Y, minimum=0.0)
    rpos = _positive_array(r_pos, name="r_pos", Y=Y, minimum=None)
    r_neg = V.check_scalar(r_neg, name="r_neg")
    neg_rows = _neg_row_vector(neg_row_weights, m)
    prob = _Problem(Y, _ident(m), _ident(n), P.shape[1], False, neg, apos, rpos, r_neg, neg_rows)
    Sq, sq = prob.gram(neg, Q)
    Sp, sp_ = prob.gram(prob.arow, P)
    with np.errstate(over="ignore", invalid="ignore"):
        loss = prob.loss(P, Q, Sq, sq, Sp, sp_)
    return V.check_finite_result(loss, what="fbgd.objective",
                                 names=("P", "Q", "Y", "neg_weights", "neg_row_weights", "pos_weight",
                                        "r_pos", "r_neg"))



# --------------------------------------------------------------------------- fit
@accepts_dataset
def fit(Y: Sparse | Dataset, k: int, *, user_features: Matrix | None = None,
        item_features: Matrix | None = None, alpha0: float | None = None, rho: float = 0.05,
        neg_weights: ArrayLike | None = None, pos_weight: float | str = 1.0,
        r_pos: float | str = 1.0, r_neg: float = 0.0, lr: float = 0.03, n_iter: int = 30,
        update: str = "coordinate", optimizer: str = "adagrad", biases: bool | None = None,
        reg: float = 0.1, init_std: float = 0.01, seed: Seed = 0, callback: Callback = None,
        verbose: bool = False, n_threads: Threads = None,
        neg_row_weights: ArrayLike | None = None) -> Factorization:
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
        weight 1 per unlabeled entry).  The defaults of ``alpha0``, ``rho``, ``lr`` and ``reg``
        were chosen by ``fastpu.select.tune`` on the training parts of MovieLens-100K and -1M
        (docs/results/defaults.md).
    rho : float
        Popularity exponent of eq. 22 (0: uniform; default 0.05).
    neg_weights : array_like, shape (n,), optional
        α⁻_y given directly; overrides ``alpha0`` and ``rho``.
    pos_weight : float or "values"
        α⁺ of every positive, or ``"values"`` for Y's stored values.
    r_pos : float or "values"
        Target r⁺ of the positives.
    r_neg : float
        Target r⁻ of the unlabeled entries.
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
    biases : bool, optional
        Add the global and feature biases (g = f + 2, eq. 13).  Default: True when
        any features are given, False for plain MF.
    reg : float
        L2 penalty reg·‖Θ‖² on the free parameters (default 0.1; the paper has none, ``reg=0``).
    init_std : float
        Standard deviation of the normal initialisation of the embeddings (biases start at 0).
    seed : int, numpy Generator or None
        Seed of the initialisation.
    callback : callable, optional
        Called with each epoch's history dict; returning True stops training (it must return
        None or a bool).
        ``info["model"]()`` is the current iterate as a :class:`~fastpu.Factorization` (copies
        of P and Q).
    verbose : bool
        Print one line per epoch.
    n_threads : int, optional
        Threads for the parallel kernels (restored afterwards).
    neg_row_weights : array_like, shape (m,), optional
        α⁻_x, a weight of the unlabeled entries per row (the paper's α⁻_xy = α⁻_x, under
        eq. 9); combined with α⁻_y the unlabeled entry (x, y) weighs α⁻_x α⁻_y, which keeps
        the cached form (S^p = Pᵀ diag(α⁻_x) P).  ``None`` (default) means 1 for every row
        and gives exactly the results of a fit without it.

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
        an int.
    ValueError
        On bad shapes, NaN/inf, negative weights or unknown options; ``reg`` above 1e20; if ``Y``
        has no row or no column (at least one user and one item are expected), or no positive (no stored
        nonzero value).
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
    """
    Y = V.check_trainable(V.check_csr(Y, name="Y"))
    m, n = Y.shape
    k = V.check_k(k)
    Zx, has_ux = _feature_csr(user_features, name="user_features", n_rows=m)
    Zy, has_ix = _feature_csr(item_features, name="item_features", n_rows=n, of="column")
    if alpha0 is None:
        alpha0 = 1.0 * n
    alpha0 = V.check_scalar(alpha0, name="alpha0", minimum=0.0)
    rho = V.check_scalar(rho, name="rho", minimum=0.0)
    if neg_weights is None:
        neg = _negative_weights(Y, alpha0, rho)
    else:
        neg = _neg_vector(neg_weights, n)
    apos = _positive_array(pos_weight, name="pos_weight", Y=Y, minimum=0.0)
    rpos = _positive_array(r_pos, name="r_pos", Y=Y, minimum=None)
    r_neg = V.check_scalar(r_neg, name="r_neg")
    neg_rows = _neg_row_vector(neg_row_weights, m)
    lr = V.check_scalar(lr, name="lr", minimum=0.0, strict_min=True)
    n_iter = V.check_int(n_iter, name="n_iter", minimum=1)
    update = V.check_choice(update, name="update", choices=_UPDATES)
    optimizer = V.check_choice(optimizer, name="optimizer", choices=_OPTIMIZERS)
    if biases is None:
        biases = has_ux or has_ix
    if not isinstance(biases, (bool, np.bool_)):
        raise TypeError(f"biases must be True, False or None, got {biases!r}")
    reg = V.check_penalty(reg, name="reg")
    init_std = V.check_scalar(init_std, name="init_std", minimum=0.0)
    rng = V.check_seed(seed)
    callback = V.check_callback(callback)
    verbose = V.check_verbose(verbose)

    g = k + 2 if biases else k
    V.check_alloc(8 * g * (5 * (m + n) + 4 * (Zx.shape[1] + Zy.shape[1] + 2) + 8 * g), what="fbgd.fit",
                  names=("k",) + (("user_features",) if has_ux else ()) + (("item_features",) if has_ix else ()))
    prob = _Problem(Y, Zx, Zy, k, bool(biases), neg, apos, rpos, r_neg, neg_rows)
    theta_x, theta_y = prob.init_params(rng, init_std)
    params = dict(k=k, alpha0=alpha0, rho=rho, pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg,
                  lr=lr, n_iter=n_iter, update=update, optimizer=optimizer, biases=bool(biases),
                  reg=reg, init_std=init_std, seed=seed if isinstance(seed, numbers.Integral) else None,
                  user_features=None if not has_ux else tuple(Zx.shape),
                  item_features=None if not has_ix else tuple(Zy.shape),
                  neg_weights="given" if neg_weights is not None else "eq22",
                  neg_row_weights=None if neg_rows is None else "given")
    if callback is not None:            # the iterate with its parameters (cold start needs V_user)
        callback = _with_parameters(callback, theta_x, theta_y, Zx.shape[1], Zy.shape[1], k,
                                    biases=biases, has_ux=has_ux, has_ix=has_ix, neg=neg,
                                    neg_rows=neg_rows, params=params)
    progress = Progress("fbgd", verbose=verbose, callback=callback,
                        advice=_advice(prob, lr, optimizer, apos, rpos, r_neg, has_ux, has_ix, init_std))
    with limit_threads(n_threads):
        P, Q, init = _train(prob, theta_x, theta_y, lr=lr, n_iter=n_iter, update=update,
                            adagrad=optimizer == "adagrad", reg=reg, progress=progress)
    progress.finish(P, Q, zero_advice=None if Y.nnz == 0 else (
        "init_std=0 starts every embedding at 0, a stationary point without biases; use init_std > 0"
        if init_std == 0.0 else f"lower reg (now {reg:g}) or raise lr (now {lr:g}) or n_iter"))
    return _result(P, Q, theta_x, theta_y, Zx.shape[1], Zy.shape[1], k, biases=biases,
                   has_ux=has_ux, has_ix=has_ix, neg=neg, neg_rows=neg_rows, init=init,
                   history=progress.history, params=params)


def _with_parameters(callback, theta_x, theta_y, px, py, k, **kw):
    """``callback`` whose ``info["model"]()`` carries the current parameters (``extras``, ``params``)
    like a finished fit; the training loop updates ``theta_x`` / ``theta_y`` in place."""
    def wrapped(info):
        base = info.get("model")
        if base is not None:
            def model():
                it = base()
                return _result(it.user_factors, it.item_factors, theta_x.copy(), theta_y.copy(), px,
                               py, k, init=None, history=[], **kw)
            info = dict(info, model=model)
        return callback(info)
    return wrapped


def _advice(prob, lr, optimizer, apos, rpos, r_neg, has_ux, has_iy, init_std):
    """What to change when the objective diverges or overflows, most likely cause first."""
    tips = [f"lower init_std (now {init_std:g})"] if init_std > 1e2 else []
    for Z, given, name in ((prob.Zx, has_ux, "user_features"), (prob.Zy, has_iy, "item_features")):
        big = float(np.abs(Z.data).max()) if (given and Z.nnz) else 0.0
        if big > 1e2:
            tips.append(f"scale {name} down (largest |value| {big:g}; unit-norm rows work well)")
    scale = max([abs(r_neg)] + [float(np.abs(a).max()) for a in (apos, rpos) if a.size])
    if scale > 1e3 or float(prob.neg.max(initial=0.0)) > 1e6:
        tips.append("scale down the weights and targets (pos_weight, r_pos, r_neg, alpha0, neg_weights)")
    tips.append(f"lower lr (now {lr:g}{', plain gd' if optimizer == 'gd' else ''})")
    return "; or ".join(tips)


# --------------------------------------------------------------------------- demo
def demo_configs() -> list[tuple[str, dict[str, Any]]]:
    """Settings for ``fastpu demo`` (MovieLens-100K, 80/20 per-user holdout, 2 cores).

    Returns
    -------
    list of (str, dict)
        ``(label, fit_kwargs)`` pairs; ``fit(Y_train, **fit_kwargs, seed=0, verbose=True)``
        trains each in a few seconds.

    Examples
    --------
    >>> from fastpu import fbgd
    >>> label, kwargs = fbgd.demo_configs()[0]
    >>> kwargs["k"] > 0
    True
    """
    return [
        # the defaults: alpha0 = n_items, rho = 0.05, lr = 0.03 (Adagrad), reg = 0.1
        ("fBGD MF (coordinate, Adagrad)", dict(k=32, n_iter=30, update="coordinate")),
        ("fBGD MF (batch, Adagrad)", dict(k=32, n_iter=30, update="batch")),
    ]

