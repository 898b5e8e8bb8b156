"""The rewrites ``legalize`` may replace a Relu node with (``cast-int32``, ``max-zero``,
``select``: what each does and why it is exact is in :mod:`onnx_relu.onnx.legalization`), by
name in :data:`REWRITES`. Whether onnxruntime runs one, and exactly, is :mod:`.probe`'s business.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._extras import extra_needed
from ..dtypes import RELU_TYPE_BY_ONNX_NAME

with extra_needed():  # a missing onnx raises the one MissingExtraError
    import onnx
    from onnx import TensorProto, helper

__all__ = ["Rewrite", "REWRITES", "rewrites_for"]


def _elem_type(onnx_type: str) -> int:
    return RELU_TYPE_BY_ONNX_NAME[onnx_type].elem_type


def _is_float(onnx_type: str) -> bool:
    relu_type = RELU_TYPE_BY_ONNX_NAME.get(onnx_type)
    return relu_type is not None and relu_type.is_float


#: A rewrite: (x, y, onnx type, opset, domain, fresh name maker, final node name) -> nodes, or
#: None where it does not apply at that opset.
Rewrite = Callable[
    [str, str, str, int, str, Callable[[str], str], str], "list[onnx.NodeProto] | None"
]


def _native_relu(
    x: str,
    y: str,
    onnx_type: str,
    opset: int,
    domain: str,
    fresh: Callable[[str], str],
    final_name: str,
) -> list[onnx.NodeProto] | None:
    return [helper.make_node("Relu", [x], [y], name=final_name, domain=domain)]


def _cast_int32(
    x: str,
    y: str,
    onnx_type: str,
    opset: int,
    domain: str,
    fresh: Callable[[str], str],
    final_name: str,
) -> list[onnx.NodeProto] | None:
    if onnx_type not in ("tensor(int8)", "tensor(int16)"):
        return None
    wide, wide_relu = fresh("to_int32"), fresh("relu_int32")
    return [
        helper.make_node("Cast", [x], [wide], name=wide, domain=domain, to=TensorProto.INT32),
        helper.make_node("Relu", [wide], [wide_relu], name=wide_relu, domain=domain),
        helper.make_node(
            "Cast", [wide_relu], [y], name=final_name, domain=domain, to=_elem_type(onnx_type)
        ),
    ]


def _typed_zero(name: str, elem_type: int, domain: str) -> onnx.NodeProto:
    """A Constant node making a scalar zero of ``elem_type``; node and value share ``name``."""
    value = helper.make_tensor(name, elem_type, [], [0])
    return helper.make_node("Constant", [], [name], name=name, domain=domain, value=value)


def _max_zero(
    x: str,
    y: str,
    onnx_type: str,
    opset: int,
    domain: str,
    fresh: Callable[[str], str],
    final_name: str,
) -> list[onnx.NodeProto] | None:
    if _is_float(onnx_type):
        return None  # Max(-0.0, 0) and Max(NaN, 0) are not Relu's exact values
    zero = fresh("zero")
    return [
        _typed_zero(zero, _elem_type(onnx_type), domain),
        helper.make_node("Max", [x, zero], [y], name=final_name, domain=domain),
    ]


def _select(
    x: str,
    y: str,
    onnx_type: str,
    opset: int,
    domain: str,
    fresh: Callable[[str], str],
    final_name: str,
) -> list[onnx.NodeProto] | None:
    if not _is_float(onnx_type) or opset < 13:
        return None  # LessOrEqual needs opset 12; Unsqueeze/Squeeze take axes as input from 13
    relu_type = RELU_TYPE_BY_ONNX_NAME[onnx_type]
    elem_type = relu_type.elem_type
    nodes: list[onnx.NodeProto] = []

    def node(op_type: str, inputs: list[str], role: str, **attributes: Any) -> str:
        output = fresh(role)  # a helper node is named after the value it makes
        nodes.append(
            helper.make_node(op_type, inputs, [output], name=output, domain=domain, **attributes)
        )
        return output

    # Compare in a type whose comparison onnxruntime implements; 16-bit floats widen to float
    # exactly (sign, subnormals, infinities and NaN-ness kept).
    compare_type = TensorProto.FLOAT if relu_type.bits == 16 else elem_type
    compared = x if compare_type == elem_type else node("Cast", [x], "as_float", to=compare_type)
    zero = fresh("zero")
    nodes.append(_typed_zero(zero, compare_type, domain))
    # keep = not (x <= 0): true for positives and for every NaN; false for -0, -inf, negatives.
    not_positive = node("LessOrEqual", [compared, zero], "not_positive")
    keep = node("Not", [not_positive], "keep")
    axes = fresh("last_axis")
    nodes.append(
        helper.make_node(
            "Constant",
            [],
            [axes],
            name=axes,
            domain=domain,
            value=helper.make_tensor(axes, TensorProto.INT64, [1], [-1]),
        )
    )
    index = node(
        "Unsqueeze",
        [node("Cast", [keep], "keep_index", to=TensorProto.INT64), axes],
        "keep_index_column",
    )
    zeros_float = node(
        "ConstantOfShape",
        [node("Shape", [x], "shape")],
        "zeros_float",
        value=helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0]),
    )
    zeros = node("Cast", [zeros_float], "zeros", to=elem_type)  # +0 in every float type
    choices = node(
        "Concat",
        [
            node("Unsqueeze", [zeros, axes], "zeros_column"),
            node("Unsqueeze", [x, axes], "x_column"),
        ],
        "choices",
        axis=-1,
    )
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
        name
        for name, build in REWRITES.items()
        if name != "Relu"
        and build("x", "y", onnx_type, opset, "", lambda role: next(probe_names), "r") is not None
    ]
