"""A Zarr store for the temporary output of a Dask job, which its tasks cannot recreate.

zarr's ``LocalStore`` creates a chunk's folders, its root included (``mkdir(parents=True)``),
before writing the chunk. A task of a stopped job still running on a worker that outlives the
command would then recreate the temporary store the command has just removed, with a chunk or
two in it and no lock file. :class:`FixedRootStore` never creates its root: it creates the
folders below it one level at a time, each ``mkdir`` and ``open`` by path, so once the root has
been renamed away or removed every write fails with ``FileNotFoundError`` and creates nothing.

Imports zarr: imported only by the functions of :mod:`onnx_relu.files.jobs.zarr_dask` and by the
workers that unpickle the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from ..._extras import extra_needed

with extra_needed():  # a missing zarr raises the one MissingExtraError
    from zarr.abc.store import Store
    from zarr.core.buffer import Buffer
    from zarr.storage import LocalStore

__all__ = ["FixedRootStore", "write_under_root"]

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _make_folders(root: str, relative: str) -> None:
    """Create the folders of ``relative`` below ``root``, which must exist; never ``root``."""
    path = root
    for part in relative.split("/"):
        path = os.path.join(path, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)  # FileNotFoundError once root is gone


def write_under_root(root: str, key: str, data: Any, exclusive: bool = False) -> int:
    """Write ``data`` (bytes-like) as ``root/key``, creating the folders of ``key`` below
    ``root`` but never ``root`` itself; return the bytes written.

    The bytes go to a new ``KEY.<random>.partial`` file renamed over ``root/key`` (with
    ``exclusive``: linked, failing if it exists), so a reader never sees a partial chunk. An
    error of the write names the chunk's path (a full disk's ``ENOSPC`` does not by itself).
    """
    path = os.path.join(root, key)
    partial = f"{path}.{os.urandom(8).hex()}.partial"
    try:
        fd = os.open(partial, _OPEN_FLAGS, 0o666)
    except FileNotFoundError:
        folder = os.path.dirname(key)
        if not folder or not os.path.isdir(root):
            raise
        _make_folders(root, folder)
        fd = os.open(partial, _OPEN_FLAGS, 0o666)
    try:
        try:
            with open(fd, "wb") as file:  # buffered: handles short writes and EINTR
                written = file.write(data)
        except OSError as exc:
            if exc.filename is None:
                raise OSError(exc.errno, exc.strerror, path) from None
            raise
        if exclusive:
            os.link(partial, path)
            os.unlink(partial)
        else:
            os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return written


class FixedRootStore(LocalStore):
    """A ``LocalStore`` that never creates its root folder (see the module's text).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, zarr
    >>> root = tempfile.mkdtemp()
    >>> array = zarr.create_array(FixedRootStore(root), shape=(4,), chunks=(2,), dtype="f4")
    >>> array[:] = np.arange(4, dtype="f4")
    >>> sorted(os.listdir(os.path.join(root, "c")))
    ['0', '1']
    >>> os.rename(root, root + ".gone")
    >>> array[:2] = 1.0
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...
    >>> os.path.exists(root)
    False
    """

    def _check_root(self) -> None:
        if not self.root.is_dir():
            raise FileNotFoundError(f"{self.root} does not exist")

    async def _open(self, *, mode: Any = None) -> None:
        self._check_root()
        await Store._open(self)

    def _ensure_open_sync(self) -> None:
        if not self._is_open:
            self._check_root()
            self._is_open = True

    def _checked(self, value: Buffer) -> Any:
        self._check_writable()
        if not isinstance(value, Buffer):
            raise TypeError(f"a store's value must be a zarr Buffer, got {type(value)}")
        return value.as_buffer_like()

    def set_sync(self, key: str, value: Buffer) -> None:
        self._ensure_open_sync()
        write_under_root(str(self.root), key, self._checked(value))

    async def _set(self, key: str, value: Buffer, exclusive: bool = False) -> None:
        if not self._is_open:
            await self._open()
        data = self._checked(value)
        await asyncio.to_thread(write_under_root, str(self.root), key, data, exclusive)
