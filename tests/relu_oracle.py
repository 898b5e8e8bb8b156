"""An independent oracle for ONNX Relu, compared on bit patterns.

The kernel decides on each element's bit pattern read as a signed integer. This oracle decides
with ordinary numeric comparisons instead (``isnan(x) or x > 0`` for floats, ``x > 0`` for
integers), so a mistake in the kernel's bit trick cannot hide in a shared formula. Results are
compared as unsigned integers of the element's width: the sign of zero and every NaN bit count.

Used by the test files and by ``tests/sanitizer/run_kernel_cases.py`` (which puts this folder on
``sys.path`` itself).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

#: Every type some Relu version allows, in a fixed order.
RELU_DTYPES: tuple[np.dtype, ...] = tuple(
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

_UNSIGNED_OF_SIZE = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
                     8: np.dtype(np.uint64)}

# (sign bit, exponent mask, quiet bit) of each float format, to build special values.
_FLOAT_LAYOUT = {
    np.dtype(np.float16): (0x8000, 0x7C00, 0x0200),
    np.dtype(ml_dtypes.bfloat16): (0x8000, 0x7F80, 0x0040),
    np.dtype(np.float32): (0x8000_0000, 0x7F80_0000, 0x0040_0000),
    np.dtype(np.float64): (0x8000_0000_0000_0000, 0x7FF0_0000_0000_0000, 0x0008_0000_0000_0000),
}


def bits_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer type of the same width, to compare values bit for bit."""
    return _UNSIGNED_OF_SIZE[np.dtype(dtype).itemsize]


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
