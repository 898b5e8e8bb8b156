"""out=: written and returned, in place, overlapping views, and every refusal."""

import numpy as np
import pytest

import onnx_relu
from onnx_relu.errors import UnsupportedTypeError
from tests.support.dtypes import RELU_TYPES
from tests.support.oracle import assert_relu_exact
from tests.support.values import mixed_values as mixed

TYPES = [pytest.param(t.dtype, id=t.name) for t in RELU_TYPES]


@pytest.mark.parametrize("dtype", TYPES)
def test_out_is_written_and_returned(dtype):
    source = mixed(dtype, 100)
    out = np.empty_like(source)
    assert onnx_relu.relu(source, out=out) is out
    assert_relu_exact(out, source)
    assert onnx_relu.relu(source, (out,)) is out  # a 1-tuple, as numpy's ufuncs accept


@pytest.mark.parametrize("dtype", TYPES)
def test_in_place(dtype):
    source = mixed(dtype, 100, seed=1)
    work = source.copy()
    assert onnx_relu.relu(work, out=work) is work
    assert_relu_exact(work, source)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("shift", [1, -1, 3, -5])
def test_partially_overlapping_out(dtype, shift):
    source = mixed(dtype, 64, seed=2)
    work = source.copy()
    if shift > 0:
        src_view, out_view = work[:-shift], work[shift:]
        expected_source = source[:-shift]
    else:
        src_view, out_view = work[-shift:], work[:shift]
        expected_source = source[-shift:]
    onnx_relu.relu(src_view, out=out_view)
    assert_relu_exact(out_view, expected_source)


@pytest.mark.parametrize("dtype", TYPES)
def test_non_contiguous_out(dtype):
    source = mixed(dtype, 50, seed=3)
    holder = np.zeros(150, dtype=dtype)
    out = holder[::3]
    onnx_relu.relu(source, out=out)
    assert_relu_exact(out, source)
    assert not holder[1::3].view(f"u{dtype.itemsize}").any()  # nothing written in between


def test_out_of_wrong_shape_is_refused_and_untouched():
    source = np.array([-1.0, 2.0, 3.0], dtype=np.float32)
    for out in (
        np.full(4, 7, np.float32),
        np.full((1, 3), 7, np.float32),
        np.full((), 7, np.float32),
    ):
        with pytest.raises(ValueError, match=r"out has shape .* input has shape \(3,\)"):
            onnx_relu.relu(source, out=out)
        assert (out == 7).all()


@pytest.mark.parametrize("out_dtype", [np.float64, np.float16, np.int32, np.uint32])
def test_out_of_wrong_dtype_is_refused_and_untouched(out_dtype):
    source = np.array([-1.0, 2.0, 3.0], dtype=np.float32)
    out = np.full(3, 7, dtype=out_dtype)
    with pytest.raises(
        UnsupportedTypeError, match=r"out has type .* input has type tensor\(float\)"
    ):
        onnx_relu.relu(source, out=out)
    assert (out == 7).all()


def test_read_only_out_is_refused():
    source = np.array([-1.0, 2.0], dtype=np.float32)
    out = np.zeros(2, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        onnx_relu.relu(source, out=out)
    with pytest.raises(ValueError, match="read-only"):
        onnx_relu.relu(np.broadcast_to(source, (3, 2)), out=np.broadcast_to(out, (3, 2)))


@pytest.mark.parametrize("out", [[0.0, 0.0], (1, 2), "out", 3.0])
def test_out_that_is_not_an_array_is_refused(out):
    with pytest.raises(TypeError, match="out must be a numpy.ndarray"):
        onnx_relu.relu(np.array([-1.0, 2.0]), out=out)
