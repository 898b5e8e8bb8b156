"""``.npy`` (NumPy) tensor data: the header read and checked, the data read from a regular file
or a stream (bounded by what arrives), and written with every byte.

See :mod:`onnx_relu.files.tensors` for the format notes (bfloat16 as ``'<V2'``, no pickles).
"""

from __future__ import annotations

import ast
import io
import os
import struct
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np

from ..dtypes import bfloat16_dtype, is_bfloat16, native
from ..errors import InvalidTensorFileError
from ..io.streams import Output, open_input, read_exact, regular_size, write_all

__all__ = [
    "NPY_MAGIC",
    "NpyHeader",
    "read_npy_header",
    "truncation_error",
    "read_npy_data",
    "read_npy",
    "write_npy",
]

_BFLOAT16_NPY_DESCR = "<V2"  # what numpy.save writes for ml_dtypes.bfloat16
#: The bytes every ``.npy`` file starts with (how standard input's format is told).
NPY_MAGIC = b"\x93NUMPY"
_MAX_NPY_HEADER = 10_000  # numpy's own limit for literal_eval of a header
_MAX_NDIM = 64  # NPY_MAXDIMS of numpy 2
_MAX_ARRAY_BYTES = np.iinfo(np.intp).max  # numpy refuses larger arrays, even empty ones


@dataclass(frozen=True)
class NpyHeader:
    """What the header of a ``.npy`` file says about the array stored after it.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
        ``ml_dtypes.bfloat16`` for a ``'<V2'`` descr (see the module notes).
    fortran_order : bool
    data_offset : int
        Where the array's bytes start in the file.
    raw : bytes
        The header's bytes as read (magic string to padding), to copy verbatim.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    data_offset: int
    raw: bytes = field(default=b"", repr=False, compare=False)

    @property
    def size(self) -> int:
        """The number of elements."""
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    @property
    def nbytes(self) -> int:
        """The number of bytes of array data the file must hold after the header."""
        return self.size * self.dtype.itemsize


def _descr_dtype(descr: object, name: str) -> np.dtype:
    if descr == _BFLOAT16_NPY_DESCR:
        return bfloat16_dtype()  # (imports ml_dtypes: the one place a file needs it)
    try:
        return np.lib.format.descr_to_dtype(descr)  # type: ignore[arg-type]  # checked here
    # numpy's ways of saying "not a dtype": TypeError, ValueError, and SyntaxError for
    # malformed comma strings such as ',i2' or 'i4,(' (found by the .npy fuzz target).
    except (TypeError, ValueError, SyntaxError) as exc:
        raise InvalidTensorFileError(
            f"{name}: the .npy header names no valid dtype ({descr!r}: {exc})"
        ) from None


def _check_array_size(shape: tuple[int, ...], dtype: np.dtype, name: str) -> None:
    """Refuse shapes no numpy array can have, before numpy refuses them with a bare ValueError.

    An empty shape such as (2**62, 2**62, 0) needs no data bytes, so the truncation check
    passes it; numpy still refuses to create it (its extents multiply past the address space).
    """
    if len(shape) > _MAX_NDIM:
        raise InvalidTensorFileError(
            f"{name}: the .npy header's shape has {len(shape)} dimensions; numpy arrays have at"
            f" most {_MAX_NDIM}"
        )
    nbytes = max(dtype.itemsize, 1)
    for extent in shape:
        nbytes *= extent or 1  # numpy multiplies the non-zero extents: so do we
    if nbytes > _MAX_ARRAY_BYTES:
        raise InvalidTensorFileError(
            f"{name}: the .npy header's shape {shape} of {dtype.name} spans more than"
            f" {_MAX_ARRAY_BYTES} bytes (the element count overflows), which no array can"
            " hold; the file is corrupt"
        )


def truncation_error(
    label: str, header: NpyHeader, got: int, *, now: int | None = None
) -> InvalidTensorFileError:
    """The one way short ``.npy`` data is reported: the bytes of data its header promises
    against the ``got`` bytes there are; ``now``: the size a regular file has shrunk to since its
    header was read (another process changed it during the run).

    Examples
    --------
    >>> header = NpyHeader((4,), np.dtype("float32"), False, 128)
    >>> print(truncation_error("x", header, 12))
    x is truncated: its header promises 16 bytes of data (shape (4,), float32) but only 12 follow
    """
    if now is not None:
        return InvalidTensorFileError(
            f"{label} was truncated while being read: its header says"
            f" {header.data_offset + header.nbytes} bytes, the file now holds {now}"
            " (was it changed during the run?)"
        )
    return InvalidTensorFileError(
        f"{label} is truncated: its header promises {header.nbytes} bytes of data"
        f" (shape {header.shape}, {header.dtype.name}) but only {max(got, 0)} follow"
    )


def read_npy_header(file: BinaryIO, name: str = "the file") -> NpyHeader:
    """Read and validate a ``.npy`` header from ``file`` (at its start); ``name`` is for errors.

    Leaves ``file`` positioned at the first byte of array data. Checks that the file holds at
    least as many data bytes as the header's shape and dtype need.

    Raises
    ------
    InvalidTensorFileError
        empty file, no ``.npy`` magic string, unknown format version, malformed or oversized
        header, a dtype holding Python objects (pickled), a subarray dtype, a shape no numpy
        array can have (more than 64 dimensions, an element count that overflows), or
        truncated data.
    """
    start = file.read(8)
    if not start:
        raise InvalidTensorFileError(f"{name} is empty: it holds no .npy data")
    if len(start) < 8 or not start.startswith(NPY_MAGIC):
        raise InvalidTensorFileError(
            f"{name} is not a .npy file: it does not start with the .npy magic string"
        )
    major, minor = start[6], start[7]
    if major not in (1, 2, 3):
        raise InvalidTensorFileError(
            f"{name} is a .npy file of format version {major}.{minor}, which onnx-relu cannot"
            " read (it reads versions 1.0, 2.0 and 3.0)"
        )
    length_format = "<H" if major == 1 else "<I"
    length_bytes = file.read(struct.calcsize(length_format))
    if len(length_bytes) < struct.calcsize(length_format):
        raise InvalidTensorFileError(f"{name} is truncated inside its .npy header")
    (header_length,) = struct.unpack(length_format, length_bytes)
    if header_length > _MAX_NPY_HEADER:
        raise InvalidTensorFileError(
            f"{name}: the .npy header is {header_length} bytes long; more than"
            f" {_MAX_NPY_HEADER} is refused as corrupt"
        )
    header_bytes = file.read(header_length)
    if len(header_bytes) < header_length:
        raise InvalidTensorFileError(f"{name} is truncated inside its .npy header")
    try:
        text = header_bytes.decode("latin1" if major < 3 else "utf8")
        header = ast.literal_eval(text)
    except (UnicodeDecodeError, SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise InvalidTensorFileError(f"{name}: the .npy header is not readable") from None
    keys = {"descr", "fortran_order", "shape"}
    if not isinstance(header, dict) or set(header) != keys:
        raise InvalidTensorFileError(
            f"{name}: the .npy header must be a dict with exactly the keys descr,"
            " fortran_order and shape"
        )
    shape = header["shape"]
    if not isinstance(shape, tuple) or not all(
        isinstance(extent, int) and not isinstance(extent, bool) and extent >= 0 for extent in shape
    ):
        raise InvalidTensorFileError(
            f"{name}: the .npy header's shape {shape!r} is not a tuple of integers >= 0"
        )
    fortran_order = header["fortran_order"]
    if not isinstance(fortran_order, bool):
        raise InvalidTensorFileError(f"{name}: the .npy header's fortran_order is not a bool")
    dtype = _descr_dtype(header["descr"], name)
    if dtype.hasobject:
        raise InvalidTensorFileError(
            f"{name} holds Python objects stored with pickle; onnx-relu never unpickles a file"
            " (unpickling can run arbitrary code)"
        )
    if dtype.subdtype is not None:
        # A descr such as ('<f4', (2,)): numpy.save never writes one, and numpy.load cannot
        # read one back (it counts the elements of the base type against the shape). Refused,
        # so that read_tensor and `apply` never disagree about what such a file holds.
        raise InvalidTensorFileError(
            f"{name}: the .npy header's dtype {header['descr']!r} is a subarray type, which"
            " numpy.save never writes; store the array with its full shape instead"
        )
    _check_array_size(shape, dtype, name)
    # (counted, not told: a stream cannot tell its position)
    raw = start + length_bytes + header_bytes
    result = NpyHeader(shape, dtype, fortran_order, len(raw), raw)
    file_size = regular_size(file)  # a stream: the read itself will find truncation
    if file_size is not None:
        follow = file_size - file.tell()
        if follow < result.nbytes:
            raise truncation_error(name, result, follow)
    return result


def _npy_header_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(array)
    try:
        np.lib.format.write_array_header_1_0(buffer, header)
    except ValueError:  # a header longer than 65535 bytes needs format 2.0
        buffer = io.BytesIO()
        np.lib.format.write_array_header_2_0(buffer, header)
    return buffer.getvalue()


def _bytes_view(array: np.ndarray) -> memoryview:
    """The memory of a contiguous array as bytes (works for ml_dtypes types too)."""
    return array.reshape(-1, order="A").view(np.uint8).data


def read_npy(path: str) -> np.ndarray:
    """The array of the ``.npy`` file ``path`` (opened by
    :func:`~onnx_relu.io.streams.open_input`)."""
    with open_input(path) as file:
        label = repr(path)
        return read_npy_data(file, read_npy_header(file, label), label)


def read_npy_data(file: BinaryIO, header: NpyHeader, label: str) -> np.ndarray:
    """The array whose ``header`` was just read from ``file``: from a regular file (whose size
    was checked against the header) into an array of the header's size; from a stream in
    pieces, so that a header promising more than arrives costs only what arrived."""
    order = "F" if header.fortran_order else "C"
    if regular_size(file) is None:
        data = bytearray()
        while len(data) < header.nbytes:
            piece = file.read(min(header.nbytes - len(data), 1 << 24))
            if not piece:
                raise truncation_error(label, header, len(data))
            data += piece
        flat: np.ndarray = np.frombuffer(data, dtype=header.dtype)
        shaped: np.ndarray = flat.reshape(header.shape, order=order)  # type: ignore[call-overload]
        return shaped
    array: np.ndarray = np.empty(header.shape, dtype=header.dtype, order=order)  # type: ignore[call-overload]
    if header.nbytes:
        if read_exact(file, _bytes_view(array)) < header.nbytes:
            raise truncation_error(label, header, 0, now=os.fstat(file.fileno()).st_size)
    return array


def write_npy(file: Any, array: np.ndarray) -> None:
    """Write ``array`` as ``.npy`` data (header, then every byte of its data) to ``file``: an
    :class:`~onnx_relu.io.streams.Output`, a file object, or anything with ``write``.

    bfloat16 is written as ``numpy.save`` writes it (descr ``'<V2'``, native byte order).

    Raises
    ------
    TypeError
        for an array of Python objects (nothing is written).

    Examples
    --------
    >>> import io, numpy as np
    >>> buffer = io.BytesIO()
    >>> write_npy(buffer, np.arange(3, dtype=np.int8))
    >>> buffer.getvalue().startswith(NPY_MAGIC), np.load(io.BytesIO(buffer.getvalue())).tolist()
    (True, [0, 1, 2])
    """
    if array.dtype.hasobject:
        raise TypeError("a .npy tensor file cannot hold Python objects")
    if not array.dtype.isnative and is_bfloat16(native(array.dtype)):
        # numpy would write the header descr '>V2', which it reads back as raw void (as every
        # reader does): bfloat16 has one .npy spelling, '<V2', so it is written in native order.
        array = array.astype(native(array.dtype), order="K")
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    _write_to(file, _npy_header_bytes(array))
    if array.size:
        _write_to(file, _bytes_view(array))


def _write_to(file: Any, data: bytes | memoryview) -> None:
    """Every byte of ``data`` to ``file``: an :class:`~onnx_relu.io.streams.Output`, a file
    object with a descriptor (flushed, then written with
    :func:`~onnx_relu.io.streams.write_all`, which finishes short writes), or any object with
    ``write`` (``io.BytesIO``)."""
    if isinstance(file, Output):
        file.write(data)
        return
    try:
        fd = file.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        view = memoryview(data).cast("B")
        while view:  # a raw file may take part of a write
            count = file.write(view)
            view = view[len(view) if count is None else count :]
        return
    file.flush()
    write_all(fd, data)
