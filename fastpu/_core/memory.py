"""The memory guard: how many bytes one fastpu call may allocate, and the check that refuses an
allocation past it before numpy tries it.

The limit is an explicit one when set (:data:`MEMORY_LIMIT`, or the environment variable
``FASTPU_MEMORY_LIMIT``, e.g. "4G"); otherwise the least of what the kernel reports as available
(MemAvailable in /proc/meminfo, else free physical pages), what the process's own limits leave
(``ulimit -v`` / ``-d``) and what a memory cgroup leaves (a container's limit). The boundaries
(:mod:`fastpu._core.validation`, :mod:`fastpu._core.files`) and the fits call
:func:`check_alloc` with the arguments that make an allocation large, so the error names them.
"""

from __future__ import annotations

import os

__all__ = ["MEMORY_LIMIT", "SMALL_BYTES", "check_alloc", "fmt_bytes", "memory_limit"]

#: An explicit limit in bytes (None: the environment variable, else what is available).
MEMORY_LIMIT = None
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
#: Below this many bytes a boundary does not ask the memory guard (reading /proc costs more).
SMALL_BYTES = 64 * 2**20


def _parse_bytes(text: str, *, name: str) -> int:
    raw = str(text).strip().upper().removesuffix("B").removesuffix("I")
    unit = raw[-1:] if raw[-1:] in _UNITS else ""
    try:
        value = float(raw[: len(raw) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"{name} must be a number of bytes such as 4000000000 or '4G', got {text!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of bytes, got {text!r}")
    return int(value)


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _proc_status_bytes(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status (VmSize, VmData) in bytes, else None."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _rlimit_headroom() -> int | None:
    """What the process's own limits (``ulimit -v``, ``ulimit -d``: RLIMIT_AS, RLIMIT_DATA) leave
    it to allocate, else None. An allocation past them fails however much memory is free."""
    try:
        import resource
    except ImportError:                        # not on Windows
        return None
    out = None
    for lim, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        which = getattr(resource, lim, None)
        if which is None:
            continue
        try:
            soft = resource.getrlimit(which)[0]
        except (ValueError, OSError):
            continue
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _proc_status_bytes(field) or 0
        room = max(0, int(soft) - used)
        out = room if out is None else min(out, room)
    return out


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_headroom() -> int | None:
    """What the memory cgroup (a container's limit) leaves to allocate, else None: its limit
    minus its use, page cache counted as free (the kernel reclaims it first)."""
    for limit_file, used_file, stat_file, cache_key in (
            ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat", "file"),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
             "/sys/fs/cgroup/memory/memory.stat", "cache")):
        limit = _read_int(limit_file)
        if limit is None or limit >= 2**60:    # "max", or v1's huge "no limit"
            continue
        used = _read_int(used_file) or 0
        cache = 0
        try:
            with open(stat_file) as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == cache_key:
                        cache = int(value)
                        break
        except (OSError, ValueError):
            pass
        return max(0, limit - max(0, used - cache))
    return None


def memory_limit() -> int | None:
    """Bytes one fastpu call may allocate: ``MEMORY_LIMIT``, ``$FASTPU_MEMORY_LIMIT``, else available.

    What is available is the least of the memory the kernel reports as available
    (MemAvailable), what the process's limits leave (``ulimit -v`` / ``-d``) and what the memory
    cgroup leaves (a container's limit). ``None`` when no limit is set and the platform reports
    none of them.
    """
    if MEMORY_LIMIT is not None:
        return int(MEMORY_LIMIT)
    env = os.environ.get("FASTPU_MEMORY_LIMIT")
    if env:
        return _parse_bytes(env, name="FASTPU_MEMORY_LIMIT")
    found = [b for b in (_available_bytes(), _rlimit_headroom(), _cgroup_headroom()) if b is not None]
    return min(found) if found else None


def fmt_bytes(nbytes: float) -> str:
    for unit, div in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= div:
            return f"{nbytes / div:.1f} {unit}"
    return f"{int(nbytes)} bytes"


def check_alloc(shape_or_nbytes: int | tuple[int, ...], *, what: str, names: tuple[str, ...],
                itemsize: int = 8, limit: int | None = None) -> int:
    """Refuse an allocation that cannot fit, before numpy tries it; return the bytes needed.

    Parameters
    ----------
    shape_or_nbytes : int or tuple of int
        Bytes, or the shape of one array of ``itemsize``-byte entries (the product is computed
        with Python integers, so it never overflows).
    what : str
        What the memory is for, for the message.
    names : sequence of str
        The arguments that make it this large (the ones to change), e.g. ``("k",)``.
    limit : int, optional
        Bytes allowed; default :func:`memory_limit`.

    Raises
    ------
    ValueError
        If the bytes needed exceed the limit; the message names ``names`` and the bytes needed.
    """
    if isinstance(shape_or_nbytes, tuple):
        nbytes = int(itemsize)
        for s in shape_or_nbytes:
            nbytes *= max(0, int(s))
    else:
        nbytes = int(shape_or_nbytes)
    limit = memory_limit() if limit is None else int(limit)
    if limit is not None and nbytes > limit:
        args = ", ".join(names)
        raise ValueError(
            f"{what} needs {fmt_bytes(nbytes)} ({nbytes:,} bytes) but only {fmt_bytes(limit)} are "
            f"available; lower {args} (or set FASTPU_MEMORY_LIMIT if more memory is really there)"
        )
    return nbytes
