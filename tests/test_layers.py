"""Each layer of the package imports only what its optional extra provides.

Every module below is imported alone in a fresh interpreter (``tools/import_layers.py``, which
also prints the whole table), and the heavy packages it pulled in are checked against the layer
rules: the core and the file layer import none (``.pb`` files import onnx, and Zarr stores dask,
only when one is read or written); the ONNX layer imports onnx (and protobuf, which onnx
imports), and onnxruntime only in ``onnx_relu.onnx.ort``, the module that runs models in it; the
command line and the benchmark harness import none at import time. Run with ``-s`` to see the
table (module -> heavy packages).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.support.optional import OPTIONAL_PACKAGES, skip_unless_installed

_TOOL = Path(__file__).resolve().parents[1] / "tools" / "import_layers.py"
_spec = importlib.util.spec_from_file_location("import_layers", _TOOL)
import_layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_layers)

#: What importing onnx brings with it.
ONNX = ("onnx", "google.protobuf")


def expected_heavy(module: str) -> set[str]:
    """The layer rule for ``module``: the heavy packages importing it alone may bring."""
    if module == "onnx_relu.onnx.ort":
        return {*ONNX, "onnxruntime"}
    if module == "onnx_relu.backend" or module.startswith("onnx_relu.onnx"):
        return set(ONNX)
    return set()  # the core, onnx_relu.files, onnx_relu.cli, onnx_relu.bench


@pytest.mark.parametrize("module", import_layers.MODULES)
def test_module_imports_only_what_its_layer_allows(module):
    needed = sorted(name for name in expected_heavy(module) if name in OPTIONAL_PACKAGES)
    skip_unless_installed(f"import {module}", *needed)
    heavy = import_layers.heavy_imports(module)
    print(import_layers.table_line(module, heavy))
    assert set(heavy) == expected_heavy(module), f"import {module} brought {heavy}"
