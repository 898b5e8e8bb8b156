"""``check_model``: judge every ai.onnx Relu node of a model against the Relu version in force.

Only Relu nodes are judged (a model may hold any other operators). Input types come from onnx
shape inference (``onnx.shape_inference.infer_shapes``, non-strict, so one bad node does not hide
the others); a Relu whose input type cannot be inferred gets a finding saying so, never a guess.
Relu nodes of the main graph and of nested subgraphs (If, Loop, Scan bodies) are judged; Relu
nodes inside model-local functions are not (their types depend on each call site).

This module imports onnx; ``import onnx_relu`` does not (``onnx_relu.check_model`` imports it on
first use).

Examples
--------
>>> from onnx import TensorProto, helper
>>> from onnx_relu import check_model
>>> graph = helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"], name="relu1")], "g",
...     [helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
...     [helper.make_tensor_value_info("y", TensorProto.INT8, [2])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
>>> [finding.kind for finding in check_model(model)]
['type-not-allowed']
>>> print(check_model(model)[0])  # doctest: +NORMALIZE_WHITESPACE
Relu node 'relu1' (node #0): input 'x' has type tensor(int8). Relu-13 (in force at opset 13)
does not allow tensor(int8); allowed types: tensor(bfloat16), tensor(double), tensor(float),
tensor(float16). tensor(int8) is allowed from Relu-14 (opset >= 14).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import onnx
from onnx import shape_inference

from ._onnx_rules import (
    arity_problems,
    attribute_problems,
    checked_model_opset,
    is_relu,
    load_model,
    onnx_type_of_elem_type,
    onnx_type_of_type_proto,
    type_refusal,
)
from .versions import version_for_opset

__all__ = ["Finding", "check_model"]

#: The kinds of finding, in the order a node is judged.
FINDING_KINDS = ("arity", "attribute", "type-unknown", "type-not-allowed")


@dataclass(frozen=True)
class Finding:
    """One problem with one Relu node.

    Attributes
    ----------
    node_name : str
        The node's name ("" if it has none).
    op_index : int
        The node's position in its graph's node list.
    input_name : str
        The node's input X ("" if it has none).
    input_type : str or None
        X's type in ONNX terms (e.g. "tensor(int8)"), None if it cannot be inferred.
    version : int
        The Relu version in force (1, 6, 13 or 14).
    opset : int
        The model's ai.onnx opset, which selects the version.
    allowed_types : tuple of str
        The types that version allows.
    kind : str
        "arity" (not exactly one input and one output), "attribute" (an attribute the version
        does not declare, or a malformed one), "type-unknown" or "type-not-allowed".
    message : str
        What is wrong, in words.
    graph : str
        "" for the main graph; for a subgraph, where it hangs, e.g. "If node 'cond'
        (node #2).then_branch".
    """

    node_name: str
    op_index: int
    input_name: str
    input_type: str | None
    version: int
    opset: int
    allowed_types: tuple[str, ...]
    kind: str
    message: str
    graph: str = ""

    @property
    def where(self) -> str:
        node = (
            f"Relu node {self.node_name!r} (node #{self.op_index})"
            if self.node_name
            else f"Relu node #{self.op_index} (unnamed)"
        )
        return f"{node} in {self.graph}" if self.graph else node

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(frozen=True)
class ReluSite:
    """A Relu node found in a model, with the type of its input (None if unknown).

    ``path`` locates the graph holding it: () for the main graph, else a sequence of
    (node index, attribute name, graph index) steps from the main graph down.
    """

    path: tuple[tuple[int, str, int], ...]
    graph_label: str
    index: int
    node: onnx.NodeProto
    input_type: str | None


def _value_types(graph: onnx.GraphProto, outer: dict[str, str | None]) -> dict[str, str | None]:
    types = dict(outer)
    for value in list(graph.input) + list(graph.value_info) + list(graph.output):
        known = onnx_type_of_type_proto(value.type)
        if known is not None or value.name not in types:
            types[value.name] = known
    for tensor in graph.initializer:
        types[tensor.name] = onnx_type_of_elem_type(tensor.data_type)
    return types


def _subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, int, str, onnx.GraphProto]]:
    """(attribute name, position, label suffix, graph) for each graph a node's attributes hold."""
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.name, 0, attribute.name, attribute.g
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            for position, graph in enumerate(attribute.graphs):
                yield attribute.name, position, f"{attribute.name}[{position}]", graph


def relu_sites(
    graph: onnx.GraphProto,
    outer: dict[str, str | None] | None = None,
    path: tuple[tuple[int, str, int], ...] = (),
    label: str = "",
) -> Iterator[ReluSite]:
    """Every ai.onnx Relu node of ``graph`` and its subgraphs, with its input's known type."""
    types = _value_types(graph, outer or {})
    for index, node in enumerate(graph.node):
        if is_relu(node):
            input_type = types.get(node.input[0]) if node.input and node.input[0] else None
            yield ReluSite(path, label, index, node, input_type)
        for attribute_name, position, suffix, subgraph in _subgraphs(node):
            owner = f"{node.op_type} node {node.name!r}" if node.name else f"{node.op_type} node"
            sub_label = f"{owner} (node #{index}).{suffix}"
            if label:
                sub_label = f"{label} > {sub_label}"
            yield from relu_sites(
                subgraph, types, path + ((index, attribute_name, position),), sub_label
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


def findings_for_site(site: ReluSite, opset: int) -> list[Finding]:
    """The findings for one Relu node at the model's opset (empty if it is valid)."""
    node = site.node
    version = version_for_opset(opset)
    input_name = node.input[0] if node.input else ""

    def finding(kind: str, message: str) -> Finding:
        return Finding(
            node_name=node.name,
            op_index=site.index,
            input_name=input_name,
            input_type=site.input_type,
            version=version.since,
            opset=opset,
            allowed_types=version.types,
            kind=kind,
            message=message,
            graph=site.graph_label,
        )

    found = [finding("arity", problem) for problem in arity_problems(node)]
    found += [finding("attribute", problem) for problem in attribute_problems(node, opset)]
    if not input_name:
        return found
    if site.input_type is None:
        found.append(
            finding(
                "type-unknown",
                f"the type of input {input_name!r} cannot be inferred (shape inference could not"
                f" determine it); declare it (graph input or value_info) so that it can be"
                f" checked against {version.name}, which allows {', '.join(version.types)}",
            )
        )
    else:
        refusal = type_refusal(site.input_type, opset)
        if refusal is not None:
            found.append(
                finding(
                    "type-not-allowed",
                    f"input {input_name!r} has type {site.input_type}. {refusal}",
                )
            )
    return found


def check_model(model_or_path: onnx.ModelProto | str | bytes) -> list[Finding]:
    """Judge every ai.onnx Relu node of a model; return the findings (empty: all valid).

    Parameters
    ----------
    model_or_path : onnx.ModelProto, str, os.PathLike or bytes
        The model, a path to a .onnx file, or its serialized bytes.

    Returns
    -------
    list of Finding
        One per problem, in graph order: a Relu whose input type its version (selected by the
        model's ai.onnx opset) does not allow, whose input type cannot be inferred, that carries
        attributes its version does not declare (``consumed_inputs`` exists only in Relu-1), or
        that has not exactly one input and one output.

    Raises
    ------
    OSError
        if the file cannot be opened (e.g. FileNotFoundError).
    onnx_relu.errors.InvalidModelError
        (a ValueError) if the content is not a readable ONNX model, or it has Relu nodes but no
        ai.onnx opset (or one the installed onnx does not know).
    """
    model = load_model(model_or_path)
    sites = list(relu_sites(model.graph))
    if not sites:
        return []
    opset = checked_model_opset(model)
    sites = list(relu_sites(inferred_model(model).graph))
    return [finding for site in sites for finding in findings_for_site(site, opset)]
