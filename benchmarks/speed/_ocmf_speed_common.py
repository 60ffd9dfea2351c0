"""Shared configuration and helpers of benchmarks/bench_ocmf_speed.py (its parts live in _ocmf_speed_*.py)."""

from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from _common import best_of, hardware, hardware_line, md_table, ocmf_setup, per_iteration, powerlaw_pu  # noqa: E402,F401

from fastpu import ocmf  # noqa: E402
from fastpu._kernels.csr import sampled_dots  # noqa: E402,F401
from fastpu._kernels.ocmf import LOCAL_ENTRIES  # noqa: E402,F401
from fastpu._core.threads import limit_threads  # noqa: E402,F401

FULL = dict(
    a_sizes=[250, 500, 1000, 2000, 4000], a_per_row=20, a_k=32,
    b_sizes=[5000, 10000, 20000], b_nnz=300_000, b_k=32, b_iter=3, b_rounds=3,
    c_shape=(50_000, 20_000), c_nnz=2_000_000, c_k=64, c_iter=3, c_iter_1thread=3, c_rounds=3,
)
QUICK = dict(
    a_sizes=[100, 200, 400], a_per_row=20, a_k=32,
    b_sizes=[500, 1000, 2000], b_nnz=20_000, b_k=32, b_iter=2, b_rounds=2,
    c_shape=(5_000, 2_000), c_nnz=100_000, c_k=64, c_iter=2, c_iter_1thread=2, c_rounds=2,
)
RHO, LAM, LAM_GRAPH = 0.01, 1.0, 1.0
THREADS = 2


def fmt_s(t):
    return f"{t * 1e3:.1f} ms" if t < 1.0 else f"{t:.2f} s"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _setup(Y, loss, **kw):
    args = dict(loss=loss, rho=RHO, p=None, q=None, a_bar=None, X=None, Z=None, user_graph=None,
                item_graph=None, lam=LAM, lam_graph=0.0, negatives="full", neg_ratio=1.0, seed=0)
    args.update(kw)
    return ocmf_setup(Y, **args)



def random_graph(m, degree, seed):
    """Symmetric 0/1 similarity graph, ~``degree`` neighbours per node, no self loops."""
    rng = np.random.default_rng(seed)
    half = max(1, degree // 2)
    r = np.repeat(np.arange(m, dtype=np.int64), half)
    c = rng.integers(0, m, size=r.size)
    keep = r != c
    A = sp.csr_array((np.ones(int(keep.sum())), (r[keep], c[keep])), shape=(m, m))
    S = A + A.T
    S.data[:] = 1.0
    return sp.csr_array(S)


@contextlib.contextmanager
def blas_limit(n):
    """Limit BLAS (numpy's OpenBLAS/MKL) to ``n`` threads in the block; ``None``: leave as is."""
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(n, "blas"):
        yield


