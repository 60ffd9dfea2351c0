"""ocmf with user and/or item features on a Dask cluster: TRON driven from the client.

With features X (m×d) on a side, the sub-problem couples the rows through W (d×k), so it is
solved by TRON as on one machine — but its value, gradient (14) and Hessian-vector product (15)
are sums over row blocks:

    g(W)   = Σ_b [L⁺_b(X_b W) + ⟨B_b, diag(p_b) B_b M⟩] + ā²ΣpΣq − 2ā dᵀWκ + λ‖W‖²
    ∇g(W)  = Σ_b X_bᵀ[D⁺_b E + 2 diag(p_b) B_b M] + 2λW − 2ā d κᵀ
    ∇²g S  = Σ_b X_bᵀ[U⁺_b E + 2 diag(p_b) N_b M] + 2λS,   N_b = X_b S

The client runs :func:`fastpu.optim.tron` on W (d×k, small) and every ``fun``/``grad``/``hessp``
call is one task per block returning a d×k (or scalar) partial sum. A ``grad`` task keeps the
block's curvature (ℓ'' per positive) in its result, which the following ``hessp`` tasks read
on the same worker. E, the other side's latent rows, enters only through the rows each block's
positives touch: they are routed to the block once per half-step
(:mod:`fastpu.distributed.routing`) and serve every TRON pass of it.

A graph adds λλ_g tr(BᵀLB): a block's part of it reads the rows of B its Laplacian rows touch,
which the client cuts from B = X W and sends with each call (with a row of W per user when the
side has no features, the block's own rows of W as well). A side with neither features nor a
graph uses the row-separable fast path of :mod:`fastpu.ocmf._dask`.
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
from fastpu.distributed import routing
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
    """B_b: the block's rows of X W (W is then d×k), or W itself: the block's own rows when the
    side has no features."""
    X = fb[1]
    if X is None:
        return np.ascontiguousarray(W)
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


def fun_task(fb, W, B_near, E, M, kind, abar, has_quad, lamg, n_threads):
    """(L⁺ part, quadratic part, λλ_g tr(B_bᵀ (L B)_b)) of the block; ``B_near``: the rows of B
    its Laplacian rows touch, ``E``: the other side's rows its positives touch (compact)."""
    with limit_threads(n_threads):
        ent, _, L = fb
        B = _rows_of(fb, W)
        s = _scores(ent, B, E)
        val = np.empty_like(s)
        entry_values(kind, ent.labels, ent.weights, ent.corr, abar, s, val)
        quad = float(np.sum(B * _quad_rows(ent, B, M))) if has_quad else 0.0
        graph = lamg * float(np.sum(B * _blocks.sparse_times(L, B_near))) if L is not None else 0.0
        return float(val.sum()), quad, graph


def _block_product(fb, R, R_near, E, M, w, has_quad, lamg):
    """The block's part of ∇ (w = ℓ' per positive) or of ∇²·s (w = ℓ''·scores): the entries'
    Σ_e w_e E[j_e] per row, the unlabeled quadratic rows, the graph term, then X_bᵀ."""
    ent, _, L = fb
    G = np.empty_like(R)
    if R.shape[0]:
        csr_dense(ent.indptr, ent.indices, w, E, G)
    if has_quad:
        G += 2.0 * _quad_rows(ent, R, M)
    if L is not None:
        G += 2.0 * lamg * _blocks.sparse_times(L, R_near)
    return _back(fb, G)


def grad_task(fb, W, B_near, E, M, kind, abar, has_quad, lamg, n_threads):
    """(the block's part of the gradient, ℓ'' per positive): the second is the curvature state."""
    with limit_threads(n_threads):
        ent = fb[0]
        B = _rows_of(fb, W)
        s = _scores(ent, B, E)
        val, d1, d2 = np.empty_like(s), np.empty_like(s), np.empty_like(s)
        entry_losses(kind, ent.labels, ent.weights, ent.corr, abar, s, val, d1, d2)
        return _block_product(fb, B, B_near, E, M, d1, has_quad, lamg), d2


def hessp_task(fb, S, N_near, E, M, gres, has_quad, lamg, n_threads):
    with limit_threads(n_threads):
        N = _rows_of(fb, S)
        u = _scores(fb[0], N, E) * gres[1]
        return _block_product(fb, N, N_near, E, M, u, has_quad, lamg)


class DistSubProblem:
    """The problem protocol of :func:`fastpu.optim.tron` with every pass a sum of block tasks.

    Each block's task gets, with the call, its own rows of W (without features; W itself, d×k,
    with features) and, with a graph, the rows of B = X W (W itself without features) its
    Laplacian rows touch: the client cuts them, so each block receives its rows, not the whole
    matrix. The other side's rows each block touches (``E``) were assembled on its worker once
    for the half-step.
    """

    def __init__(self, client, side, E, M, kappa, dvec, const, lam, lam_g, abar, kind,
                 has_quad, d, k, n_threads):
        self.client, self.side, self.fb, self.on = client, side, side.fblocks, side.on
        self.E, self.M, self.kappa, self.dvec = E, M, kappa, dvec
        self.const, self.lam, self.abar, self.kind = const, lam, abar, kind
        self.lamg = lam * lam_g if side.L is not None else 0.0
        self.has_quad, self.d, self.k, self.n_threads = has_quad, d, k, n_threads
        self._g = None

    def _mat(self, w):
        return np.ascontiguousarray(w, dtype=np.float64).reshape(self.d, self.k)

    def _send(self, W):
        """Per block: (what its task gets for W, the rows of B its Laplacian rows touch or None)."""
        side = self.side
        if side.X is None:
            own = [np.ascontiguousarray(W[int(side.cuts[b]):int(side.cuts[b + 1])])
                   for b in range(len(self.fb))]
        else:
            own = [W] * len(self.fb)
        touched = side.gtouch
        if side.L is None or touched is None:       # gtouch is set exactly when there is a graph
            return own, [None] * len(self.fb)
        B = W if side.X is None else _xmul(side.X, W)
        return own, [np.ascontiguousarray(B[t]) for t in touched]

    def _run(self, fn, W, *args):
        c = self.client
        own, rows = self._send(W)
        return [c.submit(fn, fb, own[b], rows[b], self.E[b], *args, pure=False, **self.on[b])
                for b, fb in enumerate(self.fb)]

    def _assemble(self, parts):
        return np.concatenate(parts, axis=0) if self.side.X is None else _sum(parts)

    def fun(self, w):
        W = self._mat(w)
        parts = self.client.gather(self._run(fun_task, W, self.M, self.kind, self.abar,
                                             self.has_quad, self.lamg, self.n_threads))
        total = float(sum(p[0] for p in parts))
        quad = float(sum(p[1] for p in parts))
        graph = float(sum(p[2] for p in parts))
        lminus = self.const + quad - 2.0 * self.abar * float(self.dvec @ W @ self.kappa)
        return total + lminus + self.lam * float(np.sum(W * W)) + graph

    def grad(self, w):
        W = self._mat(w)
        self._g = self._run(grad_task, W, self.M, self.kind, self.abar, self.has_quad,
                            self.lamg, self.n_threads)
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
        c = self.client
        own, rows = self._send(S)
        parts = c.gather([c.submit(hessp_task, fb, own[b], rows[b], self.E[b], self.M, self._g[b],
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


def _graph_rows(L, cuts):
    """Per block: its rows of the Laplacian with compact columns, and the rows they touch."""
    rows, touched = [], []
    for Lb in _slices(L, cuts):
        t = np.unique(Lb.indices).astype(np.int64)
        Lc = sp.csr_array((Lb.data, np.searchsorted(t, Lb.indices), Lb.indptr),
                          shape=(Lb.shape[0], t.size))
        rows.append(Lc)
        touched.append(t)
    return rows, touched


class _Side:
    """One side of the distributed fit: its blocks, its weights, its features (or None)."""

    def __init__(self, client, routes, name, own_src, other_src, X, L, own_w, dtype, penalty,
                 every):
        layout = routes.layout
        csr = layout.user if name == "user" else layout.item
        self.cuts = layout.ub if name == "user" else layout.ib
        self.router = routes.user if name == "user" else routes.item
        self.on = [dict(workers=[_blocks.home(layout.workers, b)], allow_other_workers=True)
                   for b in range(len(csr))]
        self.blocks = routes.blocks(make_block, name, penalty, every, own=own_src,
                                    other=other_src)
        self.X, self.L, self.w = X, L, own_w
        # the dtype of the rows this side hands the other side: X W in float64 with features,
        # else the factors' own
        self.dtype = np.dtype(np.float64) if X is not None else np.dtype(dtype)
        self.fblocks = None
        self.gtouch = None
        if X is not None or L is not None:
            # each block's feature and Laplacian rows are arguments of its task: in the graph
            xs = _slices(X, self.cuts) if X is not None else [None] * len(csr)
            if L is not None:
                ls, self.gtouch = _graph_rows(L, self.cuts)
            else:
                ls = [None] * len(csr)
            self.fblocks = [client.submit(feat_block, blk, x, lb, **self.on[b])
                            for b, (blk, x, lb) in enumerate(zip(self.blocks, xs, ls))]
            routes.held += self.fblocks

    @property
    def fast(self):
        return self.X is None and self.L is None


def fit(client, layout, routes, setup, W, H, *, lam, lam_g, abar, kind, const, has_quad, pw, q,
        pw_src, q_src, n_iter, n_inner, rows, penalty, every, n_threads, progress, wrap):
    """Alternating minimisation; ``setup`` = (X, Z, L_u, L_v) as canonicalised at the boundary.
    A fast side's rows live on the workers (a list of futures, one per block); a TRON side's W
    on the client. ``wrap(W, H, U, V)`` makes the callback's ``info["model"]`` of an iterate.
    ``rows`` is the row solver's options record and ``penalty`` each side's rule for its rows'
    λ_i (:func:`fastpu.ocmf._dask_blocks.make_block`), both for the fast sides; ``every``:
    ``negatives="all"``."""
    X, Z, Lu, Lv = setup
    user = _Side(client, routes, "user", pw_src, q_src, X, Lu, pw, W.dtype, penalty["user"],
                 every)
    item = _Side(client, routes, "item", q_src, pw_src, Z, Lv, q, H.dtype, penalty["item"],
                 every)
    workers = layout.workers
    dvec = {id(s): _dvec(client, s) for s in (user, item)}
    Ws = _blocks.hold_slices(client, W, layout.ub, workers, "W") if user.fast else W
    Hs = _blocks.hold_slices(client, H, layout.ib, workers, "H") if item.fast else H
    half = dict(kind=kind, abar=abar, rows=rows, n_threads=n_threads)
    opts = dict(half=half, lam=lam, lam_g=lam_g, abar=abar, kind=kind, const=const,
                has_quad=has_quad, n_inner=n_inner, n_threads=n_threads)
    E_src, M, kappa = _latent(client, item, Hs, n_threads)

    def factors():
        """(W, H, U = X W, V = Z H) on the client, from where they live now."""
        W = _blocks.gather_rows(client, Ws, workers) if user.fast else Ws.copy()
        H = _blocks.gather_rows(client, Hs, workers) if item.fast else Hs.copy()
        U = _blocks.gather_rows(client, _latent(client, user, Ws, n_threads)[0], workers) \
            if X is not None else W
        Vf = _blocks.gather_rows(client, E_src, workers) if Z is not None else H
        return W, H, U, Vf

    for it in range(1, n_iter + 1):
        Ws, inner_w, _, reg_w = _update(client, user, item, Ws, E_src, M, kappa, dvec[id(user)],
                                        **opts)
        B_src, Mw, kw = _latent(client, user, Ws, n_threads)
        Hs, inner_h, sub_value, _ = _update(client, item, user, Hs, B_src, Mw, kw,
                                            dvec[id(item)], **opts)
        E_src, M, kappa = _latent(client, item, Hs, n_threads)
        if progress.step(it, sub_value + reg_w, inner=inner_w + inner_h,
                         model=lambda: wrap(*factors())):
            break
    return factors()


def _dvec(client, side):
    """d = Xᵀp (p itself without features; unused on the fast path)."""
    if side.X is not None:
        return _sum(client.gather([client.submit(dvec_task, fb, **side.on[b])
                                   for b, fb in enumerate(side.fblocks)]))
    return None if side.fast else side.w


def _latent(client, side, state, n_threads):
    """(the side's latent rows as one source per block, M = Fᵀdiag(w)F, κ = Fᵀw).

    A fast side's sources are its blocks' current results; a TRON side without features sends
    each block its rows of W (from the client); with features each block computes X_b W.
    """
    workers = [o["workers"][0] for o in side.on]
    if side.X is None:
        if side.fast:
            src = state
        else:                               # W of a TRON side without features (graph only)
            src = [_blocks.hold(client, np.ascontiguousarray(state[int(side.cuts[b]):
                                                                   int(side.cuts[b + 1])]),
                                b, workers, "rows")
                   for b in range(len(side.blocks))]
            _blocks.settle(client, src)
        parts = client.gather([client.submit(gram_task, blk, src[b], n_threads, **side.on[b])
                               for b, blk in enumerate(side.blocks)])
        M, kappa = _sum_parts(parts)
        return src, M, kappa
    src = [client.submit(latent_task, fb, state, n_threads, **side.on[b])
           for b, fb in enumerate(side.fblocks)]
    parts = client.gather([client.submit(_block_gram, blk, piece, **side.on[b])
                           for b, (blk, piece) in enumerate(zip(side.blocks, src))])
    M, kappa = _sum_parts(parts)
    return src, M, kappa


def _block_gram(blk, B):
    return _blocks.gram(np.ascontiguousarray(B), blk.w, B.shape[1])


def _update(client, side, other, state, E_src, M, kappa, dvec, *, half, lam, lam_g, abar, kind,
            const, has_quad, n_inner, n_threads):
    """Returns (the side's new state: its blocks' results or the new W on the client, solver
    iterations, sub-problem value, the side's regulariser λ(‖F‖² + λ_g tr(BᵀLB)))."""
    router = side.router
    if side.fast:                            # the row-separable path, as in ocmf._dask
        opts = dict(half, dtype=other.dtype.name)
        futs = [client.submit(update_task, blk, state[b], M, kappa, opts,
                              *router.pieces(E_src, b), pure=False, **side.on[b])
                for b, blk in enumerate(side.blocks)]
        res = client.gather([client.submit(_blocks.drop_first, f, **side.on[b])
                             for b, f in enumerate(futs)])
        return (futs, 0, float(sum(r[0] for r in res)) + const,
                float(sum(r[2] for r in res)))
    k = state.shape[1]
    # the other side's rows each block touches, assembled once on its worker for all of TRON's
    # passes of this half-step
    E = [client.submit(routing.assemble, k, other.dtype.name, *router.pieces(E_src, b),
                       pure=False, **side.on[b])
         for b in range(len(side.blocks))]
    prob = DistSubProblem(client, side, E, M, kappa, dvec, const, lam, lam_g, abar, kind,
                          has_quad, state.shape[0], k, n_threads)
    res = tron(prob, state.ravel(), max_iter=n_inner)   # in float64, rounded back as ocmf.fit does
    F = res.x.reshape(state.shape).astype(state.dtype, copy=False)
    reg = float(np.sum(np.square(F)))
    if side.L is not None and lam_g > 0:
        B = F if side.X is None else _xmul(side.X, F)
        reg += lam_g * float(np.sum(B * _blocks.sparse_times(side.L, B)))
    return F, res.nit, res.fun, lam * reg
