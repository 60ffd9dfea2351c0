"""fBGD's reference kernels and gradients, for the tests only (none of this is fastpu's code).

- :func:`in_order` runs fBGD's training the slow, plain way: every parameter visited serially by
  the coordinate kernel, every prediction recomputed from the embeddings before a side's update,
  every dot product of the loss summed in order (:func:`positive_terms_in_order`). The default
  kernels reassociate those sums and run one-hot parameters row-parallel; this is the reference
  they agree with to rounding, and the pinned digests of tests/fbgd/test_fbgd.py were taken with
  it bit for bit.
- :func:`gradients` and :func:`tensor_gradients`: ∂J of the loss at one point, composed from the
  batch mode's kernels, for comparison with the dense gradients of naive_fbgd.py and with finite
  differences.
"""

from __future__ import annotations

import contextlib

import numba as nb
import numpy as np

from fastpu._kernels import csr as _csr
from fastpu._kernels import fbgd as _k
from fastpu.fbgd import _problem as FP


@nb.njit(parallel=True, cache=True)
def positive_terms_in_order(indptr, indices, apos, rpos, aneg, P, Q, r_neg, pred_out, row_out):
    """``fastpu._kernels.fbgd.positive_terms`` with every dot product summed in order (rows in
    parallel, each whole in one thread: the same sums at any thread count)."""
    g = P.shape[1]
    for x in nb.prange(indptr.shape[0] - 1):
        acc = 0.0
        for p in range(indptr[x], indptr[x + 1]):
            y = indices[p]
            r = 0.0
            for d in range(g):
                r += P[x, d] * Q[y, d]
            pred_out[p] = r
            a = rpos[p] - r
            b = r_neg - r
            acc += apos[p] * a * a - aneg[p] * b * b
        row_out[x] = acc


@contextlib.contextmanager
def in_order(monkeypatch):
    """fBGD's epochs, inside the block, with the serial in-order kernels (see the module);
    ``monkeypatch`` is pytest's (``pytest.MonkeyPatch()`` outside a test)."""
    update_side = FP._update_side

    def serial_update(*args, **kwargs):
        kwargs["pred_ready"] = False        # predictions always recomputed in order
        return update_side(*args, **kwargs)

    with monkeypatch.context() as mp:
        mp.setattr(FP._Problem, "coordinate_plan",
                   lambda self, side, ZT, free: ([("serial", 0, ZT.shape[0])], True))
        mp.setattr(FP._Problem, "fused_loss_terms", lambda self: None)
        mp.setattr(FP._Problem, "fused_user_perm", lambda self: None)
        mp.setattr(FP, "_update_side", serial_update)
        mp.setattr(_k, "positive_terms", positive_terms_in_order)
        yield


def gradients(prob, theta_x, theta_y):
    """∂J/∂Θ^X and ∂J/∂Θ^Y of the loss at one point, by the kernels of the batch mode."""
    P, Q = prob.embed(prob.Zx, theta_x), prob.embed(prob.Zy, theta_y)
    Sq, sq = prob.gram(prob.neg, Q)
    Sp, sp_ = prob.gram(prob.arow, P)
    G_p, G_q = np.empty_like(P), np.empty_like(Q)
    _k.side_gradient(*prob.x_side, P, Q, Sq, sq, prob.arow, prob.r_neg, G_p)
    _k.side_gradient(*prob.y_side, Q, P, Sp, sp_, prob.neg, prob.r_neg, G_q)
    gx, gy = np.empty_like(theta_x), np.empty_like(theta_y)
    _csr.csr_dense(prob.ZxT.indptr, prob.ZxT.indices, prob.ZxT.data, G_p, gx)
    _csr.csr_dense(prob.ZyT.indptr, prob.ZyT.indices, prob.ZyT.data, G_q, gy)
    return gx, gy


def tensor_gradients(prob, tp, VX, VH, VY):
    """∂J/∂V^X, ∂J/∂V^H, ∂J/∂V^Y of a tensor model's loss (no penalty) at one point."""
    P, Q = tp.embed_pairs(VX, VH), tp.embed_items(VY)
    Sq, sq = prob.gram(prob.neg, Q)
    Sp, sp_ = prob.gram(prob.arow, P)
    G_p, G_q = np.empty_like(P), np.empty_like(Q)
    _k.side_gradient(*prob.x_side, P, Q, Sq, sq, prob.arow, prob.r_neg, G_p)
    _k.side_gradient(*prob.y_side, Q, P, Sp, sp_, prob.neg, prob.r_neg, G_q)
    gX, gH = tp.chain(G_p, VX, VH)
    return gX, gH, np.ascontiguousarray(G_q[:, :tp.f])
