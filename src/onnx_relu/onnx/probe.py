"""What the installed onnxruntime does with a one-node Relu model, or with one of legalize's
rewrites of it: does it run, and with exactly onnx-relu's values?

Nothing is taken from a list: each (type, opset, rewrite, IR version) is run once per process in
onnxruntime's CPU provider on a vector of edge cases (signed zeros, subnormals, infinities,
quiet and signalling NaNs with payloads, integer extremes) and compared with
``onnx_relu.relu`` bit for bit. This module imports onnx; onnxruntime only when it probes.

Examples
--------
>>> result = probe_onnxruntime("tensor(float)", 14)
>>> result.runs, result.rewrite
(True, 'Relu')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .._api import relu
from .._extras import extra_needed
from ..dtypes import RELU_TYPE_BY_ONNX_NAME, dtype_of_onnx_type
from ._rewrites import REWRITES

with extra_needed():  # a missing onnx raises the one MissingExtraError
    import onnx
    from onnx import helper

__all__ = [
    "ProbeResult",
    "probe_onnxruntime",
    "probe_values",
    "onnxruntime_loads",
    "stock_has_kernel",
]


def _float_edge_bits(bits: int, mantissa: int) -> list[int]:
    """Bit patterns of a binary float format's edge cases, positive then negative."""
    sign = 1 << (bits - 1)
    exponent_mask = sign - (1 << mantissa)  # all exponent bits set
    quiet = 1 << (mantissa - 1)
    mantissa_mask = (1 << mantissa) - 1
    one = (exponent_mask >> 1) & exponent_mask
    positive = [
        0,  # +0
        1,  # smallest subnormal
        mantissa_mask,  # largest subnormal
        1 << mantissa,  # smallest normal
        one,  # 1.0
        exponent_mask - 1,  # largest finite
        exponent_mask,  # infinity
        exponent_mask | quiet,  # canonical quiet NaN
        exponent_mask | quiet | 0b101,  # quiet NaN with a payload
        exponent_mask | 1,  # signalling NaN
        exponent_mask | (quiet >> 1) | 0b11,  # signalling NaN with a payload
    ]
    return positive + [pattern | sign for pattern in positive]


def probe_values(onnx_type: str) -> np.ndarray:
    """The edge cases a probe runs for ``onnx_type``: every value where implementations differ.

    Examples
    --------
    >>> str(probe_values("tensor(int8)").dtype), probe_values("tensor(int8)").tolist()
    ('int8', [-128, -127, -1, 0, 1, 126, 127])
    >>> [hex(bits) for bits in probe_values("tensor(float16)").view("u2")[:5]]  # +0, 1 ulp, ...
    ['0x0', '0x1', '0x3ff', '0x400', '0x3c00']
    """
    relu_type = RELU_TYPE_BY_ONNX_NAME.get(onnx_type)
    if relu_type is not None and relu_type.mantissa_bits is not None:
        bits = _float_edge_bits(relu_type.bits, relu_type.mantissa_bits)
        return np.array(bits, dtype=relu_type.bits_dtype).view(relu_type.dtype)
    dtype = dtype_of_onnx_type(onnx_type)
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], dtype=dtype)


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"u{array.dtype.itemsize}")


def _describe_difference(x: np.ndarray, got: np.ndarray, expected: np.ndarray) -> str:
    if x.dtype.kind in "iu":
        return f"{x} -> {got} (onnx-relu: {expected})"
    width = 2 * x.dtype.itemsize
    return (
        f"{x!s} (0x{int(_bits(x)):0{width}x}) -> 0x{int(_bits(got)):0{width}x}"
        f" (onnx-relu: 0x{int(_bits(expected)):0{width}x})"
    )


@dataclass(frozen=True)
class ProbeResult:
    """What onnxruntime did with a one-node Relu model (or one rewrite of it).

    Attributes
    ----------
    onnx_type, opset, ir_version, rewrite
        What was probed; ``rewrite`` is "Relu" for the node itself.
    runs : bool
        Whether onnxruntime loaded and ran it.
    error : str or None
        onnxruntime's refusal (first line) when it does not run.
    differences : tuple of str
        Each probe value whose result differs from ``onnx_relu.relu`` bit for bit, described as
        "input (bits) -> onnxruntime's bits (onnx-relu: bits)". Empty when exact.
    """

    onnx_type: str
    opset: int
    ir_version: int
    rewrite: str
    runs: bool
    error: str | None
    differences: tuple[str, ...]

    @property
    def exact(self) -> bool:
        """True if it runs and every probe value comes out as onnx-relu's, bit for bit."""
        return self.runs and not self.differences


def _probe_model(
    onnx_type: str, opset: int, ir_version: int, rewrite: str, size: int
) -> onnx.ModelProto | None:
    names = iter(range(1000))
    nodes = REWRITES[rewrite](
        "x", "y", onnx_type, opset, "", lambda role: f"{role}_{next(names)}", "relu"
    )
    if nodes is None:
        return None
    elem_type = RELU_TYPE_BY_ONNX_NAME[onnx_type].elem_type
    graph = helper.make_graph(
        nodes,
        "probe",
        [helper.make_tensor_value_info("x", elem_type, [size])],
        [helper.make_tensor_value_info("y", elem_type, [size])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


@functools.cache
def probe_onnxruntime(
    onnx_type: str, opset: int, rewrite: str = "Relu", ir_version: int | None = None
) -> ProbeResult:
    """Probe the installed onnxruntime (CPU provider) with ``rewrite`` of a one-node Relu model.

    Parameters
    ----------
    onnx_type : str
        One of the Relu types, e.g. "tensor(bfloat16)".
    opset : int
        The ai.onnx opset of the probe model.
    rewrite : str
        "Relu" for the node itself, or a name from :data:`REWRITES`.
    ir_version : int, optional
        The probe model's IR version (default: the installed onnx's).

    Returns
    -------
    ProbeResult
        Cached: each combination is probed once per process.
    """
    from .ort import run_model

    if onnx_type not in RELU_TYPE_BY_ONNX_NAME:
        raise ValueError(
            f"{onnx_type!r} is not a Relu type; expected one of {sorted(RELU_TYPE_BY_ONNX_NAME)}"
        )
    if rewrite not in REWRITES:
        raise ValueError(f"unknown rewrite {rewrite!r}; known: {sorted(REWRITES)}")
    ir_version = onnx.IR_VERSION if ir_version is None else ir_version
    x = probe_values(onnx_type)
    model = _probe_model(onnx_type, opset, ir_version, rewrite, x.size)
    if model is None:
        reason = f"rewrite {rewrite!r} does not apply to {onnx_type} at opset {opset}"
        return ProbeResult(onnx_type, opset, ir_version, rewrite, False, reason, ())
    try:
        (y,) = run_model(model, {"x": x})
    except Exception as error:  # noqa: BLE001 - onnxruntime raises its own exception classes
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        return ProbeResult(onnx_type, opset, ir_version, rewrite, False, first_line, ())
    expected = relu(x, opset=max(opset, 1))
    if y.dtype != x.dtype or y.shape != x.shape:
        return ProbeResult(
            onnx_type,
            opset,
            ir_version,
            rewrite,
            True,
            None,
            (f"output is {y.dtype}{y.shape}, expected {x.dtype}{x.shape}",),
        )
    differing = np.flatnonzero(_bits(y) != _bits(expected))
    differences = tuple(_describe_difference(x[i], y[i], expected[i]) for i in differing)
    return ProbeResult(onnx_type, opset, ir_version, rewrite, True, None, differences)


# The Relus for which onnxruntime's CPU provider has a kernel in every release the ``ort``
# extra allows: each type with the first opset of its kernel. What is here is answered without
# importing onnxruntime or making a session (about 30 MB of peak memory for `onnx-relu check`,
# a second session for `ort_session`); every other (type, opset) is asked of the installed
# onnxruntime. tests/onnx/test_legalize.py checks the table against the installed onnxruntime
# (the newest and the oldest allowed, in CI).
_STOCK_KERNEL_SINCE = {
    "tensor(float)": 6,
    "tensor(double)": 6,
    "tensor(float16)": 6,
    "tensor(int8)": 14,
    "tensor(int32)": 14,
}


def stock_has_kernel(onnx_type: str, opset: int) -> bool:
    """Whether onnxruntime's CPU provider (every release the ``ort`` extra allows) has a Relu
    kernel for ``onnx_type`` at ``opset``, known without asking it; False means "ask
    :func:`onnxruntime_loads`", not "it has none". It speaks of the Relu's type only: an
    onnxruntime older than the model's opset refuses the model whatever its types.

    Examples
    --------
    >>> stock_has_kernel("tensor(float)", 14), stock_has_kernel("tensor(int8)", 13)
    (True, False)
    >>> stock_has_kernel("tensor(bfloat16)", 21)
    False
    """
    since = _STOCK_KERNEL_SINCE.get(onnx_type)
    return since is not None and opset >= since


@functools.cache
def onnxruntime_loads(onnx_type: str, opset: int) -> bool:
    """Whether the installed onnxruntime (CPU provider) makes a session of a one-node Relu
    model of ``onnx_type`` at ``opset``: whether it has a kernel for it (a missing one is
    refused when the session is made). What ``ort_session``'s default route asks: cheaper than
    :func:`probe_onnxruntime`, which also runs the model, and a first run makes onnxruntime's
    next session in the process take more memory while it is made (BENCHMARKS.md).

    Examples
    --------
    >>> onnxruntime_loads("tensor(float)", 14), onnxruntime_loads("tensor(bfloat16)", 14)
    (True, False)
    """
    from .ort import inference_session

    if onnx_type not in RELU_TYPE_BY_ONNX_NAME:
        raise ValueError(
            f"{onnx_type!r} is not a Relu type; expected one of {sorted(RELU_TYPE_BY_ONNX_NAME)}"
        )
    model = _probe_model(onnx_type, opset, onnx.IR_VERSION, "Relu", 1)
    assert model is not None  # the node itself applies everywhere
    try:
        inference_session(model)
    except Exception:  # noqa: BLE001 - onnxruntime raises its own exception classes
        return False
    return True
