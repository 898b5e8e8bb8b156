"""The onnxruntime library at its limits: tensors of any rank, out-of-range settings refused, and
options on which the library was registered by onnxruntime's own call."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnx_relu
from onnx_relu.onnx.ort import run_session
from onnx_relu.onnx.ort_library import (
    ort_library_path,
    set_ort_library_nt_threshold,
    set_ort_library_num_threads,
)

X = np.array([-3.0, -0.0, 1.0, 2.0, -5.0, 7.0], np.float32)


def _deep_model(rank: int) -> onnx.ModelProto:
    """Six floats reshaped to ``rank`` dimensions, Relu, and back: numpy arrays have at most 64
    dimensions, so the deep tensor is made inside the model."""
    deep = helper.make_tensor("deep", TensorProto.INT64, [rank], [1] * (rank - 1) + [-1])
    flat = helper.make_tensor("flat", TensorProto.INT64, [1], [-1])
    nodes = [
        helper.make_node("Reshape", ["x", "deep"], ["d"]),
        helper.make_node("Relu", ["d"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "flat"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])],
        initializer=[deep, flat],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("rank", [1, 16, 17, 64, 65, 100, 300])
def test_tensors_of_any_rank_run(rank):
    (y,) = run_session(onnx_relu.ort_session(_deep_model(rank), exact=True), {"x": X})
    assert y.tolist() == [0.0, 0.0, 1.0, 2.0, 0.0, 7.0]
    # -0.0 -> +0.0 is the library's Relu (onnxruntime's own keeps -0.0): it ran at that rank.
    assert not np.signbit(y).any()


@pytest.mark.parametrize("n_bytes", [2**63, 2**64, 2**64 + 5, -1, -(2**63)])
def test_out_of_range_streaming_thresholds_are_refused_naming_the_range(n_bytes):
    before = set_ort_library_nt_threshold(None)
    with pytest.raises(ValueError, match=r"in 0\.\.9223372036854775807 \(2\*\*63 - 1\)"):
        set_ort_library_nt_threshold(n_bytes)
    assert set_ort_library_nt_threshold(None) == before  # unchanged


def test_the_largest_streaming_threshold_is_kept_exactly():
    previous = set_ort_library_nt_threshold(2**63 - 1)
    try:
        assert set_ort_library_nt_threshold(None) == 2**63 - 1
    finally:
        set_ort_library_nt_threshold(previous)


@pytest.mark.parametrize("count", [0, 257, 2**32 + 1, -(2**32) + 1])
def test_out_of_range_thread_counts_are_refused_before_the_library(count):
    with pytest.raises(onnx_relu.ThreadCountError, match=r"in 1\.\.256"):
        set_ort_library_num_threads(count)


def _relu_model() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model.SerializeToString()


def test_ort_session_accepts_options_registered_by_onnxruntimes_own_call():
    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(ort_library_path())
    session = onnx_relu.ort_session(_relu_model(), sess_options=options)
    (y,) = run_session(session, {"x": np.array([-0.0, 2.0], np.float32)})
    assert y.tolist() == [0.0, 2.0] and not np.signbit(y).any()
    assert onnx_relu.ort_session_options(options) is options


def test_registering_the_library_twice_by_path_adds_it_once():
    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(ort_library_path())
    options.register_custom_ops_library(ort_library_path())
    assert options.get_session_config_entry("onnx_relu.ort_library.registered") == "1"
    session = onnxruntime.InferenceSession(
        _relu_model(), options, providers=["CPUExecutionProvider"]
    )
    (y,) = run_session(session, {"x": np.array([-0.0, 2.0], np.float32)})
    assert not np.signbit(y).any()
