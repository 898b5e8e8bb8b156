"""What every subcommand of ``onnx-relu`` shares: exit statuses, the errors that are the user's,
signal handling, THE guarded runner that turns errors and signals into exit statuses, and the
path checks made before any work starts.

Private to :mod:`onnx_relu.cli`. Nothing here imports more than the core package.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

from ..errors import (
    InvalidModelError,
    InvalidTensorFileError,
    ModelInputError,
    UnsupportedFileFormatError,
    UnsupportedOperatorError,
    UnsupportedTypeError,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

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
        return signal.Signals(self.signum).name


#: Errors in what the user gave (exit status 2): arguments, files, types, models.
USER_ERRORS = (
    UsageError,
    UnsupportedTypeError,
    UnsupportedFileFormatError,
    InvalidTensorFileError,
    InvalidModelError,
    ModelInputError,
    UnsupportedOperatorError,
)


def fail(prog: str, message: object, status: int) -> int:
    """Print ``message`` as one line "PROG: error: ..." on stderr; return ``status``."""
    text = " ".join(str(message).split())  # one line, whatever the exception's text
    print(f"{prog}: error: {text}", file=sys.stderr)
    return status


def os_error_text(exc: OSError) -> str:
    """An OSError in words: the OS's reason and the file, without Python's "[Errno N]"."""
    if exc.strerror and exc.filename:
        return f"{exc.strerror}: {exc.filename!r}"
    return exc.strerror or str(exc) or type(exc).__name__


def interrupted_outside_work(prog: str) -> int:
    """Ctrl-C outside a subcommand's guarded work (argument parsing, imports, the benchmark's
    set-up and run): one line and exit 130, as for an interrupt during the work."""
    print(f"{prog}: interrupted by SIGINT", file=sys.stderr)
    return 128 + signal.SIGINT


# --- signals -------------------------------------------------------------------------------

_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def signals_raise_interrupted() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`Interrupted` so cleanup code runs.

    By default SIGTERM and SIGHUP kill the process at once, which would leave a temporary file
    behind. After the first signal further ones are ignored, so that cleanup is not itself
    interrupted; the old handlers come back when the block ends.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; an embedding program keeps its own
        return

    def handler(signum: int, _frame: object) -> None:
        for number in _STOP_SIGNALS:
            signal.signal(number, signal.SIG_IGN)
        raise Interrupted(signum)

    previous = {number: signal.signal(number, handler) for number in _STOP_SIGNALS}
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
        signal N.
    """
    try:
        with signals_raise_interrupted():
            return work()
    except Interrupted as stop:
        print(f"{prog}: interrupted by {stop.name}; {after_interrupt}", file=sys.stderr)
        return 128 + stop.signum
    except USER_ERRORS as exc:
        return fail(prog, exc, EXIT_USAGE)
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
        return fail(prog, (str(exc) or type(exc).__name__) + after_failure, EXIT_FAILED)
    except Exception as exc:
        if job is None:
            raise  # a bug in onnx-relu: keep the traceback
        return fail(prog, f"{job} failed ({type(exc).__name__}: {exc}){after_failure}", EXIT_FAILED)


def _is_lost_connection(exc: OSError) -> bool:
    """A connection reset or closed under the work: the OS's own error, or distributed's
    ``CommClosedError`` (an OSError whose text names the reset connection)."""
    return isinstance(exc, ConnectionError) or type(exc).__name__ == "CommClosedError"


def add_subcommand(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    run: Callable[[argparse.Namespace], int],
    *,
    help: str,  # noqa: A002 - argparse's own name for it
    description: str,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` to ``commands``, run by ``run``; return its parser.

    With an ``epilog`` (the examples), the description and the epilog are printed as written.
    """
    formatter = argparse.RawDescriptionHelpFormatter if epilog else argparse.HelpFormatter
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=formatter
    )
    parser.set_defaults(handler=run)
    return parser


# --- checks made before any work starts ------------------------------------------------------


def check_readable(path: str, what: str, *, folder: bool = False) -> None:
    """``path`` exists, is a file (a folder with ``folder=True``) and may be read."""
    if not os.path.exists(path):
        raise UsageError(f"{what} {path!r} does not exist")
    if folder and not os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is not a folder (a Zarr store is a folder)")
    if not folder and os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is a folder, not a tensor file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{what} {path!r} is not readable (permission denied)")


def check_writable_destination(path: str) -> None:
    """OUT ``path`` can be created: its folder exists, is a folder and is writable."""
    target = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)
    folder = os.path.dirname(target)  # a link is written through (see files._atomic)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"cannot write OUT {path!r}: {folder!r} is a file, not a folder")
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write OUT {path!r}: the folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write OUT {path!r}: the folder {folder!r} is not writable")


def thread_limit(threads: int | None) -> contextlib.AbstractContextManager[object]:
    """``--threads N``: the kernel uses ``N`` threads inside the block (None: as configured)."""
    if threads is None:
        return contextlib.nullcontext()
    from ..tuning import num_threads

    return num_threads(threads)
