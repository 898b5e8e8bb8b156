"""Running a model in onnxruntime's CPU provider from numpy arrays, bfloat16 included.

onnxruntime's ``InferenceSession.run`` can neither take nor return ``ml_dtypes.bfloat16`` arrays
("Numpy_type 256 can't be converted to MLDataType"). Here every input and output goes through an
io binding: bfloat16 inputs are handed over as their uint16 bit patterns with the ONNX type
BFLOAT16, and bfloat16 outputs are copied out of onnxruntime's buffer bit for bit.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

if TYPE_CHECKING:
    import onnx
    import onnxruntime

_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def inference_session(
    model: onnx.ModelProto | bytes, *, threads: int = 1
) -> onnxruntime.InferenceSession:
    """An onnxruntime CPU session for ``model``, quiet (errors raise, nothing is logged).

    Raises whatever onnxruntime raises for a model it cannot load or has no kernel for
    (e.g. ``NotImplemented``: "Could not find an implementation for Relu(14)").
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return onnxruntime.InferenceSession(
        data, sess_options=options, providers=["CPUExecutionProvider"]
    )


def run_session(
    session: onnxruntime.InferenceSession, feeds: Mapping[str, Any]
) -> list[np.ndarray]:
    """Run ``session`` on ``feeds`` (name -> array); returns every output, in order, as numpy.

    bfloat16 arrays (ml_dtypes) go in and come out unchanged bit for bit.
    """
    import onnxruntime
    from onnx import TensorProto

    binding = session.io_binding()
    for name, value in feeds.items():
        array = np.asarray(value)
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        if not array.flags.c_contiguous:
            array = array.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
        if array.dtype == _BFLOAT16:
            binding.bind_ortvalue_input(
                name,
                onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(
                    array.view(np.uint16), TensorProto.BFLOAT16
                ),
            )
        else:
            binding.bind_cpu_input(name, array)
    for output in session.get_outputs():
        binding.bind_output(output.name, "cpu")
    session.run_with_iobinding(binding)
    return [_to_numpy(value) for value in binding.get_outputs()]


def _to_numpy(value: onnxruntime.OrtValue) -> np.ndarray:
    if value.data_type() == "tensor(bfloat16)":
        shape = tuple(value.shape())
        raw = ctypes.string_at(value.data_ptr(), value.tensor_size_in_bytes())
        return np.frombuffer(raw, dtype=np.uint16).view(_BFLOAT16).reshape(shape).copy()
    return value.numpy()


def run_model(model: onnx.ModelProto | bytes, feeds: Mapping[str, Any]) -> list[np.ndarray]:
    """Load ``model`` into onnxruntime and run it once; see :func:`run_session`."""
    return run_session(inference_session(model), feeds)
