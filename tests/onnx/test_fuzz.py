"""Fuzzing the model checker and the backend with Hypothesis: ``check_model`` and
``backend.prepare`` (and ``run`` on a prepared model) on random bytes, on mutated valid models
and on models built from parts, most nearly valid, any part of which may be off.

The documented outcomes are success, an ``OnnxReluError`` or an ``OSError``; the caller's
``ModelProto`` is never changed. Example counts come from the profile loaded in
tests/conftest.py, scaled per target by ``examples(weight)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from onnx_relu.errors import OnnxReluError
from tests.support.dtypes import RELU_TYPES
from tests.support.strategies import examples, parser_warnings_allowed, random_or_mutated_bytes

onnx = pytest.importorskip("onnx")  # `make test` has it
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onnx_relu import backend, check_model  # noqa: E402
from tests.support.onnx_models import graph_model, value_info  # noqa: E402

# Documented outcomes (docs/reliability.md): success, one of the error classes of
# onnx_relu.errors, or an OSError; anything else is a bug.
DOCUMENTED = (OnnxReluError, OSError)

#: The numpy type of each Relu type's ONNX name, to feed a prepared model.
DTYPE_OF = {t.onnx_name: t.dtype for t in RELU_TYPES}


def _model(nodes, inputs, outputs, opset=14, initializers=()) -> bytes:
    model = graph_model(nodes, inputs, outputs, opset=opset, initializers=initializers)
    return model.SerializeToString()


def _value(name, elem_type=TensorProto.FLOAT, shape=("n",)):
    return value_info(name, elem_type, shape)


def _branch(elem_type: int) -> onnx.GraphProto:
    return helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="inner")],
        "branch",
        [],
        [_value("t", elem_type, None)],
    )


MODEL_SEEDS = [
    _model(
        [
            helper.make_node("Relu", ["x"], ["y"], name="a"),
            helper.make_node("Relu", ["y"], ["z"], name="b"),
        ],
        [_value("x")],
        [_value("y"), _value("z")],
    ),
    _model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [_value("x", TensorProto.INT8)],
        [_value("y", TensorProto.INT8)],
        opset=13,
    ),
    _model(
        [helper.make_node("Relu", ["x"], ["y"], consumed_inputs=[0])],
        [_value("x")],
        [_value("y")],
        opset=1,
    ),
    _model(
        [helper.make_node("Relu", ["w"], ["y"])],
        [],
        [_value("y", shape=[3])],
        initializers=[numpy_helper.from_array(np.array([-1.0, 0.5, 2.0], np.float32), "w")],
    ),
    _model(
        [helper.make_node("Add", ["x", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
        [_value("x", TensorProto.INT64, [2])],
        [_value("y", TensorProto.INT64, [2])],
    ),
    _model(
        [
            helper.make_node(
                "If",
                ["c"],
                ["o"],
                then_branch=_branch(TensorProto.FLOAT),
                else_branch=_branch(TensorProto.FLOAT),
            )
        ],
        [_value("c", TensorProto.BOOL, []), _value("x", shape=[2])],
        [_value("o", shape=None)],
    ),
    _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [_value("x", TensorProto.BFLOAT16, [2, 3])],
        [_value("y", TensorProto.BFLOAT16, [2, 3])],
        opset=21,
    ),
]


def model_bytes() -> st.SearchStrategy[bytes]:
    return random_or_mutated_bytes(MODEL_SEEDS, "model")


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
            attributes = {
                "then_branch": _branch(draw(ELEM_TYPES)),
                "else_branch": _branch(draw(ELEM_TYPES)),
            }
        domain = draw(st.sampled_from(["", "", "", "ai.onnx", "com.example"]))
        node = helper.make_node(op_type, inputs, outputs, domain=domain, **attributes)
        for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2])) if op_type != "If" else 0):
            name = draw(st.sampled_from(["consumed_inputs", "alpha"]))
            value = draw(st.sampled_from([[0], [0, 1], [], 1.5, "text"]))
            node.attribute.append(
                helper.make_attribute(
                    name, value, attr_type=onnx.AttributeProto.INTS if value == [] else None
                )
            )
        nodes.append(node)
    elem_type = draw(st.one_of(st.sampled_from([1, 10, 11, 16, 3, 5, 6, 7]), ELEM_TYPES))
    shapes = st.sampled_from([None, [], [2], ["n"], [0], [2, 3], [-1], [2**40, 2**40]])
    inputs = [_value("x", elem_type, draw(shapes))]
    outputs = [_value(chain[len(nodes)], draw(st.sampled_from([elem_type, 0, 2])), draw(shapes))]
    if draw(st.integers(0, 3)) == 0:
        inputs += [
            _value(name, draw(ELEM_TYPES), draw(shapes))
            for name in draw(st.lists(NAMES, max_size=2))
        ]
        outputs += [
            _value(name, draw(ELEM_TYPES), draw(shapes))
            for name in draw(st.lists(NAMES, max_size=2))
        ]
    initializers = [
        TensorProto(
            name=draw(NAMES),
            data_type=draw(ELEM_TYPES),
            dims=draw(st.lists(st.sampled_from([0, 1, 2, 3, 2**40]), max_size=2)),
            raw_data=draw(st.binary(max_size=24)),
        )
        for _ in range(draw(st.sampled_from([0, 0, 1, 2])))
    ]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers)
    opsets = [("", draw(st.sampled_from([1, 6, 13, 14, 18, 21])))]
    if draw(st.integers(0, 3)) == 0:
        opsets = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["", "ai.onnx", "com.example"]),
                    st.sampled_from([1, 6, 13, 14, 0, -1, 10**6]),
                ),
                max_size=2,
            )
        )
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
            assert all(
                f.kind in ("arity", "attribute", "type-unknown", "type-not-allowed")
                for f in findings
            )
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
        declared = DTYPE_OF.get(graph_input.onnx_type or "tensor(float)")
        if declared is None:
            return  # an input no Relu reads, of a type without a numpy counterpart here
        shape = (
            (2,)
            if graph_input.shape is None
            else tuple(1 if size is None or size < 0 else size for size in graph_input.shape)
        )
        if np.prod(shape, dtype=np.float64) > 1e6:
            return
        feeds[graph_input.name] = np.full(shape, -1, dtype=declared)
    try:
        outputs = rep.run(feeds)
    except OnnxReluError as exc:
        event(f"run refused: {type(exc).__name__}")
        return
    event("ran")
    for output in outputs:
        assert isinstance(output, np.ndarray)


@examples(2.0)
@given(content=model_bytes())
def test_fuzz_model_bytes_check_model_and_prepare(content):
    _check_and_prepare(content)


@examples(1.0)
@given(model=random_models())
def test_fuzz_random_models_check_model_and_prepare(model):
    serialized = model.SerializeToString()
    _check_and_prepare(model)
    assert model.SerializeToString() == serialized, "the caller's model was changed"
