"""How the harness times: batches from a clean cache state, interleaved rounds, and overheads.

A variant's figure is the median over rounds of one batch's seconds per call; each round runs
every variant once, in a new seeded random order, after a warm-up batch of each. Besides the
array cases it measures two overheads: a 6-element call and ``import onnx_relu``, each next to
numpy's.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_relu
from onnx_relu.ceiling import copy_ceiling

from .cases import Case, Variant

__all__ = ["time_batch", "calibrate_reps", "measure_case", "small_call_overhead", "import_times"]


def time_batch(variant: Variant, case: Case, reps: int, gap: float) -> float:
    """Seconds per call, over ``reps`` calls (in-place: over fresh buffers, refills untimed).

    Every batch starts from the same state: the output and the in-place buffers rewritten with
    streaming stores (untimed), so that none of their lines sits dirty in the caches. Otherwise
    a variant would pay for the write-back of whatever the variant before it left in the L3
    (up to its size: 260 MiB on the development machine), e.g. streaming stores into an output
    left dirty by a regular-store peer ran at half speed (14-17 against 28-30 GB/s at 64 MiB),
    and a relu after torch's in-place relu_ at 0.86 x.
    """
    for buffer in case.buffers:
        copy_ceiling(buffer, buffer, nontemporal=True)
    # The input last, so that every variant finds it equally cached.
    copy_ceiling(case.x, case.out, nontemporal=True)
    variant.prepare()
    if not variant.inplace:
        call = variant.call
        start = time.perf_counter()
        for _ in range(reps):
            call()
        elapsed = time.perf_counter() - start
    else:
        elapsed, done = 0.0, 0
        call = variant.call
        while done < reps:
            batch = case.buffers[: min(len(case.buffers), reps - done)]
            case.refill(batch)
            start = time.perf_counter()
            for buffer in batch:
                call(buffer)
            elapsed += time.perf_counter() - start
            done += len(batch)
    if variant.spins and gap > 0:
        time.sleep(gap)  # let onnxruntime's / OpenMP's spinning workers go idle
    return elapsed / reps


def calibrate_reps(case: Case, target_seconds: float) -> int:
    """Calls per batch so that a batch of the copy lasts about ``target_seconds``."""
    onnx_relu.set_num_threads(1)
    copy_ceiling(case.x, case.out, nontemporal=True)
    start = time.perf_counter()
    copy_ceiling(case.x, case.out, nontemporal=True)
    once = max(time.perf_counter() - start, 1e-8)
    return int(min(100_000, max(1, round(target_seconds / once))))


def measure_case(
    variants: list[Variant], case: Case, rounds: int, reps: int, gap: float
) -> dict[int, list[float]]:
    """Interleaved rounds after a warm-up; per variant (by ``id``) the seconds of every round.

    Each round runs the variants in a new (seeded) random order: a variant is slowed a little
    by what the one before it left in the caches, so no variant may always follow the same one.
    """
    for variant in variants:  # warm-up: page faults, lazy thread pools, caches
        time_batch(variant, case, min(reps, 3), gap)
    times: dict[int, list[float]] = {id(v): [] for v in variants}
    order = list(variants)
    shuffler = random.Random(len(variants) * 1000 + reps)
    for _ in range(rounds):
        shuffler.shuffle(order)
        for variant in order:
            times[id(variant)].append(time_batch(variant, case, reps, gap))
    return times


def small_call_overhead(rounds: int, calls: int) -> dict[str, Any]:
    """Per-call seconds of relu(x) and np.maximum(x, 0) on 6 float32 elements, interleaved."""
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, -0.0], dtype=np.float32)
    candidates: dict[str, Callable[[], object]] = {
        "onnx_relu.relu(x)": lambda: onnx_relu.relu(x),
        "np.maximum(x, 0)": lambda: np.maximum(x, 0),
        "relu_ufunc(x)": lambda: onnx_relu.relu_ufunc(x),
    }
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, call in candidates.items():
            start = time.perf_counter()
            for _ in range(calls):
                call()
            samples[name].append((time.perf_counter() - start) / calls)
    result = {name: min(times) for name, times in samples.items()}  # best of rounds
    result["ratio relu / numpy"] = result["onnx_relu.relu(x)"] / result["np.maximum(x, 0)"]
    return result


def import_times(repeats: int) -> dict[str, Any]:
    """Seconds of ``import numpy`` and of ``from onnx_relu import relu`` in fresh interpreters,
    best of ``repeats``. The second is what a program pays before its first call: ``import
    onnx_relu`` alone loads neither numpy nor the kernel; the first use of ``relu`` loads both
    and applies the ONNX_RELU_* variables."""
    code = "import time; t = time.perf_counter(); {0}; print(time.perf_counter() - t)"
    statements = {"numpy": "import numpy", "onnx_relu": "from onnx_relu import relu"}
    best: dict[str, float] = {}
    for _ in range(repeats):
        for module, statement in statements.items():
            command = [sys.executable, "-c", code.format(statement)]
            out = subprocess.run(command, capture_output=True, text=True, check=True)
            best[module] = min(best.get(module, math.inf), float(out.stdout))
    return {
        "import numpy": best["numpy"],
        "from onnx_relu import relu": best["onnx_relu"],
        "ratio onnx_relu / numpy": best["onnx_relu"] / best["numpy"],
    }
