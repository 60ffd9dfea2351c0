"""Compile kernels ahead of the fits that need them, in spawned processes that fill the cache.

numba compiles a kernel on its first call and caches it (fastpu/_core/cache.py); later processes
load the cache. A compile uses one core, so on a machine with a second core another process can
compile the kernels that later fits will need while this one trains: its cache files are
loaded by this process's first call of those kernels if they are there by then (otherwise this
process compiles them itself, and nothing is lost but the other process's work).

* ``fastpu demo`` starts one such process (:func:`start_background`) that runs each demo
  configuration for one iteration, in the reverse of the demo's order, while the demo trains
  from the front.
* ``fastpu warmup`` (:func:`warm`) compiles, once per machine and installation, the kernels of
  each method's demo configurations and default fit, and of fold-in and ``recommend`` on the
  default fit's model, split over a few processes.

Timings in docs/benchmarks/bench_perf_firstrun.md.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any, Sequence

from fastpu._core import registry

__all__ = ["jobs", "run_jobs", "start_background", "warm"]

METHODS = registry.names("method")


def jobs(methods: Sequence[str] = METHODS) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, label, fit kwargs) of each method's demo configurations and default fit."""
    out = []
    for method in methods:
        configs: list[tuple[str, dict[str, Any], str]] = registry.get(method).resolve("demo")()
        for label, kwargs, _ in [*configs, (f"{method} default", {"k": 8}, "")]:
            out.append((method, label, dict(kwargs)))
    return out


def run_jobs(job_list: Sequence[tuple[str, str, dict[str, Any]]], Y: Any,
             Y_test: Any = None, n_threads: int = 1) -> list[tuple[str, float]]:
    """Fit each job for one iteration on ``Y`` (and evaluate on ``Y_test`` if given).

    One iteration calls every kernel a fit calls, with the argument types the data gives, so
    they are compiled (or loaded) and cached. Returns (label, seconds) per job.
    """
    from fastpu._core.threads import limit_threads

    done = []
    with limit_threads(n_threads):
        for method, label, kwargs in job_list:
            fit = registry.get(method).resolve("fit")
            t0 = time.perf_counter()
            model = fit(Y, **dict(kwargs, n_iter=1), seed=0)
            if Y_test is not None:
                from fastpu.model_selection.metrics import evaluate

                evaluate(model, Y, Y_test, k=(5, 10))
                if label.endswith(" default"):
                    _serve(model, Y)
            done.append((label, time.perf_counter() - t0))
    return done


def _serve(model: Any, Y: Any) -> None:
    """Fold two rows into ``model`` and recommend for a user: fold-in's row solver runs in
    float64 whatever the model's dtype, so its kernels are compiled apart from the fit's (a
    first ``fold_in`` took about 19 s in an empty cache)."""
    from fastpu.model import fold_in, recommend

    rows = Y[:2]
    try:
        fold_in(model, rows)
    except ValueError:                # a variant without fold-in (CSRR-I/II): nothing to compile
        pass
    recommend(model, Y, users=[0], n=5)


def _child(job_list: Sequence[tuple[str, str, dict[str, Any]]], Y: Any, Y_test: Any) -> None:
    import warnings

    warnings.simplefilter("ignore")          # one-iteration fits warn about convergence
    run_jobs(job_list, Y, Y_test)


def start_background(job_list: Sequence[tuple[str, str, dict[str, Any]]], Y: Any,
                     Y_test: Any = None) -> multiprocessing.process.BaseProcess | None:
    """Start a spawned daemon process running :func:`run_jobs` on one thread; None if it cannot.

    The caller should ``terminate()`` it when its own work is done (its finished cache entries
    stay; numba writes each one to a temporary file and renames it into place).
    """
    try:
        ctx = multiprocessing.get_context("spawn")   # a forked child cannot run numba's threads
        proc = ctx.Process(target=_child, args=(list(job_list), Y, Y_test), daemon=True,
                           name="fastpu-warmup")
        proc.start()
    except (OSError, RuntimeError):
        return None
    return proc


def warm(methods: Sequence[str] = METHODS, processes: int = 2,
         m: int = 300, n: int = 200) -> float:
    """Compile (or load) the kernels of ``methods``' demo and default fits; return the seconds.

    The jobs are dealt round-robin to ``processes`` spawned processes that fit each for one
    iteration on a small synthetic matrix, so each kernel is compiled by one of them and
    cached for every later process.
    """
    from fastpu.datasets import synthetic
    from fastpu.model_selection.split import holdout

    t0 = time.perf_counter()
    Y = synthetic(m, n, rank=4, density=0.08, seed=0).Y
    Y_train, Y_test = holdout(Y, test_frac=0.2, seed=0)
    job_list = jobs(methods)
    processes = max(1, min(int(processes), len(job_list)))
    if processes == 1:
        _child(job_list, Y_train, Y_test)
        return time.perf_counter() - t0
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_child, args=(job_list[i::processes], Y_train, Y_test),
                         name=f"fastpu-warmup-{i}") for i in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [p.name for p in procs if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"fastpu warmup: {', '.join(failed)} failed (exit codes "
                           f"{[p.exitcode for p in procs]}); run the fits to see the error")
    return time.perf_counter() - t0
