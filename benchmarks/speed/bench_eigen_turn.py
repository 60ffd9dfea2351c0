"""What the bit-for-bit eigenbasis costs ocmf on one machine.

ocmf's float32 path at k >= 64 sums each half-step's M with error-free pairs
(``fastpu._kernels.csr.gram_parts``) and turns the factors by one-thread BLAS products on chunks
fixed by row number (``turn_rows``, ``TURN_ROWS`` rows each), so that a Dask fit gives the same
factors bit for bit. The order-dependent alternative ("before" below) sums M in chunk order
(``weighted_gram``) and turns the rows by BLAS products on chunks of 2,048 rows. This script
times both in one run, on the same matrix, in the same process, taking turns:

pieces
    The two operations alone at the 20M benchmark's row count (138,000 + 27,000 rows), k = 64
    and k = 256, two threads: one turn of the rows (chunks of 2,048 vs ``turn_rows``'s) and
    one Gram of them (``weighted_gram`` vs ``gram_parts``); best of 5.
fit
    An ocmf iteration at the defaults (SQ-wSQ, float32) on the 138,000 × 27,000 power-law matrix
    with 20,000,000 positives of ``bench_perf_20m.py`` (``_common.cached_powerlaw``), with the
    previous turn and Gram put back in place of the new ones for the "before" fits; the median
    of the iterations after the first, five rounds of each taking turns.

Run from the repository root on a quiet machine (about 4 minutes on 2 cores)::

    python benchmarks/speed/bench_eigen_turn.py          # writes docs/benchmarks/bench_eigen_turn.md
    python benchmarks/speed/bench_eigen_turn.py --quick  # small sizes, prints only
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import _common  # noqa: E402

import fastpu as fp  # noqa: E402
from fastpu._core.threads import limit_threads  # noqa: E402
from fastpu._kernels import csr as K  # noqa: E402
from fastpu._kernels.rowpool import run_rows, uniform_rows  # noqa: E402
from fastpu.ocmf import _problem  # noqa: E402

_CHUNK = 2048


def blas_turn(A, Q):
    """The order-dependent turn: A ← A Q by one-thread BLAS products on chunks of 2,048 rows."""
    n, k = A.shape
    n_chunks = -(-n // _CHUNK)

    def block(lo, hi):
        tmp = np.empty((_CHUNK, k), dtype=A.dtype)
        for c in range(lo, hi):
            a, b = c * _CHUNK, min(n, (c + 1) * _CHUNK)
            np.matmul(A[a:b], Q, out=tmp[:b - a])
            A[a:b] = tmp[:b - a]

    run_rows(block, uniform_rows(n_chunks), 1)


def chunk_gram(E, q):
    """M and κ summed in chunk order (``weighted_gram``), as gram_parts's (hi, lo, hi, lo)."""
    k = E.shape[1]
    M, kappa = np.empty((k, k)), np.empty(k)
    K.weighted_gram(E, q, M, kappa)
    return np.triu(M), np.zeros((k, k)), kappa, np.zeros(k)


def pieces(rows, ks, repeat):
    out = []
    rng = np.random.default_rng(0)
    for k in ks:
        A0 = rng.standard_normal((rows, k)).astype(np.float32)
        Q = np.ascontiguousarray(np.linalg.qr(rng.standard_normal((k, k)))[0], dtype=np.float32)
        q = rng.uniform(0.5, 2.0, rows)
        A = A0.copy()
        t_blas = _common.best_of(lambda: blas_turn(A, Q), repeat=repeat)
        t_row = _common.best_of(lambda: K.turn_rows(A, Q), repeat=repeat)
        t_chunk = _common.best_of(lambda: chunk_gram(A0, q), repeat=repeat)
        t_pairs = _common.best_of(lambda: K.gram_parts(A0, q), repeat=repeat)
        out.append(dict(k=k, rows=rows, blas_turn=t_blas, row_turn=t_row, chunk_gram=t_chunk,
                        pair_gram=t_pairs))
        print(out[-1], flush=True)
    return out


class _Before:
    """The order-dependent turn and Gram in place of the library's, while the block runs."""

    def __enter__(self):
        self.saved = (_problem.turn_rows, _problem.gram_parts)
        _problem.turn_rows, _problem.gram_parts = blas_turn, chunk_gram
        return self

    def __exit__(self, *exc):
        _problem.turn_rows, _problem.gram_parts = self.saved


def fits(Y, ks, n_iter, rounds):
    res = {(k, v): [] for k in ks for v in ("before", "now")}
    objective = {}
    tiny = _common.powerlaw_pu(300, 200, 3000, seed=0)
    fp.ocmf.fit(tiny, max(ks), n_iter=1, loss="square")           # compile
    for r in range(rounds):
        for k in ks:
            for v in (("before", "now") if r % 2 == 0 else ("now", "before")):
                stamps = []
                cb = lambda info: stamps.append(time.perf_counter()) and False  # noqa: E731
                t0 = time.perf_counter()
                if v == "before":
                    with _Before():
                        model = fp.ocmf.fit(Y, k, n_iter=n_iter, loss="square", callback=cb)
                else:
                    model = fp.ocmf.fit(Y, k, n_iter=n_iter, loss="square", callback=cb)
                per = np.diff(np.concatenate([[t0], stamps]))
                res[(k, v)].append(float(np.median(per[1:])))
                objective[(k, v)] = model.history[-1]["objective"]
                print(f"round {r} k={k} {v}: {res[(k, v)][-1]:.3f} s/iteration", flush=True)
    return res, objective


def report(pc, res, objective, args, seconds, load):
    lines = ["# The bit-for-bit eigenbasis: its cost on one machine\n",
             _common.provenance() + "\n",
             _common.hardware_line(),
             f"\nCommand: `python benchmarks/speed/bench_eigen_turn.py` ({seconds / 60:.1f} min, "
             f"load average {load[0]:.2f} at the start, {load[1]:.2f} at the end); "
             f"{_common.git_state()}.\n",
             "ocmf's float32 path at k ≥ 64 sums each half-step's M with "
             "error-free pairs (`gram_parts`) and turns the factors by one-thread BLAS products "
             f"on chunks of {K.TURN_ROWS:,} rows fixed by row number (`turn_rows`), so that "
             "`distributed.fit` gives the same factors bit for bit. \"Before\" is the "
             "order-dependent alternative, put in place in the same process: M summed in chunk "
             "order (`weighted_gram`) and the turns made on chunks of 2,048 rows. Two threads, "
             "BLAS on one thread per product.\n",
             f"## The two operations alone ({pc[0]['rows']:,} rows, best of {args.repeat})\n",
             _common.md_table(["k", "turn: 2,048-row chunks s", f"turn: {K.TURN_ROWS:,}-row chunks s",
                               "ratio", "M: chunk order s", "M: pairs s", "ratio",
                               "added per iteration s"],
                              [[p["k"], f"{p['blas_turn']:.4f}", f"{p['row_turn']:.4f}",
                                f"{p['row_turn'] / p['blas_turn']:.2f}×",
                                f"{p['chunk_gram']:.4f}", f"{p['pair_gram']:.4f}",
                                f"{p['pair_gram'] / p['chunk_gram']:.2f}×",
                                f"{_added(p):.3f}"] for p in pc]),
             "\nAn iteration turns every row twice (each half-step turns both factors) and sums "
             "M over every row once (each half-step over one side): \"added per iteration\" is "
             "2 × (turn difference) + (M difference).\n",
             f"## An ocmf iteration (SQ-wSQ defaults, float32, {args.m:,} × {args.n:,}, "
             f"{args.nnz:,} positives, two threads)\n",
             f"Median of iterations 2–{args.n_iter} of each fit; {args.rounds} fits per "
             "configuration, taking turns (the range is that of the fits' medians).\n"]
    rows = []
    for k in args.ks:
        b, n = np.median(res[(k, "before")]), np.median(res[(k, "now")])
        p = next(p for p in pc if p["k"] == k)
        rows.append([k, f"{b:.3f} ({min(res[(k, 'before')]):.3f}–{max(res[(k, 'before')]):.3f})",
                     f"{n:.3f} ({min(res[(k, 'now')]):.3f}–{max(res[(k, 'now')]):.3f})",
                     f"{n / b:.3f}×", f"{_added(p) / b:+.1%}",
                     f"{abs(objective[(k, 'now')] / objective[(k, 'before')] - 1):.1e}"])
    lines.append(_common.md_table(["k", "before s / iteration", "now s / iteration", "ratio",
                                   "expected from the operations alone",
                                   "final objective, relative difference"], rows))
    lines.append("\nThe objectives differ by float32 rounding: the two fits make the same turns "
                 "up to rounding.\n")
    path = os.path.join(_common.DOCS, "bench_eigen_turn.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {os.path.normpath(path)}")


def _added(p):
    return 2 * (p["row_turn"] - p["blas_turn"]) + (p["pair_gram"] - p["chunk_gram"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    args.ks = (64, 256)
    args.repeat, args.rounds, args.n_iter = 5, 5, 4
    args.m, args.n, args.nnz = 138_000, 27_000, 20_000_000
    if args.quick:
        args.repeat, args.rounds, args.n_iter = 2, 1, 3
        args.m, args.n, args.nnz = 6000, 2000, 100_000
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with limit_threads(2, blas=1):
        pc = pieces(args.m + args.n, args.ks, args.repeat)
        Y = _common.cached_powerlaw(args.m, args.n, args.nnz, seed=0)
        res, objective = fits(Y, args.ks, args.n_iter, args.rounds)
    if not args.quick:
        report(pc, res, objective, args, time.perf_counter() - t0, (load0, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
