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
from ..errors import InvalidTensorFileError, UnsupportedFileFormatError
from .npy import (
    _NPY_MAGIC,
    NpyHeader,
    _regular_size,
    _write_npy,
    read_npy_data,
    read_npy_header,
)
from .paths import STDIO, PathKind, describe, open_input, open_output, path_kind
from .pb import _parse_pb_tensor, _pb_bytes, pb_size_refusal, read_pb_bytes
from .progress import Progress
from .tensors import _Rejoined, tensor_format

__all__ = ["DEFAULT_CHUNK_BYTES", "relu_file", "relu_tensor", "check_file_arguments"]

#: Bytes per window: large enough that per-window costs (two system calls) vanish, small
#: enough to stay near the CPU caches and keep peak memory low.
DEFAULT_CHUNK_BYTES = 8 << 20


def _windows(header: NpyHeader, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """(first element, element count) of each window over the array's data."""
    per_window = max(1, chunk_bytes // header.dtype.itemsize)
    for start in range(0, header.size, per_window):
        yield start, min(per_window, header.size - start)


def _read_window(
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
    filled = 0
    while filled < len(target):
        if stream:
            count = file.readinto(target[filled:])  # type: ignore[attr-defined]
            if not count:
                raise InvalidTensorFileError(
                    f"{name} is truncated: its .npy header promises {header.nbytes} bytes of"
                    f" data (shape {header.shape}, {header.dtype.name}) but only"
                    f" {start * header.dtype.itemsize + filled} arrived"
                )
            filled += count
            continue
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


def _relu_npy_in_place(
    path: str, opset: int | None, chunk_bytes: int, progress: Progress | None
) -> None:
    kind = path_kind(path)
    if kind not in (PathKind.REGULAR, PathKind.MISSING, PathKind.DIRECTORY):
        from ..errors import UnsupportedPathError

        raise UnsupportedPathError(
            f"in place: {describe(path, kind)} is not a regular file; only a regular .npy file"
            " can be rewritten in place"
        )
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
    relu_tensor(src, os.fspath(dst), opset=opset, chunk_bytes=chunk_bytes, progress=progress)


def _label(path: str, stdio: bool, standard: str) -> str:
    return standard if stdio and path == STDIO else repr(path)


def relu_tensor(
    src: str,
    dst: str,
    *,
    opset: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Progress | None = None,
    dash_is_stdio: bool = False,
    src_format: str | None = None,
    dst_format: str | None = None,
) -> None:
    """The job of :func:`relu_file` (not in place) and of ``onnx-relu apply``, in one pass.

    ``src`` is opened once and its header read once; the type and, for a ``.pb`` ``dst``, the
    size are checked from it before ``dst`` is opened. ``.npy`` to ``.npy`` streams windows of
    ``chunk_bytes``; anything involving ``.pb`` goes through memory (at most 2 GiB). Paths are
    opened by :mod:`.paths`: a regular (or missing) ``dst`` is replaced atomically, a FIFO or
    character device written through; with ``dash_is_stdio``, ``"-"`` is standard input or
    output, whose formats are ``src_format`` (None: told from the data) and ``dst_format``
    (None: ``src``'s).
    """
    src_label = _label(src, dash_is_stdio, "standard input")
    stdin = dash_is_stdio and src == STDIO
    with open_input(src, "IN" if dash_is_stdio else "src", dash_is_stdio=dash_is_stdio) as source:
        if stdin:
            start = source.read(len(_NPY_MAGIC))
            source = _Rejoined(start, source)  # type: ignore[assignment]
            src_kind = src_format or _sniffed(start, src_label)
            if src_kind == "pb" and start.startswith(_NPY_MAGIC):
                raise UnsupportedFileFormatError(
                    f"{src_label} holds .npy data (it starts with the .npy magic string), not an"
                    " ONNX TensorProto as the format 'pb' says"
                )
        else:
            src_kind = tensor_format(src)
        dst_kind = dst_format or src_kind if dash_is_stdio and dst == STDIO else tensor_format(dst)
        name = ""
        if src_kind == "npy":
            header = read_npy_header(source, src_label)
            check_dtype(header.dtype, opset)
            if dst_kind == "npy":
                _stream_npy(
                    source, src_label, header, dst, dash_is_stdio, opset, chunk_bytes, progress
                )
                return
            refusal = pb_size_refusal(header.nbytes, dst)  # before reading what cannot be written
            if refusal is not None:
                raise UnsupportedFileFormatError(refusal)
            array = read_npy_data(source, header, src_label)
        else:
            data = read_pb_bytes(source, src_label)
            base = os.getcwd() if stdin else os.path.dirname(os.path.abspath(src))
            array, name = _parse_pb_tensor(data, src_label, base)
            check_dtype(array.dtype, opset)
    relu(array, out=array, opset=opset)  # the array is our own copy: no second buffer
    if dst_kind == "pb":
        encoded = _pb_bytes(array, _label(dst, dash_is_stdio, "standard output"), name)
        with open_output(
            dst, "OUT" if dash_is_stdio else "dst", dash_is_stdio=dash_is_stdio
        ) as output:
            output.write(encoded)
    else:
        with open_output(
            dst, "OUT" if dash_is_stdio else "dst", dash_is_stdio=dash_is_stdio
        ) as output:
            _write_npy(output, array)


def _sniffed(start: bytes, label: str) -> str:
    if start.startswith(_NPY_MAGIC):
        return "npy"
    raise UnsupportedFileFormatError(
        f"cannot tell the tensor format of {label}: "
        + ("it is empty" if not start else "it does not start with the .npy magic string")
        + "; .npy data is recognised, an ONNX TensorProto must be named with --format pb"
    )


def _stream_npy(
    source: BinaryIO,
    label: str,
    header: NpyHeader,
    dst: str,
    dash_is_stdio: bool,
    opset: int | None,
    chunk_bytes: int,
    progress: Progress | None,
) -> None:
    """``.npy`` to ``.npy`` in windows of ``chunk_bytes`` through one reused buffer; the header
    is copied verbatim (same dtype descr, shape and memory order)."""
    # (standard input is read in order even when it is a regular file: it may start part-way)
    stream = _regular_size(source) is None or isinstance(source, _Rejoined)
    itemsize = header.dtype.itemsize
    buffer = np.empty(max(1, min(header.size, chunk_bytes // max(itemsize, 1))), header.dtype)
    _report(progress, 0, header.nbytes)
    with open_output(dst, "OUT" if dash_is_stdio else "dst", dash_is_stdio=dash_is_stdio) as output:
        output.write(header.raw)
        for start, count in _windows(header, chunk_bytes):
            window = buffer[:count]
            _read_window(source, label, header, start, window, stream)
            relu(window, out=window, opset=opset)
            output.write(memoryview(window.view(np.uint8)))  # type: ignore[arg-type]
            _report(progress, (start + count) * itemsize, header.nbytes)
