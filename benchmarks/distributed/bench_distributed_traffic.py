"""Bytes moved per iteration by ``fastpu.distributed.fit``: routed vs broadcast rows.

    python benchmarks/distributed/bench_distributed_traffic.py [--data powerlaw] [--grid 2,2]

Prints its measurements (docs/distributed.md quotes them); it writes no file.

Data (``--data``):

* ``blocks`` (default): a block-structured matrix — 40,000 users × 8,000 items in 4
  groups (contiguous id ranges), 400,000 positives, 98% of each positive inside its user's
  group's items;
* ``powerlaw``: the skewed matrix of bench_distributed.py (ids randomly permuted).

Fit: ocmf SQ-wSQ, k = 32, dtype float64, on a LocalCluster of ``--workers`` single-thread
processes with ``--blocks`` blocks. Bytes per iteration are the difference of two fits that
differ only in n_iter (the one-off cost of sending the blocks cancels), counted two ways:
Dask's own transfer records (every worker's ``transfer_outgoing_log``) and the loopback
interface's byte counter (/proc/net/dev, everything on the machine: scheduler and client
messages included). They are set against the broadcast layout's estimate
(P − 1 + (P − 1)/P)·(m + n)·k·8 of docs/distributed.md; the target is at most 0.5×.

``--grid P,Q`` fits on a P × Q grid of cells (``distributed.fit(..., grid=(P, Q))``) instead of
row blocks, for the same two counts (the routed payload below is then not printed).

``--root PATH`` runs the same measurement with the fastpu of another checkout (for example a
worktree of the broadcast layout); the workers import it too (PYTHONPATH). The distributed model
is compared with the single-machine fit (objective history and factors, relative).

Also printed: the routed layout's payload per iteration, the factor rows that move between
workers in both half-steps (``fastpu.distributed.routing.Router.remote_rows``, recomputed here
from Y with the same blocks and placement) times k times the factor's bytes, and the measured
bytes over that payload (the wire overhead: serialisation, task messages, the k×k sums).
``--dtype`` picks the factors' dtype (float64 by default; float32 is ocmf's
default and what docs/distributed.md's projection ships).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)          # benchmarks/: _common


def _setup_path(root):
    root = os.path.abspath(root)
    sys.path.insert(0, root)
    os.environ["PYTHONPATH"] = root + (os.pathsep + os.environ["PYTHONPATH"]
                                       if os.environ.get("PYTHONPATH") else "")
    return root


def block_matrix(m=40_000, n=8_000, groups=4, nnz=400_000, inside=0.98, seed=0):
    """Binary CSR: users and items cut into ``groups`` contiguous ranges; each positive's item is
    in its user's group with probability ``inside``, else uniform over the other groups' items."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    ucut = np.linspace(0, m, groups + 1).round().astype(np.int64)
    icut = np.linspace(0, n, groups + 1).round().astype(np.int64)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < nnz:
        want = int(1.1 * (nnz - keys.size)) + 16
        u = rng.integers(0, m, want)
        g = np.searchsorted(ucut, u, side="right") - 1
        out = rng.random(want) >= inside
        other = (g + rng.integers(1, groups, want)) % groups
        g = np.where(out, other, g)
        j = icut[g] + (rng.random(want) * (icut[g + 1] - icut[g])).astype(np.int64)
        keys = np.union1d(keys, u * n + j)
    if keys.size > nnz:
        keys = np.sort(rng.choice(keys, size=nnz, replace=False))
    Y = sp.csr_array((np.ones(nnz), (keys // n, keys % n)), shape=(m, n))
    Y.sort_indices()
    return Y


def remote_rows(Y, n_blocks, n_workers):
    """Rows moved between workers per iteration by the routed layout: for each side, each
    destination block's touched rows of the other side that live in a source block on another
    worker (blocks.bounds, block b on worker b mod P), as Router.remote_rows counts them."""
    import numpy as np
    import scipy.sparse as sp

    from fastpu.distributed.blocks import bounds

    total = 0
    for A in (sp.csr_array(Y), sp.csr_array(Y.T)):
        own, other = bounds(A.shape[0], n_blocks), bounds(A.shape[1], n_blocks)
        for b in range(n_blocks):
            ids = np.unique(A.indices[A.indptr[own[b]]:A.indptr[own[b + 1]]])
            per_src = np.diff(np.searchsorted(ids, other))
            total += int(sum(int(per_src[c]) for c in range(n_blocks)
                             if b % n_workers != c % n_workers))
    return total


def lo_bytes():
    with open("/proc/net/dev") as fh:
        for line in fh:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                return int(rest.split()[0])           # received bytes (= sent, on loopback)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(BENCH),
                    help="the checkout whose fastpu runs (default this one)")
    ap.add_argument("--data", choices=("blocks", "powerlaw"), default="blocks")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--grid", default=None, metavar="P,Q",
                    help="fit on a P x Q grid of cells (distributed.fit's grid=) instead of "
                         "--blocks row blocks")
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--iters", type=int, default=3, help="extra iterations of the longer fit")
    ap.add_argument("--quick", action="store_true", help="a 10x smaller matrix")
    ap.add_argument("--no-check", action="store_true", help="skip the single-machine comparison")
    args = ap.parse_args()
    root = _setup_path(args.root)
    sys.path.insert(1, BENCH)
    from _common import dask_bytes_sent as out_bytes, require

    import numpy as np
    require("dask.distributed", purpose="a LocalCluster", extra="dask")
    from dask.distributed import Client, LocalCluster

    import fastpu as fp
    from fastpu import distributed

    scale = 10 if args.quick else 1
    if args.data == "blocks":
        Y = block_matrix(40_000 // scale, 8_000 // scale, 4, 400_000 // scale)
    else:
        from _common import powerlaw_pu
        Y = powerlaw_pu(40_000 // scale, 8_000 // scale, 400_000 // scale, seed=0)
    m, n = Y.shape
    k, P = args.k, args.workers
    kw = dict(loss="square", rho=0.1, lam=1.0, dtype=args.dtype, seed=0)
    print(f"fastpu from {os.path.dirname(fp.__file__)}; {args.data} {m}x{n}, {Y.nnz} positives, "
          f"k={k}, {args.dtype}, {P} workers, {args.blocks} blocks", flush=True)
    n1, n2 = 2, 2 + args.iters
    grid = tuple(int(v) for v in args.grid.split(",")) if args.grid else None
    layout = dict(grid=grid) if grid else dict(n_blocks=args.blocks)
    print(f"layout: {layout}", flush=True)
    with LocalCluster(n_workers=P, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cl, Client(cl) as client:
        client.wait_for_workers(P, timeout=120)
        distributed.fit(Y[:200], k, client=client, n_iter=1, n_threads=1, **layout,
                        **kw)                                       # warm the workers
        counts = []
        models = {}
        for n_iter in (n1, n2):
            b0, l0, t0 = out_bytes(client), lo_bytes(), time.perf_counter()
            models[n_iter] = distributed.fit(Y, k, client=client, n_iter=n_iter, n_threads=1,
                                             **layout, **kw)
            counts.append((out_bytes(client) - b0, lo_bytes() - l0, time.perf_counter() - t0))
    per_dask = (counts[1][0] - counts[0][0]) / (n2 - n1)
    per_lo = (counts[1][1] - counts[0][1]) / (n2 - n1)
    estimate = (P - 1 + (P - 1) / P) * (m + n) * k * 8
    print(f"bytes per iteration: Dask transfers {per_dask / 1e6:.2f} MB "
          f"({per_dask / estimate:.3f}x the estimate), loopback {per_lo / 1e6:.2f} MB "
          f"({per_lo / estimate:.3f}x); broadcast estimate {estimate / 1e6:.2f} MB", flush=True)
    if grid is None:
        rows = remote_rows(Y, args.blocks, P)
        payload = rows * k * np.dtype(args.dtype).itemsize
        print(f"routed payload per iteration: {rows} rows between workers x {k} x "
              f"{np.dtype(args.dtype).itemsize} B = {payload / 1e6:.2f} MB; measured / payload: "
              f"Dask transfers {per_dask / payload:.3f}, loopback {per_lo / payload:.3f}",
              flush=True)
    print(f"fit times: {counts[0][2]:.1f} s ({n1} iterations), {counts[1][2]:.1f} s ({n2})",
          flush=True)
    if not args.no_check:
        mod = models[n2]
        ref = fp.ocmf.fit(Y, k, n_iter=n2, n_threads=1, **kw)
        h_ref = np.array([h["objective"] for h in ref.history])
        h_mod = np.array([h["objective"] for h in mod.history])
        rel_h = float(np.max(np.abs(h_mod - h_ref) / np.abs(h_ref)))
        rel_w = float(np.max(np.abs(mod.user_factors - ref.user_factors))
                      / np.max(np.abs(ref.user_factors)))
        rel_v = float(np.max(np.abs(mod.item_factors - ref.item_factors))
                      / np.max(np.abs(ref.item_factors)))
        print(f"vs single machine: objective rel. diff {rel_h:.1e}, factors {rel_w:.1e} / "
              f"{rel_v:.1e}", flush=True)
    print(f"root {root}")


if __name__ == "__main__":
    main()
