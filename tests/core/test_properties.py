"""Hypothesis: the wide types against the independent oracle, special values drawn on purpose."""

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import onnx_relu
from relu_oracle import assert_relu_exact, special_bits

WIDE_TYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64)]


def bit_patterns(dtype: np.dtype) -> st.SearchStrategy[int]:
    """Element bit patterns: random, special on purpose, or the bits of an ordinary number."""
    width = 8 * dtype.itemsize
    mask = (1 << width) - 1
    choices = [st.integers(0, mask), st.sampled_from(special_bits(dtype))]
    if dtype.kind == "f":
        fmt = {4: "<f", 8: "<d"}[dtype.itemsize]
        int_fmt = {4: "<I", 8: "<Q"}[dtype.itemsize]
        floats = st.floats(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True)
        choices.append(floats.map(lambda v: struct.unpack(int_fmt, struct.pack(fmt, v))[0]))
    else:
        choices.append(st.integers(-1000, 1000).map(lambda v: v & mask))
    return st.one_of(*choices)


def arrays_of(dtype: np.dtype):
    return st.tuples(
        st.lists(bit_patterns(dtype), min_size=0, max_size=300),
        st.integers(1, 4),  # step of a strided view
        st.booleans(),  # reversed
    )


def build(dtype, drawn):
    patterns, step, backwards = drawn
    base = np.array(patterns, dtype=f"u{dtype.itemsize}").view(dtype)
    view = base[::step]
    return view[::-1] if backwards else view


@pytest.mark.parametrize("dtype", WIDE_TYPES, ids=lambda d: d.name)
def test_matches_oracle(dtype):
    @given(arrays_of(dtype))
    def check(drawn):
        source = build(dtype, drawn)
        before = source.copy()
        assert_relu_exact(onnx_relu.relu(source), source)
        np.testing.assert_array_equal(source.view(f"u{dtype.itemsize}"),
                                      before.view(f"u{dtype.itemsize}"))

    check()


@pytest.mark.parametrize("dtype", WIDE_TYPES, ids=lambda d: d.name)
def test_in_place_matches_oracle(dtype):
    @given(arrays_of(dtype))
    def check(drawn):
        source = np.ascontiguousarray(build(dtype, drawn))
        work = source.copy()
        onnx_relu.relu(work, out=work)
        assert_relu_exact(work, source)

    check()
