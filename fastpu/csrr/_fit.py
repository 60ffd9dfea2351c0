"""CSRR's fit and objective (the method is described in the package docstring)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fastpu._core import validation as Vd
from fastpu._kernels import csrr as K
from fastpu.csrr._check import (LOSSES, Model, Positives, Run, check_memory, check_model,
                                check_run, positives, warn_rank)
from fastpu.csrr._model import CSRRModel
from fastpu.csrr._solvers import INNER_CAP, _Bilinear, _fit_bilinear, _fit_dense, _sparse_v
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, Callback, Seed, Sparse, Threads
from fastpu._core.factorization import accepts_dataset

__all__ = ["CSRRModel", "INNER_CAP", "demo_configs", "fit", "objective"]


# --------------------------------------------------------------------------------- public


@accepts_dataset
def fit(Y: Sparse | Dataset, k: int | None = None, *, variant: str = "e", loss: str = "I",
        alpha: float = 1.3, lam1: float = 1.0, lam2: float = 0.2, eta: float | None = None,
        n_iter: int | None = None, n_inner: int | None = 1, inner_tol: float = 1e-4,
        restart: str | None = None, svd_method: str = "auto", dense_limit: int | None = None,
        seed: Seed = 0, n_threads: Threads = None, callback: Callback = None,
        verbose: bool = False) -> CSRRModel:
    """Fit CSRR (low rank + sparse, cost-sensitive square loss) to a PU matrix.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Users × items; every stored entry with a positive value is a positive (binarised).
    k : int, optional
        Rank d of U = P Qᵀ, required by variant ``"e"`` (the default variant) as by every
        rank-k method. Variants ``"I"``/``"II"`` have no fixed rank (the nuclear norm chooses
        it): leave ``k=None``.
    variant : {"I", "II", "e"}
        ``"I"``/``"II"``: Algorithm 1 with loss ℓ^I / ℓ^II and a dense U (nuclear norm,
        singular value thresholding). ``"e"``: Algorithm 2, U = P Qᵀ of rank ``k``.
    loss : {"I", "II"}
        The loss of variant ``"e"`` (``"I"``/``"II"`` use their own).
    alpha : float
        Cost bias α > 0 (α = c_p / c_n; α > 1 weighs missing a positive more); with loss
        ``"II"`` (variant ``"II"``, or ``"e"`` with ``loss="II"``) α is the positives' target and
        at most 1e100 (it enters the objective squared). The defaults of
        ``alpha``, ``lam1`` and ``lam2`` were chosen by ``fastpu.select.tune`` (variant "e") on
        the training parts of MovieLens-100K and -1M (docs/results/defaults.md).
    lam1 : float
        Weight λ1 >= 0 of the nuclear norm (of λ1/2(‖P‖² + ‖Q‖²) for ``"e"``).
    lam2 : float
        Weight λ2 >= 0 of ‖V‖₁.
    eta : float, optional
        Step size η > 0 used by every block. ``None``: the inverse Lipschitz constant of
        each step (see the module docstring).
    n_iter : int, optional
        Outer iterations (default 60 for ``"I"``/``"II"``, 100 for ``"e"``).
    n_inner : int or None
        ``"e"`` only: the inner loop of Algorithm 2 (lines 7–11, P and Q passes with V
        fixed). An int: at most this many passes per outer iteration (default 1, a single
        pass, which gives more quality per second on MovieLens-100K — see docs/csrr.md).
        ``None``: the paper's rule, repeat until convergence — until the relative objective
        change |f_prev − f| / max(1, |f_prev|) of one pass is at most ``inner_tol``, with a
        safety cap of :data:`INNER_CAP` passes. The passes taken are ``history[t]["inner"]``.
    inner_tol : float
        ``"e"`` only: the inner loop stops when that relative objective change is at most
        ``inner_tol`` (used when ``n_inner`` is ``None`` or above 1).
    restart : {None, "function"}
        ``"I"``/``"II"`` only: adaptive momentum restart of the APG driver.
    svd_method : {"auto", "truncated", "full"}
        ``"I"``/``"II"`` only: how the singular value thresholding computes its SVD.
    dense_limit : int, optional
        ``"I"``/``"II"`` refuse when m·n exceeds it (default
        :data:`fastpu._core.validation.DENSE_LIMIT`).
    seed : int
        Seeds P, Q's start (``"e"``) and ARPACK's start vectors (``"I"``/``"II"``).
    n_threads : int, optional
        numba threads for the kernels (restored afterwards). For ``"I"``/``"II"``, whose time is
        LAPACK's SVD, it also limits BLAS's threads during the fit; ``None`` (default) leaves
        BLAS at its own count. On a machine other jobs share, ``n_threads=1`` can be several
        times faster than BLAS's threads contending for the cores.
    callback : callable, optional
        ``callback(info)`` after every outer iteration; returning True stops (it must return
        None or a bool). ``info["model"]()`` is the current iterate as a :class:`CSRRModel`
        (copies).
    verbose : bool
        Print one line per iteration.

    Returns
    -------
    CSRRModel
        ``U`` (dense, ``"I"``/``"II"``) or ``P``, ``Q`` (``"e"``), ``V`` (CSR on Ω+),
        ``scores()``, and ``history`` with the objective (10) per iteration.

    Raises
    ------
    TypeError
        If ``k`` is missing for variant ``"e"``; if ``Y`` is not sparse or an argument has the
        wrong type (a complex ``Y`` or feature matrix included); a ``callback`` that returns
        something other than None or a bool; a ``verbose`` that is not a bool or an int.
    ValueError
        If an argument is out of range, ``k`` is given to ``"I"``/``"II"``, or the dense U of
        ``"I"``/``"II"`` would exceed ``dense_limit`` (use ``variant="e"``), or the memory the
        fit needs (factors, or the dense U) exceeds the available memory
        (:func:`fastpu._core.memory.check_alloc`); if ``Y`` has no row or no column (at least
        one user and one item are expected), or no positive (no stored value > 0).
    FloatingPointError
        If the objective becomes non-finite.

    Warns
    -----
    ConvergenceWarning
        If an iteration's objective (10) is above the objective at the start (the iteration
        diverged: lower ``eta``), or if every score of the result is below 1e-12 (U ≈ 0 and
        V ≈ 0: ``eta`` too large, or ``lam1``/``lam2`` too large). These read the history and the
        result only; they change nothing.

    Examples
    --------
    >>> import fastpu as fp
    >>> import scipy.sparse as sp
    >>> Y = sp.random_array((40, 30), density=0.2, random_state=0, format="csr")
    >>> m = fp.csrr.fit(Y, 4, variant="e", n_iter=5)
    >>> m.scores([0, 1]).shape, m.V.shape
    ((2, 30), (40, 30))
    >>> m1 = fp.csrr.fit(Y, variant="I", lam1=0.5, n_iter=5)
    >>> m1.U.shape
    (40, 30)
    """
    model = check_model(variant=variant, loss=loss, alpha=alpha, lam1=lam1, lam2=lam2)
    run = check_run(k, model, eta=eta, n_iter=n_iter, n_inner=n_inner, inner_tol=inner_tol,
                    restart=restart, svd_method=svd_method, seed=seed, callback=callback,
                    verbose=verbose)
    data = positives(Y, fit=True)
    warn_rank(run, data.shape)
    check_memory(data, model, run, dense_limit)
    params = _params(model, run, seed)
    progress = Progress(f"csrr-{model.variant}", verbose=run.verbose, callback=run.callback,
                        advice=_advice(run.eta), total=run.n_iter)
    # CSRR-I/II spend their time in LAPACK's SVD: BLAS keeps its own thread count there unless
    # n_threads is given (then BLAS gets that many too: on a busy machine its threads contend)
    bilinear = model.variant == "e"
    with limit_threads(n_threads, blas=1 if bilinear else n_threads):
        if bilinear:
            P, Q, v = _fit_bilinear(data, model, run, progress)
        else:
            dense = _fit_dense(data, model, run, progress)
    if bilinear:
        return _bilinear_model(data, P, Q, v, model, run, params, progress)
    return _dense_model(data, dense, model, run, params, progress)


def _params(model: Model, run: Run, seed: Any) -> dict[str, Any]:
    """What the model records of its fit (``params``); CSRR-I/II add ``eta_used``."""
    return dict(variant=model.variant, alpha=model.alpha, lam1=model.lam1, lam2=model.lam2,
                eta=run.eta, k=run.k, loss=model.loss, n_iter=run.n_iter, n_inner=run.n_inner,
                inner_tol=run.inner_tol, restart=run.restart, svd_method=run.svd_method,
                seed=seed if not isinstance(seed, np.random.Generator) else None)


def _bilinear_model(data: Positives, P: np.ndarray, Q: np.ndarray, v: np.ndarray, model: Model,
                    run: Run, params: dict[str, Any], progress: Progress) -> CSRRModel:
    """CSRR-e's result: U = P Qᵀ and V on the positives (warns when every score is ~0)."""
    # scores lie in [0, 2]: below 1e-12 everywhere they are zero for any ranking
    bound = (math.sqrt(float(np.max(np.einsum("ij,ij->i", P, P), initial=0.0))
                       * float(np.max(np.einsum("ij,ij->i", Q, Q), initial=0.0)))
             + float(np.max(v, initial=0.0)))
    progress.finish(all_zero=bound < 1e-12, zero_advice=_zero_advice(data, model, run))
    return CSRRModel(user_factors=P, item_factors=Q, history=progress.history, params=params,
                     method="csrr", extras={}, U=None, V=_sparse_v(data, v), variant="e")


def _dense_model(data: Positives, dense: tuple[Any, ...], model: Model, run: Run,
                 params: dict[str, Any], progress: Progress) -> CSRRModel:
    """CSRR-I/II's result: the paper's output X^T = U^T + V^T, Ũ's factors and Ṽ in extras."""
    Ut, v_tilde, U, v, eta_used, res, box = dense
    params["eta_used"] = eta_used
    progress.finish(all_zero=float(np.max(v, initial=0.0)) + float(np.max(U, initial=0.0)) < 1e-12,
                    zero_advice=_zero_advice(data, model, run))
    root = np.sqrt(Ut.s)
    hist = progress.history
    if hist:
        hist[-1]["box_violation"] = box
    return CSRRModel(user_factors=np.ascontiguousarray(Ut.left * root),
                     item_factors=np.ascontiguousarray(Ut.right.T * root),
                     history=hist, params=params, method="csrr",
                     extras={"singular_values": Ut.s.copy(), "V_tilde": _sparse_v(data, v_tilde),
                             "status": res.status.name},
                     U=U, V=_sparse_v(data, v), variant=model.variant)


def _advice(eta: float | None) -> str:
    """What to change when the objective grows or overflows."""
    if eta is not None:
        return (f"lower eta (now {eta:g}) or leave eta=None, the inverse Lipschitz step of each "
                "block, under which the objective cannot grow")
    return "pass a smaller eta than the default inverse Lipschitz step, or raise lam1 and lam2"


def _zero_advice(data: Positives, model: Model, run: Run) -> str | None:
    """Advice for an all-zero result; ``None`` (no warning) when Y has no positive to fit."""
    eta, lam1, lam2 = run.eta, model.lam1, model.lam2
    if data.nnz == 0:
        return None
    tip = (f"lower lam1 (now {lam1:g}) and lam2 (now {lam2:g}), which shrink U and V to zero"
           if (lam1 > 0 or lam2 > 0) else "raise n_iter")
    if eta is not None:
        return (f"lower eta (now {eta:g}): a step that large overshoots and the projection onto "
                f"the box clips everything to 0; or {tip}")
    return tip


def objective(Y: Sparse, *, U: ArrayLike | None = None, V: Sparse | None = None,
              P: ArrayLike | None = None, Q: ArrayLike | None = None, variant: str = "I",
              alpha: float = 1.3, lam1: float = 1.0, lam2: float = 0.2,
              dense_limit: int | None = None) -> float:
    """The objective (10) of a given (U, V), or its bilinear form for U = P Qᵀ.

    With ``U``: λ1‖U‖_* + λ2‖V‖₁ + Σ_ij ℓ(U_ij + V_ij, A_ij) (nuclear norm by a full SVD —
    for checking, not for large matrices). With ``P``, ``Q``: λ1/2(‖P‖²_F + ‖Q‖²_F) in
    place of the nuclear norm, computed in O(|Ω+|k + (m+n)k²) without forming P Qᵀ.
    The box constraints are not checked.

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        The positives (binarised as in :func:`fit`).
    U : array-like, shape (m, n), optional
        Dense low-rank part (give either ``U`` or both ``P`` and ``Q``).
    V : scipy.sparse matrix, shape (m, n), optional
        Sparse part (zero when ``None``); its stored entries must lie on Y's positives.
    P, Q : array-like, shapes (m, k) and (n, k), optional
        Factors with U = P Qᵀ.
    variant : {"I", "II"}
        Which loss, ℓ^I or ℓ^II.
    alpha, lam1, lam2 : float
        As in :func:`fit`.
    dense_limit : int, optional
        Refuse a dense ``U`` above this many entries.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If an input has the wrong type.
    ValueError
        If shapes disagree, both or neither of ``U`` and (``P``, ``Q``) are given, or ``V``
        has entries off the positives.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu import csrr
    >>> Y = sp.csr_array(np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> csrr.objective(Y, U=np.zeros((2, 2)), variant="I", alpha=2.0)   # α·½·(0 − 1)² twice
    2.0
    """
    model = check_model(variant=variant, alpha=alpha, lam1=lam1, lam2=lam2, variants=LOSSES)
    alpha, lam1, lam2, kind = model.alpha, model.lam1, model.lam2, model.kind
    data = positives(Y)
    m, n = data.shape
    if (U is None) == (P is None and Q is None) or (U is None and (P is None or Q is None)):
        raise ValueError("give either U, or both P and Q (U = P Qᵀ)")
    if V is None:
        v = np.zeros(data.nnz)
    else:
        Vc = Vd.check_csr(V, name="V", shape=(m, n), nonnegative=False)
        Vc.eliminate_zeros()
        pattern = data.csr(np.ones(data.nnz))
        off = Vc - Vc.multiply(pattern)
        off.eliminate_zeros()
        if off.nnz:
            raise ValueError(f"V has {off.nnz} stored entries off the positives of Y; expected V on Ω+ only")
        v = np.asarray(Vc[data.rows, data.indices]).ravel() if data.nnz else np.zeros(0)
    with limit_threads(None, blas=None):
        if U is not None:
            Vd.check_dense_size(m, n, what="objective with a dense U", alternative="P and Q",
                                limit=dense_limit)
            U = Vd.check_dense(U, name="U", shape=(m, n))
            up = np.empty(data.nnz)
            K.gather(data.indptr, data.indices, U, up)
            g = np.empty(data.nnz)
            row = np.empty(m)
            K.positive_terms(data.indptr, up + v, up, kind, alpha, g, row)
            nuc = float(np.linalg.svd(U, compute_uv=False).sum()) if U.size else 0.0
            with np.errstate(over="ignore", invalid="ignore"):
                val = lam1 * nuc + lam2 * float(np.abs(v).sum()) + 0.5 * float(np.sum(U * U)) + float(row.sum())
            return Vd.check_finite_result(val, what="csrr.objective", names=("U", "V", "alpha", "lam1", "lam2"))
        P = Vd.check_dense(P, name="P", shape=(m, None), shape_from="one row per row of Y")
        Q = Vd.check_dense(Q, name="Q", shape=(n, P.shape[1]),
                           shape_from="one row per column of Y, as many columns as P")
        prob = _Bilinear(data, kind, alpha, lam1, lam2)
        with np.errstate(over="ignore", invalid="ignore"):
            val = prob.objective(P, Q, v)
            val = val - lam2 * float(v.sum()) + lam2 * float(np.abs(v).sum())
        return Vd.check_finite_result(val, what="csrr.objective", names=("P", "Q", "V", "alpha", "lam1", "lam2"))


def demo_configs() -> list[tuple[str, dict[str, Any], str]]:
    """Configurations of ``fit`` for ``fastpu demo`` (MovieLens-100K, 80/20 holdout).

    Returns
    -------
    list of (str, dict, str)
        ``(label, fit_kwargs, legend)``; ``fit(Y_train, **kwargs, seed=0, verbose=True)``
        trains a good model in a few seconds on 2 cores.

    Examples
    --------
    >>> from fastpu import csrr
    >>> [label for label, _, _ in csrr.demo_configs()]
    ['CSRR-e']
    """
    return [("CSRR-e", dict(variant="e", k=32, alpha=2.0, lam1=1.0, lam2=0.1, n_iter=100),
             "Yang et al.'s low rank + sparse, the low-rank part a product of two factors")]
