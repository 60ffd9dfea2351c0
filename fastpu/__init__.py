"""fastpu: learning from positive-unlabeled matrices, at the cost of the positives alone.

Four published methods under one roof, each a module of plain functions:

- :mod:`fastpu.ocmf` — one-class structured MF with side information (Yu et al.), TRON;
- :mod:`fastpu.fbgd` — fBGD all-sample batch gradient with Adagrad (Yuan et al.);
- :mod:`fastpu.csrr` — robust cost-sensitive low-rank + sparse recommendation (Yang et al.);
- :mod:`fastpu.homf` — higher-order MF of random-walk polynomials (Shah, Rao, Ding).

Every ``fit`` returns a :class:`Factorization`; use :func:`recommend` and :func:`evaluate`.
"""

import os as _os

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
from ._cache import cache_dir  # noqa: E402

from . import (apg, baselines, compare, csrr, datasets, distributed, exceptions, fbgd, homf,  # noqa: E402
               metrics, ocmf, prox, select, split, tron)
from ._fold_in import fold_in  # noqa: E402
from .exceptions import ConvergenceWarning  # noqa: E402
from ._threads import get_num_threads, set_num_threads  # noqa: E402
from .metrics import evaluate  # noqa: E402
from .model import Factorization, load, recommend, similar_items, similar_users  # noqa: E402

__all__ = [
    "ConvergenceWarning",
    "Factorization",
    "apg",
    "baselines",
    "cache_dir",
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
