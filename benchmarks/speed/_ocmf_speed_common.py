"""The configuration of benchmarks/speed/bench_ocmf_speed.py that its parts (``_ocmf_speed_*.py``)
share, and the helpers of benchmarks/_common.py they use, imported once here."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from _common import (ROOT, best_of, blas_limit, fmt_s, hardware, hardware_line, log,  # noqa: E402,F401
                     md_table, ocmf_setup, per_iteration, powerlaw_pu, random_graph)

sys.path.insert(0, str(ROOT))

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


def _setup(Y, loss, **kw):
    args = dict(loss=loss, rho=RHO, p=None, q=None, a_bar=None, X=None, Z=None, user_graph=None,
                item_graph=None, lam=LAM, lam_graph=0.0, negatives="full", neg_ratio=1.0, seed=0)
    args.update(kw)
    return ocmf_setup(Y, **args)
