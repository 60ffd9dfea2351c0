"""The result type every method returns, and the decorator that lets a fit take a Dataset.

``Factorization`` holds the factors, history, params and extras of a fitted model and scores
users in memory-bounded blocks. It sits below the methods (each fit returns one); what is done
with a model afterwards — files, serving, fold-in, evaluation — lives in :mod:`fastpu.model` and
:mod:`fastpu.model_selection`, which the model's own methods call on first use.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Callable, Iterator, TypeVar, cast

import numpy as np
import scipy.sparse as sp

from fastpu._core import registry
from fastpu._core import validation as V
from fastpu._core.names import did_you_mean, fit_names, public_where
from fastpu._core.dataset import Dataset
from fastpu._core.hints import ArrayLike, FloatArray, IntArray, PathOrFile

# Scores are produced in blocks of users so that nothing m×n is ever allocated.
_BLOCK_BYTES = 64 * 2**20


@dataclasses.dataclass(frozen=True)
class Factorization:
    """A fitted model: score(i, j) = user_factors[i] · item_factors[j] (+ method extras).

    Attributes
    ----------
    user_factors : ndarray, shape (m, k)
        One row per user (for feature models, ``X @ W``).
    item_factors : ndarray, shape (n, k)
        One row per item (for feature models, ``Z @ H``).
    history : list of dict
        One dict per outer iteration with at least ``iter``, ``objective``, ``seconds``.
    params : dict
        The arguments the model was fitted with.
    method : str
        Name of the method that produced it (``"ocmf"``, ``"fbgd"``, ...).
    extras : dict
        Method-specific parts (``W``, ``H`` for feature models, ...).
    user_ids, item_ids : ndarray or None
        The original identifier of each row / column when the model was fitted on a
        :class:`fastpu.datasets.Dataset`; ``None`` when it was fitted on a bare matrix.
    seen : scipy.sparse.csr_array of bool, shape (m, n), or None
        The training positives: the stored nonzero entries of the matrix the model was fitted
        on (its pattern only), which :func:`fastpu.recommend` leaves out by default. A fold-in
        or a partial fit records its new rows' positives here. ``None`` for a model built by
        hand, one read from a file written without them, or one whose positives were dropped
        (``dataclasses.replace(model, seen=None)``, to save memory and file space); any
        sparse matrix of the model's shape may be set here (its stored entries count).

    Methods whose scores are not a plain product subclass this and override
    :meth:`scores`.
    """

    user_factors: np.ndarray
    item_factors: np.ndarray
    history: list = dataclasses.field(default_factory=list)
    params: dict = dataclasses.field(default_factory=dict)
    method: str = ""
    extras: dict = dataclasses.field(default_factory=dict)
    user_ids: np.ndarray | None = None
    item_ids: np.ndarray | None = None
    seen: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # a dataclass subclass would get a generated repr printing every array in full;
        # keep the short one unless the subclass writes its own
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = Factorization.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        """A one-line summary (the arrays, history and params are left out)."""
        try:
            m, n = self.shape
            shape = f"{m} users × {n} items"
        except (AttributeError, ValueError, IndexError):
            shape = "shape unknown"
        uf = self.user_factors
        try:
            products = self.scores_are_products()
        except Exception:                      # a repr never raises
            products = True
        if products:
            k = uf.shape[1] if getattr(uf, "ndim", 0) == 2 else "?"
            width = f"k={k}"
        else:                                  # an item-item model: no user vectors, B is n × n
            width = f"item_factors={brief(self.item_factors)}"
            uf = self.item_factors
        ids = "yes" if self.user_ids is not None or self.item_ids is not None else "no"
        seen = getattr(self.seen, "nnz", None)
        parts = [f"method={self.method!r}", shape, width,
                 f"dtype={getattr(uf, 'dtype', type(uf).__name__)}",
                 f"history={len(self.history)} {'entry' if len(self.history) == 1 else 'entries'}",
                 f"ids={ids}",
                 f"seen={'none' if seen is None else f'{seen} positives'}",
                 f"extras={sorted(map(str, self.extras))}"]
        base = {f.name for f in dataclasses.fields(Factorization)}
        parts += [f"{f.name}={brief(getattr(self, f.name))}" for f in dataclasses.fields(self)
                  if f.name not in base]
        return f"{type(self).__name__}({', '.join(parts)})"

    @property
    def shape(self) -> tuple[int, int]:
        """(number of users, number of items)."""
        return (self.user_factors.shape[0], self.item_factors.shape[0])

    def scores_are_products(self) -> bool:
        """Whether the scores are ``user_factors @ item_factors.T`` (then both have k columns).

        Models whose scores add or use other parts (CSRR-I/II's dense U, an item-item model's
        X B) return False.

        Returns
        -------
        bool
        """
        return True

    @property
    def W(self) -> Any:
        """User-side coefficients (``d×k`` with features, ``(d+1)×k`` with ocmf's intercept,
        else the user factors)."""
        return self.extras.get("W", self.user_factors)

    @property
    def H(self) -> Any:
        """Item-side coefficients (``e×k`` with features, ``(e+1)×k`` with ocmf's intercept,
        else the item factors)."""
        return self.extras.get("H", self.item_factors)

    def scores(self, users: ArrayLike | None = None) -> np.ndarray:
        """Dense score rows for ``users`` (all users when ``None``), in float64.

        The product is taken in float64 whatever the factors' dtype: a float32 product rounds
        each score to about 7 digits, differently for one user than for a block of users (a
        matrix-vector and a matrix-matrix product sum in another order), which could reorder
        two items whose scores are that close; in float64 a user's ranking does not depend on
        the other users it is scored with, short of scores equal to 16 digits.

        Parameters
        ----------
        users : array-like of int, optional
            Row indices in ``[0, m)``.

        Returns
        -------
        ndarray of float64, shape (len(users), n)

        Raises
        ------
        TypeError
            If ``users`` is not integer.
        ValueError
            If ``users`` is not 1-d or has an index outside ``[0, m)``.
        """
        users = V.check_users(users, self.shape[0])
        U = np.asarray(self.user_factors[users], dtype=np.float64)
        return U @ np.asarray(self.item_factors, dtype=np.float64).T

    def save(self, path: PathOrFile) -> None:
        """Write the model to one ``.npz`` file that :func:`fastpu.load_model` reads back exactly.

        Everything is kept: factors, extras (sparse parts, feature coefficients), method,
        params, history, user and item ids, and the fastpu version that wrote the file.
        The file holds no pickled objects (it is read with ``allow_pickle=False``), and
        checksums catch a truncated or damaged file. The file is written under a temporary
        name and then renamed, so an interrupted save never leaves a half-written model.

        Parameters
        ----------
        path : str, os.PathLike or writable binary file object
            Target file, written as given (no ``.npz`` is appended).

        Raises
        ------
        TypeError
            If ``path`` is neither a path nor a file object, or is a text-mode file object;
            if the factors are not 2-d float numpy arrays; or the model holds a value a
            model file cannot represent (an object other than None, bool, int, float, str,
            list, tuple, dict, numpy scalar or array, scipy sparse matrix). A value of another
            type inside ``params`` (for example a ``numpy.random.Generator`` passed as
            ``seed``) is saved as its ``repr`` string with a warning instead.
        ValueError
            If ``path`` is empty or a directory, its folder does not exist or is not
            writable, or it is a closed or read-only file object; if the factors' widths
            differ or the ids are not one per row.

        Examples
        --------
        >>> import io, fastpu as fp
        >>> Y = fp.datasets.synthetic(20, 15, rank=2, density=0.2, seed=0).Y
        >>> model = fp.fbgd.fit(Y, 3, n_iter=2)
        >>> buf = io.BytesIO()
        >>> model.save(buf)
        >>> fp.load_model(io.BytesIO(buf.getvalue())).params == model.params
        True
        """
        registry.resolve("fastpu.model._io:save")(self, path)


    # ------------------------------------------------------------------ the user's handle
    # Each method calls the free function of the same name (which stays: the package is used
    # as plain functions). The serving code sits above this type in the layers, so it is found
    # by its dotted path through the registry, as ``save`` finds the file writer.

    def recommend(self, Y_seen: Any = None, users: Any = None, n: int = 10,
                  **kwargs: Any) -> Any:
        """Top-``n`` items per user, its training positives left out: :func:`fastpu.recommend`
        of this model.

        ``model.recommend(Y_seen, users, n=10, exclude_seen=..., ids=..., items=...,
        exclude=..., as_frame=..., approximate=...)`` takes what :func:`fastpu.recommend` takes
        after the model. A scalar user gives 1-d arrays, a list 2-d ones; a string is a user id;
        ``Y_seen`` adds items to leave out (a matrix, a Dataset or lists of item ids).

        Examples
        --------
        >>> import fastpu as fp
        >>> data = fp.datasets.from_pairs(["ann", "ann", "bob"], ["tea", "jam", "tea"])
        >>> model = fp.ocmf.fit(data, 2, n_iter=2)
        >>> model.recommend(users="bob")[0].tolist()
        ['jam']
        """
        return registry.resolve("fastpu.model:recommend")(self, Y_seen, users, n, **kwargs)

    def similar_items(self, query: Any, n: int = 10, **kwargs: Any) -> Any:
        """The ``n`` items closest to each query item by cosine: :func:`fastpu.similar_items`
        (``items=`` / ``exclude=`` filter the candidates; a string query is an item id).

        Examples
        --------
        >>> import numpy as np, fastpu as fp
        >>> m = fp.Factorization(np.eye(2), np.array([[1.0, 0], [0.9, 0.1], [0, 1.0]]))
        >>> m.similar_items(0, n=1)[0]
        array([1])
        """
        return registry.resolve("fastpu.model:similar_items")(self, query, n, **kwargs)

    def similar_users(self, query: Any, n: int = 10, **kwargs: Any) -> Any:
        """The ``n`` users closest to each query user by cosine: :func:`fastpu.similar_users`
        (``users=`` / ``exclude=`` filter the candidates; a string query is a user id).

        Examples
        --------
        >>> import numpy as np, fastpu as fp
        >>> m = fp.Factorization(np.array([[1.0, 0], [0.9, 0.1], [0, 1.0]]), np.eye(2))
        >>> m.similar_users([0, 2], n=1)[0]
        array([[1],
               [1]])
        """
        return registry.resolve("fastpu.model:similar_users")(self, query, n, **kwargs)

    def fold_in(self, Y_new: Any = None, **kwargs: Any) -> Factorization:
        """Factors for new users from their positives (or item ids): :func:`fastpu.fold_in`.

        Examples
        --------
        >>> import fastpu as fp
        >>> data = fp.datasets.synthetic(40, 30, rank=2, density=0.2, seed=0)
        >>> model = fp.ocmf.fit(data.Y, 3, n_iter=2)
        >>> model.fold_in([[1, 5, 7], [2]]).user_factors.shape
        (2, 3)
        """
        return registry.resolve("fastpu.model:fold_in")(self, Y_new, **kwargs)

    def partial_fit_users(self, new_rows: Any, user_ids: Any = None,
                          **kwargs: Any) -> Factorization:
        """This model with the listed users' rows recomputed (new ids appended):
        :func:`fastpu.partial_fit_users`."""
        return registry.resolve("fastpu.model:partial_fit_users")(
            self, new_rows, user_ids, **kwargs)

    def partial_fit_items(self, new_rows: Any, item_ids: Any = None,
                          **kwargs: Any) -> Factorization:
        """This model with the listed items' rows recomputed (new ids appended):
        :func:`fastpu.partial_fit_items`."""
        return registry.resolve("fastpu.model:partial_fit_items")(
            self, new_rows, item_ids, **kwargs)

    def evaluate(self, Y_train: Any, Y_test: Any, **kwargs: Any) -> Any:
        """Ranking metrics on held-out positives: :func:`fastpu.evaluate` (matrices or Datasets;
        ``as_frame=True`` gives a DataFrame).

        Examples
        --------
        >>> import fastpu as fp
        >>> data = fp.datasets.synthetic(60, 40, rank=3, density=0.15, seed=0)
        >>> Y_train, Y_test = fp.split.holdout(data.Y, seed=0)
        >>> res = fp.ocmf.fit(Y_train, 4, n_iter=3).evaluate(Y_train, Y_test, k=5)
        >>> sorted(res)[:3]
        ['auc', 'f1@5', 'map@5']
        """
        return registry.resolve("fastpu.model_selection.metrics:evaluate")(
            self, Y_train, Y_test, **kwargs)


def brief(value: Any) -> str:
    """A short text for a value in a repr: scalars and short strings as they are, arrays and
    matrices as their type and shape, containers as their type and length."""
    if value is None or isinstance(value, (bool, int, float, np.number)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
    shape = getattr(value, "shape", None)
    if shape == () and hasattr(value, "item"):
        return repr(value.item())
    if isinstance(shape, tuple):
        return f"<{type(value).__name__} {'×'.join(map(str, shape))}>"
    if isinstance(value, (list, tuple, dict, set)):
        return f"<{type(value).__name__} of {len(value)}>"
    return f"<{type(value).__name__}>"


_F = TypeVar("_F", bound=Callable[..., Any])


def accepts_dataset(fit: _F) -> _F:
    """Let a method's ``fit(Y, k, ...)`` take a :class:`~fastpu.datasets.Dataset` as ``Y``.

    The data set's ``Y`` is fitted as given (binarise first if its values are ratings you do
    not want as weights) and its ``user_ids`` / ``item_ids`` are kept on the model. Whatever
    ``Y`` is, the model records its training positives (:attr:`Factorization.seen`, see
    :func:`positives`), which :func:`fastpu.recommend` leaves out by default. A keyword
    argument the fit does not take is a TypeError naming the closest one it does.
    """
    names = fit_names(fit)            # None: it takes **kwargs and checks them itself
    where = public_where(fit)

    k_param = inspect.signature(fit).parameters.get("k")
    needs_k = k_param is not None and k_param.default is inspect.Parameter.empty

    @functools.wraps(fit)
    def wrapper(Y: Any, *args: Any, **kwargs: Any) -> Any:
        if names is not None:           # Python's own message, with the closest name it takes
            for key in kwargs:          # (first: n_factors=8 without k is a misnamed k)
                if key not in names:
                    raise TypeError(f"{where}() got an unexpected keyword argument {key!r}"
                                    f"{did_you_mean(key, names)}; it takes {', '.join(sorted(names))}")
        if needs_k and not args and "k" not in kwargs:
            raise TypeError(f"{where}() missing k, the rank (the number of latent factors of each "
                            f"user and item): e.g. {where}(Y, 32)")
        if not isinstance(Y, Dataset):
            return with_positives(fit(Y, *args, **kwargs), Y)
        model = with_positives(fit(Y.Y, *args, **kwargs), Y.Y)
        return dataclasses.replace(model, user_ids=Y.user_ids, item_ids=Y.item_ids)
    return cast(_F, wrapper)


def positives(Y: Any) -> Any:
    """The pattern of ``Y``'s positives: a canonical boolean CSR of ``Y``'s shape holding its
    stored nonzero entries (a stored zero weighs nothing in a fit, so it is no positive).

    The indices are int32 when they fit (4 bytes per positive, plus 1 for the boolean value and
    4 per row): about 100 MB for 20 million positives. ``Y`` is not changed.

    Parameters
    ----------
    Y : scipy.sparse matrix or array, shape (m, n)
        A training matrix, as a fit takes it.

    Returns
    -------
    scipy.sparse.csr_array of bool, shape (m, n)

    Raises
    ------
    TypeError
        If ``Y`` is not a 2-d scipy.sparse matrix.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu._core.factorization import positives
    >>> positives(sp.csr_array(np.array([[0, 2.0], [1.0, 0]]))).toarray()
    array([[False,  True],
           [ True, False]])
    """
    if not sp.issparse(Y) or Y.ndim != 2:
        raise TypeError(f"Y must be a 2-d scipy.sparse matrix, got {type(Y).__name__}")
    C = sp.csr_array(Y)                   # no copy for CSR input: nothing below writes to it
    if not V.has_canonical_indices(C.indptr, C.indices):
        C = sp.csr_array(C, copy=True)
        C.has_canonical_format = False    # the flag may say canonical after an in-place edit
        C.sum_duplicates()
    nnz = int(C.indptr[-1])
    keep = np.asarray(C.data[:nnz]) != 0
    m, n = C.shape
    wide = max(n, nnz) >= 2**31 - 1
    dtype = np.int64 if wide else np.int32
    if keep.all():
        indices = np.array(C.indices[:nnz], dtype=dtype)
        indptr = np.array(C.indptr, dtype=dtype)
    else:
        indices = np.ascontiguousarray(C.indices[:nnz][keep], dtype=dtype)
        kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        indptr = np.ascontiguousarray(kept[C.indptr], dtype=dtype)
    out = sp.csr_array((np.ones(indices.size, dtype=bool), indices, indptr), shape=(m, n))
    out.indices, out.indptr = indices, indptr       # keep int32 (scipy may widen them)
    out.has_canonical_format = True
    return out


_M = TypeVar("_M", bound="Factorization")


def with_positives(model: _M, Y: Any) -> _M:
    """``model`` with ``Y``'s positives as its ``seen`` (:func:`positives`), where it has none
    yet and ``Y`` is a sparse matrix of the model's shape (a tensor model's rows differ)."""
    if not isinstance(model, Factorization) or model.seen is not None or not sp.issparse(Y):
        return model
    try:
        same = tuple(Y.shape) == tuple(model.shape)
    except (AttributeError, ValueError, IndexError):
        same = False
    return dataclasses.replace(model, seen=positives(Y)) if same else model


def check_model(model: object) -> Factorization:
    """``model`` if it is a usable Factorization, else an error naming the part that is not.

    A model from a fit or :func:`fastpu.load_model` always passes; one built by hand must have
    2-d real numeric numpy factors with the same number of columns (CSRR's may differ), and
    ids, where given, one per row of its side (``seen`` is checked where it is used:
    :func:`check_seen`).
    """
    if not isinstance(model, Factorization):
        raise TypeError(f"model must be a fitted fastpu Factorization (from a fit or fastpu.load_model), "
                        f"got {type(model).__name__}")
    for side in ("user", "item"):
        F = getattr(model, f"{side}_factors")
        name = f"model.{side}_factors"
        if not isinstance(F, np.ndarray):
            raise TypeError(f"{name} must be a 2-d numpy array (rows × k), got {type(F).__name__}")
        V.check_real(F, name=name)
        if F.dtype.kind not in "fiub":
            raise TypeError(f"{name} must hold real numbers, got dtype {F.dtype}")
        if F.ndim != 2:
            raise ValueError(f"{name} must be 2-d (one row per {side}, k columns), got shape {F.shape}")
        ids = getattr(model, f"{side}_ids")
        if ids is not None and len(ids) != F.shape[0]:
            raise ValueError(f"model.{side}_ids has {len(ids)} ids, expected {F.shape[0]} (one per "
                             f"row of {name})")
    uf, itf = model.user_factors, model.item_factors
    if uf.shape[1] != itf.shape[1] and model.scores_are_products():
        raise ValueError(f"model has user_factors of width {uf.shape[1]} and item_factors of width "
                         f"{itf.shape[1]}; expected the same number of columns (k) on both sides")
    rows = (uf.shape[0], itf.shape[0])
    declared = tuple(model.shape)           # a subclass may take it from another part
    if declared != rows:
        part = getattr(type(model), "_shape_part", "model.shape")
        raise ValueError(f"{part} has shape {declared[0]}×{declared[1]}, expected "
                         f"{rows[0]}×{rows[1]}: one row per row of model.user_factors and one "
                         f"column per row of model.item_factors (the model's parts were edited)")
    return model


def check_seen(model: Factorization) -> Any:
    """``model.seen`` if it is None or a sparse matrix of the model's shape, else an error that
    says what is expected (what recommend and save need; a model whose rows were replaced by
    hand may hold another model's record)."""
    seen = model.seen
    if seen is not None:
        if not sp.issparse(seen) or seen.ndim != 2:
            raise TypeError(f"model.seen must be a scipy.sparse matrix of the training positives "
                            f"(or None), got {type(seen).__name__}")
        if tuple(seen.shape) != tuple(model.shape):
            raise ValueError(f"model.seen has shape {seen.shape[0]}×{seen.shape[1]}, expected "
                             f"{model.shape[0]}×{model.shape[1]} (model.shape): one row per user, "
                             "one column per item (set it with dataclasses.replace(model, "
                             "seen=...), or None)")
    return seen


def block_size(n_items: int) -> int:
    """Users per block of scores (about 64 MiB of float64 scores, 1 to 4096 users)."""
    return max(1, min(4096, _BLOCK_BYTES // (8 * max(1, n_items))))


def iter_score_blocks(model: Factorization,
                      users: IntArray) -> Iterator[tuple[IntArray, FloatArray]]:
    """Yield ``(rows, dense scores)`` for ``users`` in memory-bounded blocks (float64, as
    :meth:`Factorization.scores` gives them)."""
    step = block_size(model.shape[1])
    for start in range(0, users.size, step):
        rows = users[start:start + step]
        yield rows, np.ascontiguousarray(model.scores(rows), dtype=np.float64)


__all__ = ["Factorization", "accepts_dataset", "block_size", "check_model", "check_seen",
           "iter_score_blocks", "positives", "with_positives"]
