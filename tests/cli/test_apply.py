"""The ``onnx-relu`` command end to end, as subprocesses of the installed program: version,
help, the demo, ``apply`` on every type and format, and every usage error (exit status 2,
one line on stderr, no traceback, no output file)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import onnx_relu
from onnx_relu import read_tensor, write_tensor
from onnx_relu.cli._progress_bar import progress_bar
from onnx_relu.files import relu_file
from tests.support.cli import MODULE, SCRIPT, assert_cli_error, folder_state, run_cli
from tests.support.dtypes import TYPE_NAMES, relu_type
from tests.support.oracle import expected_relu, same_bits
from tests.support.values import mixed_values


def tensor(type_name: str) -> np.ndarray:
    return mixed_values(relu_type(type_name).dtype, 48).reshape(4, 12)


@pytest.mark.parametrize("command", [(SCRIPT,), MODULE], ids=["onnx-relu", "python -m onnx_relu"])
def test_version(command):
    done = run_cli("--version", command=command)
    assert (done.returncode, done.stdout.strip()) == (0, f"onnx-relu {onnx_relu.__version__}")


def test_help_lists_commands_examples_and_exit_status():
    done = run_cli("--help")
    assert done.returncode == 0
    for text in ("apply", "demo", "examples:", "onnx-relu apply x.npy y.npy", "exit status"):
        assert text in done.stdout
    apply_help = run_cli("apply", "--help")
    assert apply_help.returncode == 0
    for text in (
        "--in-place",
        "--opset",
        "--threads",
        "--quiet",
        "--dask",
        "--scheduler",
        "examples:",
        "idempotent",
    ):
        assert text in apply_help.stdout


@pytest.mark.parametrize("args", [(), ("demo",)])
def test_no_command_runs_the_demo(args):
    done = run_cli(*args, command=MODULE)
    assert done.returncode == 0, done.stderr
    assert "9 of 9 spec examples match exactly" in done.stdout


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_apply_npy_every_type(tmp_path, type_name):
    x = tensor(type_name)
    write_tensor(tmp_path / "x.npy", x)
    done = run_cli("apply", tmp_path / "x.npy", tmp_path / "y.npy")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert same_bits(read_tensor(tmp_path / "y.npy"), expected_relu(x))
    assert same_bits(read_tensor(tmp_path / "x.npy"), x)  # IN untouched


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_apply_pb_every_type_keeps_the_tensor_name(tmp_path, type_name):
    # In this process through cli.main (the subprocess path is covered by the tests around).
    from onnx_relu.cli import main
    from onnx_relu.files.tensors import read_pb_tensor

    x = tensor(type_name)
    write_tensor(tmp_path / "input_0.pb", x, name="X")
    assert main(["apply", str(tmp_path / "input_0.pb"), str(tmp_path / "output_0.pb")]) == 0
    y, name = read_pb_tensor(tmp_path / "output_0.pb")
    assert same_bits(y, expected_relu(x)) and name == "X"


@pytest.mark.parametrize(("src", "dst"), [("x.npy", "y.pb"), ("x.pb", "y.npy")])
def test_apply_mixes_formats(tmp_path, src, dst):
    x = tensor("bfloat16")
    write_tensor(tmp_path / src, x)
    done = run_cli("apply", src, dst, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert same_bits(read_tensor(tmp_path / dst), expected_relu(x))


def test_apply_in_place(tmp_path):
    x = np.asfortranarray(tensor("float64").reshape(6, 8)).astype(">f8")  # any layout works
    write_tensor(tmp_path / "x.npy", x)
    done = run_cli("apply", "--in-place", tmp_path / "x.npy")
    assert (done.returncode, done.stderr) == (0, "")
    assert same_bits(read_tensor(tmp_path / "x.npy"), expected_relu(x).astype(">f8"))
    assert os.listdir(tmp_path) == ["x.npy"]


def test_apply_replaces_out_and_never_writes_over_in(tmp_path):
    """OUT is replaced; OUT equal to IN is refused (IN is never changed), pointing at
    --in-place."""
    x = tensor("int32")
    write_tensor(tmp_path / "x.npy", x)
    write_tensor(tmp_path / "y.npy", np.arange(5.0))
    assert run_cli("apply", tmp_path / "x.npy", tmp_path / "y.npy").returncode == 0
    assert same_bits(read_tensor(tmp_path / "y.npy"), expected_relu(x))
    before = (tmp_path / "x.npy").read_bytes()
    done = run_cli("apply", tmp_path / "x.npy", tmp_path / "x.npy")
    assert_cli_error(done, 2, "(or --in-place to rewrite IN itself)")
    assert (tmp_path / "x.npy").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["x.npy", "y.npy"]


@pytest.mark.parametrize(
    ("opset", "type_name", "allowed"),
    [
        (14, "int8", True),
        (13, "int8", False),
        (13, "bfloat16", True),
        (12, "bfloat16", False),
        (1, "float16", True),
        (6, "int64", False),
    ],
)
def test_apply_opset_selects_the_allowed_types(tmp_path, opset, type_name, allowed):
    write_tensor(tmp_path / "x.npy", tensor(type_name))
    done = run_cli("apply", "--opset", opset, tmp_path / "x.npy", tmp_path / "y.npy")
    if allowed:
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 2
        assert f"does not allow tensor({type_name})" in done.stderr
        assert f"at opset {opset}" in done.stderr
        assert not (tmp_path / "y.npy").exists()


def test_apply_accepts_threads(tmp_path):
    x = tensor("float32")
    write_tensor(tmp_path / "x.npy", x)
    done = run_cli("apply", "--threads", 2, "--quiet", tmp_path / "x.npy", tmp_path / "y.npy")
    assert done.returncode == 0, done.stderr
    assert same_bits(read_tensor(tmp_path / "y.npy"), expected_relu(x))


# (arguments, expected message, run as a subprocess?): the common mistakes go through the
# real program; the rest call cli.main in this process (same code, no start-up cost).
USAGE_ERRORS = [
    (["apply", "absent.npy", "y.npy"], "IN 'absent.npy' does not exist", True),
    (["apply", "readme.txt", "y.npy"], "cannot tell the tensor format of 'readme.txt'", True),
    (["apply", "x.npy", "y.csv"], "cannot tell the tensor format of 'y.csv'", True),
    (["apply", "x.npy", "missing/y.npy"], "the folder", True),
    (
        ["apply", "--opset", "0", "x.npy", "y.npy"],
        "argument --opset: must be an integer >= 1",
        True,
    ),
    (["apply", "u8.npy", "y.npy"], "does not allow tensor(uint8)", True),
    (["apply", "--in-place", "x.pb"], "in-place needs a .npy file", True),
    (["apply", "corrupt.pb", "y.npy"], "'corrupt.pb' is not a valid ONNX TensorProto", True),
    (["apply", "--frobnicate", "x.npy", "y.npy"], "unrecognized arguments: --frobnicate", True),
    (["apply", "sub", "y.npy"], "IN folder 'sub' holds no tensor file", False),
    (["apply", "sub.npy", "y.npy"], "IN 'sub.npy' is a folder", False),
    (["apply", "x.npy", "x.pb", "readme.txt"], "OUTDIR 'readme.txt' is not a folder", False),
    (["apply", "x.npy", "sub/../x.npy", "sub"], "would both be written to", False),
    (["apply", "x.npy", "sub", "o"], "IN 'sub' is a folder: give a folder as the only IN", False),
    (["apply", "--fast", "x.npy", "o"], "unrecognized arguments: --fast", False),
    (["apply", "--opset", "13.5", "x.npy", "y.npy"], "argument --opset: must be an integer", False),
    (
        ["apply", "--threads", "0", "x.npy", "y.npy"],
        "argument --threads: must be an integer",
        False,
    ),
    (["apply", "--in-place", "x.npy", "y.npy"], "--in-place rewrites IN itself", False),
    (["apply", "x.npy"], "OUT is required", False),
    (["apply", "empty.npy", "y.npy"], "'empty.npy' is empty", False),
    (
        ["apply", "--scheduler", "tcp://127.0.0.1:1", "x.npy", "y.npy"],
        "--scheduler needs --dask",
        False,
    ),
    (["apply", "in.zarr", "out.zarr"], "add --dask", False),
    (["apply", "--dask", "x.npy", "y.npy"], "must be a Zarr store", False),
    (["apply", "--dask", "--in-place", "in.zarr"], "--in-place works on .npy files", False),
    (["apply", "--dask", "--threads", "2", "in.zarr", "o.zarr"], "size the Dask cluster", False),
    (["apply", "--dask", "absent.zarr", "o.zarr"], "IN 'absent.zarr' does not exist", False),
    (["apply", "--dask", "sub.zarr", "o.zarr"], "is not a folder", False),
    (["apply", "--dask", "in.zarr", "sub"], "OUT must be a Zarr store", False),
    (["apply", "--dask", "in.zarr", "x.npy.zarr"], "exists and is not a Zarr store", False),
    (["apply"], "the following arguments are required: IN", False),
    (["explode"], "invalid choice: 'explode'", False),
]


def _write_inputs(folder: Path) -> None:
    write_tensor(folder / "x.npy", tensor("float32"))
    write_tensor(folder / "x.pb", tensor("float32"))
    write_tensor(folder / "u8.npy", np.array([0, 7, 255], dtype=np.uint8))
    (folder / "empty.npy").write_bytes(b"")
    (folder / "corrupt.pb").write_bytes(b"\xff" * 40)
    (folder / "readme.txt").write_text("not a tensor")
    (folder / "sub.zarr").write_text("a file named like a store")
    (folder / "x.npy.zarr").mkdir()  # a folder that is not a Zarr store
    for name in ("sub", "sub.npy", "in.zarr"):
        (folder / name).mkdir()


@pytest.mark.parametrize(
    ("args", "message", "as_subprocess"), USAGE_ERRORS, ids=[" ".join(a) for a, *_ in USAGE_ERRORS]
)
def test_usage_errors_exit_2_with_one_clear_line(
    tmp_path, monkeypatch, capsys, args, message, as_subprocess
):
    _write_inputs(tmp_path)
    before = folder_state(tmp_path)
    if as_subprocess:
        done = run_cli(*args, cwd=tmp_path)
        status, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        from onnx_relu.cli import main

        monkeypatch.chdir(tmp_path)
        status = main(args)
        stdout, stderr = capsys.readouterr()
    assert status == 2
    assert "Traceback" not in stderr and stdout == ""
    error_lines = [line for line in stderr.splitlines() if "error:" in line]
    assert len(error_lines) == 1 and message in error_lines[0], stderr
    assert folder_state(tmp_path) == before  # nothing written, nothing changed


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_drawn_on_a_terminal(tmp_path):
    x = np.arange(-50_000, 50_000, dtype=np.float32)
    write_tensor(tmp_path / "x.npy", x)
    terminal = FakeTerminal()
    with progress_bar("relu x.npy", stream=terminal, delay=0) as progress:
        assert progress is not None
        relu_file(tmp_path / "x.npy", tmp_path / "y.npy", chunk_bytes=40_000, progress=progress)
    drawn = terminal.getvalue()
    assert "relu x.npy" in drawn and "100%" in drawn
    assert same_bits(read_tensor(tmp_path / "y.npy"), expected_relu(x))


def test_no_progress_bar_when_quiet_off_a_terminal_or_without_tqdm(monkeypatch):
    """Quiet or off a terminal: nothing; on a terminal without tqdm: one line saying why."""
    with progress_bar("q", enabled=False, stream=FakeTerminal()) as progress:
        assert progress is None
    with progress_bar("pipe", stream=io.StringIO()) as progress:
        assert progress is None
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if the cli extra were not installed
    terminal = FakeTerminal()
    with progress_bar("no tqdm", stream=terminal, delay=0) as progress:
        progress(1, 2)  # a job long enough for a bar: one line says why there is none
        progress(2, 2)
    said = terminal.getvalue()
    assert said.startswith("no progress bar: the progress bar needs tqdm") and said.count("\n") == 1
    assert '"cli" extra' in said


def test_threads_sets_the_kernels_thread_count_for_the_job():
    from onnx_relu.cli._common import thread_limit

    before = onnx_relu.get_num_threads()
    with thread_limit(3):
        assert onnx_relu.get_num_threads() == 3
    assert onnx_relu.get_num_threads() == before
    with thread_limit(None):  # no --threads: the count stays as configured
        assert onnx_relu.get_num_threads() == before


def test_a_failing_disk_exits_1_and_leaves_out_unchanged(tmp_path, monkeypatch, capsys):
    import errno

    from onnx_relu.cli import main

    x = tensor("float32")
    write_tensor(tmp_path / "x.npy", x)
    (tmp_path / "y.npy").write_bytes(b"previous")

    def full_disk(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)  # the write "succeeds", the flush to disk fails
    status = main(["apply", str(tmp_path / "x.npy"), str(tmp_path / "y.npy")])
    stderr = capsys.readouterr().err
    assert status == 1
    assert stderr.startswith("onnx-relu apply: error: No space left on device")
    assert "OUT left unchanged" in stderr and len(stderr.splitlines()) == 1
    assert (tmp_path / "y.npy").read_bytes() == b"previous"
    assert sorted(os.listdir(tmp_path)) == ["x.npy", "y.npy"]
