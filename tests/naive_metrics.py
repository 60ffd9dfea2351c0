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


def cost_sensitive(S, train, test, q, mu_p, c_p, users=None):
    """Equations (2) and (3) of Yang et al. by visiting every (user, item) pair.

    Candidates: not a training positive. Positive: a test entry that is not a training one.
    Predicted positive: score > q. Returns the same keys as fastpu.metrics.cost_sensitive.
    """
    users = range(S.shape[0]) if users is None else sorted(set(users))
    T_p = T_n = M_p = M_n = 0
    for u in users:
        for j in range(S.shape[1]):
            if train[u, j]:
                continue
            predicted = S[u, j] > q
            if test[u, j]:
                T_p += 1
                M_p += 0 if predicted else 1
            else:
                T_n += 1
                M_n += 1 if predicted else 0
    recall = (T_p - M_p) / T_p
    specificity = (T_n - M_n) / T_n if T_n else float("nan")
    cost = c_p * M_p + (1 - c_p) * M_n
    return {"weighted_sum": mu_p * recall + (1 - mu_p) * specificity, "weighted_cost": cost,
            "weighted_cost_rate": cost / (T_p + T_n), "recall": recall, "specificity": specificity,
            "false_negatives": M_p, "false_positives": M_n, "n_positives": T_p, "n_negatives": T_n,
            "n_users": len(list(users))}
