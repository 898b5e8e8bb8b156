"""What every subcommand of ``onnx-relu`` shares: exit statuses, the errors that are the user's,
signal handling, and THE guarded runner that turns errors and signals into exit statuses.

Private to :mod:`onnx_relu.cli`. Nothing here imports more than the core package.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
from collections.abc import Callable, Iterator

from ..errors import (
    FileArgumentError,
    InvalidModelError,
    InvalidTensorFileError,
    ModelInputError,
    UnsupportedFileFormatError,
    UnsupportedOperatorError,
    UnsupportedPathError,
    UnsupportedTypeError,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
#: Standard output's reader went away (a broken pipe): the command stops quietly with the status
#: a shell reports for a program that SIGPIPE ends (coreutils' ``seq 1 1000000 | head -1``),
#: 128 + SIGPIPE. Not 0: the output is incomplete, and ``set -o pipefail`` can tell.
EXIT_BROKEN_PIPE = 128 + 13

PROG = "onnx-relu"

#: What the commands that write OUT atomically say when interrupted.
NOT_WRITTEN = "OUT was not written and IN is unchanged"


class UsageError(Exception):
    """Bad arguments or inputs the user must fix (exit status 2)."""


class Interrupted(BaseException):
    """A termination signal arrived; BaseException so that no ``except Exception`` eats it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:  # a real-time signal other than SIGRTMIN and SIGRTMAX
            return f"SIGRTMIN+{self.signum - signal.SIGRTMIN}"


#: Errors in what the user gave (exit status 2): arguments, files, types, models.
USER_ERRORS = (
    UsageError,
    FileArgumentError,
    UnsupportedTypeError,
    UnsupportedFileFormatError,
    UnsupportedPathError,
    InvalidTensorFileError,
    InvalidModelError,
    ModelInputError,
    UnsupportedOperatorError,
)


def fail(prog: str, message: object, status: int) -> int:
    """Print ``message`` as one line "PROG: error: ..." on stderr; return ``status``.

    With standard error closed (or its reader gone) the line is lost, never sent elsewhere:
    ``print(file=None)`` would write it to standard output, among the report."""
    text = " ".join(str(message).split())  # one line, whatever the exception's text
    note(f"{prog}: error: {text}")
    return status


def note(line: str) -> None:
    """Write ``line`` to standard error if it can be written; drop it otherwise."""
    from ..io.streams import standard_closed, write_all

    if sys.stderr is None or standard_closed(2):
        return
    try:
        if _descriptor(sys.stderr) != 2:  # replaced (a test's capture, an embedding program)
            print(line, file=sys.stderr, flush=True)
            return
        encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
        sys.stderr.flush()
        write_all(2, (line + "\n").encode(encoding, "backslashreplace"))
    except (OSError, ValueError):
        pass  # nowhere left to say it


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Inside the block, every Python warning shown is one line ``onnx-relu: warning: TEXT``
    on standard error (:func:`note`), not Python's two lines naming a source file. The command
    line runs in it; Python's own display comes back when it ends (a program that calls
    :func:`onnx_relu.cli.main` keeps its own)."""
    import warnings

    def show(message: Warning | str, *_args: object, **_kwargs: object) -> None:
        note(f"{PROG}: warning: {' '.join(str(message).split())}")

    previous = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        if warnings.showwarning is show:
            warnings.showwarning = previous


def _descriptor(stream: object) -> int | None:
    try:
        return int(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return None


class ReportLost(Exception):
    """Standard output cannot take the report: closed, a full disk or a file size limit (exit
    status 1). A reader that went away is a ``BrokenPipeError`` (:func:`reader_gone`)."""


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe or socket whose reader has gone away (``poll``
    reports an error or a hang-up on it): a broken pipe there ends the command quietly; one on
    another output (a FIFO as OUT) is an error."""
    import select

    try:
        poller = select.poll()
        poller.register(1, select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError):
        return False
    return any(revents & (select.POLLERR | select.POLLHUP) for _fd, revents in events)


def reader_gone() -> int:
    """Standard output's reader went away: return :data:`EXIT_BROKEN_PIPE`, saying nothing.

    Standard output is first pointed at ``/dev/null``, so that what Python still holds for it
    is flushed there at exit instead of failing ("Exception ignored ... BrokenPipeError")."""
    with contextlib.suppress(OSError, ValueError):
        if sys.stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    return EXIT_BROKEN_PIPE


def emit(line: str) -> None:
    """Write one line of a command's report to standard output, every byte of it (short writes
    continued, a non-blocking pipe waited on), or raise :class:`ReportLost`.

    The line should already be escaped (:func:`onnx_relu._text.printable`); characters the
    output's encoding cannot hold are written as backslash escapes, never as an error."""
    from ..io.streams import standard_closed, write_all

    if sys.stdout is None or standard_closed(1):
        raise ReportLost("standard output is closed: the report cannot be written")
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    data = (line + "\n").encode(encoding, "backslashreplace")
    try:
        if _descriptor(sys.stdout) != 1:  # replaced (a test's capture, an embedding program)
            sys.stdout.write(data.decode(encoding))
            sys.stdout.flush()
            return
        sys.stdout.flush()
        write_all(1, data)
    except BrokenPipeError:
        raise  # the reader went away: the command stops quietly (run_guarded)
    except OSError as exc:
        raise ReportLost(
            f"cannot write the report to standard output ({os_error_text(exc)}): it is incomplete"
        ) from None


class _CompleteWriter(io.RawIOBase):
    """Descriptor ``fd`` as a binary stream whose ``write`` writes every byte
    (:func:`onnx_relu.io.streams.write_all`): short writes continued, a full non-blocking pipe
    waited on. Python's own standard output drops the rest of a short write when it is
    unbuffered (``PYTHONUNBUFFERED=1``) and raises ``BlockingIOError`` on a full non-blocking
    pipe when it is buffered."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        from ..io.streams import write_all

        view = memoryview(data).cast("B")  # type: ignore[arg-type]
        write_all(self._fd, view)
        return len(view)

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def close(self) -> None:  # the descriptor stays open: it is the process's standard output
        super().close()


@contextlib.contextmanager
def complete_standard_output() -> Iterator[None]:
    """Inside the block, ``sys.stdout`` writes every byte it is given (see
    :class:`_CompleteWriter`), with its encoding, error handler and line buffering kept; the
    original comes back (flushed) when the block ends. The command's ``main`` runs in it."""
    stdout = sys.stdout
    if not isinstance(stdout, io.TextIOWrapper) or _descriptor(stdout) != 1:
        yield  # closed, or replaced by an embedding program or a test's capture
        return
    stdout.flush()
    unbuffered = isinstance(stdout.buffer, io.RawIOBase)
    complete = io.TextIOWrapper(  # type: ignore[type-var]  # (a raw stream is fine)
        _CompleteWriter(1),
        encoding=stdout.encoding,
        errors=stdout.errors,
        line_buffering=stdout.line_buffering,
        write_through=unbuffered,
    )
    sys.stdout = complete
    try:
        yield
    finally:
        if sys.stdout is complete:
            sys.stdout = stdout
        with contextlib.suppress(OSError, ValueError):
            complete.flush()


def os_error_text(exc: OSError) -> str:
    """An OSError in words: the OS's reason and the file, without Python's "[Errno N]"."""
    if exc.strerror and exc.filename:
        return f"{exc.strerror}: {exc.filename!r}"
    return exc.strerror or str(exc) or type(exc).__name__


def interrupted_outside_work(prog: str) -> int:
    """Ctrl-C outside a subcommand's guarded work (argument parsing, imports, the benchmark's
    set-up and run): one line and exit 130, as for an interrupt during the work."""
    note(f"{prog}: interrupted by SIGINT")
    return 128 + signal.SIGINT


# --- signals -------------------------------------------------------------------------------

#: Every signal whose default action ends the process and that can arrive from outside (as GNU
#: sort cleans up on): the terminal's and kill's, timers (``timeout -s``, alarm), the CPU
#: limit batch schedulers and RLIMIT_CPU send, I/O readiness, power failure, the user and
#: real-time signals. Not the faults (SEGV, BUS, ILL, FPE, ABRT, SYS, TRAP: the process cannot
#: go on), and not PIPE and XFSZ, which Python ignores from the start (a write fails with
#: EPIPE / EFBIG instead, each reported as such).
_STOP_SIGNAL_NAMES = (
    "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGXCPU",
    "SIGVTALRM", "SIGPROF", "SIGIO", "SIGPWR", "SIGSTKFLT",
)  # fmt: skip
_STOP_SIGNALS = tuple(
    dict.fromkeys(  # SIGPOLL is SIGIO on Linux
        [getattr(signal, name) for name in _STOP_SIGNAL_NAMES if hasattr(signal, name)]
        + (
            list(range(signal.SIGRTMIN, signal.SIGRTMAX + 1))
            if hasattr(signal, "SIGRTMIN") and hasattr(signal, "SIGRTMAX")
            else []
        )
    )
)


@contextlib.contextmanager
def signals_raise_interrupted() -> Iterator[None]:
    """Turn every signal that would end the process (:data:`_STOP_SIGNALS`: SIGINT, SIGTERM,
    SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGXCPU, ...) into :class:`Interrupted` so that cleanup
    code runs.

    By default they kill the process at once, which would leave a temporary file behind. A
    signal ignored when the block starts (``nohup`` ignores SIGHUP) stays ignored. After the
    first signal further ones are ignored, so that cleanup is not itself interrupted; the old
    handlers come back when the block ends.
    """
    import threading  # (here: the command line's start-up does without it)

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; an embedding program keeps its own
        return

    handled = [number for number in _STOP_SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]

    def handler(signum: int, _frame: object) -> None:
        for number in handled:
            signal.signal(number, signal.SIG_IGN)
        raise Interrupted(signum)

    previous = {number: signal.signal(number, handler) for number in handled}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def run_guarded(
    prog: str,
    work: Callable[[], int],
    *,
    after_interrupt: str,
    after_failure: str = "",
    job: str | None = None,
) -> int:
    """Run a subcommand's ``work``, turning its errors and signals into exit statuses.

    Parameters
    ----------
    prog : str
        The name messages start with, e.g. "onnx-relu apply".
    work : callable
        Does the job; returns the exit status.
    after_interrupt : str
        What a stop by a signal leaves behind, said after "interrupted by SIGINT; ".
    after_failure : str
        Appended to the message of a failure (exit 1), e.g. "; OUT left unchanged".
    job : str, optional
        For work that fails in ways of its own (a Dask job: a worker killed, a store error on a
        worker), what to call it: any other exception then becomes "<job> failed (<type>:
        <message>)" and exit 1. Without it such an exception is a bug in onnx-relu and keeps its
        traceback.

    Returns
    -------
    int
        ``work``'s status; 2 for the user's errors (:data:`USER_ERRORS`), 1 for a failure of
        the job (OSError, MemoryError, a missing optional package), 128 + N when stopped by
        signal N, :data:`EXIT_BROKEN_PIPE` (141, nothing said) when standard output's reader
        went away.
    """
    try:
        with signals_raise_interrupted():
            return work()
    except Interrupted as stop:
        note(f"{prog}: interrupted by {stop.name}; {after_interrupt}")
        return 128 + stop.signum
    except USER_ERRORS as exc:
        return fail(prog, exc, EXIT_USAGE)
    except ReportLost as exc:
        return fail(prog, exc, EXIT_FAILED)
    except BrokenPipeError:
        return broken_pipe(prog)
    except OSError as exc:
        if job is None or not _is_lost_connection(exc):
            return fail(prog, os_error_text(exc) + after_failure, EXIT_FAILED)
        # A Dask client that loses its scheduler fails with this or with distributed's own
        # cancellation, whichever of its tasks notices first: one message for both.
        return fail(
            prog,
            f"{job} failed (a connection of the Dask client was lost: {type(exc).__name__}:"
            f" {exc}){after_failure}",
            EXIT_FAILED,
        )
    except (MemoryError, ImportError) as exc:
        from .._extras import command_line_message

        # A missing optional package, from any import on the way: the one rule's line.
        text = command_line_message(exc) or str(exc) or type(exc).__name__
        return fail(prog, text + after_failure, EXIT_FAILED)
    except Exception as exc:
        if job is None:
            raise  # a bug in onnx-relu: keep the traceback
        return fail(prog, f"{job} failed ({type(exc).__name__}: {exc}){after_failure}", EXIT_FAILED)


def broken_pipe(prog: str) -> int:
    """A ``BrokenPipeError`` out of a command: standard output's reader went away (``| head``),
    which ends the command quietly (:func:`reader_gone`); else the reader of another output (a
    FIFO as OUT) went away, which is a failure said in one line (exit 1)."""
    if stdout_reader_gone():
        return reader_gone()
    return fail(
        prog,
        "the reader of the output went away (broken pipe): the output is incomplete",
        EXIT_FAILED,
    )


def _is_lost_connection(exc: OSError) -> bool:
    """A connection reset or closed under the work: the OS's own error, or distributed's
    ``CommClosedError`` (an OSError whose text names the reset connection)."""
    return isinstance(exc, ConnectionError) or type(exc).__name__ == "CommClosedError"


def thread_limit(threads: int | None) -> contextlib.AbstractContextManager[object]:
    """``--threads N``: the kernel uses ``N`` threads inside the block (None: as configured)."""
    if threads is None:
        return contextlib.nullcontext()
    from ..tuning import num_threads

    return num_threads(threads)
