"""Approximate top-N for a large catalogue: nearest-neighbour libraries against exact ``recommend``.

    python benchmarks/speed/bench_ann.py run --backend exact|faiss-hnsw|faiss-ivf|hnswlib|pynndescent|fastpu
    python benchmarks/speed/bench_ann.py report    # writes docs/benchmarks/bench_ann.md from the results
    python benchmarks/speed/bench_ann.py --quick   # exact and fastpu on 2,000 items (temp folder)

A model with 1,000,000 items and k = 64 (the issue's size) and 10,000 users; each user has 20
seen items, left out of its recommendations. Every run recommends the top 10 for **all** users
(one call, 2 threads) and compares with the exact top 10 of ``fastpu.recommend``:
recall@10 = |approximate ∩ exact| / 10, averaged over the users. Index build time is reported
apart from the query time. Each backend runs in its own process (``run``), which appends one
JSON line to ``benchmarks/results/bench_ann.jsonl``; ``report`` tabulates the last line of each.

The factors are synthetic, not fitted (no public data set has a million items): 2,000 cluster
centres in R^64, items around them with log-normal norms (a popularity spread of about 3× between
the 10th and 90th percentile, as fitted item factors show), users around the centres too. This
gives neighbourhoods an index can find; uniformly random factors in 64 dimensions have none
and no index reaches high recall on them at any useful speed.

Every library searches the inner product (what ``recommend`` ranks by) directly: faiss's HNSW
and IVF with ``METRIC_INNER_PRODUCT``, hnswlib's ``"ip"`` space, pynndescent's ``"dot"``. (The
reduction of inner-product search to Euclidean search by augmentation, x -> [x, sqrt(M² − ‖x‖²)],
was tried first: at 20,000 items HNSW's recall@10 on the augmented vectors stayed at 0.10-0.25
for ef = 32-128, because the augmented items crowd one cap of a sphere of radius M; on the raw
vectors with the inner product it was 0.96-0.996.) Every library asks for 10 + 20 neighbours (room for the seen items), drops the seen ones and
keeps the best 10 by exact score, which is what ``fastpu.model.ApproximateIndex`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import DOCS, RAW, ROOT, provenance, require, stamp  # noqa: E402

sys.path.insert(0, str(ROOT))
RESULTS = pathlib.Path(os.environ.get("BENCH_ANN_RESULTS", RAW / "bench_ann.jsonl"))

N_ITEMS, K, N_SEEN, TOP = int(os.environ.get("BENCH_ANN_ITEMS", 1_000_000)), 64, 20, 10
N_USERS = int(os.environ.get("BENCH_ANN_USERS", 10_000))
#: the exact top 10 of every user, written by the exact run for the others to compare with
EXACT = pathlib.Path(tempfile.gettempdir()) / f"bench_ann_exact_{N_ITEMS}.npy"
#: the module each backend needs (the ``bench`` extra does not install them)
NEEDS = {"faiss-hnsw": "faiss", "faiss-ivf": "faiss", "hnswlib": "hnswlib",
         "pynndescent": "pynndescent", "fastpu": "faiss"}


def model_and_seen(n_items: int = N_ITEMS, n_users: int = N_USERS, seed: int = 0):
    import scipy.sparse as sp

    from fastpu import Factorization

    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((2000, K))
    item_c = rng.integers(0, 2000, n_items)
    items = centres[item_c] + 0.6 * rng.standard_normal((n_items, K))
    items *= (rng.lognormal(0.0, 0.45, n_items) / np.linalg.norm(items, axis=1))[:, None]
    user_c = rng.integers(0, 2000, n_users)
    users = centres[user_c] + 0.6 * rng.standard_normal((n_users, K))
    users /= np.linalg.norm(users, axis=1)[:, None]
    seen_cols = rng.integers(0, n_items, (n_users, N_SEEN))
    seen = sp.csr_array((np.ones(seen_cols.size), seen_cols.ravel(),
                         np.arange(0, seen_cols.size + 1, N_SEEN)), shape=(n_users, n_items))
    seen.sum_duplicates()
    return Factorization(users, items), seen


def finish(model, seen, labels: np.ndarray) -> np.ndarray:
    """Drop seen items from each row of candidate labels, keep the best TOP by exact score."""
    out = np.full((labels.shape[0], TOP), -1, dtype=np.int64)
    U, V = model.user_factors, model.item_factors
    for u in range(labels.shape[0]):
        row = labels[u]
        row = row[row >= 0]
        s = seen.indices[seen.indptr[u]:seen.indptr[u + 1]]
        row = row[~np.isin(row, s)]
        sc = V[row] @ U[u]
        order = np.lexsort((row, -sc))[:TOP]
        out[u, :order.size] = row[order]
    return out


def build(backend: str, params: dict, model):
    """(index, search(Q, want, value) -> labels, the query-time parameter's name)."""
    if backend in ("faiss-hnsw", "faiss-ivf"):
        import faiss
        faiss.omp_set_num_threads(2)
    X = np.ascontiguousarray(model.item_factors, dtype=np.float32)
    if backend == "faiss-hnsw":
        import faiss
        index = faiss.IndexHNSWFlat(K, params.get("M", 32), faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params.get("efc", 80)
        index.add(X)

        def search(Q, want, ef):
            index.hnsw.efSearch = ef
            return index.search(Q, want)[1]
        return search, "ef", True
    if backend == "faiss-ivf":
        import faiss
        nlist = params.get("nlist", 4096)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(K), K, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(X[np.random.default_rng(1).choice(X.shape[0], 40 * nlist, replace=False)])
        index.add(X)

        def search(Q, want, nprobe):
            index.nprobe = nprobe
            return index.search(Q, want)[1]
        return search, "nprobe", True
    if backend == "hnswlib":
        import hnswlib
        index = hnswlib.Index(space="ip", dim=K)
        index.init_index(max_elements=X.shape[0], M=params.get("M", 16),
                         ef_construction=params.get("efc", 100))
        index.set_num_threads(2)
        index.add_items(X)

        def search(Q, want, ef):
            index.set_ef(ef)
            return index.knn_query(Q, k=want)[0]
        return search, "ef", True
    if backend == "pynndescent":
        import numba
        import pynndescent
        numba.set_num_threads(2)
        index = pynndescent.NNDescent(X, metric="dot", n_neighbors=params.get("nn", 30),
                                      n_jobs=2, random_state=0, low_memory=True)
        index.prepare()

        def search(Q, want, eps):
            return index.query(Q, k=want, epsilon=eps)[0]
        return search, "eps", True
    if backend == "fastpu":
        from fastpu.model import ApproximateIndex
        index = ApproximateIndex(model, **params)

        def search(Q, want, value):
            return index
        return search, None, False
    raise SystemExit(f"unknown backend {backend}")


def run(backend: str, params: dict, sweep: list) -> None:
    import fastpu as fp

    fp.set_num_threads(2)
    model, seen = model_and_seen(N_ITEMS, N_USERS)
    if backend in NEEDS:
        require(NEEDS[backend], purpose=f"the {backend} backend", extra=None)
    base = {"backend": backend, "n_items": N_ITEMS, "k": K, "n_users": N_USERS,
            "commit": stamp()[0], "date": stamp()[1]}
    if backend == "exact":
        fp.recommend(model, seen, users=[0, 1], n=TOP)          # compile / load the kernels
        load = os.getloadavg()
        t = time.perf_counter()
        items, _ = fp.recommend(model, seen, n=TOP)
        res = dict(base, params={}, query_s=time.perf_counter() - t, recall=1.0, build_s=0.0,
                   load_before=load, load_after=os.getloadavg())
        np.save(EXACT, items)
        _write(res)
        return
    exact = np.load(EXACT)
    want = TOP + N_SEEN
    Q = np.ascontiguousarray(model.user_factors, dtype=np.float32)
    load = os.getloadavg()
    t = time.perf_counter()
    search, knob, raw = build(backend, params, model)
    build_s = time.perf_counter() - t
    for value in (sweep or [None]):
        load_q = os.getloadavg()
        t = time.perf_counter()
        if raw:
            labels = np.asarray(search(Q, want, value), dtype=np.int64)
            items = finish(model, seen, labels)
        else:
            items, _ = fp.recommend(model, seen, n=TOP, approximate=search(Q, want, value))
        query_s = time.perf_counter() - t
        hits = [len(set(a[a >= 0]) & set(b[b >= 0])) / TOP for a, b in zip(items, exact)]
        p = dict(params, **({knob: value} if knob and value is not None else {}))
        _write(dict(base, params=p, build_s=build_s, query_s=query_s, recall=float(np.mean(hits)),
                    load_before=load_q, load_after=os.getloadavg()))


def _write(res: dict) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    with open(RESULTS, "a") as fh:
        fh.write(json.dumps(res) + "\n")
    print(json.dumps(res), flush=True)


NOTES = """
*faiss-hnsw*, *faiss-ivf*, *hnswlib*: the libraries themselves (the short lists re-scored and
filtered by the script, as fastpu does); *fastpu*: `fastpu.recommend(model, seen, n=10,
approximate=ApproximateIndex(model, ...))`, the shipped path (its defaults: HNSW with M = 32,
efConstruction = 80, efSearch = 64; or `kind="ivf"` with 4·√n cells and 64 probed), whose index
build includes fastpu's float64 copy of the factors. ef / nprobe are the query-time knobs.

## The choice: faiss

* **faiss** (faiss-cpu, released 2026-09; wheels for Linux, macOS, Windows) meets the bar with
  room: its HNSW graph reaches recall@10 0.955 at ef = 32 and 0.979 at ef = 64 (fastpu's
  default) for all 10,000 users in 1-2.4 s, against the exact path's minutes — far past 5×;
  its IVF file reaches 0.954 at nprobe = 64 and builds about 7 times faster than the graph,
  which is what `approximate=True` builds for a single call. Both search inner products
  directly.
* **hnswlib** (last release 2023-12) gives about the same recall for the same query time as
  faiss's HNSW (0.970 at ef = 64) but took half as long again to build here, and is no longer
  released as often; nothing it offers is missing from faiss.
* **pynndescent** (numba-native, so no new compiled dependency) was tried at 20,000 items before
  the full run: its `"dot"` metric normalises the vectors (a cosine, not the inner product that
  `recommend` ranks by) and reached recall@10 0.45 at ε = 0.1-0.2 after an 83 s build (mostly
  numba compiling); on the Euclidean reduction of inner-product search (below) graph searches
  fail too. It was not run at a million items.
* **The Euclidean reduction** (x -> [x, sqrt(M² − ‖x‖²)], Bachrach et al. 2014), which lets any
  L2 library answer inner-product queries, was tried first with both HNSW libraries at 20,000
  items: recall@10 0.10-0.25 for ef = 32-128, because the augmented items crowd one cap of a
  sphere of radius M. Searching the inner product directly gave 0.96-0.996 on the same data.

Times are wall seconds on a machine other sessions were using at the same time (the load
averages above): the exact path and each library ran at similar loads, so the ratios are the
numbers to read; absolute seconds on an idle machine are lower.
"""


def report(out_dir=None) -> None:
    import platform

    rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]
    exact = [r for r in rows if r["backend"] == "exact"][-1]
    last: dict = {}
    for r in rows:
        last[(r["backend"], json.dumps(r["params"], sort_keys=True))] = r
    loads = [x for r in last.values() for x in (r["load_before"][0], r["load_after"][0])]
    prov = provenance([(r.get("commit"), r.get("date")) for r in last.values()])
    lines = [
        "# Approximate top-N: nearest-neighbour libraries against exact `recommend`",
        "",
        prov,
        "",
        f"**Hardware:** {platform.processor() or platform.machine()}, 2 cores shared with other "
        f"work; 1-minute load average between {min(loads):.1f} and {max(loads):.1f} while the "
        "runs below ran (each run's load before and after it is in "
        "`benchmarks/results/bench_ann.jsonl`).",
        "",
        "Command: `python benchmarks/speed/bench_ann.py run --backend ...` (one process per row), "
        "then `python benchmarks/speed/bench_ann.py report`. Model: 1,000,000 items, k = 64, "
        "10,000 users, 20 seen items per user; the top 10 of **every** user in one call, 2 threads "
        "(`benchmarks/speed/bench_ann.py` says how the factors are drawn). Recall@10 is against "
        "exact `fastpu.recommend`; speed-up = exact seconds / approximate query seconds.",
        "",
        "| backend | settings | index build (s) | top 10 for all users (s) | speed-up | recall@10 |",
        "|---|---|---|---|---|---|",
    ]
    for (backend, _), r in last.items():
        speed = exact["query_s"] / r["query_s"]
        settings = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "—"
        lines.append(f"| {backend} | {settings} | {r['build_s']:.1f} | {r['query_s']:.2f} | "
                     f"{speed:.1f}× | {r['recall']:.3f} |")
    out = pathlib.Path(out_dir or DOCS) / "bench_ann.md"
    text = "\n".join(lines) + "\n" + NOTES
    out.write_text(text)
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="?", choices=("run", "report"))
    ap.add_argument("--backend", default="exact")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--sweep", default="", help="comma-separated values of the query-time knob "
                                                "(ef, nprobe, eps)")
    ap.add_argument("--out", default=None, help="folder of the report (default docs/benchmarks/)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: exact and fastpu on 2,000 items and 200 users, results and "
                         "report in a temporary folder")
    args = ap.parse_args()
    if args.quick:
        quick()
        return
    if args.what is None:
        ap.error("say what to do: run or report (or --quick)")
    if args.what == "report":
        report(args.out)
        return
    params = {}
    for p in args.param:
        key, value = p.split("=", 1)
        params[key] = json.loads(value) if value[:1].isdigit() or value[:1] in "[{-" else value
    sweep = [json.loads(v) for v in args.sweep.split(",") if v]
    run(args.backend, params, sweep)


def quick() -> None:
    """Both steps at a small size, into a temporary folder."""
    global N_ITEMS, N_USERS, EXACT, RESULTS
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench_ann_quick_"))
    N_ITEMS, N_USERS = 2000, 200
    EXACT, RESULTS = tmp / "exact.npy", tmp / "bench_ann.jsonl"
    for backend in ("exact", "fastpu"):
        run(backend, {}, [])
    report(tmp)
    print(f"wrote {tmp / 'bench_ann.md'}")


if __name__ == "__main__":
    main()
