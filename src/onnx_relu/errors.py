"""Exceptions raised by onnx-relu.

Each subclasses the built-in exception a caller would catch anyway, so ``except TypeError`` and
``except ValueError`` keep working; catch :class:`OnnxReluError` to handle every error this
package raises on purpose. Errors that numpy raises while converting an input (a ragged list, an
array too large to allocate) reach the caller unchanged. The full table of bad inputs, with the
error each one gets, is in docs/reliability.md.

Where one kind of mistake used to surface as either of two built-ins (an opset of the wrong type
is a ``TypeError``, one below 1 a ``ValueError``), its class subclasses both, as
``numpy.exceptions.AxisError`` does, so no existing ``except`` clause stops matching.
"""

from __future__ import annotations

# MissingExtraError is defined with the one rule that makes it, in ._extras (which imports
# nothing of the package), so that neither module imports the other back; it is documented and
# caught as onnx_relu.errors.MissingExtraError, and loaded on first use (__getattr__ below):
# ``import onnx_relu`` stays as light as the other error classes.
# (not typing.TYPE_CHECKING: importing typing costs more than this module)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._extras import MissingExtraError

__all__ = [
    "OnnxReluError",
    "UnsupportedTypeError",
    "InvalidModelError",
    "UnsupportedOperatorError",
    "ModelInputError",
    "InputTypeMismatchError",
    "LegalizationError",
    "InvalidTensorFileError",
    "UnsupportedFileFormatError",
    "UnsupportedPathError",
    "FileArgumentError",
    "InvalidOpsetError",
    "InvalidOutputError",
    "ThreadCountError",
    "MissingExtraError",
]


class OnnxReluError(Exception):
    """Base class of every error onnx-relu raises on purpose."""


class UnsupportedTypeError(OnnxReluError, TypeError):
    """An input type the selected Relu version does not allow (or no version allows)."""


# --- ONNX integration (backend, check_model, legalize) ---------------------------------------


class InvalidModelError(OnnxReluError, ValueError):
    """A model that cannot be read or is not a usable ONNX model (corrupt bytes, no opset, ...)."""


class UnsupportedOperatorError(OnnxReluError, NotImplementedError):
    """A model holds an operator other than ai.onnx Relu, which the onnx-relu backend cannot run."""


class ModelInputError(OnnxReluError, ValueError):
    """Inputs fed to a model that do not match its graph inputs (missing, unknown, wrong shape)."""


class InputTypeMismatchError(ModelInputError, TypeError):
    """An input fed with a type other than the one the graph input declares (never cast)."""


class LegalizationError(OnnxReluError, ValueError):
    """A Relu node that ``legalize`` cannot rewrite into anything the target runtime runs."""


# --- tensor files and the command line ---------------------------------------------------------


class InvalidTensorFileError(OnnxReluError, ValueError):
    """A tensor file that cannot be read: empty, truncated, corrupt, or not the format its
    suffix says (the message names the file and what is wrong with it)."""


class UnsupportedFileFormatError(OnnxReluError, ValueError):
    """A file name whose suffix names no tensor format onnx-relu reads or writes."""


class UnsupportedPathError(OnnxReluError, ValueError):
    """A path whose kind the operation cannot use: a device or a socket, a FIFO that no writer
    (or reader) opens, closed standard input or output, or a FIFO or device as an output that
    would have to be replaced by a regular file."""


class FileArgumentError(OnnxReluError, ValueError):
    """Arguments of a file job that cannot be used as given, found before anything is read or
    written: options that do not go together (in place with an output, no output), an input
    that is missing or unreadable, an output in a folder that is missing or not writable (the
    message names the argument and what is wrong with it)."""


class InvalidOpsetError(OnnxReluError, ValueError, TypeError):
    """An ai.onnx opset that is not an integer >= 1 (a bool, a float, a string, 0, -1)."""


class InvalidOutputError(OnnxReluError, ValueError, TypeError):
    """An ``out`` argument that cannot receive the result: not a numpy array, of another shape,
    read-only, or with elements that share memory (a zero stride)."""


class ThreadCountError(OnnxReluError, ValueError):
    """A thread count outside 1..256 given to :func:`onnx_relu.set_num_threads`."""


def __getattr__(name: str) -> object:
    # (not _lazy.lazy_attribute: the import system asks this module for __path__ when the
    # package imports its classes, and that must not import anything)
    if name != "MissingExtraError":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._extras import MissingExtraError

    globals()[name] = MissingExtraError
    return MissingExtraError


def __dir__() -> list[str]:
    return sorted({*globals(), "MissingExtraError"})
