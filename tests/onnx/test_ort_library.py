"""The onnx-relu custom-op library in real onnxruntime (the version `make test` installs).

With ``exact=True`` one-node models of every type at every opset where the type is allowed run
bit-exactly against the independent oracle (-0.0 -> +0.0, NaN payloads, float16/bfloat16
signalling NaNs); by default the library takes only the Relu nodes onnxruntime cannot run, and
onnxruntime keeps its own (and its fusions); types a version forbids are refused before any
session exists, and by onnxruntime itself when the library is loaded by hand; mixed models,
onnx's light models, concurrent sessions, repeated loading, threads and fork work.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import sys
import threading

import ml_dtypes
import numpy as np
import onnx
import pytest

# Every test here runs the library inside onnxruntime; some Pythons have no onnxruntime wheel.
onnxruntime = pytest.importorskip(
    "onnxruntime", reason="onnxruntime is not installed (it has no wheel for this Python yet)"
)
from onnx import TensorProto, helper  # noqa: E402

import onnx_relu  # noqa: E402
from onnx_relu.errors import InvalidModelError, ThreadCountError, UnsupportedTypeError  # noqa: E402
from onnx_relu.onnx.ort import inference_session, lowest_ir_version, run_session  # noqa: E402
from onnx_relu.onnx.ort_library import (  # noqa: E402
    ORT_LIBRARY_API_VERSION,
    ort_library_num_threads,
    set_ort_library_nt_threshold,
    set_ort_library_num_threads,
)
from tests.support import REPOSITORY  # noqa: E402
from tests.support.dtypes import ONNX_NAMES, relu_type  # noqa: E402
from tests.support.onnx_models import (  # noqa: E402
    LATEST_OPSET,
    add_relu_mul_model,
    allowed_types,
    graph_model,
    relu_model,
    sample_values,
    value_info,
)
from tests.support.onnxruntime_reach import skip_if_onnxruntime_predates  # noqa: E402
from tests.support.oracle import as_bits, expected_relu, mismatch_report  # noqa: E402

ALL_OPSETS = range(1, LATEST_OPSET + 1)
ALLOWED_CASES = [
    (t, opset) for opset in ALL_OPSETS for t in ONNX_NAMES if t in allowed_types(opset)
]
FORBIDDEN_CASES = [
    (t, opset) for opset in ALL_OPSETS for t in ONNX_NAMES if t not in allowed_types(opset)
]


def quiet_options() -> onnxruntime.SessionOptions:
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # opset < 7 models log a warning each; errors still raise
    return options


def session_for(model: onnx.ModelProto, exact: bool = True) -> onnxruntime.InferenceSession:
    """A session whose Relu nodes are all the library's (exact=True), unless told otherwise."""
    return onnx_relu.ort_session(model, sess_options=quiet_options(), exact=exact)


def session_or_skip(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    """session_for, skipping (with onnxruntime's reason) an opset this onnxruntime predates."""
    skip_if_onnxruntime_predates(
        max(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))
    )
    return session_for(model)


def at_lowest_ir_version(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` stamped with the lowest IR version its opsets need, for plain onnxruntime calls
    (onnx stamps its newest, which an older onnxruntime refuses; ort_session handles that)."""
    model.ir_version = lowest_ir_version(model.opset_import)
    return model


def assert_exact(y: np.ndarray, x: np.ndarray, what: str) -> None:
    want = expected_relu(x)
    assert y.dtype == x.dtype and y.shape == x.shape, what
    assert np.array_equal(as_bits(y), as_bits(want)), what + "\n" + mismatch_report(x, y, want)


def test_the_cases_cover_every_type_and_every_relu_version():
    assert {t for t, _ in ALLOWED_CASES} == set(ONNX_NAMES)
    versions = {onnx.defs.get_schema("Relu", opset).since_version for _, opset in ALLOWED_CASES}
    assert versions == {1, 6, 13, 14}
    assert len(FORBIDDEN_CASES) == 5 * 12 + 4 * 1  # bfloat16 and 4 ints at 1-12, ints at 13


def test_the_library_file_exists_and_exports_its_entry_point():
    path = onnx_relu.ort_library_path()
    assert os.path.isabs(path) and os.path.isfile(path)
    library = ctypes.CDLL(path)
    assert library.RegisterCustomOps  # the symbol onnxruntime looks up


def test_the_library_asks_onnxruntime_for_api_version_17():
    # An OrtApiBase that offers no table: RegisterCustomOps asks GetApi for its version, then
    # for the oldest (1) to report that; with none either it returns no status and registers
    # nothing. What it asked for is the version it needs.
    asked = []
    get_api = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)(
        lambda version: asked.append(version)
    )
    version_text = ctypes.create_string_buffer(b"0.0.0")  # kept alive for the call
    get_version = ctypes.CFUNCTYPE(ctypes.c_void_p)(lambda: ctypes.addressof(version_text))

    class OrtApiBase(ctypes.Structure):
        _fields_ = [("GetApi", type(get_api)), ("GetVersionString", type(get_version))]

    base = OrtApiBase(get_api, get_version)
    library = ctypes.CDLL(onnx_relu.ort_library_path())
    library.RegisterCustomOps.argtypes = [ctypes.c_void_p, ctypes.POINTER(OrtApiBase)]
    library.RegisterCustomOps.restype = ctypes.c_void_p
    assert library.RegisterCustomOps(None, ctypes.byref(base)) is None
    assert asked == [ORT_LIBRARY_API_VERSION, 1] and ORT_LIBRARY_API_VERSION == 17


@pytest.mark.parametrize(("onnx_type", "opset"), ALLOWED_CASES)
def test_every_allowed_type_and_opset_runs_bit_exactly(onnx_type, opset):
    model = relu_model(onnx_type, opset, shape=("n",), name="act")
    x = sample_values(onnx_type, 4099)  # special values first, then random bit patterns
    x_before = x.copy()
    (y,) = run_session(session_or_skip(model), {"x": x})
    assert_exact(y, x, f"{onnx_type} at opset {opset}")
    assert np.array_equal(as_bits(x), as_bits(x_before))


@pytest.mark.parametrize("onnx_type", ONNX_NAMES)
def test_shapes_scalars_empty_tensors_and_large_threaded_inputs(onnx_type):
    dtype, elem_type = relu_type(onnx_type).dtype, relu_type(onnx_type).elem_type
    any_rank = graph_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [value_info("x", elem_type, None)],
        [value_info("y", elem_type, None)],
        opset=21,
    )
    session = session_for(any_rank)
    large = sample_values(onnx_type, (6 << 20) // dtype.itemsize)  # above the 2 MiB split
    for x in [
        sample_values(onnx_type, 60).reshape(3, 4, 5),
        sample_values(onnx_type, 1)[0:1].reshape(()),
        np.zeros((0, 3), dtype),
        large,
        large.reshape(2, 3, -1),
    ]:
        (y,) = run_session(session, {"x": x})
        assert_exact(y, x, f"{onnx_type} shape {x.shape}")


def test_float16_signalling_nans_survive_where_onnxruntime_alone_quiets_them():
    model = relu_model("tensor(float16)", 14, shape=("n",))
    x = np.array([0x7C01, 0xFC01, 0x7E55, 0x8000, 0xFBFF], np.uint16).view(np.float16)
    (ours,) = run_session(session_for(model), {"x": x})
    (plain,) = run_session(inference_session(model), {"x": x})
    assert as_bits(ours).tolist() == [0x7C01, 0xFC01, 0x7E55, 0, 0]
    assert as_bits(plain).tolist() != as_bits(ours).tolist()  # the cast path: quieted, -0.0


@pytest.mark.parametrize(("onnx_type", "opset"), FORBIDDEN_CASES)
def test_forbidden_types_are_refused_before_the_session(onnx_type, opset):
    model = relu_model(onnx_type, opset, shape=("n",), name="act")
    with pytest.raises(UnsupportedTypeError) as refused:
        session_for(model)
    message = str(refused.value)
    version = onnx.defs.get_schema("Relu", opset).since_version
    for expected in [
        "'act'",
        "input 'x'",
        onnx_type,
        f"Relu-{version}",
        f"opset {opset}",
        *sorted(allowed_types(opset)),
    ]:
        assert expected in message


@pytest.mark.parametrize(("onnx_type", "opset"), [("tensor(int8)", 13), ("tensor(bfloat16)", 12)])
def test_onnxruntime_itself_refuses_a_forbidden_type_when_the_library_is_loaded_by_hand(
    onnx_type, opset
):
    """No onnx-relu Python check runs here: the library's standard-domain Relu begins at opset
    14, so below it ONNX's own Relu schema (and its type rule) stays in force in onnxruntime."""
    model = at_lowest_ir_version(relu_model(onnx_type, opset, shape=("n",)))
    options = quiet_options()
    options.register_custom_ops_library(onnx_relu.ort_library_path())
    with pytest.raises(
        onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph,
        match=re.escape(f"Type '{onnx_type}'"),
    ):
        onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    with pytest.raises(UnsupportedTypeError):
        session_for(model)


@pytest.mark.parametrize("onnx_type", ONNX_NAMES)
def test_loaded_by_hand_the_library_runs_every_type_from_opset_14(onnx_type):
    model = at_lowest_ir_version(relu_model(onnx_type, 14, shape=("n",)))
    options = quiet_options()
    options.register_custom_ops_library(onnx_relu.ort_library_path())
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    x = sample_values(onnx_type, 999)
    (y,) = run_session(session, {"x": x})
    assert_exact(y, x, f"{onnx_type} by hand")


def test_loaded_by_hand_the_library_cannot_run_bfloat16_at_opset_13_and_ort_session_can():
    """The documented limit (docs/onnx-integration.md): onnxruntime keeps one schema per custom op
    name, so the library's standard Relu starts at 14 and a bfloat16 Relu-13 finds no kernel;
    ort_session points the node at the library's own domain. Fails, to be revisited, the day
    onnxruntime runs it."""
    model = at_lowest_ir_version(relu_model("tensor(bfloat16)", 13, shape=("n",)))
    options = quiet_options()
    options.register_custom_ops_library(onnx_relu.ort_library_path())
    with pytest.raises(
        onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented,
        match=re.escape("Could not find an implementation for Relu(13)"),
    ):
        onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    x = sample_values("tensor(bfloat16)", 999)
    (y,) = run_session(session_for(model), {"x": x})
    assert_exact(y, x, "bfloat16 at opset 13 through ort_session")


def _relu_domains(model: onnx.ModelProto, exact: bool, folder) -> list[str]:
    """The domain of each Relu in the graph onnxruntime runs for ``ort_session(model, exact=)``
    (its optimized model, written by onnxruntime itself): "" is onnxruntime's own kernel,
    "onnx_relu" the library's."""
    options = quiet_options()
    options.optimized_model_filepath = str(folder / f"optimized-{exact}.onnx")
    onnx_relu.ort_session(model, sess_options=options, exact=exact)
    graph = onnx.load(options.optimized_model_filepath).graph
    return [node.domain for node in graph.node if node.op_type == "Relu"]


def test_by_default_onnxruntime_keeps_the_relu_nodes_it_runs(tmp_path):
    """exact=False: a float Relu is onnxruntime's own, with stock's values (-0.0 stays -0.0 where
    its kernel keeps it, as on x86-64; on arm64 it gives +0.0); a bfloat16 one, which
    onnxruntime cannot run, is the library's. exact=True: every Relu the library's."""
    x = np.array([-0.0, -1.0, 2.0, np.nan], np.float32)
    float_model = relu_model("tensor(float)", 17, shape=("n",))
    (fast,) = run_session(session_for(float_model, False), {"x": x})
    (stock,) = run_session(inference_session(float_model), {"x": x})
    assert as_bits(fast).tolist() == as_bits(stock).tolist()
    assert _relu_domains(float_model, False, tmp_path) == [""]
    assert _relu_domains(float_model, True, tmp_path) == ["onnx_relu"]
    (exact,) = run_session(session_for(float_model), {"x": x})
    assert_exact(exact, x, "float32, exact=True")
    b = sample_values("tensor(bfloat16)", 500)
    bfloat16_model = relu_model("tensor(bfloat16)", 17, shape=("n",))
    (y,) = run_session(session_for(bfloat16_model, False), {"x": b})
    assert_exact(y, b, "bfloat16, exact=False")
    assert _relu_domains(bfloat16_model, False, tmp_path) == ["onnx_relu"]


@pytest.mark.parametrize(("onnx_type", "opset"), ALLOWED_CASES)
def test_by_default_every_allowed_type_and_opset_runs(onnx_type, opset):
    """exact=False on every type and opset: where stock onnxruntime runs the Relu, the result
    is stock's bit for bit (its node is left to it); where it cannot (bfloat16, int16, int64,
    Relu-1), the library's, exact."""
    model = at_lowest_ir_version(relu_model(onnx_type, opset, shape=("n",)))
    skip_if_onnxruntime_predates(opset)
    x = sample_values(onnx_type, 1031)
    (y,) = run_session(session_for(model, False), {"x": x})
    try:
        stock = inference_session(model)
    except Exception:  # noqa: BLE001 - onnxruntime's own classes: it has no kernel for this
        assert_exact(y, x, f"{onnx_type} at opset {opset}, exact=False, not in stock")
        return
    (want,) = run_session(stock, {"x": x})
    assert y.dtype == want.dtype and np.array_equal(as_bits(y), as_bits(want)), (
        f"{onnx_type} at opset {opset}, exact=False: not stock's bits"
    )


@pytest.mark.parametrize("opset", [1, 5])
def test_by_default_relu_1_models_run_on_the_library(opset):
    """onnxruntime has no Relu-1 kernel: the library takes those nodes in either choice."""
    model = relu_model("tensor(float)", opset, shape=("n",))
    x = sample_values("tensor(float)", 300)
    (y,) = run_session(session_for(model, False), {"x": x})
    assert_exact(y, x, f"float at opset {opset}, exact=False")


def test_ort_run_is_session_run_for_bfloat16_too():
    model = relu_model("tensor(bfloat16)", 21, shape=("n",))
    session = onnx_relu.ort_session(model, sess_options=quiet_options())
    x = sample_values("tensor(bfloat16)", 64)
    with pytest.raises(Exception, match="Numpy_type"):  # onnxruntime's own run refuses it
        session.run(None, {"x": x})
    (y,) = onnx_relu.ort_run(session, None, {"x": x})
    assert_exact(y, x, "ort_run bfloat16")
    (named,) = onnx_relu.ort_run(session, ["y"], {"x": x}, onnxruntime.RunOptions())
    assert np.array_equal(as_bits(named), as_bits(y))


def test_other_relu_problems_are_refused_as_invalid_models():
    consumed = relu_model("tensor(float)", 13, shape=("n",), consumed_inputs=[0])
    with pytest.raises(InvalidModelError, match="consumed_inputs"):
        session_for(consumed)
    with pytest.raises(InvalidModelError):
        onnx_relu.ort_session(b"not a model")


def test_a_model_path_is_accepted(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(relu_model("tensor(bfloat16)", 13, shape=("n",)), path)
    x = sample_values("tensor(bfloat16)", 300)
    (y,) = run_session(onnx_relu.ort_session(path, sess_options=quiet_options()), {"x": x})
    assert_exact(y, x, "bfloat16 from a file")
    onnx.save(relu_model("tensor(int16)", 13, shape=("n",), name="bad"), path)
    with pytest.raises(UnsupportedTypeError, match="'bad'"):
        onnx_relu.ort_session(str(path))


@pytest.mark.parametrize("opset", [14, 18, 21])
def test_a_mixed_model_add_relu_int64_mul(opset):
    model = add_relu_mul_model(opset)
    x = np.random.default_rng(opset).integers(-1000, 1000, 10_000)
    (y,) = run_session(session_for(model), {"x": x})
    assert y.tolist() == (np.maximum(x - 5, 0) * 3).tolist()
    if opset != 18:  # onnxruntime alone has no int64 Relu except through opset 18's function body
        with pytest.raises(Exception, match="Could not find an implementation"):
            inference_session(model)


def test_a_bfloat16_cast_relu_cast_chain():
    nodes = [
        helper.make_node("Cast", ["x"], ["h"], to=TensorProto.BFLOAT16, name="down"),
        helper.make_node("Relu", ["h"], ["r"], name="act"),
        helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT, name="up"),
    ]
    graph = helper.make_graph(
        nodes,
        "bf16_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [[-0.0, 0.0, -np.inf, np.inf, 1e-40, -1e-40], rng.standard_normal(5000) * 100]
    ).astype(np.float32)
    (y,) = run_session(session_for(model), {"x": x})
    want = onnx_relu.relu(x.astype(ml_dtypes.bfloat16)).astype(np.float32)
    assert np.array_equal(y.view(np.uint32), want.view(np.uint32))


def _light_tool():
    path = REPOSITORY / "tools" / "compare_light_models.py"
    spec = importlib.util.spec_from_file_location("compare_light_models_ort", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_nine_light_models_give_the_same_outputs_as_plain_onnxruntime():
    light = _light_tool()
    paths = light.light_model_paths()
    assert len(paths) == 9
    for path in paths:
        model = onnx.load(path)
        feeds = light.random_feeds(model, seed=0)
        plain = run_session(inference_session(model, threads=2), feeds)
        ours = run_session(session_for(model), feeds)
        for left, right in zip(ours, plain, strict=True):
            assert left.dtype == right.dtype and left.shape == right.shape, path
            np.testing.assert_array_equal(left, right, err_msg=path)


def test_in_a_light_model_exact_relu_nodes_run_unfused_and_by_default_fused(tmp_path):
    """onnxruntime alone fuses Conv + Relu. With exact=True every Relu node is in the library's
    domain, which no fusion matches, so each runs as a node of its own, on the library; by
    default the model goes to onnxruntime unchanged and is fused as stock onnxruntime fuses it."""
    import json

    light = _light_tool()
    (path,) = [p for p in light.light_model_paths() if p.endswith("light_bvlc_alexnet.onnx")]
    model = onnx.load(path)
    feeds = light.random_feeds(model, seed=0)

    def relu_events(session) -> int:
        run_session(session, feeds)
        with open(session.end_profiling()) as trace:
            events = json.load(trace)
        return sum(1 for e in events if e.get("args", {}).get("op_name") == "Relu")

    def profiled() -> onnxruntime.SessionOptions:
        options = quiet_options()
        options.enable_profiling = True
        options.profile_file_prefix = str(tmp_path / "profile")
        return options

    plain = onnxruntime.InferenceSession(path, profiled(), providers=["CPUExecutionProvider"])
    stock = relu_events(plain)
    assert stock < 7
    assert relu_events(onnx_relu.ort_session(path, sess_options=profiled(), exact=True)) == 7
    assert relu_events(onnx_relu.ort_session(path, sess_options=profiled())) == stock


def test_four_python_threads_run_sessions_at_once():
    shared = session_for(relu_model("tensor(float)", 14, shape=("n",)))
    own = {
        t: session_for(relu_model(t, 21, shape=("n",)))
        for t in ["tensor(bfloat16)", "tensor(int16)", "tensor(int64)"]
    }
    failures: list[str] = []
    start = threading.Barrier(4)

    def work(onnx_type: str, session) -> None:
        x = sample_values(onnx_type, (3 << 20) // relu_type(onnx_type).dtype.itemsize)
        want = as_bits(expected_relu(x))
        start.wait()
        for _ in range(6):
            (y,) = run_session(session, {"x": x})
            if not np.array_equal(as_bits(y), want):
                failures.append(onnx_type)

    threads = [threading.Thread(target=work, args=("tensor(float)", shared))]
    threads += [threading.Thread(target=work, args=item) for item in own.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_loading_the_library_twice_and_into_several_sessions():
    model = at_lowest_ir_version(relu_model("tensor(int16)", 14, shape=("n",)))
    options = onnx_relu.ort_session_options(quiet_options())
    assert onnx_relu.ort_session_options(options) is options  # registered once only
    other = quiet_options()
    other.register_custom_ops_library(onnx_relu.ort_library_path())  # plain onnxruntime call
    sessions = [
        onnxruntime.InferenceSession(
            model.SerializeToString(), o, providers=["CPUExecutionProvider"]
        )
        for o in (options, options, other)
    ]
    sessions.append(session_for(model))
    x = sample_values("tensor(int16)", 1000)
    for session in sessions:
        (y,) = run_session(session, {"x": x})
        assert_exact(y, x, "int16")


def test_sessions_work_after_fork():
    model = relu_model("tensor(bfloat16)", 14, shape=("n",))
    options = quiet_options()
    options.intra_op_num_threads = 1  # onnxruntime's own pool does not survive fork
    parent_session = onnx_relu.ort_session(model, sess_options=options)
    x = sample_values("tensor(bfloat16)", 4 << 20)  # 8 MiB: the library's thread pool runs
    want = as_bits(expected_relu(x))
    assert np.array_equal(as_bits(run_session(parent_session, {"x": x})[0]), want)
    pid = os.fork()
    if pid == 0:  # the child: the inherited session and a new one, both with threads
        status = 1
        try:
            ok = np.array_equal(as_bits(run_session(parent_session, {"x": x})[0]), want)
            child_session = onnx_relu.ort_session(model, sess_options=quiet_options())
            ok = ok and np.array_equal(as_bits(run_session(child_session, {"x": x})[0]), want)
            status = 0 if ok else 3
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert np.array_equal(as_bits(run_session(parent_session, {"x": x})[0]), want)


def test_the_library_runs_on_the_sessions_threads_unless_given_its_own():
    assert ort_library_num_threads() is None  # the default: the session's intra-op pool
    x = sample_values("tensor(bfloat16)", 4 << 20)  # 8 MiB: above the 2 MiB split
    want = as_bits(expected_relu(x))
    for threads in (1, 2):
        options = quiet_options()
        options.intra_op_num_threads = threads
        session = onnx_relu.ort_session(relu_model("tensor(bfloat16)", 21, shape=("n",)), options)
        assert np.array_equal(as_bits(run_session(session, {"x": x})[0]), want)
        previous = set_ort_library_num_threads(2)  # its own pool of 2 instead
        try:
            assert ort_library_num_threads() == 2
            assert np.array_equal(as_bits(run_session(session, {"x": x})[0]), want)
        finally:
            assert set_ort_library_num_threads(previous) == 2
    assert ort_library_num_threads() is None
    with onnx_relu.num_threads(1):  # the NumPy module's setting is not the library's
        onnx_relu.ort_session_options()
        assert ort_library_num_threads() is None
    with pytest.raises(ThreadCountError):
        set_ort_library_num_threads(0)
    with pytest.raises(TypeError):
        set_ort_library_num_threads(1.5)


def test_bad_session_options_are_refused():
    with pytest.raises(TypeError, match="SessionOptions"):
        onnx_relu.ort_session_options({"threads": 2})


@pytest.mark.parametrize("onnx_type", ONNX_NAMES)
def test_streaming_stores_forced_on_give_the_same_bits(onnx_type):
    session = session_for(relu_model(onnx_type, 21, shape=("n",)))
    previous = set_ort_library_nt_threshold(0)  # every call streams (this machine: >= 512 MiB)
    try:
        for n in [1, 7, 1000, 3 << 20]:  # ragged heads and tails, then threads too
            x = sample_values(onnx_type, n)
            (y,) = run_session(session, {"x": x})
            assert_exact(y, x, f"{onnx_type}, {n} elements, streaming")
    finally:
        assert set_ort_library_nt_threshold(previous) == 0
    with pytest.raises(ValueError):
        set_ort_library_nt_threshold(-5)
