"""What a path is, and what reading or writing it does: the one place that decides.

Every reader and writer of the file layer and the command line opens its paths here.

===============================  ================================  =================================
kind of path                     read (an input, a model)          written (an output)
===============================  ================================  =================================
regular file                     read, bounded by its size         replaced atomically
                                                                   (:func:`.atomic_file`)
missing                          ``FileNotFoundError``             created atomically
``-`` (where a command says so)  standard input, read as a stream  standard output, written as a
                                                                   stream
FIFO (named pipe)                read as a stream once a writer    written as a stream once a
                                 is there; refused if none comes   reader is there; refused at once
                                 within :data:`FIFO_WAIT_S`        if none is there (never replaced
                                                                   by a regular file)
character device                 refused (``/dev/zero`` has no     written as a stream
                                 end)                              (``/dev/null``, a terminal);
                                                                   never replaced
block device, socket             refused                           refused
folder                           ``IsADirectoryError``             ``IsADirectoryError``
symbolic link to any of these    as its target                     as its target (the link stays a
                                                                   link)
===============================  ================================  =================================

Streams are written with :func:`write_all`, which finishes short writes and waits out
``EAGAIN`` on non-blocking descriptors, so that a write returns only when every byte is
written. A reader that goes away makes the write raise ``BrokenPipeError``.

Examples
--------
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path_kind(os.path.join(folder, "y.npy")).value, path_kind(folder).value
('missing', 'folder')
>>> os.mkfifo(os.path.join(folder, "pipe"))
>>> path_kind(os.path.join(folder, "pipe")).value
'FIFO'
>>> path_kind("-", dash_is_stdio=True).value
'-'
"""

from __future__ import annotations

import contextlib
import enum
import errno
import io
import os
import select
import stat
import time
from collections.abc import Iterator

from .._paths import absolute_path
from ..errors import FileArgumentError, UnsupportedPathError
from ._atomic import atomic_file

# (not typing.TYPE_CHECKING: importing typing costs the command line's start-up more than this)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

__all__ = [
    "absolute_path",
    "STDIO",
    "TENSOR_FORMATS",
    "FIFO_WAIT_S",
    "PathKind",
    "path_kind",
    "describe",
    "open_input",
    "open_output",
    "Output",
    "write_all",
    "is_regular",
    "regular_size",
    "check_readable",
    "check_output_kind",
    "check_writable_destination",
    "refuse_terminal_output",
]

#: The name of standard input (as IN) and standard output (as OUT) where a command allows it.
STDIO = "-"

#: File suffix (lower case) -> tensor format name (here, not in :mod:`.tensors`, so that the
#: command line can list the formats without importing numpy; ``tensors`` exports it too).
TENSOR_FORMATS: dict[str, str] = {".npy": "npy", ".pb": "pb"}

#: How long a reader of a FIFO waits for a writer to open it before refusing it.
FIFO_WAIT_S = 1.0


class PathKind(enum.Enum):
    """What a path names (a symbolic link: what it points to)."""

    MISSING = "missing"
    DANGLING_LINK = "dangling symbolic link"
    REGULAR = "regular file"
    DIRECTORY = "folder"
    FIFO = "FIFO"
    CHARACTER_DEVICE = "character device"
    BLOCK_DEVICE = "block device"
    SOCKET = "socket"
    STDIO = "-"

    @property
    def is_stream(self) -> bool:
        """Read or written in order, once, with no size known beforehand."""
        return self in (PathKind.FIFO, PathKind.CHARACTER_DEVICE, PathKind.STDIO)


def path_kind(path: str | os.PathLike[str], *, dash_is_stdio: bool = False) -> PathKind:
    """The kind of ``path``, following symbolic links; ``"-"`` is :attr:`PathKind.STDIO`
    when ``dash_is_stdio``."""
    path = os.fspath(path)
    if dash_is_stdio and path == STDIO:
        return PathKind.STDIO
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return PathKind.DANGLING_LINK if os.path.islink(path) else PathKind.MISSING
    return _kind_of_mode(mode)


def _kind_of_mode(mode: int) -> PathKind:
    if stat.S_ISREG(mode):
        return PathKind.REGULAR
    if stat.S_ISDIR(mode):
        return PathKind.DIRECTORY
    if stat.S_ISFIFO(mode):
        return PathKind.FIFO
    if stat.S_ISCHR(mode):
        return PathKind.CHARACTER_DEVICE
    if stat.S_ISBLK(mode):
        return PathKind.BLOCK_DEVICE
    return PathKind.SOCKET


def describe(path: str | os.PathLike[str], kind: PathKind) -> str:
    """``path`` quoted, with what a symbolic link points to."""
    path = os.fspath(path)
    if os.path.islink(path):
        return f"{path!r} (a symbolic link to {os.path.realpath(path)!r}, a {kind.value})"
    return f"{path!r} (a {kind.value})"


def _refusal(what: str, path: str, kind: PathKind, allowed: str) -> UnsupportedPathError:
    return UnsupportedPathError(f"{what} {describe(path, kind)} cannot be used: {allowed}")


#: The standard descriptors (0, 1, 2) found closed by :func:`hold_closed_standard_streams`.
_CLOSED_STANDARD: set[int] = set()


def hold_closed_standard_streams() -> None:
    """Put ``/dev/null`` on each of the descriptors 0, 1 and 2 that is closed, and remember it
    as closed (:func:`standard_closed` answers for each).

    A program started with standard output closed would otherwise get descriptor 1 for the
    first file it opens, and write its output into that file. ``-`` on a descriptor found
    closed is refused (:class:`~onnx_relu.errors.UnsupportedPathError`). The command line calls
    this first.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, os.O_RDWR)
            if held != fd:  # (a lower one was free: cannot happen, as 0..fd-1 are held now)
                os.dup2(held, fd)
                os.close(held)
            _CLOSED_STANDARD.add(fd)


def standard_closed(fd: int) -> bool:
    """Whether the standard descriptor ``fd`` was closed when the program started (as far as
    :func:`hold_closed_standard_streams` saw) or is closed now."""
    if fd in _CLOSED_STANDARD:
        return True
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


# --- reading ---------------------------------------------------------------------------------


class _Prefixed(io.RawIOBase):
    """A raw reader that returns ``prefix`` first, then what ``fd`` reads."""

    def __init__(self, prefix: bytes, fd: int) -> None:
        self._prefix = prefix
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: object) -> int:
        target = memoryview(buffer).cast("B")  # type: ignore[arg-type]
        if self._prefix:
            count = min(len(target), len(self._prefix))
            target[:count] = self._prefix[:count]
            self._prefix = self._prefix[count:]
            return count
        return os.readv(self._fd, [target])

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def _wait_for_writer(fd: int, what: str, path: str) -> bytes:
    """Wait (at most :data:`FIFO_WAIT_S`) until a writer has opened the FIFO open at ``fd``
    (non-blocking); return the bytes a probe read took. A FIFO that has never had a writer
    reports no event to ``poll`` and reads as empty; one with a writer reads ``EAGAIN``
    until data comes."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        if poller.poll(10):
            return b""  # data, or a writer came and went (POLLHUP): read it as a stream
        try:
            data = os.read(fd, 1)
        except BlockingIOError:
            return b""  # a writer is there, its data not yet
        if data:
            return data
        if time.monotonic() >= deadline:
            raise UnsupportedPathError(
                f"{what} {describe(path, PathKind.FIFO)} has no writer: nothing opened it for"
                f" writing within {FIFO_WAIT_S:g} s (start the writer first, or pipe into '-')"
            )


@contextlib.contextmanager
def open_input(
    path: str | os.PathLike[str], what: str = "input", *, dash_is_stdio: bool = False
) -> Iterator[BinaryIO]:
    """Open ``path`` for reading as its kind allows (see the module's table).

    The file object's ``regular`` attribute says whether it is a regular file (its size known,
    seekable) or a stream. ``what`` names the path in errors (e.g. "IN").

    Raises
    ------
    UnsupportedPathError
        for a device, a socket, a FIFO that no writer opens in time, or closed standard input.
    OSError
        as ``open`` does (missing, a folder, no permission).
    """
    path = os.fspath(path)
    kind = path_kind(path, dash_is_stdio=dash_is_stdio)
    file: Any
    if kind is PathKind.STDIO:
        if standard_closed(0):
            raise UnsupportedPathError(f"{what} is standard input ('-'), which is closed")
        fd = os.dup(0)
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        file = os.fdopen(fd, "rb")
    elif kind in (PathKind.CHARACTER_DEVICE, PathKind.BLOCK_DEVICE, PathKind.SOCKET):
        raise _refusal(what, path, kind, "onnx-relu reads regular files, FIFOs and '-'")
    elif kind is PathKind.FIFO:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            prefix = _wait_for_writer(fd, what, path)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        file = io.BufferedReader(_Prefixed(prefix, fd))
        regular = False
    else:
        file = open(path, "rb")  # closed below
        regular = True
    file.regular = regular
    with file:
        yield file


def is_regular(file: BinaryIO) -> bool:
    """Whether ``file`` (from :func:`open_input`, or any file object) is a regular file."""
    regular = getattr(file, "regular", None)
    if regular is not None:
        return bool(regular)
    try:
        return stat.S_ISREG(os.fstat(file.fileno()).st_mode)
    except (AttributeError, OSError, io.UnsupportedOperation):
        return False


def regular_size(file: BinaryIO) -> int | None:
    """The size of ``file`` if it is a regular file, else None (a pipe, a FIFO, a BytesIO)."""
    if not is_regular(file):
        return None
    return os.fstat(file.fileno()).st_size


def read_bounded(file: BinaryIO, limit: int, what: str) -> bytes:
    """All of ``file``, refused with ``ValueError`` naming ``what`` past ``limit`` bytes
    (read in pieces, so that a stream without an end costs at most ``limit`` bytes)."""
    if is_regular(file):
        size = os.fstat(file.fileno()).st_size
        if size > limit:
            raise ValueError(f"{what} is {size} bytes, over the limit of {limit}")
    pieces = bytearray()
    while True:
        piece = file.read(min(1 << 24, limit + 1 - len(pieces)))
        if not piece:
            return bytes(pieces)
        pieces += piece
        if len(pieces) > limit:
            raise ValueError(f"{what} holds more than {limit} bytes")


# --- writing ---------------------------------------------------------------------------------


def write_all(fd: int, data: object) -> None:
    """Write every byte of ``data`` to ``fd``: short writes are continued and a non-blocking
    descriptor that is full (``EAGAIN``) is waited on; ``EINTR`` is retried by Python itself.
    A reader that has gone away raises ``BrokenPipeError``; a full disk or a file-size limit,
    the ``OSError`` of the write that failed."""
    view = memoryview(data).cast("B")  # type: ignore[arg-type]
    poller: select.poll | None = None
    while view:
        try:
            count = os.write(fd, view[: 1 << 30])
        except BlockingIOError:
            if poller is None:
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
            poller.poll()  # (POLLERR when the reader is gone: the next write says EPIPE)
            continue
        view = view[count:]


class Output:
    """Where an output goes: ``write`` writes every byte or raises."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: object) -> None:
        write_all(self.fd, data)


def check_output_kind(
    path: str | os.PathLike[str],
    what: str = "output",
    *,
    dash_is_stdio: bool = False,
    streams: bool = True,
) -> PathKind:
    """Refuse, before any work, an output path that :func:`open_output` would refuse; return its
    kind. ``streams=False``: only regular files (replaced) and missing ones (created)."""
    path = os.fspath(path)
    kind = path_kind(path, dash_is_stdio=dash_is_stdio)
    if kind is PathKind.DIRECTORY:
        raise IsADirectoryError(errno.EISDIR, "is a folder; give the path of a file", path)
    if kind in (PathKind.BLOCK_DEVICE, PathKind.SOCKET) or (kind.is_stream and not streams):
        allowed = (
            "it is written as a regular file (replaced atomically)"
            + (", a FIFO, a character device or '-'" if streams else " or created")
            + "; it is never replaced by a regular file"
        )
        raise _refusal(what, path, kind, allowed)
    return kind


@contextlib.contextmanager
def open_output(
    path: str | os.PathLike[str],
    what: str = "output",
    *,
    dash_is_stdio: bool = False,
    streams: bool = True,
) -> Iterator[Output]:
    """Open ``path`` for writing as its kind allows (see the module's table) and yield an
    :class:`Output`.

    A regular or missing file is written atomically: it changes only when the block ends
    normally. A stream (FIFO, character device, ``-``) is written through; the block's bytes
    reach it as they are written, and an error part-way leaves what was written (the reader
    sees a short stream). ``streams=False`` refuses streams.

    Raises
    ------
    UnsupportedPathError
        for a block device or a socket, a FIFO with no reader, closed standard output, or any
        stream with ``streams=False``.
    IsADirectoryError
        for a folder.
    """
    path = os.fspath(path)
    kind = check_output_kind(path, what, dash_is_stdio=dash_is_stdio, streams=streams)
    if kind is PathKind.STDIO:
        if standard_closed(1):
            raise UnsupportedPathError(f"{what} is standard output ('-'), which is closed")
        if _stdout_buffered():
            import sys

            sys.stdout.flush()  # whatever was printed before comes first
        yield Output(1)
        return
    if kind.is_stream:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            raise UnsupportedPathError(
                f"{what} {describe(path, kind)} has no reader: start the reader first"
            ) from None
        try:
            yield Output(fd)
        finally:
            os.close(fd)
        return
    with atomic_file(path) as file:
        file.flush()
        output = Output(file.fileno())
        yield output


def _stdout_buffered() -> bool:
    import sys

    return sys.stdout is not None and not sys.stdout.closed


# --- checks made before any work starts ------------------------------------------------------


def check_readable(path: str, what: str, *, folder: bool = False) -> None:
    """Refuse, before any work, an input ``path`` that is missing, a folder (with
    ``folder=True``: not a folder, as a Zarr store is one) or not readable; ``what`` names it
    in the message (e.g. "IN").

    Raises
    ------
    FileArgumentError
        naming ``what`` and ``path``.

    Examples
    --------
    >>> import tempfile
    >>> check_readable(tempfile.mkdtemp(), "IN")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    onnx_relu.errors.FileArgumentError: IN '...' is a folder, not a tensor file
    """
    if not os.path.exists(path):
        raise FileArgumentError(f"{what} {path!r} does not exist")
    if folder and not os.path.isdir(path):
        raise FileArgumentError(f"{what} {path!r} is not a folder (a Zarr store is a folder)")
    if not folder and os.path.isdir(path):
        raise FileArgumentError(f"{what} {path!r} is a folder, not a tensor file")
    if not os.access(path, os.R_OK):
        raise FileArgumentError(f"{what} {path!r} is not readable (permission denied)")


def refuse_terminal_output(what: str, redirect: str) -> None:
    """Refuse to write binary ``what`` to standard output when it is a terminal, where it would
    be garbage on the screen; ``redirect`` is the example of a redirection the message offers.

    Raises
    ------
    FileArgumentError
        if standard output is a terminal (a closed one is not: opening it says so).
    """
    if os.isatty(1):  # (False for a closed descriptor, never an error)
        raise FileArgumentError(
            f"not writing {what} to a terminal: redirect standard output ({redirect}, |) or name"
            " an OUT file"
        )


def check_writable_destination(
    path: str, what: str = "OUT", *, store: bool = False
) -> PathKind | None:
    """Refuse, before any work, an output ``path`` that cannot be written; return its kind.

    A FIFO or a character device is written through as a stream; a regular or missing file
    needs a folder that exists, is a folder and is writable; a folder, block device or socket
    is refused (:func:`check_output_kind`). ``store=True``: ``path`` is a folder (a Zarr
    store); only its parent folder is checked, and None is returned. A symbolic link is
    checked where it points (it is written through).

    Raises
    ------
    FileArgumentError
        naming ``what`` and ``path``.
    UnsupportedPathError
        for a block device or a socket.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> check_writable_destination(os.path.join(folder, "y.npy")).value
    'missing'
    >>> check_writable_destination(os.path.join(folder, "no", "y.npy"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    onnx_relu.errors.FileArgumentError: cannot write OUT '...': the folder '...' does not exist
    """
    kind = None
    if not store:
        try:
            kind = check_output_kind(path, what)
        except IsADirectoryError:
            raise FileArgumentError(f"{what} {path!r} is a folder, not a file name") from None
        if kind.is_stream:
            return kind
    absolute = absolute_path(path)
    target = os.path.realpath(absolute) if os.path.islink(absolute) else absolute
    folder = os.path.dirname(target)  # a link is written through (see files._atomic)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise FileArgumentError(f"cannot write {what} {path!r}: {folder!r} is a file, not a folder")
    if not os.path.isdir(folder):
        raise FileArgumentError(
            f"cannot write {what} {path!r}: the folder {folder!r} does not exist"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FileArgumentError(
            f"cannot write {what} {path!r}: the folder {folder!r} is not writable"
        )
    return kind
