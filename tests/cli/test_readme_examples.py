"""The shell examples of the documentation run as written: the command-line page's, the Dask
page's and the README's.

(The Python examples of those pages run in tests/core/test_package.py's doctests.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onnx_relu import read_tensor
from tests.support import REPOSITORY
from tests.support.optional import requires
from tests.support.oracle import expected_relu, same_bits

README = REPOSITORY / "README.md"
CLI_PAGE = REPOSITORY / "docs" / "cli.md"
DASK_PAGE = REPOSITORY / "docs" / "files-and-dask.md"


def shell_blocks(page: Path, section: str | None = None) -> list[str]:
    """The ``sh`` blocks of ``page``, or of its section headed ``section``."""
    text = page.read_text(encoding="utf-8")
    if section is not None:
        text = text[text.index(section) :]
        following = text.find("\n## ", len(section))
        if following != -1:
            text = text[:following]
    return re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)


def run_block(script: str, folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_pages_have_the_examples_this_test_runs():
    blocks = shell_blocks(CLI_PAGE)
    assert len(blocks) == 2
    assert "onnx-relu apply x.npy y.npy" in blocks[0]
    assert "onnx-relu legalize" in blocks[1]
    (dask,) = shell_blocks(DASK_PAGE, "## Clusters: Dask and Zarr")
    assert "--dask" in dask


def test_apply_examples_run(tmp_path):
    done = run_block(shell_blocks(CLI_PAGE)[0], tmp_path)
    assert done.returncode == 0, done.stderr
    x = np.array([-2.0, -0.0, 0.5, np.nan], np.float32)
    # The block ends by rewriting x.npy in place and then writing y.npy from it again.
    assert same_bits(read_tensor(tmp_path / "x.npy"), expected_relu(x))
    for name in ("y.npy", "y.pb", "z.npy", "piped.npy", "piped.pb"):
        assert same_bits(read_tensor(tmp_path / name), expected_relu(x))
    for name in ("y.npy", "y.pb", "z.npy"):  # the folder's files, and the two files after
        assert same_bits(read_tensor(tmp_path / "relu-batch" / name), expected_relu(x))


@requires("onnxruntime")  # the example runs the model in onnxruntime
def test_model_examples_run(tmp_path):
    done = run_block(shell_blocks(CLI_PAGE)[1], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "relu_int64.onnx: no findings" in done.stdout
    json_lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert json_lines == ['{"path": "./relu_int64.onnx", "opset": 14, "findings": []}']
    expected = np.array([0, 0, 5, 0], dtype=np.int64)
    assert read_tensor(tmp_path / "results" / "Y.npy").tolist() == expected.tolist()
    assert read_tensor(tmp_path / "results" / "Y.pb").tolist() == expected.tolist()
    assert (tmp_path / "relu_int64.ort.onnx").stat().st_size > 0


def test_dask_example_runs_on_a_local_cluster(tmp_path):
    zarr = pytest.importorskip(
        "zarr", reason="zarr is not installed (no wheel for this Python yet)"
    )
    values = np.array([[-1.5, 2.0], [np.inf, -0.0]], dtype=np.float64)
    store = zarr.create_array(
        tmp_path / "in.zarr", shape=values.shape, chunks=(1, 2), dtype=values.dtype
    )
    store[...] = values
    # The remote-scheduler line needs a cluster at that address; tests/files/test_dask.py runs
    # that path.
    local_only = "\n".join(
        line
        for line in shell_blocks(DASK_PAGE, "## Clusters: Dask and Zarr")[0].splitlines()
        if "--scheduler" not in line
    )
    assert "onnx-relu apply in.zarr out.zarr --dask" in local_only
    done = run_block(local_only, tmp_path)
    assert done.returncode == 0, done.stderr
    assert same_bits(zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(values))


def test_readme_command_line_example_runs(tmp_path):
    blocks = [block for block in shell_blocks(README) if "onnx-relu apply" in block]
    assert len(blocks) == 1
    done = run_block(blocks[0], tmp_path)
    assert done.returncode == 0, done.stderr
    x = np.array([-2.0, -0.0, 0.5, np.nan], np.float32)
    for name in ("y.npy", "y.pb", "piped.npy"):
        assert same_bits(read_tensor(tmp_path / name), expected_relu(x))
