"""``legalize``: rewrite the Relu nodes onnxruntime cannot run into subgraphs it can, exactly.

onnxruntime's CPU provider has no Relu kernel for some types (1.32: bfloat16, int16, int64 at
every opset but 18; no Relu-1 at all). Which ones is not taken from a list: the installed
onnxruntime is *probed* with a one-node model per (type, opset), once per process. Each Relu node
it cannot run is replaced by the first rewrite that the probe shows to run and to give exactly
onnx-relu's values (bit for bit, on a vector of edge cases: signed zeros, subnormals, infinities,
quiet and signalling NaNs with payloads, integer extremes):

``cast-int32``
    int8/int16: ``Cast(int32) -> Relu -> Cast(back)`` (exact: every value fits).
``max-zero``
    integers: ``Max(X, 0)`` with a typed zero constant (exact for integers).
``select``
    float types, opset >= 13: compare (in float for 16-bit types, whose conversion to float is
    exact), then pick X itself or a +0 tensor element by element with ``GatherElements``: the
    kept elements are X's own bits, so NaN payloads, signalling bits and -0 -> +0 come out as
    onnx-relu's. (``Cast(float) -> Relu -> Cast(bfloat16)`` would not be exact: onnxruntime's
    float -> bfloat16 cast turns every NaN into the canonical quiet NaN, and its Relu keeps -0.)

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

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from ._api import relu
from ._onnx_rules import checked_model_opset, dtype_of_onnx_type, load_model
from .errors import InvalidModelError, LegalizationError
from .model_check import findings_for_site, inferred_model, relu_sites

__all__ = [
    "legalize",
    "probe_onnxruntime",
    "ProbeResult",
    "REWRITES",
    "rewrites_for",
    "run_with_onnxruntime",
]

_FLOAT_TYPES = ("tensor(float16)", "tensor(bfloat16)", "tensor(float)", "tensor(double)")
_ELEM_TYPE = {
    "tensor(float16)": TensorProto.FLOAT16,
    "tensor(bfloat16)": TensorProto.BFLOAT16,
    "tensor(float)": TensorProto.FLOAT,
    "tensor(double)": TensorProto.DOUBLE,
    "tensor(int8)": TensorProto.INT8,
    "tensor(int16)": TensorProto.INT16,
    "tensor(int32)": TensorProto.INT32,
    "tensor(int64)": TensorProto.INT64,
}

#: A rewrite: (x, y, onnx type, opset, domain, fresh name maker, final node name) -> nodes, or
#: None where it does not apply at that opset.
Rewrite = Callable[
    [str, str, str, int, str, Callable[[str], str], str], "list[onnx.NodeProto] | None"
]


def _native_relu(x, y, onnx_type, opset, domain, fresh, final_name):
    return [helper.make_node("Relu", [x], [y], name=final_name, domain=domain)]


def _cast_int32(x, y, onnx_type, opset, domain, fresh, final_name):
    if onnx_type not in ("tensor(int8)", "tensor(int16)"):
        return None
    wide, wide_relu = fresh("to_int32"), fresh("relu_int32")
    return [
        helper.make_node("Cast", [x], [wide], name=wide, domain=domain, to=TensorProto.INT32),
        helper.make_node("Relu", [wide], [wide_relu], name=wide_relu, domain=domain),
        helper.make_node("Cast", [wide_relu], [y], name=final_name, domain=domain,
                         to=_ELEM_TYPE[onnx_type]),
    ]


def _typed_zero(name: str, elem_type: int, domain: str) -> onnx.NodeProto:
    """A Constant node making a scalar zero of ``elem_type``; node and value share ``name``."""
    value = helper.make_tensor(name, elem_type, [], [0])
    return helper.make_node("Constant", [], [name], name=name, domain=domain, value=value)


def _max_zero(x, y, onnx_type, opset, domain, fresh, final_name):
    if onnx_type in _FLOAT_TYPES:
        return None  # Max(-0.0, 0) and Max(NaN, 0) are not Relu's exact values
    zero = fresh("zero")
    return [
        _typed_zero(zero, _ELEM_TYPE[onnx_type], domain),
        helper.make_node("Max", [x, zero], [y], name=final_name, domain=domain),
    ]


def _select(x, y, onnx_type, opset, domain, fresh, final_name):
    if onnx_type not in _FLOAT_TYPES or opset < 13:
        return None  # LessOrEqual needs opset 12; Unsqueeze/Squeeze take axes as input from 13
    elem_type = _ELEM_TYPE[onnx_type]
    nodes = []

    def node(op_type, inputs, role, **attributes):
        output = fresh(role)  # a helper node is named after the value it makes
        nodes.append(helper.make_node(op_type, inputs, [output], name=output, domain=domain,
                                      **attributes))
        return output

    # Compare in a type whose comparison onnxruntime implements; 16-bit floats widen to float
    # exactly (sign, subnormals, infinities and NaN-ness kept).
    compare_type = TensorProto.FLOAT if onnx_type in _FLOAT_TYPES[:2] else elem_type
    compared = x if compare_type == elem_type else node("Cast", [x], "as_float", to=compare_type)
    zero = fresh("zero")
    nodes.append(_typed_zero(zero, compare_type, domain))
    # keep = not (x <= 0): true for positives and for every NaN; false for -0, -inf, negatives.
    not_positive = node("LessOrEqual", [compared, zero], "not_positive")
    keep = node("Not", [not_positive], "keep")
    axes = fresh("last_axis")
    nodes.append(helper.make_node(
        "Constant", [], [axes], name=axes, domain=domain,
        value=helper.make_tensor(axes, TensorProto.INT64, [1], [-1])))
    index = node("Unsqueeze", [node("Cast", [keep], "keep_index", to=TensorProto.INT64), axes],
                 "keep_index_column")
    zeros_float = node(
        "ConstantOfShape", [node("Shape", [x], "shape")], "zeros_float",
        value=helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0]))
    zeros = node("Cast", [zeros_float], "zeros", to=elem_type)  # +0 in every float type
    choices = node(
        "Concat",
        [node("Unsqueeze", [zeros, axes], "zeros_column"),
         node("Unsqueeze", [x, axes], "x_column")],
        "choices", axis=-1)
    picked = node("GatherElements", [choices, index], "picked", axis=-1)
    nodes.append(helper.make_node("Squeeze", [picked, axes], [y], name=final_name, domain=domain))
    return nodes


#: Rewrites by name, in the order they are tried. "Relu" is the node left as it is.
REWRITES: dict[str, Rewrite] = {
    "Relu": _native_relu,
    "cast-int32": _cast_int32,
    "max-zero": _max_zero,
    "select": _select,
}


def rewrites_for(onnx_type: str, opset: int) -> list[str]:
    """The rewrites (other than the node itself) that apply to ``onnx_type`` at ``opset``."""
    probe_names = iter(f"n{i}" for i in range(100))
    return [
        name for name, build in REWRITES.items()
        if name != "Relu"
        and build("x", "y", onnx_type, opset, "", lambda role: next(probe_names), "r") is not None
    ]


# -- probing ------------------------------------------------------------------------------------


def _float_edge_bits(bits: int, mantissa: int) -> list[int]:
    """Bit patterns of a binary float format's edge cases, positive then negative."""
    sign = 1 << (bits - 1)
    exponent_mask = sign - (1 << mantissa)  # all exponent bits set
    quiet = 1 << (mantissa - 1)
    mantissa_mask = (1 << mantissa) - 1
    one = (exponent_mask >> 1) & exponent_mask
    positive = [
        0,  # +0
        1,  # smallest subnormal
        mantissa_mask,  # largest subnormal
        1 << mantissa,  # smallest normal
        one,  # 1.0
        exponent_mask - 1,  # largest finite
        exponent_mask,  # infinity
        exponent_mask | quiet,  # canonical quiet NaN
        exponent_mask | quiet | 0b101,  # quiet NaN with a payload
        exponent_mask | 1,  # signalling NaN
        exponent_mask | (quiet >> 1) | 0b11,  # signalling NaN with a payload
    ]
    return positive + [pattern | sign for pattern in positive]


_FLOAT_LAYOUT = {  # onnx type -> (bits, mantissa bits, unsigned view)
    "tensor(float16)": (16, 10, np.uint16),
    "tensor(bfloat16)": (16, 7, np.uint16),
    "tensor(float)": (32, 23, np.uint32),
    "tensor(double)": (64, 52, np.uint64),
}


def probe_values(onnx_type: str) -> np.ndarray:
    """The edge cases a probe runs for ``onnx_type``: every value where implementations differ."""
    dtype = dtype_of_onnx_type(onnx_type)
    if onnx_type in _FLOAT_LAYOUT:
        bits, mantissa, unsigned = _FLOAT_LAYOUT[onnx_type]
        return np.array(_float_edge_bits(bits, mantissa), dtype=unsigned).view(dtype)
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], dtype=dtype)


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"u{array.dtype.itemsize}")


def _describe_difference(x, got, expected) -> str:
    if x.dtype.kind in "iu":
        return f"{x} -> {got} (onnx-relu: {expected})"
    width = 2 * x.dtype.itemsize
    return (f"{x!s} (0x{int(_bits(x)):0{width}x}) -> 0x{int(_bits(got)):0{width}x}"
            f" (onnx-relu: 0x{int(_bits(expected)):0{width}x})")


@dataclass(frozen=True)
class ProbeResult:
    """What onnxruntime did with a one-node Relu model (or one rewrite of it).

    Attributes
    ----------
    onnx_type, opset, ir_version, rewrite
        What was probed; ``rewrite`` is "Relu" for the node itself.
    runs : bool
        Whether onnxruntime loaded and ran it.
    error : str or None
        onnxruntime's refusal (first line) when it does not run.
    differences : tuple of str
        Each probe value whose result differs from ``onnx_relu.relu`` bit for bit, described as
        "input (bits) -> onnxruntime's bits (onnx-relu: bits)". Empty when exact.
    """

    onnx_type: str
    opset: int
    ir_version: int
    rewrite: str
    runs: bool
    error: str | None
    differences: tuple[str, ...]

    @property
    def exact(self) -> bool:
        """True if it runs and every probe value comes out as onnx-relu's, bit for bit."""
        return self.runs and not self.differences


def _probe_model(
    onnx_type: str, opset: int, ir_version: int, rewrite: str, size: int
) -> onnx.ModelProto | None:
    names = iter(range(1000))
    nodes = REWRITES[rewrite](
        "x", "y", onnx_type, opset, "", lambda role: f"{role}_{next(names)}", "relu"
    )
    if nodes is None:
        return None
    elem_type = _ELEM_TYPE[onnx_type]
    graph = helper.make_graph(
        nodes, "probe",
        [helper.make_tensor_value_info("x", elem_type, [size])],
        [helper.make_tensor_value_info("y", elem_type, [size])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


@functools.cache
def probe_onnxruntime(
    onnx_type: str, opset: int, rewrite: str = "Relu", ir_version: int | None = None
) -> ProbeResult:
    """Probe the installed onnxruntime (CPU provider) with ``rewrite`` of a one-node Relu model.

    Parameters
    ----------
    onnx_type : str
        One of the eight Relu types, e.g. "tensor(bfloat16)".
    opset : int
        The ai.onnx opset of the probe model.
    rewrite : str
        "Relu" for the node itself, or a name from :data:`REWRITES`.
    ir_version : int, optional
        The probe model's IR version (default: the installed onnx's).

    Returns
    -------
    ProbeResult
        Cached: each combination is probed once per process.
    """
    from ._ort import run_model

    if onnx_type not in _ELEM_TYPE:
        raise ValueError(f"{onnx_type!r} is not a Relu type; expected one of {sorted(_ELEM_TYPE)}")
    if rewrite not in REWRITES:
        raise ValueError(f"unknown rewrite {rewrite!r}; known: {sorted(REWRITES)}")
    ir_version = onnx.IR_VERSION if ir_version is None else ir_version
    x = probe_values(onnx_type)
    model = _probe_model(onnx_type, opset, ir_version, rewrite, x.size)
    if model is None:
        reason = f"rewrite {rewrite!r} does not apply to {onnx_type} at opset {opset}"
        return ProbeResult(onnx_type, opset, ir_version, rewrite, False, reason, ())
    try:
        (y,) = run_model(model, {"x": x})
    except Exception as error:  # noqa: BLE001 - onnxruntime raises its own exception classes
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        return ProbeResult(onnx_type, opset, ir_version, rewrite, False, first_line, ())
    expected = relu(x, opset=max(opset, 1))
    if y.dtype != x.dtype or y.shape != x.shape:
        return ProbeResult(onnx_type, opset, ir_version, rewrite, True, None,
                           (f"output is {y.dtype}{y.shape}, expected {x.dtype}{x.shape}",))
    differing = np.flatnonzero(_bits(y) != _bits(expected))
    differences = tuple(_describe_difference(x[i], y[i], expected[i]) for i in differing)
    return ProbeResult(onnx_type, opset, ir_version, rewrite, True, None, differences)


# -- legalizing ---------------------------------------------------------------------------------


def _all_names(graph: onnx.GraphProto) -> Iterator[str]:
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        yield value.name
    for tensor in graph.initializer:
        yield tensor.name
    for node in graph.node:
        yield node.name
        yield from node.input
        yield from node.output
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _all_names(attribute.g)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for subgraph in attribute.graphs:
                    yield from _all_names(subgraph)


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


def _graph_at(model: onnx.ModelProto, path) -> onnx.GraphProto:
    graph = model.graph
    for index, attribute_name, position in path:
        (attribute,) = [a for a in graph.node[index].attribute if a.name == attribute_name]
        graph = attribute.g if attribute.type == onnx.AttributeProto.GRAPH else (
            attribute.graphs[position])
    return graph


def legalize(
    model, target: str = "onnxruntime", *, exact: bool = False
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
        quiets signalling NaNs), so that every Relu of the result is exact.

    Returns
    -------
    onnx.ModelProto
        A new model. Every other node is untouched; each rewritten Relu becomes a small
        subgraph whose last node keeps the Relu's name and output name (its helper nodes and
        values are named "<relu name>/<role>", or "<output name>/<role>" for an unnamed Relu,
        with a counter appended where the name is taken). The result passes
        ``onnx.checker.check_model(result, full_check=True)``.

    Raises
    ------
    onnx_relu.errors.InvalidModelError
        if ``check_model`` finds a problem with a Relu node (a type its version does not allow,
        a type that cannot be inferred, a bad attribute): legalize does not guess.
    onnx_relu.errors.LegalizationError
        if a Relu node can neither run nor be rewritten exactly, e.g. any Relu at opsets 1-5:
        onnxruntime implements no Relu-1 (convert the model first, e.g. with
        ``onnx.version_converter.convert_version(model, 13)``).
    """
    if target != "onnxruntime":
        raise ValueError(f"unknown target {target!r}; the only target is 'onnxruntime'")
    source = load_model(model)
    sites = list(relu_sites(source.graph))
    if not sites:
        result = onnx.ModelProto()
        result.CopyFrom(source)
        return result
    opset = checked_model_opset(source)
    sites = list(relu_sites(inferred_model(source).graph))
    findings = [finding for site in sites for finding in findings_for_site(site, opset)]
    if findings:
        raise InvalidModelError(
            "legalize needs valid Relu nodes with known types; check_model found:\n"
            + "\n".join(f"  {finding}" for finding in findings)
        )

    plan = []
    for site in sites:
        choice, tried = _choose_rewrite(site.input_type, opset, source.ir_version, exact)
        if choice is None:
            description = (f"Relu node {site.node.name!r} (node #{site.index})" if site.node.name
                           else f"Relu node #{site.index} (unnamed)")
            native = tried[0]
            problem = ("onnxruntime runs it, but not with onnx-relu's values (exact=True)"
                       if native.runs else "onnxruntime cannot run it")
            raise LegalizationError(
                f"{description} on {site.input_type} at opset {opset}: {problem}, and no"
                " rewrite runs there with exact results. Tried:\n"
                + "\n".join(f"  {t.rewrite}: {t.error or '; '.join(t.differences)}"
                            for t in tried)
                + ("\nonnxruntime implements no Relu-1 (opsets 1-5): convert the model first,"
                   " e.g. onnx.version_converter.convert_version(model, 13)." if opset < 6
                   else "")
            )
        if choice != "Relu":
            plan.append((site, choice))

    result = onnx.ModelProto()
    result.CopyFrom(source)
    pool = _NamePool(set(_all_names(result.graph)))
    # Deepest graphs first, and from the end of each node list, so that the paths and indices
    # of the sites not yet rewritten stay valid.
    plan.sort(key=lambda item: (len(item[0].path), item[0].path, item[0].index), reverse=True)
    for site, choice in plan:
        graph = _graph_at(result, site.path)
        node = graph.node[site.index]
        fresh = pool.fresh_maker(node.name or node.output[0])
        new_nodes = REWRITES[choice](
            node.input[0], node.output[0], site.input_type, opset, node.domain, fresh, node.name
        )
        nodes = list(graph.node)
        nodes[site.index:site.index + 1] = new_nodes
        del graph.node[:]
        graph.node.extend(nodes)
    return result


def run_with_onnxruntime(model, feeds) -> list[np.ndarray]:
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
    from ._ort import run_model

    return run_model(load_model(model), feeds)
