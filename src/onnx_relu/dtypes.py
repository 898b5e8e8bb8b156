"""Names of numpy dtypes in ONNX terms (``tensor(float)``), for the types Relu allows and refuses."""

from __future__ import annotations

import ml_dtypes
import numpy as np

#: The eight ONNX tensor types some Relu version allows, with their numpy dtypes.
RELU_TYPE_DTYPES: dict[str, np.dtype] = {
    "tensor(bfloat16)": np.dtype(ml_dtypes.bfloat16),
    "tensor(double)": np.dtype(np.float64),
    "tensor(float)": np.dtype(np.float32),
    "tensor(float16)": np.dtype(np.float16),
    "tensor(int16)": np.dtype(np.int16),
    "tensor(int32)": np.dtype(np.int32),
    "tensor(int64)": np.dtype(np.int64),
    "tensor(int8)": np.dtype(np.int8),
}


def _other_onnx_types() -> dict[np.dtype, str]:
    """ONNX tensor types that numpy (or ml_dtypes) can hold but no Relu version allows."""
    names = {
        np.dtype(np.bool_): "tensor(bool)",
        np.dtype(np.uint8): "tensor(uint8)",
        np.dtype(np.uint16): "tensor(uint16)",
        np.dtype(np.uint32): "tensor(uint32)",
        np.dtype(np.uint64): "tensor(uint64)",
        np.dtype(np.complex64): "tensor(complex64)",
        np.dtype(np.complex128): "tensor(complex128)",
    }
    for attr, onnx_name in (
        ("float8_e4m3fn", "tensor(float8e4m3fn)"),
        ("float8_e4m3fnuz", "tensor(float8e4m3fnuz)"),
        ("float8_e5m2", "tensor(float8e5m2)"),
        ("float8_e5m2fnuz", "tensor(float8e5m2fnuz)"),
        ("float8_e8m0fnu", "tensor(float8e8m0)"),
        ("float4_e2m1fn", "tensor(float4e2m1)"),
        ("int4", "tensor(int4)"),
        ("uint4", "tensor(uint4)"),
        ("int2", "tensor(int2)"),
        ("uint2", "tensor(uint2)"),
    ):
        scalar_type = getattr(ml_dtypes, attr, None)
        if scalar_type is not None:
            names[np.dtype(scalar_type)] = onnx_name
    return names


_ONNX_NAME_OF: dict[np.dtype, str] = {dt: name for name, dt in RELU_TYPE_DTYPES.items()}
_ONNX_NAME_OF.update(_other_onnx_types())


def onnx_type_name(dtype: np.dtype) -> str | None:
    """The ONNX tensor type of a native-order numpy dtype, or None if ONNX has no such type."""
    name = _ONNX_NAME_OF.get(dtype)
    if name is None and dtype.kind in "US":
        return "tensor(string)"
    return name


def describe_dtype(dtype: np.dtype) -> str:
    """A dtype named for an error message: its ONNX type where it has one, else numpy's name."""
    native = dtype if dtype.isnative else dtype.newbyteorder("=")
    name = onnx_type_name(native)
    if name is None:
        return f"numpy dtype {dtype.name!r} ({dtype.str}), which has no ONNX tensor type"
    if not dtype.isnative:
        return f"{name} stored byte-swapped ({dtype.str})"
    return name
