"""Exceptions raised by onnx-relu.

Each subclasses the built-in exception a caller would catch anyway, so ``except TypeError``
keeps working; catch :class:`OnnxReluError` to handle every error of this package.
"""

from __future__ import annotations

__all__ = ["OnnxReluError", "UnsupportedTypeError", "ThreadCountError"]


class OnnxReluError(Exception):
    """Base class of every error onnx-relu raises on purpose."""


class UnsupportedTypeError(OnnxReluError, TypeError):
    """An input type the selected Relu version does not allow (or no version allows)."""


class ThreadCountError(OnnxReluError, ValueError):
    """A thread count outside 1..256 given to :func:`onnx_relu.set_num_threads`."""
