"""An independent Relu oracle: plain Python on decoded values, element by element.

It never calls onnx_relu or numpy's maximum: each element's bit pattern is decoded with struct
into a Python number, classified (NaN, positive, anything else) and mapped to the bit pattern the
documented semantics require.
"""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

#: The eight types, as (readable id, dtype); used to parametrize tests.
RELU_DTYPES = [
    ("float16", np.dtype(np.float16)),
    ("float32", np.dtype(np.float32)),
    ("float64", np.dtype(np.float64)),
    ("bfloat16", BFLOAT16),
    ("int8", np.dtype(np.int8)),
    ("int16", np.dtype(np.int16)),
    ("int32", np.dtype(np.int32)),
    ("int64", np.dtype(np.int64)),
]
FLOAT_DTYPES = [pair for pair in RELU_DTYPES if pair[0].startswith(("float", "bfloat"))]


def uint_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer dtype of the same width, to look at bit patterns."""
    return np.dtype(f"u{dtype.itemsize}")


def decode(dtype: np.dtype, bits: int):
    """The Python number an element's bit pattern (an unsigned int) stands for."""
    name = dtype.name
    if name == "float16":
        return struct.unpack("<e", bits.to_bytes(2, "little"))[0]
    if name == "bfloat16":
        return struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]
    if name == "float32":
        return struct.unpack("<f", bits.to_bytes(4, "little"))[0]
    if name == "float64":
        return struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    width = 8 * dtype.itemsize
    return bits - (1 << width) if bits >> (width - 1) else bits


def relu_bits(dtype: np.dtype, bits: int) -> int:
    """The documented result for one element, as an unsigned bit pattern."""
    value = decode(dtype, bits)
    if isinstance(value, float) and math.isnan(value):
        return bits  # NaN: every bit returned unchanged
    return bits if value > 0 else 0  # +0 (pattern 0) for everything else


def expected(array: np.ndarray) -> np.ndarray:
    """The oracle's result for a whole array, same shape, as unsigned bit patterns."""
    flat = np.ascontiguousarray(array).reshape(-1).view(uint_dtype(array.dtype))
    out = [relu_bits(array.dtype, int(b)) for b in flat.tolist()]
    return np.array(out, dtype=uint_dtype(array.dtype)).reshape(array.shape)


def assert_relu_exact(result, source: np.ndarray) -> None:
    """``result`` is relu(source) bit for bit, with source's dtype and shape."""
    result = np.asarray(result)
    assert result.dtype == source.dtype, (result.dtype, source.dtype)
    assert result.shape == source.shape, (result.shape, source.shape)
    got = np.ascontiguousarray(result).view(uint_dtype(source.dtype))
    want = expected(source)
    mismatch = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert mismatch.size == 0, (
        f"{mismatch.size} elements differ; first at flat index {mismatch[0]}: "
        f"input bits {hex(int(np.ascontiguousarray(source).reshape(-1).view(uint_dtype(source.dtype))[mismatch[0]]))}, "
        f"got {hex(int(got.reshape(-1)[mismatch[0]]))}, want {hex(int(want.reshape(-1)[mismatch[0]]))}"
    )


def special_bits(dtype: np.dtype) -> list[int]:
    """Bit patterns chosen on purpose: zeros, infinities, NaNs (quiet, signalling, payloads, both
    signs), subnormals, extremes; for integers the extremes and their neighbours."""
    width = 8 * dtype.itemsize
    if dtype.kind == "i":
        top = 1 << (width - 1)
        values = [0, 1, -1, top - 1, -top, -top + 1, 2, -2]
        return [v & ((1 << width) - 1) for v in values]
    exp_bits, man_bits = {
        "float16": (5, 10),
        "bfloat16": (8, 7),
        "float32": (8, 23),
        "float64": (11, 52),
    }[dtype.name]
    sign = 1 << (width - 1)
    inf = ((1 << exp_bits) - 1) << man_bits
    quiet = 1 << (man_bits - 1)
    top_man = (1 << man_bits) - 1
    one = ((1 << (exp_bits - 1)) - 1) << man_bits
    patterns = [
        0, sign,                              # +0, -0
        inf, sign | inf,                      # +inf, -inf
        inf | quiet, sign | inf | quiet,      # quiet NaNs
        inf | 1, sign | inf | 1,              # signalling NaNs, payload 1
        inf | top_man, sign | inf | top_man,  # all-ones payload
        inf | quiet | 0x5, sign | inf | (top_man >> 1),
        1, sign | 1,                          # smallest subnormals
        top_man, sign | top_man,              # largest subnormals
        1 << man_bits, sign | (1 << man_bits),  # smallest normals
        inf - 1, sign | (inf - 1),            # largest finite
        one, sign | one,                      # +-1
    ]
    return patterns
