"""Shared helpers for fastpu's benchmark scripts: hardware line, timing, random PU matrices.

Kept small and stable so that every ``benchmarks/bench_*.py`` can import it::

    from _common import hardware, hardware_line, timed, best_of, powerlaw_pu, md_table

(the scripts run as ``python benchmarks/bench_<module>.py``, so this directory is on
``sys.path``).
"""

from __future__ import annotations

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

__all__ = ["hardware", "hardware_line", "timed", "best_of", "per_iteration", "powerlaw_pu",
           "md_table"]


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

    Issue 14 re-chose several defaults (fbgd, csrr, homf; commit 8c1461d). A report made
    before that calls its fits through ``pinned(module.fit, <old defaults>)`` so that running
    its script again reproduces it; keywords the script passes still win.
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
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "fastpu"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None, False
    return head, bool(dirty)


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
