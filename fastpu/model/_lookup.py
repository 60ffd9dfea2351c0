"""Positions of ids in a model's id array (users or items), by scan or by one sort."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastpu._core.hints import ArrayLike, IntArray

__all__ = ["lookup"]

# Up to this many ids are looked up by one scan each; more by one sort of the model's ids.
_SCAN_LIMIT = 16


def _kind(arr: np.ndarray) -> str | None:
    if arr.dtype.kind in "iu":
        return "integer"
    if arr.dtype.kind in "US":
        return "string"
    if arr.dtype.kind == "O" and all(isinstance(x, str) for x in arr.ravel()):
        return "string"
    return None


def lookup(known: Any, wanted: ArrayLike, *, name: str, what: str,
           strict: bool = True) -> IntArray:
    """Positions in ``known`` (a model's id array) of the ids ``wanted``.

    With ``strict`` an unknown id is a ValueError naming ``name``; otherwise its position is -1.
    An id that occurs more than once in ``known`` is a ValueError when it is looked up (a
    lookup of more than ``_SCAN_LIMIT`` ids sorts ``known`` and rejects any repeated id).
    """
    known = np.asarray(known)
    wanted = np.asarray(wanted)
    if wanted.ndim == 0:
        wanted = wanted.reshape(1)
    if wanted.ndim != 1:
        raise ValueError(f"{name} must be a 1-d sequence of {what} ids, got shape {wanted.shape}")
    kk, kw = _kind(known), _kind(wanted)
    if kk is None:
        raise TypeError(f"the model's {what} ids have dtype {known.dtype}; expected integers or strings")
    if wanted.size == 0:
        return np.empty(0, dtype=np.int64)
    if kw != kk:
        raise TypeError(f"{name} must hold {kk} ids like the model's {what} ids "
                        f"(e.g. {known[:3].tolist()}), got dtype {wanted.dtype}")
    beyond = None                  # uint64 ids past int64's range: no int64 id equals them
    if kk == "string":
        known, wanted = known.astype(str, copy=False), wanted.astype(str, copy=False)
    elif known.dtype == np.uint64 and wanted.dtype == np.uint64:
        pass                       # compared as they are
    else:
        if wanted.dtype == np.uint64:
            beyond = wanted > np.iinfo(np.int64).max
            if beyond.any():
                shown = wanted[beyond][:5].tolist()
                wanted = np.where(beyond, np.uint64(0), wanted)
        known, wanted = known.astype(np.int64, copy=False), wanted.astype(np.int64, copy=False)
    out = np.full(wanted.size, -1, dtype=np.int64)
    if wanted.size <= _SCAN_LIMIT:
        # a few ids (the serving case): one O(len(known)) scan each, no sort
        for t, w in enumerate(wanted):
            hit = np.flatnonzero(known == w)
            if hit.size > 1:
                raise ValueError(f"the model's {what} ids are not unique ({w!r} appears {hit.size} "
                                 f"times), so {name} cannot be looked up")
            if hit.size:
                out[t] = hit[0]
        found = out >= 0
    else:
        order = np.argsort(known, kind="stable")
        sk = known[order]
        if sk.size > 1 and np.any(sk[1:] == sk[:-1]):
            raise ValueError(f"the model's {what} ids are not unique, so {name} cannot be looked up")
        pos = np.searchsorted(sk, wanted)
        inside = pos < sk.size
        found = np.zeros(wanted.size, dtype=bool)
        found[inside] = sk[pos[inside]] == wanted[inside]
        out[found] = order[pos[found]]
    if beyond is not None and beyond.any():
        out[beyond] = -1
        found = found & ~beyond
        if strict:
            raise ValueError(f"{name} has {int(beyond.sum())} {what} id(s) the model does not know: "
                             f"{shown}{' ...' if beyond.sum() > 5 else ''} (above the largest int64)")
    if strict and not found.all():
        missing = wanted[~found]
        raise ValueError(f"{name} has {missing.size} {what} id(s) the model does not know: "
                         f"{missing[:5].tolist()}{' ...' if missing.size > 5 else ''}")
    return out
