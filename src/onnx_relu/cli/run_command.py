"""``onnx-relu run MODEL -i NAME=FILE -o DIR [--engine onnxruntime]``: a model on tensor files,
through the onnx-relu backend (models made of Relu nodes) or through onnxruntime with the
onnx-relu custom-op library (any model)."""

from __future__ import annotations

import argparse
import os

from .._text import printable
from ..argtypes import thread_count
from ..files.formats import TENSOR_FORMATS
from ._common import (
    EXIT_OK,
    PROG,
    UsageError,
    emit,
    run_guarded,
    thread_limit,
)
from ._subcommand import Subcommand

TYPE_CHECKING = False  # (not typing's: see onnx_relu.io.streams)
if TYPE_CHECKING:
    from typing import Any

# Paragraphs, reflowed to the terminal by ._help.HelpFormatter; the indented lines are examples,
# each "COMMAND  # comment", kept as written.
_RUN_EXAMPLES = f"""\
examples:
  {PROG} run model.onnx -i X=x.npy -o results/  # writes results/Y.npy
  {PROG} run model.onnx -i x.npy -o results/  # one input: no NAME=
  {PROG} run model.onnx -i a=a.pb -i b=b.npy -o out/ --format pb
  {PROG} run resnet.onnx -i data=x.npy -o out/ --engine onnxruntime

With the default engine (onnx-relu) the model must consist of ai.onnx Relu nodes only. With
--engine onnxruntime any model runs in onnxruntime's CPU provider, its Relu nodes (every type,
bfloat16, int16 and int64 included) on the onnx-relu library. Inputs are .npy or .pb files;
types must be the declared ones, and Relu's the ones the model's opset allows. Each output is
written atomically; nothing is written unless the whole model ran. MODEL is one file: for a
folder of models, run it once per model.
"""


#: Characters allowed as they are in an output file name; others become "_".
_SAFE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _file_name_for(value_name: str) -> str:
    name = "".join(c if c in _SAFE_NAME_CHARS else "_" for c in value_name).lstrip(".")
    return name or "output"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``run`` subcommand's arguments to its ``parser``."""
    parser.add_argument("model", metavar="MODEL.onnx", help="the model file")
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE",
        dest="inputs",
        help="a graph input and the .npy/.pb file holding it (repeat for each input; "
        "NAME= may be left out when the model has one input)",
    )
    parser.add_argument(
        "-o",
        "--output-dir",
        required=True,
        metavar="DIR",
        help="folder for the outputs (created if missing)",
    )
    parser.add_argument(
        "--format",
        choices=tuple(TENSOR_FORMATS.values()),
        default="npy",
        help="file format of the outputs (default: npy)",
    )
    parser.add_argument(
        "--engine",
        choices=("onnx-relu", "onnxruntime"),
        default="onnx-relu",
        help="onnx-relu: the backend for models made of Relu nodes (default); "
        "onnxruntime: any model, in onnxruntime with the onnx-relu library",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="with --engine onnxruntime: every Relu is the onnx-relu library's (+0.0 for -0.0, "
        "NaN bits kept), unfused; default: only those onnxruntime cannot run, the rest "
        "onnxruntime's own with its fusions",
    )
    parser.add_argument(
        "--threads",
        type=thread_count,
        metavar="N",
        help="threads for the Relu kernel (and onnxruntime's intra-op threads)",
    )


def _split_input(entry: str, required: list[str], single: bool) -> tuple[str, str]:
    """``-i`` ``entry`` as (input name, file). ONNX names may contain "=" and paths may too, so
    the split is at the end of the longest graph input name the entry starts with, followed by
    "=" (the last "=" whose left part is an input name); a lone ``-i`` of a one-input model
    without such a prefix is the file, if it has no "=" or names an existing file; anything
    else splits at the first "=" (an unknown name is then reported by the model run, naming
    the model's inputs)."""
    named = [name for name in required if entry.startswith(f"{name}=")]
    if named:
        name = max(named, key=len)
        return name, entry[len(name) + 1 :]
    if single and len(required) == 1 and ("=" not in entry or os.path.exists(entry)):
        return required[0], entry  # (with "=" only if it names a file: "Q=x.npy" stays an error)
    name, sep, path = entry.partition("=")
    if not sep:
        raise UsageError(f"-i {entry!r}: write NAME=FILE (the model's inputs are {required})")
    return name, path


def _parse_run_inputs(entries: list[str], required: list[str]) -> dict[str, str]:
    files: dict[str, str] = {}
    for entry in entries:
        name, path = _split_input(entry, required, single=len(entries) == 1)
        if not name or not path:
            raise UsageError(f"-i {entry!r}: write NAME=FILE")
        if name in files:
            raise UsageError(f"input {name!r} is given twice")
        files[name] = path
    return files


def _output_paths(args: argparse.Namespace, output_names: list[str]) -> list[str]:
    """The file of each graph output in -o DIR, each checked before the model runs: a name the
    file system can hold, and a regular file or nothing there (a folder, a FIFO or a device is
    refused, never replaced)."""
    from ..io.endpoint import Endpoint

    Endpoint.of(args.output_dir, "-o").require_creatable_folder()
    try:
        name_max = os.pathconf(
            args.output_dir if os.path.isdir(args.output_dir) else ".", "PC_NAME_MAX"
        )
    except (OSError, ValueError):
        name_max = 255
    paths = []
    used: set[str] = set()
    for name in output_names:
        stem = _file_name_for(name)
        while stem in used:  # two output names that map to one file name
            stem += "_"
        used.add(stem)
        file_name = f"{stem}.{args.format}"
        if len(os.fsencode(file_name)) > name_max:
            raise UsageError(
                f"graph output {printable(name)} would be written to a file name of"
                f" {len(os.fsencode(file_name))} bytes; the file system allows {name_max}"
                " (nothing was run or written)"
            )
        path = os.path.join(args.output_dir, file_name)
        try:
            Endpoint.of(path, f"output file for {printable(name)}").require_output_kind(
                streams=False
            )
        except IsADirectoryError:
            raise UsageError(f"output file {path!r} for {printable(name)} is a folder") from None
        paths.append(path)
    return paths


def _read_inputs(
    args: argparse.Namespace, required: list[str], outputs: list[str]
) -> dict[str, Any]:
    """The input files, read once each is checked, and none of them (nor MODEL) one of the
    ``outputs`` by any path: writing that output would replace an input (refused before
    anything is read or run, by identity: :func:`onnx_relu.io.identity.refuse_overlap`)."""
    from ..files import read_tensor
    from ..io.endpoint import Endpoint
    from ..io.identity import refuse_overlap

    files = _parse_run_inputs(args.inputs, required)
    sources = [Endpoint.of(args.model, "MODEL")]
    for path in files.values():
        source = Endpoint.of(path, "input file")
        source.require_readable()
        sources.append(source)
    for output in outputs:
        destination = Endpoint.of(output, "output file")
        for source in sources:
            refuse_overlap(source, destination, hint=" (give -o another folder)")
    return {name: read_tensor(path) for name, path in files.items()}


def _run_backend(args: argparse.Namespace) -> tuple[list[str], list[str], list[Any]]:
    from ..onnx.backend import prepare

    rep = prepare(args.model)
    paths = _output_paths(args, list(rep.output_names))
    feeds = _read_inputs(args, [graph_input.name for graph_input in rep.required_inputs], paths)
    with thread_limit(args.threads):
        return list(rep.output_names), paths, list(rep.run(feeds))


def _check_ort_feeds(session: Any, feeds: dict[str, Any]) -> None:
    """Every graph input fed, nothing else, each with its declared type: checked before the run
    so that the user gets onnx-relu's one-line errors (the backend's words) rather than
    onnxruntime's."""
    from ..onnx.feeds import check_feed_names, check_feed_type

    declared = {graph_input.name: graph_input.type for graph_input in session.get_inputs()}
    check_feed_names(feeds, list(declared))
    for name, array in feeds.items():
        check_feed_type(name, declared[name], array.dtype)


def _run_onnxruntime(args: argparse.Namespace) -> tuple[list[str], list[str], list[Any]]:
    from .._extras import extra_needed
    from ..errors import InvalidModelError, ModelInputError

    with extra_needed("--engine onnxruntime"):
        import onnxruntime

        from ..onnx.ort import run_session
        from ..onnx.ort_library import ort_session

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4  # its errors still raise, and are reported in one line
    if args.threads is not None:
        options.intra_op_num_threads = args.threads
    try:
        with thread_limit(args.threads):
            session = ort_session(args.model, sess_options=options, exact=args.exact)
    except (
        onnxruntime.capi.onnxruntime_pybind11_state.Fail,
        onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph,
        onnxruntime.capi.onnxruntime_pybind11_state.InvalidProtobuf,
        onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented,
    ) as error:
        raise InvalidModelError(f"onnxruntime cannot load {args.model!r}: {error}") from None
    output_names = [output.name for output in session.get_outputs()]
    for output in session.get_outputs():
        if not str(output.type).startswith("tensor("):
            raise InvalidModelError(
                f"graph output {printable(output.name)} is a {output.type}, not a tensor: run"
                " writes each output as a tensor file (.npy, .pb)"
            )
    paths = _output_paths(args, output_names)
    feeds = _read_inputs(args, [graph_input.name for graph_input in session.get_inputs()], paths)
    _check_ort_feeds(session, feeds)
    state = onnxruntime.capi.onnxruntime_pybind11_state
    try:
        outputs = run_session(session, feeds)
    except state.InvalidArgument as error:
        raise ModelInputError(f"onnxruntime refused the inputs: {error}") from None
    except (
        state.Fail,
        state.RuntimeException,
        state.NotImplemented,
        state.EPFail,
        RuntimeError,
    ) as error:
        raise _OrtRunFailed(f"onnxruntime failed running {args.model!r}: {error}") from None
    return output_names, paths, outputs


class _OrtRunFailed(Exception):
    """The model failed in onnxruntime while it ran (e.g. a Reshape to an impossible shape):
    exit status 1, nothing written."""


def _run_model_files(args: argparse.Namespace) -> list[str]:
    from ..files import write_tensor
    from ..io.endpoint import Endpoint

    model = Endpoint.of(args.model, "MODEL")
    if os.path.isdir(args.model):
        raise UsageError(
            f"MODEL {args.model!r} is a folder, not a model: give one .onnx file"
            f" ({PROG} check takes folders)"
        )
    model.require_readable()
    model.require_model_file()
    from .._extras import require_modules

    # the model's path checked, the packages: every one missing, said at once
    if args.engine == "onnxruntime":
        require_modules("run --engine onnxruntime", "onnx", "onnxruntime")
    else:
        require_modules("run", "onnx")
    if args.engine == "onnxruntime":
        output_names, paths, outputs = _run_onnxruntime(args)
    else:
        output_names, paths, outputs = _run_backend(args)
    os.makedirs(args.output_dir, exist_ok=True)
    written = []
    for name, path, value in zip(output_names, paths, outputs, strict=True):
        write_tensor(path, value, name=name)
        written.append(
            f"{printable(name)} -> {printable(path)} ({value.dtype.name}, shape {value.shape})"
        )
    return written


def _check_options(args: argparse.Namespace) -> None:
    """The combinations of the command's own options."""
    if args.exact and args.engine != "onnxruntime":
        raise UsageError(
            "--exact needs --engine onnxruntime (the onnx-relu engine is always exact)"
        )


def run(args: argparse.Namespace) -> int:
    """Run the model on the input files; write each output to the output folder."""
    from ._common import EXIT_FAILED, fail

    def work() -> int:
        _check_options(args)
        try:
            lines = _run_model_files(args)
        except _OrtRunFailed as exc:
            return fail(f"{PROG} run", exc, EXIT_FAILED)
        for line in lines:
            emit(line)
        return EXIT_OK

    return run_guarded(f"{PROG} run", work, after_interrupt="outputs written so far are complete")


SUBCOMMAND = Subcommand(
    "run",
    help="run a model on tensor files (Relu-only models, or any with --engine onnxruntime)",
    description="Run an ONNX model made of Relu nodes through the onnx-relu backend, or "
    "any ONNX model through onnxruntime with the onnx-relu library (--engine onnxruntime), "
    "and write each graph output to DIR as <name>.npy (or .pb).",
    epilog=_RUN_EXAMPLES,
    run=run,
    arguments=add_arguments,
)
