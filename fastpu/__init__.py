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
import importlib.abc as _abc
import importlib.machinery as _machinery
import os as _os
import sys as _sys
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

# The public modules of earlier releases that now live inside a package: the old dotted path
# (``import fastpu.split``, ``from fastpu.tron import tron``) is the same module object as the
# new one, found by the finder below on first import.
_MOVED = {
    "apg": "fastpu.optim._apg",
    "baselines": "fastpu.model_selection.baselines",
    "compare": "fastpu.model_selection.compare",
    "exceptions": "fastpu._core.exceptions",
    "metrics": "fastpu.model_selection.metrics",
    "prox": "fastpu.optim._prox",
    "select": "fastpu.model_selection.select",
    "split": "fastpu.model_selection.split",
    "tron": "fastpu.optim._tron",
}


class _MovedModuleLoader(_abc.Loader):
    """Loads ``fastpu.<old name>`` as the module it moved to (the same object, not a copy)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._spec: Any = None

    def create_module(self, spec: _machinery.ModuleSpec) -> Any:
        module = _importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        # the import system has set the alias's spec on the module: give it its own back
        module.__spec__ = self._spec


class _MovedModuleFinder(_abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        prefix, _, name = fullname.rpartition(".")
        if prefix != __name__ or name not in _MOVED:
            return None
        return _machinery.ModuleSpec(fullname, _MovedModuleLoader(_MOVED[name]))


if not any(isinstance(f, _MovedModuleFinder) for f in _sys.meta_path):
    _sys.meta_path.insert(0, _MovedModuleFinder())

# The method packages and the top-level functions are imported on first use (PEP 562): a script
# that fits one method does not pay for the others, nor for scipy.stats (select, compare) or
# dask (distributed). `fastpu.ocmf`, `from fastpu import evaluate` and `import fastpu.homf` work
# as before; see docs/bench_perf_firstrun.md for the import times.
from ._core import registry as _registry  # noqa: E402

_SUBMODULES = (frozenset({"datasets", "distributed", "model", "model_selection", "optim"})
               | frozenset(_registry.names("method")) | frozenset(_MOVED))
_FUNCTIONS = {"fold_in": "fastpu.model", "evaluate": "fastpu.model_selection.metrics",
              "partial_fit_users": "fastpu.model", "partial_fit_items": "fastpu.model"}

if TYPE_CHECKING:
    from . import csrr, datasets, distributed, fbgd, homf, ocmf  # noqa: F401
    from .model import fold_in, partial_fit_items, partial_fit_users  # noqa: F401
    from .model_selection import baselines, compare, metrics, select, split  # noqa: F401
    from .model_selection.metrics import evaluate  # noqa: F401
    from .optim import _apg as apg  # noqa: F401
    from .optim import _prox as prox  # noqa: F401
    from .optim import _tron as tron  # noqa: F401
    from ._core import exceptions  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
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
    "apg",
    "baselines",
    "cache_dir",
    "clear_cache",
    "compare",
    "datasets",
    "distributed",
    "evaluate",
    "exceptions",
    "fold_in",
    "get_num_threads",
    "load_model",
    "metrics",
    "model",
    "model_selection",
    "optim",
    "partial_fit_items",
    "partial_fit_users",
    "prox",
    "recommend",
    "select",
    "set_num_threads",
    "similar_items",
    "similar_users",
    "split",
    "tron",
] + list(_registry.names("method")))
