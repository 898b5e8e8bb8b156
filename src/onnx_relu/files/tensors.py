"""Tensor files: NumPy ``.npy`` and ONNX ``TensorProto`` ``.pb``, read and written exactly.

The format is chosen by the file name's suffix (``.npy`` or ``.pb``, any letter case). Every
type is stored bit for bit: NaN payloads, signalling bits and the sign of zero survive a round
trip. Writes are atomic (see :func:`onnx_relu.files.atomic_file`): a failed or interrupted
write leaves no partial file. A file that cannot be read (empty, truncated, corrupt, not the
format its suffix says) raises :class:`~onnx_relu.errors.InvalidTensorFileError`, a
``ValueError``.

bfloat16 in ``.npy``
    NumPy has no bfloat16 type; ``numpy.save`` of an ``ml_dtypes.bfloat16`` array writes the
    header descr ``'<V2'`` (two raw bytes), and ``numpy.load`` gives those back as ``|V2``
    void values. Plain numpy void types are written as ``'|V2'``, and ``'<V2'`` is what exactly
    one ml_dtypes type writes (bfloat16 is its only 2-byte type), so :func:`read_tensor` reads a
    ``'<V2'`` descr as ``ml_dtypes.bfloat16`` and :func:`write_tensor` writes bfloat16 the way
    ``numpy.save`` does. Files stay readable by any numpy:
    ``numpy.load(path).view(ml_dtypes.bfloat16)``.

Types Relu does not allow are read fine (``.npy`` of uint8, bool, structured types...);
:func:`onnx_relu.relu` refuses them with its own error. Only pickled Python objects are refused
on reading, because unpickling a file can run arbitrary code.

``.pb`` files need the ``onnx`` package (``pip install "onnx-relu[onnx]"``), imported only when a
``.pb`` file is read or written; a TensorProto holds at most 2 GiB, so larger tensors need ``.npy``.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO

import numpy as np

from ..errors import InvalidTensorFileError, UnsupportedFileFormatError
from .npy import (  # noqa: F401 - the .npy names callers import from here
    _BFLOAT16,
    _NPY_MAGIC,
    NpyHeader,
    _bytes_view,
    _npy_header_bytes,
    _read_npy,
    _read_npy_from,
    _regular_size,
    _write_npy,
    _write_to,
    read_npy_data,
    read_npy_header,
)
from .paths import open_output
from .pb import (  # noqa: F401 - the .pb names callers import from here
    PB_DATA_LIMIT,
    PROTOBUF_MESSAGE_LIMIT,
    _parse_pb_tensor,
    _pb_bytes,
    pb_size_refusal,
    read_pb_bytes,
    read_pb_tensor,
)

__all__ = [
    "read_tensor_stream",
    "write_tensor_stream",
    "TENSOR_FORMATS",
    "tensor_format",
    "read_tensor",
    "write_tensor",
    "NpyHeader",
    "read_npy_header",
]

#: File suffix (lower case) -> format name.
TENSOR_FORMATS: dict[str, str] = {".npy": "npy", ".pb": "pb"}


def tensor_format(path: str | os.PathLike[str]) -> str:
    """The tensor format named by ``path``'s suffix: ``"npy"`` or ``"pb"``.

    Raises :class:`~onnx_relu.errors.UnsupportedFileFormatError` (a ``ValueError``) otherwise.

    Examples
    --------
    >>> tensor_format("x.npy"), tensor_format("input_0.PB")
    ('npy', 'pb')
    >>> tensor_format("x.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    onnx_relu.errors.UnsupportedFileFormatError: cannot tell the tensor format of 'x.csv': ...
    """
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    try:
        return TENSOR_FORMATS[suffix]
    except KeyError:
        raise UnsupportedFileFormatError(
            f"cannot tell the tensor format of {os.fspath(path)!r}: the name must end in"
            " .npy (NumPy) or .pb (ONNX TensorProto)"
        ) from None


def read_tensor_stream(
    file: BinaryIO, kind: str | None = None, *, label: str = "standard input"
) -> tuple[np.ndarray, str, str]:
    """Read one tensor from the binary stream ``file`` (e.g. ``sys.stdin.buffer``) to its end.

    Parameters
    ----------
    file : binary file object
    kind : {"npy", "pb"}, optional
        The format; None: ``.npy`` if the data starts with the ``.npy`` magic string (a
        TensorProto cannot be told from other bytes, so ``.pb`` data needs ``kind="pb"``).
    label : str
        What the stream is called in error messages.

    Returns
    -------
    tuple
        The array (new and writeable), the TensorProto's name (``""`` for ``.npy``) and the
        format read ("npy" or "pb").

    Raises
    ------
    UnsupportedFileFormatError
        if ``kind`` is None and the data is not ``.npy``, or ``kind`` names no format.
    InvalidTensorFileError
        for empty, truncated or corrupt data.

    Examples
    --------
    >>> import io, numpy as np
    >>> stream = io.BytesIO()
    >>> write_tensor_stream(stream, np.array([-1.0, 2.0], dtype=np.float32), "npy")
    >>> array, name, kind = read_tensor_stream(io.BytesIO(stream.getvalue()))
    >>> str(array.dtype), array.tolist(), kind
    ('float32', [-1.0, 2.0], 'npy')
    """
    if kind is not None and kind not in TENSOR_FORMATS.values():
        raise UnsupportedFileFormatError(
            f"unknown tensor format {kind!r}: the formats are 'npy' (NumPy) and 'pb' (ONNX"
            " TensorProto)"
        )
    start = file.read(len(_NPY_MAGIC))
    if kind is None:
        if not start.startswith(_NPY_MAGIC):
            raise UnsupportedFileFormatError(
                f"cannot tell the tensor format of {label}: "
                + ("it is empty" if not start else "it does not start with the .npy magic string")
                + "; .npy data is recognised, an ONNX TensorProto must be named with --format pb"
            )
        kind = "npy"
    if kind == "npy":
        return _read_npy_from(_Rejoined(start, file), label), "", kind  # type: ignore[arg-type]
    if start.startswith(_NPY_MAGIC):  # protobuf might parse these bytes into a wrong tensor
        raise UnsupportedFileFormatError(
            f"{label} holds .npy data (it starts with the .npy magic string), not an ONNX"
            " TensorProto as the format 'pb' says"
        )
    data = start + read_pb_bytes(file, label)
    if len(data) >= PROTOBUF_MESSAGE_LIMIT:
        raise InvalidTensorFileError(
            f"{label} holds more than {PROTOBUF_MESSAGE_LIMIT - 1} bytes:"
            " protobuf reads no message of 2 GiB or more"
        )
    array, name = _parse_pb_tensor(data, label, os.getcwd())
    return array, name, kind


class _Rejoined:
    """``file`` with the bytes ``start`` already read from it put back in front (a stream
    cannot seek back); ``regular`` and ``fileno`` are ``file``'s."""

    def __init__(self, start: bytes, file: BinaryIO) -> None:
        self._start = start
        self._file = file
        self.regular = _regular_size(file) is not None

    def read(self, size: int = -1) -> bytes:
        if not self._start:
            return self._file.read(size)
        if size < 0:
            data, self._start = self._start + self._file.read(), b""
            return data
        data, self._start = self._start[:size], self._start[size:]
        if len(data) < size:
            data += self._file.read(size - len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer).cast("B")))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def fileno(self) -> int:
        return self._file.fileno()

    def tell(self) -> int:
        return self._file.tell() - len(self._start)


def write_tensor_stream(file: BinaryIO, array: np.ndarray, kind: str, *, name: str = "") -> None:
    """Write ``array`` to the binary stream ``file`` as ``kind`` ("npy" or "pb") data.

    ``name`` is the TensorProto's name (``.pb`` only). The ``.pb`` bytes are built completely
    before the first is written, so a type the format cannot hold writes nothing.

    Examples
    --------
    >>> import io, numpy as np
    >>> stream = io.BytesIO()
    >>> write_tensor_stream(stream, np.arange(3, dtype=np.int8), "npy")
    >>> stream.getvalue()[:6]
    b'\\x93NUMPY'
    """
    array = np.asarray(array)
    if kind == "npy":
        _write_npy(file, array)
    elif kind == "pb":
        _write_to(file, _pb_bytes(array, "standard output", name))
    else:
        raise UnsupportedFileFormatError(
            f"unknown tensor format {kind!r}: the formats are 'npy' (NumPy) and 'pb' (ONNX"
            " TensorProto)"
        )
    if not hasattr(file, "fd"):  # (an Output has nothing to flush)
        file.flush()


def read_tensor(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a tensor from a ``.npy`` or ``.pb`` (ONNX TensorProto) file, bit for bit.

    Parameters
    ----------
    path : str or os.PathLike
        The suffix chooses the format: ``.npy`` or ``.pb`` (any letter case).

    Returns
    -------
    numpy.ndarray
        A new, writeable array with the file's shape and type; bfloat16 as
        ``ml_dtypes.bfloat16``. ``.npy`` keeps the stored byte order and memory order.

    Raises
    ------
    UnsupportedFileFormatError
        (a ``ValueError``) for any other suffix.
    InvalidTensorFileError
        (a ``ValueError``) for an empty, truncated or corrupt file, or a ``.npy`` of pickled
        Python objects.
    OSError
        if the file cannot be opened (missing, a folder, no permission).

    Examples
    --------
    >>> import os, tempfile, numpy as np, ml_dtypes
    >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
    >>> write_tensor(path, np.array([-1.5, 2.0], dtype=ml_dtypes.bfloat16))
    >>> y = read_tensor(path)
    >>> str(y.dtype), y.astype(np.float32).tolist()
    ('bfloat16', [-1.5, 2.0])
    """
    kind = tensor_format(path)
    path = os.fspath(path)
    if kind == "npy":
        return _read_npy(path)
    return read_pb_tensor(path)[0]


def write_tensor(path: str | os.PathLike[str], array: object, *, name: str = "") -> None:
    """Write ``array`` to a ``.npy`` or ``.pb`` file, atomically and bit for bit.

    Parameters
    ----------
    path : str or os.PathLike
        The suffix chooses the format: ``.npy`` or ``.pb``. An existing regular file is
        replaced atomically; a FIFO or a character device is written through as a stream
        (see :mod:`onnx_relu.files.paths`), never replaced.
    array : array_like
    name : str, optional
        The TensorProto's name (``.pb`` only).

    Raises
    ------
    UnsupportedFileFormatError
        for any other suffix (nothing is written).
    TypeError
        for a type the format cannot hold (Python objects; for ``.pb`` types ONNX lacks).
    ValueError
        for a ``.pb`` tensor over 2 GiB.
    OSError
        if the file cannot be written; the destination is then left as it was.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "y.pb")
    >>> write_tensor(path, np.array([[1, -2]], dtype=np.int8))
    >>> y = read_tensor(path)
    >>> str(y.dtype), y.tolist()
    ('int8', [[1, -2]])
    """
    kind = tensor_format(path)
    path = os.fspath(path)
    array = np.asarray(array)
    if kind == "npy":
        if array.dtype.hasobject:
            raise TypeError("a .npy tensor file cannot hold Python objects")
        with open_output(path) as output:
            _write_npy(output, array)
    else:
        data = _pb_bytes(array, path, name)
        with open_output(path) as output:
            output.write(data)
