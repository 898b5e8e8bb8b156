"""relu's ``where=`` (with relu's checks) and dtype metadata kept as NumPy keeps it (issue 30,
items 8 and 9)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnx_relu import relu, relu_ufunc
from onnx_relu.errors import InvalidOutputError, UnsupportedTypeError
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu
from tests.support.values import mixed_values


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("byteorder", ["native", "swapped"])
def test_relu_with_where_computes_where_true_and_keeps_out_elsewhere(dtype, byteorder):
    x = mixed_values(dtype, 37)
    mask = np.arange(x.size) % 3 != 0
    out = np.full_like(x, 7)
    if byteorder == "swapped" and np.dtype(dtype).itemsize > 1 and dtype is not ml_dtypes.bfloat16:
        x = x.astype(x.dtype.newbyteorder())
        out = out.astype(out.dtype.newbyteorder())
    kept = out.copy()
    assert relu(x, out=out, where=mask) is out
    want = expected_relu(x.astype(x.dtype.newbyteorder("=")))
    assert (as_bits(out[mask]) == as_bits(want[mask])).all()
    assert out[~mask].tobytes() == kept[~mask].tobytes()


def test_relu_with_where_broadcasts_a_mask_and_takes_lists():
    x = np.array([[-1.0, 2.0], [3.0, -4.0]])
    out = np.full_like(x, 9.0)
    relu(x, out=out, where=[True, False])
    assert out.tolist() == [[0.0, 9.0], [3.0, 9.0]]
    assert relu(x, where=np.True_).tolist() == [[0.0, 2.0], [3.0, 0.0]]
    untouched = np.full_like(x, 5.0)
    relu(x, out=untouched, where=False)
    assert (untouched == 5.0).all()


def test_relu_with_where_refuses_an_out_of_another_type_and_writes_nothing():
    # relu_ufunc(float64 [1e300, -1], out=float32, where=True) gives [inf, 0.0]: numpy's cast.
    x = np.array([1e300, -1.0])
    out = np.zeros(2, np.float32)
    for where in (True, np.array([True, False]), [True, True]):
        with pytest.raises(UnsupportedTypeError, match="Relu's output has the input's type"):
            relu(x, out=out, where=where)
        assert out.tobytes() == np.zeros(2, np.float32).tobytes()


@pytest.mark.parametrize(
    ("where", "error", "words"),
    [
        (np.array([1, 0]), TypeError, "where must be a boolean array"),
        ([1.0, 0.0], TypeError, "where must be a boolean array"),
        (np.ones(3, bool), ValueError, r"where has shape \(3,\).*input's shape \(2,\)"),
        (np.ones((2, 2), bool), ValueError, r"does not broadcast"),
    ],
)
def test_relu_with_a_bad_where_is_refused_and_writes_nothing(where, error, words):
    x = np.array([-1.0, 2.0])
    out = np.full(2, 3.0)
    with pytest.raises(error, match=words):
        relu(x, out=out, where=where)
    assert out.tolist() == [3.0, 3.0]


def test_relu_with_where_checks_types_and_out_as_without_it():
    with pytest.raises(UnsupportedTypeError, match="Relu-13"):
        relu(np.array([1, -1], np.int8), where=[True, False], opset=13)
    with pytest.raises(UnsupportedTypeError, match="does not allow tensor.uint8."):
        relu(np.array([1], np.uint8), where=[True])
    with pytest.raises(InvalidOutputError, match="read-only"):
        relu(np.zeros(2), out=np.broadcast_to(np.zeros(1), (2,)), where=[True, False])
    with pytest.raises(InvalidOutputError, match="shape"):
        relu(np.zeros(2), out=np.zeros(3), where=[True, False])


METADATA = {"enum": {"OFF": 0, "ON": 1}}


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtype_metadata_is_kept_as_numpy_keeps_it(dtype):
    tagged = np.dtype(dtype, metadata=METADATA)
    for size in (5, 1 << 19):  # below and above the output cache's 1 MiB
        x = mixed_values(dtype, size).astype(tagged)
        assert x.dtype.metadata == METADATA
        assert relu(x).dtype.metadata == METADATA
        assert relu_ufunc(x).dtype.metadata == METADATA
    if np.dtype(dtype).kind in "fi":  # numpy's own unary ufuncs: the reference
        assert np.positive(x).dtype.metadata == METADATA


def test_dtype_metadata_of_a_byte_swapped_input_is_kept():
    tagged = np.dtype(">f4", metadata=METADATA)
    x = np.array([-1.0, 2.0], tagged)
    assert relu(x).dtype.metadata == METADATA
    assert relu(x).dtype == tagged
    assert relu_ufunc(x).dtype.metadata == np.positive(x).dtype.metadata == METADATA
