"""Where numba caches fastpu's compiled kernels: a per-user folder, never the package folder.

fastpu's kernels are compiled with ``cache=True``. numba's default puts the cache files in a
``__pycache__`` folder next to the source, which for an installed fastpu is the package folder
inside ``site-packages``: ``pip uninstall`` does not know those files, leaves the folder behind,
and the leftover folder then shadows a later editable install of fastpu (``import fastpu`` finds
an empty namespace package). So :func:`install` puts a cache locator first in numba's list that
takes charge of every function defined in fastpu's own source files (other packages keep numba's
behaviour) and sends them to

1. ``$NUMBA_CACHE_DIR`` when the user sets it (numba's own layout there);
2. else :func:`cache_dir`: ``$FASTPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/fastpu``, else
   ``~/.cache/fastpu``, in a subfolder named after fastpu's version, the Python version and a
   hash of the package folder's real path, so two installs, versions or checkouts never share
   entries;
3. if that folder cannot be written: a folder private to the process that is removed at exit
   (kernels then compile afresh in every process), with a single warning.

The locator has to be in place before the first kernel module is imported: numba picks the
locator when the decorator runs. ``fastpu/__init__.py`` calls :func:`install` first thing.
Two cases stay numba's: a user who sets ``NUMBA_CACHE_LOCATOR_CLASSES`` chooses numba's
locators explicitly, and when not even a temporary folder can be created fastpu steps aside.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import pathlib
import shutil
import sys
import tempfile
import warnings
from typing import Any

from numba.core import caching, config

from fastpu._core.version import __version__

__all__ = ["cache_dir", "clear_cache", "install"]

# the installed package folder (fastpu/), one level above this file
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_state: dict[str, Any] = {"warned": False, "fallback": None, "marked": False}
#: in each installation's cache folder: the package folder it was made for (see clear_cache)
_SOURCE_FILE = "source.txt"


def _base_dir() -> pathlib.Path:
    explicit = os.environ.get("FASTPU_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = pathlib.Path(xdg).expanduser() if xdg else pathlib.Path.home() / ".cache"
    return root / "fastpu"


def _install_key(package_dir: str) -> str:
    digest = hashlib.sha1(os.path.realpath(package_dir).encode()).hexdigest()[:16]
    py = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return f"{__version__}-{py}-{digest}"


def cache_dir() -> pathlib.Path:
    """Return the folder where this installation of fastpu caches its compiled kernels.

    The folder is ``$FASTPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/fastpu``, else
    ``~/.cache/fastpu``, followed by a subfolder proper to this installation (fastpu's version,
    the Python version and a hash of the package's location). Deleting the folder is always
    safe: the kernels compile again on their next use (its parent, ``~/.cache/fastpu`` by
    default, also keeps downloaded data archives unless ``$FASTPU_DATA`` is set). When
    ``NUMBA_CACHE_DIR`` is set, numba's cache files go there instead and this folder is unused.

    Returns
    -------
    pathlib.Path
        The folder; it is created on first use and may not exist yet.

    Examples
    --------
    >>> import fastpu
    >>> fastpu.cache_dir().name.startswith(fastpu.__version__)
    True
    """
    return _base_dir() / _install_key(_PACKAGE_DIR)


def clear_cache(*, stale: bool = True) -> list[pathlib.Path]:
    """Delete cached kernels of fastpu installations: by default those that no longer exist.

    Every installation, version or checkout of fastpu has a folder of its own under the cache
    root (see :func:`cache_dir`); the folders of deleted checkouts and virtual environments stay
    behind. ``stale=True`` deletes the folders whose installation is gone: each folder records the
    package folder it was made for, and a folder is deleted when that package folder no longer
    holds fastpu. Folders made before fastpu recorded this (0.1.0) have no record and are kept,
    as is this installation's folder. ``stale=False`` deletes every folder under the cache root,
    this installation's included. Deleting is always safe: kernels compile again on next use.

    Parameters
    ----------
    stale : bool
        Delete only folders of installations that no longer exist (default), else all.

    Returns
    -------
    list of pathlib.Path
        The folders deleted.

    Raises
    ------
    TypeError
        If ``stale`` is not a bool.

    Examples
    --------
    >>> import fastpu
    >>> removed = fastpu.clear_cache()       # doctest: +SKIP
    >>> [p.name for p in removed]            # doctest: +SKIP
    ['0.1.0-py311-6f1d0a2c9b8e7d41']
    """
    if not isinstance(stale, bool):
        raise TypeError(f"stale must be True or False, got {stale!r}")
    root, own = _base_dir(), cache_dir()
    removed: list[pathlib.Path] = []
    if not root.is_dir():
        return removed
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or not folder.name.split("-", 1)[0][:1].isdigit():
            continue                              # not an installation's folder (e.g. a user's file)
        if stale:
            if folder == own:
                continue
            try:
                source = (folder / _SOURCE_FILE).read_text().strip()
            except OSError:
                continue                          # no record: cannot tell, keep it
            if os.path.exists(os.path.join(source, "_cache.py")):
                continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    if not stale:
        _state["marked"] = False                  # the next kernel re-creates the folder and its record
    return removed


def _mark(folder: str) -> None:
    """Record in ``folder`` which package folder it belongs to (once per process; best effort)."""
    if _state["marked"]:
        return
    _state["marked"] = True
    path = os.path.join(folder, _SOURCE_FILE)
    try:
        if not os.path.exists(path):
            with open(path, "w") as fh:
                fh.write(_PACKAGE_DIR + "\n")
    except OSError:
        pass


def _fallback_dir() -> str | None:
    if _state["fallback"] is None:
        try:
            path = tempfile.mkdtemp(prefix="fastpu-kernels-")
        except OSError:
            return None
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _state["fallback"] = path
    return str(_state["fallback"])


def _warn_once(path: str, err: OSError) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(
            f"fastpu cannot write its compiled-kernel cache to {path} ({err}); kernels will "
            "compile afresh in every process. Set FASTPU_CACHE_DIR to a writable folder.",
            RuntimeWarning,
            stacklevel=2,
        )


def _subfolder(py_file: str) -> str | None:
    """``fastpu`` or ``fastpu._kernels`` for a file in the package, None for other files."""
    folder = os.path.dirname(os.path.realpath(py_file))
    rel = os.path.relpath(folder, _PACKAGE_DIR)
    if rel == os.curdir:
        return "fastpu"
    if rel.startswith(os.pardir) or os.path.isabs(rel):
        return None
    return ".".join(["fastpu", *rel.split(os.sep)])


class FastpuCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba cache locator for functions defined in fastpu's own source files."""

    def __init__(self, py_func: Any, py_file: str, path: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = path

    def get_cache_path(self) -> str:
        return self._cache_path

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        sub = _subfolder(py_file) if os.path.exists(py_file) else None
        if sub is None:
            return None                         # not fastpu's: numba's usual locators decide
        if config.CACHE_DIR:  # type: ignore[attr-defined]
            user = caching.UserProvidedCacheLocator.from_function(py_func, py_file)
            if user is not None:
                return user
            wanted = str(config.CACHE_DIR)  # type: ignore[attr-defined]
        else:
            wanted = str(cache_dir())
        self = cls(py_func, py_file, os.path.join(wanted, sub))
        try:
            self.ensure_cache_path()
            if not config.CACHE_DIR:  # type: ignore[attr-defined]
                _mark(wanted)
            return self
        except OSError as err:
            _warn_once(wanted, err)
        fallback = _fallback_dir()
        if fallback is None:                    # nothing writable at all: numba decides
            return None
        self = cls(py_func, py_file, os.path.join(fallback, sub))
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def install() -> None:
    """Put :class:`FastpuCacheLocator` first in numba's locator list (idempotent)."""
    classes: list[Any] = caching.CacheImpl._locator_classes
    if FastpuCacheLocator not in classes:
        classes.insert(0, FastpuCacheLocator)
