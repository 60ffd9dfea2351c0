"""The dense SVT routes (Gram eigendecomposition, certified truncated SVD) against the full SVD."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from fastpu.optim import _svt_dense as SD
from fastpu import csrr
from fastpu import optim as prox


def _with_spectrum(seed, m, n, s):
    """m × n matrix with singular values s (len min(m, n)) and random singular vectors."""
    rng = np.random.default_rng(seed)
    p = min(m, n)
    U = np.linalg.qr(rng.standard_normal((m, p)))[0]
    V = np.linalg.qr(rng.standard_normal((n, p)))[0]
    return (U * np.asarray(s, dtype=float)) @ V.T


def _svt_ref(M, tau):
    L, s, R = np.linalg.svd(M, full_matrices=False)
    return (L * np.maximum(s - tau, 0.0)) @ R, s


def _spectrum(kind, p, tau, rng):
    """Singular values of one of the hard cases, sorted decreasingly."""
    if kind == "near":        # a cluster straddling τ, within 1e-6 relative
        s = tau * (1.0 + 1e-6 * rng.uniform(-1, 1, p))
        s[: p // 4] = tau * rng.uniform(1.5, 20, p // 4)
    elif kind == "ties":      # repeated values above τ and exactly at τ
        s = np.full(p, tau * 0.5)
        s[: p // 3] = 3.0 * tau
        s[p // 3: p // 2] = tau
    elif kind == "below":
        s = tau * rng.uniform(0.0, 0.999, p)
    elif kind == "above":
        s = tau * rng.uniform(1.001, 10.0, p)
    else:                     # "lowrank": a few above τ, a noise bulk just below
        s = tau * rng.uniform(0.0, 0.98, p)
        s[: max(1, p // 10)] = tau * rng.uniform(1.02, 30.0, max(1, p // 10))
    return np.sort(s)[::-1]


kinds = st.sampled_from(["near", "ties", "below", "above", "lowrank"])


@settings(max_examples=40)
@given(st.integers(0, 10**6), st.integers(2, 30), st.integers(2, 30), kinds,
       st.floats(1e-3, 1e3))
def test_gram_svt_equals_full_svd_svt(seed, m, n, kind, tau):
    rng = np.random.default_rng(seed)
    M = _with_spectrum(seed, m, n, _spectrum(kind, min(m, n), tau, rng))
    ref, s = _svt_ref(M, tau)
    out = SD.gram_svt(M, tau)
    if out is None:           # refused: its error bound could not be shown (rare here)
        assert kind in ("near", "ties")
        return
    L, vals, R = out
    assert L.shape == (m, vals.size) and R.shape == (vals.size, n)
    assert np.all(vals > 0) and np.all(np.diff(vals) <= 1e-12 * s[0])
    np.testing.assert_allclose((L * vals) @ R, ref, rtol=0, atol=1e-10 * s[0])
    np.testing.assert_allclose(L.T @ L, np.eye(vals.size), atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(66, 90), st.integers(66, 90), kinds,
       st.sampled_from(["auto", "truncated"]), st.integers(1, 40))
def test_svt_factors_dense_routes_equal_full_svd(seed, m, n, kind, method, k0):
    """auto (ARPACK + certificate, or the Gram route) and truncated equal the full-SVD SVT."""
    rng = np.random.default_rng(seed)
    tau = 1.0
    M = _with_spectrum(seed, m, n, _spectrum(kind, min(m, n), tau, rng))
    ref, s = _svt_ref(M, tau)
    res = prox.svt_factors(M, tau, method=method, k0=k0, seed=seed)
    np.testing.assert_allclose(res.dense(), ref, rtol=0, atol=1e-10 * s[0])
    assert res.rank == int(np.count_nonzero(res.s > 0))


def test_auto_takes_the_gram_route_for_a_high_rank_and_arpack_for_a_low_rank():
    rng = np.random.default_rng(1)
    tau = 1.0
    high = _with_spectrum(1, 100, 120, _spectrum("above", 100, tau, rng))
    res = prox.svt_factors(high, tau, k0=90)
    assert res.full and res.n_computed == 100 and res.rank == 100
    np.testing.assert_allclose(res.dense(), _svt_ref(high, tau)[0], atol=1e-10 * 10 * tau)
    low = _with_spectrum(2, 100, 120, _spectrum("lowrank", 100, tau, rng))
    res = prox.svt_factors(low, tau, k0=5)
    assert not res.full and res.rank == 10 and res.n_computed < 100
    np.testing.assert_allclose(res.dense(), _svt_ref(low, tau)[0], atol=1e-10 * 30 * tau)


def test_certificate_detects_a_missed_singular_value():
    s = np.array([5.0, 4.0, 3.0, 1.2, 0.9, 0.5, 0.1, 0.0])
    M = _with_spectrum(3, 8, 11, s)
    L, sv, _ = np.linalg.svd(M, full_matrices=False)
    G = M @ M.T
    lam1 = float(sv[0] ** 2)
    assert SD.certified(G, L[:, :4], 1.0, lam1)            # all four above τ = 1 are in U
    assert not SD.certified(G, L[:, :3], 1.0, lam1)        # 1.2 > τ is missing
    assert not SD.certified(G, L[:, [0, 1, 3]], 1.0, lam1)  # 3.0 is missing
    assert SD.certified(G, L[:, :3], 1.25, lam1)           # τ above 1.2: nothing missing
    assert not SD.certified(G, L[:, :0], 4.5, lam1)
    assert SD.certified(G, L[:, :0], 5.01, lam1)
    # a value exactly at τ is not above it; the margin (1e-8 relative) accepts it
    assert SD.certified(G, L[:, :3], 1.2, lam1)


def test_gram_route_refuses_when_rounding_could_exceed_the_tolerance():
    # σ_1/τ = 1e9: the eigenvalues of AAᵀ near τ² are lost in the rounding of σ_1²
    s = np.array([1e7, 2e-2, 1.0000001e-2, 1e-2, 5e-3, 1e-3])
    M = _with_spectrum(4, 6, 9, s)
    assert SD.gram_svt(M, 1e-2) is None
    # the caller then takes the SVD: the result is still the full-SVD SVT
    big = np.zeros((70, 70))
    big[:6, :9] = M
    ref, _ = _svt_ref(big, 1e-2)
    np.testing.assert_allclose(prox.svt(big, 1e-2, k0=60), ref, atol=1e-10 * 1e7)


def test_gram_svt_zero_matrix_and_all_below():
    L, vals, R = SD.gram_svt(np.zeros((4, 6)), 0.5)
    assert vals.size == 0 and L.shape == (4, 0) and R.shape == (0, 6)
    M = _with_spectrum(5, 7, 5, [0.4, 0.3, 0.2, 0.1, 0.0])
    L, vals, R = SD.gram_svt(M, 0.5)
    assert vals.size == 0 and L.shape == (7, 0) and R.shape == (0, 5)


# ----------------------------------------------------------------------------- CSRR-I/II fits


def _ml_like(seed, m, n, density):
    rng = np.random.default_rng(seed)
    pop = rng.pareto(1.5, n) + 0.05
    act = rng.pareto(1.5, m) + 0.05
    P = np.minimum(1.0, density * np.outer(act, pop) / (act.mean() * pop.mean()))
    return sp.csr_array((rng.random((m, n)) < P).astype(float))


@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("lam1", [0.3, 6.0])
def test_fit_with_fast_svt_equals_fit_with_exact_svd(variant, lam1):
    """auto (Gram route / certified ARPACK) and the exact full SVD give the same fit."""
    Y = _ml_like(7, 140, 110, 0.08)
    kw = dict(variant=variant, alpha=2.0, lam1=lam1, lam2=0.1, n_iter=12, seed=0)
    exact = csrr.fit(Y, svd_method="full", **kw)
    fast = csrr.fit(Y, svd_method="auto", **kw)
    ranks = [h["rank"] for h in fast.history]
    assert ranks == [h["rank"] for h in exact.history]
    computed = [h["svd_computed"] for h in fast.history]
    if lam1 < 1:          # high rank: the Gram route (all 110 eigenpairs)
        assert min(ranks) > 0.25 * 110 and all(c == 110 for c in computed[1:])
    else:                 # low rank: ARPACK with a certificate
        assert max(ranks[2:]) < 0.25 * 110 and all(c < 110 for c in computed[2:])
    scale = max(1.0, float(np.abs(exact.U).max()))
    np.testing.assert_allclose(fast.U, exact.U, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(fast.V.toarray(), exact.V.toarray(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.extras["singular_values"], exact.extras["singular_values"],
                               rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose([h["objective"] for h in fast.history],
                               [h["objective"] for h in exact.history], rtol=1e-11)
