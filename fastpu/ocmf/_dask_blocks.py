"""The tasks both of ocmf's Dask forms run on a row block: the block's entries, its rows' partial
Gram (M, κ for the next half-step), and the row-separable Newton–CG update of its rows."""

from __future__ import annotations

import dataclasses

import numpy as np

from fastpu._core.threads import limit_threads
from fastpu._kernels.ocmf import local_entries, row_newton
from fastpu.distributed import blocks as _blocks
from fastpu.ocmf._problem import kernel_indices

_NO_Q = np.empty(0)


@dataclasses.dataclass
class OcmfBlock:
    """A block's loss entries (value: weights·l(1, s) − corr·(ā − s)²) and its rows' weights."""

    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    corr: np.ndarray
    w: np.ndarray          # unlabeled weight of each row of the block (p_i for users, q_j for items)


def make_block(csr, own_w, other_w):
    """The ocmf entries of a CSR block: corr = own_w[row] · other_w[col] (same products as ocmf)."""
    rows = csr.rows()
    return OcmfBlock(csr.lo, csr.hi, csr.indptr, csr.indices, np.ones(csr.nnz), csr.data,
                     own_w[rows] * other_w[csr.indices], np.ascontiguousarray(own_w[csr.lo:csr.hi]))


def gram_task(block, F, n_threads):
    """The block's partial (Fᵀ diag(w) F, Fᵀ w) over its own rows of the broadcast factors F."""
    with limit_threads(n_threads):
        return _blocks.gram(np.ascontiguousarray(F[block.lo:block.hi]), block.w, F.shape[1])


def update_task(block, F, E, M, kappa, kind, abar, lam, nsteps, csteps, n_threads):
    """New rows lo:hi of F (Newton–CG per row, warm-started from F) and the block's sums.

    Returns (rows, Σ f_i, partial M, partial κ, λ‖rows‖²). F and E are read only.
    """
    with limit_threads(n_threads):
        W = np.array(F[block.lo:block.hi], order="C")
        k = W.shape[1]
        f_rows = np.empty(W.shape[0])
        local_max = local_entries(k, E.dtype.itemsize)
        if W.shape[0]:
            # the kernel's one index type (int32 when it fits); per-entry corr, so no column weights
            indptr, indices = kernel_indices(block.indptr, block.indices, E.shape[0])
            row_newton(kind, indptr, indices, block.labels, block.weights, block.corr, _NO_Q,
                       abar, E, M, kappa, block.w, lam, W, nsteps, csteps, 1e-3, local_max, f_rows,
                       _NO_Q)
        Mp, kp = _blocks.gram(W, block.w, k)
        reg = lam * float(np.sum(np.square(W, dtype=np.float64)))
        return W, float(f_rows.sum()), Mp, kp, reg


def _sum_parts(parts, iM, ik):
    """Σ of the blocks' partial Grams, in block order (deterministic)."""
    M = parts[0][iM].copy()
    kappa = parts[0][ik].copy()
    for r in parts[1:]:
        M += r[iM]
        kappa += r[ik]
    return M, kappa
