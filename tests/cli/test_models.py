"""``onnx-relu run``, ``check`` and ``legalize`` end to end, as subprocesses of the installed
command: exit codes, files written (bit-exact), and one-line errors for bad arguments."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")  # `make test` installs onnx and onnxruntime
from onnx import TensorProto, helper  # noqa: E402

from onnx_relu.files import read_tensor, write_tensor  # noqa: E402
from tests.support.cli import SCRIPT, assert_cli_error, run_cli  # noqa: E402
from tests.support.dtypes import RELU_TYPES, TYPE_NAMES, relu_type  # noqa: E402
from tests.support.onnx_models import graph_model, value_info  # noqa: E402
from tests.support.oracle import assert_relu_exact  # noqa: E402
from tests.support.values import mixed_values  # noqa: E402


def chain_model(path: Path, type_name: str, opset: int = 14) -> Path:
    """X -> Relu -> "Y" -> Relu -> "Z:out" (a name that is not a safe file name), both outputs."""
    elem = relu_type(type_name).elem_type
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["X"], ["Y"], name="first"),
            helper.make_node("Relu", ["Y"], ["Z:out"], name="second"),
        ],
        "chain",
        [helper.make_tensor_value_info("X", elem, ["n", 2])],
        [
            helper.make_tensor_value_info("Y", elem, ["n", 2]),
            helper.make_tensor_value_info("Z:out", elem, ["n", 2]),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def values(dtype: np.dtype) -> np.ndarray:
    """The type's special values, then random bit patterns, in rows of two."""
    return mixed_values(dtype, 80).reshape(-1, 2)


@pytest.mark.parametrize("suffix", ["npy", "pb"])
@pytest.mark.parametrize("name,dtype", [(t.name, t.dtype) for t in RELU_TYPES], ids=TYPE_NAMES)
def test_run_writes_every_output_exactly(tmp_path, name, dtype, suffix):
    model = chain_model(tmp_path / "m.onnx", name)
    x = values(dtype)
    write_tensor(tmp_path / f"x.{suffix}", x)
    done = run_cli(
        "run",
        model,
        "-i",
        f"X=x.{suffix}".replace("x.", str(tmp_path / "x.")),
        "-o",
        tmp_path / "out",
        "--format",
        suffix,
    )
    assert done.returncode == 0, done.stderr
    assert "Z:out ->" in done.stdout
    y = read_tensor(tmp_path / "out" / f"Y.{suffix}")
    z = read_tensor(tmp_path / "out" / f"Z_out.{suffix}")
    assert_relu_exact(y, x)
    assert_relu_exact(z, x)  # Relu is idempotent


def test_run_single_input_needs_no_name_and_threads_flag(tmp_path):
    model = chain_model(tmp_path / "m.onnx", "float32")
    x = values(np.dtype(np.float32))
    write_tensor(tmp_path / "x.npy", x)
    done = run_cli("run", model, "-i", tmp_path / "x.npy", "-o", tmp_path / "o", "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert_relu_exact(read_tensor(tmp_path / "o" / "Y.npy"), x)


#: Refusals both engines make before the model runs: the case, and the words of the one line.
_BAD_RUN_INPUT = [
    ("forbidden-type", "does not allow tensor(int8)"),
    ("unknown-input", "unknown input name(s) ['Q']"),
    ("missing-input", "missing input(s) ['X']"),
    ("wrong-dtype", "is declared tensor(float) but was fed tensor(double)"),
    ("corrupt-model", "is not a readable ONNX model"),
]


@pytest.mark.parametrize(
    "engine,case,expected",
    [
        *[(engine, *bad) for engine in ("onnx-relu", "onnxruntime") for bad in _BAD_RUN_INPUT],
        ("onnx-relu", "missing-model", "does not exist"),
        ("onnx-relu", "bad-entry", "write NAME=FILE"),
        ("onnx-relu", "other-operator", "Add"),
        ("onnxruntime", "unloadable-model", "onnxruntime cannot load"),
    ],
)
def test_run_refuses_bad_input_with_exit_2_and_writes_nothing(tmp_path, engine, case, expected):
    opset = 13 if case == "forbidden-type" else 14
    type_name = "int8" if case == "forbidden-type" else "float32"
    model = chain_model(tmp_path / "m.onnx", type_name, opset)
    dtype = np.float64 if case == "wrong-dtype" else relu_type(type_name).dtype
    write_tensor(tmp_path / "x.npy", np.array([[-1, 2]], dtype=dtype))
    inputs = ["-i", f"X={tmp_path / 'x.npy'}"]
    if case == "unknown-input":
        inputs = ["-i", f"Q={tmp_path / 'x.npy'}"]
    elif case == "missing-input":
        inputs = []
    elif case == "missing-model":
        model = tmp_path / "nothing.onnx"
    elif case == "corrupt-model":
        model.write_bytes(b"\x08\x07garbage")
    elif case == "bad-entry":
        inputs = ["-i", "X=", "-i", f"Y={tmp_path / 'x.npy'}"]
    elif case in ("other-operator", "unloadable-model"):
        if case == "other-operator":
            node = helper.make_node("Add", ["X", "X"], ["Y"])
        else:  # valid for onnx, but no operator NoSuchOp anywhere
            node = helper.make_node("NoSuchOp", ["X"], ["Y"], domain="my.domain")
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("X", TensorProto.FLOAT, None)],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        )
        opsets = [helper.make_opsetid("", 14), helper.make_opsetid("my.domain", 1)]
        onnx.save(helper.make_model(graph, opset_imports=opsets), model)
    done = run_cli("run", model, *inputs, "-o", tmp_path / "out", "--engine", engine)
    assert_cli_error(done, 2, expected)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_check_reports_findings_with_exit_1(tmp_path):
    model = chain_model(tmp_path / "bad.onnx", "int8", opset=13)
    done = run_cli("check", model)
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2
    # "path: node: message", one finding a line, as grep and ruff print theirs
    assert lines[0].startswith(
        f"{model}: Relu node 'first' (node #0): input 'X' has type tensor(int8)"
    )
    assert all(line.startswith(f"{model}: Relu node ") for line in lines)
    assert "Relu-13" in lines[0] and "tensor(bfloat16), tensor(double)" in lines[0]
    assert "2 finding(s)" in done.stderr


def test_check_clean_model_and_other_operators(tmp_path):
    nodes = [helper.make_node("Add", ["X", "X"], ["S"]), helper.make_node("Relu", ["S"], ["Y"])]
    x, y = (value_info(name, TensorProto.INT64, [3]) for name in ("X", "Y"))
    model = tmp_path / "mixed.onnx"
    onnx.save(graph_model(nodes, [x], [y], opset=14), model)
    done = run_cli("check", model)
    assert (done.returncode, done.stdout.strip()) == (0, f"{model}: no findings")


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "does not exist"),
        (b"", "is not an ONNX model"),
        (b"\xff\xfe\x00junk", "not a readable ONNX model"),
    ],
)
def test_check_unreadable_model_is_a_usage_error(tmp_path, content, message):
    model = tmp_path / "m.onnx"
    if content is not None:
        model.write_bytes(content)
    done = run_cli("check", model)
    assert done.returncode == 2 and message in done.stderr


@pytest.mark.parametrize("exact", [False, True], ids=["default", "exact"])
@pytest.mark.parametrize("name", ["bfloat16", "int16", "int64", "float32", "float16"])
def test_legalize_then_onnxruntime_runs_it(tmp_path, name, exact):
    pytest.importorskip("onnxruntime")
    from onnx_relu.onnx import run_with_onnxruntime

    dtype = relu_type(name).dtype
    model = chain_model(tmp_path / "m.onnx", name)
    done = run_cli("legalize", model, tmp_path / "fixed.onnx", *(["--exact"] if exact else []))
    assert done.returncode == 0, done.stderr
    fixed = onnx.load(tmp_path / "fixed.onnx")
    onnx.checker.check_model(fixed, full_check=True)
    x = values(dtype)
    y, z = run_with_onnxruntime(fixed, {"X": x})
    if exact or name in ("bfloat16", "int16", "int64"):
        assert_relu_exact(y, x)
        assert_relu_exact(z, x)
    else:  # left to onnxruntime's own float Relu: equal values; -0.0 and NaN bits may differ
        import onnx_relu

        np.testing.assert_array_equal(y, onnx_relu.relu(x))  # +0 == -0 and NaN == NaN here


def test_legalize_refuses_bad_models_and_writes_nothing(tmp_path):
    model = chain_model(tmp_path / "bad.onnx", "int8", opset=13)
    done = run_cli("legalize", model, tmp_path / "out.onnx")
    assert done.returncode == 2 and "does not allow tensor(int8)" in done.stderr
    assert not (tmp_path / "out.onnx").exists()
    done = run_cli(
        "legalize", chain_model(tmp_path / "ok.onnx", "int16"), tmp_path / "no" / "o.onnx"
    )
    assert done.returncode == 2 and "does not exist" in done.stderr
    done = run_cli("legalize", model, tmp_path / "o.onnx", "--target", "tensorrt")
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_legalize_says_which_nodes_it_rewrote(tmp_path):
    pytest.importorskip("onnxruntime")
    model = chain_model(tmp_path / "m.onnx", "int16")
    out = tmp_path / "fixed.onnx"
    done = run_cli("legalize", model, out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{model}: Relu node 'first' (node #0): tensor(int16) -> cast-int32",
        f"{model}: Relu node 'second' (node #1): tensor(int16) -> cast-int32",
        f"{model}: rewrote 2 of 2 Relu nodes (2 tensor(int16) -> cast-int32); wrote {out}",
    ]
    # to standard output, the model goes there and the report to standard error
    piped = subprocess.run([SCRIPT, "legalize", str(model), "-"], capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert onnx.load_model_from_string(piped.stdout) == onnx.load(out)
    assert piped.stderr.decode().splitlines()[-1] == (
        f"{model}: rewrote 2 of 2 Relu nodes (2 tensor(int16) -> cast-int32); wrote standard output"
    )


def test_legalize_with_nothing_to_rewrite_says_so_and_writes_a_copy(tmp_path):
    pytest.importorskip("onnxruntime")
    model = chain_model(tmp_path / "m.onnx", "float32")
    out = tmp_path / "same.onnx"
    done = run_cli("legalize", model, out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{model}: nothing to rewrite: onnxruntime runs its 2 Relu nodes as they are;"
        f" wrote {out}, a copy of MODEL"
    ]
    assert onnx.load(out) == onnx.load(model)


def test_legalize_exact_below_opset_13_names_the_conversion_that_makes_it_work(tmp_path):
    pytest.importorskip("onnxruntime")
    from onnx_relu.onnx import run_with_onnxruntime

    model = chain_model(tmp_path / "old.onnx", "float32", opset=9)
    out = tmp_path / "new.onnx"
    done = run_cli("legalize", "--exact", model, out)
    assert done.returncode == 2
    assert "convert the model to opset 13 first" in done.stderr
    assert "'onnx-relu legalize --convert-opset 13 --exact MODEL OUT'" in done.stderr
    assert not out.exists()
    done = run_cli("legalize", "--exact", "--convert-opset", "13", model, out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        f"{model}: converted from ai.onnx opset 9 to 13; rewrote 2 of 2 Relu nodes"
        f" (2 tensor(float) -> select); wrote {out}"
    )
    fixed = onnx.load(out)
    onnx.checker.check_model(fixed, full_check=True)
    assert [(o.domain, o.version) for o in fixed.opset_import] == [("", 13)]
    x = values(np.dtype(np.float32))
    y, z = run_with_onnxruntime(fixed, {"X": x})
    assert_relu_exact(y, x)
    assert_relu_exact(z, x)


def test_legalize_convert_opset_refuses_what_the_converter_cannot_do(tmp_path):
    model = chain_model(tmp_path / "m.onnx", "float32", opset=14)
    done = run_cli("legalize", "--convert-opset", "0", model, tmp_path / "o.onnx")
    assert done.returncode == 2 and "--convert-opset must be an ai.onnx opset >= 1" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o.onnx").exists()


@pytest.mark.parametrize("command", ["run", "check", "legalize", "apply", "demo", None])
def test_help_is_wrapped_to_the_terminal(command, monkeypatch, capsys):
    from onnx_relu.cli import main

    monkeypatch.setenv("COLUMNS", "60")
    assert main([command, "--help"] if command else ["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    too_long = [line for line in lines if len(line) > 60]
    # a word longer than a line (an example's long path) may stand alone; nothing else is longer
    assert all(len(line.split()) == 1 for line in too_long), too_long
