"""``onnx-relu apply IN OUT``: Relu of a tensor file (.npy, .pb), in place, or of a Zarr store on
Dask (``--dask``)."""

from __future__ import annotations

import argparse

from ..argtypes import integer_at_least_one, positive_number, thread_count
from ..files.formats import TENSOR_FORMATS
from ..files.jobs import DEFAULT_CHUNK_BYTES
from ._common import (
    NOT_WRITTEN,
    PROG,
    run_guarded,
)
from ._subcommand import Subcommand

# Paragraphs, reflowed to the terminal by ._help.HelpFormatter; the indented lines are examples,
# each "COMMAND  # comment", kept as written.
_APPLY_USAGE = """\
%(prog)s [options] IN OUT
       %(prog)s [options] IN... OUTDIR
       %(prog)s [options] DIR OUTDIR
       %(prog)s --in-place [options] IN"""

_APPLY_DESCRIPTION = f"""\
Apply Relu to the tensor in IN and write it to OUT. IN and OUT are .npy (NumPy) or .pb (ONNX
TensorProto) files, in any combination; .npy is processed in windows of
{DEFAULT_CHUNK_BYTES >> 20} MiB, so files larger than memory work. With --dask, IN and OUT are
Zarr stores processed on a Dask cluster.

Many files in one process: with several INs and a folder OUTDIR last (as cp takes them), each
IN is written to OUTDIR under its own name; with a folder DIR as IN, every .npy and .pb file
directly in DIR is. OUTDIR is made if missing. Each file is written atomically; a file that
fails gets one line and the others go on; a summary line ends the job on standard error, and
the exit status is the worst file's.
"""

_APPLY_EXAMPLES = f"""\
examples:
  {PROG} apply x.npy y.npy  # in windows: flat memory
  {PROG} apply x.npy y.pb  # any mix of .npy and .pb
  {PROG} apply --opset 13 input_0.pb output_0.pb
  {PROG} apply batch/ out/  # each tensor file of batch/
  {PROG} apply a.npy b.npy c.pb out/  # three files into out/
  {PROG} apply --in-place big.npy  # rewrite big.npy itself
  {PROG} apply in.zarr out.zarr --dask  # on a Dask LocalCluster
  {PROG} apply in.zarr out.zarr --dask --scheduler tcp://10.0.0.5:8786
  {PROG} apply - - < x.npy > y.npy  # standard input to output
  producer | {PROG} apply --format pb - y.npy  # .pb from a pipe

'-' is standard input (IN) or standard output (OUT). Standard input's format is told from its
data (.npy starts with a magic string) or given by --format; standard output gets --format or
the input's format. .npy to .npy streams in windows, '-' included; .pb is held in memory whole.
A FIFO as IN is read as a stream once a writer opens it (refused after 1 s without one); a FIFO
or a character device (/dev/null) as OUT is written through, never replaced; other devices are
refused. A reader of standard output that goes away (| head) ends it quietly: status 141.

OUT is written to a temporary file next to it and renamed when complete: an interrupted or
failed run leaves OUT as it was and never changes IN. --in-place is not atomic, but Relu is
idempotent: run the same command again to finish an interrupted in-place rewrite.
"""

_IN_PLACE_AFTERMATH = (
    "IN may be partly rewritten; run the same command again to finish it (Relu is idempotent)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``apply`` subcommand's arguments to its ``parser``."""
    parser.add_argument(
        "paths",
        metavar="IN",
        nargs="+",
        help="the input(s), then the output: IN OUT, IN... OUTDIR, DIR OUTDIR, or one IN with"
        " --in-place; tensor files (.npy, .pb), Zarr stores with --dask, '-' for standard"
        " input or output",
    )
    parser.add_argument(
        "--format",
        choices=sorted(TENSOR_FORMATS.values()),
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


def _apply(args: argparse.Namespace) -> int:
    from ._apply_one import apply_one, check_options

    check_options(args)
    source, *rest = args.paths
    return apply_one(args, source, rest[0] if rest else None)


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then apply Relu; see :func:`._common.run_guarded` for the statuses.
    Many files (:func:`._many.is_many`) are done by :func:`._many.run_many`."""
    from ._many import is_many, run_many

    if is_many(args):
        return run_many(args)
    aftermath = _IN_PLACE_AFTERMATH if args.in_place else None
    return run_guarded(
        f"{PROG} apply",
        lambda: _apply(args),
        after_interrupt=aftermath or NOT_WRITTEN,
        after_failure=f"; {aftermath or 'OUT left unchanged'}",
        job="the Dask job" if args.dask else None,
    )


SUBCOMMAND = Subcommand(
    "apply",
    help="apply Relu to a tensor file (.npy, .pb) or a Zarr store (--dask)",
    description=_APPLY_DESCRIPTION,
    epilog=_APPLY_EXAMPLES,
    usage=_APPLY_USAGE,
    run=run,
    arguments=add_arguments,
)
