"""Hypothesis: the wide types against the independent oracle, special values drawn on purpose."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import onnx_relu
from tests.support.oracle import assert_relu_exact
from tests.support.strategies import element_bits, examples

WIDE_TYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64)]
# 0.4 x the profile: 400 examples a test in CI (300 before the profiles were merged), 20,000
# with HYPOTHESIS_PROFILE=thorough (as before). The elementwise oracle is slow per element.
WEIGHT = 0.4


def arrays_of(dtype: np.dtype):
    return st.tuples(
        st.lists(element_bits(dtype), min_size=0, max_size=300),
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
    @examples(WEIGHT)
    @given(arrays_of(dtype))
    def check(drawn):
        source = build(dtype, drawn)
        before = source.copy()
        assert_relu_exact(onnx_relu.relu(source), source)
        np.testing.assert_array_equal(
            source.view(f"u{dtype.itemsize}"), before.view(f"u{dtype.itemsize}")
        )

    check()


@pytest.mark.parametrize("dtype", WIDE_TYPES, ids=lambda d: d.name)
def test_in_place_matches_oracle(dtype):
    @examples(WEIGHT)
    @given(arrays_of(dtype))
    def check(drawn):
        source = np.ascontiguousarray(build(dtype, drawn))
        work = source.copy()
        onnx_relu.relu(work, out=work)
        assert_relu_exact(work, source)

    check()
