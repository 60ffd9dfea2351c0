"""implicit's recommender interface over a fastpu model.

Code written for implicit (``model.fit(user_items)``, ``model.recommend(userid,
user_items[userid])``, ``model.similar_items(itemid)``, ``model.save(path)``, ...) runs on a
fastpu model through :class:`Recommender`, which fits ocmf (or any of fastpu's methods) or wraps
a model fitted already. Every call goes to fastpu's public functions (:func:`fastpu.recommend`,
:func:`fastpu.similar_items`, :func:`fastpu.fold_in`, :func:`fastpu.partial_fit_users`, ...);
what this module adds is implicit's conventions where they differ from fastpu's own:

- users and items are row and column numbers, as in implicit (a wrapped model's ids are not
  used); ``recommend`` takes ``user_items`` with one row per requested user and leaves out
  those items (``filter_already_liked_items``), not the model's record of its training data;
- ``recommend`` returns ``min(N, candidates)`` items per user: the items the user has liked
  come last (score ``-FLT_MAX``, as implicit gives them) instead of being dropped;
- ``similar_items`` / ``similar_users`` return the query first (similarity 1), then its
  neighbours, where fastpu leaves the query out;
- a user or item number outside the model is an ``IndexError``; ``fit`` on a COO or LIL matrix
  warns with a :class:`ParameterWarning` and converts it; ``partial_fit_users`` /
  ``partial_fit_items`` with numbers past the end fill the gap with empty rows;
- ``save`` appends ``.npz`` to a path without it, and ``load`` reads it back.

The differences that remain are listed in docs/serving.md.
"""

from __future__ import annotations

import importlib
import time
import warnings
from typing import Any, Callable, cast

import numpy as np
import scipy.sparse as sp

from fastpu import model as _serving
from fastpu._core import registry
from fastpu._core.factorization import Factorization

__all__ = ["ParameterWarning", "Recommender"]


def _implicit_warning() -> type[Warning]:
    """implicit's ParameterWarning when implicit is installed (code that catches it catches
    this module's too), else UserWarning: implicit is not needed to use this module."""
    try:
        module = importlib.import_module("implicit.utils")
    except ImportError:
        return UserWarning
    return cast(type[Warning], getattr(module, "ParameterWarning", UserWarning))


_Base = _implicit_warning()

#: implicit's score for the items it ranks last (those a user has liked)
_LAST = float(np.finfo(np.float32).min)
#: where an unfitted Recommender keeps its settings in a model file
_SETTINGS = "fastpu.compat.implicit"


class ParameterWarning(_Base):  # type: ignore[misc, valid-type]
    """An argument was taken in another form than the one expected (implicit's warning; a
    subclass of ``implicit.utils.ParameterWarning`` when implicit is installed)."""


def _is_csr(M: Any) -> bool:
    return sp.issparse(M) and M.format == "csr"


def _as_implicit(ids: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """implicit's dtypes: int32 numbers (its metrics read them as C ints) and float32 scores."""
    if ids.size == 0 or ids.max() < 2**31:
        ids = ids.astype(np.int32)
    return ids, scores.astype(np.float32)


class Recommender:
    """implicit's ``RecommenderBase`` interface over a fastpu model.

    Parameters
    ----------
    factors : int
        The rank (implicit's ``factors``; fastpu's ``k``).
    iterations : int
        Outer iterations of the fit (fastpu's ``n_iter``).
    random_state : int or None
        The fit's seed (fastpu's ``seed``).
    method : str
        The fastpu method ``fit`` trains: ``"ocmf"`` (default), ``"fbgd"``, ``"csrr"`` or
        ``"homf"``.
    model : Factorization, optional
        A fitted fastpu model to serve; ``fit`` replaces it.
    **params
        Further keyword arguments of the method's fit (``loss="square"``, ``lam=...``).

    Attributes
    ----------
    model : Factorization or None
        The fastpu model behind the interface (None before ``fit``).
    user_factors, item_factors : ndarray
        The model's factors (implicit's attributes).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.compat.implicit import Recommender
    >>> user_items = sp.csr_matrix(np.kron(np.eye(2), np.ones((3, 3))) - np.eye(6))
    >>> rec = Recommender(factors=2, iterations=5, loss="square", rho=0.1, lam=0.1)
    >>> rec.fit(user_items, show_progress=False)
    >>> ids, scores = rec.recommend(0, user_items[0], N=1)
    >>> ids.tolist()                      # user 0's one unliked item of its block
    [0]
    >>> ids, _ = rec.similar_items(0, N=3)
    >>> int(ids[0]), sorted(ids[1:].tolist())      # the query first, then its block
    (0, [1, 2])
    """

    def __init__(self, factors: int = 64, iterations: int = 15, random_state: int | None = 0, *,
                 method: str = "ocmf", model: Factorization | None = None, **params: Any) -> None:
        self.factors = factors
        self.iterations = iterations
        self.random_state = random_state
        self.method = method
        self.params = dict(params)
        self.model = model

    # ------------------------------------------------------------------ fitting

    def fit(self, user_items: Any, show_progress: bool = True,
            callback: Callable[..., Any] | None = None) -> None:
        """Fit the method on a users × items matrix of positives.

        Parameters
        ----------
        user_items : scipy.sparse matrix, shape (users, items)
            The positives (stored values are their weights). A matrix that is not CSR is
            converted, with a :class:`ParameterWarning`.
        show_progress : bool
            Show the fit's progress (fastpu's ``verbose``).
        callback : callable, optional
            Called after each iteration as ``callback(iteration, seconds)``, its result ignored.

        Raises
        ------
        ValueError, TypeError
            As the method's fit (for example negative values, or a ``method`` that is not one
            of fastpu's methods).
        """
        if not _is_csr(user_items):
            kind = type(user_items).__name__
            start = time.perf_counter()
            user_items = sp.csr_matrix(user_items)
            warnings.warn(f"fit expects CSR input and was passed {kind}; converting it to CSR took "
                          f"{time.perf_counter() - start:.3g} s", ParameterWarning, stacklevel=2)
        methods = registry.names("method")
        if self.method not in methods:
            raise ValueError(f"method must be one of {', '.join(map(repr, methods))}, got {self.method!r}")
        fit = importlib.import_module(f"fastpu.{self.method}").fit

        def each(info: dict[str, Any]) -> None:
            if callback is not None:
                callback(info["iter"] - 1, info.get("seconds", 0.0))

        self.model = fit(user_items, self.factors, n_iter=self.iterations, seed=self.random_state,
                         verbose=bool(show_progress), callback=each, **self.params)

    # ------------------------------------------------------------------ helpers

    def _fitted(self) -> Factorization:
        if self.model is None:
            raise ValueError("this Recommender is not fitted: call fit(user_items) first, or "
                             "pass model= a fitted fastpu model")
        return self.model

    @property
    def user_factors(self) -> np.ndarray:
        """The user factors (m × k) of the model."""
        return self._fitted().user_factors

    @property
    def item_factors(self) -> np.ndarray:
        """The item factors (n × k) of the model."""
        return self._fitted().item_factors

    @staticmethod
    def _numbers(values: Any, size: int, name: str) -> np.ndarray:
        """``values`` as int64 numbers in [0, size), else implicit's IndexError."""
        arr = np.atleast_1d(np.asarray(values))
        if arr.size == 0:
            return arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be integer numbers, got dtype {arr.dtype}")
        if arr.min() < 0 or arr.max() >= size:
            raise IndexError(f"some {name} are not in the model: expected numbers in [0, {size}), "
                             f"got values in [{arr.min()}, {arr.max()}]")
        return arr.astype(np.int64)

    @staticmethod
    def _one_filter(keep: Any, drop: Any, name: str, what: str) -> None:
        if keep is not None and drop is not None and len(drop):
            raise ValueError(f"can't set both {name} and filter_{name} in {what}")

    # ------------------------------------------------------------------ recommend

    def recommend(self, userid: Any, user_items: Any, N: int = 10,
                  filter_already_liked_items: bool = True, filter_items: Any = None,
                  recalculate_user: bool = False, items: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The top ``N`` items of a user (a number) or of each of an array of users.

        Parameters
        ----------
        userid : int or array-like of int
            User numbers.
        user_items : scipy.sparse CSR matrix, shape (number of users asked, items)
            Row r holds the items of the r-th user asked: left out of its results (ranked
            last) with ``filter_already_liked_items``, and what its factor is recomputed
            from with ``recalculate_user``.
        N : int
            Items per user.
        filter_already_liked_items : bool
            Rank the items of ``user_items`` last (score ``-FLT_MAX``).
        filter_items : array-like of int, optional
            Items never returned.
        recalculate_user : bool
            Compute each user's factor from its row of ``user_items`` (:func:`fastpu.fold_in`)
            instead of the fitted one.
        items : array-like of int, optional
            Rank only these items (not with ``filter_items``).

        Returns
        -------
        ids, scores : ndarray
            1-d for one user, else one row per user; ``min(N, number of candidates)`` each.

        Raises
        ------
        ValueError
            If ``user_items`` is not CSR or has not one row per user, or both ``items`` and
            ``filter_items`` are given.
        IndexError
            If a user or item number is not in the model.
        """
        model = self._fitted()
        m, n = model.shape
        single = np.isscalar(userid)
        users = np.atleast_1d(np.asarray(userid))
        if filter_already_liked_items or recalculate_user:
            if not _is_csr(user_items):
                raise ValueError("user_items needs to be a CSR sparse matrix")
            if user_items.shape[0] != users.size:
                raise ValueError(f"user_items must contain 1 row for every user in userid: got "
                                 f"{user_items.shape[0]} rows for {users.size} user(s)")
        self._one_filter(items, filter_items, "items", "recommend")
        if items is not None:
            items = self._numbers(items, n, "itemids in items")
        if filter_items is not None:
            filter_items = self._numbers(filter_items, n, "itemids in filter_items")
        if recalculate_user:
            target = _serving.fold_in(model, sp.csr_array(user_items))
            rows = np.arange(users.size, dtype=np.int64)
        else:
            target = model
            rows = self._numbers(users, m, "userids")
        seen = None
        if filter_already_liked_items:
            C = sp.csr_array(user_items).tocoo()
            seen = sp.csr_array((np.ones(C.nnz), (rows[C.row], C.col)), shape=target.shape)
        candidates = n if items is None else np.unique(items).size
        if filter_items is not None:
            candidates -= np.unique(filter_items).size
        width = max(0, min(int(N), candidates))
        if width == 0:
            ids, scores = np.zeros((users.size, 0), np.int64), np.zeros((users.size, 0))
        else:
            ids, scores = _serving.recommend(target, seen, rows, n=width, exclude_seen=False,
                                             ids=False, items=items, exclude=filter_items)
            short = np.flatnonzero((ids < 0).any(axis=1))
            if short.size:                   # the liked items come last, as implicit ranks them
                every, _ = _serving.recommend(target, None, rows[short], n=width, exclude_seen=False,
                                              ids=False, items=items, exclude=filter_items)
                for r, row in zip(short, every):
                    have = ids[r] >= 0
                    ranked = set(ids[r, have].tolist())
                    rest = [j for j in row if j >= 0 and j not in ranked]
                    ids[r, ~have] = rest[:int((~have).sum())]
                    scores[r, ~have] = _LAST
        ids, scores = _as_implicit(ids, scores)
        return (ids[0], scores[0]) if single else (ids, scores)

    def recalculate_user(self, userid: Any, user_items: Any) -> np.ndarray:
        """Users' factors computed from their items (:func:`fastpu.fold_in`), one row per row of
        ``user_items`` (1-d for a scalar ``userid``).

        Parameters
        ----------
        userid : int or array-like of int
            The users (only their number matters: one row of ``user_items`` each).
        user_items : scipy.sparse matrix, shape (number of users, items)

        Returns
        -------
        ndarray
        """
        U = _serving.fold_in(self._fitted(), sp.csr_array(user_items)).user_factors
        return U[0] if np.isscalar(userid) else U

    # ------------------------------------------------------------------ similar

    def _similar(self, side: str, query: Any, N: int, keep: Any, drop: Any,
                 target: Factorization | None = None) -> tuple[np.ndarray, np.ndarray]:
        model = self._fitted() if target is None else target
        size = model.shape[0 if side == "user" else 1]
        single = np.isscalar(query)
        q = self._numbers(query, size, f"{side}ids")
        self._one_filter(keep, drop, f"{side}s", f"similar_{side}s")
        if keep is not None:
            keep = self._numbers(keep, size, f"{side}ids in {side}s")
        if drop is not None:
            drop = self._numbers(drop, size, f"{side}ids in filter_{side}s")
        cand = np.arange(size) if keep is None else np.unique(keep)
        if drop is not None and drop.size:
            cand = cand[~np.isin(cand, drop)]
        width = max(0, min(int(N), cand.size))
        F = model.item_factors if side == "item" else model.user_factors
        ids = np.full((q.size, width), -1, dtype=np.int64)
        scores = np.full((q.size, width), _LAST)
        if width:
            if side == "item":
                nb, sc = _serving.similar_items(model, q, n=width, ids=False, exclude=drop, items=keep)
            else:
                nb, sc = _serving.similar_users(model, q, n=width, ids=False, exclude=drop, users=keep)
            inside = np.isin(q, cand)
            for r, one in enumerate(q):
                if inside[r]:                # implicit gives the query first
                    norm = float(np.linalg.norm(F[one]))
                    ids[r] = np.concatenate([[one], nb[r, :width - 1]])
                    scores[r] = np.concatenate([[1.0 if norm > 0 else 0.0], sc[r, :width - 1]])
                else:
                    ids[r], scores[r] = nb[r], sc[r]
        ids, scores = _as_implicit(ids, scores)
        return (ids[0], scores[0]) if single else (ids, scores)

    def similar_items(self, itemid: Any, N: int = 10, recalculate_item: bool = False,
                      item_users: Any = None, filter_items: Any = None,
                      items: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The query item(s) first, then the most similar items by cosine.

        Parameters
        ----------
        itemid : int or array-like of int
        N : int
            Items per query, the query included.
        recalculate_item : bool
            Compute the query items' factors from ``item_users`` (:func:`fastpu.partial_fit_items`)
            instead of the fitted ones.
        item_users : scipy.sparse matrix, shape (number of queries, users), optional
            With ``recalculate_item``: the users of each query item.
        filter_items : array-like of int, optional
            Items never returned.
        items : array-like of int, optional
            Rank only these (not with ``filter_items``).

        Returns
        -------
        ids, scores : ndarray
            1-d for one query, else one row per query.

        Raises
        ------
        IndexError
            If an item number is not in the model.
        ValueError
            If both ``items`` and ``filter_items`` are given, or ``recalculate_item`` without
            ``item_users``.
        NotImplementedError
            With ``recalculate_item`` for a method whose item side is not a row problem (fBGD,
            HOMF: :func:`fastpu.partial_fit_items` says why).
        """
        target = None
        if recalculate_item:
            if item_users is None:
                raise ValueError("recalculate_item=True needs item_users: the users of each item")
            q = self._numbers(itemid, self._fitted().shape[1], "itemids")
            try:
                target = _serving.partial_fit_items(self._fitted(), sp.csr_array(item_users),
                                                    item_ids=q)
            except ValueError as exc:
                if "refuses" not in str(exc):
                    raise
                raise NotImplementedError(str(exc)) from None
        return self._similar("item", itemid, N, items, filter_items, target)

    def similar_users(self, userid: Any, N: int = 10, filter_users: Any = None,
                      users: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The query user(s) first, then the most similar users by cosine.

        Parameters
        ----------
        userid : int or array-like of int
        N : int
            Users per query, the query included.
        filter_users : array-like of int, optional
            Users never returned.
        users : array-like of int, optional
            Rank only these (not with ``filter_users``).

        Returns
        -------
        ids, scores : ndarray
            1-d for one query, else one row per query.

        Raises
        ------
        IndexError
            If a user number is not in the model.
        ValueError
            If both ``users`` and ``filter_users`` are given.
        """
        return self._similar("user", userid, N, users, filter_users)

    # ------------------------------------------------------------------ partial fits

    def _partial(self, side: str, ids: Any, rows: Any) -> None:
        model = self._fitted()
        size = model.shape[0 if side == "user" else 1]
        nums = np.atleast_1d(np.asarray(ids))
        if nums.dtype.kind not in "iu" or (nums.size and nums.min() < 0):
            raise IndexError(f"{side}ids must be non-negative integer numbers, got {nums.tolist()[:5]}")
        rows = sp.csr_array(rows)
        if rows.shape[0] != nums.size:
            raise ValueError(f"{side}_{'items' if side == 'user' else 'users'} must contain 1 row "
                             f"for every {side} in {side}ids: got {rows.shape[0]} rows for "
                             f"{nums.size} {side}(s)")
        known = getattr(model, f"{side}_ids")
        # implicit grows the factors to the largest number given: the gap gets empty rows
        gap = np.setdiff1d(np.arange(size, int(nums.max(initial=size - 1)) + 1), nums)
        if gap.size:
            rows = sp.vstack([rows, sp.csr_array((gap.size, rows.shape[1]))], format="csr")
            nums = np.concatenate([nums, gap])
        if known is not None:
            if (nums >= size).any():
                raise ValueError(f"this model has {side} ids: append {side}s by id with "
                                 f"fastpu.partial_fit_{side}s(model, rows, {side}_ids=[...])")
            nums = np.asarray(known)[nums]
        fit = _serving.partial_fit_users if side == "user" else _serving.partial_fit_items
        self.model = fit(model, rows, nums)

    def partial_fit_users(self, userids: Any, user_items: Any) -> None:
        """Recompute the listed users' factors from their items; numbers past the end append
        users (a gap is filled with users that have no items).

        Parameters
        ----------
        userids : array-like of int
        user_items : scipy.sparse matrix, shape (len(userids), items)
            Each user's items: all of them (old and new), as :func:`fastpu.partial_fit_users`
            takes them.

        Raises
        ------
        IndexError
            If a user number is negative or not an integer.
        ValueError
            If ``user_items`` has not one row per user, or as :func:`fastpu.partial_fit_users`.
        """
        self._partial("user", userids, user_items)

    def partial_fit_items(self, itemids: Any, item_users: Any) -> None:
        """Recompute the listed items' factors from their users; numbers past the end append
        items (a gap is filled with items that have no users).

        Parameters
        ----------
        itemids : array-like of int
        item_users : scipy.sparse matrix, shape (len(itemids), users)

        Raises
        ------
        IndexError
            If an item number is negative or not an integer.
        ValueError
            If ``item_users`` has not one row per item, or as :func:`fastpu.partial_fit_items`
            (fBGD and HOMF refuse: their item side is not a row problem).
        """
        self._partial("item", itemids, item_users)

    # ------------------------------------------------------------------ files

    def save(self, file: Any) -> None:
        """Write the model to a fastpu model file (``.npz`` appended to a path without it).

        Parameters
        ----------
        file : str, os.PathLike or writable binary file object

        Raises
        ------
        TypeError, ValueError
            As :meth:`fastpu.Factorization.save`.
        """
        if isinstance(file, str) and not file.endswith(".npz"):
            file += ".npz"
        model = self.model
        if model is None:                    # the settings of an unfitted recommender
            settings = dict(factors=self.factors, iterations=self.iterations,
                            random_state=self.random_state, method=self.method, params=self.params)
            model = Factorization(np.zeros((0, 0)), np.zeros((0, 0)), params={_SETTINGS: settings})
        model.save(file)

    @classmethod
    def load(cls, fileobj_or_path: Any) -> "Recommender":
        """Read a file written by :meth:`save` (or any fastpu model file).

        Parameters
        ----------
        fileobj_or_path : str, os.PathLike or binary file object
            ``.npz`` is appended to a path without it.

        Returns
        -------
        Recommender

        Raises
        ------
        ValueError
            If the file is not a fastpu model file (as :func:`fastpu.load_model`).
        """
        if isinstance(fileobj_or_path, str) and not fileobj_or_path.endswith(".npz"):
            fileobj_or_path += ".npz"
        model = _serving.load_model(fileobj_or_path)
        settings = model.params.get(_SETTINGS)
        if model.method == "" and model.shape == (0, 0) and isinstance(settings, dict):
            return cls(settings["factors"], settings["iterations"], settings["random_state"],
                       method=settings["method"], **settings["params"])
        return cls(model.user_factors.shape[1], int(model.params.get("n_iter", 15)),
                   model.params.get("seed", 0), method=model.method, model=model)

    def __repr__(self) -> str:
        state = "unfitted" if self.model is None else \
            f"{self.model.shape[0]} users × {self.model.shape[1]} items"
        return (f"Recommender(method={self.method!r}, factors={self.factors}, "
                f"iterations={self.iterations}, {state})")
