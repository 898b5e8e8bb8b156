"""Every C spelling of an allowed integer type is computed as that type (issue 13, item 4).

NumPy has one DType per C integer type, and two of them share a width on every platform: on
Linux and macOS int64 is C ``long`` ('l') and C ``long long`` ('q': ``numpy.longlong``,
``array.array('q')``, ``memoryview.cast('q')``) is a second int64 DType; on Windows int32 is C
``long`` and 'i' a second int32. ``np.dtype('q') == np.int64`` is True, so relu's type checks
took it, but the ufunc had no loop for the second DType and numpy refused it with its raw
``UFuncTypeError ... LongLongDType``. The result keeps the input's DType (as numpy's own ufuncs
do), which compares equal to the int64 (or int32) dtype.
"""

from __future__ import annotations

import array

import numpy as np
import pytest

import onnx_relu
from onnx_relu import relu, relu_ufunc
from onnx_relu.errors import UnsupportedTypeError
from tests.support.oracle import assert_relu_exact
from tests.support.values import mixed_values

# Every C integer type code numpy has a DType for: signed char, short, int, long, long long.
C_INTEGER_CODES = ["b", "h", "i", "l", "q"]


def values_of(code: str, n: int = 300) -> np.ndarray:
    """Special and random values of the fixed-width int of the same size, as type ``code``."""
    width = np.dtype(code).itemsize
    return mixed_values(np.dtype(f"int{8 * width}"), n).astype(code)


@pytest.mark.parametrize("code", C_INTEGER_CODES)
def test_every_c_integer_spelling_is_computed_and_keeps_its_dtype(code):
    x = values_of(code)
    before = x.copy()
    y = relu(x)
    assert y.dtype == x.dtype and y.dtype.char == code
    assert_relu_exact(y, x.astype(f"int{8 * x.itemsize}"), f"dtype {code!r}")
    np.testing.assert_array_equal(x, before)
    assert relu_ufunc(x).dtype.char == code
    np.testing.assert_array_equal(relu_ufunc(x), y)


@pytest.mark.parametrize("code", C_INTEGER_CODES)
def test_every_c_integer_spelling_works_through_out_in_place_and_byte_swapped(code):
    x = values_of(code)
    want = np.maximum(x, 0)
    fixed = np.dtype(f"int{8 * x.itemsize}")
    for out_dtype in {np.dtype(code), fixed}:  # same DType, and the other spelling
        out = np.empty(x.shape, out_dtype)
        assert relu(x, out=out) is out
        np.testing.assert_array_equal(out, want)
        other = x.astype(out_dtype)
        out = np.empty(x.shape, code)
        assert relu(other, out=out) is out
        np.testing.assert_array_equal(out, want)
    in_place = x.copy()
    assert relu(in_place, out=in_place) is in_place
    np.testing.assert_array_equal(in_place, want)
    swapped = x.astype(np.dtype(code).newbyteorder())
    np.testing.assert_array_equal(relu(swapped), want)
    out = np.empty(x.shape, np.dtype(code).newbyteorder())
    assert relu(x, out=out) is out
    np.testing.assert_array_equal(out, want)


def test_the_reported_int64_spellings():
    payload = np.array([-1, 2, -(2**63), 2**63 - 1], np.int64).tobytes()
    want = [0, 2, 0, 2**63 - 1]
    assert relu(np.array([-1, 2, -(2**63), 2**63 - 1], np.longlong)).tolist() == want
    assert relu(array.array("q", [-1, 2, -(2**63), 2**63 - 1])).tolist() == want
    assert relu(np.frombuffer(payload, "q")).tolist() == want
    assert relu(memoryview(payload).cast("q")).tolist() == want
    assert relu(np.longlong(-3)) == 0 and relu(np.longlong(5)) == 5
    assert relu(array.array("i", [-1, 4])).tolist() == [0, 4]
    assert relu(array.array("l", [-1, 4])).tolist() == [0, 4]


@pytest.mark.parametrize("code", C_INTEGER_CODES)
def test_the_opset_refusal_names_the_onnx_type(code):
    x = values_of(code, 10)
    before = x.copy()
    with pytest.raises(
        UnsupportedTypeError, match=rf"does not allow tensor\(int{8 * x.itemsize}\)"
    ):
        relu(x, opset=13)
    np.testing.assert_array_equal(x, before)
    with pytest.raises(UnsupportedTypeError, match=rf"tensor\(int{8 * x.itemsize}\)"):
        onnx_relu.check_dtype(np.dtype(code), opset=13)
