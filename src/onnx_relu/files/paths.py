"""What a path is, and what reading or writing it does (the names :mod:`onnx_relu.io` defines).

Kept so that ``onnx_relu.files.paths`` goes on working: the rules live in
:mod:`onnx_relu.io.endpoint` (an :class:`~onnx_relu.io.endpoint.Endpoint` classifies a path once
and holds the rules every command applies to it), reading and writing in
:mod:`onnx_relu.io.streams`.
"""

from __future__ import annotations

# (not typing.TYPE_CHECKING: importing typing costs more than this module)
TYPE_CHECKING = False
if TYPE_CHECKING:  # what static checkers see; at run time __getattr__ below imports them
    from ..io.endpoint import (
        STDIO,
        Endpoint,
        PathKind,
        absolute_path,
        check_output_kind,
        check_readable,
        check_writable_destination,
        describe,
        path_kind,
        refuse_terminal_output,
    )
    from ..io.streams import (
        FIFO_WAIT_S,
        Output,
        hold_closed_standard_streams,
        is_regular,
        open_input,
        open_output,
        read_bounded,
        regular_size,
        standard_closed,
        write_all,
    )

__all__ = [
    "absolute_path",
    "STDIO",
    "TENSOR_FORMATS",
    "FIFO_WAIT_S",
    "PathKind",
    "Endpoint",
    "path_kind",
    "describe",
    "open_input",
    "open_output",
    "Output",
    "write_all",
    "read_bounded",
    "is_regular",
    "regular_size",
    "hold_closed_standard_streams",
    "standard_closed",
    "check_readable",
    "check_output_kind",
    "check_writable_destination",
    "refuse_terminal_output",
]

#: File suffix (lower case) -> tensor format name (here, not in :mod:`.tensors`, so that the
#: command line can list the formats without importing numpy; ``tensors`` exports it too).
TENSOR_FORMATS: dict[str, str] = {".npy": "npy", ".pb": "pb"}

# name -> the module of onnx_relu.io that defines it, imported on first use: the command line
# reads TENSOR_FORMATS from here to build its parser, and the endpoint's dataclasses (with
# inspect, ast, dis) would cost ``onnx-relu --help`` a fifth of its time.
_LAZY_EXPORTS = {
    **dict.fromkeys(
        (
            "STDIO",
            "Endpoint",
            "PathKind",
            "absolute_path",
            "check_output_kind",
            "check_readable",
            "check_writable_destination",
            "describe",
            "path_kind",
            "refuse_terminal_output",
        ),
        "..io.endpoint",
    ),
    **dict.fromkeys(
        (
            "FIFO_WAIT_S",
            "Output",
            "hold_closed_standard_streams",
            "is_regular",
            "open_input",
            "open_output",
            "read_bounded",
            "regular_size",
            "standard_closed",
            "write_all",
        ),
        "..io.streams",
    ),
}


def __getattr__(name: str) -> object:
    from .._lazy import lazy_attribute

    return lazy_attribute(globals(), _LAZY_EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_EXPORTS})
