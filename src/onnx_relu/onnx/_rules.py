"""What makes an ai.onnx Relu node valid, shared by the backend, the reference op, check_model
and legalize, so that all four word their verdicts the same way; and THE node label they all
name a node with (:func:`node_label`).

Nothing here imports onnx at module level: protos are read through their attributes, and the
few onnx functions needed are imported inside the functions that need them.

Examples
--------
>>> node_label("Relu", "relu1", 0), node_label("Relu", "", 3), node_label("Relu", "", None)
("Relu node 'relu1' (node #0)", 'Relu node #3 (unnamed)', 'Relu node (unnamed)')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..dtypes import describe_dtype, dtype_of_onnx_type, native, onnx_type_name
from ..versions import RELU_VERSIONS, ReluVersion, opset_phrase, unsupported_type_message

if TYPE_CHECKING:
    import onnx

#: The two spellings of the default operator domain.
AI_ONNX_DOMAINS = ("", "ai.onnx")

# AttributeProto.INTS; a constant so that this module needs no onnx import.
_ATTRIBUTE_INTS = 7


def printable(text: str | bytes) -> str:
    r"""``text`` as it is if every character prints, else its repr (quoted, escapes spelled out).

    Names in a model (operator types, attribute names) are arbitrary strings: a newline or a
    terminal escape would break the one-finding-per-line output of ``onnx-relu check`` or
    recolour the terminal.

    Examples
    --------
    >>> printable("If"), printable("Evil\x1b[31m\nOp"), printable(b"\xffelu")
    ('If', "'Evil\\x1b[31m\\nOp'", "b'\\xffelu'")
    """
    # protobuf gives a string field that is not valid UTF-8 as bytes: shown as their repr too.
    return text if isinstance(text, str) and text.isprintable() else repr(text)


def node_label(op_type: str, name: str, index: int | None) -> str:
    """A node named for a message: its name if it has one, and its position if known.

    ``index`` is the node's position in its graph's node list; None where the caller does not
    know it (onnx's reference evaluator does not tell an operator where it sits). The name is
    given as its repr; the operator type as it is where it prints (:func:`printable`).
    """
    op_type = printable(op_type)
    if index is None:
        return f"{op_type} node {name!r}" if name else f"{op_type} node (unnamed)"
    if name:
        return f"{op_type} node {name!r} (node #{index})"
    return f"{op_type} node #{index} (unnamed)"


def is_relu(node: onnx.NodeProto) -> bool:
    """True for a Relu node of the ai.onnx domain (spelled "" or "ai.onnx")."""
    return node.op_type == "Relu" and node.domain in AI_ONNX_DOMAINS


def onnx_type_of_elem_type(elem_type: int) -> str:
    """The ONNX type string of a TensorProto element type, e.g. 1 -> "tensor(float)"."""
    from onnx import TensorProto

    try:
        name = TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"tensor(<unknown element type {elem_type}>)"
    return f"tensor({name.lower()})"


def onnx_type_of_type_proto(type_proto: onnx.TypeProto) -> str | None:
    """The ONNX type string of a value's TypeProto; None if it is a tensor of unknown type.

    Non-tensor values (sequences, maps, optionals, sparse tensors) are named by their kind, e.g.
    "seq(...)", so that they are refused by name rather than taken for unknown.
    """
    kind = type_proto.WhichOneof("value")
    if kind is None:
        return None
    if kind != "tensor_type":
        others: dict[str, str] = {
            "sequence_type": "seq(...)",
            "map_type": "map(...)",
            "optional_type": "optional(...)",
            "sparse_tensor_type": "sparse_tensor(...)",
        }
        return others.get(kind, str(kind))
    elem_type = type_proto.tensor_type.elem_type
    return onnx_type_of_elem_type(elem_type) if elem_type else None


def onnx_type_of_dtype(dtype: np.dtype) -> str:
    """An array's type in ONNX terms ("tensor(uint8)"), or described if ONNX has no such type."""
    return onnx_type_name(native(dtype)) or describe_dtype(dtype)


def type_refusal(onnx_type: str, version: ReluVersion, opset: int) -> str | None:
    """Why ``version`` (in force at ``opset``) refuses ``onnx_type``, or None if it allows it."""
    if onnx_type in version.types:
        return None
    dtype = dtype_of_onnx_type(onnx_type)
    if dtype is not None:
        return unsupported_type_message(dtype, version, opset)
    return (
        f"{opset_phrase(version, opset)} does not allow {onnx_type};"
        f" allowed types: {', '.join(version.types)}. No Relu version allows it."
    )


def attribute_problems(node: onnx.NodeProto, version: ReluVersion, opset: int) -> list[str]:
    """Attributes of a Relu node that ``version`` (in force at ``opset``) does not declare, or
    declares otherwise."""
    problems = []
    seen: set[str] = set()
    for attribute in node.attribute:
        name = attribute.name
        if name in seen:
            problems.append(f"attribute {name!r} is given more than once")
            continue
        seen.add(name)
        if name in version.attributes:
            if name == "consumed_inputs" and attribute.type != _ATTRIBUTE_INTS:
                problems.append(
                    f"attribute 'consumed_inputs' must be a list of ints (INTS), not attribute"
                    f" type {attribute.type}"
                )
            continue
        problems.append(_undeclared_attribute_message(name, version, opset))
    return problems


def _undeclared_attribute_message(name: str, version: ReluVersion, opset: int) -> str:
    declared = ", ".join(repr(a) for a in version.attributes) or "no attributes"
    message = (
        f"attribute {name!r} is not defined by {opset_phrase(version, opset)},"
        f" which declares {declared}"
    )
    owners = [v.name for v in RELU_VERSIONS.values() if name in v.attributes]
    if owners:
        message += f"; {name!r} belongs to {', '.join(owners)} (opsets 1-5) only"
    return message


def arity_problems(node: onnx.NodeProto) -> list[str]:
    """Problems with the number of inputs and outputs of a Relu node (exactly one each)."""
    problems = []
    inputs = list(node.input)
    if len(inputs) != 1 or not inputs[0]:
        problems.append(f"Relu takes exactly one input X; the node has inputs {inputs}")
    outputs = list(node.output)
    if len(outputs) != 1 or not outputs[0]:
        problems.append(f"Relu has exactly one output Y; the node has outputs {outputs}")
    return problems


def describe_node(node: onnx.NodeProto, index: int | None) -> str:
    """:func:`node_label` of a NodeProto."""
    return node_label(node.op_type, node.name, index)
