"""The boundary: the argument checks that put user input into canonical form.

Everything below this layer (kernels, solvers) trusts its inputs: CSR matrices
have sorted, duplicate-free, in-range int64 indices and float64 data; dense
arrays are C-contiguous float64.  Numba does not check bounds, so nothing that
fails these checks may ever reach a kernel.

The other concerns of the boundary have modules of their own beside this one:
:mod:`fastpu._core.memory` (how much a call may allocate), :mod:`fastpu._core.files`
(regular files and safe ``.npz`` archives) and :mod:`fastpu._core.names` (did-you-mean
suggestions for unknown keywords).
"""

from __future__ import annotations

import numbers
import os
import re
import warnings
from typing import Any, Collection, TypeVar

import numpy as np
import scipy.sparse as sp

from fastpu._core import memory
from fastpu._core.exceptions import user_stacklevel
from fastpu._core.hints import ArrayLike, Callback, DTypeLike, IntArray, Matrix, Seed, Sparse

_T = TypeVar("_T")

INDEX_DTYPE = np.int64
VALUE_DTYPE = np.float64

# Dense variants (LR-wLR, CSRR-I/II) refuse to allocate more than this many
# float64 entries unless the caller raises the limit explicitly.
DENSE_LIMIT = 25_000_000


def _shape_str(shape: tuple[int, ...]) -> str:
    return "×".join(str(int(s)) for s in shape)


def check_real(A: Any, *, name: str) -> None:
    """Refuse complex input before a cast to float64 silently drops its imaginary part.

    Arrays (dense, sparse, LinearOperators) are judged by their ``dtype``; lists, tuples and
    scalars by the dtype numpy gives them.

    Raises
    ------
    TypeError
        If ``A`` has a complex dtype; the message names ``name`` and the dtype.
    """
    dt = getattr(A, "dtype", None)
    if dt is None and isinstance(A, (list, tuple, complex)):
        try:
            dt = np.asarray(A).dtype
        except (TypeError, ValueError):          # ragged or odd input: the caller's cast reports it
            dt = None
    if getattr(dt, "kind", None) == "c":
        raise TypeError(f"{name} must be real, got complex dtype {dt}; expected real (float or "
                        "integer) values: take the real part or the modulus first if that is what is meant")


def check_csr(Y: Any, *, name: str = "Y", shape: tuple[int, int] | None = None,
              nonnegative: bool = True, allow_zero_rows: bool = True,
              shape_from: str | None = None, keep_integers: bool = False) -> Sparse:
    """Return ``Y`` as canonical CSR (int64 sorted unique indices, float64 data).

    ``shape_from`` says where the expected ``shape`` comes from (e.g. ``"model.shape"``), for
    the message when it does not match. With ``keep_integers``, integer (or bool) data stays
    int64 rather than float64, which is exact only to 2**53 (timestamps in nanoseconds, ids).

    Raises
    ------
    TypeError
        If ``Y`` is not a scipy.sparse matrix or array, or has a complex dtype.
    ValueError
        If it is malformed, has non-finite or (with ``nonnegative``) negative
        stored values, or does not have the expected ``shape``.
    """
    if not sp.issparse(Y):
        kind = type(Y).__name__
        if kind == "Dataset":
            hint = f"pass the data set's matrix, {name}=data.Y"
        elif kind == "DataFrame" and getattr(Y, "ndim", 2) == 2 and Y.shape[1] > 3:
            hint = (f"a users × items table ({Y.shape[0]} × {Y.shape[1]}) is "
                    f"scipy.sparse.csr_array(df.to_numpy()); for (user, item[, value]) pairs use "
                    "fastpu.datasets.from_pairs(df['user'], df['item'])")
        elif kind == "DataFrame":
            hint = ("for (user, item[, value]) pairs use fastpu.datasets.from_pairs(df['user'], "
                    "df['item']) and pass its .Y (or the Dataset, where a Dataset is taken)")
        elif isinstance(Y, (str, os.PathLike)):
            hint = (f"read a file of user,item[,value] lines first, {name}="
                    f"fastpu.datasets.read_csv({os.fspath(Y)!r}), or a scipy.sparse.save_npz "
                    "file with fastpu.datasets.load_npz")
        else:
            hint = f"wrap dense data with scipy.sparse.csr_array({name})"
        raise TypeError(f"{name} must be a scipy.sparse matrix or array, got {kind}; {hint}")
    if Y.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional, got {Y.ndim} dimensions")
    check_real(Y, name=name)
    if Y.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {Y.dtype}")
    if shape is not None and tuple(Y.shape) != tuple(shape):
        raise ValueError(
            f"{name} has shape {_shape_str(Y.shape)}, expected {_shape_str(shape)}"
            + (f" ({shape_from})" if shape_from else "")
        )
    fmt = Y.format
    if fmt in ("csr", "csc"):
        check_compressed_structure(Y, name)
    elif fmt == "coo":
        r, c = Y.coords if hasattr(Y, "coords") else (Y.row, Y.col)
        if r.size and (r.min() < 0 or r.max() >= Y.shape[0] or c.min() < 0 or c.max() >= Y.shape[1]):
            raise ValueError(f"{name} has COO coordinates out of range for shape {_shape_str(Y.shape)}")
    check_sparse_memory(Y, name=name)
    dtype: Any = VALUE_DTYPE
    if keep_integers and Y.dtype.kind in "iub":
        dtype = np.int64
        if Y.dtype.kind == "u" and Y.dtype.itemsize == 8 and Y.nnz and Y.max() >= 2**63:
            raise ValueError(f"{name} has stored values of {int(Y.max())} or more; expected values "
                             "below 2**63 (int64)")
    Y = sp.csr_array(Y, dtype=dtype, copy=True)
    Y.sum_duplicates()
    Y.sort_indices()
    data = np.ascontiguousarray(Y.data, dtype=dtype)
    nonfinite = data.size - int(np.isfinite(data).sum())
    if nonfinite:
        raise ValueError(f"{name} has {nonfinite} non-finite (NaN or inf) stored values; expected finite values")
    if nonnegative and data.size and data.min() < 0:
        raise ValueError(
            f"{name} has {int((data < 0).sum())} negative stored values (min {data.min():g}); "
            "expected non-negative weights (stored entries are positives)"
        )
    out = sp.csr_array(
        (data, Y.indices.astype(INDEX_DTYPE, copy=False), Y.indptr.astype(INDEX_DTYPE, copy=False)),
        shape=Y.shape,
    )
    return out


def check_sparse_memory(Y: Any, *, name: str = "Y") -> None:
    """Refuse a sparse matrix whose canonical CSR cannot fit, before scipy converts it.

    A matrix's declared shape costs memory of its own: a COO or CSC matrix declared with 10¹¹
    rows and one entry needs 800 GB of CSR row pointers, and what uses a matrix holds a number
    per column too (its transpose's pointers, an item's count or factor). The estimate counts a
    pointer per row and per column and two copies of the entries (the conversion and the
    canonical copy): a shape declared far beyond its entries is refused here, naming it.
    """
    m, n = int(Y.shape[0]), int(Y.shape[1])
    nnz = int(Y.nnz) if Y.format != "coo" else int(np.size(Y.data))
    nbytes = 8 * (m + 1) * (1 if Y.format == "csr" else 2) + 8 * (n + 1) + 2 * (8 + 8) * nnz
    if nbytes > memory.SMALL_BYTES:
        memory.check_alloc(nbytes, what=f"{name} (declared {_shape_str(Y.shape)} with {nnz:,} "
                                        f"stored entries) as canonical CSR",
                           names=(f"the shape of {name}",))


def has_canonical_indices(indptr: np.ndarray, indices: np.ndarray) -> bool:
    """Whether every row of a CSR structure has strictly increasing column indices (sorted and
    duplicate-free), computed from the arrays: scipy's cached ``has_canonical_format`` and
    ``has_sorted_indices`` flags stay True when the arrays are edited in place."""
    indptr = np.asarray(indptr)
    nnz = int(indptr[-1]) if indptr.size else 0
    if nnz < 2:
        return True
    bad = np.diff(np.asarray(indices)[:nnz]) <= 0
    inner = indptr[1:-1]
    bad[inner[(inner > 0) & (inner < nnz)] - 1] = False     # the step from one row to the next
    return not bool(bad.any())


def check_stored_csr(A: Any, *, name: str, shape: tuple[int | None, int | None],
                     what: str = "") -> None:
    """Check, without copying, a CSR a fitted model stores (CSRR's V, HOMF's A): a scipy.sparse
    CSR of ``shape`` (None: any size) with in-range, sorted, duplicate-free indices and finite
    values. What a kernel or a fancy index reads from it afterwards stays in bounds.

    ``what`` ends the message (what the matrix is, how a good one is made).
    """
    tail = f"; {what}" if what else ""
    if not sp.issparse(A):
        raise TypeError(f"{name} must be a scipy.sparse CSR matrix, got {type(A).__name__}{tail}")
    if A.format != "csr":
        raise ValueError(f"{name} is a {A.format.upper()} matrix; expected CSR (convert it with "
                         f"scipy.sparse.csr_array({name})){tail}")
    if A.ndim != 2 or any(w is not None and got != w for got, w in zip(A.shape, shape)):
        want = "×".join("*" if w is None else str(w) for w in shape)
        raise ValueError(f"{name} has shape {_shape_str(A.shape)}, expected {want}{tail}")
    if A.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {A.dtype}{tail}")
    check_compressed_structure(A, name)
    nnz = int(A.indptr[-1])
    if not has_canonical_indices(A.indptr, A.indices):
        raise ValueError(f"{name} is not canonical: a row has unsorted or repeated column indices "
                         f"(its arrays were edited){tail}")
    data = np.asarray(A.data)[:nnz]
    if data.dtype.kind == "f" and not np.isfinite(data).all():
        raise ValueError(f"{name} has {int(data.size - np.isfinite(data).sum())} non-finite (NaN or "
                         f"inf) stored values{tail}")


def check_stored_array(A: Any, *, name: str, shape: tuple[int | None, ...], what: str = "",
                       finite: bool = True) -> np.ndarray:
    """Check, without copying, a dense array a fitted model stores (factors, weights): a real
    numpy array of ``shape`` (None: any size), finite unless ``finite`` is False; returned
    as it is."""
    tail = f"; {what}" if what else ""
    if not isinstance(A, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(A).__name__}{tail}")
    if A.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {A.dtype}{tail}")
    if A.ndim != len(shape) or any(w is not None and got != w for got, w in zip(A.shape, shape)):
        def text(dims: tuple[Any, ...]) -> str:
            parts = ["*" if d is None else str(int(d)) for d in dims]
            return f"({parts[0]},)" if len(parts) == 1 else "×".join(parts) or "()"
        raise ValueError(f"{name} has shape {text(A.shape)}, expected {text(shape)}{tail}")
    if finite and A.dtype.kind == "f" and not np.isfinite(A).all():
        raise ValueError(f"{name} has {int(A.size - np.isfinite(A).sum())} non-finite (NaN or inf) "
                         f"values{tail}")
    return A


def check_trainable(Y: Sparse, *, name: str = "Y") -> Sparse:
    """Refuse a training matrix no fit can learn from; return ``Y`` unchanged.

    Every method's ``fit`` calls this on its canonical Y (after :func:`check_csr`). Functions
    that legitimately take an empty matrix (splits, metrics, fold-in, serving, objectives) do
    not: the check belongs to the fit entry points only.

    Raises
    ------
    ValueError
        If ``Y`` has a zero dimension (no user or no item), or no positive: no stored entry
        with a nonzero value (the positives are the stored entries; a stored zero weighs
        nothing); or if its shape needs more memory than there is (:func:`fastpu._core.memory.check_alloc`) for
        even one factor row per user and item.
    """
    m, n = (int(s) for s in Y.shape)
    if m == 0 or n == 0:
        raise ValueError(f"{name} has shape {m}×{n}; expected at least one user and one item "
                         "(a matrix with one row per user and one column per item)")
    # every fit holds at least a factor row and a few weights per user and per item: a shape
    # declared far beyond its entries (3 × 2³¹ with 3 positives) is refused here, naming Y,
    # rather than by numpy inside the fit
    need = 8 * 4 * (m + n)
    if need > memory.SMALL_BYTES:
        memory.check_alloc(need, what=f"a fit of {name} ({m:,} users × {n:,} items: a factor row and "
                                      "a few weights per user and item, at the least)",
                           names=(f"the shape of {name}",))
    if not np.count_nonzero(np.asarray(Y.data)[: int(Y.nnz)]):
        stored = int(Y.nnz)
        what = "no stored entries" if not stored else f"{stored} stored entries, all zero"
        raise ValueError(f"{name} has shape {m}×{n} but no positive entries ({what}); expected at "
                         "least one positive (a stored nonzero value) to fit a model")
    return Y


def check_compressed_structure(Y: Sparse, name: str) -> None:
    """Reject malformed CSR/CSC (before scipy or a kernel reads out of bounds)."""
    indptr, indices = np.asarray(Y.indptr), np.asarray(Y.indices)
    major, minor = (Y.shape[0], Y.shape[1]) if Y.format == "csr" else (Y.shape[1], Y.shape[0])
    if indptr.ndim != 1 or indptr.size != major + 1:
        raise ValueError(f"{name} is malformed: indptr has length {indptr.size}, expected {major + 1}")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name} is malformed: indptr must start at 0 and be non-decreasing")
    if indptr[-1] > indices.size or indptr[-1] > np.asarray(Y.data).size:
        raise ValueError(
            f"{name} is malformed: indptr ends at {indptr[-1]} but only {indices.size} indices are stored"
        )
    used = indices[: indptr[-1]]
    if used.size and (used.min() < 0 or used.max() >= minor):
        raise ValueError(
            f"{name} is malformed: stored indices out of range [0, {minor}) "
            f"(min {used.min()}, max {used.max()})"
        )


def check_dense(A: Any, *, name: str, shape: tuple[int | None, ...] | None = None, ndim: int = 2,
                nonnegative: bool = False, shape_from: str | None = None) -> np.ndarray:
    """Return ``A`` as a C-contiguous float64 array with finite values.

    ``shape_from`` says where the expected ``shape`` comes from, for the message. Complex input
    is a TypeError (:func:`check_real`), never cast to its real part.
    """
    if sp.issparse(A):
        raise TypeError(f"{name} must be a dense array, got a scipy.sparse {A.format} matrix")
    check_real(A, name=name)
    try:
        A = np.array(A, dtype=VALUE_DTYPE, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array, got {type(A).__name__}") from exc
    if A.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {A.shape}")
    if shape is not None:
        want = tuple(shape)
        for got, exp in zip(A.shape, want):
            if exp is not None and got != exp:
                exp_str = "×".join("*" if s is None else str(s) for s in want)
                raise ValueError(f"{name} has shape {_shape_str(A.shape)}, expected {exp_str}"
                                 + (f" ({shape_from})" if shape_from else ""))
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} has {int(A.size - np.isfinite(A).sum())} non-finite (NaN or inf) values")
    if nonnegative and A.size and A.min() < 0:
        raise ValueError(f"{name} must be non-negative, got minimum {A.min():g}")
    return A


def check_vector(v: ArrayLike | None, *, name: str, size: int, default: float = 1.0,
                 positive: bool = False, nonnegative: bool = True) -> np.ndarray:
    """A length-``size`` float64 vector; ``None`` gives ``default`` everywhere."""
    if v is None:
        return np.full(size, float(default), dtype=VALUE_DTYPE)
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{name} must be a number or a length-{size} vector, got {v!r}")
    check_real(v, name=name)
    if np.isscalar(v):
        v = np.full(size, float(v))  # type: ignore[arg-type]  # numpy's guard admits str here
    v = check_dense(v, name=name, shape=(size,), ndim=1)
    if positive and v.size and v.min() <= 0:
        raise ValueError(f"{name} must be positive, got minimum {v.min():g}")
    if nonnegative and v.size and v.min() < 0:
        raise ValueError(f"{name} must be non-negative, got minimum {v.min():g}")
    return v


def check_features(X: Matrix | None, *, name: str, n_rows: int, of: str = "row") -> Matrix:
    """Side features: ``None``, a CSR (canonical) or a dense float64 array with ``n_rows`` rows.

    ``of`` says what a feature row describes in messages: one per ``"row"`` (user) or
    ``"column"`` (item) of Y.
    """
    if X is None:
        return None
    if sp.issparse(X):
        if X.shape[0] != n_rows:
            raise ValueError(f"{name} has {X.shape[0]} rows, expected {n_rows} (one per {of} of Y)")
        if X.ndim == 2 and X.shape[1] < 1:
            raise ValueError(f"{name} has no columns; expected at least one feature")
        return check_csr(X, name=name, nonnegative=False)
    X = check_dense(X, name=name)
    if X.shape[0] != n_rows:
        raise ValueError(f"{name} has {X.shape[0]} rows, expected {n_rows} (one per {of} of Y)")
    if X.shape[1] < 1:
        raise ValueError(f"{name} has no columns; expected at least one feature")
    return X


def check_graph(S: Matrix | None, *, name: str, n: int,
                symmetric_tol: float = 1e-8) -> Sparse | None:
    """A similarity graph: square n×n, symmetric, non-negative; canonical CSR without stored zeros."""
    if S is None:
        return None
    if not sp.issparse(S):
        S = check_dense(S, name=name)
        S = sp.csr_array(S)
    if S.shape != (n, n):
        raise ValueError(f"{name} has shape {_shape_str(S.shape)}, expected a square {n}×{n} similarity matrix")
    S = check_csr(S, name=name, nonnegative=False)
    S.eliminate_zeros()          # a similarity of 0 is no edge, whatever the input format
    if S.nnz and S.data.min() < 0:
        raise ValueError(f"{name} has negative similarities (min {S.data.min():g}); expected non-negative weights")
    diff = abs(S - S.T)
    if diff.nnz and diff.max() > symmetric_tol * max(1.0, abs(S).max()):
        raise ValueError(f"{name} is not symmetric (max |S - S.T| = {diff.max():g}); pass (S + S.T) / 2")
    return S


def laplacian(S: Sparse | None) -> Sparse | None:
    """L = D - S of a canonical similarity CSR (or ``None``)."""
    if S is None:
        return None
    deg = np.asarray(S.sum(axis=1)).ravel()
    L = sp.csr_array(sp.diags_array(deg, format="csr") - S)
    return check_csr(L, name="laplacian", nonnegative=False)


# Integers reach numba kernels as int64: anything above this is refused at the boundary.
INT_MAX = 2**62


def check_k(k: Any, *, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 1, got {k!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"{name} must be >= 1, got {k}")
    if k > INT_MAX:
        raise ValueError(f"{name} must be <= 2**62, got {k}")
    return int(k)


def warn_rank(k: int, shape: tuple[int, int], *, where: str,
              widths: dict[str, int | None] | None = None) -> None:
    """Warn when the rank ``k`` is above the rank a fit's scores can have.

    The m × n scores have rank at most min(m, n) whatever ``k`` is, and at most d when a side's
    factors are a product with a feature matrix of d columns (X W): the columns of the factors
    past the smallest of these bounds add no rank, only cost. Every fit that takes a rank calls
    this from its argument checks (its Dask form too).

    Parameters
    ----------
    k : int
        The checked rank.
    shape : (int, int)
        (m, n) of the matrix fitted.
    where : str
        The fit, for the message (``"ocmf.fit"``).
    widths : dict, optional
        The feature matrices that bound the rank: their argument names -> their numbers of
        columns (None: not given).

    Warns
    -----
    UserWarning
        Naming ``k``, the bound and where it comes from, and what the extra columns cost (time
        per iteration and the factors' memory, relative to ``k`` at the bound).

    Examples
    --------
    >>> import warnings
    >>> from fastpu._core.validation import warn_rank
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_rank(50, (40, 30), where="ocmf.fit")
    >>> str(caught[0].message).split(":")[1].strip()
    'k=50 is above min(m, n) = 30 of the 40 × 30 matrix Y'
    """
    m, n = (int(s) for s in shape)
    bounds = [(min(m, n), f"min(m, n) = {min(m, n):,} of the {m:,} × {n:,} matrix Y")]
    for name, width in (widths or {}).items():
        if width is not None:
            bounds.append((int(width), f"the {int(width):,} columns of {name}"))
    top, what = min(bounds, key=lambda b: b[0])
    if k <= top or top < 1:
        return
    ratio = k / top
    warnings.warn(
        f"{where}: k={k:,} is above {what}: the scores have rank at most {top:,} whatever k is, so "
        f"the other {k - top:,} columns of the factors add no rank, only cost: each iteration takes "
        f"about {ratio:.1f} (its |Ω+|·k terms) to {ratio * ratio:.1f} (its k×k terms) times as long as "
        f"with k={top:,}, and the {m + n:,} factor rows take {memory.fmt_bytes(8 * (m + n) * k)} "
        f"instead of {memory.fmt_bytes(8 * (m + n) * top)}; use k <= {top:,}",
        UserWarning, stacklevel=user_stacklevel())


def check_int(v: Any, *, name: str, minimum: int | None = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {v!r}")
    v = int(v)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if v > INT_MAX:
        raise ValueError(f"{name} must be <= 2**62, got {v}")
    return int(v)


def check_scalar(x: Any, *, name: str, minimum: float | None = None,
                 maximum: float | None = None, strict_min: bool = False,
                 strict_max: bool = False) -> float:
    """A finite real number inside the given bounds."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    try:
        x = float(x)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got an integer too large for a float") from None
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if minimum is not None and (x < minimum or (strict_min and x == minimum)):
        op = ">" if strict_min else ">="
        raise ValueError(f"{name} must be {op} {minimum}, got {x:g}")
    if maximum is not None and (x > maximum or (strict_max and x == maximum)):
        op = "<" if strict_max else "<="
        raise ValueError(f"{name} must be {op} {maximum}, got {x:g}")
    return x


def check_bool(value: Any, *, name: str, meaning: str | None = None) -> bool:
    """``value`` if it is True or False (numpy's bools too), else a TypeError naming ``name``
    (and saying what each value means, when ``meaning`` is given)."""
    if not isinstance(value, (bool, np.bool_)):
        what = f" ({meaning})" if meaning else ""
        raise TypeError(f"{name} must be True or False{what}, got {value!r}")
    return bool(value)


def ascii_int(s: str) -> int | None:
    """The value of a non-negative integer written in ASCII digits, else None.

    ``str.isdigit`` also passes '²' and '٥', which ``int`` then refuses or reads.
    """
    return int(s) if re.fullmatch(r"[0-9]+", s) else None


# Above this a ridge or graph penalty makes every factor zero to machine precision, and its term
# swamps the loss's digits (ocmf with lam = 1e100 gave a negative square-loss objective, 1e150 a
# NaN; fbgd with lam = 1e200 never moved).
PENALTY_MAX = 1e20


def check_penalty(x: Any, *, name: str) -> float:
    """A regularisation weight: a real number in [0, PENALTY_MAX]."""
    x = check_scalar(x, name=name, minimum=0.0)
    if x > PENALTY_MAX:
        raise ValueError(f"{name} must be at most {PENALTY_MAX:g}, got {x:g}: a penalty this large "
                         "makes every factor zero to machine precision and leaves the objective no digits")
    return x


def check_choice(value: _T, *, name: str, choices: Collection[Any]) -> _T:
    try:
        known = value in choices
    except TypeError:                    # an unhashable value (a list, a dict) against a dict/set
        known = False
    if not known:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(repr(c) for c in choices)}")
    return value


def check_float_dtype(dtype: DTypeLike) -> np.dtype[Any]:
    """np.dtype float64 or float32 from a name, numpy type or dtype."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dtype is None or dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    return dt


def check_callback(callback: Callback) -> Callback:
    """``None`` or a callable that accepts one argument (the history dict of an iteration)."""
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    if callback is not None:
        import inspect
        try:
            sig = inspect.signature(callback)
        except (TypeError, ValueError):       # builtins without a signature: trust them
            return callback
        try:
            sig.bind({})
        except TypeError:
            raise TypeError(
                f"callback must accept one argument (the history dict of an iteration), got {callback!r} "
                f"with signature {sig}") from None
    return callback


def check_verbose(verbose: Any, *, name: str = "verbose") -> bool:
    """True/False, or an int (numpy bools and ints too): a string such as "0" is refused."""
    if not isinstance(verbose, (bool, np.bool_, numbers.Integral)):
        text = repr(verbose)
        raise TypeError(f"{name} must be True or False (or an int, 0 for quiet), got "
                        f"{type(verbose).__name__} {text if len(text) <= 60 else text[:57] + '...'}")
    return bool(verbose)


def check_seed(seed: Seed) -> np.random.Generator:
    """A numpy Generator from an int seed, a Generator, or None (fresh entropy)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0):
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be a non-negative integer, a numpy Generator or None, got {seed!r}")


def check_dense_size(m: int, n: int, *, what: str, alternative: str,
                     limit: int | None = None) -> None:
    """Refuse an m×n dense allocation above ``limit`` entries (default DENSE_LIMIT).

    ``limit`` is the user's ``dense_limit`` argument: ``None`` or an integer >= 0.
    The bytes themselves are checked against the available memory (:func:`fastpu._core.memory.check_alloc`).
    """
    limit = DENSE_LIMIT if limit is None else check_int(limit, name="dense_limit", minimum=0)
    if int(m) * int(n) > limit:
        gib = int(m) * int(n) * 8 / 2**30
        raise ValueError(
            f"{what} needs a dense {m}×{n} matrix ({gib:.1f} GiB), above the limit of {limit:,} entries; "
            f"use {alternative}, or raise dense_limit if the memory is really there"
        )
    memory.check_alloc(int(m) * int(n) * 8, what=what, names=("dense_limit",))


def check_users(users: ArrayLike | None, m: int) -> IntArray:
    """Row indices as a 1-d int64 array inside [0, m); ``None`` means all rows."""
    if users is None:
        return np.arange(m, dtype=INDEX_DTYPE)
    return check_indices(users, name="users", size=m)


def transpose_csr(Y: Sparse) -> Sparse:
    """The transpose of a canonical CSR as canonical CSR (built once, reused for column sums)."""
    T = sp.csr_array(Y.T)
    T.sort_indices()
    return sp.csr_array(
        (T.data.astype(VALUE_DTYPE, copy=False), T.indices.astype(INDEX_DTYPE, copy=False),
         T.indptr.astype(INDEX_DTYPE, copy=False)),
        shape=T.shape,
    )


def check_square_csr(A: Any, *, name: str, nonnegative: bool = False) -> Sparse:
    """A square sparse matrix as canonical CSR (``check_csr`` plus a square shape)."""
    A = check_csr(A, name=name, nonnegative=nonnegative)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} has shape {_shape_str(A.shape)}, expected a square matrix")
    return A


def check_indices(idx: ArrayLike, *, name: str, size: int, size_from: str | None = None) -> IntArray:
    """Integer positions as a 1-d int64 array inside [0, size) (a scalar becomes length 1)."""
    if isinstance(idx, str) or idx is None:
        raise TypeError(f"{name} must be integer indices, got {type(idx).__name__}")
    try:
        arr = np.asarray(idx)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-d sequence of integer indices, got {type(idx).__name__}") from exc
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.size == 0 and arr.ndim == 1 and arr.dtype.kind in "fbO":
        arr = arr.astype(INDEX_DTYPE)          # [] and np.array([]) are an empty selection
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer indices, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of indices, got shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        raise ValueError(f"{name} must lie in [0, {size}), got values in [{arr.min()}, {arr.max()}]"
                         + (f" ({size_from})" if size_from else ""))
    return np.ascontiguousarray(arr, dtype=INDEX_DTYPE)


def check_ids(ids: ArrayLike, *, name: str, size: int, expected: str) -> np.ndarray:
    """Identifiers as a 1-d array of ``size`` distinct values; ``expected`` says what they label."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.shape[0] != size:
        raise ValueError(f"{name} has shape {arr.shape}, expected ({size},): {expected}")
    try:
        s = np.sort(arr, kind="stable")
        same = np.flatnonzero(s[1:] == s[:-1])
        dups = s[same[:1]].tolist()
    except TypeError:                    # an object array of ids that do not compare (str and int)
        seen: set[Any] = set()
        dups = []
        for x in arr.tolist():
            if x in seen:
                dups = [x]
                break
            seen.add(x)
    if dups:
        dup = dups[0]
        where = np.flatnonzero(arr == dup)[:2].tolist()
        raise ValueError(f"{name} has the id {dup!r} more than once (positions {where[0]} and {where[1]}); "
                         f"expected unique ids, {expected}")
    return arr


def check_finite_result(value: Any, *, what: str, names: tuple[str, ...]) -> float:
    """Return a computed float, or raise ValueError naming the inputs when it overflowed."""
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(
            f"{what} is {value} (overflow): the inputs {', '.join(names)} are too large in magnitude; "
            "expected values whose squares and products stay finite"
        )
    return value


