"""onnx-relu: the ONNX Relu operator, complete, exact and fast, for NumPy and ONNX users.

``relu(x, out=None, *, opset=None)`` computes ``y = max(0, x)`` for every type of every Relu
version (1, 6, 13, 14) with one exactly defined result: ``y = x`` where ``x > 0``, NaN bits
unchanged, +0 everywhere else. ``relu_ufunc`` is the underlying NumPy ufunc.

The package is in layers, each importing only what its optional extra provides: this core
(numpy and ml_dtypes only: :mod:`onnx_relu.dtypes`, :mod:`onnx_relu.versions`,
:mod:`onnx_relu.errors`, :mod:`onnx_relu.tuning`), :mod:`onnx_relu.onnx` (onnx, and onnxruntime
where named), :mod:`onnx_relu.files` (tensor files; dask and zarr for Zarr stores),
:mod:`onnx_relu.cli` (the ``onnx-relu`` command) and :mod:`onnx_relu.bench`. ``check_model``,
``Finding``, ``legalize``, ``read_tensor`` and ``write_tensor`` are exported here but imported
on first use, so ``import onnx_relu`` imports neither onnx nor the file layer.

Examples
--------
>>> import numpy as np
>>> import onnx_relu
>>> onnx_relu.relu(np.array([-1.0, -0.0, 2.0]))
array([0., 0., 2.])
>>> onnx_relu.relu_version(13), onnx_relu.LATEST_VERSION.name
(13, 'Relu-14')
"""

import os as _os
import signal as _signal
import sys as _sys


def _interrupted_while_the_command_starts(_signum: int, _frame: object) -> None:
    # Nothing has been written yet; the command's own handling is not set up yet.
    _sys.stderr.write("onnx-relu: interrupted by SIGINT during start-up\n")
    _sys.stderr.flush()
    _os._exit(128 + _signal.SIGINT)


# When this process is the onnx-relu command (the console script, or python -m onnx_relu),
# Ctrl-C while the package and numpy are imported (most of the command's start-up) ends it with
# one line and status 130, as anywhere later, instead of a KeyboardInterrupt traceback: only
# this module runs before the command's code can. onnx_relu.cli.main puts Python's own handler
# back first thing. Imported by any other program, the package touches no signal.
_argv = getattr(_sys, "argv", None) or [""]  # (an embedding program may set no sys.argv)
if _os.path.basename(_argv[0]) == "onnx-relu" or getattr(_sys, "orig_argv", [])[1:3] == [
    "-m",
    "onnx_relu",
]:
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _interrupted_while_the_command_starts)
del _argv

from ._api import check_dtype, relu, relu_ufunc  # noqa: E402 - after the start-up handler
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
from .tuning import configure_from_environment as _configure_from_environment
from .tuning import get_num_threads, num_threads, set_num_threads
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


# The ONNX layer and the tensor files, imported on first use so that ``import onnx_relu``
# never imports onnx: name -> the module (relative to this package) that defines it.
_LAZY_EXPORTS = {
    "check_model": ".onnx.check",
    "Finding": ".onnx.check",
    # (from a module not named like the function: importing a submodule named "legalize"
    # would make its package's attribute "legalize" the module, not the function)
    "legalize": ".onnx.legalization",
    "read_tensor": ".files.tensors",
    "write_tensor": ".files.tensors",
}


def __getattr__(name: str):
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value
