"""The ``onnx-relu`` command (also ``python -m onnx_relu``)."""

from __future__ import annotations

import argparse
import sys

from . import __version__

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-relu",
        description="The ONNX Relu operator. With no arguments: run the specification's nine "
        "examples and check that every result matches exactly.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 2
    from .demo import run_demo

    return run_demo()
