"""HOMF's fit, objective and transition matrix (the method is described in the package docstring).

``fit`` reads as: check the arguments (:mod:`fastpu.homf._check`), build the problem (the
transition matrix A of (3) and its transpose, :mod:`fastpu.homf._graph`), run the solver of the
mode (:mod:`fastpu.homf._solvers`), wrap the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fastpu._core import validation as V_
from fastpu._core.memory import check_alloc
from fastpu.homf._check import (MODES, Graph, Run, check_g, check_graph, check_run, check_T,
                                check_y, warn_rank)
from fastpu.homf._graph import transition
from fastpu.homf._solvers import dense, exact, squared_error
from fastpu.homf._walk import _Walker, walk_columns, walk_rows
from fastpu._core.progress import Progress
from fastpu._core.threads import limit_threads
from fastpu._core.factorization import Factorization, accepts_dataset
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, Callback, Matrix, Seed, Sparse, Threads

__all__ = ["transition_matrix", "walk_columns", "walk_rows", "objective", "fit", "demo_configs"]
# Dense column blocks of f_T(A) are kept near this many bytes (three are alive at once):
# small enough to stay in cache during the walk, large enough to amortise a parallel launch.
_BLOCK_BYTES = 8 * 2**20


def _exact_limit() -> float:
    """``fastpu.homf.EXACT_LIMIT``, read at each call (the package holds the setting a user
    changes)."""
    from fastpu import homf

    return homf.EXACT_LIMIT


# --------------------------------------------------------------------------- the graph

def transition_matrix(R: Sparse, user_graph: Matrix | None = None,
                      item_graph: Matrix | None = None, alpha: float = 0.5, g: str = "exp", *,
                      g_user_graph: str | None = None, g_item_graph: str | None = None) -> Sparse:
    """The row-normalised random-walk matrix of equation (3) over m users then n items.

    ``G = [[α g₁(G_r), (1−α) g₂(R)], [(1−α) g₂(R)ᵀ, α g₃(G_c)]]`` and ``A = D⁻¹ G`` with
    ``D`` the row sums of ``G`` (a node without edges keeps an all-zero row); G_r is
    ``user_graph``, G_c is ``item_graph``, g₂ is ``g`` and g₁, g₃ are ``g_user_graph``,
    ``g_item_graph`` (default: ``g``, one function for all three blocks).  Each function
    acts on the stored entries only: an entry that is not stored is no edge, whatever
    ``g(0)`` would be.  Without any side graph ``alpha`` is forced to 0.

    Parameters
    ----------
    R : scipy.sparse matrix, shape (m, n)
        Observed entries (ratings, counts or ones).  Must be non-negative for
        ``g="linear"``.
    user_graph : sparse or dense array, shape (m, m), optional
        Symmetric non-negative user similarity (e.g. a trust network).
    item_graph : sparse or dense array, shape (n, n), optional
        Symmetric non-negative item similarity.
    alpha : float in [0, 1]
        Weight of the side graphs; rating edges get ``1 - alpha``.
    g : {"exp", "linear", "step"}
        g₂, the edge weight of a stored rating x: ``exp(x)``, ``x`` (the paper's ``c·x``:
        any ``c > 0`` cancels in the row normalisation), or ``1 if x > 0 else 0``; also
        g₁ and g₃ unless they are given.  ``exp`` is evaluated as ``exp(x − max x)``, which
        normalises to the same ``A`` without overflow.  (When the blocks mix ``exp`` with
        another function the shift is taken per row, which again leaves ``A`` unchanged.)
    g_user_graph : {"exp", "linear", "step"}, optional
        g₁, the edge weight of the user-user block α g₁(G_r) (default: ``g``).
    g_item_graph : {"exp", "linear", "step"}, optional
        g₃, the edge weight of the item-item block α g₃(G_c) (default: ``g``).

    Returns
    -------
    scipy.sparse.csr_array, shape (m + n, m + n)
        Canonical CSR (int64 sorted indices, float64 data) with rows summing to 1 or 0.

    Raises
    ------
    TypeError
        If ``R`` is not sparse or ``alpha`` is not a number.
    ValueError
        If a graph has the wrong shape, is not symmetric or has negative weights,
        ``R`` has non-finite values (or negative ones with ``g="linear"``),
        ``alpha`` is outside [0, 1] or ``g``, ``g_user_graph`` or ``g_item_graph`` is unknown.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import fastpu as fp
    >>> R = sp.csr_array(np.array([[2.0, 4.0], [0.0, 3.0]]))
    >>> A = fp.homf.transition_matrix(R, g="step")
    >>> A.toarray()
    array([[0. , 0. , 0.5, 0.5],
           [0. , 0. , 0. , 1. ],
           [1. , 0. , 0. , 0. ],
           [0.5, 0.5, 0. , 0. ]])
    >>> Gr = sp.csr_array(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> A = fp.homf.transition_matrix(R, user_graph=Gr, alpha=0.5, g="linear", g_user_graph="step")
    >>> A.toarray()[1]                          # (α·1, (1−α)·3) normalised
    array([0.25, 0.  , 0.  , 0.75])
    """
    g, g1, g3 = check_g(g, g_user_graph, g_item_graph)
    R = check_y(R, g=g, name="R")
    graph = check_graph(R.shape, user_graph=user_graph, item_graph=item_graph, alpha=alpha, g=g,
                        g_user_graph=g1, g_item_graph=g3)
    return transition(R, graph)


# --------------------------------------------------------------------------- walks

def _block_size(N, block_size):
    if block_size is not None:
        return min(block_size, max(1, N))    # a block wider than f_T(A) is all of its columns
    return int(max(64, min(256, _BLOCK_BYTES // (8 * max(1, N)))))


def _check_exact_work(N, block, what, alternative):
    """Refuse an all-columns pass over f_T(A) above EXACT_LIMIT; check one block's memory."""
    limit = _exact_limit()
    if N * N > limit:
        raise ValueError(
            f"{what} walks all {N:,} columns of f_T(A) as dense vectors: {N * N:.3g} entries per "
            f"pass (N = m + n = {N:,}), above fastpu.homf.EXACT_LIMIT = {limit:.3g}, which "
            f"would take hours whatever the number of positives; {alternative}")
    # per block: the walk's three N×b buffers, its transpose and the bipartite sums
    check_alloc(5 * 8 * N * block, what=f"{what} (one block of {block} columns)",
                names=("block_size",))


# --------------------------------------------------------------------------- objective

def objective(A: Sparse, U: ArrayLike, V: ArrayLike, T: int, lam: float, *, mode: str = "exact",
              m_users: int | None = None, block_size: int | None = None,
              n_threads: Threads = None) -> float:
    """The value of objective (4): ½‖P_Ω(f_T(A) − U Vᵀ)‖² + λ(‖U‖² + ‖V‖²).

    Ω is the set of nonzeros of f_T(A) (``mode="exact"``) or every entry
    (``mode="dense"``).  The columns of f_T(A) are built block by block, so this
    costs about one exact-mode half-iteration: O(T · nnz(A) · N).

    Parameters
    ----------
    A : scipy.sparse matrix, shape (N, N)
        The transition matrix.
    U, V : array-like, shape (N, k)
        Factors (``model.extras["U"]``, ``model.extras["V"]`` of a fitted model).
    T : int in [1, 1000]
        Walk length.
    lam : float >= 0
        Regularisation λ.
    mode : {"exact", "dense"}
        Which entries count.
    m_users : int, optional
        Number of user nodes (the first ``m_users`` rows of ``A``).  When given and A has
        no side-graph blocks, each walk step uses only the user-item blocks of A (half the
        work); the value is the same.
    block_size : int, optional
        Columns per block (default: 64 to 256, about 8 MiB per block; at most m + n are used).
    n_threads : int, optional
        numba threads for this call.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If shapes do not match, values are not finite, ``T`` is outside [1, 1000], ``lam < 0``,
        ``mode`` is unknown, or N² > :data:`EXACT_LIMIT` (every column is walked).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import fastpu as fp
    >>> A = sp.csr_array(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> fp.homf.objective(A, np.zeros((2, 1)), np.zeros((2, 1)), T=1, lam=0.1)
    1.0
    """
    A = V_.check_square_csr(A, name="A")
    N = A.shape[0]
    U = V_.check_dense(U, name="U", shape=(N, None), shape_from="one row per node of A")
    k = U.shape[1]
    V = V_.check_dense(V, name="V", shape=(N, k), shape_from="one row per node of A, as many columns as U")
    T = check_T(T)
    lam = V_.check_scalar(lam, name="lam", minimum=0.0)
    mode = V_.check_choice(mode, name="mode", choices=MODES)
    if m_users is not None:
        m_users = V_.check_int(m_users, name="m_users", minimum=0)
    if block_size is not None:
        block_size = V_.check_int(block_size, name="block_size", minimum=1)
    block = _block_size(N, block_size)
    _check_exact_work(N, block, "homf.objective", "evaluate a sample of users instead")
    At = V_.transpose_csr(A)
    with limit_threads(n_threads):
        loss = squared_error(_Walker(A, At, T, m_users), U, V, block, mode == "dense")
    with np.errstate(over="ignore", invalid="ignore"):
        val = 0.5 * loss + lam * (float(np.sum(U * U)) + float(np.sum(V * V)))
    return V_.check_finite_result(val, what="homf.objective", names=("U", "V", "lam"))


# --------------------------------------------------------------------------- fit

@accepts_dataset
def fit(Y: Sparse | Dataset, k: int, *, user_graph: Matrix | None = None,
        item_graph: Matrix | None = None, alpha: float = 0.5, T: int = 4, g: str = "linear",
        g_user_graph: str | None = None, g_item_graph: str | None = None, mode: str = "exact",
        lam: float = 3e-4, n_iter: int = 10, block_size: int | None = None, seed: Seed = 0,
        n_threads: Threads = None, callback: Callback = None,
        verbose: bool = False) -> Factorization:
    """Factor f_T(A) of the user-item(-side-graph) random walk: HOMF.

    Alternates V ← argmin and U ← argmin of objective (4).  Each is one ridge
    regression per column (row) of f_T(A), ``(L_Ωᵀ L_Ω + 2λ I) x = L_Ωᵀ f_Ω``, solved
    with a k×k Cholesky factorisation, in parallel over the columns of a block; the
    blocks of f_T(A) come from the recursion of Algorithm 1 (:func:`walk_columns`).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Observed user-item entries R (ratings, counts or ones).
    k : int >= 1
        Rank.
    user_graph, item_graph : sparse or dense, optional
        Symmetric non-negative side graphs (m×m, n×n).
    alpha : float in [0, 1]
        Weight of the side graphs (forced to 0 when there are none).
    T : int in [1, 1000]
        Walk length (the paper tunes T in {2, 4, 6, 8}).
    g : {"exp", "linear", "step"}
        Edge weights from stored values (see :func:`transition_matrix`): the paper's g₂ of
        the rating block, and g₁, g₃ of the side-graph blocks unless those are given.
        Default ``"linear"`` (the paper's tables use ``"exp"``): the defaults of ``g`` and
        ``lam`` were chosen by ``fastpu.select.tune`` (dense mode, T ∈ {1, 2, 4, 6, 8}) on the
        training parts of MovieLens-100K and -1M (docs/results/defaults.md), where it picked
        T = 4 as well.
    g_user_graph, g_item_graph : {"exp", "linear", "step"}, optional
        The paper's g₁ (user-user block α g₁(G_r)) and g₃ (item-item block α g₃(G_c)) of
        equation (3); ``None`` (default): ``g``.
    mode : {"exact", "dense"}
        ``"exact"``: Ω = nonzeros of f_T(A) (the paper); each half-iteration costs
        O(T · nnz(A) · N + N² k + N · min(|Ω_c|, N − |Ω_c|) · k²) through blocks of
        columns (without side graphs each walk step uses only the user-item blocks of A,
        half its nonzeros).  ``"dense"``: every entry
        counts, each half-iteration costs T sparse × (N×k) products plus one k×k
        solve, O(T · nnz(A) · k + N k²) — the fast path.
    lam : float > 0
        Regularisation λ of objective (4); default 3e-4.
    n_iter : int >= 1
        Outer iterations (each updates V then U).
    block_size : int, optional
        Columns of f_T(A) per block in exact mode (default: 64 to 256, about 8 MiB per block; at
        most m + n are used).
    seed : int, Generator or None
        U and V start uniform on [0, 1) as in the paper.
    n_threads : int, optional
        numba threads for this call (default: the current setting).
    callback : callable, optional
        Called with each history dict; return True to stop (None or False to go on; anything
        else is a TypeError). ``info["model"]()`` is the current
        iterate as a :class:`~fastpu.Factorization` (copies of ``U[:m]`` and ``V[m:]``).
    verbose : bool
        Print one line per iteration.

    Returns
    -------
    Factorization
        ``user_factors = U[:m]``, ``item_factors = V[m:]`` (score of user i for item j
        is ``u_i · v_{m+j}``); ``extras`` holds the full ``U``, ``V`` (N×k) and the
        transition matrix ``A``.  ``history[t]["objective"]`` is objective (4) after
        iteration t (``objective_v`` after its V half).  In dense mode the constant
        ½‖f_T(A)‖²_F is left out (computing it costs a full exact pass; use
        :func:`objective` for the complete value).

    Raises
    ------
    TypeError
        If an argument has the wrong type (a complex ``Y`` or graph included); a ``callback``
        that returns something other than None or a bool; a ``verbose`` that is not a bool or
        an int.
    ValueError
        For invalid values (see :func:`transition_matrix`; ``k``, ``T``, ``n_iter``
        below 1, ``lam <= 0``, unknown ``mode``); when the factors (N×k) or one exact-mode
        block (5·N·``block_size`` floats) exceed the available memory; and in exact mode
        when N² > :data:`EXACT_LIMIT` (10¹⁰): exact mode walks every column of f_T(A) as a
        dense N-vector, so its cost grows as N² even with few positives — use
        ``mode="dense"`` there; if ``Y`` has no row or no column (at least one user and one
        item are expected), or no positive (no stored nonzero value).
    FloatingPointError
        If the objective becomes non-finite.

    Warns
    -----
    ConvergenceWarning
        If the returned U or V is all zero while Y has positives (``lam`` too large).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import fastpu as fp
    >>> R = sp.random_array((30, 20), density=0.2, random_state=0, format="csr")
    >>> model = fp.homf.fit(R, 4, T=3, n_iter=3, mode="dense")
    >>> model.user_factors.shape, model.item_factors.shape
    ((30, 4), (20, 4))
    """
    run = check_run(k, T=T, lam=lam, n_iter=n_iter, mode=mode, block_size=block_size,
                    callback=callback, verbose=verbose, seed=seed)
    g, g1, g3 = check_g(g, g_user_graph, g_item_graph)
    Y = check_y(Y, g=g, fit=True)
    graph = check_graph(Y.shape, user_graph=user_graph, item_graph=item_graph, alpha=alpha, g=g,
                        g_user_graph=g1, g_item_graph=g3)
    warn_rank(run, Y.shape)
    m, n = Y.shape
    block = _check_fit_work(m + n, run)
    params = _params(run, graph, alpha=alpha, block_size=run.block_size, n_threads=n_threads,
                     seed=seed)
    A = transition(Y, graph)                 # the problem: A and Aᵀ, whose walks f_T(A) factors
    At = V_.transpose_csr(A)
    U = run.rng.uniform(0.0, 1.0, size=(m + n, run.k))
    V = run.rng.uniform(0.0, 1.0, size=(m + n, run.k))
    progress = Progress("homf", verbose=run.verbose, callback=run.callback,
                        advice=f"raise lam (now {run.lam:g}), which keeps the ridge systems well "
                               "conditioned", total=run.n_iter)

    def iterate(U: np.ndarray, V: np.ndarray) -> Factorization:
        return Factorization(U[:m].copy(), V[m:].copy(), params=params, method="homf")

    with limit_threads(n_threads):
        if run.mode == "exact":
            U, V = exact(A, At, U, V, run, m, block, progress, iterate)
        else:
            U, V = dense(A, At, U, V, run, progress, iterate)
    progress.finish(U, V, zero_advice=None if Y.nnz == 0 else f"lower lam (now {run.lam:g})")
    return Factorization(
        user_factors=np.ascontiguousarray(U[:m]),
        item_factors=np.ascontiguousarray(V[m:]),
        history=progress.history,
        params=params,
        method="homf",
        extras={"U": U, "V": V, "A": A},
    )


def _check_fit_work(N: int, run: Run) -> int:
    """The exact mode's block width, after refusing factors (or an exact pass) too large."""
    block = _block_size(N, run.block_size)
    check_alloc(8 * 8 * N * run.k + 64 * run.k * run.k,
                what="homf.fit (factors U, V and work arrays)", names=("k",))
    if run.mode == "exact":
        _check_exact_work(N, block, 'homf.fit(mode="exact")',
                          'use mode="dense" (O(T·nnz(A)·k + N·k²) per half-iteration)')
    return block


def _params(run: Run, graph: Graph, *, alpha: Any, block_size: int | None, n_threads: Threads,
            seed: Seed) -> dict[str, Any]:
    """What the model records of its fit (``params``): ``alpha`` as given (0 without a side
    graph), ``seed`` unless it is a Generator."""
    return dict(k=run.k, T=run.T, alpha=alpha if graph.has_side else 0.0, g=graph.g, lam=run.lam,
                n_iter=run.n_iter, mode=run.mode, block_size=block_size, n_threads=n_threads,
                seed=seed if not isinstance(seed, np.random.Generator) else None,
                user_graph=graph.user_graph is not None, item_graph=graph.item_graph is not None,
                g_user_graph=graph.g_user_graph, g_item_graph=graph.g_item_graph)


def demo_configs() -> list[tuple[str, dict[str, Any], str]]:
    """Settings for ``fastpu demo`` on MovieLens-100K (80/20 holdout of binarised ratings).

    Returns
    -------
    list of (str, dict, str)
        ``(label, fit_kwargs, legend)``; ``fit(Y_train, **fit_kwargs, seed=0, verbose=True)``
        trains each in well under 30 s on 2 cores.

    Examples
    --------
    >>> import fastpu as fp
    >>> label, kwargs, legend = fp.homf.demo_configs()[0]
    >>> kwargs["mode"]
    'dense'
    """
    return [
        ("HOMF dense T=4 k=64", dict(k=64, T=4, lam=1e-3, n_iter=10, mode="dense"),
         "Shah et al.'s factorisation of the walk polynomial f_4(A), every entry fitted"),
        ("HOMF exact T=4 k=32", dict(k=32, T=4, lam=1e-3, n_iter=3, mode="exact"),
         "the same, on the entries the walk reaches only (the paper's Ω_T)"),
    ]
