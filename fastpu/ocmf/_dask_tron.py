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

from fastpu._kernels.csr import csr_dense, row_scaled_product, sampled_dots
from fastpu._kernels.losses import entry_losses, entry_values
from fastpu._core.threads import limit_threads
from fastpu.optim import tron
from fastpu.distributed import blocks as _blocks
from fastpu.ocmf._dask_blocks import _sum_parts, gram_task, make_block, update_task


def _xmul(X, W):
    if isinstance(X, np.ndarray):
        return np.ascontiguousarray(X @ W)
    return _blocks.sparse_times(X, W)


def _xtmul(X, G):
    if isinstance(X, np.ndarray):
        return X.T @ G
    return np.asarray(X.T @ G)


def feat_block(ent, X, L):
    """A block's entries with its rows of the features X (or None) and of the Laplacian L (or None)."""
    return ent, X, L


def _rows_of(fb, W):
    """B_b: the block's rows of X W (of W itself when the side has no features)."""
    ent, X, _ = fb
    if X is None:
        return np.ascontiguousarray(W[ent.lo:ent.hi])
    return _xmul(X, W)


def _back(fb, G):
    """X_bᵀ G (d×k), or G itself (the block's rows of the gradient) without features."""
    return G if fb[1] is None else _xtmul(fb[1], G)


def latent_task(fb, W, n_threads):
    with limit_threads(n_threads):
        return _rows_of(fb, W)


def dvec_task(fb):
    ent, X, _ = fb
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


def fun_task(fb, W, B_full, E, M, kind, abar, has_quad, lamg, n_threads):
    """(L⁺ part, quadratic part, λλ_g tr(B_bᵀ (L B)_b)) of the block."""
    with limit_threads(n_threads):
        ent, _, L = fb
        B = _rows_of(fb, W)
        s = _scores(ent, B, E)
        val = np.empty_like(s)
        entry_values(kind, ent.labels, ent.weights, ent.corr, abar, s, val)
        quad = float(np.sum(B * _quad_rows(ent, B, M))) if has_quad else 0.0
        graph = lamg * float(np.sum(B * _blocks.sparse_times(L, B_full))) if L is not None else 0.0
        return float(val.sum()), quad, graph


def _block_product(fb, R, R_full, E, M, w, has_quad, lamg):
    """The block's part of ∇ (w = ℓ' per positive) or of ∇²·s (w = ℓ''·scores): the entries'
    Σ_e w_e E[j_e] per row, the unlabeled quadratic rows, the graph term, then X_bᵀ."""
    ent, _, L = fb
    G = np.empty_like(R)
    if R.shape[0]:
        csr_dense(ent.indptr, ent.indices, w, E, G)
    if has_quad:
        G += 2.0 * _quad_rows(ent, R, M)
    if L is not None:
        G += 2.0 * lamg * _blocks.sparse_times(L, R_full)
    return _back(fb, G)


def grad_task(fb, W, B_full, E, M, kind, abar, has_quad, lamg, n_threads):
    """(the block's part of the gradient, ℓ'' per positive): the second is the curvature state."""
    with limit_threads(n_threads):
        ent = fb[0]
        B = _rows_of(fb, W)
        s = _scores(ent, B, E)
        val, d1, d2 = np.empty_like(s), np.empty_like(s), np.empty_like(s)
        entry_losses(kind, ent.labels, ent.weights, ent.corr, abar, s, val, d1, d2)
        return _block_product(fb, B, B_full, E, M, d1, has_quad, lamg), d2


def hessp_task(fb, S, N_full, E, M, gres, has_quad, lamg, n_threads):
    with limit_threads(n_threads):
        N = _rows_of(fb, S)
        u = _scores(fb[0], N, E) * gres[1]
        return _block_product(fb, N, N_full, E, M, u, has_quad, lamg)


class DistSubProblem:
    """The problem protocol of :mod:`fastpu.tron` with every pass a sum of block tasks.

    Without features W has a row per user: it is scattered once per call (each worker fetches
    it once) and the blocks return their rows of the gradient. With a graph every block needs
    the whole B = X W for (L B)_b, also scattered once per call.
    """

    def __init__(self, client, side, E_f, M, kappa, dvec, const, lam, lam_g, abar, kind,
                 has_quad, d, k, n_threads):
        self.client, self.side, self.fb, self.on = client, side, side.fblocks, side.on
        self.E_f, self.M, self.kappa, self.dvec = E_f, M, kappa, dvec
        self.const, self.lam, self.abar, self.kind = const, lam, abar, kind
        self.lamg = lam * lam_g if side.L is not None else 0.0
        self.has_quad, self.d, self.k, self.n_threads = has_quad, d, k, n_threads
        self._g = None

    def _mat(self, w):
        return np.ascontiguousarray(w, dtype=np.float64).reshape(self.d, self.k)

    def _send(self, W):
        """(what the tasks get for W, what they get for the full B): futures when large."""
        c, X = self.client, self.side.X
        if X is None:
            W_f = c.scatter(W, broadcast=True, hash=False)
            return W_f, W_f if self.side.L is not None else None
        if self.side.L is None:
            return W, None
        return W, c.scatter(_xmul(X, W), broadcast=True, hash=False)

    def _run(self, fn, *args):
        c = self.client
        return [c.submit(fn, fb, *args, pure=False, **self.on[b]) for b, fb in enumerate(self.fb)]

    def _assemble(self, parts):
        return np.concatenate(parts, axis=0) if self.side.X is None else _sum(parts)

    def fun(self, w):
        W = self._mat(w)
        Wt, B_f = self._send(W)
        parts = self.client.gather(self._run(fun_task, Wt, B_f, self.E_f, self.M, self.kind,
                                             self.abar, self.has_quad, self.lamg, self.n_threads))
        total = float(sum(p[0] for p in parts))
        quad = float(sum(p[1] for p in parts))
        graph = float(sum(p[2] for p in parts))
        lminus = self.const + quad - 2.0 * self.abar * float(self.dvec @ W @ self.kappa)
        return total + lminus + self.lam * float(np.sum(W * W)) + graph

    def grad(self, w):
        W = self._mat(w)
        Wt, B_f = self._send(W)
        self._g = self._run(grad_task, Wt, B_f, self.E_f, self.M, self.kind, self.abar,
                            self.has_quad, self.lamg, self.n_threads)
        parts = self.client.gather([self.client.submit(operator.getitem, g, 0, **self.on[b])
                                    for b, g in enumerate(self._g)])
        out = self._assemble(parts) + 2.0 * self.lam * W
        if self.abar != 0.0 and self.has_quad:
            out -= 2.0 * self.abar * np.outer(self.dvec, self.kappa)
        return out.ravel()

    def hessp(self, s):
        if self._g is None:
            raise RuntimeError("hessp needs the curvature of an accepted grad call first (TRON's order)")
        S = self._mat(s)
        St, N_f = self._send(S)
        c = self.client
        parts = c.gather([c.submit(hessp_task, fb, St, N_f, self.E_f, self.M, self._g[b],
                                   self.has_quad, self.lamg, self.n_threads, pure=False,
                                   **self.on[b])
                          for b, fb in enumerate(self.fb)])
        return (self._assemble(parts) + 2.0 * self.lam * S).ravel()


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

    def __init__(self, client, csr_blocks, cuts, own_w_f, other_w_f, X, L, own_w, workers):
        self.on = [dict(workers=[_blocks.home(workers, b)], allow_other_workers=True)
                   for b in range(len(csr_blocks))]
        self.blocks = [client.submit(make_block, c, own_w_f, other_w_f, **self.on[b])
                       for b, c in enumerate(csr_blocks)]
        self.X, self.L, self.w = X, L, own_w
        self.fblocks = None
        if X is not None or L is not None:
            # each block's feature and Laplacian rows are arguments of its task: in the graph
            xs = _slices(X, cuts) if X is not None else [None] * len(csr_blocks)
            ls = _slices(L, cuts) if L is not None else [None] * len(csr_blocks)
            self.fblocks = [client.submit(feat_block, blk, x, lb, **self.on[b])
                            for b, (blk, x, lb) in enumerate(zip(self.blocks, xs, ls))]

    @property
    def fast(self):
        return self.X is None and self.L is None

    def futures(self):
        return self.blocks + (self.fblocks or [])


def fit(client, layout, setup, W, H, *, lam, lam_g, abar, kind, const, has_quad, pw, q, pw_f,
        q_f, n_iter, n_inner, nsteps, csteps, n_threads, progress):
    """Alternating minimisation; ``setup`` = (X, Z, L_u, L_v) as canonicalised at the boundary."""
    X, Z, Lu, Lv = setup
    user = _Side(client, layout.user, layout.ub, pw_f, q_f, X, Lu, pw, layout.workers)
    item = _Side(client, layout.item, layout.ib, q_f, pw_f, Z, Lv, q, layout.workers)
    held = user.futures() + item.futures()
    try:
        dvec = {id(s): _dvec(client, s) for s in (user, item)}
        W_f, H_f = client.scatter([W, H], broadcast=True, hash=False)
        held += [W_f, H_f]
        half = dict(kind=kind, abar=abar, lam=lam, nsteps=nsteps, csteps=csteps, n_threads=n_threads)
        opts = dict(half=half, lam=lam, lam_g=lam_g, abar=abar, kind=kind, const=const,
                    has_quad=has_quad, n_inner=n_inner, n_threads=n_threads)
        E_f, M, kappa = _latent(client, item, H_f, H, n_threads)
        for it in range(1, n_iter + 1):
            W, W_f, inner_w, _, reg_w = _update(client, user, W, W_f, E_f, M, kappa,
                                                dvec[id(user)], **opts)
            B_f, Mw, kw = _latent(client, user, W_f, W, n_threads)
            H, H_f, inner_h, sub_value, _ = _update(client, item, H, H_f, B_f, Mw, kw,
                                                    dvec[id(item)], **opts)
            E_f, M, kappa = _latent(client, item, H_f, H, n_threads)
            if progress.step(it, sub_value + reg_w, inner=inner_w + inner_h):
                break
        W = client.gather(W_f) if user.fast else W
        H = client.gather(H_f) if item.fast else H
        U = client.gather(_latent(client, user, W_f, W, n_threads)[0]) if X is not None else W
        Vf = client.gather(E_f) if Z is not None else H
    finally:
        for f in held:
            f.release()
    return W, H, U, Vf


def _dvec(client, side):
    """d = Xᵀp (p itself without features; unused on the fast path)."""
    if side.X is not None:
        return _sum(client.gather([client.submit(dvec_task, fb, **side.on[b])
                                   for b, fb in enumerate(side.fblocks)]))
    return None if side.fast else side.w


def _latent(client, side, F_f, F, n_threads):
    """(future of the side's latent matrix, its Gram M = Fᵀdiag(w)F, κ = Fᵀw) for a side."""
    if side.X is None:
        if F_f is None:                     # W of a TRON side without features (graph only)
            F_f = client.scatter(F, broadcast=True, hash=False)
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
    return _blocks.gram(np.ascontiguousarray(B), blk.w, B.shape[1])


def _update(client, side, F, F_f, E_f, M, kappa, dvec, *, half, lam, lam_g, abar, kind, const,
            has_quad, n_inner, n_threads):
    """Returns (F on the client or None, F's future or None, solver iterations, sub-problem
    value, the side's regulariser λ(‖F‖² + λ_g tr(BᵀLB))). A TRON side's W lives on the
    client; a fast side's rows on the workers."""
    if side.fast:                            # the row-separable path, as in _ocmf
        futs = [client.submit(update_task, blk, F_f, E_f, M, kappa, pure=False, **half, **side.on[b])
                for b, blk in enumerate(side.blocks)]
        F_new = client.submit(_blocks.concat_first, *futs, pure=False)
        res = client.gather([client.submit(_blocks.drop_first, f, **side.on[b])
                             for b, f in enumerate(futs)])
        return (None, F_new, 0, float(sum(r[0] for r in res)) + const,
                float(sum(r[3] for r in res)))
    prob = DistSubProblem(client, side, E_f, M, kappa, dvec, const, lam, lam_g, abar, kind,
                          has_quad, F.shape[0], F.shape[1], n_threads)
    res = tron(prob, F.ravel(), max_iter=n_inner)      # in float64, rounded back as ocmf.fit does
    F = res.x.reshape(F.shape).astype(F.dtype, copy=False)
    reg = float(np.sum(np.square(F)))
    if side.L is not None and lam_g > 0:
        B = F if side.X is None else _xmul(side.X, F)
        reg += lam_g * float(np.sum(B * _blocks.sparse_times(side.L, B)))
    return F, None, res.nit, res.fun, lam * reg
