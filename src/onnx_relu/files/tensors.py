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

import ast
import io
import os
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from ..dtypes import RELU_TYPE_BY_NAME, native
from ..errors import InvalidTensorFileError, UnsupportedFileFormatError
from ._atomic import atomic_file

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

_BFLOAT16 = RELU_TYPE_BY_NAME["bfloat16"].dtype
_BFLOAT16_NPY_DESCR = "<V2"  # what numpy.save writes for ml_dtypes.bfloat16
_NPY_MAGIC = b"\x93NUMPY"
_MAX_NPY_HEADER = 10_000  # numpy's own limit for literal_eval of a header
_MAX_NDIM = 64  # NPY_MAXDIMS of numpy 2
_MAX_ARRAY_BYTES = np.iinfo(np.intp).max  # numpy refuses larger arrays, even empty ones


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
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    data_offset: int

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
        return _BFLOAT16
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
    if len(start) < 8 or not start.startswith(_NPY_MAGIC):
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
        isinstance(extent, int) and not isinstance(extent, bool) and extent >= 0
        for extent in shape
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
    result = NpyHeader(shape, dtype, fortran_order, file.tell())
    try:
        file_size = os.fstat(file.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        file_size = None  # not a real file: the read itself will find truncation
    if file_size is not None and file_size < result.data_offset + result.nbytes:
        raise InvalidTensorFileError(
            f"{name} is truncated: its header promises {result.nbytes} bytes of data"
            f" (shape {shape}, {dtype.name}) but only {max(file_size - result.data_offset, 0)}"
            " follow"
        )
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


def _read_npy(path: str) -> np.ndarray:
    with open(path, "rb") as file:
        return _read_npy_from(file, repr(path))


def _read_npy_from(file: BinaryIO, label: str) -> np.ndarray:
    """The array of the ``.npy`` data that ``file`` reads from; ``label`` names it in errors."""
    header = read_npy_header(file, label)
    order = "F" if header.fortran_order else "C"
    array: np.ndarray = np.empty(header.shape, dtype=header.dtype, order=order)  # type: ignore[call-overload]
    if header.nbytes:
        target = _bytes_view(array)
        filled = 0
        while filled < header.nbytes:
            count = file.readinto(target[filled:])  # type: ignore[attr-defined]  # BinaryIO lacks it
            if not count:
                raise InvalidTensorFileError(f"{label} is truncated (shorter than its header says)")
            filled += count
    return array


def _write_npy(file: BinaryIO, array: np.ndarray) -> None:
    if array.dtype.hasobject:
        raise TypeError("a .npy tensor file cannot hold Python objects")
    if not array.dtype.isnative and native(array.dtype) == _BFLOAT16:
        # numpy would write the header descr '>V2', which it reads back as raw void (as every
        # reader does): bfloat16 has one .npy spelling, '<V2', so it is written in native order.
        array = array.astype(_BFLOAT16, order="K")
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    file.write(_npy_header_bytes(array))
    if array.size:
        file.write(_bytes_view(array))


def _import_onnx() -> tuple[Any, Any]:
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as exc:
        raise ModuleNotFoundError(
            f".pb tensor files need the onnx package ({exc}); install it with"
            ' pip install "onnx-relu[onnx]"'
        ) from exc
    return onnx, numpy_helper


def _check_int32_data_range(onnx: Any, tensor: Any, label: str) -> None:
    """Types narrower than 32 bits keep typed values in ``int32_data``; onnx's decoder casts
    them without a check (300 in an int8 tensor reads as 44), so a value the type cannot hold
    marks the file corrupt."""
    kinds = {
        onnx.TensorProto.INT8: (-(2**7), 2**7 - 1),
        onnx.TensorProto.INT16: (-(2**15), 2**15 - 1),
        onnx.TensorProto.UINT8: (0, 2**8 - 1),
        onnx.TensorProto.UINT16: (0, 2**16 - 1),
        onnx.TensorProto.FLOAT16: (0, 2**16 - 1),  # the bits of each value, as uint16
        onnx.TensorProto.BFLOAT16: (0, 2**16 - 1),
    }
    bounds = kinds.get(tensor.data_type)
    if bounds is None or not len(tensor.int32_data):
        return
    values = np.asarray(tensor.int32_data, dtype=np.int64)
    outside = values[(values < bounds[0]) | (values > bounds[1])]
    if outside.size:
        type_name = onnx.helper.tensor_dtype_to_string(tensor.data_type).lower().replace(
            "tensorproto.", ""
        )
        raise InvalidTensorFileError(
            f"{label}: the TensorProto's int32_data holds {int(outside[0])}, which"
            f" is outside the range of {type_name} ({bounds[0]}..{bounds[1]}"
            f"{', its bits as uint16' if 'float' in type_name else ''}); the file is corrupt"
        )


def read_pb_tensor(path: str | os.PathLike[str]) -> tuple[np.ndarray, str]:
    """Read a ``.pb`` file holding one ONNX ``TensorProto``: its values and its name."""
    path = os.fspath(path)
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size >= PROTOBUF_MESSAGE_LIMIT:  # protobuf would call it corrupt, after reading it all
            raise InvalidTensorFileError(
                f"{path!r} is {size} bytes: protobuf reads no message of 2 GiB or more, so no"
                " ONNX TensorProto (.pb) can be that large; store such a tensor as .npy"
            )
        data = file.read()
    return _parse_pb_tensor(data, repr(path), os.path.dirname(os.path.abspath(path)))


def _parse_pb_tensor(data: bytes, label: str, base_dir: str) -> tuple[np.ndarray, str]:
    """The values and name of the serialized TensorProto ``data``; ``label`` names it in errors,
    ``base_dir`` is where its external data would be."""
    onnx, numpy_helper = _import_onnx()
    if not data:
        raise InvalidTensorFileError(f"{label} is empty: it holds no ONNX TensorProto")
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(data)
    except Exception as exc:  # protobuf's DecodeError; its module path varies by backend
        raise InvalidTensorFileError(
            f"{label} is not a valid ONNX TensorProto (corrupt or truncated: {exc})"
        ) from None
    if tensor.data_type == onnx.TensorProto.UNDEFINED:
        raise InvalidTensorFileError(
            f"{label} is not an ONNX TensorProto: it names no element type (is it a model or"
            " another kind of protobuf?)"
        )
    if any(extent < 0 for extent in tensor.dims):
        raise InvalidTensorFileError(
            f"{label}: the TensorProto's dims {list(tensor.dims)} include a negative extent"
        )
    _check_int32_data_range(onnx, tensor, label)
    try:
        array = numpy_helper.to_array(tensor, base_dir=base_dir)
    except Exception as exc:  # ValueError, TypeError, KeyError, OSError from onnx's decoder
        raise InvalidTensorFileError(
            f"{label}: the TensorProto's data cannot be decoded ({type(exc).__name__}: {exc})"
        ) from None
    if tensor.data_type == onnx.TensorProto.BFLOAT16 and array.dtype != _BFLOAT16:
        # onnx < 1.18 returns its own uint16-based bfloat16 type: same bits, reinterpret them.
        array = array.view(np.uint16).view(_BFLOAT16)
    if not array.flags.writeable:  # numpy_helper returns a view of the protobuf's bytes
        array = array.copy()
    return array, tensor.name


#: Protobuf parses and serializes no message of this size or more (2 GiB).
PROTOBUF_MESSAGE_LIMIT = 1 << 31

#: The largest tensor data a .pb file is written with: protobuf serializes no message of 2 GiB
#: or more, and the TensorProto needs a few bytes besides its data (name, dims, type).
PB_DATA_LIMIT = PROTOBUF_MESSAGE_LIMIT - (1 << 16)


def pb_size_refusal(nbytes: int, path: str) -> str | None:
    """Why ``nbytes`` of tensor data cannot go into the .pb file ``path``, or None if they can."""
    if nbytes <= PB_DATA_LIMIT:
        return None
    return (
        f"cannot write {path!r}: an ONNX TensorProto (.pb) holds at most 2 GiB (protobuf's"
        f" limit on one message) and this tensor has {nbytes} bytes; write it as .npy instead"
    )


def _pb_bytes(array: np.ndarray, path: str, name: str) -> bytes:
    refusal = pb_size_refusal(array.nbytes, path)
    if refusal is not None:  # before building a message protobuf cannot encode
        raise ValueError(refusal)
    _onnx, numpy_helper = _import_onnx()
    if not array.dtype.isnative:  # TensorProto data is little-endian; onnx wants native input
        array = array.astype(native(array.dtype))
    try:
        tensor = numpy_helper.from_array(array, name=name)
    except (ValueError, TypeError, KeyError) as exc:
        raise TypeError(f"cannot store {array.dtype} in an ONNX TensorProto: {exc}") from None
    from google.protobuf.message import EncodeError

    try:
        data: bytes = tensor.SerializeToString()
        return data
    except (ValueError, EncodeError) as exc:  # protobuf refuses messages over 2 GiB
        raise ValueError(
            f"cannot write {path!r}: an ONNX TensorProto holds at most 2 GiB and this tensor"
            f" has {array.nbytes} bytes; write it as .npy instead ({exc})"
        ) from None


def read_tensor_stream(file: BinaryIO, kind: str | None = None, *,
                       label: str = "standard input") -> tuple[np.ndarray, str, str]:
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
    data = file.read()
    if kind is None:
        if not data.startswith(_NPY_MAGIC):
            raise UnsupportedFileFormatError(
                f"cannot tell the tensor format of {label}: "
                + ("it is empty" if not data else "it does not start with the .npy magic string")
                + "; .npy data is recognised, an ONNX TensorProto must be named with --format pb"
            )
        kind = "npy"
    if kind == "npy":
        return _read_npy_from(io.BytesIO(data), label), "", kind
    if data.startswith(_NPY_MAGIC):  # protobuf might parse these bytes into a wrong tensor
        raise UnsupportedFileFormatError(
            f"{label} holds .npy data (it starts with the .npy magic string), not an ONNX"
            " TensorProto as the format 'pb' says"
        )
    array, name = _parse_pb_tensor(data, label, os.getcwd())
    return array, name, kind


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
        file.write(_pb_bytes(array, "standard output", name))
    else:
        raise UnsupportedFileFormatError(
            f"unknown tensor format {kind!r}: the formats are 'npy' (NumPy) and 'pb' (ONNX"
            " TensorProto)"
        )
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
        The suffix chooses the format: ``.npy`` or ``.pb``. An existing file is replaced.
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
        with atomic_file(path) as file:
            _write_npy(file, array)
    else:
        data = _pb_bytes(array, path, name)
        with atomic_file(path) as file:
            file.write(data)
