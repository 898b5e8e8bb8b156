"""Focused figures, each a same-run ratio: start-up, views numpy cannot merge, threads.

``python -m onnx_relu.bench --start-up | --layouts | --thread-scaling`` (``onnx-relu bench``
takes the same options) prints one of them instead of the whole benchmark; each also runs as
``python src/onnx_relu/bench/figures.py start-up|layouts|thread-scaling`` against any installed
onnx-relu (it uses the public API only), so that a change can be measured before and after in
the same run.

- :func:`start_up_times`: whole fresh processes, best of N, interleaved: ``python -c pass``,
  ``import numpy``, numpy's first call and onnx-relu's, ``onnx-relu --version`` and ``--help``,
  and ``onnx-relu apply`` of a 4 KiB float32 ``.npy``.
- :func:`layout_speeds`: 64 MiB of float32 as views whose rows numpy hands the loop one at a
  time, against the same bytes contiguous, allocating and into ``out=``.
- :func:`thread_scaling`: N Python threads calling ``relu(x, out=y)`` on 4 KiB and 4 MiB arrays
  of their own: calls per second against N times one thread's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import onnx_relu

__all__ = ["start_up_times", "layout_speeds", "thread_scaling", "format_figures", "main"]

# What a console script runs (the one the package installs is these two lines).
_CLI = "import sys; from onnx_relu.cli import main; sys.exit(main())"


def start_up_times(repeats: int = 10) -> dict[str, Any]:
    """Seconds of each start-up in fresh processes (best of ``repeats``, interleaved) and the
    ratios the goals are stated in (docs/performance.md)."""
    folder = tempfile.mkdtemp(prefix="onnx-relu-start-up-")
    source = os.path.join(folder, "x.npy")
    np.save(source, np.linspace(-1.0, 1.0, 1024, dtype=np.float32))  # 4 KiB of data
    target = os.path.join(folder, "y.npy")
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "import numpy": [python, "-c", "import numpy"],
        "import onnx_relu": [python, "-c", "import onnx_relu"],
        "numpy first call": [
            python,
            "-c",
            "import numpy as np; np.maximum(np.ones(8, np.float32), 0)",
        ],
        "onnx_relu first call": [
            python,
            "-c",
            "import numpy as np; from onnx_relu import relu; relu(np.ones(8, np.float32))",
        ],
        "onnx-relu --version": [python, "-c", _CLI, "--version"],
        "onnx-relu --help": [python, "-c", _CLI, "--help"],
        "onnx-relu apply 4 KiB float32 .npy": [python, "-c", _CLI, "apply", source, target],
    }
    best = dict.fromkeys(commands, float("inf"))
    cpu = dict.fromkeys(commands, float("inf"))
    try:
        for _ in range(repeats):
            for name, command in commands.items():
                if os.path.exists(target):
                    os.remove(target)
                start = time.perf_counter()
                process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
                _pid, status, usage = os.wait4(process.pid, 0)
                best[name] = min(best[name], time.perf_counter() - start)
                process.returncode = os.waitstatus_to_exitcode(status)
                if process.returncode != 0:
                    raise subprocess.CalledProcessError(process.returncode, command)
                # CPU seconds too: on a loaded machine they move less than wall time does.
                cpu[name] = min(cpu[name], usage.ru_utime + usage.ru_stime)
    finally:
        for path in (source, target):
            if os.path.exists(path):
                os.remove(path)
        os.rmdir(folder)
    return {
        "seconds": best,
        "cpu seconds": cpu,
        "ratios": _start_up_ratios(best),
        "cpu ratios": _start_up_ratios(cpu),
    }


def _start_up_ratios(best: dict[str, float]) -> dict[str, float]:
    return {
        "first float32 call / numpy's first call (goal <= 1.2)": best["onnx_relu first call"]
        / best["numpy first call"],
        "onnx-relu --version / python -c pass (goal < 3)": best["onnx-relu --version"]
        / best["python -c pass"],
        "onnx-relu --help / python -c pass": best["onnx-relu --help"] / best["python -c pass"],
        "apply 4 KiB float32 .npy / import numpy (goal <= 1.5)": best[
            "onnx-relu apply 4 KiB float32 .npy"
        ]
        / best["import numpy"],
        "import onnx_relu / python -c pass": best["import onnx_relu"] / best["python -c pass"],
    }


def _mixed(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Mixed-sign float32 data (never zeros: streaming stores of zero lines run faster)."""
    return rng.standard_normal(shape, dtype=np.float32)


def _views(rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """64 MiB float32 views numpy cannot merge into one loop call, each with a view of the
    same layout to write into (for sliced-in/sliced-out)."""
    wide = _mixed((4096, 4097), rng)
    narrow = _mixed((16384, 1025), rng)
    tall = _mixed((8192, 4096), rng)
    return {
        "x[:, :4096] of 4096x4097 (rows of 16 KiB)": (
            wide[:, :4096],
            np.empty_like(wide)[:, :4096],
        ),
        "x[:, :1024] of 16384x1025 (rows of 4 KiB)": (
            narrow[:, :1024],
            np.empty_like(narrow)[:, :1024],
        ),
        "x[::2] of 8192x4096 (every other row of 16 KiB)": (tall[::2], np.empty_like(tall)[::2]),
    }


def _best(call: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def _pairs(
    dense: np.ndarray, dense_out: np.ndarray, view: np.ndarray, sliced_out: np.ndarray
) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """label -> (the contiguous call, the view's call) of :func:`layout_speeds`."""
    relu = onnx_relu.relu
    return {
        "allocating": (lambda: relu(dense), lambda: relu(view)),
        "out= contiguous": (lambda: relu(dense, out=dense_out), lambda: relu(view, out=dense_out)),
        "sliced in, sliced out=": (
            lambda: relu(dense, out=dense_out),
            lambda: relu(view, out=sliced_out),
        ),
    }


def layout_speeds(rounds: int = 9) -> dict[str, Any]:
    """For each view: its speed over the contiguous array's of the same bytes (1.0: as fast),
    allocating (``relu(v)``), into a contiguous ``out=`` and sliced into a sliced ``out=``;
    interleaved, best of ``rounds``. Goal: >= 0.9 for every one (rows of >= 4 KiB)."""
    rng = np.random.default_rng(27)
    contiguous = _mixed((4096, 4096), rng)  # 64 MiB
    out = np.empty_like(contiguous)
    results: dict[str, Any] = {}
    for name, (view, sliced_out) in _views(rng).items():
        assert view.nbytes == contiguous.nbytes
        dense = contiguous.reshape(view.shape)
        dense_out = out.reshape(view.shape)
        pairs = _pairs(dense, dense_out, view, sliced_out)
        row: dict[str, float] = {}
        for label, (reference, candidate) in pairs.items():
            reference(), candidate()  # warm: pages, the output cache, the pool
            best_reference = best_candidate = float("inf")
            for _ in range(rounds):  # interleaved: the machine's bandwidth moves
                best_reference = min(best_reference, _best(reference, 1))
                best_candidate = min(best_candidate, _best(candidate, 1))
            row[label] = best_reference / best_candidate
            row[label + " GB/s"] = 2 * view.nbytes / best_candidate / 1e9
            row[label + " contiguous GB/s"] = 2 * view.nbytes / best_reference / 1e9
        results[name] = row
    results["threads"] = onnx_relu.get_num_threads()
    return results


def thread_scaling(
    thread_counts: Sequence[int] | None = None,
    sizes: Sequence[int] = (4096, 4 << 20),
    seconds: float = 0.5,
    rounds: int = 3,
) -> dict[str, Any]:
    """Calls per second of N Python threads each calling ``relu(x, out=y)`` on arrays of its own
    (float32, ``sizes`` in bytes), best of ``rounds`` runs of ``seconds``, and the ratio to N
    times one thread's (goal for small arrays: >= 0.9). Without a GIL (free-threaded CPython,
    ``sys._is_gil_enabled() is False``) this measures the module; with one, the GIL."""
    if thread_counts is None:
        thread_counts = sorted({1, 2, os.cpu_count() or 1})
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    results: dict[str, Any] = {"gil_enabled": gil, "kernel_threads": onnx_relu.get_num_threads()}
    for nbytes in sizes:
        rates: dict[int, float] = {}
        for count in thread_counts:
            best = 0.0
            for _ in range(rounds):
                best = max(best, _calls_per_second(count, nbytes, seconds))
            rates[count] = best
        label = f"{nbytes // 1024} KiB" if nbytes < 1 << 20 else f"{nbytes >> 20} MiB"
        results[label] = {
            f"{count} threads": {
                "calls/s": rate,
                "ratio to N x one thread": rate / (count * rates[thread_counts[0]]),
            }
            for count, rate in rates.items()
        }
    return results


def _calls_per_second(count: int, nbytes: int, seconds: float) -> float:
    rng = np.random.default_rng(count)
    arrays = [
        (_mixed((nbytes // 4,), rng), np.empty(nbytes // 4, np.float32)) for _ in range(count)
    ]
    done = [0] * count
    start_line = threading.Barrier(count + 1)
    stop = threading.Event()

    def work(index: int) -> None:
        x, y = arrays[index]
        relu = onnx_relu.relu
        calls = 0
        start_line.wait()
        while not stop.is_set():
            for _ in range(64):
                relu(x, out=y)
            calls += 64
        done[index] = calls

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    start_line.wait()
    started = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(done) / (time.perf_counter() - started)


def format_figures(name: str, figures: dict[str, Any]) -> str:
    """The figures as indented text lines."""
    lines = [f"{name} (onnx-relu {onnx_relu.__version__}, Python {sys.version.split()[0]}):"]

    def walk(value: dict[str, Any], indent: int, parent: str) -> None:
        for key, item in value.items():
            if isinstance(item, dict):
                lines.append(" " * indent + f"{key}:")
                walk(item, indent + 2, key)
            elif isinstance(item, float):
                shown = f"{item * 1e3:.1f} ms" if parent.endswith("seconds") else f"{item:.3f}"
                lines.append(" " * indent + f"{key}: {shown}")
            else:
                lines.append(" " * indent + f"{key}: {item}")

    walk(figures, 2, "")
    return "\n".join(lines)


_FIGURES: dict[str, Callable[[], dict[str, Any]]] = {
    "start-up": start_up_times,
    "layouts": layout_speeds,
    "thread-scaling": thread_scaling,
}


def main(which: str) -> int:
    """Print one set of figures (``start-up``, ``layouts`` or ``thread-scaling``)."""
    print(format_figures(which, _FIGURES[which]()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "start-up"))
