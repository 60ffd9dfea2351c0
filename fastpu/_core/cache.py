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
   hash of the package folder's real path and of the source of every kernel module, so two
   installs, versions, checkouts or edits of a kernel never share entries;
3. if that folder cannot be written, or is not safe: a folder private to the process that is
   removed at exit (kernels then compile afresh in every process), with a single warning.

numba's cache index is a pickle, so loading from a folder another user could have written into
would run their code in this process. fastpu's folders are its own: created private (0700),
and a folder (or any folder above it) that is a symbolic link owned by someone else, is owned by
another user, or can be written by others (a shared ``chmod 1777`` folder as
``FASTPU_CACHE_DIR``) is refused, before anything is read from it or written into it
(:func:`folder_problem`); ``NUMBA_CACHE_DIR`` is held to the same rule for fastpu's kernels.

Why the kernels' sources are in the key: numba invalidates a cached function only when the file
that *defines* it changes (its index records that file's modification time and size). A kernel
inlines helpers from other files (``fastpu/_kernels/ocmf.py`` compiles ``losses.loss_derivs``
into its row solver), so an edit to the helper's file alone would leave the kernel's old machine
code in use. Every function numba compiles for fastpu is defined in ``fastpu/_kernels/``
(``tests/test_layout.py`` checks that no other module calls numba's decorators), so a digest of
those files' bytes, read once per process (about 0.1 MB, well under a millisecond), covers all
code that can be inlined into a cached kernel: any edit there moves every kernel to a new,
empty folder, and the old one becomes stale (:func:`clear_cache` deletes it).

The locator has to be in place before the first kernel module is imported: numba picks the
locator when the decorator runs. ``fastpu/__init__.py`` calls :func:`install` first thing.
Two cases stay numba's: a user who sets ``NUMBA_CACHE_LOCATOR_CLASSES`` chooses numba's
locators explicitly, and when not even a temporary folder can be created fastpu steps aside.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import pathlib
import re
import shutil
import stat
import sys
import tempfile
import warnings
from typing import Any

from numba.core import caching, config

from fastpu._core.version import __version__

__all__ = ["cache_dir", "clear_cache", "folder_problem", "install", "private_folder"]

# the installed package folder (fastpu/), one level above this file
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_state: dict[str, Any] = {"warned": False, "fallback": None, "marked": False, "safe": {}}
#: in each installation's cache folder: the package folder it was made for (see clear_cache);
#: with a folder name of the form <version>-py<XY>-<16 hex digits>, fastpu's marker
_SOURCE_FILE = "source.txt"
_INSTALL_NAME = re.compile(r"[0-9][0-9A-Za-z.+!_]*-py[0-9]+-[0-9a-f]{16}\Z")


# ------------------------------------------------------------------------------ safe folders

def _me() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _group_is_mine(gid: int) -> bool:
    """Whether a group is the user's own private group (named after the user, no other member):
    a folder writable by it is writable by the user alone."""
    try:
        import grp
        import pwd

        me = pwd.getpwuid(os.geteuid()).pw_name
        group = grp.getgrgid(gid)
    except (ImportError, KeyError, OSError):
        return False
    return group.gr_name == me and all(member == me for member in group.gr_mem)


def _writable_by_others(st: os.stat_result) -> bool:
    return bool(st.st_mode & stat.S_IWOTH) or (bool(st.st_mode & stat.S_IWGRP)
                                               and not _group_is_mine(st.st_gid))


def folder_problem(path: str | os.PathLike[str], *, leaf_only: bool = False) -> str | None:
    """Why ``path`` is not safe as a folder of fastpu's own, or None when it is (or on Windows).

    The folder must be a real folder (not a symbolic link), owned by the user, and writable by
    no one else. Every folder above it must be owned by the user or by root and, unless it has
    the sticky bit (``/tmp``), writable by no one else either: otherwise another user could
    swap the folder for one of theirs. A symbolic link on the way is followed only when the user
    or root owns it. A missing folder has no problem (it is created private).
    """
    me = _me()
    if me is None:
        return None
    path = os.path.abspath(os.fspath(path))
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        st = None                               # missing (making it will say why it cannot be)
    except OSError as exc:
        return f"{path} cannot be inspected ({exc})"
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            return f"{path} is a symbolic link, not a folder of fastpu's own"
        if not stat.S_ISDIR(st.st_mode):
            return f"{path} is not a folder"
        if st.st_uid != me:
            return f"{path} is owned by another user (uid {st.st_uid})"
        if _writable_by_others(st):
            return f"{path} can be written by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    if leaf_only:
        return None
    # the folders above, from the top: their owners and whether others may write there
    parts = pathlib.PurePath(path).parts
    current = parts[0]
    for part in parts[1:-1]:
        current = os.path.join(current, part)
        try:
            lst = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            return None                         # the rest is created by fastpu, private
        except OSError as exc:
            return f"{current} cannot be inspected ({exc})"
        if stat.S_ISLNK(lst.st_mode):
            if lst.st_uid not in (me, 0):
                return f"{current} is a symbolic link owned by another user (uid {lst.st_uid})"
            try:
                target = os.stat(current)
            except OSError as exc:
                return f"{current} cannot be followed ({exc})"
            real = os.path.realpath(current)
            if real != current:
                problem = folder_problem(os.path.join(real, "x"))     # the link's target chain
                if problem is not None:
                    return problem
            lst = target
        if lst.st_uid not in (me, 0):
            return f"{current} is owned by another user (uid {lst.st_uid})"
        if _writable_by_others(lst) and not lst.st_mode & stat.S_ISVTX:
            return (f"{current} can be written by other users (mode {stat.S_IMODE(lst.st_mode):04o}, "
                    "without the sticky bit)")
    return None


def private_folder(path: str | os.PathLike[str], *, what: str, setting: str) -> str:
    """Create ``path`` private (0700) if it is missing and return it; a ValueError naming
    ``what`` and the ``setting`` that chooses the folder when it is not safe
    (:func:`folder_problem`). Missing folders above it are created private too."""
    path = os.path.abspath(os.fspath(path))
    problem = folder_problem(path)
    if problem is None:
        missing = []
        head = path
        while not os.path.lexists(head):
            missing.append(head)
            head = os.path.dirname(head)
        for folder in reversed(missing):
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
        problem = folder_problem(path)           # what exists now (a race, a file in the way)
    if problem is not None:
        raise ValueError(f"{what}: {problem}. fastpu writes only into a folder of its own, which "
                         "others cannot write; make it private (chmod 700), or set "
                         f"{setting} to a folder of yours")
    return path


def _base_dir() -> pathlib.Path:
    explicit = os.environ.get("FASTPU_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = pathlib.Path(xdg).expanduser() if xdg else pathlib.Path.home() / ".cache"
    return root / "fastpu"


#: the package's subfolder that holds every module numba compiles (see the module docstring)
_KERNELS = "_kernels"
_VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"$', re.M)


def _sources_digest(package_dir: str) -> bytes:
    """SHA-1 of the names and bytes of every ``.py`` file in ``package_dir/_kernels`` (sorted),
    or of what could be read when the folder cannot (another installation's, half deleted)."""
    h = hashlib.sha1()
    folder = os.path.join(package_dir, _KERNELS)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
        for name in names:
            with open(os.path.join(folder, name), "rb") as fh:
                data = fh.read()
            h.update(f"{name}\0{len(data)}\0".encode())
            h.update(data)
    except OSError:
        pass
    return h.digest()


@functools.lru_cache(maxsize=None)
def _install_key(package_dir: str, version: str = __version__) -> str:
    """``<version>-py<XY>-<16 hex digits>``, the digits a hash of the package folder's real path
    and of its kernels' sources (:func:`_sources_digest`); read once per process and folder."""
    real = os.path.realpath(package_dir)
    digest = hashlib.sha1(real.encode() + b"\0" + _sources_digest(real)).hexdigest()[:16]
    py = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return f"{version}-{py}-{digest}"


def _in_use(package_dir: str, folder_name: str) -> bool:
    """Whether ``folder_name`` is the cache folder the installation in ``package_dir`` would use
    today: its version (from that installation's ``_core/version.py``) and its digest, sources
    read afresh, match. The Python tag is not compared: one checkout can serve two Pythons."""
    try:
        with open(os.path.join(package_dir, "_core", "version.py"), encoding="utf-8") as fh:
            found = _VERSION_LINE.search(fh.read())
    except (OSError, UnicodeDecodeError):
        return False
    if found is None:
        return False
    want = _install_key.__wrapped__(package_dir, found.group(1))
    return (folder_name.split("-", 1)[0] == want.split("-", 1)[0]
            and folder_name.rsplit("-", 1)[-1] == want.rsplit("-", 1)[-1])


def cache_dir() -> pathlib.Path:
    """Return the folder where this installation of fastpu caches its compiled kernels.

    The folder is ``$FASTPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/fastpu``, else
    ``~/.cache/fastpu``, followed by a subfolder proper to this installation and its kernels'
    code (fastpu's version, the Python version, and a hash of the package's location and of the
    sources of ``fastpu/_kernels/``: an edited kernel or helper gets a new, empty folder and
    compiles afresh, never running code that no longer exists). Deleting the folder is always
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
    """Delete cached kernels of fastpu installations: by default those no installation uses.

    Every installation, version or checkout of fastpu has a folder of its own under the cache
    root (see :func:`cache_dir`); the folders of deleted checkouts and virtual environments stay
    behind. Only folders that fastpu's marker identifies as its own are ever deleted: a name of
    the form ``<version>-py<XY>-<16 hex digits>`` and, inside, the record of the package folder
    it was made for (``source.txt``), in a real folder (not a symbolic link) owned by the user.
    Anything else under the root (a user's ``2024-photos/``, the data archives of
    :func:`fastpu.datasets.download`, folders made before fastpu kept the record) is left alone.
    ``stale=True`` deletes the marked folders no installation uses any more: the recorded
    package folder no longer holds fastpu, or it does but its version or kernel sources have
    changed since (it now uses another folder); never this installation's. ``stale=False`` deletes every
    marked folder, this installation's included. Deleting is always safe: kernels compile
    again on next use.

    Parameters
    ----------
    stale : bool
        Delete only the folders no existing installation uses (default), else all.

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
        source = _marked(folder)
        if source is None:
            continue                              # not identified as fastpu's: never deleted
        if stale and (folder == own or _in_use(source, folder.name)):
            continue                              # an installation that exists uses it
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            removed.append(folder)
    if not stale:
        _state["marked"] = False                  # the next kernel re-creates the folder and its record
        _state["safe"].clear()
    return removed


def _marked(folder: pathlib.Path) -> str | None:
    """The package folder recorded in ``folder`` when fastpu's marker says the folder is an
    installation's cache folder (see :func:`clear_cache`), else None."""
    if not _INSTALL_NAME.match(folder.name):
        return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or (_me() is not None and st.st_uid != _me()):
        return None                              # a symbolic link, a file, someone else's folder
    record = folder / _SOURCE_FILE
    try:
        rst = os.lstat(record)
        if not stat.S_ISREG(rst.st_mode) or rst.st_size > 4096:
            return None
        text = record.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if len(lines) != 1 or not os.path.isabs(lines[0].strip()):
        return None
    return lines[0].strip()


def _mark(folder: str) -> None:
    """Record in ``folder`` which package folder it belongs to (once per process; best effort).
    Written as a new file, never through a name that is already there (a planted link)."""
    if _state["marked"]:
        return
    _state["marked"] = True
    path = os.path.join(folder, _SOURCE_FILE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return                                   # there already (or cannot be written)
    try:
        os.write(fd, (_PACKAGE_DIR + "\n").encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _fallback_dir() -> str | None:
    if _state["fallback"] is None:
        try:
            path = tempfile.mkdtemp(prefix="fastpu-kernels-")
        except OSError:
            return None
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _state["fallback"] = path
    return str(_state["fallback"])


def _warn_once(path: str, err: OSError | str) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        if isinstance(err, str):
            what = (f"fastpu does not use {path} for its compiled-kernel cache: {err}, so another "
                    "user could plant files there (numba's cache index is a pickle, and loading "
                    "it runs code); kernels will compile afresh in every process, in a private "
                    "folder. Make the folder private (chmod 700) or set FASTPU_CACHE_DIR to a "
                    "folder of yours.")
        else:
            what = (f"fastpu cannot write its compiled-kernel cache to {path} ({err}); kernels "
                    "will compile afresh in every process. Set FASTPU_CACHE_DIR to a writable folder.")
        warnings.warn(what, RuntimeWarning, stacklevel=2)


def _verdict(folder: str, root: str | None, create: bool) -> str | OSError | None:
    """Why fastpu must not use ``folder`` for its kernels (a problem, or the OSError met making
    it), or None; with ``create`` a missing folder is made private. ``root`` (the cache root
    above it) must be safe too. Judged once per process and folder."""
    known = _state["safe"]
    if folder in known:
        return known[folder]
    problem: str | OSError | None = None
    if root is not None:
        problem = folder_problem(root)           # the root: not a shared folder others write
    if problem is None:
        if create:
            try:
                private_folder(folder, what="the compiled-kernel cache", setting="FASTPU_CACHE_DIR")
            except ValueError:
                problem = folder_problem(folder)
            except OSError as exc:
                problem = exc
            else:
                problem = _foreign_entry(folder)
        else:
            problem = folder_problem(folder)
    known[folder] = problem
    return problem


def _foreign_entry(folder: str, limit: int = 20_000) -> str | None:
    """Why the files of a cache folder cannot be trusted: one of them is a symbolic link, is
    another user's, or is a folder others can write. (A folder that was ever shared keeps
    what was planted in it; numba would unpickle it.) None when every entry is the user's."""
    me = _me()
    if me is None:
        return None
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            seen += 1
            if seen > limit:
                return None                       # not a folder of kernels; nothing more to learn
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                return f"{path} is a symbolic link"
            if st.st_uid != me:
                return f"{path} belongs to another user (uid {st.st_uid})"
            if stat.S_ISDIR(st.st_mode) and _writable_by_others(st):
                return f"{path} can be written by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _own_subfolder(path: str) -> None:
    """The kernels' subfolder inside a checked folder: made private, never a link (OSError)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or (_me() is not None and st.st_uid != _me()):
        raise OSError(f"{path} is not a folder of the user's own (a link, a file or another "
                      "user's folder)")


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
        explicit = bool(config.CACHE_DIR)  # type: ignore[attr-defined]
        if explicit:                            # the user's NUMBA_CACHE_DIR: the same rule
            wanted = str(config.CACHE_DIR)  # type: ignore[attr-defined]
            problem = _verdict(os.path.abspath(wanted), None, create=False)
            if problem is None:
                user = caching.UserProvidedCacheLocator.from_function(py_func, py_file)
                if user is not None:
                    return user
        else:
            wanted = str(cache_dir())
            problem = _verdict(wanted, str(_base_dir()), create=True)
        if problem is None:
            self = cls(py_func, py_file, os.path.join(wanted, sub))
            try:
                if not explicit:
                    _own_subfolder(self._cache_path)
                self.ensure_cache_path()
                if not explicit:
                    _mark(wanted)
                return self
            except OSError as err:
                problem = err
        _warn_once(wanted, problem)
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
