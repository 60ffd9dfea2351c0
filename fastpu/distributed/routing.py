"""Routed factor rows: each block receives only the other side's rows that its positives touch.

A row's update reads the other side's rows of its own positives (and k×k sums, which are
reductions). The sparsity pattern is fixed for the whole fit, so once, when the fit starts, each
destination block computes the sorted ids of the other side's rows it touches (its *touched*
rows) and how they split over the source blocks (the other side's contiguous row ranges). Per
half-step, for every pair (source c, destination b) with a touched row in common, one task on
c's worker cuts those rows out of c's current rows (a *piece*), and b's compact matrix holds
them in source order, one row per touched row; its positives' column indices were re-indexed
once into that matrix (:func:`compact`). This is Spark MLlib's ALS layout (in-blocks and
out-blocks), with Dask moving the pieces worker to worker.

A destination with several sources builds its compact matrix piece by piece, so that neither
side holds all the pieces at once (the projection at 10⁹ positives needs that). A chain of tasks
on b's worker allocates the matrix with the first piece (:func:`start`) and writes each next
piece into its rows (:func:`place`); a piece is cut only once the chain is ready for it (its
cut waits on a small marker the chain leaves, :func:`ready`), and Dask fetches a piece only
when the task that places it is scheduled, which is after the previous piece is in place. So a
destination holds its matrix plus about one piece, and a source about one outgoing piece per
destination that is ready for it, instead of all of them until the block's task ends. The
chain starts with the source on b's own worker and goes round from there, so that the sources
are not all asked for their pieces in the same order. The price is latency: a destination's
pieces arrive one after the other, one scheduler round trip each.

A block therefore receives at most min(its positives, rows of the other side) rows per
half-step, and nothing at all from a source block on its own worker. The kernels run unchanged
on the compact matrix: the same rows in the same order of positives, so the same arithmetic.

Every object here is the output of a task whose inputs are other tasks' outputs (or data in the
task graph), so Dask recomputes whatever a lost worker held.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fastpu.distributed.blocks import INDEX, first, home, token

__all__ = ["Touch", "Router", "Routes", "compact", "assemble", "take", "start", "place", "ready"]


@dataclasses.dataclass
class Touch:
    """The other side's rows a block touches: ``ids`` (sorted, unique, global) and, for source
    block c, ``ids[starts[c]:starts[c + 1]]`` the ones in c's range."""

    ids: np.ndarray
    starts: np.ndarray

    @property
    def size(self) -> int:
        return int(self.ids.size)


def touch_task(block: Any, cuts: np.ndarray) -> Touch:
    """The :class:`Touch` of a block whose ``indices`` are the other side's global ids."""
    ids = np.unique(np.asarray(block.indices, dtype=INDEX))
    return Touch(ids, np.searchsorted(ids, cuts).astype(INDEX))


def counts_task(touch: Touch) -> np.ndarray:
    """Touched rows per source block."""
    return np.diff(touch.starts)


def need_task(touch: Touch, c: int, lo: int) -> np.ndarray:
    """Positions, within source block c's rows (which start at global row ``lo``), of the rows
    the destination block touches."""
    a, b = int(touch.starts[c]), int(touch.starts[c + 1])
    return touch.ids[a:b] - lo


def compact(indices: np.ndarray, touch: Touch) -> np.ndarray:
    """Global ids of the other side re-indexed into the block's compact rows (same order)."""
    return np.searchsorted(touch.ids, indices).astype(INDEX)


def take(source: Any, local: np.ndarray, after: Any = None) -> np.ndarray:
    """The rows ``local`` (positions within the source block) of a source's rows: a piece.
    ``after`` is not read: it is the marker of the destination's chain that this cut waits for
    (:func:`ready`)."""
    return np.ascontiguousarray(first(source)[local])


def start(n_rows: int, offset: int, piece: np.ndarray) -> np.ndarray:
    """A destination's compact matrix (``n_rows`` rows), with its first piece at ``offset``;
    the other rows are written by :func:`place`."""
    out = np.empty((n_rows,) + piece.shape[1:], dtype=piece.dtype)   # rows, or weights (1-D)
    out[offset:offset + piece.shape[0]] = piece
    return out


def place(acc: np.ndarray, offset: int, piece: np.ndarray) -> np.ndarray:
    """``acc`` with ``piece`` written at row ``offset``, in place, and returned.

    Writing into a task's result is safe here: the chain's matrix has one reader, the next
    link (or the block's task, after the last), and a link that runs again writes the same rows.
    """
    acc[offset:offset + piece.shape[0]] = piece
    return acc


def ready(acc: Any) -> None:
    """A marker that the chain has placed its pieces so far: the next cut waits for it."""
    return None


def assemble(k: int, dtype: str, *pieces: np.ndarray) -> np.ndarray:
    """A block's compact matrix: its pieces stacked in source order (0×k when it touches none)."""
    if not pieces:
        return np.empty((0, k), dtype=dtype)
    if len(pieces) == 1:
        return np.ascontiguousarray(pieces[0])
    return np.concatenate(pieces, axis=0)


class Router:
    """Where each destination block's touched rows come from, and the tasks that route them.

    Parameters
    ----------
    client : dask.distributed.Client
    blocks : list of futures
        The destination blocks; each result has ``indices`` (the other side's global ids).
    cuts : ndarray
        The source blocks' row ranges (``n_sources + 1`` cut points).
    workers : list of str
        Placement: block b (of either side) lives first on ``home(workers, b)``.

    Attributes
    ----------
    touch : list of futures
        Each destination block's :class:`Touch` (on its worker).
    counts : ndarray, shape (n_dest, n_sources)
        Touched rows of destination b in source block c (gathered once: small).
    """

    def __init__(self, client: Any, blocks: list[Any], cuts: np.ndarray, workers: list[str]):
        self.client, self.workers = client, workers
        self.cuts = np.asarray(cuts, dtype=INDEX)
        self.touch = [client.submit(touch_task, blk, self.cuts, key=f"fastpu-touch-{token()}",
                                    workers=[home(workers, b)], allow_other_workers=True)
                      for b, blk in enumerate(blocks)]
        counts = client.gather([client.submit(counts_task, t, workers=[home(workers, b)],
                                              allow_other_workers=True)
                                for b, t in enumerate(self.touch)])
        self.counts = np.array(counts, dtype=INDEX).reshape(len(blocks), self.cuts.size - 1)
        # the positions each (source, destination) pair cuts out, kept on the source's worker
        self.need: dict[tuple[int, int], Any] = {}
        for b in range(len(blocks)):
            for c in np.flatnonzero(self.counts[b]):
                c = int(c)
                self.need[b, c] = client.submit(need_task, self.touch[b], c, int(self.cuts[c]),
                                                key=f"fastpu-need-{token()}",
                                                workers=[home(workers, c)],
                                                allow_other_workers=True)

    @property
    def n_blocks(self) -> int:
        return len(self.touch)

    def sources_of(self, b: int) -> list[int]:
        """The source blocks destination b receives rows from, in order."""
        return [int(c) for c in np.flatnonzero(self.counts[b])]

    def pieces(self, sources: list[Any], b: int) -> list[Any]:
        """Destination b's routed rows cut from ``sources`` (one future per source block: its
        rows, or a result whose first element is its rows).

        Returns a list of one future, b's compact matrix (the pieces in source order; built by
        a chain of tasks when there are several sources, see the module's docstring), or an
        empty list when b touches no row."""
        c_ = self.client
        srcs = self.sources_of(b)
        if not srcs:
            return []
        offsets = np.concatenate([[0], np.cumsum(self.counts[b])])
        n_rows = int(offsets[-1])
        # start with the source on b's own worker (no transfer), then round from there
        order = sorted(srcs, key=lambda c: (c - b) % self.n_blocks)

        def cut(c: int, after: Any = None) -> Any:
            return c_.submit(take, sources[c], self.need[b, c], after,
                             workers=[home(self.workers, c)], allow_other_workers=True,
                             pure=False)

        if len(order) == 1:
            return [cut(order[0])]
        on_b = dict(workers=[home(self.workers, b)], allow_other_workers=True, pure=False)
        c = order[0]
        acc = c_.submit(start, n_rows, int(offsets[c]), cut(c), **on_b)
        for c in order[1:]:
            piece = cut(c, c_.submit(ready, acc, **on_b))
            acc = c_.submit(place, acc, int(offsets[c]), piece, **on_b)
        return [acc]

    def remote_rows(self, n_workers: int | None = None) -> int:
        """Rows a half-step moves between workers: pieces whose source and destination blocks
        live on different workers (with the first placement)."""
        P = len(self.workers) if n_workers is None else n_workers
        total = 0
        for b in range(self.counts.shape[0]):
            for c in range(self.counts.shape[1]):
                if b % P != c % P:
                    total += int(self.counts[b, c])
        return total

    def touched_rows(self) -> np.ndarray:
        """Touched rows per destination block (the compact matrices' heights)."""
        return self.counts.sum(axis=1)

    def futures(self) -> list[Any]:
        return self.touch + list(self.need.values())

    def release(self) -> None:
        for f in self.futures():
            f.release()


class Routes:
    """A fit's two routers — ``user`` (the user blocks touch items) and ``item`` (the item blocks
    touch users) — over a :class:`fastpu.distributed.blocks.Layout`, and the futures the fit
    holds until it ends (``held``, released with the routers by :meth:`release`)."""

    def __init__(self, client: Any, layout: Any):
        self.client, self.layout = client, layout
        self.user = Router(client, layout.user, layout.ib, layout.workers)
        self.item = Router(client, layout.item, layout.ub, layout.workers)
        self.held: list[Any] = []

    def router(self, side: str) -> Router:
        return self.user if side == "user" else self.item

    def on(self, b: int) -> dict[str, Any]:
        """Where block b's tasks run first (either side's block b)."""
        return dict(workers=[home(self.layout.workers, b)], allow_other_workers=True)

    def blocks(self, make: Any, side: str, *args: Any, own: list[Any] | None = None,
               other: list[Any] | None = None) -> list[Any]:
        """A method's blocks of one side, one task per block on its worker:
        ``make(csr, touch, *args[, own[b]], *pieces)`` with ``pieces`` the rows of ``other``
        (one source per block of the other side, e.g. its weights) the block touches."""
        c = self.client
        router = self.router(side)
        csr = self.layout.user if side == "user" else self.layout.item
        out = []
        for b, blk in enumerate(csr):
            mine = [own[b]] if own is not None else []
            pieces = router.pieces(other, b) if other is not None else []
            out.append(c.submit(make, blk, router.touch[b], *args, *mine, *pieces,
                                **self.on(b)))
        self.held += out
        return out

    def release(self) -> None:
        for f in self.held:
            f.release()
        self.user.release()
        self.item.release()
