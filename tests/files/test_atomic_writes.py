"""Atomic writes: the destination is the old content or the complete new one, never partial,
and a failure leaves no temporary behind."""

from __future__ import annotations

import doctest
import os
import stat

import pytest

from onnx_relu.files.jobs import zarr_output
from onnx_relu.files.jobs.zarr_output import atomic_directory
from onnx_relu.io import atomic as _atomic
from onnx_relu.io.atomic import TEMP_SUFFIX, atomic_file


def test_file_appears_only_when_complete(tmp_path):
    target = tmp_path / "out.bin"
    with atomic_file(target) as file:
        file.write(b"partial")
        assert not target.exists()  # nothing at the destination while writing
        [temporary] = os.listdir(tmp_path)
        assert temporary.startswith(".out.bin.") and temporary.endswith(TEMP_SUFFIX)
        file.write(b" and complete")
    assert target.read_bytes() == b"partial and complete"
    assert os.listdir(tmp_path) == ["out.bin"]


@pytest.mark.parametrize("error", [RuntimeError("disk gone"), KeyboardInterrupt()])
def test_failure_keeps_old_file_and_removes_temporary(tmp_path, error):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(type(error)):
        with atomic_file(target) as file:
            file.write(b"new but unfinished")
            raise error
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_new_file_gets_umask_permissions_and_replacement_keeps_them(tmp_path):
    old_mask = os.umask(0o027)
    try:
        with atomic_file(tmp_path / "new.bin") as file:
            file.write(b"x")
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.bin").st_mode) == 0o640
    os.chmod(tmp_path / "new.bin", 0o604)
    with atomic_file(tmp_path / "new.bin") as file:
        file.write(b"y")
    assert stat.S_IMODE(os.stat(tmp_path / "new.bin").st_mode) == 0o604


def test_directory_appears_only_when_complete(tmp_path):
    target = tmp_path / "out.zarr"
    with atomic_directory(target) as temporary:
        assert not target.exists()
        with open(os.path.join(temporary, "zarr.json"), "w") as file:
            file.write("{}")
    assert (target / "zarr.json").read_text() == "{}"
    assert os.listdir(tmp_path) == ["out.zarr"]


def test_directory_replaces_a_zarr_store(tmp_path):
    target = tmp_path / "out.zarr"
    target.mkdir()
    (target / "zarr.json").write_text("old")
    with atomic_directory(target) as temporary:
        with open(os.path.join(temporary, "zarr.json"), "w") as file:
            file.write("new")
    assert (target / "zarr.json").read_text() == "new"
    assert os.listdir(tmp_path) == ["out.zarr"]


def test_directory_never_replaces_a_folder_that_is_not_a_zarr_store(tmp_path):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    with pytest.raises(FileExistsError, match="not a Zarr store"):
        with atomic_directory(target):
            pass
    assert (target / "thesis.tex").read_text() == "years of work"
    assert os.listdir(tmp_path) == ["precious"]


def test_directory_failure_removes_temporary_and_keeps_old_store(tmp_path):
    target = tmp_path / "out.zarr"
    target.mkdir()
    (target / ".zarray").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_directory(target) as temporary:
            with open(os.path.join(temporary, "chunk"), "w") as file:
                file.write("half")
            raise RuntimeError("worker died")
    assert (target / ".zarray").read_text() == "old"
    assert os.listdir(tmp_path) == ["out.zarr"]


@pytest.mark.parametrize("module", [_atomic, zarr_output], ids=lambda module: module.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def _folder_near_path_max(root, length: int) -> str:
    """A folder under ``root`` whose absolute path is ``length`` bytes long."""
    folder = os.path.abspath(root)
    while len(folder) < length - 201:
        folder = os.path.join(folder, "d" * 200)
    folder = os.path.join(folder, "e" * (length - len(folder) - 1))
    os.makedirs(folder)
    return folder


@pytest.mark.parametrize("suffix", [".npy", ".pb"])
def test_out_near_path_max_is_written(tmp_path, suffix):
    # issue 30, item 6: the temporary's path is 27 bytes longer than OUT's; an OUT that the OS
    # accepts (4,079 bytes, under Linux's PATH_MAX of 4,096 with its NUL) must be writable.
    import numpy as np

    from onnx_relu import read_tensor, write_tensor
    from tests.support.cli import run_cli

    folder = _folder_near_path_max(tmp_path, 4068)
    out = os.path.join(folder, "yyyyyy" + suffix)
    assert len(os.fsencode(out)) == 4075 + len(suffix)
    write_tensor(out, np.array([-1.0, 2.0]))
    assert read_tensor(out).tolist() == [-1.0, 2.0]
    write_tensor(tmp_path / "x.npy", np.array([-3.0, 4.0]))
    done = run_cli("apply", tmp_path / "x.npy", out)
    assert done.returncode == 0, done.stderr
    assert read_tensor(out).tolist() == [0.0, 4.0]
    assert os.listdir(folder) == ["yyyyyy" + suffix]
    with pytest.raises(RuntimeError):  # a failure still removes the temporary
        with atomic_file(out) as file:
            file.write(b"half")
            raise RuntimeError
    assert os.listdir(folder) == ["yyyyyy" + suffix]
