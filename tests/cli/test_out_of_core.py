"""``onnx-relu apply`` on a file much larger than the memory it uses, and killed mid-write.

The input is a 512 MiB float32 .npy (a 4 MiB tile of mixed-sign values with NaNs and -0.0,
repeated). The child process reports its own peak resident memory (getrusage), which must stay
below a quarter of the file: memory does not grow with the file.

Peak memory is the kernel's VmHWM (/proc/self/status), the high-water mark of the child's own
address space. getrusage's ru_maxrss is not used on Linux: the kernel folds the parent's peak
into the child's at exec, so a child started from a large pytest process would report at
least the parent's peak. ru_maxrss remains the fallback where /proc does not exist. Killing
``apply`` while it writes must leave OUT absent or as it was, never partial, and IN unchanged.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from onnx_relu.files import TEMP_SUFFIX
from tests.support.cli import SCRIPT
from tests.support.oracle import expected_relu
from tests.support.values import mixed_values

FILE_BYTES = 512 << 20
BLOCK_BYTES = 4 << 20
PEAK_RSS_BOUND = FILE_BYTES // 4

# Runs the real command's main() and then reports the process's peak resident set size.
PEAK_RSS_WRAPPER = """\
import resource, sys
from onnx_relu.cli import main
status = main(sys.argv[1:])
try:
    with open("/proc/self/status") as status_file:
        line = next(l for l in status_file if l.startswith("VmHWM:"))
    peak = int(line.split()[1]) * 1024
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("peak_rss_bytes", peak, file=sys.stderr)
sys.exit(status)
"""


def _tile() -> np.ndarray:
    return mixed_values(np.float32, BLOCK_BYTES // 4)


def _header(tile: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    shape = (FILE_BYTES // tile.nbytes, tile.size)
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": "<f4", "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue()


def _write_tiled(path: Path, tile: np.ndarray) -> None:
    with open(path, "wb") as file:
        file.write(_header(tile))
        for _ in range(FILE_BYTES // tile.nbytes):
            file.write(tile.tobytes())


def _is_tiled(path: Path, tile: np.ndarray) -> bool:
    """True if the file is exactly the header followed by ``tile`` repeated."""
    header = _header(tile)
    expected = tile.tobytes()
    with open(path, "rb") as file:
        if file.read(len(header)) != header:
            return False
        for _ in range(FILE_BYTES // tile.nbytes):
            if file.read(len(expected)) != expected:
                return False
        return file.read(1) == b""


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> tuple[Path, np.ndarray]:
    tile = _tile()
    path = tmp_path_factory.mktemp("big") / "x.npy"
    _write_tiled(path, tile)
    yield path, tile
    path.unlink()  # pytest keeps the last runs' folders: no need to keep 512 MiB in each


@pytest.fixture(autouse=True)
def _remove_big_files(tmp_path):
    yield
    for entry in tmp_path.iterdir():
        if entry.is_file() and entry.stat().st_size > BLOCK_BYTES:
            entry.unlink()


def _peak_rss(*args: object) -> tuple[int, subprocess.CompletedProcess]:
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_WRAPPER, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [line for line in done.stderr.splitlines() if line.startswith("peak_rss_bytes")][-1]
    return int(line.split()[1]), done


def test_apply_peak_memory_is_far_below_the_file_size(big_input, tmp_path):
    path, tile = big_input
    baseline, _ = _peak_rss("--help")  # numpy and the command's modules, no work
    peak, done = _peak_rss("apply", path, tmp_path / "y.npy")
    assert done.returncode == 0, done.stderr
    assert os.path.getsize(path) > FILE_BYTES
    assert peak < PEAK_RSS_BOUND, f"peak RSS {peak >> 20} MiB for a {FILE_BYTES >> 20} MiB file"
    assert peak - baseline < 64 << 20  # what apply adds to a bare interpreter: a few windows
    assert _is_tiled(tmp_path / "y.npy", expected_relu(tile))
    assert _is_tiled(path, tile)


def test_apply_in_place_peak_memory_is_far_below_the_file_size(tmp_path):
    tile = _tile()
    path = tmp_path / "x.npy"
    _write_tiled(path, tile)
    peak, done = _peak_rss("apply", "--in-place", path)
    assert done.returncode == 0, done.stderr
    assert peak < PEAK_RSS_BOUND, f"peak RSS {peak >> 20} MiB for a {FILE_BYTES >> 20} MiB file"
    assert _is_tiled(path, expected_relu(tile))


MID_WRITE_BYTES = 32 << 20  # signal once this much of the output has been written


def _temporary_bytes(folder: Path) -> int:
    sizes = [0]
    for entry in os.scandir(folder):
        if entry.name.endswith(TEMP_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                sizes.append(entry.stat().st_size)
    return max(sizes)


def _start_and_stop_mid_write(src: Path, dst: Path, signum: int) -> tuple[int, str]:
    """Run ``apply src dst``, send ``signum`` once its temporary output is partly written; return
    the exit status (negative: killed by that signal) and stderr."""
    with subprocess.Popen(
        [SCRIPT, "apply", str(src), str(dst)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if _temporary_bytes(dst.parent) >= MID_WRITE_BYTES:
                process.send_signal(signum)
                break
            time.sleep(0.001)
        _, stderr = process.communicate(timeout=60)
    return process.returncode, stderr


def test_sigkill_mid_write_leaves_no_out_and_in_unchanged(big_input, tmp_path):
    path, tile = big_input
    out = tmp_path / "y.npy"
    status, _ = _start_and_stop_mid_write(path, out, signal.SIGKILL)
    assert status == -signal.SIGKILL  # killed while writing, not after finishing
    assert not out.exists()
    leftovers = os.listdir(tmp_path)  # SIGKILL allows no cleanup: at most the hidden temporary
    assert all(name.startswith(".y.npy.") and name.endswith(TEMP_SUFFIX) for name in leftovers)
    assert _is_tiled(path, tile)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_or_ctrl_c_mid_write_cleans_up_and_keeps_old_out(big_input, tmp_path, signum):
    path, tile = big_input
    out = tmp_path / "y.npy"
    out.write_bytes(b"the previous result")
    status, stderr = _start_and_stop_mid_write(path, out, signum)
    assert status == 128 + signum, stderr
    name = signal.Signals(signum).name
    assert f"interrupted by {name}; OUT was not written and IN is unchanged" in stderr
    assert "Traceback" not in stderr
    assert os.listdir(tmp_path) == ["y.npy"]  # temporary removed
    assert out.read_bytes() == b"the previous result"
    assert _is_tiled(path, tile)
