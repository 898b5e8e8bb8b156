"""What a path IS, not what it is called: opening exactly what was classified, and telling when
two endpoints of a job are one file, pipe or folder, or one holds the other.

A name can change between the moment an :class:`~.endpoint.Endpoint` classifies it and the
moment it is opened (another process renames a FIFO or a symbolic link over it, or removes
it), and two different names can reach one object (a symbolic or hard link, a bind mount,
``/proc/self/fd/N``, ``/dev/stdin``). So both questions are answered by identity, the
``(st_dev, st_ino)`` pair and the file type, never by name:

- :func:`open_classified` opens a path without blocking (``O_NONBLOCK``: a FIFO swapped in
  cannot make ``open`` wait for a writer), without following a symbolic link where the
  classification found none (``O_NOFOLLOW``), and compares the opened descriptor's ``fstat``
  with the classification; a change is refused in one line
  (:class:`~onnx_relu.errors.UnsupportedPathError`) before a byte is read.
  :func:`require_unchanged` asks the same of a path another library opens later by name (a
  Zarr store, read by zarr on the Dask workers), and :func:`refuse_special_entries` of every
  entry in such a folder: only regular files and folders, no link, FIFO, device or socket.
- :func:`refuse_overlap` refuses, before anything is opened, an OUT that is IN (the same
  file, pipe, FIFO, terminal or folder, by any path), that contains IN (replacing it would
  delete IN: ``apply g.zarr/x.zarr g.zarr --dask``) or that lies inside IN (writing it would
  change IN).

Importing this module imports neither numpy nor the kernel (the ONNX layer opens its model
files here too).

Examples
--------
>>> import os, tempfile
>>> from onnx_relu.io.endpoint import Endpoint
>>> folder = tempfile.mkdtemp()
>>> x = os.path.join(folder, "x.npy")
>>> open(x, "wb").close()
>>> os.symlink(x, os.path.join(folder, "y.npy"))
>>> refuse_overlap(Endpoint.of(x, "IN"), Endpoint.of(os.path.join(folder, "y.npy"), "OUT"))
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
onnx_relu.io.identity.SameObjectError: OUT '...y.npy' is IN '...x.npy' itself (...): writing OUT ...
"""

from __future__ import annotations

import errno
import os
import stat

from ..errors import FileArgumentError, UnsupportedPathError
from .endpoint import Endpoint, PathKind

TYPE_CHECKING = False  # (not typing's: importing typing costs the command line's start-up)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = [
    "same_object",
    "identity_of",
    "open_classified",
    "open_classified_fd",
    "require_unchanged",
    "refuse_special_entries",
    "refuse_overlap",
    "SameObjectError",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)


def same_object(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    """Whether two ``stat`` results are of one object: the same device and inode."""
    return a is not None and b is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


#: A file type's test and the words that name it in messages (anything else is a socket).
_KIND_WORDS = (
    (stat.S_ISREG, "regular file"),
    (stat.S_ISDIR, "folder"),
    (stat.S_ISFIFO, "pipe or FIFO"),
    (stat.S_ISCHR, "terminal or character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISLNK, "symbolic link"),
)


def _kind_word(found: os.stat_result) -> str:
    return next((word for test, word in _KIND_WORDS if test(found.st_mode)), "socket")


def identity_of(endpoint: Endpoint) -> os.stat_result | None:
    """What ``endpoint`` is: its classification's ``stat``; for ``-``, the ``fstat`` of
    standard input (an input) or output (an output); None where nothing exists."""
    if endpoint.is_stdio:
        fd = 0 if endpoint.label == "standard input" else 1
        try:
            return os.fstat(fd)
        except OSError:
            return None
    return endpoint.stat


# --- opening what was classified ---------------------------------------------------------------


def _changed(endpoint: Endpoint, now: str) -> UnsupportedPathError:
    what = f"{endpoint.what} " if endpoint.what else ""
    return UnsupportedPathError(
        f"{what}{endpoint.path!r} changed after it was checked (it was a {endpoint.kind.value},"
        f" {now}); nothing was read from or written to it: run the command again once nothing"
        " else changes it"
    )


def open_classified_fd(endpoint: Endpoint, flags: int) -> int:
    """Open ``endpoint`` with ``flags`` (``os.O_RDONLY``, ``os.O_WRONLY``, ``os.O_RDWR``) as
    what it was classified; return the descriptor.

    It is opened without blocking (a FIFO put in its place meanwhile cannot make ``open`` wait)
    and, where the path was not a symbolic link, without following one; its ``fstat`` must be
    the classification's object (device, inode and type). A regular file's descriptor is then
    made blocking again; a FIFO's or a device's stays non-blocking (the caller waits on it).
    A path classified missing or a folder raises what ``open`` would (``FileNotFoundError``,
    ``IsADirectoryError``).

    Raises
    ------
    UnsupportedPathError
        naming the path, when it was removed, replaced or made a symbolic link since it was
        classified.
    OSError
        as ``open`` does (no permission).
    """
    path = endpoint.path
    if endpoint.kind in (PathKind.MISSING, PathKind.DANGLING_LINK) or endpoint.stat is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if endpoint.kind is PathKind.DIRECTORY:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    follow = 0 if endpoint.is_link else _NOFOLLOW
    try:
        fd = os.open(path, flags | _NONBLOCK | _NOCTTY | _CLOEXEC | follow)
    except FileNotFoundError:
        raise _changed(endpoint, "now it is gone") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and follow:
            raise _changed(endpoint, "now it is a symbolic link, which is not followed") from None
        if exc.errno == errno.ENXIO and endpoint.kind is not PathKind.FIFO:
            raise _changed(endpoint, "now it is a FIFO without a reader") from None
        raise
    try:
        found = os.fstat(fd)
        expected = endpoint.stat
        if not same_object(found, expected) or stat.S_IFMT(found.st_mode) != stat.S_IFMT(
            expected.st_mode
        ):
            raise _changed(
                endpoint,
                f"now it is {'another' if _kind_word(found) == _kind_word(expected) else 'a'}"
                f" {_kind_word(found)}",
            )
        if stat.S_ISREG(found.st_mode):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_classified(endpoint: Endpoint, mode: str = "rb") -> BinaryIO:
    """:func:`open_classified_fd` as a buffered binary file: ``mode`` ``"rb"`` or ``"r+b"``."""
    if mode == "rb":
        return os.fdopen(open_classified_fd(endpoint, os.O_RDONLY), "rb")
    if mode == "r+b":
        return os.fdopen(open_classified_fd(endpoint, os.O_RDWR), "r+b")
    raise ValueError(f"mode must be 'rb' or 'r+b', got {mode!r}")


def require_unchanged(endpoint: Endpoint) -> None:
    """Refuse ``endpoint`` if what its path names now is not what was classified (device,
    inode and type; a path that was no link must still be none): for what is read by path
    later, by another library (a Zarr store, read by zarr on the workers).

    Raises
    ------
    UnsupportedPathError
        as :func:`open_classified_fd`.
    """
    if endpoint.is_stdio or endpoint.stat is None:
        return
    try:
        found = os.stat(endpoint.path) if endpoint.is_link else os.lstat(endpoint.path)
    except FileNotFoundError:
        raise _changed(endpoint, "now it is gone") from None
    expected = endpoint.stat
    if same_object(found, expected) and stat.S_IFMT(found.st_mode) == stat.S_IFMT(expected.st_mode):
        return
    kind = _kind_word(found)
    raise _changed(
        endpoint, f"now it is {'another' if kind == _kind_word(expected) else 'a'} {kind}"
    )


def refuse_special_entries(endpoint: Endpoint) -> None:
    """Refuse a folder ``endpoint`` (a Zarr store) holding, at any depth, anything but regular
    files and folders: the files in it are opened by name later, by another library (zarr on
    the Dask workers), where a FIFO would make a worker wait forever, a device would be read
    as data, and a symbolic link could lead outside the folder (even into OUT).

    Cheap: :func:`os.scandir` only, whose entries know their type without a ``stat`` on most
    file systems (``lstat`` where they do not); links are not followed. Anything but a folder
    (a missing path, a remote store's address) is left to the library that opens it.

    Raises
    ------
    UnsupportedPathError
        naming the entry and what it is, in one line.
    """
    if endpoint.is_stdio or endpoint.kind is not PathKind.DIRECTORY:
        return
    folders = [endpoint.path]
    while folders:
        try:
            scanned = os.scandir(folders.pop())
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed meanwhile: require_unchanged or the reader says so
        with scanned:
            for entry in scanned:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif not entry.is_file(follow_symlinks=False):
                    _refuse_entry(endpoint, entry)


def _refuse_entry(endpoint: Endpoint, entry: os.DirEntry[str]) -> None:
    try:
        kind = _kind_word(entry.stat(follow_symlinks=False))
    except FileNotFoundError:
        return  # removed meanwhile
    what = f"{endpoint.what} " if endpoint.what else ""
    raise UnsupportedPathError(
        f"{what}{endpoint.path!r} holds {entry.path!r}, a {kind}: only regular files and folders"
        " are read from a store (a FIFO would never end, a link may lead outside it); replace"
        " it with the file itself"
    )


# --- IN and OUT: one object, or one inside the other ---------------------------------------------


def _folder_above(path: str, target: os.stat_result) -> str | None:
    """The folder above ``path`` (resolved: links followed) that is ``target``'s object, or
    None; folders that cannot be stat-ed are passed over."""
    current = os.path.realpath(path)
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
        try:
            if same_object(os.stat(current), target):
                return current
        except OSError:
            pass


#: Linux's terminal device numbers: virtual consoles and serial lines (4), /dev/tty and the
#: console (5), pseudo-terminals (136-143).
_TERMINAL_MAJORS = frozenset({4, 5, *range(136, 144)})


def _harmless_device(found: os.stat_result | None) -> bool:
    """A character device other than a terminal (``/dev/null``): reading it and writing it
    are unrelated, so being both IN and OUT changes nothing."""
    return (
        found is not None
        and stat.S_ISCHR(found.st_mode)
        and os.major(found.st_rdev) not in _TERMINAL_MAJORS
    )


def _named(endpoint: Endpoint) -> str:
    return (
        f"{endpoint.what} ({endpoint.label})"
        if endpoint.is_stdio
        else (f"{endpoint.what} {endpoint.label}")
    )


class SameObjectError(FileArgumentError):
    """The destination is the source itself, by whatever path (:func:`refuse_overlap`): the one
    overlap a caller may offer a way out of, such as rewriting the source in place."""


def refuse_overlap(source: Endpoint, destination: Endpoint, *, hint: str = "") -> None:
    """Refuse, before anything is opened, a ``destination`` that would change ``source``.

    Compared by identity (device and inode), so that any path reaching the same object counts:
    a symbolic or hard link, a bind mount, ``/proc/self/fd/N``, ``/dev/stdin`` (``-`` stands
    for the standard descriptor it names). Refused: the destination IS the source (a file, a
    pipe, a FIFO, a terminal, a folder; not a device such as ``/dev/null``, whose reads and
    writes are unrelated); the destination is a folder that holds the source
    (replacing it would delete the source); the source is a folder that holds the destination
    (writing it would add to the source). ``hint`` is added to the first message (e.g. how to
    rewrite the source in place).

    Raises
    ------
    FileArgumentError
        naming both, in one line: :class:`SameObjectError` where the destination is the source
        itself.
    """
    src, dst = identity_of(source), identity_of(destination)
    ins, out = _named(source), _named(destination)
    if same_object(src, dst) and not _harmless_device(dst):
        assert dst is not None
        via = ""
        if not (source.is_stdio or destination.is_stdio) and os.path.abspath(
            source.path
        ) != os.path.abspath(destination.path):
            via = " by another path"
        if stat.S_ISREG(dst.st_mode) or stat.S_ISDIR(dst.st_mode):
            effect = f"writing {destination.what} would replace {source.what}"
        else:
            effect = f"what is written to {destination.what} would be read back as {source.what}"
        raise SameObjectError(
            f"{out} is {ins} itself (the same {_kind_word(dst)}{via}): {effect}; name another"
            f" {destination.what}{hint}"
        )
    outside = f"choose another {destination.what} outside it"
    if not source.is_stdio and dst is not None and stat.S_ISDIR(dst.st_mode):
        _refuse_inside(
            source.path,
            dst,
            f"{out} holds {ins} (as",
            f"replacing {destination.what} would delete {source.what}; {outside}",
        )
    if not destination.is_stdio and src is not None and stat.S_ISDIR(src.st_mode):
        # Written through a link (see io.atomic), and its temporary made in its folder.
        _refuse_inside(
            destination.path,
            src,
            f"{out} is inside {ins} (in",
            f"writing {destination.what} would change {source.what}; {outside}",
        )


def _refuse_inside(path: str, holder: os.stat_result, head: str, tail: str) -> None:
    """Refuse ``path`` if a folder above it is ``holder``: ``head`` that folder): ``tail``."""
    folder = _folder_above(path, holder)
    if folder is not None:
        raise FileArgumentError(f"{head} {folder!r}): {tail}")
