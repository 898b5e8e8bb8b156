"""``onnx-relu check MODEL``: the findings of :func:`onnx_relu.check_model`, one per line."""

from __future__ import annotations

import argparse
import sys

from ._common import EXIT_FAILED, EXIT_OK, PROG, add_subcommand, check_readable, run_guarded


def add_command(commands: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand to ``commands``."""
    parser = add_subcommand(
        commands, "check", run,
        help="judge every Relu node of a model (type allowed at its opset, attributes)",
        description="Judge every ai.onnx Relu node of an ONNX model: is its input type allowed "
        "by the Relu version of the model's opset, are its attributes valid for that version? "
        "Prints one finding per line; exit status 1 if there is any, 0 if none.",
        epilog=f"example:\n  {PROG} check model.onnx",
    )
    parser.add_argument("model", metavar="MODEL.onnx", help="the model file")


def run(args: argparse.Namespace) -> int:
    """Judge the model; exit status 1 if there are findings, 0 if none."""

    def work() -> int:
        check_readable(args.model, "MODEL")
        from ..onnx import check_model

        findings = check_model(args.model)
        for finding in findings:
            print(finding)
        if findings:
            print(f"{len(findings)} finding(s) in {args.model}", file=sys.stderr)
            return EXIT_FAILED
        print(f"{args.model}: no findings")
        return EXIT_OK

    return run_guarded(f"{PROG} check", work, after_interrupt="nothing was written")
