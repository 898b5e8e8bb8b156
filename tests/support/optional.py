"""Optional dependencies that some Pythons lack (no wheel for them yet: onnxruntime on CPython
3.15), and the markers that skip the tests needing them, saying so, so that the rest still runs."""

from __future__ import annotations

import importlib.util

import pytest

HAVE_ONNXRUNTIME = importlib.util.find_spec("onnxruntime") is not None
NO_ONNXRUNTIME = "onnxruntime is not installed (it has no wheel for this Python yet)"

#: Marks a test that runs something in onnxruntime (legalize and its probe do).
needs_onnxruntime = pytest.mark.skipif(not HAVE_ONNXRUNTIME, reason=NO_ONNXRUNTIME)

#: The modules whose docstring examples run models in onnxruntime.
ONNXRUNTIME_MODULES = frozenset({"onnx_relu.onnx.legalization", "onnx_relu.onnx.ort",
                                 "onnx_relu.onnx.ort_library", "onnx_relu.onnx.probe"})
