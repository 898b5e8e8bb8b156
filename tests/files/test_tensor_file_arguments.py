"""What the tensor-file functions take besides a plain array and a str path: masked arrays are
refused (neither format has a mask), bytes paths are the OS's bytes (issue 30, item 7 and the
bytes paths)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from onnx_relu import read_tensor, write_tensor
from onnx_relu.files import relu_file
from onnx_relu.files.formats import tensor_format


def folder_state(folder) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


@pytest.mark.parametrize("suffix", [".npy", ".pb"])
def test_write_tensor_refuses_a_masked_array_and_writes_nothing(tmp_path, suffix):
    masked = np.ma.masked_array([1.0, -2.0, 3.0], mask=[False, True, False])
    with pytest.raises(TypeError, match=r"cannot write a numpy\.ma\.MaskedArray.*has no mask"):
        write_tensor(tmp_path / f"new{suffix}", masked)
    assert os.listdir(tmp_path) == []
    old = tmp_path / f"old{suffix}"
    write_tensor(old, np.array([5.0]))
    before = folder_state(tmp_path)
    with pytest.raises(TypeError, match="MaskedArray"):
        write_tensor(old, masked)
    assert folder_state(tmp_path) == before
    # numpy.save refuses one too (the behaviour followed)
    with pytest.raises(NotImplementedError):
        np.save(tmp_path / "numpy.npy", masked)


@pytest.mark.parametrize("suffix", [".npy", ".pb"])
def test_write_tensor_still_takes_the_data_of_a_masked_array_when_asked(tmp_path, suffix):
    masked = np.ma.masked_array([1.0, -2.0], mask=[False, True])
    write_tensor(tmp_path / f"d{suffix}", masked.filled(0.0))
    assert read_tensor(tmp_path / f"d{suffix}").tolist() == [1.0, 0.0]


@pytest.mark.parametrize("suffix", [".npy", ".pb"])
def test_bytes_paths_are_read_and_written_as_the_os_bytes(tmp_path, suffix):
    folder = os.fsencode(tmp_path)
    name = folder + b"/t\xff" + suffix.encode()  # not UTF-8: kept as the bytes given
    assert tensor_format(name) == suffix[1:]
    write_tensor(name, np.array([-1.0, 2.0]))
    assert os.path.exists(name)
    assert read_tensor(name).tolist() == [-1.0, 2.0]
    out = folder + b"/r" + suffix.encode()
    relu_file(name, out)
    assert read_tensor(out).tolist() == [0.0, 2.0]
    assert sorted(os.listdir(folder)) == sorted(
        [b"t\xff" + suffix.encode(), b"r" + suffix.encode()]
    )


def test_a_removed_working_folder_is_named_with_the_path_it_breaks(tmp_path):
    # issue 30, item 10: os.getcwd's bare FileNotFoundError named no file
    import subprocess

    from tests.support.cli import SCRIPT

    write_tensor(tmp_path / "x.npy", np.array([-1.0, 2.0]))
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    try:
        os.rmdir(gone)
        for call in (
            lambda: write_tensor("y.npy", np.zeros(2)),
            lambda: relu_file(tmp_path / "x.npy", "y.npy"),
        ):
            with pytest.raises(FileNotFoundError, match="working folder no longer") as raised:
                call()
            assert raised.value.filename == "y.npy"
    finally:
        os.chdir(here)
    gone.mkdir()
    done = subprocess.run(
        ["sh", "-c", 'cd "$2" && rmdir "$2" && exec "$0" apply "$1" y.npy', SCRIPT,
         str(tmp_path / "x.npy"), str(gone)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert "working folder no longer exists" in done.stderr and "'y.npy'" in done.stderr
