"""``onnx-relu bench [options]``: the benchmark harness, ``python -m onnx_relu.bench``."""

from __future__ import annotations

import argparse

from ._common import PROG


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """List ``bench`` in ``--help``; :func:`onnx_relu.cli.main` hands its arguments to
    :func:`run`."""
    commands.add_parser(
        "bench",
        help="benchmark onnx-relu against a copy ceiling, numpy, onnxruntime and torch "
        "(`onnx-relu bench --help`)",
        add_help=False,
    )


def run(argv: list[str]) -> int:
    """Run the harness with everything after "bench" (its own parser reads it)."""
    from ..bench import main as bench_main
    from ._help import HelpFormatter

    return bench_main(argv, prog=f"{PROG} bench", formatter_class=HelpFormatter)
