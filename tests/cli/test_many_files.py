"""``onnx-relu apply`` on many files in one process (``apply DIR OUTDIR``, ``apply A B ...
OUTDIR``), and what ``run`` says of a folder and of ``--exact`` alone."""

from __future__ import annotations

import os

import numpy as np
import pytest

from onnx_relu import read_tensor, write_tensor
from tests.support.cli import assert_cli_error, folder_state, run_cli
from tests.support.optional import requires

X = np.array([-2.0, -0.0, 0.5, np.nan], np.float32)


def relu_of(x):
    return np.where(x > 0, x, np.zeros_like(x)) if x.dtype.kind == "f" else np.maximum(x, 0)


def same(path, x):
    y = read_tensor(path)
    expected = relu_of(x)
    return y.dtype == x.dtype and y.tobytes() == np.where(np.isnan(x), x, expected).tobytes()


@requires("onnx")
def test_a_folder_is_applied_file_by_file_into_another_under_the_same_names(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    inputs = {"a.npy": X, "b.pb": X[::-1].copy(), "c.NPY": np.array([-3, 4], np.int16)}
    for name, x in inputs.items():
        write_tensor(batch / name, x)
    (batch / "notes.txt").write_text("not a tensor")
    (batch / "nested").mkdir()  # sub-folders are not walked
    write_tensor(batch / "nested" / "d.npy", X)
    done = run_cli("apply", "batch", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "onnx-relu apply: 3 file(s): 3 written to out, 0 failed;"
        " 1 other file(s) of the folder left out"
    ]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(inputs)
    for name, x in inputs.items():
        assert same(tmp_path / "out" / name, x), name


def test_many_files_and_a_folder_last_as_cp_takes_them(tmp_path):
    write_tensor(tmp_path / "x.npy", X)
    (tmp_path / "sub").mkdir()
    write_tensor(tmp_path / "sub" / "y.npy", X * -1)
    (tmp_path / "out").mkdir()
    done = run_cli("apply", "x.npy", "sub/y.npy", "out/", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["x.npy", "y.npy"]
    assert same(tmp_path / "out" / "x.npy", X) and same(tmp_path / "out" / "y.npy", X * -1)
    # one IN and an existing folder: into the folder, as cp does
    done = run_cli("apply", "x.npy", "sub", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert same(tmp_path / "sub" / "x.npy", X)


def test_the_status_is_the_worst_files_and_no_failed_file_is_written(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    write_tensor(batch / "good.npy", X)
    write_tensor(batch / "uint8.npy", np.array([1, 2], np.uint8))  # no Relu allows it: 2
    (batch / "truncated.npy").write_bytes(np.lib.format.magic(1, 0) + b"\x10\x00{'descr'")
    write_tensor(batch / "zz.npy", X)
    before = folder_state(batch)
    done = run_cli("apply", "batch", "out", cwd=tmp_path)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 2, done.stderr
    assert errors[0].startswith("onnx-relu apply: error: 'batch/truncated.npy' is truncated")
    assert errors[1].startswith("onnx-relu apply: error: 'batch/uint8.npy': Relu-14 ")
    assert done.stderr.splitlines()[-1] == (
        "onnx-relu apply: 4 file(s): 2 written to out, 2 failed"
    )
    assert sorted(os.listdir(tmp_path / "out")) == ["good.npy", "zz.npy"]  # no partial file
    assert folder_state(batch) == before


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["batch", "batch"], "OUTDIR 'batch' is the folder IN"),
        (["batch/x.npy", "other/x.npy", "out"], "would both be written to"),
        (["other/x.npy", "batch/../batch/x.npy", "batch/.."], "would both be written to"),
        (["batch/x.npy", "batch", "out"], "IN 'batch' is a folder"),
        (["batch/x.npy", "batch/x.npy", "-"], "'-' (standard input or output) works with one"),
        (["--in-place", "batch/x.npy", "other/x.npy", "out"], "--in-place takes one IN"),
        (["--dask", "a.zarr", "b.zarr", "out"], "--dask takes one Zarr store IN"),
        (["--scheduler", "tcp://h:1", "batch", "out"], "--scheduler needs --dask"),
        (["empty", "out"], "IN folder 'empty' holds no tensor file"),
        (["other/x.npy", "other"], "would be written onto itself"),
    ],
)
def test_a_job_of_many_files_that_cannot_be_done_is_refused_before_any_is_written(
    tmp_path, args, fragment
):
    for folder in ("batch", "other", "empty"):
        (tmp_path / folder).mkdir()
    write_tensor(tmp_path / "batch" / "x.npy", X)
    write_tensor(tmp_path / "other" / "x.npy", X)
    before = folder_state(tmp_path)
    assert_cli_error(run_cli("apply", *args, cwd=tmp_path), 2, fragment)
    assert folder_state(tmp_path) == before  # no OUTDIR made, nothing written


def test_run_says_a_folder_is_not_a_model(tmp_path):
    (tmp_path / "models").mkdir()
    done = run_cli("run", "models", "-i", "x.npy", "-o", "out", cwd=tmp_path)
    assert_cli_error(done, 2, "MODEL 'models' is a folder, not a model: give one .onnx file")


def test_run_exact_needs_the_onnxruntime_engine(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"")
    done = run_cli("run", "m.onnx", "-i", "x.npy", "-o", "out", "--exact", cwd=tmp_path)
    assert_cli_error(done, 2, "--exact needs --engine onnxruntime")
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"]


@pytest.mark.parametrize("kind", ["fifo", "device", "broken-link"])
def test_a_folder_holding_a_special_file_named_like_a_tensor_is_refused_and_nothing_written(
    tmp_path, kind
):
    batch = tmp_path / "batch"
    batch.mkdir()
    write_tensor(batch / "a.npy", X)
    special = batch / "b.npy"
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "device":
        try:
            os.mknod(special, 0o600 | 0o020000, os.makedev(1, 3))  # a character device
        except PermissionError:
            pytest.skip("mknod needs root here")
    else:
        special.symlink_to(batch / "gone.npy")
    done = run_cli("apply", "batch", "out", cwd=tmp_path, timeout=60)
    line = assert_cli_error(done, 2, "'b.npy'")
    assert "not regular files" in line and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing written, not even the regular file
    assert read_tensor(batch / "a.npy").tobytes() == X.tobytes()
