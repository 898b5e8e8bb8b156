"""Shared by the ONNX tests: one-node Relu models, test values and an independent oracle.

The oracle works on bit patterns only (sign bit, exponent, mantissa), never on float comparisons
or on onnx-relu's kernel, so that it checks the kernel rather than repeating it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper

LATEST_OPSET = onnx.defs.onnx_opset_version()

#: Opsets on both sides of each Relu version change, and the ends.
BOUNDARY_OPSETS = (1, 5, 6, 12, 13, 14, LATEST_OPSET)

#: ONNX type -> (TensorProto element type, numpy dtype)
RELU_TYPES = {
    "tensor(float16)": (TensorProto.FLOAT16, np.dtype(np.float16)),
    "tensor(bfloat16)": (TensorProto.BFLOAT16, np.dtype(ml_dtypes.bfloat16)),
    "tensor(float)": (TensorProto.FLOAT, np.dtype(np.float32)),
    "tensor(double)": (TensorProto.DOUBLE, np.dtype(np.float64)),
    "tensor(int8)": (TensorProto.INT8, np.dtype(np.int8)),
    "tensor(int16)": (TensorProto.INT16, np.dtype(np.int16)),
    "tensor(int32)": (TensorProto.INT32, np.dtype(np.int32)),
    "tensor(int64)": (TensorProto.INT64, np.dtype(np.int64)),
}

#: ONNX type -> (total bits, mantissa bits) of the binary float formats
FLOAT_LAYOUTS = {
    "tensor(float16)": (16, 10),
    "tensor(bfloat16)": (16, 7),
    "tensor(float)": (32, 23),
    "tensor(double)": (64, 52),
}


def allowed_types(opset: int) -> set[str]:
    """Relu's type constraint at ``opset``, read from onnx's own schema (not from onnx-relu)."""
    schema = onnx.defs.get_schema("Relu", opset)
    return set(schema.type_constraints[0].allowed_type_strs)


def relu_model(
    onnx_type: str, opset: int, shape=(None,), *, name: str = "relu", **attributes
) -> onnx.ModelProto:
    elem_type = RELU_TYPES[onnx_type][0]
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name=name, **attributes)],
        "one_relu",
        [helper.make_tensor_value_info("x", elem_type, list(shape))],
        [helper.make_tensor_value_info("y", elem_type, list(shape))],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


def float_masks(onnx_type: str):
    total, mantissa = FLOAT_LAYOUTS[onnx_type]
    sign = 1 << (total - 1)
    exponent = sign - (1 << mantissa)
    return sign, exponent, (1 << mantissa) - 1, 1 << (mantissa - 1)


def sample_values(onnx_type: str, random_count: int = 2000, seed: int = 0) -> np.ndarray:
    """Edge cases (signed zeros, subnormals, extremes, infinities, quiet and signalling NaNs of
    both signs with payloads, integer extremes) followed by random bit patterns."""
    rng = np.random.default_rng(seed)
    dtype = RELU_TYPES[onnx_type][1]
    unsigned = np.dtype(f"u{dtype.itemsize}")
    random_bits = rng.integers(0, np.iinfo(unsigned).max, random_count, dtype=unsigned,
                               endpoint=True)
    if onnx_type in FLOAT_LAYOUTS:
        sign, exponent, mantissa, quiet = float_masks(onnx_type)
        positives = [0, 1, 2, mantissa, mantissa + 1, exponent - 1, exponent,
                     (exponent >> 1) & exponent,  # 1.0
                     exponent | quiet, exponent | quiet | 1, exponent | mantissa,
                     exponent | 1, exponent | (quiet >> 1), exponent | (quiet - 1)]
        edges = positives + [p | sign for p in positives]
    else:
        info = np.iinfo(dtype)
        edges = [info.min, info.min + 1, -2, -1, 0, 1, 2, info.max - 1, info.max]
        edges = [int(np.array(e, dtype=dtype).view(unsigned)) for e in edges]
    all_bits = np.concatenate([np.array(edges, dtype=unsigned), random_bits])
    return all_bits.view(dtype)


def oracle_relu(x: np.ndarray, onnx_type: str) -> np.ndarray:
    """The documented semantics, computed from bit patterns alone.

    Floats: a NaN (exponent all ones, mantissa not zero) comes back bit for bit; a positive
    number (sign bit clear, not +0) comes back unchanged; everything else gives +0.
    Integers: x where x > 0, else 0.
    """
    if onnx_type not in FLOAT_LAYOUTS:
        return np.where(x > 0, x, np.zeros((), dtype=x.dtype)).astype(x.dtype)
    sign, exponent, mantissa, _ = float_masks(onnx_type)
    u = bits(x)
    is_nan = ((u & exponent) == exponent) & ((u & mantissa) != 0)
    positive = ((u & sign) == 0) & (u != 0)
    return np.where(is_nan | positive, u, np.zeros((), dtype=u.dtype)).view(x.dtype)


def is_signalling_nan(x_bits: int, onnx_type: str) -> bool:
    _, exponent, mantissa, quiet = float_masks(onnx_type)
    return (x_bits & exponent) == exponent and (x_bits & mantissa) != 0 and not (x_bits & quiet)


def is_nan_bits(x_bits: int, onnx_type: str) -> bool:
    _, exponent, mantissa, _ = float_masks(onnx_type)
    return (x_bits & exponent) == exponent and (x_bits & mantissa) != 0
