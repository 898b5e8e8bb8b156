"""The whole run: every type x size x variant, the same-run ratios, and the JSON-ready results.

The results (schema :data:`SCHEMA`) hold the machine and the kernel's tuning, the versions, the
configuration, one record per measured variant (the seconds of every round, their median and
GB/s), the variants that could not run and why, the ratios, and the two overheads.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import onnx_relu
from onnx_relu.tuning import default_num_threads, kernel_tuning

from .cases import DEFAULT_SIZES, INPLACE_BUFFER_BYTES, TYPES, Case, Size, Variant, relu_variants
from .peers import (
    PEERS,
    Peers,
    backend_variants,
    numpy_variants,
    ort_sessions,
    ort_variants,
    torch_variants,
)
from .timing import calibrate_reps, import_times, measure_case, small_call_overhead

__all__ = ["SCHEMA", "run_benchmark", "summarise", "machine_info"]

SCHEMA = "onnx-relu-bench/1"


def key(variant: str, threads: int) -> str:
    return f"{variant} @{threads}t"


def summarise(records: list[dict[str, Any]], thread_counts: Sequence[int]) -> list[dict[str, Any]]:
    """Ratios per (type, size, threads): to the ceilings, to each peer, and N vs 1 thread."""
    by_case: dict[tuple[str, str], dict[str, float]] = {}
    for record in records:
        gbps = by_case.setdefault((record["type"], record["size"]), {})
        gbps[key(record["variant"], record["threads"])] = record["gbps"]
    ratios = []
    for (type_name, size), gbps in by_case.items():
        for threads, name, value in _case_ratios(gbps, thread_counts):
            ratio = {"type": type_name, "size": size, "threads": threads, "ratio": name}
            ratios.append({**ratio, "value": value})
    return ratios


def _case_ratios(
    gbps: dict[str, float], thread_counts: Sequence[int]
) -> list[tuple[int, str, float]]:
    """(threads, ratio name, value) of one case, from its GB/s by :func:`key`."""
    ratios: list[tuple[int, str, float]] = []

    def of(variant: str, threads: int) -> float | None:
        return gbps.get(key(variant, threads))

    def best(*candidates: float | None) -> float | None:
        return max(filter(None, candidates), default=None)

    def add(name: str, threads: int, numerator: float | None, denominator: float | None) -> None:
        if numerator is not None and denominator:
            ratios.append((threads, name, numerator / denominator))

    for threads in thread_counts:
        ceiling = best(
            of("copy streaming", threads), of("copy regular", threads), of("np.copyto", 1)
        )
        inplace_ceiling = best(
            of("inplace copy streaming", threads), of("inplace copy regular", threads)
        )
        out = of("onnx_relu out", threads)
        inplace = of("onnx_relu inplace", threads)
        alloc = of("onnx_relu alloc", threads)
        add("out / copy ceiling", threads, out, ceiling)
        add("inplace / inplace ceiling", threads, inplace, inplace_ceiling)
        add("alloc / copy ceiling", threads, alloc, ceiling)
        add("alloc / out", threads, alloc, out)
        ort_run = of("onnxruntime run", threads)
        add("alloc / onnxruntime run", threads, alloc, ort_run)
        # speed ratio: >= 1 means the backend's run takes at most onnxruntime's time
        add("backend run / onnxruntime run", threads, of("onnx_relu backend run", threads), ort_run)
        add("out / onnxruntime", threads, out, of("onnxruntime out", threads))
        add("out / torch clamp_min", threads, out, of("torch clamp_min out", threads))
        add("inplace / torch relu_", threads, inplace, of("torch relu_", threads))
        if threads == 1:
            add("out / numpy maximum", 1, out, of("numpy maximum out", 1))
            add("alloc / numpy maximum alloc", 1, alloc, of("numpy maximum alloc", 1))
    top = max(thread_counts)
    if top > 1:
        for variant in ("out", "inplace"):
            name = f"onnx_relu {variant}"
            add(f"{variant} {top}t / 1t", top, of(name, top), of(name, 1))
    return ratios


def machine_info() -> dict[str, Any]:
    """The CPU, the CPUs available, platform, Python, the kernel's tuning and the load."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "cpu": cpu,
        "cpus_available": default_num_threads(),
        "cpus_total": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "tuning": kernel_tuning(),
    }
    if hasattr(os, "getloadavg"):
        info["load_average"] = os.getloadavg()
    return info


def run_benchmark(
    types: Sequence[str] = TYPES,
    sizes: Sequence[Size] = tuple(map(Size.parse, DEFAULT_SIZES)),
    thread_counts: Sequence[int] | None = None,
    peers: Sequence[str] = PEERS,
    rounds: int = 5,
    batch_seconds: float = 0.02,
    gap: float = 0.04,
    import_repeats: int = 5,
    progress: Callable[[str], None] | None = None,
    inplace_bytes: int = INPLACE_BUFFER_BYTES,
) -> dict[str, Any]:
    """Run the whole benchmark and return the JSON-ready results (see the package docstring).

    The thread count of onnx-relu is restored afterwards. ``thread_counts`` defaults to 1 and
    the CPUs available; ``progress`` receives one line per case; ``inplace_bytes`` bounds the
    in-place buffers of a case (:meth:`.cases.Case.make`).
    """
    if thread_counts is None:
        most = default_num_threads()
        thread_counts = [1] if most == 1 else [1, most]
    thread_counts = sorted(set(thread_counts))
    say = progress or (lambda message: None)
    available = Peers(peers)
    saved_threads = onnx_relu.get_num_threads()
    rng = np.random.default_rng(20261129)
    records: list[dict[str, Any]] = []
    unavailable: list[dict[str, Any]] = [
        {"type": "*", "variant": name, "reason": why} for name, why in available.missing.items()
    ]
    started = time.time()
    info = machine_info()
    try:
        for type_name in types:
            sessions: dict[int, Any] = {}
            why = ""
            if available.ort is not None:
                sessions, why = ort_sessions(available, type_name, thread_counts)
                if why:
                    unavailable.append({"type": type_name, "variant": "onnxruntime", "reason": why})
            for size in sizes:
                case = Case.make(type_name, size, rng, inplace_bytes)
                variants = _variants(case, available, peers, sessions, thread_counts)
                reps = calibrate_reps(case, batch_seconds)
                say(
                    f"{type_name:>8} {size.label():>8}: {len(variants)} variants x {rounds}"
                    f" rounds x {reps} calls"
                )
                times = measure_case(variants, case, rounds, reps, gap)
                for variant in variants:
                    records.append(_record(case, size, variant, times[id(variant)], reps))
                del case, variants, times
                gc.collect()
            del sessions
            gc.collect()
        say("overheads: 6-element call, import time")
        overhead = small_call_overhead(
            rounds=max(3, rounds), calls=20_000 if batch_seconds >= 0.005 else 2000
        )
        imports = import_times(import_repeats)
    finally:
        onnx_relu.set_num_threads(saved_threads)
    info["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "schema": SCHEMA,
        "machine": info,
        "versions": available.versions(),
        "config": _config(
            types, sizes, thread_counts, peers, rounds, batch_seconds, gap, inplace_bytes, started
        ),
        "results": records,
        "unavailable": unavailable,
        "ratios": summarise(records, thread_counts),
        "small_call": overhead,
        "import": imports,
    }


def _variants(
    case: Case,
    available: Peers,
    peers: Sequence[str],
    sessions: dict[int, Any],
    thread_counts: Sequence[int],
) -> list[Variant]:
    """What is measured on ``case``: onnx-relu at each thread count, then each peer there is."""
    variants: list[Variant] = []
    for threads in thread_counts:
        variants += relu_variants(case, threads)
    if "numpy" in peers:
        variants += numpy_variants(case)
    if sessions:
        variants += ort_variants(case, sessions)
    if available.onnx is not None:
        variants += backend_variants(available, case, thread_counts)
    if available.torch is not None:
        variants += torch_variants(available, case, thread_counts)
    return variants


def _config(
    types: Sequence[str],
    sizes: Sequence[Size],
    thread_counts: Sequence[int],
    peers: Sequence[str],
    rounds: int,
    batch_seconds: float,
    gap: float,
    inplace_bytes: int,
    started: float,
) -> dict[str, Any]:
    """The results' ``config``: what the run was asked to measure, and how long it took."""
    return {
        "types": list(types),
        "sizes": [s.label() for s in sizes],
        "threads": list(thread_counts),
        "rounds": rounds,
        "batch_seconds": batch_seconds,
        "gap_seconds": gap,
        "peers": list(peers),
        "inplace_bytes": inplace_bytes,
        "seconds_total": round(time.time() - started, 1),
    }


def _record(
    case: Case, size: Size, variant: Variant, samples: list[float], calls: int
) -> dict[str, Any]:
    seconds = statistics.median(samples)
    return {
        "type": case.name,
        "size": size.label(),
        "elements": case.n,
        "bytes": case.nbytes,
        "variant": variant.name,
        "group": variant.group,
        "threads": variant.threads,
        "seconds": seconds,
        "gbps": 2 * case.nbytes / seconds / 1e9,
        "rounds": samples,
        "calls": calls,
    }
