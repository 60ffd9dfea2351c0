"""fBGD's problem (Yuan et al.): built from the checked inputs (:mod:`fastpu.fbgd._check`), the
cached all-pairs loss and its gradients, and the epochs of Algorithm 1 (coordinate updates of
Appendix B, or batch updates), shared by :func:`fastpu.fbgd.fit`, the tensor models and the
distributed fit. Nothing here checks an argument again. :mod:`fastpu.fbgd` holds the public
functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.rows import scaled_penalty
from fastpu._kernels import csr as _csr
from fastpu._kernels import fbgd as _k
from fastpu._core.hints import Sparse
from fastpu._core.factorization import Factorization
from fastpu.fbgd._check import fixed_entries, free_masks

_EPS = 1e-4                 # eq. 24: used where the Adagrad accumulator is still zero


# --------------------------------------------------------------------------- building
def per_positive(value, Y):
    """A per-positive float64 array (Y's entry order) from a checked number or ``"values"``."""
    if isinstance(value, str):              # "values": Y's stored values
        return np.ascontiguousarray(Y.data, dtype=np.float64)
    return np.full(Y.nnz, value)


def _transpose_with_perm(Y):
    """CSR of Yᵀ (structure only) and perm: its p-th entry is entry perm[p] of Y."""
    m, n = Y.shape
    cols = Y.indices
    perm = np.argsort(cols, kind="stable").astype(np.int64)
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(Y.indptr))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n), out=indptr[1:])
    return indptr, np.ascontiguousarray(rows[perm]), perm


def _augment(Z, biases):
    """[Z, 1] as canonical CSR: the extra column carries the global bias / the constant-1
    coordinate (the last entry of every row)."""
    if not biases:
        return Z
    m, d = Z.shape
    indptr = np.asarray(Z.indptr, dtype=np.int64) + np.arange(m + 1, dtype=np.int64)
    last = indptr[1:] - 1
    keep = np.ones(indptr[-1], dtype=np.bool_)
    keep[last] = False
    indices = np.empty(indptr[-1], dtype=np.int64)
    data = np.empty(indptr[-1])
    indices[keep], data[keep] = Z.indices, Z.data
    indices[last], data[last] = d, 1.0
    return sp.csr_array((data, indices, indptr), shape=(m, d + 1))


def build(Y, model, k):
    """The problem of ``fit`` from a checked Y and :class:`~fastpu.fbgd._check.Model`: α⁻_y
    given or from eq. 22, α⁺ and r⁺ per positive."""
    w = model.weights
    neg = w.neg if w.neg is not None else _negative_weights(Y, w.alpha0, w.rho)
    return _Problem(Y, model.Zx, model.Zy, k, model.biases, neg, per_positive(w.pos_weight, Y),
                    per_positive(w.r_pos, Y), w.r_neg, w.neg_rows)


def draw_start(rng, px, py, f, biases, init_std):
    """The default start Θ^X, Θ^Y: N(0, init_std²) embeddings of the ``px`` user and ``py`` item
    features (user side drawn first), biases 0, the fixed entries of eq. 13 at their values."""
    tx, ty = fixed_entries(px + biases, py + biases, f, biases)
    tx[:px, :f] = rng.normal(0.0, init_std, size=(px, f))
    ty[:py, :f] = rng.normal(0.0, init_std, size=(py, f))
    return tx, ty


class _Problem:
    """Canonical data of one fBGD problem, built once from the checked inputs."""

    def __init__(self, Y, Zx, Zy, k, biases, neg, apos, rpos, r_neg, neg_rows=None):
        self.m, self.n = Y.shape
        self.Y = Y
        self.f = k
        self.biases = biases
        self.g = k + 2 if biases else k
        self.Zx, self.Zy = _augment(Zx, biases), _augment(Zy, biases)
        self.ZxT, self.ZyT = V.transpose_csr(self.Zx), V.transpose_csr(self.Zy)
        self.neg = np.ascontiguousarray(neg, dtype=np.float64)
        # α⁻_x of each row (1 by default): the unlabeled pair (x, y) weighs α⁻_x α⁻_y
        self.arow = np.ones(self.m) if neg_rows is None else np.ascontiguousarray(neg_rows, dtype=np.float64)
        self.apos, self.rpos, self.r_neg = apos, rpos, float(r_neg)
        self.aneg = np.ascontiguousarray(self.neg[Y.indices] * np.repeat(self.arow, np.diff(Y.indptr)))
        # positives seen from each side, per-positive arrays in that side's entry order:
        # (indptr, indices, α⁺ − α⁻, α⁺ r⁺ − α⁻ r⁻) for the gradients
        cpos = apos - self.aneg
        bpos = apos * rpos - self.aneg * self.r_neg
        self.x_side = (Y.indptr, Y.indices, cpos, bpos)
        yt_indptr, yt_indices, perm = _transpose_with_perm(Y)
        self._y_perm = perm         # item-side entry p is Y's entry perm[p]
        self.y_side = (yt_indptr, yt_indices, np.ascontiguousarray(cpos[perm]),
                       np.ascontiguousarray(bpos[perm]))
        self.free_x, self.free_y = free_masks(self.Zx.shape[1], self.Zy.shape[1], k, biases)

    def init_params(self, rng, init_std):
        return draw_start(rng, self.Zx.shape[1] - self.biases, self.Zy.shape[1] - self.biases,
                          self.f, self.biases, init_std)

    def _plain_ids(self, side, ZT, free, n_rows):
        """Whether every row of a side is one parameter with all coordinates free (plain ids
        without biases), all run by the row-parallel kernel: then its kernel visits every row
        and can fuse passes over all the positives (``coordinate_rows``)."""
        segments, _ = self.coordinate_plan(side, ZT, free)
        return (bool(free.all()) and ZT.shape[0] == n_rows
                and bool(np.all(np.diff(ZT.indptr) == 1))
                and np.array_equal(np.sort(ZT.indices), np.arange(n_rows))
                and all(seg[0] == "rows" for seg in segments))

    def fused_loss_terms(self):
        """(α⁺, r⁺, α⁻ in the item side's entry order, and the permutation to Y's entry order)
        when the item side is plain ids, so that its coordinate kernel can sum the positive part
        of the loss and hand its predictions to the user side; ``None`` otherwise.  Built once
        per problem."""
        if "_fused" not in self.__dict__:
            self._fused = None
            if self._plain_ids(self.y_side, self.ZyT, self.free_y, self.n):
                self._fused = (*(np.ascontiguousarray(a[self._y_perm])
                                 for a in (self.apos, self.rpos, self.aneg)), self._y_perm)
        return self._fused

    def fused_user_perm(self):
        """The permutation from Y's entry order to the item side's when the user side is plain
        ids, so that its coordinate kernel can hand its predictions to the item side; ``None``
        otherwise.  Built once per problem."""
        if "_to_items" not in self.__dict__:
            self._to_items = None
            if self._plain_ids(self.x_side, self.ZxT, self.free_x, self.m):
                inv = np.empty_like(self._y_perm)
                inv[self._y_perm] = np.arange(self._y_perm.size)
                self._to_items = inv
        return self._to_items

    def coordinate_plan(self, side, ZT, free):
        """The segments of :func:`_coordinate_plan` for a side, computed once per problem."""
        key = id(ZT)
        plans = self.__dict__.setdefault("_plans", {})
        if key not in plans:
            plans[key] = _coordinate_plan(ZT, free, side[0], self.g)
        return plans[key]

    # embeddings and caches ------------------------------------------------------
    def embed(self, Z, theta):
        out = np.empty((Z.shape[0], self.g))
        _csr.csr_dense(Z.indptr, Z.indices, Z.data, theta, out)
        return out

    def gram(self, w, B):
        S = np.empty((self.g, self.g))
        s = np.empty(self.g)
        _csr.weighted_gram(B, w, S, s)
        return S, s

    def loss_at(self, theta_x, theta_y):
        """Loss (2) at parameters Θ^X, Θ^Y (no penalty)."""
        P, Q = self.embed(self.Zx, theta_x), self.embed(self.Zy, theta_y)
        Sq, sq = self.gram(self.neg, Q)
        Sp, sp_ = self.gram(self.arow, P)
        return self.loss(P, Q, Sq, sq, Sp, sp_)

    def allpairs(self, Sq, sq, Sp, sp_):
        """The all-pairs term of loss (2), Σ_xy α⁻_x α⁻_y (r⁻ − r̂_xy)², from the two caches."""
        const = self.r_neg * self.r_neg * float(self.arow.sum()) * float(self.neg.sum())
        with np.errstate(over="ignore", invalid="ignore"):   # a diverging run is reported by Progress
            return float(np.sum(Sq * Sp)) - 2.0 * self.r_neg * float(sq @ sp_) + const

    def loss(self, P, Q, Sq, sq, Sp, sp_, pred=None):
        """Loss (2) from the caches: all-pairs term + correction on the positives.

        ``pred``, if given, receives p_x · q_y of every positive in Y's entry order.
        """
        allpairs = self.allpairs(Sq, sq, Sp, sp_)
        if pred is None:
            pred = np.empty(self.Y.nnz)
        rows = np.empty(self.m)
        _k.positive_terms(self.Y.indptr, self.Y.indices, self.apos, self.rpos, self.aneg,
                          P, Q, self.r_neg, pred, rows)
        return allpairs + float(rows.sum())


# --------------------------------------------------------------------------- penalties
def row_counts(counts_x, counts_y, arow, neg):
    """(c_x, c_y) of frequency-scaled regularisation: each row's positives plus the unlabeled
    weight of loss (2) it is paired with over all columns, c_x = |P_x| + α⁻_x Σ_y α⁻_y, and the
    same for the columns, c_y = |P_y| + α⁻_y Σ_x α⁻_x (``counts_*``: positives per row and per
    column)."""
    return (np.asarray(counts_x, dtype=np.float64) + arow * float(neg.sum()),
            np.asarray(counts_y, dtype=np.float64) + neg * float(arow.sum()))


def row_penalties(lam, nu, counts_x, counts_y, arow, neg, biases):
    """(λ over the rows of Θ^X, λ over the rows of Θ^Y): lam · c^ν for the row of each user and
    each item (:func:`row_counts`) and, with biases, lam for the constant feature's row (the
    global bias w0); with ν = 0 the single value ``[lam]`` for every row, the kernels' compact
    form. Plain ids only (ν is refused with features): row x of Θ^X is user x's."""
    if nu == 0.0:
        one = scaled_penalty(lam, 0.0, None)
        return one, one.copy()
    cx, cy = row_counts(counts_x, counts_y, arow, neg)
    lam_x, lam_y = scaled_penalty(lam, nu, cx), scaled_penalty(lam, nu, cy)
    if not (np.isfinite(lam_x).all() and np.isfinite(lam_y).all()):
        big = float(max(cx.max(initial=0.0), cy.max(initial=0.0)))
        raise ValueError(f"nu={nu:g} overflows a row's penalty lam·c^nu (lam {lam:g}, largest count "
                         f"c = {big:g}); lower nu or lam, or scale the weights down")
    if biases:
        lam_x, lam_y = np.append(lam_x, lam), np.append(lam_y, lam)
    return lam_x, lam_y


def fit_penalties(Y, model, prob):
    """:func:`row_penalties` of a fit: the counts from Y, α⁻ from the problem."""
    return row_penalties(model.lam, model.nu, np.diff(Y.indptr),
                         np.bincount(Y.indices, minlength=Y.shape[1]), prob.arow, prob.neg,
                         model.biases)


def _as_penalties(lam):
    """(λ of Θ^X's rows, λ of Θ^Y's rows) from a pair of arrays, or from one number (compact)."""
    if isinstance(lam, tuple):
        return lam
    one = np.array([float(lam)])
    return one, one.copy()


def _rows_sum(lam, theta, free):
    """Σ_j λ_j Σ_d θ_jd² over the free entries."""
    return float(lam @ np.sum(np.where(free, theta * theta, 0.0), axis=1))


def penalty_value(lam, free_x, free_y, theta_x, theta_y):
    """The penalty term at Θ^X, Θ^Y over the free entries: lam (‖Θ^X‖² + ‖Θ^Y‖²) with one lam
    (``lam`` a pair of equal single values, the compact form), else Σ_j λ_j ‖θ_j‖² per side."""
    lam_x, lam_y = lam
    # a diverging run overflows here: the objective's check (Progress) names the cause instead
    with np.errstate(over="ignore", invalid="ignore"):
        if lam_x.size == 1 and lam_y.size == 1 and lam_x[0] == lam_y[0]:     # one lam
            one = float(lam_x[0])
            if one == 0.0:
                return 0.0
            return one * (float(np.sum(theta_x[free_x] ** 2)) + float(np.sum(theta_y[free_y] ** 2)))
        return _rows_sum(lam_x, theta_x, free_x) + _rows_sum(lam_y, theta_y, free_y)


def _penalty(lam, prob, theta_x, theta_y):
    return penalty_value(lam, prob.free_x, prob.free_y, theta_x, theta_y)


# --------------------------------------------------------------------------- training


_ROW_CHUNKS = 256            # prange iterations of the row-parallel coordinate kernel (equal work)


def _coordinate_plan(ZT, free, indptr, g):
    """Order-preserving segments of one side's parameters for the coordinate update.

    The parameters are visited in their serial order (j = 0, 1, ...).  A maximal run of
    consecutive parameters with free coordinates that each have exactly one feature entry,
    all on distinct rows (the one-hot id, the stacked identity of ``[I, Z]``), only touches
    its own rows: it becomes ``("rows", bounds)``, run by the row-parallel kernel in chunks of
    about equal work.  Everything else — features shared by several rows, the global bias
    w0 — is ``("serial", j_lo, j_hi)``.  Parameters without a free coordinate are no-ops and
    never split a run.  Returns (segments, needs_dots): the serial kernel reads the cached
    predictions of every row, so they are computed up front when a serial segment exists.
    """
    segments: list[tuple[Any, ...]] = []
    counts = np.diff(ZT.indptr)
    act = np.flatnonzero(free.any(axis=1))
    if act.size == 0:
        return segments, False
    single = counts[act] == 1
    cuts = np.flatnonzero(np.diff(single.astype(np.int8))) + 1
    for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [act.size]])):
        lo, hi = int(act[a]), int(act[b - 1]) + 1
        rows = ZT.indices[ZT.indptr[act[a:b]]] if single[a] else None
        if rows is None or np.unique(rows).size != rows.size:
            segments.append(("serial", lo, hi))
            continue
        work = np.zeros(hi - lo, dtype=np.int64)
        work[act[a:b] - lo] = np.diff(indptr)[rows] + g
        cum = np.concatenate([[0], np.cumsum(work)])
        n_chunks = min(_ROW_CHUNKS, hi - lo)
        marks = np.searchsorted(cum, cum[-1] * np.arange(1, n_chunks) / n_chunks)
        bounds = np.unique(np.concatenate([[0], marks, [hi - lo]])).astype(np.int64) + lo
        segments.append(("rows", bounds))
    return segments, any(seg[0] == "serial" for seg in segments)


_NO_LOSS = (np.empty(0), np.empty(0), np.empty(0), np.empty(0, dtype=np.int64), np.empty(0),
            np.empty(0))


def _update_side(prob, side, ZT, free, theta, accum, E, F, S, s, rowscale, G, grad, pred,
                 *, update, lr, lam, adagrad, pred_ready=False, fused=None):
    """One side's step with the other side's caches (S, s) fixed; ``lam`` is the penalty of the
    side's parameter rows (an array: one value per row of ``theta``, or one for all).

    ``pred_ready``: ``pred`` already holds e_i · f_y of every positive of the side (the loss
    just computed them at the same point), so the coordinate update need not recompute them.
    ``fused``: (α⁺, r⁺, α⁻, perm, row_loss, pred_out) for ``coordinate_rows``' fused passes
    (coordinate updates of plain ids only, :meth:`_Problem.fused_loss_terms` and
    :meth:`_Problem.fused_user_perm`): the kernel leaves the updated predictions in
    ``pred_out`` in the other side's entry order, and with a non-empty ``row_loss`` each row's
    positive part of the loss at the updated point.
    """
    if not isinstance(lam, np.ndarray):         # one number: the compact form
        lam = np.array([float(lam)])
    if update == "coordinate":
        segments, needs_dots = prob.coordinate_plan(side, ZT, free)
        if needs_dots and not pred_ready:
            _csr.sampled_dots(side[0], side[1], E, F, pred)
            pred_ready = True
        FT = np.ascontiguousarray(F.T)
        for seg in segments:
            if seg[0] == "rows":
                _k.coordinate_rows(seg[1], not pred_ready, ZT.indptr, ZT.indices, ZT.data, free,
                                   theta, accum, *side, pred, E, F, FT, S, s, rowscale, prob.r_neg,
                                   lr, lam, adagrad, _EPS, *(fused or _NO_LOSS))
            else:
                _k.coordinate_side(seg[1], seg[2], ZT.indptr, ZT.indices, ZT.data, free, theta,
                                   accum, *side, pred, E, FT, S, s, rowscale, prob.r_neg, lr, lam,
                                   adagrad, _EPS)
    else:
        _k.side_gradient(*side, E, F, S, s, rowscale, prob.r_neg, G)
        _csr.csr_dense(ZT.indptr, ZT.indices, ZT.data, G, grad)
        _k.batch_update(grad, free, theta, accum, lr, lam, adagrad, _EPS)


def _train(prob, theta_x, theta_y, *, lr, n_iter, update, adagrad, lam, progress):
    """Epochs of Algorithm 1: user side with the item caches, then item side with the user
    caches; the embeddings are rebuilt exactly (P = Z^X Θ^X) after each side. ``lam``: one
    penalty, or (λ of Θ^X's rows, λ of Θ^Y's rows) from :func:`row_penalties`."""
    lam = _as_penalties(lam)
    acc_x = np.zeros_like(theta_x)
    acc_y = np.zeros_like(theta_y)
    Q = prob.embed(prob.Zy, theta_y)
    Sq, sq = prob.gram(prob.neg, Q)
    P = prob.embed(prob.Zx, theta_x)
    Sp, sp_ = prob.gram(prob.arow, P)
    pred = np.empty(prob.Y.nnz)
    init = prob.loss(P, Q, Sq, sq, Sp, sp_, pred) + _penalty(lam, prob, theta_x, theta_y)
    progress.start(init)
    G_p, G_q = np.empty((prob.m, prob.g)), np.empty((prob.n, prob.g))
    grad_x, grad_y = np.empty_like(theta_x), np.empty_like(theta_y)
    opts = dict(update=update, lr=lr, adagrad=adagrad)
    # plain ids on a side: its coordinate kernel hands the predictions it has moved to the
    # other side (no fresh dot products there), and on the item side also sums the positive
    # part of the loss, so no separate pass over the positives per epoch (positive_terms)
    coordinate = update == "coordinate"
    fused = prob.fused_loss_terms() if coordinate else None
    to_items = prob.fused_user_perm() if coordinate else None
    pred_y = pred if fused is None and to_items is None else np.empty(prob.Y.nnz)
    no = np.empty(0)
    row_loss = np.zeros(prob.n) if fused is not None else no
    x_fused = None if to_items is None else (no, no, no, to_items, no, pred_y)
    y_fused = None if fused is None else (*fused, row_loss, pred)
    for epoch in range(1, n_iter + 1):
        # pred holds P·Q of the positives in Y's entry order: from the previous epoch's loss
        # (or the initial one), or written by the item side's kernel
        _update_side(prob, prob.x_side, prob.ZxT, prob.free_x, theta_x, acc_x, P, Q, Sq, sq,
                     prob.arow, G_p, grad_x, pred, pred_ready=True, fused=x_fused, lam=lam[0],
                     **opts)
        P = prob.embed(prob.Zx, theta_x)
        Sp, sp_ = prob.gram(prob.arow, P)
        _update_side(prob, prob.y_side, prob.ZyT, prob.free_y, theta_y, acc_y, Q, P, Sp, sp_,
                     prob.neg, G_q, grad_y, pred_y, pred_ready=to_items is not None,
                     fused=y_fused, lam=lam[1], **opts)
        Q = prob.embed(prob.Zy, theta_y)
        Sq, sq = prob.gram(prob.neg, Q)
        if fused is None:
            loss = prob.loss(P, Q, Sq, sq, Sp, sp_, pred)
        else:
            loss = prob.allpairs(Sq, sq, Sp, sp_) + float(row_loss.sum())
        total = loss + _penalty(lam, prob, theta_x, theta_y)
        if progress.step(epoch, total, loss=loss,
                         model=lambda: Factorization(P.copy(), Q.copy(), method="fbgd")):
            break
    return P, Q, init


def _result(P, Q, theta_x, theta_y, px, py, k, *, biases, has_ux, has_ix, neg, neg_rows, init,
            history, params):
    """The Factorization of a trained fBGD model (single-machine and distributed fits alike)."""
    extras = dict(V_user=theta_x[:px, :k].copy(), V_item=theta_y[:py, :k].copy(),
                  neg_weights=neg, neg_row_weights=neg_rows, initial_objective=init)
    if biases:
        extras.update(w_user=theta_x[:px, k].copy(), w_item=theta_y[:py, k + 1].copy(),
                      w0=float(theta_x[px, k]))
    if has_ux:
        extras["W"] = extras["V_user"]
    if has_ix:
        extras["H"] = extras["V_item"]
    return Factorization(user_factors=P, item_factors=Q, history=history, params=params,
                         method="fbgd", extras=extras)


# --------------------------------------------------------------------------- weights
def negative_weights(Y: Sparse, alpha0: float, rho: float) -> np.ndarray:
    """Frequency-based weights of the unlabeled entries of each item (eq. 22).

    α⁻_y = α0 (e^{z_y} − 1)^ρ / Σ_y' (e^{z_y'} − 1)^ρ with z_y = (positives of item y) / |P|.
    The weights sum to ``alpha0``; ``rho = 0`` spreads them uniformly, larger ``rho``
    puts more weight on popular items (their unobserved pairs are likelier true negatives).

    Parameters
    ----------
    Y : scipy.sparse matrix, shape (m, n)
        Positives (stored entries); stored values are ignored here.
    alpha0 : float
        Total weight of the unlabeled entries of one user, >= 0.
    rho : float
        Exponent, >= 0.  With ``rho > 0`` items without any positive get weight 0;
        when no item has a positive the weights are uniform.

    Returns
    -------
    ndarray of float64, shape (n,)

    Raises
    ------
    TypeError
        If ``Y`` is not sparse or ``alpha0``/``rho`` are not real numbers.
    ValueError
        If ``alpha0`` or ``rho`` is negative or not finite, or ``Y`` is malformed.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu import fbgd
    >>> Y = sp.csr_array(np.array([[1, 1, 0], [1, 0, 0]]))
    >>> w = fbgd.negative_weights(Y, alpha0=3.0, rho=0.0)
    >>> w.tolist()
    [1.0, 1.0, 1.0]
    >>> float(fbgd.negative_weights(Y, alpha0=3.0, rho=1.0).sum())
    3.0
    """
    Y = V.check_csr(Y, name="Y", nonnegative=False)
    alpha0 = V.check_scalar(alpha0, name="alpha0", minimum=0.0)
    rho = V.check_scalar(rho, name="rho", minimum=0.0)
    return _negative_weights(Y, alpha0, rho)


def _negative_weights(Y, alpha0, rho):
    """Eq. 22 from Y's positives per item."""
    return eq22(np.bincount(Y.indices, minlength=Y.shape[1]).astype(np.float64), alpha0, rho)


def eq22(counts, alpha0, rho):
    """Eq. 22 from the items' positive counts (float64): the weights of fit and of its Dask form."""
    n = counts.size
    if n == 0:
        return np.zeros(0)
    total = counts.sum()
    if rho == 0.0 or total == 0.0:
        return np.full(n, alpha0 / n)
    seen = counts > 0
    with np.errstate(over="ignore", under="ignore"):
        raw = np.expm1(counts / total) ** rho
    if np.isfinite(raw.sum()) and raw[seen].min() >= np.finfo(np.float64).tiny:
        return alpha0 * raw / raw.sum()
    # a huge rho over- or underflows the powers: normalise in log space instead
    # (the largest term becomes 1), which gives the same weights without NaN
    lc = np.log(np.expm1(counts[seen] / total))
    logs = np.full(n, -np.inf)
    with np.errstate(over="ignore"):
        logs[seen] = rho * (lc - lc.max())       # <= 0, and exactly 0 for the most popular items
    raw = np.exp(logs)
    return alpha0 * raw / raw.sum()
