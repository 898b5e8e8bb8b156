"""``onnx-relu demo`` (also the command with no subcommand): the specification's nine examples."""

from __future__ import annotations

import argparse

from ._subcommand import Subcommand


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``demo`` subcommand's arguments to its ``parser``."""
    parser.add_argument(
        "--full",
        action="store_true",
        help="show each example as the specification page lays it out (inputs, outputs)",
    )


def run(_args: argparse.Namespace | None = None) -> int:
    """Run the demo; 0 if every example matches the specification exactly, else 1."""
    from ..demo import run_demo

    return run_demo(full=bool(getattr(_args, "full", False)))


SUBCOMMAND = Subcommand(
    "demo",
    help="run the specification's nine examples and check every result (the default)",
    description="Run the Relu specification's nine examples through onnx-relu and check "
    "that every result matches exactly (dtype, shape and every element's bit pattern), "
    "one line per example. Exit status 1 if any does not.",
    run=run,
    arguments=add_arguments,
)
