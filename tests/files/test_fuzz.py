"""Fuzzing the tensor-file readers with Hypothesis: ``read_tensor`` (.npy and .pb) and
``relu_file``, which ``onnx-relu apply`` runs, on random bytes and on mutated valid files.

A file is read, or refused with a documented error, and never changed; ``relu_file`` refuses
exactly what ``read_tensor`` refuses (plus types Relu does not allow) and otherwise writes the
bit-exact Relu. Example counts come from the profile loaded in tests/conftest.py, scaled per
target by ``examples(weight)``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from onnx_relu.errors import OnnxReluError, UnsupportedTypeError
from onnx_relu.files import read_tensor, relu_file, write_tensor
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu
from tests.support.strategies import (
    examples,
    mutated_bytes,
    parser_warnings_allowed,
    random_or_mutated_bytes,
)

onnx = pytest.importorskip("onnx")  # .pb files need it; `make test` has it
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

# Documented outcomes (docs/reliability.md): a file is read, or refused with one of the error
# classes of onnx_relu.errors, or the OS refuses it (OSError). Anything else (a bare ValueError,
# KeyError, MemoryError, a crash) is a bug. Warnings that onnx or numpy give about a file's
# content are allowed (see parser_warnings_allowed): theirs to give, and not exceptions.

DOCUMENTED = (OnnxReluError, OSError)


@pytest.fixture(scope="module")
def fuzz_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _npy(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array)
    else:  # numpy's writer for an explicit format version
        np.lib.format.write_array(buffer, array, version=version)
    return buffer.getvalue()


def _seed_arrays() -> list[np.ndarray]:
    arrays = [np.arange(-6, 6).astype(d).reshape(3, 4) for d in RELU_DTYPES]
    arrays += [
        np.asfortranarray(np.arange(-6.0, 6.0, dtype=np.float32).reshape(3, 4)),
        np.array(-1.5, dtype=np.float64),  # 0-d
        np.zeros((2, 0, 3), dtype=np.int16),  # empty
        np.arange(-3, 3, dtype=">i4"),  # big-endian
        np.array([0, 200, 255], dtype=np.uint8),  # a type Relu refuses
        np.zeros(2, dtype=[("a", "<i2"), ("b", "<f4")]),  # structured
    ]
    return arrays


NPY_SEEDS = [_npy(a) for a in _seed_arrays()] + [
    _npy(np.arange(-2, 2, dtype=np.float32), version=(2, 0)),
    _npy(np.arange(-2, 2, dtype=np.float32), version=(3, 0)),
]
PB_SEEDS = [
    numpy_helper.from_array(a, name="t").SerializeToString()
    for a in _seed_arrays()
    if a.dtype.fields is None and a.dtype.isnative
] + [
    numpy_helper.from_array(np.array([b"ab", b"-1"], dtype=object)).SerializeToString(),
    helper.make_tensor("f", TensorProto.FLOAT, [3], [1.0, -2.0, 3.0]).SerializeToString(),
    helper.make_tensor(
        "h", TensorProto.FLOAT16, [2], np.array([1, -2], np.float16)
    ).SerializeToString(),
    helper.make_tensor("i4", TensorProto.INT4, [3], [1, -2, 3]).SerializeToString(),
]


def _header_text(draw: st.DrawFn) -> bytes:
    """A .npy header that is a plausible dict with odd values (shapes huge, negative, deep)."""
    descr = draw(
        st.sampled_from(
            [
                "<f4",
                "<V2",
                "|V2",
                "<i8",
                ">f2",
                "|b1",
                "|O",
                "<U3",
                "<q9",
                "",
                ("<f4", (2,)),
                [("a", "<f4")],
                [("a", "|O")],
                5,
                None,
            ]
        )
    )
    extent = st.one_of(st.integers(0, 8), st.sampled_from([-1, 2**31, 2**62, 2**63, 2**64]))
    shape = draw(
        st.one_of(
            st.lists(extent, max_size=4).map(tuple),
            st.sampled_from([(1,) * 65, [3], (1.0,), "3", None, (True,)]),
        )
    )
    fortran = draw(st.sampled_from([False, True, 0, None]))
    keys = draw(
        st.sampled_from(
            [
                ("descr", "fortran_order", "shape"),
                ("descr", "shape"),
                ("descr", "fortran_order", "shape", "x"),
            ]
        )
    )
    values = {"descr": descr, "fortran_order": fortran, "shape": shape, "x": 1}
    text = "{" + "".join(f"{k!r}: {values[k]!r}, " for k in keys) + "}"
    text += " " * (-(10 + len(text) + 1) % 64) + "\n"
    return text.encode("latin1")


@st.composite
def npy_file_bytes(draw: st.DrawFn) -> bytes:
    """Random bytes, a mutated valid .npy, or a valid magic with a made-up header and data."""
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "mutated", "made-up-header"]))
    event(f"npy: {kind}")
    if kind == "random":
        return draw(st.binary(max_size=300))
    if kind == "mutated":
        return draw(mutated_bytes(NPY_SEEDS))
    text = _header_text(draw)
    return (
        b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + draw(st.binary(max_size=64))
    )


def pb_file_bytes() -> st.SearchStrategy[bytes]:
    return random_or_mutated_bytes(PB_SEEDS, "pb")


def _read_or_refuse(path: Path):
    """read_tensor(path), or None when refused with a documented error; the file unchanged."""
    before = path.read_bytes()
    try:
        array = read_tensor(path)
    except DOCUMENTED as exc:
        event(f"refused: {type(exc).__name__}")
        array = None
    assert path.read_bytes() == before, "reading changed the file"
    return array


@examples(2.0)
@given(content=npy_file_bytes())
def test_fuzz_npy_reader_and_apply(fuzz_folder, content):
    src, dst = fuzz_folder / "in.npy", fuzz_folder / "out.npy"
    src.write_bytes(content)
    dst.unlink(missing_ok=True)
    with parser_warnings_allowed():
        array = _read_or_refuse(src)
        try:
            relu_file(src, dst, chunk_bytes=64)  # `apply`: header check, windows read one by one
        except DOCUMENTED as exc:
            assert not dst.exists(), "a refused apply left an output"
            if array is not None:  # read fine, so only its type may be refused
                assert isinstance(exc, UnsupportedTypeError), f"read it; apply: {exc!r}"
        else:
            assert array is not None, "apply accepted a file read_tensor refuses"
            result = read_tensor(dst)
            assert result.shape == array.shape and result.dtype == array.dtype
            assert np.array_equal(as_bits(result), as_bits(expected_relu(array)))
    assert src.read_bytes() == content, "apply changed its input"
    assert sorted(os.listdir(fuzz_folder)) in (["in.npy"], ["in.npy", "out.npy"])


@examples(2.0)
@given(content=pb_file_bytes())
def test_fuzz_pb_reader(fuzz_folder, content):
    src = fuzz_folder / "in.pb"
    src.write_bytes(content)
    with parser_warnings_allowed():
        array = _read_or_refuse(src)
    src.unlink()
    if array is None:
        return
    assert isinstance(array, np.ndarray) and array.flags.writeable
    if array.dtype.hasobject:
        return  # strings: read as Python bytes objects
    # What was read is written back and read again bit for bit (NaN payloads included).
    write_tensor(src, array)
    again = read_tensor(src)
    src.unlink()
    assert again.dtype == array.dtype and again.shape == array.shape
    assert again.tobytes() == array.tobytes()
