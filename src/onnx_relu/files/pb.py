"""``.pb`` (ONNX ``TensorProto``) tensor data: read bounded by protobuf's 2 GiB limit, parsed and
checked, and encoded. Needs the ``onnx`` package, imported when a ``.pb`` is read or written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from .._protobuf import PROTOBUF_MESSAGE_LIMIT
from ..dtypes import bfloat16_dtype, native
from ..errors import InvalidTensorFileError
from ..io.streams import open_input, read_bounded

__all__ = [
    "read_pb_tensor",
    "read_pb_bytes",
    "parse_pb_tensor",
    "external_data_path",
    "encode_pb_tensor",
    "pb_size_refusal",
    "PROTOBUF_MESSAGE_LIMIT",
    "PB_DATA_LIMIT",
]


def _import_onnx() -> tuple[Any, Any]:
    from .._extras import extra_needed

    with extra_needed("a .pb tensor file"):
        import onnx
        from onnx import numpy_helper
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
        type_name = (
            onnx.helper.tensor_dtype_to_string(tensor.data_type).lower().replace("tensorproto.", "")
        )
        raise InvalidTensorFileError(
            f"{label}: the TensorProto's int32_data holds {int(outside[0])}, which"
            f" is outside the range of {type_name} ({bounds[0]}..{bounds[1]}"
            f"{', its bits as uint16' if 'float' in type_name else ''}); the file is corrupt"
        )


def read_pb_tensor(path: str | os.PathLike[str]) -> tuple[np.ndarray, str | bytes]:
    """Read a ``.pb`` file holding one ONNX ``TensorProto``: its values and its name (bytes
    where it is not UTF-8: protobuf gives such proto2 strings back as bytes)."""
    path = os.fspath(path)
    with open_input(path) as file:
        data = read_pb_bytes(file, repr(path))
    from .._paths import absolute_path

    return parse_pb_tensor(data, repr(path), os.path.dirname(absolute_path(path)))


def read_pb_bytes(file: BinaryIO, label: str) -> bytes:
    """All of ``file``, refused past protobuf's limit (a regular file from its size, a stream
    once that much has arrived: a stream without an end costs at most 2 GiB)."""
    try:
        return read_bounded(file, PROTOBUF_MESSAGE_LIMIT - 1, label)
    except ValueError as exc:
        raise InvalidTensorFileError(
            f"{exc}: protobuf reads no message of 2 GiB or more, so no ONNX TensorProto (.pb)"
            " can be that large; store such a tensor as .npy"
        ) from None


def parse_pb_tensor(
    data: bytes,
    label: str,
    base_dir: str,
    check_external: Callable[[str], None] | None = None,
) -> tuple[np.ndarray, str | bytes]:
    """The values (a new, writeable array) and the name of the serialized TensorProto
    ``data``; ``label`` names it in errors, ``base_dir`` is where its external data would be.
    ``check_external`` is called with the external data file's path (for a tensor whose data
    lies in one) before that file is read: it raises to refuse it.

    Raises
    ------
    InvalidTensorFileError
        for empty or corrupt data, a protobuf that is no TensorProto, negative dims,
        ``int32_data`` values outside the type's range, or data that cannot be decoded.
    """
    onnx, numpy_helper = _import_onnx()
    if not data:
        raise InvalidTensorFileError(f"{label} is empty: it holds no ONNX TensorProto")
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError; its module varies by backend
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
    if check_external is not None and tensor.data_location == onnx.TensorProto.EXTERNAL:
        external = external_data_path(tensor, base_dir)
        if external is not None:
            check_external(external)
    try:
        array = numpy_helper.to_array(tensor, base_dir=base_dir)
    except Exception as exc:  # noqa: BLE001 - ValueError, TypeError, KeyError, OSError from onnx
        raise InvalidTensorFileError(
            f"{label}: the TensorProto's data cannot be decoded ({type(exc).__name__}: {exc})"
        ) from None
    if tensor.data_type == onnx.TensorProto.BFLOAT16 and array.dtype != bfloat16_dtype():
        # onnx < 1.18 returns its own uint16-based bfloat16 type: same bits, reinterpret them.
        array = array.view(np.uint16).view(bfloat16_dtype())
    if not array.flags.writeable:  # numpy_helper returns a view of the protobuf's bytes
        array = array.copy()
    return array, tensor.name


def external_data_path(tensor: Any, base_dir: str) -> str | None:
    """The path of the file holding ``tensor``'s external data (its ``location`` entry joined
    to ``base_dir``, as onnx reads it), or None where it names none (onnx then refuses it)."""
    for entry in tensor.external_data:
        if entry.key == "location" and entry.value:
            return os.path.join(base_dir, entry.value)
    return None


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


#: The TensorProto field ``name`` (number 8, length-delimited) as it starts on the wire.
_NAME_TAG = bytes([8 << 3 | 2])


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode_pb_tensor(array: np.ndarray, path: str, name: str | bytes = "") -> bytes:
    """The serialized ONNX ``TensorProto`` named ``name`` holding ``array``, built completely
    before anything is written; ``path`` is the file it is for, named in errors.

    A ``name`` that protobuf gave back as bytes (a file's name that is not UTF-8, which
    onnx.proto's proto2 strings allow) is written back as those bytes, unchanged: protobuf will
    not set such a field, so it is appended to the encoded message (a field may come anywhere).

    Raises
    ------
    ValueError
        for a tensor over :data:`PB_DATA_LIMIT` bytes (refused before encoding).
    TypeError
        for a type ONNX has no TensorProto element type for.
    """
    refusal = pb_size_refusal(array.nbytes, path)
    if refusal is not None:  # before building a message protobuf cannot encode
        raise ValueError(refusal)
    _onnx, numpy_helper = _import_onnx()
    if not array.dtype.isnative:  # TensorProto data is little-endian; onnx wants native input
        array = array.astype(native(array.dtype))
    raw_name = name if isinstance(name, bytes) else None
    try:
        tensor = numpy_helper.from_array(array, name="" if raw_name is not None else name)
    except (ValueError, TypeError, KeyError) as exc:
        raise TypeError(f"cannot store {array.dtype} in an ONNX TensorProto: {exc}") from None
    from google.protobuf.message import EncodeError

    try:
        data: bytes = tensor.SerializeToString()
        if raw_name:
            data += _NAME_TAG + _varint(len(raw_name)) + raw_name
        return data
    except (ValueError, EncodeError) as exc:  # protobuf refuses messages over 2 GiB
        raise ValueError(
            f"cannot write {path!r}: an ONNX TensorProto holds at most 2 GiB and this tensor"
            f" has {array.nbytes} bytes; write it as .npy instead ({exc})"
        ) from None
