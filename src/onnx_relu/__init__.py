"""onnx-relu: the ONNX Relu operator, complete, exact and fast, for NumPy and ONNX users.

``relu(x, out=None, *, opset=None)`` computes ``y = max(0, x)`` for every type of every Relu
version (1, 6, 13, 14) with one exactly defined result: ``y = x`` where ``x > 0``, NaN bits
unchanged, +0 everywhere else. ``relu_ufunc`` is the underlying NumPy ufunc.
"""

from ._api import check_dtype, relu, relu_ufunc
from ._threads import _configure_from_environment, get_num_threads, num_threads, set_num_threads
from .errors import (
    InputTypeMismatchError,
    InvalidModelError,
    InvalidOpsetError,
    InvalidOutputError,
    InvalidTensorFileError,
    LegalizationError,
    ModelInputError,
    OnnxReluError,
    ThreadCountError,
    UnsupportedFileFormatError,
    UnsupportedOperatorError,
    UnsupportedTypeError,
)
from .tensor_files import read_tensor, write_tensor
from .versions import LATEST_VERSION, RELU_VERSIONS, ReluVersion, relu_version

__version__ = "0.1.0"

_configure_from_environment()
del _configure_from_environment

__all__ = [
    "relu",
    "relu_ufunc",
    "check_dtype",
    "get_num_threads",
    "set_num_threads",
    "num_threads",
    "relu_version",
    "RELU_VERSIONS",
    "LATEST_VERSION",
    "ReluVersion",
    "OnnxReluError",
    "UnsupportedTypeError",
    "InvalidTensorFileError",
    "UnsupportedFileFormatError",
    "read_tensor",
    "write_tensor",
    "InvalidOpsetError",
    "InvalidOutputError",
    "ThreadCountError",
    "InvalidModelError",
    "UnsupportedOperatorError",
    "ModelInputError",
    "InputTypeMismatchError",
    "LegalizationError",
    "__version__",
]


# ONNX integration, imported on first use so that ``import onnx_relu`` never imports onnx:
# name -> module (relative to this package) that defines it.
_LAZY_ONNX_EXPORTS = {
    "check_model": ".model_check",
    "Finding": ".model_check",
    # (not ".legalize": importing a submodule named like the function would make
    # onnx_relu.legalize the module, not the function)
    "legalize": ".legalization",
}


def __getattr__(name: str):
    module_name = _LAZY_ONNX_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value
