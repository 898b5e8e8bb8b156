"""``onnx-relu run MODEL -i NAME=FILE -o DIR``: a model made of Relu nodes, on tensor files."""

from __future__ import annotations

import argparse
import os

from ._common import (
    EXIT_OK,
    PROG,
    UsageError,
    add_subcommand,
    check_readable,
    run_guarded,
    thread_count,
    thread_limit,
)

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


def add_command(commands: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand to ``commands``."""
    parser = add_subcommand(
        commands, "run", run,
        help="run a model made of Relu nodes on tensor files",
        description="Run an ONNX model made of Relu nodes through the onnx-relu backend and "
        "write each graph output to DIR as <name>.npy (or .pb).",
        epilog=_RUN_EXAMPLES,
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
    parser.add_argument("--threads", type=thread_count, metavar="N",
                        help="threads for the Relu kernel")


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
        return name, entry[len(name) + 1:]
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


def _shown(name: str) -> str:
    """A graph value's name for the terminal: as it is if printable, else quoted with escapes
    (a name may hold newlines or terminal control sequences, which must not reach the
    terminal or break one line per output)."""
    return name if name.isprintable() else repr(name)


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
    from ..files import read_tensor, write_tensor
    from ..onnx.backend import prepare

    check_readable(args.model, "MODEL")
    rep = prepare(args.model)
    required = [graph_input.name for graph_input in rep.required_inputs]
    files = _parse_run_inputs(args.inputs, required)
    for path in files.values():
        check_readable(path, "input file")
    _check_output_folder(args.output_dir)
    feeds = {name: read_tensor(path) for name, path in files.items()}
    with thread_limit(args.threads):
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
        written.append(f"{_shown(name)} -> {path} ({value.dtype.name}, shape {value.shape})")
    return written


def run(args: argparse.Namespace) -> int:
    """Run the model on the input files; write each output to the output folder."""

    def work() -> int:
        for line in _run_model_files(args):
            print(line)
        return EXIT_OK

    return run_guarded(f"{PROG} run", work,
                       after_interrupt="outputs written so far are complete")
