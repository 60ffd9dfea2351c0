"""HOMF's graph (3) and its transition matrix A = D⁻¹G, from checked settings.

:func:`transition` builds A from a canonical R and the :class:`~fastpu.homf._check.Graph` the
boundary returns; :func:`fastpu.homf.transition_matrix` checks its arguments and calls it, and
so do ``fit`` and the Dask form (which check theirs once, themselves).

With one function for every block, exp is evaluated as exp(x − max x): a common factor that
the row normalisation cancels.  With g₁, g₂, g₃ mixing
exp and another function a global shift would not cancel against the other weights of a row,
but a factor per row does: every weight of row r is multiplied by exp(−s_r), where s_r is the
largest value of row r that goes through exp (and at least 0 when the row also has a linear
or step edge, so that neither kind of weight can overflow).  A = D⁻¹G is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V_
from fastpu._core.hints import IntArray, Sparse
from fastpu.homf._check import Graph


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


def _apply_g(values: np.ndarray, g: str, shift: float) -> np.ndarray:
    if g == "exp":
        return np.exp(values - shift)
    if g == "linear":
        return values.copy()
    return (values > 0).astype(np.float64)


def transition(R: Sparse, graph: Graph) -> Sparse:
    """A = D⁻¹G of equation (3) for a canonical R and checked graph settings (nothing is
    checked here): canonical CSR (int64 sorted indices, float64 data), rows summing to 1 or 0."""
    m, n = R.shape
    Su, Si, alpha = graph.user_graph, graph.item_graph, graph.alpha
    g, g1, g3 = graph.g, graph.g_user_graph, graph.g_item_graph
    fns = {g} | {fn for S, fn in ((Su, g1), (Si, g3)) if S is not None and alpha > 0}
    if len(fns) > 1 and "exp" in fns:
        # Mixed blocks: exp(x − s) would not cancel against a linear or step weight, but a
        # common factor per row does — every weight of row r is multiplied by exp(−s_r).
        return _normalise(mixed_blocks(R, Su, Si, alpha, g, g1, g3), m, n)
    parts = [R.data] + [S.data for S in (Su, Si) if S is not None]
    shift = max((float(p.max()) for p in parts if p.size), default=0.0) if g == "exp" else 0.0

    def weighted(M: Sparse, w: float, fn: str = g) -> Sparse:
        return sp.csr_array((w * _apply_g(M.data, fn, shift), M.indices, M.indptr), shape=M.shape)

    blocks: list[list[Any]] = [[None, weighted(R, 1.0 - alpha)], [weighted(R, 1.0 - alpha).T, None]]
    if Su is not None and alpha > 0:
        blocks[0][0] = weighted(Su, alpha, g1)
    if Si is not None and alpha > 0:
        blocks[1][1] = weighted(Si, alpha, g3)
    return _normalise(blocks, m, n)


def _normalise(blocks: list[list[Any]], m: int, n: int) -> Sparse:
    if blocks[0][0] is None:
        blocks[0][0] = sp.csr_array((m, m))
    if blocks[1][1] is None:
        blocks[1][1] = sp.csr_array((n, n))
    G = sp.csr_array(sp.block_array(blocks, format="csr"))
    G.eliminate_zeros()
    deg = np.asarray(G.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    with np.errstate(over="ignore"):
        np.divide(1.0, deg, out=inv, where=deg > 0)
    if np.isinf(inv).any():
        # a row whose weights are so small (subnormal) that 1/deg overflows: scale it up first
        G = sp.csr_array(sp.diags_array(np.where(np.isinf(inv), 2.0**600, 1.0)) @ G)
        deg = np.asarray(G.sum(axis=1)).ravel()
        inv = np.zeros_like(deg)
        np.divide(1.0, deg, out=inv, where=deg > 0)
    return canonical(sp.diags_array(inv) @ G)


def canonical(A: Sparse) -> Sparse:
    """A sparse matrix built here (from checked inputs) as canonical CSR: duplicates summed,
    indices sorted, int64 indices and float64 data — what the boundary's check_csr returns,
    without checking again what was checked."""
    A = sp.csr_array(A, dtype=V_.VALUE_DTYPE, copy=True)
    A.sum_duplicates()
    A.sort_indices()
    return sp.csr_array((np.ascontiguousarray(A.data, dtype=V_.VALUE_DTYPE),
                         A.indices.astype(V_.INDEX_DTYPE, copy=False),
                         A.indptr.astype(V_.INDEX_DTYPE, copy=False)), shape=A.shape)
