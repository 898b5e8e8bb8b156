"""Models: loading one (a path, its bytes or a ModelProto; external data beside a file), its
ai.onnx opset, and THE pipeline that check_model and legalize both run: load, find the Relu
nodes, infer the value types, and hand back each Relu with its input's type
(:func:`typed_relu_sites`).

Relu nodes of the main graph and of nested subgraphs (If, Loop, Scan bodies) are found, and those
in the bodies of model-local functions (``model.functions``) that the model calls: a function's
Relu is judged once per distinct list of input types its call sites give it, under the Relu
version of the function's own ai.onnx opset (the model's where it imports none).

Examples
--------
>>> from onnx import TensorProto, helper
>>> graph = helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"], name="relu1")], "g",
...     [helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
...     [helper.make_tensor_value_info("y", TensorProto.INT8, [2])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
>>> typed = typed_relu_sites(model.SerializeToString())
>>> typed.opset, typed.version.name, [(s.node.name, s.input_type) for s in typed.sites]
(13, 'Relu-13', [('relu1', 'tensor(int8)')])
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import onnx
from onnx import shape_inference

from .._protobuf import PROTOBUF_MESSAGE_LIMIT
from .._text import printable
from ..errors import InvalidModelError
from ..io.endpoint import Endpoint
from ..versions import ReluVersion, version_for_opset
from ._graph import GraphPath, owner_label, walk
from ._rules import (
    AI_ONNX_DOMAINS,
    declared_onnx_type,
    is_relu,
    onnx_type_of_elem_type,
    onnx_type_of_type_proto,
)

__all__ = [
    "load_model",
    "latest_onnx_opset",
    "ai_onnx_opset",
    "checked_model_opset",
    "ReluSite",
    "relu_sites",
    "function_relu_sites",
    "inferred_model",
    "TypedModel",
    "typed_relu_sites",
]


def load_model(model_or_path: object) -> onnx.ModelProto:
    """A ModelProto from a ModelProto, a path (str or os.PathLike) or the serialized bytes.

    Raises OSError (e.g. FileNotFoundError) for a file that cannot be opened,
    UnsupportedPathError for a path that is not a regular file (a FIFO would be waited on, a
    device such as /dev/zero read without end), and InvalidModelError (a ValueError) for
    content that is not a readable ONNX model.
    """
    from google.protobuf.message import DecodeError

    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray, memoryview)):
        source, data = "the given bytes", bytes(model_or_path)
    elif isinstance(model_or_path, (str, os.PathLike)):
        path = os.fspath(model_or_path)
        source = f"file {path!r}"
        endpoint = model_or_path if isinstance(model_or_path, Endpoint) else Endpoint.of(path)
        endpoint.require_model_file()
        with open(model_or_path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size >= PROTOBUF_MESSAGE_LIMIT:  # protobuf would call it corrupt after reading it
                raise InvalidModelError(
                    f"{source} is {size} bytes: protobuf reads no message of 2 GiB or more, so"
                    " no ONNX model file can be that large; keep its large tensors in external"
                    " data files (onnx.save_model(model, path, save_as_external_data=True))"
                )
            data = stream.read()
    else:
        raise TypeError(
            "expected an onnx.ModelProto, a path (str or os.PathLike) or bytes,"
            f" got {type(model_or_path).__name__}"
        )
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, UnicodeDecodeError) as error:
        # protobuf's pure-Python parser (the only one on some Pythons, e.g. free-threaded 3.13)
        # raises UnicodeDecodeError for a string field that is not UTF-8.
        raise InvalidModelError(f"{source} is not a readable ONNX model: {error}") from None
    # Protobuf parses many byte strings (the empty one included) into some message: a real
    # model has an IR version and a graph.
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise InvalidModelError(
            f"{source} is not an ONNX model: it has no IR version or no graph"
            f" (ir_version={model.ir_version}, {len(data)} bytes)"
        )
    if source.startswith("file"):
        _load_external_data(model, os.path.dirname(os.path.abspath(path)), source)
    return model


# The size from which external data is left external: protobuf's limit, since a model whose
# external data would take it there cannot be serialized (onnx's shape inference serializes the
# model); lowered by tests.
_INLINE_LIMIT = PROTOBUF_MESSAGE_LIMIT


def _external_data_bytes(tensors: list[onnx.TensorProto], base_dir: str) -> int:
    """How many bytes loading these external tensors would add (what their files can give)."""
    from onnx.external_data_helper import ExternalDataInfo

    total = 0
    for tensor in tensors:
        info = ExternalDataInfo(tensor)
        if info.length:
            total += int(info.length)
            continue
        try:
            total += max(
                0, os.path.getsize(os.path.join(base_dir, info.location)) - int(info.offset or 0)
            )
        except OSError:
            pass  # a missing file: loading reports it
    return total


def _check_external_data(tensors: list[onnx.TensorProto], base_dir: str, source: str) -> None:
    """What loading would check, without reading the data: each location is a relative path to
    a regular file inside the model's folder that holds offset + length bytes."""
    from onnx.external_data_helper import ExternalDataInfo

    folder = os.path.realpath(base_dir)
    for tensor in tensors:
        info = ExternalDataInfo(tensor)
        location = info.location or ""
        problem = None
        target = os.path.realpath(os.path.join(folder, location))
        if not location or os.path.isabs(location):
            problem = f"location {location!r} should be a relative path"
        elif os.path.commonpath([folder, target]) != folder:
            problem = f"location {location!r} points outside the model's folder"
        elif not os.path.isfile(target):
            problem = f"location {location!r} is not a regular file"
        elif int(info.offset or 0) + int(info.length or 0) > os.path.getsize(target):
            problem = f"{location!r} is shorter than offset + length"
        if problem is not None:
            raise InvalidModelError(
                f"{source}: its external tensor data cannot be read: tensor {tensor.name!r}:"
                f" {problem}"
            )


def _load_external_data(model: onnx.ModelProto, base_dir: str, source: str) -> None:
    """Read initializers stored beside the model file (as onnx.load does), unless that would
    take the model past protobuf's 2 GiB: then they stay external, checked but not read (Relu
    nodes are judged by types and shapes, which the tensors' dims and data types give)."""
    from onnx.checker import ValidationError
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    external = [tensor for tensor in model.graph.initializer if uses_external_data(tensor)]
    if external:
        if model.ByteSize() + _external_data_bytes(external, base_dir) >= _INLINE_LIMIT:
            _check_external_data(external, base_dir, source)
            return
        try:
            load_external_data_for_model(model, base_dir)
        # onnx raises ValidationError (not a ValueError) for a location that is missing, not a
        # regular file, absolute or outside the model's folder.
        except (OSError, ValueError, ValidationError) as error:
            raise InvalidModelError(
                f"{source}: its external tensor data cannot be read: {error}"
            ) from error


def latest_onnx_opset() -> int:
    """The newest ai.onnx opset the installed onnx package knows."""
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


@dataclass(frozen=True)
class ReluSite:
    """A Relu node found in a model, with the type of its input (None if unknown).

    ``path`` locates the graph holding it: () for the main graph (or, where ``function`` is set,
    that function's body), else a sequence of (node index, attribute name, graph index) steps
    down from it. ``function`` is the position in ``model.functions`` of the model-local
    function whose body holds the node, None for the main graph; ``opset`` is the ai.onnx opset
    in force there (None: the model's).
    """

    path: tuple[tuple[int, str, int], ...]
    graph_label: str
    index: int
    node: onnx.NodeProto
    input_type: str | None
    function: int | None = None
    opset: int | None = None


def _value_types(graph: onnx.GraphProto, outer: dict[str, str | None]) -> dict[str, str | None]:
    types = dict(outer)
    inputs = len(graph.input)
    for position, value in enumerate(
        list(graph.input) + list(graph.value_info) + list(graph.output)
    ):
        # An input of element type 0 declares no type (refused); elsewhere it is unknown.
        known = (declared_onnx_type if position < inputs else onnx_type_of_type_proto)(value.type)
        if known is not None or value.name not in types:
            types[value.name] = known
    for tensor in graph.initializer:
        types[tensor.name] = onnx_type_of_elem_type(tensor.data_type)
    return types


def relu_sites(
    graph: onnx.GraphProto,
    outer: dict[str, str | None] | None = None,
    path: GraphPath = (),
    label: str = "",
) -> Iterator[ReluSite]:
    """Every ai.onnx Relu node of ``graph`` and its subgraphs, with its input's known type."""
    types_at = {path: _value_types(graph, outer or {})}
    for at in walk(graph, label, path):
        types = types_at.get(at.path)
        if types is None:  # a subgraph, seen after its owner: it sees its outer scope's types
            types = types_at[at.path] = _value_types(at.graph, types_at[at.path[:-1]])
        if is_relu(at.node):
            node = at.node
            input_type = types.get(node.input[0]) if node.input and node.input[0] else None
            yield ReluSite(at.path, at.label, at.index, node, input_type)


def _value_type_protos(
    graph: onnx.GraphProto, outer: dict[str, onnx.TypeProto]
) -> dict[str, onnx.TypeProto]:
    types = dict(outer)
    for value in list(graph.input) + list(graph.value_info) + list(graph.output):
        if value.type.WhichOneof("value") is not None:
            types[value.name] = value.type
    for tensor in graph.initializer:
        types[tensor.name] = onnx.helper.make_tensor_type_proto(tensor.data_type, None)
    return types


def _function_calls(
    graph: onnx.GraphProto, functions: dict[tuple[str, str], int]
) -> Iterator[tuple[int, str, tuple[onnx.TypeProto | None, ...]]]:
    """(function position, call site label, its inputs' types) for each node of ``graph`` and
    its subgraphs that calls a model-local function."""
    types_at: dict[GraphPath, dict[str, onnx.TypeProto]] = {(): _value_type_protos(graph, {})}
    for at in walk(graph):
        types = types_at.get(at.path)
        if types is None:
            types = types_at[at.path] = _value_type_protos(at.graph, types_at[at.path[:-1]])
        position = functions.get((at.node.domain, at.node.op_type))
        if position is not None:
            call = owner_label(at.node, at.index) + (f" in {at.label}" if at.label else "")
            inputs = tuple(types.get(name) if name else None for name in at.node.input)
            yield position, call, inputs


def function_relu_sites(
    model: onnx.ModelProto, inferred_main: onnx.ModelProto, opset: int
) -> Iterator[ReluSite]:
    """The Relu nodes in the bodies of the model-local functions the model calls, typed by
    inferring each body with the input types of its call sites (once per distinct list)."""
    from onnx import helper

    functions = {(f.domain, f.name): i for i, f in enumerate(model.functions)}
    if not functions:
        return
    seen: set[tuple[int, tuple[bytes, ...]]] = set()
    for position, call, call_types in _function_calls(inferred_main.graph, functions):
        function = model.functions[position]
        if not any(is_relu(node) for node in _function_nodes(function)):
            continue
        key = (position, tuple(t.SerializeToString() if t is not None else b"" for t in call_types))
        if key in seen:
            continue
        seen.add(key)
        inputs = []
        for i, name in enumerate(function.input):
            value = onnx.ValueInfoProto(name=name)
            if i < len(call_types) and call_types[i] is not None:
                value.type.CopyFrom(call_types[i])
            inputs.append(value)
        outputs = [onnx.ValueInfoProto(name=name) for name in function.output]
        body = helper.make_graph(list(function.node), "function body", inputs, outputs)
        own = [entry for entry in function.opset_import]
        body_model = helper.make_model(
            body, opset_imports=own or list(model.opset_import), functions=list(model.functions)
        )
        body_model.ir_version = model.ir_version
        function_opset = ai_onnx_opset(body_model) or opset
        domain = f"{function.domain}." if function.domain else ""
        label = f"function '{printable(domain + function.name)}' called by {call}"
        for site in relu_sites(inferred_model(body_model).graph, label=label):
            yield ReluSite(
                site.path,
                site.graph_label,
                site.index,
                site.node,
                site.input_type,
                position,
                function_opset,
            )


def inferred_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the value types onnx shape inference can derive (non-strict)."""
    try:
        return shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=False
        )
    except (
        shape_inference.InferenceError,
        onnx.checker.ValidationError,
        RuntimeError,
        # onnx's C++ inference raises these (std::invalid_argument, std::out_of_range) for
        # malformed protos, e.g. "Invalid tensor data type 74." for an unknown element type.
        ValueError,
        IndexError,
    ):
        # Inference gave up on the whole model: judge with the declared types only (every
        # value without one is then reported as not inferable, never guessed).
        return model


def _function_nodes(function: onnx.FunctionProto) -> Iterator[onnx.NodeProto]:
    """The nodes of a function's body, those of its nodes' subgraphs included."""
    return (at.node for at in walk(function))


@dataclass(frozen=True)
class TypedModel:
    """A loaded model and its Relu nodes, each with its input's inferred type.

    Attributes
    ----------
    model : onnx.ModelProto
        The model as loaded (not the inferred copy).
    opset : int or None
        Its ai.onnx opset; None only when it has no Relu node (then it is not asked for).
    version : ReluVersion or None
        The Relu version in force at ``opset``.
    sites : tuple of ReluSite
        Every Relu node, in graph order, subgraphs included.
    """

    model: onnx.ModelProto
    opset: int | None
    version: ReluVersion | None
    sites: tuple[ReluSite, ...]


def typed_relu_sites(model_or_path: object) -> TypedModel:
    """Load a model, find its Relu nodes and infer their input types: what check and legalize
    judge.

    A model without Relu nodes needs no ai.onnx opset; one with Relu nodes must have one that the
    installed onnx knows (:func:`checked_model_opset`). Raises as :func:`load_model` does.
    """
    model = load_model(model_or_path)
    if next(relu_sites(model.graph), None) is None and not any(
        is_relu(node) for function in model.functions for node in _function_nodes(function)
    ):
        return TypedModel(model, None, None, ())
    opset = checked_model_opset(model)
    inferred = inferred_model(model)
    sites = tuple(relu_sites(inferred.graph)) + tuple(function_relu_sites(model, inferred, opset))
    return TypedModel(model, opset, version_for_opset(opset), sites)
