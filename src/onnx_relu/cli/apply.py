"""``onnx-relu apply IN OUT``: Relu of a tensor file (.npy, .pb), in place, or of a Zarr store on
Dask (``--dask``)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Iterator

from ..argtypes import integer_at_least_one, positive_number, thread_count
from ..errors import UnsupportedFileFormatError
from ._common import (
    EXIT_OK,
    NOT_WRITTEN,
    PROG,
    UsageError,
    add_subcommand,
    check_readable,
    check_writable_destination,
    run_guarded,
    thread_limit,
)

_APPLY_EXAMPLES = f"""\
examples:
  {PROG} apply x.npy y.npy                     .npy in chunks: memory stays flat
  {PROG} apply x.npy y.pb                      any mix of .npy and .pb (ONNX TensorProto)
  {PROG} apply --opset 13 input_0.pb output_0.pb
  {PROG} apply --in-place big.npy
  {PROG} apply in.zarr out.zarr --dask --scheduler tcp://10.0.0.5:8786
  {PROG} apply - - < x.npy > y.npy             standard input to standard output
  producer | {PROG} apply --format pb - y.npy  a TensorProto read from a pipe

'-' is standard input (IN) or standard output (OUT). Standard input's format is told from its
data (.npy starts with a magic string) or given by --format; standard output gets --format or
the input's format. .npy to .npy streams in windows, '-' included; .pb is held in memory whole.
A FIFO as IN is read as a stream once a writer opens it (refused after 1 s without one); a FIFO
or a character device (/dev/null) as OUT is written through, never replaced; other devices are
refused. A reader that goes away is exit 1 with one line.

OUT is written to a temporary file next to it and renamed when complete: an interrupted or
failed run leaves OUT as it was and never changes IN. --in-place is not atomic, but Relu is
idempotent: run the same command again to finish an interrupted in-place rewrite.
"""

_IN_PLACE_AFTERMATH = (
    "IN may be partly rewritten; run the same command again to finish it (Relu is idempotent)"
)


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``apply`` subcommand to ``commands``."""
    parser = add_subcommand(
        commands,
        "apply",
        run,
        help="apply Relu to a tensor file (.npy, .pb) or a Zarr store (--dask)",
        description="Apply Relu to the tensor in IN and write it to OUT. IN and OUT are .npy\n"
        "(NumPy) or .pb (ONNX TensorProto) files, in any combination; .npy is processed in\n"
        "windows of 8 MiB, so files larger than memory work. With --dask, IN and\n"
        "OUT are Zarr stores processed on a Dask cluster.",
        epilog=_APPLY_EXAMPLES,
    )
    parser.add_argument(
        "input", metavar="IN", help="the input tensor file or Zarr store; - for standard input"
    )
    parser.add_argument(
        "output",
        metavar="OUT",
        nargs="?",
        help="where to write the result; - for standard output (omit with --in-place)",
    )
    parser.add_argument(
        "--format",
        choices=STREAM_FORMATS,
        help="the tensor format of '-' (standard input or output): npy or pb (default: "
        "standard input's from its data, standard output's that of IN)",
    )
    parser.add_argument(
        "--opset",
        type=integer_at_least_one,
        metavar="N",
        help="ai.onnx opset of the model: selects the Relu version and so the allowed types "
        "(default: the latest)",
    )
    parser.add_argument(
        "--threads", type=thread_count, metavar="N", help="threads for the Relu kernel"
    )
    parser.add_argument(
        "--in-place", action="store_true", help="rewrite IN itself (.npy only; not atomic)"
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar (none is shown off a terminal)"
    )
    parser.add_argument(
        "--dask", action="store_true", help="IN and OUT are Zarr stores; compute on Dask"
    )
    parser.add_argument(
        "--stall-timeout",
        type=positive_number("seconds"),
        metavar="SECONDS",
        help="with --dask: give up when no chunk completes for this long, e.g. because the "
        "workers are paused for lack of memory (default: 300)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address of a running dask.distributed scheduler, e.g. tcp://10.0.0.5:8786 "
        "(with --dask; default: start a LocalCluster on this machine)",
    )


#: The formats ``--format`` names for '-' (standard input and output).
STREAM_FORMATS = ("npy", "pb")
STDIO = "-"


def _uses_stdio(args: argparse.Namespace) -> bool:
    return STDIO in (args.input, args.output)


def _validate_stdio(args: argparse.Namespace) -> None:
    """The checks of a run that reads standard input or writes standard output ('-')."""
    from ..files.tensors import tensor_format

    if args.scheduler and not args.dask:
        raise UsageError("--scheduler needs --dask (it is the Dask scheduler's address)")
    if args.in_place:
        raise UsageError("--in-place rewrites a .npy file; it cannot rewrite standard input ('-')")
    if args.dask:
        raise UsageError("--dask works on Zarr stores, not on standard input or output ('-')")
    if args.output is None:
        raise UsageError("OUT is required: a file name, or - for standard output")
    if args.input != STDIO:
        tensor_format(args.input)  # UnsupportedFileFormatError names the allowed suffixes
        check_readable(args.input, "IN")
    if args.output != STDIO:
        tensor_format(args.output)
        check_writable_destination(args.output)
    elif _is_terminal(1):
        raise UsageError(
            "not writing binary tensor data to a terminal: redirect standard output (> y.npy, |)"
            " or name an OUT file"
        )


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False  # closed: opening it says so


def _relu_tensor(args: argparse.Namespace, progress: object = None) -> None:
    """The one job of every apply without --dask or --in-place: IN and OUT opened once each,
    '-' among the paths."""
    from ..files.apply import relu_tensor

    with thread_limit(args.threads):
        relu_tensor(
            args.input,
            args.output,
            opset=args.opset,
            progress=progress,  # type: ignore[arg-type]
            dash_is_stdio=True,
            src_format=args.format if args.input == STDIO else None,
            dst_format=args.format if args.output == STDIO else None,
        )


def _is_zarr_name(path: str) -> bool:
    return path.rstrip("/\\").lower().endswith(".zarr")


def _validate_dask(args: argparse.Namespace) -> None:
    if args.in_place:
        raise UsageError("--in-place works on .npy files, not with --dask")
    if args.threads is not None:
        raise UsageError("--threads does not apply with --dask: size the Dask cluster instead")
    if args.output is None:
        raise UsageError("OUT is required: apply IN.zarr OUT.zarr --dask")
    for role, path in (("IN", args.input), ("OUT", args.output)):
        if not _is_zarr_name(path):
            raise UsageError(f"with --dask, {role} must be a Zarr store named *.zarr, got {path!r}")
    check_readable(args.input, "IN", folder=True)
    check_writable_destination(args.output, store=True)
    from ..files._atomic import store_replacement_refusal

    refusal = store_replacement_refusal(args.output)
    if refusal is not None:
        raise UsageError(f"OUT {refusal}")


def _validate(args: argparse.Namespace) -> None:
    """Everything that can be checked before work starts; raises UsageError."""
    from ..files.apply import check_file_arguments

    if args.scheduler and not args.dask:
        raise UsageError("--scheduler needs --dask (it is the Dask scheduler's address)")
    if args.format is not None:
        raise UsageError(
            f"--format {args.format} is the format of '-' (standard input or output); files are"
            " told by their suffix (.npy, .pb)"
        )
    if args.stall_timeout is not None and not args.dask:
        raise UsageError("--stall-timeout needs --dask (it bounds a Dask job's waits)")
    if args.dask:
        _validate_dask(args)
        return
    if _is_zarr_name(args.input) or (args.output and _is_zarr_name(args.output)):
        raise UsageError("Zarr stores are processed on Dask: add --dask")
    # relu_file's own rules (formats by suffix, --in-place on .npy only, OUT unless in place),
    # in the command's words; UnsupportedFileFormatError passes as it is (also exit 2).
    try:
        check_file_arguments(
            args.input,
            args.output,
            in_place=args.in_place,
            src_name="IN",
            dst_name="OUT",
            in_place_name="--in-place",
        )
    except UnsupportedFileFormatError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_readable(args.input, "IN")
    if args.in_place:
        if not os.access(args.input, os.W_OK):
            raise UsageError(f"--in-place: IN {args.input!r} is not writable (permission denied)")
        return
    check_writable_destination(args.output)


@contextlib.contextmanager
def _distributed_logs_quiet() -> Iterator[None]:
    """distributed logs a lost scheduler or worker as tracebacks of its own (39 lines before
    the command's one-line error), through handlers of several loggers; the command reports
    every failure itself, so logging is off in this process while the job runs."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def _apply(args: argparse.Namespace) -> int:
    from ._progress_bar import progress_bar

    if _uses_stdio(args):
        _validate_stdio(args)
        _relu_tensor(args)
        return EXIT_OK
    _validate(args)
    description = f"relu {os.path.basename(args.input.rstrip('/'))}"
    with progress_bar(description, enabled=not args.quiet) as progress:
        if args.dask:
            from ..files.zarr_dask import STALL_TIMEOUT_S, relu_zarr

            with _distributed_logs_quiet():
                relu_zarr(
                    args.input,
                    args.output,
                    opset=args.opset,
                    scheduler=args.scheduler,
                    progress=progress,
                    stall_timeout=args.stall_timeout or STALL_TIMEOUT_S,
                )
            return EXIT_OK
        if args.in_place:
            from ..files import relu_file

            with thread_limit(args.threads):
                relu_file(args.input, opset=args.opset, in_place=True, progress=progress)
        else:
            _relu_tensor(args, progress)
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then apply Relu; see :func:`._common.run_guarded` for the statuses."""
    aftermath = _IN_PLACE_AFTERMATH if args.in_place else None
    return run_guarded(
        f"{PROG} apply",
        lambda: _apply(args),
        after_interrupt=aftermath or NOT_WRITTEN,
        after_failure=f"; {aftermath or 'OUT left unchanged'}",
        job="the Dask job" if args.dask else None,
    )
