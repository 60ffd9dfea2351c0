"""ocmf's boundary: every argument of ``fit``, ``objective`` and the Dask forms, checked once here.

:func:`check_fit` turns a fit's arguments into one frozen record, :class:`Fit`, which the
single-machine fit and both Dask forms (row blocks and the 2-D grid) take whole: a new parameter
is one edit here and one where it is used. It is made of :func:`check_run` (what drives a fit:
rank, solver, iterations, start, precision, seed, callback), :func:`check_model` (what defines
the objective: loss, weights, side information and its intercept, penalties, negatives, against
the matrix shape), :func:`check_rows` (the row solver's options, a
:class:`fastpu._kernels.ocmf.RowOptions`) and :func:`check_start` (the starting factors).
Everything below them (the problem, the solvers, the kernels) takes the canonical values and
checks nothing again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.hints import ArrayLike, Callback, DTypeLike, Matrix, Seed
from fastpu._core.rows import P_SCHEMES, user_oriented
from fastpu._kernels.losses import LOSS_CODES, LOSSES as LOSS_FACTS
from fastpu._kernels.ocmf import RowOptions

_INT32_MAX = int(np.iinfo(np.int32).max)


def index_dtype(*sizes: int) -> Any:
    """The one index type of the entries' kernels: int32 when every row, column and entry count
    fits in it, else int64 (a second compiled specialisation, for matrices that need it)."""
    return np.int32 if max(sizes, default=0) <= _INT32_MAX else np.int64


def kernel_indices(indptr: np.ndarray, indices: np.ndarray, n_cols: int) -> tuple:
    """(indptr, indices) of a CSR in :func:`index_dtype` (no copy when they already are)."""
    dt = index_dtype(indptr.size - 1, n_cols, indices.size)
    return indptr.astype(dt, copy=False), indices.astype(dt, copy=False)


def check_y(Y: Any, *, fit: bool) -> Any:
    """Y checked at the boundary, as CSR with :func:`index_dtype` indices; a fit also needs a
    user, an item and a positive (``objective`` does not).

    A CSR that is already canonical (sorted, duplicate-free), float32 or float64, finite and
    non-negative is read as it is: its data are not copied (nothing below writes to them) and
    its indices only when they are not the kernels' type. Canonical means canonical in fact:
    the indices are checked (:func:`fastpu._core.validation.has_canonical_indices`), never
    taken from scipy's cached ``has_canonical_format`` flag, which stays True when the arrays
    are edited in place. Anything else goes through :func:`fastpu._core.validation.check_csr`
    (which copies, sorts, sums duplicates, and raises the errors).
    """
    fast = (sp.issparse(Y) and getattr(Y, "format", None) == "csr" and Y.ndim == 2
            and Y.dtype in (np.float32, np.float64))
    if fast:
        V.check_compressed_structure(Y, "Y")
        nnz = int(Y.indptr[-1])
        data = np.asarray(Y.data)[:nnz]
        fast = (nnz == 0 or (float(data.min()) >= 0.0 and float(data.max()) < np.inf)) \
            and V.has_canonical_indices(Y.indptr, Y.indices)
    if not fast:
        Y = V.check_csr(Y, name="Y")
        nnz, data = Y.nnz, Y.data
    indptr, indices = kernel_indices(np.asarray(Y.indptr), np.asarray(Y.indices)[:nnz],
                                     Y.shape[1])
    out = sp.csr_array((data, indices, indptr), shape=Y.shape, copy=False)
    # scipy may pick its own index type; the kernels need this one
    out.indptr, out.indices = indptr, indices
    if fit:
        V.check_trainable(out)
    return out


LOSSES = tuple(LOSS_CODES)            # the loss table's names (fastpu._kernels.losses)
NEGATIVES = ("full", "all", "sampled", "full_logistic")
SOLVERS = ("tron", "gd")


@dataclasses.dataclass(frozen=True)
class Run:
    """What drives a fit, checked: rank, solver and its iterations, start, precision, seed."""

    k: int
    solver: str
    n_iter: int
    n_inner: int
    fast_path: bool
    init_std: float
    dtype: np.dtype
    rng: np.random.Generator
    callback: Callback
    verbose: bool


@dataclasses.dataclass(frozen=True)
class Model:
    """What defines the objective, checked against the matrix shape (m, n).

    ``L_user`` / ``L_item`` are the graph Laplacians when the graph weight is positive (else
    None: a graph with ``lam_graph = 0`` adds nothing).
    """

    loss: str
    kind: int
    abar: float
    rho: float
    p: np.ndarray
    q: np.ndarray
    user_features: Any
    item_features: Any
    user_graph: Any
    item_graph: Any
    L_user: Any
    L_item: Any
    lam: float
    lam_w: float
    lam_h: float
    lam_graph: float
    nu: float
    negatives: str
    neg_ratio: float
    dense_limit: int | None
    intercept: bool = False         # user_features / item_features above carry its ones column

    @property
    def coupled(self) -> bool:
        """Whether a side has features or a graph (a TRON / GD sub-problem, not rows)."""
        return any(x is not None for x in (self.user_features, self.item_features, self.L_user,
                                          self.L_item))


def check_run(k: Any, *, solver: Any, n_iter: Any, n_inner: Any, init_std: Any, callback: Any,
              fast_path: Any, verbose: Any, seed: Seed, dtype: DTypeLike) -> Run:
    """The arguments that drive a fit (raises on the first bad one, naming it)."""
    k = V.check_k(k)
    V.check_choice(solver, name="solver", choices=SOLVERS)
    n_iter = V.check_int(n_iter, name="n_iter", minimum=1)
    n_inner = V.check_int(n_inner, name="n_inner", minimum=1)
    # the default start: N(0, (0.1/√k)²) per entry
    init_std = 0.1 / np.sqrt(k) if init_std is None else \
        V.check_scalar(init_std, name="init_std", minimum=0.0)
    callback = V.check_callback(callback)
    if not isinstance(fast_path, (bool, np.bool_)):
        raise TypeError(f"fast_path must be True or False, got {fast_path!r}")
    verbose = V.check_verbose(verbose)
    rng = V.check_seed(seed)
    fdt = V.check_float_dtype(dtype)
    return Run(k, solver, n_iter, n_inner, bool(fast_path), init_std, fdt, rng, callback, verbose)


def loss_defaults(loss: Any = "square", **_: Any) -> dict[str, float]:
    """ρ and λ that ``fit(..., loss=loss)`` uses when they are not given (the loss table's,
    :data:`fastpu._kernels.losses.LOSS_TABLE`).

    Other keyword arguments (a call's fixed settings) are ignored; an unknown loss gets the
    logistic loss's, and ``fit`` then refuses the loss by name."""
    facts = LOSS_FACTS.get(loss) if isinstance(loss, str) else None
    facts = LOSS_FACTS["logistic"] if facts is None else facts
    return dict(rho=facts.rho, lam=facts.lam)


def _resolve_abar(loss: str, a_bar: Any) -> float:
    if a_bar is None:
        return LOSS_FACTS[loss].a_bar
    a_bar = V.check_scalar(a_bar, name="a_bar")
    if abs(a_bar) > 1e150:           # ā² enters the objective: it must be a finite float
        raise ValueError(f"a_bar={a_bar:g} is too large: the objective uses a_bar² (overflow); "
                         "expected the target score of unlabeled entries, usually 0 or -1")
    return a_bar


def check_unlabeled_weights(rho: float, p: np.ndarray, q: np.ndarray, abar: float, *,
                            where: str) -> None:
    """The unlabeled weights rho·p_i·q_j: their sum with a_bar² finite, and the largest at most
    :data:`fastpu._core.validation.PENALTY_MAX` (rho = 1e300 fitted, then its fold-in overflowed).
    ``where`` prefixes the message (a fitted model's entry)."""
    with np.errstate(over="ignore", invalid="ignore"):
        pw = rho * p
        total = abar * abar * float(np.sum(pw)) * float(np.sum(q))
        largest = float(np.max(pw, initial=0.0)) * float(np.max(q, initial=0.0))
    if not (np.isfinite(total) and np.isfinite(pw).all()):
        raise ValueError(
            f"{where}the unlabeled weights overflow: a_bar²·Σ(rho·p)·Σq is not finite (rho={rho:g}, "
            f"max p {p.max(initial=0):g}, max q {q.max(initial=0):g}, a_bar={abar:g}); "
            "expected weights rho·p_i·q_j of order 1 or below")
    if largest > V.PENALTY_MAX:
        raise ValueError(
            f"{where}the largest unlabeled weight rho·p_i·q_j is {largest:g} (rho={rho:g}, max p "
            f"{p.max(initial=0):g}, max q {q.max(initial=0):g}), above {V.PENALTY_MAX:g}: the unlabeled "
            "terms would swamp the loss and overflow its row problems; expected weights of order 1 or below")


def resolve_p(p: Any, Y: Any) -> tuple[Any, float | None]:
    """``p`` as :func:`fastpu.ocmf.fit` takes it: an array (or None) as it is, or a rule's name
    (:data:`fastpu._core.rows.P_SCHEMES`) resolved from the positives of CSR ``Y``. Returns (p,
    the mean count of the user-oriented rule, None for an array)."""
    if not isinstance(p, str):
        return p, None
    if p not in P_SCHEMES:
        raise ValueError(f"p must be an array of per-user weights (length m), None, or one of "
                         f"{', '.join(repr(s) for s in P_SCHEMES)}; got {p!r}")
    return user_oriented(np.diff(Y.indptr))


def check_model(shape: tuple[int, int], *, loss: Any, rho: Any, p: ArrayLike | None,
                q: ArrayLike | None, a_bar: Any, user_features: Matrix | None,
                item_features: Matrix | None, user_graph: Matrix | None,
                item_graph: Matrix | None, lam: Any, lam_w: Any, lam_h: Any, lam_graph: Any,
                negatives: Any, neg_ratio: Any, dense_limit: Any, nu: Any = 0.0,
                intercept: Any = False) -> Model:
    """The arguments that define the objective, for an m × n matrix; with ``intercept`` the
    features of each side that has them gain a column of ones (:func:`with_intercept`)."""
    m, n = shape
    V.check_choice(loss, name="loss", choices=LOSSES)
    V.check_choice(negatives, name="negatives", choices=NEGATIVES)
    chosen = loss_defaults(loss)
    rho = chosen["rho"] if rho is None else V.check_scalar(rho, name="rho", minimum=0.0)
    p = V.check_vector(p, name="p", size=m)
    q = V.check_vector(q, name="q", size=n)
    abar = _resolve_abar(loss, a_bar)
    lam = chosen["lam"] if lam is None else V.check_penalty(lam, name="lam")
    lam_w = lam if lam_w is None else V.check_penalty(lam_w, name="lam_w")
    lam_h = lam if lam_h is None else V.check_penalty(lam_h, name="lam_h")
    lam_g = V.check_penalty(lam_graph, name="lam_graph")
    X = V.check_features(user_features, name="user_features", n_rows=m)
    Z = V.check_features(item_features, name="item_features", n_rows=n, of="column")
    Su = V.check_graph(user_graph, name="user_graph", n=m)
    intercept = V.check_bool(intercept, name="intercept", meaning="a column of ones appended "
                             "to the user and item features, or not")
    X, Z = with_intercept(X, intercept), with_intercept(Z, intercept)
    Sv = V.check_graph(item_graph, name="item_graph", n=n)
    Lu = V.laplacian(Su) if (Su is not None and lam_g > 0) else None
    Lv = V.laplacian(Sv) if (Sv is not None and lam_g > 0) else None
    if dense_limit is not None:
        V.check_int(dense_limit, name="dense_limit", minimum=0)
    neg_ratio = V.check_scalar(neg_ratio, name="neg_ratio", minimum=0.0, strict_min=True)
    nu = check_nu(nu, X, Z)
    check_unlabeled_weights(rho, p, q, abar, where="")      # the weight of (i, j) is rho·p_i·q_j
    return Model(loss, LOSS_CODES[loss], abar, rho, p, q, X, Z, Su, Sv, Lu, Lv, lam, lam_w, lam_h,
                 lam_g, nu, negatives, neg_ratio, dense_limit, intercept)


def with_intercept(F: Any, intercept: bool = True) -> Any:
    """Checked features ``F`` (dense float64 or canonical CSR) with a column of ones appended
    when ``intercept`` (``None`` stays ``None``): the intercept of a feature model. With it the
    factor of row i is x_iᵀ W_x + w_0 (w_0ᵀ the last row of W), so the score x_iᵀ W h_j + w_0ᵀ h_j
    carries a per-item (per-label) term that the features alone cannot express."""
    if F is None or not intercept:
        return F
    if sp.issparse(F):
        m, d = F.shape
        nnz = np.diff(F.indptr)
        # the ones column is the last of each row: the indices stay sorted (canonical CSR)
        indptr = np.concatenate(([0], np.cumsum(nnz + 1))).astype(F.indptr.dtype, copy=False)
        last = indptr[1:] - 1
        indices = np.empty(F.nnz + m, dtype=F.indices.dtype)
        data = np.empty(F.nnz + m, dtype=F.data.dtype)
        keep = np.ones(indices.size, dtype=bool)
        keep[last] = False
        indices[keep], data[keep] = F.indices[:F.nnz], F.data[:F.nnz]
        indices[last], data[last] = d, 1.0
        out = sp.csr_array((data, indices, indptr), shape=(m, d + 1))
        out.has_canonical_format = True
        return out
    return np.ascontiguousarray(np.hstack([F, np.ones((F.shape[0], 1), dtype=F.dtype)]))


#: the largest ν accepted: λ_i = λ·count_i^ν already spans 10³⁰ at ν = 10 and 10⁹ positives
NU_MAX = 10.0


def check_nu(nu: Any, user_features: Any = None, item_features: Any = None) -> float:
    """The exponent ν of frequency-scaled regularisation, in [0, :data:`NU_MAX`]; refused with
    features, where a row of W or H belongs to a feature, not to a user or an item."""
    nu = V.check_scalar(nu, name="nu", minimum=0.0)
    if nu > NU_MAX:
        raise ValueError(f"nu must be at most {NU_MAX:g} (λ_i = lam·count_i^nu), got {nu:g}; "
                         "the frequency-scaled regularisation of Rendle et al. uses nu = 1")
    if nu != 0.0:
        for name, F in (("user_features", user_features), ("item_features", item_features)):
            if F is not None:
                raise ValueError(
                    f"nu={nu:g} scales each user's (item's) penalty by its count of positives, "
                    f"but with {name} the rows of W (H) are the features' coefficients, shared "
                    "by every user (item): there is no per-row count to scale by. Use nu=0 with "
                    "features, or fit without them")
    return nu


#: the smallest rank at which ``precondition=None`` preconditions the rows' CG, with
#: frequency-scaled regularisation (docs/ocmf.md, "Solvers": at k ≥ 64 the float32 fit works
#: in M's eigenbasis, whose k×k part the Jacobi preconditioner inverts exactly)
PRECONDITION_MIN_K = 64


def check_rows(model: Model, newton_steps: Any, cg_steps: Any, cg_tol: Any,
               precondition: Any = False, k: int = 1) -> RowOptions:
    """The row solver's options: Newton and CG steps per row and outer iteration (defaults from
    the loss table: 1 and 3 for the square loss, 1 and 4 otherwise; preconditioned, 1 and 1,
    or 1 and 2 for the losses with a line search), CG's tolerance, and the Jacobi
    preconditioner (``None``: with ``nu`` > 0 at rank ``k`` ≥ :data:`PRECONDITION_MIN_K`)."""
    facts = LOSS_FACTS[model.loss]
    if precondition is None:
        precondition = model.nu > 0.0 and k >= PRECONDITION_MIN_K
    precondition = V.check_bool(precondition, name="precondition")
    nsteps = V.check_int(newton_steps if newton_steps is not None else facts.newton_steps,
                         name="newton_steps", minimum=1)
    default_cg = facts.pcg_steps if precondition else facts.cg_steps
    csteps = V.check_int(cg_steps if cg_steps is not None else default_cg,
                         name="cg_steps", minimum=1)
    tol = V.check_scalar(cg_tol, name="cg_tol", minimum=0.0)
    if not tol < 1.0:
        raise ValueError(f"cg_tol must be below 1 (CG stops once its residual is cg_tol times "
                         f"the first), got {tol:g}; the default is 1e-3")
    return RowOptions(newton_steps=nsteps, cg_steps=csteps, cg_tol=tol, precondition=precondition)


def dims(model: Model, shape: tuple[int, int]) -> tuple[int, int]:
    """Rows of W and of H: the feature widths, or m and n without features."""
    X, Z = model.user_features, model.item_features
    return (shape[0] if X is None else X.shape[1], shape[1] if Z is None else Z.shape[1])


def check_factor(A: Any, name: str, rows: int, k: int | None = None) -> np.ndarray:
    """A factor (W or H) of ``rows`` rows and ``k`` columns (any k >= 1 when None)."""
    A = V.check_dense(A, name=name, shape=(rows, k),
                      shape_from=f"rows: one per row of Y or column of its features ({rows}); columns: k")
    if A.shape[1] < 1:
        raise ValueError(f"{name} has no columns; expected k >= 1 columns")
    return A


def warn_rank(run: Run, model: Model, shape: tuple[int, int]) -> None:
    """Warn when k is above min(m, n) or a side's feature width, the intercept's column
    counted (:func:`fastpu._core.validation.warn_rank`)."""
    X, Z = model.user_features, model.item_features
    ones = " with the intercept's column of ones" if model.intercept else ""
    V.warn_rank(run.k, shape, where="ocmf.fit", widths={
        f"user_features{ones}": None if X is None else X.shape[1],
        f"item_features{ones}": None if Z is None else Z.shape[1]})


def check_start(init: Any, model: Model, run: Run, shape: tuple[int, int]) -> tuple[Any, Any] | None:
    """The starting factors (W0, H0) as fresh copies in the fit's precision, or None (draw them).

    They are fresh copies (check_dense copies): the fast path updates the factors in place.
    ``fit`` and the Dask form call this once the run and the model are checked, so it first
    warns about a rank above what they allow (:func:`warn_rank`).
    """
    warn_rank(run, model, shape)
    if init is None:
        return None
    if not (isinstance(init, tuple) and len(init) == 2):
        raise TypeError(f"init must be a tuple (W0, H0), got {type(init).__name__}")
    du, dv = dims(model, shape)
    with np.errstate(over="ignore"):        # beyond float32's range: the fit names init
        W = check_factor(init[0], "init[0] (W0)", du, run.k).astype(run.dtype, copy=False)
        H = check_factor(init[1], "init[1] (H0)", dv, run.k).astype(run.dtype, copy=False)
    return W, H


@dataclasses.dataclass(frozen=True)
class Fit:
    """A fit's arguments, checked: what the single-machine fit and the Dask forms run."""

    run: Run
    model: Model
    rows: RowOptions
    start: tuple[Any, Any] | None       # the starting factors (copies), or None to draw them
    seed: Seed                          # as given (the params record keeps it)

    def params(self) -> dict[str, Any]:
        """What the model records of its fit (``Factorization.params``)."""
        run, model, rows = self.run, self.model, self.rows
        return dict(k=run.k, loss=model.loss, rho=model.rho, a_bar=model.abar, lam=model.lam,
                    lam_w=model.lam_w, lam_h=model.lam_h, lam_graph=model.lam_graph,
                    nu=model.nu, intercept=model.intercept, negatives=model.negatives, neg_ratio=model.neg_ratio,
                    solver=run.solver, n_iter=run.n_iter, n_inner=run.n_inner,
                    fast_path=run.fast_path, newton_steps=rows.newton_steps,
                    cg_steps=rows.cg_steps, cg_tol=rows.cg_tol,
                    precondition=rows.precondition, init_std=run.init_std,
                    seed=self.seed, dtype=run.dtype.name,
                    user_features=model.user_features is not None,
                    item_features=model.item_features is not None,
                    has_user_graph=model.user_graph is not None,
                    has_item_graph=model.item_graph is not None)


#: the arguments of :func:`fastpu.ocmf.fit` that :func:`check_fit` reads (all but Y, n_threads)
FIT_ARGS = ("k", "user_features", "item_features", "user_graph", "item_graph", "loss", "rho",
            "p", "q", "a_bar", "negatives", "neg_ratio", "lam", "lam_w", "lam_h", "lam_graph",
            "nu", "intercept", "solver", "n_iter", "n_inner", "fast_path", "newton_steps",
            "cg_steps", "cg_tol", "precondition", "init", "init_std", "dtype", "dense_limit",
            "seed", "callback", "verbose")


def check_fit_run(args: dict[str, Any]) -> Run:
    """The arguments of ``args`` (:data:`FIT_ARGS`) that drive a fit, which do not depend on
    the matrix: checked first, before Y."""
    a = args
    return check_run(a["k"], solver=a["solver"], n_iter=a["n_iter"], n_inner=a["n_inner"],
                     init_std=a["init_std"], callback=a["callback"], fast_path=a["fast_path"],
                     verbose=a["verbose"], seed=a["seed"], dtype=a["dtype"])


def check_fit(shape: tuple[int, int], args: dict[str, Any], run: Run | None = None) -> Fit:
    """Every argument of a fit of an m × n matrix (``args``: :data:`FIT_ARGS`, as
    :func:`fastpu.ocmf.fit` received them), checked once, as one record (``run``: the record
    of :func:`check_fit_run` when it was checked already)."""
    a = args
    run = check_fit_run(args) if run is None else run
    model = check_model(shape, loss=a["loss"], rho=a["rho"], p=a["p"], q=a["q"],
                        a_bar=a["a_bar"], user_features=a["user_features"],
                        item_features=a["item_features"], user_graph=a["user_graph"],
                        item_graph=a["item_graph"], lam=a["lam"], lam_w=a["lam_w"],
                        lam_h=a["lam_h"], lam_graph=a["lam_graph"], negatives=a["negatives"],
                        neg_ratio=a["neg_ratio"], dense_limit=a["dense_limit"], nu=a["nu"],
                        intercept=a["intercept"])
    rows = check_rows(model, a["newton_steps"], a["cg_steps"], a["cg_tol"], a["precondition"],
                      run.k)
    start = check_start(a["init"], model, run, shape)
    return Fit(run, model, rows, start, a["seed"])


# --------------------------------------------------------------------------- a fitted model

def _p(key: str) -> str:
    return f"model.params[{key!r}]"


_EDITED = "a model returned by fastpu.ocmf.fit (or read by fastpu.load_model) has a valid one"


def check_flag(prm: dict[str, Any], key: str) -> None:
    """A recorded True/False (``fast_path``, ``user_features``, ...), when present."""
    if key in prm and not isinstance(prm[key], (bool, np.bool_)):
        raise TypeError(f"{_p(key)} must be True or False, got {prm[key]!r}")


def check_count(prm: dict[str, Any], key: str, *, optional: bool = True) -> None:
    """A recorded iteration count (an integer >= 1, or None), when present."""
    if key in prm and not (optional and prm[key] is None):
        V.check_int(prm[key], name=_p(key), minimum=1)


def check_fitted(model: Any) -> None:
    """Check an ocmf model's ``params`` and ``extras`` against its factors with the checks the fit
    uses (types, choices, ranges, shapes), before a model file is written or read back and
    before fold-in solves rows with them: an edited model is refused, naming the entry, instead
    of reaching a kernel. Entries a model may lack (files of earlier releases) are not required
    here; fold-in asks for the ones it needs.

    Raises
    ------
    TypeError, ValueError
        Naming the entry (``model.params['a_bar']``, ``model.extras['q']``, ...).
    """
    prm, ex = model.params, model.extras
    n, k = model.item_factors.shape
    if "k" in prm:
        kk = V.check_k(prm["k"], name=_p("k"))
        if kk != k:
            raise ValueError(f"{_p('k')} is {kk} but the factors have {k} columns; {_EDITED}")
    loss = prm.get("loss", "square")
    for key, choices in (("loss", LOSSES), ("negatives", NEGATIVES), ("solver", SOLVERS)):
        if key in prm:
            V.check_choice(prm[key], name=_p(key), choices=choices)
    if "dtype" in prm:
        V.check_choice(prm["dtype"], name=_p("dtype"), choices=("float64", "float32"))
    if "rho" in prm:
        V.check_scalar(prm["rho"], name=_p("rho"), minimum=0.0)
    if "neg_ratio" in prm:
        V.check_scalar(prm["neg_ratio"], name=_p("neg_ratio"), minimum=0.0, strict_min=True)
    if prm.get("a_bar") is not None:
        try:
            _resolve_abar(loss, prm["a_bar"])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{_p('a_bar')}: {exc}") from None
    for key in ("lam", "lam_w", "lam_h", "lam_graph"):
        if prm.get(key) is not None:
            V.check_penalty(prm[key], name=_p(key))
    if prm.get("nu") is not None:
        try:
            check_nu(prm["nu"])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{_p('nu')}: {exc}") from None
    if prm.get("cg_tol") is not None:
        V.check_scalar(prm["cg_tol"], name=_p("cg_tol"), minimum=0.0)
    for key in ("fast_path", "user_features", "item_features", "has_user_graph", "has_item_graph",
                "intercept", "precondition"):
        check_flag(prm, key)
    for key, optional in (("n_iter", False), ("n_inner", False), ("newton_steps", True),
                          ("cg_steps", True)):
        check_count(prm, key, optional=optional)
    if "init_std" in prm:
        V.check_scalar(prm["init_std"], name=_p("init_std"), minimum=0.0)
    if prm.get("p") is not None:
        V.check_choice(prm["p"], name=_p("p"), choices=P_SCHEMES)
        V.check_scalar(prm.get("p_mean"), name=_p("p_mean"), minimum=1.0)
        if ex.get("p") is None:
            raise ValueError(f"{_p('p')} is {prm['p']!r} but model.extras['p'] (the users' "
                             f"weights of the fit) is missing; {_EDITED}")
        V.check_vector(ex["p"], name="model.extras['p']", size=model.user_factors.shape[0])
    q = None
    if ex.get("q") is not None:
        q = V.check_vector(ex["q"], name="model.extras['q']", size=n)
    if "rho" in prm:
        # the fit's check of the unlabeled weights, with p = 1 for the model's rows
        abar = 0.0 if prm.get("a_bar") is None else float(prm["a_bar"])
        check_unlabeled_weights(float(prm["rho"]), np.ones(max(1, model.user_factors.shape[0])),
                                q if q is not None else np.ones(n), abar, where=f"{_p('rho')}: ")
    for key, flag in (("W", "user_features"), ("H", "item_features")):
        if prm.get(flag) or ex.get(key) is not None:
            if key not in ex:
                continue                          # fold-in names what it lacks
            what = f"one row per {flag[:-1].replace('_', ' ')}"
            if prm.get("intercept") and prm.get(flag):
                what += " and one for the intercept"
            V.check_stored_array(ex[key], name=f"model.extras[{key!r}]", shape=(None, k),
                                 what=f"{what}, k = {k} columns")
            if prm.get("intercept") and prm.get(flag) and np.shape(ex[key])[0] < 2:
                raise ValueError(f"model.extras[{key!r}] has {np.shape(ex[key])[0]} row, but "
                                 f"{_p('intercept')} is True: expected {what} (at least 2 rows); "
                                 f"{_EDITED}")
