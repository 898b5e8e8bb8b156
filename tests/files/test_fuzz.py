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


# --- the races of issue 35: a path swapped after its check, OUT reaching IN -------------------

_RACE_X = np.arange(-5, 7, dtype=np.float32)


def _swap(kind: str, path: Path) -> None:
    """Replace ``path`` (a file IN) by what ``kind`` names, as another process would."""
    if kind == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif kind == "symlink":
        path.unlink()
        path.symlink_to("decoy.npy")
    elif kind == "other":
        os.replace(path.with_name("spare.npy"), path)
    elif kind == "removed":
        path.unlink()


def _make_out(relation: str, folder: Path, fd: int) -> Path:
    """OUT for ``relation`` to IN (``folder/x.npy``, open at ``fd``)."""
    if relation == "same":
        return folder / "x.npy"
    if relation == "symlink":
        (folder / "out.npy").symlink_to("x.npy")
        return folder / "out.npy"
    if relation == "hardlink":
        os.link(folder / "x.npy", folder / "out.npy")
        return folder / "out.npy"
    if relation == "proc-fd":
        return Path(f"/proc/self/fd/{fd}")
    return folder / "out.npy"  # a sibling


@examples(0.5)
@given(
    swap=st.sampled_from(["none", "fifo", "symlink", "other", "removed"]),
    relation=st.sampled_from(["sibling", "same", "symlink", "hardlink", "proc-fd"]),
    entry=st.sampled_from(["relu_file", "in_place", "read_tensor"]),
)
def test_fuzz_races_between_check_and_open(fuzz_folder, swap, relation, entry):
    """IN swapped (or not) between its classification and its opening, and OUT related to IN
    in any way: the call ends within seconds; it succeeds only where nothing changed and OUT
    is not IN; otherwise it raises a documented error. The original IN's bytes (held by a hard
    link of the test's own), the decoy a swapped link points to, and the folder's other files
    stay as they were, and no temporary remains."""
    import tempfile
    import threading

    from onnx_relu.errors import FileArgumentError, UnsupportedPathError
    from onnx_relu.io import endpoint as _endpoint

    folder = Path(tempfile.mkdtemp(dir=fuzz_folder))
    x = folder / "x.npy"
    write_tensor(x, _RACE_X)
    original = x.read_bytes()
    os.link(x, folder / "kept-original")
    write_tensor(folder / "decoy.npy", -_RACE_X)
    write_tensor(folder / "spare.npy", _RACE_X * 2)
    decoy = (folder / "decoy.npy").read_bytes()
    fd = os.open(x, os.O_RDONLY)
    out = _make_out(relation, folder, fd) if entry == "relu_file" else None
    classify, pending = _endpoint._classify, [swap]

    def swapping(name: str):  # type: ignore[no-untyped-def]
        result = classify(name)
        if pending and os.path.abspath(name) == str(x):
            _swap(pending.pop(), x)
        return result

    call = {
        "relu_file": lambda: relu_file(x, out),
        "in_place": lambda: relu_file(x, in_place=True),
        "read_tensor": lambda: read_tensor(x),
    }[entry]
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - judged below
            outcome.append(exc)
        else:
            outcome.append(None)

    _endpoint._classify = swapping
    try:
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(20)
    finally:
        _endpoint._classify = classify
        os.close(fd)
    assert not thread.is_alive(), f"hangs: {swap}, {relation}, {entry}"
    error = outcome[0]
    event(f"{type(error).__name__ if error else 'done'}")
    changed = swap != "none"
    same = entry == "relu_file" and relation != "sibling"
    if changed:
        assert isinstance(error, (UnsupportedPathError, FileArgumentError)), repr(error)
    elif same:
        assert isinstance(error, FileArgumentError), repr(error)
    else:
        assert error is None, repr(error)
    if error is None and entry == "relu_file":
        assert np.array_equal(read_tensor(folder / "out.npy"), np.maximum(_RACE_X, 0))
    if not (error is None and entry == "in_place"):
        assert (folder / "kept-original").read_bytes() == original
    assert (folder / "decoy.npy").read_bytes() == decoy
    assert not [name for name in os.listdir(folder) if name.endswith(".onnx-relu-tmp")]
