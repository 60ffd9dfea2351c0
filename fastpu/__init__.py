"""fastpu: learning from positive-unlabeled matrices, at the cost of the positives alone.

Four published methods under one roof, each a package of plain functions:

- :mod:`fastpu.ocmf` — one-class structured MF with side information (Yu et al.), TRON;
- :mod:`fastpu.fbgd` — fBGD all-sample batch gradient with Adagrad (Yuan et al.);
- :mod:`fastpu.csrr` — robust cost-sensitive low-rank + sparse recommendation (Yang et al.);
- :mod:`fastpu.homf` — higher-order MF of random-walk polynomials (Shah, Rao, Ding).

Every ``fit`` returns a :class:`Factorization`; use :func:`recommend` and :func:`evaluate`.
The layout of the package is described in docs/layout.md.
"""

import importlib as _importlib
import os as _os
from typing import TYPE_CHECKING, Any

# numba's OpenMP threads otherwise spin after each parallel kernel and fight BLAS's threads
# (and any other work) for the cores: measured on 2 cores, 2 threads ran up to 4x slower than
# one. Sleeping idle threads cost microseconds per kernel instead. An explicit setting wins;
# it must be in place before the first parallel kernel runs in the process.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ._core.version import __version__  # noqa: E402,F401 (the package version)

# Compiled kernels are cached in a per-user folder, never inside the installed package (files
# there outlive `pip uninstall` and shadow a later install); this must run before any kernel
# module is imported. See fastpu/_core/cache.py and the README's set-up section.
from ._core import cache as _cache  # noqa: E402

_cache.install()
from ._core.cache import cache_dir, clear_cache  # noqa: E402
from ._core.exceptions import ConvergenceWarning  # noqa: E402
from ._core.factorization import Factorization  # noqa: E402
from ._core.threads import get_num_threads, set_num_threads  # noqa: E402
from .model import load_model, recommend, similar_items, similar_users  # noqa: E402

# The method packages and the top-level functions are imported on first use (PEP 562): a script
# that fits one method does not pay for the others, nor for scipy.stats (select, compare) or
# dask (distributed); see docs/benchmarks/bench_perf_firstrun.md for the import times.
from ._core import registry as _registry  # noqa: E402

_SUBMODULES = (frozenset({"datasets", "distributed", "model", "model_selection", "optim"})
               | frozenset(_registry.names("method")))
#: The modules of model selection are attributes of fastpu as well, under their own names
#: (``fp.split.holdout``, ``fp.select.tune``, ``fp.baselines.ease``): ``fastpu.split`` is the
#: module ``fastpu.model_selection.split``. They are not import paths of their own (``import
#: fastpu.split`` fails); docs/layout.md says why.
_SELECTION_MODULES = ("baselines", "compare", "metrics", "select", "split")
_FUNCTIONS = {"fold_in": "fastpu.model", "evaluate": "fastpu.model_selection.metrics",
              "partial_fit_users": "fastpu.model", "partial_fit_items": "fastpu.model"}

if TYPE_CHECKING:
    from . import csrr, datasets, distributed, fbgd, homf, ocmf  # noqa: F401
    from .model import fold_in, partial_fit_items, partial_fit_users  # noqa: F401
    from .model_selection import baselines, compare, metrics, select, split  # noqa: F401
    from .model_selection.metrics import evaluate  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    elif name in _SELECTION_MODULES:
        value = _importlib.import_module(f"{__name__}.model_selection.{name}")
    elif name in _FUNCTIONS:
        value = getattr(_importlib.import_module(_FUNCTIONS[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# the public names; the method packages come from the registry (listed there once)
__all__ = sorted([
    "ConvergenceWarning",
    "Factorization",
    "baselines",
    "cache_dir",
    "clear_cache",
    "compare",
    "datasets",
    "distributed",
    "evaluate",
    "fold_in",
    "get_num_threads",
    "load_model",
    "metrics",
    "model",
    "model_selection",
    "optim",
    "partial_fit_items",
    "partial_fit_users",
    "recommend",
    "select",
    "set_num_threads",
    "similar_items",
    "similar_users",
    "split",
] + list(_registry.names("method")))
