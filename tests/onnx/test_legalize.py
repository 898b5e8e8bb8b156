"""onnx_relu.legalize, run for real in onnxruntime: it rewrites exactly the Relu nodes
onnxruntime cannot run, and the rewritten ones give onnx-relu's values bit for bit."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.support.optional import NO_ONNXRUNTIME

# legalize probes onnxruntime for what it runs: every test here needs it.
pytest.importorskip("onnxruntime", reason=NO_ONNXRUNTIME)

from onnx_relu import check_model, legalize
from onnx_relu.errors import InvalidModelError, LegalizationError
from onnx_relu.onnx.legalization import probe_onnxruntime, run_with_onnxruntime
from onnx_relu.onnx.ort import inference_session, run_model
from onnx_relu.onnx.probe import onnxruntime_loads, stock_has_kernel
from tests.support.dtypes import ONNX_NAMES
from tests.support.onnx_models import LATEST_OPSET, allowed_types, relu_model, sample_values
from tests.support.onnxruntime_reach import skip_if_onnxruntime_predates
from tests.support.oracle import as_bits, expected_relu

OPSETS = (13, 14, 17, 18, LATEST_OPSET)
CASES = [(t, o) for o in OPSETS for t in ONNX_NAMES if t in allowed_types(o)]


def _onnxruntime_runs(model: onnx.ModelProto) -> bool:
    try:
        inference_session(model)
    except Exception as error:  # noqa: BLE001 - onnxruntime's own exception classes
        assert "NOT_IMPLEMENTED" in str(error), error
        return False
    return True


def _all_names_unique(model: onnx.ModelProto) -> bool:
    names = [n.name for n in model.graph.node if n.name]
    produced = [o for n in model.graph.node for o in n.output]
    return len(names) == len(set(names)) and len(produced) == len(set(produced))


@pytest.mark.parametrize(("onnx_type", "opset"), CASES)
def test_one_relu_model_runs_after_legalize_and_rewrites_only_what_it_must(onnx_type, opset):
    skip_if_onnxruntime_predates(opset)
    x = sample_values(onnx_type, 544)
    model = relu_model(onnx_type, opset, shape=("n",), name="relu")
    ran_before = _onnxruntime_runs(model)
    legalized = legalize(model)
    onnx.checker.check_model(legalized, full_check=True)
    assert check_model(legalized) == []
    op_types = [node.op_type for node in legalized.graph.node]
    assert (op_types == ["Relu"]) == ran_before  # untouched exactly when onnxruntime runs it
    assert legalized.graph.node[-1].name == "relu" and legalized.graph.node[-1].output == ["y"]
    assert _all_names_unique(legalized)
    (y,) = run_model(legalized, {"x": x})
    if not ran_before:
        np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))


@pytest.mark.parametrize(("onnx_type", "opset"), CASES)
def test_exact_mode_gives_onnx_relu_values_for_every_type(onnx_type, opset):
    skip_if_onnxruntime_predates(opset)
    x = sample_values(onnx_type, 544)
    legalized = legalize(relu_model(onnx_type, opset, shape=("n",)), exact=True)
    onnx.checker.check_model(legalized, full_check=True)
    (y,) = run_model(legalized, {"x": x})
    np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))


def test_bfloat16_int16_int64_need_legalize_and_then_run_with_equal_values():
    for onnx_type in ("tensor(bfloat16)", "tensor(int16)", "tensor(int64)"):
        model = relu_model(onnx_type, 17, shape=(None,))
        assert not _onnxruntime_runs(model)
        x = sample_values(onnx_type)
        (y,) = run_with_onnxruntime(legalize(model), {"x": x})
        np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))


def test_which_nodes_are_rewritten_comes_from_probing_onnxruntime():
    # onnxruntime inlines Relu-14's function body at opset 18 only: int64 runs there.
    assert probe_onnxruntime("tensor(int64)", 18).runs
    assert not probe_onnxruntime("tensor(int64)", 17).runs
    assert [n.op_type for n in legalize(relu_model("tensor(int64)", 18)).graph.node] == ["Relu"]
    assert [n.op_type for n in legalize(relu_model("tensor(int64)", 17)).graph.node] == [
        "Constant",
        "Max",
    ]


def test_probe_reports_onnxruntime_differences():
    float_probe = probe_onnxruntime("tensor(float)", 14)
    assert float_probe.runs and not float_probe.exact
    assert float_probe.differences == ("-0.0 (0x80000000) -> 0x80000000 (onnx-relu: 0x00000000)",)
    bfloat16_probe = probe_onnxruntime("tensor(bfloat16)", 14)
    assert not bfloat16_probe.runs and "NOT_IMPLEMENTED" in bfloat16_probe.error
    assert probe_onnxruntime("tensor(bfloat16)", 14, "select").exact


def _mixed_int64_model(opset: int) -> onnx.ModelProto:
    """Add -> Relu(int64) -> Mul, plus a value already named like a rewrite helper."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Add", ["a", "b"], ["relu/zero"], name="add"),
        helper.make_node("Relu", ["relu/zero"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "b"], ["y"], name="mul"),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [helper.make_tensor_value_info(n, i64, [4]) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", i64, [4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [14, 17, LATEST_OPSET])
def test_mixed_model_other_nodes_untouched_and_values_equal(opset):
    skip_if_onnxruntime_predates(opset)
    model = _mixed_int64_model(opset)
    before = model.SerializeToString()
    legalized = legalize(model)
    assert model.SerializeToString() == before  # the input model is not modified
    onnx.checker.check_model(legalized, full_check=True)
    nodes = list(legalized.graph.node)
    assert nodes[0] == model.graph.node[0] and nodes[-1] == model.graph.node[2]
    assert [n.op_type for n in nodes] == ["Add", "Constant", "Max", "Mul"]
    assert nodes[2].name == "relu" and nodes[2].output == ["r"]
    assert nodes[1].name == "relu/zero_2"  # "relu/zero" was taken by a value of the model
    assert _all_names_unique(legalized)
    a = np.array([-5, 0, 7, np.iinfo(np.int64).min + 3], np.int64)
    b = np.array([2, -3, 1, -3], np.int64)
    (y,) = run_model(legalized, {"a": a, "b": b})
    from onnx_relu import relu

    np.testing.assert_array_equal(y, relu(a + b) * b)


def test_bfloat16_chain_in_a_subgraph_is_rewritten_and_runs():
    bf16 = TensorProto.BFLOAT16
    branch = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["h"], name="inner1"),
            helper.make_node("Relu", ["h"], ["b"], name="inner2"),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("b", bf16, [None])],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["b2"])],
        "else",
        [],
        [helper.make_tensor_value_info("b2", bf16, [None])],
    )
    node = helper.make_node(
        "If", ["c"], ["y"], name="choose", then_branch=branch, else_branch=other
    )
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x0"], ["x"], name="outer"), node],
        "g",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x0", bf16, [None]),
        ],
        [helper.make_tensor_value_info("y", bf16, [None])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    legalized = legalize(model)
    onnx.checker.check_model(legalized, full_check=True)
    assert check_model(legalized) == []
    x = sample_values("tensor(bfloat16)")
    (y,) = run_model(legalized, {"c": np.array(True), "x0": x})
    np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))


@pytest.mark.parametrize("opset", [1, 5])
def test_opsets_1_to_5_cannot_be_legalized(opset):
    with pytest.raises(LegalizationError, match="implements no Relu-1.*convert_version"):
        legalize(relu_model("tensor(float)", opset))


def test_exact_mode_below_opset_13_is_refused_for_floats():
    with pytest.raises(LegalizationError, match="not with onnx-relu's values"):
        legalize(relu_model("tensor(float)", 12), exact=True)
    assert legalize(relu_model("tensor(float)", 12)).graph.node[0].op_type == "Relu"


def test_invalid_relu_nodes_are_refused():
    with pytest.raises(InvalidModelError, match="check_model found:\n.*tensor\\(int8\\)"):
        legalize(relu_model("tensor(int8)", 13))


def test_unknown_target():
    with pytest.raises(ValueError, match="only target is 'onnxruntime'"):
        legalize(relu_model("tensor(float)", 14), target="tensorrt")


def test_model_without_relu_is_copied():
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph)
    legalized = legalize(model)
    assert legalized == model and legalized is not model


@pytest.mark.parametrize("onnx_type", ["tensor(bfloat16)", "tensor(int16)", "tensor(int64)"])
@pytest.mark.parametrize("shape", [(), (0, 3), (3, 5)])
def test_rewrites_keep_scalars_empty_and_strided_tensors(onnx_type, shape):
    x = sample_values(onnx_type, int(np.prod(shape))).reshape(shape)
    x = x.T  # a non-contiguous view for the 2-D shapes
    legalized = legalize(relu_model(onnx_type, 17, shape=x.shape))
    (y,) = run_with_onnxruntime(legalized, {"x": x})
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))


def _graph_model(nodes, elem_type=TensorProto.BFLOAT16):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", elem_type, [4])],
        [helper.make_tensor_value_info("z", elem_type, [4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _relu(source: str, target: str, name: str) -> onnx.NodeProto:
    return helper.make_node("Relu", [source], [target], name=name)


@pytest.mark.parametrize(
    "nodes",
    [
        [_relu("y", "z", "b"), _relu("x", "y", "a")],  # unsorted: z's producer first
        [_relu("x", "y", "a"), _relu("x", "y", "a2"), _relu("y", "z", "b")],  # not SSA
    ],
    ids=["unsorted", "not-ssa"],
)
def test_legalize_keeps_the_graphs_structure_as_it_is_and_rewrites_only_relu_nodes(nodes):
    # issue 30: legalize neither sorts nor validates a graph's structure (onnx's checker does,
    # with full_check=True); an unsorted or non-SSA graph comes back with the same node order
    # and names, each Relu rewritten in its place, and onnx's checker refuses it as before.
    model = _graph_model(nodes)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model, full_check=True)
    result = legalize(model)
    relu_outputs = [n.output[0] for n in model.graph.node]
    assert [o for n in result.graph.node for o in n.output if o in relu_outputs] == relu_outputs
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(result, full_check=True)


@pytest.mark.parametrize(
    ("onnx_type", "opsets_and_rewrites"),
    [
        ("tensor(int8)", {14: ["cast-int32", "max-zero"]}),
        ("tensor(int16)", {14: ["cast-int32", "max-zero"]}),
        ("tensor(int32)", {14: ["max-zero"]}),
        ("tensor(int64)", {14: ["max-zero"]}),
        ("tensor(float)", {6: [], 12: [], 13: ["select"]}),
        ("tensor(float16)", {6: [], 13: ["select"], 21: ["select"]}),
        ("tensor(bfloat16)", {13: ["select"], 14: ["select"]}),
        ("tensor(double)", {12: [], 13: ["select"]}),
    ],
)
def test_rewrites_for_names_the_rewrites_each_type_and_opset_allows(onnx_type, opsets_and_rewrites):
    """Which rewrites apply is read from the type's record (integer or float, and its width), not
    from a list of names: int8/int16 widen to int32, integers take Max, floats from opset 13
    take select."""
    from onnx_relu.onnx.legalization import rewrites_for

    for opset, expected in opsets_and_rewrites.items():
        assert rewrites_for(onnx_type, opset) == expected, opset


def test_cast_int32_makes_three_nodes_named_after_the_relu():
    """The rewrite's nodes, names and helper values, as legalize writes them (a change here
    changes every legalized model)."""
    from onnx_relu.onnx.legalization import REWRITES

    names = iter(range(10))
    nodes = REWRITES["cast-int32"](
        "x", "y", "tensor(int16)", 14, "", lambda role: f"relu/{role}_{next(names)}", "relu"
    )
    assert nodes is not None
    assert [(n.op_type, list(n.input), list(n.output), n.name) for n in nodes] == [
        ("Cast", ["x"], ["relu/to_int32_0"], "relu/to_int32_0"),
        ("Relu", ["relu/to_int32_0"], ["relu/relu_int32_1"], "relu/relu_int32_1"),
        ("Cast", ["relu/relu_int32_1"], ["y"], "relu"),
    ]
    assert [a.i for n in nodes for a in n.attribute] == [TensorProto.INT32, TensorProto.INT16]
    assert REWRITES["cast-int32"]("x", "y", "tensor(int32)", 14, "", str, "relu") is None


@pytest.mark.parametrize("onnx_type", ONNX_NAMES)
def test_the_stock_kernel_table_holds_for_the_installed_onnxruntime(onnx_type):
    """What ``stock_has_kernel`` answers without asking onnxruntime is what the installed
    onnxruntime answers (this runs on the newest and the oldest allowed, in CI), at each opset
    that onnxruntime knows: one at which it loads a Relu of some type (an older onnxruntime
    refuses a model of a newer opset whatever its types)."""
    known_opsets = [
        opset
        for opset in range(1, LATEST_OPSET + 1)
        if any(onnxruntime_loads(name, opset) for name in ONNX_NAMES)
    ]
    assert known_opsets, "onnxruntime loads no Relu at any opset"
    known = [opset for opset in known_opsets if stock_has_kernel(onnx_type, opset)]
    loads = [opset for opset in known if onnxruntime_loads(onnx_type, opset)]
    assert loads == known, f"{onnx_type}: the table says {known}, onnxruntime loads {loads}"
    if onnx_type in ("tensor(float)", "tensor(int8)"):
        assert known, "the table knows float and int8"  # (it is not empty)
