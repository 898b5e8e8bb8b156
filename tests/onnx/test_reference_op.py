"""onnx_relu.onnx.reference.Relu inside onnx's ReferenceEvaluator, and the lazy onnx imports."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from onnx_relu.errors import InvalidModelError, UnsupportedTypeError
from onnx_relu.onnx.reference import Relu
from tests.support.dtypes import ONNX_NAMES
from tests.support.onnx_models import BOUNDARY_OPSETS, allowed_types, relu_model, sample_values
from tests.support.oracle import as_bits, expected_relu

CASES = [(t, opset) for opset in BOUNDARY_OPSETS for t in ONNX_NAMES]


@pytest.mark.parametrize(("onnx_type", "opset"), CASES)
def test_every_type_at_every_boundary_is_exact_or_refused(onnx_type, opset):
    evaluator = ReferenceEvaluator(relu_model(onnx_type, opset, name="ref"), new_ops=[Relu])
    x = sample_values(onnx_type, 544)
    if onnx_type in allowed_types(opset):
        (y,) = evaluator.run(None, {"x": x})
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))
        return
    with pytest.raises(UnsupportedTypeError) as refused:
        evaluator.run(None, {"x": x})
    version = onnx.defs.get_schema("Relu", opset).since_version
    message = str(refused.value)
    assert message.startswith(f"Relu node 'ref': input 'x' has type {onnx_type}.")
    assert f"Relu-{version} (in force at opset {opset})" in message
    assert all(t in message for t in allowed_types(opset))


@pytest.mark.parametrize("opset", [1, 5])
def test_relu1_consumed_inputs_is_accepted(opset):
    model = relu_model("tensor(float)", opset, consumed_inputs=[0])
    (y,) = ReferenceEvaluator(model, new_ops=[Relu]).run(None, {"x": np.array([-2.0, 2.0], "f4")})
    assert y.tolist() == [0.0, 2.0]


def test_consumed_inputs_after_relu1_is_refused():
    with pytest.raises(InvalidModelError, match="'consumed_inputs' is not defined by Relu-6"):
        ReferenceEvaluator(relu_model("tensor(float)", 6, consumed_inputs=[0]), new_ops=[Relu])


def test_onnx_builtin_reference_accepts_what_the_spec_forbids_and_this_op_refuses_it():
    model = relu_model("tensor(int8)", 13)  # int8 needs Relu-14
    x = np.array([-1, 1], np.int8)
    assert ReferenceEvaluator(model).run(None, {"x": x})[0].tolist() == [0, 1]
    with pytest.raises(UnsupportedTypeError, match="tensor\\(int8\\) is allowed from Relu-14"):
        ReferenceEvaluator(model, new_ops=[Relu]).run(None, {"x": x})


def test_a_chain_with_other_operators_runs_each_relu_on_onnx_relu():
    nodes = [
        onnx.helper.make_node("Relu", ["x"], ["a"]),
        onnx.helper.make_node("Neg", ["a"], ["b"]),
        onnx.helper.make_node("Relu", ["b"], ["y"]),
    ]
    graph = onnx.helper.make_graph(
        nodes,
        "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3])],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 14)])
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    (y,) = ReferenceEvaluator(model, new_ops=[Relu]).run(None, {"x": x})
    # Relu(-Relu(x)) is +0 everywhere: Neg makes -0.0 and -2.0, both of which Relu maps to +0
    assert as_bits(y).tolist() == [0, 0, 0]


def _imported_modules_after(code: str) -> set[str]:
    script = code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(output.split())


def _has(modules: set[str], package: str) -> bool:
    return any(m == package or m.startswith(package + ".") for m in modules)


def test_import_onnx_relu_imports_neither_onnx_nor_onnxruntime():
    modules = _imported_modules_after("import onnx_relu")
    assert not _has(modules, "onnx") and not _has(modules, "onnxruntime")


def test_check_model_and_legalize_are_exported_lazily():
    modules = _imported_modules_after(
        "import onnx_relu\n"
        "assert callable(onnx_relu.check_model) and callable(onnx_relu.legalize)\n"
        "assert onnx_relu.Finding.__name__ == 'Finding'"
    )
    assert _has(modules, "onnx") and not _has(modules, "onnxruntime")


def test_legalize_stays_the_function_after_its_module_is_imported():
    _imported_modules_after(
        "import onnx_relu.onnx.legalization, onnx_relu.onnx.check, onnx_relu\n"
        "assert onnx_relu.legalize is onnx_relu.onnx.legalization.legalize\n"
        "assert onnx_relu.check_model is onnx_relu.onnx.check.check_model"
    )


def test_unknown_attribute_of_the_package_is_an_attribute_error():
    import onnx_relu

    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        onnx_relu.nonexistent  # noqa: B018
