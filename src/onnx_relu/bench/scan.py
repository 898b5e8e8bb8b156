"""The threshold scan: where streaming stores and threads start to pay on this machine.

``python -m onnx_relu.bench --scan`` (or ``onnx-relu bench --scan``) runs two scans of
out-of-place relu and prints the environment settings that would reproduce what it found:

1. Stores: regular against streaming stores, 1 thread, from 64 KiB to 256 MiB. The kernel's
   default streaming threshold (the rule of ``relu_default_nt_bytes`` in
   src/kernel/relu_tuning.c, from this machine's caches and CPU vendor) should sit where
   streaming starts to win; the scan's crossover is the smallest size from which streaming
   wins at that size and every larger one (ratio >= 1).
2. Threads: 1 thread against N threads (N = the CPUs available), every call split (threshold
   0; parts of at least the default 256 KiB), from 256 KiB to 16 MiB, back to back and with
   the pool asleep (2 ms between calls, as calls spaced by other work find it). The crossover
   is the smallest size from which N threads win by at least 5 % asleep, at that size and
   every larger one.

Both run interleaved (each round measures every setting once) and report medians. The machine
should be otherwise idle: another process on the other cores hides any gain from threads and
moves the bandwidth between rounds.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

import onnx_relu
from onnx_relu.tuning import (
    ENV_NT_THRESHOLD,
    ENV_PARALLEL_THRESHOLD,
    default_num_threads,
    kernel_tuned,
    kernel_tuning,
)

from .cases import dtype_of, mixed_sign_data

__all__ = ["STORE_SIZES_KIB", "THREAD_SIZES_KIB", "scan", "crossover", "run_scan", "size_text"]

NEVER = 1 << 62
STORE_SIZES_KIB = (64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 262144)
THREAD_SIZES_KIB = (256, 512, 1024, 1536, 2048, 3072, 4096, 8192, 16384)


def _seconds_per_call(call: Callable[[], object], reps: int, asleep: bool) -> float:
    """Back to back, or (asleep) with 2 ms pauses so that the pool's threads are asleep."""
    if not asleep:
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


def scan(
    sizes_kib: Sequence[int],
    settings: dict[str, tuple[int, int, int]],
    type_name: str,
    rounds: int,
    asleep: bool = False,
    say: Callable[[str], None] = print,
) -> list[tuple[int, list[float]]]:
    """GB/s of each setting (name -> (threads, parallel threshold, streaming threshold)) per
    size; prints a table as it goes and returns [(bytes, [GB/s per setting])]."""
    rng = np.random.default_rng(0)
    names = list(settings)
    say(f"{'size':>10}" + "".join(f"{name:>18}" for name in names) + "   ratio")
    rows = []
    for kib in sizes_kib:
        n = kib * 1024 // dtype_of(type_name).itemsize
        x = mixed_sign_data(type_name, n, rng)
        out = np.empty_like(x)
        reps = max(1, min(20 if asleep else 2000, (64 << 10) // kib))
        samples: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(rounds):
            for name in names:
                threads, parallel, streaming = settings[name]
                tuned = kernel_tuned(parallel_threshold=parallel, nt_threshold=streaming)
                with onnx_relu.num_threads(threads), tuned:
                    onnx_relu.relu(x, out=out)  # warm: pool, page faults
                    call = functools.partial(onnx_relu.relu, x, out=out)
                    samples[name].append(_seconds_per_call(call, reps, asleep))
        gbps = [2 * x.nbytes / statistics.median(samples[name]) / 1e9 for name in names]
        cells = "".join(f"{g:>13.1f} GB/s" for g in gbps)
        say(f"{kib:>7} KiB{cells}   {gbps[1] / gbps[0]:.2f}")
        rows.append((x.nbytes, gbps))
        del x, out
    return rows


def crossover(rows: Sequence[tuple[int, list[float]]], at_least: float) -> int | None:
    """The smallest size from which the second setting beats the first by ``at_least`` (a
    ratio) at that size and every larger one; None if it never does at the largest size.

    Examples
    --------
    >>> crossover([(1, [2.0, 1.0]), (2, [2.0, 2.5]), (4, [2.0, 1.9]), (8, [2.0, 3.0])], 1.0)
    8
    >>> crossover([(1, [2.0, 2.1]), (2, [2.0, 2.5])], 1.0)
    1
    >>> crossover([(1, [2.0, 1.0])], 1.0) is None
    True
    """
    found = None
    for size, (first, second) in reversed(list(rows)):
        if second < at_least * first:
            break
        found = size
    return found


def size_text(size: int) -> str:
    """A size as the environment variables take it, in the largest exact unit.

    Examples
    --------
    >>> size_text(16 << 20), size_text(1536 << 10), size_text(100)
    ('16M', '1536K', '100')
    """
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def run_scan(
    type_name: str = "float32",
    rounds: int = 7,
    stores: bool = True,
    threads: bool = True,
    say: Callable[[str], None] = print,
    store_sizes_kib: Sequence[int] = STORE_SIZES_KIB,
    thread_sizes_kib: Sequence[int] = THREAD_SIZES_KIB,
) -> dict[str, str]:
    """Run the scans, print their tables and the settings found; returns {variable: value}."""
    defaults = kernel_tuning()
    most = default_num_threads()
    say(
        f"machine: {defaults['vendor']} CPU, L2 {size_text(defaults['l2_bytes'])},"
        f" last-level cache {size_text(defaults['llc_bytes'])} ({defaults['cache_source']}),"
        f" {most} CPUs available, streaming ISA {defaults['best_nt_isa']}"
    )
    say(
        f"defaults: streaming from {size_text(defaults['default_nt_threshold'])},"
        f" threads from {size_text(defaults['parallel_threshold'])}; type {type_name},"
        f" {rounds} interleaved rounds, medians"
    )
    found: dict[str, str] = {}
    if stores:
        say("\nstores (1 thread): regular vs streaming")
        settings = {"regular": (1, NEVER, NEVER), "streaming": (1, NEVER, 0)}
        rows = scan(store_sizes_kib, settings, type_name, rounds, say=say)
        size = crossover(rows, 1.0)
        found[ENV_NT_THRESHOLD] = "never" if size is None else size_text(size)
    if threads and most > 1:
        streaming = defaults["nt_threshold"]
        settings = {"1 thread": (1, NEVER, streaming), f"{most} threads": (most, 0, streaming)}
        for asleep in (False, True):
            state = "asleep (2 ms between calls)" if asleep else "back to back"
            say(f"\nthreads (default stores): 1 vs {most}, every call split; {state}")
            rows = scan(thread_sizes_kib, settings, type_name, rounds, asleep, say=say)
        size = crossover(rows, 1.05)  # the asleep scan: the pool's wake-up included
        found[ENV_PARALLEL_THRESHOLD] = "never" if size is None else size_text(size)
    elif threads:
        say("\nthreads: one CPU available, nothing to scan")
    say(
        "\nsettings that reproduce this scan (the defaults above are what the kernel uses"
        " without them):"
    )
    for name, value in found.items():
        say(f"  {name}={value}")
    return found
