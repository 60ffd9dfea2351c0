"""Pinned results: a digest of every method's and variant's fitted model on fixed seeds.

A redesign of the package moves every file but must not change one bit of any
result. Each case below fits a small problem through the public API and hashes everything
numeric the model holds (factors, extras, the objective history); the digests were recorded
before the first file moved (``tests/digests.json``), and this test keeps them. A change that
is meant to alter results re-records them on purpose and says so in its commit:

    python tests/test_digests.py --write

Digests are taken with 1 and with 2 numba threads (where the machine allows 2): most methods
agree across thread counts, but the pin holds each count to itself.

The bits also depend on the machine code: numba compiles for the host CPU and OpenBLAS picks its
kernels by CPU, so another processor rounds differently (an AMD Zen 3, ``znver3``, gives other digests for
30 of the cases than the machine they were first recorded on, at the same commit). Digests
recorded on such a machine live under its ``machine.platform()`` key in ``"by_platform"``; a machine
with no entry there is held to the first recording. To add this machine's, at a commit whose
results are known to equal the pinned ones (check it on the first machine):

    python tests/test_digests.py --write-platform
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from machine import platform

HERE = pathlib.Path(__file__).resolve().parent
PINNED = HERE / "digests.json"


def _data():
    d = fp.datasets.synthetic(48, 36, rank=3, density=0.12, seed=7)
    Y = sp.csr_array(d.Y, dtype=np.float64)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(48, 5))
    Z = sp.random_array((36, 6), density=0.4, random_state=4, format="csr")
    S = sp.random_array((36, 36), density=0.1, random_state=5, format="csr")
    S = sp.csr_array(S + S.T)
    Su = sp.random_array((48, 48), density=0.08, random_state=6, format="csr")
    Su = sp.csr_array(Su + Su.T)
    ratings = Y.copy()
    ratings.data = rng.integers(1, 6, size=Y.nnz).astype(np.float64)
    return Y, X, Z, S, Su, ratings


def _cases():
    """(name, zero-argument fit) for every method and variant the package has."""
    Y, X, Z, S, Su, R = _data()
    o = dict(n_iter=3, seed=1)
    cases = {
        # ocmf: the paper's formulations, the coupled sides (TRON, GD), float32, sampled
        "ocmf-default": lambda: fp.ocmf.fit(Y, 4, **o),
        "ocmf-iALS": lambda: fp.ocmf.fit(Y, 4, loss="square", negatives="all", a_bar=0.0,
                                         nu=1.0, rho=0.3, lam=0.02, **o),
        "ocmf-iALS-pcg": lambda: fp.ocmf.fit(Y, 4, loss="square", negatives="all", a_bar=0.0,
                                             nu=1.0, rho=0.3, lam=0.02, precondition=True, **o),
        "ocmf-LR-pcg": lambda: fp.ocmf.fit(Y, 4, loss="logistic", rho=0.05, lam=0.02, nu=1.0,
                                           precondition=True, **o),
        "ocmf-SQ-SQ": lambda: fp.ocmf.fit(Y, 4, loss="square", rho=1.0, a_bar=0.0, lam=2.0, **o),
        "ocmf-SQ-wSQ": lambda: fp.ocmf.fit(Y, 4, loss="square", rho=0.1, lam=1.0, **o),
        "ocmf-LR-wSQ": lambda: fp.ocmf.fit(Y, 4, loss="logistic", rho=0.05, lam=0.5, **o),
        "ocmf-SH-wSQ": lambda: fp.ocmf.fit(Y, 4, loss="squared_hinge", rho=0.05, **o),
        "ocmf-LR-wLR": lambda: fp.ocmf.fit(Y, 3, loss="logistic", negatives="full_logistic", **o),
        "ocmf-sampled": lambda: fp.ocmf.fit(Y, 3, loss="logistic", negatives="sampled",
                                            neg_ratio=2.0, rho=1.0, **o),
        "ocmf-weights": lambda: fp.ocmf.fit(R, 4, loss="square", rho=0.1,
                                            p=np.linspace(0.5, 1.5, 48), q=np.linspace(1, 2, 36), **o),
        "ocmf-float32": lambda: fp.ocmf.fit(Y, 4, loss="logistic", dtype="float32", **o),
        "ocmf-tron-slow": lambda: fp.ocmf.fit(Y, 3, loss="logistic", fast_path=False, **o),
        # the paper's feature model (no intercept column), as recorded before intercept=True
        # became the default; the default's own case follows
        "ocmf-features-tron": lambda: fp.ocmf.fit(Y, 3, loss="logistic", user_features=X,
                                                  item_features=Z, intercept=False, **o),
        "ocmf-features-gd": lambda: fp.ocmf.fit(Y, 3, loss="logistic", user_features=X,
                                                solver="gd", intercept=False, **o),
        "ocmf-features-intercept": lambda: fp.ocmf.fit(Y, 3, loss="logistic", user_features=X,
                                                       item_features=Z, **o),
        "ocmf-graph": lambda: fp.ocmf.fit(Y, 3, loss="logistic", item_graph=S, user_graph=Su,
                                          lam_graph=0.5,
                                          lam_w=0.3, lam_h=0.7, **o),
        "ocmf-steps": lambda: fp.ocmf.fit(Y, 4, loss="square", rho=0.1, newton_steps=2,
                                          cg_steps=6, **o),
        # fBGD: both update rules, Adagrad and GD, features with biases, row weights, tensors
        "fbgd-coordinate": lambda: fp.fbgd.fit(Y, 4, **o),
        "fbgd-batch": lambda: fp.fbgd.fit(Y, 4, update="batch", **o),
        "fbgd-gd": lambda: fp.fbgd.fit(Y, 4, optimizer="gd", lr=0.001, **o),
        "fbgd-features": lambda: fp.fbgd.fit(Y, 3, user_features=sp.csr_array(X), item_features=Z,
                                             **o),
        "fbgd-features-batch": lambda: fp.fbgd.fit(Y, 3, item_features=Z, update="batch", **o),
        "fbgd-weights": lambda: fp.fbgd.fit(R, 3, pos_weight="values", rho=0.5,
                                            neg_row_weights=np.linspace(0.5, 1.5, 48), **o),
        "fbgd-pitf": lambda: fp.fbgd.fit_tensor(Y, 3, pairs=_pairs(48), tensor="pitf", **o),
        "fbgd-cp": lambda: fp.fbgd.fit_tensor(Y, 3, pairs=_pairs(48), tensor="cp", **o),
        # CSRR: the dense variants and the bilinear one, both losses, the paper's inner loop
        "csrr-I": lambda: fp.csrr.fit(Y, variant="I", **o),
        "csrr-II": lambda: fp.csrr.fit(Y, variant="II", restart="function", **o),
        "csrr-e": lambda: fp.csrr.fit(Y, 4, variant="e", **o),
        "csrr-e-II-inner": lambda: fp.csrr.fit(Y, 4, variant="e", loss="II", n_inner=None, **o),
        # HOMF: exact and dense, with side graphs and each g
        "homf-exact": lambda: fp.homf.fit(Y, 3, T=2, **o),
        "homf-dense": lambda: fp.homf.fit(Y, 3, T=3, mode="dense", **o),
        "homf-graph": lambda: fp.homf.fit(R, 3, T=2, item_graph=S, user_graph=Su, g="exp", **o),
        "homf-dense-step": lambda: fp.homf.fit(R, 3, T=2, item_graph=S, g="step", mode="dense", **o),
        # baselines
        "wrmf": lambda: fp.baselines.wrmf(R, 4, alpha=10.0, lam=1.0, **o),
        "wrmf-defaults": lambda: fp.baselines.wrmf(R, 4, **o),
    }
    return cases


def _pairs(m):
    rows = np.arange(m)
    return np.stack([rows, rows % 5], axis=1)


def _fold_cases(models):
    """fold_in of three training rows into each fitted model (the row solvers)."""
    Y, X, Z, S, Su, R = _data()
    rows = sp.csr_array(Y[[0, 5, 11]])
    out = {}
    for name in ("ocmf-LR-wSQ", "ocmf-SQ-wSQ", "ocmf-sampled", "fbgd-coordinate", "homf-exact",
                 "homf-dense", "csrr-e", "csrr-e-II-inner"):
        out[f"fold_in:{name}"] = (lambda m=models[name]: fp.fold_in(m, rows))
    out["fold_in:ocmf-features-tron"] = lambda: fp.fold_in(models["ocmf-features-tron"],
                                                           user_features=X[:3])
    out["fold_in:ocmf-features-intercept"] = lambda: fp.fold_in(
        models["ocmf-features-intercept"], user_features=X[:3])
    return out


def digest(model) -> str:
    """sha256 over every array, sparse part and objective value a model holds, in a fixed order."""
    h = hashlib.sha256()

    def add(label, value):
        h.update(label.encode())
        if value is None:
            h.update(b"None")
        elif sp.issparse(value):
            value = sp.csr_array(value)
            for part in (value.data, value.indices.astype(np.int64), value.indptr.astype(np.int64)):
                h.update(np.ascontiguousarray(part).tobytes())
            h.update(repr(value.shape).encode())
        elif isinstance(value, np.ndarray):
            h.update(str(value.dtype).encode() + repr(value.shape).encode())
            h.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, (float, int, np.floating, np.integer)):
            h.update(np.float64(value).tobytes())

    add("user_factors", model.user_factors)
    add("item_factors", model.item_factors)
    for key in sorted(model.extras):
        add(f"extras.{key}", model.extras[key])
    for name in ("U", "V"):                       # CSRR's dense / sparse parts
        if hasattr(model, name):
            add(name, getattr(model, name))
    for i, row in enumerate(model.history):
        add(f"history.{i}", row.get("objective"))
    return h.hexdigest()


def compute(n_threads: int) -> dict[str, str]:
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prev = fp.get_num_threads()
        fp.set_num_threads(n_threads)
        try:
            models = {}
            for name, fit in _cases().items():
                models[name] = fit()
                out[name] = digest(models[name])
            for name, fold in _fold_cases(models).items():
                out[name] = digest(fold())
        finally:
            fp.set_num_threads(prev)
    return out


def _thread_counts():
    import numba

    return [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]


def _pinned() -> dict:
    data = json.loads(PINNED.read_text())
    return data.get("by_platform", {}).get(platform(), data)


@pytest.mark.parametrize("n_threads", _thread_counts())
def test_results_are_pinned(n_threads):
    pinned = _pinned()[str(n_threads)]
    got = compute(n_threads)
    assert set(got) == set(pinned), "the cases changed: re-record on purpose (see the docstring)"
    changed = sorted(name for name in got if got[name] != pinned[name])
    assert not changed, f"results changed with {n_threads} thread(s): {changed}"


if __name__ == "__main__":
    if sys.argv[1:] not in (["--write"], ["--write-platform"]):
        sys.exit("usage: python tests/test_digests.py --write | --write-platform")
    data = json.loads(PINNED.read_text())
    got = {str(t): compute(t) for t in (1, 2)}
    if sys.argv[1] == "--write":
        data.update(got)
    else:
        data.setdefault("by_platform", {})[platform()] = got
    PINNED.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED}")
