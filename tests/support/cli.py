"""Running the installed ``onnx-relu`` command, and the proof that a refusal lost nothing.

The tests run the real program (the console script beside the interpreter, or
``python -m onnx_relu``) as a subprocess, never the source tree. ``folder_state`` records every
entry under a folder (hidden temporaries included) with its bytes, so one comparison shows that
inputs are byte-identical, an existing OUT is unchanged and no partial or temporary output was
left.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

#: The installed command.
SCRIPT = str(Path(sys.executable).with_name("onnx-relu"))
#: The same program through the interpreter.
MODULE: tuple[str, ...] = (sys.executable, "-m", "onnx_relu")


def folder_state(folder: Path) -> dict[str, bytes | None]:
    """Relative path -> bytes for every file under ``folder`` (None for a folder), hidden
    entries and temporaries included."""
    state: dict[str, bytes | None] = {}
    for root, folders, files in os.walk(folder):
        for name in folders:
            state[os.path.relpath(os.path.join(root, name), folder)] = None
        for name in files:
            path = os.path.join(root, name)
            state[os.path.relpath(path, folder)] = Path(path).read_bytes()
    return state


def run_cli(
    *args: object,
    cwd: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
    command: Sequence[str] = (SCRIPT,),
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """Run the installed ``onnx-relu`` (or ``command``) with ``args``; capture its output."""
    return subprocess.run(
        [*command, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def assert_cli_error(done: subprocess.CompletedProcess, status: int, fragment: str) -> str:
    """Exit ``status``, no traceback, exactly one ``error:`` line on stderr holding ``fragment``."""
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    error_lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(error_lines) == 1, done.stderr
    assert fragment in error_lines[0], f"{fragment!r} not in {error_lines[0]!r}"
    return error_lines[0]


def file_size_limit(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child's disk "full" beyond ``limit`` bytes per file.

    RLIMIT_FSIZE works as root too (unlike permissions). SIGXFSZ, which would kill the process
    at the limit, is ignored, so that write() fails with EFBIG ("File too large") instead, as
    it fails with ENOSPC on a full disk.
    """

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_file_size
