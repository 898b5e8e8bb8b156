"""Write a file so that readers only ever see the old content or the complete new one.

The new content goes to a temporary name in the destination's own folder (a rename is atomic
only within one file system), is flushed and fsynced, and is then renamed over the destination.
On any failure, including KeyboardInterrupt and SystemExit, the temporary is removed and the
destination is left as it was. A process killed with SIGKILL cannot clean up: it may leave a
hidden ``.NAME.*.onnx-relu-tmp`` entry next to the destination, never a partial destination.

A destination that is a symbolic link is written through, as ``cp`` does: the temporary goes
next to the file the link points to and replaces that file; the link stays. Only a regular file
is ever replaced: a destination that is an existing folder is refused at once
(``IsADirectoryError`` naming it), a FIFO, a device or a socket with
:class:`~onnx_relu.errors.UnsupportedPathError` (:mod:`.paths` writes those as streams).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from .endpoint import Endpoint

__all__ = [
    "TEMP_SUFFIX",
    "atomic_file",
    # what the replacement of a folder (files.jobs.zarr_output) shares with it
    "temporary_name",
    "shortened_name",
    "split_destination",
    "final_mode",
    "fsync_folder",
]

#: Suffix of every temporary file or folder this module creates.
TEMP_SUFFIX = ".onnx-relu-tmp"


_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _name_max(folder: str) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255  # NAME_MAX of Linux's file systems


#: Length of the random part of a temporary name: "." and 12 hex digits.
_RANDOM_LENGTH = 13


def shortened_name(folder: str, name: str) -> str:
    """``name`` shortened (whole characters) so that its temporary name fits the file system's
    limit on a name's bytes (255): an OUT name of 228-255 bytes must still be writable."""
    room = _name_max(folder) - 1 - _RANDOM_LENGTH - len(TEMP_SUFFIX)
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return name


def temporary_name(folder: str, name: str) -> str:
    """``.NAME.<12 random hex digits>.onnx-relu-tmp`` in ``folder`` (NAME :func:`shortened_name`);
    the random part keeps it unique."""
    return os.path.join(
        folder, f".{shortened_name(folder, name)}.{os.urandom(6).hex()}{TEMP_SUFFIX}"
    )


def _umask() -> int:
    # os.umask can only be read by setting it, which races with other threads; Linux reports
    # it in /proc without that.
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def final_mode(path: str, default: int) -> int:
    """Replacing keeps the old entry's permissions; a new one gets ``default`` less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return default & ~_umask()


def fsync_folder(folder: str) -> None:
    # The rename is durable only once the folder itself is on disk.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the rename still happened
        pass
    finally:
        os.close(fd)


def split_destination(path: str | os.PathLike[str]) -> tuple[str, str, str]:
    """The destination, its folder and its name. A symbolic link is written through: the file
    (or store) it points to is replaced, next to itself, and the link stays a link."""
    target = os.path.abspath(os.fspath(path))
    if os.path.islink(target):
        target = os.path.realpath(target)
    return target, os.path.dirname(target), os.path.basename(target)


def _stat(target: str) -> os.stat_result | None:
    try:
        return os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _refuse_folder(found: os.stat_result | None, path: str | os.PathLike[str]) -> None:
    """Only a regular file (or nothing) is ever replaced: a folder, a FIFO, a device or a
    socket is refused, whatever link leads to it (``found``: the ``stat`` of what the
    destination is, None if nothing)."""
    if found is None:
        return
    if stat.S_ISDIR(found.st_mode):
        raise IsADirectoryError(
            errno.EISDIR, "is a folder; give the path of a file to write", os.fspath(path)
        )
    if not stat.S_ISREG(found.st_mode):
        from ..errors import UnsupportedPathError

        raise UnsupportedPathError(
            f"{os.fspath(path)!r} is not a regular file (a FIFO, a device or a socket):"
            " it is never replaced by one; write it as a stream instead"
        )


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str] | Endpoint) -> Iterator[BinaryIO]:
    """Yield a binary file (opened ``w+b``, so it can also be memory-mapped) that becomes ``path``.

    ``path`` may be an :class:`~.endpoint.Endpoint`, whose classification then serves instead
    of a second look at the destination; it is looked at once more just before the rename.

    The file is a temporary in ``path``'s folder. When the ``with`` block ends normally it is
    flushed, fsynced and renamed over ``path`` (replacing a file keeps that file's permissions);
    when the block raises, the temporary is removed, ``path`` is untouched and the exception
    propagates.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with atomic_file(os.path.join(folder, "a.bin")) as f:
    ...     _ = f.write(b"complete")
    >>> pathlib.Path(folder, "a.bin").read_bytes()
    b'complete'
    >>> try:
    ...     with atomic_file(os.path.join(folder, "b.bin")) as f:
    ...         _ = f.write(b"half")
    ...         raise RuntimeError("failed mid-write")
    ... except RuntimeError:
    ...     pass
    >>> sorted(os.listdir(folder))
    ['a.bin']
    """
    if isinstance(path, Endpoint):  # classified already: its stat serves, none is made again
        given = path.path
        target = os.path.realpath(given) if path.is_link else os.path.abspath(given)
        found = path.stat
    else:
        target = split_destination(path)[0]
        found = _stat(target)
    folder, name = os.path.dirname(target), os.path.basename(target)
    _refuse_folder(found, path)  # os.replace would fail at the end, naming the temporary
    mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666 & ~_umask()
    # The name is chosen before the file is created (unlike tempfile.mkstemp), so that an
    # exception raised at any point after creation, even by a signal handler while the
    # creating call returns, finds the name here and removes the file.
    temporary = temporary_name(folder, name)
    owned = True  # False once the name turns out to be someone else's file
    try:
        try:
            fd = os.open(temporary, _CREATE_FLAGS, 0o600)
        except FileExistsError:
            owned = False  # someone else's file: not ours to remove
            raise
        with os.fdopen(fd, "w+b") as file:
            yield file
            file.flush()
            os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
        _refuse_folder(_stat(target), path)  # again: it may have become a FIFO or device
        os.replace(temporary, target)
    except BaseException:
        if owned:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        raise
    fsync_folder(folder)
