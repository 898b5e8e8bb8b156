"""What Unix hands a program, made on demand for tests of the installed command: pipes that
take part of a write (non-blocking, slow readers), readers that go away, closed standard
descriptors, a file-size limit (``RLIMIT_FSIZE``), FIFOs with and without a writer or reader,
device nodes in a temporary folder, and ``PYTHONUNBUFFERED`` set or not.

Every helper runs the real program as a subprocess (see :mod:`tests.support.cli`) and returns
its exit status, its standard output's bytes and its standard error's text.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import SCRIPT


def environment(unbuffered: bool) -> dict[str, str]:
    """This process's environment with ``PYTHONUNBUFFERED`` set to 1 or removed (CI and the
    machine set it; users mostly do not: tests run both)."""
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def closing(*fds: int) -> Callable[[], None]:
    """A ``preexec_fn`` that closes ``fds`` in the child (``cmd <&-``, ``>&-``, ``2>&-``)."""

    def close() -> None:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    return close


def file_size_limit(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` that limits the files the child writes to ``limit`` bytes."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@dataclass
class Done:
    """What a run left: exit status, standard output's bytes, standard error's text."""

    returncode: int
    stdout: bytes
    stderr: str

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if "error:" in line]

    def assert_one_line_failure(self, status: int, fragment: str) -> str:
        """Exit ``status`` with one ``error:`` line holding ``fragment``; no traceback, and
        none of Python's "Exception ignored" shutdown noise."""
        assert self.returncode == status, (self.returncode, self.stderr)
        assert "Traceback" not in self.stderr and "Exception ignored" not in self.stderr, (
            self.stderr
        )
        lines = self.error_lines()
        assert len(lines) == 1, self.stderr
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
        return lines[0]


def run_to_pipe(
    args: Sequence[object],
    *,
    stdin: bytes | None = None,
    unbuffered: bool = True,
    nonblocking: bool = False,
    read_bytes: int = 4096,
    delay_s: float = 0.0,
    close_after: int | None = None,
    cwd: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
    timeout: float = 120,
) -> Done:
    """Run the command with its standard output on a pipe whose reader this helper is.

    ``nonblocking``: the pipe's write end is ``O_NONBLOCK`` (a write may take part of its data
    or fail with ``EAGAIN``); the reader takes ``read_bytes`` bytes at a time, waiting ``delay_s``
    between reads (a slow reader keeps the pipe full); ``close_after``: the reader closes its
    end once it has that many bytes (a reader that goes away, as ``head -c`` does).
    """
    read_end, write_end = os.pipe()
    if nonblocking:
        os.set_blocking(write_end, False)
    stdin_pipe = subprocess.PIPE if stdin is not None else subprocess.DEVNULL
    process = subprocess.Popen(
        [SCRIPT, *map(str, args)],
        stdin=stdin_pipe,
        stdout=write_end,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=environment(unbuffered),
        preexec_fn=preexec_fn,
    )
    os.close(write_end)
    received = bytearray()
    errors: list[bytes] = []
    feeder = None
    if stdin is not None:

        def feed() -> None:
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                process.stdin.write(stdin)
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
    collector = threading.Thread(
        target=lambda: errors.append(process.stderr.read()),
        daemon=True,  # type: ignore[union-attr]
    )
    collector.start()
    deadline = time.monotonic() + timeout
    with os.fdopen(read_end, "rb", buffering=0) as reader:
        while time.monotonic() < deadline:
            if close_after is not None and len(received) >= close_after:
                break
            piece = reader.read(read_bytes)
            if not piece:
                break
            received += piece
            if delay_s:
                time.sleep(delay_s)
    returncode = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    collector.join(timeout=10)
    if feeder is not None:
        feeder.join(timeout=10)
    for stream in (process.stdin, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return Done(returncode, bytes(received), b"".join(errors).decode(errors="replace"))


def run_plain(
    args: Sequence[object],
    *,
    stdin: bytes | int | None = None,
    stdout: int | None = subprocess.PIPE,
    unbuffered: bool = True,
    cwd: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 120,
) -> Done:
    """Run the command with binary standard input ``stdin`` (bytes, a descriptor or None for
    /dev/null) and standard output captured (or ``stdout``, a descriptor)."""
    env = environment(unbuffered)
    env.update(extra_env or {})
    done = subprocess.run(
        [SCRIPT, *map(str, args)],
        input=stdin if isinstance(stdin, bytes) else None,
        stdin=stdin
        if isinstance(stdin, int)
        else (None if isinstance(stdin, bytes) else subprocess.DEVNULL),
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        preexec_fn=preexec_fn,
        timeout=timeout,
    )
    return Done(done.returncode, done.stdout or b"", done.stderr.decode(errors="replace"))


@contextlib.contextmanager
def fifo_writer(path: Path, data: bytes) -> Iterator[threading.Thread]:
    """A thread that opens the FIFO ``path`` for writing (blocking until a reader comes),
    writes ``data`` and closes it; joined when the block ends."""

    def write() -> None:
        with contextlib.suppress(OSError), open(path, "wb") as fifo:
            fifo.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        if thread.is_alive():  # no reader came: open a reader ourselves to release it
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                thread.join(timeout=5)
                os.close(fd)
        thread.join(timeout=5)


@contextlib.contextmanager
def fifo_reader(path: Path) -> Iterator[list[bytes]]:
    """A thread that opens the FIFO ``path`` for reading and reads it to its end; the list it
    yields holds what was read once the block ends."""
    received: list[bytes] = []
    opened = threading.Event()

    def read() -> None:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # (the writer finds a reader at once)
        opened.set()
        os.set_blocking(fd, True)
        # Until a writer has opened it, a FIFO reads as empty; poll reports nothing until then.
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll(30_000)
        with os.fdopen(fd, "rb") as fifo:
            received.append(fifo.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    opened.wait(5)
    try:
        yield received
    finally:
        thread.join(timeout=30)


def make_device(path: Path, kind: str = "c", major: int = 1, minor: int = 3) -> Path:
    """A device node at ``path`` in a test's own folder (never in /dev): by default a character
    device like /dev/null (1, 3); ``kind="b"`` a block device (7, 0: a loop device). Needs
    root (``pytest.skip`` where the caller cannot make one)."""
    import stat

    import pytest

    mode = (stat.S_IFCHR if kind == "c" else stat.S_IFBLK) | 0o600
    try:
        os.mknod(path, mode, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path
