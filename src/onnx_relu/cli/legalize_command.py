"""``onnx-relu legalize MODEL OUT``: a copy of MODEL whose Relu nodes onnxruntime runs."""

from __future__ import annotations

import argparse
import os

from .._text import printable
from ._common import (
    EXIT_OK,
    NOT_WRITTEN,
    PROG,
    UsageError,
    emit,
    note,
    run_guarded,
)
from ._subcommand import Subcommand

TYPE_CHECKING = False  # (not typing's: see onnx_relu.io.streams)
if TYPE_CHECKING:
    from typing import Any

    from ..io.endpoint import Endpoint


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``legalize`` subcommand's arguments to its ``parser``."""
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
        "(-0.0 kept, float16 NaNs quieted) so that every result is exact; float Relus need "
        "opset 13 for that (see --convert-opset)",
    )
    parser.add_argument(
        "--ir-version",
        type=int,
        metavar="N",
        help="stamp OUT with IR version N, for an older onnxruntime (1.17 reads up to 9); "
        "refused where MODEL's opsets need a newer one (see --convert-opset)",
    )
    parser.add_argument(
        "--convert-opset",
        type=int,
        metavar="N",
        help="first convert MODEL to ai.onnx opset N with onnx's version converter "
        "(the result checked with onnx.checker), e.g. 13 for --exact on an older model",
    )


def run(args: argparse.Namespace) -> int:
    """Legalize the model and write it to OUT atomically."""

    def work() -> int:
        from .._extras import require_modules
        from ..io.endpoint import Endpoint, refuse_terminal_output

        source = Endpoint.of(args.model, "MODEL")
        source.require_readable()
        source.require_model_file()
        destination = Endpoint.of(args.output, "OUT", stdio="output")
        from ..io.identity import refuse_overlap

        refuse_overlap(source, destination)  # MODEL is never replaced, by any path
        to_stdout = destination.is_stdio
        if to_stdout:
            refuse_terminal_output("a binary model", "> OUT.onnx")
        else:
            destination.require_writable()
        # the arguments checked, the packages: every one missing, said at once
        require_modules("legalize", "onnx", "onnxruntime")
        from ..errors import LegalizationError
        from ..io.streams import open_output
        from ..onnx import legalize_with_report

        given: Any = source  # the model's endpoint, or the converted model
        converted = ""
        if args.convert_opset is not None:
            given, before = _converted(source, args.convert_opset)
            converted = f"converted from ai.onnx opset {before} to {args.convert_opset}; "
        try:
            done = legalize_with_report(
                given, target=args.target, exact=args.exact, ir_version=args.ir_version
            )
        except LegalizationError as exc:
            raise UsageError(str(exc)) from None
        model = done.model
        moved = _external_data_beside(model, args.model, "." if to_stdout else args.output)
        data = model.SerializeToString()
        try:
            # A FIFO or character device as OUT is written through; '-' is standard output.
            with open_output(destination) as output:
                output.write(data)
        except BaseException:
            if moved is not None:
                os.unlink(moved[0])
            raise
        if moved is not None:
            os.replace(*moved)
        report = note if to_stdout else emit  # standard output holds the model then
        for rewritten in done.rewritten:
            report(printable(f"{printable(args.model)}: {rewritten}", quote=False))
        written = "standard output" if to_stdout else printable(args.output)
        if moved is not None:
            written += f" and its tensor data beside it, {printable(moved[1])}"
        copy = "" if done.rewritten or converted else ", a copy of MODEL"
        report(f"{printable(args.model)}: {converted}{done.summary()}; wrote {written}{copy}")
        return EXIT_OK

    return run_guarded(
        f"{PROG} legalize", work, after_interrupt=NOT_WRITTEN, after_failure="; OUT left unchanged"
    )


def _converted(path: Endpoint, opset: int) -> tuple[Any, int | None]:
    """MODEL converted to ai.onnx ``opset`` by onnx's version converter, checked by onnx's
    checker; a model the converter cannot convert is a UsageError naming both opsets."""
    import onnx
    import onnx.version_converter

    from ..onnx import ai_onnx_opset, load_model

    if opset < 1:
        raise UsageError(f"--convert-opset must be an ai.onnx opset >= 1, got {opset}")
    model = load_model(path)
    before = ai_onnx_opset(model)
    try:
        converted = onnx.version_converter.convert_version(model, opset)
        onnx.checker.check_model(converted, full_check=True)
    except Exception as exc:  # noqa: BLE001 - onnx raises RuntimeError, ValidationError...
        raise UsageError(
            f"onnx's version converter cannot convert MODEL {printable(path.path)} from opset"
            f" {before} to {opset}: {type(exc).__name__}: {exc}"
        ) from None
    return converted, before


def _external_data_beside(model: Any, source: str, output: str) -> tuple[str, str] | None:
    """A model with external data is legalized without reading that data: the new model names
    the same files, relative to MODEL's folder. When OUT is written into another folder, the
    tensors' data is copied into one file beside OUT, '<OUT name>.data' (the locations
    rewritten to it): ONNX reads external data only from inside a model's folder. Returns
    (the data written under a temporary name, its final name), None when nothing is copied."""
    from onnx.external_data_helper import uses_external_data

    external = [tensor for tensor in model.graph.initializer if uses_external_data(tensor)]
    if not external:
        return None
    from .._paths import absolute_path

    source_folder = os.path.realpath(os.path.dirname(absolute_path(source)))
    output_folder = os.path.realpath(os.path.dirname(absolute_path(output)))
    if source_folder == output_folder:
        return None
    if output == ".":
        raise UsageError(
            f"MODEL {source!r} keeps tensor data in external files, named relative to its"
            f" folder; a model written to standard output cannot carry them: run it from"
            f" {source_folder!r}, or write OUT as a file (its data is then written beside it)"
        )
    import tempfile

    from ..onnx._models import _external_data_fields

    name = os.path.basename(output) + ".data"
    handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=output_folder)
    try:
        with os.fdopen(handle, "wb") as target:
            for tensor in external:
                info = _external_data_fields(tensor, f"MODEL {source!r}")
                with open(os.path.join(source_folder, info.location), "rb") as stream:
                    stream.seek(info.offset)
                    remaining = info.length
                    offset = target.tell()
                    while remaining is None or remaining > 0:
                        data = stream.read(
                            1 << 24 if remaining is None else min(remaining, 1 << 24)
                        )
                        if not data:
                            break
                        target.write(data)
                        if remaining is not None:
                            remaining -= len(data)
                    length = target.tell() - offset
                fields = {"location": name, "offset": str(offset), "length": str(length)}
                del tensor.external_data[:]
                for key, value in fields.items():
                    entry = tensor.external_data.add()
                    entry.key, entry.value = key, value
    except BaseException:
        os.unlink(temporary)
        raise
    return temporary, os.path.join(output_folder, name)


SUBCOMMAND = Subcommand(
    "legalize",
    help="rewrite the Relu nodes a runtime cannot run into equivalent subgraphs",
    description="Write a copy of MODEL in which onnxruntime's CPU provider can run every "
    "Relu node (bfloat16, int16, int64 ...), with onnx-relu's values. Other nodes are "
    "untouched. OUT is written atomically. Tensor data MODEL keeps in external files is "
    "left there when OUT is in MODEL's folder, else copied beside OUT as OUT.data.",
    # paragraphs, reflowed by ._help.HelpFormatter; indented: "COMMAND  # comment" examples
    epilog=f"examples:\n  {PROG} legalize model.onnx model.ort.onnx\n"
    f"  {PROG} legalize --exact model.onnx exact.onnx  # float Relus exact too\n"
    f"  {PROG} legalize --exact --convert-opset 13 old.onnx new.onnx\n"
    "\nIt prints each Relu node it rewrote (path: node: type -> rewrite) and a summary line"
    " (on standard error when OUT is -). With nothing to rewrite it says so, writes OUT as"
    " a copy of MODEL and exits 0.",
    run=run,
    arguments=add_arguments,
)
