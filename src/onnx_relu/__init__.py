"""onnx-relu: the ONNX Relu operator, complete, exact and fast, for NumPy and ONNX users.

``relu(x, out=None, *, opset=None)`` computes ``y = max(0, x)`` for every type of every Relu
version (1, 6, 13, 14) with one exactly defined result: ``y = x`` where ``x > 0``, NaN bits
unchanged, +0 everywhere else. ``relu_ufunc`` is the underlying NumPy ufunc.
"""

from ._api import check_dtype, relu, relu_ufunc
from ._threads import _configure_from_environment, get_num_threads, num_threads, set_num_threads
from .errors import OnnxReluError, ThreadCountError, UnsupportedTypeError
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
    "ThreadCountError",
    "__version__",
]
