"""The one reading of the ONNX IR every front end goes through (issue 34, items 2-5 and 7-8):
local functions calling local functions to any depth, IR 10 overloads, attribute references,
malformed structure refused in one line, the model's own ``onnx_relu`` domain, and the
caller's options left as they were given.
"""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_relu import check_model, legalize, relu
from onnx_relu.errors import InvalidModelError
from onnx_relu.onnx.legalization import run_with_onnxruntime
from tests.support.oracle import as_bits

ort = pytest.importorskip("onnxruntime")
from onnx_relu.onnx.ort_library import ort_run, ort_session  # noqa: E402

LOCAL = "local"


def _vi(name: str, elem_type: int, shape: list[object] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, [4] if shape is None else shape)


def nested_model(
    elem_type: int, opset: int, depth: int = 2, in_if: bool = False
) -> onnx.ModelProto:
    """The graph calls local.f1, f1 calls f2, ..., f<depth> holds the Relu (inside an If branch
    of the graph when ``in_if``)."""
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(LOCAL, 1)]
    functions = []
    for level in range(1, depth + 1):
        if level == depth:
            nodes = [helper.make_node("Relu", ["a"], ["b"], name=f"relu_in_f{level}")]
        else:
            nodes = [
                helper.make_node(f"f{level + 1}", ["a"], ["b"], domain=LOCAL, name=f"c{level}")
            ]
        functions.append(helper.make_function(LOCAL, f"f{level}", ["a"], ["b"], nodes, imports))
    call = helper.make_node("f1", ["x"], ["y"], domain=LOCAL, name="call")
    if in_if:
        then = helper.make_graph([call], "then", [], [_vi("y", elem_type)])
        other = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"])], "else", [], [_vi("y", elem_type)]
        )
        nodes = [
            helper.make_node(
                "Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])
            ),
            helper.make_node(
                "If", ["c"], ["y"], name="choose", then_branch=then, else_branch=other
            ),
        ]
    else:
        nodes = [call]
    graph = helper.make_graph(nodes, "g", [_vi("x", elem_type)], [_vi("y", elem_type)])
    return helper.make_model(graph, opset_imports=imports, functions=functions)


def _values(dtype: object) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return np.array([-3, 0, 5, np.iinfo(dtype).min], dtype=dtype)
    return np.array([-1.5, -0.0, 2.0, np.nan], dtype=dtype)


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(as_bits(a), as_bits(b)))


@pytest.mark.parametrize("depth", [2, 3])
def test_check_model_finds_a_relu_two_and_three_functions_deep(depth):
    findings = check_model(nested_model(TensorProto.INT8, 13, depth))
    assert [f.kind for f in findings] == ["type-not-allowed"]
    assert f"relu_in_f{depth}" in str(findings[0])
    assert f"function '{LOCAL}.f{depth}' called by" in findings[0].graph


@pytest.mark.parametrize("in_if", [False, True])
def test_ort_session_runs_bfloat16_relu_in_a_nested_function(in_if):
    model = nested_model(TensorProto.BFLOAT16, 21, in_if=in_if)
    x = _values(ml_dtypes.bfloat16)
    (y,) = ort_run(ort_session(model), None, {"x": x})
    assert _bits_equal(y, relu(x))


def test_exact_reaches_a_float_relu_in_a_nested_function():
    model = nested_model(TensorProto.FLOAT, 17)
    x = _values(np.float32)
    (y,) = ort_run(ort_session(model, exact=True), None, {"x": x})
    assert _bits_equal(y, relu(x))  # +0.0 for -0.0: the library's Relu, not onnxruntime's
    assert np.signbit(y[1]) == np.False_


def test_legalize_rewrites_a_relu_in_a_nested_function():
    model = nested_model(TensorProto.BFLOAT16, 21)
    result = legalize(model)
    inner = [f for f in result.functions if f.name == "f2"][0]
    assert "Relu" not in [n.op_type for n in inner.node]
    x = _values(ml_dtypes.bfloat16)
    (y,) = run_with_onnxruntime(result, {"x": x})
    assert _bits_equal(y, relu(x))


def _cyclic_model() -> onnx.ModelProto:
    imports = [helper.make_opsetid("", 17), helper.make_opsetid(LOCAL, 1)]
    f1 = helper.make_function(
        LOCAL, "f1", ["a"], ["b"], [helper.make_node("f2", ["a"], ["b"], domain=LOCAL)], imports
    )
    f2 = helper.make_function(
        LOCAL,
        "f2",
        ["a"],
        ["b"],
        [
            helper.make_node("Relu", ["a"], ["r"]),
            helper.make_node("f1", ["r"], ["b"], domain=LOCAL),
        ],
        imports,
    )
    graph = helper.make_graph(
        [helper.make_node("f1", ["x"], ["y"], domain=LOCAL)],
        "g",
        [_vi("x", TensorProto.FLOAT)],
        [_vi("y", TensorProto.FLOAT)],
    )
    return helper.make_model(graph, opset_imports=imports, functions=[f1, f2])


@pytest.mark.parametrize("front_end", [check_model, legalize, ort_session])
def test_a_function_calling_itself_is_refused_in_one_line(front_end):
    with pytest.raises(InvalidModelError, match="calls itself") as caught:
        front_end(_cyclic_model())
    assert "\n" not in str(caught.value)
    assert "local.f1 -> local.f2" in str(caught.value) or "local.f2 -> local.f1" in str(
        caught.value
    )


def _overload_model(elem_type: int, opset: int) -> onnx.ModelProto:
    """Two overloads of local.F: "plain" (Identity) and "act" (Relu); the graph calls "act"."""
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(LOCAL, 1)]
    plain = helper.make_function(
        LOCAL, "F", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])], imports
    )
    plain.overload = "plain"
    act = helper.make_function(
        LOCAL, "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"], name="act")], imports
    )
    act.overload = "act"
    call = helper.make_node("F", ["x"], ["y"], domain=LOCAL, name="call")
    call.overload = "act"
    graph = helper.make_graph([call], "g", [_vi("x", elem_type)], [_vi("y", elem_type)])
    model = helper.make_model(graph, opset_imports=imports, functions=[plain, act])
    model.ir_version = max(model.ir_version, 10)
    return model


def test_check_model_judges_the_overload_that_is_called():
    findings = check_model(_overload_model(TensorProto.INT8, 13))
    assert [f.kind for f in findings] == ["type-not-allowed"]
    assert "local.F:act" in findings[0].graph


def test_ort_session_runs_the_called_overloads_bfloat16_relu():
    x = _values(ml_dtypes.bfloat16)
    (y,) = ort_run(ort_session(_overload_model(TensorProto.BFLOAT16, 21)), None, {"x": x})
    assert _bits_equal(y, relu(x))


def _attribute_reference_model() -> onnx.ModelProto:
    """local.f(to) = Cast(to=@to) then Relu, called with to=FLOAT at opset 13."""
    imports = [helper.make_opsetid("", 13), helper.make_opsetid(LOCAL, 1)]
    cast = helper.make_node("Cast", ["a"], ["c"])
    reference = onnx.AttributeProto(name="to", ref_attr_name="to", type=onnx.AttributeProto.INT)
    cast.attribute.append(reference)
    function = helper.make_function(
        LOCAL,
        "f",
        ["a"],
        ["b"],
        [cast, helper.make_node("Relu", ["c"], ["b"], name="act")],
        imports,
        attributes=["to"],
    )
    call = helper.make_node("f", ["x"], ["y"], domain=LOCAL, to=TensorProto.FLOAT)
    graph = helper.make_graph(
        [call], "g", [_vi("x", TensorProto.DOUBLE)], [_vi("y", TensorProto.FLOAT)]
    )
    return helper.make_model(graph, opset_imports=imports, functions=[function])


def test_attribute_reference_is_resolved_at_the_call_site():
    model = _attribute_reference_model()
    onnx.checker.check_model(model, full_check=True)
    assert check_model(model) == []
    x = np.array([-1.0, 2.0, -0.0, 3.0])
    (y,) = ort_run(ort_session(model), None, {"x": x})
    assert y.dtype == np.float32 and y.tolist() == [0.0, 2.0, 0.0, 3.0]


def _repeated_branch_model() -> onnx.ModelProto:
    branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"])], "then", [], [_vi("r", TensorProto.FLOAT)]
    )
    node = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branch)
    node.attribute.append(helper.make_attribute("then_branch", branch))
    node.attribute.append(helper.make_attribute("else_branch", branch))
    graph = helper.make_graph(
        [node],
        "g",
        [_vi("x", TensorProto.FLOAT), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [_vi("y", TensorProto.FLOAT)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _missing_branch_model() -> onnx.ModelProto:
    branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"])], "then", [], [_vi("r", TensorProto.FLOAT)]
    )
    node = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branch)
    graph = helper.make_graph(
        [node],
        "g",
        [_vi("x", TensorProto.FLOAT), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [_vi("y", TensorProto.FLOAT)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (_repeated_branch_model, "attribute 'then_branch' is given more than once"),
        (_missing_branch_model, "it has no graph attribute 'else_branch'"),
    ],
)
@pytest.mark.parametrize("front_end", [check_model, legalize, ort_session])
def test_malformed_structure_is_refused_in_one_line_naming_the_node(build, message, front_end):
    with pytest.raises(InvalidModelError) as caught:
        front_end(build())
    text = str(caught.value)
    assert message in text and "If node 'choose' (node #0)" in text and "\n" not in text


@pytest.mark.parametrize("command", [["legalize"], ["run", "--engine", "onnxruntime"]])
def test_commands_refuse_a_repeated_branch_in_one_line(tmp_path, command):
    path = tmp_path / "m.onnx"
    onnx.save(_repeated_branch_model(), path)
    np.save(tmp_path / "x.npy", np.ones(4, np.float32))
    arguments = [str(path), str(tmp_path / "out.onnx")]
    if command[0] == "run":
        arguments = [str(path), "-i", f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "out")]
    result = subprocess.run(
        [sys.executable, "-m", "onnx_relu", *command, *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "attribute 'then_branch' is given more than once" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def _own_domain_model() -> onnx.ModelProto:
    """A local function onnx_relu.Relu whose body is Neg: stock onnxruntime gives -x."""
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("onnx_relu", 1)]
    function = helper.make_function(
        "onnx_relu", "Relu", ["a"], ["b"], [helper.make_node("Neg", ["a"], ["b"])], imports
    )
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], domain="onnx_relu")],
        "g",
        [_vi("x", TensorProto.FLOAT)],
        [_vi("y", TensorProto.FLOAT)],
    )
    return helper.make_model(graph, opset_imports=imports, functions=[function])


def test_a_model_using_the_library_domain_is_refused_not_changed():
    model = _own_domain_model()
    x = np.array([-1.0, 2.0, 0.5, -3.0], np.float32)
    stock = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    assert stock.tolist() == (-x).tolist()
    with pytest.raises(InvalidModelError, match="uses the operator domain 'onnx_relu' itself"):
        ort_session(model)


def _external_model(folder: str, scale: float) -> str:
    """m.onnx in ``folder`` whose weight (in w.bin beside it) is ``scale``, and a bfloat16
    Relu the default reroutes (so the model goes to onnxruntime as bytes)."""
    os.makedirs(folder, exist_ok=True)
    weight = onnx.numpy_helper.from_array(np.full(4, scale, np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "w"], ["m"]),
            helper.make_node("Cast", ["m"], ["b"], to=TensorProto.BFLOAT16),
            helper.make_node("Relu", ["b"], ["r"]),
            helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT),
        ],
        "g",
        [_vi("x", TensorProto.FLOAT)],
        [_vi("y", TensorProto.FLOAT)],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    path = os.path.join(folder, "m.onnx")
    onnx.save(model, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    return path


def test_one_options_object_opens_two_models_each_with_its_own_external_data(tmp_path):
    first = _external_model(str(tmp_path / "one"), 1.0)
    second = _external_model(str(tmp_path / "two"), 100.0)
    options = ort.SessionOptions()
    x = np.ones(4, np.float32)
    a = ort_run(ort_session(first, options), None, {"x": x})[0]
    b = ort_run(ort_session(second, options), None, {"x": x})[0]
    assert a.tolist() == [1.0] * 4 and b.tolist() == [100.0] * 4
    key = "session.model_external_initializers_file_folder_path"
    try:
        left = options.get_session_config_entry(key)
    except RuntimeError:
        left = ""
    assert left == ""  # onnxruntime's default: no folder


def test_a_model_with_external_data_leaves_the_options_as_they_were_and_logs_nothing(tmp_path):
    """Rerouted, the model goes to onnxruntime as a file beside its own (its external data
    found there): no config entry is set on the caller's options, so onnxruntime logs no
    "overwritten" warning, and no file is left behind."""
    first = _external_model(str(tmp_path / "one"), 1.0)
    second = _external_model(str(tmp_path / "two"), 100.0)
    script = f"""
import numpy as np, onnxruntime as ort
from onnx_relu.onnx.ort_library import ort_run, ort_session
options = ort.SessionOptions()  # the default log level: warnings are logged to stderr
options.add_session_config_entry("session.intra_op.allow_spinning", "0")
before = options.get_session_config_entry("session.intra_op.allow_spinning")
x = np.ones(4, np.float32)
for path in ({first!r}, {second!r}, {first!r}):
    print(ort_run(ort_session(path, options), None, {{"x": x}})[0].tolist())
try:
    folder = options.get_session_config_entry({_EXTERNAL_KEY!r})
except RuntimeError:
    folder = None
print(folder, before == options.get_session_config_entry("session.intra_op.allow_spinning"))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines() == [str([1.0] * 4), str([100.0] * 4), str([1.0] * 4)] + [
        "None True"
    ]
    assert "overwritten" not in done.stderr and "[W:" not in done.stderr, done.stderr
    assert sorted(os.listdir(tmp_path / "one")) == ["m.onnx", "w.bin"]


def test_a_folder_that_takes_no_file_names_the_folder_for_that_one_session(tmp_path, monkeypatch):
    from onnx_relu.onnx import ort_library

    monkeypatch.setattr(ort_library, "_written_beside", lambda data, folder: None)
    first = _external_model(str(tmp_path / "one"), 1.0)
    second = _external_model(str(tmp_path / "two"), 100.0)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    x = np.ones(4, np.float32)
    a = ort_run(ort_session(first, options), None, {"x": x})[0]
    b = ort_run(ort_session(second, options), None, {"x": x})[0]
    assert a.tolist() == [1.0] * 4 and b.tolist() == [100.0] * 4
    assert options.get_session_config_entry(_EXTERNAL_KEY) == ""  # set back to the default


_EXTERNAL_KEY = "session.model_external_initializers_file_folder_path"


def test_a_model_nothing_is_rerouted_in_goes_to_onnxruntime_as_given(tmp_path, monkeypatch):
    from onnx_relu.onnx import ort as ort_module

    given = []
    real = ort_module.new_session

    def spy(model, *args, **kwargs):
        given.append(model)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(ort_module, "new_session", spy)
    model = nested_model(TensorProto.FLOAT, 17)
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    data = model.SerializeToString()
    ort_session(path)
    ort_session(data)
    handed = [source for source in given if isinstance(source, (str, bytes))]
    assert handed[-2] == path and handed[-1] is data


def test_check_model_reads_a_file_without_its_weights(tmp_path):
    """A 4 MiB initializer is not parsed; the findings are those of the full model."""
    weight = np.zeros((1024, 1024), np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Cast", ["m"], ["i"], to=TensorProto.INT8),
            helper.make_node("Relu", ["i"], ["y"], name="act"),
        ],
        "g",
        [_vi("x", TensorProto.FLOAT, [1, 1024])],
        [_vi("y", TensorProto.INT8, [1, 1024])],
        [onnx.numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    from onnx_relu.onnx._models import read_model

    light = read_model(str(path), weights=False)
    assert light.model.ByteSize() < 64 * 1024
    assert [str(f) for f in check_model(str(path))] == [str(f) for f in check_model(model)]
    assert [f.kind for f in check_model(str(path))] == ["type-not-allowed"]


def test_rerouted_model_keeps_its_weights_when_spliced(tmp_path, monkeypatch):
    """A file of 1.6 MiB (over the size parsed whole): read without its weights, the
    rerouted model written with them copied back (a file of its own), as given in memory."""
    from onnx_relu.onnx import _ir

    written = []
    real = _ir.write_spliced_model
    monkeypatch.setattr(_ir, "write_spliced_model", lambda *a: written.append(a[-1]) or real(*a))
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((640, 640)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Cast", ["m"], ["b"], to=TensorProto.BFLOAT16),
            helper.make_node("Relu", ["b"], ["y"]),
        ],
        "g",
        [_vi("x", TensorProto.FLOAT, [2, 640])],
        [_vi("y", TensorProto.BFLOAT16, [2, 640])],
        [onnx.numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    x = rng.standard_normal((2, 640)).astype(np.float32)
    (want,) = run_with_onnxruntime(legalize(model), {"x": x})
    for source in (path, model, model.SerializeToString()):
        (y,) = ort_run(ort_session(source), None, {"x": x})
        assert y.dtype == want.dtype and np.array_equal(
            y.astype(np.float32), want.astype(np.float32)
        )
    assert len(written) == 1 and os.path.getsize(path) > 1 << 20


def _onnxscript_models() -> dict[str, onnx.ModelProto]:
    pytest.importorskip("onnxscript")
    from tests.onnx import onnxscript_models

    return onnxscript_models.nested_functions_in_if()


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("type_name", ["bfloat16", "float16", "int16"])
def test_onnxscript_nested_functions_inside_an_if_run(type_name, exact):
    model = _onnxscript_models()[type_name]
    assert len(model.functions) == 2
    dtype = ml_dtypes.bfloat16 if type_name == "bfloat16" else np.dtype(type_name)
    x = _values(dtype)
    session = ort_session(model, exact=exact)
    (y,) = ort_run(session, None, {"X": x, "C": np.array(True)})
    if exact or type_name != "float16":
        assert _bits_equal(y, relu(x))
    else:  # onnxruntime's own float16 Relu (through float): -0.0 kept, values the same
        assert np.array_equal(y.astype(np.float32), relu(x).astype(np.float32), equal_nan=True)
    (z,) = ort_run(session, None, {"X": x, "C": np.array(False)})
    assert _bits_equal(z, x)
    assert check_model(model) == []


def _relu_chain(elem_type: int, length: int, opset: int, first: str = "Relu") -> onnx.ModelProto:
    names = ["x"] + [f"r{i}" for i in range(length)]
    nodes = [
        helper.make_node(first if i == 0 else "Relu", [a], [b])
        for i, (a, b) in enumerate(zip(names[:-1], names[1:], strict=True))
    ]
    graph = helper.make_graph(nodes, "chain", [_vi("x", elem_type)], [_vi(names[-1], elem_type)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize(
    ("elem_type", "opset"),
    [(TensorProto.FLOAT, 17), (TensorProto.BFLOAT16, 21), (TensorProto.INT8, 13)],
)
def test_a_relu_chain_is_typed_as_shape_inference_types_it_without_running_it(
    elem_type, opset, monkeypatch
):
    """Each Relu hands its input's type on: the chain's sites (and so the findings, int8 at
    opset 13 refused on every node) are those onnx's shape inference gives, which is not run."""
    from onnx_relu.onnx import _models

    model = _relu_chain(elem_type, 5, opset)
    inferred = _models.inferred_model(model)
    expected = [site.input_type for site in _models.relu_sites(inferred.graph)]
    assert None not in expected

    def refused(model):
        raise AssertionError("shape inference ran")

    monkeypatch.setattr(_models, "inferred_model", refused)
    typed = _models.typed_relu_sites(model)
    assert [site.input_type for site in typed.sites] == expected
    assert all(site.plain for site in typed.sites)
    findings = check_model(model)
    assert len(findings) == (5 if elem_type == TensorProto.INT8 else 0)


def test_a_relu_after_another_operator_is_typed_by_shape_inference(monkeypatch):
    from onnx_relu.onnx import _models

    model = _relu_chain(TensorProto.FLOAT, 3, 17, first="Neg")
    ran = []
    real = _models.inferred_model
    monkeypatch.setattr(_models, "inferred_model", lambda m: ran.append(1) or real(m))
    typed = _models.typed_relu_sites(model)
    assert ran and [site.input_type for site in typed.sites] == ["tensor(float)"] * 2
