"""Models written with onnxscript, for tests/onnx/test_ir_model.py (imported only where
onnxscript is installed). onnxscript reads a function's names from its module's globals, so the
scripts live at module level here."""

# (no "from __future__ import annotations": onnxscript reads the type annotations as objects)

import onnx
from onnxscript import BFLOAT16, BOOL, FLOAT16, INT16, script
from onnxscript import opset21 as op
from onnxscript.values import Opset

local = Opset("local", 1)


@script(local, default_opset=op)
def inner_act(X):
    Z = op.Relu(X)
    return Z


@script(local, default_opset=op)
def outer(X):
    Y = inner_act(X)
    return Y


@script(default_opset=op)
def main_bf16(X: BFLOAT16["N"], C: BOOL) -> BFLOAT16["N"]:  # noqa: F821 - onnxscript's syntax
    if C:
        Z = outer(X)
    else:
        Z = op.Identity(X)
    return Z


@script(default_opset=op)
def main_f16(X: FLOAT16["N"], C: BOOL) -> FLOAT16["N"]:  # noqa: F821
    if C:
        Z = outer(X)
    else:
        Z = op.Identity(X)
    return Z


@script(default_opset=op)
def main_i16(X: INT16["N"], C: BOOL) -> INT16["N"]:  # noqa: F821
    if C:
        Z = outer(X)
    else:
        Z = op.Identity(X)
    return Z


def nested_functions_in_if() -> "dict[str, onnx.ModelProto]":
    """onnxscript's nested functions (outer calls inner_act, which holds the Relu) called
    inside an If branch, at opset 21, for three types stock onnxruntime has no Relu for."""
    return {
        "bfloat16": main_bf16.to_model_proto(),
        "float16": main_f16.to_model_proto(),
        "int16": main_i16.to_model_proto(),
    }
