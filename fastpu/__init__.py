"""fastpu: learning from positive-unlabeled matrices, at the cost of the positives alone.

Four published methods under one roof, each a module of plain functions:

- :mod:`fastpu.ocmf` — one-class structured MF with side information (Yu et al.), TRON;
- :mod:`fastpu.fbgd` — fBGD all-sample batch gradient with Adagrad (Yuan et al.);
- :mod:`fastpu.csrr` — robust cost-sensitive low-rank + sparse recommendation (Yang et al.);
- :mod:`fastpu.homf` — higher-order MF of random-walk polynomials (Shah, Rao, Ding).

Every ``fit`` returns a :class:`Factorization`; use :func:`recommend` and :func:`evaluate`.
"""

from . import apg, csrr, datasets, fbgd, homf, metrics, ocmf, prox, split, tron
from ._threads import get_num_threads, set_num_threads
from .metrics import evaluate
from .model import Factorization, recommend

__version__ = "0.1.0"

__all__ = [
    "Factorization",
    "apg",
    "csrr",
    "datasets",
    "evaluate",
    "fbgd",
    "get_num_threads",
    "homf",
    "metrics",
    "ocmf",
    "prox",
    "recommend",
    "set_num_threads",
    "split",
    "tron",
]
