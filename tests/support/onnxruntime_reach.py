"""Which opsets the installed onnxruntime can load at all (needs onnx and onnxruntime).

The ONNX layer's tests run on every Python (`make pythons`), each with the onnxruntime pip picks
for it: onnxruntime 1.23, the last for Python 3.10, reads models up to IR version 11, so it
cannot load a model of a newer opset than those IR versions carry, whatever the model holds.
A test of a case that needs such an opset is skipped with onnxruntime's own words, so that the
skip says which onnxruntime and why; with an onnxruntime that reads the opset, the case runs.

Some Pythons have no onnxruntime at all (no wheel yet for a new CPython): onnxruntime is imported
when first needed and these helpers skip the calling test with that reason (see also
tests/support/optional.py), so that a test module's other tests still run.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

import onnx
import pytest
from onnx import TensorProto, helper

from tests.support.optional import NO_ONNXRUNTIME


def ort_helpers() -> ModuleType:
    """``onnx_relu.onnx.ort`` (it imports onnxruntime), skipping the calling test without it."""
    pytest.importorskip("onnxruntime", reason=NO_ONNXRUNTIME)
    return importlib.import_module("onnx_relu.onnx.ort")


@functools.cache
def onnxruntime_refusal(opset: int) -> str | None:
    """onnxruntime's first line of refusal of an Identity model of ``opset``, stamped with the
    lowest IR version that opset needs; None if it loads it. Skips without onnxruntime."""
    lowest_ir_version = ort_helpers().lowest_ir_version
    import onnxruntime

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "reach",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = lowest_ir_version(opsets) or onnx.IR_VERSION
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    try:
        onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # noqa: BLE001 - onnxruntime raises its own exception classes
        lines = str(error).strip().splitlines()
        return lines[0].split(") ")[-1] if lines else repr(error)
    return None


def skip_if_onnxruntime_predates(opset: int) -> None:
    """Skip the running test if the installed onnxruntime cannot load any model of ``opset``."""
    refusal = onnxruntime_refusal(opset)
    if refusal is not None:
        import onnxruntime

        pytest.skip(
            f"onnxruntime {onnxruntime.__version__} cannot load opset {opset} models"
            f" ({onnx.__name__} {onnx.__version__} makes them): {refusal}"
        )
