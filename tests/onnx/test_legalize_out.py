"""``onnx-relu legalize`` writes OUT anywhere, external data included, and ``onnx-relu check``
names the valid Relu nodes stock onnxruntime cannot run, with what runs them (issue 34,
item 10)."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_relu import relu
from tests.support.cli import assert_cli_error, run_cli
from tests.support.optional import requires
from tests.support.oracle import as_bits

pytestmark = requires("onnxruntime")


def _bf16_model_with_external_data(folder) -> str:
    """Mul(x, w) with w (4 floats of 3.0) in weights.bin, then a bfloat16 Relu."""
    weight = onnx.numpy_helper.from_array(np.full(4, 3.0, np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "w"], ["m"]),
            helper.make_node("Cast", ["m"], ["b"], to=TensorProto.BFLOAT16),
            helper.make_node("Relu", ["b"], ["y"], name="act"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    folder.mkdir(exist_ok=True)
    path = folder / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, location="weights.bin", size_threshold=0)
    return str(path)


def test_legalize_writes_a_model_with_external_data_into_another_folder(tmp_path):
    import onnxruntime

    from onnx_relu.onnx.ort import run_session

    path = _bf16_model_with_external_data(tmp_path / "models")
    before = {p.name: p.read_bytes() for p in (tmp_path / "models").iterdir()}
    out = tmp_path / "other" / "legal.onnx"
    out.parent.mkdir()
    done = run_cli("legalize", path, out)
    assert done.returncode == 0, done.stderr
    assert "legal.onnx.data" in done.stdout
    assert {p.name for p in out.parent.iterdir()} == {"legal.onnx", "legal.onnx.data"}
    assert {p.name: p.read_bytes() for p in (tmp_path / "models").iterdir()} == before
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    x = np.array([-1.0, 2.0, -0.0, 0.5], np.float32)
    (y,) = run_session(session, {"x": x})
    want = relu((x * 3.0).astype(ml_dtypes.bfloat16))
    assert np.array_equal(as_bits(y), as_bits(want))


def test_legalize_to_standard_output_with_external_data_elsewhere_is_refused(tmp_path):
    path = _bf16_model_with_external_data(tmp_path / "models")
    done = run_cli("legalize", path, "-", cwd=tmp_path)
    assert_cli_error(done, 2, "cannot carry them")


@pytest.mark.parametrize("elem_type", [TensorProto.BFLOAT16, TensorProto.INT16])
def test_check_names_what_stock_onnxruntime_cannot_run_and_what_runs_it(tmp_path, elem_type):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")],
        "g",
        [helper.make_tensor_value_info("x", elem_type, [4])],
        [helper.make_tensor_value_info("y", elem_type, [4])],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    done = run_cli("check", path)
    assert done.returncode == 0, done.stderr
    assert "no findings" in done.stdout
    assert "cannot run 1 of its Relu nodes by itself (Relu node 'act' (node #0)" in done.stderr
    for remedy in ("ort_session", "run --engine onnxruntime", "legalize"):
        assert remedy in done.stderr


def test_check_says_nothing_more_of_a_model_stock_onnxruntime_runs(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    done = run_cli("check", path)
    assert done.returncode == 0 and "cannot run" not in done.stderr, done.stderr
    # a float Relu is known to run in stock without asking onnxruntime: it is not imported
    script = (
        "import sys; from onnx_relu.cli import main; main(['check', sys.argv[1]]);"
        " print('onnxruntime' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=False
    )
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr


def _int16_model(opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT16, [4])],
        [helper.make_tensor_value_info("y", TensorProto.INT16, [4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_legalize_stamps_an_older_ir_version_its_opsets_allow():
    from onnx_relu import legalize
    from onnx_relu.onnx.legalization import run_with_onnxruntime

    model = _int16_model(17)
    assert model.ir_version > 9
    result = legalize(model, ir_version=9)
    assert result.ir_version == 9
    onnx.checker.check_model(result, full_check=True)
    x = np.array([-3, 0, 7, -32768], np.int16)
    (y,) = run_with_onnxruntime(result, {"x": x})
    assert y.tolist() == [0, 0, 7, 0]


def test_legalize_refuses_an_ir_version_older_than_the_opsets_need(tmp_path):
    from onnx_relu import legalize
    from onnx_relu.errors import InvalidModelError

    with pytest.raises(InvalidModelError, match="need IR version 10"):
        legalize(_int16_model(21), ir_version=9)
    path = tmp_path / "m.onnx"
    onnx.save(_int16_model(21), path)
    done = run_cli("legalize", "--ir-version", "9", path, tmp_path / "out.onnx")
    assert_cli_error(done, 2, "need IR version 10")
    assert not (tmp_path / "out.onnx").exists()
    done = run_cli(
        "legalize", "--ir-version", "9", "--convert-opset", "17", path, tmp_path / "o.onnx"
    )
    assert done.returncode == 0, done.stderr
    assert onnx.load(tmp_path / "o.onnx").ir_version == 9


def test_a_model_legalized_for_onnxruntime_1_17_runs_there(tmp_path):
    """onnxruntime 1.17 (its own virtual environment, tests/onnx/test_ort_library_oldest.py)
    refuses the model as legalized for the installed onnxruntime (IR version 10: "max
    supported IR version: 9") and runs it stamped with IR version 9."""
    import json
    import subprocess

    import onnx_relu
    from onnx_relu import legalize
    from tests.onnx.test_ort_library_oldest import DRIVER, oldest_python

    x = np.array([-3, 0, 7, -32768], np.int16)
    onnx.save(legalize(_int16_model(17)), tmp_path / "as_is.onnx")
    onnx.save(legalize(_int16_model(17), ir_version=9), tmp_path / "ir9.onnx")
    for name in ("as_is", "ir9"):
        np.save(tmp_path / f"{name}.npy", x)
    subprocess.run(
        [oldest_python(), str(DRIVER), onnx_relu.ort_library_path(), str(tmp_path)], check=True
    )
    report = json.loads((tmp_path / "errors.json").read_text())
    assert report["onnxruntime"] == "1.17.0"
    assert "IR version" in report["errors"]["as_is"], report
    assert "ir9" not in report["errors"], report
    assert np.load(tmp_path / "ir9.out.npy").tolist() == [0, 0, 7, 0]


def test_legalize_of_a_path_can_read_its_external_data_for_use_in_memory(tmp_path):
    import onnxruntime

    from onnx_relu import legalize
    from onnx_relu.onnx.ort import run_session

    path = _bf16_model_with_external_data(tmp_path / "models")
    kept = legalize(path)
    assert kept.graph.initializer[0].data_location == TensorProto.EXTERNAL
    whole = legalize(path, external_data="read")
    assert whole.graph.initializer[0].data_location != TensorProto.EXTERNAL
    session = onnxruntime.InferenceSession(
        whole.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    x = np.array([-1.0, 2.0, -0.0, 0.5], np.float32)
    (y,) = run_session(session, {"x": x})
    assert np.array_equal(as_bits(y), as_bits(relu((x * 3.0).astype(ml_dtypes.bfloat16))))
    with pytest.raises(ValueError, match="external_data must be"):
        legalize(path, external_data="copy")
