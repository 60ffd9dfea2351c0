"""Property-based sweep: malformed and extreme inputs to every public function.

For each public function, a valid call is perturbed in one argument at a time with a value
drawn from a pool of bad or unusual inputs of that argument's kind. The only acceptable
outcomes are

* a result whose numbers are all finite (a :class:`fastpu.ConvergenceWarning` may come with
  it), or
* a ``ValueError`` / ``TypeError`` (or a ``FloatingPointError`` from a diverging fit, or an
  ``OSError`` for a file path, which names the path itself) whose message names the
  perturbed argument.

The table ``CASES`` has one entry per public function: how to make a valid call and which
arguments to perturb with which kind of value. A new public function is covered by adding
one ``Case(...)`` line; a new kind of value by adding a pool to ``POOLS``.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import warnings
from typing import Callable

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastpu as fp
from fastpu import (baselines, compare, csrr, datasets, distributed, fbgd, homf, metrics, ocmf, optim,
                    select, split)
from fastpu import ConvergenceWarning

M, N, K = 12, 9, 2
# examples per public function; raise it for a longer campaign (FASTPU_FUZZ_EXAMPLES=1000)
EXAMPLES = int(os.environ.get("FASTPU_FUZZ_EXAMPLES", "30"))


# ----------------------------------------------------------------------------- shared valid data

class _Ctx:
    """Valid inputs built once (lazily): a small PU matrix, a fitted model, problems, files."""

    _cache: dict = {}

    def __getattr__(self, name):
        if name.startswith("_"):          # dunders (inspect, doctest) and missing makers
            raise AttributeError(name)
        if name not in self._cache:
            self._cache[name] = getattr(self, "_make_" + name)()
        return self._cache[name]

    def _make_Y(self):
        return fp.datasets.synthetic(M, N, rank=2, density=0.35, seed=3).Y

    def _make_split(self):
        return fp.split.holdout(self.Y, test_frac=0.3, seed=0)

    def _make_model(self):
        return fp.ocmf.fit(self.split[0], K, n_iter=2)

    def _make_csrr_model(self):
        return fp.csrr.fit(self.Y, K, n_iter=2)

    def _make_A(self):
        return fp.homf.transition_matrix(self.Y)

    def _make_graph(self):
        rng = np.random.default_rng(0)
        S = sp.random_array((M, M), density=0.3, random_state=rng, format="csr")
        return sp.csr_array(S + S.T)

    def _make_csv(self):
        import tempfile
        d = tempfile.mkdtemp(prefix="fastpu-fuzz-")
        path = f"{d}/pairs.csv"
        with open(path, "w") as fh:
            fh.write("user,item,value\nu1,i1,1\nu2,i1,3\nu2,i2,1\n")
        return path

    def _make_npz(self):
        path = self.csv[:-4] + ".npz"
        sp.save_npz(path, sp.csr_matrix(self.Y))
        return path

    def _make_model_file(self):
        path = self.csv[:-4] + "-model.npz"
        self.model.save(path)
        return path

    def _make_xc(self):
        path = self.csv[:-4] + "-xc.txt"
        with open(path, "w") as fh:
            fh.write("2 3 4\n0,2 1:0.5\n3 0:1 2:2\n")
        return path

    def _make_arff(self):
        path = self.csv[:-4] + ".arff"
        with open(path, "w") as fh:
            fh.write("@relation t\n@attribute x numeric\n@attribute a {0,1}\n@attribute b {0,1}\n"
                     "@data\n0.5,1,0\n2,1,1\n")
        return path

    def _make_xml(self):
        path = self.csv[:-4] + ".xml"
        with open(path, "w") as fh:
            fh.write('<labels><label name="a"/><label name="b"/></labels>')
        return path

    def _make_tensor(self):
        rng = np.random.default_rng(0)
        x, h, y = rng.integers(0, 6, 40), rng.integers(0, 3, 40), rng.integers(0, 5, 40)
        return fp.fbgd.triples_to_pairs(x, h, y, shape=(6, 3, 5))

    def _make_fbgd_model(self):
        return fp.fbgd.fit(self.Y, K, n_iter=2, biases=True)

    def _make_tensor_model(self):
        Y, pairs = self.tensor
        return fp.fbgd.fit_tensor(Y, K, pairs=pairs, tensor="cp", n_iter=2)

    def _make_homf_model(self):
        return fp.homf.fit(self.split[0], K, T=2, n_iter=1)

    # hostile files: what is not a regular file, or declares more than it holds
    def _make_fifo(self):
        path = os.path.dirname(self.csv) + "/pipe.csv"
        os.mkfifo(path)
        return path

    def _make_huge_file(self):
        path = os.path.dirname(self.csv) + "/huge.csv"
        with open(path, "wb") as fh:
            fh.truncate(100 << 30)             # 100 GB of holes: nothing on disk
        return path

    def _make_bomb_npz(self):
        import io
        import zipfile

        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                      "shape": (10**11,)})
        path = os.path.dirname(self.csv) + "/bomb.npz"
        with zipfile.ZipFile(self.model_file) as src, zipfile.ZipFile(path, "w") as dst:
            for name in src.namelist():
                dst.writestr(name, header.getvalue() + bytes(64) if name == "a0.npy" else src.read(name))
        return path


CTX = _Ctx()


@pytest.fixture(autouse=True, scope="module")
def _small_memory_limit():
    """Legal but huge requests (k, m, n_x = 10**8) are refused by the memory guard, not run: the
    machine is shared, and the guard is what is being tested."""
    saved = fp._core.memory.MEMORY_LIMIT
    fp._core.memory.MEMORY_LIMIT = 256 << 20
    yield
    fp._core.memory.MEMORY_LIMIT = saved


class _Quadratic:
    """½‖x − 1‖² + 0.1‖x‖²: fun, grad, hessp, prox (for tron, gd, apg, trust_region_cg)."""

    def fun(self, x):
        return 0.5 * float(np.sum((x - 1.0) ** 2)) + 0.1 * float(x @ x)

    def grad(self, x):
        return (x - 1.0) + 0.2 * x

    def hessp(self, s):
        return 1.2 * s

    def prox(self, v, step):
        return v


# ----------------------------------------------------------------------------- pools of bad values

def _edited(model, params=None, extras=None):
    """``model`` with entries of params / extras replaced (what an edited model file holds)."""
    return dataclasses.replace(model, params={**model.params, **(params or {})},
                               extras={**model.extras, **(extras or {})})


def _in_place(edit):
    """CTX.Y with its arrays edited in place: scipy's cached canonical flag stays True."""
    def make():
        Y = sp.csr_array(CTX.Y.copy())
        assert Y.has_canonical_format
        r = next(r for r in range(Y.shape[0]) if Y.indptr[r + 1] - Y.indptr[r] >= 2)
        lo = Y.indptr[r]
        if edit == "unsorted":
            Y.indices[lo], Y.indices[lo + 1] = Y.indices[lo + 1], Y.indices[lo]
        else:
            Y.indices[lo + 1] = Y.indices[lo]
        return Y
    return make


def _bad_csr(kind):
    """Malformed or unusual sparse matrices (built fresh for every draw)."""
    def out_of_range():
        Y = sp.csr_array(CTX.Y.copy())
        Y.indices[-1] = 10**6
        return Y

    def bad_indptr():
        Y = sp.csr_array(CTX.Y.copy())
        Y.indptr = Y.indptr[:-2]
        return Y

    def decreasing_indptr():
        Y = sp.csr_array(CTX.Y.copy())
        Y.indptr[2] = Y.indptr[1] - 1 if Y.indptr[1] > 0 else 5
        return Y

    def with_value(v):
        def make():
            Y = sp.csr_array(CTX.Y.copy())
            Y.data[0] = v
            return Y
        return make

    return [out_of_range, bad_indptr, decreasing_indptr, with_value(np.nan), with_value(np.inf),
            with_value(-3.0), with_value(1e300), with_value(0.0),
            lambda: sp.csr_array((0, 0)), lambda: sp.csr_array((M, N)), lambda: CTX.Y.T,
            lambda: sp.csr_array((1, 1)), lambda: CTX.Y.toarray(), lambda: CTX.Y.tolil(),
            lambda: sp.coo_array(CTX.Y), lambda: None, lambda: "Y", lambda: [[1, 0], [0, 1]],
            lambda: sp.csr_array((300, 200)), lambda: sp.csr_array(CTX.Y, dtype=np.complex128),
            lambda: sp.csr_array(CTX.Y, dtype=np.int8),
            # not canonical in fact, the flag saying it is
            _in_place("unsorted"), _in_place("duplicate"),
            # a shape declared far beyond the entries: 800 GB of row pointers for one entry
            lambda: sp.coo_array((np.ones(1), ([5], [3])), shape=(10**11, N)),
            lambda: sp.coo_array((np.ones(1), ([5], [3])), shape=(M, 10**11))]


def _bad_dense(shape):
    rows = shape[0]
    return [lambda: np.full(shape, np.nan), lambda: np.full(shape, np.inf),
            lambda: np.full(shape, 1e300), lambda: np.zeros(shape), lambda: -np.ones(shape),
            lambda: np.ones((rows + 1,) + tuple(shape[1:])), lambda: np.ones(shape[:1]),
            lambda: np.ones(tuple(shape) + (2,)), lambda: np.ones((rows, 0)),
            lambda: np.full(shape, "a"), lambda: sp.csr_array(np.ones((rows, 2))), lambda: None,
            lambda: "x", lambda: np.ones(shape, dtype=np.float32), lambda: np.ones(shape, dtype=complex),
            lambda: [[1.0] * 2] * rows]


POOLS: dict[str, list[Callable]] = {
    "csr": _bad_csr("csr"),
    "int": [lambda: -1, lambda: 0, lambda: 10**12, lambda: 2**70, lambda: 1.5, lambda: "3",
            lambda: None, lambda: True, lambda: np.int64(2), lambda: np.uint8(1), lambda: float("nan"),
            lambda: [2], lambda: np.array([3])],
    # iteration counts: huge values are legal requests for long runs, so they are not drawn
    "iters": [lambda: -1, lambda: 0, lambda: 1.5, lambda: "3", lambda: None, lambda: True, lambda: np.int64(1),
              lambda: float("nan"), lambda: [2], lambda: 2**70],
    "real": [lambda: float("nan"), lambda: float("inf"), lambda: -float("inf"), lambda: -1.0, lambda: 0.0,
             lambda: 1e300, lambda: -1e300, lambda: 1e-300, lambda: "a", lambda: None, lambda: True,
             lambda: np.float32(0.5), lambda: complex(1, 1), lambda: [1.0], lambda: 10**400],
    "choice": [lambda: "bogus", lambda: None, lambda: 1, lambda: "", lambda: ["a"], lambda: b"e"],
    "callable": [lambda: 1, lambda: "f", lambda: (lambda info: True), lambda: (lambda: None)],
    "seed": [lambda: -1, lambda: 1.5, lambda: "s", lambda: 2**70, lambda: np.random.default_rng(0),
             lambda: [1, 2], lambda: np.int64(5)],
    "bool": [lambda: "yes", lambda: 2, lambda: None, lambda: np.bool_(False), lambda: [True]],
    # verbose takes a bool or an int; True would print, so only quiet valid values are drawn
    "verbose": [lambda: "yes", lambda: "0", lambda: None, lambda: 0.0, lambda: [True], lambda: object(),
                lambda: np.bool_(False), lambda: np.int64(0), lambda: 0],
    "users": [lambda: [], lambda: [1.5], lambda: [-1], lambda: [10**9], lambda: "0", lambda: [[0, 1]],
              lambda: np.array([0], dtype=np.uint8), lambda: None, lambda: [0, 0, 1], lambda: 3,
              lambda: [True], lambda: {0: 1}],
    "ks": [lambda: 0, lambda: [], lambda: [0, 5], lambda: 10**12, lambda: "5", lambda: [1.5], lambda: None,
           lambda: (5, 5, 1), lambda: N + 5, lambda: np.array([[1]])],
    "threads": [lambda: 0, lambda: -1, lambda: 10**6, lambda: 1.0, lambda: "2", lambda: np.int64(1),
                lambda: True],
    "model": [lambda: None, lambda: "model", lambda: CTX.Y,
              lambda: fp.Factorization(np.ones((M, 3)), np.ones((N, 2))),
              lambda: fp.Factorization(np.ones((M + 1, K)), np.ones((N, K))),
              lambda: fp.Factorization(np.full((M, K), np.nan), np.ones((N, K))),
              # edited models: params and extras a fit would not make, repeated ids, a
              # CSC sparse part; every use refuses them by name or serves them right
              lambda: _edited(CTX.model, params={"loss": "bogus", "a_bar": "x"}),
              lambda: _edited(CTX.homf_model, params={"T": 10**9}),
              lambda: _edited(CTX.homf_model, extras={"A": CTX.homf_model.extras["A"][:5, :5]}),
              lambda: _edited(CTX.homf_model, extras={"V": CTX.homf_model.extras["V"][:, :1]}),
              lambda: _edited(CTX.fbgd_model, params={"k": K + 3}),
              lambda: dataclasses.replace(CTX.model, item_ids=np.zeros(N, dtype=np.int64)),
              lambda: dataclasses.replace(CTX.csrr_model, V=CTX.csrr_model.V.tocsc()),
              lambda: _edited(CTX.tensor_model, extras={"V_h": CTX.tensor_model.extras["V_h"][:, :1]})],
    "graph": [lambda: -CTX.graph, lambda: sp.csr_array(np.triu(np.ones((M, M)))), lambda: np.ones((M, M + 1)),
              lambda: sp.csr_array((M + 1, M + 1)), lambda: "g", lambda: np.full((M, M), np.nan)],
    "path": [lambda: "/nonexistent/file.csv", lambda: None, lambda: 3, lambda: "/tmp",
             lambda: CTX.npz, lambda: CTX.csv,
             # not a regular file (never read for ever or waited on), too large, a member header
             # declaring 10¹¹ elements (never allocated)
             lambda: "/dev/zero", lambda: CTX.fifo, lambda: CTX.huge_file, lambda: CTX.bomb_npz],
    # a text encoding, or a codec that is not one (LookupError)
    "encoding": [lambda: "hex", lambda: "rot13", lambda: "undefined", lambda: "no-such-codec", lambda: None,
                 lambda: 3, lambda: "idna", lambda: "latin-1"],
    "name": [lambda: "no-such-data", lambda: None, lambda: 3, lambda: "", lambda: ["ml-100k"]],
    "problem": [lambda: None, lambda: object(), lambda: "problem"],
    "any": [lambda: None, lambda: "x", lambda: float("nan"), lambda: -1, lambda: 10**12, lambda: object()],
}


def _pool(kind):
    if isinstance(kind, tuple):          # ("dense", shape)
        return _bad_dense(kind[1])
    return POOLS[kind]


_ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def _mutated_csr(draw):
    """CTX.Y with one stored index, indptr entry or value overwritten by a generated one."""
    Y = sp.csr_array(CTX.Y.copy())
    where = draw(st.sampled_from(["indices", "indptr", "data"]))
    arr = getattr(Y, where)
    pos = draw(st.integers(0, arr.size - 1))
    if where == "data":
        arr[pos] = draw(_ANY_FLOAT)
    else:
        arr[pos] = draw(st.integers(-5, 2 * max(Y.shape) + 5) | st.integers(-(2**62), 2**62))
    return Y


def _generated(kind):
    """Generated extremes on top of the fixed pools (None: the pool alone)."""
    if isinstance(kind, tuple):
        return hnp.arrays(np.float64, kind[1], elements=_ANY_FLOAT)
    return {"real": _ANY_FLOAT, "int": st.integers(-(2**64), 2**64), "csr": _mutated_csr(),
            "iters": st.integers(-(2**64), 0) | st.integers(2**62 + 1, 2**64)}.get(kind)


def _values(kind):
    """Strategy of bad or extreme values of one kind: the fixed pool, plus generated ones."""
    pool = st.sampled_from(_pool(kind)).map(lambda make: make())
    gen = _generated(kind)
    return pool if gen is None else st.one_of(pool, gen)


# ----------------------------------------------------------------------------- outcome checks

def _finite(x, path="result"):
    """Assert that every number reachable from x is finite."""
    if isinstance(x, (bool, np.bool_, str, bytes, type(None))) or callable(x) and not hasattr(x, "shape"):
        return
    if isinstance(x, (int, np.integer)):
        return
    if isinstance(x, (float, np.floating)):
        assert math.isfinite(x), f"{path} is {x}"
        return
    if sp.issparse(x):
        _finite(np.asarray(x.data), path + ".data")
        return
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc":
            assert np.isfinite(x).all(), f"{path} has {int(x.size - np.isfinite(x).sum())} non-finite values"
        elif x.dtype.kind == "O":
            for i, v in enumerate(x.ravel()[:50]):
                _finite(v, f"{path}[{i}]")
        return
    if isinstance(x, dict):
        for key, v in x.items():
            _finite(v, f"{path}[{key!r}]")
        return
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            _finite(v, f"{path}[{i}]")
        return
    if dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            _finite(getattr(x, f.name), f"{path}.{f.name}")


def _check_recommend(result, caught):
    items, scores = result
    assert items.dtype.kind == "i"
    empty = items < 0
    assert np.isfinite(scores[~empty]).all() and np.all(scores[empty] == -np.inf)


def _check_evaluate(result, caught):
    auc = result.get("auc")
    if auc is not None and math.isnan(auc):     # undefined AUC is reported with a warning
        assert any("auc is undefined" in str(w.message) for w in caught)
        result = {k: v for k, v in result.items() if k != "auc"}
    _finite(result)


@dataclasses.dataclass
class Case:
    """One public function: ``fn(**valid())`` must succeed; ``perturb`` maps argument -> kind.

    ``names`` maps an argument to the words its error message may use instead of its name.
    ``known`` maps an argument to the reason its perturbations still fail: they are left out
    of the property test and run by ``test_known_gaps`` as strict xfails, which start failing
    (XPASS) the day the gap is closed, so that the entry is then removed.
    """

    name: str
    fn: Callable
    valid: Callable[[], dict]
    perturb: dict
    check: Callable = lambda result, caught: _finite(result)
    names: dict = dataclasses.field(default_factory=dict)
    known: dict = dataclasses.field(default_factory=dict)


def _Yk(**kw):
    return lambda: dict(Y=CTX.Y, k=K, **kw)


def _ev():
    tr, te = CTX.split
    return dict(model=CTX.model, Y_train=tr, Y_test=te)


class _ClusterWouldStart(Exception):
    """Raised in place of starting a Dask cluster: every boundary check has passed."""


def _distributed_fit_without_cluster(**kwargs):
    """fastpu.distributed.fit with its cluster start replaced by a sentinel (result None)."""
    def refuse(*args, **kw):
        raise _ClusterWouldStart
    saved = distributed._client
    distributed._client = refuse
    try:
        return distributed.fit(**kwargs)
    except _ClusterWouldStart:
        return None
    finally:
        distributed._client = saved


FIT_COMMON = dict(Y="csr", k="int", n_iter="iters", seed="seed", n_threads="threads", callback="callable",
                  verbose="verbose")

CASES = [
    # fastpu
    Case("evaluate", fp.evaluate, _ev, dict(model="model", Y_train="csr", Y_test="csr", k="ks",
                                            metrics="choice", users="users", n_threads="threads"),
         check=_check_evaluate),
    Case("recommend", fp.recommend, lambda: dict(model=CTX.model, Y_seen=CTX.Y),
         dict(model="model", Y_seen="csr", users="users", n="int"), check=_check_recommend),
    Case("set_num_threads", lambda n: fp.set_num_threads(fp.set_num_threads(n)), lambda: dict(n=1),
         dict(n="threads"), names={"n": ("n_threads",)}),
    Case("get_num_threads", lambda: fp.get_num_threads(), dict, {}),
    Case("Factorization.scores", lambda users: CTX.model.scores(users), lambda: dict(users=[0, 1]),
         dict(users="users")),
    Case("CSRRModel.scores", lambda users: CTX.csrr_model.scores(users), lambda: dict(users=[0, 1]),
         dict(users="users")),
    # metrics
    Case("metrics.evaluate_rated", metrics.evaluate_rated,
         lambda: dict(model=CTX.model, Y_test_ratings=CTX.split[1] * 5.0),
         dict(model="model", Y_test_ratings="csr", k="ks", threshold="real", users="users",
              metrics="choice"), check=_check_evaluate),
    Case("metrics.sampled_auc", metrics.sampled_auc, _ev,
         dict(model="model", Y_train="csr", Y_test="csr", n_negatives="iters", seed="seed", users="users",
              n_threads="threads")),
    Case("metrics.popularity", metrics.popularity, lambda: dict(Y=CTX.Y), dict(Y="csr")),
    # ocmf
    Case("ocmf.fit", ocmf.fit, _Yk(n_iter=1),
         dict(FIT_COMMON, loss="choice", rho="real", p=("dense", (M,)), q=("dense", (N,)), a_bar="real",
              user_features=("dense", (M, 3)), item_features=("dense", (N, 2)), user_graph="graph",
              lam="real", lam_graph="real", negatives="choice", neg_ratio="real", solver="choice",
              n_inner="iters", fast_path="bool", newton_steps="iters", cg_steps="iters", init="any",
              init_std="real", dense_limit="int", dtype="choice")),
    Case("ocmf.objective", ocmf.objective,
         lambda: dict(Y=CTX.Y, W=np.ones((M, K)), H=np.ones((N, K)), rho=0.1),
         dict(Y="csr", W=("dense", (M, K)), H=("dense", (N, K)), loss="choice", rho="real", a_bar="real",
              lam="real", negatives="choice", item_graph="graph", n_threads="threads")),
    Case("ocmf.nystrom_features", ocmf.nystrom_features,
         lambda: dict(X=np.random.default_rng(0).normal(size=(M, 3)), n_landmarks=4),
         dict(X=("dense", (M, 3)), n_landmarks="int", gamma="real", append="bool", n_kmeans_iter="iters",
              seed="seed", eig_floor="real")),
    Case("ocmf.demo_configs", ocmf.demo_configs, dict, {}),
    # fbgd
    Case("fbgd.fit", fbgd.fit, _Yk(n_iter=2),
         dict(FIT_COMMON, user_features=("dense", (M, 3)), item_features=("dense", (N, 2)), alpha0="real",
              rho="real", neg_weights=("dense", (N,)), pos_weight="real", r_pos="real", r_neg="real",
              lr="real", update="choice", optimizer="choice", biases="bool", lam="real", init="any",
              init_std="real")),
    Case("fbgd.objective", fbgd.objective, lambda: dict(Y=CTX.Y, P=np.ones((M, K)), Q=np.ones((N, K))),
         dict(Y="csr", P=("dense", (M, K)), Q=("dense", (N, K)), neg_weights=("dense", (N,)),
              pos_weight="real", r_pos="real", r_neg="real")),
    Case("fbgd.parameters", fbgd.parameters, lambda: dict(model=CTX.fbgd_model), dict(model="model")),
    Case("fbgd.negative_weights", fbgd.negative_weights, lambda: dict(Y=CTX.Y, alpha0=2.0, rho=0.5),
         dict(Y="csr", alpha0="real", rho="real")),
    Case("fbgd.demo_configs", fbgd.demo_configs, dict, {}),
    # csrr
    Case("csrr.fit", csrr.fit, _Yk(n_iter=2),
         dict(FIT_COMMON, variant="choice", alpha="real", lam1="real", lam2="real", eta="real",
              loss="choice", n_inner="iters", inner_tol="real", restart="choice", svd_method="choice",
              dense_limit="int")),
    Case("csrr.fit(I)", csrr.fit, lambda: dict(Y=CTX.Y, variant="I", n_iter=2),
         dict(Y="csr", alpha="real", lam1="real", lam2="real", eta="real", restart="choice",
              svd_method="choice", dense_limit="int", k="int")),
    Case("csrr.objective", csrr.objective, lambda: dict(Y=CTX.Y, P=np.ones((M, K)), Q=np.ones((N, K))),
         dict(Y="csr", U=("dense", (M, N)), V="csr", P=("dense", (M, K)), Q=("dense", (N, K)),
              variant="choice", alpha="real", lam1="real", lam2="real", dense_limit="int")),
    Case("csrr.demo_configs", csrr.demo_configs, dict, {}),
    # homf
    Case("homf.transition_matrix", homf.transition_matrix, lambda: dict(R=CTX.Y),
         dict(R="csr", user_graph="graph", item_graph=("dense", (N, N)), alpha="real", g="choice")),
    Case("homf.walk_columns", homf.walk_columns, lambda: dict(A=CTX.A, cols=[0, 3], T=3),
         dict(A="csr", cols="users", T="iters", n_threads="threads")),
    Case("homf.walk_rows", homf.walk_rows, lambda: dict(A=CTX.A, rows=[1], T=2),
         dict(A="csr", rows="users", T="iters", n_threads="threads")),
    Case("homf.objective", homf.objective,
         lambda: dict(A=CTX.A, U=np.ones((M + N, K)), V=np.ones((M + N, K)), T=2, lam=0.1),
         dict(A="csr", U=("dense", (M + N, K)), V=("dense", (M + N, K)), T="iters", lam="real", mode="choice",
              m_users="int", block_size="int", n_threads="threads")),
    Case("homf.fit", homf.fit, _Yk(n_iter=1, T=2),
         dict(FIT_COMMON, T="iters", alpha="real", user_graph="graph", item_graph=("dense", (N, N)), g="choice",
              lam="real", mode="choice", block_size="int")),
    Case("homf.demo_configs", homf.demo_configs, dict, {}),
    # prox
    Case("optim.project_box", optim.project_box, lambda: dict(x=np.linspace(-1, 2, 5)),
         dict(x=("dense", (5,)), lo="real", hi="real")),
    Case("optim.soft_threshold", optim.soft_threshold, lambda: dict(x=np.linspace(-1, 2, 5), tau=0.5),
         dict(x=("dense", (5,)), tau="real")),
    Case("optim.svt", optim.svt, lambda: dict(M=np.arange(12.0).reshape(4, 3), tau=1.0),
         dict(M=("dense", (4, 3)), tau="real", method="choice", k0="int", seed="seed")),
    Case("optim.svt_factors", optim.svt_factors, lambda: dict(M=np.arange(12.0).reshape(4, 3), tau=1.0),
         dict(M=("dense", (4, 3)), tau="real", method="choice", k0="int", seed="seed")),
    # split
    Case("split.holdout", split.holdout, lambda: dict(Y=CTX.Y), dict(Y="csr", test_frac="real", seed="seed")),
    Case("split.held_out_users", split.held_out_users, lambda: dict(Y=CTX.Y, users_frac=0.3),
         dict(Y="csr", users_frac="real", test_frac="real", seed="seed"),
         check=lambda result, caught: None),
    Case("split.leave_one_out", split.leave_one_out, lambda: dict(Y=CTX.Y),
         dict(Y="csr", timestamps="csr", seed="seed")),
    Case("split.validation_split", split.validation_split, lambda: dict(Y_train=CTX.Y),
         dict(Y_train="csr", frac="real", seed="seed")),
    Case("split.split_by_mask", split.split_by_mask, lambda: dict(Y=CTX.Y, test_mask=CTX.split[1]),
         dict(Y="csr", test_mask="csr")),
    # datasets (no download: only the perturbed, invalid names are ever loaded)
    Case("datasets.load", datasets.load, lambda: dict(name="ml-100k"), dict(name="name")),
    Case("datasets.binarize", datasets.binarize, lambda: dict(Y=CTX.Y), dict(Y="csr", threshold="real")),
    Case("datasets.synthetic", datasets.synthetic, lambda: dict(m=M, n=N, rank=2, density=0.2),
         dict(m="int", n="int", rank="int", density="real", seed="seed", hidden_frac="real")),
    Case("datasets.from_pairs", datasets.from_pairs,
         lambda: dict(users=["a", "b", "a"], items=[1, 2, 2], values=[1.0, 2.0, 3.0]),
         dict(users="users", items="users", values=("dense", (3,)))),
    Case("datasets.read_csv", datasets.read_csv, lambda: dict(path=CTX.csv),
         dict(path="path", delimiter="choice", header="bool", encoding="encoding")),
    Case("datasets.load_npz", datasets.load_npz, lambda: dict(path=CTX.npz), dict(path="path")),
    Case("datasets.data_home", datasets.data_home, dict, {}),
    # never downloads: the valid call is not made (see test_every_valid_call_succeeds) and every
    # drawn name is refused before pip runs
    Case("datasets.download", datasets.download, lambda: dict(name="filmtrust"), dict(name="name")),
    Case("datasets.read_xc", datasets.read_xc, lambda: dict(path=CTX.xc), dict(path="path")),
    Case("datasets.read_arff", datasets.read_arff, lambda: dict(path_arff=CTX.arff, path_xml=CTX.xml),
         dict(path_arff="path", path_xml="path")),
    # model files, serving, fold-in
    Case("load_model", fp.load_model, lambda: dict(path=CTX.model_file), dict(path="path")),
    Case("cache_dir", fp.cache_dir, dict, {}),
    # prunes only folders whose installation is gone: safe on the real cache
    Case("clear_cache", fp.clear_cache, dict, dict(stale="bool")),
    Case("similar_items", fp.similar_items, lambda: dict(model=CTX.model, query=[0, 2], n=3),
         dict(model="model", query="users", items="users", exclude="users", n="int", ids="bool"),
         check=_check_recommend),
    Case("similar_users", fp.similar_users, lambda: dict(model=CTX.model, query=[1], n=3),
         dict(model="model", query="users", users="users", exclude="users", n="int", ids="bool"),
         check=_check_recommend),
    Case("partial_fit_users", fp.partial_fit_users,
         lambda: dict(model=CTX.model, new_rows=CTX.Y[:3], user_ids=[0, 1, 2], max_iter=5),
         dict(model="model", new_rows="csr", user_ids="users", p=("dense", (3,)), q=("dense", (N,)),
              tol="real", max_iter="iters", seed="seed", n_threads="threads")),
    Case("partial_fit_items", fp.partial_fit_items,
         lambda: dict(model=CTX.model, new_rows=CTX.Y.T.tocsr()[:3], item_ids=[0, 1, 2], max_iter=5),
         dict(model="model", new_rows="csr", item_ids="users", p=("dense", (M,)), q=("dense", (3,)),
              tol="real", max_iter="iters", seed="seed", n_threads="threads")),
    Case("fold_in", fp.fold_in, lambda: dict(model=CTX.model, Y_new=CTX.Y[:3], max_iter=5),
         dict(model="model", Y_new="csr", p=("dense", (3,)), q=("dense", (N,)), tol="real",
              max_iter="iters", seed="seed", dense_limit="int", n_threads="threads")),
    Case("metrics.cost_sensitive", metrics.cost_sensitive, _ev,
         dict(model="model", Y_train="csr", Y_test="csr", threshold="real", mu_p="real", c_p="real",
              users="users", n_threads="threads")),
    # baselines
    Case("baselines.popularity", baselines.popularity, lambda: dict(Y=CTX.Y), dict(Y="csr")),
    Case("baselines.wrmf_weights", baselines.wrmf_weights, lambda: dict(Y=CTX.Y, alpha=2.0),
         dict(Y="csr", alpha="real")),
    Case("baselines.wrmf", baselines.wrmf, _Yk(n_iter=2),
         dict(FIT_COMMON, alpha="real", lam="real")),
    Case("baselines.ease", baselines.ease, lambda: dict(Y=CTX.Y, lam=10.0),
         dict(Y="csr", lam="real", n_iter="iters", seed="seed", n_threads="threads",
              callback="callable", verbose="verbose")),
    Case("baselines.item_knn", baselines.item_knn, lambda: dict(Y=CTX.Y, n_neighbors=5),
         dict(Y="csr", n_neighbors="int", shrink="real", n_iter="iters", seed="seed",
              n_threads="threads", callback="callable", verbose="verbose")),
    Case("baselines.implicit_als", baselines.implicit_als, _Yk(n_iter=2, n_threads=1),
         dict(FIT_COMMON, regularization="real", alpha="real")),
    Case("baselines.implicit_bpr", baselines.implicit_bpr, _Yk(n_iter=2, n_threads=1),
         dict(FIT_COMMON, learning_rate="real", regularization="real")),
    # fbgd tensor models
    Case("fbgd.triples_to_pairs", fbgd.triples_to_pairs,
         lambda: dict(x=[0, 0, 1], h=[2, 2, 0], y=[1, 3, 1], values=[1.0, 2.0, 1.0]),
         dict(x="users", h="users", y="users", values=("dense", (3,)), shape="any")),
    Case("fbgd.fit_tensor", fbgd.fit_tensor,
         lambda: dict(Y=CTX.tensor[0], k=K, pairs=CTX.tensor[1], tensor="cp", n_iter=2),
         dict(Y="csr", k="int", pairs=("dense", (15, 2)), tensor="choice", n_x="int", n_h="int",
              alpha0="real", rho="real", neg_weights=("dense", (5,)), pos_weight="real", r_pos="real",
              r_neg="real", lr="real", n_iter="iters", optimizer="choice", lam="real", init_std="real",
              seed="seed", callback="callable", n_threads="threads", verbose="verbose")),
    Case("fbgd.tensor_objective", fbgd.tensor_objective,
         lambda: dict(Y=CTX.tensor[0], VX=np.ones((6, 1)), VH=np.ones((3, 1)), VY=np.ones((5, 1)),
                      pairs=CTX.tensor[1], tensor="cp"),
         dict(Y="csr", VX=("dense", (6, 1)), VH=("dense", (3, 1)), VY=("dense", (5, 1)),
              pairs=("dense", (15, 2)), tensor="choice", neg_weights=("dense", (5,)), pos_weight="real",
              r_pos="real", r_neg="real")),
    Case("fbgd.pair_model", fbgd.pair_model, lambda: dict(model=CTX.tensor_model, pairs=[[1, 0], [2, 1]]),
         dict(model="model", pairs="users")),
    # model selection and comparison (tiny budgets)
    Case("select.default_space", select.default_space, lambda: dict(method="ocmf", Y=CTX.Y),
         dict(method="choice", Y="csr")),
    Case("select.search", select.search,
         lambda: dict(method="ocmf", Y=CTX.Y, space={"lam": [0.1, 1.0]}, k=K, n_iter=2, metric="ndcg@5"),
         dict(method="choice", Y="csr", space="any", validation="real", metric="choice", n_trials="int",
              seed="seed", refit="bool", n_threads="threads", verbose="verbose")),
    Case("select.tune", select.tune,
         lambda: dict(method="ocmf", Y=CTX.Y, budget=2, k=K, n_iter=2, metric="ndcg@5"),
         dict(method="choice", Y="csr", budget="iters", space="any", validation="real", metric="choice",
              seed="seed", refit="bool", n_threads="threads", verbose="verbose")),
    Case("compare.compare", compare.compare,
         lambda: dict(Y=CTX.Y, methods=["popularity", ("ocmf", "ocmf", {"k": K, "n_iter": 2})],
                      splits=2, budget=1),
         dict(Y="csr", methods="choice", splits="iters", test_frac="real", budget="iters", metric="choice",
              seed="seed", params="any", n_threads="threads", verbose="verbose")),
    # distributed: only the checks made before a cluster starts (none is ever started here)
    Case("distributed.fit", _distributed_fit_without_cluster, _Yk(method="ocmf", n_iter=1),
         dict(Y="csr", method="choice", n_blocks="int", n_workers="int", negatives="choice",
              shape="any", verbose="verbose")),
    # solvers
    Case("optim.tron", optim.tron, lambda: dict(problem=_Quadratic(), x0=np.zeros(3)),
         dict(problem="problem", x0=("dense", (3,)), tol="real", max_iter="iters", cg_tol="real",
              max_cg="iters")),
    Case("optim.gd", optim.gd, lambda: dict(problem=_Quadratic(), x0=np.zeros(3)),
         dict(problem="problem", x0=("dense", (3,)), tol="real", max_iter="iters", beta="real",
              sigma="real", max_backtrack="iters")),
    Case("optim.trust_region_cg", optim.trust_region_cg,
         lambda: dict(hessp=_Quadratic().hessp, g=np.ones(3), delta=1.0),
         dict(hessp="callable", g=("dense", (3,)), delta="real", tol="real", max_iter="iters")),
    Case("optim.apg", optim.apg, lambda: dict(problem=_Quadratic(), x0=np.zeros(3), step=0.5, n_iter=5),
         dict(problem="problem", x0=("dense", (3,)), step="real", n_iter="iters", restart="choice",
              momentum="bool", line_search="bool", shrink="real", tol="real", callback="callable")),
]


# ----------------------------------------------------------------------------- the property

def _public_functions():
    """Every public function of the package, by its public names: fastpu.__all__ and each public
    module's __all__ (a function exported by two modules, e.g. fastpu.model.load_model and fastpu.load_model,
    is one function with two names)."""
    found: dict[int, set[str]] = {}
    for name in fp.__all__:
        obj = getattr(fp, name)
        if inspect.ismodule(obj):
            for sub in getattr(obj, "__all__", ()):
                f = getattr(obj, sub)
                if inspect.isfunction(f):
                    found.setdefault(id(f), set()).add(f"{name}.{sub}")
        elif inspect.isfunction(obj):
            found.setdefault(id(obj), set()).add(name)
    return list(found.values())


def test_every_public_function_is_in_the_table():
    covered = {c.name.split("(")[0] for c in CASES}
    aliases = {"metrics.evaluate": "evaluate", "ocmf.nystrom_features": "ocmf.nystrom_features"}
    missing = sorted(min(names) for names in _public_functions()
                     if not any(f in covered or aliases.get(f) in covered for f in names))
    assert not missing, f"add a Case for: {missing}"


def test_every_valid_call_succeeds():
    for case in CASES:
        if case.name in ("datasets.load", "datasets.download"):
            continue                      # real data sets (and downloads) are tested in test_datasets.py
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = case.fn(**case.valid())
        case.check(result, caught)
        assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)], case.name


def _outcome_ok(case, arg, value):
    kwargs = dict(case.valid())
    kwargs[arg] = value
    names = case.names.get(arg, (arg,))
    if isinstance(value, str) and value.startswith("/"):
        names = names + (value,)          # OSError names a bad path by its value
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = case.fn(**kwargs)
        except (ValueError, TypeError, FloatingPointError, OSError) as exc:
            msg = str(exc)
            assert any(n in msg for n in names), (
                f"{case.name}({arg}={value!r:.80}) raised {type(exc).__name__} without naming "
                f"{' or '.join(names)}: {msg}")
            return
    case.check(result, caught)


@pytest.mark.parametrize("case", [c for c in CASES if set(c.perturb) - set(c.known)], ids=lambda c: c.name)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_bad_input_gives_a_finite_result_or_an_error_naming_the_argument(case, data):
    arg = data.draw(st.sampled_from(sorted(set(case.perturb) - set(case.known))), label="argument")
    value = data.draw(_values(case.perturb[arg]), label="value")
    _outcome_ok(case, arg, value)


_KNOWN = [pytest.param(c, arg, marks=pytest.mark.xfail(strict=True, reason=why), id=f"{c.name}-{arg}")
          for c in CASES for arg, why in sorted(c.known.items())] or [pytest.param(None, None, id="none")]


@pytest.mark.parametrize("case, arg", _KNOWN)
def test_known_gaps(case, arg):
    if case is None:                      # no gap left open: the table says so (never a skip)
        assert not any(c.known for c in CASES)
        return
    for make in _pool(case.perturb[arg]):
        _outcome_ok(case, arg, make())


@pytest.mark.parametrize("case", [c for c in CASES if c.perturb.get("verbose") == "verbose"],
                         ids=lambda c: c.name)
@pytest.mark.parametrize("value", ["yes", "0", None, 1.0, [True]], ids=repr)
def test_verbose_must_be_a_bool_or_an_int(case, value):
    # a string was taken for its truth value: verbose="0" printed every iteration
    with pytest.raises(TypeError, match=r"^verbose must be True or False \(or an int, 0 for quiet\), got "):
        case.fn(**dict(case.valid(), verbose=value))


def test_verbose_takes_numpy_bools_and_ints(capsys):
    fp.ocmf.fit(CTX.Y, K, n_iter=1, verbose=np.int64(1))
    assert "[ocmf] iter   1" in capsys.readouterr().err
    fp.ocmf.fit(CTX.Y, K, n_iter=1, verbose=np.bool_(False))
    assert capsys.readouterr().err == ""


def test_implicit_baselines_are_fuzzed():
    """implicit is in the test extra: its baselines are in the table like every public fit."""
    assert {"baselines.implicit_als", "baselines.implicit_bpr"} <= {c.name for c in CASES}


def test_distributed_fit_case_never_starts_a_cluster():
    assert _distributed_fit_without_cluster(Y=CTX.Y, k=K, n_iter=1) is None
    assert distributed._client.__name__ != "refuse"
