"""What makes an ai.onnx Relu node valid, shared by the backend, the reference op, check_model
and legalize, so that all four word their verdicts the same way.

Nothing here imports onnx at module level: protos are read through their attributes, and the
few onnx functions needed are imported inside the functions that need them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from ._api import unsupported_type_message
from ._onnx_types import _ONNX_NAME_OF, RELU_TYPE_DTYPES
from .errors import InvalidModelError
from .versions import RELU_VERSIONS, ReluVersion, version_for_opset

if TYPE_CHECKING:
    import onnx

#: The two spellings of the default operator domain.
AI_ONNX_DOMAINS = ("", "ai.onnx")

_DTYPE_OF_ONNX_TYPE: dict[str, np.dtype] = {name: dt for dt, name in _ONNX_NAME_OF.items()}
_DTYPE_OF_ONNX_TYPE.update(RELU_TYPE_DTYPES)

# AttributeProto.INTS; a constant so that this module needs no onnx import.
_ATTRIBUTE_INTS = 7


def is_relu(node: onnx.NodeProto) -> bool:
    """True for a Relu node of the ai.onnx domain (spelled "" or "ai.onnx")."""
    return node.op_type == "Relu" and node.domain in AI_ONNX_DOMAINS


def latest_onnx_opset() -> int:
    """The newest ai.onnx opset the installed onnx package knows."""
    import onnx.defs

    return onnx.defs.onnx_opset_version()


def ai_onnx_opset(model: onnx.ModelProto) -> int | None:
    """The model's ai.onnx opset version, or None if it imports none.

    Raises InvalidModelError if "" and "ai.onnx" are both imported with different versions.
    """
    versions = {entry.version for entry in model.opset_import if entry.domain in AI_ONNX_DOMAINS}
    if len(versions) > 1:
        raise InvalidModelError(
            f"the model imports the ai.onnx operator set twice with different versions"
            f" {sorted(versions)} (as domain '' and 'ai.onnx')"
        )
    return versions.pop() if versions else None


def checked_model_opset(model: onnx.ModelProto) -> int:
    """The model's ai.onnx opset, refused (InvalidModelError) if missing or unknown to onnx."""
    opset = ai_onnx_opset(model)
    if opset is None:
        raise InvalidModelError(
            "the model imports no ai.onnx operator set (opset_import has no domain '' or"
            " 'ai.onnx'), so the Relu version in force is undefined"
        )
    latest = latest_onnx_opset()
    if not 1 <= opset <= latest:
        raise InvalidModelError(
            f"the model's ai.onnx opset is {opset}; the installed onnx knows opsets 1 to {latest}"
        )
    return opset


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
        return {
            "sequence_type": "seq(...)",
            "map_type": "map(...)",
            "optional_type": "optional(...)",
            "sparse_tensor_type": "sparse_tensor(...)",
        }.get(kind, kind)
    elem_type = type_proto.tensor_type.elem_type
    return onnx_type_of_elem_type(elem_type) if elem_type else None


def dtype_of_onnx_type(onnx_type: str) -> np.dtype | None:
    """The numpy dtype of an ONNX tensor type (bfloat16: ml_dtypes.bfloat16); None if none."""
    return _DTYPE_OF_ONNX_TYPE.get(onnx_type)


def type_refusal(onnx_type: str, opset: int) -> str | None:
    """Why the Relu in force at ``opset`` refuses ``onnx_type``, or None if it allows it."""
    version = version_for_opset(opset)
    if onnx_type in version.types:
        return None
    dtype = dtype_of_onnx_type(onnx_type)
    if dtype is not None:
        return unsupported_type_message(dtype, opset)
    return (
        f"{version.name} (in force at opset {opset}) does not allow {onnx_type};"
        f" allowed types: {', '.join(version.types)}. No Relu version allows it."
    )


def attribute_problems(node: onnx.NodeProto, opset: int) -> list[str]:
    """Attributes of a Relu node that its version does not declare, or declares otherwise."""
    version = version_for_opset(opset)
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
        f"attribute {name!r} is not defined by {version.name} (in force at opset {opset}),"
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


def describe_node(node: onnx.NodeProto, index: int) -> str:
    """A node named for a message: its name if it has one, and always its position."""
    if node.name:
        return f"{node.op_type} node {node.name!r} (node #{index})"
    return f"{node.op_type} node #{index} (unnamed)"


def load_model(model_or_path: object) -> onnx.ModelProto:
    """A ModelProto from a ModelProto, a path (str or os.PathLike) or the serialized bytes.

    Raises OSError (e.g. FileNotFoundError) for a file that cannot be opened, and
    InvalidModelError (a ValueError) for content that is not a readable ONNX model.
    """
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray, memoryview)):
        source, data = "the given bytes", bytes(model_or_path)
    elif isinstance(model_or_path, (str, os.PathLike)):
        source = f"file {os.fspath(model_or_path)!r}"
        with open(model_or_path, "rb") as stream:
            data = stream.read()
    else:
        raise TypeError(
            "expected an onnx.ModelProto, a path (str or os.PathLike) or bytes,"
            f" got {type(model_or_path).__name__}"
        )
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError as error:
        raise InvalidModelError(f"{source} is not a readable ONNX model: {error}") from None
    # Protobuf parses many byte strings (the empty one included) into some message: a real
    # model has an IR version and a graph.
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise InvalidModelError(
            f"{source} is not an ONNX model: it has no IR version or no graph"
            f" (ir_version={model.ir_version}, {len(data)} bytes)"
        )
    if source.startswith("file"):
        _load_external_data(model, os.path.dirname(os.path.abspath(model_or_path)), source)
    return model


def _load_external_data(model: onnx.ModelProto, base_dir: str, source: str) -> None:
    """Read initializers stored beside the model file (as onnx.load does)."""
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    from onnx.checker import ValidationError

    if any(uses_external_data(tensor) for tensor in model.graph.initializer):
        try:
            load_external_data_for_model(model, base_dir)
        # onnx raises ValidationError (not a ValueError) for a location that is missing, not a
        # regular file, absolute or outside the model's folder.
        except (OSError, ValueError, ValidationError) as error:
            raise InvalidModelError(
                f"{source}: its external tensor data cannot be read: {error}"
            ) from error
