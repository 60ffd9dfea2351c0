"""HOMF's boundary: every argument of ``fit``, ``transition_matrix`` and the Dask form, checked
once here.

:func:`check_run` checks what drives a fit (rank, walk length, λ, iterations, mode, blocks,
seed, callback); :func:`check_g` the weight functions g₂, g₁, g₃ of the graph (3);
:func:`check_y` the ratings R (whose check depends on g); :func:`check_graph` the side graphs
and α against R's shape. Everything below them (the graph's construction, the walks, the
solvers, the kernels) takes the canonical values and checks nothing again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fastpu._core import validation as V_
from fastpu._core.hints import Callback, Matrix, Seed, Sparse

G_CHOICES = ("exp", "linear", "step")
MODES = ("exact", "dense")
# The longest walk: f_T averages the first T powers of a row-stochastic A, which settle (at rate
# 1/T) once the walk has mixed; the paper tunes T in {2, 4, 6, 8}. Each step costs a sparse
# product per block of columns, so T = 10⁹ ran for hours on a 30×20 matrix.
T_MAX = 1000


@dataclasses.dataclass(frozen=True)
class Run:
    """What drives a fit, checked: rank, walk length, λ, iterations, mode, block, seed."""

    k: int
    T: int
    lam: float
    n_iter: int
    mode: str
    block_size: int | None
    rng: np.random.Generator
    callback: Callback
    verbose: bool


@dataclasses.dataclass(frozen=True)
class Graph:
    """The settings of the graph (3), checked against R's shape: the side graphs as canonical
    CSR (or None), α (forced to 0 without a side graph) and g₂, g₁, g₃."""

    user_graph: Sparse | None
    item_graph: Sparse | None
    alpha: float
    g: str
    g_user_graph: str
    g_item_graph: str

    @property
    def has_side(self) -> bool:
        """Whether a user or an item graph was given."""
        return self.user_graph is not None or self.item_graph is not None


def check_run(k: Any, *, T: Any, lam: Any, n_iter: Any, mode: Any, block_size: Any,
              callback: Any, verbose: Any, seed: Seed) -> Run:
    """The arguments that drive a fit (raises on the first bad one, naming it)."""
    k = V_.check_k(k)
    T = check_T(T)
    lam = V_.check_scalar(lam, name="lam", minimum=0.0, strict_min=True)
    n_iter = V_.check_int(n_iter, name="n_iter", minimum=1)
    mode = V_.check_choice(mode, name="mode", choices=MODES)
    if block_size is not None:
        block_size = V_.check_int(block_size, name="block_size", minimum=1)
    callback = V_.check_callback(callback)
    verbose = V_.check_verbose(verbose)
    rng = V_.check_seed(seed)
    return Run(k, T, lam, n_iter, mode, block_size, rng, callback, verbose)


def warn_rank(run: Run, shape: tuple[int, int]) -> None:
    """Warn when k is above min(m, n) (:func:`fastpu._core.validation.warn_rank`)."""
    V_.warn_rank(run.k, shape, where="homf.fit")


def check_T(T: Any, *, name: str = "T") -> int:
    """The walk length: an integer in [1, :data:`T_MAX`]."""
    T = V_.check_int(T, name=name, minimum=1)
    if T > T_MAX:
        raise ValueError(f"{name} must be at most {T_MAX} (the walk length; the paper tunes T in "
                         f"{{2, 4, 6, 8}} and f_T barely changes past a few hundred steps, each of "
                         f"which costs a sparse product), got {T}")
    return T


def check_g(g: Any, g_user_graph: Any = None, g_item_graph: Any = None) -> tuple[str, str, str]:
    """(g₂, g₁, g₃): ``g`` and the side graphs' functions (``None``: ``g``)."""
    g = V_.check_choice(g, name="g", choices=G_CHOICES)
    g1 = g if g_user_graph is None else V_.check_choice(g_user_graph, name="g_user_graph",
                                                        choices=G_CHOICES)
    g3 = g if g_item_graph is None else V_.check_choice(g_item_graph, name="g_item_graph",
                                                        choices=G_CHOICES)
    return g, g1, g3


def check_y(R: Any, *, g: str, name: str = "Y", fit: bool = False) -> Sparse:
    """R as canonical CSR: non-negative for ``g="linear"`` (its values are the weights), any
    finite values otherwise; ``fit`` also refuses an R no fit can learn from."""
    R = V_.check_csr(R, name=name, nonnegative=(g == "linear"))
    if fit:
        V_.check_trainable(R, name=name)
    return R


def check_graph(shape: tuple[int, int], *, user_graph: Matrix | None, item_graph: Matrix | None,
                alpha: Any, g: str, g_user_graph: str, g_item_graph: str) -> Graph:
    """The side graphs (m×m, n×n) and α; ``g``, ``g_user_graph``, ``g_item_graph`` as
    :func:`check_g` returns them."""
    m, n = shape
    Su = V_.check_graph(user_graph, name="user_graph", n=m)
    Si = V_.check_graph(item_graph, name="item_graph", n=n)
    alpha = V_.check_scalar(alpha, name="alpha", minimum=0.0, maximum=1.0)
    if 0.0 < alpha < np.finfo(np.float64).tiny:
        raise ValueError(f"alpha={alpha:g} is below the smallest normal float (2.2e-308): the "
                         "side-graph weights α·g(S) would keep only a few bits; use alpha=0 to "
                         "leave the side graphs out")
    if Su is None and Si is None:
        alpha = 0.0
    return Graph(Su, Si, alpha, g, g_user_graph, g_item_graph)


# --------------------------------------------------------------------------- a fitted model

def _p(key: str) -> str:
    return f"model.params[{key!r}]"


def check_fitted(model: Any) -> None:
    """Check a HOMF model's ``params`` and ``extras`` against its factors with the checks the fit
    uses, before a model file is written or read back and before fold-in walks with them: the
    walk length T (at most :data:`T_MAX`), λ, α, the weight functions g, the mode, and the
    stored transition matrix A (a canonical square CSR over N nodes, N = the training users +
    the n items) and factors U, V (N × k). Entries a model may lack (files of earlier releases)
    are not required here; fold-in asks for the ones it needs.

    Raises
    ------
    TypeError, ValueError
        Naming the entry (``model.params['T']``, ``model.extras['A']``, ...).
    """
    prm, ex = model.params, model.extras
    n, k = model.item_factors.shape
    if "k" in prm:
        kk = V_.check_k(prm["k"], name=_p("k"))
        if kk != k:
            raise ValueError(f"{_p('k')} is {kk} but the factors have {k} columns")
    if "T" in prm:
        check_T(prm["T"], name=_p("T"))
    if "lam" in prm:
        V_.check_scalar(prm["lam"], name=_p("lam"), minimum=0.0, strict_min=True)
    if "alpha" in prm:
        V_.check_scalar(prm["alpha"], name=_p("alpha"), minimum=0.0, maximum=1.0)
    for key in ("g", "g_user_graph", "g_item_graph"):
        if key in prm:
            V_.check_choice(prm[key], name=_p(key), choices=G_CHOICES)
    if "mode" in prm:
        V_.check_choice(prm["mode"], name=_p("mode"), choices=MODES)
    if prm.get("block_size") is not None:
        V_.check_int(prm["block_size"], name=_p("block_size"), minimum=1)
    if prm.get("n_iter") is not None:
        V_.check_int(prm["n_iter"], name=_p("n_iter"), minimum=1)
    A = ex.get("A")
    N = None
    if A is not None:
        if not hasattr(A, "shape") or len(A.shape) != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"model.extras['A'] must be the square transition matrix over the "
                             f"training users and the items, got {getattr(A, 'shape', type(A).__name__)}")
        N = int(A.shape[0])
        if N <= n:
            raise ValueError(f"model.extras['A'] is {N}×{N} but the model has {n} items; expected "
                             f"one node per training user and per item (more than {n})")
        V_.check_stored_csr(A, name="model.extras['A']", shape=(N, N),
                            what="the transition matrix homf.fit stores")
    for key in ("U", "V"):
        if ex.get(key) is not None:
            F = V_.check_stored_array(ex[key], name=f"model.extras[{key!r}]", shape=(N, k),
                                      what=f"one row per node{'' if N is None else f' of A ({N})'}, "
                                           f"k = {k} columns")
            N = F.shape[0] if N is None else N
            if N <= n:
                raise ValueError(f"model.extras[{key!r}] has {N} rows but the model has {n} items; "
                                 "expected one row per training user and per item")
