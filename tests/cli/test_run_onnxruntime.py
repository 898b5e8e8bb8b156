"""``onnx-relu run MODEL ... --engine onnxruntime``: any model, through onnxruntime with the
onnx-relu library, on tensor files (bfloat16 included), as a subprocess of the installed command.
Its refusals of bad input are tested with the default engine's, in test_models.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")  # `make test` installs onnx and onnxruntime
from onnx import helper  # noqa: E402

from onnx_relu.files import read_tensor, write_tensor  # noqa: E402
from tests.support.cli import assert_cli_error, run_cli  # noqa: E402
from tests.support.dtypes import TYPE_NAMES, relu_type  # noqa: E402
from tests.support.onnx_models import add_relu_mul_model  # noqa: E402
from tests.support.oracle import assert_relu_exact  # noqa: E402
from tests.support.values import mixed_values  # noqa: E402


def save_relu_model(path: Path, type_name: str, opset: int) -> Path:
    elem = relu_type(type_name).elem_type
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"], name="act")],
        "one",
        [helper.make_tensor_value_info("X", elem, ["n", 3])],
        [helper.make_tensor_value_info("Y", elem, ["n", 3])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


@pytest.mark.parametrize("type_name", TYPE_NAMES)
@pytest.mark.parametrize("suffix", ["npy", "pb"])
def test_every_type_runs_exactly_through_files(tmp_path, type_name, suffix):
    model = save_relu_model(tmp_path / "m.onnx", type_name, 21)
    x = mixed_values(relu_type(type_name).dtype, 90).reshape(-1, 3)
    write_tensor(tmp_path / f"x.{suffix}", x)
    done = run_cli(
        "run",
        model,
        "-i",
        f"X={tmp_path / f'x.{suffix}'}",
        "-o",
        tmp_path / "out",
        "--format",
        suffix,
        "--engine",
        "onnxruntime",
        "--threads",
        "2",
        "--exact",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert_relu_exact(read_tensor(tmp_path / "out" / f"Y.{suffix}"), x)


def test_without_exact_onnxruntime_keeps_its_own_float_relu(tmp_path):
    """The default: onnxruntime's own Relu for the types it runs (-0.0 stays -0.0, as stock
    onnxruntime gives it); --exact makes it the library's (+0.0)."""
    model = save_relu_model(tmp_path / "m.onnx", "float32", 21)
    write_tensor(tmp_path / "x.npy", np.array([[-0.0, 1.0, 2.0]], np.float32))
    for flags, negative_zero in [((), True), (("--exact",), False)]:
        done = run_cli(
            "run", model, "-i", f"X={tmp_path / 'x.npy'}", "-o", tmp_path / "out",
            "--engine", "onnxruntime", *flags,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        y = read_tensor(tmp_path / "out" / "Y.npy")
        assert y.tolist() == [[0.0, 1.0, 2.0]] and bool(np.signbit(y[0, 0])) is negative_zero


def test_a_model_with_other_operators_runs(tmp_path):
    model = tmp_path / "mixed.onnx"  # onnxruntime alone has no int64 Relu at opset 21
    onnx.save(add_relu_mul_model(21, scale_is_input=True), model)
    x = np.arange(-20, 20, dtype=np.int64)
    scale = np.full(40, 3, dtype=np.int64)
    write_tensor(tmp_path / "x.npy", x)
    write_tensor(tmp_path / "scale.pb", scale)
    inputs = ["-i", f"x={tmp_path / 'x.npy'}", "-i", f"scale={tmp_path / 'scale.pb'}"]
    done = run_cli("run", model, *inputs, "-o", tmp_path / "out", "--engine", "onnxruntime")
    assert done.returncode == 0, done.stderr
    assert read_tensor(tmp_path / "out" / "y.npy").tolist() == (np.maximum(x - 5, 0) * 3).tolist()
    # the default engine runs models made of Relu nodes only
    refused = run_cli("run", model, *inputs, "-o", tmp_path / "out2")
    assert_cli_error(refused, 2, "Add")


def test_without_onnxruntime_the_error_names_the_extra(tmp_path):
    """Where onnxruntime cannot be imported (CPython 3.15 has no wheel yet), the one line names
    the extra that installs it; nothing is written."""
    import os
    import subprocess

    from tests.support.cli import SCRIPT

    blocker = tmp_path / "blocker" / "onnxruntime"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(  # as Python reports a module that is not installed
        "raise ModuleNotFoundError(\"No module named 'onnxruntime'\", name='onnxruntime')\n"
    )
    model = save_relu_model(tmp_path / "m.onnx", "float", 14)
    write_tensor(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    env = {**os.environ, "PYTHONPATH": str(blocker.parent)}
    done = subprocess.run(
        [SCRIPT, "run", "m.onnx", "-i", "x.npy", "-o", "out", "--engine", "onnxruntime"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False,
    )  # fmt: skip
    line = assert_cli_error(done, 1, "--engine onnxruntime needs onnxruntime (No module named")
    assert 'it comes with onnx-relu\'s "ort" extra' in line and "install it with: " in line
    assert not (tmp_path / "out").exists()
    assert model.exists()
