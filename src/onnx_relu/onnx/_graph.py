"""One walk over a graph and the graphs its nodes hold (the branches of If, the bodies of Loop and
Scan, any attribute of type GRAPH or GRAPHS), for every reader of a model's nodes.

:func:`walk` yields every node, in order, each followed by the nodes of its subgraphs, with
where it is: the path of (node index, attribute name, position) from the root to the graph that
holds it, and that graph's label for messages, e.g. ``"If node 'cond' (node #2).then_branch"``
(subgraphs of subgraphs joined with ``" > "``). The root may be a GraphProto or a FunctionProto
(whose body is a node list too).

Nothing here imports onnx at module level.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from ._rules import node_label, printable

if TYPE_CHECKING:
    import onnx

__all__ = [
    "GraphPath",
    "NodeAt",
    "walk",
    "walk_below",
    "graphs",
    "graph_at",
    "subgraphs",
    "owner_label",
]

#: Where a graph is, from the root: one (node index, attribute name, position) per level.
GraphPath = tuple[tuple[int, str, int], ...]

# AttributeProto.GRAPH and AttributeProto.GRAPHS; constants so that this module needs no onnx.
_GRAPH, _GRAPHS = 5, 10


class NodeAt(NamedTuple):
    """A node where :func:`walk` found it.

    Attributes
    ----------
    path : GraphPath
        From the root to the graph that holds the node (``()``: the root itself).
    label : str
        That graph, named for messages ("" for the root).
    graph : onnx.GraphProto or onnx.FunctionProto
        The graph that holds the node.
    index : int
        The node's position in that graph's node list.
    node : onnx.NodeProto
    """

    path: GraphPath
    label: str
    graph: Any
    index: int  # type: ignore[assignment]  # (a field: it shadows tuple.index, unused here)
    node: onnx.NodeProto


def subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, int, str, onnx.GraphProto]]:
    """(attribute name, position, label suffix, graph) for each graph a node's attributes hold."""
    for attribute in node.attribute:
        if attribute.type == _GRAPH:
            yield attribute.name, 0, printable(attribute.name), attribute.g
        elif attribute.type == _GRAPHS:
            for position, graph in enumerate(attribute.graphs):
                yield attribute.name, position, f"{printable(attribute.name)}[{position}]", graph


def owner_label(node: onnx.NodeProto, index: int) -> str:
    """A node that holds subgraphs or calls a function, for messages: "If node 'cond' (node
    #2)", or "If node #2 (unnamed)" (:func:`._rules.node_label`, the one node label)."""
    return node_label(node.op_type, node.name, index)


def walk(root: Any, label: str = "", path: GraphPath = ()) -> Iterator[NodeAt]:
    """Every node of ``root`` (a GraphProto or a FunctionProto), each followed by the nodes of
    the graphs it holds, recursively; ``label`` and ``path`` are the root's."""
    for index, node in enumerate(root.node):
        yield NodeAt(path, label, root, index, node)
        if node.attribute:
            yield from walk_below(node, index, label, path)


def walk_below(node: onnx.NodeProto, index: int, label: str, path: GraphPath) -> Iterator[NodeAt]:
    """:func:`walk` of the graphs ``node`` holds (``node`` at ``index`` of the graph at ``path``,
    labelled ``label``)."""
    for attribute, position, suffix, subgraph in subgraphs(node):
        sub_label = f"{owner_label(node, index)}.{suffix}"
        yield from walk(
            subgraph,
            f"{label} > {sub_label}" if label else sub_label,
            path + ((index, attribute, position),),
        )


def graphs(root: Any) -> Iterator[tuple[GraphPath, str, Any]]:
    """(path, label, graph) of ``root`` and of every graph below it, in :func:`walk`'s order."""
    yield (), "", root
    for at in walk(root):
        for attribute, position, suffix, subgraph in subgraphs(at.node):
            sub_label = f"{owner_label(at.node, at.index)}.{suffix}"
            label = f"{at.label} > {sub_label}" if at.label else sub_label
            yield at.path + ((at.index, attribute, position),), label, subgraph


def graph_at(root: Any, path: GraphPath) -> Any:
    """The graph at ``path`` (as :func:`walk` gives it) below ``root``."""
    graph = root
    for index, attribute_name, position in path:
        (attribute,) = [a for a in graph.node[index].attribute if a.name == attribute_name]
        graph = attribute.g if attribute.type == _GRAPH else attribute.graphs[position]
    return graph
