"""The CSRR model type: scores are a low-rank part plus a sparse part on the training positives."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as Vd
from fastpu._core.factorization import Factorization
from fastpu._core.hints import ArrayLike, Sparse


@dataclasses.dataclass(frozen=True)
class CSRRModel(Factorization):
    """A fitted CSRR model: score(i, j) = U_ij + V_ij.

    Attributes
    ----------
    U : ndarray, shape (m, n) or None
        The dense low-rank part (variants ``"I"``/``"II"``); ``None`` for ``"e"``, where
        U = P Qᵀ with ``P = user_factors`` and ``Q = item_factors``.
    V : scipy.sparse.csr_array, shape (m, n)
        The sparse part; its stored entries are a subset of the training positives Ω+.
    variant : str
        ``"I"``, ``"II"`` or ``"e"``.

    For ``"I"``/``"II"`` the ``user_factors``/``item_factors`` are L·√s and Rᵀ·√s of the
    last proximal iterate Ũ = L diag(s) R (its rank is ``len(s)``).
    """

    U: np.ndarray | None = None
    V: sp.csr_array | None = None
    variant: str = ""
    #: the part the model's shape comes from, for the error of a model whose parts disagree
    _shape_part: ClassVar[str] = "model.V"

    @property
    def shape(self) -> tuple[int, int]:
        """(number of users, number of items)."""
        return tuple(self._sparse_part().shape)

    def _sparse_part(self) -> Sparse:
        if self.V is None:
            raise ValueError("this CSRRModel has no sparse part (V is None); a CSRR model needs "
                             "the m×n sparse V that csrr.fit returns")
        return self.V

    def scores_are_products(self) -> bool:
        """False for CSRR-I/II, whose low-rank part is the dense U (the factors are its SVD's);
        CSRR-e's scores are P Qᵀ + V, whose factors have one width.

        Returns
        -------
        bool
        """
        return self.U is None

    @property
    def P(self) -> np.ndarray:
        """User factors (m×k); U = P Qᵀ for variant ``"e"``."""
        return self.user_factors

    @property
    def Q(self) -> np.ndarray:
        """Item factors (n×k); U = P Qᵀ for variant ``"e"``."""
        return self.item_factors

    def scores(self, users: ArrayLike | None = None) -> np.ndarray:
        """Dense score rows U[users] + V[users].

        Parameters
        ----------
        users : array-like of int, optional
            Row indices in ``[0, m)`` (all users when ``None``).

        Returns
        -------
        ndarray, shape (len(users), n)

        Raises
        ------
        TypeError, ValueError
            If ``users`` are not valid row indices.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from fastpu import csrr
        >>> Y = sp.random_array((10, 8), density=0.3, random_state=0, format="csr")
        >>> csrr.fit(Y, variant="e", k=2, n_iter=3).scores([0, 2]).shape
        (2, 8)
        """
        users = Vd.check_users(users, self.shape[0])
        Vs = self._sparse_part()
        m, n = self.user_factors.shape[0], self.item_factors.shape[0]
        if Vs.shape != (m, n) or (self.U is not None and getattr(self.U, "shape", None) != (m, n)):
            raise ValueError(f"model.V has shape {Vs.shape} and model.U "
                             f"{getattr(self.U, 'shape', None)}; expected {m}×{n} (one row per row "
                             "of the user factors, one column per row of the item factors)")
        if self.U is not None:
            out = np.array(self.U[users], dtype=np.float64)
        else:
            out = (np.asarray(self.user_factors[users], dtype=np.float64)
                   @ np.asarray(self.item_factors, dtype=np.float64).T)   # as Factorization.scores
        # rows of V as CSR whatever its format (a CSC V's pointers are columns' pointers)
        Vs = (Vs if Vs.format == "csr" else sp.csr_array(Vs))[users]
        rows = np.repeat(np.arange(users.size), np.diff(Vs.indptr))
        np.add.at(out, (rows, Vs.indices), Vs.data)      # a repeated index adds (it did once)
        return out
