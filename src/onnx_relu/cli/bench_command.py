"""``onnx-relu bench [options]``: the benchmark harness, ``python -m onnx_relu.bench``."""

from __future__ import annotations

from ._common import PROG
from ._subcommand import Subcommand


def run(argv: list[str]) -> int:
    """Run the harness with everything after "bench" (its own parser reads it)."""
    from ..bench import main as bench_main
    from ._help import HelpFormatter

    return bench_main(argv, prog=f"{PROG} bench", formatter_class=HelpFormatter)


SUBCOMMAND = Subcommand(
    "bench",
    help="benchmark onnx-relu against a copy ceiling, numpy, onnxruntime and torch "
    "(`onnx-relu bench --help`)",
    run=None,  # listed in --help only: onnx_relu.cli.main hands its arguments to run(argv)
)
