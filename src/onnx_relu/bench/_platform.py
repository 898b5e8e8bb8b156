"""Everything the harness takes from the rest of onnx-relu that is not public API yet.

The redesign (issue 9) gives these facts one public home each: the type table
(``onnx_relu.dtypes``), the onnxruntime session helper (``onnx_relu.onnx.ort``) and the kernel's
tuning (``onnx_relu.tuning``). Until those modules exist, this module reaches into the private
code they replace, and it is the only module of the harness that does: each function below
names what it will call instead, so that the swap is made here and nowhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from onnx_relu import _relu, _threads
from onnx_relu._onnx_types import RELU_TYPE_DTYPES

if TYPE_CHECKING:
    import onnxruntime

# Will be onnx_relu.tuning.MAX_THREADS.
MAX_THREADS: int = _relu.MAX_THREADS


def _table_order(dtype: np.dtype) -> tuple:
    # The order of the harness's tables since its first run: floats before integers; float32
    # and float64 first, then the half-width float16 and bfloat16 (ml_dtypes', numpy kind "V");
    # integers narrow to wide.
    if dtype.kind == "i":
        return (1, dtype.itemsize)
    return (0, dtype.itemsize < 4, dtype.itemsize, dtype.kind != "f")


def relu_dtypes() -> dict[str, np.dtype]:
    """The eight Relu types: short name ("float32", "bfloat16") -> numpy dtype, in table order.

    Will read ``onnx_relu.dtypes`` (its records' short names and numpy dtypes); today it reads
    ``onnx_relu._onnx_types.RELU_TYPE_DTYPES``.
    """
    dtypes = sorted(RELU_TYPE_DTYPES.values(), key=_table_order)
    return {dtype.name: dtype for dtype in dtypes}


def onnx_elem_type(type_name: str) -> int:
    """The ``TensorProto`` element type of a short type name (imports onnx).

    Will read the record's TensorProto number in ``onnx_relu.dtypes``; today it converts the
    ONNX name of ``RELU_TYPE_DTYPES`` ("tensor(double)" -> ``TensorProto.DOUBLE``).
    """
    from onnx import TensorProto

    dtype = relu_dtypes()[type_name]
    onnx_name = next(name for name, found in RELU_TYPE_DTYPES.items() if found == dtype)
    return TensorProto.DataType.Value(onnx_name.removeprefix("tensor(").removesuffix(")").upper())


def ort_session(model: bytes, threads: int) -> onnxruntime.InferenceSession:
    """A quiet onnxruntime CPU session with ``threads`` intra-op threads and 1 inter-op thread.

    Will call the session helper of ``onnx_relu.onnx.ort``; today
    ``onnx_relu._ort.inference_session``. Raises what onnxruntime raises for a type it has no
    kernel for.
    """
    from onnx_relu import _ort

    return _ort.inference_session(model, threads=threads)


def ort_value(array: np.ndarray) -> onnxruntime.OrtValue:
    """An OrtValue over ``array``'s own memory (no copy), for io binding; bfloat16 included.

    onnxruntime's Python API does not know ml_dtypes' bfloat16: such an array goes in as its
    uint16 bit pattern with the ONNX type BFLOAT16. Will call the io-binding helper of
    ``onnx_relu.onnx.ort`` (which binds bfloat16 the same way); ``onnx_relu._ort`` binds only
    copies of its inputs and lets onnxruntime allocate the outputs, so today the binding is
    written here.
    """
    import onnxruntime

    if array.dtype == relu_dtypes()["bfloat16"]:
        return onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(
            array.view(np.uint16), onnx_elem_type("bfloat16")
        )
    return onnxruntime.OrtValue.ortvalue_from_numpy(array)


def copy_ceiling(src: np.ndarray, dst: np.ndarray, *, nontemporal: bool) -> None:
    """The kernel's copy: its loops without the compare, split over threads like a relu call.

    Will call ``onnx_relu.tuning.copy_ceiling``; today ``onnx_relu._relu._copy``.
    """
    _relu._copy(src, dst, nontemporal=nontemporal)


def kernel_tuning() -> dict:
    """The kernel's settings (thresholds, ISA, cache sizes, thread counts) as a dict.

    Will call ``onnx_relu.tuning.kernel_tuning``; today ``onnx_relu._relu._tuning``.
    """
    return _relu._tuning()


def default_num_threads() -> int:
    """The CPUs this process may run on, at most ``MAX_THREADS``.

    Will call ``onnx_relu.tuning.default_num_threads``; today
    ``onnx_relu._threads.default_num_threads``.
    """
    return _threads.default_num_threads()
