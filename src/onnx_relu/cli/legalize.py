"""``onnx-relu legalize MODEL OUT``: a copy of MODEL whose Relu nodes onnxruntime runs."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .._text import printable
from ._common import (
    EXIT_OK,
    NOT_WRITTEN,
    PROG,
    UsageError,
    add_subcommand,
    emit,
    run_guarded,
)


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``legalize`` subcommand to ``commands``."""
    parser = add_subcommand(
        commands,
        "legalize",
        run,
        help="rewrite the Relu nodes a runtime cannot run into equivalent subgraphs",
        description="Write a copy of MODEL in which onnxruntime's CPU provider can run every "
        "Relu node (bfloat16, int16, int64 ...), with onnx-relu's values. Other nodes are "
        "untouched. OUT is written atomically.",
        epilog=f"examples:\n  {PROG} legalize model.onnx model.ort.onnx\n"
        f"  {PROG} legalize --exact model.onnx model.exact.onnx   also make float Relus exact",
    )
    parser.add_argument("model", metavar="MODEL.onnx", help="the model file")
    parser.add_argument(
        "output", metavar="OUT.onnx", help="where to write the new model; - for standard output"
    )
    parser.add_argument(
        "--target",
        choices=("onnxruntime",),
        default="onnxruntime",
        help="the runtime to legalize for (default: onnxruntime)",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="also rewrite the Relus the runtime runs with other values "
        "(-0.0 kept, float16 NaNs quieted) so that every result is exact",
    )


def run(args: argparse.Namespace) -> int:
    """Legalize the model and write it to OUT atomically."""

    def work() -> int:
        from ..io.endpoint import Endpoint, refuse_terminal_output

        source = Endpoint.input(args.model, "MODEL")
        source.require_readable()
        source.require_model_file()
        destination = Endpoint.output(args.output, "OUT", dash_is_stdio=True)
        to_stdout = destination.is_stdio
        if to_stdout:
            refuse_terminal_output("a binary model", "> OUT.onnx")
        else:
            destination.require_writable()
        from ..errors import LegalizationError
        from ..io.streams import open_output
        from ..onnx import legalize

        try:
            model = legalize(source, target=args.target, exact=args.exact)
        except LegalizationError as exc:
            raise UsageError(str(exc)) from None
        _check_external_data_stays_reachable(model, args.model, "." if to_stdout else args.output)
        data = model.SerializeToString()
        # A FIFO or character device as OUT is written through; '-' is standard output.
        with open_output(destination) as output:
            output.write(data)
        if not to_stdout:
            emit(f"wrote {printable(args.output)}")
        return EXIT_OK

    return run_guarded(
        f"{PROG} legalize", work, after_interrupt=NOT_WRITTEN, after_failure="; OUT left unchanged"
    )


def _check_external_data_stays_reachable(model: Any, source: str, output: str) -> None:
    """A model whose external data would take it past protobuf's 2 GiB is legalized with that
    data left in its files, named by paths relative to the model's folder: OUT must be there."""
    from onnx.external_data_helper import uses_external_data

    if not any(uses_external_data(tensor) for tensor in model.graph.initializer):
        return
    source_folder = os.path.realpath(os.path.dirname(os.path.abspath(source)))
    output_folder = os.path.realpath(os.path.dirname(os.path.abspath(output)))
    if source_folder != output_folder:
        raise UsageError(
            f"MODEL {source!r} keeps over 2 GiB of tensor data in external files, which stay"
            f" where they are and are named relative to its folder; write OUT into"
            f" {source_folder!r} so that the new model finds them"
        )
