"""The one Python table of the Relu types, and the names of numpy dtypes in ONNX terms.

One record per type some Relu version allows (:data:`RELU_TYPES`): its ONNX name
(``"tensor(float)"``), its ``TensorProto`` element type number, its numpy dtype (bfloat16:
``ml_dtypes.bfloat16``), its short name (numpy's, ``"float32"``), its width in bits and, for a
float, its layout. Which Relu version allows which of them is :mod:`onnx_relu.versions`' business.

Also here: the ONNX names of the types numpy (or ml_dtypes) can hold that no Relu version allows
(:data:`REFUSED_ONNX_NAMES`, with the Relu type each converts into exactly), and the one helper
that puts a dtype in native byte order (:func:`native`). Nothing here imports onnx.

Examples
--------
>>> from onnx_relu.dtypes import RELU_TYPE_BY_NAME, onnx_type_name, describe_dtype
>>> t = RELU_TYPE_BY_NAME["bfloat16"]
>>> t.onnx_name, t.elem_type, t.bits, t.mantissa_bits
('tensor(bfloat16)', 16, 16, 7)
>>> import numpy as np
>>> onnx_type_name(np.dtype("uint8"))
'tensor(uint8)'
>>> describe_dtype(np.dtype(">f4"))
'tensor(float) stored byte-swapped (>f4)'
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = [
    "ReluType",
    "RELU_TYPES",
    "RELU_TYPE_BY_ONNX_NAME",
    "RELU_TYPE_BY_NAME",
    "RELU_TYPE_BY_DTYPE",
    "REFUSED_ONNX_NAMES",
    "native",
    "onnx_type_name",
    "dtype_of_onnx_type",
    "describe_dtype",
    "lossless_target",
]


@dataclass(frozen=True)
class ReluType:
    """One tensor type that some Relu version allows.

    Attributes
    ----------
    onnx_name : str
        The ONNX type string, e.g. ``"tensor(float)"``.
    elem_type : int
        Its ``onnx.TensorProto`` element type number (``TensorProto.FLOAT == 1``).
    dtype : numpy.dtype
        The numpy dtype holding it, native byte order; bfloat16 is ``ml_dtypes.bfloat16``.
    name : str
        The short name, numpy's: ``"float32"``, ``"bfloat16"``, ``"int8"``.
    bits : int
        The width of one element.
    mantissa_bits : int or None
        For a binary float format, the number of stored mantissa (fraction) bits; None for an
        integer type.

    Examples
    --------
    >>> from onnx_relu.dtypes import RELU_TYPE_BY_ONNX_NAME
    >>> t = RELU_TYPE_BY_ONNX_NAME["tensor(float16)"]
    >>> t.name, t.is_float, t.bits_dtype
    ('float16', True, dtype('uint16'))
    """

    onnx_name: str
    elem_type: int
    dtype: np.dtype
    name: str
    bits: int
    mantissa_bits: int | None = None

    @property
    def is_float(self) -> bool:
        """True for the four float types."""
        return self.mantissa_bits is not None

    @property
    def bits_dtype(self) -> np.dtype:
        """The unsigned integer dtype of the same width, to view the elements' bit patterns."""
        return np.dtype(f"u{self.bits // 8}")


def _relu_type(
    onnx_name: str, elem_type: int, dtype: object, mantissa_bits: int | None = None
) -> ReluType:
    dt = np.dtype(dtype)  # type: ignore[call-overload]
    return ReluType(onnx_name, elem_type, dt, dt.name, 8 * dt.itemsize, mantissa_bits)


#: The eight types, floats first; the element type numbers are onnx.TensorProto's.
RELU_TYPES: tuple[ReluType, ...] = (
    _relu_type("tensor(float)", 1, np.float32, 23),
    _relu_type("tensor(double)", 11, np.float64, 52),
    _relu_type("tensor(float16)", 10, np.float16, 10),
    _relu_type("tensor(bfloat16)", 16, ml_dtypes.bfloat16, 7),
    _relu_type("tensor(int8)", 3, np.int8),
    _relu_type("tensor(int16)", 5, np.int16),
    _relu_type("tensor(int32)", 6, np.int32),
    _relu_type("tensor(int64)", 7, np.int64),
)

RELU_TYPE_BY_ONNX_NAME: dict[str, ReluType] = {t.onnx_name: t for t in RELU_TYPES}
RELU_TYPE_BY_NAME: dict[str, ReluType] = {t.name: t for t in RELU_TYPES}
RELU_TYPE_BY_DTYPE: dict[np.dtype, ReluType] = {t.dtype: t for t in RELU_TYPES}


# ONNX tensor types numpy (or ml_dtypes) can hold but no Relu version allows: (numpy or ml_dtypes
# attribute, ONNX name, the Relu type it converts into exactly or None). An ml_dtypes type that
# the installed ml_dtypes lacks is left out.
_REFUSED = (
    (np, "bool_", "tensor(bool)", "int8"),
    (np, "uint8", "tensor(uint8)", "int16"),
    (np, "uint16", "tensor(uint16)", "int32"),
    (np, "uint32", "tensor(uint32)", "int64"),
    (np, "uint64", "tensor(uint64)", None),
    (np, "complex64", "tensor(complex64)", None),
    (np, "complex128", "tensor(complex128)", None),
    (ml_dtypes, "float8_e4m3fn", "tensor(float8e4m3fn)", "float16"),
    (ml_dtypes, "float8_e4m3fnuz", "tensor(float8e4m3fnuz)", "float16"),
    (ml_dtypes, "float8_e5m2", "tensor(float8e5m2)", "float16"),
    (ml_dtypes, "float8_e5m2fnuz", "tensor(float8e5m2fnuz)", "float16"),
    (ml_dtypes, "float8_e8m0fnu", "tensor(float8e8m0)", "float32"),
    (ml_dtypes, "float4_e2m1fn", "tensor(float4e2m1)", "float16"),
    (ml_dtypes, "int4", "tensor(int4)", "int8"),
    (ml_dtypes, "uint4", "tensor(uint4)", "int8"),
    (ml_dtypes, "int2", "tensor(int2)", "int8"),
    (ml_dtypes, "uint2", "tensor(uint2)", "int8"),
)

#: numpy dtype -> ONNX name, for the ONNX types that no Relu version allows.
REFUSED_ONNX_NAMES: dict[np.dtype, str] = {
    np.dtype(getattr(module, attr)): onnx_name
    for module, attr, onnx_name, _target in _REFUSED
    if hasattr(module, attr)
}

# ONNX name of a refused type -> the Relu type (short name) it converts into without loss.
_LOSSLESS_TARGET: dict[str, str] = {
    onnx_name: target for _module, _attr, onnx_name, target in _REFUSED if target is not None
}

_ONNX_NAME_OF: dict[np.dtype, str] = {t.dtype: t.onnx_name for t in RELU_TYPES}
_ONNX_NAME_OF.update(REFUSED_ONNX_NAMES)
_DTYPE_OF_ONNX_NAME: dict[str, np.dtype] = {name: dt for dt, name in _ONNX_NAME_OF.items()}


def native(dtype: np.dtype) -> np.dtype:
    """``dtype`` in native byte order (itself when it already is).

    Examples
    --------
    >>> import numpy as np
    >>> native(np.dtype(">i4")) == np.dtype("int32")
    True
    """
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def onnx_type_name(dtype: np.dtype) -> str | None:
    """The ONNX tensor type of a native-order numpy dtype, or None if ONNX has no such type."""
    name = _ONNX_NAME_OF.get(dtype)
    if name is None and dtype.kind in "US":
        return "tensor(string)"
    return name


def dtype_of_onnx_type(onnx_type: str) -> np.dtype | None:
    """The numpy dtype of an ONNX tensor type (bfloat16: ml_dtypes.bfloat16); None if none.

    Examples
    --------
    >>> dtype_of_onnx_type("tensor(int16)") == np.int16
    True
    >>> dtype_of_onnx_type("tensor(string)") is None
    True
    """
    return _DTYPE_OF_ONNX_NAME.get(onnx_type)


def describe_dtype(dtype: np.dtype) -> str:
    """A dtype named for an error message: its ONNX type where it has one, else numpy's name."""
    name = onnx_type_name(native(dtype))
    if name is None:
        return f"numpy dtype {dtype.name!r} ({dtype.str}), which has no ONNX tensor type"
    if not dtype.isnative:
        return f"{name} stored byte-swapped ({dtype.str})"
    return name


def lossless_target(onnx_type: str) -> str | None:
    """The Relu type (short name) a refused ONNX type converts into exactly, or None.

    Examples
    --------
    >>> lossless_target("tensor(uint8)"), lossless_target("tensor(uint64)")
    ('int16', None)
    """
    return _LOSSLESS_TARGET.get(onnx_type)
