"""The output folder of a Zarr job: written under a temporary name and renamed into place, with
the owner-lock and trash protocol that keeps a stopped Dask job from leaving or recreating it.

:func:`atomic_directory` is :func:`onnx_relu.io.atomic.atomic_file` for a folder, through the same
:class:`~onnx_relu.io.atomic.Replacement` (the temporary's name, the owner and mode kept, the
rename's error, the one warning): the new store is made under a temporary name next to the
destination (holding a locked :data:`OWNER_LOCK`
while its writer lives) and renamed over it when complete; on failure it is renamed away and
emptied (:func:`discard_folder`), and the temporaries of earlier writers that are gone are
removed by the next one (:func:`remove_abandoned_temporaries`). Only a missing path or an
existing Zarr store is ever replaced (:func:`store_replacement_refusal`, the one rule, which
``onnx-relu apply --dask`` checks before the job starts).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator

from ...io.atomic import (
    TEMP_SUFFIX,
    Replacement,
    fsync_folder,
    shortened_name,
    split_destination,
    temporary_name,
    warn_owner_not_kept,
)
from ...io.endpoint import Destination, Written

__all__ = [
    "OWNER_LOCK",
    "UNLOCKED_GRACE_S",
    "DISCARD_SETTLE_S",
    "atomic_directory",
    "discard_folder",
    "remove_abandoned_temporaries",
    "is_zarr_store",
    "store_replacement_refusal",
]


def _settle_tree(root: str, replacement: Replacement) -> str | None:
    """:meth:`Replacement.settle` for a replacement folder: the folder's owner, group and mode,
    then the owner and group of everything in it. Returns the warning to give once the folder
    is in place (or None)."""
    before = os.lstat(root)
    lost = replacement.settle(
        lambda uid, gid: os.lchown(root, uid, gid),
        lambda mode: os.chmod(root, mode),
        before,
    )
    owner = replacement.owner
    if owner is None or (before.st_uid, before.st_gid) == owner:
        return lost  # (everything in it is the writer's, as the folder is)
    settled = os.lstat(root)
    if settled.st_gid != owner[1]:
        return lost  # not even the group could be set: said once
    uid, gid = (owner[0], owner[1]) if settled.st_uid == owner[0] else (-1, owner[1])
    for folder, subfolders, files in os.walk(root):
        for entry in (*subfolders, *files):
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(folder, entry), uid, gid)
    return lost


def _fsync_tree(root: str) -> None:
    for folder, _subfolders, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_folder(folder)


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

    trash = temporary_name(folder, name)
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

    target, folder, name = split_destination(path)
    own = {shortened_name(folder, name), shortened_name(folder, f"{name}.old")}
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
    path: str | os.PathLike[str] | Destination,
    *,
    sync_tree: Callable[[str], None] | None = _fsync_tree,
) -> Iterator[str]:
    """Yield the path of a temporary folder that becomes the folder ``path`` (a Zarr store; or
    the :class:`~onnx_relu.io.endpoint.Destination` a plan decided, whose rule is then not
    judged again).

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

    decided = isinstance(path, Destination)  # a plan's: replaceable, as it decided
    if isinstance(path, Destination):
        if path.written is not Written.ATOMIC_STORE:
            raise ValueError(f"{path.endpoint.label} is a {path.written.value}, not a store")
        path = path.endpoint
    replacement = Replacement.of(path, 0o777)  # the one rule of io.atomic, as for a file
    target, folder, name = replacement.target, replacement.folder, replacement.name
    if not decided and store_replacement_refusal(target) is not None:
        raise FileExistsError(f"{target} exists and is not a Zarr store; refusing to replace it")
    remove_abandoned_temporaries(target)  # else every killed or stopped job's store stays
    temporary = os.path.join(folder, replacement.temporary)  # named first: see atomic_file
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
        owner_not_kept = _settle_tree(temporary, replacement)
        if os.path.lexists(target):
            aside = temporary_name(folder, f"{name}.old")
            replacement.put_in_place(lambda: os.rename(target, aside))
            try:
                replacement.put_in_place(lambda: os.rename(temporary, target))
            except BaseException:
                os.rename(aside, target)  # put the old store back before reporting
                raise
            shutil.rmtree(aside, ignore_errors=True)
        else:
            replacement.put_in_place(lambda: os.rename(temporary, target))
    except BaseException:
        if owned:
            discard_folder(temporary, folder, name)
        raise
    fsync_folder(folder)
    warn_owner_not_kept(owner_not_kept)  # only now: the new store is in place
