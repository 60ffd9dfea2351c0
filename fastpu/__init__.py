"""fastpu: learning from positive-unlabeled matrices, at the cost of the positives alone.

Four published methods under one roof, each a module of plain functions:

- :mod:`fastpu.ocmf` — one-class structured MF with side information (Yu et al.), TRON;
- :mod:`fastpu.fbgd` — fBGD all-sample batch gradient with Adagrad (Yuan et al.);
- :mod:`fastpu.csrr` — robust cost-sensitive low-rank + sparse recommendation (Yang et al.);
- :mod:`fastpu.homf` — higher-order MF of random-walk polynomials (Shah, Rao, Ding).

Every ``fit`` returns a :class:`Factorization`; use :func:`recommend` and :func:`evaluate`.
"""

import importlib as _importlib
import os as _os
from typing import TYPE_CHECKING, Any

# numba's OpenMP threads otherwise spin after each parallel kernel and fight BLAS's threads
# (and any other work) for the cores: measured on 2 cores, 2 threads ran up to 4x slower than
# one. Sleeping idle threads cost microseconds per kernel instead. An explicit setting wins;
# it must be in place before the first parallel kernel runs in the process.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ._version import __version__  # noqa: E402,F401 (the package version)

# Compiled kernels are cached in a per-user folder, never inside the installed package (files
# there outlive `pip uninstall` and shadow a later install); this must run before any kernel
# module is imported. See fastpu/_cache.py and the README's set-up section.
from . import _cache  # noqa: E402

_cache.install()
from ._cache import cache_dir, clear_cache  # noqa: E402

from .exceptions import ConvergenceWarning  # noqa: E402
from ._threads import get_num_threads, set_num_threads  # noqa: E402
# every fit returns a Factorization; model must also be imported before _serving (a cycle)
from .model import Factorization, load, recommend, similar_items, similar_users  # noqa: E402

# The method modules and the top-level functions are imported on first use (PEP 562): a script
# that fits one method does not pay for the others, nor for scipy.stats (select, compare) or
# dask (distributed). `fastpu.ocmf`, `from fastpu import evaluate` and `import fastpu.homf` work
# as before; see docs/bench_perf_firstrun.md for the import times.
_SUBMODULES = frozenset({"apg", "baselines", "compare", "csrr", "datasets", "distributed",
                         "exceptions", "fbgd", "homf", "metrics", "ocmf", "prox", "select", "split",
                         "tron"})
_FUNCTIONS = {"fold_in": "_fold_in", "evaluate": "metrics"}

if TYPE_CHECKING:
    from . import (apg, baselines, compare, csrr, datasets, distributed, fbgd, homf,  # noqa: F401
                   metrics, ocmf, prox, select, split, tron)
    from ._fold_in import fold_in  # noqa: F401
    from .metrics import evaluate  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    elif name in _FUNCTIONS:
        value = getattr(_importlib.import_module(f"{__name__}.{_FUNCTIONS[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ConvergenceWarning",
    "Factorization",
    "apg",
    "baselines",
    "cache_dir",
    "clear_cache",
    "compare",
    "csrr",
    "datasets",
    "distributed",
    "evaluate",
    "exceptions",
    "fbgd",
    "fold_in",
    "get_num_threads",
    "homf",
    "load",
    "metrics",
    "ocmf",
    "prox",
    "recommend",
    "select",
    "set_num_threads",
    "similar_items",
    "similar_users",
    "split",
    "tron",
]
