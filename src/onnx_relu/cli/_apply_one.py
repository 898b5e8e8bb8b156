"""One IN and one OUT of ``onnx-relu apply``: the options' own combinations checked, and the
job run; what :mod:`.apply_command` (one pair) and :mod:`._many` (many files) both call."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

from ._common import EXIT_OK, UsageError, thread_limit

__all__ = ["check_options", "apply_one"]

#: What the command calls the plan's options (:data:`onnx_relu.files.plan.OPTION_NAMES`).
_OPTION_NAMES = {"dst": "OUT", "in_place": "--in-place", "dask": "--dask"}


def check_options(args: argparse.Namespace) -> None:
    """The combinations of the command's own options; everything about IN and OUT is checked
    by the plan (:func:`onnx_relu.files.plan.plan_apply`)."""
    from ..io.endpoint import STDIO

    if args.scheduler and not args.dask:
        raise UsageError("--scheduler needs --dask (it is the Dask scheduler's address)")
    if args.format is not None and STDIO not in args.paths:
        raise UsageError(
            f"--format {args.format} is the format of '-' (standard input or output); files are"
            " told by their suffix (.npy, .pb)"
        )
    if args.stall_timeout is not None and not args.dask:
        raise UsageError("--stall-timeout needs --dask (it bounds a Dask job's waits)")
    if args.dask and args.threads is not None:
        raise UsageError("--threads does not apply with --dask: size the Dask cluster instead")


@contextlib.contextmanager
def distributed_logs_quiet() -> Iterator[None]:
    """distributed logs a lost scheduler or worker as tracebacks of its own (39 lines before
    the command's one-line error), through handlers of several loggers; the command reports
    every failure itself, so logging is off in this process while the job runs."""
    import logging  # (here: the command line's start-up does without it)

    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def apply_one(args: argparse.Namespace, source: str, destination: str | None) -> int:
    """Relu from ``source`` to ``destination`` (None: in place, or missing) with the options of
    ``args``: the job of ``apply IN OUT``; raises as :func:`onnx_relu.files.plan.plan_apply`."""
    from ..errors import FileArgumentError
    from ..files.formats import is_zarr_name
    from ..files.plan import OptionError, plan_apply
    from ..io.endpoint import STDIO, Endpoint
    from ._progress_bar import progress_bar

    # The command line's labels, its '-' and its early checks are said here, on the endpoints
    # it hands the plan; the plan's refusals of options are worded with the command's names.
    source_end = Endpoint.of(source, "IN", stdio="input", checked=True)
    destination_end = (
        None
        if destination is None
        else Endpoint.of(destination, "OUT", stdio="output", checked=True)
    )
    stdio = STDIO in (source, destination)
    if not args.dask and not stdio and any(is_zarr_name(p) for p in (source, destination or "")):
        raise FileArgumentError("Zarr stores are processed on Dask: add --dask")
    with contextlib.ExitStack() as stack:
        try:
            plan = stack.enter_context(
                plan_apply(
                    source_end,
                    destination_end,
                    in_place=args.in_place,
                    dask=args.dask,
                    stream_format=args.format,
                    opset=args.opset,
                    scheduler=args.scheduler,
                    stall_timeout=args.stall_timeout,
                )
            )
        except OptionError as exc:
            raise FileArgumentError(exc.worded(_OPTION_NAMES)) from None
        progress = None
        if not plan.stdio:  # (no progress bar for a pipe's job)
            description = f"relu {os.path.basename(source.rstrip('/'))}"
            progress = stack.enter_context(progress_bar(description, enabled=not args.quiet))
        stack.enter_context(distributed_logs_quiet() if args.dask else thread_limit(args.threads))
        plan.run(progress)
    return EXIT_OK
