"""HOMF's fused dense-mode walk (``horner_walk``) against the per-step kernels and dense powers.

``homf.fit(mode="dense")`` computes f_T(P) L = (1/T) Σ_l P^l L with one ``horner_walk`` call
per half-iteration; an earlier form called ``csr_dense`` for a_1 and ``walk_step`` for each
Horner step.  The fused kernel reassociates each row's sum (four entries at a time), so it is
compared with the unfused computation and with explicit matrix powers to a tight tolerance, and
with itself bit for bit across thread counts and row chunkings.
"""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from fastpu.homf import _solvers as homf_solvers
from fastpu import homf
from fastpu._kernels import homf as K
from fastpu._kernels.csr import csr_dense, weighted_gram
from fastpu._core.threads import limit_threads

import naive_homf as nh

seeds = st.integers(0, 2**31 - 1)


def _sparse(N, density, seed, long_rows=False):
    """A random N×N CSR (any signs), some rows empty; ``long_rows`` adds rows of 5 to 3N entries."""
    rng = np.random.default_rng(seed)
    Ad = rng.normal(size=(N, N)) * (rng.random((N, N)) < density)
    P = sp.csr_array(Ad)
    if long_rows and N > 1:
        rows = rng.integers(0, N, size=3 * N + 5)
        cols = rng.integers(0, N, size=rows.size)
        extra = sp.csr_array((rng.normal(size=rows.size), (rows, cols)), shape=(N, N))
        P = sp.csr_array(P + extra)           # duplicates summed: rows with many entries
    P.sort_indices()
    return sp.csr_array((P.data.astype(np.float64), P.indices.astype(np.int64),
                         P.indptr.astype(np.int64)), shape=P.shape)


def _unfused(P, T, L):
    """The previous dense path: a_1 = P L by csr_dense, a_t = a_1 + P a_{t-1} by walk_step."""
    N, k = L.shape
    first = np.empty((N, k))
    csr_dense(P.indptr, P.indices, P.data, L, first)
    prev = first.copy()
    out = np.empty((N, k))
    for _ in range(2, T + 1):
        K.walk_step(P.indptr, P.indices, P.data, first, prev, out)
        prev, out = out, prev
    return prev * (1.0 / T)


def _fused(P, T, L, chunks):
    N, k = L.shape
    first, work, out = np.empty((N, k)), np.empty((N, k)), np.full((N, k), np.nan)
    K.horner_walk(P.indptr, P.indices, P.data, chunks, L, T, first, work, out)
    return out


def _random_chunks(N, rng):
    inner = np.sort(rng.choice(np.arange(1, N), size=rng.integers(0, N), replace=False)) if N > 1 else []
    return np.concatenate(([0], np.asarray(inner, dtype=np.int64), [N])).astype(np.int64)


@pytest.mark.parametrize("threads", [1, 2])
@given(N=st.integers(1, 24), k=st.integers(1, 11), density=st.floats(0.0, 1.0), seed=seeds,
       T=st.integers(1, 6), long_rows=st.booleans())
def test_horner_walk_equals_unfused_steps_and_matrix_powers(threads, N, k, density, seed, T,
                                                            long_rows):
    P = _sparse(N, density, seed, long_rows)
    rng = np.random.default_rng(seed + 1)
    L = rng.normal(size=(N, k))
    with limit_threads(threads):
        got = _fused(P, T, L, _random_chunks(N, rng))
        unfused = _unfused(P, T, L)
    dense = nh.f_T(P.toarray(), T) @ L
    # the fused kernel reassociates each row's sum: compare to the size of the summed terms
    absP = sp.csr_array((np.abs(P.data), P.indices, P.indptr), shape=P.shape)
    scale = nh.f_T(absP.toarray(), T) @ np.abs(L) + 1e-300
    assert np.all(np.abs(got - unfused) <= 1e-13 * T * scale)
    assert np.all(np.abs(got - dense) <= 1e-12 * T * scale)


@given(N=st.integers(1, 40), k=st.integers(1, 9), density=st.floats(0.0, 1.0), seed=seeds,
       T=st.integers(1, 5))
def test_horner_walk_is_the_same_for_any_thread_count_and_chunking(N, k, density, seed, T):
    P = _sparse(N, density, seed, long_rows=True)
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(N, k))
    results = []
    for threads in (1, 2):
        with limit_threads(threads):
            results.append(_fused(P, T, L, _random_chunks(N, rng)))
            results.append(_fused(P, T, L, homf_solvers._row_chunks(P, 4 * threads)))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_horner_walk_groups_of_eight_four_and_the_remainder():
    # a row with 8q + 4s + r entries (every split up to 19 entries) against the exact sum
    for n_entries in range(0, 20):
        N = 24
        cols = np.arange(n_entries, dtype=np.int64)
        indptr = np.array([0] + [n_entries] * N)            # row 0 holds every entry
        P = sp.csr_array((np.arange(1.0, n_entries + 1), cols, indptr), shape=(N, N))
        L = np.zeros((N, 2))
        L[:, 0] = 2.0 ** np.arange(N)            # exact in binary: no rounding anywhere
        L[:, 1] = 1.0
        got = _fused(P, 1, L, np.array([0, N], dtype=np.int64))
        want = sum((c + 1) * L[c] for c in range(n_entries)) if n_entries else np.zeros(2)
        np.testing.assert_array_equal(got[0], want)
        np.testing.assert_array_equal(got[1:], 0.0)


@given(N=st.integers(0, 60), density=st.floats(0.0, 1.0), seed=seeds, n_chunks=st.integers(1, 20))
def test_row_chunks_cover_the_rows_in_order_with_about_equal_nonzeros(N, density, seed, n_chunks):
    P = _sparse(N, density, seed, long_rows=True) if N else sp.csr_array((0, 0))
    cuts = homf_solvers._row_chunks(P, n_chunks)
    assert cuts.dtype == np.int64 and cuts[0] == 0 and cuts[-1] == N
    assert np.all(np.diff(cuts) > 0) or N == 0
    assert len(cuts) - 1 <= max(n_chunks, 1)
    counts = np.diff(P.indptr)
    per_chunk = np.add.reduceat(counts, cuts[:-1]) if N else np.zeros(0)
    target = P.nnz / n_chunks
    assert np.all(per_chunk <= target + (counts.max() if N else 0) + 1e-9)


# ----------------------------------------------------------------------------- the whole fit

def _gram(L):
    out = np.empty((L.shape[1], L.shape[1]))
    weighted_gram(L, np.ones(L.shape[0]), out, np.empty(L.shape[1]))
    return out


def _previous_dense_fit(A, At, U, V, T, lam, n_iter):
    """homf.fit's earlier dense loop (unfused walk, four Gram matrices per iteration)."""
    k = U.shape[1]
    objs = []
    for _ in range(n_iter):
        for P, side in ((At, "V"), (A, "U")):
            L = U if side == "V" else V
            Z = _unfused(P, T, L)
            S = _gram(L) + 2.0 * lam * np.eye(k)
            new = np.ascontiguousarray(sla.cho_solve(sla.cho_factor(S, lower=True), Z.T).T)
            cross = float(np.sum(new * Z))
            if side == "V":
                V = new
            else:
                U = new
            objs.append(-cross + 0.5 * float(np.sum(_gram(U) * _gram(V)))
                        + lam * (float(np.sum(U * U)) + float(np.sum(V * V))))
    return U, V, objs


@pytest.mark.parametrize("threads", [1, 2])
@given(m=st.integers(1, 9), n=st.integers(1, 9), density=st.floats(0.05, 1.0), seed=seeds,
       T=st.integers(1, 5), k=st.integers(1, 5), graphs=st.booleans())
def test_dense_fit_equals_the_previous_unfused_loop(threads, m, n, density, seed, T, k, graphs):
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < density
    mask.flat[rng.integers(m * n)] = True          # a fit needs at least one positive
    R = sp.csr_array(rng.integers(1, 6, (m, n)) * mask, dtype=float)
    kw = {}
    if graphs:
        S = rng.random((m, m)) * (rng.random((m, m)) < 0.5)
        kw = dict(user_graph=np.triu(S) + np.triu(S, 1).T, alpha=0.3)
    lam = 0.05
    model = homf.fit(R, k, T=T, lam=lam, n_iter=3, mode="dense", seed=seed, n_threads=threads, **kw)
    A = model.extras["A"]
    At = sp.csr_array(A.T)
    At.sort_indices()
    At = sp.csr_array((At.data, At.indices.astype(np.int64), At.indptr.astype(np.int64)), shape=At.shape)
    r = np.random.default_rng(seed)
    U0 = r.uniform(0.0, 1.0, size=(m + n, k))
    V0 = r.uniform(0.0, 1.0, size=(m + n, k))
    with limit_threads(threads):
        U, V, objs = _previous_dense_fit(A, At, U0, V0, T, lam, 3)
    for got, want in ((model.extras["U"], U), (model.extras["V"], V)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11 * max(1.0, np.abs(want).max()))
    got_objs = [x for h in model.history for x in (h["objective_v"], h["objective"])]
    np.testing.assert_allclose(got_objs, objs, rtol=1e-9, atol=1e-12)
