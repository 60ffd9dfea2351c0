"""Reading and writing files safely: regular files only, bounded by the memory guard, and
``.npz`` archives checked member by member before numpy reads one.

A path fastpu reads may be a named pipe, a device, a folder or a file that grows while it is
read; an ``.npz`` a user hands over may declare terabytes in a few bytes, hold pickles or be a
zip bomb. Everything here refuses such input with an error naming the argument and the file.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from fastpu._core import memory

__all__ = ["NPZ_INFLATION", "check_file_memory", "check_npz_members", "check_save_path",
           "open_regular", "read_regular"]


def check_save_path(path: object, *, name: str = "path", example: str = "model.npz") -> str:
    """The absolute target path if a file (a model, a table, a plot) can be written there; a
    clear error otherwise, before any work is done."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or os.PathLike) or a writable file object, "
                        f"got {type(path).__name__}")
    if not os.fspath(path):
        raise ValueError(f"{name} is empty; expected a file name such as {example}")
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        raise ValueError(f"{name} {path!r} is a directory; expected a file name such as {example}")
    if not os.path.isdir(folder):
        raise ValueError(f"{name} {path!r}: the folder {folder!r} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {path!r}: the folder {folder!r} is not writable")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ValueError(f"{name} {path!r} exists and is not writable")
    return path


def _file_kind(mode: int) -> str:
    import stat

    for test, what in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def open_regular(path: Any, *, name: str = "path") -> Any:
    """``path`` open for binary reading, refused unless it is a regular file.

    The file is opened without blocking and judged on the open descriptor (``fstat``): a named
    pipe (whose plain open would wait for a writer for ever), a device (``/dev/zero`` never
    ends), a socket or a directory is refused with a ValueError naming ``name``, also when it
    took the file's place after an earlier check by name. FileNotFoundError (and other
    OSErrors) name the path.
    """
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    fd = os.open(os.fspath(path), flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{name} {os.fsdecode(os.fspath(path))!r} is {_file_kind(info.st_mode)}, "
                             "not a regular file; expected a file fastpu can read to its end")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_file_memory(size: int, *, name: str, path: Any, factor: float = 1.0) -> None:
    """Refuse to read a file of ``size`` bytes when ``factor`` times that is more than the memory
    limit (:func:`fastpu._core.memory.memory_limit`): a reader holds the bytes, their text and what it parses."""
    need = int(size * factor)
    if need <= memory.SMALL_BYTES:
        return
    limit = memory.memory_limit()
    if limit is not None and need > limit:
        raise ValueError(
            f"{name} {os.fsdecode(os.fspath(path))!r} is {memory.fmt_bytes(size)}; reading it needs about "
            f"{memory.fmt_bytes(need)} ({need:,} bytes) but only {memory.fmt_bytes(limit)} are available (the "
            "memory available, or FASTPU_MEMORY_LIMIT); split the file, or set FASTPU_MEMORY_LIMIT "
            "if more memory is really there")


def read_regular(path: Any, *, name: str = "path", factor: float = 1.0) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), after checking that
    ``factor`` times its size fits in memory (:func:`check_file_memory`). A file that grows past
    its checked size while it is read (a log, a file under /proc) is refused."""
    with open_regular(path, name=name) as fh:
        size = os.fstat(fh.fileno()).st_size
        check_file_memory(size, name=name, path=path, factor=factor)
        slack = memory.SMALL_BYTES
        data = fh.read(size + slack)
        if len(data) > size and len(data) == size + slack:
            raise ValueError(f"{name} {os.fsdecode(os.fspath(path))!r} grew past its size "
                             f"({memory.fmt_bytes(size)}) while it was read; expected a file that does not change")
    return data


#: A compressed member of an .npz may hold at most this many times its compressed size. numpy
#: writes members stored (np.savez) or deflated (np.savez_compressed, 1 to 10 times for factors
#: and ids); deflate's own bound is 1,032, which an 8 MB bomb uses to reach 8 GiB.
NPZ_INFLATION = 100

_ZIP_METHODS = (0, 8, 12, 14)         # stored, deflated, bzip2, lzma: what zipfile reads


def _npy_header(fh: Any) -> tuple[tuple[int, ...], np.dtype[Any], int]:
    """(shape, dtype, bytes before the data) of the .npy stream ``fh``."""
    fmt = np.lib.format
    version = fmt.read_magic(fh)
    if version == (1, 0):
        shape, _, dtype = fmt.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, _, dtype = fmt.read_array_header_2_0(fh)
    else:                                # 3.0: the 2.0 layout with a UTF-8 header
        reader = getattr(fmt, "_read_array_header", None)
        if reader is None:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, _, dtype = reader(fh, version)
    return tuple(int(s) for s in shape), np.dtype(dtype), int(fh.tell())


def check_npz_members(zf: Any, *, where: str, file_size: int | None,
                      error: type[Exception] = ValueError) -> int:
    """Bound every member of the .npz archive ``zf`` (a ``zipfile.ZipFile``) before numpy reads
    one; return the bytes the arrays take.

    numpy allocates an array from the shape its header declares, before reading the data, and
    a zip member inflates to the size its directory declares: a small file can ask for
    terabytes. So each member must be readable (not encrypted, a method zipfile knows), no
    larger compressed than the file, stored members as large as they are stored, compressed
    ones at most :data:`NPZ_INFLATION` times their compressed size; each ``.npy`` header must
    declare exactly the bytes its member holds and no Python objects (a pickle); and all of
    them together must fit in memory (:func:`fastpu._core.memory.memory_limit`). ``error`` (ValueError or a
    subclass) is raised, naming ``where`` and the member.
    """
    import zipfile

    total = 0
    for info in zf.infolist():
        name = info.filename
        if info.flag_bits & 0x1:
            raise error(f"{where}: member {name!r} is encrypted; numpy never writes encrypted members "
                        "(a file from elsewhere, or damaged)")
        if info.compress_type not in _ZIP_METHODS:
            raise error(f"{where}: member {name!r} uses zip compression method {info.compress_type}, "
                        "which Python's zipfile cannot read; expected members stored or deflated as "
                        "numpy writes them")
        if file_size is not None and info.compress_size > file_size:
            raise error(f"{where}: member {name!r} claims {info.compress_size:,} compressed bytes, more "
                        f"than the whole file's {file_size:,} (truncated or damaged)")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise error(f"{where}: member {name!r} is stored uncompressed but claims {info.file_size:,} "
                        f"bytes in {info.compress_size:,} (damaged or edited)")
        if info.file_size > NPZ_INFLATION * max(1, info.compress_size) + 4096:
            raise error(f"{where}: member {name!r} would inflate from {memory.fmt_bytes(info.compress_size)} "
                        f"to {memory.fmt_bytes(info.file_size)} ({info.file_size // max(1, info.compress_size):,} "
                        f"times); fastpu reads members that inflate at most {NPZ_INFLATION} times "
                        "(a zip bomb, or not a file numpy wrote)")
        if name.endswith(".npy"):
            try:
                with zf.open(info) as fh:
                    shape, dtype, offset = _npy_header(fh)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError,
                    RuntimeError) as exc:
                raise error(f"{where}: member {name!r} has no readable .npy header ({exc})") from None
            if dtype.hasobject:
                raise error(f"{where}: member {name!r} holds Python objects (dtype {dtype}), which are "
                            "pickles; fastpu never unpickles a file")
            nbytes = dtype.itemsize
            for s in shape:
                nbytes *= s
            if offset + nbytes != info.file_size:
                raise error(f"{where}: member {name!r} declares a {'×'.join(str(s) for s in shape) or 'scalar'} array "
                            f"of {dtype} ({memory.fmt_bytes(nbytes)}) but holds {max(0, info.file_size - offset):,} "
                            "bytes of data (damaged or edited)")
        total += info.file_size
    limit = memory.memory_limit()
    if total > memory.SMALL_BYTES and limit is not None and total > limit:
        raise error(f"{where}: its arrays take {memory.fmt_bytes(total)} ({total:,} bytes) but only "
                    f"{memory.fmt_bytes(limit)} are available (the memory available, or FASTPU_MEMORY_LIMIT); "
                    "set FASTPU_MEMORY_LIMIT if more memory is really there")
    return total
