"""A typed user of onnx_relu: ``make typecheck`` runs ``mypy --strict`` over this file (with the
package), and pytest runs it, so the annotations shown here are both checked and true.

``assert_type`` (under TYPE_CHECKING: mypy evaluates it, Python never imports it) fails the type
check if a name loses its type, e.g. if the stub of the compiled module ``onnx_relu._relu`` went
missing and ``relu_ufunc`` became ``Any``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import onnx_relu
from onnx_relu import (
    LATEST_VERSION,
    ReluVersion,
    UnsupportedTypeError,
    check_dtype,
    relu,
    relu_ufunc,
    relu_version,
)
from onnx_relu.tuning import MAX_THREADS, get_num_threads, kernel_tuning, num_threads

if TYPE_CHECKING:
    from typing import assert_type

    assert_type(relu_ufunc, np.ufunc)
    assert_type(MAX_THREADS, int)
    assert_type(onnx_relu.__version__, str)
    assert_type(get_num_threads(), int)
    assert_type(relu_version(13), int)
    assert_type(LATEST_VERSION, ReluVersion)
    assert_type(check_dtype("float32"), np.dtype)


def relu_float32(values: list[float]) -> np.ndarray:
    """A typed wrapper as a user would write it: the array in, its Relu out."""
    x = np.asarray(values, dtype=np.float32)
    out = np.empty_like(x)
    result: np.ndarray = relu(x, out=out, opset=14)
    return result


def test_typed_usage_runs() -> None:
    y = relu_float32([-1.0, -0.0, 2.5])
    assert y.dtype == np.float32 and y.tolist() == [0.0, 0.0, 2.5]
    assert np.signbit(y).tolist() == [False, False, False]  # -0.0 -> +0.0
    assert relu_ufunc(np.array([-3, 4], dtype=np.int8)).tolist() == [0, 4]
    since: int = relu_version(13)
    latest: ReluVersion = LATEST_VERSION
    assert since == 13 and latest.since == 14 and "tensor(int8)" in latest.types
    with num_threads(1):
        threads: int = get_num_threads()
        assert threads == 1
    settings = kernel_tuning()
    assert isinstance(settings["nt_threshold"], int)
    try:
        check_dtype(np.uint8)
    except UnsupportedTypeError as exc:
        assert "tensor(uint8)" in str(exc)
    else:
        raise AssertionError("uint8 was accepted")
