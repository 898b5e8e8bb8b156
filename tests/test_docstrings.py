"""Every module of the package, every layer included, runs its docstring examples.

The modules are found by walking the installed package, so a new module's examples run without
being listed anywhere; a module that shows examples (``>>>``) must have doctest find them.
"""

from __future__ import annotations

import doctest
import inspect
import pkgutil

import pytest

import onnx_relu
from tests.support.optional import EXAMPLES_NEED, import_or_skip, skip_unless_installed

MODULES = sorted(
    ["onnx_relu"]
    + [
        info.name
        for info in pkgutil.walk_packages(onnx_relu.__path__, prefix="onnx_relu.")
        if info.name != "onnx_relu.__main__"
    ]
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    skip_unless_installed(f"the examples of {name}", *EXAMPLES_NEED.get(name, ()))
    module = import_or_skip(name)
    before = onnx_relu.get_num_threads()
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    source = inspect.getsource(module) if module.__file__.endswith(".py") else ""  # not _relu.so
    if ">>> " in source:
        assert result.attempted > 0, f"doctest finds none of the examples in {name}"
    assert onnx_relu.get_num_threads() == before  # examples leave the process as they found it
