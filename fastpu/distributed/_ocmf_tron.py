"""ocmf with user and/or item features on a Dask cluster: TRON driven from the client.

With features X (m×d) on a side, the sub-problem couples the rows through W (d×k), so it is
solved by TRON as on one machine — but its value, gradient (14) and Hessian-vector product (15)
are sums over row blocks:

    g(W)   = Σ_b [L⁺_b(X_b W) + ⟨B_b, diag(p_b) B_b M⟩] + ā²ΣpΣq − 2ā dᵀWκ + λ‖W‖²
    ∇g(W)  = Σ_b X_bᵀ[D⁺_b E + 2 diag(p_b) B_b M] + 2λW − 2ā d κᵀ
    ∇²g S  = Σ_b X_bᵀ[U⁺_b E + 2 diag(p_b) N_b M] + 2λS,   N_b = X_b S

The client runs :func:`fastpu.tron.tron` on W (d×k, small) and every ``fun``/``grad``/``hessp``
call is one task per block returning a d×k (or scalar) partial sum. A ``grad`` task keeps the
block's curvature (ℓ'' per positive) in its result, which the following ``hessp`` tasks read
on the same worker. A side without features uses the row-separable fast path of
:mod:`fastpu.distributed._ocmf`. Graphs are not supported here (tr(BᵀLB) needs neighbours' rows).
"""

from __future__ import annotations

import operator

import numpy as np
import scipy.sparse as sp

from .._kernels.csr import csr_dense, row_scaled_product, sampled_dots
from .._kernels.losses import entry_losses, entry_values
from .._threads import limit_threads
from ..tron import tron
from . import _blocks
from ._ocmf import _sum_parts, gram_task, make_block, update_task


def _xmul(X, W):
    if isinstance(X, np.ndarray):
        return np.ascontiguousarray(X @ W)
    out = np.empty((X.shape[0], W.shape[1]))
    if X.shape[0]:
        csr_dense(X.indptr, X.indices, X.data, W, out)
    return out


def _xtmul(X, G):
    if isinstance(X, np.ndarray):
        return X.T @ G
    return np.asarray(X.T @ G)


def feat_block(ent, X):
    return ent, X


def latent_task(fb, W, n_threads):
    with limit_threads(n_threads):
        return _xmul(fb[1], W)


def dvec_task(fb):
    ent, X = fb
    return _xtmul(X, ent.w[:, None])[:, 0]


def _scores(ent, B, E):
    s = np.empty(ent.indices.size)
    if B.shape[0]:
        sampled_dots(ent.indptr, ent.indices, B, E, s)
    return s


def _quad_rows(ent, B, M):
    out = np.empty_like(B)
    if B.shape[0]:
        row_scaled_product(ent.w, B, M, out)
    return out


def fun_task(fb, W, E, M, kind, abar, has_quad, n_threads):
    with limit_threads(n_threads):
        ent, X = fb
        B = _xmul(X, W)
        s = _scores(ent, B, E)
        val = np.empty_like(s)
        entry_values(kind, ent.labels, ent.weights, ent.corr, abar, s, val)
        quad = float(np.sum(B * _quad_rows(ent, B, M))) if has_quad else 0.0
        return float(val.sum()), quad


def grad_task(fb, W, E, M, kind, abar, has_quad, n_threads):
    """(Σ-part of the gradient, ℓ'' per positive): the second element is the curvature state."""
    with limit_threads(n_threads):
        ent, X = fb
        B = _xmul(X, W)
        s = _scores(ent, B, E)
        val, d1, d2 = np.empty_like(s), np.empty_like(s), np.empty_like(s)
        entry_losses(kind, ent.labels, ent.weights, ent.corr, abar, s, val, d1, d2)
        G = np.empty_like(B)
        if B.shape[0]:
            csr_dense(ent.indptr, ent.indices, d1, E, G)
        if has_quad:
            G += 2.0 * _quad_rows(ent, B, M)
        return _xtmul(X, G), d2


def hessp_task(fb, S, E, M, gres, has_quad, n_threads):
    with limit_threads(n_threads):
        ent, X = fb
        N = _xmul(X, S)
        u = _scores(ent, N, E) * gres[1]
        G = np.empty_like(N)
        if N.shape[0]:
            csr_dense(ent.indptr, ent.indices, u, E, G)
        if has_quad:
            G += 2.0 * _quad_rows(ent, N, M)
        return _xtmul(X, G)


class DistSubProblem:
    """The problem protocol of :mod:`fastpu.tron` with every pass a sum of block tasks."""

    def __init__(self, client, fblocks, on, E_f, M, kappa, dvec, const, lam, abar, kind,
                 has_quad, d, k, n_threads):
        self.client, self.fb, self.on = client, fblocks, on
        self.E_f, self.M, self.kappa, self.dvec = E_f, M, kappa, dvec
        self.const, self.lam, self.abar, self.kind = const, lam, abar, kind
        self.has_quad, self.d, self.k, self.n_threads = has_quad, d, k, n_threads
        self._g = None

    def _mat(self, w):
        return np.ascontiguousarray(w, dtype=np.float64).reshape(self.d, self.k)

    def _run(self, fn, *args):
        c = self.client
        return [c.submit(fn, fb, *args, pure=False, **self.on[b]) for b, fb in enumerate(self.fb)]

    def fun(self, w):
        W = self._mat(w)
        parts = self.client.gather(self._run(fun_task, W, self.E_f, self.M, self.kind, self.abar,
                                             self.has_quad, self.n_threads))
        lplus = float(sum(p[0] for p in parts))
        quad = float(sum(p[1] for p in parts))
        lminus = self.const + quad - 2.0 * self.abar * float(self.dvec @ W @ self.kappa)
        return lplus + lminus + self.lam * float(np.sum(W * W))

    def grad(self, w):
        W = self._mat(w)
        self._g = self._run(grad_task, W, self.E_f, self.M, self.kind, self.abar, self.has_quad,
                            self.n_threads)
        parts = self.client.gather([self.client.submit(operator.getitem, g, 0, **self.on[b])
                                    for b, g in enumerate(self._g)])
        out = _sum(parts) + 2.0 * self.lam * W
        if self.abar != 0.0 and self.has_quad:
            out -= 2.0 * self.abar * np.outer(self.dvec, self.kappa)
        return out.ravel()

    def hessp(self, s):
        S = self._mat(s)
        c = self.client
        parts = c.gather([c.submit(hessp_task, fb, S, self.E_f, self.M, self._g[b], self.has_quad,
                                   self.n_threads, pure=False, **self.on[b])
                          for b, fb in enumerate(self.fb)])
        return (_sum(parts) + 2.0 * self.lam * S).ravel()


def _sum(parts):
    out = np.array(parts[0], dtype=np.float64)
    for p in parts[1:]:
        out += p
    return out


def _slices(X, cuts):
    out = []
    for b in range(cuts.size - 1):
        lo, hi = int(cuts[b]), int(cuts[b + 1])
        out.append(np.ascontiguousarray(X[lo:hi]) if isinstance(X, np.ndarray)
                   else sp.csr_array(X[lo:hi]))
    return out


class _Side:
    """One side of the distributed fit: its blocks, its weights, its features (or None)."""

    def __init__(self, client, csr_blocks, cuts, own_w_f, other_w_f, X, workers):
        self.on = [dict(workers=[_blocks.home(workers, b)], allow_other_workers=True)
                   for b in range(len(csr_blocks))]
        self.blocks = [client.submit(make_block, c, own_w_f, other_w_f, **self.on[b])
                       for b, c in enumerate(csr_blocks)]
        self.X = X
        self.fblocks = None
        if X is not None:
            # each block's feature rows are an argument of its task: part of the graph
            self.fblocks = [client.submit(feat_block, blk, xs, **self.on[b])
                            for b, (blk, xs) in enumerate(zip(self.blocks, _slices(X, cuts)))]

    def futures(self):
        return self.blocks + (self.fblocks or [])


def fit(client, layout, setup, W, H, *, lam, abar, kind, const, has_quad, pw, q, pw_f, q_f,
        n_iter, inner_iter, nsteps, csteps, n_threads, progress):
    """Alternating minimisation; ``setup`` gives (X, Z) as canonicalised by ocmf's boundary."""
    X, Z = setup
    user = _Side(client, layout.user, layout.ub, pw_f, q_f, X, layout.workers)
    item = _Side(client, layout.item, layout.ib, q_f, pw_f, Z, layout.workers)
    held = user.futures() + item.futures()
    try:
        dvec = {id(s): (_sum(client.gather([client.submit(dvec_task, fb, **s.on[b])
                                             for b, fb in enumerate(s.fblocks)]))
                        if s.X is not None else None) for s in (user, item)}
        W_f, H_f = client.scatter([W, H], broadcast=True, hash=False)
        held += [W_f, H_f]
        half = dict(kind=kind, abar=abar, lam=lam, nsteps=nsteps, csteps=csteps, n_threads=n_threads)
        E_f, M, kappa = _latent(client, item, H_f, H, n_threads)
        for it in range(1, n_iter + 1):
            W, W_f, inner_w, _, reg_w = _update(client, user, W, W_f, E_f, M, kappa,
                                                dvec[id(user)], half, lam, abar, kind, const,
                                                has_quad, inner_iter, n_threads)
            B_f, Mw, kw = _latent(client, user, W_f, W, n_threads)
            H, H_f, inner_h, sub_value, _ = _update(client, item, H, H_f, B_f, Mw, kw,
                                                    dvec[id(item)], half, lam, abar, kind, const,
                                                    has_quad, inner_iter, n_threads)
            E_f, M, kappa = _latent(client, item, H_f, H, n_threads)
            if progress.step(it, sub_value + reg_w, inner=inner_w + inner_h):
                break
        W = W if X is not None else client.gather(W_f)
        H = H if Z is not None else client.gather(H_f)
        U = client.gather(_latent(client, user, W_f, W, n_threads)[0]) if X is not None else W
        Vf = client.gather(E_f) if Z is not None else H
    finally:
        for f in held:
            f.release()
    return W, H, U, Vf


def _latent(client, side, F_f, F, n_threads):
    """(future of the side's latent matrix, its Gram M = Fᵀdiag(w)F, κ = Fᵀw) for a side."""
    if side.X is None:
        parts = client.gather([client.submit(gram_task, blk, F_f, n_threads, **side.on[b])
                               for b, blk in enumerate(side.blocks)])
        M, kappa = _sum_parts(parts, 0, 1)
        return F_f, M, kappa
    lat = [client.submit(latent_task, fb, F, n_threads, **side.on[b])
           for b, fb in enumerate(side.fblocks)]
    B_f = client.submit(_blocks.concat, *lat)
    parts = client.gather([client.submit(_block_gram, blk, piece, **side.on[b])
                           for b, (blk, piece) in enumerate(zip(side.blocks, lat))])
    M, kappa = _sum_parts(parts, 0, 1)
    return B_f, M, kappa


def _block_gram(blk, B):
    from ._ocmf import _gram
    return _gram(np.ascontiguousarray(B), blk.w, B.shape[1])


def _update(client, side, F, F_f, E_f, M, kappa, dvec, half, lam, abar, kind, const, has_quad,
            inner_iter, n_threads):
    """Returns (F on the client or None, F's future or None, solver iterations, sub-problem
    value, λ‖F‖²). A feature side's W (d×k) lives on the client; a fast side's rows on the workers."""
    if side.X is None:                       # fast path, as in _ocmf
        futs = [client.submit(update_task, blk, F_f, E_f, M, kappa, pure=False, **half, **side.on[b])
                for b, blk in enumerate(side.blocks)]
        F_new = client.submit(_blocks.concat_first, *futs, pure=False)
        res = client.gather([client.submit(_blocks.drop_first, f, **side.on[b])
                             for b, f in enumerate(futs)])
        return (None, F_new, 0, float(sum(r[0] for r in res)) + const,
                float(sum(r[3] for r in res)))
    d = F.shape[0]
    prob = DistSubProblem(client, side.fblocks, side.on, E_f, M, kappa, dvec, const, lam, abar,
                          kind, has_quad, d, F.shape[1], n_threads)
    res = tron(prob, F.ravel(), max_iter=inner_iter)
    F = res.x.reshape(F.shape)
    return F, None, res.n_iter, res.fun, lam * float(np.sum(np.square(F)))
