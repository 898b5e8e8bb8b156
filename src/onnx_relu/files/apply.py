"""Relu of a whole tensor file, in bounded memory for ``.npy``: what ``onnx-relu apply`` runs.

``.npy`` to ``.npy`` (and ``--in-place``) never loads the array: the input is read one window
of ``chunk_bytes`` at a time into one reused buffer (``os.preadv``), Relu runs in that buffer,
and the buffer is written to the output (or, in place, back where it came from), so peak memory
is one window whatever the file's size. Anything involving ``.pb`` goes through memory (a
TensorProto is at most 2 GiB anyway).

The windows are read, not memory-mapped: a file that another process shortens during the run
(truncated, or a copy still being written) would deliver SIGBUS, which kills the process, at
the first touch of a mapped page past its new end; a read instead comes back short, which is
reported as :class:`~onnx_relu.errors.InvalidTensorFileError` naming the file, with the
temporary output removed. Reading costs what faulting in the pages of a map did (a 256 MiB
float32 file, ``.npy`` to ``.npy``: 0.87 s either way, best of 3, on the 2-core machine of
issue 13): the time goes to writing and syncing the output.

The output is written atomically (:func:`onnx_relu.files.atomic_file`); the input is only read.
``in_place=True`` rewrites a ``.npy`` file window by window; it is not atomic, but Relu is
idempotent (``relu(relu(x)) == relu(x)``, NaN bits included), so running it again on a file
whose rewrite was interrupted completes it correctly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from .. import check_dtype, relu
from ..errors import InvalidTensorFileError
from ._atomic import atomic_file
from .progress import Progress
from .tensors import (
    NpyHeader,
    pb_size_refusal,
    read_npy_header,
    read_pb_tensor,
    read_tensor,
    tensor_format,
    write_tensor,
)

__all__ = ["DEFAULT_CHUNK_BYTES", "relu_file", "check_file_arguments"]

#: Bytes per window: large enough that per-window costs (two system calls) vanish, small
#: enough to stay near the CPU caches and keep peak memory low.
DEFAULT_CHUNK_BYTES = 8 << 20


def _windows(header: NpyHeader, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """(first element, element count) of each window over the array's data."""
    per_window = max(1, chunk_bytes // header.dtype.itemsize)
    for start in range(0, header.size, per_window):
        yield start, min(per_window, header.size - start)


def _read_window(file: BinaryIO, name: str, header: NpyHeader, start: int, into: np.ndarray) -> None:
    """Fill ``into`` with the elements from ``start`` on; refuse a file that has become
    shorter than its header says since the header was read."""
    target = memoryview(into.view(np.uint8))  # type: ignore[arg-type]  # numpy's stubs: no Buffer
    offset = header.data_offset + start * header.dtype.itemsize
    filled = 0
    while filled < len(target):
        count = os.preadv(file.fileno(), [target[filled:]], offset + filled)
        if not count:
            size = os.fstat(file.fileno()).st_size
            raise InvalidTensorFileError(
                f"{name} was truncated while being read: its header says"
                f" {header.data_offset + header.nbytes} bytes, the file now holds {size}"
                " (was it changed during the run?)"
            )
        filled += count


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _write_window(file: BinaryIO, header: NpyHeader, start: int, window: np.ndarray) -> None:
    """Write ``window`` back over the elements from ``start`` on (in place)."""
    data = memoryview(window.view(np.uint8))  # type: ignore[arg-type]
    offset = header.data_offset + start * header.dtype.itemsize
    while data:
        count = os.pwrite(file.fileno(), data, offset)
        data, offset = data[count:], offset + count


def _relu_npy_to_npy(
    src: str, dst: str, opset: int | None, chunk_bytes: int, progress: Progress | None
) -> None:
    with open(src, "rb") as source:
        header = read_npy_header(source, repr(src))
        check_dtype(header.dtype, opset)
        source.seek(0)
        # The header is copied verbatim: same dtype descr, shape and memory order.
        header_bytes = source.read(header.data_offset)
        itemsize = header.dtype.itemsize
        buffer = np.empty(max(1, min(header.size, chunk_bytes // itemsize)), header.dtype)
        _report(progress, 0, header.nbytes)
        with atomic_file(dst) as target:
            target.write(header_bytes)
            for start, count in _windows(header, chunk_bytes):
                window = buffer[:count]
                _read_window(source, repr(src), header, start, window)
                relu(window, out=window, opset=opset)
                target.write(memoryview(window.view(np.uint8)))  # type: ignore[arg-type]
                _report(progress, (start + count) * itemsize, header.nbytes)


def _relu_npy_in_place(
    path: str, opset: int | None, chunk_bytes: int, progress: Progress | None
) -> None:
    with open(path, "r+b") as file:
        header = read_npy_header(file, repr(path))
        check_dtype(header.dtype, opset)
        itemsize = header.dtype.itemsize
        buffer = np.empty(max(1, min(header.size, chunk_bytes // itemsize)), header.dtype)
        _report(progress, 0, header.nbytes)
        for start, count in _windows(header, chunk_bytes):
            window = buffer[:count]
            _read_window(file, repr(path), header, start, window)
            relu(window, out=window, opset=opset)
            _write_window(file, header, start, window)
            _report(progress, (start + count) * itemsize, header.nbytes)
        os.fsync(file.fileno())


def check_file_arguments(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str] | None,
    *,
    in_place: bool,
    src_name: str = "src",
    dst_name: str = "dst",
    in_place_name: str = "in_place=True",
) -> tuple[str, str | None]:
    """Check the arguments of :func:`relu_file` before anything is read; return the formats.

    The rules: the suffixes name tensor formats; in place, there is no ``dst`` and ``src`` is
    ``.npy``; otherwise ``dst`` is given. The ``onnx-relu apply`` command checks its ``IN``,
    ``OUT`` and ``--in-place`` with the same rules, naming them with the ``*_name`` arguments.

    Returns
    -------
    tuple of str
        ``src``'s format and ``dst``'s (None in place): "npy" or "pb".

    Raises
    ------
    UnsupportedFileFormatError
        (a ``ValueError``) for a suffix that names no tensor format.
    ValueError
        for the wrong combination of ``dst`` and ``in_place``, or in place on a ``.pb`` file.

    Examples
    --------
    >>> check_file_arguments("x.npy", "y.pb", in_place=False)
    ('npy', 'pb')
    >>> check_file_arguments("x.pb", None, in_place=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: in-place needs a .npy file; 'x.pb' is a .pb file, whose protobuf encoding ...
    """
    src_kind = tensor_format(src)
    if in_place:
        if dst is not None:
            raise ValueError(f"{in_place_name} rewrites {src_name} itself: pass no {dst_name}")
        if src_kind != "npy":
            raise ValueError(
                f"in-place needs a .npy file; {os.fspath(src)!r} is a .pb file, whose protobuf"
                " encoding cannot be rewritten in place: write the result to a new file instead"
            )
        return src_kind, None
    if dst is None:
        raise ValueError(f"{dst_name} is required (or {in_place_name} to rewrite {src_name})")
    return src_kind, tensor_format(dst)


def relu_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str] | None = None,
    *,
    opset: int | None = None,
    in_place: bool = False,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Progress | None = None,
) -> None:
    """Apply Relu to the tensor in file ``src`` and write the result to ``dst``.

    Parameters
    ----------
    src, dst : str or os.PathLike
        ``.npy`` or ``.pb`` files, in any combination. ``dst`` is replaced atomically; it may
        be ``src`` itself. Omit ``dst`` with ``in_place=True``.
    opset : int, optional
        The ai.onnx opset whose Relu version decides the allowed types (None: the latest).
    in_place : bool
        Rewrite ``src`` (``.npy`` only) instead of writing ``dst``.
    chunk_bytes : int
        Size of the windows in which ``.npy`` data is read, computed and written.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, called as ``.npy`` windows complete.

    Raises
    ------
    UnsupportedTypeError
        if the type is not allowed at ``opset`` (checked before anything is written).
    InvalidTensorFileError, UnsupportedFileFormatError
        for unreadable files and unknown suffixes; also for a ``src`` that becomes shorter
        than its header says during the run (``dst`` is then left as it was).
    OSError
        for files that cannot be read or written; ``dst`` is then left as it was.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from onnx_relu.files import read_tensor, write_tensor
    >>> folder = tempfile.mkdtemp()
    >>> write_tensor(os.path.join(folder, "x.npy"), np.array([-2.0, -0.0, 3.0]))
    >>> relu_file(os.path.join(folder, "x.npy"), os.path.join(folder, "y.npy"))
    >>> read_tensor(os.path.join(folder, "y.npy")).tolist()
    [0.0, 0.0, 3.0]
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    src_kind, dst_kind = check_file_arguments(src, dst, in_place=in_place)
    src = os.fspath(src)
    if in_place:
        _relu_npy_in_place(src, opset, chunk_bytes, progress)
        return
    assert dst is not None  # check_file_arguments: dst is given unless in place
    dst = os.fspath(dst)
    if src_kind == "npy" and dst_kind == "npy":
        _relu_npy_to_npy(src, dst, opset, chunk_bytes, progress)
        return
    name = ""
    if src_kind == "pb":
        array, name = read_pb_tensor(src)
    else:
        if dst_kind == "pb":  # refused before reading gigabytes that cannot be written
            with open(src, "rb") as file:
                header = read_npy_header(file, repr(src))
            refusal = pb_size_refusal(header.nbytes, dst)
            if refusal is not None:
                raise ValueError(refusal)
        array = read_tensor(src)
    check_dtype(array.dtype, opset)
    relu(array, out=array, opset=opset)  # the array is our own copy: no second buffer
    write_tensor(dst, array, name=name)
