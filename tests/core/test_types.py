"""Type rules: the version table, opset boundaries, and every refused dtype."""

import ml_dtypes
import numpy as np
import pytest

import onnx_relu
from onnx_relu.errors import OnnxReluError, UnsupportedTypeError
from onnx_relu.versions import RELU_VERSIONS, check_opset, relu_version, version_for_opset
from tests.support.dtypes import REFUSED_TYPES, RELU_TYPES, TYPE_NAMES, allowed_at, relu_version_at

# Opsets at and around each Relu version change; the versions and the types each allows come
# from the tests' own type table (tests/support/dtypes.py), independent of onnx_relu.versions.
OPSETS = [1, 5, 6, 12, 13, 14, 15, 18, 100]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("rtype", RELU_TYPES, ids=TYPE_NAMES)
def test_every_type_at_every_opset_boundary(rtype, opset):
    version = relu_version_at(opset)
    assert relu_version(opset) == version
    source = np.array([-2, 0, 3], dtype=rtype.dtype)
    if rtype.allowed_by(version):
        assert (
            onnx_relu.relu(source, opset=opset).tolist()
            == np.array([0, 0, 3], rtype.dtype).tolist()
        )
    else:
        before = source.copy()
        with pytest.raises(UnsupportedTypeError) as info:
            onnx_relu.relu(source, opset=opset)
        message = str(info.value)
        assert f"Relu-{version}" in message and f"opset {opset}" in message
        assert rtype.onnx_name in message
        for allowed in allowed_at(opset):
            assert allowed.onnx_name in message
        assert f"allowed from Relu-{rtype.since}" in message
        np.testing.assert_array_equal(source, before)


@pytest.mark.parametrize("refused", REFUSED_TYPES, ids=[r.label for r in REFUSED_TYPES])
@pytest.mark.parametrize("opset", [None, 1, 13, 14])
def test_types_no_version_allows_are_refused(refused, opset):
    named_as = refused.onnx_name or "no ONNX tensor type"
    source = np.zeros(4, dtype=refused.dtype)
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
@pytest.mark.parametrize(
    "dtype",
    [np.uint8, np.bool_, np.uint64, np.complex64, np.float32],
    ids=lambda t: np.dtype(t).name,
)
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


# issue 13, item 3: what relu_ufunc does with types, as the README says it exactly. NumPy gives
# an ArrayMethod loop no way to refuse a cast into it (descriptor resolution sees operands
# already converted to the loop's types), so the casts below are numpy's and stay documented;
# relu() is the function that refuses them.
@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("refused", REFUSED_TYPES, ids=[r.label for r in REFUSED_TYPES])
def test_relu_ufunc_has_no_loop_for_a_refused_type_under_any_casting_rule(refused, casting):
    x = np.zeros(3, dtype=refused.dtype)
    with pytest.raises(TypeError):
        onnx_relu.relu_ufunc(x, casting=casting)


@pytest.mark.parametrize(
    ("x", "out"),
    [
        (np.array([1e300]), np.empty(1, np.float32)),
        (np.array([1], np.int32), np.empty(1, np.int64)),
        (np.array([1.0], np.float32), np.empty(1, ml_dtypes.bfloat16)),
        (np.array([-1], np.int8), np.empty(1, np.uint8)),
    ],
)
def test_an_out_the_ufunc_would_cast_into_is_refused_by_relu(x, out):
    before = out.copy()
    with pytest.raises(UnsupportedTypeError, match="Relu's output has the input's type"):
        onnx_relu.relu(x, out=out)
    assert before.tobytes() == out.tobytes()


def test_relu_ufunc_docstring_and_docs_say_when_numpy_casts():
    from tests.support import REPOSITORY

    doc = onnx_relu.relu_ufunc.__doc__
    assert "signature= or dtype=" in doc and "cast by numpy under casting=" in doc
    page = (REPOSITORY / "docs" / "semantics.md").read_text(encoding="utf-8")
    assert "NumPy casts the operands into the loop it runs" in " ".join(page.split())
