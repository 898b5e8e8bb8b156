"""The tests' own oracle, values and type table (tests/support) against facts written out by hand,
and the oracle's two forms against each other on every 8- and 16-bit pattern.

The oracle decides every other test; these tests make sure it is not wrong in a way that a kernel
with the same mistake would pass."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

from tests.support.dtypes import RELU_TYPES, TYPE_NAMES, allowed_at, relu_type, relu_version_at
from tests.support.oracle import (
    as_bits,
    assert_relu_exact,
    assert_relu_vectorised,
    expected_relu,
    expected_relu_elementwise,
    same_bits,
)
from tests.support.values import mixed_values, special_values

# Input bit pattern -> Relu's bit pattern, written out by hand from the IEEE formats.
HAND_WRITTEN = {
    "float16": [
        (0x0000, 0x0000),
        (0x8000, 0x0000),
        (0x3C00, 0x3C00),
        (0xBC00, 0x0000),
        (0x7C00, 0x7C00),
        (0xFC00, 0x0000),
        (0x7E00, 0x7E00),
        (0xFE05, 0xFE05),
        (0x7C01, 0x7C01),
        (0xFC01, 0xFC01),
        (0x0001, 0x0001),
        (0x8001, 0x0000),
        (0x7BFF, 0x7BFF),
        (0xFBFF, 0x0000),
    ],
    "bfloat16": [
        (0x0000, 0x0000),
        (0x8000, 0x0000),
        (0x3F80, 0x3F80),
        (0xBF80, 0x0000),
        (0x7F80, 0x7F80),
        (0xFF80, 0x0000),
        (0x7FC0, 0x7FC0),
        (0xFF81, 0xFF81),
        (0x0001, 0x0001),
        (0x8001, 0x0000),
        (0x7F7F, 0x7F7F),
        (0xFF7F, 0x0000),
    ],
    "float32": [
        (0x00000000, 0),
        (0x80000000, 0),
        (0x3F800000, 0x3F800000),
        (0xBF800000, 0),
        (0x7F800000, 0x7F800000),
        (0xFF800000, 0),
        (0x7FC00000, 0x7FC00000),
        (0xFFC00015, 0xFFC00015),
        (0x7F800001, 0x7F800001),
        (0xFF800001, 0xFF800001),
        (0x00000001, 0x00000001),
        (0x80000001, 0),
        (0x7F7FFFFF, 0x7F7FFFFF),
    ],
    "float64": [
        (0, 0),
        (1 << 63, 0),
        (0x3FF0000000000000, 0x3FF0000000000000),
        (0xBFF0000000000000, 0),
        (0x7FF0000000000000, 0x7FF0000000000000),
        (0xFFF0000000000000, 0),
        (0xFFF8000000000000, 0xFFF8000000000000),
        (0x7FF0000000000001, 0x7FF0000000000001),
        (0x8000000000000001, 0),
    ],
    "int8": [(0x00, 0), (0x01, 1), (0xFF, 0), (0x7F, 0x7F), (0x80, 0), (0x81, 0)],
    "int16": [(0x0000, 0), (0x0001, 1), (0xFFFF, 0), (0x7FFF, 0x7FFF), (0x8000, 0)],
    "int32": [(0, 0), (1, 1), (0xFFFFFFFF, 0), (0x7FFFFFFF, 0x7FFFFFFF), (0x80000000, 0)],
    "int64": [(0, 0), (1, 1), (2**64 - 1, 0), (2**63 - 1, 2**63 - 1), (2**63, 0)],
}


@pytest.mark.parametrize("name", TYPE_NAMES)
def test_both_forms_give_the_hand_written_results(name):
    t = relu_type(name)
    pairs = np.array(HAND_WRITTEN[name], dtype=t.bits_dtype)
    x, want = pairs[:, 0].view(t.dtype), pairs[:, 1].view(t.dtype)
    for oracle in (expected_relu_elementwise, expected_relu):
        got = oracle(x)
        assert same_bits(got, want), (oracle.__name__, as_bits(got).tolist())
        assert same_bits(oracle(x.astype(t.dtype.newbyteorder("S"))), want)  # either byte order


@pytest.mark.parametrize(
    "t", [t for t in RELU_TYPES if t.dtype.itemsize <= 2], ids=lambda t: t.name
)
def test_both_forms_agree_on_every_bit_pattern(t):
    x = np.arange(1 << t.width, dtype=np.uint64).astype(t.bits_dtype).view(t.dtype)
    assert same_bits(expected_relu_elementwise(x), expected_relu(x))
    kept = as_bits(expected_relu(x)) == as_bits(x)
    zeroed = as_bits(expected_relu(x)) == 0
    assert (kept | zeroed).all()  # every element is returned as it was, or as +0
    assert kept.sum() > (1 << t.width) // 4 and zeroed.sum() > (1 << t.width) // 4


@pytest.mark.parametrize("t", [t for t in RELU_TYPES if t.dtype.itemsize > 2], ids=lambda t: t.name)
def test_both_forms_agree_on_special_and_random_values_of_wide_types(t):
    x = mixed_values(t.dtype, 20_000, seed=1)
    assert same_bits(expected_relu_elementwise(x), expected_relu(x))


def test_the_assertions_catch_a_wrong_result():
    x = special_values(np.float32)
    wrong = x.copy()  # identity: wrong for -0.0, negatives and -inf
    for check in (assert_relu_exact, assert_relu_vectorised):
        with pytest.raises(AssertionError, match="elements differ"):
            check(wrong, x)
        with pytest.raises(AssertionError, match="dtype"):
            check(np.zeros(x.shape, np.float64), x)
        check(expected_relu(x), x)


def test_special_values_cover_every_kind():
    for t in RELU_TYPES:
        bits = as_bits(special_values(t.dtype)).tolist()
        assert len(set(bits)) == len(bits), t.name  # no value twice
        if not t.is_float:
            info = np.iinfo(t.dtype)
            assert {0, 1, -1, info.min, info.max} <= set(special_values(t.dtype).tolist())
            continue
        nans = [b for b in bits if t.is_nan(b)]
        assert any(t.is_signalling_nan(b) for b in nans)
        assert any(not t.is_signalling_nan(b) for b in nans)
        assert any(b & t.sign_mask for b in nans) and any(not b & t.sign_mask for b in nans)
        for pattern in (
            0,
            t.sign_mask,
            t.exponent_mask,
            t.sign_mask | t.exponent_mask,
            1,
            t.sign_mask | 1,
            t.exponent_mask - 1,
            t.one,
        ):
            assert pattern in bits, (t.name, hex(pattern))


def test_mixed_values_start_with_the_special_values_then_vary():
    for t in RELU_TYPES:
        special = special_values(t.dtype)
        mixed = mixed_values(t.dtype, 500, seed=2)
        assert same_bits(mixed[: special.size], special)
        assert np.unique(as_bits(mixed[special.size :])).size > 200
        assert same_bits(mixed_values(t.dtype, 5, seed=2), special[:5])


def test_the_version_table():
    assert [relu_version_at(o) for o in (1, 5, 6, 12, 13, 14, 15, 100)] == [
        1,
        1,
        6,
        6,
        13,
        14,
        14,
        14,
    ]
    assert [t.name for t in allowed_at(12)] == ["float16", "float32", "float64"]
    assert len(allowed_at(None)) == len(allowed_at(14)) == 8


@pytest.mark.parametrize(
    "module", ["tests.support.dtypes", "tests.support.oracle", "tests.support.values"]
)
def test_support_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
