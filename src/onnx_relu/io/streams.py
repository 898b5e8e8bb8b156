"""Reading and writing what an :class:`~.endpoint.Endpoint` names: streams as well as files.

:func:`open_input` and :func:`open_output` open a path as its kind allows (see the table of
:mod:`.endpoint`): a regular file as a file, ``-``, a FIFO or a character device as a stream,
an output file atomically (:func:`.atomic.atomic_file`). Streams are written with
:func:`write_all`, which finishes short writes and waits out ``EAGAIN`` on non-blocking
descriptors, so that a write returns only when every byte is written (a reader that goes away
makes it raise ``BrokenPipeError``), and read with :func:`read_exact`, which fills a buffer or
says how much came. :class:`Prefixed` puts bytes already read back in front of a stream that
cannot seek back (a FIFO's probe, standard input's magic string).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import select
import stat
import time
from collections.abc import Iterator

from ..errors import UnsupportedPathError

# The command line's --version writes through write_all and standard_closed alone, so this
# module's import stays as light as they are: typing, the endpoint (dataclasses) and the atomic
# writes are imported where they are used (not typing.TYPE_CHECKING: importing typing costs the
# command line's start-up more than this).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Literal

    from .endpoint import Destination, Endpoint

__all__ = [
    "FIFO_WAIT_S",
    "open_input",
    "open_output",
    "open_destination",
    "Output",
    "Prefixed",
    "write_all",
    "read_exact",
    "read_bounded",
    "is_regular",
    "regular_size",
    "hold_closed_standard_streams",
    "standard_closed",
]

#: How long a reader of a FIFO waits for a writer to open it before refusing it.
FIFO_WAIT_S = 1.0

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


class Prefixed(io.BufferedIOBase):
    """``file`` with the bytes ``start`` already read from it put back in front (a stream
    cannot seek back); ``fileno`` is ``file``'s, and closing it closes ``file``. ``regular``
    says whether ``file`` is a regular file."""

    def __init__(self, start: bytes, file: Any) -> None:
        self._start = start
        self._file = file
        self.regular = is_regular(file)

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            data, self._start = self._start + bytes(self._file.read()), b""
            return data
        if not self._start:
            return bytes(self._file.read(size))
        data, self._start = self._start[:size], self._start[size:]
        if len(data) < size:
            data += bytes(self._file.read(size - len(data)))
        return data

    def readinto(self, buffer: Any) -> int:
        target = memoryview(buffer).cast("B")
        if not self._start:
            return int(self._file.readinto(target))
        count = min(len(target), len(self._start))
        target[:count] = self._start[:count]
        self._start = self._start[count:]
        return count

    def fileno(self) -> int:
        return int(self._file.fileno())

    def tell(self) -> int:
        return int(self._file.tell()) - len(self._start)

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


def _wait_for_writer(fd: int, source: Endpoint) -> bytes:
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
                f"{source.what} {source.description} has no writer: nothing opened it for"
                f" writing within {FIFO_WAIT_S:g} s (start the writer first, or pipe into '-')"
            )


def _endpoint(
    path: str | os.PathLike[str] | Endpoint, what: str, stdio: Literal["input", "output"] | None
) -> Endpoint:
    import dataclasses

    from .endpoint import Endpoint

    if isinstance(path, Endpoint):
        return path if path.what else dataclasses.replace(path, what=what)
    return Endpoint.of(path, what, stdio=stdio)


@contextlib.contextmanager
def open_input(
    path: str | os.PathLike[str] | Endpoint,
    what: str = "input",
    *,
    dash_is_stdio: bool = False,
) -> Iterator[BinaryIO]:
    """Open ``path`` (or the :class:`~.endpoint.Endpoint` already classified) for reading as
    its kind allows (see the table of :mod:`.endpoint`).

    The file object's ``regular`` attribute says whether it is a regular file (its size known,
    seekable) or a stream. ``what`` names the path in errors (e.g. "IN").

    A path is opened as what it was classified (:func:`.identity.open_classified`): without
    blocking, without following a symbolic link put in its place, and refused when it is no
    longer the object classified.

    Raises
    ------
    UnsupportedPathError
        for a device, a socket, a FIFO that no writer opens in time, closed standard input, or
        a path that changed since it was classified.
    OSError
        as ``open`` does (missing, a folder, no permission).
    """
    from .endpoint import PathKind
    from .identity import open_classified, open_classified_fd

    source = _endpoint(path, what, "input" if dash_is_stdio else None)
    kind = source.kind
    file: Any
    if kind is PathKind.STDIO:
        if standard_closed(0):
            raise UnsupportedPathError(f"{source.what} is standard input ('-'), which is closed")
        fd = os.dup(0)
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        file = os.fdopen(fd, "rb")
    elif kind in (PathKind.CHARACTER_DEVICE, PathKind.BLOCK_DEVICE, PathKind.SOCKET):
        raise source.refusal("onnx-relu reads regular files, FIFOs and '-'")
    elif kind is PathKind.FIFO:
        fd = open_classified_fd(source, os.O_RDONLY)  # non-blocking: see _wait_for_writer
        try:
            prefix = _wait_for_writer(fd, source)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        file = Prefixed(prefix, open(fd, "rb"))
        regular = False
    else:
        file = open_classified(source)  # closed below
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


def read_exact(file: Any, into: Any, offset: int | None = None) -> int:
    """Fill ``into`` (a writable buffer) from ``file``; return how many bytes came, fewer than
    ``len(into)`` only where the data ended. ``offset``: read a regular file at that position
    (``os.preadv``, the file's position unchanged); None: read in order (a stream)."""
    target = memoryview(into).cast("B")
    filled = 0
    while filled < len(target):
        if offset is None:
            count = file.readinto(target[filled:])
        else:
            count = os.preadv(file.fileno(), [target[filled:]], offset + filled)
        if not count:
            break
        filled += count
    return filled


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


@contextlib.contextmanager
def open_output(
    path: str | os.PathLike[str] | Endpoint,
    what: str = "output",
    *,
    dash_is_stdio: bool = False,
    streams: bool = True,
) -> Iterator[Output]:
    """Open ``path`` (or the :class:`~.endpoint.Endpoint` already classified) for writing as
    its kind allows (see the table of :mod:`.endpoint`) and yield an :class:`Output`.

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
    from .endpoint import Destination, written_as

    destination = _endpoint(path, what, "output" if dash_is_stdio else None)
    with open_destination(
        Destination(destination, written_as(destination, streams=streams))
    ) as out:
        yield out


@contextlib.contextmanager
def open_destination(output: Destination) -> Iterator[Output]:
    """Open ``output`` for writing as its plan decided (:attr:`~.endpoint.Destination.written`)
    and yield an :class:`Output`: a stream is written through, a file atomically
    (:func:`.atomic.atomic_file`). Nothing about it is decided again here.

    Raises
    ------
    UnsupportedPathError
        for a FIFO with no reader and closed standard output.
    """
    from .atomic import atomic_file
    from .endpoint import Written

    destination = output.endpoint
    if output.written is Written.ATOMIC_FILE:
        with atomic_file(output) as file:
            file.flush()
            yield Output(file.fileno())
        return
    if output.written is not Written.STREAM:
        raise ValueError(f"{destination.label} is a {output.written.value}, not a file")
    if destination.is_stdio:
        if standard_closed(1):
            raise UnsupportedPathError(
                f"{destination.what} is standard output ('-'), which is closed"
            )
        if _stdout_buffered():
            import sys

            sys.stdout.flush()  # whatever was printed before comes first
        yield Output(1)
        return
    from .identity import open_classified_fd

    try:
        fd = open_classified_fd(destination, os.O_WRONLY)  # what was classified, or refused
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        raise UnsupportedPathError(
            f"{destination.what} {destination.description} has no reader: start the reader first"
        ) from None
    try:
        yield Output(fd)
    finally:
        os.close(fd)


def _stdout_buffered() -> bool:
    import sys

    return sys.stdout is not None and not sys.stdout.closed
