"""The methods on a Dask cluster (``dask.distributed``): same math, data kept on the workers.

Every supported method reduces to work over row blocks of Y (and of Yᵀ) plus small k×k
reductions. :func:`fit` splits the data into blocks, builds each block once on a worker, and then
per half-step runs one task per block (the same numba kernels as the single-machine fit), sends
each block only the other side's factor rows its positives touch (:mod:`.routing`, worker to
worker) and sums the blocks' k×k partials on the client. See docs/distributed.md for the
layout, what travels per iteration, and how to start a cluster. Install with the
``fastpu[dask]`` extra.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import inspect
import os
from typing import Any

import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._core.dataset import Dataset
from fastpu._core.hints import Sparse, Threads
from fastpu._core.factorization import Factorization, with_positives
from fastpu._core import registry
from fastpu.distributed import blocks as _blocks

__all__ = ["fit", "METHODS"]

def _methods() -> dict[str, str]:
    """The methods (and their variants) that have a distributed form: each method's Dask form
    lives in its package (``fastpu.<method>._dask``), found through the registry, which says
    what it covers. Built on first use: a Dask form imports this package's block machinery."""
    return {e.name: e.resolve("dask").SUMMARY for e in registry.entries("method")
            if e.dask is not None}


def __getattr__(name: str) -> Any:
    if name == "METHODS":       # METHODS: {method: what has a distributed form}
        return _methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def fit(Y: Sparse | Dataset, k: int, *, method: str = "ocmf", client: Any = None,
        n_workers: int | None = None, n_blocks: int | None = None,
        shape: tuple[int, int] | None = None, n_threads: Threads = None,
        grid: tuple[int, int] | None = None, **params: Any) -> Factorization:
    """Fit a method on a Dask cluster; the same model the single-machine ``fit`` returns.

    Parameters
    ----------
    Y : scipy.sparse matrix, Dataset or dask.dataframe.DataFrame
        The positives. A sparse matrix (or a :class:`fastpu.datasets.Dataset`) is cut into
        blocks on the client and each block is sent to a worker once. A dask dataframe of
        pairs with integer columns ``user``, ``item`` and an optional ``value`` (the weight,
        default 1; duplicates are summed) is shuffled into blocks on the workers: the data
        never passes through the client.
    k : int
        Rank.
    method : {"ocmf", "fbgd", "csrr", "homf"}
        The same defaults as ``fastpu.<method>.fit``: with no other argument the call fits the
        single-machine default's model, or refuses in a sentence that names what to pass.
        ``"ocmf"``: its row-separable fast path, and user/item features and graphs solved by
        TRON driven from the client (``negatives="full"``, ``solver="tron"``).
        ``"fbgd"``: plain MF with ``update="coordinate"`` (the default) or ``"batch"``;
        features and biases with ``update="batch"``. ``"homf"``: ``mode="exact"`` (the
        default) and ``mode="dense"``, from a sparse ``Y`` only. ``"csrr"``: CSRR-e
        (``variant="e"``, the default, with ``n_inner=1``).
    client : dask.distributed.Client, str or None
        A client; an address string (``"tcp://host:8786"``) to connect to a running scheduler;
        or None to start a ``LocalCluster`` of single-thread worker processes (``n_workers``,
        default one per core). A client or cluster started here is closed before returning.
    n_workers : int, optional
        Worker processes of the local cluster started when ``client`` is None.
    n_blocks : int, optional
        Number of row blocks of Y and of Yᵀ (default: the number of workers).
    shape : tuple (m, n), optional
        Matrix shape of a pairs input (default: the largest ids + 1).
    grid : tuple (p, q), optional
        ``method="ocmf"`` (its row-separable fast path) on a two-dimensional grid instead of
        row blocks: Y is cut into p user ranges × q item ranges, one cell per task, so a task
        holds at most n/q item rows (user half-step) or m/p user rows (item half-step) whatever
        the pattern, at the price of summing each row's solve over the q (or p) cells of its
        range, a round of tasks per CG step (docs/distributed.md, "The 2-D block grid"). The
        model is the row-block fit's to rounding (1e-15 to 1e-11 relative measured in
        float64; float32 to its rounding). Needs a sparse ``Y``; not with ``n_blocks``.
    n_threads : int, optional
        Numba threads per task on the workers (default: 1 on the local cluster started here, else
        the workers' own ``NUMBA_NUM_THREADS``). Set a worker's thread count in the environment
        of the ``dask worker`` command, not in a nanny's ``env=``: numba re-reads the environment
        when it compiles and refuses a count that changed after its threads started.
    **params
        The method's parameters, as for ``fastpu.<method>.fit`` (``n_iter``, ``seed``,
        ``callback``, ``verbose``, ...). A callback's ``info["model"]()`` is the model at that
        iteration, as on one machine; it gathers the factors from the workers when called.

    Returns
    -------
    Factorization
        As from ``fastpu.<method>.fit``; ``params["distributed"]`` records the blocks and workers.
        A sparse ``Y``'s positives are recorded as ``seen`` (what :func:`fastpu.recommend`
        leaves out); a dask dataframe of pairs stays on the workers, so that model records
        none (pass the positives to ``recommend`` as ``Y_seen``).

    Raises
    ------
    ValueError, TypeError
        An unknown method or a variant with no distributed form (the message names the
        single-machine function to use); a pairs dataframe with missing columns, non-integer or
        negative ids, or ids outside ``shape``; a ``Y`` with no row or no column, or with no
        positive (an empty dataframe, or a sparse Y with no stored nonzero value); a ``grid``
        that is not a pair of ints from 1 to Y's rows and columns, or with another method
        than ``"ocmf"``, features or graphs, a pairs input or ``n_blocks``; any error the
        method's own checks raise.
    RuntimeError
        If the scheduler lost data it cannot recompute (every input of a fit is data of the task
        graph or the output of a task, so a lost worker, or every worker at once, is recovered
        and gives the same model; this is the message should the scheduler itself forget).

    Examples
    --------
    >>> import fastpu as fp
    >>> from fastpu import distributed
    >>> data = fp.datasets.synthetic(60, 40, rank=3, density=0.1, seed=0)
    >>> distributed.fit(data.Y, 4, method="nmf")
    Traceback (most recent call last):
    ...
    ValueError: method must be one of ['ocmf', 'fbgd', 'csrr', 'homf'], got 'nmf'

    With a cluster (not run here)::

        from dask.distributed import Client
        client = Client("tcp://scheduler:8786")
        model = distributed.fit(Y, 64, method="ocmf", client=client, loss="square", n_iter=10)
    """
    _check_method(method, params)
    ids = None
    if isinstance(Y, Dataset):
        ids = (Y.user_ids, Y.item_ids)
        Y = Y.Y
    pairs = _is_dask_dataframe(Y)
    driver = _driver(method)
    params = _with_defaults(method, driver, params)
    if not pairs:
        # the method says whether a stored value may be negative (HOMF's g="exp" reads it as
        # the argument of an edge weight), as its single-machine fit does
        negative_ok = getattr(driver, "values_may_be_negative", lambda p: False)(params)
        Y = V.check_trainable(V.check_csr(Y, name="Y", nonnegative=not negative_ok))
        if shape is not None:
            raise TypeError("shape= is only for a dask dataframe of pairs; a sparse Y has its own shape")
    if n_blocks is not None:
        n_blocks = V.check_int(n_blocks, name="n_blocks", minimum=1)
    if grid is not None:
        _check_grid_call(method, driver, pairs, n_blocks)
    if n_workers is not None:
        n_workers = V.check_int(n_workers, name="n_workers", minimum=1)
        if client is not None:
            raise ValueError("n_workers starts a local cluster; it cannot be combined with client="
                             f"{client!r} (size that cluster where it is started instead)")
    whole = getattr(driver, "WHOLE_MATRIX", None)      # why the fit needs the whole matrix
    if pairs and whole:
        others = [m for m in _methods() if not getattr(_driver(m), "WHOLE_MATRIX", None)]
        raise TypeError(f"{whole}; pass Y as a scipy.sparse matrix (a dask dataframe of pairs is "
                        f"for {', '.join(others)})")
    if client is None and n_threads is None:
        n_threads = 1           # the local cluster has one single-thread worker process per core
    if "verbose" in params:        # the method's other checks run on the client, after the start
        params["verbose"] = V.check_verbose(params["verbose"])
    with _client(client, n_workers) as c, _lost_data_is_an_error():
        workers = _blocks.worker_addresses(c)
        nb = n_blocks if n_blocks is not None else len(workers)
        # rows per unit of the blocks' cuts (ocmf in the eigenbasis: see its row_align)
        align = getattr(driver, "row_align", lambda k, params: 1)(k, params)
        if grid is not None:
            model = driver.fit_grid(c, Y, workers, grid, k, n_threads=n_threads, **params)
        elif whole:
            model = driver.fit(c, Y, workers, nb, k, n_threads=n_threads, **params)
        elif pairs:
            layout = _blocks.layout_from_pairs(c, Y, shape, nb, workers, align)
            model = _fit_on_layout(c, layout, driver, k, n_threads, params)
        else:
            layout = _blocks.layout_from_csr(c, Y, nb, workers, align)
            model = _fit_on_layout(c, layout, driver, k, n_threads, params)
    if not pairs:                 # the training positives, as the single-machine fit records them
        model = with_positives(model, Y)
    if ids is not None:
        model = dataclasses.replace(model, user_ids=ids[0], item_ids=ids[1])
    return model


def _check_grid_call(method, driver, pairs, n_blocks):
    """Refuse, in a sentence, a ``grid=`` the call cannot run."""
    if not hasattr(driver, "fit_grid"):
        raise ValueError(f"grid= runs method='ocmf' (its row-separable fast path); "
                         f"method={method!r} runs on row blocks: drop grid= (n_blocks= sets "
                         "the number of blocks)")
    if pairs:
        raise TypeError("grid= needs Y as a scipy.sparse matrix (the cells are cut on the "
                        "client); a dask dataframe of pairs runs on row blocks: drop grid=")
    if n_blocks is not None:
        raise ValueError(f"grid= and n_blocks={n_blocks} both set the layout; pass one of them")


@contextlib.contextmanager
def _lost_data_is_an_error():
    """Turn Dask's "lost dependencies" into a message that says what happened and what to do."""
    try:
        yield
    except concurrent.futures.CancelledError as exc:     # Dask's FutureCancelledError (>= 2024.x)
        raise RuntimeError(
            "fastpu.distributed.fit stopped: the cluster lost data Dask cannot recompute (every "
            "input of the fit is data of the task graph or a task's output, so this means the "
            "scheduler itself lost track of it, e.g. it was restarted). No model is returned; run "
            "the fit again on the restored cluster (the same seed gives the same model). Dask "
            f"said: {exc}"
        ) from exc


def _fit_on_layout(client, layout, driver, k, n_threads, params):
    try:
        return driver.fit(client, layout, k, n_threads=n_threads, **params)
    finally:
        layout.release()


def _driver(method):
    """The method's Dask form (its module ``fastpu.<method>._dask``)."""
    return registry.get(method).resolve("dask")


def _with_defaults(method, driver, params):
    """``params`` completed with ``fastpu.<method>.fit``'s defaults (the driver's own
    ``DEFAULTS`` aside) for every keyword the distributed fit takes and was not given.

    The drivers spell out no default of their own, so the two fits cannot drift apart: a
    keyword a driver takes that the single-machine fit has no default for is a TypeError here.
    """
    single = inspect.signature(registry.get(method).resolve("fit")).parameters
    own = getattr(driver, "DEFAULTS", {})
    out = dict(params)
    for name, par in inspect.signature(driver.fit).parameters.items():
        if par.kind is not par.KEYWORD_ONLY or name in out or name == "n_threads":
            continue
        if name in own:
            out[name] = own[name]
        elif name in single and single[name].default is not inspect.Parameter.empty:
            out[name] = single[name].default
        else:
            raise TypeError(f"fastpu.distributed.{method} takes {name!r}, which fastpu.{method}.fit "
                            "gives no default")
    return out


def _check_method(method, params):
    methods = _methods()
    if not isinstance(method, str) or method not in methods:
        raise ValueError(f"method must be one of {list(methods)}, got {method!r}")
    _driver(method).check(params)


def _is_dask_dataframe(Y):
    if sp.issparse(Y):
        return False
    mod = type(Y).__module__ or ""
    return mod.startswith("dask") and hasattr(Y, "to_delayed") and hasattr(Y, "columns")


@contextlib.contextmanager
def _client(client, n_workers=None):
    """Yield a Client: the given one, one connected to an address, or a new LocalCluster's."""
    from dask.distributed import Client, LocalCluster

    if isinstance(client, Client):
        yield client
        return
    if isinstance(client, str):
        with Client(client) as c:
            yield c
        return
    if client is not None:
        raise TypeError(f"client must be a dask.distributed.Client, an address string or None, "
                        f"got {type(client).__name__}")
    n = n_workers or os.cpu_count() or 1
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        yield c
