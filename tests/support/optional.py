"""Optional dependencies that some Pythons lack (no wheel for them yet: onnxruntime and zarr on
CPython 3.15, dask and zarr on free-threaded 3.13), and the markers that skip the tests needing
them, saying so, so that the rest still runs."""

from __future__ import annotations

import importlib.util

import pytest

HAVE_ONNXRUNTIME = importlib.util.find_spec("onnxruntime") is not None
NO_ONNXRUNTIME = "onnxruntime is not installed (it has no wheel for this Python yet)"

#: Marks a test that runs something in onnxruntime (legalize and its probe do).
needs_onnxruntime = pytest.mark.skipif(not HAVE_ONNXRUNTIME, reason=NO_ONNXRUNTIME)

#: The package modules whose docstring examples (or import) need an optional package.
MODULE_NEEDS = {
    "onnx_relu.onnx.legalization": "onnxruntime",
    "onnx_relu.onnx.ort": "onnxruntime",
    "onnx_relu.onnx.ort_library": "onnxruntime",
    "onnx_relu.onnx.probe": "onnxruntime",
    "onnx_relu.files._zarr_store": "zarr",
}


def skip_unless_module_can_run(name: str) -> None:
    """Skip the calling test if module ``name``'s examples need a package not installed here."""
    needed = MODULE_NEEDS.get(name)
    if needed is not None and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{name}'s examples need {needed},"
                    " not installed (no wheel for this Python yet)")
