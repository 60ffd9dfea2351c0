"""Parallel top-k over dense score rows, skipping each row's seen items."""

import numba as nb
import numpy as np

from .rowpool import MIN_BLOCK_WORK, run_rows, uniform_rows

_JIT = dict(nogil=True, cache=True)


@nb.njit(**_JIT)
def _better(sa, ia, sb, ib):
    """True when (score sa, item ia) ranks above (sb, ib): higher score, then lower index."""
    return sa > sb or (sa == sb and ia < ib)


@nb.njit(**_JIT)
def _sift_down(hs, hi, pos, size):
    # min-heap on rank: the root is the worst of the kept items
    while True:
        left = 2 * pos + 1
        if left >= size:
            return
        worst = left
        right = left + 1
        if right < size and _better(hs[worst], hi[worst], hs[right], hi[right]):
            worst = right
        if _better(hs[pos], hi[pos], hs[worst], hi[worst]):
            hs[pos], hs[worst] = hs[worst], hs[pos]
            hi[pos], hi[worst] = hi[worst], hi[pos]
            pos = worst
        else:
            return


@nb.njit(**_JIT)
def _push(hs, hi, size, k, s, j):
    """Offer (s, j) to a heap of at most k kept items holding ``size``; return the new size."""
    if size < k:
        pos = size
        hs[pos] = s
        hi[pos] = j
        size += 1
        while pos > 0:
            parent = (pos - 1) // 2
            if _better(hs[parent], hi[parent], hs[pos], hi[pos]):
                hs[parent], hs[pos] = hs[pos], hs[parent]
                hi[parent], hi[pos] = hi[pos], hi[parent]
                pos = parent
            else:
                break
    elif _better(s, j, hs[0], hi[0]):
        hs[0] = s
        hi[0] = j
        _sift_down(hs, hi, 0, size)
    return size


@nb.njit(**_JIT)
def _drain(hs, hi, size, k, items_out, scores_out, b):
    """Write the heap best first into row b of the outputs; empty slots get -1 / -inf."""
    for t in range(k):
        items_out[b, t] = -1
        scores_out[b, t] = -np.inf
    while size > 0:
        size -= 1
        items_out[b, size] = hi[0]
        scores_out[b, size] = hs[0]
        hs[0] = hs[size]
        hi[0] = hi[size]
        _sift_down(hs, hi, 0, size)


@nb.njit(**_JIT)
def _topk_rows_rows(lo, hi, scores, seen_indptr, seen_indices, rows, k, items_out, scores_out):
    """``topk_rows`` for the rows lo .. hi − 1 (serial, GIL-free).

    Items are offered in increasing index order, so once k are kept every later item has a
    higher index than all of them and ranks above the worst kept one only with a strictly
    higher score: the scan compares each score with that one threshold, held in a register,
    and looks at the seen-mask and the heap only for the few that pass.
    """
    n = scores.shape[1]
    mask = np.zeros(n, dtype=np.bool_)          # one per block, cleared after each row
    hs = np.empty(k, dtype=np.float64)
    hi_ = np.empty(k, dtype=np.int64)
    for b in range(lo, hi):
        u = rows[b]
        for p in range(seen_indptr[u], seen_indptr[u + 1]):
            mask[seen_indices[p]] = True
        size = 0
        j = 0
        while j < n and size < k:
            if not mask[j]:
                size = _push(hs, hi_, size, k, scores[b, j], j)
            j += 1
        if size == k:
            worst = hs[0]
            for jj in range(j, n):
                s = scores[b, jj]
                if s > worst and not mask[jj]:
                    hs[0] = s
                    hi_[0] = jj
                    _sift_down(hs, hi_, 0, size)
                    worst = hs[0]
        _drain(hs, hi_, size, k, items_out, scores_out, b)
        for p in range(seen_indptr[u], seen_indptr[u + 1]):
            mask[seen_indices[p]] = False


def topk_rows(scores, seen_indptr, seen_indices, rows, k, items_out, scores_out):
    """For each b: the k best items of scores[b] not in row rows[b] of the seen CSR.

    Ranked by score, ties broken by lower item index. Slots beyond the number of
    unseen items get item -1 and score -inf. Scores must be finite (callers check).

    Rows in contiguous blocks, one per thread (:func:`.rowpool.run_rows`).
    """
    def block(lo, hi):
        _topk_rows_rows(lo, hi, scores, seen_indptr, seen_indices, rows, k, items_out,
                        scores_out)

    run_rows(block, uniform_rows(scores.shape[0]), max(1, scores.shape[1] // 16),
             min_work=MIN_BLOCK_WORK)


@nb.njit(parallel=True, **_JIT)
def topk_candidates(scores, seen_indptr, seen_indices, rows, cand, k, items_out, scores_out,
                    nonfinite_out):
    """For each b: the k best items j in ``cand`` of scores[b], j not in row rows[b] of the seen CSR.

    Ranked by score, ties broken by lower item index. A non-finite score (NaN, ±inf) is
    never ranked: it is skipped like a seen item and counted in ``nonfinite_out[b]``.
    Slots beyond the number of ranked items get item -1 and score -inf. ``cand`` must be
    strictly increasing: then, as in ``_topk_rows_rows``, once k are kept a later candidate
    needs only one comparison with the worst kept score.
    """
    n = scores.shape[1]
    nc = cand.shape[0]
    for b in nb.prange(scores.shape[0]):
        mask = np.zeros(n, dtype=np.bool_)
        u = rows[b]
        for p in range(seen_indptr[u], seen_indptr[u + 1]):
            mask[seen_indices[p]] = True
        hs = np.empty(k, dtype=np.float64)
        hi = np.empty(k, dtype=np.int64)
        size = 0
        bad = 0
        t = 0
        while t < nc and size < k:
            j = cand[t]
            t += 1
            if mask[j]:
                continue
            s = scores[b, j]
            if not np.isfinite(s):
                bad += 1
                continue
            size = _push(hs, hi, size, k, s, j)
        if size == k:
            worst = hs[0]
            for tt in range(t, nc):
                j = cand[tt]
                s = scores[b, j]
                if s > worst:
                    if mask[j]:
                        continue
                    if not np.isfinite(s):          # +inf
                        bad += 1
                        continue
                    hs[0] = s
                    hi[0] = j
                    _sift_down(hs, hi, 0, size)
                    worst = hs[0]
                elif not np.isfinite(s) and not mask[j]:     # NaN or -inf
                    bad += 1
        nonfinite_out[b] = bad
        _drain(hs, hi, size, k, items_out, scores_out, b)
