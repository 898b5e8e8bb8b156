"""onnxruntime runs every Relu type natively: the onnx-relu custom-op library.

onnx-relu builds and installs a small shared library with this package
(``onnx_relu/lib/libonnx_relu_ort.so`` on Linux) holding a ``Relu`` for all the Relu types --
float16, float, double, bfloat16, int8, int16, int32, int64 -- computed by onnx-relu's kernel
(the same element rule and streaming stores as :func:`onnx_relu.relu`) on the session's own
intra-op thread pool. It registers two domains in an onnxruntime session:

- ``onnx_relu`` (opset 1): a node of this domain is always the library's Relu. onnxruntime
  fuses it with nothing, so its values are onnx-relu's (-0.0 -> +0.0, NaN bits kept).
- the standard domain, from opset 14 on (Relu-14: every type), where it takes the place
  of onnxruntime's own Relu -- except where onnxruntime fuses a Relu into the Conv or Gemm
  before it (then onnxruntime computes it). Below opset 14 ONNX's own Relu schemas stay in
  force, so onnxruntime itself refuses a type the Relu version does not allow (no int8 before
  opset 14, no bfloat16 before 13), also for a C program that loads the library by hand.

:func:`ort_session` chooses, per model, which Relu nodes are the library's, and points just
those at the ``onnx_relu`` domain (in memory; the model is otherwise untouched):

- ``exact=False`` (the default): only the Relu nodes onnxruntime's CPU provider cannot run
  (bfloat16, int16, int64, Relu-1 at opsets 1-5; as :func:`onnx_relu.onnx.probe.probe_onnxruntime`
  finds). Every other Relu is onnxruntime's own, with its Conv+Relu and Gemm+Relu fusions and
  NCHWc layouts: a model that stock onnxruntime runs gives stock onnxruntime's values at stock
  speed (its Relu keeps -0.0 as -0.0, and its float16 Relu, run in float, quiets signalling
  NaNs; NaN otherwise kept), and the library adds the nodes stock onnxruntime refuses, with
  onnx-relu's values.
- ``exact=True``: every Relu is the library's: onnx-relu's values everywhere (+0.0 for -0.0,
  NaN bits returned unchanged, signalling NaNs included), at the price of the fusions (a CNN
  measured 1.4-1.7x stock's time; see BENCHMARKS.md).

Why the default is ``exact=False``: loading the library should cost nothing on the models
onnxruntime already runs, and change none of their results; the sign of a zero that a Relu
makes is rarely what a deployment pays 1.4x for. ``exact=True`` is one argument away.

- :func:`ort_library_path`: where the library is (needs neither onnx nor onnxruntime).
- :func:`ort_session_options`: an ``onnxruntime.SessionOptions`` with the library registered
  (both domains: for a model run as it is; needs onnxruntime, not onnx).
- :func:`ort_session`: an ``onnxruntime.InferenceSession`` with the library, for a model whose
  Relu nodes :func:`onnx_relu.check_model` finds valid.
- :func:`ort_run`: ``session.run`` for every type a user can hand it, bfloat16 included.

Threads: the library runs the parts of a large Relu on the session's intra-op pool
(``SessionOptions.intra_op_num_threads``): a session with one thread runs the library's Relu
on one thread too, and the library keeps no threads of its own.
:func:`set_ort_library_num_threads` switches it to a pool of its own of a fixed size instead.

The library asks onnxruntime for API version 17 and so needs onnxruntime >= 1.17; an older one
refuses to register it with an error that says so.

Examples
--------
>>> import ml_dtypes, numpy as np
>>> from onnx import TensorProto, helper
>>> graph = helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
...     [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])],
...     [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
>>> session = ort_session(model)          # onnxruntime alone has no bfloat16 Relu
>>> x = np.array([-1.5, -0.0, 2.0, 3.5], dtype=ml_dtypes.bfloat16)
>>> [y] = ort_run(session, None, {"x": x})
>>> str(y.dtype), y.astype(np.float32).tolist()
('bfloat16', [0.0, 0.0, 2.0, 3.5])
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnxruntime

__all__ = [
    "ORT_LIBRARY_DOMAIN",
    "ort_library_path",
    "ort_session_options",
    "ort_session",
    "ort_run",
    "ort_library_num_threads",
    "set_ort_library_num_threads",
    "set_ort_library_nt_threshold",
    "ORT_LIBRARY_API_VERSION",
]

#: The onnxruntime C API version the library asks for (onnxruntime >= 1.17 provides it).
ORT_LIBRARY_API_VERSION = 17

#: The library's own op domain: a Relu node of this domain (opset 1) is always the library's.
ORT_LIBRARY_DOMAIN = "onnx_relu"

#: Session config entry the library reads when it registers: which domains it adds
#: ("standard+onnx_relu", the default, or "onnx_relu").
_DOMAINS_KEY = "onnx_relu.ort_library.domains"
#: onnxruntime's session config entry for the folder of external data of a model given as bytes.
_EXTERNAL_FOLDER_KEY = "session.model_external_initializers_file_folder_path"

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


def ort_library_num_threads() -> int | None:
    """Threads of the library's own pool for one large Relu, or None (the default): the
    session's intra-op pool runs it (``SessionOptions.intra_op_num_threads`` threads).

    Examples
    --------
    >>> ort_library_num_threads() is None
    True
    """
    count = int(_library().onnx_relu_ort_get_num_threads())
    return None if count == 0 else count


def set_ort_library_num_threads(n: int | None) -> int | None:
    """Run the library's Relu on a pool of its own of ``n`` threads (1..256) in every session,
    or on each session's intra-op pool (``None``, the default); returns the previous setting.
    Raises :class:`onnx_relu.ThreadCountError` outside that range.

    Examples
    --------
    >>> previous = set_ort_library_num_threads(2)
    >>> ort_library_num_threads()
    2
    >>> set_ort_library_num_threads(previous)
    2
    """
    from ..tuning import check_num_threads

    count = 0 if n is None else check_num_threads(n)
    previous = int(_library().onnx_relu_ort_set_num_threads(count))
    return None if previous == 0 else previous


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


def ort_session_options(
    sess_options: onnxruntime.SessionOptions | None = None, *, standard_domain: bool = True
) -> Any:
    """``sess_options`` (or new ``onnxruntime.SessionOptions``) with the library registered.

    Registering the same options twice is harmless (the second call registers nothing), also
    when the library was registered on them by ``sess_options.register_custom_ops_library(
    ort_library_path())``. The library's Relu runs on the session's intra-op threads.

    Parameters
    ----------
    sess_options : onnxruntime.SessionOptions, optional
        Options to register the library on (modified and returned).
    standard_domain : bool
        True (default): the library also takes the standard Relu from opset 14 on (for a model
        run as it is, e.g. with bfloat16 Relu nodes). False: only its ``onnx_relu`` domain, the
        standard Relu staying onnxruntime's (what :func:`ort_session` uses). Options registered
        earlier keep the domains they were registered with.

    Returns
    -------
    onnxruntime.SessionOptions

    Examples
    --------
    >>> options = ort_session_options()
    >>> options.get_session_config_entry("onnx_relu.ort_library") == ort_library_path()
    True
    """
    from .._extras import extra_needed

    with extra_needed("onnx_relu.ort_session_options"):
        import onnxruntime

    options = onnxruntime.SessionOptions() if sess_options is None else sess_options
    if not isinstance(options, onnxruntime.SessionOptions):
        raise TypeError(
            f"sess_options must be an onnxruntime.SessionOptions or None, got"
            f" {type(options).__name__}"
        )
    path = ort_library_path()
    _library()
    if _config_entry(options, _REGISTERED_KEY) != path:
        if _config_entry(options, _LIBRARY_MARK_KEY) is None:
            if _config_entry(options, _DOMAINS_KEY) is None:
                options.add_session_config_entry(
                    _DOMAINS_KEY, "standard+onnx_relu" if standard_domain else "onnx_relu"
                )
            options.register_custom_ops_library(path)  # the library marks the options
        if _config_entry(options, _REGISTERED_KEY) is None:
            options.add_session_config_entry(_REGISTERED_KEY, path)
    return options


def _config_entry(options: Any, key: str) -> str | None:
    """A session config entry of ``options``, None if it was never set."""
    try:
        return str(options.get_session_config_entry(key))
    except RuntimeError:  # onnxruntime raises for a key that was never set
        return None


def _checked_sites(model: Any) -> Any:
    """The model's Relu nodes with their types (a TypedModel); raises if one breaks its
    version's rules: the judge's findings (check_model's), all but one kind."""
    from ._rules import refusal_class
    from .check import _judged

    typed, findings = _judged(model, weights=False)
    blocking = [
        finding
        for finding in findings
        # An unknown type at opset >= 14 is safe: the library's Relu runs each of the Relu-14
        # types, and onnxruntime refuses any other.
        if not (finding.kind == "type-unknown" and finding.opset >= 14)
    ]
    if not blocking:
        return typed
    raise refusal_class([finding.kind for finding in blocking])(
        "onnx_relu.ort_session refuses the model: the onnx-relu library's Relu would run any of"
        " the eight types at any opset, so each node's Relu version is checked first, and"
        " check_model found:\n" + "\n".join(f"  {finding}" for finding in blocking)
    )


def _onnxruntime_runs(input_type: str | None, opset: int) -> bool:
    """Whether onnxruntime's CPU provider runs a Relu of this type at this opset by itself."""
    if input_type is None:
        return False  # unknown: the library's Relu runs every Relu-14 type
    from .probe import onnxruntime_loads, stock_has_kernel

    return stock_has_kernel(input_type, opset) or onnxruntime_loads(input_type, opset)


def _library_nodes(typed: Any, exact: bool) -> Any:
    """A copy of the model (as read: without its large tensors' values where it was read so)
    with the chosen Relu nodes in the library's domain, or None when no node is chosen (the
    model can go to onnxruntime as it was given)."""
    import onnx

    from ._graph import graph_at

    runs: dict[tuple[str | None, int], bool] = {}  # one answer per (type, opset)
    chosen = []
    for site in typed.sites:
        key = (site.input_type, site.opset or typed.opset)
        if key not in runs:
            runs[key] = not exact and _onnxruntime_runs(*key)
        if not runs[key]:
            chosen.append(site)
    if not chosen:
        return None
    model = onnx.ModelProto()
    given = None if typed.loaded is None else typed.loaded.given
    # a ModelProto given: its copy, weights and all (the model judged may lack them)
    model.CopyFrom(given if isinstance(given, onnx.ModelProto) else typed.model)
    functions = set()
    for site in chosen:
        root = model.graph if site.function is None else model.functions[site.function]
        graph = graph_at(root, site.path)
        graph.node[site.index].domain = ORT_LIBRARY_DOMAIN
        if site.function is not None:
            functions.add(site.function)
    for holder in [model, *(model.functions[i] for i in sorted(functions))]:
        if not any(entry.domain == ORT_LIBRARY_DOMAIN for entry in holder.opset_import):
            holder.opset_import.append(onnx.helper.make_opsetid(ORT_LIBRARY_DOMAIN, 1))
    if functions:
        model = _inlined(model, functions, typed.structure)
    return model


def _inlined(model: Any, functions: set[int], structure: Any) -> Any:
    """``model`` with the local functions holding rerouted nodes inlined where they are called,
    and the functions calling them: onnxruntime infers a local function's body without the
    library's schemas, so a function whose output comes from the library's Relu fails its
    type inference inside an If branch ("Graph attribute inferencing failed: ... type
    inference failed"). ``model`` as it is where onnx's inliner cannot inline them."""
    import onnx.inliner

    chosen = set(functions)
    if structure is not None:
        changed = True
        while changed:  # every function that calls one of them, directly or not
            changed = False
            for position, called in structure.callees.items():
                if position not in chosen and chosen.intersection(called):
                    chosen.add(position)
                    changed = True
    ids = sorted({(model.functions[i].domain, model.functions[i].name) for i in chosen})
    try:
        return onnx.inliner.inline_selected_functions(model, ids)
    except Exception:  # noqa: BLE001 - onnx's C++ inliner raises several kinds
        return model


def _refuse_library_domain(typed: Any) -> None:
    """A model that names the library's domain itself (a local function, a node, an opset
    import) would have its meaning changed by the library's registration: refused."""
    from ..errors import InvalidModelError
    from ._ir import domains_used

    structure = typed.structure
    domains = structure.domains if structure is not None else domains_used(typed.model)
    if ORT_LIBRARY_DOMAIN in domains:
        raise InvalidModelError(
            f"onnx_relu.ort_session refuses the model: it uses the operator domain"
            f" {ORT_LIBRARY_DOMAIN!r} itself (in a node, a local function or an opset import),"
            " which is the onnx-relu library's own; registering the library would change what"
            " those nodes mean. Rename that domain in the model, or run it with"
            " onnxruntime.InferenceSession"
        )


def _model_bytes(typed: Any, changed: Any) -> bytes:
    """The serialized ``changed`` model with every tensor's values: spliced from the bytes as
    read where the model was read without them (the weights copied once, never parsed)."""
    loaded = typed.loaded
    if loaded is not None and loaded.light is not None:
        from ._ir import spliced_model_bytes

        return spliced_model_bytes(changed, loaded.buffer, loaded.light)
    data: bytes = changed.SerializeToString()
    return data


def _uses_external_data(model: Any) -> bool:
    return any(tensor.data_location == 1 for tensor in model.graph.initializer)


def _written_beside(data: bytes, folder: str) -> str | None:
    """``data`` written to a new hidden file in ``folder``: its path, or None where the folder
    takes no new file (read-only, full, gone)."""
    import tempfile

    try:
        handle = tempfile.NamedTemporaryFile(
            dir=folder, prefix=".onnx-relu-", suffix=".onnx", delete=False
        )
    except OSError:
        return None
    try:
        with handle:
            handle.write(data)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        return None
    return handle.name


def ort_session(
    model: Any, sess_options: Any = None, providers: Any = None, *, exact: bool = False
) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``model`` with the onnx-relu library registered.

    ``model`` is checked first with :func:`onnx_relu.check_model` (read without its weights'
    values or its external data): a model whose Relu nodes break their version's rules is
    refused before any session exists, and so is one that uses the ``onnx_relu`` domain itself.
    Then the chosen Relu nodes are pointed at the library's ``onnx_relu`` domain, in memory
    (module docstring): with ``exact=False`` those onnxruntime cannot run, with ``exact=True``
    all of them (the local functions holding them inlined where they are called). A model that
    needs no such change goes to onnxruntime as given (the path, the bytes, the ModelProto
    serialized); one that does goes with its weights spliced back unparsed: a large file's as
    a temporary file, else as bytes; one with external data as a temporary file in the model's
    own folder, where onnxruntime finds that data (a folder that takes no file: as bytes, the
    folder named on ``sess_options`` for that one session, then set back).
    A model stamped with an IR version newer than the installed onnxruntime reads is given to it
    at the newest one it reads, when the model's opsets exist there
    (:func:`onnx_relu.onnx.ort.new_session`).

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes
        The model (not modified), a path to it (external data beside it is found), or its bytes.
    sess_options : onnxruntime.SessionOptions, optional
        Options for the session; the library is registered on them (see
        :func:`ort_session_options`; new options register only its ``onnx_relu`` domain).
    providers : list, optional
        onnxruntime's execution providers; default ``["CPUExecutionProvider"]``. The library's
        Relu kernels are CPU kernels.
    exact : bool
        False (default): the library runs only the Relu nodes onnxruntime cannot run;
        onnxruntime's own Relu, fused where it fuses, runs the rest (-0.0 kept as -0.0, a
        float16 signalling NaN quieted). True: every Relu is the library's (+0.0 for -0.0, NaN
        bits kept), unfused.

    Returns
    -------
    onnxruntime.InferenceSession
        Run it with :func:`ort_run` to hand it bfloat16 arrays.

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
    onnxruntime's own exceptions
        (``onnxruntime.capi.onnxruntime_pybind11_state.Fail``, ``InvalidGraph``,
        ``InvalidArgument``, ...) pass through unchanged, as from ``InferenceSession``, for a
        model onnxruntime cannot load for a reason that is not Relu's (a dangling input, an
        unknown operator).

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
    from .._extras import extra_needed

    if not isinstance(exact, bool):
        raise TypeError(f"exact must be True or False, got {exact!r}")
    is_path = isinstance(model, (str, os.PathLike))
    # onnx first (judging the Relu nodes), then onnxruntime: a missing one is named as needed here
    with extra_needed("onnx_relu.ort_session"):
        typed = _checked_sites(os.fspath(model) if is_path else model)
        import onnxruntime

        from .ort import new_session
    _refuse_library_domain(typed)
    rewritten = _library_nodes(typed, exact)
    if sess_options is None:
        sess_options = onnxruntime.SessionOptions()
    options = ort_session_options(sess_options, standard_domain=False)
    if rewritten is None:  # nothing to reroute: what the caller gave, unchanged
        given = typed.loaded.given if typed.loaded is not None else model
        source: Any = (
            given
            if isinstance(given, (str, bytes))
            else bytes(given)
            if isinstance(given, (bytearray, memoryview))
            else given.SerializeToString()
        )
        del typed  # the reading (an object per node) freed before onnxruntime's peak
        return new_session(source, options, providers)
    from ._ir import FileBytes

    loaded = typed.loaded
    if (
        loaded is not None
        and isinstance(loaded.buffer, FileBytes)
        and loaded.light is not None
        and not _uses_external_data(typed.model)
    ):
        # Large weights in the file: the changed model goes to onnxruntime as a file of its
        # own, the weights copied from file to file, never held here (as bytes they were held
        # twice more: +57 MB for a model of 45 MiB).
        import tempfile

        from ._ir import write_spliced_model

        with tempfile.TemporaryDirectory(prefix="onnx-relu-") as folder:
            path = os.path.join(folder, "model.onnx")
            write_spliced_model(rewritten, loaded.buffer, loaded.light, path)
            return new_session(path, options, providers)
    source = _model_bytes(typed, rewritten)
    if not (is_path and _uses_external_data(typed.model)) or _config_entry(
        options, _EXTERNAL_FOLDER_KEY
    ):
        return new_session(source, options, providers)
    # The bytes keep the file's external-data references, relative to its folder: written
    # there as a file of their own, onnxruntime finds the data as it does for the model itself,
    # and the caller's options stay as they were.
    folder = os.path.dirname(os.path.abspath(os.fspath(model)))
    beside = _written_beside(source, folder)
    if beside is not None:
        try:
            return new_session(beside, options, providers)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(beside)
    # A folder that takes no file: the folder named on the options for that one session (an
    # empty folder, onnxruntime's default, set back after it; onnxruntime logs a warning that
    # the entry was overwritten), so that the next model opened with them reads its own data.
    options.add_session_config_entry(_EXTERNAL_FOLDER_KEY, folder)
    try:
        return new_session(source, options, providers)
    finally:
        options.add_session_config_entry(_EXTERNAL_FOLDER_KEY, "")


def ort_run(session: Any, output_names: Any, input_feed: Any, run_options: Any = None) -> list[Any]:
    """``session.run(output_names, input_feed, run_options)`` for every Relu type, bfloat16 too.

    onnxruntime's own ``InferenceSession.run`` refuses ``ml_dtypes.bfloat16`` arrays ("Numpy_type
    256 can't be converted to MLDataType") and cannot return them; this runs through an io
    binding instead (:func:`onnx_relu.onnx.ort.run_session`), so bfloat16 arrays go in and come
    out bit for bit. Arguments and result are those of ``session.run``: ``output_names`` None
    for every output, else a list of names.

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Relu", ["x"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2])])
    >>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    >>> session = ort_session(model)
    >>> ort_run(session, ["y"], {"x": np.array([-1, 2], ml_dtypes.bfloat16)})[0].tolist()
    [0.0, 2.0]
    """
    from .._extras import extra_needed

    with extra_needed("onnx_relu.ort_run"):
        from .ort import run_session

    return run_session(session, input_feed, output_names, run_options)
