"""Approximate nearest-neighbour search for ``recommend`` and ``similar_*`` on large catalogues.

An :class:`ApproximateIndex` holds a faiss index over one side's factor rows, searched by inner
product: the scores themselves for ``recommend`` (maximum inner-product search over the item
factors), cosines for ``similar_*`` (the rows normalised first). Two kinds: an HNSW graph
(Malkov & Yashunin; the default: the best recall for the query time) and an inverted file of
k-means cells (``kind="ivf"``: several times quicker to build, what ``approximate=True`` builds
for one call). The library was chosen by measurement (docs/benchmarks/bench_ann.md): on a million
items with k = 64 both reached recall@10 ≥ 0.95 against the exact ranking at more than 50 times
its speed; hnswlib was slower for the same recall and pynndescent cannot search inner products.

What comes back is always scored exactly: the index proposes a short list per query (the top
``n`` plus room for the seen and filtered items), the proposals are re-scored with the model's
own factors in float64, filtered like the exact path (seen items, ``items`` / ``exclude``, the
query itself) and ranked with the same tie rule. A query whose short list runs out before ``n``
(many seen or filtered items) is ranked exactly instead, so a result is never shorter than the
exact one. Only the order can differ from the exact path: an item the graph search missed.

faiss is an optional dependency (``pip install -e ".[ann]"``, or ``pip install faiss-cpu``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.factorization import Factorization, check_model
from fastpu._core.hints import IntArray, Sparse
from fastpu.model._exact import exact_similar, exact_topk, normalised_rows

__all__ = ["ApproximateIndex"]

# a short list longer than this (many seen / filtered items) is not worth a graph search
_MAX_LIST = 2048
_BLOCK = 2048                      # queries re-scored at a time (list × k floats each)


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise ImportError("approximate search needs faiss, which is not installed: pip install "
                          'faiss-cpu (or pip install -e ".[ann]" in a clone of fastpu); without it, '
                          "leave approximate=False (exact ranking)") from None
    return faiss


def _fingerprint(F: np.ndarray) -> str:
    """A checksum of the factor rows an index was built from (a sample of rows for speed)."""
    step = max(1, F.shape[0] // 4096)
    h = hashlib.sha1(np.ascontiguousarray(F[::step], dtype=np.float64).tobytes())
    h.update(repr(F.shape).encode())
    return h.hexdigest()


class ApproximateIndex:
    """An approximate nearest-neighbour index over one side of a fitted model (faiss HNSW).

    Build it once and pass it as ``approximate=`` to :func:`fastpu.recommend`
    (``side="item"``, ``similarity="dot"``: the model's scores) or to
    :func:`fastpu.similar_items` / :func:`fastpu.similar_users` (``similarity="cosine"``).
    ``approximate=True`` in those calls builds a throw-away index, which only pays when the
    call ranks many users.

    Parameters
    ----------
    model : Factorization
        A fitted model whose scores are the product of its factors (every method; CSRR-e's sparse
        part is added back exactly when its items are re-scored). CSRR-I/II, whose scores come
        from a dense m × n matrix, are refused.
    side : {"item", "user"}
        The rows to index: items (for ``recommend`` and ``similar_items``) or users
        (``similar_users``).
    similarity : {"dot", "cosine"}
        ``"dot"`` ranks by the inner product (``recommend``'s scores; items only), ``"cosine"``
        by the cosine (``similar_*``).
    kind : {"hnsw", "ivf"}
        An HNSW graph (faiss ``IndexHNSWFlat``; default) or an inverted file of k-means cells
        (faiss ``IndexIVFFlat``), which builds several times faster and searches somewhat less
        accurately for the same time (docs/benchmarks/bench_ann.md).
    M : int
        HNSW: links per node (faiss's ``M``); more is slower to build, more accurate.
    ef_construction : int
        HNSW: breadth of the search while building (faiss's ``efConstruction``).
    ef_search : int
        HNSW: breadth of each query's search (faiss's ``efSearch``), the speed / recall knob.
        The default reached recall@10 0.98 in docs/benchmarks/bench_ann.md; set the attribute to
        change it.
    n_cells : int, optional
        IVF: k-means cells (default 4·√rows, at least 1), trained on at most 40 rows per cell.
    n_probe : int
        IVF: cells searched per query, the speed / recall knob (default 64, recall@10 0.95 in
        docs/benchmarks/bench_ann.md); set the attribute to change it.
    n_threads : int, optional
        Threads faiss uses to build and search (default: numba's current count).

    Raises
    ------
    ImportError
        If faiss is not installed.
    TypeError
        If ``model`` is not a Factorization.
    ValueError
        If ``side`` / ``similarity`` is unknown, ``"dot"`` is asked of the user side, a count is
        below 1, the factors are not finite, or the model's scores are not a product of factors.

    Examples
    --------
    >>> import fastpu as fp
    >>> data = fp.datasets.synthetic(200, 500, rank=4, density=0.05, seed=0)
    >>> model = fp.ocmf.fit(data.Y, 8, n_iter=3)
    >>> index = fp.model.ApproximateIndex(model)                 # doctest: +SKIP
    >>> items, scores = fp.recommend(model, data.Y, n=10, approximate=index)   # doctest: +SKIP
    """

    def __init__(self, model: Factorization, *, side: str = "item", similarity: str = "dot",
                 kind: str = "hnsw", M: int = 32, ef_construction: int = 80, ef_search: int = 64,
                 n_cells: int | None = None, n_probe: int = 64,
                 n_threads: int | None = None) -> None:
        faiss = _faiss()
        model = check_model(model)
        self.side = V.check_choice(side, name="side", choices=("item", "user"))
        self.similarity = V.check_choice(similarity, name="similarity", choices=("dot", "cosine"))
        if self.similarity == "dot" and self.side == "user":
            raise ValueError('similarity="dot" ranks items for users (recommend); index users '
                             'with similarity="cosine" (similar_users)')
        plain = type(model).scores is Factorization.scores or (
            getattr(model, "U", "absent") is None and sp.issparse(getattr(model, "V", None)))
        if self.similarity == "dot" and not plain and getattr(model, "U", None) is None:
            raise ValueError(f"this {type(model).__name__}'s scores are not the product of its "
                             "factors (plus CSRR-e's sparse part), which is what an index can "
                             "search; rank it exactly (approximate=False)")
        if getattr(model, "U", None) is not None:
            raise ValueError("this model's scores come from a dense m × n matrix U (CSRR-I/II), not "
                             "from factors an index can search; rank it exactly "
                             "(approximate=False), or refit with csrr variant 'e'")
        self.kind = V.check_choice(kind, name="kind", choices=("hnsw", "ivf"))
        self.M = V.check_int(M, name="M", minimum=2)
        self.n_probe = V.check_int(n_probe, name="n_probe", minimum=1)
        self.ef_construction = V.check_int(ef_construction, name="ef_construction", minimum=1)
        self.ef_search = V.check_int(ef_search, name="ef_search", minimum=1)
        self.n_threads = None if n_threads is None else V.check_int(n_threads, name="n_threads",
                                                                    minimum=1)
        F = np.asarray(model.item_factors if side == "item" else model.user_factors,
                       dtype=np.float64)
        V.check_dense(F, name=f"model.{side}_factors")
        self.fingerprint = _fingerprint(F)
        self.size, self.k = F.shape
        if self.similarity == "cosine":

            F = normalised_rows(F)
        self.vectors = F                     # float64: what proposals are re-scored with
        X = np.ascontiguousarray(F, dtype=np.float32)
        dim = max(1, self.k)
        if self.kind == "hnsw":
            self.n_cells = None
            self.index = faiss.IndexHNSWFlat(dim, self.M, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = self.ef_construction
        else:
            cells = n_cells if n_cells is not None else max(1, int(4 * np.sqrt(self.size)))
            self.n_cells = V.check_int(cells, name="n_cells", minimum=1)
            self.n_cells = max(1, min(self.n_cells, self.size))
            self.quantizer = faiss.IndexFlatIP(dim)
            self.index = faiss.IndexIVFFlat(self.quantizer, dim, self.n_cells,
                                            faiss.METRIC_INNER_PRODUCT)
        with self._threads():
            if self.size:
                if self.n_cells is not None:
                    take = min(self.size, 40 * self.n_cells)
                    rows = np.random.default_rng(0).choice(self.size, take, replace=False)
                    self.index.train(X[np.sort(rows)])
                self.index.add(X)

    def __repr__(self) -> str:
        knobs = (f"M={self.M}, ef_search={self.ef_search}" if self.kind == "hnsw"
                 else f"n_cells={self.n_cells}, n_probe={self.n_probe}")
        return (f"ApproximateIndex(kind={self.kind!r}, side={self.side!r}, "
                f"similarity={self.similarity!r}, {self.size} rows × k={self.k}, {knobs})")

    # ------------------------------------------------------------------ plumbing

    def _threads(self) -> Any:
        faiss = _faiss()
        index = self

        class _Limit:
            def __enter__(self) -> None:
                import numba

                self.before = faiss.omp_get_max_threads()
                faiss.omp_set_num_threads(index.n_threads or numba.get_num_threads())

            def __exit__(self, *exc: Any) -> None:
                faiss.omp_set_num_threads(self.before)
        return _Limit()

    def check_model(self, model: Factorization, *, side: str, similarity: str) -> None:
        """A ValueError unless this index was built for ``side`` / ``similarity`` of ``model``."""
        if (side, similarity) != (self.side, self.similarity):
            raise ValueError(f"this ApproximateIndex was built with side={self.side!r}, "
                             f"similarity={self.similarity!r}; this call needs side={side!r}, "
                             f"similarity={similarity!r}: build one with "
                             f"ApproximateIndex(model, side={side!r}, similarity={similarity!r})")
        F = model.item_factors if side == "item" else model.user_factors
        if _fingerprint(np.asarray(F, dtype=np.float64)) != self.fingerprint:
            raise ValueError(f"this ApproximateIndex was built from other {side} factors than "
                             "this model's (another model, or one refitted / partially fitted "
                             "since): build a new one for this model")

    def _search(self, Q: np.ndarray, want: int) -> np.ndarray:
        want = max(1, min(want, self.size))
        if self.kind == "hnsw":
            self.index.hnsw.efSearch = max(self.ef_search, want)
        else:
            self.index.nprobe = min(self.n_probe, self.n_cells or 1)
        with self._threads():
            _, labels = self.index.search(np.ascontiguousarray(Q, dtype=np.float32), want)
        return np.asarray(labels, dtype=np.int64)

    # ------------------------------------------------------------------ recommend

    def recommend(self, model: Factorization, users: IntArray, seen: Sparse, cand: IntArray,
                  n_take: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``n_take`` candidates per user (the exact path's shapes and padding)."""
        out_items = np.full((users.size, n_take), -1, dtype=np.int64)
        out_scores = np.full((users.size, n_take), -np.inf)
        if n_take == 0 or users.size == 0:
            return out_items, out_scores
        n = self.size
        allowed = None
        if cand.size < n:
            allowed = np.zeros(n, dtype=bool)
            allowed[cand] = True
        n_seen = np.diff(seen.indptr)[users]
        # room for what is filtered out: the user's seen items and the non-candidates
        want = n_take + n_seen + (n - cand.size)
        short = want > min(_MAX_LIST, n)                     # these are ranked exactly
        extra = getattr(model, "V", None)                    # CSRR-e's sparse part
        U = np.asarray(model.user_factors, dtype=np.float64)
        fast = np.flatnonzero(~short)
        for start in range(0, fast.size, _BLOCK):
            rows = fast[start:start + _BLOCK]
            labels = self._search(U[users[rows]], int(want[rows].max()))
            if extra is not None and sp.issparse(extra):    # items the sparse part lifts
                labels = _with_sparse_items(labels, extra, users[rows])
            got_i, got_s, full = self._finish(U[users[rows]], labels, users[rows], seen, allowed,
                                              n_take, extra)
            out_items[rows], out_scores[rows] = got_i, got_s
            short[rows[~full]] = True                        # ran out: rank those exactly
        redo = np.flatnonzero(short)
        if redo.size:
            out_items[redo], out_scores[redo] = exact_topk(model, users[redo], seen, cand, n_take)
        return out_items, out_scores

    def _finish(self, Uq: np.ndarray, labels: np.ndarray, users: IntArray, seen: Sparse,
                allowed: np.ndarray | None, n_take: int,
                extra: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Re-score proposals exactly, drop seen / non-candidate / duplicate ones, take the best."""
        ok = labels >= 0
        safe = np.where(ok, labels, 0)
        S = np.einsum("bk,blk->bl", Uq, self.vectors[safe])
        if extra is not None and sp.issparse(extra):
            S += _sparse_values(extra, users, safe)
        if allowed is not None:
            ok &= allowed[safe]
        ok &= ~_in_rows(seen, users, safe)
        # a label proposed twice (the sparse part's items) counts once
        srt = np.sort(np.where(ok, safe, -1), axis=1)
        dup_any = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
        if dup_any.any():
            width = safe.shape[1]
            for r in np.flatnonzero(dup_any.any(axis=1)):
                _, first = np.unique(np.where(ok[r], safe[r], -1 - np.arange(width)),
                                     return_index=True)
                keep = np.zeros(width, dtype=bool)
                keep[first] = True
                ok[r] &= keep
        S = np.where(ok, S, -np.inf)
        order = np.lexsort((safe, -S), axis=1)[:, :n_take]
        items = np.take_along_axis(safe, order, axis=1)
        scores = np.take_along_axis(S, order, axis=1)
        full = np.isfinite(scores).all(axis=1)
        items = np.where(np.isfinite(scores), items, -1)
        return items, scores, full

    # ------------------------------------------------------------------ similar

    def similar(self, q: IntArray, cand: IntArray, n_take: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``n_take`` most similar candidates of each query (itself left out)."""
        out_idx = np.full((q.size, n_take), -1, dtype=np.int64)
        out_sc = np.full((q.size, n_take), -np.inf)
        if n_take == 0 or q.size == 0:
            return out_idx, out_sc
        N = self.size
        allowed = np.zeros(N, dtype=bool)
        allowed[cand] = True
        want = n_take + 1 + (N - cand.size)
        if want > min(_MAX_LIST, N):
            return exact_similar(self.vectors, q, cand, n_take)
        short = np.zeros(q.size, dtype=bool)
        for start in range(0, q.size, _BLOCK):
            rows = np.arange(start, min(q.size, start + _BLOCK))
            labels = self._search(self.vectors[q[rows]], want)
            ok = labels >= 0
            safe = np.where(ok, labels, 0)
            ok &= allowed[safe] & (safe != q[rows][:, None])
            S = np.clip(np.einsum("bk,blk->bl", self.vectors[q[rows]], self.vectors[safe]), -1.0, 1.0)
            S = np.where(ok, S, -np.inf)
            order = np.lexsort((safe, -S), axis=1)[:, :n_take]
            got_i = np.take_along_axis(safe, order, axis=1)
            got_s = np.take_along_axis(S, order, axis=1)
            out_idx[rows], out_sc[rows] = got_i, got_s
            short[rows] = ~np.isfinite(got_s).all(axis=1)
        redo = np.flatnonzero(short)
        if redo.size:
            out_idx[redo], out_sc[redo] = exact_similar(self.vectors, q[redo], cand, n_take)
        return out_idx, out_sc


def _in_rows(M: Sparse, rows: IntArray, cols: np.ndarray) -> np.ndarray:
    """Whether (rows[r], cols[r, c]) is stored in the canonical CSR ``M``, for every r, c."""
    n = np.int64(M.shape[1])
    starts, stops = M.indptr[rows], M.indptr[rows + 1]
    if not np.any(stops > starts):
        return np.zeros(cols.shape, dtype=bool)
    keys = np.repeat(np.arange(rows.size, dtype=np.int64), stops - starts) * n + np.concatenate(
        [M.indices[a:b] for a, b in zip(starts, stops)])
    want = np.arange(rows.size, dtype=np.int64)[:, None] * n + cols
    pos = np.searchsorted(keys, want)
    pos = np.minimum(pos, keys.size - 1)
    return keys[pos] == want


def _sparse_values(M: Sparse, rows: IntArray, cols: np.ndarray) -> np.ndarray:
    """M[rows[r], cols[r, c]] for every r, c (0 where nothing is stored)."""
    sub = sp.csr_array(M[rows])
    sub.sort_indices()
    out = np.zeros(cols.shape)
    for r in range(rows.size):
        a, b = sub.indptr[r], sub.indptr[r + 1]
        if a == b:
            continue
        idx = sub.indices[a:b]
        pos = np.minimum(np.searchsorted(idx, cols[r]), idx.size - 1)
        hit = idx[pos] == cols[r]
        out[r, hit] = sub.data[a:b][pos[hit]]
    return out


def _with_sparse_items(labels: np.ndarray, M: Sparse, rows: IntArray) -> np.ndarray:
    """Each row's proposals plus the items the sparse part stores for that user (-1 padded)."""
    sub = sp.csr_array(M[rows])
    width = int(np.diff(sub.indptr).max()) if rows.size else 0
    if width == 0:
        return labels
    more = np.full((rows.size, width), -1, dtype=np.int64)
    for r in range(rows.size):
        idx = sub.indices[sub.indptr[r]:sub.indptr[r + 1]]
        more[r, :idx.size] = idx
    return np.hstack([labels, more])
