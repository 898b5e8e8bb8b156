"""Output paths that are odd but valid or clearly wrong (issue 13, item 12): an OUT name of
228-255 bytes (the temporary name must still fit the file system's 255-byte limit), an OUT that
is a symbolic link (written through, the link kept), an OUT that is an existing folder (refused
naming it, not the temporary)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from onnx_relu.files import TEMP_SUFFIX, read_tensor, relu_file, write_tensor
from onnx_relu.files.jobs.zarr_output import atomic_directory
from tests.support.cli import assert_cli_error, folder_state, run_cli
from tests.support.oracle import expected_relu, same_bits

X = np.array([-2.0, -0.0, 3.5, np.nan], np.float32)


def _long_name(total_bytes: int, suffix: str, letter: str = "a") -> str:
    """A file name of exactly ``total_bytes`` bytes (UTF-8) ending in ``suffix``."""
    width = len(letter.encode())
    stem = letter * ((total_bytes - len(suffix)) // width)
    stem += "b" * (total_bytes - len(suffix) - len(stem.encode()))
    name = stem + suffix
    assert len(name.encode()) == total_bytes
    return name


LONG_NAMES = {
    "228-bytes": _long_name(228, ".npy"),
    "240-bytes": _long_name(240, ".npy"),
    "255-bytes": _long_name(255, ".npy"),
    "255-bytes-pb": _long_name(255, ".pb"),
    "255-bytes-of-two-byte-letters": _long_name(255, ".npy", letter="é"),
}


@pytest.mark.parametrize("name", LONG_NAMES.values(), ids=LONG_NAMES.keys())
def test_out_name_up_to_255_bytes_is_written(tmp_path, name):
    write_tensor(tmp_path / "x.npy", X)
    relu_file(tmp_path / "x.npy", tmp_path / name)
    assert same_bits(read_tensor(tmp_path / name), expected_relu(X))
    write_tensor(tmp_path / name, X)  # replacing it, through write_tensor
    assert same_bits(read_tensor(tmp_path / name), X)
    assert sorted(os.listdir(tmp_path)) == sorted(["x.npy", name])  # no temporary left


def test_out_name_of_255_bytes_through_apply(tmp_path):
    name = LONG_NAMES["255-bytes"]
    write_tensor(tmp_path / "x.npy", X)
    done = run_cli("apply", "x.npy", name, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert same_bits(read_tensor(tmp_path / name), expected_relu(X))


def test_zarr_store_name_of_255_bytes(tmp_path):
    name = _long_name(255, ".zarr")
    with atomic_directory(tmp_path / name) as temporary:
        assert len(os.path.basename(temporary).encode()) <= 255
        assert os.path.basename(temporary).endswith(TEMP_SUFFIX)
        Path(temporary, "zarr.json").write_text("{}")
    assert sorted(os.listdir(tmp_path)) == [name]
    with atomic_directory(tmp_path / name) as temporary:  # replacing it: the ".old" aside too
        Path(temporary, "zarr.json").write_text("{}")
    assert sorted(os.listdir(tmp_path)) == [name]


@pytest.mark.parametrize("how", ["relu_file", "write_tensor", "apply"])
def test_out_that_is_a_symlink_is_written_through(tmp_path, how):
    (tmp_path / "data").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "data" / "y.npy"
    write_tensor(target, np.zeros(2, np.int8))
    os.chmod(target, 0o640)
    link = tmp_path / "links" / "y.npy"
    link.symlink_to(os.path.relpath(target, link.parent))
    write_tensor(tmp_path / "x.npy", X)
    if how == "relu_file":
        relu_file(tmp_path / "x.npy", link)
    elif how == "write_tensor":
        write_tensor(link, expected_relu(X))
    else:
        done = run_cli("apply", tmp_path / "x.npy", link)
        assert (done.returncode, done.stderr) == (0, "")
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert same_bits(read_tensor(target), expected_relu(X))
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o640)  # the file's permissions kept
    assert sorted(os.listdir(tmp_path / "data")) == ["y.npy"]
    assert sorted(os.listdir(tmp_path / "links")) == ["y.npy"]


def test_out_that_is_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "y.npy"
    link.symlink_to("made.npy")
    write_tensor(tmp_path / "x.npy", X)
    done = run_cli("apply", "x.npy", "y.npy", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert link.is_symlink()
    assert same_bits(read_tensor(tmp_path / "made.npy"), expected_relu(X))


@pytest.mark.parametrize("how", ["relu_file", "write_tensor"])
def test_out_that_is_an_existing_folder_is_refused_naming_it(tmp_path, how):
    write_tensor(tmp_path / "x.npy", X)
    folder = tmp_path / "y.npy"
    folder.mkdir()
    (folder / "keep.txt").write_text("kept")
    before = folder_state(tmp_path)
    with pytest.raises(IsADirectoryError) as raised:
        if how == "relu_file":
            relu_file(tmp_path / "x.npy", folder)
        else:
            write_tensor(folder, X)
    assert raised.value.filename == str(folder)
    assert "is a folder" in str(raised.value) and TEMP_SUFFIX not in str(raised.value)
    assert folder_state(tmp_path) == before


def test_run_output_that_is_an_existing_folder_is_one_line_naming_it(tmp_path):
    """``run -o DIR`` writes DIR/<output name>.npy; a folder of that name is reported by name,
    as a usage error found before the model runs."""
    onnx = pytest.importorskip("onnx")
    from tests.support.onnx_models import relu_model

    onnx.save(relu_model("float32", 14), tmp_path / "m.onnx")
    write_tensor(tmp_path / "x.npy", X)
    (tmp_path / "out" / "y.npy").mkdir(parents=True)
    done = run_cli("run", "m.onnx", "-i", "x.npy", "-o", "out", cwd=tmp_path)
    line = assert_cli_error(done, 2, "is a folder")
    assert "out/y.npy" in line and TEMP_SUFFIX not in line
