"""``onnx-relu apply`` with ``-`` (standard input and output) and ``onnx-relu check`` over many
models and folders (text and JSON), end to end as subprocesses of the installed command: bytes
in pipes, exit statuses, one-line errors, nothing written on a refusal."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
from pathlib import Path

import numpy as np
import pytest

from onnx_relu import read_tensor, write_tensor
from tests.support.cli import SCRIPT, assert_cli_error, folder_state, run_cli
from tests.support.dtypes import TYPE_NAMES, relu_type
from tests.support.oracle import expected_relu, same_bits
from tests.support.values import mixed_values


def tensor(type_name: str) -> np.ndarray:
    return mixed_values(relu_type(type_name).dtype, 48).reshape(4, 12)


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as .npy data, written through the package's own writer via a file."""
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def run_bytes(
    *args: object, stdin: bytes = b"", cwd: Path | None = None, stderr: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess:
    """The installed command with binary standard input and output."""
    return subprocess.run(
        [SCRIPT, *map(str, args)],
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=cwd,
        timeout=120,
    )


# --- apply with '-' ------------------------------------------------------------------------


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_apply_stdin_to_stdout_npy_every_type(tmp_path, type_name):
    x = tensor(type_name)
    write_tensor(tmp_path / "x.npy", x)  # the package's .npy (bfloat16 as '<V2', as numpy saves)
    done = run_bytes("apply", "-", "-", stdin=(tmp_path / "x.npy").read_bytes())
    assert (done.returncode, done.stderr) == (0, b"")
    (tmp_path / "y.npy").write_bytes(done.stdout)
    y = read_tensor(tmp_path / "y.npy")
    assert y.shape == x.shape and same_bits(y, expected_relu(x))


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_apply_pb_pipe_keeps_format_and_name(tmp_path, type_name):
    pytest.importorskip("onnx")
    from onnx import TensorProto

    x = tensor(type_name)
    write_tensor(tmp_path / "x.pb", x, name="activations")
    done = run_bytes("apply", "--format", "pb", "-", "-", stdin=(tmp_path / "x.pb").read_bytes())
    assert (done.returncode, done.stderr) == (0, b"")
    proto = TensorProto()
    proto.ParseFromString(done.stdout)
    assert proto.name == "activations"
    (tmp_path / "y.pb").write_bytes(done.stdout)
    assert same_bits(read_tensor(tmp_path / "y.pb"), expected_relu(x))


@pytest.mark.parametrize(
    "source,target", [("x.npy", "-"), ("-", "y.npy"), ("-", "y.pb"), ("x.pb", "-")]
)
def test_apply_mixes_files_and_pipes(tmp_path, source, target):
    if "pb" in source + target:
        pytest.importorskip("onnx")
    x = tensor("float32")
    stdin = b""
    if source == "-":
        stdin = npy_bytes(x)
    else:
        write_tensor(tmp_path / source, x)
    done = run_bytes("apply", source, target, stdin=stdin, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if target == "-":
        # standard output gets the input's format: .npy data for x.npy, a TensorProto for x.pb
        (tmp_path / f"out.{source.split('.')[-1]}").write_bytes(done.stdout)
        y = read_tensor(tmp_path / f"out.{source.split('.')[-1]}")
    else:
        assert done.stdout == b""
        y = read_tensor(tmp_path / target)
    assert same_bits(y, expected_relu(x))


def test_apply_pipe_output_format_converts(tmp_path):
    pytest.importorskip("onnx")
    x = tensor("int16")
    # --format names the format of '-' only: IN is a file, told by its suffix; OUT '-' gets pb
    write_tensor(tmp_path / "x.npy", x)
    done = run_bytes("apply", "--format", "pb", "x.npy", "-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "y.pb").write_bytes(done.stdout)
    assert same_bits(read_tensor(tmp_path / "y.pb"), expected_relu(x))


def test_apply_in_a_shell_pipeline(tmp_path):
    x = tensor("float64")
    write_tensor(tmp_path / "x.npy", x)
    done = subprocess.run(
        f"'{SCRIPT}' apply - - < x.npy | '{SCRIPT}' apply --opset 14 - y.npy",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert same_bits(read_tensor(tmp_path / "y.npy"), expected_relu(x))


@pytest.mark.parametrize(
    "args,stdin,status,fragment",
    [
        (("-", "-"), b"", 2, "cannot tell the tensor format of standard input: it is empty"),
        (("-", "-"), b"PK\x03\x04 not a tensor", 2, "does not start with the .npy magic string"),
        (("--format", "pb", "-", "-"), npy_bytes(np.zeros(3, np.float32)), 2, "holds .npy data"),
        (("--format", "npy", "-", "-"), b"\x93NUMPY\x01\x00", 2, "standard input"),
        (("-", "-"), npy_bytes(np.zeros(3, np.uint8)), 2, "uint8"),
        (("--opset", "13", "-", "-"), npy_bytes(np.zeros(3, np.int8)), 2, "Relu-13"),
        (("-",), npy_bytes(np.zeros(3, np.float32)), 2, "OUT is required"),
        (("--in-place", "-"), npy_bytes(np.zeros(3, np.float32)), 2, "--in-place"),
        (("--dask", "-", "-"), npy_bytes(np.zeros(3, np.float32)), 2, "--dask"),
        (("-", "y.csv"), npy_bytes(np.zeros(3, np.float32)), 2, "cannot tell the tensor format of"),
        (("--format", "pb", "x.npy", "y.npy"), b"", 2, "the format of '-'"),
        (("--format", "csv", "-", "-"), b"", 2, "invalid choice"),
    ],
)
def test_apply_pipe_refusals(tmp_path, args, stdin, status, fragment):
    before = folder_state(tmp_path)
    done = run_bytes("apply", *args, stdin=stdin, cwd=tmp_path)
    text = subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode()
    )
    if fragment == "invalid choice":  # argparse's own usage error
        assert done.returncode == 2 and fragment in text.stderr
    else:
        assert_cli_error(text, status, fragment)
    assert done.stdout == b"" and folder_state(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("apply", "x.npy", "-"), b"not writing binary tensor data to a terminal"),
        (("legalize", "m.onnx", "-"), b"not writing a binary model to a terminal"),
    ],
    ids=["apply", "legalize"],
)
def test_binary_output_is_refused_on_a_terminal(tmp_path, args, fragment):
    write_tensor(tmp_path / "x.npy", tensor("float32"))
    if args[0] == "legalize":
        relu_model(tmp_path / "m.onnx", "float32", 14)
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [SCRIPT, *args],
            stdout=terminal,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 2 and fragment in done.stderr, done.stderr
    assert done.stderr.count(b"\n") == 1, done.stderr


# --- check over many models ----------------------------------------------------------------


def relu_model(path: Path, type_name: str, opset: int) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    elem = relu_type(type_name).elem_type
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"], name="r")],
        "g",
        [helper.make_tensor_value_info("X", elem, [2])],
        [helper.make_tensor_value_info("Y", elem, [2])],
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


@pytest.fixture
def model_tree(tmp_path):
    """models/a.onnx (clean), models/sub/b.ONNX (int8 at opset 13: a finding),
    models/sub/notes.txt (not a model), and c.onnx beside the folder (clean)."""
    relu_model(tmp_path / "models" / "a.onnx", "float32", 13)
    relu_model(tmp_path / "models" / "sub" / "b.ONNX", "int8", 13)
    (tmp_path / "models" / "sub" / "notes.txt").write_text("not a model")
    relu_model(tmp_path / "c.onnx", "int8", 14)
    return tmp_path


def json_lines(done: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_check_json_one_object_per_model(model_tree):
    done = run_cli("check", "--format", "json", "models", "c.onnx", cwd=model_tree)
    assert done.returncode == 1, done.stderr
    records = json_lines(done)
    assert [r["path"] for r in records] == [
        os.path.join("models", "a.onnx"),
        os.path.join("models", "sub", "b.ONNX"),
        "c.onnx",
    ]
    assert [r["opset"] for r in records] == [13, 13, 14]
    assert records[0]["findings"] == [] and records[2]["findings"] == []
    (finding,) = records[1]["findings"]
    assert finding["node"] == "Relu node 'r' (node #0)"
    assert (finding["type"], finding["version"], finding["kind"]) == (
        "tensor(int8)",
        13,
        "type-not-allowed",
    )
    assert finding["allowed_types"] == [
        "tensor(bfloat16)",
        "tensor(double)",
        "tensor(float)",
        "tensor(float16)",
    ]
    assert "Relu-13" in finding["message"]


def test_check_text_over_folders_and_files(model_tree):
    done = run_cli("check", "models", "c.onnx", cwd=model_tree)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == f"{os.path.join('models', 'a.onnx')}: no findings"
    b_onnx = os.path.join("models", "sub", "b.ONNX")
    assert lines[1].startswith(
        f"{b_onnx}: Relu node 'r' (node #0): input 'X' has type tensor(int8)"
    )
    assert lines[2] == "c.onnx: no findings"
    assert f"1 finding(s) in {os.path.join('models', 'sub', 'b.ONNX')}" in done.stderr


def test_check_clean_models_exit_0(model_tree):
    done = run_cli("check", "--format", "json", "models/a.onnx", "c.onnx", cwd=model_tree)
    assert done.returncode == 0, done.stderr
    assert [r["findings"] for r in json_lines(done)] == [[], []]


def test_check_unreadable_model_exit_2_after_checking_the_others(model_tree):
    (model_tree / "models" / "broken.onnx").write_bytes(b"\xff\xfe\x00junk")
    done = run_cli("check", "--format", "json", "models", "missing.onnx", cwd=model_tree)
    assert done.returncode == 2
    records = json_lines(done)
    assert len(records) == 4  # a, broken, b, missing: every model gets its line
    errors = {r["path"]: r["error"] for r in records if "error" in r}
    assert set(errors) == {os.path.join("models", "broken.onnx"), "missing.onnx"}
    assert "not a readable ONNX model" in errors[os.path.join("models", "broken.onnx")]
    assert "does not exist" in errors["missing.onnx"]
    assert [r["findings"] != [] for r in records if "error" not in r] == [False, True]
    assert "Traceback" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if "error:" in line]) == 2


def test_check_folder_without_models_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_cli_error(run_cli("check", tmp_path / "empty"), 2, "holds no *.onnx file")


def test_check_summary_line_only_on_a_terminal(model_tree):
    piped = run_cli("check", "models", cwd=model_tree)
    assert "model(s):" not in piped.stderr
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [SCRIPT, "check", "models", "c.onnx"],
            stdout=subprocess.PIPE,
            stderr=terminal,
            cwd=model_tree,
            timeout=120,
        )
        os.close(terminal)
        terminal = -1
        written = b""
        while True:
            try:
                piece = os.read(controller, 4096)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not piece:
                break
            written += piece
    finally:
        if terminal >= 0:
            os.close(terminal)
        os.close(controller)
    assert done.returncode == 1
    assert (
        "onnx-relu check: 3 model(s): 2 without findings, 1 with findings, 0 unreadable"
        in written.decode()
    )
