"""fastpu.distributed on a real multi-process Dask cluster: the distributed fit equals the
single-machine fit (same seed or initial factors) for 1, 2 and 3 blocks."""

import numpy as np
import pytest
import scipy.sparse as sp

import contextlib
import functools
import os
import time
import zlib

import fastpu as fp
from fastpu import distributed

RTOL = 1e-8
# one numba thread per task: the test cluster has 2 single-thread workers on a shared machine
dfit = functools.partial(distributed.fit, n_threads=1)


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
    # frequency-scaled λ_i (each block computes its rows' own) and a CG tolerance other than
    # the default (the options record travels to the blocks' and the grid's solvers)
    "SQ-wSQ nu": dict(loss="square", rho=0.1, lam=0.02, nu=1.0, cg_tol=0.2),
    "LR-wSQ nu": dict(loss="logistic", rho=0.05, lam=0.01, nu=0.5, p="p", q="q", cg_tol=1e-6,
                      cg_steps=3),
    # the unlabeled term over every entry, positives too (iALS's weighting)
    "iALS": dict(loss="square", rho=0.3, a_bar=0.0, lam=0.01, nu=1.0, negatives="all"),
    # the Jacobi-preconditioned CG (the auto rule turns it on at k >= 64 only), with a line
    # search and with the square loss
    "PCG": dict(loss="logistic", rho=0.05, lam=0.01, nu=1.0, precondition=True),
    "iALS PCG": dict(loss="square", rho=0.3, a_bar=0.0, lam=0.01, nu=1.0, negatives="all",
                     precondition=True),
}


@pytest.mark.parametrize("method, kw", [("ocmf", {}), ("fbgd", dict(update="batch")),
                                        ("csrr", {}), ("homf", dict(T=2))])
def test_a_rank_above_min_m_n_warns_on_the_cluster_too(dask_client, method, kw):
    """distributed.fit runs each method's own argument checks, the rank warning among them."""
    Y = _matrix(2)            # 13 × 9
    with pytest.warns(UserWarning, match=rf"{method}.fit: k=11 is above min\(m, n\) = 9 of the "
                                         r"13 × 9 matrix Y: .*use k <= 9"):
        dfit(Y, 11, method=method, client=dask_client, n_blocks=2, n_iter=1, **kw)


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(OCMF_VARIANTS))
def test_ocmf_equals_single_machine(dask_client, variant, n_blocks):
    Y = _matrix(1)
    kw = dict(OCMF_VARIANTS[variant])
    if kw.get("p") == "p":
        rng = np.random.default_rng(3)
        kw["p"], kw["q"] = rng.uniform(0.5, 2, Y.shape[0]), rng.uniform(0.5, 2, Y.shape[1])
    ref = fp.ocmf.fit(Y, 3, n_iter=3, seed=7, n_threads=1, **kw)
    mod = dfit(Y, 3, method="ocmf", client=dask_client, n_blocks=n_blocks, n_iter=3,
                          seed=7, **kw)
    assert_same(ref, mod)
    assert mod.params["distributed"]["n_blocks"] == n_blocks
    assert (mod.seen != ref.seen).nnz == 0 and mod.seen.nnz == Y.nnz   # the training positives


@pytest.mark.parametrize("n_blocks", [1, 3])
@pytest.mark.parametrize("variant", ["LR-wSQ", "SQ-wSQ"])
def test_ocmf_in_the_eigenbasis_equals_single_machine(dask_client, monkeypatch, variant, n_blocks):
    # float32 at k >= EIGEN_MIN_K works in the eigenbasis of each half-step's M; the client
    # decides, so a lowered threshold reaches that path at a small k. The blocks' partial Grams
    # (cut at multiples of GRAM_GROUP rows) add up to one machine's M bit for bit, and each
    # block turns its rows and the routed rows with the same row kernel as one machine turns
    # both factors in place: the same float32 iterates, bit for bit
    from fastpu.ocmf import _problem

    monkeypatch.setattr(_problem, "EIGEN_MIN_K", 1)
    # rows for several groups of GRAM_GROUP (the blocks' cuts fall at multiples of it)
    Y = _matrix(2, m=3300, n=150, empty_rows=70, empty_cols=10, density=0.01)
    kw = dict(OCMF_VARIANTS[variant])
    ref = fp.ocmf.fit(Y, 3, n_iter=4, seed=7, n_threads=1, **kw)
    mod = dfit(Y, 3, method="ocmf", client=dask_client, n_blocks=n_blocks, n_iter=4, seed=7, **kw)
    assert_same(ref, mod)
    # both are in the same (turned) coordinates, with the same numbers
    np.testing.assert_array_equal(mod.user_factors, ref.user_factors)
    np.testing.assert_array_equal(mod.item_factors, ref.item_factors)
    monkeypatch.setattr(_problem, "EIGEN_MIN_K", 10**9)
    plain = fp.ocmf.fit(Y, 3, n_iter=4, seed=7, n_threads=1, **kw)
    assert not np.allclose(plain.user_factors, ref.user_factors, atol=1e-3)


def test_the_same_call_at_k_64_gives_the_same_float32_model(dask_client):
    """The defaults at k = 64 (float32, the eigenbasis): distributed.fit gives ocmf.fit's
    factors bit for bit, over blocks cut at multiples of GRAM_GROUP (64) rows (row_align)."""
    from fastpu._kernels.csr import GRAM_GROUP
    from fastpu.ocmf._dask import row_align

    Y = _matrix(5, m=300, n=170, empty_rows=20, empty_cols=5, density=0.06)
    ref = fp.ocmf.fit(Y, 64, n_iter=3)
    mod = distributed.fit(Y, 64, method="ocmf", client=dask_client, n_blocks=3, n_iter=3)
    assert_same(ref, mod)
    np.testing.assert_array_equal(mod.user_factors, ref.user_factors)
    np.testing.assert_array_equal(mod.item_factors, ref.item_factors)
    assert row_align(64, dict(dtype="float32")) == GRAM_GROUP
    assert row_align(63, dict(dtype="float32")) == 1
    assert row_align(64, dict(dtype="float64")) == 1
    assert row_align(64, dict(dtype="float32", user_features=np.ones((3, 2)))) == 1
    assert row_align("64", dict(dtype="float32")) == 1      # refused later by the fit's checks


def _features(m, n):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, 4))
    Z = sp.random_array((n, 5), density=0.5, random_state=1, format="csr")
    return X, Z


OCMF_FEATURES = {
    "user-dense": dict(loss="logistic", rho=0.05, lam=0.5, user_features="X"),
    "user-no-intercept": dict(loss="logistic", rho=0.05, lam=0.5, user_features="X",
                              intercept=False),
    "item-sparse": dict(loss="logistic", rho=0.05, lam=0.5, item_features="Z"),
    "both-square": dict(loss="square", rho=0.3, lam=0.5, user_features="X", item_features="Z"),
    "user-graph": dict(loss="logistic", rho=0.05, lam=0.5, user_graph="Su", lam_graph=0.7),
    "features-graphs": dict(loss="square", rho=0.2, lam=0.5, user_features="X", user_graph="Su",
                            item_graph="Sv", lam_graph=0.3),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(OCMF_FEATURES))
def test_ocmf_features_tron_equals_single_machine(dask_client, variant, n_blocks):
    """A side with features or a graph is solved by TRON on the client with block-sum
    fun/grad/hessp (the graph term's rows (L B)_b from the whole B, sent once per call)."""
    Y = _matrix(1)
    X, Z = _features(*Y.shape)
    rng = np.random.default_rng(2)
    Su, Sv = (sp.csr_array(np.triu(rng.random((s, s)) < 0.3, 1) * rng.uniform(0.5, 1, (s, s)))
              for s in Y.shape)
    named = {"X": X, "Z": Z, "Su": Su + Su.T, "Sv": Sv + Sv.T}
    kw = {key: named.get(v, v) if isinstance(v, str) else v
          for key, v in OCMF_FEATURES[variant].items()}
    kw["dtype"] = "float64"          # float64 factors: equal to 1e-12 (float32: below)
    ref = fp.ocmf.fit(Y, 3, n_iter=3, seed=7, n_threads=1, **kw)
    mod = dfit(Y, 3, client=dask_client, n_blocks=n_blocks, n_iter=3, seed=7, **kw)
    assert_same(ref, mod)
    assert [h["inner"] for h in mod.history] == [h["inner"] for h in ref.history]
    assert mod.params["intercept"] is ref.params["intercept"] is kw.get("intercept", True)
    for name in ("W", "H"):
        assert (name in mod.extras) == (name in ref.extras)
        if name in ref.extras:
            np.testing.assert_allclose(mod.extras[name], ref.extras[name], rtol=1e-7, atol=1e-12)


def test_ocmf_init_and_float32(dask_client):
    Y = _matrix(2, m=20, n=11, empty_rows=2, empty_cols=1)
    rng = np.random.default_rng(0)
    W0, H0 = rng.standard_normal((20, 4)) * 0.1, rng.standard_normal((11, 4)) * 0.1
    for dtype in ("float64", "float32"):
        ref = fp.ocmf.fit(Y, 4, loss="logistic", n_iter=2, init=(W0, H0), dtype=dtype)
        mod = dfit(Y, 4, client=dask_client, n_blocks=2, loss="logistic", n_iter=2,
                              init=(W0, H0), dtype=dtype)
        assert mod.user_factors.dtype == np.dtype(dtype)
        if dtype == "float64":
            assert_same(ref, mod)
        else:   # float32 factors: the same kernels, equal to float32 rounding
            np.testing.assert_allclose(mod.scores(), ref.scores(), rtol=1e-5, atol=1e-6)


FBGD_VARIANTS = {
    "adagrad": dict(alpha0=3.0, lr=0.1),
    "eq22-rho": dict(alpha0=2.0, rho=0.5, lr=0.05, lam=0.01, r_neg=0.1),
    "gd-values": dict(optimizer="gd", lr=0.01, pos_weight="values", r_pos=2.0),
    "given-weights": dict(neg_weights="w", lr=0.05),
    # frequency-scaled λ per row (each block receives its rows' slice)
    "nu": dict(alpha0=2.0, rho=0.5, lr=0.05, lam=0.01, nu=1.0),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(FBGD_VARIANTS))
def test_fbgd_batch_equals_single_machine(dask_client, variant, n_blocks):
    Y = _matrix(4)
    kw = dict(FBGD_VARIANTS[variant])
    if kw.get("neg_weights") == "w":
        kw["neg_weights"] = np.random.default_rng(5).uniform(0.1, 1.0, Y.shape[1])
    ref = fp.fbgd.fit(Y, 3, update="batch", n_iter=4, seed=11, n_threads=1, **kw)
    mod = dfit(Y, 3, method="fbgd", client=dask_client, n_blocks=n_blocks, n_iter=4,
               seed=11, update="batch", **kw)
    assert_same(ref, mod)
    np.testing.assert_allclose(mod.extras["initial_objective"], ref.extras["initial_objective"],
                               rtol=RTOL)
    np.testing.assert_allclose(mod.extras["neg_weights"], ref.extras["neg_weights"], rtol=1e-12)


FBGD_COORDINATE = {
    "defaults": dict(),
    "eq22-rho": dict(alpha0=2.0, rho=0.5, lr=0.05, lam=0.01, r_neg=0.1),
    "gd-values": dict(optimizer="gd", lr=0.01, pos_weight="values", r_pos=2.0),
    "given-weights": dict(neg_weights="w", lr=0.05),
    "nu": dict(alpha0=2.0, rho=0.5, lr=0.05, lam=0.01, nu=1.0, neg_weights="w"),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(FBGD_COORDINATE))
def test_fbgd_coordinate_equals_single_machine(dask_client, variant, n_blocks):
    """fbgd.fit's default update="coordinate" (plain MF: a row's parameters are its own
    embedding, so the updates are row-separable) runs on the row blocks."""
    Y = _matrix(4)
    kw = dict(FBGD_COORDINATE[variant])
    if kw.get("neg_weights") == "w":
        kw["neg_weights"] = np.random.default_rng(5).uniform(0.1, 1.0, Y.shape[1])
    ref = fp.fbgd.fit(Y, 3, n_iter=4, seed=11, n_threads=1, **kw)
    assert ref.params["update"] == "coordinate"
    mod = dfit(Y, 3, method="fbgd", client=dask_client, n_blocks=n_blocks, n_iter=4,
               seed=11, **kw)
    assert mod.params["update"] == "coordinate"
    assert_same(ref, mod)
    np.testing.assert_allclose(mod.extras["initial_objective"], ref.extras["initial_objective"],
                               rtol=RTOL)
    batch = fp.fbgd.fit(Y, 3, n_iter=4, seed=11, n_threads=1, update="batch", **kw)
    # batch updates are a different model, which this comparison tells apart
    assert not np.allclose(batch.scores(), mod.scores(), rtol=RTOL, atol=0)


FBGD_FEATURES = {
    "biases-only": dict(biases=True, alpha0=2.0, lr=0.05),
    "biases-only nu": dict(biases=True, alpha0=2.0, rho=0.5, lr=0.05, lam=0.02, nu=0.5),
    "user-features": dict(user_features="X", alpha0=2.0, lr=0.05, lam=0.01),
    "both-features": dict(user_features="X", item_features="Z", alpha0=2.0, rho=0.5, lr=0.02),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(FBGD_FEATURES))
def test_fbgd_features_equals_single_machine(dask_client, variant, n_blocks):
    """SVDFeature (features and bias columns): Θ updated on the client from Σ_b Z_bᵀ G_b."""
    Y = _matrix(4)
    X, Z = _features(*Y.shape)
    kw = {key: {"X": sp.csr_array(np.abs(X)), "Z": Z}.get(v, v) if isinstance(v, str) else v
          for key, v in FBGD_FEATURES[variant].items()}
    ref = fp.fbgd.fit(Y, 3, update="batch", n_iter=4, seed=11, n_threads=1, **kw)
    mod = dfit(Y, 3, method="fbgd", client=dask_client, n_blocks=n_blocks, n_iter=4, seed=11,
               update="batch", **kw)
    assert_same(ref, mod)
    assert sorted(mod.extras) == sorted(ref.extras)
    for key, val in ref.extras.items():
        if val is None:                                  # e.g. neg_row_weights left at None
            assert mod.extras[key] is None, key
            continue
        np.testing.assert_allclose(mod.extras[key], val, rtol=RTOL, atol=1e-12)


@pytest.mark.parametrize("features", [False, True])
def test_fbgd_warm_start_equals_single_machine(dask_client, features):
    """init= (the embeddings for plain MF, fbgd.parameters with features) means on the cluster
    what it means on one machine: the fit goes on from the given parameters."""
    Y = _matrix(4)
    X, _ = _features(*Y.shape)
    kw = dict(alpha0=2.0, lr=0.05, **({"user_features": sp.csr_array(np.abs(X))} if features else {}))
    first = fp.fbgd.fit(Y, 3, update="batch", n_iter=2, seed=11, n_threads=1, **kw)
    start = fp.fbgd.parameters(first)
    ref = fp.fbgd.fit(Y, 3, update="batch", n_iter=3, init=start, n_threads=1, **kw)
    mod = dfit(Y, 3, method="fbgd", client=dask_client, n_blocks=2, n_iter=3, init=start,
               update="batch", **kw)
    assert_same(ref, mod)
    np.testing.assert_allclose(mod.extras["initial_objective"], first.history[-1]["objective"],
                               rtol=RTOL)


HOMF_VARIANTS = {
    "plain": dict(T=3, lam=1e-2),
    "T1": dict(T=1, lam=0.1),
    "graphs": dict(T=2, lam=1e-2, alpha=0.3, g="linear", user_graph="S", item_graph="S"),
}


@pytest.mark.parametrize("method", ["ocmf", "fbgd", "csrr", "homf"])
def test_verbose_progress_counts_the_iterations(dask_client, capsys, method):
    # as the single-machine fits do: "iter 2/2", not "iter 2"
    dfit(_matrix(3), 2, method=method, client=dask_client, n_blocks=2, n_iter=2, seed=1,
         verbose=True)
    err = capsys.readouterr().err
    assert "iter   2/2" in err, err


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(HOMF_VARIANTS))
def test_homf_dense_equals_single_machine(dask_client, variant, n_blocks):
    Y = _matrix(13)
    kw = dict(HOMF_VARIANTS[variant])
    if kw.get("user_graph") == "S":
        rng = np.random.default_rng(1)
        for name, size in (("user_graph", Y.shape[0]), ("item_graph", Y.shape[1])):
            S = sp.random_array((size, size), density=0.3, random_state=rng).toarray()
            kw[name] = sp.csr_array(S + S.T)
    ref = fp.homf.fit(Y, 3, mode="dense", n_iter=3, seed=9, n_threads=1, **kw)
    mod = dfit(Y, 3, method="homf", client=dask_client, n_blocks=n_blocks, n_iter=3,
               seed=9, mode="dense", **kw)
    assert_same(ref, mod)
    np.testing.assert_allclose([h["objective_v"] for h in mod.history],
                               [h["objective_v"] for h in ref.history], rtol=RTOL)


HOMF_EXACT = {
    "plain": dict(T=3, lam=1e-2),
    "T1-block2": dict(T=1, lam=0.1, block_size=2),
    "graphs": dict(T=2, lam=1e-2, alpha=0.3, g="linear", user_graph="S", item_graph="S",
                   block_size=3),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(HOMF_EXACT))
def test_homf_exact_equals_single_machine(dask_client, variant, n_blocks):
    """homf.fit's default mode="exact" (the paper's Ω_T): the columns split by node ranges, each
    worker with a copy of A and the whole fixed factor."""
    Y = _matrix(13)
    kw = dict(HOMF_EXACT[variant])
    if kw.get("user_graph") == "S":
        rng = np.random.default_rng(1)
        for name, size in (("user_graph", Y.shape[0]), ("item_graph", Y.shape[1])):
            S = sp.random_array((size, size), density=0.3, random_state=rng).toarray()
            kw[name] = sp.csr_array(S + S.T)
    ref = fp.homf.fit(Y, 3, n_iter=3, seed=9, n_threads=1, **kw)
    assert ref.params["mode"] == "exact"
    mod = dfit(Y, 3, method="homf", client=dask_client, n_blocks=n_blocks, n_iter=3, seed=9, **kw)
    assert mod.params["mode"] == "exact"
    assert_same(ref, mod)
    np.testing.assert_allclose([h["objective_v"] for h in mod.history],
                               [h["objective_v"] for h in ref.history], rtol=RTOL)
    dense = fp.homf.fit(Y, 3, n_iter=3, seed=9, n_threads=1, mode="dense", **kw)
    assert not np.allclose(dense.scores(), mod.scores(), rtol=RTOL, atol=0)


def test_homf_on_a_cluster_prints_progress_and_the_dense_mode_note(dask_client, capsys):
    dfit(_matrix(13), 2, method="homf", mode="dense", client=dask_client, n_iter=2, verbose=True)
    err = capsys.readouterr().err
    assert "[homf] iter   2" in err
    assert err.count("leaves out the constant ½‖f_T(A)‖²_F") == 1


CSRR_VARIANTS = {
    "loss-I": dict(alpha=2.0, lam1=0.5, lam2=0.1),
    "loss-II": dict(loss="II", alpha=0.8, lam1=0.1, lam2=0.05),
    "fixed-eta": dict(eta=0.05, lam1=1.0, lam2=0.01),
}


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("variant", list(CSRR_VARIANTS))
def test_csrr_e_equals_single_machine(dask_client, variant, n_blocks):
    Y = _matrix(14)
    Y.data[::7] = 0.0          # stored zeros are not positives (csrr drops them)
    kw = CSRR_VARIANTS[variant]
    ref = fp.csrr.fit(Y, 3, variant="e", n_iter=5, seed=6, n_threads=1, **kw)
    mod = dfit(Y, 3, method="csrr", client=dask_client, n_blocks=n_blocks, n_iter=5,
                          seed=6, **kw)
    assert_same(ref, mod)
    assert [h["nnz_V"] for h in mod.history] == [h["nnz_V"] for h in ref.history]
    assert mod.V.nnz == ref.V.nnz > 0
    np.testing.assert_allclose(mod.V.toarray(), ref.V.toarray(), rtol=RTOL, atol=1e-12)


def test_more_blocks_than_rows(dask_client):
    """n_blocks above m and n leaves blocks with no rows at all; every method still matches."""
    Y = _matrix(16, m=4, n=3, empty_rows=1, empty_cols=1, density=0.7)
    cases = [
        ("ocmf", fp.ocmf.fit, dict(loss="logistic", rho=0.1)),
        ("ocmf", fp.ocmf.fit, dict(loss="logistic", rho=0.1, item_features="Z",
                                   dtype="float64")),
        ("fbgd", fp.fbgd.fit, dict(update="batch", alpha0=1.0)),
        ("fbgd", fp.fbgd.fit, dict(alpha0=1.0)),
        ("csrr", fp.csrr.fit, dict(variant="e")),
        ("homf", fp.homf.fit, dict(mode="dense", T=2, lam=0.1)),
        ("homf", fp.homf.fit, dict(T=2, lam=0.1)),
    ]
    Z = np.random.default_rng(4).normal(size=(Y.shape[1], 2))
    cases = [(m_, f_, {key: Z if v == "Z" else v for key, v in kw.items()})
             for m_, f_, kw in cases]
    for method, single, kw in cases:
        ref = single(Y, 2, n_iter=2, seed=1, **kw)
        mod = dfit(Y, 2, method=method, client=dask_client, n_blocks=5, n_iter=2, seed=1, **kw)
        assert_same(ref, mod)


@pytest.mark.parametrize("method", ["ocmf", "fbgd", "csrr", "homf"])
def test_the_same_call_gives_the_same_model(dask_client, method):
    """distributed.fit(Y, k, method=m) with no other argument (but the client) fits
    fastpu.<m>.fit(Y, k)'s model: every single-machine default has a distributed form (ocmf's
    float32 factors, fBGD's coordinate updates, CSRR-e, HOMF's exact mode)."""
    Y = _matrix(19, m=16, n=11, empty_rows=2, empty_cols=1)
    ref = getattr(fp, method).fit(Y, 3)
    mod = distributed.fit(Y, 3, method=method, client=dask_client)
    assert_same(ref, mod)
    same = {key: val for key, val in mod.params.items() if key != "distributed"}
    assert same == {key: val for key, val in ref.params.items() if key in same}
    # every setting the single-machine model records, with the value it used
    assert set(same) == set(ref.params), set(ref.params) ^ set(same)


# ------------------------------------------------------------------------------ routed rows

@contextlib.contextmanager
def _routed(client, Y, nb, workers=None):
    """Y's layout over ``nb`` blocks and its two routers, released when the block ends."""
    from fastpu.distributed import blocks as _blocks
    from fastpu.distributed import routing

    workers = _blocks.worker_addresses(client) if workers is None else workers
    layout = _blocks.layout_from_csr(client, Y, nb, workers)
    routes = routing.Routes(client, layout)
    try:
        yield layout, routes
    finally:
        routes.release()
        layout.release()


def _sources(client, F, cuts):
    """F's rows cut at ``cuts``, one scattered future per block: what the routers cut from."""
    return [client.scatter(F[cuts[c]:cuts[c + 1]]) for c in range(len(cuts) - 1)]


def test_routing_sends_each_block_only_the_rows_it_touches(dask_client):
    """The routers of a layout: destination block b receives from source block c exactly the
    other side's rows of c's range that b's positives touch, in order, and the blocks' column
    ids are re-indexed into that compact matrix. With a block-diagonal Y whose groups are the
    blocks, nothing moves between the two workers."""
    from fastpu.distributed import blocks as _blocks
    from fastpu.distributed import routing

    rng = np.random.default_rng(6)
    m, n, nb = 20, 12, 3
    Y = sp.csr_array((rng.random((m, n)) < 0.25).astype(float))
    with _routed(dask_client, Y, nb) as (layout, routes):
        W = rng.standard_normal((m, 2))
        H = rng.standard_normal((n, 2))
        W_src = _sources(dask_client, W, layout.ub)
        H_src = _sources(dask_client, H, layout.ib)
        for router, A, cuts_b, cuts_c, E_src, E in ((routes.user, Y, layout.ub, layout.ib,
                                                     H_src, H),
                                                    (routes.item, Y.T.tocsr(), layout.ib,
                                                     layout.ub, W_src, W)):
            for b in range(nb):
                cols = np.unique(A[cuts_b[b]:cuts_b[b + 1]].indices)
                per_source = [np.sum((cols >= cuts_c[c]) & (cols < cuts_c[c + 1]))
                              for c in range(nb)]
                np.testing.assert_array_equal(router.counts[b], per_source)
                assert router.sources_of(b) == [c for c in range(nb) if per_source[c]]
                got = dask_client.submit(routing.assemble, 2, "float64",
                                         *router.pieces(E_src, b)).result()
                np.testing.assert_array_equal(got, E[cols])
                touch = router.touch[b].result()
                np.testing.assert_array_equal(touch.ids, cols)
                idx = A[cuts_b[b]:cuts_b[b + 1]].indices
                np.testing.assert_array_equal(cols[routing.compact(idx, touch)], idx)
    # block-diagonal: 2 groups, 2 blocks on 2 workers -> no row crosses a worker
    D = sp.csr_array(sp.block_diag([np.ones((5, 4)), np.ones((5, 4))], format="csr"))
    with _routed(dask_client, D, 2, _blocks.worker_addresses(dask_client)[:2]) as (_, routes):
        np.testing.assert_array_equal(routes.user.counts, [[4, 0], [0, 4]])
        np.testing.assert_array_equal(routes.item.counts, [[5, 0], [0, 5]])
        assert routes.user.remote_rows() == routes.item.remote_rows() == 0


class _Recorder:
    """The real client, with every ``submit`` it is asked for recorded (function, args, future)."""

    def __init__(self, client):
        self.client, self.calls = client, []

    def submit(self, fn, *args, **kw):
        fut = self.client.submit(fn, *args, **kw)
        self.calls.append((fn.__name__, args, fut))
        return fut

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_destination_builds_its_rows_piece_by_piece(dask_client):
    """Memory: a destination with several sources gets one compact matrix, built by
    a chain on its worker (start, then place per source, its own worker's source first); each
    cut after the first waits for the chain's marker of the pieces placed so far, so neither
    side holds every piece at once. The result is the touched rows in source order."""
    rng = np.random.default_rng(2)
    m, n, nb = 12, 30, 3
    Y = sp.csr_array((rng.random((m, n)) < 0.6).astype(float))
    with _routed(dask_client, Y, nb) as (layout, routes):
        H = rng.standard_normal((n, 3))
        H_src = _sources(dask_client, H, layout.ib)
        router = routes.user
        router.client = rec = _Recorder(dask_client)
        for b in range(nb):
            assert router.sources_of(b) == [0, 1, 2]
            rec.calls.clear()
            out = router.pieces(H_src, b)
            assert len(out) == 1
            cols = np.unique(Y[layout.ub[b]:layout.ub[b + 1]].indices)
            np.testing.assert_array_equal(out[0].result(), H[cols])
            names = [c[0] for c in rec.calls]
            assert names == ["take", "start", "ready", "take", "place", "ready", "take", "place"]
            takes = [c for c in rec.calls if c[0] == "take"]
            # the source on b's own worker first, then round from there
            assert [router.need[b, c].key for c in ((b + i) % nb for i in range(nb))] == \
                [t[1][1].key for t in takes]
            assert takes[0][1][2] is None
            chain = [c[2] for c in rec.calls if c[0] in ("start", "place")]
            readies = [c for c in rec.calls if c[0] == "ready"]
            for i, t in enumerate(takes[1:]):
                assert t[1][2] is readies[i][2]           # waits for the marker ...
                assert readies[i][1][0] is chain[i]       # ... of the pieces placed so far
            assert rec.calls[-1][2] is out[0]


# ---------------------------------------------------------------------------------- pairs input

def _pairs(Y, *, value=True, dup=False):
    import dask.dataframe as dd
    import pandas as pd

    C = Y.tocoo()
    df = pd.DataFrame({"user": C.row.astype(np.int64), "item": C.col.astype(np.int64)})
    if value:
        df["value"] = C.data
    if dup:   # every entry split in two halves: the pairs input sums duplicates, like a COO matrix
        half = df.copy()
        half["value"] = df["value"] / 2
        df = pd.concat([half, half], ignore_index=True)
    df = df.sample(frac=1.0, random_state=0).reset_index(drop=True)   # no order to rely on
    return dd.from_pandas(df, npartitions=3)


@pytest.mark.parametrize("n_blocks", [1, 3])
def test_pairs_input_equals_matrix_input(dask_client, n_blocks):
    Y = _matrix(6)
    ref = fp.ocmf.fit(Y, 3, loss="logistic", n_iter=3, seed=2)
    mod = dfit(_pairs(Y), 3, method="ocmf", client=dask_client, n_blocks=n_blocks,
                          shape=Y.shape, loss="logistic", n_iter=3, seed=2)
    assert_same(ref, mod)
    assert mod.seen is None           # the pairs stay on the workers: Y_seen is the caller's
    ref = fp.fbgd.fit(Y, 3, n_iter=3, seed=2, alpha0=2.0, rho=0.5, pos_weight="values")
    mod = dfit(_pairs(Y, dup=True), 3, method="fbgd", client=dask_client, n_blocks=n_blocks,
               shape=Y.shape, n_iter=3, seed=2, alpha0=2.0, rho=0.5, pos_weight="values")
    assert_same(ref, mod)


def test_pairs_shape_from_largest_ids(dask_client):
    Y = _matrix(7, empty_rows=0, empty_cols=0, density=0.5)
    Y = sp.csr_array(Y.toarray().astype(bool).astype(float))
    assert Y[[-1]].nnz and Y[:, [-1]].nnz          # the largest ids are present
    ref = fp.ocmf.fit(Y, 2, loss="square", n_iter=2, seed=0)
    mod = dfit(_pairs(Y, value=False), 2, client=dask_client, loss="square",
                          n_iter=2, seed=0)
    assert mod.shape == Y.shape
    assert_same(ref, mod)


def test_bad_pairs_input(dask_client):
    import dask.dataframe as dd
    import pandas as pd

    def ddf(**cols):
        return dd.from_pandas(pd.DataFrame(cols), npartitions=2)

    with pytest.raises(ValueError, match=r"columns \['u', 'item'\].*'user' and 'item'.*missing \['user'\]"):
        dfit(ddf(u=[0, 1], item=[0, 1]), 2, client=dask_client)
    with pytest.raises(TypeError, match="column 'item' must hold integer ids.*float64"):
        dfit(ddf(user=[0, 1], item=[0.0, 1.5]), 2, client=dask_client)
    with pytest.raises(TypeError, match="column 'user' must hold integer ids.*got dtype (object|string)"):
        dfit(ddf(user=["a", "b"], item=[0, 1]), 2, client=dask_client)
    with pytest.raises(ValueError, match=r"column 'user' has negative ids \(min -3\)"):
        dfit(ddf(user=[0, -3], item=[0, 1]), 2, client=dask_client)
    with pytest.raises(ValueError, match=r"ids up to user 1, item 5, outside shape=\(2, 3\)"):
        dfit(ddf(user=[0, 1], item=[0, 5]), 2, client=dask_client, shape=(2, 3))
    with pytest.raises(TypeError, match="column 'value' must be numeric"):
        dfit(ddf(user=[0, 1], item=[0, 1], value=["x", "y"]), 2, client=dask_client)
    with pytest.raises(ValueError, match="'value' has negative values"):
        dfit(ddf(user=[0, 1], item=[0, 1], value=[1.0, -1.0]), 2, client=dask_client)
    for shape in (None, (3, 2)):          # an empty dataframe is refused, with a shape too
        with pytest.raises(ValueError, match=r"Y \(a dask dataframe of pairs\) is empty .* expected at "
                                             "least one positive"):
            dfit(ddf(user=np.zeros(0, np.int64), item=np.zeros(0, np.int64)), 2,
                 client=dask_client, shape=shape)


# ---------------------------------------------------------------------------- losing a worker

def test_worker_restart_mid_fit_gives_same_result(dask_client):
    """A nanny restart between iterations drops every block and broadcast held by that worker;
    the blocks are rebuilt from their source in the graph (here the dataframe's partitions) and
    the fit ends with the same model."""
    Y = _matrix(8, m=16, n=12, empty_rows=3, empty_cols=2)
    ref = fp.ocmf.fit(Y, 3, loss="logistic", n_iter=4, seed=3)
    restarted = []

    def kill(info):
        if info["iter"] == 2:
            victim = sorted(dask_client.scheduler_info()["workers"])[0]
            dask_client.restart_workers([victim])
            restarted.append(victim)

    mod = dfit(_pairs(Y), 3, client=dask_client, n_blocks=3, shape=Y.shape,
                          loss="logistic", n_iter=4, seed=3, callback=kill)
    assert restarted and restarted[0] not in dask_client.scheduler_info()["workers"]
    assert_same(ref, mod)
    dask_client.wait_for_workers(2, timeout=180)


def test_worker_restart_with_state_on_the_workers(dask_client):
    """CSRR-e keeps V (per positive) on the workers between iterations. After a restart the lost
    copies are recomputed from their lineage (the initial factors are data of the task graph, not
    scattered copies that Dask's memory manager thins to one) and the model is the same."""
    Y = _matrix(15)
    ref = fp.csrr.fit(Y, 3, variant="e", n_iter=4, seed=8, lam2=0.05)

    def kill(info):
        if info["iter"] == 2:
            dask_client.restart_workers([sorted(dask_client.scheduler_info()["workers"])[0]])

    try:
        mod = dfit(Y, 3, method="csrr", client=dask_client, n_blocks=3, n_iter=4, seed=8,
                   lam2=0.05, callback=kill)
    finally:
        dask_client.wait_for_workers(2, timeout=180)
    assert_same(ref, mod)


@pytest.mark.parametrize("method", ["ocmf", "fbgd", "csrr", "homf"])
def test_losing_every_worker_gives_the_same_model(dask_client, method):
    """When all workers restart at once nothing is lost for good: the client's data is part of the
    task graph (re-sent by the scheduler), and the roots are free to run on the new workers.
    Every method at its defaults."""
    Y = _matrix(17)
    ref = getattr(fp, method).fit(Y, 3, n_iter=3, seed=0)

    def kill_all(info):
        if info["iter"] == 1:
            dask_client.restart_workers(sorted(dask_client.scheduler_info()["workers"]))

    try:
        mod = dfit(Y, 3, method=method, client=dask_client, n_iter=3, seed=0, callback=kill_all)
    finally:
        dask_client.wait_for_workers(2, timeout=180)
    assert_same(ref, mod)


def _sigkill_at_random(client, rng, n_iter):
    """A callback that, at a random iteration, starts a thread that SIGKILLs one worker process
    (the worker, not its nanny: the nanny starts a new one) after a random delay of up to 50 ms,
    while the next half-steps run; and the record of what it did."""
    import os
    import signal
    import threading
    import time

    at = int(rng.integers(1, n_iter - 1))
    delay = float(rng.uniform(0.0, 0.05))
    pids = client.run(os.getpid)
    victim = sorted(pids)[int(rng.integers(len(pids)))]
    done = {}

    def kill():
        time.sleep(delay)
        os.kill(pids[victim], signal.SIGKILL)
        done["at"] = time.monotonic()

    def callback(info):
        if info["iter"] == at:
            done["thread"] = threading.Thread(target=kill)
            done["thread"].start()

    return callback, done, pids[victim]


def _assert_killed(done, pid, ended):
    """The victim is dead, and it was killed before the fit returned (at ``ended``): the fit ran
    on through the loss, not past it."""
    import os

    done["thread"].join()
    assert done["at"] < ended, "the worker was killed only after the fit had returned"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    raise AssertionError(f"worker process {pid} is still alive")


SIGKILL_CASES = {
    "ocmf": (fp.ocmf.fit, dict()),
    "ocmf-features": (fp.ocmf.fit, dict(item_features="Z", dtype="float64")),
    # a 3 × 2 grid of cells (distributed.fit's grid=): float64, where it equals one machine
    "ocmf-grid": (fp.ocmf.fit, dict(grid=(3, 2), dtype="float64", loss="logistic")),
    "fbgd": (fp.fbgd.fit, dict()),
    "fbgd-features": (fp.fbgd.fit, dict(user_features="X", update="batch")),
    "csrr": (fp.csrr.fit, dict()),
    "homf": (fp.homf.fit, dict()),
    "homf-dense": (fp.homf.fit, dict(mode="dense")),
}


@pytest.mark.parametrize("case", list(SIGKILL_CASES))
def test_sigkill_of_a_worker_at_a_random_half_step(dask_client, case):
    """Every method, at its defaults (and its other distributed forms): a worker process killed
    by SIGKILL at a random moment of the fit; the fit goes on and ends with the same model."""
    single, kw = SIGKILL_CASES[case]
    Y = _matrix(18, m=24, n=17, empty_rows=2, empty_cols=2, density=0.3)
    # FASTPU_FAULT_SEED=<n> draws other moments and victims (a soak run over several seeds)
    rng = np.random.default_rng([zlib.crc32(case.encode()),
                                 int(os.environ.get("FASTPU_FAULT_SEED", "0"))])
    X, Z = _features(*Y.shape)
    kw = {key: {"X": sp.csr_array(np.abs(X)), "Z": Z}.get(v, v) if isinstance(v, str)
          and v in "XZ" else v for key, v in kw.items()}
    n_iter = 6
    layout = dict(grid=kw.pop("grid")) if "grid" in kw else dict(n_blocks=3)
    ref = single(Y, 3, n_iter=n_iter, seed=3, n_threads=1, **kw)
    callback, done, pid = _sigkill_at_random(dask_client, rng, n_iter)
    method = case.split("-")[0]
    try:
        mod = dfit(Y, 3, method=method, client=dask_client, n_iter=n_iter, seed=3,
                   callback=callback, **layout, **kw)
        _assert_killed(done, pid, time.monotonic())
    finally:
        dask_client.wait_for_workers(2, timeout=180)
    assert_same(ref, mod)


# ------------------------------------------------------- a scheduler and workers as processes

def test_scheduler_and_workers_as_subprocesses(tmp_path):
    """`dask scheduler` + two `dask worker` processes on 127.0.0.1, connected by address."""
    import json
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = str(Path(fp.__file__).resolve().parent.parent)
    env = dict(os.environ, NUMBA_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    sfile = tmp_path / "scheduler.json"
    procs = []
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--no-dashboard", "--scheduler-file", str(sfile)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(sfile),
                 "--nthreads", "1", "--nworkers", "1", "--host", "127.0.0.1", "--no-dashboard"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while not sfile.exists():
            assert time.monotonic() < deadline, "the dask scheduler did not start"
            assert procs[0].poll() is None, "the dask scheduler exited"
            time.sleep(0.2)
        time.sleep(0.2)
        address = json.loads(sfile.read_text())["address"]
        from dask.distributed import Client
        with Client(address) as c:
            c.wait_for_workers(2, timeout=60)
        Y = _matrix(10)
        ref = fp.ocmf.fit(Y, 3, loss="square", rho=0.2, n_iter=3, seed=5)
        mod = dfit(Y, 3, client=address, n_blocks=2, loss="square", rho=0.2,
                              n_iter=3, seed=5)
        assert_same(ref, mod)
        assert mod.params["distributed"]["n_workers"] == 2
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert all(p.poll() is not None for p in procs)


# ------------------------------------------------------------------------------------ the CLI

def test_cli_run_on_a_scheduler(dask_client, tmp_path, capsys):
    from fastpu import cli

    Y = _matrix(11, m=30, n=20, empty_rows=2, empty_cols=2)
    path = tmp_path / "y.npz"
    sp.save_npz(path, sp.csr_matrix(Y))
    argv = ["run", "--data", str(path), "--test-frac", "0", "--param", "k=3", "--param",
            "n_iter=3", "--param", "loss=square", "--save", str(tmp_path / "f.npz")]
    assert cli.main(argv + ["--scheduler", dask_client.scheduler.address]) == 0
    err = capsys.readouterr().err
    assert "[ocmf] iter   3" in err                 # progress per iteration
    dist = [h["objective"] for h in fp.load_model(tmp_path / "f.npz").history]
    assert cli.main(argv) == 0
    single = [h["objective"] for h in fp.load_model(tmp_path / "f.npz").history]
    assert len(dist) == 3
    np.testing.assert_allclose(dist, single, rtol=RTOL)
    # a local cluster of one worker from --workers
    assert cli.main(["run", "--data", str(path), "--test-frac", "0", "--param", "k=3",
                     "--param", "n_iter=2", "--method", "fbgd", "--workers", "1",
                     "--save", str(tmp_path / "g.npz")]) == 0
    assert "[fbgd] iter   2" in capsys.readouterr().err
    assert cli.main(["run", "--data", str(path), "--method", "csrr", "--param", "variant=II",
                     "--scheduler", dask_client.scheduler.address]) == 2
    assert "CSRR-II keeps a dense m×n U" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ bad input

def test_bad_arguments(dask_client):
    Y = _matrix(12)
    with pytest.raises(ValueError, match=r"method must be one of \['ocmf', 'fbgd', 'csrr', 'homf'\], got 'nmf'"):
        dfit(Y, 2, method="nmf", client=dask_client)
    for variant in ("I", "II"):
        with pytest.raises(ValueError, match=f"CSRR-{variant} keeps a dense m×n U.*variant='e'.*fastpu.csrr.fit"):
            dfit(Y, 2, method="csrr", variant=variant, client=dask_client)
    with pytest.raises(ValueError, match="neg_row_weights .* has no distributed form yet"):
        dfit(Y, 2, method="fbgd", client=dask_client, neg_row_weights=np.ones(Y.shape[0]))
    with pytest.raises(ValueError, match="n_inner=3 has no distributed form"):
        dfit(Y, 2, method="csrr", n_inner=3, client=dask_client)
    with pytest.raises(TypeError, match="HOMF builds its random-walk matrix.*scipy.sparse"):
        dfit(_pairs(Y), 2, method="homf", client=dask_client)
    with pytest.raises(ValueError, match="negatives='full_logistic' has no distributed form.*LR-wLR"):
        dfit(Y, 2, loss="logistic", negatives="full_logistic", client=dask_client)
    with pytest.raises(ValueError, match="negatives='sampled' has no distributed form"):
        dfit(Y, 2, negatives="sampled", client=dask_client)
    with pytest.raises(ValueError, match="features/graphs with TRON.*fast_path=False.*fastpu.ocmf.fit"):
        dfit(Y, 2, fast_path=False, client=dask_client)
    with pytest.raises(ValueError, match="user_graph has shape 12×12, expected a square 13×13"):
        dfit(Y, 2, user_graph=sp.eye(12, format="csr"), lam_graph=1.0, client=dask_client)
    with pytest.raises(ValueError, match="n_iter must be >= 1, got 0"):
        dfit(Y, 2, n_iter=0, client=dask_client)
    # the penalty bound of the single-machine fits (1e20) holds on the cluster too
    with pytest.raises(ValueError, match=r"lam must be at most 1e\+20, got 1e\+100"):
        dfit(Y, 2, lam=1e100, client=dask_client)
    with pytest.raises(ValueError, match=r"lam_graph must be at most 1e\+20"):
        dfit(Y, 2, user_graph=sp.eye(13, format="csr"), lam_graph=1e100, client=dask_client)
    with pytest.raises(ValueError, match=r"lam must be at most 1e\+20, got 1e\+100"):
        dfit(Y, 2, method="fbgd", lam=1e100, client=dask_client)
    with pytest.raises(ValueError, match="solver='gd' has no distributed form"):
        dfit(Y, 2, user_features=np.ones((13, 2)), solver="gd", client=dask_client)
    # float32 (the default) with features: the coupled side solved in float64, rounded back,
    # as ocmf.fit does
    Z = np.random.default_rng(5).normal(size=(Y.shape[1], 2))
    ref = fp.ocmf.fit(Y, 2, item_features=Z, n_iter=2, seed=1, n_threads=1)
    mod = dfit(Y, 2, item_features=Z, client=dask_client, n_iter=2, seed=1)
    assert mod.extras["H"].dtype == np.float32
    np.testing.assert_allclose(mod.user_factors, ref.user_factors, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="user_features has 12 rows"):
        dfit(Y, 2, user_features=np.ones((12, 2)), client=dask_client)
    # coordinate updates with features or biases go over a feature's rows in turn: refused,
    # naming update='batch' (plain MF runs update='coordinate', the default)
    with pytest.raises(ValueError, match="update='coordinate'.*with features or biases.*"
                                         "pass update='batch'"):
        dfit(Y, 2, method="fbgd", biases=True, client=dask_client)
    with pytest.raises(ValueError, match="update='coordinate'.*with features or biases.*"
                                         "pass update='batch'"):
        dfit(Y, 2, method="fbgd", user_features=np.ones((13, 2)), update="coordinate",
             client=dask_client)
    with pytest.raises(TypeError, match="biases must be True, False or None"):
        dfit(Y, 2, method="fbgd", biases="yes", client=dask_client)
    with pytest.raises(ValueError, match="item_features has 8 rows"):
        dfit(Y, 2, method="fbgd", item_features=np.ones((8, 2)), client=dask_client)
    with pytest.raises(TypeError, match=r"unexpected parameters \['bogus'\]"):
        dfit(Y, 2, bogus=1, client=dask_client)
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client, an address string or None, got int"):
        dfit(Y, 2, client=3)
    with pytest.raises(ValueError, match="n_workers starts a local cluster"):
        dfit(Y, 2, client=dask_client, n_workers=2)
    with pytest.raises(TypeError, match="Y must be a scipy.sparse matrix or array, got ndarray"):
        dfit(Y.toarray(), 2, client=dask_client)
    with pytest.raises(TypeError, match="shape= is only for a dask dataframe"):
        dfit(Y, 2, client=dask_client, shape=(13, 9))
    with pytest.raises(ValueError, match="n_blocks must be >= 1"):
        dfit(Y, 2, client=dask_client, n_blocks=0)
    with pytest.raises(ValueError, match="k must be >= 1"):
        dfit(Y, 0, client=dask_client)
    with pytest.raises(ValueError, match="unknown loss .hinge.; expected one of"):
        dfit(Y, 2, loss="hinge", client=dask_client)


@pytest.mark.parametrize("method", list(distributed.METHODS))
def test_distributed_defaults_are_the_single_machine_fits(method):
    """The drivers spell out no default: fastpu.distributed.fit fills in the single-machine fit's
    own, so they cannot drift."""
    import importlib
    import inspect

    from fastpu.distributed import _driver, _with_defaults

    driver = _driver(method)
    params = inspect.signature(driver.fit).parameters.values()
    kw = [p for p in params if p.kind is p.KEYWORD_ONLY]
    assert kw and all(p.default is inspect.Parameter.empty for p in kw)
    single = inspect.signature(importlib.import_module(f"fastpu.{method}").fit).parameters
    if hasattr(driver, "fit_args"):
        # the driver takes the single-machine fit's arguments whole and checks them with its
        # checks (ocmf: one checked record); what it fills in is that fit's own defaults
        filled = driver.fit_args(3, {"seed": 7})
        assert filled["seed"] == 7 and filled["k"] == 3
        others = {name for name in single if name not in ("Y", "k", "n_threads", "seed")}
        assert others <= set(filled)
        for name in others:
            assert filled[name] is single[name].default or filled[name] == single[name].default
        with pytest.raises(TypeError, match="unexpected parameters.*'not_a_parameter'"):
            driver.fit_args(3, {"not_a_parameter": 1})
        return
    filled = _with_defaults(method, driver, {"seed": 7})
    assert filled["seed"] == 7                      # a given value is kept
    for p in kw:
        if p.name in ("n_threads", "seed"):
            continue
        assert filled[p.name] == single[p.name].default, p.name


def test_a_driver_keyword_without_a_single_machine_default_is_refused():
    from fastpu.distributed import _with_defaults

    class driver:
        @staticmethod
        def fit(client, layout, k, *, rho, not_a_parameter, n_threads):
            pass

    with pytest.raises(TypeError, match="'not_a_parameter'.*fastpu.fbgd.fit gives no default"):
        _with_defaults("fbgd", driver, {})


def test_homf_with_negative_values_and_g_exp_runs_as_on_one_machine(dask_client):
    """homf.fit takes any finite stored value with g="exp" (it is an edge weight's argument);
    the distributed fit did not (it refused negative values for every method)."""
    Y = _matrix(21).astype(np.float64)
    Y.data = Y.data - 0.5 * Y.data.max()          # centred: some values below zero
    assert Y.data.min() < 0
    ref = fp.homf.fit(Y, 3, mode="dense", g="exp", n_iter=2, seed=4, n_threads=1)
    mod = dfit(Y, 3, method="homf", g="exp", mode="dense", client=dask_client, n_iter=2, seed=4)
    np.testing.assert_allclose(mod.user_factors, ref.user_factors, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        dfit(Y, 3, method="homf", g="linear", client=dask_client, n_iter=1)


def test_a_methods_dask_form_imports_first_in_a_fresh_process():
    """Each method's Dask form can be imported before fastpu.distributed (its front door
    builds the list of methods on first use, not at import)."""
    import subprocess
    import sys

    code = "import fastpu.ocmf._dask, fastpu.csrr._dask, fastpu.fbgd._dask, fastpu.homf._dask"
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(root))


MODEL_CASES = {
    "ocmf": ("ocmf", dict()),
    "ocmf-grid": ("ocmf", dict(grid=(2, 2), dtype="float64")),
    "ocmf-features": ("ocmf", dict(item_features="Z", dtype="float64")),
    "fbgd": ("fbgd", dict()),
    "fbgd-features": ("fbgd", dict(user_features="X", update="batch")),
    "csrr": ("csrr", dict()),
    "homf": ("homf", dict()),
    "homf-dense": ("homf", dict(mode="dense")),
}


@pytest.mark.parametrize("case", list(MODEL_CASES))
def test_the_callback_gets_the_iterate_as_on_one_machine(dask_client, case):
    """``info["model"]()`` in a callback is the model at that iteration, as the single-machine
    fit gives it (gathered from the workers when the callback asks for it)."""
    method, kw = MODEL_CASES[case]
    Y = _matrix(19, m=16, n=12, empty_rows=2, empty_cols=2)
    X, Z = _features(*Y.shape)
    kw = {key: {"X": sp.csr_array(np.abs(X)), "Z": Z}.get(v, v) if isinstance(v, str)
          and v in "XZ" else v for key, v in kw.items()}
    grid = kw.pop("grid", None)
    seen = {}

    def keep(name):
        def callback(info):
            if info["iter"] == 2:
                seen[name] = info["model"]()
        return callback

    getattr(fp, method).fit(Y, 3, n_iter=3, seed=4, n_threads=1, callback=keep("one"), **kw)
    layout = dict(grid=grid) if grid else dict(n_blocks=3)
    dfit(Y, 3, method=method, client=dask_client, n_iter=3, seed=4, callback=keep("cluster"),
         **layout, **kw)
    ref, mod = seen["one"], seen["cluster"]
    assert type(mod) is type(ref) and mod.method == ref.method
    s_ref = ref.scores()
    np.testing.assert_allclose(mod.scores(), s_ref, rtol=RTOL, atol=RTOL * np.abs(s_ref).max())
