"""Models stamped with an IR version newer than the installed onnxruntime reads.

onnx stamps every model ``helper.make_model`` makes with its own newest IR version; onnxruntime
reads only up to the version of the onnx it was built with (onnxruntime 1.23, the last for Python
3.10, reads IR 11 while onnx 1.23 writes 14). ``onnx_relu.onnx.ort.new_session`` retries such a
model once at the newest version onnxruntime reads, when the model's opsets exist there. Here the
model is stamped IR 99, which no onnxruntime reads, so the retry is exercised on every Python.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from onnx_relu.onnx import ort  # noqa: E402
from onnx_relu.onnx.ort_library import ort_session  # noqa: E402
from tests.support.oracle import expected_relu, same_bits  # noqa: E402

FUTURE_IR = 99


def _relu_model(elem_type: int, opset: int, ir_version: int = FUTURE_IR) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")],
        "g",
        [helper.make_tensor_value_info("x", elem_type, [5])],
        [helper.make_tensor_value_info("y", elem_type, [5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def _check_runs(session, dtype, values=(-2.0, -0.0, 0.0, 1.5, np.nan)) -> None:
    x = np.array(values, dtype=dtype)
    (y,) = ort.run_session(session, {"x": x})
    assert y.dtype == x.dtype
    assert same_bits(y, expected_relu(x))


# onnxruntime's own Relu gives -0.0 for -0.0 (docs/runtimes.md); these values avoid the difference.
PLAIN_VALUES = (-2.0, 3.0, 0.0, 1.5, -7.25)


@pytest.mark.parametrize("form", ["proto", "bytes", "path"])
def test_a_model_stamped_with_a_future_ir_version_runs_and_is_not_changed(form, tmp_path):
    model = _relu_model(TensorProto.FLOAT, 14)
    before = model.SerializeToString()
    if form == "proto":
        source = model
    elif form == "bytes":
        source = before
    else:
        source = tmp_path / "m.onnx"
        source.write_bytes(before)
    session = ort.new_session(source)
    _check_runs(session, np.float32, PLAIN_VALUES)
    assert model.SerializeToString() == before
    if form == "path":
        assert source.read_bytes() == before


def test_run_model_takes_a_future_ir_version():
    model = _relu_model(TensorProto.FLOAT16, 13)
    (y,) = ort.run_model(model, {"x": np.array([-1.0, 2.0, -0.0, 0.5, 3.0], np.float16)})
    assert y.tolist() == [0.0, 2.0, 0.0, 0.5, 3.0]


def test_the_library_session_takes_a_future_ir_version():
    """bfloat16 Relu, which only the library runs, through ort_session."""
    session = ort_session(_relu_model(TensorProto.BFLOAT16, 14))
    _check_runs(session, ml_dtypes.bfloat16)


def test_a_model_whose_opsets_need_the_newer_ir_version_gets_onnxruntimes_own_refusal(
    monkeypatch,
):
    monkeypatch.setattr(
        onnx.helper, "find_min_ir_version_for", lambda opsets, ignore_unknown=False: FUTURE_IR
    )
    with pytest.raises(Exception, match="Unsupported model IR version: 99"):
        ort.new_session(_relu_model(TensorProto.FLOAT, 14))


def test_other_refusals_are_onnxruntimes_own():
    model = _relu_model(TensorProto.FLOAT, 14, ir_version=8)
    model.graph.node[0].op_type = "NoSuchOperator"
    with pytest.raises(Exception, match="NoSuchOperator"):
        ort.new_session(model)
    with pytest.raises(Exception) as refused:
        ort.new_session(b"not a model")
    assert "IR version" not in str(refused.value)


@pytest.mark.parametrize(
    ("opset", "ir_version"), [(1, 3), (2, 3), (4, 3), (5, 3), (9, 4), (21, 10)]
)
def test_lowest_ir_version_follows_onnxs_table_and_fills_the_opsets_it_skips(opset, ir_version):
    assert ort.lowest_ir_version([helper.make_opsetid("", opset)]) == ir_version


def test_lowest_ir_version_is_none_for_an_opset_newer_than_the_table_knows():
    assert ort.lowest_ir_version([helper.make_opsetid("", 999)]) is None


def test_lowest_ir_version_of_a_custom_domain_is_the_first():
    assert ort.lowest_ir_version([helper.make_opsetid("com.example", 7)]) == 3


def test_a_future_ir_version_at_an_opset_the_table_skips_is_lowered_too():
    """ai.onnx 4 is not in onnx's table (it needs IR 3). onnxruntime has no Relu-1 kernel, so
    the model is an Identity."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 4)])
    model.ir_version = FUTURE_IR
    x = np.array([-1.5, 2.0], np.float32)
    (y,) = ort.run_session(ort.new_session(model), {"x": x})
    assert y.tolist() == [-1.5, 2.0]
