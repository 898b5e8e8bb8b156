"""Tensor files (.npy and ONNX TensorProto .pb): exact round trips for every Relu type, the
bfloat16 .npy convention, and clear errors (never a crash) for files that cannot be read."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

from onnx_relu import InvalidTensorFileError, UnsupportedFileFormatError, read_tensor, write_tensor
from onnx_relu.files import relu_file
from onnx_relu.files.formats import tensor_format
from onnx_relu.files.tensors import read_npy_header, read_pb_tensor
from tests.support.dtypes import TYPE_NAMES, relu_type
from tests.support.oracle import expected_relu, same_bits
from tests.support.values import mixed_values, special_values

SUFFIXES = [".npy", ".pb"]


def shaped_values(dtype: np.dtype) -> np.ndarray:
    return mixed_values(dtype, 72).reshape(3, 4, 6)


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_round_trip_is_bit_exact(tmp_path, type_name, suffix):
    array = shaped_values(relu_type(type_name).dtype)
    path = tmp_path / f"t{suffix}"
    write_tensor(path, array)
    back = read_tensor(path)
    assert same_bits(back, array)
    assert back.flags.writeable


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("type_name", TYPE_NAMES)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,)])
def test_round_trip_of_scalars_and_empty_tensors(tmp_path, type_name, suffix, shape):
    dtype = relu_type(type_name).dtype
    array = special_values(dtype)[: int(np.prod(shape))].reshape(shape)
    path = tmp_path / f"t{suffix}"
    write_tensor(path, array)
    assert same_bits(read_tensor(path), array)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_layouts_keep_values(tmp_path, suffix):
    base = mixed_values(np.float32, 60).reshape(6, 10)
    for index, array in enumerate([np.asfortranarray(base), base[:, ::3], base.T, base[::-1]]):
        path = tmp_path / f"l{index}{suffix}"
        write_tensor(path, array)
        back = read_tensor(path)
        assert same_bits(np.ascontiguousarray(back), np.ascontiguousarray(array))


def test_npy_keeps_byte_order_and_fortran_order(tmp_path):
    swapped = mixed_values(np.float64, 48).astype(">f8")
    write_tensor(tmp_path / "s.npy", swapped)
    back = read_tensor(tmp_path / "s.npy")
    assert back.dtype == np.dtype(">f8") and same_bits(back, swapped)
    fortran = np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4))
    write_tensor(tmp_path / "f.npy", fortran)
    back = read_tensor(tmp_path / "f.npy")
    assert back.flags.f_contiguous and not back.flags.c_contiguous
    assert np.array_equal(back, fortran)


def test_pb_stores_byte_swapped_input_as_its_values(tmp_path):
    swapped = np.array([1.5, -2.0, np.inf], dtype=">f4")
    write_tensor(tmp_path / "s.pb", swapped)
    back = read_tensor(tmp_path / "s.pb")
    assert back.dtype == np.float32 and np.array_equal(back, swapped.astype(np.float32))


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_npy_files_are_what_numpy_writes_and_reads(tmp_path, type_name):
    dtype = relu_type(type_name).dtype
    array = shaped_values(dtype)
    np.save(tmp_path / "numpy.npy", array)
    assert same_bits(read_tensor(tmp_path / "numpy.npy"), array)
    write_tensor(tmp_path / "ours.npy", array)
    assert (tmp_path / "ours.npy").read_bytes() == (tmp_path / "numpy.npy").read_bytes()
    loaded = np.load(tmp_path / "ours.npy")
    if dtype == np.dtype(ml_dtypes.bfloat16):
        assert loaded.dtype == np.dtype("V2")  # numpy alone sees two raw bytes ...
        loaded = loaded.view(ml_dtypes.bfloat16)  # ... which view back exactly
    assert same_bits(loaded, array)


def test_bfloat16_npy_header_says_little_endian_void(tmp_path):
    write_tensor(tmp_path / "b.npy", np.zeros(3, dtype=ml_dtypes.bfloat16))
    assert b"'descr': '<V2'" in (tmp_path / "b.npy").read_bytes()[:128]
    with open(tmp_path / "b.npy", "rb") as file:
        assert read_npy_header(file).dtype == np.dtype(ml_dtypes.bfloat16)


def test_byte_swapped_bfloat16_is_written_so_that_it_reads_back_as_bfloat16(tmp_path):
    # issue 13, item 9: numpy wrote the header '>V2', read back as raw |V2 that apply refused.
    values = mixed_values(ml_dtypes.bfloat16, 100)
    swapped = values.astype(values.dtype.newbyteorder())
    assert not swapped.dtype.isnative
    write_tensor(tmp_path / "s.npy", swapped)
    assert b"'descr': '<V2'" in (tmp_path / "s.npy").read_bytes()[:128]
    back = read_tensor(tmp_path / "s.npy")
    assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    assert same_bits(back, values)
    relu_file(tmp_path / "s.npy", tmp_path / "r.npy")
    assert same_bits(read_tensor(tmp_path / "r.npy"), expected_relu(values))


def test_plain_void_npy_stays_void(tmp_path):
    # numpy writes its own void type as '|V2': that is not bfloat16 and is not taken for it.
    np.save(tmp_path / "v.npy", np.zeros(3, dtype="V2"))
    assert read_tensor(tmp_path / "v.npy").dtype == np.dtype("V2")


@pytest.mark.parametrize(
    "array",
    [
        np.array([0, 200, 255], dtype=np.uint8),
        np.array([True, False]),
        np.array([1, 2], dtype=np.uint64),
        np.array([1 + 2j], dtype=np.complex64),
        np.array([(1, 2.0)], dtype=[("a", "<i4"), ("b", "<f8")]),
        np.array([0.5, -1], dtype=ml_dtypes.float8_e4m3fn),
    ],
    ids=lambda a: str(a.dtype),
)
def test_npy_of_types_relu_refuses_is_read(tmp_path, array):
    np.save(tmp_path / "x.npy", array)
    back = read_tensor(tmp_path / "x.npy")
    if array.dtype == np.dtype(ml_dtypes.float8_e4m3fn):
        assert back.dtype == np.dtype("V1")  # numpy writes ml_dtypes' 1-byte types as raw bytes
    else:
        assert back.dtype == array.dtype and np.array_equal(back, array)


def test_pb_of_types_relu_refuses_is_read(tmp_path):
    for array in (np.array([0, 255], dtype=np.uint8), np.array([True, False])):
        write_tensor(tmp_path / "x.pb", array)
        back = read_tensor(tmp_path / "x.pb")
        assert back.dtype == array.dtype and np.array_equal(back, array)


def test_pb_keeps_the_tensor_name(tmp_path):
    write_tensor(tmp_path / "n.pb", np.arange(3, dtype=np.int32), name="input_0")
    array, name = read_pb_tensor(tmp_path / "n.pb")
    assert name == "input_0" and np.array_equal(array, [0, 1, 2])


@pytest.mark.parametrize(
    ("data_type", "values", "expected"),
    [
        (TensorProto.FLOAT, [1.5, -0.0, -2.0], np.array([1.5, -0.0, -2.0], np.float32)),
        (TensorProto.INT8, [-128, 0, 127], np.array([-128, 0, 127], np.int8)),
        (TensorProto.INT64, [-(2**63), 2**63 - 1], np.array([-(2**63), 2**63 - 1], np.int64)),
        (TensorProto.DOUBLE, [np.inf, -1e300], np.array([np.inf, -1e300])),
    ],
)
def test_pb_with_typed_fields_instead_of_raw_data_is_read(tmp_path, data_type, values, expected):
    tensor = onnx.helper.make_tensor("x", data_type, [len(values)], values, raw=False)
    assert not tensor.raw_data
    (tmp_path / "x.pb").write_bytes(tensor.SerializeToString())
    assert same_bits(read_tensor(tmp_path / "x.pb"), expected)


def test_pb_half_types_in_int32_data_are_read(tmp_path):
    for dtype, code in (
        (np.float16, TensorProto.FLOAT16),
        (ml_dtypes.bfloat16, TensorProto.BFLOAT16),
    ):
        values = mixed_values(dtype, 48)
        tensor = TensorProto(data_type=code, dims=[values.size], name="x")
        tensor.int32_data.extend(values.view(np.uint16).astype(np.int32).tolist())
        (tmp_path / "h.pb").write_bytes(tensor.SerializeToString())
        assert same_bits(read_tensor(tmp_path / "h.pb"), values)


def test_unknown_suffix_is_refused_and_nothing_written(tmp_path):
    with pytest.raises(UnsupportedFileFormatError, match=r"\.npy \(NumPy\) or \.pb"):
        write_tensor(tmp_path / "x.csv", np.zeros(2))
    with pytest.raises(UnsupportedFileFormatError, match="x.txt"):
        read_tensor(tmp_path / "x.txt")
    assert os.listdir(tmp_path) == []
    assert tensor_format("A.NPY") == "npy"


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


GOOD_NPY = _npy_bytes(np.arange(100, dtype=np.float32))
GOOD_PB = numpy_helper.from_array(np.arange(100, dtype=np.float32)).SerializeToString()


def _pb_with(**fields) -> bytes:
    tensor = TensorProto(**fields)
    return tensor.SerializeToString()


#: Bad .npy files and the words of their one error.
BAD_NPY = [
    (b"", "is empty"),
    (b"\x93NUM", "not a .npy file"),
    (b"PK\x03\x04 a zip file", "not a .npy file"),
    (GOOD_NPY[:9], "truncated inside its .npy header"),
    (GOOD_NPY[:100], "truncated inside its .npy header"),
    (GOOD_NPY[:-1], r"truncated: its header promises 400 bytes of data .* but only 399"),
    (GOOD_NPY[:128], "only 0 follow"),
    (b"\x93NUMPY\x09\x00" + GOOD_NPY[8:], "format version 9.0"),
    (GOOD_NPY.replace(b"'descr': '<f4'", b"'descr': 'xyz'"), "names no valid dtype"),
    (GOOD_NPY.replace(b"'shape': (100,)", b"'shape': (-10,)"), "not a tuple of integers"),
    (GOOD_NPY.replace(b"'fortran_order'", b"'fortran_ordes'"), "exactly the keys"),
    (GOOD_NPY.replace(b"{'descr'", b"[{'descr'"), "not readable"),
    (_npy_bytes(np.array([{"a": 1}], dtype=object)), "never unpickles"),
    (GOOD_PB, "not a .npy file"),
]

#: Bad .pb files and the words of their one error.
BAD_PB = [
    (b"", "is empty"),
    (GOOD_PB[:-1], "not a valid ONNX TensorProto"),
    (GOOD_PB[:10], "not a valid ONNX TensorProto"),
    (b"\xff" * 64, "not a valid ONNX TensorProto"),
    (GOOD_NPY, "not a valid ONNX TensorProto"),
    (_pb_with(dims=[3]), "names no element type"),
    (_pb_with(data_type=TensorProto.FLOAT, dims=[9], raw_data=bytes(12)), "cannot be decoded"),
    (_pb_with(data_type=TensorProto.FLOAT, dims=[3], float_data=[1.0]), "cannot be decoded"),
    (_pb_with(data_type=TensorProto.FLOAT, dims=[-3]), "negative extent"),
    (_pb_with(data_type=99, dims=[1]), "cannot be decoded"),
]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [*(("bad.npy", *bad) for bad in BAD_NPY), *(("bad.pb", *bad) for bad in BAD_PB)],
)
def test_bad_tensor_files_give_clear_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InvalidTensorFileError, match=message) as raised:
        read_tensor(path)
    assert name in str(raised.value)


def test_a_model_file_is_not_taken_for_a_tensor(tmp_path):
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [onnx.helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    (tmp_path / "model.pb").write_bytes(onnx.helper.make_model(graph).SerializeToString())
    with pytest.raises(InvalidTensorFileError, match="model.pb"):
        read_tensor(tmp_path / "model.pb")


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "t.npy"
    write_tensor(path, np.arange(3.0))
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_tensor(path, np.array([object()]))
    with pytest.raises(TypeError):
        write_tensor(tmp_path / "t.pb", np.array(["text"], dtype="U4").astype("V16"))
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["t.npy"]


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_tensor(tmp_path / "absent.npy")
    with pytest.raises(FileNotFoundError):
        read_tensor(tmp_path / "absent.pb")


def test_docstring_examples_run():
    import doctest

    from onnx_relu.files import tensor_files, tensors

    for module in (tensors, tensor_files):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0
