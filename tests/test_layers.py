"""Each layer of the package imports only what its optional extra provides.

Every module below is imported alone in a fresh interpreter (``tools/import_layers.py``, which
also prints the whole table), and the heavy packages it pulled in are checked against the layer
rules: the core and the file layer import none (``.pb`` files import onnx, and Zarr stores dask,
only when one is read or written); the ONNX layer imports onnx (and protobuf, which onnx
imports), and onnxruntime only in ``onnx_relu.onnx.ort``, the module that runs models in it (the
package ``onnx_relu.onnx`` itself and ``onnx_relu.onnx.ort_library`` import neither); the
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
        return {"onnxruntime"}  # onnx only when its functions take a model
    if module in ("onnx_relu.onnx", "onnx_relu.onnx.ort_library"):
        return set()  # names imported on first use; the library's path needs neither
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


def _file_layer_imports() -> dict[str, list[tuple[str, list[str]]]]:
    """For each module of the installed ``onnx_relu.files``: the modules of the package it
    imports (anywhere in it, inside functions too) and the names it takes from each."""
    import ast

    import onnx_relu.files

    folder = Path(onnx_relu.files.__path__[0])
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for path in sorted(folder.glob("*.py")):
        imports = found.setdefault(path.stem, [])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 1 and node.module:  # from .npy import x
                imports.append((node.module.split(".")[0], [alias.name for alias in node.names]))
            elif node.level == 1:  # from . import npy
                imports += [(alias.name, []) for alias in node.names]
            elif node.module and node.module.startswith("onnx_relu.files."):
                module = node.module.removeprefix("onnx_relu.files.").split(".")[0]
                imports.append((module, [alias.name for alias in node.names]))
    return found


def test_the_file_layer_has_no_import_cycle():
    """No module of ``onnx_relu.files`` imports, directly or through others, one that imports
    it back (imports inside functions included: a cycle there only waits for its call)."""
    graph = {
        module: {name for name, _ in imports if name != "__init__"}
        for module, imports in _file_layer_imports().items()
    }
    graph.pop("__init__")  # the package imports its modules; none of them imports it

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for name in graph.get(start, ()):
            if name == target or (name not in seen and reaches(name, target, seen | {name})):
                return True
        return False

    cycles = sorted(module for module in graph if reaches(module, module, {module}))
    assert not cycles, f"modules of onnx_relu.files on an import cycle: {cycles}"
    assert "plan" in graph and "paths" in graph["plan"]  # the walk sees the package's imports


def test_no_private_name_crosses_a_module_of_the_file_layer():
    """A name one module of ``onnx_relu.files`` takes from another is public there."""
    crossing = sorted(
        f"{module} imports {name} from {source}"
        for module, imports in _file_layer_imports().items()
        for source, names in imports
        for name in names
        if name.startswith("_") and not name.startswith("__")
    )
    assert not crossing, crossing
