"""Cost-sensitive measures of Yang, Zhao, Gao, Liu (CSRR paper, Section IV-A1): the weighted
sum of recall and specificity (2) and the weighted misclassification cost (3).

Re-exported by :mod:`fastpu.metrics`. Scores are produced in memory-bounded blocks of users
(:func:`fastpu._core.factorization.iter_score_blocks`); nothing of size users × items is allocated.
"""

from __future__ import annotations

import warnings

import numpy as np

from fastpu._core import validation as V
from fastpu.model_selection import _scoring as scoring
from fastpu._core.threads import limit_threads
from fastpu._core.factorization import Factorization, iter_score_blocks
from fastpu._core.hints import ArrayLike, IntArray, Sparse, Threads

__all__ = ["cost_sensitive"]


def _entries(rows: IntArray, indptr: IntArray,
             indices: IntArray) -> tuple[IntArray, IntArray]:
    """(block row, column) of the stored entries of ``rows`` of a CSR pattern."""
    counts = indptr[rows + 1] - indptr[rows]
    total = int(counts.sum())
    local = np.repeat(np.arange(rows.size), counts)
    # positions indptr[rows[r]] + 0 .. counts[r] - 1, concatenated
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return local, indices[np.repeat(indptr[rows], counts) + offsets]


def cost_sensitive(model: Factorization, Y_train: Sparse, Y_test: Sparse, *,
                   threshold: float = 0.5, mu_p: float = 0.5, c_p: float = 0.5,
                   users: ArrayLike | None = None, n_threads: Threads = None) -> dict[str, float]:
    """Weighted sum (2) and weighted cost (3) of a model's thresholded scores.

    An entry is predicted positive when its score exceeds the threshold q (the paper's
    indicator I(X_ij > q)). For each evaluated user the candidates are all items except the
    user's training positives; the positives are the test entries that are not training
    entries (T_p of them over all evaluated users) and every other candidate is a negative
    (T_n). With M_p the positives scored ≤ q (false negatives) and M_n the negatives scored
    > q (false positives):

    - ``recall`` = (T_p − M_p) / T_p,  ``specificity`` = (T_n − M_n) / T_n;
    - ``weighted_sum`` = μ_p · recall + μ_n · specificity, μ_n = 1 − μ_p   (equation (2),
      higher is better);
    - ``weighted_cost`` = c_p · M_p + c_n · M_n, c_n = 1 − c_p   (equation (3), a count,
      lower is better); ``weighted_cost_rate`` divides it by T_p + T_n.

    By the paper's Lemma 1, CSRR's cost bias α corresponds to ``c_p = α / (1 + α)`` for the
    cost, and to μ_p T_n / (μ_n T_p) = α for the sum.

    Parameters
    ----------
    model : Factorization
        A fitted model (only ``model.scores`` and ``model.shape`` are used).
    Y_train : scipy.sparse matrix, shape (m, n)
        Training positives, excluded from the candidates.
    Y_test : scipy.sparse matrix, shape (m, n)
        Held-out positives (the stored entries; values are ignored).
    threshold : float
        q: a score above it is a predicted positive (CSRR's scores lie in [0, 1]; 0.5 is the
        midpoint).
    mu_p : float in [0, 1]
        μ_p, the weight of recall in (2); specificity gets μ_n = 1 − μ_p.
    c_p : float in [0, 1]
        c_p, the cost of a false negative in (3); a false positive costs c_n = 1 − c_p.
    users : array-like of int, optional
        Evaluate these users only (all users when ``None``, including those without test
        items: their candidates are all negatives).
    n_threads : int, optional
        Threads for the model's scoring (restored afterwards).

    Returns
    -------
    dict
        ``weighted_sum``, ``weighted_cost``, ``weighted_cost_rate``, ``recall``,
        ``specificity`` (floats), and the counts ``false_negatives`` (M_p),
        ``false_positives`` (M_n), ``n_positives`` (T_p), ``n_negatives`` (T_n),
        ``n_users`` (ints).

    Raises
    ------
    TypeError
        If ``model`` is not a fitted model, a matrix is not sparse or a number is not real.
    ValueError
        If shapes disagree with the model, ``mu_p`` or ``c_p`` is outside [0, 1], the
        threshold is not finite, no evaluated user has a test item outside its training items,
        or the model produces non-finite scores.

    Warns
    -----
    RuntimeWarning
        If there is no negative candidate: specificity and the weighted sum are then NaN.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastpu.model import Factorization
    >>> from fastpu.model_selection.metrics import cost_sensitive
    >>> model = Factorization(np.ones((2, 1)), np.array([[0.9], [0.2], [0.7]]))
    >>> Y_train = sp.csr_array(np.array([[1.0, 0, 0], [0, 0, 0]]))
    >>> Y_test = sp.csr_array(np.array([[0.0, 1, 0], [1.0, 0, 0]]))
    >>> res = cost_sensitive(model, Y_train, Y_test, threshold=0.5, mu_p=0.5, c_p=0.75)
    >>> res["false_negatives"], res["false_positives"], res["weighted_cost"]
    (1, 2, 1.25)
    >>> res["recall"], res["specificity"], res["weighted_sum"]
    (0.5, 0.3333333333333333, 0.41666666666666663)
    """
    m, n = scoring.model_shape(model)
    Y_train = V.check_csr(Y_train, name="Y_train", shape=(m, n), nonnegative=False,
                          shape_from="model.shape, users × items")
    Y_test = V.check_csr(Y_test, name="Y_test", shape=(m, n), nonnegative=False,
                         shape_from="model.shape, users × items")
    q = V.check_scalar(threshold, name="threshold")
    mu_p = V.check_scalar(mu_p, name="mu_p", minimum=0.0, maximum=1.0)
    c_p = V.check_scalar(c_p, name="c_p", minimum=0.0, maximum=1.0)
    users = np.unique(V.check_users(users, m))
    rel = scoring.relevant(Y_train, Y_test)
    n_train = np.diff(Y_train.indptr)
    n_rel = np.diff(rel.indptr)
    T_p = int(n_rel[users].sum())
    if T_p == 0:
        raise ValueError(
            "no test item outside the training items among the evaluated users; expected Y_test "
            "to hold held-out positives that are not in Y_train (recall is undefined)"
        )
    T_n = int(users.size) * n - int(n_train[users].sum()) - T_p
    M_p = 0
    M_n = 0
    with limit_threads(n_threads):
        for rows, S in iter_score_blocks(model, users):
            scoring.finite_block(S)
            over = int(np.count_nonzero(S > q))
            r, c = _entries(rows, Y_train.indptr, Y_train.indices)
            over_train = int(np.count_nonzero(S[r, c] > q))
            r, c = _entries(rows, rel.indptr, rel.indices)
            hits = int(np.count_nonzero(S[r, c] > q))
            M_p += r.size - hits
            M_n += over - over_train - hits
    recall = (T_p - M_p) / T_p
    if T_n > 0:
        specificity = (T_n - M_n) / T_n
    else:
        warnings.warn("specificity is undefined: the evaluated users have no negative candidate",
                      RuntimeWarning, stacklevel=2)
        specificity = float("nan")
    cost = c_p * M_p + (1.0 - c_p) * M_n
    return {
        "weighted_sum": mu_p * recall + (1.0 - mu_p) * specificity,
        "weighted_cost": cost,
        "weighted_cost_rate": cost / (T_p + T_n),
        "recall": recall,
        "specificity": specificity,
        "false_negatives": M_p,
        "false_positives": M_n,
        "n_positives": T_p,
        "n_negatives": T_n,
        "n_users": int(users.size),
    }
