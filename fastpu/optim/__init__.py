"""Method-agnostic solvers over a problem object, and proximal maps.

- trust-region Newton–CG (:func:`tron`, after LIBLINEAR's ``tron.cpp``) and gradient descent with a
  backtracking line search (:func:`gd`), over a problem with ``fun``, ``grad`` and ``hessp``;
- accelerated proximal gradient (:func:`apg`, Beck & Teboulle's FISTA with optional restarts);
- proximal maps: singular value thresholding (:func:`svt`, :func:`svt_factors`) with a truncated
  SVD that stops at the threshold, soft-thresholding, projection onto a box.

Every solver returns an :class:`OptimizeResult`.
"""

from ._apg import apg
from ._prox import SVTResult, project_box, soft_threshold, svt, svt_factors, svt_operator  # noqa: F401 (for fastpu's solvers)
from ._result import CALLBACK, CONVERGED, MAX_ITER, NO_PROGRESS, OptimizeResult, Status
from ._tron import gd, tron, trust_region_cg

__all__ = ["CALLBACK", "CONVERGED", "MAX_ITER", "NO_PROGRESS", "OptimizeResult",
           "SVTResult", "Status", "apg", "gd", "project_box", "soft_threshold", "svt", "svt_factors",
           "tron", "trust_region_cg"]
