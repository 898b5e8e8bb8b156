"""The rewrites ``legalize`` may replace a Relu node with (``cast-int32``, ``max-zero``,
``select``: what each does and why it gives onnx-relu's values bit for bit is in
:mod:`onnx_relu.onnx.legalization`), by name in :data:`REWRITES`. Whether onnxruntime runs one,
and with those values, is :mod:`.probe`'s business.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._extras import extra_needed
from ..dtypes import RELU_TYPE_BY_NAME, RELU_TYPE_BY_ONNX_NAME, ReluType

with extra_needed():  # a missing onnx raises the one MissingExtraError
    import onnx
    from onnx import TensorProto, helper

__all__ = ["Rewrite", "REWRITES", "rewrites_for"]

#: The wider types the rewrites compute in, from the one table: an integer narrower than this
#: one widens to it exactly; a 16-bit float widens to float exactly (sign, subnormals,
#: infinities and NaN-ness kept).
_WIDE_INTEGER = RELU_TYPE_BY_NAME["int32"]
_WIDE_FLOAT = RELU_TYPE_BY_NAME["float32"]


@dataclass(frozen=True)
class _Site:
    """The Relu node a rewrite replaces: its input ``x`` and output ``y``, the input's type, its
    domain, the maker of fresh helper names, and the name the last node keeps."""

    x: str
    y: str
    relu_type: ReluType
    domain: str
    fresh: Callable[[str], str]
    final_name: str

    def node(
        self, op_type: str, inputs: list[str], role: str, **attributes: Any
    ) -> tuple[str, onnx.NodeProto]:
        """A helper node making one fresh value named after ``role``; node and value share it."""
        output = self.fresh(role)
        return output, helper.make_node(
            op_type, inputs, [output], name=output, domain=self.domain, **attributes
        )

    def final(self, op_type: str, inputs: list[str], **attributes: Any) -> onnx.NodeProto:
        """The last node: it makes ``y`` and keeps the Relu's name."""
        return helper.make_node(
            op_type, inputs, [self.y], name=self.final_name, domain=self.domain, **attributes
        )

    def constant(
        self, role: str, elem_type: int, dims: list[int], values: list[Any]
    ) -> tuple[str, onnx.NodeProto]:
        """A Constant node making a fresh value named after ``role`` (the node and its tensor
        share the name)."""
        name = self.fresh(role)
        value = helper.make_tensor(name, elem_type, dims, values)
        return name, helper.make_node(
            "Constant", [], [name], name=name, domain=self.domain, value=value
        )


@dataclass(frozen=True)
class Rewrite:
    """One way to write a Relu node: the types and opsets it applies to, and the nodes it makes.

    Called as ``rewrite(x, y, onnx_type, opset, domain, fresh, final_name)``: the nodes that
    replace the Relu ``y = Relu(x)`` of ``onnx_type`` at ``opset`` (helper names from
    ``fresh(role)``; the last node is named ``final_name``), or None where it does not apply.
    """

    applies: Callable[[ReluType, int], bool]
    build: Callable[[_Site], list[onnx.NodeProto]]

    def __call__(
        self,
        x: str,
        y: str,
        onnx_type: str,
        opset: int,
        domain: str,
        fresh: Callable[[str], str],
        final_name: str,
    ) -> list[onnx.NodeProto] | None:
        relu_type = RELU_TYPE_BY_ONNX_NAME[onnx_type]
        if not self.applies(relu_type, opset):
            return None
        return self.build(_Site(x, y, relu_type, domain, fresh, final_name))


def _native_relu(site: _Site) -> list[onnx.NodeProto]:
    return [site.final("Relu", [site.x])]


def _cast_int32(site: _Site) -> list[onnx.NodeProto]:
    wide, to_wide = site.node("Cast", [site.x], "to_int32", to=_WIDE_INTEGER.elem_type)
    wide_relu, relu = site.node("Relu", [wide], "relu_int32")
    return [to_wide, relu, site.final("Cast", [wide_relu], to=site.relu_type.elem_type)]


def _max_zero(site: _Site) -> list[onnx.NodeProto]:
    zero, constant = site.constant("zero", site.relu_type.elem_type, [], [0])
    return [constant, site.final("Max", [site.x, zero])]


def _select(site: _Site) -> list[onnx.NodeProto]:
    elem_type = site.relu_type.elem_type
    nodes: list[onnx.NodeProto] = []

    def node(op_type: str, inputs: list[str], role: str, **attributes: Any) -> str:
        output, made = site.node(op_type, inputs, role, **attributes)
        nodes.append(made)
        return output

    # Compare in a type whose comparison onnxruntime implements: narrower floats in float.
    compare_type = _WIDE_FLOAT.elem_type if site.relu_type.bits < _WIDE_FLOAT.bits else elem_type
    x = site.x
    compared = x if compare_type == elem_type else node("Cast", [x], "as_float", to=compare_type)
    zero, constant = site.constant("zero", compare_type, [], [0])
    nodes.append(constant)
    # keep = not (x <= 0): true for positives and for every NaN; false for -0, -inf, negatives.
    not_positive = node("LessOrEqual", [compared, zero], "not_positive")
    keep = node("Not", [not_positive], "keep")
    axes, constant = site.constant("last_axis", TensorProto.INT64, [1], [-1])
    nodes.append(constant)
    index = node(
        "Unsqueeze",
        [node("Cast", [keep], "keep_index", to=TensorProto.INT64), axes],
        "keep_index_column",
    )
    zeros_float = node(
        "ConstantOfShape",
        [node("Shape", [x], "shape")],
        "zeros_float",
        value=helper.make_tensor("value", _WIDE_FLOAT.elem_type, [1], [0.0]),
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
    nodes.append(site.final("Squeeze", [picked, axes]))
    return nodes


#: Rewrites by name, in the order they are tried. "Relu" is the node left as it is.
REWRITES: dict[str, Rewrite] = {
    "Relu": Rewrite(lambda relu_type, opset: True, _native_relu),
    # Only where widening keeps every value: an integer narrower than the wide one.
    "cast-int32": Rewrite(
        lambda relu_type, opset: not relu_type.is_float and relu_type.bits < _WIDE_INTEGER.bits,
        _cast_int32,
    ),
    # Not for floats: Max(-0.0, 0) and Max(NaN, 0) are not Relu's values.
    "max-zero": Rewrite(lambda relu_type, opset: not relu_type.is_float, _max_zero),
    # LessOrEqual needs opset 12; Unsqueeze and Squeeze take their axes as an input from 13.
    "select": Rewrite(lambda relu_type, opset: relu_type.is_float and opset >= 13, _select),
}


def rewrites_for(onnx_type: str, opset: int) -> list[str]:
    """The rewrites (other than the node itself) that apply to ``onnx_type`` at ``opset``."""
    relu_type = RELU_TYPE_BY_ONNX_NAME[onnx_type]
    return [
        name
        for name, rewrite in REWRITES.items()
        if name != "Relu" and rewrite.applies(relu_type, opset)
    ]
