"""The one type table (``onnx_relu.dtypes``) against onnx's and numpy's own definitions.

The element type numbers and the float layouts are written in the table by hand (so that the
core needs no onnx); here they are checked against ``onnx.TensorProto`` and ``finfo``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnx_relu.dtypes import (
    REFUSED_ONNX_NAMES,
    RELU_TYPE_BY_DTYPE,
    RELU_TYPE_BY_NAME,
    RELU_TYPE_BY_ONNX_NAME,
    RELU_TYPES,
    describe_dtype,
    dtype_of_onnx_type,
    native,
    onnx_type_name,
)
from onnx_relu.versions import RELU_VERSIONS

onnx = pytest.importorskip("onnx")


@pytest.mark.parametrize("relu_type", RELU_TYPES, ids=lambda t: t.name)
def test_record_matches_onnx_and_numpy(relu_type):
    name = onnx.TensorProto.DataType.Name(relu_type.elem_type)
    assert relu_type.onnx_name == f"tensor({name.lower()})"
    assert onnx.helper.tensor_dtype_to_np_dtype(relu_type.elem_type) == relu_type.dtype
    assert relu_type.bits == 8 * relu_type.dtype.itemsize == 8 * relu_type.bits_dtype.itemsize
    assert relu_type.bits_dtype.kind == "u"
    if relu_type.dtype.kind == "i":
        assert relu_type.mantissa_bits is None and not relu_type.is_float
    else:
        assert relu_type.mantissa_bits == ml_dtypes.finfo(relu_type.dtype).nmant
        assert relu_type.is_float


def test_the_table_is_the_eight_types_every_version_draws_from():
    every_version = {t for version in RELU_VERSIONS.values() for t in version.types}
    assert set(RELU_TYPE_BY_ONNX_NAME) == every_version and len(RELU_TYPES) == 8
    assert len(RELU_TYPE_BY_NAME) == len(RELU_TYPE_BY_DTYPE) == 8
    for version in RELU_VERSIONS.values():  # each version's dtypes come from the table
        assert version.dtypes == {RELU_TYPE_BY_ONNX_NAME[t].dtype for t in version.types}


def test_refused_names_are_onnxs_and_never_a_relu_type():
    for dtype, onnx_name in REFUSED_ONNX_NAMES.items():
        assert dtype not in RELU_TYPE_BY_DTYPE
        assert onnx_type_name(dtype) == onnx_name and dtype_of_onnx_type(onnx_name) == dtype
        name = onnx_name.removeprefix("tensor(").removesuffix(")").upper()
        if name not in onnx.TensorProto.DataType.keys():
            # onnx 1.19 (the oldest allowed) predates the 2-bit types of onnx 1.20
            assert name in ("INT2", "UINT2") and _onnx_version() < (1, 20), (name, onnx.__version__)


def _onnx_version():
    return tuple(int(part) for part in onnx.__version__.split(".")[:2])


def test_names_and_byte_order():
    swapped = np.dtype(">i4")
    assert native(swapped) == np.dtype("int32") and native(np.dtype("i1")) == np.dtype("i1")
    assert describe_dtype(swapped) == "tensor(int32) stored byte-swapped (>i4)"
    assert onnx_type_name(np.dtype("U3")) == "tensor(string)"
    assert describe_dtype(np.dtype("M8[s]")).startswith("numpy dtype 'datetime64[s]'")
