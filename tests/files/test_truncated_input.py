"""An input file shortened while ``apply`` / ``relu_file`` reads it (issue 13, item 7).

Until this round the windowed ``.npy`` path memory-mapped the input: a file shortened before a
window was mapped gave numpy's ``ValueError: mmap length is greater than file size`` (a
traceback from the command), and one shortened after gave SIGBUS, which killed the process and
left its temporary file. The windows are now read; a short read is an
``InvalidTensorFileError`` naming the file, the temporary is removed and OUT is as it was.

The truncation is made deterministic by doing it from the ``progress`` callback, which runs
between windows; the SIGBUS case runs in a child process (so that a regression kills the child,
not pytest), truncating from a second thread while a single 256 MiB window is processed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from onnx_relu.errors import InvalidTensorFileError
from onnx_relu.files import read_tensor, relu_file, write_tensor
from tests.support.oracle import expected_relu, same_bits

OLD_OUT = b"the previous OUT, to be kept"


def _input(path: Path, count: int) -> np.ndarray:
    x = (np.arange(count, dtype=np.float32) % 251 - 125).astype(np.float32)
    write_tensor(path, x)
    return x


def _truncate_after_first_window(path: Path, keep: int):
    """A progress callback that shortens ``path`` to ``keep`` bytes once a window is done."""

    def progress(done: int, _total: int) -> None:
        if done and os.path.getsize(path) > keep:
            os.truncate(path, keep)

    return progress


@pytest.mark.parametrize("keep", [0, 100, 128 + 4096 + 10], ids=["empty", "in-header", "in-data"])
def test_input_truncated_between_windows_is_refused_and_out_kept(tmp_path, keep):
    src, dst = tmp_path / "x.npy", tmp_path / "y.npy"
    _input(src, 10_000)
    dst.write_bytes(OLD_OUT)
    with pytest.raises(InvalidTensorFileError, match=r"'.*x\.npy' was truncated while being read"):
        relu_file(src, dst, chunk_bytes=4096, progress=_truncate_after_first_window(src, keep))
    assert sorted(os.listdir(tmp_path)) == ["x.npy", "y.npy"]  # no temporary left
    assert dst.read_bytes() == OLD_OUT
    assert os.path.getsize(src) == keep  # only the truncation changed IN


def test_input_truncated_during_an_in_place_rewrite_is_refused_and_not_regrown(tmp_path):
    src = tmp_path / "x.npy"
    x = _input(src, 10_000)
    keep = 128 + 3 * 4096 + 100  # three windows and 25 elements of the fourth
    with pytest.raises(InvalidTensorFileError, match="was truncated while being read"):
        relu_file(
            src, in_place=True, chunk_bytes=4096, progress=_truncate_after_first_window(src, keep)
        )
    assert sorted(os.listdir(tmp_path)) == ["x.npy"]
    data = np.frombuffer(src.read_bytes()[128:], np.float32)
    assert len(data) == 3 * 1024 + 25  # the file was not extended past its new end
    assert same_bits(data[:3072], expected_relu(x[:3072]))  # the whole windows were rewritten
    assert same_bits(data[3072:], x[3072:3097])  # the short one was left as it was


def test_apply_command_reports_an_input_truncated_during_the_run_on_one_line(
    tmp_path, monkeypatch, capsys
):
    """The command, in this process, so that the truncation comes from its progress callback:
    with the default 8 MiB windows, a 20 MB input is cut after the first."""
    from onnx_relu import cli
    from onnx_relu.cli import _progress_bar

    src, dst = tmp_path / "x.npy", tmp_path / "y.npy"
    _input(src, 5_000_000)
    dst.write_bytes(OLD_OUT)
    truncate = _truncate_after_first_window(src, 1 << 20)

    class TruncatingBar:
        def __init__(self, *_args, **_kwargs):
            pass

        def __enter__(self):
            return truncate

        def __exit__(self, *_exc):
            return False

    monkeypatch.setattr(_progress_bar, "progress_bar", TruncatingBar)
    status = cli.main(["apply", str(src), str(dst)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("onnx-relu apply: error: ") and "was truncated while being read" in err
    assert sorted(os.listdir(tmp_path)) == ["x.npy", "y.npy"]
    assert dst.read_bytes() == OLD_OUT


#: Run in a child: relu_file over one 256 MiB window while a second thread truncates the input.
TRUNCATE_DURING_A_WINDOW = textwrap.dedent(
    """
    import os, sys, threading
    import numpy as np
    from onnx_relu.errors import InvalidTensorFileError
    from onnx_relu.files import relu_file

    src, dst = sys.argv[1], sys.argv[2]

    def progress(done, total):
        if done == 0:  # the header is read and checked; the window comes next
            threading.Thread(target=os.truncate, args=(src, 4096)).start()

    try:
        relu_file(src, dst, chunk_bytes=1 << 30, progress=progress)
    except InvalidTensorFileError as exc:
        print("refused", exc)
    else:
        print("computed")
    """
)


@pytest.mark.parametrize("attempt", range(2))
def test_input_truncated_while_a_window_is_processed_never_kills_the_process(tmp_path, attempt):
    src, dst = tmp_path / "x.npy", tmp_path / "y.npy"
    x = _input(src, 64 << 20)
    done = subprocess.run(
        [sys.executable, "-c", TRUNCATE_DURING_A_WINDOW, str(src), str(dst)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != -signal.SIGBUS, "SIGBUS: the input was memory-mapped"
    assert done.returncode == 0, done.stderr
    # Either the truncation came first (refused, nothing written) or the whole window had been
    # read before it (the complete, exact result): never anything in between.
    if done.stdout.startswith("refused"):
        assert "was truncated while being read" in done.stdout
        assert sorted(os.listdir(tmp_path)) == ["x.npy"]
    else:
        assert done.stdout.strip() == "computed"
        assert sorted(os.listdir(tmp_path)) == ["x.npy", "y.npy"]
        assert same_bits(read_tensor(dst), expected_relu(x))
