"""The docstring examples of the ONNX integration modules run and show what they print."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["onnx_relu.backend", "onnx_relu.reference", "onnx_relu.model_check",
           "onnx_relu.legalization"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
