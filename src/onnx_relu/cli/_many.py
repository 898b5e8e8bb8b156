"""``onnx-relu apply`` on many files in one process: ``apply A.npy B.pb ... OUTDIR`` (as cp takes
them) and ``apply DIR OUTDIR`` (every tensor file directly in DIR).

A layer over the single-file job (:func:`onnx_relu.files.plan.plan_apply`, through
:func:`._apply_one.apply_one`): every pair (IN, OUTDIR/name of IN) is found and checked as a whole
first (no two INs with one name, OUTDIR not DIR, OUTDIR a folder that can be made), then each
file is done on its own, atomically, as ``apply IN OUT`` would do it. A file that fails is
reported in one line and the others go on; a summary line ends the job on standard error, and
the exit status is the worst file's (2 above 1 above 0). A signal stops the job after the file
being written is removed (the files done before it stay, each complete).
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable

from .._text import printable
from ..files.formats import TENSOR_FORMATS, is_zarr_name
from ._common import EXIT_OK, PROG, USER_ERRORS, UsageError, note, run_guarded

#: The command's name in messages.
_PROG = f"{PROG} apply"


def is_many(args: argparse.Namespace) -> bool:
    """Whether ``apply``'s paths name a job of many files: more than two paths; or, of two, a
    folder as IN or as OUT (an existing one, or a name ending in "/"). Two paths both named
    like tensor files (``x.npy y.pb``) are one file to one file without a look at the file
    system here: the single job classifies each path once (a folder named so is refused
    there), and a Zarr store (``--dask``, or a ``*.zarr`` IN without it) is one job too."""
    paths: list[str] = args.paths
    if len(paths) > 2:
        return True
    if len(paths) < 2 or args.dask or args.in_place or "-" in paths:
        return False
    source, target = paths
    if target.endswith(("/", os.sep)):
        return True
    if all(_tensor_name(path) for path in paths) or is_zarr_name(source):
        return False
    return os.path.isdir(source) or os.path.isdir(target)


def _tensor_name(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in TENSOR_FORMATS


def plan_pairs(args: argparse.Namespace) -> tuple[list[tuple[str, str]], str, int]:
    """The (IN, OUT) pairs of a job of many files, the output folder and how many files of a
    folder IN were left out (not tensor files); every refusal is a :class:`UsageError`."""
    *sources, target = args.paths
    if args.dask:
        raise UsageError(
            "--dask takes one Zarr store IN and one OUT; run it once per store"
            f" (got {len(args.paths)} paths)"
        )
    if args.in_place:
        raise UsageError("--in-place takes one IN (no OUT); run it once per file")
    if "-" in args.paths:
        raise UsageError("'-' (standard input or output) works with one IN and one OUT only")
    if args.format is not None:
        raise UsageError("--format is the format of '-'; files are told by their suffix")
    skipped = 0
    if len(sources) == 1 and os.path.isdir(sources[0]):
        folder = sources[0]
        names = sorted(os.listdir(folder))
        files = [n for n in names if os.path.isfile(os.path.join(folder, n))]
        tensors = [n for n in files if _tensor_name(n)]
        skipped = len(files) - len(tensors)
        # A FIFO, device or socket named like a tensor file is not read (it may never end),
        # and is named, never passed over in silence.
        special = [
            n
            for n in names
            if _tensor_name(n) and n not in files and not os.path.isdir(os.path.join(folder, n))
        ]
        if special:
            names_text = ", ".join(repr(n) for n in special[:3])
            more = f" and {len(special) - 3} more" if len(special) > 3 else ""
            raise UsageError(
                f"IN folder {folder!r} holds {names_text}{more}, named like tensor files but"
                " not regular files (a FIFO, device, socket or broken link): move them out, or"
                " name the tensor files to process; nothing was written"
            )
        if not tensors:
            raise UsageError(
                f"IN folder {folder!r} holds no tensor file (*.npy, *.pb) directly in it"
            )
        if _same_file(folder, target):
            raise UsageError(
                f"OUTDIR {target!r} is the folder IN: give another folder, or rewrite"
                " each file with --in-place"
            )
        sources = [os.path.join(folder, name) for name in tensors]
    else:
        folders = [s for s in sources if os.path.isdir(s)]
        if folders:
            raise UsageError(
                f"IN {folders[0]!r} is a folder: give a folder as the only IN"
                f" ({PROG} apply DIR OUTDIR) or tensor files"
            )
    if os.path.exists(target) and not os.path.isdir(target):
        raise UsageError(
            f"OUTDIR {target!r} is not a folder: with {len(sources)} IN file(s) the"
            " last path is the folder they are written to"
        )
    from ..io.endpoint import Endpoint

    Endpoint.of(target, "OUTDIR").require_creatable_folder()
    pairs = []
    seen: dict[str, str] = {}
    for source in sources:
        name = os.path.basename(source.rstrip("/" + os.sep))
        if name in seen:
            raise UsageError(
                f"IN {seen[name]!r} and {source!r} would both be written to"
                f" {os.path.join(target, name)!r}; nothing was written"
            )
        seen[name] = source
        destination = os.path.join(target, name)
        if _same_file(source, destination):
            raise UsageError(
                f"IN {source!r} would be written onto itself ({destination!r}): give another"
                " OUTDIR, or rewrite it with --in-place; nothing was written"
            )
        pairs.append((source, destination))
    return pairs, target, skipped


def _same_file(one: str, other: str) -> bool:
    """Whether both paths exist and name one file (or folder)."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


def _named(source: str, work: Callable[[], int]) -> int:
    """``work()``; a user's error whose message does not name ``source`` (a type the Relu
    version does not allow) is said with the file's name first, as a UsageError."""
    try:
        return work()
    except USER_ERRORS as exc:
        if source in str(exc) or repr(source) in str(exc):
            raise
        raise UsageError(f"{source!r}: {exc}") from None


def run_many(args: argparse.Namespace) -> int:
    """Apply Relu to every (IN, OUTDIR/name) pair; the worst file's status."""
    from ._apply_one import apply_one, check_options

    def work() -> int:
        check_options(args)
        pairs, target, skipped = plan_pairs(args)
        if any(path.lower().endswith(".pb") for pair in pairs for path in pair):
            from .._extras import require_modules

            require_modules("a .pb tensor file", "onnx")  # once, not once per file
        os.makedirs(target, exist_ok=True)
        counts = {"written": 0, "failed": 0}
        worst = EXIT_OK
        for source, destination in pairs:
            status = run_guarded(
                _PROG,
                functools.partial(
                    _named, source, functools.partial(apply_one, args, source, destination)
                ),
                after_interrupt=f"{printable(destination)} was not written and"
                f" {printable(source)} is unchanged; the files before it are complete",
                after_failure=f"; {printable(destination)} left unchanged",
            )
            if status >= 128:  # stopped by a signal: said by run_guarded
                return status
            counts["written" if status == EXIT_OK else "failed"] += 1
            worst = max(worst, status)
        others = f"; {skipped} other file(s) of the folder left out" if skipped else ""
        note(
            f"{_PROG}: {len(pairs)} file(s): {counts['written']} written to"
            f" {printable(target)}, {counts['failed']} failed{others}"
        )
        return worst

    return run_guarded(_PROG, work, after_interrupt="the files written so far are complete")
