"""ONNX models and facts for the tests of the ONNX layer (needs onnx).

Models are built with ``onnx.helper``; which types each opset's Relu allows is read from onnx's
own schemas (not from onnx_relu), so the tests compare onnx-relu with onnx.

Examples
--------
>>> model = relu_model("tensor(int8)", 14, name="r")
>>> [(node.op_type, node.name) for node in model.graph.node]
[('Relu', 'r')]
>>> sorted(allowed_types(6))
['tensor(double)', 'tensor(float)', 'tensor(float16)']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.support.dtypes import relu_type
from tests.support.values import mixed_values

LATEST_OPSET = onnx.defs.onnx_opset_version()

#: Opsets on both sides of each Relu version change, and the ends.
BOUNDARY_OPSETS = (1, 5, 6, 12, 13, 14, LATEST_OPSET)


def allowed_types(opset: int) -> set[str]:
    """Relu's type constraint at ``opset``, read from onnx's own schema (not from onnx-relu)."""
    schema = onnx.defs.get_schema("Relu", opset)
    return set(schema.type_constraints[0].allowed_type_strs)


def value_info(
    name: str,
    elem_type: int = TensorProto.FLOAT,
    shape: Sequence[int | str | None] | None = (None,),
) -> onnx.ValueInfoProto:
    """A typed graph input or output; ``shape`` None: of unknown rank."""
    return helper.make_tensor_value_info(name, elem_type, None if shape is None else list(shape))


def graph_model(
    nodes: Iterable[onnx.NodeProto],
    inputs,
    outputs,
    *,
    opset: int = 14,
    initializers: Iterable[onnx.TensorProto] = (),
    domain: str = "",
    extra_opsets: Iterable[tuple[str, int]] = (),
    **model_fields,
) -> onnx.ModelProto:
    """A model of one graph importing ``domain`` (ai.onnx: "") at ``opset``, and any
    ``extra_opsets`` as (domain, version) pairs."""
    graph = helper.make_graph(list(nodes), "g", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid(domain, opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(graph, opset_imports=opsets, **model_fields)


def relu_model(
    onnx_type: str, opset: int, shape=(None,), *, name: str = "relu", **attributes
) -> onnx.ModelProto:
    """One Relu node ``name`` from graph input "x" to graph output "y", both of ``onnx_type``."""
    elem_type = relu_type(onnx_type).elem_type
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name=name, **attributes)],
        "one_relu",
        [helper.make_tensor_value_info("x", elem_type, list(shape))],
        [helper.make_tensor_value_info("y", elem_type, list(shape))],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def add_relu_mul_model(opset: int, *, scale_is_input: bool = False) -> onnx.ModelProto:
    """x + bias (-5) -> Relu (int64) -> times scale, to graph output "y": a Relu among other
    operators, of a type onnxruntime alone runs only through opset 18's function body. "scale"
    is a graph input with ``scale_is_input``, else an initializer (3)."""
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["h"], name="add"),
        helper.make_node("Relu", ["h"], ["r"], name="act"),
        helper.make_node("Mul", ["r", "scale"], ["y"], name="mul"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.INT64, ["n"])]
    initializers = [helper.make_tensor("bias", TensorProto.INT64, [], [-5])]
    if scale_is_input:
        inputs.append(helper.make_tensor_value_info("scale", TensorProto.INT64, ["n"]))
    else:
        initializers.append(helper.make_tensor("scale", TensorProto.INT64, [], [3]))
    graph = helper.make_graph(
        nodes,
        "mixed",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["n"])],
        initializer=initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def sample_values(onnx_type: str, n: int = 2048) -> np.ndarray:
    """``n`` values of the type of that ONNX name: its special values, then random bit patterns
    (``tests.support.values.mixed_values``)."""
    return mixed_values(relu_type(onnx_type).dtype, n)
