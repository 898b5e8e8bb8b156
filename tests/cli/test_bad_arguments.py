"""Bad arguments and Ctrl-C at start-up (issue 13, item 8): exit 2 (130 for Ctrl-C), one line on
stderr, no traceback, nothing written, and the benchmark's arguments checked before it runs.

Each case runs the installed command as a subprocess, as a user would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap

import numpy as np
import onnx
import pytest

from onnx_relu import write_tensor
from onnx_relu.tuning import MAX_THREADS
from tests.support.cli import MODULE, SCRIPT, assert_cli_error, folder_state, run_cli
from tests.support.onnx_models import relu_model

#: A benchmark run that takes well under a second, so that a check made after the run instead
#: of before it shows as its tables on stdout, not as a long wait.
TINY_BENCH = ("--quick", "--types", "int8", "--sizes", "6", "--threads", "1", "--peers")


@pytest.mark.parametrize(
    "args",
    [
        ("apply", "--threads", "1000", "x.npy", "y.npy"),
        ("apply", "--threads", str(MAX_THREADS + 1), "--in-place", "x.npy"),
        ("run", "model.onnx", "-i", "x.npy", "-o", "out", "--threads", "257"),
        ("run", "model.onnx", "-i", "x.npy", "-o", "out", "--threads", "-3"),
    ],
    ids=["apply-1000", "apply-in-place-max+1", "run-257", "run-negative"],
)
def test_thread_count_outside_the_kernels_range_is_a_usage_error(tmp_path, args):
    write_tensor(tmp_path / "x.npy", np.array([-1.0, 2.0], np.float32))
    onnx.save(relu_model("float32", 14), tmp_path / "model.onnx")  # a valid command but for N
    before = folder_state(tmp_path)
    done = run_cli(*args, cwd=tmp_path)
    assert_cli_error(done, 2, f"argument --threads: must be an integer in 1..{MAX_THREADS}")
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--rounds", "-1"), "argument --rounds: must be an integer >= 1, got '-1'"),
        (("--rounds", "0"), "argument --rounds: must be an integer >= 1, got '0'"),
        (("--batch-ms", "-5"), "argument --batch-ms: must be a number of milliseconds > 0"),
        (("--batch-ms", "nan"), "argument --batch-ms: must be a number of milliseconds > 0"),
        (("--threads", "1", "0"), f"argument --threads: must be an integer in 1..{MAX_THREADS}"),
        (("--replot", "missing.json"), "--replot 'missing.json' cannot be read: No such file"),
        (("--replot", "."), "--replot '.' cannot be read"),
        (("--replot", "garbage.json"), "--replot 'garbage.json' is not an onnx-relu benchmark"),
        (("--json", "/proc/x.json", "--no-plot"), "--json '/proc/x.json' cannot be written"),
        (("--json", "missing/r.json", "--no-plot"), "--json 'missing/r.json' cannot be written"),
        (("--json", ".", "--no-plot"), "--json '.' cannot be written: it is a folder"),
        (("--json", "", "--png", "/proc/x.png"), "--png '/proc/x.png' cannot be written"),
    ],
)
def test_bench_refuses_bad_arguments_before_it_runs(tmp_path, args, fragment):
    (tmp_path / "garbage.json").write_text("{not json")
    before = folder_state(tmp_path)
    done = run_cli("bench", *TINY_BENCH, *args, cwd=tmp_path)
    assert_cli_error(done, 2, fragment)
    assert "GB/s" not in done.stdout, "the benchmark ran before its arguments were checked"
    assert folder_state(tmp_path) == before


def test_bench_json_and_png_checks_leave_a_writable_run_alone(tmp_path):
    """The up-front check creates and removes the file; the run then writes it."""
    done = run_cli("bench", *TINY_BENCH, "--json", "r.json", "--no-plot", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["r.json"]


#: Loaded by the command's interpreter (``sitecustomize`` on PYTHONPATH): sends the process a
#: real SIGINT, as Ctrl-C does, the moment the module named in the environment starts to be
#: imported. Deterministic: no race with the clock.
SIGINT_AT_IMPORT = textwrap.dedent(
    """
    import os, signal, sys

    class SigintAtImport:
        def find_spec(self, name, path=None, target=None):
            if name == os.environ["SIGINT_AT_IMPORT"]:
                sys.meta_path.remove(self)
                os.kill(os.getpid(), signal.SIGINT)
            return None

    sys.meta_path.insert(0, SigintAtImport())
    """
)


@pytest.mark.parametrize(
    ("module", "args"),
    [
        # while numpy and the kernel are imported (by the command that needs them: the command
        # line parses its arguments first, and --version, --help need neither)
        ("numpy", ("apply", "x.npy", "y.npy")),
        ("onnx_relu._relu", ("apply", "x.npy", "y.npy")),
        ("onnx_relu.cli.apply_command", ("--help",)),  # while the command's modules are imported
        ("onnx_relu.bench", ("bench", *TINY_BENCH, "--json", "", "--no-plot")),  # in main
        ("onnx_relu.files", ("apply", "x.npy", "y.npy")),  # in the guarded work
    ],
    ids=[
        "importing-numpy",
        "importing-the-kernel",
        "importing-the-cli",
        "importing-the-bench",
        "importing-files",
    ],
)
@pytest.mark.parametrize("command", [(SCRIPT,), MODULE], ids=["onnx-relu", "python -m onnx_relu"])
def test_ctrl_c_during_start_up_is_one_line_and_status_130(tmp_path, module, args, command):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SIGINT_AT_IMPORT)
    work = tmp_path / "work"
    work.mkdir()
    write_tensor(work / "x.npy", np.array([-1.0, 2.0], np.float32))
    before = folder_state(work)
    env = {**os.environ, "PYTHONPATH": str(hooks), "SIGINT_AT_IMPORT": module}
    done = subprocess.run(
        [*command, *args], capture_output=True, text=True, cwd=work, env=env, timeout=120
    )
    assert done.returncode == 128 + signal.SIGINT, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "interrupted by SIGINT" in done.stderr
    assert folder_state(work) == before
