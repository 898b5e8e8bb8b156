"""Shapes and memory layouts, for every type: results exact, shape/dtype/layout kept."""

import numpy as np
import pytest

import onnx_relu
from tests.support.dtypes import RELU_TYPES
from tests.support.oracle import assert_relu_exact
from tests.support.values import mixed_values as mixed
from tests.support.values import special_values

TYPES = [pytest.param(t.dtype, id=t.name) for t in RELU_TYPES]


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize(
    "size", [0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 65, 127, 129, 255, 1000, 4097]
)
def test_contiguous_sizes(dtype, size):
    source = mixed(dtype, size, seed=size)
    assert_relu_exact(onnx_relu.relu(source), source)


@pytest.mark.parametrize("dtype", TYPES)
def test_zero_dimensional_behaves_like_a_ufunc(dtype):
    specials = special_values(dtype)
    for index in range(specials.size):
        source = specials[index : index + 1].reshape(())
        result = onnx_relu.relu(source)
        assert isinstance(result, np.generic)  # numpy ufuncs return scalars for 0-d input
        assert type(result) is type(source[()])  # the scalar type of the dtype
        assert_relu_exact(np.asarray(result), source)
        out = np.empty((), dtype=dtype)
        assert onnx_relu.relu(source, out=out) is out
        assert_relu_exact(out, source)


@pytest.mark.parametrize("dtype", TYPES)
def test_scalar_of_the_type(dtype):
    scalar = mixed(dtype, 1)[0]
    result = onnx_relu.relu(scalar)
    assert isinstance(result, np.generic) and result.dtype == dtype
    assert_relu_exact(np.asarray(result), np.asarray(scalar))


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5, 2)])
def test_empty(dtype, shape):
    source = np.empty(shape, dtype=dtype)
    result = onnx_relu.relu(source)
    assert result.shape == shape and result.dtype == dtype


@pytest.mark.parametrize("dtype", TYPES)
def test_non_contiguous_and_negative_strides(dtype):
    base = mixed(dtype, 6 * 7 * 5, seed=1).reshape(6, 7, 5)
    for view in (base[::2], base[:, ::3], base[..., ::-1], base[::-1, ::-2, 1:4], base[1:, 2, :]):
        assert_relu_exact(onnx_relu.relu(view), view)


@pytest.mark.parametrize("dtype", TYPES)
def test_transposed_and_fortran_keep_layout(dtype):
    base = mixed(dtype, 12 * 9, seed=2).reshape(12, 9)
    fortran = np.asfortranarray(base)
    result = onnx_relu.relu(fortran)
    assert result.flags.f_contiguous and not result.flags.c_contiguous
    assert_relu_exact(result, fortran)
    transposed = base.T
    result = onnx_relu.relu(transposed)
    assert result.flags.f_contiguous
    assert_relu_exact(result, transposed)


@pytest.mark.parametrize("dtype", TYPES)
def test_broadcast_stride_zero(dtype):
    row = mixed(dtype, 5, seed=3)
    for bits_index in range(row.size):
        broadcast = np.broadcast_to(row[bits_index : bits_index + 1], (4, 6))
        assert broadcast.strides == (0, 0)
        result = onnx_relu.relu(broadcast)
        assert result.shape == (4, 6)
        assert_relu_exact(result, broadcast)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("offset", [1, 3])
def test_unaligned_buffers(dtype, offset):
    size = 301
    source = mixed(dtype, size, seed=4)
    raw = np.zeros(source.nbytes + offset, dtype=np.uint8)
    unaligned = raw[offset:].view(dtype)
    unaligned[...] = source
    if dtype.itemsize > 1:
        assert not unaligned.flags.aligned
    assert_relu_exact(onnx_relu.relu(unaligned), source)
    out_raw = np.zeros(source.nbytes + offset, dtype=np.uint8)
    out = out_raw[offset:].view(dtype)
    onnx_relu.relu(unaligned, out=out)
    assert_relu_exact(out, source)
    onnx_relu.relu(unaligned, out=unaligned)
    assert_relu_exact(unaligned, source)


BYTESWAPPABLE = [
    pytest.param(t.dtype, id=t.name)
    for t in RELU_TYPES
    if t.dtype.itemsize > 1 and t.name != "bfloat16"
]


@pytest.mark.parametrize("dtype", BYTESWAPPABLE)
def test_byte_swapped_input_is_computed_correctly(dtype):
    native = mixed(dtype, 257, seed=5)
    swapped = native.astype(dtype.newbyteorder("S"))
    assert not swapped.dtype.isnative
    result = onnx_relu.relu(swapped)
    assert result.dtype == swapped.dtype  # byte order kept, as with every other dtype
    assert_relu_exact(result.astype(dtype), native)
    out = np.empty_like(swapped)
    assert onnx_relu.relu(swapped, out=out) is out
    assert_relu_exact(out.astype(dtype), native)
    native_out = np.empty_like(native)
    onnx_relu.relu(swapped, out=native_out)
    assert_relu_exact(native_out, native)
    onnx_relu.relu(swapped, out=swapped)
    assert_relu_exact(swapped.astype(dtype), native)


def test_lists_and_python_scalars_convert_like_numpy():
    assert onnx_relu.relu([-5, 0, 7]).tolist() == [0, 0, 7]
    assert onnx_relu.relu([-5, 0, 7]).dtype == np.asarray([-5, 0, 7]).dtype
    assert onnx_relu.relu([[-1.5, 2.5]]).tolist() == [[0.0, 2.5]]
    result = onnx_relu.relu(-3.0)
    assert isinstance(result, np.float64) and result == 0.0 and not np.signbit(result)
    assert onnx_relu.relu(4) == 4
