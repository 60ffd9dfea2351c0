"""Dense, per-user reference implementations of the ranking metrics, written from the
definitions (docs/evaluation.md; Yu et al. Supp-2.1; Shah, Rao, Ding Sec. 4.2). Slow on purpose."""

import math

import numpy as np


def ranked_candidates(scores_row, train_row):
    """Items not in training, best first (higher score, then lower index)."""
    cand = [j for j in range(scores_row.size) if not train_row[j]]
    return sorted(cand, key=lambda j: (-scores_row[j], j))


def user_metrics(scores_row, train_row, test_row, k):
    """precision, recall, f1, ndcg, map, mrr at cut-off k for one user (None if no relevant item)."""
    rel = {j for j in range(scores_row.size) if test_row[j] and not train_row[j]}
    if not rel:
        return None
    ranking = ranked_candidates(scores_row, train_row)[:k]
    hits = 0
    dcg = 0.0
    ap = 0.0
    rr = 0.0
    for t, j in enumerate(ranking, start=1):
        if j in rel:
            hits += 1
            dcg += 1.0 / math.log2(t + 1)
            ap += hits / t            # precision@t at a relevant position
            if rr == 0.0:
                rr = 1.0 / t
    p = hits / k
    r = hits / len(rel)
    f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    ideal = sum(1.0 / math.log2(t + 1) for t in range(1, min(k, len(rel)) + 1))
    return {"precision": p, "recall": r, "f1": f1, "ndcg": dcg / ideal,
            "map": ap / min(k, len(rel)), "mrr": rr}


def user_auc(scores_row, train_row, test_row):
    """Mean over (relevant, non-relevant candidate) pairs of 1[s_p > s_n] + 1/2 1[s_p == s_n]."""
    pos = [j for j in range(scores_row.size) if test_row[j] and not train_row[j]]
    neg = [j for j in range(scores_row.size) if not test_row[j] and not train_row[j]]
    if not pos or not neg:
        return None
    total = 0.0
    for p in pos:
        for q in neg:
            total += 1.0 if scores_row[p] > scores_row[q] else (0.5 if scores_row[p] == scores_row[q] else 0.0)
    return total / (len(pos) * len(neg))


def evaluate(S, train, test, ks):
    """Average of each per-user metric over users with a relevant item; dense boolean train/test."""
    out = {}
    users = [u for u in range(S.shape[0]) if np.any(test[u] & ~train[u])]
    for k in ks:
        vals = [user_metrics(S[u], train[u], test[u], k) for u in users]
        for name in ("precision", "recall", "f1", "ndcg", "map", "mrr"):
            out[f"{name}@{k}"] = float(np.mean([v[name] for v in vals]))
    aucs = [a for a in (user_auc(S[u], train[u], test[u]) for u in users) if a is not None]
    out["auc"] = float(np.mean(aucs)) if aucs else float("nan")
    out["n_users"] = len(users)
    return out


def evaluate_rated(S, rated, ratings, ks, threshold):
    """HOMF protocol: rank each user's rated test items only; relevant = rating >= threshold."""
    out = {}
    users = [u for u in range(S.shape[0]) if np.any(rated[u] & (ratings[u] >= threshold))]
    for k in ks:
        P, R, AP, N = [], [], [], []
        for u in users:
            items = sorted(np.flatnonzero(rated[u]), key=lambda j: (-S[u, j], j))
            I = [1 if ratings[u, j] >= threshold else 0 for j in items]
            Iu = sum(I)
            top = I[:k]
            P.append(sum(top) / k)
            R.append(sum(top) / Iu)
            AP.append(sum(I[j] * (sum(I[: j + 1]) / (j + 1)) for j in range(min(k, len(I)))) / min(Iu, k))
            dcg = sum((2 ** I[j] - 1) / math.log2(j + 2) for j in range(min(k, len(I))))
            ideal_order = sorted(I, reverse=True)
            idcg = sum((2 ** ideal_order[j] - 1) / math.log2(j + 2) for j in range(min(k, len(I))))
            N.append(dcg / idcg)
        out[f"precision@{k}"] = float(np.mean(P))
        out[f"recall@{k}"] = float(np.mean(R))
        out[f"map@{k}"] = float(np.mean(AP))
        out[f"ndcg@{k}"] = float(np.mean(N))
    out["n_users"] = len(users)
    return out


def auc_against(scores_row, pos, neg):
    """Mean over positives of the fraction of ``neg`` they beat (ties 1/2)."""
    vals = []
    for p in pos:
        vals.append(np.mean([1.0 if scores_row[p] > scores_row[q] else
                             (0.5 if scores_row[p] == scores_row[q] else 0.0) for q in neg]))
    return float(np.mean(vals))
