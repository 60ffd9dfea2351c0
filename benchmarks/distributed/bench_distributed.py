"""fastpu.distributed benchmark: per-iteration time and bytes moved, written to docs/benchmarks/.

On a power-law PU matrix (default 50,000 users × 20,000 items, 2,000,000 positives, k = 64):

1. per-iteration time of the single-process fit with 2 numba threads, and of the distributed fit
   on a LocalCluster of 2 single-thread worker processes (ratio in one run; goal <= 1.3x);
2. the distributed fit on 1 worker, for the 1 -> 2 worker speed-up, at the full and at half the
   positives (two points give the per-positive and per-row cost used in docs/distributed.md);
3. bytes moved per iteration: Dask's own transfer records (every worker's
   ``transfer_outgoing_log``: gathers by the client, replication and dependency fetches between
   workers) plus the client's scatter uploads (counted from their size: the client is not a
   worker and keeps no transfer log; the routed layout scatters nothing, its initial data are
   part of the task graph), and the loopback interface's byte counter (everything on the
   machine, scheduler messages included), against the routed payload (the factor rows that move
   between workers in both half-steps, as ``Router.remote_rows`` counts them, times k times the
   factors' bytes) and the broadcast layout's estimate (P − 1 + (P − 1)/P)·(m + n)·k·bytes of
   docs/distributed.md. Per-iteration bytes are the difference of two fits that differ only in
   n_iter, so the one-off cost of sending the blocks cancels.

The fits run at the method's defaults apart from the settings below (ocmf: float32 factors).

Run ``python benchmarks/distributed/bench_distributed.py`` (several minutes), ``--quick`` for a
smoke run (its report in a temporary folder), ``--method fbgd`` for fBGD's batch mode (writes
``bench_distributed_fbgd.md``). Per-iteration times are medians over iterations 2..n
(iteration 1 also waits for the blocks to be built).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from _common import (DOCS, dask_bytes_sent, git_commit, hardware_line, md_table,  # noqa: E402
                     per_iteration, powerlaw_pu, provenance, require)

import fastpu as fp  # noqa: E402
from fastpu import distributed  # noqa: E402
from bench_distributed_traffic import lo_bytes, remote_rows  # noqa: E402


def configs(method):
    if method == "ocmf":
        return fp.ocmf.fit, dict(loss="logistic", rho=0.01, lam=2.0)
    if method == "fbgd":
        return fp.fbgd.fit, dict(update="batch", alpha0=None, lr=0.05)
    raise SystemExit(f"unknown --method {method!r}")


def median_iter(model):
    t = per_iteration(model.history)
    return float(np.median(t[1:] if t.size > 1 else t))


def min_iter(model):
    """The fastest iteration: on a shared machine the least disturbed by other processes."""
    t = per_iteration(model.history)
    return float(np.min(t[1:] if t.size > 1 else t))


def load():
    return os.getloadavg()


class ScatterCounter:
    """Counts the bytes the client passes to ``client.scatter`` (its uploads)."""

    def __init__(self, client):
        self.client, self.total = client, 0
        self._orig = client.scatter

        def scatter(data, *args, **kwargs):
            items = data if isinstance(data, (list, tuple)) else [data]
            self.total += sum(getattr(x, "nbytes", 0) for x in items)
            return self._orig(data, *args, **kwargs)

        client.scatter = scatter


def cluster(n_workers):
    from dask.distributed import Client, LocalCluster

    c = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                     dashboard_address=":0")
    return c, Client(c)


def dist_fit(client, Y, k, method, kw, n_iter):
    return distributed.fit(Y, k, method=method, client=client, n_iter=n_iter, seed=0, n_threads=1,
                           **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 10x smaller matrix, 3 iterations")
    ap.add_argument("--method", default="ocmf", choices=("ocmf", "fbgd"))
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--out", default=None, help="folder of the report (default docs/benchmarks/; "
                    "with --quick a temporary folder)")
    args = ap.parse_args()
    require("dask.distributed", purpose="a LocalCluster", extra="dask")
    m, n, nnz, k = (50_000, 20_000, 2_000_000, 64) if not args.quick else (5_000, 2_000, 100_000, 16)
    n_iter = args.iters if not args.quick else 3
    single, kw = configs(args.method)
    print(f"building {m}x{n} with {nnz} positives ...", flush=True)
    Y = powerlaw_pu(m, n, nnz, seed=0)
    Yh = powerlaw_pu(m, n, nnz // 2, seed=1)
    lines = []
    load0 = load()

    # 1. single process, 2 threads (warm: one short fit compiles / loads the cache)
    single(Y[:200], k, n_iter=1, n_threads=2, **kw)
    ref = single(Y, k, n_iter=n_iter, seed=0, n_threads=2, **kw)
    t_single = median_iter(ref)
    best = {"single": min_iter(ref)}
    print(f"single process, 2 threads: {t_single:.3f} s/iter", flush=True)

    res = {}
    byte_rows = []
    for workers in (2, 1):
        cl, client = cluster(workers)
        try:
            dist_fit(client, Y[:200], k, args.method, kw, 1)            # warm the workers
            counter = ScatterCounter(client)
            b0, s0, l0 = dask_bytes_sent(client), counter.total, lo_bytes()
            short = dist_fit(client, Y, k, args.method, kw, 2)
            b1, s1, l1 = dask_bytes_sent(client), counter.total, lo_bytes()
            model = dist_fit(client, Y, k, args.method, kw, n_iter)
            b2, s2, l2 = dask_bytes_sent(client), counter.total, lo_bytes()
            res[workers] = median_iter(model)
            best[workers] = min_iter(model)
            half = dist_fit(client, Yh, k, args.method, kw, n_iter)
            res[(workers, "half")] = median_iter(half)
            best[(workers, "half")] = min_iter(half)
            per_it_w = ((b2 - b1) - (b1 - b0)) / (n_iter - 2)
            per_it_c = ((s2 - s1) - (s1 - s0)) / (n_iter - 2)
            per_it_l = ((l2 - l1) - (l1 - l0)) / (n_iter - 2)
            itemsize = model.user_factors.dtype.itemsize
            payload = remote_rows(Y, workers, workers) * k * itemsize
            byte_rows.append((workers, per_it_w, per_it_c, per_it_l, payload, itemsize))
            rel = np.max(np.abs(np.array([h["objective"] for h in model.history])
                                - np.array([h["objective"] for h in ref.history]))
                         / np.abs([h["objective"] for h in ref.history]))
            res[(workers, "rel")] = rel
            del short
            print(f"{workers} worker(s): {res[workers]:.3f} s/iter; half positives "
                  f"{res[(workers, 'half')]:.3f}; bytes/iter workers {per_it_w / 1e6:.1f} MB, "
                  f"client uploads {per_it_c / 1e6:.1f} MB; objective rel. diff {rel:.1e}",
                  flush=True)
        finally:
            client.close()
            cl.close()
    load1 = load()

    t1, t1h = res[1], res[(1, "half")]
    # two points (nnz, nnz/2) at the same m, n: t = a·nnz + b  (b: per-row work and overheads)
    a = (t1 - t1h) / (nnz - nnz // 2)
    b = t1 - a * nnz
    lines.append(f"# fastpu.distributed benchmark ({args.method})\n")
    lines.append(provenance() + "\n")
    lines.append(hardware_line())
    lines.append(f"\nLoad average (1, 5, 15 min) before: {load0[0]:.1f}, {load0[1]:.1f}, "
                 f"{load0[2]:.1f}; after: {load1[0]:.1f}, {load1[1]:.1f}, {load1[2]:.1f} "
                 f"(the machine is shared; {os.cpu_count()} cores).\n")
    lines.append(f"Data: power-law PU matrix {m:,} × {n:,}, {nnz:,} positives, k = {k}, "
                 f"{args.method} {kw}; {n_iter} iterations, median of iterations 2..{n_iter}.\n")
    lines.append(md_table(
        ["fit", "s / iteration (median)", "vs single (median)", "s / iteration (fastest)",
         "vs single (fastest)", "objective rel. diff vs single"],
        [["single process, 2 numba threads", f"{t_single:.3f}", "1.00", f"{best['single']:.3f}",
          "1.00", "—"],
         ["distributed, 2 workers × 1 thread", f"{res[2]:.3f}", f"{res[2] / t_single:.2f}x",
          f"{best[2]:.3f}", f"{best[2] / best['single']:.2f}x", f"{res[(2, 'rel')]:.1e}"],
         ["distributed, 1 worker × 1 thread", f"{res[1]:.3f}", f"{res[1] / t_single:.2f}x",
          f"{best[1]:.3f}", f"{best[1] / best['single']:.2f}x", f"{res[(1, 'rel')]:.1e}"]]))
    lines.append(f"\n1 → 2 workers speed-up: **{res[1] / res[2]:.2f}x** (median), "
                 f"**{best[1] / best[2]:.2f}x** (fastest iterations). "
                 f"Distributed (2 workers) / single process (2 threads): **{res[2] / t_single:.2f}x** "
                 f"(median), **{best[2] / best['single']:.2f}x** (fastest); goal <= 1.3x.\n")
    lines.append(md_table(
        ["workers", "Dask transfers / iter (MB)", "client scatter uploads / iter (MB)",
         "loopback / iter (MB)", "routed payload / iter (MB)", "loopback / payload",
         "broadcast estimate / iter (MB)", "loopback / broadcast estimate"],
        [[w, f"{bw / 1e6:.1f}", f"{bc / 1e6:.1f}", f"{bl / 1e6:.1f}", f"{pay / 1e6:.1f}",
          f"{bl / pay:.2f}" if pay else "—",
          f"{(w - 1 + (w - 1) / w) * (m + n) * k * isz / 1e6:.1f}",
          f"{bl / ((w - 1 + (w - 1) / w) * (m + n) * k * isz):.2f}" if w > 1 else "—"]
         for w, bw, bc, bl, pay, isz in byte_rows]))
    lines.append(f"\nFactors in {byte_rows[0][5] * 8}-bit floats ({byte_rows[0][5]} B per "
                 "element). The loopback counter counts every process on the machine; it is "
                 "only an upper bound of the fit's own traffic.\n")
    lines.append(f"\nPer-worker cost model from the 1-worker runs at {nnz:,} and {nnz // 2:,} "
                 f"positives (same m, n): t ≈ a·|Ω+| + b with a = {a * 1e9:.1f} ns per positive "
                 f"and b = {b:.3f} s (the (m+n)k² row work, the Grams, serialisation and "
                 f"scheduling at m + n = {m + n:,}, k = {k}), i.e. "
                 f"{nnz / t1 / 1e6:.2f} M positives per second per single-thread worker "
                 "at this density.\n")
    rev = git_commit()[0] or ""
    lines.append(f"Measured at commit {rev}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
                 f"`python benchmarks/distributed/bench_distributed.py{' --quick' if args.quick else ''}"
                 f"{'' if args.method == 'ocmf' else ' --method ' + args.method}`.\n")
    text = "\n".join(lines)
    print(text)
    name = f"bench_distributed{'' if args.method == 'ocmf' else '_' + args.method}.md"
    out_dir = args.out or (tempfile.mkdtemp(prefix="bench_distributed_") if args.quick else str(DOCS))
    with open(os.path.join(out_dir, name), "w") as fh:
        fh.write(text)
    print(f"wrote {os.path.join(out_dir, name)}")


if __name__ == "__main__":
    main()
