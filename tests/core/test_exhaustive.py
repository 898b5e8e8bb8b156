"""Every bit pattern of the 8- and 16-bit types, against the oracle."""

import numpy as np
import pytest

import onnx_relu
from tests.support.dtypes import RELU_TYPES
from tests.support.oracle import assert_relu_exact

SMALL_TYPES = [pytest.param(t.dtype, id=t.name) for t in RELU_TYPES if t.dtype.itemsize <= 2]


def all_patterns(dtype: np.dtype) -> np.ndarray:
    width = 8 * dtype.itemsize
    return np.arange(1 << width, dtype=np.uint64).astype(f"u{dtype.itemsize}").view(dtype)


@pytest.mark.parametrize("dtype", SMALL_TYPES)
def test_every_bit_pattern(dtype):
    source = all_patterns(dtype)
    assert source.size == 1 << (8 * dtype.itemsize)
    kept = source.copy()
    assert_relu_exact(onnx_relu.relu(source), source)
    np.testing.assert_array_equal(
        source.view(f"u{dtype.itemsize}"), kept.view(f"u{dtype.itemsize}")
    )


@pytest.mark.parametrize("dtype", SMALL_TYPES)
def test_every_bit_pattern_in_place_and_strided(dtype):
    source = all_patterns(dtype)
    work = source.copy()
    assert onnx_relu.relu(work, out=work) is work
    assert_relu_exact(work, source)
    reversed_view = source[::-3]
    assert_relu_exact(onnx_relu.relu(reversed_view), reversed_view)


@pytest.mark.parametrize("dtype", SMALL_TYPES)
def test_every_bit_pattern_unaligned(dtype):
    source = all_patterns(dtype)
    raw = np.zeros(source.nbytes + 1, dtype=np.uint8)
    unaligned = raw[1:].view(dtype)
    unaligned[...] = source
    if dtype.itemsize > 1:
        assert not unaligned.flags.aligned
    assert_relu_exact(onnx_relu.relu(unaligned), source)
