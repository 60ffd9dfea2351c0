"""First-run cost of fastpu: numba compiling, a fresh process, ``fastpu demo``.

Run from the repository root::

    python benchmarks/speed/bench_perf_firstrun.py              # about 3 minutes on 2 quiet cores
    python benchmarks/speed/bench_perf_firstrun.py --base-demo  # + the first demo at BASE_COMMIT
    python benchmarks/speed/bench_perf_firstrun.py --quick      # no demo runs, one round (~1 minute)

Writes ``docs/benchmarks/bench_perf_firstrun.md`` (with ``--quick``, a temporary file). Every measurement runs in a fresh subprocess of this
script (``--child MODE``), so that nothing is compiled or imported beforehand:

* cold first fit: an empty numba cache (a new ``NUMBA_CACHE_DIR``), ``import fastpu`` and the
  default ``fastpu.ocmf.fit(Y, 16)`` on a 2000 × 1000 matrix with 40,000 positives (power-law
  activity) — against implicit's ``AlternatingLeastSquares`` (its kernels are compiled ahead of
  time, so its first fit is its usual fit) on the same matrix, same k, 15 iterations, BLAS held
  to one thread and the same thread count; the two take turns;
* warm fresh process: the same two fits with fastpu's cache filled by the cold run;
* time to ``import fastpu`` (and ``import implicit``) in a fresh interpreter;
* ``fastpu demo`` from an empty cache (with and without its background compile process);
* a per-kernel compile profile of the cold fit (numba's compile events: CPU seconds of each
  kernel's own compile, without the kernels it calls; numba's compiler and LLVM lock timers),
  and numba's fixed costs (first compile in a process, one trivial ``parallel=True`` kernel);
* run-time check: every kernel that became a serial kernel on row blocks (the row solver, the
  Gram kernel, fbgd's ``side_gradient`` and ``positive_terms``, HOMF's ``ridge_columns``, the
  csr products and the evaluation's top-k and AUC kernels) against a ``parallel=True`` copy around the same serial code (the form it had
  before), taking turns on a larger matrix: the change that cut their compile time must not
  slow them down, and must not change a bit of their results;
* with the demo runs, the same demo profile and a demo run of fastpu at ``PREV_COMMIT`` (before
  the row-block kernels of fbgd, HOMF, csr and the evaluation), for the before/after columns.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import _common  # noqa: E402

ROOT = str(_common.ROOT)

M, N, NNZ, K = 2000, 1000, 40_000, 16
THREADS = 2
# fastpu before the work on its first run (lazy imports, serial row-block kernels, warm-up),
# measured next to the current one ("before" rows)
BASE_COMMIT = "454f026"
# main before the row-block kernels of fbgd, HOMF, csr and the evaluation ("prev" columns)
PREV_COMMIT = "7ed51e8"


# ----------------------------------------------------------------------------------------------
# children (each runs in a fresh interpreter)
# ----------------------------------------------------------------------------------------------

def _compile_listener():
    """Record every numba compile: (qualified name, inclusive CPU s, CPU s of nested compiles)."""
    from numba.core import event as ev

    records, stack = [], []

    class Listener(ev.Listener):
        def on_start(self, event):
            stack.append([time.process_time(), 0.0])

        def on_end(self, event):
            t0, nested = stack.pop()
            total = time.process_time() - t0
            if stack:
                stack[-1][1] += total
            d = event.data["dispatcher"]
            f = d.py_func
            records.append((f"{f.__module__}.{f.__qualname__}", total, total - nested))

    ev.register("numba:compile", Listener())
    return records


def _data():
    from _common import powerlaw_pu

    return powerlaw_pu(M, N, NNZ, seed=0)


def child_fastpu(dtype):
    records = _compile_listener() if os.environ.get("BENCH_PROFILE") else None
    Y = _data()
    c0, t0 = time.process_time(), time.perf_counter()
    import fastpu
    fastpu.ocmf  # noqa: B018 (the lazy module import is part of the import time)
    t1 = time.perf_counter()
    fastpu.ocmf.fit(Y, K, dtype=dtype, n_threads=THREADS)
    t2, c2 = time.perf_counter(), time.process_time()
    out = dict(import_s=t1 - t0, fit_s=t2 - t1, cpu_s=c2 - c0)
    if records is not None:
        out["compiles"] = records
        out["timers"] = _lock_timers()
    return out


def _lock_timers():
    """numba's compiler-lock and LLVM-lock wall seconds of the top-level fastpu kernels."""
    import numba

    out = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("fastpu._kernels.") or mod is None:
            continue
        for attr, obj in vars(mod).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher):
                for sig in obj.signatures:
                    t = obj.get_metadata(sig).get("timers", {})
                    out[f"{name}.{attr}"] = (t.get("compiler_lock", 0.0), t.get("llvm_lock", 0.0))
    return out


def child_implicit():
    import warnings

    import scipy.sparse as sp

    Y = sp.csr_matrix(_data().astype(np.float32))
    t0 = time.perf_counter()
    from implicit.cpu.als import AlternatingLeastSquares
    from threadpoolctl import threadpool_limits
    t1 = time.perf_counter()
    with warnings.catch_warnings(), threadpool_limits(1, "blas"):
        warnings.simplefilter("ignore")
        als = AlternatingLeastSquares(factors=K, iterations=15, num_threads=THREADS,
                                      random_state=0, calculate_training_loss=False)
        als.fit(Y, show_progress=False)
    t2 = time.perf_counter()
    return dict(import_s=t1 - t0, fit_s=t2 - t1)


def child_import(what):
    t0 = time.perf_counter()
    if what == "fastpu":
        import fastpu
        fastpu.ocmf  # noqa: B018
    elif what == "fastpu-bare":
        import fastpu  # noqa: F401
    else:
        import implicit.cpu.als  # noqa: F401
    return dict(import_s=time.perf_counter() - t0)


def child_numba_fixed():
    """numba's fixed costs: its first compile in a process, then one trivial prange kernel."""
    import numba as nb

    def serial(x):
        for i in range(x.shape[0]):
            x[i] += 1.0

    def par(x):
        for i in nb.prange(x.shape[0]):
            x[i] += 1.0

    def serial2(x):
        for i in range(x.shape[0]):
            x[i] += 2.0

    a = np.zeros(8)
    out = {}
    for name, f, kw in (("first serial compile", serial, {}),
                        ("another serial compile", serial2, {}),
                        ("a trivial parallel=True compile", par, dict(parallel=True))):
        c0 = time.process_time()
        nb.njit(**kw)(f)(a)
        out[name] = time.process_time() - c0
    return out


def child_runtime(rounds):
    """Interleaved run time: library kernels vs parallel=True copies (the former form)."""
    import numba as nb

    import fastpu as fp
    from fastpu._kernels import csr
    from fastpu._kernels import ocmf as updates
    from fastpu.ocmf._check import check_model, check_y
    from fastpu.ocmf._problem import _NO_ROWS, _gram, build
    from _common import powerlaw_pu

    out = {}
    prange_rn = _prange_row_newton(nb, updates)
    prange_gram = _prange_gram(nb, csr)
    Y = powerlaw_pu(20_000, 10_000, 400_000, seed=1)
    for loss in ("logistic", "square"):
        k = 32
        model = fp.ocmf.fit(Y, k, loss=loss, n_iter=2, n_threads=THREADS)
        Yc = check_y(Y, fit=False)
        setup = build(Yc, check_model(Yc.shape, loss=loss, rho=0.01, p=None, q=None, a_bar=None,
                                      user_features=None, item_features=None, user_graph=None,
                                      item_graph=None, lam=1.0, lam_w=None, lam_h=None,
                                      lam_graph=0.0, negatives="full", neg_ratio=1.0,
                                      dense_limit=None), np.random.default_rng(0))
        E, W0 = model.item_factors, model.user_factors
        M_, kap = _gram(E, setup.q_quad)
        ent = setup.entries
        local_max = max(16, updates.LOCAL_ENTRIES // k)

        def call(fn):
            W, f = W0.copy(), np.empty(W0.shape[0])
            t = time.perf_counter()
            fn(setup.kind, ent.indptr, ent.indices, ent.labels, ent.weights, ent.corr,
               setup.q_quad, setup.abar, E, M_, kap, setup.p_quad, 1.0, W, 1, 4, 1e-3,
               local_max, f, _NO_ROWS)
            return time.perf_counter() - t, W, f

        if prange_rn is None:
            out[f"row solver ({loss})"] = None
            continue
        from fastpu._core.threads import limit_threads
        with limit_threads(THREADS):
            call(prange_rn), call(updates.row_newton)
            _, Wa, fa = call(prange_rn)
            _, Wb, fb = call(updates.row_newton)
            ta, tb = [], []
            for _ in range(rounds):
                ta.append(call(prange_rn)[0])
                tb.append(call(updates.row_newton)[0])
        out[f"row solver ({loss}, k={k}, 20000 rows)"] = dict(
            before=float(np.median(ta)), after=float(np.median(tb)),
            max_rel_diff=float(np.max(np.abs(Wa - Wb)) / np.max(np.abs(Wa))))
    rng = np.random.default_rng(0)
    E = rng.normal(size=(50_000, 64))
    q = rng.uniform(size=50_000)

    def gcall(fn):
        Mo, ko = np.empty((64, 64)), np.empty(64)
        t = time.perf_counter()
        fn(E, q, Mo, ko)
        return time.perf_counter() - t, Mo

    from fastpu._core.threads import limit_threads
    with limit_threads(THREADS):
        gcall(prange_gram), gcall(csr.weighted_gram)
        ta, tb = [], []
        for _ in range(rounds):
            ta.append(gcall(prange_gram)[0])
            tb.append(gcall(csr.weighted_gram)[0])
        Ma, Mb = gcall(prange_gram)[1], gcall(csr.weighted_gram)[1]
    out["Gram E^T diag(q) E (50000 x 64)"] = dict(
        before=float(np.median(ta)), after=float(np.median(tb)),
        max_rel_diff=float(np.max(np.abs(Ma - Mb)) / np.max(np.abs(Ma))))
    with limit_threads(THREADS):
        out.update(_runtime_fbgd_homf(nb, rounds))
    return out


def _interleave(before, after, rounds):
    """Median seconds of ``before()`` and ``after()`` taking turns (after one warm-up call each);
    each returns (seconds, result array); also the largest relative difference of the results."""
    before(), after()
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(before()[0])
        tb.append(after()[0])
    ra, rb = before()[1], after()[1]
    same_nan = np.array_equal(np.isnan(ra), np.isnan(rb))
    ok = ~np.isnan(ra)
    diff = np.max(np.abs(ra[ok] - rb[ok]), initial=0.0) / max(np.max(np.abs(ra[ok]), initial=0.0),
                                                             1e-300)
    return dict(before=float(np.median(ta)), after=float(np.median(tb)),
                max_rel_diff=float(diff) if same_nan else float("inf"))


def _runtime_fbgd_homf(nb, rounds):
    """homf's ridge_columns and the small row kernels: row blocks vs prange copies."""
    import fastpu as fp
    import fastpu.fbgd._problem as FP
    import fastpu.fbgd._check as FC
    from fastpu import fbgd
    from fastpu._kernels import homf as KH
    from _common import powerlaw_pu

    out = {}
    # fbgd, user side of a coordinate epoch: 6040 x 3706, 1,000,000 positives, k = 64
    Y = powerlaw_pu(6040, 3706, 1_000_000, seed=2)
    m, n = Y.shape
    neg = FP._negative_weights(Y, 0.5 * n, 0.0)
    prob = FP._Problem(Y, FC.identity(m), FC.identity(n), 64, False, neg,
                       np.ones(Y.nnz), np.ones(Y.nnz), 0.0, None)
    tx, ty = prob.init_params(np.random.default_rng(0), 0.01)
    P, Q = prob.embed(prob.Zx, tx), prob.embed(prob.Zy, ty)
    Sq, sq = prob.gram(prob.neg, Q)
    A = fp.homf.transition_matrix(Y, g="step")

    # homf exact mode: ridge solves of 1024 columns of length 9746 (30 % nonzero), k = 32
    rng = np.random.default_rng(3)
    b, N, k = 1024, A.shape[0], 32
    Ct = rng.normal(size=(b, N)) * (rng.uniform(size=(b, N)) < 0.3)
    U = rng.normal(size=(N, k))
    UtU = U.T @ U

    @nb.njit(parallel=True, nogil=True)
    def prange_ridge(Ct, U, UtU, lam2, dense, out, loss_out, ok_out):
        for c in nb.prange(Ct.shape[0]):
            KH.ridge_block(c, c + 1, Ct, U, UtU, lam2, dense, out, loss_out, ok_out)

    def ridge(fn):
        def run():
            sol, loss, ok = np.empty((b, k)), np.empty(b), np.empty(b, dtype=np.bool_)
            t0 = time.perf_counter()
            fn(Ct, U, UtU, 0.2, False, sol, loss, ok)
            return time.perf_counter() - t0, sol
        return run

    out["homf ridge_columns (1024 columns, N=9746, 30 % nonzero, k=32)"] = _interleave(
        ridge(prange_ridge), ridge(KH.ridge_columns), rounds)
    out.update(_runtime_small(nb, rounds, Y, A, prob, P, Q, Sq, sq))
    return out


def _prange_of(nb, rows_kernel):
    """The former ``parallel=True`` form of a row kernel: a ``prange`` over its rows."""
    @nb.njit(parallel=True, nogil=True)
    def par(m, *args):
        for i in nb.prange(m):
            rows_kernel(i, i + 1, *args)
    return par


def _runtime_small(nb, rounds, Y, A, prob, P, Q, Sq, sq):
    """The small row kernels of the demo's path: row blocks vs ``prange`` copies."""
    from fastpu._kernels import csr, ranking, topk
    from fastpu._kernels import fbgd as KF

    rng = np.random.default_rng(4)
    m, n = Y.shape
    ip, ix = Y.indptr.astype(np.int64), Y.indices.astype(np.int64)
    k = P.shape[1]
    cases = {}
    D = rng.normal(size=(n, 32))
    cases["csr_dense (6040 x 3706 CSR, 1M entries, times 3706 x 32)"] = (
        csr, "csr_dense", m, lambda: (ip, ix, Y.data, D, np.empty((m, 32))), -1)
    perm = rng.permutation(Y.nnz).astype(np.int64)
    cases["csr_dense_perm (the same, entries through a permutation)"] = (
        csr, "csr_dense_perm", m, lambda: (ip, ix, perm, Y.data, D, np.empty((m, 32))), -1)
    cases["sampled_dots (1M entries, k=64)"] = (
        csr, "sampled_dots", m, lambda: (ip, ix, P, Q, np.empty(Y.nnz)), -1)
    w = [rng.uniform(0.1, 2.0, Y.nnz) for _ in range(3)]
    cases["fbgd positive_terms (1M entries, k=64)"] = (
        KF, "positive_terms", m,
        lambda: (ip, ix, w[0], w[1], w[2], P, Q, 0.0, np.empty(Y.nnz), np.empty(m)), -1)
    cases["fbgd side_gradient (6040 rows, 1M entries, k=64)"] = (
        KF, "side_gradient", m,
        lambda: (ip, ix, w[0], w[1], P, Q, Sq, sq, prob.arow, 0.0, np.empty((m, k))), -1)
    b = 2000
    S = rng.normal(size=(b, n))
    rows = np.arange(b, dtype=np.int64)
    cases["topk_rows (2000 users x 3706 items, top 20)"] = (
        topk, "topk_rows", b,
        lambda: (S, ip, ix, rows, 20, np.empty((b, 20), dtype=np.int64), np.empty((b, 20))), -2)
    items = np.argsort(-S, axis=1)[:, :50].astype(np.int64)
    ks = np.array([1, 5, 10, 20, 50], dtype=np.int64)
    cases["topk_metrics (2000 users, top 50, 5 cut-offs)"] = (
        ranking, "topk_metrics", b,
        lambda: (items, rows, ip, ix, ks, np.zeros((b, 5), dtype=np.int64),
                 *(np.zeros((b, 5)) for _ in range(3))), -4)
    neg = S.copy()
    ranking.mask_rows(neg, rows, ip, ix, np.nan)
    neg.sort(axis=1)
    Yr = sp_csr_drop(Y)     # "relevant" rows disjoint from Y: a shifted copy, empty where Y
    cases["auc_sorted (2000 users x 3706 items)"] = (
        ranking, "auc_sorted", b,
        lambda: (S, neg, rows, ip, Yr.indptr, Yr.indices, np.empty(b)), -1)
    out = {}
    for label, (mod, name, rows_m, make, res) in cases.items():
        par = _prange_of(nb, getattr(mod, f"_{name}_rows"))
        fn = getattr(mod, name)

        def timed(call):
            def run():
                args = make()
                t0 = time.perf_counter()
                call(*args)
                return time.perf_counter() - t0, np.asarray(args[res], dtype=np.float64)
            return run

        before = timed(lambda *a: par(rows_m, *a))
        out[label] = _interleave(before, timed(fn), rounds)
    return out


def sp_csr_drop(Y):
    """Rows of Y's shape whose entries are Y's row entries shifted by one column, minus Y's."""
    import scipy.sparse as sp
    Ys = sp.csr_array((Y.data, (Y.indices + 1) % Y.shape[1], Y.indptr), shape=Y.shape)
    R = sp.csr_array((Ys - Ys.multiply(Y > 0)) > 0, dtype=np.float64)
    R.sort_indices()
    R.indptr, R.indices = R.indptr.astype(np.int64), R.indices.astype(np.int64)
    return R


def _prange_row_newton(nb, updates):
    """row_newton as it was: a parallel=True kernel calling _solve_chunk per 64-row chunk.

    Generated from the current signatures (``row_newton``'s arguments, ``_solve_chunk``'s with
    ``c_lo, c_hi`` the chunk and ``cap`` = max(local_max, 0)), so it follows changes to them.
    """
    outer = list(inspect.signature(updates.row_newton).parameters)
    inner = list(inspect.signature(updates._solve_chunk.py_func).parameters)
    subst = {"c_lo": "c * 64", "c_hi": "min(m, (c + 1) * 64)", "cap": "cap"}
    args = [subst.get(a, a) for a in inner]
    if any(a not in outer and a not in subst for a in inner) or "W" not in outer:
        return None
    src = (f"def rn({', '.join(outer)}):\n"
           "    m = W.shape[0]\n"
           "    cap = max(local_max, 0)\n"
           "    for c in nb.prange((m + 63) // 64):\n"
           f"        _solve_chunk({', '.join(args)})\n")
    ns = {"nb": nb, "_solve_chunk": updates._solve_chunk}
    exec(compile(src, "<prange row_newton>", "exec"), ns)
    return nb.njit(parallel=True, nogil=True, fastmath={"reassoc", "contract"})(ns["rn"])


def _prange_gram(nb, csr):
    """weighted_gram in its former form: one prange iteration per 2048-row chunk, then the
    partials added in chunk order (the library runs the same chunks on its thread pool)."""
    part, add, chunk = csr._gram_partials, csr._gram_add, csr._GRAM_CHUNK

    @nb.njit(parallel=True, nogil=True, fastmath={"reassoc", "contract"})
    def gram(E, q, M_out, kappa_out):
        n, k = E.shape
        n_chunks = (n + chunk - 1) // chunk
        partM = np.zeros((n_chunks, k, k))
        partk = np.zeros((n_chunks, k))
        for c in nb.prange(n_chunks):
            part(E, q, c, c + 1, partM, partk, 0)
        M_out[...] = 0.0
        kappa_out[...] = 0.0
        add(partM, partk, n_chunks, M_out, kappa_out)
        for a in range(k):
            for b in range(a):
                M_out[a, b] = M_out[b, a]

    return gram


def child_demo_profile():
    """`fastpu demo` (no background process) with every compile recorded."""
    import contextlib
    import io

    records = _compile_listener()
    from fastpu.cli import main

    c0 = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["demo", "--quiet", "--background-compile=off"])
    return dict(cpu_s=time.process_time() - c0, compiles=records)


def child_main(mode, arg):
    if mode == "demo-profile":
        res = child_demo_profile()
    elif mode == "fastpu":
        res = child_fastpu(arg)
    elif mode == "implicit":
        res = child_implicit()
    elif mode == "import":
        res = child_import(arg)
    elif mode == "numba-fixed":
        res = child_numba_fixed()
    elif mode == "runtime":
        res = child_runtime(int(arg))
    else:
        raise SystemExit(f"unknown child mode {mode}")
    print("RESULT " + json.dumps(res))


# ----------------------------------------------------------------------------------------------
# parent
# ----------------------------------------------------------------------------------------------

def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def export_base(tmp, commit=BASE_COMMIT, name="base"):
    """The fastpu package of ``commit``, exported into ``tmp/name``; None without git."""
    from _common import export_fastpu

    try:
        return export_fastpu(commit, os.path.join(tmp, name))
    except (OSError, subprocess.CalledProcessError):
        return None


def run_child(mode, arg="", cache=None, extra_env=None, source=ROOT):
    env = dict(os.environ)
    env["PYTHONPATH"] = source + os.pathsep + ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("NUMBA_CACHE_DIR", None)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    env.update(extra_env or {})
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, arg],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"child {mode} {arg} failed:\n{proc.stderr[-3000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    res["process_s"] = wall
    return res


def run_demo(cache, background, source=ROOT, flag=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = source + os.pathsep + env.get("PYTHONPATH", "")
    env["NUMBA_CACHE_DIR"] = cache
    cmd = [sys.executable, "-m", "fastpu", "demo", "--quiet"]
    if flag if flag is not None else source == ROOT:
        cmd.append("--background-compile=" + ("on" if background else "off"))
    import resource

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # cwd = the source tree: `python -m` puts the working directory first on sys.path
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=source)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"fastpu demo failed:\n{proc.stderr[-3000:]}")
    fits = {}
    for ln in _common.demo_table_rows(proc.stdout):
        parts = ln.rsplit(None, 6)
        if len(parts) == 7 and parts[0] != "popularity":
            try:
                fits[parts[0].strip()] = float(parts[-1])
            except ValueError:
                pass
    return dict(wall=wall, cpu=cpu, fits=fits)


def summarise_compiles(records, top=12):
    by = {}
    for name, total, own in records:
        agg = by.setdefault(name, [0, 0.0, 0.0])
        agg[0] += 1
        agg[1] = max(agg[1], total)
        agg[2] += own
    rows = sorted(by.items(), key=lambda kv: -kv[1][2])
    return rows[:top], sum(v[2] for v in by.values())


def fmt(x, digits=2):
    return "—" if x is None else f"{x:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("MODE", "ARG"), help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="one round, no demo runs")
    ap.add_argument("--rounds", type=int, default=None, help="cold-fit rounds (default 2)")
    ap.add_argument("--base-demo", action="store_true",
                    help=f"also run the first `fastpu demo` of fastpu at {BASE_COMMIT} (+1 minute)")
    ap.add_argument("--out", default=None,
                    help="the report (default docs/benchmarks/bench_perf_firstrun.md; with --quick "
                         "a temporary file)")
    ap.add_argument("--render", default=None, metavar="JSON",
                    help="only rewrite the report from a saved run's raw results")
    args = ap.parse_args()
    if args.child:
        child_main(*args.child)
        return
    if args.out is None:
        args.out = (os.path.join(tempfile.mkdtemp(prefix="bench_perf_firstrun_"), "bench_perf_firstrun.md")
                    if args.quick else str(_common.DOCS / "bench_perf_firstrun.md"))
    if args.render:
        with open(args.render) as fh:
            render(args, json.load(fh))
        return
    from _common import hardware_line

    rounds = args.rounds or (1 if args.quick else 2)
    tmp = tempfile.mkdtemp(prefix="fastpu-firstrun-")
    try:
        log("numba's fixed costs")
        fixed = run_child("numba-fixed", cache=os.path.join(tmp, "fixed"))
        fixed.pop("process_s", None)
        cold, cold_imp, cold_base, warm, warm_imp = [], [], [], [], []
        profile = None
        base = export_base(tmp)
        for r in range(rounds):
            cache = os.path.join(tmp, f"cold{r}")
            log(f"cold round {r + 1}/{rounds}: fastpu (empty cache), implicit, fastpu {BASE_COMMIT}")
            res = run_child("fastpu", "float64", cache=cache, extra_env={"BENCH_PROFILE": "1"})
            profile = profile or res
            cold.append(res)
            cold_imp.append(run_child("implicit"))
            if base is not None:
                cold_base.append(run_child("fastpu", "float64", cache=os.path.join(tmp, f"base{r}"),
                                           source=base))
        log("cold float32 fit (empty cache)")
        cold32 = run_child("fastpu", "float32", cache=os.path.join(tmp, "cold32"))
        for r in range(5 if not args.quick else 2):
            log(f"warm round {r + 1}: fastpu (cache of the cold run), implicit")
            warm.append(run_child("fastpu", "float64", cache=os.path.join(tmp, "cold0")))
            warm_imp.append(run_child("implicit"))
        log("import times")
        imports = {w: [] for w in ("fastpu-bare", "fastpu", "implicit")}
        for r in range(5 if not args.quick else 2):
            for w in imports:
                imports[w].append(run_child("import", w, cache=os.path.join(tmp, "cold0"))["import_s"])
        log("run time: library kernels vs parallel=True copies")
        runtime = run_child("runtime", "3" if args.quick else "9", cache=os.path.join(tmp, "cold0"))
        runtime.pop("process_s", None)
        demos, demo_profile, demo_profile_prev = {}, None, None
        if not args.quick:
            prev = export_base(tmp, PREV_COMMIT, "prev")
            log("fastpu demo from an empty cache, compiles recorded")
            demo_profile = run_child("demo-profile", cache=os.path.join(tmp, "demoprof"))
            if prev is not None:
                log(f"the same for fastpu at {PREV_COMMIT}")
                demo_profile_prev = run_child("demo-profile", cache=os.path.join(tmp, "demoprofp"),
                                              source=prev)
            order = [True, "base", False] if (args.base_demo and base is not None) else [True, False]
            if prev is not None:
                order.insert(-1, "prev")
            for bg in order:
                if bg == "base":
                    log(f"fastpu demo of fastpu at {BASE_COMMIT} from an empty cache")
                    demos["base"] = run_demo(os.path.join(tmp, "demobase"), False, source=base)
                    continue
                if bg == "prev":
                    log(f"fastpu demo of fastpu at {PREV_COMMIT} from an empty cache (background off)")
                    demos["prev"] = run_demo(os.path.join(tmp, "demoprev"), False, source=prev,
                                             flag=True)
                    continue
                log(f"fastpu demo from an empty cache (background compile {'on' if bg else 'off'})")
                demos[bg] = run_demo(os.path.join(tmp, f"demo{int(bg)}"), bg)
        hw = hardware_line()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    raw = dict(hw=hw, fixed=fixed, cold=cold, cold_imp=cold_imp, cold_base=cold_base,
               cold32=cold32, warm=warm,
               warm_imp=warm_imp, imports=imports, runtime=runtime,
               demos={(k if isinstance(k, str) else str(int(k))): v for k, v in demos.items()},
               profile=profile, demo_profile=demo_profile, demo_profile_prev=demo_profile_prev,
               cmd=" ".join(["python", "benchmarks/speed/bench_perf_firstrun.py", *sys.argv[1:]]))
    with open(os.path.join(tempfile.gettempdir(), "fastpu_bench_perf_firstrun.json"), "w") as fh:
        json.dump(raw, fh)
    render(args, raw)


def render(args, raw):
    """Write the report from the raw results (also ``--render FILE`` from a saved run)."""
    from _common import md_table

    demos = {(k if k in ("base", "prev") else bool(int(k))): v for k, v in raw["demos"].items()}
    args.command = raw.get("cmd")
    write_report(args, raw["hw"], raw["fixed"], raw["cold"], raw["cold_imp"], raw.get("cold_base", []),
                 raw["cold32"],
                 raw["warm"], raw["warm_imp"], raw["imports"], raw["runtime"], demos,
                 raw["profile"], md_table, raw.get("demo_profile"), raw.get("demo_profile_prev"))


def write_report(args, hw, fixed, cold, cold_imp, cold_base, cold32, warm, warm_imp, imports,
                 runtime, demos, profile, md_table, demo_profile=None, demo_profile_prev=None):
    med = lambda xs: float(np.median(xs))  # noqa: E731
    cold_fit = med([c["fit_s"] for c in cold])
    cold_all = med([c["import_s"] + c["fit_s"] for c in cold])
    imp_first = med([c["fit_s"] for c in cold_imp])
    imp_first_all = med([c["import_s"] + c["fit_s"] for c in cold_imp])
    warm_fit = med([w["fit_s"] for w in warm])
    warm_all = med([w["import_s"] + w["fit_s"] for w in warm])
    imp_warm = med([w["fit_s"] for w in warm_imp])
    imp_warm_all = med([w["import_s"] + w["fit_s"] for w in warm_imp])
    cmd = getattr(args, "command", None) or ("python benchmarks/speed/bench_perf_firstrun.py"
                                             + (" --quick" if args.quick else ""))
    L = ["# First run: compile, fresh process, `fastpu demo`", "",
         _common.provenance(), "", hw, "", f"Command: `{cmd}` (writes this file). Wall seconds vary between runs on this "
         "2-core machine (more when other work shares it): compare the ratios and the CPU seconds "
         "more than the wall seconds.", "",
         f"Data: {M} × {N}, {NNZ:,} positives (power-law activity), k = {K}, {THREADS} threads; "
         "fastpu `ocmf.fit(Y, 16)` with its defaults (15 iterations); implicit "
         "0.7.3 `AlternatingLeastSquares(factors=16, iterations=15)` (float32, BLAS held to one "
         "thread). Each number is the median over fresh processes that took turns "
         "(fastpu, implicit, fastpu, ...). *import + fit* counts `import fastpu` and the first "
         "touch of `fastpu.ocmf` (resp. `import implicit.cpu.als`) and the fit; numpy and scipy "
         "were already imported.", ""]
    rows = [
        ["first fit, empty cache (numba compiling)", f"{cold_fit:.2f} s (import + fit {cold_all:.2f} s; "
         f"CPU {med([c['cpu_s'] for c in cold]):.2f} s)", f"{imp_first:.2f} s (import + fit {imp_first_all:.2f} s)",
         "≤ 3 s", "yes" if cold_fit <= 3 else "no"],
        ["first fit, empty cache, `dtype=\"float32\"`", f"{cold32['fit_s']:.2f} s (CPU {cold32['cpu_s']:.2f} s)",
         "", "", ""],
    ]
    if cold_base:
        rows.append([f"first fit, empty cache, fastpu at {BASE_COMMIT} (before this work)",
                     f"{med([c['fit_s'] for c in cold_base]):.2f} s (CPU {med([c['cpu_s'] for c in cold_base]):.2f} s)",
                     "", "", ""])
    rows += [
        ["fresh process, compiled cache present: fit", f"{warm_fit:.3f} s", f"{imp_warm:.3f} s",
         f"≤ 1.5× ({1.5 * imp_warm:.3f} s)", f"{warm_fit / imp_warm:.2f}× — " + ("yes" if warm_fit <= 1.5 * imp_warm else "no")],
        ["fresh process, compiled cache present: import + fit", f"{warm_all:.3f} s", f"{imp_warm_all:.3f} s",
         f"≤ 1.5× ({1.5 * imp_warm_all:.3f} s)", f"{warm_all / imp_warm_all:.2f}× — " + ("yes" if warm_all <= 1.5 * imp_warm_all else "no")],
        ["`import fastpu` (fresh interpreter, numba included)", f"{med(imports['fastpu-bare']):.3f} s "
         f"(+ `fastpu.ocmf`: {med(imports['fastpu']):.3f} s)", f"`import implicit.cpu.als` {med(imports['implicit']):.3f} s", "", ""],
    ]
    for bg, label in ((True, "`--background-compile=on`"),
                      (False, "`--background-compile=off`"),
                      ("prev", f"`--background-compile=off`, fastpu at {PREV_COMMIT} (before the "
                               "row-block kernels of fbgd, HOMF, csr and the evaluation)"),
                      ("base", f"fastpu at {BASE_COMMIT} (before the first-run work)")):
        if bg in demos:
            old = bg in ("base", "prev")
            rows.append([f"`fastpu demo`, empty cache, {label}",
                         f"{demos[bg]['wall']:.1f} s (CPU of all its processes {demos[bg].get('cpu', float('nan')):.1f} s)",
                         "", "" if old else "≤ 25 s",
                         "" if old else ("yes" if demos[bg]["wall"] <= 25 else "no")])
    L += [md_table(["measured", "fastpu", "implicit", "goal", "met?"], rows), ""]
    if demos:
        L += ["Per configuration, the seconds `fastpu demo` prints (the first fit of each method "
              "includes its compiling):", ""]
        labels = list(next(iter(demos.values()))["fits"])
        heads = {True: "background compile on", False: "off", "base": f"at {BASE_COMMIT}",
                 "prev": f"off, at {PREV_COMMIT}"}
        L += ["(run in the order of the columns, one demo at a time)", ""]
        L += [md_table(["configuration"] + [heads[bg] for bg in demos],
                       [[lab] + [fmt(demos[bg]["fits"].get(lab), 1) for bg in demos] for lab in labels]), ""]
    # profile
    L += ["## Where the cold first fit's time goes", "",
          "CPU seconds of each compile in the cold fit (numba's `numba:compile` events; *own* excludes the "
          "functions it calls, which have their own rows; *LLVM s* is numba's `llvm_lock` timer, wall "
          "seconds spent in LLVM optimisation and code generation, callees included):", ""]
    top, total = summarise_compiles(profile["compiles"])
    timers = profile.get("timers", {})
    prow = []
    for name, (count, incl, own) in top:
        t = timers.get(name)
        prow.append([f"`{name}`", count, f"{own:.2f}", f"{incl:.2f}",
                     "" if t is None else f"{t[1]:.2f}"])
    L += [md_table(["function", "compiles", "own CPU s", "inclusive CPU s", "LLVM s"], prow), "",
          f"All compiles together: {total:.2f} CPU s of the fit's {profile['cpu_s']:.2f} CPU s "
          f"(wall {profile['fit_s']:.2f} s). numba's fixed costs in a fresh process: "
          + ", ".join(f"{k} {v:.2f} s" for k, v in fixed.items()) + ".", ""]
    if demo_profile:
        L += demo_profile_section(demo_profile, demo_profile_prev, md_table)
    # runtime
    L += ["## Run time of the changed kernels", "",
          "Each of these kernels used to be a `parallel=True` kernel; it now runs a serial "
          "GIL-free kernel on one block of rows per thread (fastpu/_kernels/rowpool.py). Median "
          f"seconds of one call, the two forms taking turns, {THREADS} threads; *before* is a "
          "`parallel=True` copy built by this script around the same serial code (a `prange` "
          "over the rows). "
          "*max rel. diff* compares the two results: 0 means bit for bit. On this shared machine "
          "a ratio moves by up to about ±10 % between runs. Five conversions were measured slower "
          "and dropped, so those kernels stay `parallel=True`: fbgd's `coordinate_rows` and "
          "HOMF's `horner_walk` (2–4 % slower in every one of six runs, 48 ms and 25 ms a call: "
          "the same serial code is slower compiled on its own than inside numba's `prange` "
          "gufunc — 2.7 % at one thread too, so not the thread hand-off — although they were "
          "the two largest compile savings, 3.4 → 1.1 and 0.9 → 0.2 CPU s), fbgd's `batch_update` (an "
          "elementwise Adagrad step over 6040 × 64 parameters: 0.35 ms → 1.47 ms — too little "
          "work per call for the pool's hand-off, and one block was slower than the `prange` "
          "loop), HOMF's `scatter_columns` (2.6 ms → 3.0 ms: it needs two passes, zeroing by "
          "rows, then filling by columns, so two hand-offs per call), and the evaluation's `mask_rows` "
          "(1.3 ms → 1.4–1.8 ms: a call is too short for the hand-off).", ""]
    rrows = []
    for name, r in runtime.items():
        if r is None:
            rrows.append([name, "—", "—", "not measured (signature changed)", ""])
        else:
            rrows.append([name, f"{r['before'] * 1e3:.1f} ms", f"{r['after'] * 1e3:.1f} ms",
                          f"{r['after'] / r['before']:.3f}", f"{r['max_rel_diff']:.1e}"])
    L += [md_table(["kernel", "before (prange)", "after (row blocks)", "after / before", "max rel. diff"], rrows), ""]
    demo_cpu = demos[False].get("cpu") if False in demos else None
    extra = med([c["cpu_s"] for c in cold]) - med([w["cpu_s"] for w in warm])
    L += [ANALYSIS, "", README_PARAGRAPH.format(
        extra=extra, warm=warm_fit, imp=imp_warm,
        demo="about half a minute" if demo_cpu is None else f"about {demo_cpu:.0f} s of CPU"), ""]
    with open(args.out, "w") as fh:
        fh.write("\n".join(L))
    log(f"wrote {args.out}")


RENAMED = {"fastpu._kernels.homf.ridge_block": "fastpu._kernels.homf.ridge_columns",
           "fastpu._kernels.homf.walk_rows": "fastpu._kernels.homf.horner_walk"}


def demo_profile_section(now, prev, md_table, top=24):
    """The demo's compile profile; with ``prev``, next to the one of fastpu at PREV_COMMIT."""
    rows_now, total = summarise_compiles(now["compiles"], top=10_000)
    L = ["## Where the first `fastpu demo`'s time goes", ""]
    if prev is None:
        L += [f"The demo (without its background process) from an empty cache spent {total:.1f} of "
              f"its {now['cpu_s']:.1f} CPU s compiling; the largest compiles (own CPU s, callees in "
              "their own rows):", "",
              md_table(["function", "compiles", "own CPU s"],
                       [[f"`{name}`", c, f"{own:.2f}"] for name, (c, _, own) in rows_now[:top]]), ""]
        return L
    rows_prev, total_prev = summarise_compiles(prev["compiles"], top=10_000)
    a, b, shown = {}, dict(rows_prev), {}
    for name, v in rows_now:          # a row kernel in the row of the prange kernel it replaced
        old = RENAMED.get(name) or re.sub(r"\._(\w+)_rows$", r".\1", name)
        if old != name and old in b:
            shown[old] = f"`{old}` → `{name.rsplit('.', 1)[1]}`"
        a[old] = v
    names = sorted(set(a) | set(b), key=lambda k: -max(a.get(k, (0, 0, 0))[2],
                                                        b.get(k, (0, 0, 0))[2]))[:top]
    cell = lambda d, k: "—" if k not in d else f"{d[k][2]:.2f}" + (f" ({d[k][0]}×)" if d[k][0] > 1 else "")
    L += [f"The demo (without its background process) from an empty cache, this code against "
          f"fastpu at {PREV_COMMIT} (each in its own fresh process, one after the other): "
          f"{total:.1f} of {now['cpu_s']:.1f} CPU s compiling now, {total_prev:.1f} of "
          f"{prev['cpu_s']:.1f} CPU s then. The largest compiles (own CPU s, callees in their own "
          "rows; *x* → *y*: the serial row kernel y now does the work of the `parallel=True` "
          "kernel x, and x, if it remains, is a Python function):", "",
          md_table(["function", f"own CPU s at {PREV_COMMIT}", "own CPU s now"],
                   [[shown.get(k, f"`{k}`"), cell(b, k), cell(a, k)] for k in names]), ""]
    return L


ANALYSIS = """## What changed, and the floor

* **Row solver and Gram kernel without `parallel=True`.** numba compiles a `prange` kernel by
  outlining the loop body into a gufunc, linking every function it calls into it and optimising
  the result again with LLVM, then once more in the kernel's own library. The row solver
  `_solve_chunk` was therefore optimised three times (its own compile, the gufunc, `row_newton`);
  the two extra passes were a third of the cold fit's CPU (14.2 s → 9.4 s when they went, on a
  quiet moment of this machine), and the Gram kernel's `prange` form cost 2.4 s against 0.7 s
  for the serial chunk kernel and its sum. Now `row_newton` and `weighted_gram` are plain Python
  functions that split the rows into one block of about equal work per thread and call the serial
  `nogil` kernel on each block from a small thread pool. Results are bitwise those of the same
  serial code (tests/kernels/test_rowpool.py), and independent of the thread count as before.
* **`import fastpu` is lazy** (PEP 562): the method modules, `select`/`compare` (scipy.stats) and
  `distributed` (dask) are imported on first use.
* **`fastpu demo`** starts one spawned process that runs each later demo configuration for one
  iteration (last first) while the demo trains the first ones, so the second core compiles the
  later methods' kernels into the cache. By default (`--background-compile=auto`) only when the
  load average says a core is idle: on a machine whose cores are busy it only competes with the
  demo. The table shows it forced on and off. **`fastpu warmup`** compiles every method's kernels once
  per machine and installation, with two processes.
* Tried and dropped, measured in the cold fit: letting LLVM inline the solver's helpers instead of
  numba's `inline="always"` (compile CPU +0.4 s: every helper is compiled on its own and LLVM
  still inlines and optimises the copies); compiling only the loss in use (a constant loss kind:
  no measurable change — the loss functions are a small part of the solver).
* **fbgd, HOMF, csr and evaluation kernels on row blocks** (after fastpu at 7ed51e8). The same
  change for the `parallel=True` kernels of the demo's path: HOMF's `ridge_columns` (a
  Cholesky solve per column, 2.2 CPU s to compile as a `prange` kernel), fbgd's
  `side_gradient` and `positive_terms`, the csr products `csr_dense`,
  `csr_dense_perm`, `sampled_dots`, and the evaluation's `topk_rows`, `topk_metrics` and
  `auc_sorted`. Each keeps its name and arguments (a Python function now), so no
  caller changed. Calls with less than `MIN_BLOCK_WORK` (8192 entries) of work run as one
  block in the calling thread: handing a block to the pool costs about 55 µs more than a
  `prange` launch. Every row is still computed whole by one thread: the results are bit for
  bit those of the `prange` form (the table above; tests/kernels/test_rowblock_kernels.py checks the
  blocks against one block at 1 and 2 threads).

**The floor of the cold first fit.** What remains is compiling the kernels a default ocmf fit
calls, each once: the row solver `_solve_chunk` (one serial function of some 250 lines with its
helpers inlined; numba's typing and inlining plus LLVM's O3 on it), the Gram kernel and the loss
functions, plus numba's first-compile cost in the process (the table above). Since ocmf's
starting objective comes from the row solver, the default fit no longer compiles
`sampled_dots`, `entry_values` or `row_scaled_product` (they are absent from the profile). The
solver alone is more than the 3 s goal on this machine, so the goal is not met by compiling
less. Meeting it needs the compile work to be done before the user's first fit: `fastpu
warmup` once per machine (or a first `fastpu demo`), after which a fresh process loads the
compiled kernels (the warm rows). Shipping compiled kernels is not possible with numba's cache,
which is keyed to the machine's CPU.

**The floor of the first `fastpu demo`.** Its CPU time is still mostly compiling (profile
above), now led by the row solver (about 4 CPU s, one serial function, see the cold fit) and
fbgd's `coordinate_rows` (about 3.5 s as a `prange` kernel; its row-block form compiles in
1.1 s but ran 2–4 % slower, so it was not kept); the rest is some thirty serial kernels at
0.1–0.5 s each and the `parallel=True` kernels left in the demo's path (csrr's
`positive_terms` and `soft_box`, which another change owns, and `horner_walk`, `batch_update`,
`scatter_columns` and `mask_rows`, whose row-block forms were slower at run time), plus the
fits themselves and loading the data. The background compile process helps only when a core is otherwise idle (the
table shows it forced on and off in this run); on a machine whose cores are busy it competes
with the demo, which is why the default `auto` starts it only when the load average leaves a
core idle.
"""

README_PARAGRAPH = """## Proposed README sentence

> **First run.** fastpu's kernels are compiled by numba the first time they are used, and
> cached per user (see above). The first ocmf fit in a fresh environment spends about
> {extra:.0f} s compiling (one core of this project's 2-core machine), each other method's
> first fit a few seconds more, and the first `fastpu demo` {demo} in all; later processes
> load the cache (a default ocmf fit of a 2000 × 1000 matrix then takes {warm:.2f} s here,
> implicit's ALS {imp:.2f} s). `fastpu warmup` does the compiling for every method once, in two
> processes, for example right after installing."""


if __name__ == "__main__":
    main()
