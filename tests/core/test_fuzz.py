"""Fuzzing with Hypothesis: no crash, only documented exceptions, exact results.

Targets: the public API on arrays and Python objects (``relu``, ``check_dtype``), the tensor-file
readers (``read_tensor``, and ``relu_file``, which ``onnx-relu apply`` runs) and the model checker
and backend (``check_model``, ``backend.prepare`` and ``run``) on random and mutated bytes.

Each array target draws inputs, predicts from the specification alone whether the call is valid
(and if not, which documented exceptions may answer it), then checks the call: a valid call
returns the bit-exact Relu; an invalid one raises one of the predicted exceptions and changes no
byte. Example counts come from the profile in fuzz_support.py (``HYPOTHESIS_PROFILE=ci|thorough``).
"""

from __future__ import annotations

import contextlib
import io
import operator
import os
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import onnx_relu
from fuzz_support import Drawn, any_dtype, arrays_any_layout, bits_of, fuzz_settings, mutated_bytes
from onnx_relu import relu
from onnx_relu.apply_files import relu_file
from onnx_relu.errors import (
    InvalidOpsetError,
    InvalidOutputError,
    OnnxReluError,
    UnsupportedTypeError,
)
from onnx_relu.tensor_files import read_tensor, write_tensor
from relu_oracle import ALL_RELU_DTYPES, expected_relu

onnx = pytest.importorskip("onnx")  # the model targets and .pb files need it; `make test` has it
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from _onnx_helpers import RELU_TYPES  # noqa: E402
from onnx_relu import backend, check_model  # noqa: E402

# From the specification (not from onnx_relu.versions): which types each opset allows.
_FLOATS = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}
_BF16 = np.dtype(ml_dtypes.bfloat16)
_INTS = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)}

VALID_OPSETS = st.sampled_from([None, None, 1, 5, 6, 12, 13, 14, 18, 23, np.int32(13), np.int64(14)])
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
    latest = opset is None
    allowed = set(_FLOATS)
    if latest or int(opset) >= 13:
        allowed.add(_BF16)
    if latest or int(opset) >= 14:
        allowed |= _INTS
    return allowed


def native(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


# ---------------------------------------------------------------------------------------------
# Target: relu on arrays of any type, layout and byte order, with every kind of ``out``
# ---------------------------------------------------------------------------------------------

OUT_KINDS = ["none", "fresh", "fresh-other-order", "strided", "in-place", "reversed-self",
             "wrong-shape", "wrong-dtype", "read-only", "not-an-array", "zero-stride"]


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
        other_shape = draw(st.sampled_from([shape + (1,), shape[1:], tuple(n + 1 for n in shape) or (2,)]))
        if other_shape == shape:
            other_shape = shape + (2,)
        return kind, np.empty(other_shape, dtype=dtype), InvalidOutputError
    if kind == "wrong-dtype":
        others = [d for d in ALL_RELU_DTYPES + (np.dtype(np.uint8),) if d != native(dtype)]
        return kind, np.empty(shape, dtype=draw(st.sampled_from(others))), UnsupportedTypeError
    if kind == "read-only":
        out = np.zeros(shape, dtype=dtype)
        out.flags.writeable = False
        return kind, out, InvalidOutputError
    if kind == "not-an-array":
        return kind, draw(st.sampled_from([[0.0], (None,), 0, "out", memoryview(b"")])), InvalidOutputError
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


@fuzz_settings()
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
        assert drawn.buffer.tobytes() == x_before, "a refused call changed the input"
        assert _buffer_bytes(out) == out_before, "a refused call changed out"
        return
    assert not problems, f"accepted an invalid call ({kind=}, {opset=}, dtype={x.dtype}); expected {problems}"
    want = bits_of(expected_relu(x_copy))
    got = np.asarray(result)
    assert got.shape == x.shape
    assert np.array_equal(bits_of(got), want), f"wrong result ({kind=}, dtype={x.dtype.str})"
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
    lambda children: st.lists(children, max_size=4) | st.tuples(children, children) | st.dictionaries(st.text(max_size=2), children, max_size=2),
    max_leaves=12,
)


@fuzz_settings(0.5)
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
        raise AssertionError("relu accepted what numpy.asarray refuses")
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
    assert np.array_equal(bits_of(result), bits_of(expected_relu(as_array)))


# ---------------------------------------------------------------------------------------------
# Target: check_dtype on anything that might name a dtype
# ---------------------------------------------------------------------------------------------

DTYPE_LIKE = (
    any_dtype()
    | st.text(max_size=6)
    | st.sampled_from(["i4,(", "f4,", "2f4", "(2)i4", "float", "V", "M8[foo]", "O", "<f4", ">i8", "bfloat16"])
    | st.sampled_from([int, float, bool, complex, str, bytes, object, np.float32, ml_dtypes.bfloat16])
    | st.none()
    | st.integers()
    | st.builds(object)
)


@fuzz_settings(0.5)
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


# ---------------------------------------------------------------------------------------------
# Targets: the tensor-file readers (read_tensor, and relu_file, which `apply` runs) and the model
# checker and backend, on random bytes and on mutated valid files
# ---------------------------------------------------------------------------------------------
#
# Documented outcomes (docs/reliability.md): a file is read, or refused with one of the error
# classes of onnx_relu.errors, or the OS refuses it (OSError). Anything else (a bare ValueError,
# KeyError, MemoryError, a crash) is a bug. Warnings that onnx or numpy give about a file's
# content are allowed (see parser_warnings_allowed): theirs to give, and not exceptions.

DOCUMENTED = (OnnxReluError, OSError)


@pytest.fixture(scope="module")
def fuzz_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _is_parser_warning(warning: warnings.WarningMessage) -> bool:
    if any(f"{os.sep}{package}{os.sep}" in warning.filename for package in ("onnx", "numpy")):
        return True  # e.g. an unknown external-data key, a deprecated dtype alias ('|a1')
    # Python's compiler, parsing a .npy header with ast.literal_eval as numpy.load does, warns
    # about an invalid escape ('\d') or a number run into a name ('1if'); the header is then
    # refused (or read); under -W error the warning becomes a SyntaxError, so the refusal.
    return warning.filename == "<unknown>" and issubclass(
        warning.category, (DeprecationWarning, SyntaxWarning))


@contextlib.contextmanager
def parser_warnings_allowed():
    """Let warnings that onnx, numpy or Python's parser give about a file's content through
    (theirs to give, and only warnings, not exceptions); a warning from anywhere else
    (onnx-relu itself) fails the test."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        event(f"warning: {warning.category.__name__}")
        assert _is_parser_warning(warning), f"unexpected warning {warning}"


def _npy(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array)
    else:  # numpy's writer for an explicit format version
        np.lib.format.write_array(buffer, array, version=version)
    return buffer.getvalue()


def _seed_arrays() -> list[np.ndarray]:
    arrays = [np.arange(-6, 6).astype(d).reshape(3, 4) for d in ALL_RELU_DTYPES]
    arrays += [
        np.asfortranarray(np.arange(-6.0, 6.0, dtype=np.float32).reshape(3, 4)),
        np.array(-1.5, dtype=np.float64),  # 0-d
        np.zeros((2, 0, 3), dtype=np.int16),  # empty
        np.arange(-3, 3, dtype=">i4"),  # big-endian
        np.array([0, 200, 255], dtype=np.uint8),  # a type Relu refuses
        np.zeros(2, dtype=[("a", "<i2"), ("b", "<f4")]),  # structured
    ]
    return arrays


NPY_SEEDS = [_npy(a) for a in _seed_arrays()] + [
    _npy(np.arange(-2, 2, dtype=np.float32), version=(2, 0)),
    _npy(np.arange(-2, 2, dtype=np.float32), version=(3, 0)),
]
PB_SEEDS = [numpy_helper.from_array(a, name="t").SerializeToString()
            for a in _seed_arrays() if a.dtype.fields is None and a.dtype.isnative] + [
    numpy_helper.from_array(np.array([b"ab", b"-1"], dtype=object)).SerializeToString(),
    helper.make_tensor("f", TensorProto.FLOAT, [3], [1.0, -2.0, 3.0]).SerializeToString(),
    helper.make_tensor("h", TensorProto.FLOAT16, [2], np.array([1, -2], np.float16)).SerializeToString(),
    helper.make_tensor("i4", TensorProto.INT4, [3], [1, -2, 3]).SerializeToString(),
]


def _header_text(draw: st.DrawFn) -> bytes:
    """A .npy header that is a plausible dict with odd values (shapes huge, negative, deep)."""
    descr = draw(st.sampled_from(["<f4", "<V2", "|V2", "<i8", ">f2", "|b1", "|O", "<U3", "<q9", "",
                                  ("<f4", (2,)), [("a", "<f4")], [("a", "|O")], 5, None]))
    extent = st.one_of(st.integers(0, 8), st.sampled_from([-1, 2**31, 2**62, 2**63, 2**64]))
    shape = draw(st.one_of(st.lists(extent, max_size=4).map(tuple),
                           st.sampled_from([(1,) * 65, [3], (1.0,), "3", None, (True,)])))
    fortran = draw(st.sampled_from([False, True, 0, None]))
    keys = draw(st.sampled_from([("descr", "fortran_order", "shape"),
                                 ("descr", "shape"), ("descr", "fortran_order", "shape", "x")]))
    values = {"descr": descr, "fortran_order": fortran, "shape": shape, "x": 1}
    text = "{" + "".join(f"{k!r}: {values[k]!r}, " for k in keys) + "}"
    text += " " * (-(10 + len(text) + 1) % 64) + "\n"
    return text.encode("latin1")


@st.composite
def npy_file_bytes(draw: st.DrawFn) -> bytes:
    """Random bytes, a mutated valid .npy, or a valid magic with a made-up header and data."""
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "mutated", "made-up-header"]))
    event(f"npy: {kind}")
    if kind == "random":
        return draw(st.binary(max_size=300))
    if kind == "mutated":
        return draw(mutated_bytes(NPY_SEEDS))
    text = _header_text(draw)
    return (b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text
            + draw(st.binary(max_size=64)))


@st.composite
def pb_file_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "mutated"]))
    event(f"pb: {kind}")
    if kind == "random":
        return draw(st.binary(max_size=300))
    return draw(mutated_bytes(PB_SEEDS))


def _read_or_refuse(path: Path):
    """read_tensor(path), or None when refused with a documented error; the file unchanged."""
    before = path.read_bytes()
    try:
        array = read_tensor(path)
    except DOCUMENTED as exc:
        event(f"refused: {type(exc).__name__}")
        array = None
    assert path.read_bytes() == before, "reading changed the file"
    return array


@fuzz_settings(2.0)
@given(content=npy_file_bytes())
def test_fuzz_npy_reader_and_apply(fuzz_folder, content):
    src, dst = fuzz_folder / "in.npy", fuzz_folder / "out.npy"
    src.write_bytes(content)
    dst.unlink(missing_ok=True)
    with parser_warnings_allowed():
        array = _read_or_refuse(src)
        try:
            relu_file(src, dst, chunk_bytes=64)  # `apply`: header check, memory-mapped windows
        except DOCUMENTED as exc:
            assert not dst.exists(), "a refused apply left an output"
            if array is not None:  # read fine, so only its type may be refused
                assert isinstance(exc, UnsupportedTypeError), f"read it; apply: {exc!r}"
        else:
            assert array is not None, "apply accepted a file read_tensor refuses"
            result = read_tensor(dst)
            assert result.shape == array.shape and result.dtype == array.dtype
            assert np.array_equal(bits_of(result), bits_of(expected_relu(array)))
    assert src.read_bytes() == content, "apply changed its input"
    assert sorted(os.listdir(fuzz_folder)) in (["in.npy"], ["in.npy", "out.npy"])


@fuzz_settings(2.0)
@given(content=pb_file_bytes())
def test_fuzz_pb_reader(fuzz_folder, content):
    src = fuzz_folder / "in.pb"
    src.write_bytes(content)
    with parser_warnings_allowed():
        array = _read_or_refuse(src)
    src.unlink()
    if array is None:
        return
    assert isinstance(array, np.ndarray) and array.flags.writeable
    if array.dtype.hasobject:
        return  # strings: read as Python bytes objects
    # What was read is written back and read again bit for bit (NaN payloads included).
    write_tensor(src, array)
    again = read_tensor(src)
    src.unlink()
    assert again.dtype == array.dtype and again.shape == array.shape
    assert again.tobytes() == array.tobytes()


def _model(nodes, inputs, outputs, opset=14, initializers=(), **kwargs) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kwargs)
    return model.SerializeToString()


def _value(name, elem_type=TensorProto.FLOAT, shape=("n",)):
    return helper.make_tensor_value_info(name, elem_type, None if shape is None else list(shape))


def _branch(elem_type: int) -> onnx.GraphProto:
    return helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="inner")], "branch",
                             [], [_value("t", elem_type, None)])


MODEL_SEEDS = [
    _model([helper.make_node("Relu", ["x"], ["y"], name="a"),
            helper.make_node("Relu", ["y"], ["z"], name="b")],
           [_value("x")], [_value("y"), _value("z")]),
    _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [_value("x", TensorProto.INT8)],
           [_value("y", TensorProto.INT8)], opset=13),
    _model([helper.make_node("Relu", ["x"], ["y"], consumed_inputs=[0])], [_value("x")],
           [_value("y")], opset=1),
    _model([helper.make_node("Relu", ["w"], ["y"])], [], [_value("y", shape=[3])],
           initializers=[numpy_helper.from_array(np.array([-1.0, 0.5, 2.0], np.float32), "w")]),
    _model([helper.make_node("Add", ["x", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
           [_value("x", TensorProto.INT64, [2])], [_value("y", TensorProto.INT64, [2])]),
    _model([helper.make_node("If", ["c"], ["o"], then_branch=_branch(TensorProto.FLOAT),
                             else_branch=_branch(TensorProto.FLOAT))],
           [_value("c", TensorProto.BOOL, []), _value("x", shape=[2])], [_value("o", shape=None)]),
    _model([helper.make_node("Relu", ["x"], ["y"])], [_value("x", TensorProto.BFLOAT16, [2, 3])],
           [_value("y", TensorProto.BFLOAT16, [2, 3])], opset=21),
]


@st.composite
def model_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "mutated"]))
    event(f"model: {kind}")
    if kind == "random":
        return draw(st.binary(max_size=300))
    return draw(mutated_bytes(MODEL_SEEDS))


# Element types: every Relu type, types no Relu allows, UNDEFINED and unknown numbers.
ELEM_TYPES = st.sampled_from([1, 10, 11, 16, 3, 5, 6, 7, 2, 9, 8, 14, 17, 22, 0, 99, -1])
NAMES = st.sampled_from(["x", "y", "z", "w", ""])


@st.composite
def random_models(draw: st.DrawFn) -> onnx.ModelProto:
    """Models built from parts, most nearly valid: a chain x -> ... of nodes (mostly ai.onnx
    Relu) of which any part may be off: names, types, shapes, attributes, initializers,
    subgraphs, opsets, IR version. So the checks after parsing are reached, not just the
    parser."""
    chain = ["x", "y", "z", "w"]
    nodes = []
    for index in range(draw(st.integers(0, 3))):
        op_type = draw(st.sampled_from(["Relu"] * 6 + ["Identity", "Add", "If"]))
        inputs, outputs = [chain[index]], [chain[index + 1]]
        if draw(st.integers(0, 4)) == 0:  # sometimes dangling, missing, extra or empty names
            inputs, outputs = draw(st.lists(NAMES, max_size=2)), draw(st.lists(NAMES, max_size=2))
        attributes = {}
        if op_type == "If":
            attributes = {"then_branch": _branch(draw(ELEM_TYPES)),
                          "else_branch": _branch(draw(ELEM_TYPES))}
        domain = draw(st.sampled_from(["", "", "", "ai.onnx", "com.example"]))
        node = helper.make_node(op_type, inputs, outputs, domain=domain, **attributes)
        for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2])) if op_type != "If" else 0):
            name = draw(st.sampled_from(["consumed_inputs", "alpha"]))
            value = draw(st.sampled_from([[0], [0, 1], [], 1.5, "text"]))
            node.attribute.append(helper.make_attribute(
                name, value, attr_type=onnx.AttributeProto.INTS if value == [] else None))
        nodes.append(node)
    elem_type = draw(st.one_of(st.sampled_from([1, 10, 11, 16, 3, 5, 6, 7]), ELEM_TYPES))
    shapes = st.sampled_from([None, [], [2], ["n"], [0], [2, 3], [-1], [2**40, 2**40]])
    inputs = [_value("x", elem_type, draw(shapes))]
    outputs = [_value(chain[len(nodes)], draw(st.sampled_from([elem_type, 0, 2])), draw(shapes))]
    if draw(st.integers(0, 3)) == 0:
        inputs += [_value(name, draw(ELEM_TYPES), draw(shapes))
                   for name in draw(st.lists(NAMES, max_size=2))]
        outputs += [_value(name, draw(ELEM_TYPES), draw(shapes))
                    for name in draw(st.lists(NAMES, max_size=2))]
    initializers = [
        TensorProto(name=draw(NAMES), data_type=draw(ELEM_TYPES),
                    dims=draw(st.lists(st.sampled_from([0, 1, 2, 3, 2**40]), max_size=2)),
                    raw_data=draw(st.binary(max_size=24)))
        for _ in range(draw(st.sampled_from([0, 0, 1, 2])))
    ]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers)
    opsets = [("", draw(st.sampled_from([1, 6, 13, 14, 18, 21])))]
    if draw(st.integers(0, 3)) == 0:
        opsets = draw(st.lists(st.tuples(st.sampled_from(["", "ai.onnx", "com.example"]),
                                         st.sampled_from([1, 6, 13, 14, 0, -1, 10**6])),
                               max_size=2))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(*o) for o in opsets])
    if draw(st.integers(0, 7)) == 0:
        model.ir_version = draw(st.sampled_from([0, 3, -1]))
    return model


def _check_and_prepare(model) -> None:
    """check_model and backend.prepare accept or refuse with documented errors; a prepared
    model runs on inputs of its declared types or refuses them with documented errors."""
    with parser_warnings_allowed():
        try:
            findings = check_model(model)
        except DOCUMENTED as exc:
            event(f"check_model refused: {type(exc).__name__}")
        else:
            event(f"check_model: {'findings' if findings else 'valid'}")
            assert all(f.kind in ("arity", "attribute", "type-unknown", "type-not-allowed")
                       for f in findings)
        try:
            rep = backend.prepare(model)
        except DOCUMENTED as exc:
            event(f"prepare refused: {type(exc).__name__}")
            rep = None
    if rep is None:
        return
    event("prepared")
    feeds = {}
    for graph_input in rep.required_inputs:
        declared = RELU_TYPES.get(graph_input.onnx_type or "tensor(float)")
        if declared is None:
            return  # an input no Relu reads, of a type without a numpy counterpart here
        shape = (2,) if graph_input.shape is None else tuple(
            1 if size is None or size < 0 else size for size in graph_input.shape)
        if np.prod(shape, dtype=np.float64) > 1e6:
            return
        feeds[graph_input.name] = np.full(shape, -1, dtype=declared[1])
    try:
        outputs = rep.run(feeds)
    except OnnxReluError as exc:
        event(f"run refused: {type(exc).__name__}")
        return
    event("ran")
    for output in outputs:
        assert isinstance(output, np.ndarray)


@fuzz_settings(2.0)
@given(content=model_bytes())
def test_fuzz_model_bytes_check_model_and_prepare(content):
    _check_and_prepare(content)


@fuzz_settings(1.0)
@given(model=random_models())
def test_fuzz_random_models_check_model_and_prepare(model):
    serialized = model.SerializeToString()
    _check_and_prepare(model)
    assert model.SerializeToString() == serialized, "the caller's model was changed"
