"""Test data shared by the tensor-file, command-line and Dask tests: every Relu type with the
values that tell implementations apart (NaN payloads, signalling NaNs, -0.0, infinities,
subnormals, integer extremes), and an independent bit-level reference Relu to compare with."""

from __future__ import annotations

import ml_dtypes
import numpy as np

#: The eight types some Relu version allows, by ONNX name.
RELU_DTYPES = {
    "float16": np.dtype(np.float16),
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
}

# Exponent field of each float type; with the sign bit it gives infinities and NaNs.
_EXPONENT_MASK = {
    np.dtype(np.float16): 0x7C00,
    np.dtype(ml_dtypes.bfloat16): 0x7F80,
    np.dtype(np.float32): 0x7F800000,
    np.dtype(np.float64): 0x7FF0000000000000,
}


def bits_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer type of the same size, to look at values as bit patterns."""
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def is_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype).newbyteorder("=") in _EXPONENT_MASK


def special_values(dtype: np.dtype, random_count: int = 64, seed: int = 0) -> np.ndarray:
    """A 1-D array of ``dtype`` with every kind of special value and random bit patterns."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    unsigned = bits_dtype(dtype)
    nbits = 8 * dtype.itemsize
    if is_float(dtype):
        sign = 1 << (nbits - 1)
        exponent = _EXPONENT_MASK[dtype]
        quiet = (exponent >> 1) & ~exponent  # the top mantissa bit
        ones = (1 << nbits) - 1
        patterns = [
            0, sign,                                 # +0.0, -0.0
            exponent, sign | exponent,               # +inf, -inf
            exponent | 1, sign | exponent | 1,       # signalling NaNs, payload 1
            exponent | quiet | 5, ones,              # quiet NaN payload 5, -NaN all ones
            1, sign | 1,                             # smallest subnormals
            exponent - 1, sign | (exponent - 1),     # largest finite values
        ]
        fixed = np.array(patterns, dtype=unsigned).view(dtype)
    else:
        info = np.iinfo(dtype)
        fixed = np.array([info.min, info.min + 1, -1, 0, 1, info.max], dtype=dtype)
    noise = rng.integers(0, np.iinfo(unsigned).max, size=random_count, dtype=unsigned,
                         endpoint=True).view(dtype)
    return np.concatenate([fixed, noise])


def reference_relu(x: np.ndarray) -> np.ndarray:
    """Relu by its definition, on bit patterns: keep x where x > 0 or x is NaN, else +0."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):  # comparing signalling NaNs raises the invalid flag
        keep = x > 0
        if is_float(x.dtype):
            keep |= np.isnan(x)
    unsigned = bits_dtype(x.dtype)
    native = x.astype(x.dtype.newbyteorder("="))
    return np.where(keep, native.view(unsigned), unsigned.type(0)).view(native.dtype)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes (NaN payloads and the sign of zero included)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return np.array_equal(a.view(bits_dtype(a.dtype)), b.view(bits_dtype(b.dtype)))
