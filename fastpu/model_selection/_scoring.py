"""What every ranking measure needs: the model checked, the relevant test entries, finite scores."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import factorization
from fastpu._core.factorization import Factorization, check_model
from fastpu._core.hints import Sparse


def model_shape(model: Any) -> tuple[int, ...]:
    """(users, items) of a usable model: a Factorization is checked whole (factors, widths, ids),
    anything else must at least score and have a shape."""
    if isinstance(model, Factorization):     # factors, widths and ids (a hand-built one too)
        check_model(model)
    if not (hasattr(model, "scores") and callable(model.scores) and hasattr(model, "shape")):
        raise TypeError(
            f"model must be a fitted fastpu Factorization (with .scores and .shape), got {type(model).__name__}"
        )
    return tuple(int(s) for s in model.shape)


def pattern(Y: Sparse) -> Sparse:
    """The 0/1 pattern of a canonical CSR (explicit zeros count as stored)."""
    return sp.csr_array((np.ones(Y.nnz), Y.indices, Y.indptr), shape=Y.shape)


def relevant(Y_train: Sparse, Y_test: Sparse) -> Sparse:
    """Canonical CSR pattern of the test entries that are not training entries."""
    Pt, Ptr = pattern(Y_test), pattern(Y_train)
    R = sp.csr_array(Pt - Pt.multiply(Ptr))
    R.eliminate_zeros()
    R.sort_indices()
    return sp.csr_array(
        (np.ones(R.nnz), R.indices.astype(np.int64), R.indptr.astype(np.int64)), shape=Y_test.shape
    )


def finite_block(S: np.ndarray, what: str = "model.scores") -> np.ndarray:
    if not np.all(np.isfinite(S)):
        bad = int(S.size - np.isfinite(S).sum())
        raise ValueError(f"{what} returned {bad} non-finite scores (NaN or inf); expected finite scores")
    return S


def score_block_rows(n_items: int) -> int:
    """Users per score block of :func:`~fastpu._core.factorization.iter_score_blocks` (for the
    memory check)."""
    return int(factorization.block_size(n_items))
