"""Write a file so that readers only ever see the old content or the complete new one.

The new content goes to a temporary name in the destination's own folder (a rename is atomic
only within one file system), is flushed and fsynced, and is then renamed over the destination.
On any failure, including KeyboardInterrupt and SystemExit, the temporary is removed and the
destination is left as it was. A process killed with SIGKILL (or by a signal it does not
handle) cannot clean up: it may leave a hidden ``.NAME.*.onnx-relu-tmp`` entry next to the
destination, never a partial destination; the writer holds the temporary locked (``flock``), and
the next write of the same destination removes every temporary of it that no live process
holds. A replaced file or store keeps the old one's permissions, owner and group (where the
process may set them; else a ``RuntimeWarning`` says so).

A destination that is a symbolic link is written through, as ``cp`` does: the temporary goes
next to the file the link points to and replaces that file; the link stays. Only a regular file
is ever replaced: a destination that is an existing folder is refused at once
(``IsADirectoryError`` naming it), a FIFO, a device or a socket with
:class:`~onnx_relu.errors.UnsupportedPathError` (:mod:`.streams` writes those as streams).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .._paths import absolute_path
from .endpoint import Destination, Endpoint, Written

TYPE_CHECKING = False  # (not typing's: importing typing costs the command line's start-up)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = [
    "TEMP_SUFFIX",
    "atomic_file",
    "remove_abandoned_temporary_files",
    # what the replacement of a folder (files.jobs.zarr_output) shares with it
    "temporary_name",
    "shortened_name",
    "split_destination",
    "Replacement",
    "keep_owner",
    "warn_owner_not_kept",
    "replacement_error",
    "fsync_folder",
]

#: Suffix of every temporary file or folder this module creates.
TEMP_SUFFIX = ".onnx-relu-tmp"


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | _CLOEXEC


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


def _temporary_basename(folder: str, name: str) -> str:
    """``.NAME.<12 random hex digits>.onnx-relu-tmp`` (NAME :func:`shortened_name` for ``folder``);
    the random part keeps it unique."""
    return f".{shortened_name(folder, name)}.{os.urandom(6).hex()}{TEMP_SUFFIX}"


def temporary_name(folder: str, name: str) -> str:
    """:func:`_temporary_basename` in ``folder``."""
    return os.path.join(folder, _temporary_basename(folder, name))


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


def _owner(found: os.stat_result | None) -> tuple[int, int] | None:
    """The owner and group of the entry ``found`` (its ``stat``) is; None: there is none."""
    return None if found is None else (found.st_uid, found.st_gid)


def keep_owner(
    chown: Callable[[int, int], None],
    current: os.stat_result,
    owner: tuple[int, int] | None,
    path: str,
) -> str | None:
    """Give the replacement of ``path`` the old entry's ``owner`` and group, as ``sed -i``
    does: root may set both; another user the group, if a member of it. Return what the
    process may not set, as the text of the one warning to give once the replacement is in
    place (:func:`warn_owner_not_kept`; the file is then the writer's, as any new file), or
    None. Nothing is said before: the replacement may still fail."""
    if owner is None or (current.st_uid, current.st_gid) == owner:
        return None
    uid, gid = owner
    with contextlib.suppress(PermissionError):
        chown(uid, gid)
        return None
    kept_group = False
    with contextlib.suppress(PermissionError):
        chown(-1, gid)
        kept_group = True
    lost = f"group {gid} kept but not owner {uid}" if kept_group else f"owner {uid}:{gid} not kept"
    return (
        f"{path!r} was replaced by a file of user {current.st_uid} ({lost}): only root may give"
        " a file to another user"
    )


def warn_owner_not_kept(text: str | None, stacklevel: int = 3) -> None:
    """The ``RuntimeWarning`` of :func:`keep_owner`'s ``text``, once the replacement is done."""
    if text is not None:
        warnings.warn(text, RuntimeWarning, stacklevel=stacklevel + 1)


def replacement_error(error: OSError, target: str) -> OSError:
    """The error of a rename that could not put the new ``target`` in place (the temporary is
    removed, ``target`` unchanged): it names ``target``, not the temporary, and says why where
    the folder is sticky (mode 1777, as /tmp: only the owner of an entry, or of the folder,
    may replace it)."""
    reason = error.strerror or str(error)
    if error.errno in (errno.EPERM, errno.EACCES):
        folder = os.path.dirname(target)
        with contextlib.suppress(OSError):
            held, entry = os.stat(folder), os.lstat(target)
            if held.st_mode & stat.S_ISVTX and os.geteuid() not in (held.st_uid, entry.st_uid):
                reason += (
                    f": {folder!r} is a sticky folder (mode {stat.S_IMODE(held.st_mode):o}),"
                    f" where only the owner of an entry (here user {entry.st_uid}) or of the"
                    " folder may replace it"
                )
    return type(error)(error.errno, f"cannot be replaced ({reason}); it is unchanged", target)


#: A temporary file that no process holds locked counts as abandoned only once it is this old:
#: its writer locks it just after creating it.
ABANDONED_FILE_AGE_S = 2.0


def _lock_temporary(fd: int) -> None:
    """Hold an exclusive ``flock`` on a temporary file while it is written: the kernel drops it
    when the writer ends, however it ends, which tells later writers the file is abandoned."""
    try:
        import fcntl
    except ImportError:  # not POSIX: temporaries of killed writers are never recognised
        return
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _file_is_abandoned(candidate: str, folder_fd: int) -> bool:
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(candidate, os.O_RDONLY | _CLOEXEC | os.O_NOFOLLOW, dir_fd=folder_fd)
    except OSError:
        return False
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or time.time() - status.st_mtime < (
            ABANDONED_FILE_AGE_S
        ):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its writer is alive
            return False
        return True
    finally:
        os.close(fd)


def remove_abandoned_temporary_files(path: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files of earlier writes of the file ``path`` that no live process
    holds (their writers were killed, e.g. by SIGKILL or a signal the library does not handle);
    return their paths. Temporaries of live writers and of other destinations stay."""
    _target, folder, name = split_destination(path)
    return _remove_abandoned_files(folder, name)


def _remove_abandoned_files(folder: str, name: str) -> list[str]:
    """:func:`remove_abandoned_temporary_files` for the destination ``name`` in ``folder``,
    already resolved (the destination is not looked at again)."""
    import re

    pattern = re.compile(
        re.escape(f".{shortened_name(folder, name)}.") + r"[0-9a-f]{12}" + re.escape(TEMP_SUFFIX)
    )
    removed: list[str] = []
    try:
        folder_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return removed
    try:
        for entry in os.listdir(folder_fd):
            if pattern.fullmatch(entry) and _file_is_abandoned(entry, folder_fd):
                with contextlib.suppress(OSError):
                    os.unlink(entry, dir_fd=folder_fd)
                    removed.append(os.path.join(folder, entry))
    finally:
        os.close(folder_fd)
    return removed


def fsync_folder(folder: str | int) -> None:
    """Make a rename in ``folder`` (a path, or a descriptor open on it) durable: it is on disk
    only once the folder itself is."""
    fd = os.open(folder, os.O_RDONLY) if isinstance(folder, str) else folder
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the rename still happened
        pass
    finally:
        if isinstance(folder, str):
            os.close(fd)


@dataclass(frozen=True)
class Replacement:
    """What one atomic write replaces, decided once, for a file (:func:`atomic_file`) and for a
    folder (:func:`onnx_relu.files.jobs.zarr_output.atomic_directory`) alike: the one
    implementation of the temporary's name, the new entry's owner and mode, the rename's error
    and the warning of an owner not kept.

    Attributes
    ----------
    target, folder, name : str
        The destination (a symbolic link is written through: the entry it points to), its
        folder and its name.
    temporary : str
        The temporary's name in ``folder`` (:func:`temporary_name`'s form), chosen before it is
        created so that a failure at any point after creation finds it and removes it.
    mode : int
        The permissions of the new entry: the old one's, or ``default`` less the umask.
    owner : (int, int) or None
        The old entry's owner and group (None: there is none).
    found : os.stat_result or None
        The old entry's ``stat`` (None: there is none).
    """

    target: str
    folder: str
    name: str
    temporary: str
    mode: int
    owner: tuple[int, int] | None
    found: os.stat_result | None

    @classmethod
    def of(cls, path: str | os.PathLike[str] | Endpoint, default_mode: int) -> Replacement:
        """The replacement of ``path`` (an :class:`~.endpoint.Endpoint`'s classification serves
        instead of a second look); a new entry gets ``default_mode`` less the umask."""
        if isinstance(path, Endpoint):  # classified already: its stat serves
            absolute = absolute_path(path.path)
            target = os.path.realpath(absolute) if path.is_link else absolute
            found = path.stat
        else:
            target = split_destination(path)[0]
            found = _stat(target)
        folder, name = os.path.dirname(target), os.path.basename(target)
        mode = stat.S_IMODE(found.st_mode) if found is not None else default_mode & ~_umask()
        return cls(
            target, folder, name, _temporary_basename(folder, name), mode, _owner(found), found
        )

    def settle(
        self,
        chown: Callable[[int, int], None],
        chmod: Callable[[int], None],
        current: os.stat_result,
    ) -> str | None:
        """Give the new entry (``current``: its ``stat``) the old one's owner and group
        (:func:`keep_owner`), then its mode (after ``chown``, which clears set-user-ID bits).
        Returns the warning to give once it is in place (:func:`warn_owner_not_kept`)."""
        lost = keep_owner(chown, current, self.owner, self.target)
        chmod(self.mode)
        return lost

    def put_in_place(self, rename: Callable[[], None]) -> None:
        """Run ``rename``, which puts the new entry in place of :attr:`target`; its failure is
        :func:`replacement_error`'s (naming the target, never the temporary)."""
        try:
            rename()
        except OSError as exc:  # (a sticky folder, a read-only one)
            raise replacement_error(exc, self.target) from None


def split_destination(path: str | os.PathLike[str]) -> tuple[str, str, str]:
    """The destination, its folder and its name. A symbolic link is written through: the file
    (or store) it points to is replaced, next to itself, and the link stays a link."""
    target = absolute_path(path)
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
def atomic_file(path: str | os.PathLike[str] | Endpoint | Destination) -> Iterator[BinaryIO]:
    """Yield a binary file (opened ``w+b``, so it can also be memory-mapped) that becomes ``path``.

    ``path`` may be an :class:`~.endpoint.Endpoint`, whose classification then serves instead
    of a second look at the destination, or a :class:`~.endpoint.Destination` decided to be
    written this way (its kind is then not judged again); it is looked at once more just before
    the rename (it may have become a FIFO or a device since).

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
    decided = isinstance(path, Destination)
    if isinstance(path, Destination):
        if path.written is not Written.ATOMIC_FILE:
            raise ValueError(f"{path.endpoint.label} is a {path.written.value}, not a file")
        path = path.endpoint  # a regular or missing file, as its plan decided
    replacement = Replacement.of(path, 0o666)
    target, folder, name = replacement.target, replacement.folder, replacement.name
    if not decided:
        _refuse_folder(replacement.found, path)  # os.replace would fail at the end
    _remove_abandoned_files(folder, name)  # else every killed writer's temporary stays
    # Everything below is done relative to the folder's descriptor, with short names: the
    # temporary's full path is longer than OUT's, and an OUT near PATH_MAX must be writable.
    folder_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        # The name is chosen before the file is created (unlike tempfile.mkstemp), so that an
        # exception raised at any point after creation, even by a signal handler while the
        # creating call returns, finds the name here and removes the file.
        temporary = replacement.temporary
        owned = True  # False once the name turns out to be someone else's file
        try:
            try:
                fd = os.open(temporary, _CREATE_FLAGS, 0o600, dir_fd=folder_fd)
            except FileExistsError:
                owned = False  # someone else's file: not ours to remove
                raise
            _lock_temporary(fd)
            with os.fdopen(fd, "w+b") as file:
                yield file
                file.flush()
                descriptor = file.fileno()
                owner_not_kept = replacement.settle(
                    lambda uid, gid: os.fchown(descriptor, uid, gid),
                    lambda mode: os.fchmod(descriptor, mode),
                    os.fstat(descriptor),
                )
                os.fsync(file.fileno())
            _refuse_folder(_stat(target), path)  # again: it may have become a FIFO or device
            replacement.put_in_place(
                lambda: os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            )
        except BaseException as error:
            if owned:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary, dir_fd=folder_fd)
            if isinstance(error, OSError) and error.filename == temporary:
                error.filename = os.path.join(folder, temporary)  # name it in full
            raise
        fsync_folder(folder_fd)
    finally:
        os.close(folder_fd)
    warn_owner_not_kept(owner_not_kept)  # only now: the replacement is in place
