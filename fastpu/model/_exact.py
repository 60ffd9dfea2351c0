"""The exact top-N of the serving functions: every candidate scored, in memory-bounded blocks.

``recommend`` ranks users' scores (:func:`exact_topk`), ``similar_*`` cosines of factor rows
(:func:`exact_similar`); the approximate index falls back on both for the queries it cannot
serve (``_ann.py``).
"""

from __future__ import annotations

import warnings

import numpy as np

from fastpu._core.exceptions import user_stacklevel
from fastpu._core.factorization import Factorization, block_size, iter_score_blocks
from fastpu._core.hints import IntArray, Sparse
from fastpu._kernels.topk import topk_candidates

__all__ = ["exact_similar", "exact_topk", "normalised_rows"]


def exact_topk(model: Factorization, users: IntArray, seen: Sparse, cand: IntArray,
                n_take: int) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate scored, in blocks of users; the top ``n_take`` unseen per user."""
    out_items = np.full((users.size, n_take), -1, dtype=np.int64)
    out_scores = np.full((users.size, n_take), -np.inf)
    nonfinite = 0
    if n_take > 0:
        start = 0
        for rows, S in iter_score_blocks(model, users):
            bad = np.zeros(rows.size, dtype=np.int64)
            sl = slice(start, start + rows.size)
            topk_candidates(S, seen.indptr, seen.indices, rows, cand, n_take,
                            out_items[sl], out_scores[sl], bad)
            nonfinite += int(bad.sum())
            start += rows.size
    if nonfinite:
        warnings.warn(f"model.scores gave {nonfinite} non-finite scores (NaN or inf) among the "
                      "candidates; those items were left out of the recommendations",
                      RuntimeWarning, stacklevel=user_stacklevel())
    return out_items, out_scores


def normalised_rows(F: np.ndarray) -> np.ndarray:
    """Rows of ``F`` scaled to unit length (zero rows stay zero), without overflow."""
    # each row divided by its largest |entry| first: the norm of a row of 1e200s (or 1e-200s)
    # would overflow (underflow), and cosines are unchanged by scaling
    big = np.abs(F).max(axis=1) if F.shape[1] else np.zeros(F.shape[0])
    G = F / np.where(big > 0, big, 1.0)[:, None]
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    return np.ascontiguousarray(G / np.where(norms > 0, norms, 1.0)[:, None])


def exact_similar(F: np.ndarray, q: IntArray, cand: IntArray,
                   n_take: int) -> tuple[np.ndarray, np.ndarray]:
    Fn = normalised_rows(F)
    N = F.shape[0]
    out_idx = np.full((q.size, n_take), -1, dtype=np.int64)
    out_sc = np.full((q.size, n_take), -np.inf)
    if n_take > 0:
        step = block_size(N)
        for start in range(0, q.size, step):
            block = q[start:start + step]
            S = np.ascontiguousarray(Fn[block] @ Fn.T)
            np.clip(S, -1.0, 1.0, out=S)
            # each query leaves out itself: a one-entry "seen" row per query
            self_indptr = np.arange(block.size + 1, dtype=np.int64)
            rows = np.arange(block.size, dtype=np.int64)
            bad = np.zeros(block.size, dtype=np.int64)
            sl = slice(start, start + block.size)
            topk_candidates(S, self_indptr, block, rows, cand, n_take, out_idx[sl], out_sc[sl], bad)
    return out_idx, out_sc
