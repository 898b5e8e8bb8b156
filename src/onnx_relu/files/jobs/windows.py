"""The windows of a ``.npy`` job: one reused buffer over the array's data, read with
:func:`~onnx_relu.io.streams.read_exact`, and progress reported as each completes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ...errors import InvalidTensorFileError
from ...io.streams import read_exact
from ..npy import NpyHeader
from ..progress import Progress

__all__ = ["windows", "window_buffer", "read_window", "write_window", "report"]


def windows(header: NpyHeader, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """(first element, element count) of each window over the array's data."""
    per_window = max(1, chunk_bytes // max(header.dtype.itemsize, 1))
    for start in range(0, header.size, per_window):
        yield start, min(per_window, header.size - start)


def window_buffer(header: NpyHeader, chunk_bytes: int) -> np.ndarray:
    """The one window buffer of a pass."""
    per_window = chunk_bytes // max(header.dtype.itemsize, 1)
    return np.empty(max(1, min(header.size, per_window)), header.dtype)


def read_window(
    file: BinaryIO,
    name: str,
    header: NpyHeader,
    start: int,
    into: np.ndarray,
    stream: bool = False,
) -> None:
    """Fill ``into`` with the elements from ``start`` on; refuse a file that has become
    shorter than its header says since the header was read. A ``stream`` is read in order."""
    target = memoryview(into.view(np.uint8))  # type: ignore[arg-type]  # numpy's stubs: no Buffer
    offset = header.data_offset + start * header.dtype.itemsize
    filled = read_exact(file, target, None if stream else offset)
    if filled == len(target):
        return
    if stream:
        raise InvalidTensorFileError(
            f"{name} is truncated: its .npy header promises {header.nbytes} bytes of"
            f" data (shape {header.shape}, {header.dtype.name}) but only"
            f" {start * header.dtype.itemsize + filled} arrived"
        )
    size = os.fstat(file.fileno()).st_size
    raise InvalidTensorFileError(
        f"{name} was truncated while being read: its header says"
        f" {header.data_offset + header.nbytes} bytes, the file now holds {size}"
        " (was it changed during the run?)"
    )


def write_window(file: BinaryIO, header: NpyHeader, start: int, window: np.ndarray) -> None:
    """Write ``window`` back over the elements from ``start`` on (in place)."""
    data = memoryview(window.view(np.uint8))  # type: ignore[arg-type]
    offset = header.data_offset + start * header.dtype.itemsize
    while data:
        count = os.pwrite(file.fileno(), data, offset)
        data, offset = data[count:], offset + count


def report(progress: Progress | None, done: int, total: int) -> None:
    """``progress(done, total)``, if there is a progress callback."""
    if progress is not None:
        progress(done, total)
