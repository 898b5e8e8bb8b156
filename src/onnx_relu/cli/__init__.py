"""The ``onnx-relu`` command (also ``python -m onnx_relu``).

One function per subcommand adds its parser (``_add_<name>_command``) and one runs it
(``_run_<name>``, set as the parser's ``handler``); :data:`_COMMANDS` lists the adders, so a new
subcommand is two functions and one list entry. With no subcommand the demo runs.

Exit status: 0 success; 1 a check failed or the job could not be done (disk full, cluster
failure, missing optional package); 2 usage error: bad arguments or input the user must fix
(unknown option, missing or corrupt input file, wrong suffix, type not allowed, missing output
folder), reported on one line without a traceback; 128 + N when stopped by signal N (130 for
Ctrl-C, 143 for SIGTERM), after removing any temporary output.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

from . import __version__
from .errors import InvalidTensorFileError, UnsupportedFileFormatError, UnsupportedTypeError

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

PROG = "onnx-relu"

_MAIN_EXAMPLES = f"""\
examples:
  {PROG}                                  run the specification's nine examples (the demo)
  {PROG} apply x.npy y.npy                y = Relu(x), written atomically
  {PROG} apply --opset 13 input_0.pb output_0.pb
  {PROG} apply --in-place big.npy         rewrite big.npy itself, chunk by chunk
  {PROG} apply in.zarr out.zarr --dask    on a Dask LocalCluster (or --scheduler ADDRESS)
  {PROG} run model.onnx -i X=x.npy -o out/   run a Relu model on tensor files
  {PROG} check model.onnx                 judge every Relu node of any model (exit 1: findings)
  {PROG} legalize model.onnx fixed.onnx   make onnxruntime run every Relu (bfloat16, int16...)
  {PROG} bench --skip-largest             throughput against the copy ceiling and the peers

exit status: 0 success, 1 failure (a check failed or the job could not be done),
2 usage error (bad arguments or input files), 128+N stopped by signal N (130: Ctrl-C).
"""

_APPLY_EXAMPLES = f"""\
examples:
  {PROG} apply x.npy y.npy                     .npy in chunks: memory stays flat
  {PROG} apply x.npy y.pb                      any mix of .npy and .pb (ONNX TensorProto)
  {PROG} apply --opset 13 input_0.pb output_0.pb
  {PROG} apply --in-place big.npy
  {PROG} apply in.zarr out.zarr --dask --scheduler tcp://10.0.0.5:8786

OUT is written to a temporary file next to it and renamed when complete: an interrupted or
failed run leaves OUT as it was and never changes IN. --in-place is not atomic, but Relu is
idempotent: run the same command again to finish an interrupted in-place rewrite.
"""


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


def _fail(prog: str, message: object, status: int) -> int:
    text = " ".join(str(message).split())  # one line, whatever the exception's text
    print(f"{prog}: error: {text}", file=sys.stderr)
    return status


def _os_error_text(exc: OSError) -> str:
    if exc.strerror and exc.filename:
        return f"{exc.strerror}: {exc.filename!r}"
    return exc.strerror or str(exc) or type(exc).__name__


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


# --- signals -------------------------------------------------------------------------------

_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _signals_raise_interrupted() -> Iterator[None]:
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


# --- demo ----------------------------------------------------------------------------------


def _add_demo_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo",
        help="run the specification's nine examples and check every result (the default)",
        description="Run the Relu specification's nine examples through onnx-relu and check "
        "that every result matches exactly. Exit status 1 if any does not.",
    )
    parser.set_defaults(handler=_run_demo)


def _run_demo(_args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo()


# --- apply ---------------------------------------------------------------------------------


def _add_apply_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "apply",
        help="apply Relu to a tensor file (.npy, .pb) or a Zarr store (--dask)",
        description="Apply Relu to the tensor in IN and write it to OUT. IN and OUT are .npy\n"
        "(NumPy) or .pb (ONNX TensorProto) files, in any combination; .npy is processed in\n"
        "chunks through a memory map, so files larger than memory work. With --dask, IN and\n"
        "OUT are Zarr stores processed on a Dask cluster.",
        epilog=_APPLY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="IN", help="the input tensor file or Zarr store")
    parser.add_argument(
        "output", metavar="OUT", nargs="?", help="where to write the result (omit with --in-place)"
    )
    parser.add_argument(
        "--opset",
        type=_positive_int,
        metavar="N",
        help="ai.onnx opset of the model: selects the Relu version and so the allowed types "
        "(default: the latest)",
    )
    parser.add_argument(
        "--threads", type=_positive_int, metavar="N", help="threads for the Relu kernel"
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
        "--scheduler",
        metavar="ADDRESS",
        help="address of a running dask.distributed scheduler, e.g. tcp://10.0.0.5:8786 "
        "(with --dask; default: start a LocalCluster on this machine)",
    )
    parser.set_defaults(handler=_run_apply)


def _check_readable(path: str, what: str, *, folder: bool = False) -> None:
    if not os.path.exists(path):
        raise UsageError(f"{what} {path!r} does not exist")
    if folder and not os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is not a folder (a Zarr store is a folder)")
    if not folder and os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is a folder, not a tensor file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{what} {path!r} is not readable (permission denied)")


def _check_writable_destination(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"cannot write OUT {path!r}: {folder!r} is a file, not a folder")
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write OUT {path!r}: the folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write OUT {path!r}: the folder {folder!r} is not writable")


def _is_zarr_name(path: str) -> bool:
    return path.rstrip("/\\").lower().endswith(".zarr")


def _validate_apply(args: argparse.Namespace) -> None:
    """Everything that can be checked before work starts; raises UsageError."""
    from .tensor_files import tensor_format

    if args.scheduler and not args.dask:
        raise UsageError("--scheduler needs --dask (it is the Dask scheduler's address)")
    if args.dask:
        if args.in_place:
            raise UsageError("--in-place works on .npy files, not with --dask")
        if args.threads is not None:
            raise UsageError("--threads does not apply with --dask: size the Dask cluster instead")
        if args.output is None:
            raise UsageError("OUT is required: apply IN.zarr OUT.zarr --dask")
        for role, path in (("IN", args.input), ("OUT", args.output)):
            if not _is_zarr_name(path):
                raise UsageError(
                    f"with --dask, {role} must be a Zarr store named *.zarr, got {path!r}"
                )
        _check_readable(args.input, "IN", folder=True)
        _check_writable_destination(args.output)
        from ._atomic import is_zarr_store

        if os.path.lexists(args.output) and not (
            os.path.isdir(args.output) and is_zarr_store(args.output)
        ):
            raise UsageError(
                f"OUT {args.output!r} exists and is not a Zarr store; not replacing it"
            )
        return
    if _is_zarr_name(args.input) or (args.output and _is_zarr_name(args.output)):
        raise UsageError("Zarr stores are processed on Dask: add --dask")
    kind = tensor_format(args.input)
    if args.in_place:
        if args.output is not None:
            raise UsageError("--in-place rewrites IN itself: give no OUT")
        if kind != "npy":
            raise UsageError(
                f"--in-place needs a .npy file; {args.input!r} is .pb, whose encoding cannot be"
                " rewritten in place: give an OUT file instead"
            )
        _check_readable(args.input, "IN")
        if not os.access(args.input, os.W_OK):
            raise UsageError(f"--in-place: IN {args.input!r} is not writable (permission denied)")
        return
    if args.output is None:
        raise UsageError("OUT is required (or --in-place to rewrite IN)")
    tensor_format(args.output)
    _check_readable(args.input, "IN")
    if os.path.isdir(args.output):
        raise UsageError(f"OUT {args.output!r} is a folder, not a file name")
    _check_writable_destination(args.output)


def _thread_limit(threads: int | None) -> contextlib.AbstractContextManager:
    # `onnx_relu.num_threads(n)`, a context manager limiting the kernel's threads, comes with the
    # performance work. Until it is there, --threads is validated, accepted and has no effect
    # (the kernel is single-threaded); the lead wires it when both are merged.
    import onnx_relu

    limiter: Callable[[int], contextlib.AbstractContextManager] | None = getattr(
        onnx_relu, "num_threads", None
    )
    if threads is None or limiter is None:
        return contextlib.nullcontext()
    return limiter(threads)


def _apply(args: argparse.Namespace) -> None:
    from ._progress import progress_bar

    description = f"relu {os.path.basename(args.input.rstrip('/'))}"
    with progress_bar(description, enabled=not args.quiet) as progress:
        if args.dask:
            from .dask_zarr import relu_zarr

            relu_zarr(
                args.input,
                args.output,
                opset=args.opset,
                scheduler=args.scheduler,
                progress=progress,
            )
            return
        from .apply_files import relu_file

        with _thread_limit(args.threads):
            relu_file(
                args.input,
                args.output,
                opset=args.opset,
                in_place=args.in_place,
                progress=progress,
            )


_IN_PLACE_AFTERMATH = (
    "IN may be partly rewritten; run the same command again to finish it (Relu is idempotent)"
)

_NOT_WRITTEN = "OUT was not written and IN is unchanged"

#: Errors in what the user gave (exit status 2).
_USER_ERRORS = (
    UsageError,
    UnsupportedTypeError,
    UnsupportedFileFormatError,
    InvalidTensorFileError,
)


def _run_apply(args: argparse.Namespace) -> int:
    prog = f"{PROG} apply"
    try:
        with _signals_raise_interrupted():
            _validate_apply(args)
            _apply(args)
    except Interrupted as stop:
        aftermath = _IN_PLACE_AFTERMATH if args.in_place else _NOT_WRITTEN
        print(f"{prog}: interrupted by {stop.name}; {aftermath}", file=sys.stderr)
        return 128 + stop.signum
    except _USER_ERRORS as exc:
        return _fail(prog, exc, EXIT_USAGE)
    except (OSError, MemoryError, ImportError) as exc:
        text = _os_error_text(exc) if isinstance(exc, OSError) else (str(exc) or type(exc).__name__)
        aftermath = _IN_PLACE_AFTERMATH if args.in_place else "OUT left unchanged"
        return _fail(prog, f"{text}; {aftermath}", EXIT_FAILED)
    except Exception as exc:
        if not args.dask:
            raise  # a bug in onnx-relu: keep the traceback
        # A Dask job fails in many ways (a worker killed, a store error on a worker...).
        message = f"the Dask job failed ({type(exc).__name__}: {exc}); OUT left unchanged"
        return _fail(prog, message, EXIT_FAILED)
    return EXIT_OK


# --- run -----------------------------------------------------------------------------------

_RUN_EXAMPLES = f"""\
examples:
  {PROG} run model.onnx -i X=x.npy -o results/          writes results/<output name>.npy
  {PROG} run model.onnx -i x.npy -o results/            a model with one input needs no NAME
  {PROG} run model.onnx -i a=a.pb -i b=b.npy -o out/ --format pb

The model must consist of ai.onnx Relu nodes only (see `{PROG} check` for any model). Inputs
are .npy or .pb files; types must be the declared ones and the ones the model's opset allows.
Each output is written atomically; nothing is written unless the whole model ran.
"""

#: Characters allowed as they are in an output file name; others become "_".
_SAFE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _file_name_for(value_name: str) -> str:
    name = "".join(c if c in _SAFE_NAME_CHARS else "_" for c in value_name).lstrip(".")
    return name or "output"


def _add_run_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run",
        help="run a model made of Relu nodes on tensor files",
        description="Run an ONNX model made of Relu nodes through the onnx-relu backend and "
        "write each graph output to DIR as <name>.npy (or .pb).",
        epilog=_RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", metavar="MODEL.onnx", help="the model file")
    parser.add_argument(
        "-i", "--input", action="append", default=[], metavar="NAME=FILE", dest="inputs",
        help="a graph input and the .npy/.pb file holding it (repeat for each input; "
        "NAME= may be left out when the model has one input)",
    )
    parser.add_argument("-o", "--output-dir", required=True, metavar="DIR",
                        help="folder for the outputs (created if missing)")
    parser.add_argument("--format", choices=("npy", "pb"), default="npy",
                        help="file format of the outputs (default: npy)")
    parser.add_argument("--threads", type=_positive_int, metavar="N",
                        help="threads for the Relu kernel")
    parser.set_defaults(handler=_run_run)


def _parse_run_inputs(entries: list[str], required: list[str]) -> dict[str, str]:
    files: dict[str, str] = {}
    for entry in entries:
        name, sep, path = entry.partition("=")
        if not sep:
            if len(required) != 1 or len(entries) != 1:
                raise UsageError(
                    f"-i {entry!r}: write NAME=FILE (the model's inputs are {required})"
                )
            name, path = required[0], entry
        if not name or not path:
            raise UsageError(f"-i {entry!r}: write NAME=FILE")
        if name in files:
            raise UsageError(f"input {name!r} is given twice")
        files[name] = path
    return files


def _check_output_folder(path: str) -> None:
    """-o DIR can be created, or is a writable folder: checked before the model runs."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"-o {path!r} exists and is not a folder")
    # The nearest part of the path that exists must be a folder we may create entries in.
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"-o {path!r}: {existing!r} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"-o {path!r}: the folder {existing!r} is not writable")


def _run_model_files(args: argparse.Namespace) -> list[str]:
    from .backend import prepare
    from .tensor_files import read_tensor, write_tensor

    _check_readable(args.model, "MODEL")
    rep = prepare(args.model)
    required = [graph_input.name for graph_input in rep.required_inputs]
    files = _parse_run_inputs(args.inputs, required)
    for path in files.values():
        _check_readable(path, "input file")
    _check_output_folder(args.output_dir)
    feeds = {name: read_tensor(path) for name, path in files.items()}
    with _thread_limit(args.threads):
        outputs = rep.run(feeds)
    os.makedirs(args.output_dir, exist_ok=True)
    written = []
    used: set[str] = set()
    for name, value in zip(rep.output_names, outputs, strict=True):
        stem = _file_name_for(name)
        while stem in used:  # two output names that map to one file name
            stem += "_"
        used.add(stem)
        path = os.path.join(args.output_dir, f"{stem}.{args.format}")
        write_tensor(path, value, name=name)
        written.append(f"{name} -> {path} ({value.dtype.name}, shape {value.shape})")
    return written


def _model_errors():
    from .errors import InvalidModelError, ModelInputError, UnsupportedOperatorError

    return (InvalidModelError, ModelInputError, UnsupportedOperatorError)


def _run_guarded(prog: str, work: Callable[[], int], *, after_interrupt: str,
                 after_failure: str = "") -> int:
    """Run a model subcommand's ``work``, turning its errors and signals into exit statuses."""
    try:
        with _signals_raise_interrupted():
            return work()
    except Interrupted as stop:
        print(f"{prog}: interrupted by {stop.name}; {after_interrupt}", file=sys.stderr)
        return 128 + stop.signum
    except _USER_ERRORS + _model_errors() as exc:
        return _fail(prog, exc, EXIT_USAGE)
    except (OSError, MemoryError, ImportError) as exc:
        text = _os_error_text(exc) if isinstance(exc, OSError) else (str(exc) or type(exc).__name__)
        return _fail(prog, text + after_failure, EXIT_FAILED)


def _run_run(args: argparse.Namespace) -> int:
    def work() -> int:
        for line in _run_model_files(args):
            print(line)
        return EXIT_OK

    return _run_guarded(f"{PROG} run", work,
                        after_interrupt="outputs written so far are complete")


# --- check ---------------------------------------------------------------------------------


def _add_check_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "check",
        help="judge every Relu node of a model (type allowed at its opset, attributes)",
        description="Judge every ai.onnx Relu node of an ONNX model: is its input type allowed "
        "by the Relu version of the model's opset, are its attributes valid for that version? "
        "Prints one finding per line; exit status 1 if there is any, 0 if none.",
        epilog=f"example:\n  {PROG} check model.onnx",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", metavar="MODEL.onnx", help="the model file")
    parser.set_defaults(handler=_run_check)


def _run_check(args: argparse.Namespace) -> int:
    def work() -> int:
        _check_readable(args.model, "MODEL")
        from .model_check import check_model

        findings = check_model(args.model)
        for finding in findings:
            print(finding)
        if findings:
            print(f"{len(findings)} finding(s) in {args.model}", file=sys.stderr)
            return EXIT_FAILED
        print(f"{args.model}: no findings")
        return EXIT_OK

    return _run_guarded(f"{PROG} check", work, after_interrupt="nothing was written")


# --- legalize ------------------------------------------------------------------------------


def _add_legalize_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "legalize",
        help="rewrite the Relu nodes a runtime cannot run into equivalent subgraphs",
        description="Write a copy of MODEL in which onnxruntime's CPU provider can run every "
        "Relu node (bfloat16, int16, int64 ...), with onnx-relu's values. Other nodes are "
        "untouched. OUT is written atomically.",
        epilog=f"examples:\n  {PROG} legalize model.onnx model.ort.onnx\n"
        f"  {PROG} legalize --exact model.onnx model.exact.onnx   also make float Relus exact",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", metavar="MODEL.onnx", help="the model file")
    parser.add_argument("output", metavar="OUT.onnx", help="where to write the new model")
    parser.add_argument("--target", choices=("onnxruntime",), default="onnxruntime",
                        help="the runtime to legalize for (default: onnxruntime)")
    parser.add_argument("--exact", action="store_true",
                        help="also rewrite the Relus the runtime runs with other values "
                        "(-0.0 kept, float16 NaNs quieted) so that every result is exact")
    parser.set_defaults(handler=_run_legalize)


def _run_legalize(args: argparse.Namespace) -> int:
    def work() -> int:
        _check_readable(args.model, "MODEL")
        if os.path.isdir(args.output):
            raise UsageError(f"OUT {args.output!r} is a folder, not a file name")
        _check_writable_destination(args.output)
        from ._atomic import atomic_file
        from .errors import LegalizationError
        from .legalization import legalize

        try:
            model = legalize(args.model, target=args.target, exact=args.exact)
        except LegalizationError as exc:
            raise UsageError(str(exc)) from None
        data = model.SerializeToString()
        with atomic_file(args.output) as file:
            file.write(data)
        print(f"wrote {args.output}")
        return EXIT_OK

    return _run_guarded(f"{PROG} legalize", work, after_interrupt=_NOT_WRITTEN,
                        after_failure="; OUT left unchanged")


# --- bench ---------------------------------------------------------------------------------


def _add_bench_command(commands: argparse._SubParsersAction) -> None:
    # Listed here for --help; main() hands everything after "bench" to the harness's own parser.
    commands.add_parser(
        "bench",
        help="benchmark onnx-relu against a copy ceiling, numpy, onnxruntime and torch "
        "(`onnx-relu bench --help`)",
        add_help=False,
    )


def _run_bench(argv: list[str]) -> int:
    from .bench import main as bench_main

    return bench_main(argv, prog=f"{PROG} bench")


# --- the command ---------------------------------------------------------------------------

#: One entry per subcommand; each adds its parser and sets ``handler``.
_COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_demo_command,
    _add_apply_command,
    _add_run_command,
    _add_check_command,
    _add_legalize_command,
    _add_bench_command,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``onnx-relu`` command, with every subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="The ONNX Relu operator, exact for every type of every version.\n"
        "With no command: run the specification's nine examples and check every result.",
        epilog=_MAIN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add_command in _COMMANDS:
        add_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        return _run_bench(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = getattr(args, "handler", _run_demo)
    return handler(args)
