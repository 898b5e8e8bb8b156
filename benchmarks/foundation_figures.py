"""The foundation issue's figures, in one run: the per-call time of a 6-element float32 relu next
to np.maximum(x, 0), and single-thread GB/s (2 x bytes / time, medians) on 64 MiB float32 and
float16 arrays next to np.maximum(x, 0, out=y). Run: python benchmarks/foundation_figures.py"""

import time
import timeit

import numpy as np

import onnx_relu


def per_call_us(function, repeats: int = 7, number: int = 20000) -> float:
    best = [min(timeit.repeat(function, number=number, repeat=3)) for _ in range(repeats)]
    return float(np.median(best)) / number * 1e6


def main() -> None:
    onnx_relu.set_num_threads(1)
    x = np.random.default_rng(0).standard_normal(6).astype(np.float32)
    ours, numpys = per_call_us(lambda: onnx_relu.relu(x)), per_call_us(lambda: np.maximum(x, 0))
    print(
        f"6-element float32: relu {ours:.3f} us, np.maximum(x, 0) {numpys:.3f} us,"
        f" ratio {ours / numpys:.2f}"
    )
    for dtype in (np.float32, np.float16):
        n = (64 << 20) // np.dtype(dtype).itemsize
        source = np.random.default_rng(1).standard_normal(n).astype(dtype)  # mixed signs
        out = np.empty_like(source)
        times: dict[str, list[float]] = {"relu": [], "maximum": []}
        for _ in range(5):  # interleaved
            start = time.perf_counter()
            onnx_relu.relu(source, out=out)
            times["relu"].append(time.perf_counter() - start)
            start = time.perf_counter()
            np.maximum(source, 0, out=out)
            times["maximum"].append(time.perf_counter() - start)
        gbs = {k: 2 * source.nbytes / float(np.median(v)) / 1e9 for k, v in times.items()}
        print(
            f"64 MiB {np.dtype(dtype).name}, 1 thread: relu {gbs['relu']:.1f} GB/s,"
            f" np.maximum {gbs['maximum']:.2f} GB/s, ratio {gbs['relu'] / gbs['maximum']:.1f}x"
        )


if __name__ == "__main__":
    main()
