"""``legalize``: rewrite the Relu nodes onnxruntime cannot run into subgraphs it can, with
onnx-relu's values bit for bit.

onnxruntime's CPU provider has no Relu kernel for some types (1.32: bfloat16, int16, int64 at
every opset but 18; no Relu-1 at all). Which ones is not taken from a list: the installed
onnxruntime is *probed* with a one-node model per (type, opset), once per process. Each Relu node
it cannot run is replaced by the first rewrite that the probe shows to run and to give
onnx-relu's values (bit for bit, on a vector of edge cases: signed zeros, subnormals, infinities,
quiet and signalling NaNs with payloads, integer extremes):

``cast-int32``
    int8/int16: ``Cast(int32) -> Relu -> Cast(back)`` (every value fits, so nothing changes).
``max-zero``
    integers: ``Max(X, 0)`` with a typed zero constant (Relu's values, for integers).
``select``
    float types, opset >= 13: compare (in float for 16-bit types, whose conversion to float
    keeps every value), then pick X itself or a +0 tensor element by element with
    ``GatherElements``: the kept elements are X's own bits, so NaN payloads, signalling bits and
    -0 -> +0 come out as onnx-relu's. (``Cast(float) -> Relu -> Cast(bfloat16)`` would not give
    them: onnxruntime's float -> bfloat16 cast turns every NaN into the canonical quiet NaN, and
    its Relu keeps -0.)

Nodes onnxruntime runs natively are left alone unless ``exact=True``: onnxruntime's own float
Relu returns -0.0 for -0.0 and quiets float16 signalling NaNs (see the README).

This module imports onnx, and onnxruntime when probing; ``import onnx_relu`` imports neither.

Examples
--------
>>> import numpy as np
>>> from onnx import TensorProto, helper
>>> from onnx_relu import legalize
>>> graph = helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
...     [helper.make_tensor_value_info("x", TensorProto.INT16, [3])],
...     [helper.make_tensor_value_info("y", TensorProto.INT16, [3])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
>>> [node.op_type for node in legalize(model).graph.node]
['Cast', 'Relu', 'Cast']
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._extras import extra_needed
from ..errors import InvalidModelError, LegalizationError
from ._graph import graph_at, graphs, walk
from ._models import ReluSite, load_model
from ._rewrites import REWRITES, rewrites_for
from ._rules import node_label
from .check import _judged
from .probe import ProbeResult, probe_onnxruntime, stock_has_kernel

with extra_needed():  # a missing onnx raises the one MissingExtraError
    import onnx

__all__ = [
    "legalize",
    "legalize_with_report",
    "Legalization",
    "Rewritten",
    "probe_onnxruntime",
    "ProbeResult",
    "REWRITES",
    "rewrites_for",
    "run_with_onnxruntime",
]


def _all_names(root: Any) -> Iterator[str]:
    """Every name in ``root`` (a graph or a function body) and the graphs below it: values,
    initializers, nodes and their inputs and outputs (a function's own inputs and outputs are
    strings of the FunctionProto, not given here)."""
    for _path, _label, graph in graphs(root):
        if isinstance(graph, onnx.GraphProto):
            for value in list(graph.input) + list(graph.output) + list(graph.value_info):
                yield value.name
            for tensor in graph.initializer:
                yield tensor.name
    for at in walk(root):
        yield at.node.name
        yield from at.node.input
        yield from at.node.output


class _NamePool:
    """Fresh names, unique in the whole model (subgraphs see their outer scope's names)."""

    def __init__(self, taken: set[str]) -> None:
        self._taken = taken

    def fresh_maker(self, base: str) -> Callable[[str], str]:
        def fresh(role: str) -> str:
            name = f"{base}/{role}"
            counter = 1
            while name in self._taken:
                counter += 1
                name = f"{base}/{role}_{counter}"
            self._taken.add(name)
            return name

        return fresh


def _choose_rewrite(
    onnx_type: str, opset: int, ir_version: int, exact: bool
) -> tuple[str | None, list[ProbeResult]]:
    native = probe_onnxruntime(onnx_type, opset, "Relu", ir_version)
    if native.runs and (native.exact or not exact):
        return "Relu", [native]
    tried = [native]
    for name in rewrites_for(onnx_type, opset):
        result = probe_onnxruntime(onnx_type, opset, name, ir_version)
        tried.append(result)
        if result.exact:
            return name, tried
    return None, tried


@dataclass(frozen=True)
class Rewritten:
    """One Relu node that :func:`legalize_with_report` replaced by a subgraph.

    Attributes
    ----------
    where : str
        The node's label, and the graph holding it where that is not the main graph.
    input_type : str
        Its input type, e.g. "tensor(bfloat16)".
    rewrite : str
        The rewrite that replaced it ("cast-int32", "max-zero" or "select").
    """

    where: str
    input_type: str
    rewrite: str

    def __str__(self) -> str:
        return f"{self.where}: {self.input_type} -> {self.rewrite}"


@dataclass(frozen=True)
class Legalization:
    """What :func:`legalize_with_report` made: the new model and what changed in it.

    Attributes
    ----------
    model : onnx.ModelProto
        The new model (as :func:`legalize` returns it).
    relu_nodes : int
        The Relu nodes judged (a node of a function body once per call of the function).
    rewritten : tuple of Rewritten
        The nodes replaced, in graph order; empty: the model is unchanged (a copy).
    """

    model: onnx.ModelProto
    relu_nodes: int
    rewritten: tuple[Rewritten, ...]

    def summary(self) -> str:
        """One line: how many Relu nodes were rewritten, by rewrite, or "nothing to rewrite".

        Examples
        --------
        >>> Legalization(onnx.ModelProto(), 3, ()).summary()
        'nothing to rewrite: onnxruntime runs its 3 Relu nodes as they are'
        """
        nodes = "1 Relu node" if self.relu_nodes == 1 else f"{self.relu_nodes} Relu nodes"
        if not self.rewritten:
            if not self.relu_nodes:
                return "nothing to rewrite: the model has no Relu node"
            return f"nothing to rewrite: onnxruntime runs its {nodes} as they are"
        kinds = Counter(f"{r.input_type} -> {r.rewrite}" for r in self.rewritten)
        by_kind = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
        return f"rewrote {len(self.rewritten)} of {nodes} ({by_kind})"


def legalize(
    model: onnx.ModelProto | str | os.PathLike[str] | bytes,
    target: str = "onnxruntime",
    *,
    exact: bool = False,
    ir_version: int | None = None,
    external_data: str = "keep",
) -> onnx.ModelProto:
    """A copy of ``model`` in which onnxruntime can run every Relu node, with onnx-relu's values.

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes
        The model (never modified), a path to it, or its bytes.
    target : str
        The runtime to legalize for; only "onnxruntime" (its CPU provider) exists.
    exact : bool
        False (default): rewrite only the Relu nodes onnxruntime cannot run. True: also rewrite
        those it runs with other values than onnx-relu's (its float Relus keep -0.0; float16
        quiets signalling NaNs), so that every Relu of the result gives onnx-relu's values.
    ir_version : int, optional
        The IR version to stamp the result with, for an older onnxruntime (1.17 reads IR
        versions up to 9; a model's opsets must be ones it knows too, see ``onnx-relu legalize
        --convert-opset``). Refused (InvalidModelError) where the model's opsets need a newer
        IR version. Default: the model's own.
    external_data : str
        For a model file with external tensor data: "keep" (default) leaves the result's
        references to it as they are, relative to the model's folder (nothing read: save the
        result into that folder); "read" reads the data into the result, which is then whole
        in memory (``InferenceSession(result.SerializeToString())`` runs it; under 2 GiB).

    Returns
    -------
    onnx.ModelProto
        A new model. Every other node is untouched; each rewritten Relu becomes a small
        subgraph whose last node keeps the Relu's name and output name (its helper nodes and
        values are named "<relu name>/<role>", or "<output name>/<role>" for an unnamed Relu,
        with a counter appended where the name is taken). The result passes
        ``onnx.checker.check_model(result, full_check=True)``. A model file's external
        data is never read: the result keeps the references, relative to the model's folder
        (save it there).

    Raises
    ------
    onnx_relu.errors.InvalidModelError
        if ``check_model`` finds a problem with a Relu node (a type its version does not allow,
        a type that cannot be inferred, a bad attribute): legalize does not guess.
    onnx_relu.errors.LegalizationError
        if a Relu node can neither run nor be rewritten with onnx-relu's values, e.g. any Relu
        at opsets 1-5: onnxruntime implements no Relu-1, or with ``exact=True`` a float Relu
        below opset 13, where ``select``, the rewrite that gives a float Relu onnx-relu's
        values, needs opset 13 (convert the model first, e.g. with
        ``onnx.version_converter.convert_version(model, 13)``; ``onnx-relu legalize
        --convert-opset 13`` does it).
    """
    done = legalize_with_report(
        model, target, exact=exact, ir_version=ir_version, external_data=external_data
    )
    return done.model


def legalize_with_report(
    model: onnx.ModelProto | str | os.PathLike[str] | bytes,
    target: str = "onnxruntime",
    *,
    exact: bool = False,
    ir_version: int | None = None,
    external_data: str = "keep",
) -> Legalization:
    """:func:`legalize`, saying what it did: the new model and the Relu nodes it rewrote.

    Parameters and errors are :func:`legalize`'s.

    Examples
    --------
    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.INT16, [3])],
    ...     [helper.make_tensor_value_info("y", TensorProto.INT16, [3])])
    >>> done = legalize_with_report(
    ...     helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    >>> print(done.summary())
    rewrote 1 of 1 Relu node (1 tensor(int16) -> cast-int32)
    >>> print(done.rewritten[0])
    Relu node 'act' (node #0): tensor(int16) -> cast-int32
    """
    if target != "onnxruntime":
        raise ValueError(f"unknown target {target!r}; the only target is 'onnxruntime'")
    if external_data not in ("keep", "read"):
        raise ValueError(f"external_data must be 'keep' or 'read', got {external_data!r}")
    typed, findings = _judged(model)
    if external_data == "read" and isinstance(model, (str, os.PathLike)):
        typed = _with_external_data(typed, os.fspath(model))
    source, opset = typed.model, typed.opset
    result = onnx.ModelProto()
    if opset is None:  # no Relu node
        result.CopyFrom(source)
        return Legalization(_stamped(result, ir_version), 0, ())
    if findings:
        raise InvalidModelError(
            "legalize needs valid Relu nodes with known types; check_model found:\n"
            + "\n".join(f"  {finding}" for finding in findings)
        )
    rewrites = _chosen_rewrites(typed.sites, opset, source.ir_version, exact)
    result.CopyFrom(source)
    _rewrite_nodes(result, rewrites, opset)
    rewritten = tuple(
        Rewritten(_site_label(site), site.input_type or "", choice) for site, choice in rewrites
    )
    return Legalization(_stamped(result, ir_version), len(typed.sites), rewritten)


def _site_label(site: ReluSite) -> str:
    """The Relu node's label, and the graph holding it where that is not the main graph."""
    where = node_label("Relu", site.node.name, site.index)
    return where + (f" in {site.graph_label}" if site.graph_label else "")


def _chosen_rewrites(
    sites: Sequence[ReluSite], opset: int, ir_version: int, exact: bool
) -> list[tuple[ReluSite, str]]:
    """The Relu sites to rewrite, in graph order, each with the rewrite chosen for it (a
    function body's node once, however many calls it has); LegalizationError where a site has
    no rewrite, or the calls of one function body need different ones."""
    rewrites: list[tuple[ReluSite, str]] = []
    # A function's Relu, by (function, path, index): the rewrite of its first call and the type.
    chosen: dict[tuple[Any, ...], tuple[str, str]] = {}
    for site in sites:
        assert site.input_type is not None  # check_model found no type-unknown site
        site_opset = site.opset or opset
        choice, tried = _choose_rewrite(site.input_type, site_opset, ir_version, exact)
        if choice is None:
            raise _no_rewrite_error(site, site_opset, tried, exact)
        if site.function is not None:
            # One body serves every call: it can be rewritten only if every call's type needs
            # the same nodes; a later call of the function adds nothing to the rewrites.
            where = (site.function, site.path, site.index)
            if where in chosen:
                _check_same_rewrite(site, chosen[where], choice)
                continue
            chosen[where] = (choice, site.input_type)
        if choice != "Relu":
            rewrites.append((site, choice))
    return rewrites


def _no_rewrite_error(
    site: ReluSite, opset: int, tried: list[ProbeResult], exact: bool
) -> LegalizationError:
    """The error for a Relu site that neither runs as it is nor has a rewrite that runs."""
    description = node_label("Relu", site.node.name, site.index)
    problem = (
        "onnxruntime runs it, but not with onnx-relu's values (exact=True)"
        if tried[0].runs
        else "onnxruntime cannot run it"
    )
    return LegalizationError(
        f"{description} on {site.input_type} at opset {opset}: {problem}, and no"
        " rewrite runs there with onnx-relu's values. Tried:\n"
        + "\n".join(f"  {t.rewrite}: {t.error or '; '.join(t.differences)}" for t in tried)
        + _conversion_advice(opset, exact)
    )


def _check_same_rewrite(site: ReluSite, earlier: tuple[str, str], choice: str) -> None:
    """LegalizationError where a later call of a function body needs another rewrite of its
    Relu than the ``earlier`` (rewrite, type) of a call before it."""
    earlier_choice, earlier_type = earlier
    if earlier_type != site.input_type and (earlier_choice, choice) != ("Relu", "Relu"):
        raise LegalizationError(
            f"{node_label('Relu', site.node.name, site.index)} in {site.graph_label}"
            f" is called with {earlier_type} and {site.input_type}, which need"
            " different rewrites in the one function body; inline the function"
            " first (onnx.inliner.inline_local_functions(model)) so that each call"
            " is rewritten for its own type"
        )


def _rewrite_nodes(
    result: onnx.ModelProto, rewrites: list[tuple[ReluSite, str]], opset: int
) -> None:
    """Replace each chosen Relu node of ``result`` (legalize's own copy) by its rewrite's
    nodes, with helper names fresh in the whole model."""
    taken = set(_all_names(result.graph))
    for function in result.functions:
        taken.update(function.input, function.output, _all_names(function))
    pool = _NamePool(taken)
    # Deepest graphs first, and from the end of each node list, so that the paths and indices
    # of the sites not yet rewritten stay valid (each function body and the main graph apart).
    in_place_order = sorted(
        rewrites,
        key=lambda item: (
            -1 if item[0].function is None else item[0].function,
            len(item[0].path),
            item[0].path,
            item[0].index,
        ),
        reverse=True,
    )
    for site, choice in in_place_order:
        root = result.graph if site.function is None else result.functions[site.function]
        graph = graph_at(root, site.path)
        node = graph.node[site.index]
        fresh = pool.fresh_maker(node.name or node.output[0])
        assert site.input_type is not None
        new_nodes = REWRITES[choice](
            node.input[0],
            node.output[0],
            site.input_type,
            site.opset or opset,
            node.domain,
            fresh,
            node.name,
        )
        assert new_nodes is not None  # the probe ran this rewrite for this type and opset
        nodes = list(graph.node)
        nodes[site.index : site.index + 1] = new_nodes
        del graph.node[:]
        graph.node.extend(nodes)


def _with_external_data(typed: Any, path: str) -> Any:
    """``typed`` with its model's external tensor data read in (from the model's folder)."""
    from dataclasses import replace

    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if not any(uses_external_data(t) for t in typed.model.graph.initializer):
        return typed
    model = onnx.ModelProto()
    model.CopyFrom(typed.model)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        load_external_data_for_model(model, folder)
    except (OSError, ValueError) as error:
        raise InvalidModelError(
            f"file {path!r}: its external tensor data cannot be read: {error}"
        ) from error
    return replace(typed, model=model)


def _stamped(model: onnx.ModelProto, ir_version: int | None) -> onnx.ModelProto:
    """``model`` (legalize's own copy) with ``ir_version``, if its opsets exist there."""
    if ir_version is None or ir_version == model.ir_version:
        return model
    from .ort import lowest_ir_version

    if isinstance(ir_version, bool) or not isinstance(ir_version, int) or ir_version < 3:
        raise ValueError(f"ir_version must be an IR version >= 3, got {ir_version!r}")
    needed = lowest_ir_version(model.opset_import)
    overloads = any(f.overload for f in model.functions) or any(
        at.node.overload for at in walk(model.graph)
    )
    if needed is not None and overloads:
        needed = max(needed, 10)  # function overloads came with IR version 10
    if needed is None or needed > ir_version:
        opsets = ", ".join(
            f"{entry.domain or 'ai.onnx'} {entry.version}" for entry in model.opset_import
        )
        shown = "newer than this onnx knows" if needed is None else str(needed)
        raise InvalidModelError(
            f"the legalized model cannot be stamped with IR version {ir_version}: its opsets"
            f" ({opsets}) need IR version {shown}"
            + (" (it uses function overloads, from IR 10)" if overloads else "")
            + "; convert it to an older opset first (onnx-relu legalize --convert-opset N)"
        )
    model.ir_version = ir_version
    return model


def stock_refusals(typed: Any) -> list[str]:
    """The Relu nodes of a judged model (a :class:`._models.TypedModel` without findings) that
    the installed onnxruntime's CPU provider cannot run by itself (as the probe finds), each
    as "<node>: <type> at opset <n>"."""
    refused = []
    for site in typed.sites:
        opset = site.opset or typed.opset
        if site.input_type is None or stock_has_kernel(site.input_type, opset):
            continue
        if probe_onnxruntime(site.input_type, opset).runs:
            continue
        refused.append(f"{_site_label(site)}: {site.input_type} at opset {opset}")
    return refused


def _conversion_advice(opset: int, exact: bool) -> str:
    """What makes a Relu at ``opset`` legalizable when no rewrite runs there: a newer opset."""
    if opset >= 13 or (opset >= 6 and not exact):
        return ""
    why = (
        "onnxruntime implements no Relu-1 (opsets 1-5)"
        if opset < 6
        else "select, the rewrite that gives a float Relu onnx-relu's values, needs opset 13"
    )
    return (
        f"; {why}: convert the model to opset 13 first, on the command line with"
        " 'onnx-relu legalize --convert-opset 13"
        + (" --exact" if exact else "")
        + " MODEL OUT', in Python with onnx.version_converter.convert_version(model, 13)."
    )


def run_with_onnxruntime(
    model: onnx.ModelProto | str | os.PathLike[str] | bytes, feeds: Mapping[str, np.ndarray]
) -> list[np.ndarray]:
    """Run a model once in onnxruntime's CPU provider, bfloat16 arrays (ml_dtypes) included.

    onnxruntime's own ``InferenceSession.run`` refuses ml_dtypes.bfloat16 arrays; this binds them
    as their bit patterns and copies bfloat16 outputs back bit for bit.

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes
    feeds : dict of str to numpy.ndarray

    Returns
    -------
    list of numpy.ndarray
        The outputs, in the model's order.
    """
    from .ort import run_model

    return run_model(load_model(model), feeds)
