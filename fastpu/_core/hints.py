"""Type aliases shared by fastpu's signatures (for readers and for mypy; nothing at run time).

scipy ships no type information, so a sparse matrix or array is ``Any`` to the checker; the
alias still tells the reader what is expected.
"""

from __future__ import annotations

import os
from typing import IO, Any, Callable, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

__all__ = ["ArrayLike", "Callback", "DTypeLike", "FloatArray", "IntArray", "Matrix",
           "PathOrFile", "Seed", "Sparse", "StrPath", "Threads"]

#: A ``scipy.sparse`` matrix or array (CSR after validation).
Sparse = Any
#: A dense array-like or a ``scipy.sparse`` matrix (features, graphs); ``Any`` to the checker
#: for the same reason as ``Sparse``.
Matrix = Any
#: A float64 (or float32 where documented) numpy array.
FloatArray = NDArray[np.floating[Any]]
#: An integer numpy array.
IntArray = NDArray[np.integer[Any]]
#: What ``check_seed`` accepts: an integer, a numpy Generator, or None.
Seed = Union[int, np.random.Generator, None]
#: A per-iteration callback: receives a dict of the iteration's numbers; a true return stops.
Callback = Union[Callable[[dict[str, Any]], Any], None]
#: A thread count, or None for numba's current count.
Threads = Union[int, None]
#: A file-system path.
StrPath = Union[str, "os.PathLike[str]"]
#: A file-system path or an open binary file object.
PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]
