"""Running a model in onnxruntime's CPU provider from numpy arrays, bfloat16 included: the one
onnxruntime session helper of onnx-relu (legalize, its probe, the tools and the benchmark use it).

onnxruntime's ``InferenceSession.run`` can neither take nor return ``ml_dtypes.bfloat16`` arrays
("Numpy_type 256 can't be converted to MLDataType"). Here every input and output goes through an
io binding: bfloat16 inputs are handed over as their uint16 bit patterns with the ONNX type
BFLOAT16, and bfloat16 outputs are copied out of onnxruntime's buffer bit for bit.

A model whose IR version is newer than the installed onnxruntime reads is retried once at the
newest IR version it does read, when the model's opsets exist there (:func:`new_session`): onnx
stamps every model it makes with its own newest IR version, so onnx 1.19+ beside onnxruntime 1.23
(the last for Python 3.10) would otherwise refuse every model ``helper.make_model`` makes.

This module imports onnxruntime (the ``ort`` extra); nothing else in onnx-relu
imports it before it is needed.

Examples
--------
>>> import ml_dtypes, numpy as np
>>> from onnx import TensorProto, helper
>>> graph = helper.make_graph(
...     [helper.make_node("Identity", ["x"], ["y"])], "g",
...     [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
...     [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
>>> [y] = run_model(model, {"x": np.array([-1.5, 0.0, 2.5], dtype=ml_dtypes.bfloat16)})
>>> str(y.dtype), y.astype(np.float32).tolist()
('bfloat16', [-1.5, 0.0, 2.5])
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._extras import extra_needed
from ..dtypes import RELU_TYPE_BY_NAME, is_bfloat16, native

with extra_needed():  # a missing onnxruntime raises the one MissingExtraError
    import onnxruntime

if TYPE_CHECKING:
    import onnx

__all__ = [
    "inference_session",
    "lowest_ir_version",
    "new_session",
    "ort_value",
    "run_session",
    "run_model",
]

_BFLOAT16 = RELU_TYPE_BY_NAME["bfloat16"]

# onnxruntime's refusal of a model's IR version (onnxruntime/core/graph/model.cc, the same words
# from 1.10 to 1.32): the only refusal new_session retries.
_IR_REFUSAL = re.compile(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)")


def new_session(
    model: onnx.ModelProto | bytes | str | os.PathLike[str],
    sess_options: onnxruntime.SessionOptions | None = None,
    providers: list[Any] | None = None,
) -> onnxruntime.InferenceSession:
    """``onnxruntime.InferenceSession(model, ...)``, at an IR version this onnxruntime reads.

    onnxruntime reads models up to the IR version of the onnx it was built with, while
    ``onnx.helper.make_model`` stamps every model with the installed onnx's newest IR version,
    whatever the model needs. When onnxruntime refuses ``model`` for that reason alone, and the
    model's opsets all exist at the newest IR version onnxruntime reads (per onnx's version
    table), the session is made from a copy stamped with that version; ``model`` itself is not
    changed. Any other refusal, or a model that needs the newer IR version, raises onnxruntime's
    own error.

    Parameters
    ----------
    model : onnx.ModelProto, bytes, str or os.PathLike
        The model, its serialized bytes, or a path to it (external data beside it is found).
    sess_options : onnxruntime.SessionOptions, optional
        Passed to onnxruntime as they are.
    providers : list, optional
        onnxruntime's execution providers; default ``["CPUExecutionProvider"]``.

    Examples
    --------
    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Relu", ["x"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    >>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    >>> model.ir_version = 99      # as a newer onnx than this onnxruntime knows would write
    >>> [i.name for i in new_session(model).get_inputs()]
    ['x']
    """
    providers = ["CPUExecutionProvider"] if providers is None else providers
    source: bytes | str = (
        os.fspath(model)
        if isinstance(model, (str, os.PathLike))
        else model
        if isinstance(model, bytes)
        else model.SerializeToString()
    )
    try:
        return onnxruntime.InferenceSession(source, sess_options=sess_options, providers=providers)
    except Exception as error:  # onnxruntime raises its own exception classes
        refusal = _IR_REFUSAL.search(str(error))
        lowered = None if refusal is None else _at_ir_version(model, int(refusal[2]))
        if lowered is None:
            raise
    return onnxruntime.InferenceSession(lowered, sess_options=sess_options, providers=providers)


def lowest_ir_version(opset_import: Iterable[onnx.OperatorSetIdProto]) -> int | None:
    """The lowest IR version that carries every opset of ``opset_import``, by onnx's version table
    (``onnx.helper.find_min_ir_version_for``); None if an opset is newer than the table knows.

    The table lists only the opsets onnx released with a new IR version; one it skips (ai.onnx 2
    to 4) takes the entry of the next one it lists.

    Examples
    --------
    >>> from onnx import helper
    >>> (lowest_ir_version([helper.make_opsetid("", 4)]),
    ...  lowest_ir_version([helper.make_opsetid("", 21)]))
    (3, 10)
    """
    import onnx

    listed = {domain for domain, _ in onnx.helper.OP_SET_ID_VERSION_MAP}
    needed = 3  # the first IR version with opset imports
    for entry in opset_import:
        if (entry.domain or "ai.onnx") not in listed:
            continue  # a custom domain: it asks nothing of the IR version
        for version in range(entry.version, entry.version + 8):
            try:
                found = onnx.helper.find_min_ir_version_for(
                    [onnx.helper.make_opsetid(entry.domain, version)]
                )
            except ValueError:  # not in the table: a skipped or a newer opset
                continue
            needed = max(needed, found)
            break
        else:
            return None
    return needed


def _at_ir_version(
    model: onnx.ModelProto | bytes | str | os.PathLike[str], ir_version: int
) -> bytes | None:
    """``model`` serialized with ``ir_version``, or None if its opsets need a newer one."""
    import onnx

    if isinstance(model, (str, os.PathLike)):
        proto = onnx.load(os.fspath(model))  # external data is read in, as bytes carry it
    elif isinstance(model, bytes):
        proto = onnx.load_model_from_string(model)
    else:
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    needed = lowest_ir_version(proto.opset_import)
    if needed is None or needed > ir_version or proto.ir_version <= ir_version:
        return None
    proto.ir_version = ir_version
    try:
        data: bytes = proto.SerializeToString()
    except ValueError:  # over protobuf's 2 GiB: onnxruntime's own refusal stands
        return None
    return data


def inference_session(
    model: onnx.ModelProto | bytes, *, threads: int = 1
) -> onnxruntime.InferenceSession:
    """An onnxruntime CPU session for ``model``, quiet (errors raise, nothing is logged).

    Parameters
    ----------
    model : onnx.ModelProto or bytes
        The model or its serialized bytes.
    threads : int
        onnxruntime's intra-op thread count (its inter-op count is 1).

    Notes
    -----
    Raises whatever onnxruntime raises for a model it cannot load or has no kernel for
    (e.g. ``NotImplemented``: "Could not find an implementation for Relu(14)"); a model stamped
    with an IR version newer than onnxruntime reads is handled as :func:`new_session` says.
    """
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return new_session(model, options)


def ort_value(array: np.ndarray) -> onnxruntime.OrtValue:
    """An OrtValue over ``array``'s own memory (no copy), for io binding; bfloat16 included.

    ``array`` must be native-order and C-contiguous, and the caller must keep it alive until
    onnxruntime is done with the value (onnxruntime does not hold a reference to it). A
    bfloat16 array goes in as its uint16 bit pattern with the ONNX type BFLOAT16, since
    onnxruntime's Python API does not know ml_dtypes' type.

    Examples
    --------
    >>> import ml_dtypes, numpy as np
    >>> x = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
    >>> ort_value(x).data_type()
    'tensor(bfloat16)'
    """
    if is_bfloat16(array.dtype):
        return onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(
            array.view(_BFLOAT16.bits_dtype), _BFLOAT16.elem_type
        )
    return onnxruntime.OrtValue.ortvalue_from_numpy(array)


def run_session(
    session: onnxruntime.InferenceSession,
    feeds: Mapping[str, Any],
    output_names: Iterable[str] | None = None,
    run_options: onnxruntime.RunOptions | None = None,
) -> list[np.ndarray]:
    """Run ``session`` on ``feeds`` (name -> array); returns the outputs named in
    ``output_names`` (default: every output, in the model's order) as numpy arrays.

    bfloat16 arrays (ml_dtypes) go in and come out unchanged bit for bit.
    """
    binding = session.io_binding()
    for name, value in feeds.items():
        array = np.asarray(value)
        array = array.astype(native(array.dtype)) if not array.dtype.isnative else array
        if not array.flags.c_contiguous:
            array = array.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
        if is_bfloat16(array.dtype):
            binding.bind_ortvalue_input(name, ort_value(array))
        else:
            binding.bind_cpu_input(name, array)
    names = (
        [output.name for output in session.get_outputs()]
        if output_names is None
        else list(output_names)
    )
    for name in names:
        binding.bind_output(name, "cpu")
    session.run_with_iobinding(binding, run_options)
    return [_to_numpy(value) for value in binding.get_outputs()]


def _to_numpy(value: onnxruntime.OrtValue) -> np.ndarray:
    if value.data_type() == _BFLOAT16.onnx_name:
        shape = tuple(value.shape())
        raw = ctypes.string_at(value.data_ptr(), value.tensor_size_in_bytes())
        bits = np.frombuffer(raw, dtype=_BFLOAT16.bits_dtype)
        result: np.ndarray = bits.view(_BFLOAT16.dtype).reshape(shape).copy()
        return result
    return cast(np.ndarray, value.numpy())


def run_model(model: onnx.ModelProto | bytes, feeds: Mapping[str, Any]) -> list[np.ndarray]:
    """Load ``model`` into onnxruntime and run it once; see :func:`run_session`."""
    return run_session(inference_session(model), feeds)
