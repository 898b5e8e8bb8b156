"""THE reading of a model's structure that every front end goes through: its local functions
keyed as ONNX IR 10 keys them, ``(domain, name, overload)``; which function each node calls;
calls of functions from functions to any depth (a cycle refused); attribute references
(``ref_attr_name``) resolved at each call site; the structure ONNX requires (each attribute
once per node, the graphs If, Loop, Scan and SequenceMap need); and the model read without
its weights' bytes (:func:`light_model_bytes`, :func:`light_model`), since judging a Relu needs
types and shapes, never tensor data.

Why the model's own protobuf rather than ``onnx_ir``: a front end here reads a handful of
fields of each node (op type, domain, overload, attributes, inputs) and hands onnxruntime the
user's file unchanged where nothing needs rerouting; ``onnx_ir.load`` builds a Python object
per node and value and parses the weights' bytes, which cost more than the whole budget of an
``ort_session`` over onnxruntime's own (BENCHMARKS.md, "Session creation through the one IR
reading").

Nothing here imports onnx at module level.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from ..errors import InvalidModelError
from ._graph import NodeAt, owner_label, walk, walk_below
from ._rules import AI_ONNX_DOMAINS, is_relu, printable, shown_name

if TYPE_CHECKING:
    import onnx

__all__ = [
    "FunctionKey",
    "function_key",
    "call_key",
    "function_name",
    "ModelStructure",
    "model_structure",
    "resolved_body",
    "LightModel",
    "light_model_bytes",
    "light_model",
    "mapped_file",
    "FileBytes",
    "write_spliced_model",
    "spliced_model_bytes",
    "domains_used",
]

#: A local function as ONNX IR 10 names it: (domain, name, overload).
FunctionKey = tuple[str, str, str]

#: The graph attributes an ai.onnx operator cannot do without.
_REQUIRED_GRAPHS: dict[str, tuple[str, ...]] = {
    "If": ("then_branch", "else_branch"),
    "Loop": ("body",),
    "Scan": ("body",),
    "SequenceMap": ("body",),
}

# AttributeProto.GRAPH and GRAPHS; constants so that this module needs no onnx.
_GRAPH, _GRAPHS = 5, 10


def function_key(function: onnx.FunctionProto) -> FunctionKey:
    """A FunctionProto's (domain, name, overload)."""
    return function.domain, function.name, function.overload


def call_key(node: onnx.NodeProto) -> FunctionKey:
    """The (domain, name, overload) a node calls."""
    return node.domain, node.op_type, node.overload


def function_name(key: FunctionKey) -> str:
    """A function for messages: 'domain.name', with ':overload' where it has one."""
    domain, name, overload = key
    text = f"{domain}.{name}" if domain else name
    return printable(text + (f":{overload}" if overload else ""))


@dataclass(frozen=True)
class ModelStructure:
    """A model's local functions and their calls, its structure checked.

    Attributes
    ----------
    functions : Mapping of FunctionKey to int
        Each local function's position in ``model.functions``.
    callees : Mapping of int to tuple of int
        For each function, the functions its body calls (subgraphs included).
    holds_relu : frozenset of int
        The functions whose body holds an ai.onnx Relu, or calls one that does.
    main_calls : bool
        Whether the main graph (or a subgraph of it) calls a function that holds a Relu.
    domains : frozenset of str
        Every operator domain the model names: opset imports, nodes, local functions.
    """

    functions: Mapping[FunctionKey, int]
    callees: Mapping[int, tuple[int, ...]]
    holds_relu: frozenset[int]
    main_calls: bool
    domains: frozenset[str] = frozenset()


def _check_node(node: onnx.NodeProto, at: Any, in_function: bool) -> None:
    """A node's structure as ONNX requires it; InvalidModelError naming the node (where
    :func:`._graph.walk` found it, ``at``) otherwise. (A Relu's own attributes are the
    judge's: :func:`._rules.attribute_problems`.)"""

    def where() -> str:
        label = owner_label(node, at.index)
        return f"{label} in {at.label}" if at.label else label

    seen: set[str] = set()
    for attribute in () if is_relu(node) else node.attribute:
        if attribute.name in seen:
            raise InvalidModelError(
                f"{where()}: attribute {shown_name(attribute.name)} is given more than once;"
                " ONNX allows each attribute once per node"
            )
        seen.add(attribute.name)
    if node.op_type in _REQUIRED_GRAPHS and node.domain in AI_ONNX_DOMAINS:
        kinds = {a.name: a for a in node.attribute}
        for name in _REQUIRED_GRAPHS[node.op_type]:
            attribute = kinds.get(name)
            if attribute is not None and in_function and attribute.ref_attr_name:
                continue  # given at each call site
            if attribute is None or attribute.type != _GRAPH:
                raise InvalidModelError(
                    f"{where()}: it has no graph attribute {name!r}; {node.op_type} needs"
                    f" {' and '.join(repr(n) for n in _REQUIRED_GRAPHS[node.op_type])}"
                )


def model_structure(model: onnx.ModelProto) -> ModelStructure:
    """Check ``model``'s structure and read its functions' calls (see :class:`ModelStructure`).

    Raises InvalidModelError, one line naming what is wrong: a node with an attribute given
    twice, an If, Loop, Scan or SequenceMap without the graph it needs, two local functions
    with one (domain, name, overload), a function that calls itself (directly or through
    others).
    """
    functions: dict[FunctionKey, int] = {}
    for position, function in enumerate(model.functions):
        key = function_key(function)
        if key in functions:
            raise InvalidModelError(
                f"the model defines local function {function_name(key)} twice (model.functions"
                f" #{functions[key]} and #{position}); a function is defined once per (domain,"
                " name, overload)"
            )
        functions[key] = position
    domains = {entry.domain for entry in model.opset_import}
    main_targets: set[int] = set()
    graph = model.graph

    def note_call(node: onnx.NodeProto) -> None:
        target = functions.get(call_key(node))
        if target is not None:
            main_targets.add(target)

    # walk's order; the main graph's own nodes read directly (a model holds thousands of them,
    # most without attributes), the walk's records made only below those that hold graphs
    for index, node in enumerate(graph.node):
        domains.add(node.domain)
        if functions:
            note_call(node)
        if not node.attribute and node.op_type not in _REQUIRED_GRAPHS:
            continue
        _check_node(node, NodeAt((), "", graph, index, node), False)
        for at in walk_below(node, index, "", ()):
            inner = at.node
            domains.add(inner.domain)
            if inner.attribute or inner.op_type in _REQUIRED_GRAPHS:
                _check_node(inner, at, False)
            if functions:
                note_call(inner)
    direct_relu: set[int] = set()
    callees: dict[int, tuple[int, ...]] = {}
    for position, function in enumerate(model.functions):
        label = f"function {function_name(function_key(function))}"
        domains.add(function.domain)
        domains.update(entry.domain for entry in function.opset_import)
        called: list[int] = []
        for at in walk(function, label):
            node = at.node
            domains.add(node.domain)
            _check_node(node, at, True)
            if is_relu(node):
                direct_relu.add(position)
            target = functions.get(call_key(node))
            if target is not None and target not in called:
                called.append(target)
        callees[position] = tuple(called)
    _refuse_cycles(model, callees)
    holds = set(direct_relu)
    changed = True
    while changed:  # the functions that reach a Relu through their calls
        changed = False
        for position, targets in callees.items():
            if position not in holds and any(c in holds for c in targets):
                holds.add(position)
                changed = True
    main_calls = bool(main_targets & holds)
    return ModelStructure(functions, callees, frozenset(holds), main_calls, frozenset(domains))


def _refuse_cycles(model: onnx.ModelProto, callees: Mapping[int, tuple[int, ...]]) -> None:
    state: dict[int, int] = {}  # 1: being visited, 2: done

    def visit(position: int, chain: tuple[int, ...]) -> None:
        state[position] = 1
        for target in callees[position]:
            if state.get(target) == 1:
                loop = chain[chain.index(target) :] + (position, target)
                names = " -> ".join(
                    function_name(function_key(model.functions[p])) for p in loop[1:]
                )
                raise InvalidModelError(
                    f"local function {function_name(function_key(model.functions[target]))}"
                    f" calls itself ({names}); ONNX functions cannot recurse"
                )
            if target not in state:
                visit(target, chain + (position,))
        state[position] = 2

    for position in callees:
        if position not in state:
            visit(position, ())


def resolved_body(function: onnx.FunctionProto, call: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Copies of ``function``'s nodes with each attribute reference (``ref_attr_name``,
    subgraphs included) replaced by the attribute the call gives, else by the function's
    default (``attribute_proto``), else removed: the body as this call runs it."""
    import onnx

    given = {a.name: a for a in call.attribute}
    defaults = {a.name: a for a in function.attribute_proto}
    nodes = []
    for original in function.node:
        node = onnx.NodeProto()
        node.CopyFrom(original)
        _resolve_references(node, given, defaults)
        nodes.append(node)
    return nodes


def _resolve_references(
    node: onnx.NodeProto,
    given: Mapping[str, onnx.AttributeProto],
    defaults: Mapping[str, onnx.AttributeProto],
) -> None:
    kept = []
    changed = False
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            changed = True
            value = given.get(attribute.ref_attr_name) or defaults.get(attribute.ref_attr_name)
            if value is None:
                continue  # neither given nor defaulted: the node has no such attribute
            resolved = type(attribute)()
            resolved.CopyFrom(value)
            resolved.name = attribute.name
            kept.append(resolved)
        else:
            kept.append(attribute)
            for _name, _position, _suffix, graph in subgraphs_of(attribute):
                for inner in graph.node:
                    _resolve_references(inner, given, defaults)
    if changed:
        copies = []
        for attribute in kept:
            copy = type(attribute)()
            copy.CopyFrom(attribute)
            copies.append(copy)
        del node.attribute[:]
        node.attribute.extend(copies)


def subgraphs_of(attribute: onnx.AttributeProto) -> Iterator[tuple[str, int, str, Any]]:
    """The graphs one attribute holds (see :func:`._graph.subgraphs`)."""
    if attribute.type == _GRAPH:
        yield attribute.name, 0, attribute.name, attribute.g
    elif attribute.type == _GRAPHS:
        for position, graph in enumerate(attribute.graphs):
            yield attribute.name, position, attribute.name, graph


def domains_used(model: onnx.ModelProto) -> set[str]:
    """Every operator domain the model names: opset imports, nodes, local functions."""
    used = {entry.domain for entry in model.opset_import}
    used.update(at.node.domain for at in walk(model.graph))
    for function in model.functions:
        used.add(function.domain)
        used.update(entry.domain for entry in function.opset_import)
        used.update(at.node.domain for at in walk(function))
    return used


# ---------------------------------------------------------------------------------------------
# The model without its weights' bytes.
#
# Protobuf's wire format: each field is a varint key (field number << 3 | wire type) and its
# value; a message's fields may come in any order, and a repeated field's entries keep their
# order. ModelProto.graph is field 7; GraphProto.initializer field 5; TensorProto keeps its
# values in fields 4-7 and 9-11 (float_data, int32_data, string_data, int64_data, raw_data,
# double_data, uint64_data).

_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_DATA_FIELDS = frozenset((4, 5, 6, 7, 9, 10, 11))
#: Tensors up to this many bytes are kept whole: shape inference reads small constant
#: tensors (Reshape's shape, Slice's starts), never weights.
_KEEP_BYTES = 64 * 1024


class _Truncated(ValueError):
    pass


def _varint(buffer: Any, position: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= end:
            raise _Truncated("truncated varint")
        byte = buffer[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift > 63:
            raise _Truncated("varint too long")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(buffer: Any, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, field start, value start, field end) of each field."""
    position = start
    while position < end:
        field_start = position
        key, position = _varint(buffer, position, end)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _value, after = _varint(buffer, position, end)
        elif wire_type == 1:
            after = position + 8
        elif wire_type == 5:
            after = position + 4
        elif wire_type == 2:
            length, position = _varint(buffer, position, end)
            after = position + length
        else:
            raise _Truncated(f"wire type {wire_type}")
        if after > end:
            raise _Truncated("field past the end")
        yield number, wire_type, field_start, position, after
        position = after


@dataclass(frozen=True)
class LightModel:
    """A model's bytes without its large tensors' values, and where those lie in the original.

    Attributes
    ----------
    data : bytes
        The model with each large initializer of the main graph reduced to its name, type,
        dims and external-data fields.
    initializers : tuple of (int, int)
        (start, end) in the original bytes of each main-graph initializer field, in order.
    graph_span : tuple of (int, int) or None
        (start, end) of the graph field in the original bytes.
    """

    data: bytes
    initializers: tuple[tuple[int, int], ...]
    graph_span: tuple[int, int] | None


def light_model_bytes(buffer: Any) -> LightModel:
    """:class:`LightModel` of a serialized ModelProto (bytes, or a file's :class:`FileBytes`):
    only the bytes outside large tensors' values are read, so a file's weights are never
    read. Malformed wire data raises ValueError."""
    end = len(buffer)
    parts: list[Any] = []
    spans: list[tuple[int, int]] = []
    graph_span = None
    for number, wire_type, field_start, value_start, field_end in _fields(buffer, 0, end):
        if number != _MODEL_GRAPH or wire_type != 2:
            parts.append(buffer[field_start:field_end])
            continue
        graph_span = (field_start, field_end)
        graph_parts: list[Any] = []
        run = [value_start, value_start]  # consecutive fields copied as they are, read at once
        for g_number, g_wire, g_start, g_value, g_end in _fields(buffer, value_start, field_end):
            if g_number == _GRAPH_INITIALIZER and g_wire == 2:
                spans.append((g_start, g_end))
            if g_number != _GRAPH_INITIALIZER or g_wire != 2 or g_end - g_value <= _KEEP_BYTES:
                if run[1] != g_start:
                    graph_parts.append(buffer[run[0] : run[1]])
                    run[0] = g_start
                run[1] = g_end
                continue
            tensor = b"".join(
                bytes(buffer[t_start:t_end])
                for t_number, _w, t_start, _v, t_end in _fields(buffer, g_value, g_end)
                if t_number not in _TENSOR_DATA_FIELDS
            )
            graph_parts.append(_encode_varint(_GRAPH_INITIALIZER << 3 | 2))
            graph_parts.append(_encode_varint(len(tensor)) + tensor)
        graph_parts.append(buffer[run[0] : run[1]])
        graph = b"".join(bytes(part) for part in graph_parts)
        parts.append(_encode_varint(_MODEL_GRAPH << 3 | 2) + _encode_varint(len(graph)) + graph)
    return LightModel(b"".join(bytes(p) for p in parts), tuple(spans), graph_span)


def light_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose large main-graph initializers keep only their name, type,
    dims and external-data fields (what judging Relu nodes reads); ``model`` itself when it
    has none (no copy)."""
    import onnx

    large = [
        i for i, tensor in enumerate(model.graph.initializer) if tensor.ByteSize() > _KEEP_BYTES
    ]
    if not large:
        return model
    light = onnx.ModelProto()
    _copy_fields(model, light, skip="graph")
    graph = light.graph
    _copy_fields(model.graph, graph, skip="initializer")
    large_set = set(large)
    for i, tensor in enumerate(model.graph.initializer):
        if i not in large_set:
            graph.initializer.append(tensor)
            continue
        stub = graph.initializer.add()
        stub.name = tensor.name
        stub.data_type = tensor.data_type
        stub.dims.extend(tensor.dims)
        stub.external_data.extend(tensor.external_data)
        if tensor.HasField("data_location"):
            stub.data_location = tensor.data_location
    return light


def _repeated(field: Any) -> bool:
    return bool(field.is_repeated if hasattr(field, "is_repeated") else field.label == 3)


def _copy_fields(source: Any, target: Any, *, skip: str) -> None:
    """Copy every set field of the message ``source`` but ``skip`` into ``target``."""
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if _repeated(field):
            getattr(target, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def spliced_model_bytes(changed: onnx.ModelProto, original: Any, light: LightModel) -> bytes:
    """The bytes of ``changed`` (a light model with some nodes changed) with the original
    initializers put back from ``original``'s bytes: the weights are copied once, never
    parsed."""
    head, graph_head, length = _spliced_head(changed, light)
    pieces: list[Any] = [
        head,
        _encode_varint(_MODEL_GRAPH << 3 | 2),
        _encode_varint(length),
        graph_head,
    ]
    if isinstance(original, FileBytes):
        # read straight into one buffer: the weights held once, then once more as bytes
        weights = bytearray(length - len(graph_head))
        position = 0
        for start, end in light.initializers:
            original.readinto(memoryview(weights)[position : position + end - start], start)
            position += end - start
        pieces.append(weights)
    else:
        view = memoryview(original)
        pieces += [view[start:end] for start, end in light.initializers]
    return b"".join(pieces)


def write_spliced_model(
    changed: onnx.ModelProto, original: FileBytes, light: LightModel, path: str
) -> None:
    """Write to ``path`` what :func:`spliced_model_bytes` gives, the original initializers
    copied from file to file (``os.copy_file_range`` where the system has it): the weights
    never pass through this process's memory."""
    head, graph_head, length = _spliced_head(changed, light)
    with open(path, "wb") as target:
        target.write(head)
        target.write(_encode_varint(_MODEL_GRAPH << 3 | 2) + _encode_varint(length))
        target.write(graph_head)
        target.flush()
        for start, end in light.initializers:
            original.copy_to(target.fileno(), start, end)


def _spliced_head(changed: onnx.ModelProto, light: LightModel) -> tuple[bytes, bytes, int]:
    """The model's bytes without its graph, the graph's without its initializers, and the
    length of the graph field with the original initializers put back."""
    import onnx

    head = onnx.ModelProto()
    head.CopyFrom(changed)
    head.ClearField("graph")
    graph = onnx.GraphProto()
    graph.CopyFrom(changed.graph)
    del graph.initializer[:]
    graph_head = graph.SerializeToString()
    length = len(graph_head) + sum(end - start for start, end in light.initializers)
    return head.SerializeToString(), graph_head, length


class FileBytes:
    """A file's bytes, read on demand: ``len``, ``[i]`` and ``[a:b]`` as bytes give them, each
    read with ``os.pread`` (bytes at an index from a small cache of blocks). Not a memory
    map: mapping a file puts whole large folios of the page cache (megabytes around each byte
    touched) into the process's resident memory, as much as reading it all."""

    _BLOCK_BITS = 16

    def __init__(self, fd: int) -> None:
        """``fd``: a descriptor open for reading, which this object owns (and closes)."""
        self._fd = fd
        self._open = True
        self._size = os.fstat(self._fd).st_size
        self._blocks: dict[int, bytes] = {}

    def __del__(self) -> None:
        if getattr(self, "_open", False):
            os.close(self._fd)
            self._open = False

    def __len__(self) -> int:
        return self._size

    def read(self, start: int, end: int) -> bytes:
        """The bytes from ``start`` to ``end``."""
        start, end = max(0, start), min(end, self._size)
        if end <= start:
            return b""
        data = os.pread(self._fd, end - start, start)
        while len(data) < end - start:  # a short read: go on where it stopped
            more = os.pread(self._fd, end - start - len(data), start + len(data))
            if not more:
                raise ValueError("the file is shorter than when it was opened")
            data += more
        return data

    def copy_to(self, target_fd: int, start: int, end: int) -> None:
        """Append the bytes from ``start`` to ``end`` to the file open as ``target_fd``."""
        position = start
        while position < end:
            count = min(end - position, 1 << 26)
            copy_file_range = getattr(os, "copy_file_range", None)
            try:
                if copy_file_range is None:
                    raise OSError
                done = copy_file_range(self._fd, target_fd, count, position)
            except OSError:  # no such call, or not between these files: through a buffer
                piece = self.read(position, position + min(count, 1 << 20))
                done = os.write(target_fd, piece)
            if done <= 0:
                raise ValueError("the file is shorter than when it was opened")
            position += done

    def readinto(self, target: Any, start: int) -> None:
        """Fill the writable buffer ``target`` with the bytes from ``start``."""
        view = memoryview(target)
        done = 0
        while done < len(view):
            got = os.preadv(self._fd, [view[done:]], start + done)
            if got <= 0:
                raise ValueError("the file is shorter than when it was opened")
            done += got

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return self.read(key.start or 0, self._size if key.stop is None else key.stop)
        block_index = key >> self._BLOCK_BITS
        block = self._blocks.get(block_index)
        if block is None:
            if len(self._blocks) >= 8:
                self._blocks.clear()
            first = block_index << self._BLOCK_BITS
            block = self._blocks[block_index] = self.read(first, first + (1 << self._BLOCK_BITS))
        if key >= self._size or key < 0:
            raise IndexError(key)
        return block[key & ((1 << self._BLOCK_BITS) - 1)]


#: Files up to this size are read whole: reading on demand pays off only for large weights.
_READ_WHOLE = 1 << 20


def mapped_file(stream: BinaryIO, size: int) -> Any:
    """The bytes of the file open as ``stream`` (``size`` bytes): read whole when small, else a
    :class:`FileBytes` read on demand through a descriptor of its own (the caller may close
    ``stream``)."""
    if size <= _READ_WHOLE or not hasattr(os, "pread"):  # (Windows has none)
        return stream.read()
    return FileBytes(os.dup(stream.fileno()))
