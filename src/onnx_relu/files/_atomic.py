"""Write a file or a folder so that readers only ever see the old content or the complete new one.

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
:class:`~onnx_relu.errors.UnsupportedPathError` (:mod:`.paths` writes those as streams).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
import warnings
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # (not typing's: see onnx_relu.files.paths)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = [
    "TEMP_SUFFIX",
    "atomic_file",
    "atomic_directory",
    "remove_abandoned_temporaries",
    "remove_abandoned_temporary_files",
    "is_zarr_store",
    "store_replacement_refusal",
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


def _shortened(folder: str, name: str) -> str:
    """``name`` shortened (whole characters) so that its temporary name fits the file system's
    limit on a name's bytes (255): an OUT name of 228-255 bytes must still be writable."""
    room = _name_max(folder) - 1 - _RANDOM_LENGTH - len(TEMP_SUFFIX)
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return name


def _temporary_basename(folder: str, name: str) -> str:
    """``.NAME.<12 random hex digits>.onnx-relu-tmp`` (NAME :func:`_shortened` for ``folder``);
    the random part keeps it unique."""
    return f".{_shortened(folder, name)}.{os.urandom(6).hex()}{TEMP_SUFFIX}"


def _temporary_name(folder: str, name: str) -> str:
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


def _final_mode(path: str, default: int) -> int:
    """Replacing keeps the old entry's permissions; a new one gets ``default`` less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return default & ~_umask()


def _old_owner(path: str) -> tuple[int, int] | None:
    """The owner and group of the entry ``path`` replaces (None: there is none)."""
    try:
        status = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return status.st_uid, status.st_gid


def _keep_owner(
    chown: Callable[[int, int], None],
    current: os.stat_result,
    owner: tuple[int, int] | None,
    path: str,
) -> None:
    """Give the replacement of ``path`` the old entry's ``owner`` and group, as ``sed -i``
    does: root may set both; another user the group, if a member of it. What the process may
    not set is said in one warning (the file is then the writer's, as any new file)."""
    if owner is None or (current.st_uid, current.st_gid) == owner:
        return
    uid, gid = owner
    with contextlib.suppress(PermissionError):
        chown(uid, gid)
        return
    kept_group = False
    with contextlib.suppress(PermissionError):
        chown(-1, gid)
        kept_group = True
    lost = f"group {gid} kept but not owner {uid}" if kept_group else f"owner {uid}:{gid} not kept"
    warnings.warn(
        f"{path!r} was replaced by a file of user {current.st_uid} ({lost}): only root may give"
        " a file to another user",
        RuntimeWarning,
        stacklevel=4,
    )


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
    import re

    _target, folder, name = _split(path)
    pattern = re.compile(
        re.escape(f".{_shortened(folder, name)}.") + r"[0-9a-f]{12}" + re.escape(TEMP_SUFFIX)
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


def _fsync_folder(folder: str) -> None:
    # The rename is durable only once the folder itself is on disk.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the rename still happened
        pass
    finally:
        os.close(fd)


def _split(path: str | os.PathLike[str]) -> tuple[str, str, str]:
    """The destination, its folder and its name. A symbolic link is written through: the file
    (or store) it points to is replaced, next to itself, and the link stays a link."""
    from .._paths import absolute_path

    target = absolute_path(path)
    if os.path.islink(target):
        target = os.path.realpath(target)
    return target, os.path.dirname(target), os.path.basename(target)


def _refuse_folder(target: str, path: str | os.PathLike[str]) -> None:
    """Only a regular file (or nothing) is ever replaced: a folder, a FIFO, a device or a
    socket is refused, whatever link leads to it."""
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(
            errno.EISDIR, "is a folder; give the path of a file to write", os.fspath(path)
        )
    if not stat.S_ISREG(mode):
        from ..errors import UnsupportedPathError

        raise UnsupportedPathError(
            f"{os.fspath(path)!r} is not a regular file (a FIFO, a device or a socket):"
            " it is never replaced by one; write it as a stream instead"
        )


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Yield a binary file (opened ``w+b``, so it can also be memory-mapped) that becomes ``path``.

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
    target, folder, name = _split(path)
    _refuse_folder(target, path)  # os.replace would fail at the end, naming the temporary
    remove_abandoned_temporary_files(target)  # else every killed writer's temporary stays
    mode = _final_mode(target, 0o666)
    owner = _old_owner(target)
    # Everything below is done relative to the folder's descriptor, with short names: the
    # temporary's full path is longer than OUT's, and an OUT near PATH_MAX must be writable.
    folder_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        # The name is chosen before the file is created (unlike tempfile.mkstemp), so that an
        # exception raised at any point after creation, even by a signal handler while the
        # creating call returns, finds the name here and removes the file.
        temporary = _temporary_basename(folder, name)
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
                _keep_owner(
                    lambda uid, gid: os.fchown(descriptor, uid, gid),
                    os.fstat(descriptor),
                    owner,
                    target,
                )
                os.fchmod(descriptor, mode)  # after fchown, which clears set-user-ID bits
                os.fsync(file.fileno())
            _refuse_folder(target, path)  # again: it may have become a FIFO or device meanwhile
            os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        except BaseException as error:
            if owned:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary, dir_fd=folder_fd)
            if isinstance(error, OSError) and error.filename == temporary:
                error.filename = os.path.join(folder, temporary)  # name it in full
            raise
        with contextlib.suppress(OSError):  # some file systems refuse fsync on a folder
            os.fsync(folder_fd)  # the rename is durable only once the folder is on disk
    finally:
        os.close(folder_fd)


def _keep_tree_owner(root: str, owner: tuple[int, int] | None, path: str) -> None:
    """:func:`_keep_owner` for a replacement folder: the folder and everything in it."""
    if owner is None:
        return
    current = os.lstat(root)
    if (current.st_uid, current.st_gid) == owner:
        return
    _keep_owner(lambda uid, gid: os.lchown(root, uid, gid), current, owner, path)
    uid, gid = (owner[0], owner[1]) if os.lstat(root).st_uid == owner[0] else (-1, owner[1])
    if os.lstat(root).st_gid != owner[1]:
        return  # not even the group could be set: said once already
    for folder, subfolders, files in os.walk(root):
        for entry in (*subfolders, *files):
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(folder, entry), uid, gid)


def _fsync_tree(root: str) -> None:
    for folder, _subfolders, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_folder(folder)


#: Inside a temporary folder while its writer lives: the writer holds an exclusive ``flock`` on
#: it, which the kernel releases when the writer ends, however it ends (SIGKILL included).
OWNER_LOCK = ".onnx-relu-owner"

#: A temporary folder without a lock file (one whose writer is creating it this instant, or one
#: left by a version of onnx-relu whose stopped Dask tasks could recreate it) counts as
#: abandoned once the folder itself (its list of entries) has not changed for this long.
UNLOCKED_GRACE_S = 600


def _is_abandoned(candidate: str) -> bool:
    try:
        import fcntl
    except ImportError:  # not POSIX: cannot tell, so never remove
        return False
    try:
        fd = os.open(os.path.join(candidate, OWNER_LOCK), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return time.time() - os.stat(candidate).st_mtime > UNLOCKED_GRACE_S
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: its writer is alive
        return False
    finally:
        os.close(fd)  # (releases the lock just taken, if any)
    return True


#: How long :func:`discard_folder` keeps removing what appears in a folder it has renamed away
#: (file operations that had resolved the old name before the rename and end after it).
DISCARD_SETTLE_S = 2.0


def discard_folder(temporary: str, folder: str, name: str) -> None:
    """Remove the temporary folder ``temporary`` of the destination ``name`` in ``folder``.

    It is first renamed to a new temporary name, so that a writer still working by path (a task
    of a stopped Dask job on a worker that outlives the command) can create nothing more under
    the old name: every later open, mkdir or rename of a path under it fails with
    ``FileNotFoundError``. Only operations already in progress at the rename can still add an
    entry, so the renamed folder is emptied again until it stays empty (up to
    :data:`DISCARD_SETTLE_S`). Its :data:`OWNER_LOCK` is removed last: a removal cut short
    (a second signal, a kill) leaves a folder with an unlocked lock file, which the next writer
    of ``name`` removes (:func:`remove_abandoned_temporaries`).
    """
    import shutil

    trash = _temporary_name(folder, name)
    try:
        os.rename(temporary, trash)
    except FileNotFoundError:
        return  # removed (or renamed away) by another writer already
    except OSError:
        trash = temporary  # cannot rename (e.g. the folder is read-only): remove in place
    deadline = time.monotonic() + DISCARD_SETTLE_S
    while True:
        try:
            entries = [entry for entry in os.scandir(trash) if entry.name != OWNER_LOCK]
        except FileNotFoundError:
            return
        except OSError:
            entries = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(trash, OWNER_LOCK))
            try:
                os.rmdir(trash)
                return
            except FileNotFoundError:
                return
            except OSError:
                pass  # an entry added this instant: another round
        if time.monotonic() > deadline:
            return  # left for the next writer: see remove_abandoned_temporaries
        time.sleep(0.02)


def remove_abandoned_temporaries(path: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary folders of earlier writes of the folder ``path`` whose writers are
    gone (killed, or tasks of a stopped Dask job that wrote after the folder was removed);
    return their paths. Folders of a live writer, and other destinations' temporaries, are
    left alone."""
    import re

    target, folder, name = _split(path)
    own = {_shortened(folder, name), _shortened(folder, f"{name}.old")}
    pattern = re.compile(r"\.(.*)\.[0-9a-f]{12}" + re.escape(TEMP_SUFFIX))
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if not match or match.group(1) not in own:
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False) and _is_abandoned(entry.path):
                discard_folder(entry.path, folder, name)
                removed.append(entry.path)
    return removed


@contextlib.contextmanager
def _owner_lock(temporary: str) -> Iterator[Callable[[], None]]:
    """Hold :data:`OWNER_LOCK` in ``temporary``; yield a function that removes it (before the
    folder is renamed into place)."""
    try:
        import fcntl
    except ImportError:
        yield lambda: None
        return
    lock = os.path.join(temporary, OWNER_LOCK)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield lambda: os.unlink(lock)
    finally:
        os.close(fd)


def is_zarr_store(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a folder holding Zarr (format 2 or 3) metadata.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> is_zarr_store(folder)
    False
    >>> open(os.path.join(folder, "zarr.json"), "w").close()
    >>> is_zarr_store(folder)
    True
    """
    return any(
        os.path.isfile(os.path.join(path, marker)) for marker in ("zarr.json", ".zarray", ".zgroup")
    )


def store_replacement_refusal(path: str | os.PathLike[str]) -> str | None:
    """Why :func:`atomic_directory` would not replace ``path``, or None if it would: only a
    missing path or an existing Zarr store is ever replaced by a folder (the one rule, which
    ``onnx-relu apply --dask`` checks before the job starts)."""
    if os.path.lexists(path) and not (os.path.isdir(path) and is_zarr_store(path)):
        return f"{os.fspath(path)!r} exists and is not a Zarr store; not replacing it"
    return None


@contextlib.contextmanager
def atomic_directory(
    path: str | os.PathLike[str], *, sync_tree: Callable[[str], None] | None = _fsync_tree
) -> Iterator[str]:
    """Yield the path of a temporary folder that becomes the folder ``path`` (a Zarr store).

    On normal exit ``sync_tree(folder)`` makes its content durable (by default every file is
    fsynced; None: the caller has synced it, e.g. once per file system instead of once per
    file) and the folder is renamed to ``path``. An
    existing ``path`` is replaced only if it is itself a Zarr store (never an arbitrary
    folder): it is renamed aside, the new one renamed in, then the old one deleted, so ``path``
    is briefly absent but never partial. On failure the temporary folder is deleted. While
    the block runs, the temporary folder holds a locked :data:`OWNER_LOCK` file; temporaries of
    ``path`` left by earlier writers that are gone are removed first
    (:func:`remove_abandoned_temporaries`).
    """
    import shutil  # here, not at the top: importing the file layer stays fast

    target, folder, name = _split(path)
    if store_replacement_refusal(target) is not None:
        raise FileExistsError(f"{target} exists and is not a Zarr store; refusing to replace it")
    remove_abandoned_temporaries(target)  # else every killed or stopped job's store stays
    mode = _final_mode(target, 0o777)
    owner = _old_owner(target)
    temporary = _temporary_name(folder, name)  # named first: see atomic_file
    owned = True
    try:
        try:
            os.mkdir(temporary, 0o700)
        except FileExistsError:
            owned = False
            raise
        with _owner_lock(temporary) as release:
            yield temporary
            release()
        if sync_tree is not None:
            sync_tree(temporary)
        _keep_tree_owner(temporary, owner, target)
        os.chmod(temporary, mode)
        if os.path.lexists(target):
            aside = _temporary_name(folder, f"{name}.old")
            os.rename(target, aside)
            try:
                os.rename(temporary, target)
            except BaseException:
                os.rename(aside, target)  # put the old store back before reporting
                raise
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.rename(temporary, target)
    except BaseException:
        if owned:
            discard_folder(temporary, folder, name)
        raise
    _fsync_folder(folder)
