"""Ctrl-C during the start-up of the ``onnx-relu`` command: one line and status 130.

The command's own handling (``onnx_relu.cli.main``) begins only after the package and numpy
are imported, which is most of its start-up. Both ways of running it, the console script and
``python -m onnx_relu``, import this package's ``__init__`` before any module of the command
line, so the handler for that stretch can only be installed here, imported by ``__init__``
before numpy: this module is the command line's, placed where its entry points run first. It
recognises the command by the program's name (``sys.argv[0]``) or by ``-m onnx_relu`` in the
interpreter's own arguments; imported by any other program it touches no signal.
``onnx_relu.cli.main`` puts Python's own handler back first thing.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["interrupted_while_the_command_starts"]


def interrupted_while_the_command_starts(_signum: int, _frame: object) -> None:
    """End the process as the command does on Ctrl-C: nothing has been written yet."""
    sys.stderr.write("onnx-relu: interrupted by SIGINT during start-up\n")
    sys.stderr.flush()
    os._exit(128 + signal.SIGINT)


def _is_the_command() -> bool:
    program = (getattr(sys, "argv", None) or [""])[0]  # an embedding program may set no argv
    return os.path.basename(program) == "onnx-relu" or getattr(sys, "orig_argv", [])[1:3] == [
        "-m",
        "onnx_relu",
    ]


if _is_the_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, interrupted_while_the_command_starts)
