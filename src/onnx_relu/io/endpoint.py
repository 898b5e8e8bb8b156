"""What a path is, classified once, and the rules every command and library function applies to
it: the one place that decides.

An :class:`Endpoint` is one path of a job (IN, OUT, a model, ``-``, a folder) as classified
once, with one ``lstat`` (and a ``stat`` where it is a symbolic link): its kind, its label in
messages, its format where it has one, and the ``stat`` result. Its ``require_*`` methods are
the rules: readable, writable, replaceable, a model file, a folder of outputs. Readers and
writers (:mod:`.streams`, :mod:`.atomic`) take the endpoint and stat nothing again.

===============================  ================================  =================================
kind of path                     read (an input, a model)          written (an output)
===============================  ================================  =================================
regular file                     read, bounded by its size         replaced atomically
                                                                   (:func:`.atomic.atomic_file`)
missing                          ``FileNotFoundError``             created atomically
``-`` (where a command says so)  standard input, read as a stream  standard output, written as a
                                                                   stream
FIFO (named pipe)                read as a stream once a writer    written as a stream once a
                                 is there; refused if none comes   reader is there; refused at once
                                 in :data:`.streams.FIFO_WAIT_S`   if none is there (never replaced
                                                                   by a regular file)
character device                 refused (``/dev/zero`` has no     written as a stream
                                 end)                              (``/dev/null``, a terminal);
                                                                   never replaced
block device, socket             refused                           refused
folder                           ``IsADirectoryError``             ``IsADirectoryError``
symbolic link to any of these    as its target                     as its target (the link stays a
                                                                   link)
===============================  ================================  =================================

Importing this module imports neither numpy nor the kernel: the ONNX layer (a model's path) and
the file layer both classify their paths here.

Examples
--------
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> Endpoint.of(os.path.join(folder, "y.npy")).kind.value, Endpoint.of(folder).kind.value
('missing', 'folder')
>>> os.mkfifo(os.path.join(folder, "pipe"))
>>> Endpoint.of(os.path.join(folder, "pipe")).kind.value
'FIFO'
>>> Endpoint.of("-", "IN", stdio="input").kind.value, Endpoint.of("-", "IN").kind.value
('-', 'missing')
>>> Endpoint.of("-", "OUT", stdio="output").label
'standard output'
"""

from __future__ import annotations

import enum
import errno
import os
import stat
from dataclasses import dataclass, field, replace

from .._paths import absolute_path
from .._text import printable
from ..errors import FileArgumentError, UnsupportedPathError

TYPE_CHECKING = False  # (not typing's: see onnx_relu.io.streams)
if TYPE_CHECKING:
    from typing import Literal

__all__ = [
    "STDIO",
    "PathKind",
    "Endpoint",
    "Written",
    "Destination",
    "written_as",
    "refuse_terminal_output",
]

#: The name of standard input (as IN) and standard output (as OUT) where a command allows it.
STDIO = "-"


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


_SPECIAL = (PathKind.FIFO, PathKind.CHARACTER_DEVICE, PathKind.BLOCK_DEVICE, PathKind.SOCKET)


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


def _classify(path: str) -> tuple[PathKind, os.stat_result | None, bool]:
    """The kind of ``path`` (following links), its ``stat`` (None if missing), and whether it is
    a symbolic link: one ``lstat``, and one ``stat`` for a link."""
    try:
        found = os.lstat(path)
    except OSError:  # (a folder on the way that is missing, a file, or not searchable)
        return PathKind.MISSING, None, False
    if not stat.S_ISLNK(found.st_mode):
        return _kind_of_mode(found.st_mode), found, False
    try:
        target = os.stat(path)
    except OSError:  # (a loop of links too)
        return PathKind.DANGLING_LINK, None, True
    return _kind_of_mode(target.st_mode), target, True


@dataclass(frozen=True)
class Endpoint:
    """One path of a job, classified once (:meth:`of`).

    Attributes
    ----------
    path : str
        As given; ``"-"`` for standard input or output.
    label : str
        How messages name it: the path quoted, or "standard input" / "standard output".
    kind : PathKind
        What the path is; :attr:`PathKind.STDIO` for ``-``.
    format : str
        "npy", "pb" or "zarr" where it holds a tensor, else "".
    what : str
        What messages call its role ("IN", "OUT", "MODEL"), else "".
    is_link : bool
        Whether the path is a symbolic link (its kind is its target's).
    stat : os.stat_result or None
        The classification's ``stat`` (a link's target's); None if missing and for ``-``.
    checked : bool
        Whether it is a command's argument, which a job refuses before anything is opened when
        it cannot be used (missing, unreadable, a folder where a file is wanted, in a folder
        that is not writable), with :class:`~onnx_relu.errors.FileArgumentError` naming it;
        False leaves those to the ``OSError`` of opening it.
    """

    path: str
    label: str
    kind: PathKind
    format: str = ""
    what: str = ""
    is_link: bool = False
    stat: os.stat_result | None = field(default=None, repr=False, compare=False)
    checked: bool = False

    @classmethod
    def of(
        cls,
        path: str | os.PathLike[str],
        what: str = "",
        *,
        stdio: Literal["input", "output"] | None = None,
        format: str = "",
        checked: bool = False,
    ) -> Endpoint:
        """Classify ``path`` once, as ``what`` (e.g. "IN"); ``"-"`` is standard input or output
        where ``stdio`` says which (``"input"``, ``"output"``), else a file of that name."""
        path = os.fspath(path)
        if stdio is not None and path == STDIO:
            return cls(path, f"standard {stdio}", PathKind.STDIO, format, what, checked=checked)
        kind, found, is_link = _classify(path)
        return cls(path, repr(path), kind, format, what, is_link, found, checked)

    def __fspath__(self) -> str:
        # An endpoint is a path-like object: what takes a path takes the endpoint, and where
        # that is a function of this package it uses the classification instead of redoing it.
        return self.path

    @property
    def is_stdio(self) -> bool:
        """Whether it is standard input or output (``-``)."""
        return self.kind is PathKind.STDIO

    @property
    def description(self) -> str:
        """The path quoted, with what a symbolic link points to, and its kind."""
        if self.is_link:
            return (
                f"{self.path!r} (a symbolic link to {os.path.realpath(self.path)!r},"
                f" a {self.kind.value})"
            )
        return f"{self.path!r} (a {self.kind.value})"

    def with_format(self, format: str) -> Endpoint:
        """The same endpoint holding ``format``."""
        return replace(self, format=format)

    def refusal(self, allowed: str) -> UnsupportedPathError:
        """The error for a path of a kind that cannot be used; ``allowed`` says what can."""
        return UnsupportedPathError(f"{self.what} {self.description} cannot be used: {allowed}")

    # --- the rules -------------------------------------------------------------------------

    def require_readable(self, *, folder: bool = False) -> None:
        """Refuse, before any work, an input that is missing, a folder (with ``folder=True``:
        not a folder, as a Zarr store is one) or not readable.

        Raises
        ------
        FileArgumentError
            naming :attr:`what` and the path.

        Examples
        --------
        >>> import tempfile
        >>> Endpoint.of(tempfile.mkdtemp(), "IN").require_readable()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        onnx_relu.errors.FileArgumentError: IN '...' is a folder, not a tensor file
        """
        what, path = self.what, self.path
        if self.kind in (PathKind.MISSING, PathKind.DANGLING_LINK):
            raise FileArgumentError(f"{what} {path!r} does not exist")
        directory = self.kind is PathKind.DIRECTORY
        if folder and not directory:
            raise FileArgumentError(f"{what} {path!r} is not a folder (a Zarr store is a folder)")
        if not folder and directory:
            raise FileArgumentError(f"{what} {path!r} is a folder, not a tensor file")
        if not os.access(path, os.R_OK):
            raise FileArgumentError(f"{what} {path!r} is not readable (permission denied)")

    def require_output_kind(self, *, streams: bool = True) -> None:
        """Refuse, before any work, an output that :func:`.streams.open_output` would refuse.
        ``streams=False``: only regular files (replaced) and missing ones (created).

        Raises
        ------
        IsADirectoryError
            for a folder.
        UnsupportedPathError
            for a block device or a socket, and any stream with ``streams=False``.
        """
        kind = self.kind
        if kind is PathKind.DIRECTORY:
            raise IsADirectoryError(errno.EISDIR, "is a folder; give the path of a file", self.path)
        if kind in (PathKind.BLOCK_DEVICE, PathKind.SOCKET) or (kind.is_stream and not streams):
            raise self.refusal(
                "it is written as a regular file (replaced atomically)"
                + (", a FIFO, a character device or '-'" if streams else " or created")
                + "; it is never replaced by a regular file"
            )

    def require_writable(self, *, store: bool = False) -> None:
        """Refuse, before any work, an output that cannot be written.

        A FIFO or a character device is written through as a stream; a regular or missing
        file needs a folder that exists, is a folder and is writable; a folder, block device or
        socket is refused (:meth:`require_output_kind`). ``store=True``: the path is a folder
        (a Zarr store); only its parent folder is checked. A symbolic link is checked where it
        points (it is written through). An existing entry in a sticky folder (mode 1777, as
        /tmp) that neither it nor the folder belongs to this user is refused: the rename that
        replaces it would fail.

        Raises
        ------
        FileArgumentError
            naming :attr:`what` and the path.
        UnsupportedPathError
            for a block device or a socket.

        Examples
        --------
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> Endpoint.of(os.path.join(folder, "y.npy"), "OUT").require_writable()
        >>> Endpoint.of(os.path.join(folder, "no", "y.npy"), "OUT").require_writable()
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        onnx_relu.errors.FileArgumentError: cannot write OUT '...': the folder '...' does not exist
        """
        if not store and written_as(self, folder_error=True) is Written.STREAM:
            return
        self.require_replaceable()

    def require_replaceable(self) -> None:
        """Refuse, before any work, a file or store to be replaced (or created) whose folder
        is missing, not a folder or not writable, or whose entry a sticky folder keeps from
        this user (:meth:`require_writable` without the kind of path, decided already).

        Raises
        ------
        FileArgumentError
            naming :attr:`what` and the path.
        """
        what, path = self.what, self.path
        absolute = absolute_path(path)
        target = os.path.realpath(absolute) if self.is_link else absolute
        folder = os.path.dirname(target)  # a link is written through (see io.atomic)
        try:
            folder_mode: int | None = os.stat(folder).st_mode
        except OSError:
            folder_mode = None
        if folder_mode is not None and not stat.S_ISDIR(folder_mode):
            raise FileArgumentError(
                f"cannot write {what} {path!r}: {folder!r} is a file, not a folder"
            )
        if folder_mode is None:
            raise FileArgumentError(
                f"cannot write {what} {path!r}: the folder {folder!r} does not exist"
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            raise FileArgumentError(
                f"cannot write {what} {path!r}: the folder {folder!r} is not writable"
            )
        existing = self.stat
        euid = os.geteuid() if hasattr(os, "geteuid") else 0
        if existing is not None and folder_mode & stat.S_ISVTX and euid != 0:
            holder = os.stat(folder).st_uid
            if euid not in (holder, existing.st_uid):
                raise FileArgumentError(
                    f"cannot replace {what} {path!r}: it is user {existing.st_uid}'s, in the"
                    f" sticky folder {folder!r} (mode {stat.S_IMODE(folder_mode):o}), where only"
                    f" the owner of an entry or of the folder may replace it; {what} left"
                    " unchanged"
                )

    def require_model_file(self) -> None:
        """A model is read from a regular file (it may name external data next to it): a FIFO,
        a device or a socket is refused at once, never waited on or read without end.

        Raises
        ------
        UnsupportedPathError
            for a FIFO, a device or a socket.
        """
        if self.kind in _SPECIAL:
            raise UnsupportedPathError(
                f"{self.what or 'model'} {self.description} is not a regular file; a model is"
                " read from a regular file (its external data is named relative to its folder)"
            )

    def require_rewritable(self) -> None:
        """Only a regular file is rewritten in place; a missing path or a folder is left to
        opening it, which says so, unless the endpoint is :attr:`checked`: then the file must
        also be readable and writable.

        Raises
        ------
        FileArgumentError
            where :attr:`checked`, for a missing, unreadable or unwritable file, or a folder.
        UnsupportedPathError
            for a FIFO, a device or a socket.
        """
        if self.checked:
            self.require_readable()
            if not os.access(self.path, os.W_OK):
                raise FileArgumentError(
                    f"{self.what} {self.path!r} is not writable (permission denied): it cannot"
                    " be rewritten in place"
                )
        if self.kind not in (PathKind.REGULAR, PathKind.MISSING, PathKind.DIRECTORY):
            raise UnsupportedPathError(
                f"in place: {self.description} is not a regular file; only a regular .npy file"
                " can be rewritten in place"
            )

    def require_creatable_folder(self) -> None:
        """A folder of outputs (``run -o DIR``): a folder that is writable, or a path that can
        be created (its nearest existing part a writable folder).

        Raises
        ------
        FileArgumentError
            naming :attr:`what` and the path.
        """
        what, path = self.what, self.path
        if self.kind is PathKind.DANGLING_LINK:
            raise FileArgumentError(
                f"{what} {printable(path)} is a dangling symbolic link (to"
                f" {os.readlink(path)!r}); give a folder"
            )
        existing = absolute_path(path)
        if self.kind is PathKind.DIRECTORY:
            pass
        elif self.kind is not PathKind.MISSING:
            raise FileArgumentError(f"{what} {path!r} exists and is not a folder")
        else:
            # The nearest part of the path that exists must be a folder we may create entries in.
            while not os.path.exists(existing):
                existing = os.path.dirname(existing)
            if not os.path.isdir(existing):
                raise FileArgumentError(f"{what} {path!r}: {existing!r} is a file, not a folder")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise FileArgumentError(f"{what} {path!r}: the folder {existing!r} is not writable")


class Written(enum.Enum):
    """How an output is written: the one decision about OUT that readers of the plan carry
    out (:func:`written_as` makes it from the kind of path; a store is said by its caller)."""

    #: Written through as the bytes come: ``-``, a FIFO, a character device.
    STREAM = "stream"
    #: A regular or missing file, replaced (or created) by renaming a complete temporary.
    ATOMIC_FILE = "atomic file"
    #: A folder store (Zarr), replaced (or created) by renaming a complete temporary folder.
    ATOMIC_STORE = "atomic folder store"


def written_as(endpoint: Endpoint, *, streams: bool = True, folder_error: bool = False) -> Written:
    """How ``endpoint``, an output file, is written, from its kind (the table above); the one
    place that decides it, and refuses the kinds that cannot be written.

    ``streams=False`` refuses streams; ``folder_error=True`` says a folder as a
    :class:`~onnx_relu.errors.FileArgumentError` (a command's argument) rather than
    ``IsADirectoryError``.

    Examples
    --------
    >>> import tempfile
    >>> written_as(Endpoint.of("-", "OUT", stdio="output")).value
    'stream'
    >>> written_as(Endpoint.of(tempfile.mkdtemp() + "/y.npy", "OUT")).value
    'atomic file'
    """
    try:
        endpoint.require_output_kind(streams=streams)
    except IsADirectoryError:
        if not folder_error:
            raise
        raise FileArgumentError(
            f"{endpoint.what} {endpoint.path!r} is a folder, not a file name"
        ) from None
    return Written.STREAM if endpoint.kind.is_stream else Written.ATOMIC_FILE


@dataclass(frozen=True)
class Destination:
    """An output as decided once, by whoever plans the job: where it is (its endpoint, which
    holds its format) and how it is written. The writers (:func:`.streams.open_destination`,
    :func:`.atomic.atomic_file`) carry it out and decide none of it again.

    Attributes
    ----------
    endpoint : Endpoint
        The path as classified, with its format (``""`` where it has none).
    written : Written
    """

    endpoint: Endpoint
    written: Written

    @property
    def format(self) -> str:
        """The format it is written in: ``"npy"``, ``"pb"``, ``"zarr"`` (``""``: none said)."""
        return self.endpoint.format

    @property
    def path(self) -> str:
        """The path as given."""
        return self.endpoint.path

    @property
    def is_stdio(self) -> bool:
        """Whether it is standard output (``-``)."""
        return self.endpoint.is_stdio


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
