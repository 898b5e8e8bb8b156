"""Scan that chose the kernel's two thresholds: streaming stores and threads.

    python benchmarks/threshold_scan.py                # both scans, float32
    python benchmarks/threshold_scan.py --type int8 --stores-only

1. Stores: out-of-place relu with regular stores against streaming stores, 1 thread, from
   64 KiB to 256 MiB. The kernel's default streaming threshold should sit where streaming starts
   to win (see relu_default_nt_bytes in src/kernel/relu_tuning.c).
2. Threads: 1 thread against N threads (N = the CPUs available), every call split (threshold
   0; chunks of at least the default 256 KiB), from 256 KiB to 16 MiB. The default threading
   threshold should sit where N threads start to win.

Both run interleaved (each round measures every setting once) and report medians. The machine
should be otherwise idle: another process on the second core hides any gain from threads.

Public API only: the data comes from the harness (``onnx_relu.bench``), the thresholds are set
through ``onnx_relu.tuning`` (``kernel_tuning``, ``kernel_tuned``, ``default_num_threads``), the
public home the redesign of issue 9 gives the kernel's tuning.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np

import onnx_relu
from onnx_relu.bench import dtype_of, mixed_sign_data
from onnx_relu.tuning import default_num_threads, kernel_tuned, kernel_tuning

NEVER = 1 << 62


def seconds_per_call(call, reps: int, cold: bool) -> float:
    """Back to back, or (cold) with 2 ms pauses so that the pool's threads are asleep."""
    if not cold:
        start = time.perf_counter()
        for _ in range(reps):
            call()
        return (time.perf_counter() - start) / reps
    total = 0.0
    for _ in range(reps):
        time.sleep(0.002)
        start = time.perf_counter()
        call()
        total += time.perf_counter() - start
    return total / reps


def scan(sizes_kib, settings, type_name: str, rounds: int, cold: bool = False) -> None:
    """settings: name -> (threads, parallel threshold, streaming threshold)."""
    rng = np.random.default_rng(0)
    names = list(settings)
    print(f"{'size':>10}" + "".join(f"{name:>18}" for name in names) + "   ratio")
    for kib in sizes_kib:
        n = kib * 1024 // dtype_of(type_name).itemsize
        x = mixed_sign_data(type_name, n, rng)
        out = np.empty_like(x)
        reps = max(1, min(20 if cold else 2000, (64 << 10) // kib))
        samples = {name: [] for name in names}
        for _ in range(rounds):
            for name in names:
                threads, parallel, streaming = settings[name]
                tuned = kernel_tuned(parallel_threshold=parallel, nt_threshold=streaming)
                with onnx_relu.num_threads(threads), tuned:
                    onnx_relu.relu(x, out=out)  # warm: pool, page faults
                    call = functools.partial(onnx_relu.relu, x, out=out)
                    seconds = seconds_per_call(call, reps, cold)
                samples[name].append(seconds)
        gbps = [2 * x.nbytes / statistics.median(samples[name]) / 1e9 for name in names]
        cells = "".join(f"{g:>13.1f} GB/s" for g in gbps)
        print(f"{kib:>7} KiB{cells}   {gbps[1] / gbps[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--type", default="float32")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--stores-only", action="store_true")
    parser.add_argument("--threads-only", action="store_true")
    args = parser.parse_args()
    defaults = kernel_tuning()
    most = default_num_threads()
    print(
        f"defaults: parallel {defaults['parallel_threshold']} B,"
        f" streaming {defaults['nt_threshold']} B, L2 {defaults['l2_bytes']} B,"
        f" LLC {defaults['llc_bytes']} B"
    )
    if not args.threads_only:
        print("\nstores (1 thread): regular vs streaming")
        stores = {"regular": (1, NEVER, NEVER), "streaming": (1, NEVER, 0)}
        scan([64, 256, 1024, 2048, 4096, 16384, 65536, 262144], stores, args.type, args.rounds)
    if not args.stores_only and most > 1:
        streaming = defaults["nt_threshold"]
        threads = {"1 thread": (1, NEVER, streaming), f"{most} threads": (most, 0, streaming)}
        for cold in (False, True):
            state = "asleep (2 ms between calls)" if cold else "back to back"
            print(f"\nthreads (default stores): 1 vs {most}, every call split; {state}")
            sizes_kib = [256, 512, 768, 1024, 1536, 2048, 3072, 4096, 16384]
            scan(sizes_kib, threads, args.type, args.rounds, cold)


if __name__ == "__main__":
    main()
