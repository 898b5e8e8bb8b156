"""Bad tensor files, output paths, a full disk and interrupts: rows of docs/reliability.md.

Every refusal is checked three ways: the exception type (or the command's exit status), the
words of the message, and that nothing was lost: the whole folder (inputs, an existing OUT,
hidden temporaries) is byte for byte as before. The command runs as a subprocess of the
installed ``onnx-relu``.
"""

from __future__ import annotations

import errno
import io
import os
import signal
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")  # `make test` installs it; .pb files need it
from onnx import TensorProto, numpy_helper  # noqa: E402

from onnx_relu import relu  # noqa: E402
from onnx_relu.errors import InvalidTensorFileError, UnsupportedTypeError  # noqa: E402
from onnx_relu.files import read_tensor, write_tensor  # noqa: E402
from tests.support.cli import assert_cli_error, file_size_limit, folder_state, run_cli  # noqa: E402
from tests.support.oracle import as_bits, expected_relu  # noqa: E402
from tests.support.values import mixed_values  # noqa: E402

PREVIOUS_OUT = b"the previous result, which a refusal must leave alone"


# ---------------------------------------------------------------------------------------------
# Bad .npy and .pb files
# ---------------------------------------------------------------------------------------------


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_header(descr: object, shape: object, fortran_order: object = False) -> bytes:
    """A version 1.0 .npy header saying anything at all (numpy's writer checks what it writes)."""
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran_order!r}, 'shape': {shape!r}, }}"
    text += " " * (-(10 + len(text) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def npy_with_header_text(text: bytes, version: int = 1) -> bytes:
    length = struct.pack("<H" if version == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text


GOOD = mixed_values(np.dtype(np.float32), 24).reshape(4, 6)
GOOD_NPY = npy_bytes(GOOD)
GOOD_PB = numpy_helper.from_array(GOOD, name="x").SerializeToString()

#: name -> (file content, words the message must hold)
BAD_NPY = {
    "empty": (b"", "is empty: it holds no .npy data"),
    # truncated anywhere
    "truncated-in-magic": (GOOD_NPY[:4], "does not start with the .npy magic string"),
    "truncated-in-header": (GOOD_NPY[:40], "is truncated inside its .npy header"),
    "truncated-in-data": (
        GOOD_NPY[:-1],
        "is truncated: its header promises 96 bytes of data"
        " (shape (4, 6), float32) but only 95 follow",
    ),
    "header-claims-more-data": (
        npy_header("<f4", (1000,)) + bytes(16),
        "promises 4000 bytes of data (shape (1000,), float32) but only 16 follow",
    ),
    # corrupt
    "not-npy": (b"PK\x03\x04" + bytes(60), "does not start with the .npy magic string"),
    "a-pb-file": (GOOD_PB, "does not start with the .npy magic string"),
    "unknown-version": (b"\x93NUMPY\x09\x00" + GOOD_NPY[8:], "format version 9.0"),
    "header-too-long": (
        npy_with_header_text(b" " * 64, version=2)[:8] + struct.pack("<I", 10**6),
        "the .npy header is 1000000 bytes long",
    ),
    "header-not-python": (npy_with_header_text(b"{{{{ \n"), "the .npy header is not readable"),
    "header-not-a-dict": (
        npy_with_header_text(b"[1, 2]\n"),
        "must be a dict with exactly the keys",
    ),
    "negative-extent": (npy_header("<f4", (-3,)), "shape (-3,) is not a tuple of integers >= 0"),
    "unknown-descr": (npy_header("<q9", (1,)) + bytes(8), "names no valid dtype ('<q9'"),
    "malformed-descr": (npy_header(",i2", (1,)) + bytes(2), "names no valid dtype (',i2'"),
    "fortran-order-not-bool": (
        npy_header("<f4", (1,), fortran_order=1) + bytes(4),
        "fortran_order is not a bool",
    ),
    # shapes no array can have
    "element-count-overflow": (npy_header("<f4", (2**62, 4)), "the element count overflows"),
    "element-count-overflow-empty": (
        npy_header("<f4", (2**63, 2**63, 0)),
        "the element count overflows",
    ),
    "too-many-dimensions": (
        npy_header("<f4", (1,) * 65) + bytes(4),
        "has 65 dimensions; numpy arrays have at most 64",
    ),
    "subarray-dtype": (npy_header(("<f4", (2,)), (3,)) + bytes(24), "is a subarray type"),
}


def pb_bytes(**fields) -> bytes:
    return TensorProto(**fields).SerializeToString()


def model_bytes() -> bytes:
    from onnx import helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph).SerializeToString()


BAD_PB = {
    "empty": (b"", "is empty: it holds no ONNX TensorProto"),
    "truncated": (GOOD_PB[:-1], "is not a valid ONNX TensorProto (corrupt or truncated"),
    "truncated-in-header": (GOOD_PB[:7], "is not a valid ONNX TensorProto (corrupt or truncated"),
    "random-bytes": (b"\xff" * 64, "is not a valid ONNX TensorProto (corrupt or truncated"),
    "an-npy-file": (GOOD_NPY, "is not a valid ONNX TensorProto"),
    "a-model-file": (model_bytes(), "names no element type (is it a model"),
    "no-data-type": (pb_bytes(dims=[3], raw_data=bytes(12)), "names no element type"),
    "unknown-data-type": (
        pb_bytes(data_type=99, dims=[1], raw_data=bytes(4)),
        "the TensorProto's data cannot be decoded (KeyError",
    ),
    "raw-data-too-short": (
        pb_bytes(data_type=TensorProto.FLOAT, dims=[4], raw_data=bytes(8)),
        "the TensorProto's data cannot be decoded",
    ),
    "typed-data-too-short": (
        pb_bytes(data_type=TensorProto.FLOAT, dims=[4], float_data=[1.0]),
        "the TensorProto's data cannot be decoded",
    ),
    "negative-extent": (
        pb_bytes(data_type=TensorProto.FLOAT, dims=[-4]),
        "dims [-4] include a negative extent",
    ),
    "element-count-overflow": (
        pb_bytes(data_type=TensorProto.FLOAT, dims=[2**62, 4]),
        "the TensorProto's data cannot be decoded",
    ),
    "segment": (
        pb_bytes(
            data_type=TensorProto.FLOAT,
            dims=[2],
            raw_data=bytes(8),
            segment=TensorProto.Segment(begin=0, end=1),
        ),
        "the TensorProto's data cannot be decoded",
    ),
    # values a narrow type cannot hold, in int32_data (onnx's decoder casts them unchecked)
    "int8-int32-data-out-of-range": (
        pb_bytes(data_type=TensorProto.INT8, dims=[2], int32_data=[300, -129]),
        "int32_data holds 300, which is outside the range of int8 (-128..127)",
    ),
    "int16-int32-data-out-of-range": (
        pb_bytes(data_type=TensorProto.INT16, dims=[2], int32_data=[1, -40000]),
        "int32_data holds -40000, which is outside the range of int16 (-32768..32767)",
    ),
    "float16-int32-data-bits-out-of-range": (
        pb_bytes(data_type=TensorProto.FLOAT16, dims=[1], int32_data=[70000]),
        "int32_data holds 70000, which is outside the range of float16 (0..65535, its bits",
    ),
}

BAD_FILES = [("npy", name, *case) for name, case in BAD_NPY.items()] + [
    ("pb", name, *case) for name, case in BAD_PB.items()
]
BAD_FILE_IDS = [f"{suffix}-{name}" for suffix, name, *_ in BAD_FILES]


@pytest.mark.parametrize(("suffix", "name", "content", "message"), BAD_FILES, ids=BAD_FILE_IDS)
def test_bad_tensor_file_is_refused_by_read_tensor(tmp_path, suffix, name, content, message):
    path = tmp_path / f"bad.{suffix}"
    path.write_bytes(content)
    before = folder_state(tmp_path)
    with pytest.raises(InvalidTensorFileError) as raised:
        read_tensor(path)
    assert isinstance(raised.value, ValueError)
    assert message in str(raised.value) and "bad." in str(raised.value)
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize(("suffix", "name", "content", "message"), BAD_FILES, ids=BAD_FILE_IDS)
def test_bad_tensor_file_is_refused_by_apply(tmp_path, suffix, name, content, message):
    (tmp_path / f"in.{suffix}").write_bytes(content)
    (tmp_path / "out.npy").write_bytes(PREVIOUS_OUT)
    before = folder_state(tmp_path)
    assert_cli_error(run_cli("apply", f"in.{suffix}", "out.npy", cwd=tmp_path), 2, message)
    if suffix == "npy":  # rewriting a file in place must refuse before touching it
        assert_cli_error(run_cli("apply", "--in-place", "in.npy", cwd=tmp_path), 2, message)
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize(
    "text",
    [
        b"{'\\descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n",
        b"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)if 1else 2, }\n",
    ],
    ids=["invalid-escape", "number-run-into-a-name"],
)
def test_npy_header_that_pythons_parser_warns_about_is_refused(tmp_path, text):
    """The header is parsed with ast.literal_eval, as numpy.load parses it; Python's compiler
    warns about an invalid escape or a number run into a name before the header is refused.
    With warnings as errors the warning becomes a SyntaxError: refused all the same."""
    path = tmp_path / "x.npy"
    path.write_bytes(npy_with_header_text(text) + bytes(4))
    before = folder_state(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InvalidTensorFileError) as raised:
            read_tensor(path)
    assert "the .npy header" in str(raised.value)
    assert [w.category for w in caught] in ([DeprecationWarning], [SyntaxWarning])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidTensorFileError, match="the .npy header is not readable"):
            read_tensor(path)
    assert folder_state(tmp_path) == before


class _MakesAFolderWhenUnpickled:
    """A pickle payload: unpickling it calls os.mkdir(marker), as a malicious file could."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_pickled_npy_is_never_unpickled(tmp_path):
    marker = tmp_path / "unpickled"
    path = tmp_path / "objects.npy"
    np.save(path, np.array([_MakesAFolderWhenUnpickled(str(marker))], dtype=object))
    np.load(path, allow_pickle=True)  # the payload is live: numpy, when allowed, runs it
    assert marker.is_dir()
    marker.rmdir()
    before = folder_state(tmp_path)
    with pytest.raises(InvalidTensorFileError) as raised:
        read_tensor(path)
    assert "holds Python objects stored with pickle; onnx-relu never unpickles" in str(raised.value)
    done = run_cli("apply", path, tmp_path / "out.npy")
    assert_cli_error(done, 2, "never unpickles")
    assert folder_state(tmp_path) == before  # no marker: nothing was unpickled, nothing written


# ONNX element types that no Relu version allows, as TensorProto data types with values.
REFUSED_PB_TYPES = {
    "uint8": (TensorProto.UINT8, np.array([0, 7, 255], dtype=np.uint8)),
    "bool": (TensorProto.BOOL, np.array([True, False])),
    "uint64": (TensorProto.UINT64, np.array([1, 2**64 - 1], dtype=np.uint64)),
    "complex64": (TensorProto.COMPLEX64, np.array([1 - 2j], dtype=np.complex64)),
    "float8e4m3fn": (TensorProto.FLOAT8E4M3FN, None),
    "string": (TensorProto.STRING, np.array([b"-1", b"2"], dtype=object)),
}


@pytest.mark.parametrize("type_name", list(REFUSED_PB_TYPES))
def test_pb_of_a_type_no_relu_allows_is_read_but_refused_by_relu_and_apply(tmp_path, type_name):
    data_type, values = REFUSED_PB_TYPES[type_name]
    if values is None:
        import ml_dtypes

        values = np.array([-1.5, 2.0], dtype=ml_dtypes.float8_e4m3fn)
    path = tmp_path / "in.pb"
    path.write_bytes(numpy_helper.from_array(values, name="x").SerializeToString())
    assert TensorProto.FromString(path.read_bytes()).data_type == data_type
    (tmp_path / "out.pb").write_bytes(PREVIOUS_OUT)
    before = folder_state(tmp_path)
    array = read_tensor(path)  # read exactly: refusing is Relu's business, not the reader's
    assert array.shape == values.shape
    with pytest.raises(UnsupportedTypeError) as raised:
        relu(array)
    assert "does not allow" in str(raised.value)
    # A string tensor reads as Python bytes objects (numpy dtype object).
    expected = "numpy dtype 'object'" if type_name == "string" else f"tensor({type_name})"
    done = run_cli("apply", "in.pb", "out.pb", cwd=tmp_path)
    assert_cli_error(done, 2, f"does not allow {expected}")
    assert "allowed types: tensor(bfloat16)" in done.stderr
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("../outside.bin", "points outside"),
        ("/etc/hostname", "should be a relative path"),
        ("missing.bin", "is not regular file"),
        ("sub", "is not regular file"),  # a folder
    ],
    ids=["outside-its-folder", "absolute", "missing", "a-folder"],
)
def test_pb_external_data_outside_its_folder_is_refused(tmp_path, location, message):
    folder = tmp_path / "tensors"
    (folder / "sub").mkdir(parents=True)
    (tmp_path / "outside.bin").write_bytes(bytes(8))
    tensor = TensorProto(
        name="x", data_type=TensorProto.FLOAT, dims=[2], data_location=TensorProto.EXTERNAL
    )
    tensor.external_data.add(key="location", value=location)
    path = folder / "x.pb"
    path.write_bytes(tensor.SerializeToString())
    before = folder_state(tmp_path)
    with pytest.raises(InvalidTensorFileError) as raised:
        read_tensor(path)
    assert "the TensorProto's data cannot be decoded" in str(raised.value)
    assert message in str(raised.value)
    assert_cli_error(run_cli("apply", path, folder / "y.npy"), 2, message)
    assert folder_state(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# Output paths that cannot be written
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def good_input(tmp_path) -> Path:
    path = tmp_path / "x.npy"
    write_tensor(path, GOOD)
    return path


@pytest.mark.parametrize("suffix", ["npy", "pb"])
def test_out_in_a_missing_folder(tmp_path, good_input, suffix):
    before = folder_state(tmp_path)
    with pytest.raises(FileNotFoundError) as raised:
        write_tensor(tmp_path / "missing" / f"y.{suffix}", GOOD)
    assert "missing" in str(raised.value)
    done = run_cli("apply", good_input, tmp_path / "missing" / f"y.{suffix}")
    assert_cli_error(done, 2, "the folder")
    assert "missing' does not exist" in done.stderr
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize("suffix", ["npy", "pb"])
def test_out_under_a_regular_file(tmp_path, good_input, suffix):
    (tmp_path / "a-file").write_bytes(b"a regular file, not a folder")
    before = folder_state(tmp_path)
    with pytest.raises(NotADirectoryError):
        write_tensor(tmp_path / "a-file" / f"y.{suffix}", GOOD)
    done = run_cli("apply", good_input, tmp_path / "a-file" / f"y.{suffix}")
    assert_cli_error(done, 2, "a-file' is a file, not a folder")
    assert folder_state(tmp_path) == before


SYSFS = Path("/sys/kernel")
PROC_SELF = Path("/proc/self")


@pytest.mark.skipif(
    not (SYSFS.is_dir() and PROC_SELF.is_dir()), reason="needs Linux /sys and /proc"
)
def test_out_where_even_root_may_not_write(tmp_path, good_input):
    """Folder permissions do not bind root (CI runs as root), but sysfs refuses to create
    regular files for everyone (EACCES; EROFS where /sys is mounted read-only), and procfs
    tells even root that /proc/self is not writable (access(2) says so)."""
    before = folder_state(tmp_path)
    with pytest.raises(OSError) as raised:
        write_tensor(SYSFS / "onnx-relu-test.npy", GOOD)
    assert raised.value.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
    done = run_cli("apply", good_input, SYSFS / "onnx-relu-test.npy")
    if os.access(SYSFS, os.W_OK):
        # As root the folder passes the command's checks; the OS refuses when OUT is created.
        line = assert_cli_error(done, 1, "OUT left unchanged")
        assert any(
            text in line
            for text in ("Permission denied", "Operation not permitted", "Read-only file system")
        )
    else:  # other users are stopped by the check before any work
        assert_cli_error(done, 2, "the folder '/sys/kernel' is not writable")
    # The folder is reported not writable before any work starts.
    done = run_cli("apply", good_input, PROC_SELF / "onnx-relu-test.npy")
    assert_cli_error(done, 2, "the folder '/proc/self' is not writable")
    assert folder_state(tmp_path) == before
    assert not list(SYSFS.glob("*onnx-relu*")) and not list(PROC_SELF.glob("*onnx-relu*"))


# ---------------------------------------------------------------------------------------------
# A full disk: RLIMIT_FSIZE in the child process
# ---------------------------------------------------------------------------------------------

FILE_SIZE_LIMIT = 64 << 10
BIG = mixed_values(np.dtype(np.float32), 256 << 10, seed=1)  # 1 MiB of data

WRITE_TENSOR_SCRIPT = """\
import sys
import numpy as np
from onnx_relu.files import read_tensor, write_tensor
try:
    write_tensor(sys.argv[2], read_tensor(sys.argv[1]))
except OSError as error:
    print(type(error).__name__, error.errno, error.strerror)
"""


@pytest.mark.parametrize("suffix", ["npy", "pb"])
def test_full_disk_write_tensor_leaves_out_unchanged(tmp_path, suffix):
    write_tensor(tmp_path / "in.npy", BIG)
    out = tmp_path / f"out.{suffix}"
    out.write_bytes(PREVIOUS_OUT)
    before = folder_state(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", WRITE_TENSOR_SCRIPT, tmp_path / "in.npy", out],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=file_size_limit(FILE_SIZE_LIMIT),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(maxsplit=2)[:2] == ["OSError", str(errno.EFBIG)], done.stdout
    assert "File too large" in done.stdout
    assert folder_state(tmp_path) == before  # OUT as it was, no temporary left


@pytest.mark.parametrize("suffix", ["npy", "pb"])
def test_full_disk_apply_exits_1_and_leaves_out_unchanged(tmp_path, suffix):
    write_tensor(tmp_path / "in.npy", BIG)
    (tmp_path / f"out.{suffix}").write_bytes(PREVIOUS_OUT)
    before = folder_state(tmp_path)
    done = run_cli(
        "apply",
        "in.npy",
        f"out.{suffix}",
        cwd=tmp_path,
        preexec_fn=file_size_limit(FILE_SIZE_LIMIT),
    )
    line = assert_cli_error(done, 1, "File too large")
    assert line.endswith("; OUT left unchanged")
    assert folder_state(tmp_path) == before
    # the same command without the limit succeeds: the limit was the only problem
    assert run_cli("apply", "in.npy", f"out.{suffix}", cwd=tmp_path).returncode == 0
    assert np.array_equal(
        as_bits(read_tensor(tmp_path / f"out.{suffix}")), as_bits(expected_relu(BIG))
    )


# ---------------------------------------------------------------------------------------------
# An interrupt during `apply --in-place` (interrupts of `apply IN OUT` while it writes OUT are
# tested on a 512 MiB file in tests/cli/test_out_of_core.py)
# ---------------------------------------------------------------------------------------------

# Runs the real command with 4 KiB windows and sends the signal to itself once the first window
# has been rewritten: a Ctrl-C at a known point, with no race against the clock.
INTERRUPT_AFTER_FIRST_WINDOW = """\
import os, sys
from onnx_relu.files import plan
from onnx_relu.files.jobs import windows
from onnx_relu.cli import main

signum = int(sys.argv[1])
plan.DEFAULT_CHUNK_BYTES = 4096  # the command's plan reads the default when it is made
report = windows.report

def report_then_interrupt(progress, done, total):
    report(progress, done, total)
    if done > 0:
        os.kill(os.getpid(), signum)

windows.report = report_then_interrupt
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_in_place_apply_says_so_and_a_rerun_completes_it(tmp_path, signum):
    path = tmp_path / "x.npy"
    write_tensor(path, BIG)
    original = path.read_bytes()
    data_offset = len(original) - BIG.nbytes
    done = run_cli(
        int(signum),
        "apply",
        "--in-place",
        path,  # int: "15", not "Signals.SIGTERM"
        command=(sys.executable, "-c", INTERRUPT_AFTER_FIRST_WINDOW),
    )
    name = signal.Signals(signum).name
    line = f"interrupted by {name}; IN may be partly rewritten; run the same command again"
    assert done.returncode == 128 + signum and line in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    partial = path.read_bytes()
    assert partial[:data_offset] == original[:data_offset]  # the header is intact
    want = npy_bytes(expected_relu(BIG))[-BIG.nbytes :]
    assert partial[data_offset : data_offset + 4096] == want[:4096]  # first window rewritten
    assert partial[-4096:] == original[-4096:]  # stopped long before the end
    assert sorted(os.listdir(tmp_path)) == ["x.npy"]
    assert run_cli("apply", "--in-place", path).returncode == 0  # Relu is idempotent
    assert np.array_equal(as_bits(read_tensor(path)), as_bits(expected_relu(BIG)))
