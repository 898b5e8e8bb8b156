"""``onnx-relu check MODEL...``: the findings of :func:`onnx_relu.check_model` for every model
named or found in the folders named, as text (one finding per line) or JSON (one object per
model), with an exit status a CI job can use."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator

from .._text import printable
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    USER_ERRORS,
    UsageError,
    emit,
    fail,
    note,
    os_error_text,
    run_guarded,
)
from ._subcommand import Subcommand

TYPE_CHECKING = False  # (not typing's: see onnx_relu.io.streams)
if TYPE_CHECKING:  # onnx is imported only when a model is checked
    from ..io.endpoint import Endpoint
    from ..onnx.check import Finding

#: The suffix of the models searched for in folders (compared in lower case).
MODEL_SUFFIX = ".onnx"

# Paragraphs, reflowed to the terminal by ._help.HelpFormatter; the indented lines are examples,
# each "COMMAND  # comment", kept as written.
_CHECK_EXAMPLES = f"""\
examples:
  {PROG} check model.onnx
  {PROG} check models/ extra.onnx  # every *.onnx under models/
  {PROG} check --format json models/ | jq .  # one object per model

exit status: 0 no findings; 1 a model has findings; 2 a model cannot be read (or bad
arguments).

JSON object: {{"path", "opset", "findings": [{{"node", "type", "version", "allowed_types",
"kind", "message"}}]}}, or {{"path", "error"}} for a model that cannot be read.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``check`` subcommand's arguments to its ``parser``."""
    parser.add_argument(
        "models",
        metavar="MODEL",
        nargs="+",
        help="a model file, or a folder searched recursively for *.onnx files",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default) or json: one JSON object per model and line on standard output",
    )


def model_paths(arguments: list[str]) -> Iterator[Endpoint]:
    """The models to check, each classified once: each file as given, each folder's ``*.onnx``
    files (recursively, sorted); a folder without any is a :class:`UsageError`."""
    from ..io.endpoint import Endpoint, PathKind

    for argument in arguments:
        given = Endpoint.of(argument, "MODEL")
        if given.kind is not PathKind.DIRECTORY:
            yield given
            continue
        found = []
        for root, folders, files in os.walk(argument):
            folders.sort()
            found += [
                os.path.join(root, name)
                for name in sorted(files)
                if name.lower().endswith(MODEL_SUFFIX)
            ]
        if not found:
            raise UsageError(f"MODEL folder {printable(argument)} holds no *{MODEL_SUFFIX} file")
        yield from (Endpoint.of(path, "MODEL") for path in found)


def finding_record(finding: Finding) -> dict[str, object]:
    """A finding as the JSON output shows it."""
    return {
        "node": finding.where,
        "type": finding.input_type,
        "version": finding.version,
        "allowed_types": list(finding.allowed_types),
        "kind": finding.kind,
        "message": finding.message,
    }


def _check_one(model: Endpoint) -> tuple[int | None, list[Finding], list[str]]:
    """The model's ai.onnx opset, its findings, and the Relu nodes the installed onnxruntime
    cannot run by itself (empty without onnxruntime); raises as ``check_model`` does."""
    model.require_readable()
    model.require_model_file()
    from .._extras import require_modules

    require_modules("check", "onnx")
    from ..onnx import ai_onnx_opset
    from ..onnx.check import _judged

    typed, findings = _judged(model, weights=False)  # the file read without its weights
    refused: list[str] = []
    if not findings and typed.sites:
        import importlib.util

        if importlib.util.find_spec("onnxruntime") is not None:
            from ..onnx.legalization import stock_refusals

            refused = stock_refusals(typed)
    return ai_onnx_opset(typed.model), findings, refused


def run(args: argparse.Namespace) -> int:
    """Judge every model; exit status 2 if one cannot be read, else 1 if one has findings."""

    import json  # (here: the command line's start-up does without it)

    def work() -> int:
        prog = f"{PROG} check"
        counts = {"clean": 0, "findings": 0, "unreadable": 0}
        for model in model_paths(args.models):
            path = model.path
            try:
                opset, findings, refused = _check_one(model)
            except ImportError:
                raise  # a missing extra fails every model alike: the one rule's line, exit 1
            except Exception as exc:  # noqa: BLE001 - one model's failure never stops the rest
                counts["unreadable"] += 1
                if isinstance(exc, OSError):
                    text = os_error_text(exc)
                elif isinstance(exc, USER_ERRORS):
                    text = str(exc)
                else:  # not a documented error: a fault of onnx-relu, said for this model
                    text = (
                        f"{printable(path)}: onnx-relu failed to check it ({type(exc).__name__}:"
                        f" {exc}); this is a bug of onnx-relu, please report it"
                    )
                if args.format == "json":
                    emit(json.dumps({"path": path, "error": " ".join(text.split())}))
                text = printable(text, quote=False)
                fail(
                    prog,
                    text if printable(path) in text else f"{printable(path)}: {text}",
                    EXIT_USAGE,
                )
                continue
            counts["findings" if findings else "clean"] += 1
            if args.format == "json":
                record = {
                    "path": path,
                    "opset": opset,
                    "findings": [finding_record(f) for f in findings],
                }
                emit(json.dumps(record))
            elif findings:
                for finding in findings:  # "path: node: message", as grep and ruff print
                    emit(printable(f"{printable(path)}: {finding}", quote=False))
                note(f"{len(findings)} finding(s) in {printable(path)}")
            else:
                emit(f"{printable(path)}: no findings")
            if refused and args.format != "json":
                # valid Relus that stock onnxruntime refuses: said apart, with what runs them
                note(
                    printable(
                        f"{printable(path)}: onnxruntime's CPU provider cannot run"
                        f" {len(refused)} of its Relu nodes by itself ({'; '.join(refused[:3])}"
                        + ("; ..." if len(refused) > 3 else "")
                        + "): open it with onnx_relu.ort_session, run it with"
                        f" '{PROG} run --engine onnxruntime', or rewrite it with"
                        f" '{PROG} legalize'",
                        quote=False,
                    )
                )
        if _stderr_is_terminal():
            checked = sum(counts.values())
            note(
                f"{prog}: {checked} model(s): {counts['clean']} without findings,"
                f" {counts['findings']} with findings, {counts['unreadable']} unreadable"
            )
        if counts["unreadable"]:
            return EXIT_USAGE
        return EXIT_FAILED if counts["findings"] else EXIT_OK

    return run_guarded(f"{PROG} check", work, after_interrupt="nothing was written")


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and os.isatty(2)
    except OSError:
        return False


SUBCOMMAND = Subcommand(
    "check",
    help="judge every Relu node of models (type allowed at its opset, attributes)",
    description="Judge every ai.onnx Relu node of ONNX models: is its input type allowed "
    "by the Relu version of the model's opset, are its attributes valid for that version?"
    "\n\nText output: one finding per line on standard output, as 'PATH: NODE: MESSAGE' (or"
    " 'PATH: no findings'), and for each model with findings 'N finding(s) in PATH' on"
    " standard error; when standard error is a terminal, a summary line (how many models"
    " were clean, had findings, could not be read) ends it.",
    epilog=_CHECK_EXAMPLES,
    run=run,
    arguments=add_arguments,
)
