"""Each layer of the package imports only what its optional extra provides.

Every module below is imported alone in a fresh interpreter (``tools/import_layers.py``, which
also prints the whole table), and the heavy packages it pulled in are checked against the layer
rules: the core, the shared paths and streams (``onnx_relu.io``) and the file layer import none
(``.pb`` files import onnx, and Zarr stores dask, only when one is read or written); the ONNX
layer imports onnx (and protobuf, which onnx imports), and onnxruntime only in
``onnx_relu.onnx.ort``, the module that runs models in it (the package ``onnx_relu.onnx`` itself
and ``onnx_relu.onnx.ort_library`` import neither); the command line and the benchmark harness
import none at import time. Run with ``-s`` to see the table (module -> heavy packages).
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
    return set()  # the core, onnx_relu.io, onnx_relu.files, onnx_relu.cli, onnx_relu.bench


@pytest.mark.parametrize("module", import_layers.MODULES)
def test_module_imports_only_what_its_layer_allows(module):
    needed = sorted(name for name in expected_heavy(module) if name in OPTIONAL_PACKAGES)
    skip_unless_installed(f"import {module}", *needed)
    heavy = import_layers.heavy_imports(module)
    print(import_layers.table_line(module, heavy))
    assert set(heavy) == expected_heavy(module), f"import {module} brought {heavy}"


#: The packages whose modules must not import each other in a cycle, nor take private names
#: from each other: the shared paths and streams, the file layer (its jobs included).
_WALKED = ("onnx_relu.io", "onnx_relu.files")


def _package_imports(
    packages: tuple[str, ...] = _WALKED,
) -> dict[str, list[tuple[str, list[str]]]]:
    """For each module of the installed ``packages`` (subpackages included), by its full name:
    the modules of onnx_relu it imports (anywhere in it, inside functions too) and the names it
    takes from each."""
    import ast
    import importlib

    import onnx_relu

    top = Path(onnx_relu.__path__[0])
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for package in packages:
        folder = Path(importlib.import_module(package).__path__[0])
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(top.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            own_package = name if parts[-1] == "__init__" else name.rpartition(".")[0]
            imports = found.setdefault(name, [])
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                if node.level:
                    base = (
                        own_package.rsplit(".", node.level - 1)[0]
                        if node.level > 1
                        else own_package
                    )
                    source = f"{base}.{node.module}" if node.module else base
                else:
                    source = node.module or ""
                if not source.startswith("onnx_relu"):
                    continue
                names = [alias.name for alias in node.names]
                if node.module is None:  # from . import npy: the modules themselves
                    imports += [(f"{source}.{alias}", []) for alias in names]
                else:
                    imports.append((source, names))
    return found


def test_the_shared_and_file_layers_have_no_import_cycle():
    """No module of :data:`_WALKED` imports, directly or through others, one that imports it
    back (imports inside functions included: a cycle there only waits for its call); a
    package's ``__init__`` may import its own modules, which never import it."""
    found = _package_imports()
    graph = {
        module: {name for name, _ in imports if name in found and name not in _WALKED}
        for module, imports in found.items()
        if module not in _WALKED and not module.endswith(".jobs")
    }

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for name in graph.get(start, ()):
            if name == target or (name not in seen and reaches(name, target, seen | {name})):
                return True
        return False

    cycles = sorted(module for module in graph if reaches(module, module, {module}))
    assert not cycles, f"modules on an import cycle: {cycles}"
    # the walk sees the packages' imports
    assert "onnx_relu.io.endpoint" in graph["onnx_relu.io.streams"]
    assert "onnx_relu.files.jobs.stream" in graph["onnx_relu.files.plan"]


#: The packages of onnx_relu whose ``__init__`` is left out of the import graph.
_PACKAGES = ("onnx_relu", "onnx_relu.io", "onnx_relu.files", "onnx_relu.files.jobs")


def test_no_module_of_the_package_is_on_an_import_cycle():
    """No module of onnx_relu imports, directly or through others, one that imports it back
    (imports inside functions included: a cycle there only waits for its call). A package's
    ``__init__`` loads its names on first use and is not a node: a module that takes a name
    through it is the next test's business."""
    found = _package_imports(("onnx_relu",))
    packages = {*_PACKAGES, "onnx_relu.onnx", "onnx_relu.cli", "onnx_relu.bench"}
    graph = {
        module: {name for name, _ in imports if name in found and name not in packages}
        for module, imports in found.items()
        if module not in packages
    }

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for name in graph.get(start, ()):
            if name == target or (name not in seen and reaches(name, target, seen | {name})):
                return True
        return False

    cycles = {module for module in graph if reaches(module, module, {module})}
    assert not cycles, f"modules on an import cycle: {sorted(cycles)}"
    # the walk sees the whole package: the error classes and the extras' rule
    assert "onnx_relu._extras" in graph["onnx_relu.errors"]
    assert "onnx_relu.errors" in graph["onnx_relu.io.endpoint"]
    # and the foreign arrays' module, which relu imports on the first array of another library
    assert "onnx_relu._foreign" in graph["onnx_relu._api"]


#: Modules that still take a name through the package face, ``from onnx_relu import relu``
#: (``from .. import relu``), where ``onnx_relu._api`` defines it: the ONNX layer's, left to
#: the change that owns that layer. Remove each as it is fixed.
_FACE_ALLOWED: set[str] = set()


def test_no_module_takes_a_name_through_the_package_face():
    """A module of onnx_relu takes each name from the module that defines it, never from the
    package ``onnx_relu`` (whose ``__init__`` loads the name from there on first use: an
    arrow that runs back up). The benchmark harness measures the public face with ``import
    onnx_relu`` (not a ``from`` import) and is not held to it."""
    found = _package_imports(("onnx_relu",))
    through_face = sorted(
        f"{module} imports {names} from onnx_relu"
        for module, imports in found.items()
        if module != "onnx_relu" and module not in _FACE_ALLOWED
        for source, names in imports
        if source == "onnx_relu" and names
    )
    assert not through_face, through_face
    assert _FACE_ALLOWED <= set(found), "an allowed module no longer exists: remove it"


def test_no_private_name_crosses_a_module_of_the_shared_and_file_layers():
    """A name one module of :data:`_WALKED` takes from another is public there."""
    crossing = sorted(
        f"{module} imports {name} from {source}"
        for module, imports in _package_imports().items()
        for source, names in imports
        for name in names
        if name.startswith("_") and not name.startswith("__")
    )
    assert not crossing, crossing


def test_the_shared_layer_imports_neither_the_file_layer_nor_the_onnx_layer():
    """``onnx_relu.io`` is what both build on: it imports neither of them."""
    upward = sorted(
        f"{module} imports {source}"
        for module, imports in _package_imports().items()
        if module.startswith("onnx_relu.io")
        for source, _ in imports
        if source.startswith(("onnx_relu.files", "onnx_relu.onnx", "onnx_relu.cli"))
    )
    assert not upward, upward


def test_the_onnx_layer_does_not_import_the_file_layer():
    """The ONNX layer shares paths with the file layer through ``onnx_relu.io`` only."""
    import ast

    import onnx_relu.onnx

    folder = Path(onnx_relu.onnx.__path__[0])
    crossing = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                if module.startswith(("..files", "onnx_relu.files")):
                    crossing.append(f"{path.name} imports {module}")
    assert not crossing, crossing


@pytest.mark.parametrize(
    "module",
    [
        "onnx_relu.io.endpoint",
        "onnx_relu.io.streams",
        "onnx_relu.io.atomic",
        "onnx_relu.files",
        "onnx_relu.files.formats",
        "onnx_relu.files.npy",
        "onnx_relu.files.pb",
        "onnx_relu.files.tensors",
    ],
)
def test_the_path_and_codec_modules_never_load_the_kernel(module):
    import subprocess
    import sys

    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; print('onnx_relu._relu' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert loaded == ["False"], f"import {module} loaded the kernel"


#: Basenames more than one module of the package may have, each for a reason outside it.
_SHARED_BASENAMES = {
    "__init__",  # every package's own module (Python's fixed name)
    "__main__",  # ``python -m onnx_relu`` and ``python -m onnx_relu.bench`` (Python's fixed name)
    # ``onnx_relu.backend`` is the public short alias of ``onnx_relu.onnx.backend`` (as
    # ``onnx_tf.backend`` is onnx-tensorflow's): both are public API, and ONNX's backend test
    # runner looks for a module named ``backend``.
    "backend",
}


def test_no_two_modules_of_the_package_share_a_basename():
    """A module's name says its layer: ``onnx_relu.cli.check_command`` (the subcommand) is not
    another ``check`` beside ``onnx_relu.onnx.check`` (the judge). Packages count as modules
    (``cli/bench.py`` beside the package ``bench/`` was such a pair), and so do compiled
    extension modules; only :data:`_SHARED_BASENAMES` may repeat."""
    import importlib.machinery

    import onnx_relu

    top = Path(onnx_relu.__path__[0])
    suffixes = tuple(importlib.machinery.all_suffixes())
    where: dict[str, list[str]] = {}
    for path in sorted(top.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        if path.is_dir() and (path / "__init__.py").is_file():
            name = path.name
        elif (
            path.is_file()
            and path.name.endswith(suffixes)
            and (path.parent / "__init__.py").is_file()  # not lib/'s onnxruntime library
        ):
            name = path.name.split(".")[0]
        else:
            continue
        where.setdefault(name, []).append(str(path.relative_to(top.parent)))
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert set(shared) <= _SHARED_BASENAMES, {
        name: paths for name, paths in shared.items() if name not in _SHARED_BASENAMES
    }
    # the walk sees the whole installed package, extension modules included
    assert {"_relu", "plan", "check", "check_command", "bench", "bench_command"} <= set(where)
    assert _SHARED_BASENAMES <= set(shared), "an allowed name is no longer shared: remove it"
