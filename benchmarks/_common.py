"""The helpers every benchmark script shares: where reports go, the hardware and provenance
lines, timing, random PU matrices, and what to say when an optional package or data set is absent.

The scripts live in topic folders (``speed/``, ``quality/``, ``distributed/``, ``reliability/``)
and run as ``python benchmarks/<topic>/<script>.py`` from the repository root. Each puts this
folder on ``sys.path`` first, then imports what it needs::

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from _common import DOCS, hardware_line, provenance, timed, powerlaw_pu, md_table

A helper used by one script only stays in that script (or in a ``_<script>_*.py`` module beside
it, as ``speed/_ocmf_speed_*.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["ROOT", "BENCH", "DOCS", "RESULTS_DOCS", "RAW", "hardware", "hardware_line",
           "provenance", "stamp", "git_commit", "git_state", "timed", "best_of", "per_iteration",
           "powerlaw_pu", "md_table", "log", "fmt_s", "blas_limit", "random_graph",
           "dask_bytes_sent", "require", "load_data", "demo_table_rows", "Missing",
           "MISSING_EXIT"]

#: The repository (the folder holding ``fastpu/``, ``benchmarks/`` and ``docs/``).
ROOT = Path(__file__).resolve().parent.parent
#: This folder: what a child process puts on its ``sys.path`` to import this module.
BENCH = ROOT / "benchmarks"
#: Where the benchmark reports and their plots go (the pages of the Benchmarks section).
DOCS = ROOT / "docs" / "benchmarks"
#: Where the result tables included by docs/results.md go (``quality/results_*.py``).
RESULTS_DOCS = ROOT / "docs" / "results"
#: Raw measurements that scripts keep between runs and rebuild their reports from.
RAW = BENCH / "results"
#: The exit status of a script that stops because an optional package or data set is absent
#: (``EX_UNAVAILABLE`` of sysexits.h); its last line of standard error names what is missing.
MISSING_EXIT = 69


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _threading_layer():
    """numba's threading layer actually in use (runs one tiny parallel kernel to start it)."""
    import numba as nb

    @nb.njit(parallel=True)
    def _touch(x):
        for i in nb.prange(x.shape[0]):
            x[i] += 1.0

    _touch(np.zeros(4))
    try:
        return nb.threading_layer()
    except ValueError:
        return "unknown"


def hardware():
    """Dict describing the machine: CPU model, logical cores, cores usable, library versions."""
    import numba
    import scipy

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "numba": numba.__version__,
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "threading_layer": _threading_layer(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
    }


def hardware_line(hw=None):
    """One markdown line stating the hardware and software the numbers were measured on."""
    hw = hardware() if hw is None else hw
    return (f"**Hardware:** {hw['cpu']}, {hw['cores']} logical cores ({hw['usable_cores']} usable); "
            f"numba {hw['numba']} (threading layer `{hw['threading_layer']}`, "
            f"NUMBA_NUM_THREADS={hw['numba_threads']}); Python {hw['python']}, "
            f"numpy {hw['numpy']}, scipy {hw['scipy']}.")


def timed(fn, *args, **kwargs):
    """Call ``fn`` once; return (seconds, result)."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def best_of(fn, repeat=3, warmup=1, min_time=0.0):
    """Minimum wall time over ``repeat`` calls of ``fn()`` after ``warmup`` untimed calls.

    With ``min_time`` > 0, keeps calling (beyond ``repeat``) until that much time was spent,
    which steadies very short measurements.
    """
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeat or (time.perf_counter() - start) < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def per_iteration(history):
    """Per-iteration seconds from a fastpu history whose ``seconds`` are cumulative."""
    cum = np.array([h["seconds"] for h in history], dtype=np.float64)
    return np.diff(np.concatenate([[0.0], cum]))


def powerlaw_pu(m, n, nnz, *, exponent=0.7, user_exponent=0.5, seed=0):
    """Random binary users × items CSR with ``nnz`` positives and power-law popularity.

    Item j is drawn with probability ∝ (rank_j + 1)^(-exponent) (ranks are a random
    permutation of the items, so popular items are not all at low indices); users with
    ∝ (rank_i + 1)^(-user_exponent), so activity is skewed too but every row gets a share.
    Duplicate pairs are removed and topped up until exactly ``nnz`` distinct positives
    remain (requires nnz well below m·n). Deterministic for a given ``seed``.

    Returns
    -------
    scipy.sparse.csr_array, float64 ones, int64 sorted indices.
    """
    if nnz > 0.5 * m * n:
        raise ValueError(f"nnz={nnz} is too dense for a {m}×{n} PU matrix (at most half)")
    rng = np.random.default_rng(seed)

    def weights(size, a):
        w = (np.arange(size, dtype=np.float64) + 1.0) ** (-a)
        w = w[rng.permutation(size)]
        return np.cumsum(w / w.sum())

    cu, ci = weights(m, user_exponent), weights(n, exponent)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < nnz:
        want = int(1.1 * (nnz - keys.size)) + 16
        rows = np.minimum(np.searchsorted(cu, rng.random(want)), m - 1)
        cols = np.minimum(np.searchsorted(ci, rng.random(want)), n - 1)
        keys = np.union1d(keys, rows.astype(np.int64) * n + cols)
    if keys.size > nnz:
        keys = np.sort(rng.choice(keys, size=nnz, replace=False))
    rows, cols = keys // n, keys % n
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
    return sp.csr_array((np.ones(nnz), cols.astype(np.int64), indptr), shape=(m, n))


def export_fastpu(ref, dest):
    """Write the ``fastpu`` package as it was at git ``ref`` into the folder ``dest``."""
    root = Path(__file__).resolve().parent.parent
    arch = subprocess.run(["git", "-C", str(root), "archive", ref, "fastpu"],
                          check=True, capture_output=True).stdout
    os.makedirs(dest, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)
    return dest


def fastpu_tree(ref):
    """fastpu at ``ref`` exported once into a temp folder (reused by later runs)."""
    dest = Path(tempfile.gettempdir()) / f"fastpu_bench_old_{ref}"
    if not (dest / "fastpu" / "__init__.py").exists():
        export_fastpu(ref, dest)
    return dest


def numba_cache_for(tree):
    """A numba cache folder of its own for the fastpu copy in ``tree``, so that two versions of
    a kernel never evict each other from one cache."""
    return Path(tempfile.gettempdir()) / f"fastpu_bench_numba_{zlib.crc32(str(tree).encode()):08x}"


def run_in_fresh_process(code, tree):
    """Run the Python source ``code`` in a fresh interpreter whose numba cache is the folder
    of the fastpu copy in ``tree`` (:func:`numba_cache_for`); return the JSON its last line of
    output holds. ``code`` puts ``tree`` on its own ``sys.path`` (PYTHONPATH is cleared)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(numba_cache_for(tree)))
    env.pop("PYTHONPATH", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def pinned(fit, **defaults):
    """``fit`` with other keyword defaults: the library's defaults when a report was made.

    The defaults of fbgd, csrr and homf changed at commit 8c1461d. A report measured before
    that calls its fits through ``pinned(module.fit, <defaults then>)`` so that running its
    script again reproduces it; keywords the script passes still win.
    """
    def call(*args, **kwargs):
        return fit(*args, **{**defaults, **kwargs})
    return call


def md_table(headers, rows):
    """A markdown table from a header list and rows of already formatted cells."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def ocmf_setup(Y, *, X=None, Z=None, seed=0, **model):
    """ocmf's checked Y and built problem (its boundary, then its problem), for benchmarks that
    time the row sweeps themselves: returns (setup, canonical Y)."""
    from fastpu.ocmf import _check, _problem

    Yc = _check.check_y(Y, fit=False)
    kw = dict(loss="logistic", rho=0.01, p=None, q=None, a_bar=None, user_graph=None,
              item_graph=None, lam=1.0, lam_w=None, lam_h=None, lam_graph=0.0, negatives="full",
              neg_ratio=1.0, dense_limit=None)
    kw.update(model)
    m = _check.check_model(Yc.shape, user_features=X, item_features=Z, **kw)
    return _problem.build(Yc, m, np.random.default_rng(seed)), Yc


def cached_powerlaw(m, n, nnz, *, seed=0, folder=None):
    """:func:`powerlaw_pu` cached on disk (``$FASTPU_BENCH_CACHE``, else ``~/.cache/fastpu-bench``):
    the 20M-positive matrix of the ML-20M-scale benchmark takes a minute to draw."""
    import pathlib

    import scipy.sparse as sp

    folder = pathlib.Path(folder or os.environ.get("FASTPU_BENCH_CACHE")
                          or pathlib.Path.home() / ".cache" / "fastpu-bench")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"powerlaw-{m}x{n}-{nnz}-seed{seed}.npz"
    if path.exists():
        return sp.csr_array(sp.load_npz(path))
    Y = powerlaw_pu(m, n, nnz, seed=seed)
    tmp = path.with_suffix(".tmp.npz")
    sp.save_npz(tmp, sp.csr_matrix(Y), compressed=False)
    os.replace(tmp, path)
    return Y


def git_commit():
    """(short hash of the checkout's HEAD, whether fastpu/ has uncommitted changes), or
    (None, False) outside a git checkout: what a report says it measured."""
    root = str(ROOT)
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "fastpu"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None, False
    return head, bool(dirty)


def git_state():
    """``commit abc1234`` (with a note when fastpu/ has uncommitted changes), for a report's
    text; ``unknown commit`` outside a git checkout."""
    head, dirty = git_commit()
    if head is None:
        return "unknown commit"
    return f"commit {head}" + (" with uncommitted changes under fastpu/" if dirty else "")


def stamp():
    """(short commit, date) of this run, what :func:`provenance` states: a script that keeps
    raw measurements between runs saves it with them."""
    return git_commit()[0], time.strftime("%Y-%m-%d", time.gmtime())


def provenance(stamps=None):
    """The provenance line every report carries under its title: the commit measured and the
    date (UTC), e.g. ``*Provenance: measured at commit `abc1234` (2026-12-02).*``.

    ``stamps``: the (commit, date) pairs of the runs a report is rebuilt from (:func:`stamp`, as
    saved with their measurements), when they are not this run; a pair that is ``None`` or has
    no commit says the report rests on measurements whose commit was not recorded.
    """
    if stamps is None:
        head, dirty = git_commit()
        day = time.strftime("%Y-%m-%d", time.gmtime())
        what = f"commit `{head}`" if head else "an unknown commit (not a git checkout)"
        note = ", with uncommitted changes under fastpu/" if dirty else ""
        return f"*Provenance: measured at {what} ({day}){note}.*"
    stamps = list(stamps)
    known = [s for s in stamps if s and s[0]]
    if not known:
        return "*Provenance: the commit these measurements were taken on was not recorded.*"
    commits = list(dict.fromkeys(c for c, _ in known))
    days = sorted(d for _, d in known if d)
    when = f" ({days[0]}{' to ' + days[-1] if days[-1] != days[0] else ''})" if days else ""
    what = ("commit " if len(commits) == 1 else "commits ") + ", ".join(f"`{c}`" for c in commits)
    note = "; some measurements' commits were not recorded" if len(known) < len(stamps) else ""
    return f"*Provenance: measured at {what}{when}{note}.*"


def demo_table_rows(stdout):
    """The rows of the metrics table ``fastpu demo`` prints: the paragraph of its output that
    starts with the table's header, without the header and its rule (the legend that follows
    the table is another paragraph). Empty when the output holds no table."""
    table = next((c for c in stdout.split("\n\n") if c.startswith("method")), "")
    return [ln for ln in table.splitlines()[2:] if ln.strip()]


def log(msg):
    """Print ``msg`` with the time of day, flushed (progress of a long run)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fmt_s(t):
    """Seconds as ``12.3 ms`` below one second, else ``1.23 s``."""
    return f"{t * 1e3:.1f} ms" if t < 1.0 else f"{t:.2f} s"


@contextlib.contextmanager
def blas_limit(n):
    """Limit BLAS (numpy's OpenBLAS/MKL) to ``n`` threads in the block; ``None``: leave as is."""
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(n, "blas"):
        yield


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


def dask_bytes_sent(client):
    """Σ over the workers of a Dask ``client`` of the bytes in their transfer_outgoing_log
    (since each worker started)."""
    logs = client.run(lambda dask_worker: [d["total"] for d in dask_worker.transfer_outgoing_log])
    return int(sum(sum(v) for v in logs.values()))


class Missing(SystemExit):
    """A script stops because an optional package or data set is absent: the message (on
    standard error, beginning ``missing:``) names it and how to get it; the exit status is
    :data:`MISSING_EXIT`, so that a caller tells it from a crash."""

    def __init__(self, what):
        print(f"missing: {what}", file=sys.stderr, flush=True)
        super().__init__(MISSING_EXIT)


def require(module, *, purpose, extra="bench"):
    """Import and return the optional package ``module``, or stop with :class:`Missing` naming
    it, what it is needed for (``purpose``) and the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        how = f"pip install -e '.[{extra}]'" if extra else f"pip install {module.split('.')[0]}"
        raise Missing(f"the optional package {module.split('.')[0]!r}, needed for {purpose} "
                      f"({how})") from None


def load_data(name, **kwargs):
    """``fastpu.datasets.load(name)``, or stop with :class:`Missing` naming the data set and
    how to get it when it is not on this machine (``kwargs`` go to ``binarize`` when given)."""
    import fastpu as fp

    try:
        data = fp.datasets.load(name)
    except fp.datasets.DataUnavailable as exc:
        raise Missing(f"the data set {name!r}: {exc}") from None
    return fp.datasets.binarize(data, **kwargs) if kwargs else data


def rss_mib():
    """This process's resident set, MiB (``/proc/self/statm``)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def hwm_mib():
    """This process's peak resident set since the last reset, MiB (``VmHWM``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


class PeakMemory:
    """The memory of this process while a ``with`` block runs, MiB: ``before`` (resident set at
    entry), ``sampled`` (the largest resident set seen by a 1 ms sampler thread), ``hwm``
    (``VmHWM`` after resetting it at entry; NaN where the kernel refuses the reset) and
    ``after`` (resident set at exit)."""

    def __enter__(self):
        self.sampled = 0.0
        self._stop = threading.Event()
        self.before = rss_mib()
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self._hwm_ok = True
        except OSError:
            self._hwm_ok = False
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.sampled = max(self.sampled, rss_mib())
            time.sleep(0.001)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.after = rss_mib()
        self.hwm = hwm_mib() if self._hwm_ok else float("nan")
        return False
