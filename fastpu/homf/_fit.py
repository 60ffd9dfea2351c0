"""HOMF's fit, objective and transition matrix (the method is described in the package docstring)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from fastpu._core import validation as V_
from fastpu.homf._graph import mixed_blocks
from fastpu.homf._walk import _Walker, walk_columns, walk_rows
from fastpu._kernels import homf as _K
from fastpu._kernels.csr import weighted_gram
from fastpu._core.progress import Progress
from fastpu._core.threads import get_num_threads, limit_threads
from fastpu._core.factorization import Factorization, accepts_dataset
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, Callback, Matrix, Seed, Sparse, Threads

__all__ = ["transition_matrix", "walk_columns", "walk_rows", "objective", "fit", "demo_configs"]

_G_CHOICES = ("exp", "linear", "step")
_MODES = ("exact", "dense")
# Dense column blocks of f_T(A) are kept near this many bytes (three are alive at once):
# small enough to stay in cache during the walk, large enough to amortise a parallel launch.
_BLOCK_BYTES = 8 * 2**20
#: Largest N² (N = users + items) for which mode="exact" and :func:`objective` run. Both walk
#: every column of f_T(A) as a dense N-vector, so a half-iteration touches N² entries whatever
#: the number of positives: about 18 s per iteration at N² ≈ 1e8 (MovieLens-1M, 2 cores), hence
#: half an hour or more per iteration above this limit. Raise it (``fastpu.homf.EXACT_LIMIT =
#: ...``) to run such a pass anyway; mode="dense" costs O(T·nnz(A)·k + N k²) instead.
EXACT_LIMIT = 10**10
# printed once by a verbose dense-mode fit, so that a negative objective does not look like a bug
DENSE_OBJECTIVE_NOTE = ("mode='dense': the objective leaves out the constant ½‖f_T(A)‖²_F, so it "
                        "can be negative; homf.objective gives the complete value")


# --------------------------------------------------------------------------- the graph

def _apply_g(values, g, shift):
    if g == "exp":
        return np.exp(values - shift)
    if g == "linear":
        return values.copy()
    return (values > 0).astype(np.float64)


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
    g = V_.check_choice(g, name="g", choices=_G_CHOICES)
    g1 = g if g_user_graph is None else V_.check_choice(g_user_graph, name="g_user_graph",
                                                        choices=_G_CHOICES)
    g3 = g if g_item_graph is None else V_.check_choice(g_item_graph, name="g_item_graph",
                                                        choices=_G_CHOICES)
    R = V_.check_csr(R, name="R", nonnegative=(g == "linear"))
    m, n = R.shape
    Su = V_.check_graph(user_graph, name="user_graph", n=m)
    Si = V_.check_graph(item_graph, name="item_graph", n=n)
    alpha = V_.check_scalar(alpha, name="alpha", minimum=0.0, maximum=1.0)
    if 0.0 < alpha < np.finfo(np.float64).tiny:
        raise ValueError(f"alpha={alpha:g} is below the smallest normal float (2.2e-308): the "
                         "side-graph weights α·g(S) would keep only a few bits; use alpha=0 to "
                         "leave the side graphs out")
    if Su is None and Si is None:
        alpha = 0.0
    return _transition(R, Su, Si, alpha, g, g1, g3)


def _transition(R, Su, Si, alpha, g, g1=None, g3=None):
    m, n = R.shape
    g1 = g if g1 is None else g1
    g3 = g if g3 is None else g3
    fns = {g} | {fn for S, fn in ((Su, g1), (Si, g3)) if S is not None and alpha > 0}
    if len(fns) > 1 and "exp" in fns:
        # Mixed blocks: exp(x − s) would not cancel against a linear or step weight, but a
        # common factor per row does — every weight of row r is multiplied by exp(−s_r).
        return _normalise(mixed_blocks(R, Su, Si, alpha, g, g1, g3), m, n)
    parts = [R.data] + [S.data for S in (Su, Si) if S is not None]
    shift = max((float(p.max()) for p in parts if p.size), default=0.0) if g == "exp" else 0.0

    def weighted(M, w, fn=g):
        M = sp.csr_array((w * _apply_g(M.data, fn, shift), M.indices, M.indptr), shape=M.shape)
        return M

    blocks = [[None, weighted(R, 1.0 - alpha)], [weighted(R, 1.0 - alpha).T, None]]
    if Su is not None and alpha > 0:
        blocks[0][0] = weighted(Su, alpha, g1)
    if Si is not None and alpha > 0:
        blocks[1][1] = weighted(Si, alpha, g3)
    return _normalise(blocks, m, n)


def _normalise(blocks, m, n):
    if blocks[0][0] is None:
        blocks[0][0] = sp.csr_array((m, m))
    if blocks[1][1] is None:
        blocks[1][1] = sp.csr_array((n, n))
    G = sp.csr_array(sp.block_array(blocks, format="csr"))
    G.eliminate_zeros()
    deg = np.asarray(G.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    with np.errstate(over="ignore"):
        np.divide(1.0, deg, out=inv, where=deg > 0)
    if np.isinf(inv).any():
        # a row whose weights are so small (subnormal) that 1/deg overflows: scale it up first
        G = sp.csr_array(sp.diags_array(np.where(np.isinf(inv), 2.0**600, 1.0)) @ G)
        deg = np.asarray(G.sum(axis=1)).ravel()
        inv = np.zeros_like(deg)
        np.divide(1.0, deg, out=inv, where=deg > 0)
    A = sp.csr_array(sp.diags_array(inv) @ G)
    return V_.check_csr(A, name="A")


# --------------------------------------------------------------------------- walks

def _block_size(N, block_size):
    if block_size is not None:
        return min(block_size, max(1, N))    # a block wider than f_T(A) is all of its columns
    return int(max(64, min(256, _BLOCK_BYTES // (8 * max(1, N)))))


def _check_exact_work(N, block, what, alternative):
    """Refuse an all-columns pass over f_T(A) above EXACT_LIMIT; check one block's memory."""
    if N * N > EXACT_LIMIT:
        raise ValueError(
            f"{what} walks all {N:,} columns of f_T(A) as dense vectors: {N * N:.3g} entries per "
            f"pass (N = m + n = {N:,}), above fastpu.homf.EXACT_LIMIT = {EXACT_LIMIT:.3g}, which "
            f"would take hours whatever the number of positives; {alternative}")
    # per block: the walk's three N×b buffers, its transpose and the bipartite sums
    V_.check_alloc(5 * 8 * N * block, what=f"{what} (one block of {block} columns)",
                   names=("block_size",))


# --------------------------------------------------------------------------- objective

def _loss(walker, L, Rt, block, dense):
    """Σ over Ω of (f_T(P) − L Rtᵀ)², column block by column block (Ω = nonzeros or all)."""
    total = 0.0
    for start, stop in walker.ranges(block):
        cols = np.arange(start, stop, dtype=np.int64)
        Ct = np.ascontiguousarray(walker.columns(cols).T)
        out = np.empty(cols.size)
        _K.block_loss(Ct, L, np.ascontiguousarray(Rt[cols]), dense, out)
        total += float(out.sum())
    return total


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
    T : int >= 1
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
        If shapes do not match, values are not finite, ``T < 1``, ``lam < 0``,
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
    T = V_.check_int(T, name="T", minimum=1)
    lam = V_.check_scalar(lam, name="lam", minimum=0.0)
    mode = V_.check_choice(mode, name="mode", choices=_MODES)
    if m_users is not None:
        m_users = V_.check_int(m_users, name="m_users", minimum=0)
    if block_size is not None:
        block_size = V_.check_int(block_size, name="block_size", minimum=1)
    block = _block_size(N, block_size)
    _check_exact_work(N, block, "homf.objective", "evaluate a sample of users instead")
    At = V_.transpose_csr(A)
    with limit_threads(n_threads):
        loss = _loss(_Walker(A, At, T, m_users), U, V, block, mode == "dense")
    with np.errstate(over="ignore", invalid="ignore"):
        val = 0.5 * loss + lam * (float(np.sum(U * U)) + float(np.sum(V * V)))
    return V_.check_finite_result(val, what="homf.objective", names=("U", "V", "lam"))


# --------------------------------------------------------------------------- fit

def _gram(U, out):
    """out = Uᵀ U (the shared, thread-count-independent Gram kernel with unit weights)."""
    weighted_gram(U, np.ones(U.shape[0]), out, np.empty(U.shape[1]))


def _exact_half(walker, L, out, lam, block):
    """Ridge solve for every column of f_T(P) against fixed L; returns Σ_Ω residual²."""
    k = L.shape[1]
    LtL = np.empty((k, k))
    _gram(L, LtL)
    total = 0.0
    for start, stop in walker.ranges(block):
        cols = np.arange(start, stop, dtype=np.int64)
        Ct = np.ascontiguousarray(walker.columns(cols).T)
        sol = np.empty((cols.size, k))
        loss = np.empty(cols.size)
        ok = np.empty(cols.size, dtype=np.bool_)
        _K.ridge_columns(Ct, L, LtL, 2.0 * lam, False, sol, loss, ok)
        if not ok.all():
            raise FloatingPointError(
                "homf: a ridge system was not positive definite; raise lam"
            )
        out[start:stop] = sol
        total += float(loss.sum())
    return total


def _row_chunks(P, n_chunks):
    """Row cuts 0 = c_0 < ... < c_q = N of P into about ``n_chunks`` ranges of equal nonzeros."""
    N = P.shape[0]
    targets = np.linspace(0.0, float(P.indptr[-1]), n_chunks + 1)[1:-1]
    cuts = np.searchsorted(P.indptr, targets).astype(np.int64)
    return np.unique(np.concatenate(([0], np.clip(cuts, 0, N), [N])))


class _DenseWalk:
    """f_T(P) L = (1/T) Σ_{l=1}^T P^l L for one P (A or Aᵀ), with its row chunks and buffers."""

    def __init__(self, P, T, bufs):
        self.P, self.T, self.bufs = P, T, bufs       # bufs: three N×k scratch arrays
        self.chunks = _row_chunks(P, 4 * max(1, get_num_threads()))

    def __call__(self, L):
        """f_T(P) L, written into the third buffer (valid until the next call)."""
        P = self.P
        first, work, out = self.bufs
        _K.horner_walk(P.indptr, P.indices, P.data, self.chunks, L, self.T, first, work, out)
        return out


def _dense_half(walk, L, LtL, lam):
    """New factor for the other side: (f_T(P) L)(LᵀL + 2λI)⁻¹, and ⟨new, f_T(P) L⟩."""
    return _solve(walk(L), LtL, lam)


def _solve(Z, LtL, lam):
    """Z (LᵀL + 2λI)⁻¹ (a new array) and ⟨that, Z⟩; Z is left as it is."""
    k = Z.shape[1]
    S = LtL + 2.0 * lam * np.eye(k)
    new = Z.copy()
    # solve in place on newᵀ (Fortran order, so LAPACK takes it without a copy)
    sol = sla.cho_solve(sla.cho_factor(S, lower=True), new.T, overwrite_b=True, check_finite=False)
    new = np.ascontiguousarray(sol.T)
    return new, float(np.vdot(new, Z))


@accepts_dataset
def fit(Y: Sparse | Dataset, k: int, *, T: int = 4, alpha: float = 0.5,
        user_graph: Matrix | None = None, item_graph: Matrix | None = None, g: str = "linear",
        lam: float = 3e-4, n_iter: int = 10, mode: str = "exact", block_size: int | None = None,
        n_threads: Threads = None, seed: Seed = 0, callback: Callback = None,
        verbose: bool = False, g_user_graph: str | None = None,
        g_item_graph: str | None = None) -> Factorization:
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
    T : int >= 1
        Walk length (the paper tunes T in {2, 4, 6, 8}).
    alpha : float in [0, 1]
        Weight of the side graphs (forced to 0 when there are none).
    user_graph, item_graph : sparse or dense, optional
        Symmetric non-negative side graphs (m×m, n×n).
    g : {"exp", "linear", "step"}
        Edge weights from stored values (see :func:`transition_matrix`): the paper's g₂ of
        the rating block, and g₁, g₃ of the side-graph blocks unless those are given.
        Default ``"linear"`` (the paper's tables use ``"exp"``): the defaults of ``g`` and
        ``lam`` were chosen by ``fastpu.select.tune`` (dense mode, T ∈ {1, 2, 4, 6, 8}) on the
        training parts of MovieLens-100K and -1M (docs/results/defaults.md), where it picked
        T = 4 as well.
    lam : float > 0
        Regularisation λ of objective (4); default 3e-4.
    n_iter : int >= 1
        Outer iterations (each updates V then U).
    mode : {"exact", "dense"}
        ``"exact"``: Ω = nonzeros of f_T(A) (the paper); each half-iteration costs
        O(T · nnz(A) · N + N² k + N · min(|Ω_c|, N − |Ω_c|) · k²) through blocks of
        columns (without side graphs each walk step uses only the user-item blocks of A,
        half its nonzeros).  ``"dense"``: every entry
        counts, each half-iteration costs T sparse × (N×k) products plus one k×k
        solve, O(T · nnz(A) · k + N k²) — the fast path.
    block_size : int, optional
        Columns of f_T(A) per block in exact mode (default: 64 to 256, about 8 MiB per block; at
        most m + n are used).
    n_threads : int, optional
        numba threads for this call (default: the current setting).
    seed : int, Generator or None
        U and V start uniform on [0, 1) as in the paper.
    callback : callable, optional
        Called with each history dict; return True to stop (None or False to go on; anything
        else is a TypeError). ``info["model"]()`` is the current
        iterate as a :class:`~fastpu.Factorization` (copies of ``U[:m]`` and ``V[m:]``).
    verbose : bool
        Print one line per iteration.
    g_user_graph, g_item_graph : {"exp", "linear", "step"}, optional
        The paper's g₁ (user-user block α g₁(G_r)) and g₃ (item-item block α g₃(G_c)) of
        equation (3); ``None`` (default): ``g``.

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
    k = V_.check_k(k)
    T = V_.check_int(T, name="T", minimum=1)
    lam = V_.check_scalar(lam, name="lam", minimum=0.0, strict_min=True)
    n_iter = V_.check_int(n_iter, name="n_iter", minimum=1)
    mode = V_.check_choice(mode, name="mode", choices=_MODES)
    if block_size is not None:
        block_size = V_.check_int(block_size, name="block_size", minimum=1)
    callback = V_.check_callback(callback)
    verbose = V_.check_verbose(verbose)
    rng = V_.check_seed(seed)
    g = V_.check_choice(g, name="g", choices=_G_CHOICES)
    Y = V_.check_trainable(V_.check_csr(Y, name="Y", nonnegative=(g == "linear")))
    A = transition_matrix(Y, user_graph=user_graph, item_graph=item_graph, alpha=alpha, g=g,
                          g_user_graph=g_user_graph, g_item_graph=g_item_graph)
    m, n = Y.shape
    N = m + n
    params = dict(k=k, T=T, alpha=alpha if (user_graph is not None or item_graph is not None) else 0.0,
                  g=g, lam=lam, n_iter=n_iter, mode=mode, block_size=block_size,
                  n_threads=n_threads, seed=seed if not isinstance(seed, np.random.Generator) else None,
                  user_graph=user_graph is not None, item_graph=item_graph is not None,
                  g_user_graph=g if g_user_graph is None else g_user_graph,
                  g_item_graph=g if g_item_graph is None else g_item_graph)
    block = _block_size(N, block_size)
    V_.check_alloc(8 * 8 * N * k + 64 * k * k, what="homf.fit (factors U, V and work arrays)", names=("k",))
    if mode == "exact":
        _check_exact_work(N, block, 'homf.fit(mode="exact")',
                          'use mode="dense" (O(T·nnz(A)·k + N·k²) per half-iteration)')
    U = rng.uniform(0.0, 1.0, size=(N, k))
    V = rng.uniform(0.0, 1.0, size=(N, k))
    At = V_.transpose_csr(A)
    progress = Progress("homf", verbose=verbose, callback=callback,
                        advice=f"raise lam (now {lam:g}), which keeps the ridge systems well conditioned")
    with limit_threads(n_threads):
        if mode == "exact":
            cols_walk = _Walker(A, At, T, m)        # columns of f_T(A)
            rows_walk = _Walker(At, A, T, m)        # rows of f_T(A) = columns of f_T(Aᵀ)
            for it in range(1, n_iter + 1):
                # V: columns of f_T(A) against U.  U: rows of f_T(A) = columns of f_T(Aᵀ).
                loss = _exact_half(cols_walk, U, V, lam, block)
                obj_v = 0.5 * loss + lam * (float(np.sum(U * U)) + float(np.sum(V * V)))
                loss = _exact_half(rows_walk, V, U, lam, block)
                obj = 0.5 * loss + lam * (float(np.sum(U * U)) + float(np.sum(V * V)))
                if progress.step(it, obj, objective_v=obj_v, model=lambda: Factorization(
                        U[:m].copy(), V[m:].copy(), params=params, method="homf")):
                    break
        else:
            progress.note(DENSE_OBJECTIVE_NOTE)
            bufs = tuple(np.empty((N, k)) for _ in range(3))
            walk_t = _DenseWalk(At, T, bufs)     # f_T(A)ᵀ U = (1/T) Σ (Aᵀ)^l U
            walk_a = _DenseWalk(A, T, bufs)      # f_T(A) V = (1/T) Σ A^l V
            UtU = np.empty((k, k))
            VtV = np.empty((k, k))
            _gram(U, UtU)
            for it in range(1, n_iter + 1):
                V, cross = _dense_half(walk_t, U, UtU, lam)
                _gram(V, VtV)
                obj_v = (-cross + 0.5 * float(np.sum(UtU * VtV))
                         + lam * (float(np.vdot(U, U)) + float(np.vdot(V, V))))
                U, cross = _dense_half(walk_a, V, VtV, lam)
                _gram(U, UtU)           # also the next V half's UᵀU
                obj = (-cross + 0.5 * float(np.sum(UtU * VtV))
                       + lam * (float(np.vdot(U, U)) + float(np.vdot(V, V))))
                if progress.step(it, obj, objective_v=obj_v, model=lambda: Factorization(
                        U[:m].copy(), V[m:].copy(), params=params, method="homf")):
                    break
    progress.finish(U, V, zero_advice=None if Y.nnz == 0 else f"lower lam (now {lam:g})")
    return Factorization(
        user_factors=np.ascontiguousarray(U[:m]),
        item_factors=np.ascontiguousarray(V[m:]),
        history=progress.history,
        params=params,
        method="homf",
        extras={"U": U, "V": V, "A": A},
    )


def demo_configs() -> list[tuple[str, dict[str, Any]]]:
    """Settings for ``fastpu demo`` on MovieLens-100K (80/20 holdout of binarised ratings).

    Returns
    -------
    list of (str, dict)
        ``(label, fit_kwargs)`` pairs; ``fit(Y_train, **fit_kwargs, seed=0, verbose=True)``
        trains each in well under 30 s on 2 cores.

    Examples
    --------
    >>> import fastpu as fp
    >>> label, kwargs = fp.homf.demo_configs()[0]
    >>> kwargs["mode"]
    'dense'
    """
    return [
        ("HOMF dense T=4 k=64", dict(k=64, T=4, lam=1e-3, n_iter=10, mode="dense")),
        ("HOMF exact T=4 k=32", dict(k=32, T=4, lam=1e-3, n_iter=3, mode="exact")),
    ]
