"""The threshold scan, now part of the harness: ``python -m onnx_relu.bench --scan``.

    python benchmarks/threshold_scan.py                # both scans, float32
    python benchmarks/threshold_scan.py --type int8 --stores-only

Kept for the commands in older notes; it runs :func:`onnx_relu.bench.run_scan` (see
``onnx_relu/bench/scan.py`` for what is measured), with the two scans selectable.
"""

from __future__ import annotations

import argparse

from onnx_relu.bench import TYPES, run_scan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--type", default="float32", choices=TYPES)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--stores-only", action="store_true")
    parser.add_argument("--threads-only", action="store_true")
    args = parser.parse_args()
    run_scan(args.type, args.rounds, stores=not args.threads_only, threads=not args.stores_only)


if __name__ == "__main__":
    main()
