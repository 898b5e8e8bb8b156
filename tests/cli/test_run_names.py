"""``onnx-relu run`` with odd but valid names (issue 13, item 12): graph input names and file
paths that contain "=", and graph output names holding newlines and terminal escapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")  # `make test` installs onnx and onnxruntime
from onnx import helper  # noqa: E402

from onnx_relu.files import read_tensor, write_tensor  # noqa: E402
from tests.support.cli import run_cli  # noqa: E402
from tests.support.onnx_models import graph_model, value_info  # noqa: E402
from tests.support.oracle import expected_relu, same_bits  # noqa: E402

A = np.array([-1.0, 2.0], np.float32)
B = np.array([3.0, -4.0], np.float32)


def _relu_model(path: Path, inputs: list[str], outputs: list[str]) -> Path:
    """One Relu per input, from input i to output i."""
    nodes = [helper.make_node("Relu", [i], [o]) for i, o in zip(inputs, outputs, strict=True)]
    onnx.save(
        graph_model(nodes, [value_info(i) for i in inputs], [value_info(o) for o in outputs]), path
    )
    return path


def test_input_names_containing_equals_signs_split_at_the_longest_name(tmp_path):
    _relu_model(tmp_path / "m.onnx", ["a", "a=b"], ["ya", "yab"])
    (tmp_path / "d=1").mkdir()
    write_tensor(tmp_path / "d=1" / "a.npy", A)
    write_tensor(tmp_path / "b=.npy", B)
    done = run_cli(
        "run", "m.onnx", "-i", "a=b=b=.npy", "-i", "a=d=1/a.npy", "-o", "out", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert same_bits(read_tensor(tmp_path / "out" / "ya.npy"), expected_relu(A))
    assert same_bits(read_tensor(tmp_path / "out" / "yab.npy"), expected_relu(B))


@pytest.mark.parametrize("entry", ["k=v.npy", "X=k=v.npy"], ids=["no-name", "named"])
def test_a_path_containing_an_equals_sign(tmp_path, entry):
    _relu_model(tmp_path / "m.onnx", ["X"], ["Y"])
    write_tensor(tmp_path / "k=v.npy", A)
    done = run_cli("run", "m.onnx", "-i", entry, "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert same_bits(read_tensor(tmp_path / "out" / "Y.npy"), expected_relu(A))


def test_output_names_are_printed_escaped_one_line_each(tmp_path):
    names = ["y\n\x1b[2J\x1b[31mred", "z\rback\x07"]
    _relu_model(tmp_path / "m.onnx", ["a", "b"], names)
    write_tensor(tmp_path / "a.npy", A)
    write_tensor(tmp_path / "b.npy", B)
    done = run_cli("run", "m.onnx", "-i", "a=a.npy", "-i", "b=b.npy", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert not any(c in done.stdout for c in "\x1b\r\x07")
    assert lines[0].startswith(repr(names[0]) + " -> ")
    assert lines[1].startswith(repr(names[1]) + " -> ")
