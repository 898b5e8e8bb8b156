"""Fuzzing the core with Hypothesis: no crash, only documented exceptions, exact results.

Targets: the public API on arrays and Python objects (``relu``, ``check_dtype``). The tensor-file
readers are fuzzed in tests/files/test_fuzz.py, the model checker and backend in
tests/onnx/test_fuzz.py.

Each target draws inputs, predicts from the specification alone whether the call is valid (and
if not, which documented exceptions may answer it), then checks the call: a valid call returns
the bit-exact Relu; an invalid one raises one of the predicted exceptions and changes no byte.
Example counts come from the profile loaded in tests/conftest.py
(``HYPOTHESIS_PROFILE=ci|thorough``), scaled per target by ``examples(weight)``.
"""

from __future__ import annotations

import operator
import warnings

import ml_dtypes
import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

import onnx_relu
from onnx_relu import relu
from onnx_relu.errors import (
    InvalidOpsetError,
    InvalidOutputError,
    OnnxReluError,
    UnsupportedTypeError,
)
from tests.support import dtypes
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu
from tests.support.strategies import Drawn, any_dtype, arrays_any_layout, examples

VALID_OPSETS = st.sampled_from(
    [None, None, 1, 5, 6, 12, 13, 14, 18, 23, np.int32(13), np.int64(14)]
)
INVALID_OPSETS = st.sampled_from([0, -1, 1.5, "14", True, np.True_, 14.0])
OPSETS = st.one_of(VALID_OPSETS, VALID_OPSETS, VALID_OPSETS, INVALID_OPSETS)


def opset_is_valid(opset: object) -> bool:
    if opset is None:
        return True
    if isinstance(opset, (bool, np.bool_)):
        return False
    try:
        return operator.index(opset) >= 1
    except TypeError:
        return False


def allowed_at(opset: object) -> set[np.dtype]:
    """From the specification (the tests' type table, not onnx_relu.versions)."""
    return {t.dtype for t in dtypes.allowed_at(None if opset is None else int(opset))}


def native(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


# ---------------------------------------------------------------------------------------------
# Target: relu on arrays of any type, layout and byte order, with every kind of ``out``
# ---------------------------------------------------------------------------------------------

OUT_KINDS = [
    "none",
    "fresh",
    "fresh-other-order",
    "strided",
    "in-place",
    "reversed-self",
    "wrong-shape",
    "wrong-dtype",
    "read-only",
    "not-an-array",
    "zero-stride",
]


@st.composite
def out_for(draw: st.DrawFn, x: np.ndarray):
    """An ``out`` argument of a drawn kind for input ``x``, and the problem it has (or None)."""
    kind = draw(st.sampled_from(OUT_KINDS))
    event(f"out: {kind}")
    shape, dtype = x.shape, x.dtype
    if kind == "none":
        return kind, None, None
    if kind == "fresh":
        return kind, np.empty(shape, dtype=dtype, order=draw(st.sampled_from("CF"))), None
    if kind == "fresh-other-order":
        other = dtype.newbyteorder("S")
        return kind, np.empty(shape, dtype=other), None
    if kind == "strided":
        big = np.empty(tuple(2 * n for n in shape), dtype=dtype)
        return kind, big[tuple(slice(None, None, -2) for _ in shape) + (Ellipsis,)], None
    if kind == "in-place":
        return kind, x, None
    if kind == "reversed-self":
        return kind, x[tuple(slice(None, None, -1) for _ in shape) + (Ellipsis,)], None
    if kind == "wrong-shape":
        other_shape = draw(
            st.sampled_from([shape + (1,), shape[1:], tuple(n + 1 for n in shape) or (2,)])
        )
        if other_shape == shape:
            other_shape = shape + (2,)
        return kind, np.empty(other_shape, dtype=dtype), InvalidOutputError
    if kind == "wrong-dtype":
        others = [d for d in RELU_DTYPES + (np.dtype(np.uint8),) if d != native(dtype)]
        return kind, np.empty(shape, dtype=draw(st.sampled_from(others))), UnsupportedTypeError
    if kind == "read-only":
        out = np.zeros(shape, dtype=dtype)
        out.flags.writeable = False
        return kind, out, InvalidOutputError
    if kind == "not-an-array":
        return (
            kind,
            draw(st.sampled_from([[0.0], (None,), 0, "out", memoryview(b"")])),
            InvalidOutputError,
        )
    # zero-stride: every element one memory location; a problem only with two elements or more
    # (np.ndarray over a buffer, not as_strided: as_strided cannot rebuild ml_dtypes types)
    out = np.ndarray(shape, dtype=dtype, buffer=np.zeros(1, dtype=dtype), strides=(0,) * len(shape))
    return kind, out, InvalidOutputError if out.size > 1 else None


def _buffer_bytes(a: object) -> bytes | None:
    """The bytes of the memory behind an array (its base buffer when it is a view)."""
    if not isinstance(a, np.ndarray):
        return None
    owner = a
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    return owner.tobytes(order="A")


@examples()
@given(drawn=arrays_any_layout(), opset=OPSETS, data=st.data())
def test_fuzz_relu_arrays(drawn: Drawn, opset, data):
    x = drawn.array
    kind, out, out_problem = data.draw(out_for(x))
    problems: list[type[BaseException]] = []
    if not opset_is_valid(opset):
        problems.append(InvalidOpsetError)
    elif native(x.dtype) not in allowed_at(opset):
        problems.append(UnsupportedTypeError)
    if out_problem is not None:
        problems.append(out_problem)
    event("valid" if not problems else "invalid: " + ", ".join(p.__name__ for p in problems))

    x_copy = x.copy()
    x_before = drawn.buffer.tobytes()
    out_before = _buffer_bytes(out)
    try:
        result = relu(x, out=out, opset=opset)
    except Exception as exc:  # noqa: BLE001 - judged below
        assert problems, f"refused a valid call ({kind=}, {opset=}): {exc!r}"
        assert isinstance(exc, tuple(problems)), f"{exc!r} is none of {problems}"
        assert isinstance(exc, OnnxReluError), f"{exc!r} is no OnnxReluError"
        assert drawn.buffer.tobytes() == x_before, "a refused call changed the input"
        assert _buffer_bytes(out) == out_before, "a refused call changed out"
        return
    assert not problems, (
        f"accepted an invalid call ({kind=}, {opset=}, dtype={x.dtype}); expected {problems}"
    )
    want = as_bits(expected_relu(x_copy))
    got = np.asarray(result)
    assert got.shape == x.shape
    assert np.array_equal(as_bits(got), want), f"wrong result ({kind=}, dtype={x.dtype.str})"
    if out is not None:
        assert result is out
    elif x.ndim == 0:  # a numpy scalar, as numpy's ufuncs give; scalars are native-order
        assert isinstance(result, np.generic) and result.dtype == native(x.dtype)
    else:
        assert got.dtype == x.dtype
    if kind in ("none", "fresh", "fresh-other-order", "strided"):
        assert drawn.buffer.tobytes() == x_before, "the input changed"


# ---------------------------------------------------------------------------------------------
# Target: relu on arbitrary Python objects (nested lists, scalars, strings, None, ...)
# ---------------------------------------------------------------------------------------------

_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.complex_numbers(max_magnitude=1e6)
    | st.text(max_size=3)
    | st.binary(max_size=3)
    | st.builds(object)
)
PY_OBJECTS = st.recursive(
    _LEAVES,
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=2), children, max_size=2)
    ),
    max_leaves=12,
)


@examples(0.5)
@given(obj=PY_OBJECTS, opset=st.sampled_from([None, 6, 13, 14]))
def test_fuzz_relu_python_objects(obj, opset):
    try:
        as_array = np.asarray(obj)
    except ValueError as numpy_error:  # ragged nesting: numpy's own ValueError passes through
        event("numpy refuses to convert")
        try:
            relu(obj, opset=opset)
        except ValueError as exc:
            assert type(exc) is type(numpy_error) and str(exc) == str(numpy_error)
            return
        raise AssertionError("relu accepted what numpy.asarray refuses") from numpy_error
    if native(as_array.dtype) not in allowed_at(opset):
        event(f"refused: {as_array.dtype.kind}")
        try:
            relu(obj, opset=opset)
        except UnsupportedTypeError as exc:
            assert "allow" in str(exc)
            return
        raise AssertionError(f"relu accepted a {as_array.dtype} input at opset {opset}")
    event(f"computed: {as_array.dtype}")
    result = np.asarray(relu(obj, opset=opset))
    assert result.dtype == as_array.dtype
    assert np.array_equal(as_bits(result), as_bits(expected_relu(as_array)))


# ---------------------------------------------------------------------------------------------
# Target: check_dtype on anything that might name a dtype
# ---------------------------------------------------------------------------------------------

DTYPE_LIKE = (
    any_dtype()
    | st.text(max_size=6)
    | st.sampled_from(
        ["i4,(", "f4,", "2f4", "(2)i4", "float", "V", "M8[foo]", "O", "<f4", ">i8", "bfloat16"]
    )
    | st.sampled_from(
        [int, float, bool, complex, str, bytes, object, np.float32, ml_dtypes.bfloat16]
    )
    | st.none()
    | st.integers()
    | st.builds(object)
)


@examples(0.5)
@given(dtype_like=DTYPE_LIKE, opset=OPSETS)
def test_fuzz_check_dtype(dtype_like, opset):
    with warnings.catch_warnings():
        # numpy warns about deprecated aliases ("a") itself; that warning is numpy's to give.
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            result = onnx_relu.check_dtype(dtype_like, opset)
        except InvalidOpsetError:
            assert not opset_is_valid(opset)
            return
        except UnsupportedTypeError as exc:
            assert opset_is_valid(opset)
            assert "allowed types" in str(exc)
            return
    assert opset_is_valid(opset), f"accepted opset {opset!r}"
    assert isinstance(result, np.dtype)
    assert native(result) in allowed_at(opset), f"accepted {result!r} at opset {opset!r}"
