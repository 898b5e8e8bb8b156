"""``check_model``: judge every ai.onnx Relu node of a model against the Relu version in force.

Only Relu nodes are judged (a model may hold any other operators). Input types come from the
model's declarations, handed on through the Relus and the common operators whose output has
their input's type (Conv, MatMul, Add, ...), and where that leaves one unknown, from onnx shape
inference (``onnx.shape_inference.infer_shapes``, non-strict, so one bad node does not hide the
others); a Relu whose input type cannot be inferred gets a finding saying so, never a guess.
Relu nodes of the main graph and of nested subgraphs (If, Loop, Scan bodies) are judged, and those
in the model-local functions the model calls, once per distinct list of input types at their
call sites (a finding's ``graph`` then reads "function 'dom.f' called by f node 'c' (node #0)").

This module imports onnx; ``import onnx_relu`` does not (``onnx_relu.check_model`` imports it on
first use). Loading, finding the Relu nodes and inferring their types is :mod:`._models`'
pipeline, which legalize runs too.

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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..versions import ReluVersion, version_for_opset
from ._models import ReluSite, TypedModel, typed_relu_sites
from ._rules import judge_relu, node_label

if TYPE_CHECKING:
    import onnx

__all__ = ["Finding", "check_model"]


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
        does not declare, or a malformed one), "opset" (a model-local function whose ai.onnx
        opset has another Relu version than the model's), "type-unknown" or "type-not-allowed".
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
        """The node's label, and the subgraph holding it if not the main graph."""
        node = node_label("Relu", self.node_name, self.op_index)
        return f"{node} in {self.graph}" if self.graph else node

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def findings_for_site(
    site: ReluSite, version: ReluVersion, opset: int, model_opset: int | None = None
) -> list[Finding]:
    """The findings for one Relu node under ``version``, in force at ``opset`` where the node is
    (``model_opset``: the model's, where a function imports its own), empty if it is valid:
    :func:`._rules.judge_relu`'s, placed in the model."""
    node = site.node
    return [
        Finding(
            node_name=node.name,
            op_index=site.index,
            input_name=node.input[0] if node.input else "",
            input_type=site.input_type,
            version=version.since,
            opset=opset,
            allowed_types=version.types,
            kind=found.kind,
            message=found.message,
            graph=site.graph_label,
        )
        for found in judge_relu(node, opset, site.input_type, version, model_opset=model_opset)
    ]


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
    return _judged(model_or_path, weights=False)[1]


def _judged(model_or_path: object, *, weights: bool = True) -> tuple[TypedModel, list[Finding]]:
    """The model's Relu nodes with their types, and the findings about them (legalize's start;
    ``weights=False``: the model read without its large tensors' values, for a judge that
    hands on what it was given, :func:`._models.read_model`)."""
    typed = typed_relu_sites(model_or_path, weights=weights)
    if typed.version is None or typed.opset is None:  # no Relu node
        return typed, []
    found = []
    opset, version = typed.opset, typed.version
    # A Relu with one named input and output and no attributes is judged by its type and
    # opset alone: one judgement per type serves a model of thousands of such nodes.
    valid: set[str | None] = set()
    for site in typed.sites:
        if site.opset is None or site.opset == opset:
            plain = site.plain
            if plain and site.input_type in valid:
                continue
            judged = findings_for_site(site, version, opset)
            if plain and not judged:
                valid.add(site.input_type)
            found += judged
        else:  # a function importing its own ai.onnx opset
            # onnx's checker asks a function's own nodes (not those of their subgraphs) to be
            # compatible with the model's opset: check_opset_compatibility
            model_opset = typed.opset if site.path == () else None
            found += findings_for_site(site, version_for_opset(site.opset), site.opset, model_opset)
    return typed, found
