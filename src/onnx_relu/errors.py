"""Exceptions raised by onnx-relu.

Each subclasses the built-in exception a caller would catch anyway, so ``except TypeError``
keeps working; catch :class:`OnnxReluError` to handle every error of this package.
"""

from __future__ import annotations

__all__ = [
    "OnnxReluError",
    "UnsupportedTypeError",
    "InvalidTensorFileError",
    "UnsupportedFileFormatError",
]


class OnnxReluError(Exception):
    """Base class of every error onnx-relu raises on purpose."""


class UnsupportedTypeError(OnnxReluError, TypeError):
    """An input type the selected Relu version does not allow (or no version allows)."""


class InvalidTensorFileError(OnnxReluError, ValueError):
    """A tensor file that cannot be read: empty, truncated, corrupt, or not the format its
    suffix says (the message names the file and what is wrong with it)."""


class UnsupportedFileFormatError(OnnxReluError, ValueError):
    """A file name whose suffix names no tensor format onnx-relu reads or writes."""
