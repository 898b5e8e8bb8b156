"""onnxruntime runs every Relu type natively: the onnx-relu custom-op library.

onnx-relu builds and installs a small shared library with this package
(``onnx_relu/lib/libonnx_relu_ort.so`` on Linux) that registers the standard-domain (ai.onnx)
``Relu`` for all eight Relu types -- float16, float, double, bfloat16, int8, int16, int32,
int64 -- computed by onnx-relu's kernel (the same element rule, streaming stores and thread pool as
:func:`onnx_relu.relu`). Loaded into an onnxruntime session, it replaces onnxruntime's own Relu
at every opset: bfloat16, int16 and int64 Relu nodes run, float16 runs without casts, and every
Relu gives onnx-relu's exact values (-0.0 -> +0.0, NaN bits kept), without changing the model.

- :func:`ort_library_path`: where the library is (needs neither onnx nor onnxruntime).
- :func:`ort_session_options`: an ``onnxruntime.SessionOptions`` with the library registered.
- :func:`ort_session`: an ``onnxruntime.InferenceSession`` with the library, for a model whose
  Relu nodes :func:`onnx_relu.check_model` finds valid. The library's Relu schema accepts all
  eight types at every opset (onnxruntime merges the registered types into one schema), so the
  version's type rules (e.g. no int8 before opset 14) are checked here, before the session.

The library asks onnxruntime for API version 16 and so needs onnxruntime >= 1.16; an older one
refuses to register it with an error that says so. The library's kernel is its own copy, with
its own thread count: :func:`ort_session_options` sets it to :func:`onnx_relu.get_num_threads`
each time it registers the library (:func:`set_ort_library_num_threads` changes it later).

Examples
--------
>>> import ml_dtypes, numpy as np
>>> from onnx import TensorProto, helper
>>> from onnx_relu.onnx.ort import run_session
>>> graph = helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
...     [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])],
...     [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
>>> session = ort_session(model)          # onnxruntime alone has no bfloat16 Relu
>>> x = np.array([-1.5, -0.0, 2.0, 3.5], dtype=ml_dtypes.bfloat16)
>>> [y] = run_session(session, {"x": x})
>>> str(y.dtype), y.astype(np.float32).tolist()
('bfloat16', [0.0, 0.0, 2.0, 3.5])
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnxruntime

__all__ = [
    "ort_library_path",
    "ort_session_options",
    "ort_session",
    "ort_library_num_threads",
    "set_ort_library_num_threads",
    "set_ort_library_nt_threshold",
    "ORT_LIBRARY_API_VERSION",
]

#: The onnxruntime C API version the library asks for (onnxruntime >= 1.16 provides it).
ORT_LIBRARY_API_VERSION = 16

#: Session config entry that ort_session_options sets to the library's path.
_REGISTERED_KEY = "onnx_relu.ort_library"
#: Session config entry the library itself sets on options it has registered on, by whatever
#: path (``SessionOptions.register_custom_ops_library`` included): it registers nothing twice.
_LIBRARY_MARK_KEY = "onnx_relu.ort_library.registered"

#: The largest streaming-store threshold the library's kernel holds: its size type's maximum.
_MAX_NT_BYTES = min(
    2 ** (8 * ctypes.sizeof(ctypes.c_ssize_t) - 1) - 1,
    2 ** (8 * ctypes.sizeof(ctypes.c_longlong) - 1) - 1,
)

_lock = threading.Lock()
_handle: ctypes.CDLL | None = None


def ort_library_path() -> str:
    """The absolute path of the onnx-relu custom-op library for onnxruntime.

    Pass it to ``onnxruntime.SessionOptions.register_custom_ops_library`` (or use
    :func:`ort_session_options`, which also sets the library's thread count).

    Raises
    ------
    FileNotFoundError
        if the library is not installed beside the package (a build that did not make it).

    Examples
    --------
    >>> import os
    >>> os.path.basename(ort_library_path())
    'libonnx_relu_ort.so'
    """
    package_folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(package_folder, "lib", "libonnx_relu_ort.so")  # built for Linux only
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"the onnx-relu custom-op library for onnxruntime is not installed: {path!r} is"
            " missing (reinstall onnx-relu from a build that compiles it)"
        )
    return path


def _library() -> ctypes.CDLL:
    """The library loaded in this process: the same instance onnxruntime loads from that path."""
    global _handle
    with _lock:
        if _handle is None:
            handle = ctypes.CDLL(ort_library_path())
            handle.onnx_relu_ort_set_num_threads.argtypes = [ctypes.c_int]
            handle.onnx_relu_ort_set_num_threads.restype = ctypes.c_int
            handle.onnx_relu_ort_get_num_threads.argtypes = []
            handle.onnx_relu_ort_get_num_threads.restype = ctypes.c_int
            handle.onnx_relu_ort_set_nt_threshold.argtypes = [ctypes.c_longlong]
            handle.onnx_relu_ort_set_nt_threshold.restype = ctypes.c_longlong
            _handle = handle
        return _handle


def ort_library_num_threads() -> int:
    """Threads the library's kernel may use for one large Relu (its own setting).

    Examples
    --------
    >>> ort_library_num_threads() >= 1
    True
    """
    return int(_library().onnx_relu_ort_get_num_threads())


def set_ort_library_num_threads(n: int) -> int:
    """Set the library's thread count (1..256) for every session using it; returns the
    previous count. Raises :class:`onnx_relu.ThreadCountError` outside that range.

    Examples
    --------
    >>> previous = set_ort_library_num_threads(1)
    >>> ort_library_num_threads()
    1
    >>> _ = set_ort_library_num_threads(previous)
    """
    from ..tuning import check_num_threads

    return int(_library().onnx_relu_ort_set_num_threads(check_num_threads(n)))


def set_ort_library_nt_threshold(n_bytes: int | None) -> int:
    """Set the output size (bytes) from which the library's kernel writes with streaming
    stores (None: leave it); returns the previous size.

    The library's counterpart of ``set_kernel_tuning(nt_threshold=...)``
    (:func:`onnx_relu.tuning.set_kernel_tuning`), for its own copy of the kernel, process-wide,
    for every session using the library. The default comes from this machine's caches, as
    :func:`onnx_relu.tuning.kernel_tuning` reports it for the NumPy module; a program whose
    outputs are read back at once (they stay in the cache) may raise it, one whose outputs are
    not may lower it. 0 streams every call.

    Examples
    --------
    >>> previous = set_ort_library_nt_threshold(None)
    >>> set_ort_library_nt_threshold(previous) == previous
    True
    """
    if n_bytes is not None and (
        isinstance(n_bytes, bool)
        or not isinstance(n_bytes, int)
        or not 0 <= n_bytes <= _MAX_NT_BYTES
    ):
        raise ValueError(
            f"the threshold must be a size in bytes in 0..{_MAX_NT_BYTES} (2**63 - 1) or None,"
            f" got {n_bytes!r}"
        )
    return int(_library().onnx_relu_ort_set_nt_threshold(-1 if n_bytes is None else n_bytes))


def ort_session_options(sess_options: onnxruntime.SessionOptions | None = None) -> Any:
    """``sess_options`` (or new ``onnxruntime.SessionOptions``) with the library registered.

    Registering the same options twice is harmless (the second call registers nothing), also
    when the library was registered on them by ``sess_options.register_custom_ops_library(
    ort_library_path())``. The library's thread count is set to
    :func:`onnx_relu.get_num_threads`.

    Parameters
    ----------
    sess_options : onnxruntime.SessionOptions, optional
        Options to register the library on (modified and returned).

    Returns
    -------
    onnxruntime.SessionOptions

    Examples
    --------
    >>> options = ort_session_options()
    >>> options.get_session_config_entry("onnx_relu.ort_library") == ort_library_path()
    True
    """
    import onnxruntime

    from ..tuning import get_num_threads

    options = onnxruntime.SessionOptions() if sess_options is None else sess_options
    if not isinstance(options, onnxruntime.SessionOptions):
        raise TypeError(
            f"sess_options must be an onnxruntime.SessionOptions or None, got"
            f" {type(options).__name__}"
        )
    path = ort_library_path()
    library = _library()
    if _config_entry(options, _REGISTERED_KEY) != path:
        if _config_entry(options, _LIBRARY_MARK_KEY) is None:
            options.register_custom_ops_library(path)  # the library marks the options
        if _config_entry(options, _REGISTERED_KEY) is None:
            options.add_session_config_entry(_REGISTERED_KEY, path)
    library.onnx_relu_ort_set_num_threads(get_num_threads())
    return options


def _config_entry(options: Any, key: str) -> str | None:
    """A session config entry of ``options``, None if it was never set."""
    try:
        return str(options.get_session_config_entry(key))
    except RuntimeError:  # onnxruntime raises for a key that was never set
        return None


def _refuse_invalid_relus(model: Any) -> None:
    """Raise if a Relu node of ``model`` breaks its version's rules (the library would run it):
    the judge's findings (through check_model, which finds every Relu and its input type), all
    but one kind."""
    from ._rules import refusal_class
    from .check import check_model

    blocking = [
        finding
        for finding in check_model(model)
        # An unknown type at opset >= 14 is safe: the library's schema admits exactly the
        # Relu-14 types there, and onnxruntime refuses any other.
        if not (finding.kind == "type-unknown" and finding.opset >= 14)
    ]
    if not blocking:
        return
    raise refusal_class([finding.kind for finding in blocking])(
        "onnx_relu.ort_session refuses the model: the onnx-relu library's Relu would run any of"
        " the eight types at any opset, so each node's Relu version is checked first, and"
        " check_model found:\n" + "\n".join(f"  {finding}" for finding in blocking)
    )


def ort_session(model: Any, sess_options: Any = None, providers: Any = None) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``model`` with the onnx-relu library registered.

    ``model`` is checked first with :func:`onnx_relu.check_model`: a model whose Relu nodes
    break their version's rules is refused before any session exists.
    A model stamped with an IR version newer than the installed onnxruntime reads is given to it
    at the newest one it reads, when the model's opsets exist there
    (:func:`onnx_relu.onnx.ort.new_session`).

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes
        The model, a path to it (external data beside it is found), or its bytes.
    sess_options : onnxruntime.SessionOptions, optional
        Options for the session; the library is registered on them (see
        :func:`ort_session_options`).
    providers : list, optional
        onnxruntime's execution providers; default ``["CPUExecutionProvider"]``. The library's
        Relu kernels are CPU kernels.

    Returns
    -------
    onnxruntime.InferenceSession

    Raises
    ------
    onnx_relu.UnsupportedTypeError
        if a Relu node's input type is not allowed by the Relu version in force at the model's
        opset (the message names the node, the type, the version, the opset and the allowed
        types, as ``check_model`` does).
    onnx_relu.InvalidModelError
        for other Relu problems ``check_model`` reports (a bad attribute, a wrong number of
        inputs, a type that cannot be inferred before opset 14), and for bytes that are not a
        model.
    OSError
        if a model file cannot be read.

    Examples
    --------
    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.INT8, [2])])
    >>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    >>> ort_session(model)
    Traceback (most recent call last):
    ...
    onnx_relu.errors.UnsupportedTypeError: onnx_relu.ort_session refuses the model: ...
    """
    from ._models import load_model
    from .ort import new_session

    if isinstance(model, (str, os.PathLike)):
        _refuse_invalid_relus(model)
        source: Any = os.fspath(model)  # onnxruntime finds external data beside the file
    else:
        proto = load_model(model)
        _refuse_invalid_relus(proto)
        source = proto.SerializeToString()
    options = ort_session_options(sess_options)
    return new_session(source, options, providers)
