"""CSRR's boundary: every argument of ``fit``, ``objective`` and the Dask form, checked once here.

:func:`check_model` checks what defines problem (10) (variant, loss, cost bias, penalties);
:func:`check_run` what drives a fit (the rank of variant "e", steps, iterations, the inner loop,
the SVD, seed, callback); :func:`positives` turns Y into the canonical pattern of its positives;
:func:`check_memory` refuses a fit whose arrays cannot fit. Everything below them (the solvers,
the kernels) takes the canonical values and checks nothing again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as Vd
from fastpu._core.memory import check_alloc
from fastpu._core.hints import Callback, Seed

VARIANTS = ("I", "II", "e")
LOSSES = ("I", "II")
LOSS_CODE = {"I": 0, "II": 1}
RESTARTS = (None, "function")
# ℓ^II's target α enters the objective squared, summed over the positives: above this it
# overflows (alpha = 1e154 gave an objective of inf, 1e300 a FloatingPointError naming eta)
ALPHA_TARGET_MAX = 1e100
SVD_METHODS = ("auto", "truncated", "full")


@dataclasses.dataclass(frozen=True)
class Model:
    """What defines problem (10), checked: the variant, its loss, α, λ1 and λ2."""

    variant: str
    loss: str
    alpha: float
    lam1: float
    lam2: float

    @property
    def kind(self) -> int:
        """The loss code of the kernels: ℓ^I or ℓ^II (the variant's own for I/II)."""
        return LOSS_CODE[self.loss if self.variant == "e" else self.variant]

    @property
    def curvature(self) -> float:
        """Largest second derivative of the loss over positives and unobserved entries."""
        return max(self.alpha, 1.0) if self.kind == 0 else 1.0


@dataclasses.dataclass(frozen=True)
class Run:
    """What drives a fit, checked: rank (None for I/II), step, iterations, inner loop, SVD, seed."""

    k: int | None
    eta: float | None
    n_iter: int
    n_inner: int | None
    inner_tol: float
    restart: str | None
    svd_method: str
    rng: np.random.Generator
    callback: Callback
    verbose: bool


def check_model(*, variant: Any, loss: Any = "I", alpha: Any, lam1: Any, lam2: Any,
                variants: tuple[str, ...] = VARIANTS) -> Model:
    """The arguments that define the objective (raises on the first bad one, naming it);
    ``variants`` are those accepted (``objective`` evaluates I and II only)."""
    variant = Vd.check_choice(variant, name="variant", choices=variants)
    loss = Vd.check_choice(loss, name="loss", choices=LOSSES)
    alpha = Vd.check_scalar(alpha, name="alpha", minimum=0.0, strict_min=True)
    lam1 = Vd.check_scalar(lam1, name="lam1", minimum=0.0)
    lam2 = Vd.check_scalar(lam2, name="lam2", minimum=0.0)
    model = Model(variant, loss, alpha, lam1, lam2)
    if model.kind == LOSS_CODE["II"] and alpha > ALPHA_TARGET_MAX:
        which = "variant 'II'" if variant == "II" else "loss 'II'"
        raise ValueError(f"alpha={alpha:g} is too large for {which}, where alpha is the target of "
                         "the positives: the objective sums ½(X − alpha)² over them, which "
                         f"overflows; expected alpha at most {ALPHA_TARGET_MAX:g} (X = U + V lies in "
                         "[0, 2], so a target of order 1 is what the loss means)")
    return model


def default_rank(params: dict[str, Any]) -> int | None:
    """The rank the command line fits with when none is given: 64 for variant "e" (the rank of
    every other method's), none for CSRR-I/II (they choose their own)."""
    return 64 if params.get("variant", "e") == "e" else None


def check_rank(k: Any, variant: str, *, where: str = "csrr.fit",
               example: str = "csrr.fit(Y, 32)") -> int | None:
    """The rank d of variant "e" (required, as every rank-k method's), None for I/II (which
    choose their rank and take no ``k``)."""
    if variant != "e":
        if k is not None:
            raise ValueError(f"k is the rank of variant 'e'; variant {variant!r} has no fixed rank, "
                             f"got k={k!r}")
        return None
    if k is None:
        raise TypeError(f"{where}() missing k, the rank of variant 'e' (U = P Qᵀ: the number of "
                        f"latent factors of each user and item): e.g. {example}; variants 'I' and "
                        "'II' choose their own rank (variant='I', no k)")
    return Vd.check_k(k)


def warn_rank(run: Run, shape: tuple[int, int], *, where: str = "csrr.fit") -> None:
    """Variant "e": warn when k is above min(m, n) (:func:`fastpu._core.validation.warn_rank`);
    CSRR-I/II choose their own rank."""
    if run.k is not None:
        Vd.warn_rank(run.k, shape, where=where)


def check_run(k: Any, model: Model, *, eta: Any, n_iter: Any, n_inner: Any, inner_tol: Any,
              restart: Any, svd_method: Any, seed: Seed, callback: Any, verbose: Any,
              where: str = "csrr.fit", example: str = "csrr.fit(Y, 32)") -> Run:
    """The arguments that drive a fit; ``n_iter=None`` is 100 for "e", 60 for I/II."""
    k = check_rank(k, model.variant, where=where, example=example)
    if eta is not None:
        eta = Vd.check_scalar(eta, name="eta", minimum=0.0, strict_min=True)
    if n_iter is None:
        n_iter = 100 if model.variant == "e" else 60
    else:
        n_iter = Vd.check_int(n_iter, name="n_iter", minimum=1)
    if n_inner is not None:
        n_inner = Vd.check_int(n_inner, name="n_inner", minimum=1)
    inner_tol = Vd.check_scalar(inner_tol, name="inner_tol", minimum=0.0)
    restart = Vd.check_choice(restart, name="restart", choices=RESTARTS)
    svd_method = Vd.check_choice(svd_method, name="svd_method", choices=SVD_METHODS)
    callback = Vd.check_callback(callback)
    verbose = Vd.check_verbose(verbose)
    rng = Vd.check_seed(seed)
    return Run(k, eta, n_iter, n_inner, inner_tol, restart, svd_method, rng, callback, verbose)


# --------------------------------------------------------------------------------- Y


@dataclasses.dataclass
class Positives:
    """Canonical positives: CSR pattern of Ω+ and its transpose with a permutation."""

    indptr: np.ndarray
    indices: np.ndarray
    shape: tuple
    rows: np.ndarray          # row of every stored entry
    t_indptr: np.ndarray
    t_indices: np.ndarray
    t_perm: np.ndarray        # transposed entry p' is original entry t_perm[p']

    @property
    def nnz(self) -> int:
        return self.indices.size

    def csr(self, data: Any) -> Any:
        """A CSR matrix with ``data`` on the positives, owning copies of the index arrays: the
        caller may prune it (``eliminate_zeros`` works in place on the index arrays, and every
        matrix built from this pattern would see the change)."""
        return sp.csr_array((data, self.indices.copy(), self.indptr.copy()), shape=self.shape)


def positives(Y: Any, *, fit: bool = False) -> Positives:
    """The positives of Y (stored values > 0); ``fit``: refuse a Y no fit can learn from."""
    Y = Vd.check_csr(Y, name="Y")
    if fit:
        Vd.check_trainable(Y)
    m, n = Y.shape
    indptr, indices = Y.indptr, Y.indices
    keep = Y.data > 0
    if not keep.all():          # stored zeros are not positives (negative values were refused)
        counts = np.bincount(np.repeat(np.arange(m), np.diff(indptr))[keep], minlength=m)
        indptr = np.zeros(m + 1, dtype=indptr.dtype)
        np.cumsum(counts, out=indptr[1:])
        indices = np.ascontiguousarray(indices[keep])
    if m == 0 or n == 0:
        raise ValueError(f"Y has shape {m}×{n}; expected at least one user and one item")
    order = sp.csr_array((np.arange(indices.size, dtype=np.float64), indices, indptr), shape=(m, n))
    T = Vd.transpose_csr(order)
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
    return Positives(indptr, indices, (m, n), rows, T.indptr, T.indices, T.data.astype(np.int64))


def check_memory(data: Positives, model: Model, run: Run, dense_limit: Any) -> None:
    """Refuse a fit whose arrays exceed the memory (or, for I/II, ``dense_limit`` entries)."""
    m, n = data.shape
    if run.k is None:
        Vd.check_dense_size(m, n, what=f"CSRR-{model.variant} (dense U)",
                            alternative="variant='e' (U = P Qᵀ, memory O(|Ω+| + (m+n)k))",
                            limit=dense_limit)
        # U (then Û), the dense Ũ of two iterates, and the SVD's (or Gram's) work
        check_alloc(5 * 8 * m * n, what=f"CSRR-{model.variant} (dense U and its SVD)",
                    names=("Y's shape", "variant (use 'e')"))
    else:
        check_alloc(8 * run.k * (6 * (m + n) + 8 * run.k) + 48 * data.nnz, what="CSRR-e",
                    names=("k",))


# --------------------------------------------------------------------------------- a fitted model

def _p(key: str) -> str:
    return f"model.params[{key!r}]"


def check_fitted(model: Any) -> None:
    """Check a CSRR model's parts, ``params`` and ``extras`` against its factors with the checks
    the fit uses, before a model file is written or read back and before serving or fold-in use
    them: the variant, the sparse part V (a canonical m × n CSR: a CSC V served wrong items), the
    dense U of CSRR-I/II, α (within its loss's range), λ1, λ2, the rank of variant "e".

    Raises
    ------
    TypeError, ValueError
        Naming the part or entry (``model.V``, ``model.params['alpha']``, ...).
    """
    check_parts(model)
    prm = model.params
    variant = model.variant
    if "variant" in prm and prm["variant"] != variant:
        raise ValueError(f"{_p('variant')} is {prm['variant']!r} but the model is CSRR-{variant}")
    loss = prm.get("loss", "I")
    Vd.check_choice(loss, name=_p("loss"), choices=LOSSES)
    if "alpha" in prm:
        alpha = Vd.check_scalar(prm["alpha"], name=_p("alpha"), minimum=0.0, strict_min=True)
        target = variant == "II" or (variant == "e" and loss == "II")
        if target and alpha > ALPHA_TARGET_MAX:
            raise ValueError(f"{_p('alpha')} is {alpha:g}, above {ALPHA_TARGET_MAX:g} (the target of "
                             "loss II, squared in the objective)")
    for key in ("lam1", "lam2", "inner_tol"):
        if key in prm:
            Vd.check_scalar(prm[key], name=_p(key), minimum=0.0)
    if prm.get("eta") is not None:
        Vd.check_scalar(prm["eta"], name=_p("eta"), minimum=0.0, strict_min=True)
    width = model.item_factors.shape[1]
    if "k" in prm:
        if variant != "e" and prm["k"] is not None:
            raise ValueError(f"{_p('k')} is {prm['k']!r} but CSRR-{variant} has no fixed rank (None)")
        if variant == "e":
            k = Vd.check_k(prm["k"], name=_p("k"))
            if k != width:
                raise ValueError(f"{_p('k')} is {k} but the factors have {width} columns")
    for key in ("n_iter", "n_inner"):
        if prm.get(key) is not None:
            Vd.check_int(prm[key], name=_p(key), minimum=1)
    if "restart" in prm:
        Vd.check_choice(prm["restart"], name=_p("restart"), choices=RESTARTS)
    if "svd_method" in prm:
        Vd.check_choice(prm["svd_method"], name=_p("svd_method"), choices=SVD_METHODS)


def check_parts(model: Any, *, full: bool = True) -> None:
    """What serving reads of a CSRR model: the variant, V (canonical m × n CSR, finite) and U
    (None for "e", a finite m × n array for I/II), m and n being the factors' rows. Without
    ``full`` (serving, once per call) U's values are not scanned: serving checks the rows it
    scores."""
    if not all(hasattr(model, part) for part in ("U", "V", "variant")):
        raise TypeError(f"a CSRR model is a fastpu.csrr.CSRRModel (with U, V and variant), got a "
                        f"{type(model).__name__}")
    variant = Vd.check_choice(model.variant, name="model.variant", choices=VARIANTS)
    m, n = model.user_factors.shape[0], model.item_factors.shape[0]
    if model.V is None:
        raise ValueError("model.V is None; a CSRR model needs the m×n sparse part V that csrr.fit "
                         "returns")
    Vd.check_stored_csr(model.V, name="model.V", shape=(m, n),
                        what="the sparse part of a CSRR model: one row per user, one column per item")
    if variant == "e":
        if model.U is not None:
            raise ValueError("model.U must be None for variant 'e' (U = P Qᵀ from the factors)")
    else:
        if model.U is None:
            raise ValueError(f"model.U is None but CSRR-{variant} scores with its dense U")
        Vd.check_stored_array(model.U, name="model.U", shape=(m, n), finite=full,
                              what=f"the dense low-rank part of CSRR-{variant}")
