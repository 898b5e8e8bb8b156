"""``onnx_relu.backend``: the onnx-relu ONNX backend under the name ONNX users look for first
(as ``onnx_tf.backend``). It is :mod:`onnx_relu.onnx.backend`, re-exported; importing it imports
onnx (without it: :class:`~onnx_relu.errors.MissingExtraError`, naming the extra to install).

Examples
--------
>>> from onnx_relu import backend
>>> from onnx_relu.onnx import backend as onnx_layer_backend
>>> backend.OnnxReluBackend is onnx_layer_backend.OnnxReluBackend, backend.supports_device("CPU")
(True, True)
"""

from ._extras import extra_needed

with extra_needed("onnx_relu.backend"):
    from .onnx import backend as _onnx_layer_backend
    from .onnx.backend import *  # noqa: F403 - the re-export is the point of this module

__all__ = _onnx_layer_backend.__all__
