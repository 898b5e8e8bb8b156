"""One judge: the same bad Relu nodes through every front end, refused by each with the same words.

Each case is a one-node model whose Relu is wrong in one way (a type its version forbids, element
type 0, an attribute the version does not declare, a wrong number of inputs or outputs). The
expected words are check_model's findings; ``prepare``, ``run_model``, ``run_node``, the
reference op (in onnx's ``ReferenceEvaluator`` and in ``ReluReferenceEvaluator``), ``legalize``
and ``ort_session`` must all refuse the node and say exactly those words after the node's label
(the reference op, which is not told where its node sits, names it without the position, and
judges the node before its input exists: a node wrong in itself and in its type is refused for the
former alone inside onnx's own evaluator).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper
from onnx.reference import ReferenceEvaluator

from onnx_relu import backend, check_model, legalize
from onnx_relu.errors import InvalidModelError, OnnxReluError, UnsupportedTypeError
from onnx_relu.onnx.ort_library import ort_session
from onnx_relu.onnx.reference import Relu, ReluReferenceEvaluator

F = TensorProto.FLOAT
LABEL = "Relu node 'r' (node #0)"
OP_LABEL = "Relu node 'r'"  # the reference op's: the evaluator does not tell it the position

#: numpy dtype of each element type fed in these cases (None: no array has it).
DTYPES = {
    F: np.dtype(np.float32),
    TensorProto.INT8: np.dtype(np.int8),
    TensorProto.INT32: np.dtype(np.int32),
    TensorProto.INT64: np.dtype(np.int64),
    TensorProto.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
    TensorProto.UINT8: np.dtype(np.uint8),
    TensorProto.BOOL: np.dtype(np.bool_),
    TensorProto.UNDEFINED: None,
}


def _node(inputs=("x",), outputs=("y",), **attributes) -> onnx.NodeProto:
    return helper.make_node("Relu", list(inputs), list(outputs), name="r", **attributes)


def _with_attribute(node: onnx.NodeProto, attribute: onnx.AttributeProto) -> onnx.NodeProto:
    node.attribute.append(attribute)
    return node


#: id -> (node, opset, input element type, expected kinds of finding)
CASES = {
    "int8-at-opset-13": (_node(), 13, TensorProto.INT8, ["type-not-allowed"]),
    "int32-at-opset-1": (_node(), 1, TensorProto.INT32, ["type-not-allowed"]),
    "int64-at-opset-6": (_node(), 6, TensorProto.INT64, ["type-not-allowed"]),
    "bfloat16-at-opset-12": (_node(), 12, TensorProto.BFLOAT16, ["type-not-allowed"]),
    "uint8-at-opset-14": (_node(), 14, TensorProto.UINT8, ["type-not-allowed"]),
    "bool-at-the-latest-opset": (
        _node(),
        onnx.defs.onnx_opset_version(),
        TensorProto.BOOL,
        ["type-not-allowed"],
    ),
    "element-type-0-at-opset-14": (_node(), 14, TensorProto.UNDEFINED, ["type-not-allowed"]),
    "element-type-0-at-opset-6": (_node(), 6, TensorProto.UNDEFINED, ["type-not-allowed"]),
    "element-type-0-at-opset-1": (_node(), 1, TensorProto.UNDEFINED, ["type-not-allowed"]),
    "consumed_inputs-at-opset-6": (_node(consumed_inputs=[0]), 6, F, ["attribute"]),
    "consumed_inputs-at-opset-14": (_node(consumed_inputs=[0]), 14, F, ["attribute"]),
    "alpha-at-opset-13": (_node(alpha=0.5), 13, F, ["attribute"]),
    "consumed_inputs-not-ints-at-opset-1": (_node(consumed_inputs=1.5), 1, F, ["attribute"]),
    "consumed_inputs-twice-at-opset-5": (
        _with_attribute(_node(consumed_inputs=[0]), helper.make_attribute("consumed_inputs", [1])),
        5,
        F,
        ["attribute"],
    ),
    "alpha-and-int8-at-opset-13": (
        _node(alpha=0.5),
        13,
        TensorProto.INT8,
        ["attribute", "type-not-allowed"],
    ),
    "two-inputs": (_node(inputs=("x", "x")), 14, F, ["arity"]),
    "two-outputs": (_node(outputs=("y", "z")), 14, F, ["arity"]),
    "empty-input-name": (_node(inputs=("",)), 14, F, ["arity"]),
}


def _model(node: onnx.NodeProto, opset: int, elem_type: int) -> onnx.ModelProto:
    outputs = [helper.make_tensor_value_info(name, elem_type, [2]) for name in node.output if name]
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem_type, [2])], outputs
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8  # read by every onnxruntime this project supports
    return model


def _refusal(call) -> OnnxReluError:
    with pytest.raises(OnnxReluError) as refused:
        call()
    return refused.value


@pytest.mark.parametrize("case", CASES)
def test_every_front_end_refuses_the_same_node_with_the_same_words(case):
    node, opset, elem_type, kinds = CASES[case]
    model = _model(node, opset, elem_type)
    findings = check_model(model)
    assert [f.kind for f in findings] == kinds
    words = "; ".join(f.message for f in findings)
    lines = "\n".join(f"  {f}" for f in findings)
    expected_class = UnsupportedTypeError if "type-not-allowed" in kinds else InvalidModelError
    dtype = DTYPES[elem_type]
    x = None if dtype is None else np.array([-1, 1]).astype(dtype)

    refused = _refusal(lambda: backend.prepare(model))
    assert type(refused) is expected_class and str(refused) == f"{LABEL}: {words}"
    if x is not None:
        refused = _refusal(lambda: backend.run_model(model, [x]))
        assert str(refused) == f"{LABEL}: {words}"
        # run_node has no declared type: it judges the array it is given, of the same type.
        refused = _refusal(lambda: backend.run_node(node, [x], opset_version=opset))
        assert type(refused) is expected_class and str(refused) == f"{LABEL}: {words}"

    # The reference op judges the node when the evaluator is made, the type when it runs.
    def reference(evaluator_class, **kwargs):
        evaluator = evaluator_class(model, **kwargs)
        evaluator.run(None, {"x": x if x is not None else np.zeros(2, np.float32)})

    refused = _refusal(lambda: reference(ReluReferenceEvaluator))
    assert type(refused) is expected_class
    assert str(refused) in (f"{LABEL}: {words}", f"{OP_LABEL}: {words}")
    if x is not None:
        # onnx's evaluator makes the op before any input exists: a node that is wrong in itself
        # is refused for that alone (its type is never reached).
        own = [f for f in findings if f.kind != "type-not-allowed"] or findings
        refused = _refusal(lambda: reference(ReferenceEvaluator, new_ops=[Relu]))
        assert type(refused) is (InvalidModelError if own != findings else expected_class)
        assert str(refused) == f"{OP_LABEL}: {'; '.join(f.message for f in own)}"

    refused = _refusal(lambda: legalize(model))
    assert isinstance(refused, InvalidModelError) and str(refused).endswith(f":\n{lines}")

    refused = _refusal(lambda: ort_session(model))
    assert type(refused) is expected_class and str(refused).endswith(f":\n{lines}")


def test_element_type_0_is_refused_only_on_a_graph_input():
    """A graph output or value_info of element type 0 is an unknown type (shape inference fills
    it in), as before; a graph input of element type 0 declares a tensor of no type."""
    graph = helper.make_graph(
        [_node()],
        "g",
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    assert check_model(model) == []
    (y,) = backend.run_model(model, [np.array([-1.0, 2.0], np.float32)])
    assert y.tolist() == [0.0, 2.0]
    assert "tensor(undefined)" in str(_refusal(lambda: backend.prepare(_model(_node(), 14, 0))))


def test_attribute_of_the_wrong_kind_is_named():
    node = _node()
    node.attribute.append(helper.make_attribute("consumed_inputs", 1.5))
    assert node.attribute[0].type == AttributeProto.FLOAT
    (finding,) = check_model(_model(node, 1, F))
    assert "must be a list of ints (INTS)" in finding.message


def _function_model(elem_type: int, opset: int) -> onnx.ModelProto:
    """A model whose one node calls the local function local.F, whose body is one Relu."""
    body = helper.make_function(
        "local",
        "F",
        ["a"],
        ["b"],
        [_node(("a",), ("b",))],
        opset_imports=[helper.make_opsetid("", opset)],
    )
    graph = helper.make_graph(
        [helper.make_node("F", ["x"], ["y"], name="call", domain="local")],
        "g",
        [helper.make_tensor_value_info("x", elem_type, [2])],
        [helper.make_tensor_value_info("y", elem_type, [2])],
    )
    model = helper.make_model(
        graph,
        functions=[body],
        opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("local", 1)],
    )
    model.ir_version = 8
    return model


@pytest.mark.parametrize(("elem_type", "opset"), [(TensorProto.INT8, 13), (0, 14), (0, 6)])
def test_a_relu_inside_a_local_function_is_judged_alike_by_every_front_end_that_sees_it(
    elem_type, opset
):
    """check_model, legalize, ort_session and ReluReferenceEvaluator judge the Relu in a local
    function's body for each call's input type; the backend runs no functions (it refuses the
    call node's operator); onnx's own ReferenceEvaluator runs its own Relu there (see
    ReluReferenceEvaluator)."""
    model = _function_model(elem_type, opset)
    (finding,) = check_model(model)
    assert finding.kind == "type-not-allowed"
    assert finding.graph == "function 'local.F' called by F node 'call' (node #0)"
    for call in (lambda: legalize(model), lambda: ort_session(model)):
        assert str(_refusal(call)).endswith(f":\n  {finding}")
    refused = _refusal(lambda: ReluReferenceEvaluator(model))
    assert type(refused) is UnsupportedTypeError and str(refused) == str(finding)
    refused = _refusal(lambda: backend.prepare(model))
    assert str(refused).startswith("F node 'call' (node #0) is operator 'F' of domain 'local'")
