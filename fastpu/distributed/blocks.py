"""Block layout of a distributed fit: the data split into row blocks of Y and of Yᵀ, kept on workers.

A fit on ``n_blocks`` blocks cuts the users into ``n_blocks`` contiguous ranges (row blocks of Y)
and the items into ``n_blocks`` contiguous ranges (row blocks of Yᵀ, i.e. column blocks of Y).
Each block is built once by a Dask task and stays in its worker's memory for the whole fit; every
later task of the fit takes the block as an argument, so the scheduler runs it where the block is
and only factors and small partial sums move.

How a block survives the death of its worker: the task that builds it is a pure function of its
source, and the source is part of the task graph — the block's slice of the client's CSR (embedded
in the task) or, for a ``dask.dataframe`` input, the partitions it was shuffled from (their
``read_parquet`` tasks). Dask recomputes a lost block from that source, so a fit that loses a
worker goes on with the same data.

Nothing here validates the fit's parameters; ``fastpu.distributed.fit`` does that first.
"""

from __future__ import annotations

import dataclasses
import uuid
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from fastpu._core import validation as V
from fastpu._kernels.csr import csr_dense, weighted_gram

INDEX = np.int64
VALUE = np.float64


@dataclasses.dataclass
class CSRBlock:
    """Rows ``lo:hi`` of a sparse matrix (Y for a user block, Yᵀ for an item block).

    ``indptr`` is local (starts at 0), ``indices`` are global ids of the other side, sorted and
    unique within a row; ``data`` are the stored values.
    """

    lo: int
    hi: int
    n_cols: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def n_rows(self):
        return self.hi - self.lo

    @property
    def nnz(self):
        return int(self.indices.size)

    def rows(self):
        """The global row id of every stored entry."""
        return self.lo + np.repeat(np.arange(self.n_rows, dtype=INDEX), np.diff(self.indptr))


def gram(F, w, k):
    """(Fᵀ diag(w) F, Fᵀ w) of a block's rows (zeros for a block without rows): the k×k partials."""
    G, g = np.zeros((k, k)), np.zeros(k)
    if F.shape[0]:
        weighted_gram(F, w, G, g)
    return G, g


def sparse_times(S, B):
    """S @ B for a CSR block S and a dense B, as a new C-ordered array (empty S: no kernel call)."""
    out = np.empty((S.shape[0], B.shape[1]))
    if S.shape[0]:
        csr_dense(S.indptr, S.indices, S.data, B, out)
    return out


def bounds(n, n_blocks, align=1):
    """``n_blocks + 1`` cut points of ``range(n)`` into near-equal contiguous ranges (some may be
    empty); with ``align`` > 1 every inner cut is rounded to a multiple of ``align``."""
    cuts = np.linspace(0, n, n_blocks + 1) / align
    cuts = np.minimum(cuts.round() * align, n)
    cuts[-1] = n
    return cuts.astype(INDEX)


def block_from_csr(lo, hi, n_cols, indptr, indices, data):
    """A :class:`CSRBlock` from the CSR slice of rows lo:hi (``indptr`` already local)."""
    return CSRBlock(int(lo), int(hi), int(n_cols), np.ascontiguousarray(indptr, dtype=INDEX),
                    np.ascontiguousarray(indices, dtype=INDEX), np.ascontiguousarray(data, dtype=VALUE))


def slice_csr(Y, lo, hi):
    """The arrays of rows lo:hi of a canonical CSR, with a local ``indptr`` (copies)."""
    a, b = int(Y.indptr[lo]), int(Y.indptr[hi])
    return (Y.indptr[lo:hi + 1] - a).astype(INDEX), Y.indices[a:b].copy(), Y.data[a:b].copy()


def block_from_pairs(lo, hi, n_cols, *pieces):
    """A :class:`CSRBlock` of rows lo:hi from (row, col, value) pieces; duplicates are summed."""
    if pieces:
        r = np.concatenate([p[0] for p in pieces]).astype(INDEX, copy=False)
        c = np.concatenate([p[1] for p in pieces]).astype(INDEX, copy=False)
        v = np.concatenate([p[2] for p in pieces]).astype(VALUE, copy=False)
    else:
        r = c = np.empty(0, dtype=INDEX)
        v = np.empty(0, dtype=VALUE)
    A = sp.csr_array((v, (r - lo, c)), shape=(hi - lo, n_cols))
    A.sum_duplicates()
    A.sort_indices()
    return block_from_csr(lo, hi, n_cols, A.indptr, A.indices, A.data)


# ----------------------------------------------------------------------------------------------
# Placement
# ----------------------------------------------------------------------------------------------

#: seconds to wait for a first worker to connect (a cluster that was just started)
WORKER_WAIT = 60.0


def worker_addresses(client):
    """The addresses of the cluster's workers, sorted (a fixed round-robin order for the blocks).

    A cluster whose workers are still starting (processes that import numpy, scipy and numba)
    is given up to :data:`WORKER_WAIT` seconds for a first worker to connect.
    """
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT)
        except Exception:                 # dask's TimeoutError (its type moved between versions)
            pass
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        raise RuntimeError(f"the Dask cluster has no workers (none connected within "
                           f"{WORKER_WAIT:g} s); start at least one `dask worker` connected to "
                           "the scheduler")
    return workers


def home(workers, b):
    """The worker a block is first placed on (round robin); Dask may move it if that worker dies."""
    return workers[b % len(workers)]


class Layout:
    """Row blocks of Y and of Yᵀ as futures held on the workers.

    ``user[b]`` holds rows ``ub[b]:ub[b+1]`` of Y, ``item[b]`` rows ``ib[b]:ib[b+1]`` of Yᵀ.
    """

    def __init__(self, shape, ub, ib, user, item, workers):
        self.shape = shape
        self.ub, self.ib = ub, ib
        self.user, self.item = user, item
        self.workers = workers

    @property
    def n_blocks(self):
        return len(self.user)

    def release(self):
        for f in self.user + self.item:
            f.release()


def layout_from_csr(client, Y, n_blocks, workers, align=1):
    """Split a canonical CSR into user and item blocks, each built once on its worker (cuts at
    multiples of ``align`` rows, :func:`bounds`)."""
    m, n = Y.shape
    YT = V.transpose_csr(Y)
    ub, ib = bounds(m, n_blocks, align), bounds(n, n_blocks, align)
    user: list[Any] = []
    item: list[Any] = []
    with warnings.catch_warnings():
        # the slices are meant to be in the graph (see above): Dask's large-graph hint does not apply
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        _submit_blocks(client, Y, YT, ub, ib, m, n, n_blocks, workers, user, item)
    settle(client, user + item)
    return Layout((m, n), ub, ib, user, item, workers)


def _submit_blocks(client, Y, YT, ub, ib, m, n, n_blocks, workers, user, item):
    for b in range(n_blocks):
        for (A, cuts, ncols, out, tag) in ((Y, ub, n, user, "Y"), (YT, ib, m, item, "YT")):
            lo, hi = int(cuts[b]), int(cuts[b + 1])
            # the slice is an argument of the task: it is the block's source in the graph,
            # so Dask can rebuild the block if its worker dies
            out.append(client.submit(block_from_csr, lo, hi, ncols, *slice_csr(A, lo, hi),
                                     key=f"fastpu-block-{tag}-{b}-{token()}",
                                     workers=[home(workers, b)], allow_other_workers=True))


def concat(*parts):
    return np.concatenate(parts, axis=0)


def drop_first(result):
    """Everything but the rows (the small sums the client needs)."""
    return result[1:]


def first(result):
    """The rows of a block's result (its first element), or the result itself if it is an array."""
    return result[0] if isinstance(result, (tuple, list)) else result


def token():
    """A fresh key suffix (the fit's own tasks never share keys with another fit's)."""
    return uuid.uuid4().hex



def held(value):
    """The identity: a task that returns data of the client's task graph (see :func:`hold`)."""
    return value


def hold(client, value, b, workers, tag="held"):
    """A future of ``value`` (data the client owns), placed first on block b's worker.

    The value is an argument of the task that produces it, so it is part of the task graph:
    if every worker holding the result dies, the scheduler runs the task again and the value is
    sent again. (``client.scatter`` data has no such source: Dask's active memory manager keeps
    one copy of it, and when that copy's worker dies the data is gone.)
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        warnings.filterwarnings("ignore", message="Large object", category=UserWarning)
        return client.submit(held, value, key=f"fastpu-{tag}-{b}-{token()}",
                             workers=[home(workers, b)], allow_other_workers=True)


def hold_slices(client, A, cuts, workers, tag="held", places=None):
    """Rows ``cuts[b]:cuts[b+1]`` of A (copies), one :func:`hold` per slice, placed (see
    :func:`settle`) on block b's worker, or on block ``places[b]``'s when given."""
    out = [hold(client, np.array(A[int(cuts[b]):int(cuts[b + 1])]),
                b if places is None else places[b], workers, tag)
           for b in range(cuts.size - 1)]
    settle(client, out)
    return out


def settle(client, futures):
    """Wait for tasks without dependencies (the roots: data of the graph) to be placed on the
    workers their restrictions name, then lift the restrictions.

    The restrictions only place the first run. Should every worker die at once, a root must be
    free to run again on whatever worker comes back: the scheduler does not fall back to other
    workers (``allow_other_workers``) for a task that became ready while no worker was
    connected, and that task would wait forever.
    """
    if not futures:
        return
    from dask.distributed import wait

    wait(futures)
    client.sync(client.scheduler.set_restrictions, worker={f.key: None for f in futures})


def gather_rows(client, sources, workers):
    """The whole factor matrix from its blocks' sources (rows, or results whose first element is
    the rows), stacked on the client: the end of a fit."""
    parts = client.gather([client.submit(first, s, workers=[home(workers, b)],
                                         allow_other_workers=True)
                           for b, s in enumerate(sources)])
    return np.concatenate(parts, axis=0)


# ----------------------------------------------------------------------------------------------
# A dask.dataframe of (user, item[, value]) pairs
# ----------------------------------------------------------------------------------------------

def check_pairs(client, ddf, shape):
    """Check the columns and ids of a pairs dataframe (one small reduction); return (m, n)."""
    cols = [str(c) for c in ddf.columns]
    missing = [c for c in ("user", "item") if c not in cols]
    if missing:
        raise ValueError(
            f"Y (a dask dataframe of pairs) has columns {cols}; expected integer columns "
            f"'user' and 'item' and an optional numeric 'value' (missing {missing}); "
            "rename them, e.g. ddf.rename(columns={...})"
        )
    for c in ("user", "item"):
        kind = np.dtype(ddf[c].dtype).kind if _is_numpy_dtype(ddf[c].dtype) else "O"
        if kind not in "iu":
            raise TypeError(f"Y's column '{c}' must hold integer ids (0-based row/column "
                            f"positions), got dtype {ddf[c].dtype}; map the ids to 0..n-1 first")
    if "value" in cols:
        kind = np.dtype(ddf["value"].dtype).kind if _is_numpy_dtype(ddf["value"].dtype) else "O"
        if kind not in "iuf":
            raise TypeError(f"Y's column 'value' must be numeric, got dtype {ddf['value'].dtype}")
    stats = client.compute([ddf["user"].min(), ddf["item"].min(), ddf["user"].max(),
                            ddf["item"].max(), ddf["user"].count()], sync=True)
    umin, imin, umax, imax, count = (_int_or_none(s) for s in stats)
    if not count:                  # the same refusal as V.check_trainable for a sparse Y
        raise ValueError(f"Y (a dask dataframe of pairs) is empty (shape={shape}) and has no "
                         "positive entries; expected at least one positive (a user, item pair) "
                         "to fit a model")
    for c, lo in (("user", umin), ("item", imin)):
        if lo < 0:
            raise ValueError(f"Y's column '{c}' has negative ids (min {lo}); expected ids in "
                             "0..n-1 (row/column positions)")
    if shape is None:
        return umax + 1, imax + 1
    if not (isinstance(shape, tuple) and len(shape) == 2):
        raise TypeError(f"shape must be a tuple (m, n), got {shape!r}")
    m = V.check_int(shape[0], name="shape[0]", minimum=1)
    n = V.check_int(shape[1], name="shape[1]", minimum=1)
    if umax >= m or imax >= n:
        raise ValueError(f"Y has ids up to user {umax}, item {imax}, outside shape={shape}; "
                         "pass a larger shape or leave shape=None")
    return m, n


def _is_numpy_dtype(dt):
    try:
        np.dtype(dt)
        return True
    except TypeError:
        return False


def _int_or_none(v):
    return None if v is None or np.isnan(v) else int(v)


def split_partition(df, ub, ib):
    """Cut one partition into pieces per user block (user, item, value) and per item block
    (item, user, value)."""
    u = df["user"].to_numpy(dtype=INDEX)
    i = df["item"].to_numpy(dtype=INDEX)
    v = df["value"].to_numpy(dtype=VALUE) if "value" in df.columns else np.ones(u.size)
    bad = v.size - int(np.isfinite(v).sum())
    if bad:
        raise ValueError(f"Y's column 'value' has {bad} non-finite (NaN or inf) values in a "
                         "partition; expected finite non-negative weights")
    if v.size and v.min() < 0:
        raise ValueError(f"Y's column 'value' has negative values (min {v.min():g}); expected "
                         "non-negative weights (stored entries are positives)")
    rows, cols = [], []
    bu = np.searchsorted(ub, u, side="right") - 1
    bi = np.searchsorted(ib, i, side="right") - 1
    for b in range(ub.size - 1):
        s = bu == b
        rows.append((u[s], i[s], v[s]))
        s = bi == b
        cols.append((i[s], u[s], v[s]))
    return rows, cols


def _piece(split, side, b):
    return split[side][b]


def layout_from_pairs(client, ddf, shape, n_blocks, workers, align=1):
    """Shuffle the partitions into user and item blocks on the workers (never via the client).

    One task per partition cuts it into pieces per block (no placement: they run where the
    partitions are read); one task per block, placed on its worker, concatenates its pieces.
    Cuts at multiples of ``align`` rows (:func:`bounds`).
    """
    import dask

    m, n = check_pairs(client, ddf, shape)
    ub, ib = bounds(m, n_blocks, align), bounds(n, n_blocks, align)
    split = client.compute([dask.delayed(split_partition, pure=True)(p, ub, ib)
                            for p in ddf.to_delayed()])
    user: list[Any] = []
    item: list[Any] = []
    for b in range(n_blocks):
        for side, cuts, ncols, out in ((0, ub, n, user), (1, ib, m, item)):
            pieces = [client.submit(_piece, s, side, b) for s in split]
            out.append(client.submit(block_from_pairs, int(cuts[b]), int(cuts[b + 1]), ncols,
                                     *pieces, workers=[home(workers, b)],
                                     allow_other_workers=True))
    return Layout((m, n), ub, ib, user, item, workers)
