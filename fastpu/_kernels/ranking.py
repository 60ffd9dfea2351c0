"""Per-user ranking metrics over blocks of dense score rows (no validation here)."""

import numba as nb
import numpy as np

from .rowpool import MIN_BLOCK_WORK, run_rows, uniform_rows

_JIT = dict(nogil=True, cache=True)


@nb.njit(**_JIT)
def _contains(indices, lo, hi, j):
    """True when sorted ``indices[lo:hi]`` contains ``j`` (binary search)."""
    while lo < hi:
        mid = (lo + hi) // 2
        v = indices[mid]
        if v == j:
            return True
        if v < j:
            lo = mid + 1
        else:
            hi = mid
    return False


@nb.njit(**_JIT)
def _topk_metrics_rows(lo, hi, items, rows, rel_indptr, rel_indices, ks, hits_out, dcg_out, ap_out,
                       rr_out):
    """``topk_metrics`` for the rows lo .. hi − 1 (serial, GIL-free)."""
    kmax = items.shape[1]
    nq = ks.shape[0]
    for b in range(lo, hi):
        u = rows[b]
        lo = rel_indptr[u]
        hi = rel_indptr[u + 1]
        hits = 0
        dcg = 0.0
        ap = 0.0
        rr = 0.0
        q = 0
        for t in range(kmax):
            j = items[b, t]
            if j >= 0 and _contains(rel_indices, lo, hi, j):
                hits += 1
                dcg += 1.0 / np.log2(t + 2.0)
                ap += hits / (t + 1.0)
                if rr == 0.0:
                    rr = 1.0 / (t + 1.0)
            while q < nq and ks[q] == t + 1:
                hits_out[b, q] = hits
                dcg_out[b, q] = dcg
                ap_out[b, q] = ap
                rr_out[b, q] = rr
                q += 1


def topk_metrics(items, rows, rel_indptr, rel_indices, ks, hits_out, dcg_out, ap_out, rr_out):
    """Cut-off metrics of ranked lists ``items[b]`` (best first, -1 = empty slot).

    For user ``u = rows[b]`` with relevant set R_u = row u of the rel CSR, and
    each cut-off ``ks[q]`` (ascending, ``<= items.shape[1]``), writes the number of
    hits in the first k, DCG@k = sum rel_t / log2(t + 1) over positions t = 1..k,
    the sum of rel_t * hits@t / t (un-normalised AP), and 1 / (first relevant
    position) if it is <= k else 0.

    Rows in contiguous blocks, one per thread (:func:`.rowpool.run_rows`).
    """
    def block(lo, hi):
        _topk_metrics_rows(lo, hi, items, rows, rel_indptr, rel_indices, ks, hits_out,
                           dcg_out, ap_out, rr_out)

    run_rows(block, uniform_rows(items.shape[0]), items.shape[1], min_work=MIN_BLOCK_WORK)


@nb.njit(parallel=True, **_JIT)
def mask_rows(block, rows, indptr, indices, value):
    """block[b, j] = value for every stored (rows[b], j) of the CSR."""
    for b in nb.prange(block.shape[0]):
        u = rows[b]
        for p in range(indptr[u], indptr[u + 1]):
            block[b, indices[p]] = value


@nb.njit(**_JIT)
def _auc_sorted_rows(lo, hi, scores, sorted_neg, rows, train_indptr, rel_indptr, rel_indices,
                     auc_out):
    """``auc_sorted`` for the rows lo .. hi − 1 (serial, GIL-free)."""
    n = scores.shape[1]
    for b in range(lo, hi):
        u = rows[b]
        n_pos = rel_indptr[u + 1] - rel_indptr[u]
        n_neg = n - (train_indptr[u + 1] - train_indptr[u]) - n_pos
        if n_pos == 0 or n_neg == 0:
            auc_out[b] = np.nan
            continue
        neg = sorted_neg[b, :n_neg]
        total = 0.0
        for p in range(rel_indptr[u], rel_indptr[u + 1]):
            s = scores[b, rel_indices[p]]
            below = np.searchsorted(neg, s, side="left")
            upto = np.searchsorted(neg, s, side="right")
            total += below + 0.5 * (upto - below)
        auc_out[b] = total / (n_pos * float(n_neg))


def auc_sorted(scores, sorted_neg, rows, train_indptr, rel_indptr, rel_indices, auc_out):
    """Exact per-user AUC over all non-training items, ties counted 1/2.

    For user ``u = rows[b]``: positives are row u of the rel CSR (disjoint from
    the train CSR), negatives every other non-training item. ``sorted_neg[b]``
    holds the negatives' scores sorted ascending in its first N slots
    (N = n - |train_u| - |rel_u|; the rest is NaN padding). With two binary
    searches per positive, AUC = sum_p (#neg < s_p + 1/2 #neg == s_p) / (P N).
    Writes NaN when the user has no positive or no negative.

    Rows in contiguous blocks, one per thread (:func:`.rowpool.run_rows`).
    """
    def block(lo, hi):
        _auc_sorted_rows(lo, hi, scores, sorted_neg, rows, train_indptr, rel_indptr,
                         rel_indices, auc_out)

    run_rows(block, uniform_rows(scores.shape[0]), 16, min_work=MIN_BLOCK_WORK)


@nb.njit(parallel=True, **_JIT)
def pairwise_auc(pos_scores, pos_indptr, neg_scores, neg_indptr, auc_out):
    """Per-user mean over positives of P(positive > sampled negative), ties 1/2.

    Positives of user b are ``pos_scores[pos_indptr[b]:pos_indptr[b+1]]``, its
    sampled negatives ``neg_scores[neg_indptr[b]:neg_indptr[b+1]]``. NaN when
    either list is empty.
    """
    for b in nb.prange(pos_indptr.shape[0] - 1):
        p0 = pos_indptr[b]
        p1 = pos_indptr[b + 1]
        n0 = neg_indptr[b]
        n1 = neg_indptr[b + 1]
        if p1 == p0 or n1 == n0:
            auc_out[b] = np.nan
            continue
        neg = np.sort(neg_scores[n0:n1])
        nn = n1 - n0
        total = 0.0
        for p in range(p0, p1):
            s = pos_scores[p]
            below = np.searchsorted(neg, s, side="left")
            upto = np.searchsorted(neg, s, side="right")
            total += (below + 0.5 * (upto - below)) / nn
        auc_out[b] = total / (p1 - p0)
