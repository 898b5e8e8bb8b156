"""The ``onnx-relu`` command (also ``python -m onnx_relu``).

One module per subcommand, named ``COMMAND_command`` (:mod:`.demo_command`,
:mod:`.apply_command`, :mod:`.run_command`, :mod:`.check_command`, :mod:`.legalize_command`,
:mod:`.bench_command`), each ending with its ``SUBCOMMAND``, a :class:`._subcommand.Subcommand`
record (its name, help, arguments and ``run``) from which :func:`build_parser` makes its
parser; ``_subcommands()`` lists them, so a new subcommand is one module and one list entry.
What they share (exit statuses, signals, the one guarded runner, path checks) is in
:mod:`._common`. With no subcommand the demo runs. Importing this package imports none of
the optional packages: each subcommand imports what it needs when it runs.

exit status: 0 success; 1 a check failed or the job could not be done (disk full, cluster
failure, missing optional package); 2 usage error: bad arguments or input the user must fix
(unknown option, missing or corrupt input file, wrong suffix, type not allowed, missing output
folder), reported on one line without a traceback; 128 + N when stopped by signal N (130 for
Ctrl-C, 143 for SIGTERM), after removing any temporary output.

Examples
--------
>>> from onnx_relu.cli import main
>>> main(["check", "no-such-model.onnx"])  # prints "onnx-relu check: error: ..." on stderr
2
"""

from __future__ import annotations

# Only the standard library and the package's light top level here: the console script and
# ``python -m onnx_relu`` import this module before main() runs, and main() handles Ctrl-C
# from its first line; numpy, the kernel and the subcommands are imported inside it.
import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable

from .._version import __version__
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    complete_standard_output,
    warnings_as_lines,
)
from ._help import HelpFormatter

TYPE_CHECKING = False  # (not typing's: see onnx_relu.io.streams)
if TYPE_CHECKING:
    from ._subcommand import Subcommand

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE"]

# Paragraphs, reflowed to the terminal by ._help.HelpFormatter; the indented lines are examples,
# each "COMMAND  # comment", kept as written.
_MAIN_EXAMPLES = f"""\
examples:
  {PROG}  # the demo: the spec's examples
  {PROG} apply x.npy y.npy  # y = Relu(x), atomically
  {PROG} apply --opset 13 input_0.pb output_0.pb
  {PROG} apply batch/ out/  # every tensor file of batch/
  {PROG} apply --in-place big.npy  # rewrite big.npy itself
  {PROG} apply in.zarr out.zarr --dask  # on a Dask LocalCluster
  {PROG} run model.onnx -i X=x.npy -o out/  # a Relu model
  {PROG} check model.onnx  # judge every Relu node
  {PROG} legalize model.onnx fixed.onnx  # for onnxruntime
  {PROG} bench --quick  # the speed on this machine

exit status: 0 success, 1 failure (a check failed or the job could not be done), 2 usage error
(bad arguments or input files), 128+N stopped by signal N (130: Ctrl-C).
"""


def _subcommands() -> tuple[Subcommand, ...]:
    """The subcommands, in the order ``--help`` lists them (importing their modules)."""
    from . import (
        apply_command,
        bench_command,
        check_command,
        demo_command,
        legalize_command,
        run_command,
    )

    return (
        demo_command.SUBCOMMAND,
        apply_command.SUBCOMMAND,
        run_command.SUBCOMMAND,
        check_command.SUBCOMMAND,
        legalize_command.SUBCOMMAND,
        bench_command.SUBCOMMAND,
    )


class _PrintVersion(argparse.Action):
    """``--version``: "onnx-relu VERSION" on standard output, then exit 0. (argparse's own
    version action formats the line for the terminal's width, and finding the width imports
    shutil, which costs ``onnx-relu --version`` a tenth of its time.)"""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show program's version number and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.exit(_print_version(parser.prog))


def _print_version(prog: str) -> int:
    """ "PROG VERSION" on standard output: status 0 once written, 1 (one line) if it cannot be."""
    from ._common import broken_pipe, fail

    if sys.stdout is None:
        return fail(prog, "standard output is closed: the version cannot be written", EXIT_FAILED)
    try:
        sys.stdout.write(f"{prog} {__version__}\n")
    except BrokenPipeError:
        return broken_pipe(prog)
    except (OSError, ValueError) as exc:  # unbuffered (PYTHONUNBUFFERED=1): a full disk, a pipe
        return fail(prog, f"cannot write standard output: {exc}", EXIT_FAILED)
    return _flushed(EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``onnx-relu`` command, with every subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="The ONNX Relu operator, exact for every type of every version. With no"
        " command: run the specification's nine examples and check every result.",
        epilog=_MAIN_EXAMPLES,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action=_PrintVersion)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for subcommand in _subcommands():
        subcommand.add_to(commands)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; arguments a subcommand does not take (``apply --fast``, one too many)
    are reported by that subcommand's parser, with its usage line, rather than the command's
    ("onnx-relu: error: unrecognized arguments")."""
    from ._help import subcommands

    args, extra = parser.parse_known_args(argv)
    if extra:
        own = subcommands(parser).get(getattr(args, "command", None) or "", parser)
        own.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _flushed(status: int) -> int:
    """``status``, once what was printed through ``sys.stdout`` is written; 1 if it cannot be.

    Python would otherwise flush it at exit, fail on a reader that is gone ("Exception
    ignored ... BrokenPipeError", exit 120) or report success with the output cut."""
    from ._common import broken_pipe, fail

    if sys.stdout is None:
        return status
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return broken_pipe(PROG)
    except (OSError, ValueError) as exc:
        with contextlib.suppress(OSError):  # nothing left to flush at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return fail(PROG, f"cannot write standard output: {exc}", EXIT_FAILED) or status
    return status


def _interrupted_during_start_up() -> int:
    """Ctrl-C while the command's modules (numpy and the kernel among them) are imported: one
    line and status 130, as anywhere else; nothing has been written. Nothing is imported here:
    the import that was interrupted may have left a module half made."""
    with contextlib.suppress(AttributeError, OSError, ValueError):  # stderr closed or gone
        sys.stderr.write(f"{PROG}: interrupted by SIGINT during start-up\n")
        sys.stderr.flush()
    return 128 + signal.SIGINT


def main(argv: list[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--version"]:
        # The one answer that needs none of the start-up below (numpy, the kernel and the
        # subcommands: a fifth of the command's time to print its version). Every byte or
        # one error line, as for any command: an unbuffered stdout may take part of a write.
        with complete_standard_output():
            return _print_version(PROG)
    with warnings_as_lines():  # (the kernel's start-up may warn about ONNX_RELU_* variables)
        try:
            # The start-up: numpy, the kernel (which applies the ONNX_RELU_* variables) and
            # the command's modules, most of the command's start-up time.
            from ..io.streams import hold_closed_standard_streams

            _subcommands()
        except KeyboardInterrupt:
            return _interrupted_during_start_up()
        hold_closed_standard_streams()  # before any file is opened: see there
        with complete_standard_output():
            return _main(argv)


def _main(argv: list[str]) -> int:
    from . import bench_command, demo_command
    from ._common import broken_pipe, interrupted_outside_work

    try:
        if argv[:1] == ["bench"]:
            return bench_command.run(argv[1:])
        parser = build_parser()
        try:
            args = _parse(parser, argv)
        except SystemExit as exc:  # argparse exits on --help, --version and usage errors
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        handler: Callable[[argparse.Namespace], int] = getattr(args, "handler", demo_command.run)
        return _flushed(handler(args))
    except BrokenPipeError:  # a command that prints without run_guarded (the demo, bench)
        return broken_pipe(f"{PROG} bench" if argv[:1] == ["bench"] else PROG)
    except KeyboardInterrupt:
        # Ctrl-C outside a subcommand's guarded work (run_guarded turns signals into
        # Interrupted there, and removes what it was writing): while parsing, importing the
        # subcommand's dependencies, or anywhere in the benchmark (which writes at its end).
        return interrupted_outside_work(f"{PROG} bench" if argv[:1] == ["bench"] else PROG)
