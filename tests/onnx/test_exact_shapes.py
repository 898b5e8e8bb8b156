"""The exact route keeps every shape (issue 34, item 6): the library's Relu passes symbolic and
unknown dimensions through as they are, so ``ort_session(exact=True)`` runs what the default
runs, and onnxruntime prints nothing on each call."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ort = pytest.importorskip("onnxruntime")
from onnx_relu.onnx.ort_library import ort_run, ort_session  # noqa: E402


def _quiet_options():
    return ort.SessionOptions()  # default severity (warnings shown): what a user sees


def _skl2onnx_models():
    pytest.importorskip("sklearn")
    skl2onnx = pytest.importorskip("skl2onnx")
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 20)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0).astype(int)
    pipeline = make_pipeline(
        StandardScaler(), MLPClassifier(hidden_layer_sizes=(16,), max_iter=30, random_state=0)
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a convergence warning: 30 iterations are enough here
        pipeline.fit(x, labels)
    named = skl2onnx.convert_sklearn(
        pipeline,
        initial_types=[("input", FloatTensorType([None, 20]))],
        options={"zipmap": False},
        target_opset={"": 15, "ai.onnx.ml": 1},
    )
    mlp = pipeline[-1]
    unnamed = skl2onnx.convert_sklearn(
        mlp,
        initial_types=[("input", FloatTensorType([None, 20]))],
        options={"zipmap": False},
        target_opset={"": 15, "ai.onnx.ml": 1},
    )
    return x, {"pipeline": named, "mlp": unnamed}


@pytest.mark.parametrize("which", ["pipeline", "mlp"])
def test_exact_runs_skl2onnx_models_silently_with_the_defaults_results(which, capfd):
    x, models = _skl2onnx_models()
    model = models[which]
    data = model.SerializeToString()
    stock = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = stock.run(None, {"input": x[:8]})
    capfd.readouterr()
    for exact in (False, True):
        session = ort_session(model, _quiet_options(), exact=exact)
        for rows in (8, 3, 8):
            got = ort_run(session, None, {"input": x[:rows]})
            reference = stock.run(None, {"input": x[:rows]})
            for a, b in zip(got, reference, strict=True):
                assert a.shape == b.shape
                np.testing.assert_array_equal(a, b)
        del session
    captured = capfd.readouterr()
    assert "VerifyOutputSizes" not in captured.err and captured.err == "", captured.err
    assert [w.shape for w in want] == [(8,), (8, 3)] or len(want) == 2


def _relu_model(shape: list[object]) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Shape", ["r"], ["s"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [
            helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("s", TensorProto.INT64, None),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    "shape",
    [["n", 3], [None, 3], [2, None, "k"], None, []],
    ids=["named", "unnamed", "mixed", "unknown-rank", "scalar"],
)
def test_the_librarys_relu_keeps_each_dimension_as_given(shape, capfd):
    """The Relu's output (a graph output declared without a shape, so onnxruntime shows what
    it inferred): a number stays that number, a name that name, an unknown dimension gets a
    name of its own (never -1), and an input without dimensions leaves the shape as stock
    leaves it."""
    model = _relu_model(shape)
    stock = ort_session(model).get_outputs()[0].shape  # the default: onnxruntime's own Relu
    session = ort_session(model, exact=True)
    exact = session.get_outputs()[0].shape
    assert len(exact) == len(stock)
    for given, ours in zip(stock, exact, strict=True):
        if given is None:
            assert isinstance(ours, str) and ours.startswith("onnx_relu_unknown_")
        else:
            assert ours == given
    x = np.arange(-3.0, 3.0, dtype=np.float32).reshape(2, 3) if shape != [] else np.float32(-1)
    if shape == [2, None, "k"]:
        x = x.reshape(2, 1, 3)
    capfd.readouterr()
    (y, s) = ort_run(session, None, {"x": x})
    assert y.shape == np.shape(x) and list(s) == list(np.shape(x))
    assert capfd.readouterr().err == ""
