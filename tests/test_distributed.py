"""fastpu.distributed on a real multi-process Dask cluster: the distributed fit equals the
single-machine fit (same seed or initial factors) for 1, 2 and 3 blocks."""

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu import distributed

RTOL = 1e-8


def _matrix(seed=0, m=13, n=9, empty_rows=5, empty_cols=3, density=0.35):
    """Random positives; the first ``empty_rows`` users and last ``empty_cols`` items have none,
    so with 3 blocks one user block and one item block hold no entries at all."""
    rng = np.random.default_rng(seed)
    A = (rng.random((m, n)) < density).astype(float) * rng.uniform(0.5, 2.0, (m, n))
    A[:empty_rows] = 0.0
    A[:, n - empty_cols:] = 0.0
    return sp.csr_array(A)


def assert_same(ref, mod):
    h_ref = np.array([h["objective"] for h in ref.history])
    h_mod = np.array([h["objective"] for h in mod.history])
    assert h_ref.size == h_mod.size > 0
    np.testing.assert_allclose(h_mod, h_ref, rtol=RTOL, atol=0)
    s_ref, s_mod = ref.scores(), mod.scores()
    np.testing.assert_allclose(s_mod, s_ref, rtol=RTOL, atol=RTOL * np.abs(s_ref).max())
    assert mod.method == ref.method
    assert mod.user_factors.shape == ref.user_factors.shape
    assert mod.item_factors.shape == ref.item_factors.shape


OCMF_VARIANTS = {
    "LR-wSQ": dict(loss="logistic", rho=0.05, lam=0.5),
    "SQ-wSQ": dict(loss="square", rho=0.1, lam=1.0),
    "SQ-SQ": dict(loss="square", rho=1.0, a_bar=0.0, lam=2.0),
    "SH-wSQ": dict(loss="squared_hinge", rho=0.1, lam=1.0, newton_steps=2, cg_steps=3),
    "weighted": dict(loss="logistic", rho=0.2, p="p", q="q", lam=0.3),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(OCMF_VARIANTS))
def test_ocmf_equals_single_machine(dask_client, variant, n_blocks):
    Y = _matrix(1)
    kw = dict(OCMF_VARIANTS[variant])
    if kw.get("p") == "p":
        rng = np.random.default_rng(3)
        kw["p"], kw["q"] = rng.uniform(0.5, 2, Y.shape[0]), rng.uniform(0.5, 2, Y.shape[1])
    ref = fp.ocmf.fit(Y, 3, n_iter=3, seed=7, n_threads=1, **kw)
    mod = distributed.fit(Y, 3, method="ocmf", client=dask_client, n_blocks=n_blocks, n_iter=3,
                          seed=7, **kw)
    assert_same(ref, mod)
    assert mod.params["distributed"]["n_blocks"] == n_blocks


def test_ocmf_init_and_float32(dask_client):
    Y = _matrix(2, m=20, n=11, empty_rows=2, empty_cols=1)
    rng = np.random.default_rng(0)
    W0, H0 = rng.standard_normal((20, 4)) * 0.1, rng.standard_normal((11, 4)) * 0.1
    for dtype in ("float64", "float32"):
        ref = fp.ocmf.fit(Y, 4, loss="logistic", n_iter=2, init=(W0, H0), dtype=dtype)
        mod = distributed.fit(Y, 4, client=dask_client, n_blocks=2, loss="logistic", n_iter=2,
                              init=(W0, H0), dtype=dtype)
        assert mod.user_factors.dtype == np.dtype(dtype)
        if dtype == "float64":
            assert_same(ref, mod)
        else:   # float32 factors: the same kernels, equal to float32 rounding
            np.testing.assert_allclose(mod.scores(), ref.scores(), rtol=1e-5, atol=1e-6)


FBGD_VARIANTS = {
    "adagrad": dict(alpha0=3.0, lr=0.1),
    "eq22-rho": dict(alpha0=2.0, rho=0.5, lr=0.05, reg=0.01, r_neg=0.1),
    "gd-values": dict(optimizer="gd", lr=0.01, pos_weight="values", r_pos=2.0),
    "given-weights": dict(neg_weights="w", lr=0.05),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(FBGD_VARIANTS))
def test_fbgd_batch_equals_single_machine(dask_client, variant, n_blocks):
    Y = _matrix(4)
    kw = dict(FBGD_VARIANTS[variant])
    if kw.get("neg_weights") == "w":
        kw["neg_weights"] = np.random.default_rng(5).uniform(0.1, 1.0, Y.shape[1])
    ref = fp.fbgd.fit(Y, 3, update="batch", n_iter=4, seed=11, n_threads=1, **kw)
    mod = distributed.fit(Y, 3, method="fbgd", client=dask_client, n_blocks=n_blocks, n_iter=4,
                          seed=11, **kw)
    assert_same(ref, mod)
    np.testing.assert_allclose(mod.extras["initial_objective"], ref.extras["initial_objective"],
                               rtol=RTOL)
    np.testing.assert_allclose(mod.extras["neg_weights"], ref.extras["neg_weights"], rtol=1e-12)
