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
from typing import Any, NamedTuple

from .._extras import extra_needed
from .._paths import absolute_path
from .._protobuf import PROTOBUF_MESSAGE_LIMIT
from ..dtypes import RELU_TYPE_BY_NAME
from ..errors import InvalidModelError
from ..io.endpoint import Endpoint
from ..io.identity import open_classified
from ..versions import ReluVersion, version_for_opset
from ._graph import GraphPath, graph_at, owner_label, walk, walk_below
from ._ir import (
    LightModel,
    ModelStructure,
    call_key,
    function_key,
    function_name,
    light_model,
    light_model_bytes,
    mapped_file,
    model_structure,
    resolved_body,
)
from ._rules import (
    AI_ONNX_DOMAINS,
    declared_onnx_type,
    onnx_type_of_elem_type,
    onnx_type_of_type_proto,
    shown_name,
)

with extra_needed():  # a missing onnx raises the one MissingExtraError
    import onnx
    from onnx import shape_inference

__all__ = [
    "load_model",
    "read_model",
    "LoadedModel",
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


def load_model(model_or_path: object, *, external_data: bool = True) -> onnx.ModelProto:
    """A ModelProto from a ModelProto, a path (str or os.PathLike) or the serialized bytes.

    A file's external tensor data is read in when ``external_data`` is true (and it keeps the
    model under protobuf's 2 GiB); when false it is only checked, never read: judging Relu
    nodes needs the tensors' types and shapes, which their protos give (check_model, legalize
    and ort_session open a model at the cost of its proto, whatever its weights).

    Raises OSError (e.g. FileNotFoundError) for a file that cannot be opened,
    UnsupportedPathError for a path that is not a regular file (a FIFO would be waited on, a
    device such as /dev/zero read without end), and InvalidModelError (a ValueError) for
    content that is not a readable ONNX model.
    """
    return read_model(model_or_path, external_data=external_data).model


#: Models up to this size are parsed whole even where their weights are not wanted.
_WHOLE = 1 << 20


@dataclass(frozen=True)
class LoadedModel:
    """A model as a front end read it.

    Attributes
    ----------
    model : onnx.ModelProto
        The model; without its large initializers' values where read with ``weights=False``
        (:func:`._ir.light_model_bytes`).
    given : object
        What the caller gave: the ModelProto, the path (as a str) or the bytes.
    buffer : bytes, mmap or None
        A file's or the given bytes' serialized model (None for a ModelProto).
    light : LightModel or None
        Where the initializers lie in ``buffer`` when ``model`` was read without them.
    nodes : tuple of onnx.NodeProto
        The main graph's nodes, held while the model is read: protobuf makes a new Python
        object for a node each time it is reached unless one is alive, and each reading of a
        model of thousands of nodes would pay for them again.
    """

    model: onnx.ModelProto
    given: object
    buffer: Any = None
    light: LightModel | None = None
    nodes: tuple[Any, ...] = ()

    @property
    def full(self) -> bool:
        """Whether ``model`` holds every tensor's values (as given or as the file has them)."""
        return self.light is None


def read_model(
    model_or_path: object, *, external_data: bool = True, weights: bool = True
) -> LoadedModel:
    """:func:`load_model`, keeping what was given; ``weights=False`` leaves out the values of
    the main graph's large initializers (a file's are never read: it is mapped, and only the
    bytes around them are touched) and reads no external data."""
    from google.protobuf.message import DecodeError

    if isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path if weights else light_model(model_or_path)
        nodes = tuple(model.graph.node)
        _refuse_non_utf8_strings(model_or_path, "the given model")
        return LoadedModel(model, model_or_path, nodes=nodes)
    folder = None  # where external data is looked up: a model file's folder
    given: object
    if isinstance(model_or_path, (bytes, bytearray, memoryview)):
        source, data = "the given bytes", model_or_path
        given = model_or_path
    elif isinstance(model_or_path, (str, os.PathLike)):
        path = os.fspath(model_or_path)
        given = path
        source = f"file {path!r}"
        endpoint = model_or_path if isinstance(model_or_path, Endpoint) else Endpoint.of(path)
        endpoint.require_model_file()
        folder = os.path.dirname(absolute_path(path))
        with open_classified(endpoint) as stream:  # what was classified, never blocking
            size = os.fstat(stream.fileno()).st_size
            if size >= PROTOBUF_MESSAGE_LIMIT:  # protobuf would call it corrupt after reading it
                raise InvalidModelError(
                    f"{source} is {size} bytes: protobuf reads no message of 2 GiB or more, so"
                    " no ONNX model file can be that large; keep its large tensors in external"
                    " data files (onnx.save_model(model, path, save_as_external_data=True))"
                )
            data = stream.read() if weights else mapped_file(stream, size)
    else:
        raise TypeError(
            "expected an onnx.ModelProto, a path (str or os.PathLike) or bytes,"
            f" got {type(model_or_path).__name__}"
        )
    model = onnx.ModelProto()
    light = None
    try:
        if weights or (isinstance(data, (bytes, bytearray, memoryview)) and len(data) <= _WHOLE):
            # (a small model is parsed whole: reading around its weights would cost more)
            model.ParseFromString(bytes(data) if not isinstance(data, bytes) else data)
        else:
            light = light_model_bytes(data)
            model.ParseFromString(light.data)
    except (DecodeError, UnicodeDecodeError, ValueError) as error:
        # protobuf's pure-Python parser (the only one on some Pythons, e.g. free-threaded 3.13)
        # raises UnicodeDecodeError for a string field that is not UTF-8; the light reader a
        # ValueError for wire data it cannot follow.
        raise InvalidModelError(f"{source} is not a readable ONNX model: {error}") from None
    # Protobuf parses many byte strings (the empty one included) into some message: a real
    # model has an IR version and a graph.
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise InvalidModelError(
            f"{source} is not an ONNX model: it has no IR version or no graph"
            f" (ir_version={model.ir_version}, {len(data)} bytes)"
        )
    if folder is not None:
        _load_external_data(model, folder, source, external_data and weights)
    nodes = tuple(model.graph.node)
    _refuse_non_utf8_strings(model, source)
    return LoadedModel(model, given, data, light, nodes)


def _non_utf8_string(message: Any, where: str) -> tuple[str, bytes] | None:
    """The first string field under ``message`` that protobuf gave back as bytes (it is not
    UTF-8; onnx.proto is proto2, which lets such strings through), with where it is."""
    found = _first_non_utf8(message)
    if found is None:
        return None
    steps, value = found
    return where + "".join(reversed(steps)), value


#: A NodeProto's own strings, read directly (a model holds thousands of nodes).
_NODE_STRINGS = ("name", "op_type", "domain", "doc_string", "overload")

#: The messages whose serialization is tested whole for ASCII (never a TensorProto: that would
#: copy its values out).
_SERIALIZED_WHOLE = frozenset(("NodeProto", "ValueInfoProto"))


def _first_non_utf8(message: Any) -> tuple[list[str], bytes] | None:
    if message.DESCRIPTOR.name == "NodeProto" and message.SerializeToString().isascii():
        return None  # the common case, at C speed: every string (and number) of it ASCII
    if (
        message.DESCRIPTOR.name == "NodeProto"
        and not message.attribute
        and not message.metadata_props
        and not getattr(message, "device_configurations", ())
    ):
        for name in _NODE_STRINGS:
            value = getattr(message, name, "")
            if type(value) is bytes:
                return [f".{name}"], value
        for name in ("input", "output"):
            for i, value in enumerate(getattr(message, name)):
                if type(value) is bytes:
                    return [f".{name}[{i}]"], value
        return None
    if message.DESCRIPTOR.name == "TensorProto":
        # its strings only: ListFields would copy its values (raw_data) out of the message
        for name in ("name", "doc_string"):
            value = getattr(message, name)
            if type(value) is bytes:
                return [f".{name}"], value
        for name in ("external_data", "metadata_props"):
            for i, entry in enumerate(getattr(message, name, ())):
                found = _first_non_utf8(entry)
                if found is not None:
                    found[0].append(f".{name}[{i}]")
                    return found
        return None
    for field, value in message.ListFields():
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == 3
        if (
            repeated
            and field.type == field.TYPE_MESSAGE
            and field.message_type.name in _SERIALIZED_WHOLE
            and all(map(bytes.isascii, map(type(value[0]).SerializeToString, value)))
        ):
            continue  # a graph's thousands of nodes: every string of each ASCII, at C speed
        entries: list[tuple[int | None, Any]] = (
            list(enumerate(value)) if repeated else [(None, value)]
        )
        if field.type == field.TYPE_MESSAGE:
            for position, item in entries:
                found = _first_non_utf8(item)
                if found is not None:
                    found[0].append(f".{field.name}" + (f"[{position}]" if repeated else ""))
                    return found
        elif field.type == field.TYPE_STRING:
            for position, item in entries:
                if isinstance(item, bytes):
                    return [f".{field.name}" + (f"[{position}]" if repeated else "")], item
    return None


def _refuse_non_utf8_strings(model: onnx.ModelProto, source: str) -> None:
    """The one rule for strings out of a model: ONNX strings are UTF-8 text. A model holding
    one that is not (a name, a domain, a doc string) is refused here, where every front end
    loads its model, naming the field and showing the string decoded with backslashreplace
    (:func:`._rules.model_text`): onnx-relu could neither build the nodes and values that
    name it (protobuf refuses to set such a string) nor run it the same way everywhere."""
    found = _non_utf8_string(model, "model")
    if found is not None:
        where, value = found
        raise InvalidModelError(
            f"{source} holds a string that is not UTF-8: {where} is {shown_name(value)};"
            " ONNX strings are UTF-8 text, and onnx-relu refuses a model it could not name"
            " or rewrite exactly"
        )


# The size from which external data is left external: protobuf's limit, since a model whose
# external data would take it there cannot be serialized (onnx's shape inference serializes the
# model). A name of its own because it is this rule's threshold, not protobuf's.
_INLINE_LIMIT = PROTOBUF_MESSAGE_LIMIT


@dataclass(frozen=True)
class _ExternalData:
    """A tensor's checked ``external_data`` fields (onnx's ``ExternalDataInfo``, validated)."""

    location: str
    offset: int
    length: int | None


def _external_data_fields(tensor: onnx.TensorProto, source: str) -> _ExternalData:
    """``tensor``'s external data fields, each checked before onnx's ``ExternalDataInfo`` would
    turn it into a bare ValueError or TypeError: the location a relative path in UTF-8 without
    NUL, offset and length whole numbers >= 0 in decimal digits. Refused (InvalidModelError)
    naming the tensor and the field."""

    def refuse(problem: str) -> InvalidModelError:
        return InvalidModelError(
            f"{source}: its external tensor data cannot be read: tensor {tensor.name!r}: {problem}"
        )

    fields: dict[str, str] = {}
    for entry in tensor.external_data:
        key, value = entry.key, entry.value
        if isinstance(key, bytes) or isinstance(value, bytes):  # proto2: not UTF-8
            raise refuse(f"external_data field {key!r} is {value!r}, which is not UTF-8 text")
        fields[key] = value
    location = fields.get("location", "")
    if "\0" in location:
        raise refuse(f"external_data field 'location' ({location!r}) holds a NUL character")
    numbers: dict[str, int | None] = {}
    for key in ("offset", "length"):
        value = fields.get(key)
        if value is None or value == "":
            numbers[key] = None
        elif value.isascii() and value.isdigit():
            numbers[key] = int(value)
        else:
            raise refuse(
                f"external_data field {key!r} is {value!r}; it must be a whole number of bytes"
                " >= 0 in decimal digits"
            )
    return _ExternalData(location, numbers["offset"] or 0, numbers["length"])


def _tensor_data_bytes(tensor: onnx.TensorProto) -> int | None:
    """How many bytes of raw data ``tensor``'s dims and data type call for (None: no fixed
    size, e.g. strings or an unknown type)."""
    from onnx import helper

    count = 1
    for extent in tensor.dims:
        count *= extent
    known = tensor.data_type in onnx.TensorProto.DataType.values()
    name = onnx.TensorProto.DataType.Name(tensor.data_type) if known else ""
    if name in ("INT4", "UINT4", "FLOAT4E2M1"):
        return (count + 1) // 2
    if name in ("INT2", "UINT2"):
        return (count + 3) // 4
    if name in ("", "UNDEFINED", "STRING"):
        return None
    try:
        return count * helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, ValueError, TypeError):
        return None


def _checked_external_tensors(
    tensors: list[onnx.TensorProto], base_dir: str, source: str
) -> list[_ExternalData]:
    """Each tensor's external data fields, checked (:func:`_external_data_fields`), and the
    data they name checked against the tensor's dims where its file can be found: the bytes
    given (``length``, else what the file holds after ``offset``) must be as many as the dims
    and data type call for, as decoding the initializer (``backend.prepare``) requires."""
    checked = []
    for tensor in tensors:
        info = _external_data_fields(tensor, source)
        wanted = _tensor_data_bytes(tensor)
        given = info.length
        if given is None and wanted is not None and _location_problem(base_dir, info) is None:
            given = os.path.getsize(os.path.join(base_dir, info.location)) - info.offset
        if wanted is not None and given is not None and given != wanted:
            where = (
                f"external_data field 'length' is {given}"
                if info.length is not None
                else f"no external_data field 'length', and its file holds {given} bytes after"
                f" offset {info.offset}"
            )
            raise InvalidModelError(
                f"{source}: its external tensor data cannot be read: tensor"
                f" {tensor.name!r}: {where}, but its dims {list(tensor.dims)} of"
                f" {onnx_type_of_elem_type(tensor.data_type)} need {wanted} bytes"
            )
        checked.append(info)
    return checked


def _location_problem(base_dir: str, info: _ExternalData) -> str | None:
    """Why ``info``'s location names no readable file for a model in ``base_dir`` (None: it
    does): it must be a relative path to a regular file inside that folder, as onnx's loader
    requires."""
    folder = os.path.realpath(base_dir)
    location = info.location
    target = os.path.realpath(os.path.join(folder, location))
    if not location or os.path.isabs(location):
        return f"location {location!r} should be a relative path"
    if os.path.commonpath([folder, target]) != folder:
        return f"location {location!r} points outside the model's folder"
    if not os.path.isfile(target):
        return f"location {location!r} is not a regular file"
    return None


def _external_data_bytes(infos: list[_ExternalData], base_dir: str) -> int:
    """How many bytes loading these external tensors would add (what their files can give)."""
    total = 0
    for info in infos:
        if info.length is not None:
            total += info.length
            continue
        try:
            total += max(0, os.path.getsize(os.path.join(base_dir, info.location)) - info.offset)
        except OSError:
            pass  # a missing file: loading reports it
    return total


def _check_external_data(
    tensors: list[onnx.TensorProto], infos: list[_ExternalData], base_dir: str, source: str
) -> None:
    """What loading would check, without reading the data: each location is a relative path to
    a regular file inside the model's folder that holds offset + length bytes."""
    for tensor, info in zip(tensors, infos, strict=True):
        problem = _location_problem(base_dir, info)
        if problem is None and info.offset + (info.length or 0) > os.path.getsize(
            os.path.join(base_dir, info.location)
        ):
            problem = f"{info.location!r} is shorter than offset + length"
        if problem is not None:
            raise InvalidModelError(
                f"{source}: its external tensor data cannot be read: tensor"
                f" {tensor.name!r}: {problem}"
            )


def _load_external_data(
    model: onnx.ModelProto, base_dir: str, source: str, read: bool = True
) -> None:
    """Read initializers stored beside the model file (as onnx.load does), unless ``read`` is
    false or that would take the model past protobuf's 2 GiB: then they stay external, checked
    but not read (Relu nodes are judged by types and shapes, which the tensors' dims and data
    types give)."""
    from onnx.checker import ValidationError
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    external = [tensor for tensor in model.graph.initializer if uses_external_data(tensor)]
    if external:
        infos = _checked_external_tensors(external, base_dir, source)
        # checked the same way whether the data is then read or not, so that every front end
        # refuses a location with the same words
        _check_external_data(external, infos, base_dir, source)
        if not read or model.ByteSize() + _external_data_bytes(infos, base_dir) >= _INLINE_LIMIT:
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
    """The model's ai.onnx opset, refused (InvalidModelError) if missing or below 1.

    An opset newer than the installed onnx knows is accepted, as everywhere in onnx-relu
    (``relu(x, opset=...)``, ``apply --opset``) and as onnx's own schema lookup does
    (``onnx.defs.get_schema("Relu", 99)`` is Relu-14): the newest Relu version is in force."""
    opset = ai_onnx_opset(model)
    if opset is None:
        raise InvalidModelError(
            "the model imports no ai.onnx operator set (opset_import has no domain '' or"
            " 'ai.onnx'), so the Relu version in force is undefined"
        )
    if opset < 1:
        raise InvalidModelError(f"the model's ai.onnx opset is {opset}; opsets start at 1")
    return opset


class ReluSite(NamedTuple):
    """A Relu node found in a model, with the type of its input (None if unknown).

    ``path`` locates the graph holding it: () for the main graph (or, where ``function`` is set,
    that function's body), else a sequence of (node index, attribute name, graph index) steps
    down from it. ``function`` is the position in ``model.functions`` of the model-local
    function whose body holds the node, None for the main graph; ``opset`` is the ai.onnx opset
    in force there (None: the model's).
    """

    path: tuple[tuple[int, str, int], ...]
    graph_label: str
    index: int  # type: ignore[assignment]  # (a field: it shadows tuple.index, unused here)
    node: onnx.NodeProto
    input_type: str | None
    function: int | None = None
    opset: int | None = None
    #: one named input, one named output, no attribute: judged by its type and opset alone
    plain: bool = False


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


#: The eight Relu types as ONNX names them: those whose type a Relu hands on (onnx's inference
#: hands on any tensor type; a value of another kind is left to it).
_RELU_TYPES = frozenset(entry.onnx_name for entry in RELU_TYPE_BY_NAME.values())


#: ai.onnx operators whose first output has the type of their first input at every version
#: (one type variable for both in each schema; tests/onnx/test_type_passing.py checks it against
#: onnx's), each with the first opset that has it: what a Relu is most often fed by, typed
#: without onnx's shape inference (which costs a model's whole serialization and, the first
#: time in a process, 8 MB for onnx's operator schemas).
_TYPE_PASSING: dict[str, int] = {
    "Add": 1,
    "AveragePool": 1,
    "BatchNormalization": 1,
    "Clip": 1,
    "Concat": 1,
    "Conv": 1,
    "ConvTranspose": 1,
    "Div": 1,
    "Dropout": 1,
    "Einsum": 12,
    "Expand": 8,
    "Flatten": 1,
    "Gather": 1,
    "Gemm": 1,
    "GlobalAveragePool": 1,
    "GlobalMaxPool": 1,
    "Identity": 1,
    "InstanceNormalization": 1,
    "LayerNormalization": 17,
    "LeakyRelu": 1,
    "MatMul": 1,
    "Max": 1,
    "MaxPool": 1,
    "Mean": 1,
    "Min": 1,
    "Mul": 1,
    "Pad": 1,
    "Reshape": 1,
    "Resize": 10,
    "Sigmoid": 1,
    "Slice": 1,
    "Softmax": 1,
    "Split": 1,
    "Squeeze": 1,
    "Sub": 1,
    "Sum": 1,
    "Tanh": 1,
    "Tile": 1,
    "Transpose": 1,
    "Unsqueeze": 1,
}

# AttributeProto.INT; a constant so that reading a Cast needs no onnx enum.
_ATTRIBUTE_INT = 2


def _pass_type(types: dict[str, str | None], node: onnx.NodeProto, attributes: Any) -> None:
    """Give the first output of ``node`` (an ai.onnx operator of :data:`_TYPE_PASSING` in
    force, or a Cast) its type where ONNX's inference of that operator gives it one of the
    Relu types: its first input's, or a Cast's ``to``. Other types are left to onnx."""
    outputs = node.output
    output = outputs[0] if outputs else ""
    if not output or types.get(output) is not None:
        return
    passed: str | None
    if node.op_type == "Cast":
        to = [attribute for attribute in attributes if attribute.name == "to"]
        if len(to) != 1 or to[0].type != _ATTRIBUTE_INT:
            return  # (Cast-1's ``to`` is a string)
        passed = onnx_type_of_elem_type(to[0].i)
    else:
        inputs = node.input
        first = inputs[0] if inputs else ""
        passed = types.get(first) if first else None
    if passed in _RELU_TYPES:
        types[output] = passed


def _typed_site(
    types: dict[str, str | None],
    path: GraphPath,
    label: str,
    index: int,
    node: onnx.NodeProto,
    attributes: Any,
) -> ReluSite:
    """The Relu ``node`` (its ``attributes``) with its input's type among ``types``, the types
    of its graph's values, which it extends with its output's."""
    inputs, outputs = node.input, node.output
    count = len(inputs)
    first = inputs[0] if count else ""
    input_type = types.get(first) if first else None
    output = outputs[0] if len(outputs) == 1 else ""
    if input_type in _RELU_TYPES and output and types.get(output) is None:
        # Relu's output has its input's type (ONNX's inference of Relu, every version):
        # a chain of Relus is typed without onnx's shape inference.
        types[output] = input_type
    plain = count == 1 and bool(first) and bool(output) and not attributes
    # (tuple.__new__: a NamedTuple's own constructor, which takes defaults and keywords, costs
    # twice as much, and a model holds thousands of Relus)
    return _new_site(ReluSite, (path, label, index, node, input_type, None, None, plain))


_new_site = tuple.__new__


def relu_sites(
    graph: onnx.GraphProto,
    outer: dict[str, str | None] | None = None,
    path: GraphPath = (),
    label: str = "",
    opset: int | None = None,
) -> Iterator[ReluSite]:
    """Every ai.onnx Relu node of ``graph`` and its subgraphs, with its input's known type:
    declared, or handed on by the Relus before it, and, given the ai.onnx ``opset`` in force
    in ``graph``, by the operators of ``graph`` itself that hand their input's type on
    (:func:`_pass_type`)."""
    types = _value_types(graph, outer or {})
    types_at = {path: types}

    def subgraph_types(at_path: GraphPath) -> dict[str, str | None]:
        # a subgraph sees its outer scopes' types, ONNX's scoping
        for depth in range(len(path) + 1, len(at_path) + 1):
            if at_path[:depth] not in types_at:
                inner = graph_at(graph, at_path[len(path) : depth])
                types_at[at_path[:depth]] = _value_types(inner, types_at[at_path[: depth - 1]])
        return types_at[at_path]

    # walk's order, the graph's own nodes read directly (a model holds thousands of them)
    for index, node in enumerate(graph.node):
        attributes = node.attribute
        op_type = node.op_type
        if op_type == "Relu" and node.domain in AI_ONNX_DOMAINS:
            yield _typed_site(types, path, label, index, node, attributes)
        elif (
            opset is not None
            and (op_type == "Cast" or _TYPE_PASSING.get(op_type, opset + 1) <= opset)
            and node.domain in AI_ONNX_DOMAINS
        ):
            _pass_type(types, node, attributes)
        if attributes:
            for at in walk_below(node, index, label, path):
                inner = at.node
                if inner.op_type == "Relu" and inner.domain in AI_ONNX_DOMAINS:
                    at_types = subgraph_types(at.path)
                    yield _typed_site(at_types, at.path, at.label, at.index, inner, inner.attribute)


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
    graph: onnx.GraphProto, functions: dict[tuple[str, str, str], int], holding: frozenset[int]
) -> Iterator[tuple[int, str, onnx.NodeProto, tuple[onnx.TypeProto | None, ...]]]:
    """(function position, call site label, the calling node, its inputs' types) for each node
    of ``graph`` and its subgraphs that calls one of the model-local functions ``holding``."""
    types_at: dict[GraphPath, dict[str, onnx.TypeProto]] = {(): _value_type_protos(graph, {})}
    for at in walk(graph):
        types = types_at.get(at.path)
        if types is None:
            types = types_at[at.path] = _value_type_protos(at.graph, types_at[at.path[:-1]])
        position = functions.get(call_key(at.node))
        if position is not None and position in holding:
            call = owner_label(at.node, at.index) + (f" in {at.label}" if at.label else "")
            inputs = tuple(types.get(name) if name else None for name in at.node.input)
            yield position, call, at.node, inputs


def function_relu_sites(
    model: onnx.ModelProto,
    inferred_main: onnx.ModelProto,
    opset: int,
    structure: ModelStructure | None = None,
) -> Iterator[ReluSite]:
    """The Relu nodes in the bodies of the model-local functions the model calls, to any
    depth, typed by inferring each body with the input types and attributes of its call
    sites (once per distinct list; attribute references resolved for that call)."""
    from onnx import helper

    if structure is None:
        structure = model_structure(model)
    if not structure.holds_relu:
        return
    functions = dict(structure.functions)
    seen: set[tuple[int, tuple[bytes, ...], tuple[bytes, ...]]] = set()

    def visit(graph: onnx.GraphProto, caller: str) -> Iterator[ReluSite]:
        calls = _function_calls(graph, functions, structure.holds_relu)
        for position, call, node, call_types in calls:
            function = model.functions[position]
            key = (
                position,
                tuple(t.SerializeToString() if t is not None else b"" for t in call_types),
                tuple(a.SerializeToString() for a in node.attribute),
            )
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
            body = helper.make_graph(
                resolved_body(function, node), "function body", inputs, outputs
            )
            own = [entry for entry in function.opset_import]
            body_model = helper.make_model(
                body,
                opset_imports=own or list(model.opset_import),
                functions=list(model.functions),
            )
            body_model.ir_version = model.ir_version
            function_opset = ai_onnx_opset(body_model) or opset
            label = f"function '{function_name(function_key(function))}' called by {call}" + (
                f" in {caller}" if caller else ""
            )
            inferred_body = inferred_model(body_model).graph
            for site in relu_sites(inferred_body, label=label):
                yield ReluSite(
                    site.path,
                    site.graph_label,
                    site.index,
                    site.node,
                    site.input_type,
                    position,
                    function_opset,
                    site.plain,
                )
            yield from visit(inferred_body, label)

    yield from visit(inferred_main.graph, "")


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
        The model as loaded (not the inferred copy); without its large initializers' values
        where :func:`typed_relu_sites` was asked for no weights.
    opset : int or None
        Its ai.onnx opset; None only when it has no Relu node (then it is not asked for).
    version : ReluVersion or None
        The Relu version in force at ``opset``.
    sites : tuple of ReluSite
        Every Relu node, in graph order, subgraphs included, then those of the local
        functions the model calls, to any depth.
    loaded : LoadedModel or None
        How the model was read (what was given, its bytes), for a front end that hands the
        model on unchanged.
    structure : ModelStructure or None
        Its local functions and the domains it names (:func:`._ir.model_structure`).
    """

    model: onnx.ModelProto
    opset: int | None
    version: ReluVersion | None
    sites: tuple[ReluSite, ...]
    loaded: LoadedModel | None = None
    structure: ModelStructure | None = None


def typed_relu_sites(model_or_path: object, *, weights: bool = True) -> TypedModel:
    """Load a model, find its Relu nodes and infer their input types: what check and legalize
    judge.

    A model without Relu nodes needs no ai.onnx opset; one with Relu nodes must have one that the
    model imports (:func:`checked_model_opset`). Its structure is checked first
    (:func:`._ir.model_structure`). Inference never sees a large tensor's values; with
    ``weights=False`` they are not even read (:func:`read_model`). Raises as
    :func:`load_model` does.
    """
    loaded = read_model(model_or_path, external_data=False, weights=weights)
    model = loaded.model
    structure = model_structure(model)
    try:
        passing = ai_onnx_opset(model)  # the opset at which types are handed on
    except InvalidModelError:
        passing = None  # (two ai.onnx opsets: refused below if the model has a Relu)
    sites = tuple(relu_sites(model.graph, opset=passing))
    if not sites and not structure.main_calls:
        return TypedModel(model, None, None, (), loaded, structure)
    opset = checked_model_opset(model)
    # Every Relu typed by the declared types (handed on by the operators before it) and no
    # local function holding a Relu called: onnx's shape inference would tell nothing more, and
    # is skipped.
    if structure.main_calls or any(site.input_type is None for site in sites):
        inferred = inferred_model(model if not loaded.full else light_model(model))
        sites = tuple(relu_sites(inferred.graph)) + tuple(
            function_relu_sites(model, inferred, opset, structure)
        )
    return TypedModel(model, opset, version_for_opset(opset), sites, loaded, structure)
