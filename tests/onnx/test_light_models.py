"""onnx's nine "light" models (shipped in the onnx package): onnx-relu's Relu inside onnx's
reference evaluator, and every Relu node as run by onnxruntime against onnx_relu.relu."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from onnx_relu.onnx import reference
from tests.support import REPOSITORY

_TOOL = REPOSITORY / "tools" / "compare_light_models.py"
_spec = importlib.util.spec_from_file_location("compare_light_models", _TOOL)
light = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = light  # dataclasses look their module up there
_spec.loader.exec_module(light)

#: Relu nodes per model, as counted in the field notes (387 together).
EXPECTED_RELU_NODES = {
    "light_bvlc_alexnet.onnx": 7,
    "light_densenet121.onnx": 121,
    "light_inception_v1.onnx": 57,
    "light_inception_v2.onnx": 69,
    "light_resnet50.onnx": 49,
    "light_shufflenet.onnx": 33,
    "light_squeezenet.onnx": 26,
    "light_vgg19.onnx": 18,
    "light_zfnet512.onnx": 7,
}


class Relu(reference.Relu):
    """onnx-relu's reference op, counting its calls (the evaluator needs the name Relu)."""

    calls = 0

    def _run(self, x, consumed_inputs=None):
        type(self).calls += 1
        return super()._run(x, consumed_inputs)


@pytest.mark.parametrize("name", ["light_bvlc_alexnet.onnx", "light_shufflenet.onnx"])
def test_reference_evaluator_gives_the_same_outputs_with_onnx_relu_relu(name):
    (path,) = [p for p in light.light_model_paths() if os.path.basename(p) == name]
    model = onnx.load(path)
    feeds = light.random_feeds(model, seed=0)
    builtin = ReferenceEvaluator(model).run(None, feeds)
    Relu.calls = 0
    ours = ReferenceEvaluator(model, new_ops=[Relu]).run(None, feeds)
    assert Relu.calls == EXPECTED_RELU_NODES[name]  # every Relu node ran on onnx-relu
    assert len(ours) == len(builtin)
    for left, right in zip(ours, builtin, strict=True):
        assert left.dtype == right.dtype and left.shape == right.shape
        np.testing.assert_array_equal(left.view(np.uint32), right.view(np.uint32))


def test_every_relu_node_of_the_light_models_agrees_with_onnxruntime(capsys):
    comparisons = light.compare_light_models(seed=0)
    assert {c.name: c.relu_nodes for c in comparisons} == EXPECTED_RELU_NODES
    for c in comparisons:
        assert c.elements > 0 and 0 < c.zeroed < c.elements, c
        # the only documented difference is onnxruntime's -0.0; nothing else may differ
        assert set(c.differences) <= {"-0.0 returned as -0.0 (onnx-relu: +0.0)"}, c
    with capsys.disabled():
        print(
            f"\nlight models: {len(comparisons)} models,"
            f" {sum(c.relu_nodes for c in comparisons)} Relu nodes,"
            f" {sum(c.elements for c in comparisons)} elements compared with onnxruntime,"
            f" differences: {[c.differences for c in comparisons if c.differences] or 'none'}"
        )
