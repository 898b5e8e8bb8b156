"""onnx_relu.check_model: findings for Relu nodes only, with types from shape inference."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_relu import Finding, check_model
from onnx_relu.errors import InvalidModelError
from tests.support.onnx_models import graph_model as _model  # short: the models are inline
from tests.support.onnx_models import relu_model, value_info

F = TensorProto.FLOAT


def _vi(name, elem_type=F, shape=(3,)):
    return value_info(name, elem_type, shape)


def test_a_valid_model_with_other_operators_has_no_findings():
    nodes = [
        helper.make_node("Add", ["x", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["r"]),
        helper.make_node("Mul", ["r", "r"], ["y"]),
    ]
    assert (
        check_model(_model(nodes, [_vi("x", TensorProto.INT64)], [_vi("y", TensorProto.INT64)]))
        == []
    )


def test_type_not_allowed_finding_has_every_field():
    (finding,) = check_model(relu_model("tensor(bfloat16)", 12, shape=(2,), name="r12"))
    assert isinstance(finding, Finding)
    assert finding.node_name == "r12" and finding.op_index == 0 and finding.input_name == "x"
    assert finding.input_type == "tensor(bfloat16)"
    assert finding.version == 6 and finding.opset == 12
    assert finding.allowed_types == ("tensor(double)", "tensor(float)", "tensor(float16)")
    assert finding.kind == "type-not-allowed" and finding.graph == ""
    text = str(finding)
    assert "\n" not in text
    assert text.startswith("Relu node 'r12' (node #0): input 'x' has type tensor(bfloat16).")
    assert "Relu-6 (in force at opset 12)" in text and "allowed from Relu-13 (opset >= 13)" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.kind = "other"


def test_types_are_inferred_through_other_operators():
    # x (uint8) -> Relu -> Neg -> Relu: both Relus are judged; the second's type is inferred.
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="first"),
        helper.make_node("Cast", ["a"], ["b"], to=TensorProto.INT8, name="cast"),
        helper.make_node("Relu", ["b"], ["y"], name="second"),
    ]
    findings = check_model(
        _model(nodes, [_vi("x", TensorProto.UINT8)], [_vi("y", TensorProto.INT8)], opset=13)
    )
    assert [(f.node_name, f.op_index, f.input_type) for f in findings] == [
        ("first", 0, "tensor(uint8)"),
        ("second", 2, "tensor(int8)"),
    ]
    assert "No Relu version allows it" in findings[0].message
    assert "tensor(int8) is allowed from Relu-14" in findings[1].message


def test_unknown_type_is_reported_not_guessed():
    nodes = [
        helper.make_node("Mystery", ["x"], ["m"], domain="com.example"),
        helper.make_node("Relu", ["m"], ["y"], name="after_mystery"),
    ]
    model = _model(
        nodes,
        [_vi("x")],
        [helper.make_empty_tensor_value_info("y")],
        extra_opsets=[("com.example", 1)],
    )
    (finding,) = check_model(model)
    assert finding.kind == "type-unknown" and finding.input_type is None
    assert "the type of input 'm' cannot be inferred" in finding.message
    assert finding.node_name == "after_mystery" and finding.op_index == 1


@pytest.mark.parametrize("opset", [6, 13, 14])
def test_consumed_inputs_after_relu1_is_a_finding(opset):
    (finding,) = check_model(relu_model("tensor(float)", opset, consumed_inputs=[0]))
    assert finding.kind == "attribute"
    assert "'consumed_inputs' belongs to Relu-1 (opsets 1-5) only" in finding.message


def test_consumed_inputs_at_relu1_is_fine_but_must_be_ints():
    assert check_model(relu_model("tensor(float)", 1, consumed_inputs=[0])) == []
    (finding,) = check_model(relu_model("tensor(float)", 5, consumed_inputs=1.5))
    assert finding.kind == "attribute" and "list of ints" in finding.message


def test_unknown_attribute_is_a_finding():
    (finding,) = check_model(relu_model("tensor(float)", 14, alpha=0.5))
    assert finding.kind == "attribute" and "'alpha' is not defined by Relu-14" in finding.message


def test_wrong_number_of_inputs_is_a_finding():
    model = _model(
        [helper.make_node("Relu", ["x", "x"], ["y"], name="two")], [_vi("x")], [_vi("y")]
    )
    kinds = [f.kind for f in check_model(model)]
    assert kinds == ["arity"]


def test_relu_in_a_subgraph_is_judged_and_located():
    branch_out = _vi("b", TensorProto.INT16)
    then_graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["b"], name="inner")], "then", [], [branch_out]
    )
    else_graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["b"])], "else", [], [branch_out]
    )
    node = helper.make_node(
        "If", ["c"], ["y"], name="choose", then_branch=then_graph, else_branch=else_graph
    )
    model = _model(
        [node],
        [_vi("c", TensorProto.BOOL, ()), _vi("x", TensorProto.INT16)],
        [_vi("y", TensorProto.INT16)],
        opset=13,
    )
    (finding,) = check_model(model)
    assert finding.graph == "If node 'choose' (node #0).then_branch"
    assert finding.input_type == "tensor(int16)"
    assert str(finding).startswith(
        "Relu node 'inner' (node #0) in If node 'choose' (node #0).then_branch: input 'x'"
    )


def test_initializer_types_are_known():
    weights = onnx.numpy_helper.from_array(np.zeros(3, np.int32), "w")
    model = _model(
        [helper.make_node("Relu", ["w"], ["y"])],
        [],
        [_vi("y", TensorProto.INT32)],
        opset=13,
        initializers=[weights],
    )
    (finding,) = check_model(model)
    assert finding.input_type == "tensor(int32)" and finding.node_name == ""
    assert str(finding).startswith("Relu node #0 (unnamed): ")


def test_path_pathlike_and_bytes(tmp_path):
    model = relu_model("tensor(int8)", 13)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    for source in (model, path, str(path), model.SerializeToString()):
        assert [f.kind for f in check_model(source)] == ["type-not-allowed"]


def test_unreadable_and_corrupt_files_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        check_model(tmp_path / "absent.onnx")
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(relu_model("tensor(float)", 14).SerializeToString()[:-7])
    with pytest.raises(InvalidModelError, match="corrupt.onnx' is not"):
        check_model(corrupt)
    with pytest.raises(InvalidModelError, match="not an ONNX model"):
        check_model(b"")
    with pytest.raises(ValueError):
        check_model(b"\x00garbage\xff")
    with pytest.raises(TypeError, match="got int"):
        check_model(42)


def test_model_without_ai_onnx_opset_is_an_error_only_if_it_has_relu_nodes():
    model = relu_model("tensor(float)", 14)
    del model.opset_import[:]
    with pytest.raises(InvalidModelError, match="no ai.onnx operator set"):
        check_model(model)
    other = _model([helper.make_node("Neg", ["x"], ["y"])], [_vi("x")], [_vi("y")])
    del other.opset_import[:]
    assert check_model(other) == []


def test_an_unnamed_owner_of_a_subgraph_is_labelled_as_every_unnamed_node():
    """The graph a finding sits in names its owner with the one node label (``node_label``):
    an unnamed If reads "If node #0 (unnamed)", as an unnamed Relu reads "Relu node #0
    (unnamed)"."""
    branch_out = _vi("b", TensorProto.INT16)
    then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["b"])], "t", [], [branch_out])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "e", [], [branch_out])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)
    model = _model(
        [node],
        [_vi("c", TensorProto.BOOL, ()), _vi("x", TensorProto.INT16)],
        [_vi("y", TensorProto.INT16)],
        opset=13,
    )
    (finding,) = check_model(model)
    assert finding.graph == "If node #0 (unnamed).then_branch"
    assert str(finding).startswith("Relu node #0 (unnamed) in If node #0 (unnamed).then_branch:")
