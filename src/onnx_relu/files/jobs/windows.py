"""The windows of a ``.npy`` job: one reused buffer over the array's data, read with
:func:`~onnx_relu.io.streams.read_exact`, and progress reported as each completes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ...io.streams import read_exact
from ..npy import NpyHeader, truncation_error
from ..progress import Progress

__all__ = ["windows", "window_buffer", "read_window", "write_window", "relu_windows", "report"]


def windows(header: NpyHeader, window_bytes: int) -> Iterator[tuple[int, int]]:
    """(first element, element count) of each window over the array's data."""
    per_window = max(1, window_bytes // max(header.dtype.itemsize, 1))
    for start in range(0, header.size, per_window):
        yield start, min(per_window, header.size - start)


def window_buffer(header: NpyHeader, window_bytes: int) -> np.ndarray:
    """The one window buffer of a pass."""
    per_window = window_bytes // max(header.dtype.itemsize, 1)
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
    if filled < len(target):
        got = start * header.dtype.itemsize + filled
        now = None if stream else os.fstat(file.fileno()).st_size
        raise truncation_error(name, header, got, now=now)


def write_window(file: BinaryIO, header: NpyHeader, start: int, window: np.ndarray) -> None:
    """Write ``window`` back over the elements from ``start`` on (in place)."""
    data = memoryview(window.view(np.uint8))  # type: ignore[arg-type]
    offset = header.data_offset + start * header.dtype.itemsize
    while data:
        count = os.pwrite(file.fileno(), data, offset)
        data, offset = data[count:], offset + count


def relu_windows(
    file: BinaryIO,
    label: str,
    header: NpyHeader,
    opset: int | None,
    window_bytes: int,
    progress: Progress | None,
    *,
    in_order: bool = False,
) -> Iterator[tuple[int, np.ndarray]]:
    """(first element, window) for each window of the array's data, read into the one reused
    buffer (in order with ``in_order``, else at offsets) and with Relu applied in it; the
    caller writes each window before asking for the next, and ``progress`` is told once before
    the first and after each written window."""
    from ..._api import relu

    itemsize = header.dtype.itemsize
    buffer = window_buffer(header, window_bytes)
    report(progress, 0, header.nbytes)
    for start, count in windows(header, window_bytes):
        window = buffer[:count]
        read_window(file, label, header, start, window, in_order)
        relu(window, out=window, opset=opset)
        yield start, window
        report(progress, (start + count) * itemsize, header.nbytes)


def report(progress: Progress | None, done: int, total: int) -> None:
    """``progress(done, total)``, if there is a progress callback."""
    if progress is not None:
        progress(done, total)
