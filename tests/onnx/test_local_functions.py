"""Relu nodes inside model-local functions (``model.functions``), issue 13 item 9.

Until issue 13 they were invisible: ``check_model`` said nothing of a forbidden type inside a
function, ``legalize`` returned a model with a bfloat16 Relu in a function unchanged (onnxruntime
then failed NOT_IMPLEMENTED), and onnx's ``ReferenceEvaluator(model, new_ops=[Relu])`` runs
onnx's own Relu inside functions (it does not pass ``new_ops`` on), hence
``ReluReferenceEvaluator``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from onnx_relu import check_model, legalize
from onnx_relu.errors import LegalizationError
from onnx_relu.onnx.legalization import run_with_onnxruntime
from onnx_relu.onnx.reference import Relu, ReluReferenceEvaluator
from tests.support.optional import requires
from tests.support.oracle import as_bits, expected_relu
from tests.support.values import mixed_values


def function_model(
    elem_types, opset: int = 14, function_opset: int | None = None, nested: bool = False
) -> onnx.ModelProto:
    """A model calling the local function local.F (one Relu, in an If branch if ``nested``)
    once per element type in ``elem_types``, inputs x0, x1, ... to outputs y0, y1, ..."""
    relu = helper.make_node("Relu", ["a"], ["b"], name="inner")
    if nested:
        branch = helper.make_graph(
            [relu], "then", [], [helper.make_value_info("b", onnx.TypeProto())]
        )
        other = helper.make_graph(
            [helper.make_node("Identity", ["a"], ["b"])],
            "else",
            [],
            [helper.make_value_info("b", onnx.TypeProto())],
        )
        condition = helper.make_node(
            "Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])
        )
        nodes = [
            condition,
            helper.make_node(
                "If", ["c"], ["b"], name="choose", then_branch=branch, else_branch=other
            ),
        ]
    else:
        nodes = [relu]
    body = helper.make_function(
        "local",
        "F",
        ["a"],
        ["b"],
        nodes,
        opset_imports=[helper.make_opsetid("", function_opset or opset)],
    )
    calls = [
        helper.make_node("F", [f"x{i}"], [f"y{i}"], name=f"call{i}", domain="local")
        for i in range(len(elem_types))
    ]
    graph = helper.make_graph(
        calls,
        "g",
        [helper.make_tensor_value_info(f"x{i}", t, [None]) for i, t in enumerate(elem_types)],
        [helper.make_tensor_value_info(f"y{i}", t, [None]) for i, t in enumerate(elem_types)],
    )
    return helper.make_model(
        graph,
        functions=[body],
        opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("local", 1)],
    )


@pytest.mark.parametrize("nested", [False, True], ids=["body", "if-in-body"])
def test_check_model_judges_relu_inside_a_function_per_call_type(nested):
    model = function_model([TensorProto.INT8, TensorProto.FLOAT], opset=13, nested=nested)
    findings = check_model(model)
    assert [f.kind for f in findings] == ["type-not-allowed"]
    (finding,) = findings
    assert finding.input_type == "tensor(int8)" and finding.version == 13
    assert finding.graph.startswith("function 'local.F' called by F node 'call0' (node #0)")
    assert str(finding).startswith("Relu node 'inner' (node #0) in function 'local.F' called by")
    assert check_model(function_model([TensorProto.INT8, TensorProto.FLOAT], opset=14)) == []


def test_check_model_uses_the_functions_own_opset():
    findings = check_model(function_model([TensorProto.INT16], opset=14, function_opset=13))
    assert [(f.kind, f.version, f.opset) for f in findings] == [
        ("opset", 13, 13),
        ("type-not-allowed", 13, 13),
    ]
    # opsets 6 and 12 both have Relu-6: compatible, judged at the function's own opset
    findings = check_model(function_model([TensorProto.INT16], opset=12, function_opset=6))
    assert [(f.kind, f.version, f.opset) for f in findings] == [("type-not-allowed", 6, 6)]


# issue 30, item 5: onnx's checker (check_opset_compatibility) refuses a function whose nodes
# resolve to another schema at its own opset than at the model's; onnxruntime inlines it at the
# model's opset (where int8 is not allowed). Every front end now says so.
@pytest.mark.parametrize(
    ("opset", "function_opset", "elem_type"),
    [
        (13, 14, TensorProto.INT8),
        (13, 14, TensorProto.FLOAT),
        (14, 13, TensorProto.FLOAT),
        (6, 13, TensorProto.FLOAT),
        (5, 6, TensorProto.FLOAT),
    ],
)
def test_function_opset_incompatible_with_the_models_is_found_as_onnxs_checker_finds_it(
    opset, function_opset, elem_type
):
    model = function_model([elem_type], opset=opset, function_opset=function_opset)
    with pytest.raises(onnx.checker.ValidationError, match="not compatible"):
        onnx.checker.check_model(model, full_check=True)  # the rule followed
    findings = check_model(model)
    assert [f.kind for f in findings] == ["opset"]
    assert f"the function imports ai.onnx opset {function_opset}" in findings[0].message
    assert f"the model imports opset {opset}" in findings[0].message
    with pytest.raises(ValueError, match="not compatible"):
        ReluReferenceEvaluator(model)


@pytest.mark.parametrize(("opset", "function_opset"), [(12, 6), (15, 14), (21, 14), (13, 13)])
def test_function_opsets_with_the_same_relu_version_are_compatible(opset, function_opset):
    model = function_model([TensorProto.FLOAT], opset=opset, function_opset=function_opset)
    onnx.checker.check_model(model, full_check=True)
    assert check_model(model) == []


def test_opset_compatibility_is_asked_of_the_functions_own_nodes_as_onnxs_checker_asks_it():
    # onnx's checker leaves nodes in a function node's subgraphs alone; so does check_model
    model = function_model([TensorProto.FLOAT], opset=13, function_opset=14, nested=True)
    onnx.checker.check_model(model, full_check=True)
    assert check_model(model) == []


@requires("onnxruntime")
def test_function_opset_incompatible_with_the_models_is_refused_by_ort_session_and_legalize():
    from onnx_relu import ort_session

    model = function_model([TensorProto.INT8], opset=13, function_opset=14)
    with pytest.raises(Exception, match="not compatible|int8|INVALID_GRAPH"):  # onnxruntime's own
        run_with_onnxruntime(model, {"x0": np.array([1, -1], np.int8)})
    with pytest.raises(ValueError, match="not compatible with the version|not compatible"):
        ort_session(model)
    with pytest.raises(ValueError, match="not compatible"):
        legalize(model)


@requires("onnxruntime")  # legalize probes onnxruntime
def test_legalize_rewrites_relu_inside_a_function_and_onnxruntime_runs_it():
    model = function_model([TensorProto.BFLOAT16])
    x = mixed_values(ml_dtypes.bfloat16, 544)
    with pytest.raises(Exception, match="NOT_IMPLEMENTED|Could not find an implementation"):
        run_with_onnxruntime(model, {"x0": x})
    legal = legalize(model)
    onnx.checker.check_model(legal, full_check=True)
    assert [n.op_type for n in legal.graph.node] == ["F"]  # the call stays; its body changed
    assert "Relu" not in [n.op_type for n in legal.functions[0].node]
    (y,) = run_with_onnxruntime(legal, {"x0": x})
    assert np.array_equal(as_bits(y), as_bits(expected_relu(x)))
    assert [n.op_type for n in model.functions[0].node] == ["Relu"]  # the caller's model


@requires("onnxruntime")  # legalize probes onnxruntime
def test_legalize_refuses_a_function_whose_calls_need_different_rewrites():
    model = function_model([TensorProto.BFLOAT16, TensorProto.INT16])
    with pytest.raises(
        LegalizationError, match="called with tensor\\(bfloat16\\) and tensor\\(int16\\)"
    ):
        legalize(model)


@requires("onnxruntime")  # legalize probes onnxruntime
def test_legalize_names_the_functions_own_opset_when_it_refuses():
    # The model is at opset 6, the function body at 12 (both Relu-6): onnxruntime's float Relu
    # keeps -0.0, so with exact=True nothing runs there; the refusal names the opset the node is
    # judged at, the function's.
    model = function_model([TensorProto.FLOAT16], opset=6, function_opset=12)
    with pytest.raises(LegalizationError, match="at opset 12: onnxruntime runs it, but not"):
        legalize(model, exact=True)


def test_reference_evaluator_with_relu_in_function_bodies():
    model = function_model([TensorProto.FLOAT16])
    x = mixed_values(np.float16, 544)
    (ours,) = ReluReferenceEvaluator(model).run(None, {"x0": x})
    assert np.array_equal(as_bits(ours), as_bits(expected_relu(x)))
    # onnx's evaluator with new_ops=[Relu] runs its own Relu inside the function (-0.0 kept).
    (theirs,) = ReferenceEvaluator(model, new_ops=[Relu]).run(
        None, {"x0": np.array([-0.0], np.float16)}
    )
    assert np.signbit(theirs).tolist() == [True]
