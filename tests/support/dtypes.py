"""THE type table of the tests: the eight Relu types, the Relu versions, and the types Relu refuses.

Written out here from the ONNX Relu specification and the ONNX and IEEE formats,
independently of onnx_relu's own type table (``onnx_relu.dtypes`` / ``onnx_relu.versions``) on
purpose: the tests check the package's table against these facts, so a mistake in one cannot
hide in a formula both share. Nothing here imports onnx_relu (nor onnx: the TensorProto element
type numbers are written as numbers, and ``tests/onnx`` checks them against onnx).

Examples
--------
>>> relu_type("bfloat16").onnx_name
'tensor(bfloat16)'
>>> relu_type(np.float32) is relu_type("tensor(float)")
True
>>> [t.name for t in allowed_at(13)]
['float16', 'float32', 'float64', 'bfloat16']
>>> hex(relu_type("float16").quiet_bit)
'0x200'
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

#: The versions of Relu (the opset each appeared in), from the specification.
RELU_VERSIONS: tuple[int, ...] = (1, 6, 13, 14)
LATEST_VERSION = RELU_VERSIONS[-1]


@dataclass(frozen=True)
class ReluType:
    """One type some Relu version allows.

    ``since`` is the first Relu version that allows it; ``exponent_bits`` and ``mantissa_bits``
    give the IEEE-style layout of a float type (sign bit, exponent, mantissa; ``None`` for the
    integers).
    """

    name: str  # numpy / ml_dtypes name, used as test id
    dtype: np.dtype
    onnx_name: str  # as ONNX writes it in a type constraint
    elem_type: int  # TensorProto element type number
    since: int
    exponent_bits: int | None = None
    mantissa_bits: int | None = None

    @property
    def is_float(self) -> bool:
        return self.exponent_bits is not None

    @property
    def width(self) -> int:
        """Bits per element."""
        return 8 * self.dtype.itemsize

    @property
    def bits_dtype(self) -> np.dtype:
        """The unsigned integer type of the same width, to compare elements bit for bit."""
        return np.dtype(f"u{self.dtype.itemsize}")

    # The float layout as masks of an element's bit pattern (floats only).

    @property
    def sign_mask(self) -> int:
        return 1 << (self.width - 1)

    @property
    def exponent_mask(self) -> int:
        return ((1 << self.exponent_bits) - 1) << self.mantissa_bits

    @property
    def mantissa_mask(self) -> int:
        return (1 << self.mantissa_bits) - 1

    @property
    def quiet_bit(self) -> int:
        """The top mantissa bit: set in a quiet NaN, clear in a signalling one."""
        return 1 << (self.mantissa_bits - 1)

    @property
    def one(self) -> int:
        """The bit pattern of 1.0 (a biased exponent of 0, mantissa 0)."""
        return ((1 << (self.exponent_bits - 1)) - 1) << self.mantissa_bits

    def is_nan(self, bits: int) -> bool:
        """Whether an element's bit pattern is a NaN: exponent all ones, mantissa not zero."""
        return (
            self.is_float
            and (bits & self.exponent_mask) == self.exponent_mask
            and (bits & self.mantissa_mask) != 0
        )

    def is_signalling_nan(self, bits: int) -> bool:
        return self.is_nan(bits) and not bits & self.quiet_bit

    def allowed_by(self, version: int) -> bool:
        """Whether Relu-``version`` allows this type."""
        return version >= self.since


#: The eight types, floats first, in a fixed order (used to parametrize tests).
RELU_TYPES: tuple[ReluType, ...] = (
    ReluType("float16", np.dtype(np.float16), "tensor(float16)", 10, 1, 5, 10),
    ReluType("float32", np.dtype(np.float32), "tensor(float)", 1, 1, 8, 23),
    ReluType("float64", np.dtype(np.float64), "tensor(double)", 11, 1, 11, 52),
    ReluType("bfloat16", np.dtype(ml_dtypes.bfloat16), "tensor(bfloat16)", 16, 13, 8, 7),
    ReluType("int8", np.dtype(np.int8), "tensor(int8)", 3, 14),
    ReluType("int16", np.dtype(np.int16), "tensor(int16)", 5, 14),
    ReluType("int32", np.dtype(np.int32), "tensor(int32)", 6, 14),
    ReluType("int64", np.dtype(np.int64), "tensor(int64)", 7, 14),
)
RELU_DTYPES: tuple[np.dtype, ...] = tuple(t.dtype for t in RELU_TYPES)
FLOAT_TYPES: tuple[ReluType, ...] = tuple(t for t in RELU_TYPES if t.is_float)
INT_TYPES: tuple[ReluType, ...] = tuple(t for t in RELU_TYPES if not t.is_float)
TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in RELU_TYPES)
ONNX_NAMES: tuple[str, ...] = tuple(t.onnx_name for t in RELU_TYPES)

_BY_KEY: dict[object, ReluType] = {}
for _type in RELU_TYPES:
    _BY_KEY.update({_type.name: _type, _type.onnx_name: _type, _type.dtype: _type})


def relu_type(key: object) -> ReluType:
    """The table's record of a type, by numpy name, ONNX name or dtype (either byte order).

    Raises ``KeyError`` for a type no Relu version allows.
    """
    if isinstance(key, str) and key in _BY_KEY:
        return _BY_KEY[key]
    dtype = np.dtype(key)
    return _BY_KEY[dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype]


def bits_dtype(dtype: object) -> np.dtype:
    """The unsigned integer type as wide as ``dtype``, to look at its elements' bit patterns."""
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def relu_version_at(opset: int) -> int:
    """The Relu version in force at an ai.onnx ``opset``: the latest one not after it."""
    return max(v for v in RELU_VERSIONS if v <= opset)


def allowed_at(opset: int | None) -> tuple[ReluType, ...]:
    """The types the Relu version in force at ``opset`` allows (``None``: the latest version)."""
    version = LATEST_VERSION if opset is None else relu_version_at(opset)
    return tuple(t for t in RELU_TYPES if t.allowed_by(version))


@dataclass(frozen=True)
class RefusedType:
    """A numpy or ml_dtypes type that no Relu version allows.

    ``onnx_name``: its ONNX tensor type, or None where it has none; ``hint``: the lossless
    conversion onnx-relu's message suggests, or None where there is none.
    """

    label: str  # test id
    dtype: np.dtype
    onnx_name: str | None
    hint: str | None = None

    @property
    def message_name(self) -> str:
        """How onnx-relu's refusal names the type."""
        return self.onnx_name or f"numpy dtype '{self.dtype.name}'"

    @property
    def raw_fillable(self) -> bool:
        """Whether any bytes make a valid array of it (not Python objects, not text)."""
        return not self.dtype.hasobject and self.dtype.kind not in "US"


def _refused_types() -> tuple[RefusedType, ...]:
    numpy_types = [
        ("bool", np.bool_, "tensor(bool)", "x.astype(numpy.int8)"),
        ("uint8", np.uint8, "tensor(uint8)", "x.astype(numpy.int16)"),
        ("uint16", np.uint16, "tensor(uint16)", "x.astype(numpy.int32)"),
        ("uint32", np.uint32, "tensor(uint32)", "x.astype(numpy.int64)"),
        ("uint64", np.uint64, "tensor(uint64)", None),
        ("complex64", np.complex64, "tensor(complex64)", None),
        ("complex128", np.complex128, "tensor(complex128)", None),
        ("longdouble", np.longdouble, None, None),
        ("clongdouble", np.clongdouble, None, None),
        ("object", np.object_, None, None),
        ("str", "U3", "tensor(string)", None),
        ("bytes", "S3", "tensor(string)", None),
        ("datetime64[s]", "datetime64[s]", None, None),
        ("datetime64[ms]", "datetime64[ms]", None, None),
        ("timedelta64[s]", "timedelta64[s]", None, None),
        ("timedelta64[ns]", "timedelta64[ns]", None, None),
        ("timedelta64[D]", "timedelta64[D]", None, None),
        ("void3", "V3", None, None),
        ("void4", "V4", None, None),
        ("structured-f4", [("a", "f4")], None, None),
        ("structured-i4-f4", [("a", "<i4"), ("b", "<f4")], None, None),
        ("structured-i2-f4", [("a", "<i2"), ("b", "<f4")], None, None),
    ]
    if np.dtype(np.longdouble) == np.dtype(np.float64):  # platforms where long double is double
        numpy_types = [t for t in numpy_types if t[0] not in ("longdouble", "clongdouble")]
    ml_types = [
        ("float8_e4m3fn", "tensor(float8e4m3fn)", "x.astype(numpy.float16)"),
        ("float8_e4m3fnuz", "tensor(float8e4m3fnuz)", "x.astype(numpy.float16)"),
        ("float8_e5m2", "tensor(float8e5m2)", "x.astype(numpy.float16)"),
        ("float8_e5m2fnuz", "tensor(float8e5m2fnuz)", "x.astype(numpy.float16)"),
        ("float8_e8m0fnu", "tensor(float8e8m0)", "x.astype(numpy.float32)"),
        ("float4_e2m1fn", "tensor(float4e2m1)", "x.astype(numpy.float16)"),
        ("int4", "tensor(int4)", "x.astype(numpy.int8)"),
        ("uint4", "tensor(uint4)", "x.astype(numpy.int8)"),
        ("int2", "tensor(int2)", "x.astype(numpy.int8)"),
        ("uint2", "tensor(uint2)", "x.astype(numpy.int8)"),
        ("float8_e3m4", None, None),
        ("float8_e4m3", None, None),
        ("float8_e4m3b11fnuz", None, None),
        ("float6_e2m3fn", None, None),
        ("float6_e3m2fn", None, None),
        ("int1", None, None),
        ("uint1", None, None),
    ]
    refused = [RefusedType(label, np.dtype(d), onnx, hint) for label, d, onnx, hint in numpy_types]
    refused += [
        RefusedType(f"ml_dtypes.{attr}", np.dtype(getattr(ml_dtypes, attr)), onnx, hint)
        for attr, onnx, hint in ml_types
        if hasattr(ml_dtypes, attr)  # older ml_dtypes lack the newest types
    ]
    return tuple(refused)


#: Every numpy and ml_dtypes type the tests offer Relu to be refused.
REFUSED_TYPES: tuple[RefusedType, ...] = _refused_types()
