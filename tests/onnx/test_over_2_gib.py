"""Models and tensors over protobuf's 2 GiB limit (issue 13, item 6), without 2 GiB of memory.

Until issue 13, check_model, ``onnx-relu check`` and legalize loaded a model's external data
inline and then had onnx's shape inference serialize it: any valid model with over 2 GiB of
external data ended in a ``google.protobuf.message.EncodeError`` traceback; ``write_tensor`` and
``onnx-relu apply IN.npy OUT.pb`` for a tensor over 2 GiB raised EncodeError (apply after reading
it all), and .onnx/.pb files over 2 GiB were called corrupt.

The big files here are sparse (``truncate``): they take almost no disk, and nothing reads their
data, which is the point. Smaller cases lower the private limits with monkeypatch.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_relu import check_model, legalize, read_tensor, write_tensor
from onnx_relu.errors import InvalidModelError, InvalidTensorFileError
from onnx_relu.files import pb as pb_module
from onnx_relu.files import relu_file
from tests.support.cli import assert_cli_error, run_cli
from tests.support.optional import requires

OVER_2_GIB = (1 << 31) + 64


def listing(folder) -> dict[str, tuple[int, int]]:
    """Name -> (size, modification time) of every file: tests.support.cli.folder_state would
    read the sparse gigabytes."""
    return {
        entry.name: (entry.stat().st_size, entry.stat().st_mtime_ns) for entry in os.scandir(folder)
    }


def sparse_file(path, size: int) -> None:
    with open(path, "wb") as file:
        file.truncate(size)


def model_with_external_data(
    folder, elem_type: int, itemsize: int, opset: int, nbytes: int = OVER_2_GIB
):
    """Relu(Add(w, w)) where w's data (nbytes, sparse) lives in w.bin: the Relu's input type
    is known only through shape inference."""
    count = nbytes // itemsize
    weights = TensorProto(name="w", data_type=elem_type, dims=[count])
    weights.data_location = TensorProto.EXTERNAL
    weights.external_data.add(key="location", value="w.bin")
    weights.external_data.add(key="length", value=str(count * itemsize))
    sparse_file(folder / "w.bin", count * itemsize)
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["w", "w"], ["t"]),
            helper.make_node("Relu", ["t"], ["y"], name="r"),
        ],
        "big",
        [],
        [helper.make_tensor_value_info("y", elem_type, [count])],
        initializer=[weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = folder / "big.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_check_model_and_check_command_on_over_2_gib_of_external_data(tmp_path):
    path = model_with_external_data(tmp_path, TensorProto.INT8, 1, opset=13)
    (finding,) = check_model(path)
    assert finding.kind == "type-not-allowed" and finding.input_type == "tensor(int8)"
    before = listing(tmp_path)
    done = run_cli("check", path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "Relu node 'r' (node #1): input 't' has type tensor(int8)" in done.stdout
    assert listing(tmp_path) == before


@requires("onnxruntime")  # legalize probes onnxruntime
def test_legalize_keeps_over_2_gib_of_external_data_external(tmp_path):
    path = model_with_external_data(tmp_path, TensorProto.BFLOAT16, 2, opset=14)
    result = legalize(path)
    (weights,) = result.graph.initializer
    assert weights.data_location == TensorProto.EXTERNAL and not weights.raw_data
    assert "Relu" not in [node.op_type for node in result.graph.node]  # bfloat16: rewritten
    done = run_cli("legalize", path, tmp_path / "legal.onnx")
    assert done.returncode == 0, done.stderr
    assert (
        onnx.load(tmp_path / "legal.onnx", load_external_data=False)
        .graph.initializer[0]
        .external_data
    )
    # (written into another folder, the data is copied beside OUT: tests/onnx/test_legalize_out.py)


def test_external_data_checks_hold_without_reading(tmp_path, monkeypatch):
    # With the limit lowered, the not-loaded path judges small models; bad references are still
    # refused as when the data is loaded.
    from onnx_relu.onnx import _models

    monkeypatch.setattr(_models, "_INLINE_LIMIT", 64)
    path = model_with_external_data(tmp_path, TensorProto.INT8, 1, opset=13, nbytes=1000)
    assert [f.kind for f in check_model(path)] == ["type-not-allowed"]
    (tmp_path / "w.bin").write_bytes(b"short")
    with pytest.raises(InvalidModelError, match="external tensor data cannot be read.*shorter"):
        check_model(path)
    (tmp_path / "w.bin").unlink()
    with pytest.raises(
        InvalidModelError, match="external tensor data cannot be read.*not a regular file"
    ):
        check_model(path)


@pytest.mark.parametrize("suffix", [".onnx", ".pb"])
def test_files_over_2_gib_are_named_too_large_not_corrupt(tmp_path, suffix):
    path = tmp_path / f"huge{suffix}"
    sparse_file(path, 1 << 31)
    if suffix == ".onnx":
        with pytest.raises(InvalidModelError, match="protobuf reads no message of 2 GiB or more"):
            check_model(path)
        assert_cli_error(run_cli("check", path), 2, "protobuf reads no message of 2 GiB")
    else:
        with pytest.raises(
            InvalidTensorFileError, match="protobuf reads no message of 2 GiB.*\\.npy"
        ):
            read_tensor(path)


def test_write_tensor_over_the_pb_limit_is_refused_before_encoding(tmp_path, monkeypatch):
    monkeypatch.setattr(pb_module, "PB_DATA_LIMIT", 100)
    with pytest.raises(ValueError, match="holds at most 2 GiB.*has 101 bytes; write it as .npy"):
        write_tensor(tmp_path / "x.pb", np.zeros(101, np.int8))
    assert not (tmp_path / "x.pb").exists()
    write_tensor(tmp_path / "x.pb", np.zeros(100, np.int8))


def test_apply_npy_to_pb_over_2_gib_is_refused_before_reading(tmp_path):
    # A .npy header for 2**31 + 100 int8 values over a sparse file: refused from the header.
    source = tmp_path / "huge.npy"
    header = {"descr": "|i1", "fortran_order": False, "shape": ((1 << 31) + 100,)}
    with open(source, "wb") as file:
        np.lib.format.write_array_header_1_0(file, header)
        file.truncate(file.tell() + (1 << 31) + 100)
    with pytest.raises(ValueError, match="holds at most 2 GiB.*2147483748 bytes; write it as .npy"):
        relu_file(source, tmp_path / "huge.pb")
    before = listing(tmp_path)
    done = run_cli("apply", source, tmp_path / "huge.pb", timeout=60)
    assert_cli_error(done, 2, "holds at most 2 GiB")
    assert listing(tmp_path) == before
