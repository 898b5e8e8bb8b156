"""Independent Relu oracles, compared on bit patterns.

The kernel decides on each element's bit pattern read as a signed integer. These oracles decide
with ordinary numeric comparisons instead, so a mistake in the kernel's bit trick cannot hide in a
shared formula:

- ``relu_bits`` / ``expected`` / ``assert_relu_exact``: plain Python, element by element (each bit
  pattern decoded with struct into a Python number); the most independent, for small arrays.
- ``expected_relu`` / ``assert_relu_of``: the same rule vectorised with numpy (``isnan(x) or x > 0``
  for floats, ``x > 0`` for integers), for large sweeps (sanitizer, concurrency, fuzzing).

Results are compared as unsigned integers of the element's width: the sign of zero and every NaN
bit count. ``tests/sanitizer/run_kernel_cases.py`` puts this folder on ``sys.path`` itself.
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


# --- vectorised oracle -----------------------------------------------------------------------

#: Every type some Relu version allows, as dtypes, in a fixed order.
ALL_RELU_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(t)
    for t in (
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.float16,
        np.float32,
        np.float64,
        ml_dtypes.bfloat16,
    )
)

# (sign bit, exponent mask, quiet bit) of each float format, to build special values.
_FLOAT_LAYOUT = {
    np.dtype(np.float16): (0x8000, 0x7C00, 0x0200),
    np.dtype(ml_dtypes.bfloat16): (0x8000, 0x7F80, 0x0040),
    np.dtype(np.float32): (0x8000_0000, 0x7F80_0000, 0x0040_0000),
    np.dtype(np.float64): (0x8000_0000_0000_0000, 0x7FF0_0000_0000_0000, 0x0008_0000_0000_0000),
}


def bits_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer type of the same width, to compare values bit for bit."""
    return uint_dtype(np.dtype(dtype))


def as_bits(a: np.ndarray) -> np.ndarray:
    """The array's elements as unsigned integers of the same width (a view when possible)."""
    a = np.asarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a.view(bits_dtype(a.dtype))


def is_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype) in _FLOAT_LAYOUT


def expected_relu(x: np.ndarray) -> np.ndarray:
    """Relu of ``x`` (native byte order) by numeric comparison: a fresh array of ``x``'s dtype."""
    x = np.asarray(x)
    if not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))
    dtype = x.dtype
    if is_float(dtype):
        # bfloat16 widens exactly to float32; the comparison needs no bfloat16 arithmetic.
        numeric = x.astype(np.float32) if dtype == np.dtype(ml_dtypes.bfloat16) else x
        with np.errstate(invalid="ignore"):
            keep = np.isnan(numeric) | (numeric > 0)
        source = as_bits(x)
        return np.where(keep, source, source.dtype.type(0)).astype(source.dtype).view(dtype)
    return np.where(x > 0, x, dtype.type(0)).astype(dtype)


def special_values(dtype: np.dtype) -> np.ndarray:
    """Edge cases of a type: zeros of both signs, infinities, NaNs of every kind, extremes."""
    dtype = np.dtype(dtype)
    if not is_float(dtype):
        info = np.iinfo(dtype)
        values = [0, 1, -1, 2, -2, info.min, info.min + 1, info.max, info.max - 1]
        return np.array(values, dtype=dtype)
    sign, exponent, quiet = _FLOAT_LAYOUT[dtype]
    patterns = [
        0,                              # +0
        sign,                           # -0
        exponent,                       # +inf
        sign | exponent,                # -inf
        exponent | quiet,               # +qNaN
        sign | exponent | quiet,        # -qNaN
        exponent | 1,                   # +sNaN, payload 1
        sign | exponent | 1,            # -sNaN, payload 1 (the pattern just above -inf)
        exponent | quiet | 0x15,        # +qNaN with a payload
        sign | exponent | (quiet - 1),  # -sNaN, largest payload
        1,                              # smallest +subnormal
        sign | 1,                       # smallest -subnormal
        exponent - 1,                   # largest finite
        sign | (exponent - 1),          # most negative finite (the pattern just below -inf)
        exponent & (exponent >> 1),     # a mid-range positive (close to 1.0)
        sign | (exponent & (exponent >> 1)),
    ]
    return np.array(patterns, dtype=bits_dtype(dtype)).view(dtype)


def mixed_values(dtype: np.dtype, n: int, seed: int = 0) -> np.ndarray:
    """``n`` values of ``dtype``: the special values first, then uniformly random bit patterns."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    udtype = bits_dtype(dtype)
    random_bits = rng.integers(0, np.iinfo(udtype).max, size=n, dtype=udtype, endpoint=True)
    special = as_bits(special_values(dtype))
    k = min(n, special.size)
    random_bits[:k] = special[:k]
    return random_bits.view(dtype)


def mismatch_report(x: np.ndarray, got: np.ndarray, want: np.ndarray, limit: int = 5) -> str:
    """A short description of where ``got`` differs from ``want`` (as bit patterns)."""
    gb, wb, xb = as_bits(got).ravel(), as_bits(want).ravel(), as_bits(x).ravel()
    where = np.flatnonzero(gb != wb)
    shown = ", ".join(
        f"[{i}] x=0x{int(xb[i]):x} got=0x{int(gb[i]):x} want=0x{int(wb[i]):x}" for i in where[:limit]
    )
    return f"{where.size} of {gb.size} elements differ: {shown}"


def assert_relu_of(x: np.ndarray, got: np.ndarray) -> None:
    """Assert that ``got`` is Relu of ``x``: same dtype and shape, every bit as the oracle says."""
    want = expected_relu(np.asarray(x))
    got = np.asarray(got)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    assert got.dtype == x.dtype, f"dtype {got.dtype} != {x.dtype}"
    if not np.array_equal(as_bits(got), as_bits(want)):
        raise AssertionError(mismatch_report(x, got, want))
