"""Per-user ranking metrics over blocks of dense score rows (no validation here)."""

import numba as nb
import numpy as np

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


@nb.njit(parallel=True, **_JIT)
def topk_metrics(items, rows, rel_indptr, rel_indices, ks, hits_out, dcg_out, ap_out, rr_out):
    """Cut-off metrics of ranked lists ``items[b]`` (best first, -1 = empty slot).

    For user ``u = rows[b]`` with relevant set R_u = row u of the rel CSR, and
    each cut-off ``ks[q]`` (ascending, ``<= items.shape[1]``), writes the number of
    hits in the first k, DCG@k = sum rel_t / log2(t + 1) over positions t = 1..k,
    the sum of rel_t * hits@t / t (un-normalised AP), and 1 / (first relevant
    position) if it is <= k else 0.
    """
    kmax = items.shape[1]
    nq = ks.shape[0]
    for b in nb.prange(items.shape[0]):
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


@nb.njit(parallel=True, **_JIT)
def auc_rows(scores, rows, train_indptr, train_indices, rel_indptr, rel_indices, auc_out):
    """Exact per-user AUC over all non-training items, ties counted 1/2.

    For user ``u = rows[b]``: candidates are the items not in row u of the train
    CSR; positives are row u of the rel CSR (disjoint from train). One stable sort
    of the candidates' scores; AUC = (sum of positive mid-ranks - P(P+1)/2) / (P N).
    Writes NaN when the user has no positive or no negative candidate.
    """
    n = scores.shape[1]
    for b in nb.prange(scores.shape[0]):
        u = rows[b]
        label = np.zeros(n, dtype=np.int8)
        for p in range(train_indptr[u], train_indptr[u + 1]):
            label[train_indices[p]] = -1
        for p in range(rel_indptr[u], rel_indptr[u + 1]):
            label[rel_indices[p]] = 1
        n_cand = 0
        for j in range(n):
            if label[j] >= 0:
                n_cand += 1
        cs = np.empty(n_cand, dtype=np.float64)
        cl = np.empty(n_cand, dtype=np.int8)
        c = 0
        for j in range(n):
            if label[j] >= 0:
                cs[c] = scores[b, j]
                cl[c] = label[j]
                c += 1
        order = np.argsort(cs, kind="mergesort")
        n_pos = 0
        rank_sum = 0.0
        t = 0
        while t < n_cand:
            # a run of tied scores occupies ranks t+1 .. e; each gets the mid-rank
            e = t + 1
            while e < n_cand and cs[order[e]] == cs[order[t]]:
                e += 1
            mid = 0.5 * (t + 1 + e)
            for r in range(t, e):
                if cl[order[r]] == 1:
                    n_pos += 1
                    rank_sum += mid
            t = e
        n_neg = n_cand - n_pos
        if n_pos == 0 or n_neg == 0:
            auc_out[b] = np.nan
        else:
            auc_out[b] = (rank_sum - 0.5 * n_pos * (n_pos + 1.0)) / (n_pos * float(n_neg))


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
