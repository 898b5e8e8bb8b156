"""The onnx-relu library in the oldest onnxruntime it supports, 1.17.0 (the first with API
version 17, which the library asks for: opset ranges for custom ops, KernelContext_ParallelFor),
in a virtual environment of its own under build/ (created once: onnxruntime 1.17.0 needs
numpy < 2, so it cannot share the test environment).

The models are built here (onnx, IR version 9 and opsets up to 19: what 1.17 reads), their Relu
nodes in the library's own domain (so that the library runs them at every opset), and run there
by tests/support/ort_oldest_driver.py, which has only onnxruntime and numpy. bfloat16 goes in
as a Relu of an initializer and comes out through Cast(float): onnxruntime 1.17's Python API
cannot bind bfloat16 buffers.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_relu
from onnx_relu.onnx.ort_library import ORT_LIBRARY_DOMAIN
from tests.support import REPOSITORY
from tests.support.dtypes import ONNX_NAMES, relu_type
from tests.support.onnx_models import allowed_types, relu_model, sample_values
from tests.support.oracle import as_bits, expected_relu

OLDEST_ORT = "1.17.0"
VENV = REPOSITORY / "build" / f"ort-{OLDEST_ORT}-venv"
DRIVER = REPOSITORY / "tests" / "support" / "ort_oldest_driver.py"
OPSETS = (1, 5, 6, 12, 13, 14, 18, 19)  # every Relu version, both sides of each change
IR_VERSION = 9


def oldest_python() -> str:
    """The old environment's interpreter, made on first use (a stamp marks a finished one)."""
    python, stamp = VENV / "bin" / "python", VENV / ".installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"onnxruntime=={OLDEST_ORT}",
                "numpy<2",
            ],
            check=True,
        )
        stamp.touch()
    return str(python)


def bfloat16_model(x: np.ndarray, opset: int) -> onnx.ModelProto:
    bits = numpy_helper.from_array(x.view(np.uint16), "x")
    initializer = helper.make_tensor("x", TensorProto.BFLOAT16, x.shape, bits.raw_data, raw=True)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="act"),
        helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT, name="widen"),
    ]
    graph = helper.make_graph(
        nodes,
        "bf16",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))],
        initializer=[initializer],
    )
    return in_library_domain(
        helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION
        )
    )


def in_library_domain(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its Relu nodes in the library's domain (what ort_session(exact=True) does)."""
    for node in model.graph.node:
        if node.op_type == "Relu":
            node.domain = ORT_LIBRARY_DOMAIN
    model.opset_import.append(helper.make_opsetid(ORT_LIBRARY_DOMAIN, 1))
    return model


def test_every_allowed_type_and_opset_runs_bit_exactly_in_onnxruntime_1_17(tmp_path):
    cases = {}
    for opset in OPSETS:
        for onnx_type in ONNX_NAMES:
            if onnx_type not in allowed_types(opset):
                continue
            name = f"{relu_type(onnx_type).name}_opset{opset}"
            x = sample_values(onnx_type, 1029)
            if onnx_type == "tensor(bfloat16)":
                model = bfloat16_model(x, opset)
            else:
                model = in_library_domain(relu_model(onnx_type, opset, shape=("n",), name="act"))
                model.ir_version = IR_VERSION
                np.save(tmp_path / f"{name}.npy", x)
            onnx.save(model, tmp_path / f"{name}.onnx")
            cases[name] = (onnx_type, x)
    assert len(cases) == 3 * 4 + 4 + 8 * 3

    subprocess.run(
        [oldest_python(), str(DRIVER), onnx_relu.ort_library_path(), str(tmp_path)],
        check=True,
        timeout=300,
    )
    report = json.loads((tmp_path / "errors.json").read_text())
    assert report["onnxruntime"] == OLDEST_ORT
    assert report["errors"] == {}
    for name, (onnx_type, x) in cases.items():
        y = np.load(tmp_path / f"{name}.out.npy")
        want = expected_relu(x)
        if onnx_type == "tensor(bfloat16)":
            # Cast(float) of bfloat16 is exact except that it may quiet a NaN: compare the bits
            # of every number, and NaN-ness where the result is a NaN.
            widened = want.astype(np.float32)
            nan = np.isnan(widened)
            assert np.array_equal(np.isnan(y), nan), name
            assert np.array_equal(y[~nan].view(np.uint32), widened[~nan].view(np.uint32)), name
        else:
            assert y.dtype == x.dtype, name
            assert np.array_equal(as_bits(y), as_bits(want)), name


def test_the_oldest_environment_is_separate_and_old():
    python = oldest_python()
    out = subprocess.run(
        [
            python,
            "-c",
            "import numpy, onnxruntime;print(onnxruntime.__version__, numpy.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[0] == OLDEST_ORT and out[1].startswith("1.")
