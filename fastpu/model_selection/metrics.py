"""Ranking metrics for fitted models, a popularity baseline, and HOMF's rated-item protocol.

Scores are produced in memory-bounded blocks of users
(:func:`fastpu._core.factorization.iter_score_blocks`) and reduced by numba kernels in
:mod:`fastpu._kernels.ranking`, so nothing of size users × items is allocated.
Per-user values are averaged in a fixed order, so results are identical for any
thread count. The definitions are written out in ``docs/evaluation.md``.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from typing import Any, Sequence

import numpy as np

from fastpu._core import validation as V
from fastpu._core.memory import check_alloc
from fastpu.model_selection import _scoring as scoring
from fastpu.model_selection._cost import cost_sensitive  # CSRR paper's measures (2) and (3), re-exported
from fastpu._kernels.ranking import auc_sorted, mask_rows, pairwise_auc, topk_metrics
from fastpu._kernels.topk import topk_rows
from fastpu._core.progress import Progress
from fastpu._core.threads import check_threads, limit_threads
from fastpu._core.hints import ArrayLike, Callback, IntArray, Matrix, Seed, Sparse, Threads
from fastpu._core.factorization import Factorization, accepts_dataset, iter_score_blocks, positives
from fastpu._core.dataset import Dataset

__all__ = ["evaluate", "evaluate_rated", "sampled_auc", "popularity", "cost_sensitive", "METRICS"]

#: Metric names accepted by ``evaluate(metrics=...)``; all but "auc" are reported at each k.
METRICS = ("precision", "recall", "f1", "ndcg", "map", "mrr", "auc")
_RATED_METRICS = ("precision", "recall", "map", "ndcg")


# ----------------------------------------------------------------------------- boundary helpers

def _check_ks(k: Any) -> IntArray:
    """Cut-offs as a sorted, duplicate-free int64 array of integers >= 1."""
    if isinstance(k, numbers.Integral) and not isinstance(k, bool):
        ks = [k]
    elif isinstance(k, (list, tuple, np.ndarray, range)):
        ks = list(np.asarray(k).ravel()) if isinstance(k, np.ndarray) else list(k)
        if not ks:
            raise ValueError("k must be an integer >= 1 or a non-empty sequence of them, got an empty sequence")
    else:
        raise TypeError(f"k must be an integer >= 1 or a sequence of them, got {k!r}")
    for v in ks:
        V.check_k(v, name="k")
    return np.unique(np.asarray([int(v) for v in ks], dtype=np.int64))


def _check_metric_names(metrics: Any, allowed: Sequence[str]) -> tuple[str, ...]:
    if metrics is None:
        return tuple(allowed)
    if isinstance(metrics, (str, bytes)):
        metrics = (metrics,)
    try:
        names = list(metrics)
    except TypeError:
        raise TypeError(f"metrics must be None or a sequence of metric names, got {metrics!r}") from None
    if not names:
        raise ValueError(f"metrics must name at least one of {', '.join(allowed)}; got an empty sequence")
    for name in names:
        if name not in allowed:
            raise ValueError(f"metrics: unknown metric {name!r}; expected one of {', '.join(repr(a) for a in allowed)}")
    return tuple(a for a in allowed if a in names)


def _ideal_dcg(kmax: int) -> np.ndarray:
    """idcg[c] = sum_{t=1..c} 1 / log2(t + 1) for c = 0..kmax."""
    out = np.zeros(kmax + 1)
    np.cumsum(1.0 / np.log2(np.arange(2, kmax + 2, dtype=np.float64)), out=out[1:])
    return out


# ----------------------------------------------------------------------------- evaluate

def evaluate(model: Factorization, Y_train: Sparse | Dataset, Y_test: Sparse | Dataset,
             k: int | Sequence[int] | IntArray = (1, 5, 10), metrics: Sequence[str] | None = None,
             users: ArrayLike | None = None, n_threads: Threads = None, *,
             as_frame: bool = False) -> Any:
    """Top-k ranking metrics and AUC of a fitted model on held-out positives.

    For each evaluated user u, the candidates are all items except u's training
    positives; the relevant set R_u is u's test positives that are not training
    positives. Users with an empty R_u are skipped. Candidates are ranked by
    score, ties broken by lower item index (as :func:`fastpu.recommend`).
    With ``hits@k`` the number of relevant items among the first k:

    - ``precision@k`` = hits@k / k;  ``recall@k`` = hits@k / |R_u|;
    - ``f1@k``: the per-user harmonic mean 2PR / (P + R) of that user's
      precision@k and recall@k (0 when both are 0), then averaged over users
      (not the harmonic mean of the averaged P and R);
    - ``ndcg@k`` = DCG@k / IDCG@k, DCG@k = sum over ranks t <= k of
      rel_t / log2(t + 1), IDCG@k the same sum over the first min(k, |R_u|) ranks
      (Yu et al., Supp-2.1);
    - ``map@k`` = (sum over t <= k of rel_t * precision@t) / min(k, |R_u|);
    - ``mrr@k`` = 1 / (rank of the first relevant item) if it is <= k, else 0;
    - ``auc``: exact P(score of a relevant item > score of a non-relevant
      candidate), ties counting 1/2, from one sort per user (users whose every
      candidate is relevant have no AUC and are left out of its average).

    Every metric is averaged over the evaluated users with equal weight.

    Parameters
    ----------
    model : Factorization
        A fitted model (any subclass; only ``model.scores`` and ``model.shape`` are used).
    Y_train : scipy.sparse matrix, shape (m, n), or Dataset
        Training positives, excluded from each user's ranking. A
        :class:`~fastpu.datasets.Dataset` (from ``fastpu.split`` of one, or the data the model
        was fitted on) is matched to the model by user and item id where both have ids
        (entries of ids the model does not know are left out), by position otherwise.
    Y_test : scipy.sparse matrix, shape (m, n), or Dataset
        Held-out positives (the stored entries; values are ignored); a Dataset as ``Y_train``.
    k : int or sequence of int
        Cut-offs, each >= 1.
    metrics : sequence of str, optional
        Subset of ``METRICS`` to compute (all when ``None``).
    users : array-like of int, optional
        Restrict the evaluation to these users (still only those with test items).
    n_threads : int, optional
        Numba threads for the ranking kernels (current setting when ``None``).
    as_frame : bool, keyword-only
        Return a pandas DataFrame with one row per value — columns ``metric``, ``k``
        (``<NA>`` for AUC) and ``value`` — and ``n_users`` in its ``attrs``. Needs pandas.

    Returns
    -------
    dict
        ``"<metric>@<k>"`` for each selected cut-off metric and k, ``"auc"`` if
        selected, and ``"n_users"`` (the number of users evaluated). Values are floats.
        A DataFrame with ``as_frame=True``.

    Raises
    ------
    TypeError
        If ``model`` is not a fitted model, a matrix is not sparse, ``k`` is not
        an integer or sequence of integers, or ``metrics`` is not a sequence.
    ValueError
        If shapes disagree with the model, ``k < 1``, a metric name is unknown,
        no user has a test item outside its training items, or the model
        produces non-finite scores.

    Warns
    -----
    UserWarning
        When ``Y_test`` holds more than twice as many positives as a non-empty ``Y_train``
        (and at least 1000): swapped arguments give inflated scores without any other sign.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model import Factorization
    >>> from fastpu.model_selection.metrics import evaluate
    >>> model = Factorization(np.ones((2, 1)), np.array([[3.0], [2.0], [1.0]]))
    >>> Y_train = sp.csr_array(np.array([[1.0, 0, 0], [0, 0, 0]]))
    >>> Y_test = sp.csr_array(np.array([[0.0, 0, 1], [1.0, 0, 0]]))
    >>> res = evaluate(model, Y_train, Y_test, k=1)
    >>> res["precision@1"], res["auc"], res["n_users"]
    (0.5, 0.5, 2)
    >>> evaluate(model, Y_train, Y_test, k=1, metrics=["precision"], as_frame=True)
          metric  k  value
    0  precision  1    0.5
    """
    if not isinstance(as_frame, (bool, np.bool_)):
        raise TypeError(f"as_frame must be True or False, got {as_frame!r}")
    m, n = scoring.model_shape(model)
    if isinstance(Y_train, Dataset) or isinstance(Y_test, Dataset):
        from fastpu.model import on_model

        if isinstance(Y_train, Dataset):
            Y_train = on_model(model, Y_train, name="Y_train")
        if isinstance(Y_test, Dataset):
            Y_test = on_model(model, Y_test, name="Y_test")
    Y_train = V.check_csr(Y_train, name="Y_train", shape=(m, n), nonnegative=False,
                         shape_from="model.shape, users × items")
    Y_test = V.check_csr(Y_test, name="Y_test", shape=(m, n), nonnegative=False,
                         shape_from="model.shape, users × items")
    ks = _check_ks(k)
    selected = _check_metric_names(metrics, METRICS)
    if Y_train.nnz and Y_test.nnz >= 1000 and Y_test.nnz > 2 * Y_train.nnz:   # (none seen: cold start)
        # swapped arguments rank a handful of items against most of a user's positives: the
        # scores come out far higher than the real ones, with nothing else amiss
        warnings.warn(f"Y_test holds {Y_test.nnz / max(Y_train.nnz, 1):.1f}× as many positives as "
                      f"Y_train ({Y_test.nnz} against {Y_train.nnz}): if the two are swapped, every "
                      "score is inflated (evaluate(model, Y_train, Y_test)); for a protocol that "
                      "holds out most positives, ignore this", UserWarning, stacklevel=2)
    rel = scoring.relevant(Y_train, Y_test)
    users = _evaluated_users(users, m, rel)
    # a list longer than the n items holds only empty slots: rank min(k, n) items, and let
    # precision@k still divide by k
    kmax = min(int(ks[-1]), n)
    want_topk = any(name != "auc" for name in selected)
    want_auc = "auc" in selected
    step = scoring.score_block_rows(n)
    # per block of users: its scores (two copies with AUC) and the top-kmax items and scores
    check_alloc(8 * min(step, users.size) * (3 * n + 2 * kmax) + 40 * users.size * ks.size,
                what="evaluate (score blocks and top-k lists)", names=("k",))
    with limit_threads(n_threads):
        sums = _rank(model, users, Y_train, rel, ks, kmax, want_topk, want_auc)
    result = _summarise(sums, users, np.diff(rel.indptr), ks, kmax, selected)
    return as_table(result) if as_frame else result


def as_table(result: dict[str, Any]) -> Any:
    """An ``evaluate`` result as a DataFrame: columns metric, k, value; ``attrs["n_users"]``."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("as_frame=True needs pandas, which is not installed: pip install pandas "
                          "(or leave as_frame out to get a dict)") from None
    rows = []
    for key, value in result.items():
        if key == "n_users":
            continue
        metric, _, at = key.partition("@")
        rows.append((metric, int(at) if at else None, float(value)))
    frame = pd.DataFrame(rows, columns=["metric", "k", "value"])
    frame["k"] = frame["k"].astype("Int64")
    frame.attrs["n_users"] = result.get("n_users")
    return frame


def _evaluated_users(users: ArrayLike | None, m: int, rel: Sparse) -> IntArray:
    """The users to evaluate: those asked for (all by default) that have a relevant test item."""
    sel = users
    users = np.unique(V.check_users(users, m))
    n_rel: IntArray = np.diff(rel.indptr)
    users = users[n_rel[users] > 0]
    if users.size == 0:
        raise ValueError(
            "no user has a test item outside its training items (Y_test minus Y_train is empty"
            f"{'' if sel is None else ' for the selected users'}); expected Y_test to hold "
            "held-out positives for at least one (selected) user"
        )
    return users


def _rank(model: Factorization, users: IntArray, Y_train: Sparse, rel: Sparse, ks: IntArray,
          kmax: int, want_topk: bool, want_auc: bool) -> dict[str, np.ndarray]:
    """Per user and cut-off: hits, DCG, average precision and reciprocal rank of the top-kmax
    unseen items, and the AUC; scores come in blocks of users (nothing users × items)."""
    nq = ks.size
    ks_rank = np.minimum(ks, kmax)
    out = dict(hits=np.zeros((users.size, nq), dtype=np.int64), dcg=np.zeros((users.size, nq)),
               ap=np.zeros((users.size, nq)), rr=np.zeros((users.size, nq)),
               auc=np.zeros(users.size))
    start = 0
    for rows, S in iter_score_blocks(model, users):
        scoring.finite_block(S)
        sl = slice(start, start + rows.size)
        if want_topk:
            it = np.empty((rows.size, kmax), dtype=np.int64)
            sc = np.empty((rows.size, kmax))
            topk_rows(S, Y_train.indptr, Y_train.indices, rows, kmax, it, sc)
            h = np.zeros((rows.size, nq), dtype=np.int64)
            d, a, r = (np.zeros((rows.size, nq)) for _ in range(3))
            topk_metrics(it, rows, rel.indptr, rel.indices, ks_rank, h, d, a, r)
            out["hits"][sl], out["dcg"][sl], out["ap"][sl], out["rr"][sl] = h, d, a, r
        if want_auc:
            # one sort per user of its negatives' scores (training and relevant items
            # are pushed to the end as NaN; scores were checked finite)
            neg = S.copy()
            mask_rows(neg, rows, Y_train.indptr, Y_train.indices, np.nan)
            mask_rows(neg, rows, rel.indptr, rel.indices, np.nan)
            neg.sort(axis=1)
            au = np.empty(rows.size)
            auc_sorted(S, neg, rows, Y_train.indptr, rel.indptr, rel.indices, au)
            out["auc"][sl] = au
        start += rows.size
    return out


def _summarise(sums: dict[str, np.ndarray], users: IntArray, n_rel: IntArray, ks: IntArray,
               kmax: int, selected: tuple[str, ...]) -> dict[str, Any]:
    """The means over users of the selected metrics at every cut-off, and ``n_users``."""
    nr = n_rel[users].astype(np.float64)[:, None]
    kk = ks.astype(np.float64)[None, :]
    per_user = {}
    if any(name != "auc" for name in selected):
        hits = sums["hits"]
        prec = hits / kk
        rec = hits / nr
        denom = prec + rec
        f1 = np.divide(2.0 * prec * rec, denom, out=np.zeros_like(denom), where=denom > 0)
        cut = np.minimum(ks[None, :], n_rel[users][:, None])
        ndcg = sums["dcg"] / _ideal_dcg(kmax)[cut]
        mapk = sums["ap"] / cut
        per_user = {"precision": prec, "recall": rec, "f1": f1, "ndcg": ndcg, "map": mapk,
                    "mrr": sums["rr"]}
    result = {}
    for name in selected:
        if name == "auc":
            continue
        means = per_user[name].mean(axis=0)
        for q, kv in enumerate(ks):
            result[f"{name}@{int(kv)}"] = float(means[q])
    if "auc" in selected:
        auc = sums["auc"]
        ok = ~np.isnan(auc)
        if ok.any():
            result["auc"] = float(auc[ok].mean())
        else:
            warnings.warn("auc is undefined: no evaluated user has a non-relevant candidate item",
                          RuntimeWarning, stacklevel=3)
            result["auc"] = float("nan")
    result["n_users"] = int(users.size)
    return result


# ----------------------------------------------------------------------------- HOMF protocol

def evaluate_rated(model: Factorization, Y_test_ratings: Sparse,
                   k: int | Sequence[int] | IntArray = (5, 10), threshold: float = 5.0,
                   users: ArrayLike | None = None,
                   metrics: Sequence[str] | None = None) -> dict[str, float]:
    """Rank only each user's rated test items (the protocol of Shah, Rao, Ding, Sec. 4.2).

    For user u, the items i_1, ..., i_{n_u} that u rated in the test data are
    sorted by predicted score (ties by lower item index); item i is relevant,
    I(u, i) = 1, when its test rating is >= ``threshold``, and I_u is the number
    of relevant items. Per user:

    - Precision@K = sum_{j<=K} I(u, i_j) / K  (K in the denominator even when n_u < K);
    - Recall@K = sum_{j<=K} I(u, i_j) / I_u;
    - AP@K = sum_{j<=K} I(u, i_j) Precision@(j, u) / min(I_u, K). The paper prints
      the sum without the factor I(u, i_j), which can exceed 1 (one relevant
      item ranked first with K = 5 would give 1 + 1/2 + ... + 1/5); we read it as
      the standard average precision;
    - NDCG@K = DCG@K / IDCG@K with DCG@K = sum_{j<=K} (2^{I(u,i_j)} - 1) / log2(j + 1)
      and IDCG@K the DCG of the ideal ordering (relevant items first).

    Users with I_u = 0 (recall and AP undefined) are skipped; the rest are
    averaged with equal weight. Nothing is excluded as "seen": training items
    are not in the test ratings.

    Parameters
    ----------
    model : Factorization
        A fitted model.
    Y_test_ratings : scipy.sparse matrix, shape (m, n)
        Test ratings (stored values are ratings).
    k : int or sequence of int
        Cut-offs K, each >= 1.
    threshold : float
        A rating at or above it marks a relevant item (the paper uses 5 on ML-1M).
    users : array-like of int, optional
        Restrict to these users.
    metrics : sequence of str, optional
        Subset of ("precision", "recall", "map", "ndcg").

    Returns
    -------
    dict
        ``"precision@K"``, ``"recall@K"``, ``"map@K"``, ``"ndcg@K"`` and ``"n_users"``.

    Raises
    ------
    TypeError
        If ``model`` or ``Y_test_ratings`` has the wrong type, or ``k``/``threshold`` is not numeric.
    ValueError
        If shapes disagree, ``k < 1``, a metric name is unknown, no user has a
        relevant test rating, or the model produces non-finite scores.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model import Factorization
    >>> from fastpu.model_selection.metrics import evaluate_rated
    >>> model = Factorization(np.ones((1, 1)), np.array([[3.0], [2.0], [1.0]]))
    >>> R = sp.csr_array(np.array([[2.0, 5.0, 4.0]]))
    >>> evaluate_rated(model, R, k=2, threshold=4)["precision@2"]
    0.5
    """
    m, n = scoring.model_shape(model)
    R = V.check_csr(Y_test_ratings, name="Y_test_ratings", shape=(m, n), nonnegative=False,
                         shape_from="model.shape, users × items")
    ks = _check_ks(k)
    threshold = V.check_scalar(threshold, name="threshold")
    selected = _check_metric_names(metrics, _RATED_METRICS)
    users = np.unique(V.check_users(users, m))
    relevant = R.data >= threshold
    rows_all = np.repeat(np.arange(m, dtype=np.int64), np.diff(R.indptr))
    n_relevant = np.bincount(rows_all[relevant], minlength=m)
    users = users[n_relevant[users] > 0]
    if users.size == 0:
        raise ValueError(
            f"no (selected) user has a test rating >= threshold={threshold:g} in Y_test_ratings "
            "(for the users); nothing to evaluate"
        )
    counts = np.diff(R.indptr)[users]
    starts = R.indptr[users]
    ent = np.repeat(starts - np.cumsum(np.r_[0, counts[:-1]]), counts) + np.arange(counts.sum())
    owner = np.repeat(np.arange(users.size), counts)          # position of the user in `users`
    items = R.indices[ent]
    rel = relevant[ent]
    score = np.empty(ent.size)
    pos0 = 0
    start = 0
    for rows, S in iter_score_blocks(model, users):
        scoring.finite_block(S)
        c = int(counts[start:start + rows.size].sum())
        local = owner[pos0:pos0 + c] - start
        score[pos0:pos0 + c] = S[local, items[pos0:pos0 + c]]
        pos0 += c
        start += rows.size
    # per-user order: score descending, then item ascending
    order = np.lexsort((items, -score, owner))
    owner_s, rel_s = owner[order], rel[order]
    group_start = np.r_[0, np.cumsum(counts)[:-1]]
    pos = np.arange(order.size) - group_start[owner_s]        # 0-based rank within user
    cumhits = np.cumsum(rel_s)
    cumhits -= np.r_[0, cumhits][group_start][owner_s]       # hits up to and including this rank
    I_u = n_relevant[users].astype(np.float64)
    # the ideal DCG is needed up to min(k, a user's relevant count), never past the largest count
    idcg_table = _ideal_dcg(int(min(ks[-1], n_relevant[users].max())))
    result: dict[str, dict[int, float]] = {name: {} for name in selected}
    for kv in ks:
        kv = int(kv)
        inside = rel_s & (pos < kv)
        hits = np.bincount(owner_s[inside], minlength=users.size).astype(np.float64)
        ap = np.bincount(owner_s[inside], weights=cumhits[inside] / (pos[inside] + 1.0), minlength=users.size)
        dcg = np.bincount(owner_s[inside], weights=1.0 / np.log2(pos[inside] + 2.0), minlength=users.size)
        cut = np.minimum(kv, n_relevant[users])
        vals = {
            "precision": hits / kv,
            "recall": hits / I_u,
            "map": ap / cut,
            "ndcg": dcg / idcg_table[cut],
        }
        for name in selected:
            result[name][kv] = float(vals[name].mean())
    out = {f"{name}@{kv}": result[name][kv] for name in selected for kv in result[name]}
    out["n_users"] = int(users.size)
    return out


# ----------------------------------------------------------------------------- sampled AUC

def sampled_auc(model: Factorization, Y_train: Sparse, Y_test: Sparse, n_negatives: int = 100,
                seed: Seed = 0, users: ArrayLike | None = None,
                n_threads: Threads = None) -> float:
    """AUC of each test positive against sampled unobserved items.

    For each user u with test positives outside training, ``n_negatives`` items
    are drawn uniformly without replacement from the items u has neither in
    ``Y_train`` nor in ``Y_test`` (all of them if there are fewer). Each test
    positive scores the fraction of those negatives it beats (ties 1/2); a user's
    value is the mean over its test positives and the result the mean over users
    (users with no unobserved item are left out).

    Parameters
    ----------
    model : Factorization
        A fitted model.
    Y_train, Y_test : scipy.sparse matrix, shape (m, n)
        Training and test positives.
    n_negatives : int
        Negatives sampled per user, >= 1.
    seed : int, numpy.random.Generator or None
        Randomness of the sampling (users are visited in increasing order).
    users : array-like of int, optional
        Restrict to these users.
    n_threads : int, optional
        Numba threads.

    Returns
    -------
    float
        The mean sampled AUC.

    Raises
    ------
    TypeError
        On a wrong argument type.
    ValueError
        If shapes disagree, ``n_negatives < 1``, no user has both a test
        positive and an unobserved item, or the model produces non-finite scores.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model import Factorization
    >>> from fastpu.model_selection.metrics import sampled_auc
    >>> model = Factorization(np.ones((1, 1)), np.array([[3.0], [2.0], [1.0], [0.0]]))
    >>> Y_train = sp.csr_array(np.array([[0.0, 1, 0, 0]]))
    >>> Y_test = sp.csr_array(np.array([[1.0, 0, 0, 0]]))
    >>> sampled_auc(model, Y_train, Y_test, n_negatives=2)
    1.0
    """
    m, n = scoring.model_shape(model)
    Y_train = V.check_csr(Y_train, name="Y_train", shape=(m, n), nonnegative=False,
                         shape_from="model.shape, users × items")
    Y_test = V.check_csr(Y_test, name="Y_test", shape=(m, n), nonnegative=False,
                         shape_from="model.shape, users × items")
    n_negatives = V.check_int(n_negatives, name="n_negatives", minimum=1)
    rng = V.check_seed(seed)
    users = np.unique(V.check_users(users, m))
    rel = scoring.relevant(Y_train, Y_test)
    users = users[np.diff(rel.indptr)[users] > 0]
    if users.size == 0:
        raise ValueError("no (selected) user has a test item outside its training items (Y_test minus "
                         "Y_train is empty for the users); nothing to evaluate")
    neg_lists = []
    observed = np.zeros(n, dtype=bool)
    for u in users:
        tr = Y_train.indices[Y_train.indptr[u]:Y_train.indptr[u + 1]]
        te = Y_test.indices[Y_test.indptr[u]:Y_test.indptr[u + 1]]
        observed[tr] = True
        observed[te] = True
        cand = np.flatnonzero(~observed)
        observed[tr] = False
        observed[te] = False
        take = min(n_negatives, cand.size)
        neg_lists.append(np.sort(rng.choice(cand, size=take, replace=False)) if take else cand)
    n_neg = np.array([a.size for a in neg_lists], dtype=np.int64)
    neg_indptr = np.zeros(users.size + 1, dtype=np.int64)
    np.cumsum(n_neg, out=neg_indptr[1:])
    neg_items = np.concatenate(neg_lists).astype(np.int64) if neg_lists else np.zeros(0, np.int64)
    n_pos = np.diff(rel.indptr)[users]
    pos_indptr = np.zeros(users.size + 1, dtype=np.int64)
    np.cumsum(n_pos, out=pos_indptr[1:])
    pos_items = np.concatenate([rel.indices[rel.indptr[u]:rel.indptr[u + 1]] for u in users]).astype(np.int64)
    pos_scores = np.empty(pos_items.size)
    neg_scores = np.empty(neg_items.size)
    start = 0
    for rows, S in iter_score_blocks(model, users):
        scoring.finite_block(S)
        b = np.arange(rows.size)
        p_sl = slice(pos_indptr[start], pos_indptr[start + rows.size])
        n_sl = slice(neg_indptr[start], neg_indptr[start + rows.size])
        pos_scores[p_sl] = S[np.repeat(b, n_pos[start:start + rows.size]), pos_items[p_sl]]
        neg_scores[n_sl] = S[np.repeat(b, n_neg[start:start + rows.size]), neg_items[n_sl]]
        start += rows.size
    out = np.empty(users.size)
    with limit_threads(n_threads):
        pairwise_auc(pos_scores, pos_indptr, neg_scores, neg_indptr, out)
    ok = ~np.isnan(out)
    if not ok.any():
        raise ValueError("no evaluated user has an unobserved item to sample; sampled AUC is undefined")
    return float(out[ok].mean())


# ----------------------------------------------------------------------------- baseline

@accepts_dataset
def popularity(Y: Sparse | Dataset, k: None = None, *, user_features: Matrix | None = None,
               n_iter: int = 1, seed: Seed = 0, n_threads: Threads = None,
               callback: Callback = None, verbose: bool = False) -> Factorization:
    """Most-popular baseline: every user scores item j by its number of training positives.

    The scores are the same for every user: ``s_ij = c_j``, the count of stored entries in
    column j. They rank the items as the best score that is one number per item does, the
    item's mean c_j / m, the minimiser of Σ_ij (x_ij − h_j)² over h (x: the stored entries'
    0/1 pattern); that sum at its minimum, Σ_j c_j (1 − c_j / m), is the history's
    ``objective``.

    Parameters
    ----------
    Y : scipy.sparse matrix or Dataset, shape (m, n)
        Training positives (stored entries count, whatever their value).
    k : None
        Popularity has no rank (``fastpu.select`` passes ``k=None``).
    user_features : array or sparse matrix, shape (m, d), optional
        Checked (one row per row of ``Y``) and unused: every user scores the items alike, so a
        held-out row needs neither features nor positives (``compare(..., split="rows")`` gives
        every entry the rows' features).
    n_iter, seed : int
        Accepted for the fastpu calling convention; the fit is one count.
    n_threads : int, optional
        Accepted for the calling convention (counting runs on one thread).
    callback : callable, optional
        Called once with the history dict (``info["model"]()`` is the model).
    verbose : bool
        Print the one progress line.

    Returns
    -------
    Factorization
        ``user_factors`` = ones (m×1), ``item_factors`` = counts (n×1), method ``"popularity"``,
        one history entry.

    Raises
    ------
    TypeError
        If ``Y`` is not sparse, ``k`` is given, or an argument has the wrong type.
    ValueError
        If ``Y`` is malformed or has non-finite values, or ``user_features`` does not have a
        row per row of ``Y``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model_selection.metrics import popularity
    >>> Y = sp.csr_array(np.array([[1.0, 0, 1], [0, 0, 1]]))
    >>> popularity(Y).scores([0])
    array([[1., 0., 2.]])
    """
    if k is not None:
        raise TypeError(f"popularity has no rank: every user scores item j by its count; leave k "
                        f"out (got k={k!r})")
    Y = V.check_csr(Y, name="Y", nonnegative=False)
    m, n = Y.shape
    V.check_features(user_features, name="user_features", n_rows=m)
    V.check_int(n_iter, name="n_iter", minimum=1)
    V.check_seed(seed)
    if n_threads is not None:
        check_threads(n_threads)
    progress = Progress("popularity", verbose=V.check_verbose(verbose),
                        callback=V.check_callback(callback))
    counts = np.bincount(Y.indices, minlength=n).astype(np.float64)
    objective = float(np.sum(counts * (1.0 - counts / m))) if m else 0.0
    model = Factorization(user_factors=np.ones((m, 1)),
                          item_factors=np.ascontiguousarray(counts[:, None]), history=[],
                          params={}, method="popularity", extras={}, seen=positives(Y))
    progress.step(1, objective, model=lambda: model)
    return dataclasses.replace(model, history=progress.history)
