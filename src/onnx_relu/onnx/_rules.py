"""THE judge of an ai.onnx Relu node (:func:`judge_relu`): given the node, the model's opset and
its input's type, the list of what is wrong with it. The backend (``prepare``, ``run_node``), the
reference op, ``check_model``, ``legalize`` and ``ort_session`` all ask it and turn its findings
into their own result (an exception, a report, a refusal to rewrite), so that they refuse the
same nodes with the same words; and THE node label they all name a node with
(:func:`node_label`).

Nothing here imports onnx at module level: protos are read through their attributes, and the
few onnx functions needed are imported inside the functions that need them.

Examples
--------
>>> node_label("Relu", "relu1", 0), node_label("Relu", "", 3), node_label("Relu", "", None)
("Relu node 'relu1' (node #0)", 'Relu node #3 (unnamed)', 'Relu node (unnamed)')
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._text import printable as _printable
from ..dtypes import describe_dtype, dtype_of_onnx_type, native, onnx_type_name
from ..errors import InvalidModelError, UnsupportedTypeError
from ..versions import (
    RELU_VERSIONS,
    ReluVersion,
    opset_phrase,
    unsupported_type_message,
    version_for_opset,
)

if TYPE_CHECKING:
    import onnx

#: The two spellings of the default operator domain.
AI_ONNX_DOMAINS = ("", "ai.onnx")

# AttributeProto.INTS; a constant so that this module needs no onnx import.
_ATTRIBUTE_INTS = 7

#: The type of a tensor declared with element type 0 (TensorProto.UNDEFINED): no type at all.
UNDEFINED_TYPE = "tensor(undefined)"


def printable(text: str | bytes) -> str:
    r"""A name out of a model as :func:`onnx_relu._text.printable` shows it (as it is if every
    character prints, else its repr), shortened past :data:`NAME_DISPLAY_LIMIT` characters
    (:func:`shown_name`): a model may hold a name of megabytes, and a finding stays one line.

    Examples
    --------
    >>> printable("If"), printable("Evil\x1b[31m\nOp"), printable(b"\xffelu")
    ('If', "'Evil\\x1b[31m\\nOp'", "b'\\xffelu'")
    """
    if len(text) > NAME_DISPLAY_LIMIT:
        return shown_name(text)
    return _printable(text)


#: Names longer than this many characters are shortened in messages (a model may hold a node
#: name of megabytes; a finding stays one readable line).
NAME_DISPLAY_LIMIT = 200


def model_text(value: str | bytes) -> str:
    r"""A string out of a model or tensor file, as messages show it: text as it is; bytes
    (protobuf's form of a proto2 string that is not UTF-8) decoded with
    ``errors="backslashreplace"``, so every byte is seen and none is lost from view.

    Examples
    --------
    >>> model_text("x"), model_text(b"N\xffME")
    ('x', 'N\\xffME')
    """
    return value if isinstance(value, str) else value.decode("utf-8", "backslashreplace")


def shown_name(name: str | bytes) -> str:
    """``name`` quoted for a message (its repr: escapes spelled out; bytes, a string that is not
    UTF-8, as ``b'...'``), shortened past :data:`NAME_DISPLAY_LIMIT` with its length said."""
    if len(name) <= NAME_DISPLAY_LIMIT:
        return repr(name)
    unit = "bytes" if isinstance(name, bytes) else "characters"
    return f"{name[: NAME_DISPLAY_LIMIT // 2]!r}... ({len(name)} {unit})"


def node_label(op_type: str, name: str, index: int | None) -> str:
    """A node named for a message: its name if it has one, and its position if known.

    ``index`` is the node's position in its graph's node list; None where the caller does not
    know it (onnx's reference evaluator does not tell an operator where it sits). The name is
    given as its repr; the operator type as it is where it prints (:func:`printable`).
    """
    op_type = printable(op_type)
    if index is None:
        return f"{op_type} node {shown_name(name)}" if name else f"{op_type} node (unnamed)"
    if name:
        return f"{op_type} node {shown_name(name)} (node #{index})"
    return f"{op_type} node #{index} (unnamed)"


def is_relu(node: onnx.NodeProto) -> bool:
    """True for a Relu node of the ai.onnx domain (spelled "" or "ai.onnx")."""
    return node.op_type == "Relu" and node.domain in AI_ONNX_DOMAINS


@functools.lru_cache(maxsize=256)
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


def declared_onnx_type(type_proto: onnx.TypeProto) -> str | None:
    """The type a graph input declares: as :func:`onnx_type_of_type_proto`, except that a tensor
    declared with element type 0 (UNDEFINED) is :data:`UNDEFINED_TYPE`, which no Relu allows,
    rather than unknown.

    A graph output or a value_info entry of element type 0 is an unknown type that shape
    inference may fill in; a graph input has no producer to infer it from, so there element
    type 0 declares a tensor of no type.
    """
    if type_proto.WhichOneof("value") == "tensor_type" and not type_proto.tensor_type.elem_type:
        return UNDEFINED_TYPE
    return onnx_type_of_type_proto(type_proto)


def onnx_type_of_dtype(dtype: np.dtype) -> str:
    """An array's type in ONNX terms ("tensor(uint8)"), or described if ONNX has no such type."""
    return onnx_type_name(native(dtype)) or describe_dtype(dtype)


def type_refusal(onnx_type: str, version: ReluVersion, opset: int) -> str | None:
    """Why ``version`` (in force at ``opset``) refuses ``onnx_type``, or None if it allows it."""
    if onnx_type in version.types:
        return None
    if onnx_type == UNDEFINED_TYPE:
        return (
            f"{opset_phrase(version, opset)} does not allow {onnx_type} (element type 0,"
            f" UNDEFINED, which names no type); allowed types: {', '.join(version.types)}."
            " Declare the input's element type."
        )
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
    owners = [
        f"{v.name} (opsets {v.opsets})" for v in RELU_VERSIONS.values() if name in v.attributes
    ]
    if owners:
        message += f"; {name!r} belongs to {', '.join(owners)} only"
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


@dataclass(frozen=True)
class NodeFinding:
    """One thing wrong with one Relu node, as :func:`judge_relu` finds it.

    Attributes
    ----------
    kind : str
        "arity" (not exactly one input and one output), "attribute" (an attribute the version
        does not declare, or a malformed one), "opset" (a model-local function importing an
        ai.onnx opset whose Relu version differs from the one the model imports),
        "type-unknown" (the input's type is not known) or "type-not-allowed" (the version does
        not allow it).
    message : str
        What is wrong, in words, without the node's label (callers put their own in front).
    """

    kind: str
    message: str


def opset_compatibility_problem(function_opset: int, model_opset: int) -> str | None:
    """Why a Relu in a model-local function importing ai.onnx ``function_opset`` cannot be used
    in a model importing ai.onnx ``model_opset``, or None if it can.

    onnx's checker (``check_opset_compatibility``) requires each node of a function whose
    domain both import at different versions to resolve to the same schema at both; onnxruntime
    inlines the function at the model's opset. For Relu: the same Relu version.
    """
    function_version = version_for_opset(function_opset)
    model_version = version_for_opset(model_opset)
    if function_version.since == model_version.since:
        return None
    return (
        f"the function imports ai.onnx opset {function_opset}, where {function_version.name} is"
        f" in force, but the model imports opset {model_opset}, where {model_version.name} is:"
        " the two are not compatible (onnx's checker refuses the function, and onnxruntime"
        " runs it at the model's opset); import opsets with the same Relu version in both"
    )


def judge_relu(
    node: onnx.NodeProto,
    opset: int,
    input_type: str | None,
    version: ReluVersion | None = None,
    *,
    model_opset: int | None = None,
) -> list[NodeFinding]:
    """Everything wrong with an ai.onnx Relu node in a model of ai.onnx opset ``opset``.

    The one judge of a Relu node: every front end (backend, reference op, check_model,
    legalize, ort_session) asks it and only decides what to do with the findings.

    Parameters
    ----------
    node : onnx.NodeProto
        The Relu node (its operator is not checked: callers pick the Relu nodes).
    opset : int
        The ai.onnx opset in force where the node is; it selects the Relu version.
    input_type : str or None
        The ONNX type of the node's input X ("tensor(float)", :data:`UNDEFINED_TYPE` for
        element type 0, or the description of a numpy dtype ONNX has no type for); None if it is
        not known, which is a "type-unknown" finding (a caller that learns the type later, from
        the array it runs on, sets that finding aside and judges again then).
    version : ReluVersion, optional
        The Relu version in force at ``opset`` where the caller has it already.
    model_opset : int, optional
        For a node in a model-local function that imports its own ai.onnx ``opset``: the opset
        the model imports, checked for compatibility (:func:`opset_compatibility_problem`).

    Returns
    -------
    list of NodeFinding
        Empty if the node is valid; else in the order arity, attributes, opset, type.

    Examples
    --------
    >>> from onnx import helper
    >>> node = helper.make_node("Relu", ["x"], ["y"], consumed_inputs=[0])
    >>> [f.kind for f in judge_relu(node, 6, "tensor(float)")]
    ['attribute']
    >>> print(judge_relu(node, 1, "tensor(int8)")[0].message)  # doctest: +NORMALIZE_WHITESPACE
    input 'x' has type tensor(int8). Relu-1 (in force at opset 1) does not allow tensor(int8);
    allowed types: tensor(double), tensor(float), tensor(float16). tensor(int8) is allowed from
    Relu-14 (opset >= 14).
    """
    if version is None:
        version = version_for_opset(opset)
    found = [NodeFinding("arity", problem) for problem in arity_problems(node)]
    found += [
        NodeFinding("attribute", problem) for problem in attribute_problems(node, version, opset)
    ]
    if model_opset is not None and model_opset != opset:
        problem = opset_compatibility_problem(opset, model_opset)
        if problem is not None:
            found.append(NodeFinding("opset", problem))
    input_name = node.input[0] if node.input else ""
    if not input_name:
        return found
    if input_type is None:
        found.append(
            NodeFinding(
                "type-unknown",
                f"the type of input {input_name!r} cannot be inferred (shape inference could not"
                f" determine it); declare it (graph input or value_info) so that it can be"
                f" checked against {version.name}, which allows {', '.join(version.types)}",
            )
        )
    else:
        refusal = type_refusal(input_type, version, opset)
        if refusal is not None:
            message = f"input {input_name!r} has type {input_type}. {refusal}"
            found.append(NodeFinding("type-not-allowed", message))
    return found


def refusal_class(kinds: Sequence[str]) -> type[UnsupportedTypeError] | type[InvalidModelError]:
    """The exception a front end raises for findings of these kinds: UnsupportedTypeError if
    one of them is a type the version does not allow, else InvalidModelError."""
    return UnsupportedTypeError if "type-not-allowed" in kinds else InvalidModelError


def refuse(label: str, findings: Sequence[NodeFinding]) -> None:
    """Raise for a node's findings (nothing if there are none): "<label>: <message>; ...", as
    :func:`refusal_class` says."""
    if findings:
        raise refusal_class([f.kind for f in findings])(
            f"{label}: {'; '.join(f.message for f in findings)}"
        )
