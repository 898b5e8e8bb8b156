"""The onnx-relu ONNX backend: model shapes it runs, what it validates, how inputs are fed."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_relu import backend
from onnx_relu.errors import (
    InputTypeMismatchError,
    InvalidModelError,
    InvalidOpsetError,
    ModelInputError,
    OnnxReluError,
    UnsupportedOperatorError,
    UnsupportedTypeError,
)
from tests.support.onnx_models import LATEST_OPSET, relu_model
from tests.support.onnx_models import graph_model as _model  # short: the models are inline
from tests.support.onnx_models import value_info as _vi
from tests.support.oracle import as_bits, expected_relu

F = TensorProto.FLOAT


def _relu(x, y, name="", **attributes):
    return helper.make_node("Relu", [x], [y], name=name, **attributes)


def _mixed_sign(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.fixture
def chained_model():
    """Two inputs, an initializer, a chain of two Relus, and three outputs (one a graph input)."""
    weights = np.array([-2.5, -0.0, 0.0, 3.0], dtype=np.float32)
    nodes = [
        _relu("a", "a1", "first"),
        _relu("a1", "a2", "second"),
        _relu("b", "b1", "on_b"),
        _relu("w", "w1", "on_initializer"),
    ]
    return _model(
        nodes,
        [_vi("a"), _vi("b", TensorProto.DOUBLE, (2, 3))],
        [_vi("a2"), _vi("b1", TensorProto.DOUBLE, (2, 3)), _vi("w1"), _vi("a")],
        initializers=[onnx.numpy_helper.from_array(weights, "w")],
    )


def test_runs_chains_several_inputs_outputs_and_initializers(chained_model):
    a = _mixed_sign(7)
    b = _mixed_sign((2, 3), np.float64, seed=1)
    outputs = backend.run_model(chained_model, [a, b])
    assert outputs._fields == ("a2", "b1", "w1", "a")
    np.testing.assert_array_equal(as_bits(outputs.a2), as_bits(expected_relu(a)))
    np.testing.assert_array_equal(as_bits(outputs["b1"]), as_bits(expected_relu(b)))
    np.testing.assert_array_equal(as_bits(outputs[2]), np.array([0, 0, 0, 0x40400000], np.uint32))
    # a graph output that is a graph input comes back as a copy, never the caller's array
    np.testing.assert_array_equal(outputs.a, a)
    assert not np.shares_memory(outputs.a, a)


def test_inputs_by_name_and_the_input_arrays_are_left_untouched(chained_model):
    a, b = _mixed_sign(5), _mixed_sign((2, 3), np.float64)
    a_before, b_before = a.copy(), b.copy()
    rep = backend.prepare(chained_model)
    by_list = rep.run([a, b])
    by_dict = rep.run({"b": b, "a": a})
    for left, right in zip(by_list, by_dict, strict=True):
        np.testing.assert_array_equal(as_bits(left), as_bits(right))
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)


def test_a_dict_may_override_an_initializer_listed_as_a_graph_input():
    weights = onnx.numpy_helper.from_array(np.array([-1.0, 1.0], np.float32), "w")
    model = _model(
        [_relu("w", "y")], [_vi("w", F, (2,))], [_vi("y", F, (2,))], initializers=[weights]
    )
    assert backend.run_model(model, []).y.tolist() == [0.0, 1.0]
    overridden = backend.run_model(model, {"w": np.array([5.0, -5.0], np.float32)})
    assert overridden.y.tolist() == [5.0, 0.0]


def test_one_array_feeds_a_one_input_model():
    x = _mixed_sign((3, 4))
    (y,) = backend.run_model(relu_model("tensor(float)", 14, shape=(3, 4)), x)
    np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))


def test_bfloat16_tensors_are_ml_dtypes_arrays():
    x = np.array([-1.5, -0.0, 0.0, 2.5, np.inf, -np.inf], dtype=ml_dtypes.bfloat16)
    (y,) = backend.run_model(relu_model("tensor(bfloat16)", 13), [x])
    assert y.dtype == np.dtype(ml_dtypes.bfloat16)
    assert as_bits(y).tolist() == [0, 0, 0, 0x4020, 0x7F80, 0]


def test_byte_swapped_input_is_computed_correctly():
    x = np.array([-1.0, 2.0, -0.0], dtype=">f8")
    (y,) = backend.run_model(relu_model("tensor(double)", 14), [x])
    assert y.tolist() == [0.0, 2.0, 0.0] and np.signbit(y).tolist() == [False] * 3


def test_int64_spelled_q_is_computed_as_int64():
    # issue 13, item 4: numpy's second int64 DType (C long long) was refused with its raw
    # UFuncTypeError by the ufunc under the backend.
    x = np.array([-5, 0, 7, -(2**63), 2**63 - 1], dtype=np.longlong)
    (y,) = backend.run_model(relu_model("tensor(int64)", 14), [x])
    assert y.dtype == np.int64 and y.tolist() == [0, 0, 7, 0, 2**63 - 1]
    (y,) = backend.run_model(relu_model("tensor(int64)", 14), [x.astype(">q")])
    assert y.tolist() == [0, 0, 7, 0, 2**63 - 1]


def test_zero_dimensional_tensor_stays_an_array():
    (y,) = backend.run_model(relu_model("tensor(int32)", 14, shape=()), [np.array(-4, np.int32)])
    assert isinstance(y, np.ndarray) and y.shape == () and y == 0


@pytest.mark.parametrize("opset", [1, 5, 6, 13, 14, LATEST_OPSET])
def test_ai_onnx_domain_spelled_out_works(opset):
    node = helper.make_node("Relu", ["x"], ["y"], domain="ai.onnx")
    model = _model([node], [_vi("x")], [_vi("y")], opset=opset, domain="ai.onnx")
    assert backend.run_model(model, [np.array([-1, 2], np.float32)]).y.tolist() == [0, 2]


@pytest.mark.parametrize("opset", [1, 5])
def test_relu1_consumed_inputs_is_accepted_and_ignored(opset):
    model = relu_model("tensor(float)", opset, consumed_inputs=[0])
    assert backend.run_model(model, [np.array([-1, 2], np.float32)]).y.tolist() == [0, 2]


@pytest.mark.parametrize("opset", [6, 13, 14])
def test_consumed_inputs_is_refused_from_opset_6(opset):
    with pytest.raises(InvalidModelError, match="'consumed_inputs' is not defined by Relu-"):
        backend.prepare(relu_model("tensor(float)", opset, name="old", consumed_inputs=[0]))


def test_unknown_attribute_is_refused():
    with pytest.raises(InvalidModelError, match="attribute 'alpha' is not defined by Relu-14"):
        backend.prepare(relu_model("tensor(float)", 14, alpha=0.1))


def test_other_operators_are_not_implemented_and_make_the_model_incompatible():
    nodes = [_relu("x", "h", "r"), helper.make_node("LeakyRelu", ["h"], ["y"], name="leaky")]
    model = _model(nodes, [_vi("x")], [_vi("y")])
    with pytest.raises(NotImplementedError, match="'LeakyRelu'") as refused:
        backend.prepare(model)
    assert isinstance(refused.value, UnsupportedOperatorError)
    assert "'leaky'" in str(refused.value)
    assert backend.is_compatible(model) is False
    assert backend.is_compatible(relu_model("tensor(float)", 14)) is True


def test_a_relu_of_another_domain_is_not_ai_onnx_relu():
    node = helper.make_node("Relu", ["x"], ["y"], domain="com.example")
    model = helper.make_model(
        helper.make_graph([node], "g", [_vi("x")], [_vi("y")]),
        opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.example", 1)],
    )
    with pytest.raises(UnsupportedOperatorError, match="domain 'com.example'"):
        backend.prepare(model)


def test_refused_type_names_node_input_type_version_and_allowed_types():
    model = relu_model("tensor(int16)", 13, name="r13")
    with pytest.raises(UnsupportedTypeError) as refused:
        backend.prepare(model)
    message = str(refused.value)
    assert message.startswith("Relu node 'r13' (node #0): input 'x' has type tensor(int16).")
    assert "Relu-13 (in force at opset 13)" in message
    assert (
        "allowed types: tensor(bfloat16), tensor(double), tensor(float), tensor(float16)."
        in message
    )
    assert backend.is_compatible(model) is False


def test_type_refused_in_the_middle_of_a_chain_names_that_node():
    nodes = [_relu("x", "h", "fine"), _relu("h", "y", "also")]
    model = _model(nodes, [_vi("x", TensorProto.UINT8)], [_vi("y", TensorProto.UINT8)])
    with pytest.raises(UnsupportedTypeError, match=r"'fine' \(node #0\).*tensor\(uint8\)"):
        backend.prepare(model)


def test_undeclared_input_type_is_checked_when_run():
    x = helper.make_empty_tensor_value_info("x")
    model = _model(
        [_relu("x", "y", "late")], [x], [helper.make_empty_tensor_value_info("y")], opset=13
    )
    rep = backend.prepare(model)
    assert rep.run([np.array([-1.0, 1.0])]).y.tolist() == [0.0, 1.0]
    with pytest.raises(UnsupportedTypeError, match="'late'.*tensor\\(int8\\).*Relu-13"):
        rep.run([np.array([-1, 1], np.int8)])


@pytest.mark.parametrize(
    ("inputs", "error", "match"),
    [
        ([], ModelInputError, r"0 input\(s\) given but the model has 1: \['x'\]"),
        ([np.zeros(2, np.float32)] * 2, ModelInputError, "2 input"),
        ({}, ModelInputError, r"missing input\(s\) \['x'\]"),
        (
            {"x": np.zeros(2, np.float32), "z": 1},
            ModelInputError,
            r"unknown input name\(s\) \['z'\]",
        ),
        (
            [np.zeros(2)],
            InputTypeMismatchError,
            r"input 'x' is declared tensor\(float\) but was fed tensor\(double\)"
            r".*astype\(numpy.float32\)",
        ),
        ([np.zeros(2, np.float16)], InputTypeMismatchError, "fed tensor\\(float16\\)"),
        ([[1.0, 2.0]], InputTypeMismatchError, "fed tensor\\(double\\)"),
        ([np.zeros((2, 2), np.float32)], ModelInputError, r"shape \(2, 2\).*declares \('\?',\)"),
        ("x", ModelInputError, "must be a list"),
    ],
)
def test_bad_inputs_get_clear_errors(inputs, error, match):
    rep = backend.prepare(relu_model("tensor(float)", 14))
    with pytest.raises(error, match=match):
        rep.run(inputs)


def test_input_errors_are_value_errors_and_type_mismatches_also_type_errors():
    assert issubclass(ModelInputError, ValueError)
    assert issubclass(InputTypeMismatchError, ValueError)
    assert issubclass(InputTypeMismatchError, TypeError)
    assert issubclass(UnsupportedOperatorError, NotImplementedError)
    assert issubclass(InvalidModelError, ValueError)


def test_bfloat16_declared_input_refuses_float32_with_a_hint():
    rep = backend.prepare(relu_model("tensor(bfloat16)", 14))
    with pytest.raises(InputTypeMismatchError, match="ml_dtypes.bfloat16"):
        rep.run([np.zeros(2, np.float32)])


def test_fixed_dimensions_are_checked():
    rep = backend.prepare(relu_model("tensor(float)", 14, shape=(2, None)))
    rep.run([np.zeros((2, 5), np.float32)])
    with pytest.raises(ModelInputError, match=r"shape \(3, 5\).*declares \(2, '\?'\)"):
        rep.run([np.zeros((3, 5), np.float32)])


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (_model([_relu("h", "y")], [_vi("x")], [_vi("y")]), "input 'h' is not a graph input"),
        (_model([_relu("x", "x")], [_vi("x")], [_vi("x")]), "already defined"),
        (_model([_relu("x", "y")], [_vi("x")], [_vi("z")]), "graph output 'z' is produced by no"),
        (
            _model([_relu("x", "y")], [_vi("x")], [_vi("y", TensorProto.DOUBLE)]),
            r"declared tensor\(double\) but is tensor\(float\)",
        ),
        (
            _model([helper.make_node("Relu", ["x", "x"], ["y"])], [_vi("x")], [_vi("y")]),
            "exactly one input",
        ),
    ],
)
def test_invalid_models_are_refused_when_prepared(model, match):
    with pytest.raises(InvalidModelError, match=match):
        backend.prepare(model)


def test_a_model_without_an_ai_onnx_opset_is_refused():
    model = relu_model("tensor(float)", 14)
    del model.opset_import[:]
    with pytest.raises(InvalidModelError, match="imports no ai.onnx operator set"):
        backend.prepare(model)


def test_prepare_takes_a_path_or_bytes_and_refuses_corrupt_ones(tmp_path):
    model = relu_model("tensor(float)", 14)
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    x = np.array([-1.0, 3.0], np.float32)
    for source in (path, str(path), model.SerializeToString()):
        assert backend.run_model(source, [x]).y.tolist() == [0.0, 3.0]
    (tmp_path / "bad.onnx").write_bytes(b"\xff\xff not a model")
    for corrupt in (tmp_path / "bad.onnx", b"", b"\x08\x07"):
        with pytest.raises(InvalidModelError):
            backend.prepare(corrupt)
    with pytest.raises(FileNotFoundError):
        backend.prepare(tmp_path / "missing.onnx")


def test_run_node():
    node = helper.make_node("Relu", ["x"], ["y"], name="n")
    x = np.array([-3, 0, 5], np.int64)
    assert backend.run_node(node, [x]).y.tolist() == [0, 0, 5]
    assert backend.run_node(node, {"x": x})[0].tolist() == [0, 0, 5]
    with pytest.raises(UnsupportedTypeError, match="'n'.*tensor\\(int64\\).*Relu-13"):
        backend.run_node(node, [x], opset_version=13)
    old = helper.make_node("Relu", ["x"], ["y"], consumed_inputs=[0])
    assert backend.run_node(old, [np.array([-1.0])], opset_version=1).y.tolist() == [0.0]
    with pytest.raises(InvalidModelError, match="consumed_inputs"):
        backend.run_node(old, [np.array([-1.0])], opset_version=6)
    with pytest.raises(NotImplementedError, match="'Abs'"):
        backend.run_node(helper.make_node("Abs", ["x"], ["y"]), [x])
    with pytest.raises(ModelInputError):
        backend.run_node(node, [x, x])


@pytest.mark.parametrize(
    ("inputs", "words"),
    [(None, "got NoneType"), (b"ab", "got bytes"), ("x", "got str"), (3.5, "got float")],
    ids=["None", "bytes", "str", "float"],
)
def test_run_node_refuses_inputs_that_are_no_list_of_arrays(inputs, words):
    # issue 13, item 12: None gave a plain TypeError, b"ab" "takes one input, got 2".
    node = helper.make_node("Relu", ["x"], ["y"], name="n")
    with pytest.raises(
        ModelInputError, match=f"a list of one array or a dict by input name.*{words}"
    ):
        backend.run_node(node, inputs)


@pytest.mark.parametrize("opset", [0, -1, "14", 1.5])
def test_run_node_refuses_the_opsets_prepare_refuses(opset):
    node = helper.make_node("Relu", ["x"], ["y"], name="n")
    with pytest.raises(InvalidOpsetError, match="opset"):
        backend.run_node(node, [np.array([-1.0, 2.0])], opset_version=opset)
    assert backend.run_node(
        node, [np.array([-1.0, 2.0])], opset_version=LATEST_OPSET
    ).y.tolist() == [0.0, 2.0]


def test_devices():
    assert backend.supports_device("CPU") and backend.supports_device("CPU:0")
    assert not backend.supports_device("CUDA") and not backend.supports_device("TPU")
    with pytest.raises(ValueError, match="'CUDA' is not supported"):
        backend.prepare(relu_model("tensor(float)", 14), device="CUDA")
    assert backend.is_compatible(relu_model("tensor(float)", 14), device="CUDA") is False


def test_every_error_is_an_onnx_relu_error():
    with pytest.raises(OnnxReluError):
        backend.prepare(relu_model("tensor(int8)", 13))


# -- the run path: what is built once, what is checked per call ---------------------------------


def test_output_container_is_built_once_per_prepared_model(chained_model):
    rep = backend.prepare(chained_model)
    a, b = _mixed_sign(7), _mixed_sign((2, 3), np.float64, seed=1)
    first, second = rep.run([a, b]), rep.run({"a": a, "b": b})
    assert type(first) is type(second)  # one namedtuple class, not one per call
    assert first.a is not a and second.a is not a  # graph inputs as outputs are still copies
    np.testing.assert_array_equal(second.a, a)
    # the class is shared by models with the same output names (and so by run_node calls)
    assert type(backend.prepare(chained_model).run([a, b])) is type(first)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (np.zeros((2, 4), dtype=np.float32), ModelInputError),  # wrong rank: (None,) declared
        (np.zeros(4, dtype=np.float64), InputTypeMismatchError),
        (np.zeros(4, dtype=np.float32).astype(">f4"), None),  # byte-swapped: computed
        ([-1.0, 2.0], InputTypeMismatchError),  # a list is float64 to numpy
        (np.float32(-3.0), ModelInputError),  # 0-d where one axis is declared
    ],
)
def test_each_call_checks_what_it_feeds(value, error):
    # The quick path takes only exact arrays of the declared type and shape; everything else
    # goes through the general checks, whose errors are the same as before the quick path.
    rep = backend.prepare(relu_model("tensor(float)", LATEST_OPSET))
    good = _mixed_sign(5)
    np.testing.assert_array_equal(rep.run([good])[0], expected_relu(good))
    if error is None:
        y = rep.run([value])[0]
        np.testing.assert_array_equal(y, expected_relu(value))
    else:
        with pytest.raises(error):
            rep.run([value])
    np.testing.assert_array_equal(rep.run((good,))[0], expected_relu(good))


def test_large_outputs_come_from_the_output_cache():
    from onnx_relu.output_cache import cache_info

    rep = backend.prepare(relu_model("tensor(float)", LATEST_OPSET))
    x = _mixed_sign(1 << 20)  # 4 MiB: above the cache's 1 MiB minimum
    rep.run([x])  # its output, freed at once, leaves a block in the cache
    hits = cache_info()["hits"]
    (y,) = rep.run([x])
    assert cache_info()["hits"] == hits + 1
    np.testing.assert_array_equal(y, expected_relu(x))


@pytest.mark.parametrize("opset", [LATEST_OPSET + 1, 99, 10**6])
def test_an_opset_newer_than_onnx_knows_selects_relu_14_at_every_entry_point(opset, tmp_path):
    # One rule for every entry point: accepted, with the newest Relu version (as onnx's own
    # get_schema("Relu", opset) gives Relu-14), never refused by one and accepted by another.
    import onnx

    import onnx_relu
    from tests.support.cli import run_cli

    assert onnx.defs.get_schema("Relu", opset).since_version == 14
    x = np.array([-3, 0, 3], np.int8)  # allowed from Relu-14 on only
    assert onnx_relu.relu(x, opset=opset).tolist() == [0, 0, 3]
    node = helper.make_node("Relu", ["x"], ["y"], name="n")
    assert backend.run_node(node, [x], opset_version=opset).y.tolist() == [0, 0, 3]
    model = _model(
        [_relu("x", "y")], [_vi("x", TensorProto.INT8)], [_vi("y", TensorProto.INT8)], opset=opset
    )
    assert backend.prepare(model).run([x])[0].tolist() == [0, 0, 3]
    assert onnx_relu.check_model(model) == []
    np.save(tmp_path / "x.npy", x)
    done = run_cli("apply", "--opset", str(opset), str(tmp_path / "x.npy"), str(tmp_path / "y.npy"))
    assert done.returncode == 0, done.stderr
    assert np.load(tmp_path / "y.npy").tolist() == [0, 0, 3]
    message = str(
        pytest.raises(
            onnx_relu.UnsupportedTypeError, onnx_relu.relu, x.astype(np.uint8), opset=opset
        ).value
    )
    assert f"Relu-14 (in force at opset {opset})" in message
