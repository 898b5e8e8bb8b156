"""Which heavy packages each layer of onnx-relu imports: each module imported alone in a fresh
interpreter, then the optional packages found in ``sys.modules`` are listed.

Usage: python tools/import_layers.py [MODULE ...]   (default: every layer's modules)

Prints one line per module: ``module -> heavy packages`` ("none" when it imports none of them).
``tests/test_layers.py`` runs the same measurement and checks each line against the layer rules
(core and files: none; the ONNX layer: onnx, and onnxruntime only in the module that runs it,
but neither for the package itself nor the library's module; the command line: none at import).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

#: The optional packages (and their heavy dependencies) a layer may or may not pull in.
HEAVY = (
    "onnx",
    "onnxruntime",
    "dask",
    "distributed",
    "zarr",
    "tqdm",
    "matplotlib",
    "google.protobuf",
)

#: The modules whose imports are measured, layer by layer.
MODULES = (
    "onnx_relu",
    "onnx_relu.tuning",
    "onnx_relu.output_cache",
    "onnx_relu.ceiling",
    "onnx_relu.argtypes",
    "onnx_relu.dtypes",
    "onnx_relu.versions",
    "onnx_relu.io",
    "onnx_relu.io.endpoint",
    "onnx_relu.io.streams",
    "onnx_relu.io.atomic",
    "onnx_relu.files",
    "onnx_relu.files.formats",
    "onnx_relu.files.npy",
    "onnx_relu.files.pb",
    "onnx_relu.files.tensors",
    "onnx_relu.files.plan",
    "onnx_relu.files.tensor_files",
    "onnx_relu.files.jobs.stream",
    "onnx_relu.files.jobs.in_place",
    "onnx_relu.files.jobs.zarr_dask",
    "onnx_relu.files.jobs.zarr_output",
    "onnx_relu.onnx",
    "onnx_relu.onnx.backend",
    "onnx_relu.backend",
    "onnx_relu.onnx.reference",
    "onnx_relu.onnx.ort",
    "onnx_relu.onnx.ort_library",
    "onnx_relu.cli",
    "onnx_relu.bench",
)

_IMPORT_AND_LIST = (
    "import importlib, json, sys\n"
    "importlib.import_module(sys.argv[1])\n"
    "print(json.dumps(sorted(sys.modules)))"
)


def heavy_imports(module: str, python: str = sys.executable) -> tuple[str, ...]:
    """The packages of :data:`HEAVY` that ``import module`` imports in a fresh interpreter.

    The interpreter runs in an empty temporary folder, so that nothing in the current folder can
    stand in for a package. Raises ``RuntimeError`` with its stderr if the import fails.
    """
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [python, "-c", _IMPORT_AND_LIST, module],
            capture_output=True,
            text=True,
            cwd=folder,
            timeout=300,
        )
    if done.returncode != 0:
        raise RuntimeError(f"import {module} failed:\n{done.stderr}")
    imported = json.loads(done.stdout)
    return tuple(
        package
        for package in HEAVY
        if any(name == package or name.startswith(package + ".") for name in imported)
    )


def table_line(module: str, heavy: tuple[str, ...]) -> str:
    """One line of the table: ``module -> heavy packages`` (``none`` if there are none)."""
    return f"{module:28} -> {', '.join(heavy) or 'none'}"


def main(argv: list[str] | None = None) -> int:
    modules = (sys.argv[1:] if argv is None else argv) or list(MODULES)
    for module in modules:
        print(table_line(module, heavy_imports(module)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
