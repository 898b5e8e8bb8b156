"""The command meets what Unix really hands a program: pipes that take part of a write, readers
that go away, special files as IN and OUT, closed standard descriptors, names that are not
UTF-8, inputs without an end, and models that fail inside onnxruntime. Each case runs the
installed command as a subprocess (tests/support/streams.py); cases are grouped so that each
test starts as few processes as it can."""

from __future__ import annotations

import io
import os
import select
import stat
import time

import numpy as np
import pytest

from onnx_relu import __version__, write_tensor
from tests.support.cli import folder_state
from tests.support.streams import (
    closing,
    fifo_reader,
    fifo_writer,
    file_size_limit,
    make_device,
    run_plain,
    run_to_pipe,
)

#: 4 MiB of float32 data: many times a pipe's 64 KiB buffer.
BIG = (np.arange(1 << 20, dtype=np.float32) - (1 << 19)).reshape(1024, 1024)
SMALL = np.array([-1.5, 0.0, 2.5], dtype=np.float32)


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def relu_npy_bytes(array: np.ndarray) -> bytes:
    return npy_bytes(np.maximum(array, 0))


# --- 1: every byte written, or a failure --------------------------------------------------------


@pytest.mark.parametrize("unbuffered", [True, False], ids=["PYTHONUNBUFFERED=1", "buffered"])
def test_apply_to_a_slow_nonblocking_pipe_writes_every_byte(tmp_path, unbuffered):
    """A non-blocking pipe takes part of each write and then refuses (EAGAIN): the command
    waits and writes the rest, from a file and from standard input, and exits 0 only then."""
    write_tensor(tmp_path / "x.npy", BIG)
    expected = relu_npy_bytes(BIG)
    for args, stdin in ((("apply", "x.npy", "-"), None), (("apply", "-", "-"), npy_bytes(BIG))):
        done = run_to_pipe(
            args,
            stdin=stdin,
            unbuffered=unbuffered,
            nonblocking=True,
            read_bytes=65536,
            delay_s=0.002,
            cwd=tmp_path,
        )
        assert (done.returncode, done.stderr) == (0, ""), (args, done.stderr)
        assert len(done.stdout) == len(expected) and done.stdout == expected, args


@pytest.mark.parametrize("unbuffered", [True, False], ids=["PYTHONUNBUFFERED=1", "buffered"])
def test_a_reader_that_goes_away_ends_the_command_quietly_with_141(tmp_path, unbuffered):
    """``apply x.npy - | head -c 100``, ``check DIR | head -n 1`` (text and JSON),
    ``demo --full | head -1``, ``run ... | head -1``: exit 141 (128 + SIGPIPE, what a shell
    reports for ``seq 1 1000000 | head -1``), nothing on standard error (no line, no "Exception
    ignored" from Python's exit), in both buffering modes."""
    pytest.importorskip("onnx")
    import onnx

    from tests.support.onnx_models import relu_model

    write_tensor(tmp_path / "x.npy", BIG)
    models = tmp_path / "models"
    models.mkdir()
    for index in range(150):  # a report of many lines, most written after the reader left
        onnx.save(relu_model("float32", 14), models / f"m{index:03d}-{'x' * 200}.onnx")
    cases = [
        (("apply", "x.npy", "-"), 100),
        (("check", "models"), 300),
        (("check", "--format", "json", "models"), 300),
        (("demo", "--full"), 0),  # (its report fits a pipe: the reader leaves before it)
    ]
    for args, close_after in cases:
        done = run_to_pipe(args, unbuffered=unbuffered, close_after=close_after, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (141, ""), (args, done.returncode, done.stderr)
        assert len(done.stdout) >= close_after, args


def test_a_fifo_out_whose_reader_goes_away_is_still_a_failure(tmp_path):
    """A broken pipe on another output than standard output (OUT a FIFO whose reader leaves
    after 100 bytes) is not a ``| head``: exit 1 with one line saying the output is
    incomplete."""
    write_tensor(tmp_path / "x.npy", BIG)
    fifo = tmp_path / "out.npy"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        import subprocess

        from tests.support.cli import SCRIPT

        process = subprocess.Popen(
            [SCRIPT, "apply", "x.npy", "out.npy"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        got = b""
        os.set_blocking(reader, True)
        poller = select.poll()
        poller.register(reader, select.POLLIN)
        assert poller.poll(60_000), "the command never opened OUT"
        while len(got) < 100:
            piece = os.read(reader, 100)
            assert piece, "the command wrote nothing"
            got += piece
    finally:
        os.close(reader)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1, (process.returncode, err)
    lines = err.decode().splitlines()
    assert len(lines) == 1 and "broken pipe" in lines[0], lines


def test_a_file_size_limit_is_a_failure_not_a_cut_output(tmp_path):
    """Standard output redirected to a file under ``RLIMIT_FSIZE``: the write fails part-way;
    ``apply x.npy -`` and a ``check`` report are exit 1 with one line, not exit 0 with the
    output cut."""
    pytest.importorskip("onnx")
    import onnx

    from tests.support.onnx_models import relu_model

    write_tensor(tmp_path / "x.npy", BIG)
    models = tmp_path / "models"
    models.mkdir()
    for index in range(40):
        onnx.save(relu_model("float32", 14), models / f"m{index:02d}-{'y' * 100}.onnx")
    for args in (("apply", "x.npy", "-"), ("check", "models")):
        with open(tmp_path / "out.bin", "wb") as sink:
            done = run_plain(
                args, stdout=sink.fileno(), cwd=tmp_path, preexec_fn=file_size_limit(1024)
            )
        done.assert_one_line_failure(1, "File too large")


# --- 2: special files as OUT are written through or refused, never replaced -------------------


def test_fifo_and_device_outputs_are_written_through_never_replaced(tmp_path):
    """OUT a FIFO (with a reader), a symbolic link to one, a character device or a link to one:
    the tensor is written through, the special file stays; a FIFO without a reader and a block
    device are refused (exit 2). ``legalize`` and ``write_tensor`` follow the same rule."""
    write_tensor(tmp_path / "x.npy", SMALL)
    os.mkfifo(tmp_path / "fifo.npy")
    os.symlink("fifo.npy", tmp_path / "to-fifo.npy")
    make_device(tmp_path / "null.npy")
    os.symlink("null.npy", tmp_path / "to-null.npy")
    make_device(tmp_path / "block.npy", "b", 7, 0)
    for out in ("fifo.npy", "to-fifo.npy"):
        with fifo_reader(tmp_path / "fifo.npy") as received:
            done = run_plain(("apply", "x.npy", out), cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, ""), (out, done.stderr)
        assert received == [relu_npy_bytes(SMALL)], out
    for out in ("null.npy", "to-null.npy"):
        done = run_plain(("apply", "x.npy", out), cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, ""), (out, done.stderr)
    done = run_plain(("apply", "x.npy", "fifo.npy"), cwd=tmp_path)
    done.assert_one_line_failure(2, "has no reader")
    done = run_plain(("apply", "x.npy", "block.npy"), cwd=tmp_path)
    done.assert_one_line_failure(2, "block device")
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo.npy").st_mode)
    assert stat.S_ISCHR(os.stat(tmp_path / "null.npy").st_mode)
    assert stat.S_ISBLK(os.stat(tmp_path / "block.npy").st_mode)
    assert os.path.islink(tmp_path / "to-fifo.npy") and os.path.islink(tmp_path / "to-null.npy")
    # The library: write_tensor writes through; atomic_file itself never replaces one.
    from onnx_relu.errors import UnsupportedPathError
    from onnx_relu.files import atomic_file

    write_tensor(tmp_path / "to-null.npy", SMALL)
    with pytest.raises(UnsupportedPathError, match="not a regular file"):
        with atomic_file(tmp_path / "to-null.npy") as file:
            file.write(b"x")
    assert stat.S_ISCHR(os.stat(tmp_path / "null.npy").st_mode)


def test_run_and_legalize_never_replace_a_fifo(tmp_path):
    """``run -o DIR`` with a FIFO at DIR/Y.npy: refused before the model runs (exit 2);
    ``legalize m.onnx FIFO`` writes the model through the FIFO; ``legalize m.onnx -`` writes
    it to standard output (not a file named '-')."""
    onnx = pytest.importorskip("onnx")
    from tests.support.onnx_models import relu_model

    onnx.save(relu_model("float32", 14), tmp_path / "m.onnx")
    write_tensor(tmp_path / "x.npy", SMALL)
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / "y.npy")
    done = run_plain(("run", "m.onnx", "-i", "x.npy", "-o", "out"), cwd=tmp_path)
    done.assert_one_line_failure(2, "FIFO")
    assert stat.S_ISFIFO(os.stat(tmp_path / "out" / "y.npy").st_mode)
    os.mkfifo(tmp_path / "model.fifo")
    with fifo_reader(tmp_path / "model.fifo") as received:
        done = run_plain(("legalize", "m.onnx", "model.fifo"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.stat(tmp_path / "model.fifo").st_mode)
    assert onnx.load_model_from_string(received[0]).graph.node[0].op_type == "Relu"
    done = run_plain(("legalize", "m.onnx", "-"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert onnx.load_model_from_string(done.stdout).graph.node[0].op_type == "Relu"
    assert not (tmp_path / "-").exists()


# --- 3: closed standard descriptors -----------------------------------------------------------


def test_closed_standard_streams(tmp_path):
    """``apply - y.npy <&-`` and ``apply x.npy - >&-``: exit 2, one line, nothing written (and
    never into a file that took descriptor 1). ``check m.onnx >&-``: exit 1 (the report is
    lost); ``check 2>&-`` on a clean model: exit 0; ``check --format json`` of an unreadable
    model with standard error closed: only JSON on standard output, exit 2. ``--version >&-``:
    exit 1, one line."""
    onnx = pytest.importorskip("onnx")
    from tests.support.onnx_models import relu_model

    write_tensor(tmp_path / "x.npy", SMALL)
    onnx.save(relu_model("float32", 14), tmp_path / "m.onnx")
    before = folder_state(tmp_path)
    done = run_plain(("apply", "-", "y.npy"), cwd=tmp_path, preexec_fn=closing(0))
    done.assert_one_line_failure(2, "standard input ('-'), which is closed")
    done = run_plain(("apply", "x.npy", "-"), cwd=tmp_path, preexec_fn=closing(1))
    done.assert_one_line_failure(2, "standard output ('-'), which is closed")
    assert folder_state(tmp_path) == before
    done = run_plain(("check", "m.onnx"), cwd=tmp_path, preexec_fn=closing(1))
    done.assert_one_line_failure(1, "standard output is closed")
    for args in (("--version",), ("--version", "--version")):  # the fast path, and argparse's
        done = run_plain(args, cwd=tmp_path, preexec_fn=closing(1))
        done.assert_one_line_failure(1, "standard output is closed")
    done = run_plain(("check", "m.onnx"), cwd=tmp_path, preexec_fn=closing(2))
    assert (done.returncode, done.stdout) == (0, b"m.onnx: no findings\n")
    done = run_plain(
        ("check", "--format", "json", "absent.onnx"), cwd=tmp_path, preexec_fn=closing(2)
    )
    assert done.returncode == 2
    assert [line.startswith(b"{") for line in done.stdout.splitlines()] == [True]


VERSION_ARGS = [("--version",), ("--version", "--version")]  # the fast path, and argparse's


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("args", VERSION_ARGS, ids=["fast", "argparse"])
def test_version_that_cannot_be_written_is_one_line_and_status_1_or_141(tmp_path, args, unbuffered):
    """``--version`` to a full device (a node like /dev/full made in the test's folder, and a
    symbolic link to it) and to a file under ``RLIMIT_FSIZE`` (a short write): the line is not
    all written, so exit 1 with one line, no traceback, and the device stays a device. To a
    pipe whose reader has gone: quietly 141, as every command (docs/cli.md)."""
    full = make_device(tmp_path / "full", minor=7)
    (tmp_path / "full-link").symlink_to(full)
    for target in (full, tmp_path / "full-link"):
        fd = os.open(target, os.O_WRONLY)
        try:
            done = run_plain(args, stdout=fd, unbuffered=unbuffered)
        finally:
            os.close(fd)
        done.assert_one_line_failure(1, "No space left on device")
        assert stat.S_ISCHR(os.stat(full).st_mode)
    with open(tmp_path / "out.txt", "wb") as sink:
        done = run_plain(
            args, stdout=sink.fileno(), unbuffered=unbuffered, preexec_fn=file_size_limit(4)
        )
    done.assert_one_line_failure(1, "File too large")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the line is written
    try:
        done = run_plain(args, stdout=write_end, unbuffered=unbuffered)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, ""), (done.returncode, done.stderr)


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("args", VERSION_ARGS, ids=["fast", "argparse"])
def test_version_to_a_fifo_writes_the_whole_line(tmp_path, args, unbuffered):
    """``--version > FIFO`` (and through a symbolic link to it): exit 0 with the whole line read
    at the other end; the FIFO stays a FIFO."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "fifo-link").symlink_to(fifo)
    for target in (fifo, tmp_path / "fifo-link"):
        with fifo_reader(fifo) as received:
            fd = os.open(target, os.O_WRONLY)
            try:
                done = run_plain(args, stdout=fd, unbuffered=unbuffered)
            finally:
                os.close(fd)
        assert done.returncode == 0, done.stderr
        assert received == [f"onnx-relu {__version__}\n".encode()]
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# --- 5: names -------------------------------------------------------------------------------


def test_check_escapes_names_on_a_strict_utf8_output(tmp_path):
    """Model names that are not UTF-8, or hold newlines, each give exactly one escaped line on
    a strict UTF-8 standard output, and every model after them is checked."""
    pytest.importorskip("onnx")
    from tests.support.onnx_models import relu_model

    models = tmp_path / "models"
    models.mkdir()
    model = relu_model("float32", 14).SerializeToString()
    names = [b"a\xff.onnx", b"evil\nfake.onnx: no findings\nx.onnx", b"z.onnx"]
    for name in names:
        with open(os.path.join(os.fsencode(models), name), "wb") as file:
            file.write(model)
    done = run_plain(
        ("check", "models"),
        cwd=tmp_path,
        extra_env={"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C"},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.decode("ascii").splitlines()
    assert len(lines) == 3 and all(line.endswith(": no findings") for line in lines), lines
    assert lines[0] == "'models/a\\udcff.onnx': no findings"
    assert lines[1] == "'models/evil\\nfake.onnx: no findings\\nx.onnx': no findings"
    assert lines[2] == "models/z.onnx: no findings"


def test_run_checks_output_file_names_before_running(tmp_path):
    """An output name too long for a file name, ``-o`` a dangling symbolic link, or a folder
    where an output file goes: exit 2 before the model runs, nothing written."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    long_name = "y" * 252
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["a"]), helper.make_node("Relu", ["a"], [long_name])],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3])],
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info(long_name, TensorProto.FLOAT, [3]),
        ],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), tmp_path / "m.onnx"
    )
    write_tensor(tmp_path / "x.npy", SMALL)
    done = run_plain(("run", "m.onnx", "-i", "x.npy", "-o", "out"), cwd=tmp_path)
    done.assert_one_line_failure(2, "file name of 256 bytes")
    assert not (tmp_path / "out").exists()
    os.symlink("nowhere", tmp_path / "dangling")
    done = run_plain(("run", "m.onnx", "-i", "x.npy", "-o", "dangling"), cwd=tmp_path)
    done.assert_one_line_failure(2, "dangling symbolic link")
    assert not (tmp_path / "nowhere").exists()


# --- 6: inputs without an end -----------------------------------------------------------------


def test_inputs_without_an_end_are_streamed_or_refused_quickly(tmp_path):
    """A FIFO with no writer (IN, a model, a ``run`` input) is refused within seconds, not
    waited on for ever; with a writer it is read as a stream. ``/dev/zero`` (through a link) as
    a model or a .pb input is refused, not read until memory runs out. A truncated .npy on
    standard input whose header claims 4 TiB is a usage error naming the header."""
    onnx = pytest.importorskip("onnx")
    from tests.support.onnx_models import relu_model

    onnx.save(relu_model("float32", 14), tmp_path / "m.onnx")
    os.mkfifo(tmp_path / "in.npy")
    os.mkfifo(tmp_path / "model.onnx")
    for args in (
        ("apply", "in.npy", "y.npy"),
        ("check", "model.onnx"),
        ("run", "m.onnx", "-i", "in.npy", "-o", "out"),
    ):
        started = time.monotonic()
        done = run_plain(args, cwd=tmp_path, timeout=30)
        assert time.monotonic() - started < 15, args
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "FIFO" in done.stderr, (args, done.stderr)
    with fifo_writer(tmp_path / "in.npy", npy_bytes(BIG)):
        done = run_plain(("apply", "in.npy", "y.npy"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "y.npy").read_bytes() == relu_npy_bytes(BIG)
    with fifo_writer(tmp_path / "in.npy", npy_bytes(SMALL)):
        done = run_plain(("run", "m.onnx", "-i", "in.npy", "-o", "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    os.symlink("/dev/zero", tmp_path / "zero.onnx")
    os.symlink("/dev/zero", tmp_path / "zero.pb")
    done = run_plain(("check", "zero.onnx"), cwd=tmp_path)
    done.assert_one_line_failure(2, "character device")
    done = run_plain(("apply", "zero.pb", "y.npy"), cwd=tmp_path)
    done.assert_one_line_failure(2, "character device")
    header = npy_bytes(np.zeros(3, np.float32)).replace(b"(3,)", b"(1099511627776,)")
    done = run_plain(("apply", "-", "-"), stdin=header + b"\0" * 100)
    line = done.assert_one_line_failure(2, "header promises 4398046511104 bytes")
    assert "only 100" in line or "but only" in line


# --- 7: onnxruntime failures --------------------------------------------------------------------


def test_onnxruntime_failures_are_one_line(tmp_path):
    """A model that fails while onnxruntime runs it (Reshape to an impossible shape): exit 1,
    one line, nothing written. A graph output that is a sequence: exit 2 before running."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    shape = helper.make_tensor("shape", TensorProto.INT64, [1], [7])
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["X"], ["r"]),
            helper.make_node("Reshape", ["r", "shape"], ["Y"]),
        ],
        "reshape",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [shape],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), tmp_path / "bad.onnx"
    )
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["X"], ["r"]),
            helper.make_node("SequenceConstruct", ["r", "r"], ["S"]),
        ],
        "seq",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3])],
        [helper.make_tensor_sequence_value_info("S", TensorProto.FLOAT, None)],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), tmp_path / "seq.onnx"
    )
    write_tensor(tmp_path / "x.npy", SMALL)
    done = run_plain(
        ("run", "bad.onnx", "-i", "x.npy", "-o", "out", "--engine", "onnxruntime"), cwd=tmp_path
    )
    done.assert_one_line_failure(1, "onnxruntime failed running")
    assert len(done.stderr.splitlines()) == 1, done.stderr  # onnxruntime's own log is off
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")
    done = run_plain(
        ("run", "seq.onnx", "-i", "x.npy", "-o", "out", "--engine", "onnxruntime"), cwd=tmp_path
    )
    done.assert_one_line_failure(2, "not a tensor")
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_load_model_refuses_fifos_and_devices_at_once(tmp_path):
    """The library's model loader (``check_model``, ``prepare``, ``legalize`` take paths): a
    FIFO or a link to /dev/zero is refused at once, not waited on or read without end."""
    pytest.importorskip("onnx")
    from onnx_relu.errors import UnsupportedPathError
    from onnx_relu.onnx import check_model

    os.mkfifo(tmp_path / "m.onnx")
    os.symlink("/dev/zero", tmp_path / "zero.onnx")
    for name, kind in (("m.onnx", "FIFO"), ("zero.onnx", "character device")):
        with pytest.raises(UnsupportedPathError, match=kind):
            check_model(str(tmp_path / name))
