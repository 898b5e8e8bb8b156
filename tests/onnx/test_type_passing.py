"""Relu input types handed on through the common operators whose output has their input's type
(issue 34: the reading's cost): the table is onnx's own schemas, and the types it gives are
those onnx's shape inference gives, which then is not run.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, defs, helper, numpy_helper

from onnx_relu import check_model
from onnx_relu.onnx import _models


def test_each_operator_of_the_table_hands_its_first_inputs_type_to_its_first_output():
    """At every version from the one the table names to onnx's newest, the schema's first input
    and first output share one type variable; the version before has no schema."""
    latest = defs.onnx_opset_version()
    for op_type, first in _models._TYPE_PASSING.items():
        schema = defs.get_schema(op_type, first, "")
        assert schema.since_version == first, op_type
        opsets = range(first, latest + 1)
        versions = sorted({defs.get_schema(op_type, opset, "").since_version for opset in opsets})
        for version in versions:
            schema = defs.get_schema(op_type, version, "")
            assert not schema.deprecated, (op_type, version)
            assert schema.inputs[0].type_str == schema.outputs[0].type_str, (op_type, version)
    assert "Cast" not in _models._TYPE_PASSING  # its output type is its attribute's


def _vi(name: str, elem_type: int, shape: list[object]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def _cnn(opset: int, relu_type: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """Conv -> BatchNormalization -> Relu -> MaxPool -> Reshape -> MatMul -> Add -> Relu, and a
    Relu of ``relu_type`` between casts; only the input and output declared."""
    rng = np.random.default_rng(0)
    weights = {
        "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "scale": np.ones(4, np.float32),
        "bias": np.zeros(4, np.float32),
        "mean": np.zeros(4, np.float32),
        "var": np.ones(4, np.float32),
        "shape": np.array([1, -1], np.int64),
        "m": rng.standard_normal((64, 5)).astype(np.float32),
        "b": np.zeros(5, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"]),
        helper.make_node("Relu", ["n"], ["r1"], name="after_bn"),
        helper.make_node("MaxPool", ["r1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "m"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r2"], name="after_add"),
        helper.make_node("Cast", ["r2"], ["t"], to=relu_type),
        helper.make_node("Relu", ["t"], ["r3"], name="after_cast"),
        helper.make_node("Cast", ["r3"], ["y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [_vi("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [_vi("y", TensorProto.FLOAT, [1, 5])],
        [numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize(
    ("opset", "relu_type"),
    [(17, TensorProto.FLOAT), (21, TensorProto.BFLOAT16), (13, TensorProto.INT8)],
)
def test_a_cnn_is_typed_as_shape_inference_types_it_without_running_it(
    opset, relu_type, monkeypatch
):
    model = _cnn(opset, relu_type)
    onnx.checker.check_model(model)
    inferred = _models.inferred_model(model)
    expected = [site.input_type for site in _models.relu_sites(inferred.graph)]
    assert None not in expected and len(expected) == 3
    findings = check_model(model)

    def refused(model: onnx.ModelProto) -> onnx.ModelProto:
        raise AssertionError("shape inference ran")

    monkeypatch.setattr(_models, "inferred_model", refused)
    typed = _models.typed_relu_sites(model)
    assert [site.input_type for site in typed.sites] == expected
    assert check_model(model) == findings
    assert [f.node_name for f in findings] == (
        ["after_cast"] if relu_type == TensorProto.INT8 else []
    )


def test_an_operator_newer_than_the_models_opset_hands_nothing_on(monkeypatch):
    """LayerNormalization exists from opset 17: at opset 16 the reading does not take its type
    as known (onnx's inference, which then runs, has no such operator either)."""
    nodes = [
        helper.make_node("LayerNormalization", ["x", "s"], ["n"]),
        helper.make_node("Relu", ["n"], ["y"], name="after_ln"),
    ]
    graph = helper.make_graph(
        nodes,
        "ln",
        [_vi("x", TensorProto.FLOAT, [2, 4]), _vi("s", TensorProto.FLOAT, [4])],
        [_vi("y", TensorProto.FLOAT, [2, 4])],
    )
    ran = []
    real = _models.inferred_model
    monkeypatch.setattr(_models, "inferred_model", lambda m: ran.append(1) or real(m))
    at_17 = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert [s.input_type for s in _models.typed_relu_sites(at_17).sites] == ["tensor(float)"]
    assert ran == []
    at_16 = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    _models.typed_relu_sites(at_16)
    assert ran == [1]


def test_a_declared_type_is_kept_and_another_kind_of_value_is_left_to_onnx(monkeypatch):
    """The reading hands on only the eight Relu types, and never over a declared one."""
    nodes = [
        helper.make_node("Identity", ["x"], ["i"]),
        helper.make_node("Relu", ["i"], ["y"], name="r"),
    ]
    declared = helper.make_graph(
        nodes,
        "g",
        [_vi("x", TensorProto.FLOAT, [2])],
        [_vi("y", TensorProto.INT8, [2])],
        value_info=[_vi("i", TensorProto.INT8, [2])],
    )
    model = helper.make_model(declared, opset_imports=[helper.make_opsetid("", 13)])
    assert [s.input_type for s in _models.typed_relu_sites(model).sites] == ["tensor(int8)"]
    strings = helper.make_graph(
        nodes,
        "g",
        [_vi("x", TensorProto.STRING, [2])],
        [_vi("y", TensorProto.STRING, [2])],
    )
    model = helper.make_model(strings, opset_imports=[helper.make_opsetid("", 13)])
    ran = []
    real = _models.inferred_model
    monkeypatch.setattr(_models, "inferred_model", lambda m: ran.append(1) or real(m))
    assert [s.input_type for s in _models.typed_relu_sites(model).sites] == ["tensor(string)"]
    assert ran == [1]
