"""THE Relu oracle of the tests, independent of onnx_relu.

The rule, from the specification and the project's semantics: an element comes back unchanged,
bit for bit, where it is a NaN (any sign, any payload) or greater than zero; every other element
gives +0 (all bits clear: -0.0 becomes +0.0, integer minimums become 0).

The kernel decides on each element's bit pattern read as a signed integer. This oracle never
imports onnx_relu and never uses that trick; it has two forms, which share the rule, the type
table (``tests.support.dtypes``) and the comparison on bit patterns:

- ``expected_relu_elementwise`` / ``assert_relu_exact``: plain Python, element by element; each
  bit pattern is decoded with ``struct`` into a Python number, then compared numerically
  (``isnan(v) or v > 0``). The most independent form, for small arrays (up to some 10**5
  elements).
- ``expected_relu`` / ``assert_relu_vectorised``: the same rule vectorised with numpy, by IEEE
  field decoding (a NaN has an all-ones exponent and a non-zero mantissa; a positive number
  has a clear sign bit and is not +0), for large sweeps (threads, sanitizer, concurrency,
  fuzzing, files).

``tests/core/test_oracle.py`` checks that both forms agree on every 8- and 16-bit pattern.
Results are compared as unsigned integers of the element's width, so the sign of zero and every
NaN bit count.

Examples
--------
>>> x = np.array([-0.0, 1.5, -np.inf, np.nan, -7], np.float32)
>>> [hex(b) for b in as_bits(expected_relu(x))]
['0x0', '0x3fc00000', '0x0', '0x7fc00000', '0x0']
>>> same_bits(expected_relu_elementwise(x), expected_relu(x))
True
"""

from __future__ import annotations

import math
import struct

import numpy as np

from tests.support.dtypes import ReluType, bits_dtype, relu_type


def native(a: np.ndarray) -> np.ndarray:
    """``a`` in native byte order (itself when it already is)."""
    if a.dtype.byteorder in "=|":
        return a
    return a.astype(a.dtype.newbyteorder("="))


def as_bits(a: object) -> np.ndarray:
    """The elements of ``a`` (any byte order) as unsigned integers of the same width: a view of
    ``a`` where it is in native byte order, with its shape and strides."""
    a = native(np.asarray(a))
    return a.view(bits_dtype(a.dtype))


def same_bits(a: object, b: object) -> bool:
    """Same dtype, shape and bit patterns (the sign of zero and NaN payloads included)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return np.array_equal(as_bits(a), as_bits(b))


# --- element by element, numeric comparison --------------------------------------------------

# struct formats that read a float element's bit pattern as a Python float.
_STRUCT_FLOAT = {
    "float16": ("<H", "<e", 0),
    "float32": ("<I", "<f", 0),
    "float64": ("<Q", "<d", 0),
    "bfloat16": ("<I", "<f", 16),
}  # bfloat16: the top half of a float32


def decode(rtype: ReluType, bits: int) -> int | float:
    """The Python number an element's bit pattern (an unsigned int) stands for."""
    if rtype.is_float:
        int_format, float_format, shift = _STRUCT_FLOAT[rtype.name]
        return struct.unpack(float_format, struct.pack(int_format, bits << shift))[0]
    return bits - (1 << rtype.width) if bits >> (rtype.width - 1) else bits  # two's complement


def relu_element(rtype: ReluType, bits: int) -> int:
    """Relu of one element, as an unsigned bit pattern."""
    value = decode(rtype, bits)
    if isinstance(value, float) and math.isnan(value):
        return bits  # NaN: every bit returned unchanged
    return bits if value > 0 else 0  # +0 (pattern 0) for everything else


def expected_relu_elementwise(x: object) -> np.ndarray:
    """Relu of ``x`` (an allowed type, any byte order or layout), one element at a time in
    Python: a fresh array of ``x``'s shape and native dtype."""
    x = native(np.asarray(x))
    rtype = relu_type(x.dtype)
    flat = np.ascontiguousarray(x).reshape(-1).view(rtype.bits_dtype)
    out = [relu_element(rtype, int(b)) for b in flat.tolist()]
    return np.array(out, dtype=rtype.bits_dtype).view(x.dtype).reshape(x.shape)


# --- vectorised, IEEE field decoding ------------------------------------------------------


def expected_relu(x: object) -> np.ndarray:
    """Relu of ``x`` (an allowed type, any byte order or layout), vectorised with numpy: a fresh
    array of ``x``'s shape and native dtype."""
    x = native(np.asarray(x))
    rtype = relu_type(x.dtype)
    u = x.view(rtype.bits_dtype)
    if rtype.is_float:
        word = rtype.bits_dtype.type
        exponent, mantissa = word(rtype.exponent_mask), word(rtype.mantissa_mask)
        is_nan = ((u & exponent) == exponent) & ((u & mantissa) != 0)
        is_positive = ((u & word(rtype.sign_mask)) == 0) & (u != 0)
        keep = is_nan | is_positive
    else:
        keep = x > 0
    return np.where(keep, u, rtype.bits_dtype.type(0)).astype(rtype.bits_dtype).view(x.dtype)


# --- comparing a result with the oracle ---------------------------------------------------


def mismatch_report(x: object, got: object, want: object, limit: int = 5) -> str:
    """Where ``got`` differs from ``want`` as bit patterns, with the input's bits."""
    xb, gb, wb = (as_bits(a).reshape(-1) for a in (x, got, want))
    where = np.flatnonzero(gb != wb)
    shown = ", ".join(
        f"[{i}] x=0x{int(xb[i]):x} got=0x{int(gb[i]):x} want=0x{int(wb[i]):x}"
        for i in where[:limit]
    )
    return f"{where.size} of {gb.size} elements differ: {shown}"


def _assert_relu(result: object, source: object, want: np.ndarray, what: str) -> None:
    result, source = np.asarray(result), np.asarray(source)
    prefix = f"{what}: " if what else ""
    assert result.dtype == source.dtype, f"{prefix}dtype {result.dtype} != {source.dtype}"
    assert result.shape == source.shape, f"{prefix}shape {result.shape} != {source.shape}"
    if not np.array_equal(as_bits(result), as_bits(want)):
        raise AssertionError(prefix + mismatch_report(source, result, want))


def assert_relu_exact(result: object, source: object, what: str = "") -> None:
    """``result`` is Relu(``source``) bit for bit, with ``source``'s dtype and shape; judged
    element by element in plain Python (for small arrays)."""
    _assert_relu(result, source, expected_relu_elementwise(source), what)


def assert_relu_vectorised(result: object, source: object, what: str = "") -> None:
    """As ``assert_relu_exact``, judged by the vectorised oracle (for large arrays)."""
    _assert_relu(result, source, expected_relu(source), what)
