"""ocmf's row-separable fast path on a two-dimensional grid of Y's blocks (``grid=(p, q)``).

The routed layout (:mod:`fastpu.ocmf._dask`) gives each row block the whole of its rows'
entries, so a block's task receives every other-side row its positives touch; on a catalogue
where a block's users touch most of the items that is most of the other side. A grid cuts Y
into p user ranges × q item ranges instead and keeps one *cell* (one range of each side) on a
worker: in the user half-step a cell needs only the n/q item rows of its item range, in the
item half-step only the m/p user rows of its user range. That caps the other side's rows a
worker holds, whatever the pattern.

The price is that a row's entries are spread over the cells of its range, so its Newton–CG
solve (:func:`fastpu._kernels.ocmf.row_newton`: Newton steps of a few CG steps, with a
backtracking line search for losses that are not quadratic) needs its sums over entries —
value, gradient, each Hessian–vector product, the line search's values — added up across the
cells. A half-step is therefore a sequence of rounds, each with one task per cell that returns
the rows' partial sums (rows × k, or rows × a few) and one task per row range (a *reducer*)
that adds them up and takes the solver's next step for all of its rows at once. The steps are
the row kernel's own, compiled once (:mod:`fastpu._kernels.ocmf`'s ``grid_*`` kernels run
the same CG step, line search and stopping tests on the sums), with the constants of the
fit's :class:`~fastpu._kernels.ocmf.RowOptions`, so each row takes the kernel's Newton steps,
CG steps and backtracks (``tests/distributed/test_grid.py`` compares them). The cells keep
their entries' scores and second derivatives between the rounds of a Newton step.

The rounds add the same terms as the kernel in another order and in float64, so the model is
the single-machine model up to rounding: to about 1e-12 in float64. What travels between the
rounds (the directions, the steps and the cells' partial products) is in the factors' dtype, as
the kernel computes those vectors: with float32 factors, rounded to float32 there and at the
end of every half-step, but not the kernel's float32 products (nor, at k ≥ 64, in the
eigenbasis of M), so a float32 grid fit agrees with one machine's to float32 rounding and what
the iterations make of it.

What travels per half-step (docs/distributed.md, "The 2-D block grid"): each cell receives its
other-side range once and, per round, the direction of its own range's rows (rows × k), and
sends back a partial of the same size.
"""

from __future__ import annotations

import dataclasses
import operator
import warnings
from typing import Any

import numpy as np

from fastpu._core.threads import limit_threads
from fastpu._kernels import ocmf as K
from fastpu._kernels.csr import csr_dense, sampled_dots
from fastpu._kernels.losses import LOSS_TABLE, entry_losses, entry_values
from fastpu.distributed import blocks as _blocks
from fastpu.ocmf._dask_blocks import _sum_parts

FIRST_STEPS = 4                     # α tried in a line search's first round; the rest if needed


@dataclasses.dataclass
class Cell:
    """The entries of one cell, rows of one side × columns of the other (one orientation).

    ``indptr`` is local to the cell's rows, ``indices`` are local to its column range; the
    entry arrays are those :func:`fastpu._kernels.losses.entry_losses` reads.
    """

    indptr: np.ndarray
    indices: np.ndarray
    rows: np.ndarray        # the cell's local row of every entry
    labels: np.ndarray
    weights: np.ndarray
    corr: np.ndarray

    @property
    def n_rows(self) -> int:
        return self.indptr.size - 1


def make_cell(indptr: Any, indices: Any, data: Any, own_w: Any, other_w: Any,
              every: bool = False) -> Cell:
    """A :class:`Cell` from a CSR slice (local ``indptr`` and ``indices``): corr = own_w[row] ·
    other_w[col], ocmf's Full weights (``own_w`` and ``other_w`` are the two ranges' slices),
    or 0 with ``every`` (``negatives="all"``)."""
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    own = np.asarray(own_w, dtype=np.float64)
    other = np.asarray(other_w, dtype=np.float64)
    corr = np.zeros(indices.size) if every else own[rows] * other[indices]
    return Cell(indptr, indices, rows, np.ones(indices.size), np.asarray(data, dtype=np.float64),
                corr)


def _f64(A: Any) -> np.ndarray:
    return np.ascontiguousarray(_blocks.first(A), dtype=np.float64)


def _scores(cell: Cell, W: np.ndarray, E: np.ndarray) -> np.ndarray:
    s = np.empty(cell.indices.size)
    if s.size:
        sampled_dots(cell.indptr, cell.indices, W, E, s)
    return s


def _times(cell: Cell, data: np.ndarray, E: np.ndarray) -> np.ndarray:
    out = np.zeros((cell.n_rows, E.shape[1]))
    if cell.indices.size:
        csr_dense(cell.indptr, cell.indices, data, E, out)
    return out


def cell_grad(cell: Cell, E: Any, W: Any, kind: int, abar: float, n_threads: int | None,
              wire: str, diagonal: bool = False) -> tuple[tuple[Any, ...], tuple[np.ndarray, np.ndarray]]:
    """((Σ_e value_e, Σ_e ℓ'_e h_e[, Σ_e ℓ''_e h_e²]) per row, (scores, ℓ''_e)): the entries'
    part of the rows' f_i, gradient (and, with ``diagonal``, of the Hessian's diagonal for the
    Jacobi preconditioner) at the rows ``W`` (the cell's own range), and the state the cell's
    later rounds of this Newton step read."""
    with limit_threads(n_threads):
        E, W = _f64(E), _f64(W)
        s = _scores(cell, W, E)
        val, d1, d2 = np.empty_like(s), np.empty_like(s), np.empty_like(s)
        if s.size:
            entry_losses(kind, cell.labels, cell.weights, cell.corr, abar, s, val, d1, d2)
        f = np.bincount(cell.rows, weights=val, minlength=cell.n_rows)
        grad = _times(cell, d1, E).astype(wire, copy=False)
        if diagonal:
            return (f, grad, _times(cell, d2, E * E)), (s, d2)
        return (f, grad), (s, d2)


def cell_hessp(cell: Cell, E: Any, state: tuple[np.ndarray, np.ndarray], D: Any,
               n_threads: int | None, wire: str) -> np.ndarray:
    """Σ_e ℓ''_e (h_e·d) h_e per row: the entries' part of the Hessian's product with the rows'
    CG directions ``D``."""
    with limit_threads(n_threads):
        E, D = _f64(E), _f64(D)
        u = _scores(cell, D, E)
        return _times(cell, state[1] * u, E).astype(wire, copy=False)


def cell_line(cell: Cell, E: Any, state: tuple[np.ndarray, np.ndarray], S: Any,
              alphas: tuple[float, ...], kind: int, abar: float,
              n_threads: int | None) -> np.ndarray:
    """Σ_e value_e(s_e + α h_e·step) per row and α (rows × len(alphas)): the entries' part of
    f_i along the rows' steps ``S``."""
    with limit_threads(n_threads):
        E, S = _f64(E), _f64(S)
        s = state[0]
        sd = _scores(cell, S, E)
        out = np.zeros((cell.n_rows, len(alphas)))
        val = np.empty_like(s)
        for c, alpha in enumerate(alphas):
            if s.size:
                entry_values(kind, cell.labels, cell.weights, cell.corr, abar, s + alpha * sd,
                             val)
            out[:, c] = np.bincount(cell.rows, weights=val, minlength=cell.n_rows)
        return out


@dataclasses.dataclass
class Rows:
    """A reducer's state: its range's rows and where each row's solve stands (float64; one
    entry, or one row of k, per row of the range). The steps are those of the fit's kernel
    (:mod:`fastpu._kernels.ocmf`'s ``grid_*``), which update a copy of the state in place."""

    w: np.ndarray
    pw: np.ndarray                  # the rows' unlabeled weights p_i
    lam: np.ndarray                 # their regularisation weight (one value, or one per row)
    f: np.ndarray                   # f_i at the current rows (the kernel's f_cur)
    done: np.ndarray                # the row has left its Newton loop
    counts: np.ndarray              # Newton steps, CG steps, backtracks (the kernel's counts_out)
    act: np.ndarray                 # taking a Newton step now
    cg: np.ndarray                  # still in this step's CG loop
    line: np.ndarray                # waiting for an accepted α
    g: np.ndarray
    step: np.ndarray
    r: np.ndarray
    d: np.ndarray
    z: np.ndarray                   # the preconditioned residual (``precondition``)
    pinv: np.ndarray                # the Jacobi preconditioner's inverse diagonal
    rr: np.ndarray
    stop: np.ndarray
    sc: np.ndarray
    gs: np.ndarray

    def copy(self) -> Rows:
        return Rows(**{f.name: getattr(self, f.name).copy()
                       for f in dataclasses.fields(self)})


def start_rows(W: Any, pw: Any, lam: Any) -> Rows:
    """The state of a range's rows at the start of a half-step."""
    w = _f64(W).copy()
    n, k = w.shape
    z = np.zeros(n)
    no = np.zeros(n, dtype=bool)
    return Rows(w, np.asarray(pw, dtype=np.float64), K.per_row(lam, n), z.copy(), no.copy(),
                np.zeros((n, 3), dtype=np.int32), no.copy(), no.copy(), no.copy(),
                np.zeros_like(w), np.zeros_like(w), np.zeros_like(w), np.zeros_like(w),
                np.zeros_like(w), np.zeros_like(w), z.copy(), z.copy(), np.ones(n), z.copy())


def _summed(parts: tuple[Any, ...], shape: tuple[int, ...]) -> np.ndarray:
    """The cells' partial sums added in cell order (float64)."""
    out = np.zeros(shape)
    for part in parts:
        out += part
    return out


def red_grad(st: Rows, M: np.ndarray, kappa: np.ndarray, opts: dict[str, Any],
             *parts: tuple[np.ndarray, ...]) -> tuple[Rows, np.ndarray]:
    """Add the cells' values and gradients and start each active row's CG (the kernel's first
    lines of a Newton step); returns (state, the CG directions)."""
    st = st.copy()
    n, k = st.w.shape
    fe = _summed(tuple(part[0] for part in parts), (n,))
    ge = _summed(tuple(part[1] for part in parts), (n, k))
    rows = opts["rows"]
    he = _summed(tuple(part[2] for part in parts), (n, k)) if rows.precondition \
        else np.empty((0, k))
    K.grid_begin(st.w, st.pw, st.lam, M, kappa, opts["abar"], fe, ge, he, st.done, st.f, st.g,
                 st.step, st.r, st.d, st.z, st.pinv, st.rr, st.stop, st.sc, st.act, st.cg,
                 rows.cg_tol)
    return st, st.d.astype(opts["dtype"], copy=False)


def red_hessp(st: Rows, M: np.ndarray, opts: dict[str, Any],
              *parts: np.ndarray) -> tuple[Rows, np.ndarray]:
    """One CG step for every row still in its CG loop; returns (state, the next directions)."""
    st = st.copy()
    K.grid_cg(st.pw, st.lam, M, _summed(parts, st.w.shape), st.d, st.step, st.r, st.z, st.pinv,
              st.rr, st.stop, st.cg, st.counts, opts["rows"].precondition)
    return st, st.d.astype(opts["dtype"], copy=False)


def red_step(st: Rows, opts: dict[str, Any]) -> tuple[Rows, np.ndarray]:
    """The end of the CG loop (the kernel's): rows with gᵀstep ≥ 0 leave; the square loss
    takes its step; other losses wait for a line search. Returns (state, the steps)."""
    st = st.copy()
    K.grid_step(st.w, st.g, st.step, st.r, st.sc, st.f, st.act, st.done, st.line, st.gs,
                LOSS_TABLE[opts["kind"]].quadratic, opts["rows"].cg_steps, st.counts)
    return st, np.where(st.line[:, None], st.step, 0.0).astype(opts["dtype"], copy=False)


def red_line(st: Rows, M: np.ndarray, kappa: np.ndarray, opts: dict[str, Any],
             first: int, alphas: tuple[float, ...], last: bool, *parts: np.ndarray) -> Rows:
    """The line search's test on ``alphas`` (the ladder from position ``first``) for every row
    still waiting; with ``last``, a row that passed none leaves its Newton loop unchanged."""
    st = st.copy()
    values = _summed(parts, (st.w.shape[0], len(alphas)))
    K.grid_line(st.w, st.step, st.pw, st.lam, M, kappa, opts["abar"], st.f, st.gs, st.line,
                st.done, values, np.asarray(alphas, dtype=np.float64), first,
                opts["rows"].armijo, last, st.counts)
    return st


def waiting(st: Rows) -> bool:
    """Whether any row still waits for its line search."""
    return bool(st.line.any())


def red_finish(st: Rows, dtype: str,
               k: int) -> tuple[np.ndarray, float, tuple[np.ndarray, np.ndarray], float, np.ndarray]:
    """(new rows in ``dtype``, Σ f_i, their partial Gram, Σ λ_i‖row_i‖², the rows' counts):
    a reducer's result."""
    W = st.w.astype(dtype)
    sq = np.square(W, dtype=np.float64)
    reg = (float(st.lam[0]) * float(np.sum(sq)) if st.lam.shape[0] == 1
           else float(st.lam @ sq.sum(axis=1)))
    return (W, float(st.f.sum()), _blocks.gram(np.ascontiguousarray(W), st.pw, k), reg,
            st.counts)


def w_of(st: Rows) -> np.ndarray:
    """The rows of a reducer's state (the cells' input to a Newton step after the first)."""
    return st.w


class Grid:
    """The cells of Y on the workers: ``cells["user"][a][b]`` holds Y[users a, items b] (rows:
    users), ``cells["item"][b][a]`` its transpose, both first on the same worker."""

    def __init__(self, client: Any, Y: Any, grid: tuple[int, int], workers: list[str],
                 pw: np.ndarray, q: np.ndarray, every: bool = False) -> None:
        self.p, self.q = grid
        m, n = Y.shape
        self.cuts = {"user": _blocks.bounds(m, self.p), "item": _blocks.bounds(n, self.q)}
        self.workers = workers
        YT = Y.T.tocsr()
        self.cells: dict[str, list[list[Any]]] = {
            "user": [[None] * self.q for _ in range(self.p)],
            "item": [[None] * self.p for _ in range(self.q)]}
        ub, ib = self.cuts["user"], self.cuts["item"]
        with warnings.catch_warnings():
            # the slices are meant to be in the graph: a lost worker's cells are rebuilt from it
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            for a in range(self.p):
                for b in range(self.q):
                    for side, A, lo, hi, clo, chi, own, other, i, j in (
                            ("user", Y, ub[a], ub[a + 1], ib[b], ib[b + 1], pw, q, a, b),
                            ("item", YT, ib[b], ib[b + 1], ub[a], ub[a + 1], q, pw, b, a)):
                        sub = A[int(lo):int(hi), int(clo):int(chi)].tocsr()
                        sub.sort_indices()
                        self.cells[side][i][j] = client.submit(
                            make_cell, sub.indptr, sub.indices, sub.data,
                            own[int(lo):int(hi)], other[int(clo):int(chi)], every,
                            key=f"fastpu-grid-{side}-{a}-{b}-{_blocks.token()}",
                            **self.on(a, b))
        futures = [f for side in self.cells.values() for row in side for f in row]
        _blocks.settle(client, futures)

    def place(self, block: int) -> dict[str, Any]:
        """Where a task lives first: block ``block``'s worker (cell (a, b) is block a·q + b)."""
        return dict(workers=[_blocks.home(self.workers, block)], allow_other_workers=True)

    def on(self, a: int, b: int) -> dict[str, Any]:
        """Where cell (user range a, item range b) lives first."""
        return self.place(a * self.q + b)

    def cell_on(self, side: str, i: int, j: int) -> dict[str, Any]:
        """Where cell (range i of ``side``, range j of the other side) lives first."""
        return self.on(i, j) if side == "user" else self.on(j, i)

    def reducer_cell(self, side: str, i: int) -> int:
        """The block number (a·q + b) of the cell range i's reducer lives with."""
        a, b = (i, i % self.q) if side == "user" else (i % self.p, i)
        return a * self.q + b

    def reducer_on(self, side: str, i: int) -> dict[str, Any]:
        """A reducer lives with one of its range's cells."""
        return self.place(self.reducer_cell(side, i))

    def release(self) -> None:
        for side in self.cells.values():
            for row in side:
                for f in row:
                    f.release()


def half_step(client: Any, grid: Any, side: str, own: list[Any], other: list[Any],
              weights: list[Any], lams: list[Any], M: np.ndarray, kappa: np.ndarray,
              opts: dict[str, Any]) -> list[Any]:
    """One half-step of ``side`` (its ranges' rows ``own``, the other side's ``other``, futures
    of arrays; ``weights[i]`` the unlabeled weights of range i's rows, ``lams[i]`` their
    regularisation weights); returns the reducers' futures of :func:`red_finish`'s results."""
    cells = grid.cells[side]
    n_own, n_other = len(cells), len(cells[0])
    sub = client.submit
    kind, abar, nt = opts["kind"], opts["abar"], opts["n_threads"]
    ron = [grid.reducer_on(side, i) for i in range(n_own)]

    def con(i: int, j: int) -> dict[str, Any]:
        return grid.cell_on(side, i, j)

    def pick(futs: list[Any], idx: int, where: list[dict[str, Any]]) -> list[Any]:
        return [sub(operator.itemgetter(idx), f, **where[i]) for i, f in enumerate(futs)]

    wire = opts["dtype"]
    st = [sub(start_rows, own[i], weights[i], lams[i], **ron[i]) for i in range(n_own)]
    for step in range(opts["rows"].newton_steps):
        # the first step starts from the rows ``own``: the cells hold them already when the
        # previous half-step sent them there as its other side's rows
        W = own if step == 0 else [sub(w_of, s, **ron[i]) for i, s in enumerate(st)]
        res = [[sub(cell_grad, cells[i][j], other[j], W[i], kind, abar, nt, wire,
                    opts["rows"].precondition, **con(i, j))
                for j in range(n_other)] for i in range(n_own)]
        keep = [[sub(operator.itemgetter(1), r, **con(i, j)) for j, r in enumerate(row)]
                for i, row in enumerate(res)]
        parts = [[sub(operator.itemgetter(0), r, **con(i, j)) for j, r in enumerate(row)]
                 for i, row in enumerate(res)]
        out = [sub(red_grad, st[i], M, kappa, opts, *parts[i], **ron[i]) for i in range(n_own)]
        st, D = pick(out, 0, ron), pick(out, 1, ron)
        for _c in range(opts["rows"].cg_steps):
            parts = [[sub(cell_hessp, cells[i][j], other[j], keep[i][j], D[i], nt, wire,
                          **con(i, j))
                      for j in range(n_other)] for i in range(n_own)]
            out = [sub(red_hessp, st[i], M, opts, *parts[i], **ron[i]) for i in range(n_own)]
            st, D = pick(out, 0, ron), pick(out, 1, ron)
        out = [sub(red_step, st[i], opts, **ron[i]) for i in range(n_own)]
        st, S = pick(out, 0, ron), pick(out, 1, ron)
        if LOSS_TABLE[kind].quadratic:
            continue
        ladder = opts["rows"].ladder()
        for lo, hi in ((0, min(FIRST_STEPS, ladder.size)), (min(FIRST_STEPS, ladder.size),
                                                            ladder.size)):
            alphas = tuple(float(a) for a in ladder[lo:hi])
            last = hi == ladder.size
            parts = [[sub(cell_line, cells[i][j], other[j], keep[i][j], S[i], alphas, kind,
                          abar, nt, **con(i, j)) for j in range(n_other)] for i in range(n_own)]
            st = [sub(red_line, st[i], M, kappa, opts, lo, alphas, last, *parts[i], **ron[i])
                  for i in range(n_own)]
            if last or not any(client.gather([sub(waiting, s, **ron[i])
                                              for i, s in enumerate(st)])):
                break
    return [sub(red_finish, s, opts["dtype"], opts["k"], **ron[i])
            for i, s in enumerate(st)]


def fit(client: Any, Y: Any, grid: tuple[int, int], workers: list[str], W: np.ndarray,
        H: np.ndarray, pw: np.ndarray, q: np.ndarray, checked: Any, *, const: float,
        n_threads: int | None, progress: Any, wrap: Any) -> tuple[np.ndarray, np.ndarray]:
    """Alternating half-steps on the grid from the factors W, H; returns the final (W, H).
    ``checked`` is the fit's record (:class:`fastpu.ocmf._check.Fit`); ``wrap(W, H)`` makes
    the callback's ``info["model"]`` of an iterate."""
    from fastpu.ocmf._problem import row_penalties

    model, run = checked.model, checked.run
    k = run.k
    g = Grid(client, Y, grid, workers, pw, q, every=model.negatives == "all")
    held = []
    try:
        w_src = {"user": _hold_rows(client, g, "user", pw, "p"),
                 "item": _hold_rows(client, g, "item", q, "q")}
        held += w_src["user"] + w_src["item"]
        lams = {}
        for side, lam in zip(("user", "item"), row_penalties(model, Y)):
            if lam.shape[0] == 1:
                lams[side] = [lam] * (g.cuts[side].size - 1)
            else:
                lams[side] = _hold_rows(client, g, side, lam, f"lam-{side}")
                held += lams[side]
        opts = dict(kind=model.kind, abar=model.abar, rows=checked.rows, k=k,
                    n_threads=n_threads, dtype=W.dtype.name)
        W_src = _hold_rows(client, g, "user", W, "W")
        H_src = _hold_rows(client, g, "item", H, "H")
        held += W_src + H_src
        parts = client.gather([client.submit(_gram_of, h, w_src["item"][b], k,
                                             **g.reducer_on("item", b))
                               for b, h in enumerate(H_src)])
        M_h, kappa_h = _sum_parts(parts)
        for it in range(1, run.n_iter + 1):
            W_src, _, M_w, kappa_w, reg_w = _side(client, g, "user", W_src, H_src, w_src, lams,
                                                  M_h, kappa_h, opts)
            H_src, f_h, M_h, kappa_h, _ = _side(client, g, "item", H_src, W_src, w_src, lams,
                                                M_w, kappa_w, opts)
            obj = f_h + const + reg_w
            if progress.step(it, obj, inner=0,
                             model=lambda: wrap(_gather(client, W_src), _gather(client, H_src))):
                break
        W_out, H_out = _gather(client, W_src), _gather(client, H_src)
    finally:
        g.release()
        for f in held:
            f.release()
    return W_out, H_out


def _side(client: Any, g: Grid, side: str, own: list[Any], other: list[Any],
          weights: dict[str, list[Any]], lams: dict[str, list[Any]], M: np.ndarray,
          kappa: np.ndarray,
          opts: dict[str, Any]) -> tuple[list[Any], float, np.ndarray, np.ndarray, float]:
    """A half-step of ``side``: (its new rows, futures left on the reducers; Σ f_i; the new
    rows' M and κ; Σ λ_i‖row_i‖²)."""
    out = half_step(client, g, side, own, other, weights[side], lams[side], M, kappa, opts)
    on = [g.reducer_on(side, i) for i in range(len(out))]
    rows = [client.submit(operator.itemgetter(0), o, **on[i]) for i, o in enumerate(out)]
    res = client.gather([client.submit(_blocks.drop_first, o, **on[i])
                         for i, o in enumerate(out)])
    M_new, kappa_new = _sum_parts([r[1] for r in res])
    return (rows, float(sum(r[0] for r in res)), M_new, kappa_new,
            float(sum(r[2] for r in res)))


def _hold_rows(client: Any, g: Grid, side: str, A: np.ndarray, tag: str) -> list[Any]:
    """A's rows of each range of ``side``, data of the task graph (:func:`fastpu.distributed.
    blocks.hold`), placed with the range's reducer."""
    cuts = g.cuts[side]
    return _blocks.hold_slices(client, A, cuts, g.workers, f"grid-{tag}",
                               places=[g.reducer_cell(side, i) for i in range(cuts.size - 1)])


def _gather(client: Any, rows: list[Any]) -> np.ndarray:
    """A side's rows, from its ranges' futures, stacked on the client."""
    return np.concatenate(client.gather(rows), axis=0)


def _gram_of(H: np.ndarray, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    return _blocks.gram(np.ascontiguousarray(H), np.asarray(w, dtype=np.float64), k)


def check_grid(grid: Any, shape: tuple[int, int]) -> tuple[int, int]:
    """``grid`` as (p, q): two positive ints, at most the matrix's rows and columns."""
    if isinstance(grid, np.ndarray) and grid.ndim == 1 and grid.dtype.kind in "iu":
        grid = tuple(grid.tolist())
    if (not isinstance(grid, (tuple, list)) or len(grid) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in grid)):
        raise TypeError(f"grid must be a pair (p, q) of ints (user ranges × item ranges), got "
                        f"{grid!r}")
    p, q = int(grid[0]), int(grid[1])
    if p < 1 or q < 1 or p > shape[0] or q > shape[1]:
        raise ValueError(f"grid must be (p, q) with 1 <= p <= {shape[0]} (rows of Y) and "
                         f"1 <= q <= {shape[1]} (columns of Y), got {grid!r}")
    return p, q
