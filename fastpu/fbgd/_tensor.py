"""fBGD's tensor models (Yuan et al., Appendix A): PITF and rank-f CP over (x, h) pairs × y.

The data are triples (x, h, y): a row object x (user, word), a context h (tag, item,
context word) and a column y (tag, item, word).  Each (x, h) pair that is present is one
row of a sparse matrix Y (pairs × |Y|) whose stored entries are the positive triples.
Appendix A writes both tensor models as a dot product r̂_xhy = p_xh · q_y:

- PITF (eq. 25-26, with V^X, V^H, V^Y shared by the pairwise interactions), g = f + 1:
  r̂ = ⟨v^X_x, v^H_h⟩ + ⟨v^X_x, v^Y_y⟩ + ⟨v^H_h, v^Y_y⟩,
  p_xh = (v^X_x + v^H_h, ⟨v^X_x, v^H_h⟩),  q_y = (v^Y_y, 1);
- CP (eq. 27-28), g = f:  r̂ = Σ_d v^X_x,d v^H_h,d v^Y_y,d,  p_xh = v^X_x ∘ v^H_h,  q_y = v^Y_y.

Loss (2) over every present pair and every y depends on the parameters only through the
rows of P and Q, so fBGD's caches apply unchanged: S^q = Qᵀ diag(α⁻_y) Q gives ∂J/∂p_xh in
O(g²) per pair plus the positives, and the chain rule to v^X, v^H is a sum over the pairs
of each x (each h), local to those rows.  An epoch costs O((|pairs| + |Y|) g² + |P| g +
(|X| + |H|) f); nothing of size |X|·|H|·|Y| (or pairs × |Y|) is formed.

Public names are re-exported by :mod:`fastpu.fbgd`.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu.fbgd._check import (TENSORS, Run, TensorModel, Weights, check_fitted, check_run,
                                check_tensor_factors, check_tensor_model, check_weights, check_y,
                                identity, unique_pairs, warn_rank)
from fastpu.fbgd._problem import _EPS, _negative_weights, _Problem, per_positive
from fastpu._kernels import fbgd as _k
from fastpu._kernels import fbgd_tensor as _kt
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu._core.factorization import Factorization
from fastpu._core.hints import ArrayLike, Callback, Seed, Sparse, Threads

__all__ = ["fit_tensor", "pair_model", "tensor_objective", "triples_to_pairs"]


# --------------------------------------------------------------------------- structure
def _groups(idx, n):
    """CSR-like grouping of the rows by their index: rows of group i are rows[indptr[i]:indptr[i+1]]."""
    rows = np.argsort(idx, kind="stable").astype(np.int64)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(idx, minlength=n), out=indptr[1:])
    return indptr, rows


class _Tensor:
    """The pair structure of a tensor problem (built once) and its embeddings."""

    def __init__(self, px, ph, n_x, n_h, f, tensor):
        self.px, self.ph, self.n_x, self.n_h, self.f = px, ph, n_x, n_h, f
        self.pitf = tensor == "pitf"
        self.g = f + 1 if self.pitf else f
        self.x_groups = _groups(px, n_x)
        self.h_groups = _groups(ph, n_h)

    def embed_pairs(self, VX, VH):
        P = np.empty((self.px.size, self.g))
        _kt.pair_embed(self.px, self.ph, VX, VH, self.pitf, P)
        return P

    def embed_items(self, VY):
        if not self.pitf:
            return np.ascontiguousarray(VY)
        return np.ascontiguousarray(np.column_stack([VY, np.ones(VY.shape[0])]))

    def chain(self, G_p, VX, VH):
        """∂J/∂V^X, ∂J/∂V^H from ∂J/∂P."""
        gX = np.empty((self.n_x, self.f))
        gH = np.empty((self.n_h, self.f))
        _kt.pair_chain(*self.x_groups, self.ph, G_p, VH, self.pitf, gX)
        _kt.pair_chain(*self.h_groups, self.px, G_p, VX, self.pitf, gH)
        return gX, gH


def _problem(Y: Sparse, g: int, weights: Weights, neg: np.ndarray) -> _Problem:
    """fBGD's cached loss over (pairs × items) with free pair and item embeddings."""
    m, n = Y.shape
    return _Problem(Y, identity(m), identity(n), g, False, neg, per_positive(weights.pos_weight, Y),
                    per_positive(weights.r_pos, Y), weights.r_neg, weights.neg_rows)


# --------------------------------------------------------------------------- helpers
def triples_to_pairs(x: ArrayLike, h: ArrayLike, y: ArrayLike, values: ArrayLike | None = None, *,
                     shape: tuple[int, ...] | None = None) -> tuple[Sparse, np.ndarray]:
    """Positive triples (x, h, y) as fBGD's tensor input: a pairs × y matrix and its (x, h) pairs.

    Parameters
    ----------
    x, h, y : array_like of int, shape (nnz,)
        Index of the row object x, the context h and the column y of each positive triple.
    values : array_like, shape (nnz,), optional
        Stored value of each triple (1 when ``None``); repeated triples are summed.
    shape : tuple of 3 ints, optional
        (|X|, |H|, |Y|); by default one more than the largest index of each.

    Returns
    -------
    Y : scipy.sparse.csr_array, shape (n_pairs, |Y|)
        Row r holds the positives of the pair ``pairs[r]``.
    pairs : ndarray of int64, shape (n_pairs, 2)
        The distinct (x, h) pairs that occur, sorted by x then h.

    Raises
    ------
    TypeError
        If an index array is not integer.
    ValueError
        On negative or out-of-range indices, arrays of different lengths, or bad values.

    Examples
    --------
    >>> from fastpu import fbgd
    >>> Y, pairs = fbgd.triples_to_pairs([0, 0, 1], [2, 2, 0], [1, 3, 1])
    >>> pairs.tolist(), Y.shape
    ([[0, 2], [1, 0]], (2, 4))
    >>> Y.toarray().tolist()
    [[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]]
    """
    arrays = []
    for name, a in (("x", x), ("h", h), ("y", y)):
        a = np.asarray(a)
        if a.ndim == 0:
            a = a.reshape(1)
        if a.dtype.kind not in "iu" and a.size:
            raise TypeError(f"{name} must be integer indices, got dtype {a.dtype}")
        if a.ndim != 1:
            raise ValueError(f"{name} must be a 1-d array of indices, got shape {a.shape}")
        if a.size and a.min() < 0:
            raise ValueError(f"{name} must be non-negative indices, got minimum {a.min()}")
        arrays.append(a.astype(np.int64))
    x, h, y = arrays
    if not (x.size == h.size == y.size):
        raise ValueError(f"x, h and y must have the same length, got {x.size}, {h.size}, {y.size}")
    if shape is None:
        shape = tuple(int(a.max()) + 1 if a.size else 0 for a in arrays)
    else:
        if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list, np.ndarray)) \
                or len(tuple(shape)) != 3:
            raise ValueError(f"shape must be (|X|, |H|, |Y|), got {shape!r}")
        shape = tuple(V.check_int(s, name="shape", minimum=0) for s in shape)
        for name, a, s in zip("xhy", arrays, shape):
            if a.size and a.max() >= s:
                raise ValueError(f"{name} has index {a.max()}, outside shape {shape}")
    vals = V.check_vector(values, name="values", size=x.size)
    ux, uh, row = unique_pairs(x, h)
    pairs = np.column_stack([ux, uh]).astype(np.int64)
    Y = V.check_csr(sp.coo_array((vals, (row, y)), shape=(ux.size, shape[2])), name="Y",
                    nonnegative=False)
    return Y, pairs


def tensor_objective(Y: Sparse, VX: ArrayLike, VH: ArrayLike, VY: ArrayLike, *, pairs: ArrayLike,
                     neg_weights: ArrayLike | None = None, neg_row_weights: ArrayLike | None = None,
                     pos_weight: float | str = 1.0, r_pos: float | str = 1.0, r_neg: float = 0.0,
                     tensor: str = "pitf") -> float:
    """Loss (2) of a PITF or CP model over every given (x, h) pair and every y, from the caches.

    J = Σ_P α⁺ (r⁺ − r̂_xhy)² + Σ_U α⁻_xh α⁻_y (r⁻ − r̂_xhy)² with r̂ from eq. 25 (PITF) or
    eq. 27 (CP), evaluated as p_xh · q_y (eq. 26 / 28) in O((|pairs| + |Y|) g² + |P| g).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (n_pairs, |Y|)
        Positives: row r holds the y of the positive triples (x, h, y) of ``pairs[r]``.
    VX, VH, VY : array_like, shapes (|X|, f), (|H|, f), (|Y|, f)
        The factors V^X, V^H, V^Y of the paper.
    pairs : array_like of int, shape (n_pairs, 2)
        The (x, h) pair of each row of Y; each pair once.
    neg_weights : array_like, shape (|Y|,), optional
        α⁻_y; ``None`` means 1.
    neg_row_weights : array_like, shape (n_pairs,), optional
        α⁻_xh, a weight of the unlabeled triples per (x, h) pair; ``None`` means 1.
    pos_weight, r_pos : float or "values"
        α⁺ and r⁺ (a number, or Y's stored values).
    r_neg : float
        Target r⁻ of the unlabeled triples.
    tensor : {"pitf", "cp"}
        Pairwise interaction tensor factorisation (eq. 25) or rank-f CP (eq. 27).

    Returns
    -------
    float

    Raises
    ------
    TypeError
        On a non-sparse Y or non-integer pairs.
    ValueError
        On shape mismatches, repeated pairs, non-finite values or negative weights.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu import fbgd
    >>> Y, pairs = fbgd.triples_to_pairs([0, 1], [0, 0], [1, 0])
    >>> ones = np.ones((2, 1))
    >>> fbgd.tensor_objective(Y, ones, ones[:1], ones, pairs=pairs, tensor="cp")   # every r̂ = 1
    2.0
    """
    Y = check_y(Y, fit=False)
    tensor = V.check_choice(tensor, name="tensor", choices=TENSORS)
    VX, VH, VY, px, ph = check_tensor_factors(VX, VH, VY, pairs=pairs, shape=Y.shape)
    w = check_weights(Y.shape, neg_weights=neg_weights, neg_row_weights=neg_row_weights,
                      pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg)
    tp = _Tensor(px, ph, VX.shape[0], VH.shape[0], VX.shape[1], tensor)
    prob = _problem(Y, tp.g, w, w.neg if w.neg is not None else np.ones(Y.shape[1]))
    P, Q = tp.embed_pairs(VX, VH), tp.embed_items(VY)
    Sq, sq = prob.gram(prob.neg, Q)
    Sp, sp_ = prob.gram(prob.arow, P)
    with np.errstate(over="ignore", invalid="ignore"):
        loss = prob.loss(P, Q, Sq, sq, Sp, sp_)
    return V.check_finite_result(loss, what="fbgd.tensor_objective",
                                 names=("VX", "VH", "VY", "neg_weights", "pos_weight", "r_pos", "r_neg"))


# --------------------------------------------------------------------------- fit
def fit_tensor(Y: Sparse, k: int, *, pairs: ArrayLike, n_x: int | None = None,
               n_h: int | None = None, alpha0: float | None = None, rho: float = 0.0,
               neg_weights: ArrayLike | None = None, neg_row_weights: ArrayLike | None = None,
               pos_weight: float | str = 1.0, r_pos: float | str = 1.0, r_neg: float = 0.0,
               tensor: str = "pitf", lam: float = 0.0, lr: float = 0.05, n_iter: int = 30,
               optimizer: str = "adagrad", init_std: float = 0.01, seed: Seed = 0,
               n_threads: Threads = None, callback: Callback = None,
               verbose: bool = False) -> Factorization:
    """Fit fBGD's PITF or CP tensor model (Appendix A) on all positive and unlabeled triples.

    The unlabeled triples are every (x, h, y) with (x, h) one of ``pairs`` and y any column,
    minus the positives.  Each epoch takes the full gradient of the x-related parameters
    (V^X and V^H) at one point and steps them, then does the same for V^Y (Algorithm 1's
    two sides, with the batch update of :func:`fastpu.fbgd.fit`).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (n_pairs, |Y|)
        Positives: row r lists the y of the positive triples (x, h, y) of the pair
        ``pairs[r]``; values >= 0 (used with ``pos_weight="values"``/``r_pos="values"``).
        :func:`triples_to_pairs` builds it from (x, h, y) triples.
    k : int
        Latent size f (g = f + 1 for PITF, g = f for CP).
    pairs : array_like of int, shape (n_pairs, 2)
        The (x, h) pair of each row of Y, each pair once.  A pair with an empty row of Y
        still contributes its unlabeled triples.
    n_x, n_h : int, optional
        |X| and |H| (rows of V^X and V^H); default one more than the largest index in ``pairs``.
    alpha0 : float, optional
        Total weight of the unlabeled triples of one pair (eq. 22); default ``0.5 * |Y|``.
    rho : float
        Popularity exponent of eq. 22 (0: uniform α⁻_y).
    neg_weights : array_like, shape (|Y|,), optional
        α⁻_y given directly; overrides ``alpha0`` and ``rho``.
    neg_row_weights : array_like, shape (n_pairs,), optional
        α⁻_xh, the row-side weight of the unlabeled triples (the paper's α⁻_x with the
        pairs as rows); the unlabeled triple weighs α⁻_xh α⁻_y.  ``None`` means 1.
    pos_weight : float or "values"
        α⁺ of every positive, or Y's stored values.
    r_pos : float or "values"
        Target r⁺ of the positives.
    r_neg : float
        Target r⁻ of the unlabeled triples.
    tensor : {"pitf", "cp"}
        ``"pitf"``: pairwise interaction tensor factorisation with shared factors (eq. 25-26);
        ``"cp"``: rank-f canonical polyadic decomposition (eq. 27-28).
    lam : float
        L2 penalty lam·(‖V^X‖² + ‖V^H‖² + ‖V^Y‖²) (0, as in the paper).
    lr : float
        Step size γ (Adagrad's base rate, eq. 24; the raw step with ``optimizer="gd"``).
    n_iter : int
        Number of epochs.
    optimizer : {"adagrad", "gd"}
        Adagrad per parameter (eq. 24, ε = 1e-4 where the sum is zero) or plain steps.
    init_std : float
        Standard deviation of the normal initialisation N(0, init_std²) of every factor.
    seed : int, numpy Generator or None
        Seed of the initialisation.
    n_threads : int, optional
        Threads for the parallel kernels (restored afterwards).
    callback : callable, optional
        Called with each epoch's history dict; returning True stops training.
    verbose : bool
        Print one line per epoch.

    Returns
    -------
    Factorization
        Over the (x, h)-pair × y matrix: ``user_factors`` = P (one row p_xh per row of Y,
        g columns) and ``item_factors`` = Q (q_y), so ``scores``, :func:`fastpu.recommend`
        and :func:`fastpu.evaluate` work on pairs × y exactly as on users × items.
        ``extras`` holds ``V_x``, ``V_h``, ``V_y`` (V^X, V^H, V^Y), ``pairs``, ``tensor``,
        ``neg_weights``, ``neg_row_weights`` and ``initial_objective``; :func:`pair_model`
        scores any other (x, h) pairs.  ``history`` has ``iter``, ``objective``, ``loss``,
        ``seconds``.

    Raises
    ------
    TypeError
        On wrongly typed arguments (``verbose`` must be a bool or an int).
    ValueError
        On bad shapes, repeated or out-of-range pairs, NaN/inf, negative weights,
        ``lam`` above 1e20, unknown options, or factors (``k``, ``n_x``, ``n_h``) too large for the memory; if
        ``Y`` has no row or no column, or no positive (no stored nonzero value).
    FloatingPointError
        If the objective becomes non-finite (plain ``gd`` with too large ``lr``).

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu import fbgd
    >>> rng = np.random.default_rng(0)
    >>> x, h, y = rng.integers(0, 20, 300), rng.integers(0, 10, 300), rng.integers(0, 15, 300)
    >>> Y, pairs = fbgd.triples_to_pairs(x, h, y, shape=(20, 10, 15))
    >>> model = fbgd.fit_tensor(Y, 4, pairs=pairs, tensor="pitf", alpha0=3.0, n_iter=5)
    >>> model.user_factors.shape == (Y.shape[0], 5)      # g = f + 1
    True
    >>> model.history[-1]["objective"] < model.extras["initial_objective"]
    True
    """
    Y = check_y(Y, fit=True)
    run = check_run(k, lr=lr, n_iter=n_iter, update="batch", optimizer=optimizer,
                    init_std=init_std, seed=seed, callback=callback, verbose=verbose)
    model = check_tensor_model(Y.shape, pairs=pairs, n_x=n_x, n_h=n_h, alpha0=alpha0, rho=rho,
                               neg_weights=neg_weights, neg_row_weights=neg_row_weights,
                               pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg, tensor=tensor,
                               lam=lam)
    warn_rank(run, Y.shape, where="fbgd.fit_tensor")
    _check_memory(Y.shape, model, run)
    tp = _Tensor(model.px, model.ph, model.n_x, model.n_h, run.k, model.tensor)
    w = model.weights
    prob = _problem(Y, tp.g, w, w.neg if w.neg is not None else _negative_weights(Y, w.alpha0, w.rho))
    VX, VH, VY = (run.rng.normal(0.0, run.init_std, size=(rows, run.k))
                  for rows in (model.n_x, model.n_h, Y.shape[1]))
    params = dict(k=run.k, tensor=model.tensor, n_x=model.n_x, n_h=model.n_h, alpha0=alpha0,
                  rho=rho, pos_weight=pos_weight, r_pos=r_pos, r_neg=w.r_neg, lr=run.lr,
                  n_iter=run.n_iter, optimizer=run.optimizer, lam=model.lam,
                  init_std=run.init_std, seed=seed if isinstance(seed, numbers.Integral) else None,
                  neg_weights="given" if w.neg is not None else "eq22",
                  neg_row_weights=None if w.neg_rows is None else "given")
    progress = Progress(f"fbgd-{model.tensor}", verbose=run.verbose, callback=run.callback,
                        advice="lower lr or init_std, or bring the targets r_pos, r_neg and the weights "
                               "pos_weight, neg_weights, alpha0 to a moderate scale (or raise lam)",
                        total=run.n_iter)
    with limit_threads(n_threads):
        P, Q, init = _train(prob, tp, VX, VH, VY, lr=run.lr, n_iter=run.n_iter,
                            adagrad=run.adagrad, lam=model.lam, progress=progress)
    extras = dict(V_x=VX, V_h=VH, V_y=VY, pairs=np.column_stack([model.px, model.ph]),
                  tensor=model.tensor, neg_weights=prob.neg, neg_row_weights=w.neg_rows,
                  initial_objective=init)
    return Factorization(user_factors=P, item_factors=Q, history=progress.history,
                         params=params, method="fbgd", extras=extras)


def _check_memory(shape: tuple[int, int], model: TensorModel, run: Run) -> None:
    """Refuse factors, their gradients and optimizer state, the pair / item embeddings and the
    g × g Gram matrices (g = k + 1 for PITF) that exceed the memory."""
    k = run.k
    check_alloc(8 * 4 * ((model.n_x + model.n_h + shape[0] + shape[1]) * (k + 1) + (k + 1) ** 2),
                what="fbgd.fit_tensor's factors and Gram matrices", names=("k", "n_x", "n_h"))


def _penalty(lam, VX, VH, VY):
    if lam == 0.0:
        return 0.0
    # a diverging run overflows here: the objective's check (Progress) names the cause instead
    with np.errstate(over="ignore", invalid="ignore"):
        return lam * (float(np.sum(VX ** 2)) + float(np.sum(VH ** 2)) + float(np.sum(VY ** 2)))


def _train(prob, tp, VX, VH, VY, *, lr, n_iter, adagrad, lam, progress):
    """Epochs: V^X and V^H from one gradient with the item caches fixed, rebuild P and its
    caches, then V^Y with the pair caches fixed; in place."""
    eps = _EPS
    acc_x, acc_h, acc_y = np.zeros_like(VX), np.zeros_like(VH), np.zeros_like(VY)
    free_x = np.ones(VX.shape, dtype=np.bool_)
    free_h = np.ones(VH.shape, dtype=np.bool_)
    free_y = np.ones(VY.shape, dtype=np.bool_)
    P, Q = tp.embed_pairs(VX, VH), tp.embed_items(VY)
    Sq, sq = prob.gram(prob.neg, Q)
    Sp, sp_ = prob.gram(prob.arow, P)
    init = prob.loss(P, Q, Sq, sq, Sp, sp_) + _penalty(lam, VX, VH, VY)
    G_p, G_q = np.empty_like(P), np.empty_like(Q)
    lam_rows = np.array([float(lam)])       # the kernels' compact form: one lam for every row
    for epoch in range(1, n_iter + 1):
        _k.side_gradient(*prob.x_side, P, Q, Sq, sq, prob.arow, prob.r_neg, G_p)
        gX, gH = tp.chain(G_p, VX, VH)
        _k.batch_update(gX, free_x, VX, acc_x, lr, lam_rows, adagrad, eps)
        _k.batch_update(gH, free_h, VH, acc_h, lr, lam_rows, adagrad, eps)
        P = tp.embed_pairs(VX, VH)
        Sp, sp_ = prob.gram(prob.arow, P)
        _k.side_gradient(*prob.y_side, Q, P, Sp, sp_, prob.neg, prob.r_neg, G_q)
        gY = np.ascontiguousarray(G_q[:, :tp.f])
        _k.batch_update(gY, free_y, VY, acc_y, lr, lam_rows, adagrad, eps)
        Q = tp.embed_items(VY)
        Sq, sq = prob.gram(prob.neg, Q)
        loss = prob.loss(P, Q, Sq, sq, Sp, sp_)
        total = loss + _penalty(lam, VX, VH, VY)
        if progress.step(epoch, total, loss=loss):
            break
    return P, Q, init


# --------------------------------------------------------------------------- scoring
def pair_model(model: Factorization, pairs: ArrayLike) -> Factorization:
    """The fitted tensor model as a :class:`~fastpu.Factorization` over any (x, h) pairs.

    Row r of the result is the embedding p_xh of ``pairs[r]`` (eq. 26 / 28), so its
    ``scores`` are r̂_xhy for every y, and :func:`fastpu.recommend` / :func:`fastpu.evaluate`
    run on a (pairs × y) matrix of held-out triples, including pairs unseen in training.

    Parameters
    ----------
    model : Factorization
        A result of :func:`fit_tensor`.
    pairs : array_like of int, shape (n, 2)
        (x, h) pairs with x < |X| and h < |H| of the fit; repeats allowed.

    Returns
    -------
    Factorization
        ``user_factors`` = P of ``pairs``, ``item_factors`` as fitted, the same ``extras``
        with ``pairs`` replaced.

    Raises
    ------
    TypeError
        If ``model`` is not a tensor fit or ``pairs`` is not integer.
    ValueError
        If ``pairs`` has the wrong shape or out-of-range indices.

    Examples
    --------
    >>> import numpy as np
    >>> from fastpu import fbgd
    >>> Y, pairs = fbgd.triples_to_pairs([0, 1, 2], [0, 1, 0], [1, 0, 2])
    >>> model = fbgd.fit_tensor(Y, 2, pairs=pairs, tensor="cp", n_iter=2)
    >>> new = fbgd.pair_model(model, [[1, 0], [2, 1]])      # pairs not in Y
    >>> new.scores().shape
    (2, 3)
    """
    ex = getattr(model, "extras", None)
    if not isinstance(model, Factorization) or not ex or "V_x" not in ex or "tensor" not in ex:
        raise TypeError(f"model must be a result of fbgd.fit_tensor, got {type(model).__name__}")
    check_fitted(model)                 # V_x, V_h of one width: the kernel reads both
    arr = np.asarray(pairs)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"pairs must be integer (x, h) indices, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n, 2), got {arr.shape}")
    VX, VH = ex["V_x"], ex["V_h"]
    px = V.check_indices(arr[:, 0], name="pairs[:, 0] (x)", size=VX.shape[0])
    ph = V.check_indices(arr[:, 1], name="pairs[:, 1] (h)", size=VH.shape[0])
    tp = _Tensor(px, ph, VX.shape[0], VH.shape[0], VX.shape[1], ex["tensor"])
    P = tp.embed_pairs(VX, VH)
    extras = dict(ex, pairs=np.column_stack([px, ph]))
    return Factorization(user_factors=P, item_factors=model.item_factors, history=model.history,
                         params=model.params, method=model.method, extras=extras,
                         item_ids=model.item_ids)
