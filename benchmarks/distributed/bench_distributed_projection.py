"""The 10⁹-positive projection of docs/distributed.md from routed measurements.

Setting: 10⁹ positives, 10⁸ users, 10⁷ items, P = 100 workers and blocks, k = 64, ocmf's
default float32 factors (what ``fastpu.distributed.fit`` ships between workers). Block b of each
side is a contiguous id range of ``fastpu.distributed.blocks.bounds`` (balanced by rows, not by
positives) and lives on worker b.

The script never builds the 10⁹ matrix. For one block of each side it draws that block's
positives directly, at full size, and counts the distinct other-side rows they touch (the rows
routed to the block per half-step) and how many of them live on the block's own worker (those
do not move):

* user half-step: a block of 10⁶ users (~10⁷ positives) over the 10⁷ items;
* item half-step: a block of 10⁵ items (~10⁷ positives) over the 10⁸ users.

Data (``--data``):

* ``powerlaw``: the generator of ``benchmarks/_common.py`` ``powerlaw_pu`` — item j drawn with
  probability ∝ (rank_j + 1)^-0.7, user i with ∝ (rank_i + 1)^-0.5, ranks a random permutation
  of the ids, user and item drawn independently, duplicate pairs removed and topped up. The
  weights are exactly those ``powerlaw_pu(10⁸, 10⁷, 10⁹, seed=s)`` draws (the same rng calls in
  the same order); only the pairs are drawn block by block. A block's number of positives is
  its expected share, round(10⁹ · Σ of its rows' weights), and the block sampled is the one
  with the most positives (the busiest worker);
* ``uniform``: users and items uniformly random (the worst case for routing: nothing to
  exploit); every block has 10⁷ positives.

It also counts the rows a worker *sends* per half-step (its own block's rows touched by the
other 99 blocks), as an expectation from the same weights: under independent draws a
destination block with D draws touches row r with probability 1 − exp(−D·w_r) (w_r the row's
draw probability). The same formula, applied to the sampled block, is printed next to the
sampled count as a check. ``--task`` also times one ocmf block update at full size
(``update_task`` on the sampled user block, one thread) and its peak memory.

Writes docs/benchmarks/bench_distributed_projection.md (``--workers P`` other than 100:
``bench_distributed_projection_P<P>.md``; ``--quick``: a 100× smaller setting, into a temporary
folder).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from _common import DOCS, PeakMemory, git_commit, hardware_line, md_table, provenance  # noqa: E402
from fastpu.distributed.blocks import bounds  # noqa: E402


def weights(rng, size, a):
    """powerlaw_pu's draw probabilities (before its cumsum): (rank + 1)^-a over permuted ranks."""
    w = (np.arange(size, dtype=np.float64) + 1.0) ** (-a)
    w = w[rng.permutation(size)]
    return w / w.sum()


def draw_block(rng, n_own, w_own, w_other, n_pos, n_other):
    """``n_pos`` distinct (own row, other row) pairs: own row ∝ ``w_own`` over the block's
    ``n_own`` rows, other row ∝ ``w_other`` over ``n_other`` (None: uniform); duplicates
    dropped and topped up, as powerlaw_pu does. Returns sorted keys own_local·n_other + other."""
    c_own = None if w_own is None else np.cumsum(w_own / w_own.sum())
    c_other = None if w_other is None else np.cumsum(w_other)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < n_pos:
        want = int(1.1 * (n_pos - keys.size)) + 16
        if c_own is None:
            r = rng.integers(0, n_own, want)
        else:
            r = np.minimum(np.searchsorted(c_own, rng.random(want)), n_own - 1)
        if c_other is None:
            c = rng.integers(0, n_other, want)
        else:
            c = np.minimum(np.searchsorted(c_other, rng.random(want)), n_other - 1)
        keys = np.union1d(keys, r.astype(np.int64) * n_other + c)
    if keys.size > n_pos:
        keys = np.sort(rng.choice(keys, size=n_pos, replace=False))
    return keys


def expected_touched(w_rows, draws):
    """Σ_r 1 − exp(−draws·w_r): expected distinct rows touched by ``draws`` independent draws."""
    return float(np.sum(-np.expm1(-draws * w_rows)))


def sent_per_source(w, cuts, draws):
    """Expected rows each source block sends per half-step: Σ over destination blocks b ≠ c of
    the rows of c that b touches (b draws ``draws[b]`` rows of this side with probabilities w)."""
    P = cuts.size - 1
    out = np.zeros(P)
    for b in range(P):
        t = -np.expm1(-draws[b] * w)                       # P(destination b touches row r)
        part = np.add.reduceat(t, cuts[:-1]) if w.size else np.zeros(P)
        part[b] = 0.0                                      # its own worker: nothing moves
        out += part
    return out


def measure(args):
    P, m, n, nnz, k = args.workers, args.m, args.n, args.nnz, args.k
    rng = np.random.default_rng(args.seed)
    ub, ib = bounds(m, P), bounds(n, P)
    t0 = time.perf_counter()
    if args.data == "powerlaw":
        wu = weights(rng, m, args.user_exponent)            # powerlaw_pu's order: users, items
        wi = weights(rng, n, args.item_exponent)
    else:
        wu, wi = np.full(m, 1.0 / m), np.full(n, 1.0 / n)
    # positives per block: the expected share of each block of contiguous ids
    pos_u = np.rint(nnz * np.add.reduceat(wu, ub[:-1])).astype(np.int64)
    pos_i = np.rint(nnz * np.add.reduceat(wi, ib[:-1])).astype(np.int64)
    res = dict(data=args.data, P=P, m=m, n=n, nnz=nnz, k=k, seed=args.seed,
               user_exponent=args.user_exponent if args.data == "powerlaw" else None,
               item_exponent=args.item_exponent if args.data == "powerlaw" else None,
               pos_user_blocks=[int(pos_u.min()), int(np.median(pos_u)), int(pos_u.max())],
               pos_item_blocks=[int(pos_i.min()), int(np.median(pos_i)), int(pos_i.max())])
    rng_s = np.random.default_rng([args.seed, 1])
    for side in ("user", "item"):
        if side == "user":       # a user block touches items
            pos, cuts, ocuts, w_own_all, w_other, n_other = pos_u, ub, ib, wu, wi, n
        else:                    # an item block touches users
            pos, cuts, ocuts, w_own_all, w_other, n_other = pos_i, ib, ub, wi, wu, m
        b = int(np.argmax(pos))
        lo, hi = int(cuts[b]), int(cuts[b + 1])
        w_own = None if args.data == "uniform" else w_own_all[lo:hi]
        t1 = time.perf_counter()
        keys = draw_block(rng_s, hi - lo, w_own, None if args.data == "uniform" else w_other,
                          int(pos[b]), n_other)
        ids = np.unique(keys % n_other)
        local = int(np.count_nonzero((ids >= ocuts[b]) & (ids < ocuts[b + 1])))
        # the check: the same count from the expectation formula (draws ≈ positives)
        exp_in = expected_touched(w_other, float(pos[b]))
        # rows this worker's block of the other side sends in this half-step: the destinations
        # are this side's blocks (pos[d] draws each) touching the other side's rows
        sent = sent_per_source(w_other, ocuts, pos.astype(np.float64))
        res[side] = dict(block=b, rows=hi - lo, positives=int(keys.size),
                         touched=int(ids.size), local=local, received=int(ids.size) - local,
                         expected_touched=exp_in, sent_same_worker=float(sent[b]),
                         sent_max=float(sent.max()), sent_max_block=int(np.argmax(sent)),
                         sent_mean=float(sent.mean()), seconds=time.perf_counter() - t1)
        print(f"{side} block {b}: {hi - lo} rows, {keys.size} positives, touches {ids.size} "
              f"rows of the other side ({local} on its own worker; expectation "
              f"{exp_in:.0f}); rows sent by worker {b} {sent[b]:.0f}, max over workers "
              f"{sent.max():.0f} ({time.perf_counter() - t1:.1f} s)", flush=True)
        if args.task:
            del w_own
            res[side]["task"] = time_task(keys, lo, hi, n_other, ids, k, ocuts)
            print(f"update task: {res[side]['task']}", flush=True)
        del keys, ids
    res["seconds"] = time.perf_counter() - t0
    return res


def time_task(keys, lo, hi, n, ids, k, cuts):
    """One ocmf block update at full size (one thread, timed after an untimed first call):
    ``update_task`` on the block's entries and its compact matrix of the touched other-side
    rows (float32, as the default fit ships), handed over as one array, as the chain of
    ``fastpu.distributed.routing`` delivers it (the pieces, cut at the other side's block
    bounds ``cuts``, are written into it one by one before the task runs). Seconds, the bytes of the task's inputs, and the process's peak
    resident memory during the task."""
    import gc

    import fastpu._kernels.losses as L
    from fastpu.distributed import routing
    from fastpu.distributed.blocks import block_from_csr
    from fastpu.ocmf._check import _resolve_abar
    from fastpu._kernels.ocmf import RowOptions
    from fastpu.ocmf._dask_blocks import make_block, update_task

    rows, cols = keys // n, keys % n
    indptr = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=hi - lo), out=indptr[1:])
    csr = block_from_csr(lo, hi, n, indptr, cols, np.ones(cols.size))
    touch = routing.Touch(ids, np.searchsorted(ids, cuts).astype(np.int64))
    rho = 0.01
    own_w = np.full(hi - lo, rho)
    # ν = 0: every row's λ is the one λ; Full approach: corr = own weight · other weight
    blk = make_block(csr, touch, (1.0, 0.0, 0.0), False, own_w, np.ones(ids.size))
    rng = np.random.default_rng(0)
    pieces = [(rng.standard_normal((ids.size, k)) * 0.1).astype(np.float32)]
    W = (rng.standard_normal((hi - lo, k)) * 0.1).astype(np.float32)
    # M in its eigenbasis (diagonal), as the float32 fit at k >= 64 hands it to the block task,
    # with the half-step's turn Q (here the identity: turning costs the same for any Q)
    M = np.eye(k) * 0.01 * ids.size
    kappa = np.zeros(k)
    # the logistic loss, rho = 0.01, one Newton step and 4 CG steps per row (its defaults)
    opts = dict(kind=L.LOSS_CODES["logistic"], abar=_resolve_abar("logistic", None),
                rows=RowOptions(newton_steps=1, cg_steps=4), n_threads=1, dtype="float32",
                turn=np.eye(k, dtype=np.float32), exact=True)
    del rows, cols
    # what the worker holds for this block when the task starts: the CSR block, the ocmf block's
    # own arrays (compact indices, labels, corr, row weights), the compact matrix, the own rows
    inputs = (sum(a.nbytes for a in (csr.indptr, csr.indices, csr.data))
              + sum(a.nbytes for a in (blk.indices, blk.labels, blk.corr, blk.w))
              + sum(x.nbytes for x in pieces) + W.nbytes + touch.ids.nbytes)
    # the same call once before the timed one: numba compiles (or loads) the row solver for
    # these argument types on a first call, which the measured task must not include
    update_task(blk, W, M, kappa, opts, *pieces)
    gc.collect()
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        out = update_task(blk, W, M, kappa, opts, *pieces)
        sec = time.perf_counter() - t0
    return dict(seconds=sec, inputs_mib=inputs / 2**20, rss_before_mib=mem.before, peak_mib=mem.sampled, hwm_mib=mem.hwm,
                touched=int(ids.size), positives=int(keys.size), rows=hi - lo,
                result_mib=out[0].nbytes / 2**20)


def report(results, args):
    k, item = args.k, np.dtype(np.float32).itemsize
    row = k * item
    lines = ["# Projection at 10⁹ positives from routed measurements\n",
             provenance() + "\n",
             hardware_line(),
             f"\nSetting: {args.nnz:,} positives, {args.m:,} users, {args.n:,} items, "
             f"{args.workers} workers (one user block and one item block each), k = {k}, "
             f"float32 factors (ocmf's default): {row} B per factor row. Seed {args.seed}. "
             "Load average (1, 5, 15 min) at the start: "
             + ", ".join(f"{x:.1f}" for x in args.load[0]) + "; at the end: "
             + ", ".join(f"{x:.1f}" for x in args.load[1])
             + f" (the machine is shared; {os.cpu_count()} cores): the counts do not depend on "
             "it, the task's seconds do.\n"]
    head = ["data", "half-step", "block (rows)", "positives in the block",
            "other-side rows touched (sampled)", "expectation", "on its own worker",
            "rows received", "rows sent (this worker / max over workers)"]
    body = []
    for r in results:
        for side, what in (("user", "user half-step (items → user block)"),
                           ("item", "item half-step (users → item block)")):
            s = r[side]
            body.append([r["data"], what, f"{s['block']} ({s['rows']:,})", f"{s['positives']:,}",
                         f"{s['touched']:,}", f"{s['expected_touched']:,.0f}", f"{s['local']:,}",
                         f"{s['received']:,}",
                         f"{s['sent_same_worker']:,.0f} / {s['sent_max']:,.0f}"])
    lines.append(md_table(head, body))
    lines.append(f"\nPositives per block (min / median / max over the {args.workers} blocks, "
                 "contiguous ids, balanced by rows):\n")
    lines.append(md_table(["data", "user blocks", "item blocks"],
                          [[r["data"], " / ".join(f"{x:,}" for x in r["pos_user_blocks"]),
                            " / ".join(f"{x:,}" for x in r["pos_item_blocks"])]
                           for r in results]))
    for r in results:
        for side in ("user", "item"):
            if "task" not in r[side]:
                continue
            t = r[side]["task"]
            lines.append(f"\nOne ocmf {side}-block update at full size ({r['data']}: "
                         f"{t['rows']:,} rows, {t['positives']:,} positives, {t['touched']:,} "
                         f"touched {'item' if side == 'user' else 'user'} rows in a float32 "
                         "compact matrix; logistic loss, one thread): "
                         f"{t['seconds']:.1f} s. Its inputs (CSR block, ocmf block, compact matrix, own "
                         f"rows, touched ids) are {t['inputs_mib']:,.0f} MiB; the process's "
                         f"resident memory rose from {t['rss_before_mib']:,.0f} MiB (with the "
                         f"script's own arrays) to a peak of {t['peak_mib']:,.0f} MiB during the "
                         f"task (+{t['peak_mib'] - t['rss_before_mib']:,.0f} MiB: what the task "
                         f"allocates, the new rows and temporaries), so the "
                         f"block's worker needs "
                         f"about {t['inputs_mib'] + t['peak_mib'] - t['rss_before_mib']:,.0f} "
                         "MiB for this task.\n")
    rev = git_commit()[0] or ""
    lines.append(f"\nMeasured at commit {rev}, "
                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
                 f"`python benchmarks/distributed/bench_distributed_projection.py"
                 f"{' --quick' if args.quick else ''}{' --task' if args.task else ''}"
                 f"{'' if args.workers == 100 else f' --workers {args.workers}'}`. Raw "
                 "numbers: the JSON line the script prints.\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 100x smaller setting")
    ap.add_argument("--out", default=None, help="folder of the report (default docs/benchmarks/; "
                    "with --quick a temporary folder)")
    ap.add_argument("--data", choices=("powerlaw", "uniform", "both"), default="both")
    ap.add_argument("--workers", type=int, default=100)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--user-exponent", type=float, default=0.5)
    ap.add_argument("--item-exponent", type=float, default=0.7)
    ap.add_argument("--task", action="store_true", help="also time one full-size block update")
    args = ap.parse_args()
    s = 100 if args.quick else 1
    args.m, args.n, args.nnz = 10**8 // s, 10**7 // s, 10**9 // s
    args.load = [os.getloadavg()]
    results = []
    for data in (("powerlaw", "uniform") if args.data == "both" else (args.data,)):
        args.data = data
        results.append(measure(args))
        print(json.dumps(results[-1]), flush=True)
    args.data = "both"
    args.load.append(os.getloadavg())
    text = report(results, args)
    print(text)
    name = f"bench_distributed_projection{'' if args.workers == 100 else f'_P{args.workers}'}.md"
    out_dir = args.out or (tempfile.mkdtemp(prefix="bench_projection_") if args.quick else str(DOCS))
    with open(os.path.join(out_dir, name), "w") as fh:
        fh.write(text)
    print(f"wrote {os.path.join(out_dir, name)}")


if __name__ == "__main__":
    main()
