"""THE test values of each Relu type: the special values, and random bit patterns mixed with them.

The special values are those that tell Relu implementations apart: zeros of both signs,
infinities, NaNs of every kind (quiet and signalling, both signs, small, large and all-ones
payloads), subnormals, the smallest normal, 1.0 and 1.5, the largest finite values; for the
integers 0, +-1, +-2 and the extremes with their neighbours. The most telling ones come first, so
that a short prefix (``mixed_values(dtype, 5)``) still holds both zeros, both infinities and a
NaN.

Examples
--------
>>> special_values(np.int8).tolist()
[0, 1, -1, 127, -128, -127, 2, -2, 126]
>>> [hex(b) for b in as_bits(special_values(np.float16))[:6]]
['0x0', '0x8000', '0x7c00', '0xfc00', '0x7e00', '0xfe00']
>>> mixed_values(np.float32, 1000, seed=3).shape
(1000,)
"""

from __future__ import annotations

import numpy as np

from tests.support.dtypes import ReluType, relu_type
from tests.support.oracle import as_bits


def _float_patterns(t: ReluType) -> list[int]:
    exponent, mantissa, quiet = t.exponent_mask, t.mantissa_mask, t.quiet_bit
    positives = [
        0,                         # +0
        exponent,                  # +inf
        exponent | quiet,          # quiet NaN (numpy's nan)
        exponent | 1,              # signalling NaN, payload 1
        t.one,                     # 1.0
        1,                         # smallest subnormal
        exponent - 1,              # largest finite
        exponent | mantissa,       # quiet NaN, all-ones payload
        exponent | quiet | 5,      # quiet NaNs with payloads
        exponent | quiet | 1,
        exponent | quiet | 0x15,
        exponent | (quiet >> 1),   # signalling NaN, top payload bit
        exponent | (quiet - 1),    # signalling NaN, largest payload (just above +-inf)
        2,                         # second subnormal
        mantissa,                  # largest subnormal
        mantissa + 1,              # smallest normal
        t.one | quiet,             # 1.5
    ]  # fmt: skip
    patterns = []
    for p in positives:
        patterns += [p, t.sign_mask | p]  # and the same with the sign bit set
    return patterns


def special_values(dtype: object) -> np.ndarray:
    """The special values of an allowed type (native byte order), most telling first."""
    t = relu_type(dtype)
    if t.is_float:
        return np.array(_float_patterns(t), dtype=t.bits_dtype).view(t.dtype)
    info = np.iinfo(t.dtype)
    values = [0, 1, -1, info.max, info.min, info.min + 1, 2, -2, info.max - 1]
    return np.array(values, dtype=t.dtype)


def mixed_values(dtype: object, n: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """``n`` values of an allowed type: the special values first (as many as fit), then
    uniformly random bit patterns (every sign, NaN payload, infinity and subnormal occurs).

    ``seed``: an int, or a ``numpy.random.Generator`` to draw from (it advances).
    """
    t = relu_type(dtype)
    rng = np.random.default_rng(seed)
    word = t.bits_dtype
    values = rng.integers(0, np.iinfo(word).max, size=n, dtype=word, endpoint=True)
    special = as_bits(special_values(t.dtype))
    k = min(n, special.size)
    values[:k] = special[:k]
    return values.view(t.dtype)
