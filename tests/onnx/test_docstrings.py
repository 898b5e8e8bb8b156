"""The docstring examples of the ONNX integration modules run and show what they print."""

from __future__ import annotations

import doctest

import pytest

from tests.support.optional import EXAMPLES_NEED, import_or_skip, skip_unless_installed

MODULES = [
    "onnx_relu.backend",
    "onnx_relu.onnx",
    "onnx_relu.onnx._models",
    "onnx_relu.onnx._rules",
    "onnx_relu.onnx.backend",
    "onnx_relu.onnx.check",
    "onnx_relu.onnx.legalization",
    "onnx_relu.onnx.probe",
    "onnx_relu.onnx.ort",
    "onnx_relu.onnx.reference",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    skip_unless_installed(f"the examples of {name}", *EXAMPLES_NEED.get(name, ()))
    module = import_or_skip(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
