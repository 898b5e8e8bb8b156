"""The C kernel on its own: tests/kernel/relu_kernel_driver.c built against src/kernel, no Python.

The driver sweeps sizes 0..257 x every element-aligned offset x the eight types x contiguous,
strided, in place and overlapping operands, with the thresholds forced to 0 (threads and
streaming stores on every call, once per streaming-store ISA of this CPU) and at the default
tuning, against a scalar reference of its own; canary bytes around every operand must stay
unchanged (see the comment at the top of the driver). It is built three ways: as the extension
module builds the kernel, and with each of the kernel's portable switches, RELU_DISABLE_THREADS
(serial) and RELU_DISABLE_NT (regular stores only). ``make sanitize`` runs it once more under
AddressSanitizer and UndefinedBehaviorSanitizer (tools/sanitize.sh).

Unlike the other tests this one builds from the repository's sources, not the installed
package: the kernel is a static library inside the extension and has no Python API of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
KERNEL = REPOSITORY / "src" / "kernel"
DRIVER = Path(__file__).resolve().parent / "relu_kernel_driver.c"

# The flags of the extension's build that matter to the code generated (meson.build); never
# -march=native, so the driver runs the same run-time dispatch as the module.
CFLAGS = ["-std=c11", "-O3", "-fno-math-errno", "-Wall", "-Wextra", "-pthread"]

# (build, extra compiler flags, driver arguments, what the driver must report about the build)
BUILDS = [
    ("as the module", [], [], None),
    (
        "RELU_DISABLE_THREADS",
        ["-DRELU_DISABLE_THREADS"],
        ["--each-offset"],
        "threads no (serial build)",
    ),
    ("RELU_DISABLE_NT", ["-DRELU_DISABLE_NT"], ["--each-offset"], "streaming stores up to none"),
]


def _compiler() -> str:
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        pytest.fail(
            f"no C compiler {compiler!r} (set CC): the kernel driver needs one, as the build does"
        )
    return compiler


def build_driver(folder: Path, extra_flags: list[str]) -> Path:
    """Compile the driver with the kernel's sources into ``folder``; the path of the program."""
    program = folder / "relu_kernel_driver"
    sources = sorted(str(p) for p in KERNEL.glob("*.c"))
    command = [
        _compiler(),
        *CFLAGS,
        *extra_flags,
        f"-I{KERNEL}",
        *sources,
        str(DRIVER),
        "-o",
        str(program),
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    assert built.returncode == 0, f"{' '.join(command)}\n{built.stdout}{built.stderr}"
    assert "warning:" not in built.stderr, built.stderr
    return program


def test_the_kernel_sources_know_no_python():
    for source in [*KERNEL.glob("*.c"), *KERNEL.glob("*.h")]:
        text = source.read_text()
        for name in ("Python.h", "numpy/", "npy_intp", "Py_ssize_t", "PyObject"):
            assert name not in text, f"{source.name} mentions {name}"


@pytest.mark.parametrize(
    ("build", "flags", "arguments", "reported"), BUILDS, ids=[b[0] for b in BUILDS]
)
def test_kernel_driver_finds_no_mismatch(tmp_path, build, flags, arguments, reported):
    program = build_driver(tmp_path, flags)
    run = subprocess.run(
        [str(program), *arguments], capture_output=True, text=True, timeout=900, check=False
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"{build}: the driver exited with {run.returncode}\n{output}"
    total = re.search(r"^total: (\d+) cases, (\d+) failures$", run.stdout, re.MULTILINE)
    assert total is not None, output
    cases, failures = int(total.group(1)), int(total.group(2))
    assert failures == 0, output
    # Every phase ran its sweep: at least sizes 0..257 x 8 types x the 64 offsets of int8.
    assert cases > 258 * 8 * 64, output
    if reported is not None:
        assert reported in run.stdout, f"{build}: the switch did not take effect\n{output}"
    else:
        assert "threads yes" in run.stdout, output
        assert "thresholds 0" in run.stdout and "default tuning" in run.stdout, output
