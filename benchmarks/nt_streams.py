"""Streaming stores in one sequential stream or in four pages side by side (``nt_streams``).

``relu(x, out=y)`` on 64 MiB and 512 MiB of float32 with ``nt_streams`` 1 and 4 (the two vendor
defaults, see docs/performance.md), at 1 and 2 kernel threads: 5 rounds, each the best of 9
calls of each variant in turn; ``np.copyto`` (glibc's memcpy, one thread) alongside. Prints the
median GB/s (2 x bytes / time) and the ratio of 1 stream to 4 in each round.

Run: ``python benchmarks/nt_streams.py`` (results: BENCHMARKS.md, "Streaming stores: one stream
or four, per vendor").
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

import onnx_relu
from onnx_relu.tuning import kernel_tuned, kernel_tuning


def best(call: Callable[[], object], calls: int = 9) -> float:
    fastest = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        call()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def speeds_of(x: np.ndarray, y: np.ndarray) -> dict[str, list[float]]:
    """GB/s of each variant in each of 5 rounds, the variants in turn within a round."""
    speeds: dict[str, list[float]] = {"1": [], "4": [], "copyto": []}
    for _ in range(5):
        for streams in (1, 4):
            with kernel_tuned(nt_streams=streams):
                seconds = best(lambda: onnx_relu.relu(x, out=y))
            speeds[str(streams)].append(2 * x.nbytes / seconds / 1e9)
        speeds["copyto"].append(2 * x.nbytes / best(lambda: np.copyto(y, x)) / 1e9)
    return speeds


def main() -> None:
    tuning = kernel_tuning()
    print(f"vendor {tuning['vendor']}, default nt_streams {tuning['default_nt_streams']}")
    rng = np.random.default_rng(3)
    for mib in (64, 512):
        x = rng.standard_normal(mib << 18, dtype=np.float32)  # mixed signs: never zeros
        y = np.empty_like(x)
        for threads in (1, 2):
            onnx_relu.set_num_threads(threads)
            speeds = speeds_of(x, y)
            median = {key: sorted(values)[2] for key, values in speeds.items()}
            ratios = sorted(a / b for a, b in zip(speeds["1"], speeds["4"], strict=True))
            print(
                f"{mib} MiB, {threads} thread(s), median GB/s: 1 stream {median['1']:.1f},"
                f" 4 streams {median['4']:.1f}, np.copyto {median['copyto']:.1f};"
                f" 1 stream / 4 per round: {', '.join(f'{r:.2f}' for r in ratios)}"
            )
        onnx_relu.set_num_threads(tuning["num_threads"])


if __name__ == "__main__":
    main()
