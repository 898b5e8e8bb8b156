"""Type rules: the version table, opset boundaries, and every refused dtype."""

import ml_dtypes
import numpy as np
import pytest

import onnx_relu
from onnx_relu.errors import OnnxReluError, UnsupportedTypeError
from onnx_relu.versions import RELU_VERSIONS, check_opset, relu_version, version_for_opset
from relu_oracle import RELU_DTYPES

# The spec's type sets, written out here independently of onnx_relu.versions.
SPEC_TYPES = {
    1: {"float16", "float32", "float64"},
    6: {"float16", "float32", "float64"},
    13: {"float16", "float32", "float64", "bfloat16"},
    14: {"float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64"},
}
SPEC_VERSION_AT = {1: 1, 5: 1, 6: 6, 12: 6, 13: 13, 14: 14, 15: 14, 18: 14, 100: 14}
ONNX_NAME = {"float16": "tensor(float16)", "float32": "tensor(float)", "float64": "tensor(double)",
             "bfloat16": "tensor(bfloat16)", "int8": "tensor(int8)", "int16": "tensor(int16)",
             "int32": "tensor(int32)", "int64": "tensor(int64)"}


@pytest.mark.parametrize("opset", sorted(SPEC_VERSION_AT))
@pytest.mark.parametrize("name,dtype", RELU_DTYPES, ids=[n for n, _ in RELU_DTYPES])
def test_every_type_at_every_opset_boundary(name, dtype, opset):
    version = SPEC_VERSION_AT[opset]
    assert relu_version(opset) == version
    source = np.array([-2, 0, 3], dtype=dtype)
    if name in SPEC_TYPES[version]:
        assert onnx_relu.relu(source, opset=opset).tolist() == np.array([0, 0, 3], dtype).tolist()
    else:
        before = source.copy()
        with pytest.raises(UnsupportedTypeError) as info:
            onnx_relu.relu(source, opset=opset)
        message = str(info.value)
        assert f"Relu-{version}" in message and f"opset {opset}" in message
        assert ONNX_NAME[name] in message
        for allowed in SPEC_TYPES[version]:
            assert ONNX_NAME[allowed] in message
        first = min(v for v, types in SPEC_TYPES.items() if name in types)
        assert f"allowed from Relu-{first}" in message
        np.testing.assert_array_equal(source, before)


def _refused_dtypes():
    cases = [
        ("bool", np.dtype(np.bool_), "tensor(bool)"),
        ("uint8", np.dtype(np.uint8), "tensor(uint8)"),
        ("uint16", np.dtype(np.uint16), "tensor(uint16)"),
        ("uint32", np.dtype(np.uint32), "tensor(uint32)"),
        ("uint64", np.dtype(np.uint64), "tensor(uint64)"),
        ("complex64", np.dtype(np.complex64), "tensor(complex64)"),
        ("complex128", np.dtype(np.complex128), "tensor(complex128)"),
        ("longdouble", np.dtype(np.longdouble), "no ONNX tensor type"),
        ("clongdouble", np.dtype(np.clongdouble), "no ONNX tensor type"),
        ("object", np.dtype(object), "no ONNX tensor type"),
        ("str", np.dtype("U3"), "tensor(string)"),
        ("bytes", np.dtype("S3"), "tensor(string)"),
        ("datetime64", np.dtype("datetime64[s]"), "no ONNX tensor type"),
        ("timedelta64", np.dtype("timedelta64[s]"), "no ONNX tensor type"),
        ("void", np.dtype("V4"), "no ONNX tensor type"),
        ("structured", np.dtype([("a", "f4")]), "no ONNX tensor type"),
        ("float8_e4m3fn", np.dtype(ml_dtypes.float8_e4m3fn), "tensor(float8e4m3fn)"),
        ("float8_e5m2", np.dtype(ml_dtypes.float8_e5m2), "tensor(float8e5m2)"),
        ("float8_e4m3fnuz", np.dtype(ml_dtypes.float8_e4m3fnuz), "tensor(float8e4m3fnuz)"),
        ("float8_e5m2fnuz", np.dtype(ml_dtypes.float8_e5m2fnuz), "tensor(float8e5m2fnuz)"),
        ("int4", np.dtype(ml_dtypes.int4), "tensor(int4)"),
        ("uint4", np.dtype(ml_dtypes.uint4), "tensor(uint4)"),
    ]
    if np.dtype(np.longdouble) == np.dtype(np.float64):  # platforms where long double is double
        cases = [c for c in cases if c[0] not in ("longdouble", "clongdouble")]
    return cases


REFUSED = _refused_dtypes()


@pytest.mark.parametrize("name,dtype,named_as", REFUSED, ids=[c[0] for c in REFUSED])
@pytest.mark.parametrize("opset", [None, 1, 13, 14])
def test_types_no_version_allows_are_refused(name, dtype, named_as, opset):
    source = np.zeros(4, dtype=dtype)
    before = source.copy()
    with pytest.raises(UnsupportedTypeError) as info:
        onnx_relu.relu(source, opset=opset)
    message = str(info.value)
    assert named_as in message
    assert "No Relu version allows it" in message and "never casts silently" in message
    assert "allowed types: tensor(" in message
    assert isinstance(info.value, TypeError) and isinstance(info.value, OnnxReluError)
    np.testing.assert_array_equal(source, before)


def test_refusal_suggests_an_exact_conversion():
    with pytest.raises(TypeError, match=r"x\.astype\(numpy\.int16\)"):
        onnx_relu.relu(np.array([1, 2], dtype=np.uint8))


@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.uint64, np.complex64, np.float32],
                         ids=lambda t: np.dtype(t).name)
def test_the_ufunc_itself_never_casts(dtype, casting):
    source = np.zeros(3, dtype=dtype)
    if dtype is np.float32:  # control: an allowed type passes under every rule
        assert onnx_relu.relu_ufunc(source, casting=casting).dtype == np.float32
        return
    with pytest.raises(TypeError):
        onnx_relu.relu_ufunc(source, casting=casting)


def test_the_ufunc_refuses_a_forced_cast_into_out():
    with pytest.raises(TypeError):
        onnx_relu.relu_ufunc(np.zeros(3, np.float32), out=np.zeros(3, np.float64), casting="no")


@pytest.mark.parametrize("opset", [0, -1, -100])
def test_opset_below_one_is_refused(opset):
    with pytest.raises(ValueError, match="opset must be an integer >= 1"):
        onnx_relu.relu(np.zeros(2, np.float32), opset=opset)


@pytest.mark.parametrize("opset", [1.5, "14", True, None.__class__, [14]])
def test_opset_that_is_not_an_integer_is_refused(opset):
    with pytest.raises(TypeError, match="opset must be an integer >= 1"):
        check_opset(opset)
    with pytest.raises(TypeError, match="opset must be an integer >= 1"):
        onnx_relu.relu(np.zeros(2, np.float32), opset=opset)


def test_numpy_integer_opset_is_accepted():
    assert version_for_opset(np.int64(13)).since == 13


def test_version_table_matches_onnx_schemas():
    onnx = pytest.importorskip("onnx")  # `make test` installs onnx, so this runs in CI
    for since, version in RELU_VERSIONS.items():
        schema = onnx.defs.get_schema("Relu", since)
        assert schema.since_version == since
        (constraint,) = schema.type_constraints
        assert tuple(sorted(constraint.allowed_type_strs)) == version.types
        assert tuple(sorted(schema.attributes)) == version.attributes
    assert set(RELU_VERSIONS) == {
        onnx.defs.get_schema("Relu", opset).since_version
        for opset in range(1, onnx.defs.onnx_opset_version() + 1)
    }
    for opset in range(1, onnx.defs.onnx_opset_version() + 1):
        assert relu_version(opset) == onnx.defs.get_schema("Relu", opset).since_version


def test_check_dtype():
    assert onnx_relu.check_dtype("float32", opset=6) == np.float32
    assert onnx_relu.check_dtype(ml_dtypes.bfloat16) == np.dtype(ml_dtypes.bfloat16)
    assert onnx_relu.check_dtype(">i4") == np.dtype(">i4")
    with pytest.raises(UnsupportedTypeError, match="Relu-6"):
        onnx_relu.check_dtype(ml_dtypes.bfloat16, opset=12)
    with pytest.raises(UnsupportedTypeError, match="needs a numeric dtype"):
        onnx_relu.check_dtype("not a dtype")


@pytest.mark.parametrize("value", [None, {"a": 1}, object(), "text", b"bytes"])
def test_objects_that_are_not_numeric_arrays_are_refused(value):
    with pytest.raises(UnsupportedTypeError, match="does not allow|needs an array of numbers"):
        onnx_relu.relu(value)


def test_ragged_lists_raise_numpys_value_error():
    with pytest.raises(ValueError, match="inhomogeneous"):
        onnx_relu.relu([[1.0, 2.0], [3.0]])


def test_no_floating_point_warnings_for_nan_and_inf():
    source = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 1e-45], dtype=np.float32)
    with np.errstate(all="raise"):
        onnx_relu.relu(source)
