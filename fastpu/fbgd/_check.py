"""fBGD's boundary: every argument of ``fit``, ``fit_tensor``, ``objective``, ``tensor_objective``
and the Dask form, checked once here.

:func:`check_y` checks the positives; :func:`check_run` what drives a fit (rank, step size,
epochs, update rule, optimizer, start, seed, callback); :func:`check_model` what defines
``fit``'s objective (features, biases, the weights and targets of loss (2), the penalty) against
the matrix shape, and :func:`check_tensor_model` the same for the tensor models;
:func:`check_start` a warm start, which depends on both. :func:`check_embeddings` and
:func:`check_tensor_factors` check the points at which the objectives are evaluated. Everything
below them (the problem, the epochs, the kernels) takes the canonical values and checks nothing
again.

The parameter layout of eq. 13 lives here too (:func:`free_masks`, :func:`fixed_entries`): the
problem trains the free entries, and a warm start must hold the fixed ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, TypeVar

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.hints import ArrayLike, Callback, Matrix, Seed, Sparse

UPDATES = ("coordinate", "batch")
OPTIMIZERS = ("adagrad", "gd")
TENSORS = ("pitf", "cp")

_F = TypeVar("_F", bound=Callable[..., Any])


# --------------------------------------------------------------------------- the positives
def check_y(Y: Any, *, fit: bool) -> Sparse:
    """Y as canonical CSR (non-negative stored values); a fit also needs a user, an item and a
    positive (an objective does not)."""
    Y = V.check_csr(Y, name="Y")
    return V.check_trainable(Y) if fit else Y


# --------------------------------------------------------------------------- what drives a fit
@dataclasses.dataclass(frozen=True)
class Run:
    """What drives a fit, checked: rank, step size, epochs, update rule, optimizer, start scale,
    seed, callback, verbosity."""

    k: int
    lr: float
    n_iter: int
    update: str
    optimizer: str
    init_std: float
    rng: np.random.Generator
    callback: Callback
    verbose: bool

    @property
    def adagrad(self) -> bool:
        """Whether the steps are Adagrad's (eq. 24) rather than plain gradient steps."""
        return self.optimizer == "adagrad"


def check_run(k: Any, *, lr: Any, n_iter: Any, update: Any, optimizer: Any, init_std: Any,
              seed: Seed, callback: Any, verbose: Any) -> Run:
    """The arguments that drive a fit (raises on the first bad one, naming it)."""
    k = V.check_k(k)
    lr = V.check_scalar(lr, name="lr", minimum=0.0, strict_min=True)
    n_iter = V.check_int(n_iter, name="n_iter", minimum=1)
    update = V.check_choice(update, name="update", choices=UPDATES)
    optimizer = V.check_choice(optimizer, name="optimizer", choices=OPTIMIZERS)
    init_std = V.check_scalar(init_std, name="init_std", minimum=0.0)
    rng = V.check_seed(seed)
    callback = V.check_callback(callback)
    verbose = V.check_verbose(verbose)
    return Run(k, lr, n_iter, update, optimizer, init_std, rng, callback, verbose)


# --------------------------------------------------------------------------- what defines loss (2)
@dataclasses.dataclass(frozen=True)
class Weights:
    """The weights and targets of loss (2), checked.

    ``neg`` is α⁻_y when given (else None: eq. 22 from ``alpha0`` and ``rho`` for a fit, ones
    for an objective); ``neg_rows`` α⁻_x (None: ones, the default path kept bit for bit);
    ``pos_weight`` and ``r_pos`` a number or ``"values"`` (Y's stored values, per positive).
    """

    alpha0: float | None
    rho: float | None
    neg: np.ndarray | None
    neg_rows: np.ndarray | None
    pos_weight: float | str
    r_pos: float | str
    r_neg: float


def _per_positive(value: Any, *, name: str, minimum: float | None) -> float | str:
    """A number (within ``minimum``) or ``"values"``: one weight or target for every positive, or
    Y's stored values (non-negative: :func:`check_y` saw to that)."""
    if isinstance(value, str):
        if value != "values":
            raise ValueError(f"{name} must be a real number or 'values' (the stored values of Y), "
                             f"got {value!r}")
        return value
    return V.check_scalar(value, name=name, minimum=minimum)


def check_weights(shape: tuple[int, int], *, alpha0: Any = None, rho: Any = None,
                  alpha0_default: float | None = None, neg_weights: ArrayLike | None,
                  neg_row_weights: ArrayLike | None, pos_weight: Any, r_pos: Any,
                  r_neg: Any) -> Weights:
    """The weights and targets of loss (2) for an m × n matrix.

    With ``alpha0_default`` (a fit) ``alpha0`` and ``rho`` are eq. 22's, ``alpha0`` defaulting
    to ``alpha0_default · n``; without it (an objective) they are not arguments.
    """
    m, n = shape
    if alpha0_default is not None:
        alpha0 = alpha0_default * n if alpha0 is None else alpha0
        alpha0 = V.check_scalar(alpha0, name="alpha0", minimum=0.0)
        rho = V.check_scalar(rho, name="rho", minimum=0.0)
    neg = None if neg_weights is None else V.check_vector(
        neg_weights, name="neg_weights", size=n, default=1.0, nonnegative=True)
    pos_weight = _per_positive(pos_weight, name="pos_weight", minimum=0.0)
    r_pos = _per_positive(r_pos, name="r_pos", minimum=None)
    r_neg = V.check_scalar(r_neg, name="r_neg")
    neg_rows = None if neg_row_weights is None else V.check_vector(
        neg_row_weights, name="neg_row_weights", size=m, nonnegative=True)
    return Weights(alpha0, rho, neg, neg_rows, pos_weight, r_pos, r_neg)


@dataclasses.dataclass(frozen=True)
class Model:
    """What defines ``fit``'s objective, checked against the matrix shape (m, n).

    ``Zx``, ``Zy`` are the feature matrices as canonical CSR, the identity for a side without
    features (``has_ux`` / ``has_ix`` False); ``lam`` is the L2 penalty on the free parameters
    and ``nu`` the exponent of its frequency scaling (0: one ``lam`` for every parameter).
    """

    Zx: Sparse
    Zy: Sparse
    has_ux: bool
    has_ix: bool
    biases: bool
    weights: Weights
    lam: float
    nu: float = 0.0

    @property
    def plain(self) -> bool:
        """Whether the parameters are the embeddings themselves (no features, no biases)."""
        return not (self.has_ux or self.has_ix or self.biases)


def identity(n: int) -> Sparse:
    return sp.csr_array((np.ones(n), np.arange(n, dtype=np.int64), np.arange(n + 1, dtype=np.int64)),
                        shape=(n, n))


def _features(Z: Matrix | None, *, name: str, n_rows: int, of: str = "row") -> tuple[Sparse, bool]:
    """Side features as canonical CSR (the identity when ``None``), and whether they were given."""
    Z = V.check_features(Z, name=name, n_rows=n_rows, of=of)
    if Z is None:
        return identity(n_rows), False
    if not sp.issparse(Z):                   # checked dense: its nonzeros as canonical CSR
        A = sp.csr_array(Z)
        Z = sp.csr_array((np.ascontiguousarray(A.data, dtype=np.float64),
                          A.indices.astype(np.int64), A.indptr.astype(np.int64)), shape=A.shape)
    return Z, True


def check_biases(biases: Any, *, default: bool) -> bool:
    """``biases`` as a bool (``None``: ``default``, True when features are given)."""
    if biases is None:
        return default
    if not isinstance(biases, (bool, np.bool_)):
        raise TypeError(f"biases must be True, False or None, got {biases!r}")
    return bool(biases)


def check_model(shape: tuple[int, int], *, user_features: Matrix | None,
                item_features: Matrix | None, alpha0: Any, rho: Any,
                neg_weights: ArrayLike | None, neg_row_weights: ArrayLike | None, pos_weight: Any,
                r_pos: Any, r_neg: Any, biases: Any, lam: Any, nu: Any = 0.0) -> Model:
    """The arguments that define ``fit``'s objective, for an m × n matrix."""
    m, n = shape
    Zx, has_ux = _features(user_features, name="user_features", n_rows=m)
    Zy, has_ix = _features(item_features, name="item_features", n_rows=n, of="column")
    weights = check_weights(shape, alpha0=alpha0, rho=rho, alpha0_default=1.0,
                            neg_weights=neg_weights, neg_row_weights=neg_row_weights,
                            pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg)
    biases = check_biases(biases, default=has_ux or has_ix)
    lam = V.check_penalty(lam, name="lam")
    nu = check_nu(nu, user_features if has_ux else None, item_features if has_ix else None)
    return Model(Zx, Zy, has_ux, has_ix, biases, weights, lam, nu)


#: the largest exponent ν of frequency-scaled regularisation (Rendle et al. use ν = 1)
NU_MAX = 10.0


def check_nu(nu: Any, user_features: Any = None, item_features: Any = None) -> float:
    """The exponent ν of frequency-scaled regularisation, in [0, :data:`NU_MAX`]; refused (above
    0) with features, where a row of Θ belongs to a feature, not to a user or an item."""
    nu = V.check_scalar(nu, name="nu", minimum=0.0)
    if nu > NU_MAX:
        raise ValueError(f"nu must be at most {NU_MAX:g} (row x's penalty is lam·c_x^nu), got "
                         f"{nu:g}; the frequency-scaled regularisation of Rendle et al. uses nu = 1")
    if nu != 0.0:
        for name, side, F in (("user_features", "Θ^X", user_features),
                              ("item_features", "Θ^Y", item_features)):
            if F is not None:
                raise ValueError(
                    f"nu={nu:g} scales each user's (item's) penalty by its count of positives and "
                    f"unlabeled weight, but with {name} the rows of {side} are the features' "
                    "coefficients, shared by every user (item): there is no per-row count to "
                    "scale by. Use nu=0 with features, or fit without them (biases alone are "
                    "per row and allowed)")
    return nu


# --------------------------------------------------------------------------- the parameter layout
def free_masks(dx: int, dy: int, f: int, biases: bool) -> tuple[np.ndarray, np.ndarray]:
    """The trainable entries of Θ^X (dx × g) and Θ^Y (dy × g), dx and dy counting the constant
    feature of the bias columns: with ``biases`` the layout of eq. 13 fixes the rest."""
    g = f + 2 if biases else f
    fx = np.zeros((dx, g), dtype=np.bool_)
    fy = np.zeros((dy, g), dtype=np.bool_)
    if not biases:
        fx[:] = True
        fy[:] = True
        return fx, fy
    fx[:-1, :f] = True
    fx[:-1, f] = True          # feature biases w_j
    fx[-1, f] = True           # global bias w0 (the constant column)
    fy[:-1, :f] = True
    fy[:-1, f + 1] = True      # item-side feature biases
    return fx, fy


def fixed_entries(dx: int, dy: int, f: int, biases: bool) -> tuple[np.ndarray, np.ndarray]:
    """Θ^X and Θ^Y with every free entry 0 and the fixed ones at their values: p_x,f+2 = 1 and
    q_y,f+1 = 1 come from the constant feature's row."""
    g = f + 2 if biases else f
    tx, ty = np.zeros((dx, g)), np.zeros((dy, g))
    if biases:
        tx[-1, f + 1] = 1.0    # p_x,f+2 = 1
        ty[-1, f] = 1.0        # q_y,f+1 = 1
    return tx, ty


def _start_side(A: Any, *, i: int, side: str, rows: int, k: int, model: Model,
                given: bool) -> np.ndarray:
    """``init[i]``: Θ of one side (``rows`` feature rows: its rows or columns of Y without
    features), as a fresh float64 copy (the epochs update it in place)."""
    what = "user" if side == "x" else "item"
    per = f"{what} feature" if given else what
    if model.plain:
        name = f"init[{i}] ({'P0' if side == 'x' else 'Q0'})"
        expected = f"one row per {what}, k columns"
    elif not model.biases:
        name, expected = f"init[{i}] (Θ^{side.upper()})", f"one row per {per}, k columns"
    else:
        name = f"init[{i}] (Θ^{side.upper()})"
        expected = (f"one row per {per} plus the constant feature's row, k + 2 columns; "
                    "fastpu.fbgd.parameters(model) gives them for a fitted model")
    g = k + 2 if model.biases else k
    return V.check_dense(A, name=name, shape=(rows + model.biases, g), shape_from=expected)


def warn_rank(run: Run, shape: tuple[int, int], model: Model | None = None, *,
               where: str = "fbgd.fit") -> None:
    """Warn when k is above min(m, n) or a side's feature width
    (:func:`fastpu._core.validation.warn_rank`); a tensor model (``model`` None) has none."""
    widths = {} if model is None else {
        "user_features": model.Zx.shape[1] if model.has_ux else None,
        "item_features": model.Zy.shape[1] if model.has_ix else None}
    V.warn_rank(run.k, shape, where=where, widths=widths)


def check_start(init: Any, model: Model, run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    """The starting parameters (Θ^X, Θ^Y) as fresh float64 copies, or None (draw them).

    Without features and biases they are the embeddings (P0, Q0); otherwise the parameter
    matrices of eq. 13 (:func:`fastpu.fbgd.parameters`), whose fixed entries must hold their
    values.
    """
    if init is None:
        return None
    if not (isinstance(init, tuple) and len(init) == 2):
        raise TypeError("init must be a tuple (P0, Q0) of the starting embeddings (with features "
                        "or biases the parameter matrices (Θ^X, Θ^Y) of fastpu.fbgd.parameters), "
                        f"got {type(init).__name__}")
    dx, dy = model.Zx.shape[1], model.Zy.shape[1]
    tx = _start_side(init[0], i=0, side="x", rows=dx, k=run.k, model=model, given=model.has_ux)
    ty = _start_side(init[1], i=1, side="y", rows=dy, k=run.k, model=model, given=model.has_ix)
    if model.biases:
        free_x, free_y = free_masks(tx.shape[0], ty.shape[0], run.k, True)
        want_x, want_y = fixed_entries(tx.shape[0], ty.shape[0], run.k, True)
        for i, side, T, free, want, row in ((0, "X", tx, free_x, want_x, "[0, …, 0, w0, 1]"),
                                            (1, "Y", ty, free_y, want_y, "[0, …, 0, 1, 0]")):
            wrong = int(np.count_nonzero(T[~free] != want[~free]))
            if wrong:
                col = "last column" if side == "X" else "column k + 1"
                raise ValueError(
                    f"init[{i}] (Θ^{side}) has {wrong} entries that the bias layout of eq. 13 fixes "
                    f"set otherwise; expected its last row {row} and 0 in its {col} above it "
                    "(fastpu.fbgd.parameters(model) gives the parameters of a fitted model)")
    return tx, ty


# --------------------------------------------------------------------------- objectives
def check_embeddings(P: ArrayLike, Q: ArrayLike, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings P (m × g) and Q (n × g) of ``objective``."""
    m, n = shape
    P = V.check_dense(P, name="P", shape=(m, None), shape_from="one row per row of Y")
    Q = V.check_dense(Q, name="Q", shape=(n, None), shape_from="one row per column of Y")
    if P.shape[1] != Q.shape[1]:
        raise ValueError(
            f"P has {P.shape[1]} columns and Q has {Q.shape[1]}; expected the same embedding size g"
        )
    return P, Q


# --------------------------------------------------------------------------- tensor models
def unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (a, b) pairs sorted by a then b, and the index of each input's pair."""
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    new = np.ones(a.size, dtype=bool)
    new[1:] = (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])
    group = np.cumsum(new) - 1
    inverse = np.empty(a.size, dtype=np.int64)
    inverse[order] = group
    return sa[new], sb[new], inverse


def check_pairs(pairs: Any, n_rows: int, n_x: Any, n_h: Any,
                names: tuple[str, str] = ("n_x", "n_h")) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(px, ph, n_x, n_h): the (x, h) pair of each row of Y, distinct and in range."""
    if sp.issparse(pairs):
        raise TypeError("pairs must be a dense integer array of shape (n_pairs, 2), got a sparse matrix")
    arr = np.asarray(pairs)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"pairs must be integer (x, h) indices, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n_pairs, 2), got {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(
            f"pairs has {arr.shape[0]} rows and Y has {n_rows}; expected one (x, h) pair per row of Y"
        )
    if arr.size and arr.min() < 0:
        raise ValueError(f"pairs must be non-negative indices, got minimum {arr.min()}")
    if arr.size and arr.dtype.kind == "u" and int(arr.max()) > V.INT_MAX:
        # uint64 indices past int64 wrapped negative in the cast below (a numpy bincount error)
        raise ValueError(f"pairs has index {int(arr.max())}, above 2**62; expected (x, h) indices "
                         "of a tensor that exists")
    px = np.ascontiguousarray(arr[:, 0], dtype=np.int64)
    ph = np.ascontiguousarray(arr[:, 1], dtype=np.int64)
    sizes = []
    for name, col, given in ((names[0], px, n_x), (names[1], ph, n_h)):
        need = int(col.max()) + 1 if col.size else 0
        if given is None:
            sizes.append(need)
            continue
        given = V.check_int(given, name=name, minimum=0)
        if given < need:
            raise ValueError(f"{name} is {given} but pairs uses index {need - 1}; expected {name} >= {need}")
        sizes.append(given)
    if px.size:
        n_distinct = unique_pairs(px, ph)[0].size
        if n_distinct != px.size:
            raise ValueError(
                f"pairs has {px.size - n_distinct} repeated (x, h) pairs; expected each pair once "
                "(merge their rows of Y, e.g. with triples_to_pairs)"
            )
    return px, ph, sizes[0], sizes[1]


@dataclasses.dataclass(frozen=True)
class TensorModel:
    """What defines a tensor model's objective, checked: the (x, h) pair of each row of Y and
    the numbers of x and h, the model, the weights and targets, the penalty."""

    px: np.ndarray
    ph: np.ndarray
    n_x: int
    n_h: int
    tensor: str
    weights: Weights
    lam: float


def check_tensor_model(shape: tuple[int, int], *, pairs: Any, n_x: Any, n_h: Any, alpha0: Any,
                       rho: Any, neg_weights: ArrayLike | None,
                       neg_row_weights: ArrayLike | None, pos_weight: Any, r_pos: Any, r_neg: Any,
                       tensor: Any, lam: Any) -> TensorModel:
    """The arguments that define ``fit_tensor``'s objective, for a (pairs × |Y|) matrix."""
    tensor = V.check_choice(tensor, name="tensor", choices=TENSORS)
    px, ph, n_x, n_h = check_pairs(pairs, shape[0], n_x, n_h)
    weights = check_weights(shape, alpha0=alpha0, rho=rho, alpha0_default=0.5,
                            neg_weights=neg_weights, neg_row_weights=neg_row_weights,
                            pos_weight=pos_weight, r_pos=r_pos, r_neg=r_neg)
    lam = V.check_penalty(lam, name="lam")
    return TensorModel(px, ph, n_x, n_h, tensor, weights, lam)


def check_tensor_factors(VX: ArrayLike, VH: ArrayLike, VY: ArrayLike, *, pairs: Any,
                         shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                          np.ndarray, np.ndarray]:
    """(VX, VH, VY, px, ph) of ``tensor_objective``: factors with one common width f, as many
    rows of VX and VH as ``pairs`` needs (at least), one row of VY per column of Y."""
    VX = V.check_dense(VX, name="VX")
    f = VX.shape[1]
    px, ph, _, n_h = check_pairs(pairs, shape[0], VX.shape[0], None,
                                 names=("the number of rows of VX", "n_h"))
    VH = V.check_dense(VH, name="VH")
    if VH.shape[0] < n_h:
        raise ValueError(f"VH has {VH.shape[0]} rows but pairs uses h index {n_h - 1}")
    if VH.shape[1] != f:
        raise ValueError(f"VH has shape {VH.shape[0]}×{VH.shape[1]}, expected {VH.shape[0]}×{f} "
                         f"(VH, VX and VY have the same number of columns; VX has {f})")
    VY = V.check_dense(VY, name="VY", shape=(shape[1], f))
    return VX, VH, VY, px, ph


# --------------------------------------------------------------------------- a fitted model
def _p(key: str) -> str:
    return f"model.params[{key!r}]"


def _features_shape(prm: dict[str, Any], key: str) -> tuple[int, int] | None:
    """The recorded shape of a side's features (``fit`` records their shape), or None."""
    value = prm.get(key)
    if value is None:
        return None
    if not (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                    for v in value)):
        raise ValueError(f"{_p(key)} must be None or the (rows, columns) of the features the model "
                         f"was fitted with, got {value!r}")
    return int(value[0]), int(value[1])


def check_fitted(model: Any) -> None:
    """Check an fBGD model's ``params`` and ``extras`` against its factors with the checks the fits
    use (types, choices, ranges, shapes), before a model file is written or read back and before
    fold-in, :func:`parameters` or :func:`pair_model` use them: the rank k against the factors'
    width (k + 2 with biases), the weights and targets of loss (2), the parameter matrices of
    eq. 13 and, for a tensor model, V_x, V_h, V_y and the pairs. Entries a model may lack (files
    of earlier releases) are not required here.

    Raises
    ------
    TypeError, ValueError
        Naming the entry (``model.params['k']``, ``model.extras['V_user']``, ...).
    """
    prm, ex = model.params, model.extras
    n, g = model.item_factors.shape
    tensor = prm.get("tensor", ex.get("tensor"))
    k = V.check_k(prm["k"], name=_p("k")) if "k" in prm else None
    for key, choices in (("update", UPDATES), ("optimizer", OPTIMIZERS)):
        if key in prm:
            V.check_choice(prm[key], name=_p(key), choices=choices)
    for key in ("alpha0", "rho", "init_std"):
        if prm.get(key) is not None:
            V.check_scalar(prm[key], name=_p(key), minimum=0.0)
    if "lr" in prm:
        V.check_scalar(prm["lr"], name=_p("lr"), minimum=0.0, strict_min=True)
    for key in ("lam", "reg"):
        if prm.get(key) is not None:
            V.check_penalty(prm[key], name=_p(key))
    if prm.get("nu") is not None:
        try:
            check_nu(prm["nu"])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{_p('nu')}: {exc}") from None
    for key, minimum in (("pos_weight", 0.0), ("r_pos", None)):
        if key in prm:
            _per_positive(prm[key], name=_p(key), minimum=minimum)
    if "r_neg" in prm:
        V.check_scalar(prm["r_neg"], name=_p("r_neg"))
    if prm.get("n_iter") is not None:
        V.check_int(prm["n_iter"], name=_p("n_iter"), minimum=1)
    if ex.get("neg_weights") is not None:
        V.check_stored_array(ex["neg_weights"], name="model.extras['neg_weights']", shape=(n,),
                             what="one weight per item")
        if np.asarray(ex["neg_weights"]).min(initial=0.0) < 0:
            raise ValueError("model.extras['neg_weights'] has negative weights; expected α⁻ >= 0")
    if tensor is not None:
        _check_fitted_tensor(model, tensor, k)
        return
    biases = prm.get("biases")
    if biases is not None and not isinstance(biases, (bool, np.bool_)):
        raise TypeError(f"{_p('biases')} must be True or False, got {biases!r}")
    if k is not None and biases is not None and g != k + 2 * bool(biases):
        raise ValueError(f"{_p('k')} is {k} and {_p('biases')} {bool(biases)}, so the factors should "
                         f"have {k + 2 * bool(biases)} columns (k{' + 2 bias columns' if biases else ''}); "
                         f"they have {g}")
    ux, ix = _features_shape(prm, "user_features"), _features_shape(prm, "item_features")
    for key, rows in (("V_user", None if ux is None else ux[1]),
                      ("V_item", n if ix is None else ix[1])):
        if ex.get(key) is not None:
            A = V.check_stored_array(ex[key], name=f"model.extras[{key!r}]", shape=(rows, k),
                                     what="one row per feature (per user or item without "
                                          "features), k columns")
            side = "w_user" if key == "V_user" else "w_item"
            if ex.get(side) is not None:
                V.check_stored_array(ex[side], name=f"model.extras[{side!r}]", shape=(A.shape[0],),
                                     what=f"one bias per row of model.extras[{key!r}]")
    if ex.get("w0") is not None:
        V.check_scalar(ex["w0"], name="model.extras['w0']")


def _check_fitted_tensor(model: Any, tensor: Any, k: int | None) -> None:
    """A tensor model (fit_tensor): V_x, V_h, V_y of one width f and in-range pairs."""
    prm, ex = model.params, model.extras
    name = "model.extras['tensor']" if "tensor" in ex else _p("tensor")
    V.check_choice(tensor, name=name, choices=TENSORS)
    if "tensor" in ex and "tensor" in prm and ex["tensor"] != prm["tensor"]:
        raise ValueError(f"model.extras['tensor'] is {ex['tensor']!r} but {_p('tensor')} is "
                         f"{prm['tensor']!r}")
    m, (n, g) = model.user_factors.shape[0], model.item_factors.shape
    f = g - (tensor == "pitf")
    if k is not None and k != f:
        raise ValueError(f"{_p('k')} is {k} but the item factors have {g} columns (k"
                         f"{' + 1 with pitf' if tensor == 'pitf' else ''})")
    sizes = {}
    for key, count in (("V_x", "n_x"), ("V_h", "n_h")):
        rows = prm.get(count)
        if rows is not None:
            rows = V.check_int(rows, name=_p(count), minimum=0)
        if ex.get(key) is None:
            raise ValueError(f"model.extras[{key!r}] is missing; a tensor model holds V_x, V_h and V_y")
        A = V.check_stored_array(ex[key], name=f"model.extras[{key!r}]", shape=(rows, f),
                                 what=f"one row per {'x' if key == 'V_x' else 'h'}, f = {f} columns")
        sizes[key] = A.shape[0]
    if ex.get("V_y") is not None:
        V.check_stored_array(ex["V_y"], name="model.extras['V_y']", shape=(n, f),
                             what="one row per item")
    if ex.get("pairs") is not None:
        pairs = ex["pairs"]
        if not isinstance(pairs, np.ndarray) or pairs.dtype.kind not in "iu" or pairs.shape != (m, 2):
            raise ValueError(f"model.extras['pairs'] must be an integer array of shape ({m}, 2), one "
                             f"(x, h) pair per row of the factors, got {getattr(pairs, 'shape', pairs)!r}")
        for col, key in ((0, "V_x"), (1, "V_h")):
            if pairs.size and (pairs[:, col].min() < 0 or pairs[:, col].max() >= sizes[key]):
                raise ValueError(f"model.extras['pairs'][:, {col}] must lie in [0, {sizes[key]}) (the "
                                 f"rows of model.extras[{key!r}])")
