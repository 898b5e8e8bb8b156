"""Optional dependencies that some Pythons cannot install, and skipping what needs them.

onnxruntime and zarr publish no CPython 3.15 wheel (pyproject.toml's extras leave them out there
with environment markers), onnx none for 3.15t. A test that needs one that is missing is skipped,
naming it; any other import error still fails.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import pytest

OPTIONAL_PACKAGES = frozenset(
    {"onnx", "onnxruntime", "zarr", "numcodecs", "dask", "distributed", "matplotlib", "tqdm"}
    # the libraries whose arrays and models users bring (pyproject.toml's interop group)
    | {"jax", "jaxlib", "array_api_strict", "array_api_compat", "scipy", "pandas", "pyarrow"}
    | {"xarray", "torch", "onnx_ir", "onnxscript", "sklearn", "skl2onnx"}
)


def missing_optional_package(error: BaseException | None) -> str | None:
    """The optional package whose absence ``error`` (an import error) reports, or None."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        top = error.name.partition(".")[0]
        if top in OPTIONAL_PACKAGES:
            return top
    return None


def skip_reason(what: str, package: str) -> str:
    return f"{what} needs {package}, an optional dependency not installed with this Python"


def import_or_skip(name: str) -> ModuleType:
    """Import module ``name``; skip the running test if it needs a missing optional package."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = missing_optional_package(error)
        if missing is None:
            raise
        pytest.skip(skip_reason(name, missing))


def skip_unless_installed(what: str, *packages: str) -> None:
    """Skip the running test unless every one of ``packages`` can be imported."""
    for package in packages:
        if importlib.util.find_spec(package) is None:
            pytest.skip(skip_reason(what, package))


# Modules whose docstring examples need more than the module imports: onnxruntime (the modules
# import it lazily), and onnx where the module itself imports without it.
EXAMPLES_NEED = {
    "onnx_relu.onnx": ("onnx",),
    "onnx_relu.onnx.ort": ("onnxruntime", "onnx"),
    "onnx_relu.files.jobs._zarr_store": ("zarr",),
    "onnx_relu.onnx.ort_library": ("onnxruntime", "onnx"),
    "onnx_relu.onnx.probe": ("onnxruntime",),
    "onnx_relu.onnx.legalization": ("onnxruntime",),
}


def requires(*packages: str) -> pytest.MarkDecorator:
    """Mark a test that needs ``packages``: skipped, naming the first missing one."""
    missing = [package for package in packages if importlib.util.find_spec(package) is None]
    return pytest.mark.skipif(
        bool(missing), reason=skip_reason("this test", missing[0]) if missing else ""
    )


HAVE_ONNXRUNTIME = importlib.util.find_spec("onnxruntime") is not None
#: The reason given where a whole module or example is skipped for want of onnxruntime.
NO_ONNXRUNTIME = skip_reason("it", "onnxruntime")
