"""HOMF's graph (3) when its blocks mix ``exp`` with ``linear`` or ``step`` weights.

With one function for every block, :func:`fastpu.homf.transition_matrix` evaluates exp as
exp(x − max x): a common factor that the row normalisation cancels.  With g₁, g₂, g₃ mixing
exp and another function a global shift would not cancel against the other weights of a row,
but a factor per row does: every weight of row r is multiplied by exp(−s_r), where s_r is the
largest value of row r that goes through exp (and at least 0 when the row also has a linear
or step edge, so that neither kind of weight can overflow).  A = D⁻¹G is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core.hints import IntArray, Sparse


def _rows(M: Sparse, offset: int = 0) -> IntArray:
    return offset + np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))


def row_shifts(R: Sparse, Su: Sparse | None, Si: Sparse | None, g: str, g1: str,
               g3: str) -> np.ndarray:
    """s_r per node (m users then n items) for the blocks g₂(R), g₁(Su), g₃(Si)."""
    m, n = R.shape
    shift = np.full(m + n, -np.inf)
    pieces = [(_rows(R), R.data, g), (m + R.indices, R.data, g)]
    for S, fn, off in ((Su, g1, 0), (Si, g3, m)):
        if S is not None:
            pieces.append((_rows(S, off), S.data, fn))
    for rows, vals, fn in pieces:
        np.maximum.at(shift, rows, vals if fn == "exp" else np.zeros(vals.size))
    shift[~np.isfinite(shift)] = 0.0
    return shift


def _weights(M: Sparse, w: float, fn: str, row_shift: np.ndarray) -> Sparse:
    if fn == "exp":
        vals = np.exp(M.data - row_shift)
    elif fn == "linear":
        vals = M.data * np.exp(-row_shift)
    else:
        vals = (M.data > 0) * np.exp(-row_shift)
    return sp.csr_array((w * vals, M.indices, M.indptr), shape=M.shape)


def mixed_blocks(R: Sparse, Su: Sparse | None, Si: Sparse | None, alpha: float, g: str, g1: str,
                 g3: str) -> list[list[Any]]:
    """The 2×2 blocks of G (None for an absent side graph), each row scaled by exp(−s_r)."""
    m = R.shape[0]
    shift = row_shifts(R, Su, Si, g, g1, g3)
    blocks = [[None, _weights(R, 1.0 - alpha, g, shift[_rows(R)])],
              [_weights(R, 1.0 - alpha, g, shift[m + R.indices]).T, None]]
    if Su is not None and alpha > 0:
        blocks[0][0] = _weights(Su, alpha, g1, shift[_rows(Su)])
    if Si is not None and alpha > 0:
        blocks[1][1] = _weights(Si, alpha, g3, shift[_rows(Si, m)])
    return blocks
