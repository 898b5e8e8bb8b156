"""Opening a model with external weights costs what onnxruntime's own opening costs.

check_model, legalize, ``onnx-relu check`` and ort_session judge Relu nodes from the tensors'
protos (types and shapes) and never read external data; until issue 26 they read it all in
below 2 GiB (a 191 MiB model cost +961 MB of peak memory). Each case runs in a child process of
its own and reports its peak resident memory (``ru_maxrss``); the model is Add(x, W) -> Relu
with W = 256 MiB of float32 stored as external data, in a sparse file (no disk is written, and
what reads it reads zeros).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest
from onnx import TensorProto, helper

from tests.support.optional import requires

pytestmark = requires("onnxruntime")

WEIGHT_BYTES = 256 << 20
ELEMENTS = WEIGHT_BYTES // 4

PROBE = r"""
import json, resource, sys
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import numpy, onnx, onnxruntime, onnx_relu
import onnx_relu.onnx.check, onnx_relu.onnx.legalization, onnx_relu.cli
case, path = sys.argv[1], sys.argv[2]
imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if case == "by-hand":
    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(onnx_relu.ort_library_path())
    onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
elif case == "ort_session":
    onnx_relu.ort_session(path)
elif case == "ort_session-exact":
    onnx_relu.ort_session(path, exact=True)
elif case == "check_model":
    assert onnx_relu.check_model(path) == []
elif case == "legalize":
    onnx_relu.legalize(path, exact=True)
elif case == "cli-check":
    assert onnx_relu.cli.main(["check", path]) == 0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"imported_kib": imported, "peak_kib": peak}))
"""


@pytest.fixture(scope="module")
def weighty_model(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("external")
    with open(folder / "weights.bin", "wb") as stream:
        stream.truncate(WEIGHT_BYTES)
    weight = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[ELEMENTS])
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(WEIGHT_BYTES))):
        weight.external_data.add(key=key, value=value)
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "W"], ["a"], name="add"),
            helper.make_node("Relu", ["a"], ["y"], name="act"),
        ],
        "weighty",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ELEMENTS])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ELEMENTS])],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = folder / "model.onnx"
    onnx.save_model(model, path)  # the tensor already names its file: nothing inlined
    assert os.path.getsize(path) < 4096
    return str(path)


def peak_mib(case: str, path: str) -> float:
    """The child's peak resident memory above what its imports took, in MiB."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, case, path], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return (report["peak_kib"] - report["imported_kib"]) / 1024


@pytest.mark.parametrize("case", ["check_model", "legalize", "cli-check"])
def test_judging_relu_never_reads_the_external_weights(weighty_model, case):
    assert peak_mib(case, weighty_model) < 48  # the weights are 256 MiB


@pytest.mark.parametrize("case", ["ort_session", "ort_session-exact"])
def test_ort_session_opens_it_at_onnxruntimes_own_cost(weighty_model, case):
    by_hand = peak_mib("by-hand", weighty_model)
    ours = peak_mib(case, weighty_model)
    # ort_session-exact hands onnxruntime the model's proto as bytes (the Relu pointed at the
    # library's domain); the weights stay in their file either way.
    assert ours <= 1.2 * by_hand + 24, (ours, by_hand)


def test_legalize_keeps_the_external_data_as_it_found_it(weighty_model, tmp_path):
    import onnx_relu

    result = onnx_relu.legalize(weighty_model, exact=True)
    (weight,) = result.graph.initializer
    assert weight.data_location == TensorProto.EXTERNAL
    assert {entry.key: entry.value for entry in weight.external_data} == {
        "location": "weights.bin",
        "offset": "0",
        "length": str(WEIGHT_BYTES),
    }
