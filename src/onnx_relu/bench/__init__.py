"""Benchmark harness: onnx-relu against a copy ceiling and every peer, in one process.

``python -m onnx_relu.bench`` (or :func:`main`) measures, for each of the eight Relu types and
each array size (default: 6 elements, 64 KiB, 4 MiB, 64 MiB, 512 MiB):

- onnx_relu: out of place into a preallocated ``out``, allocating, and in place;
- the ceilings: the harness's own copy (``_relu._copy``: streaming and regular stores, split over
  threads like a relu call) and ``np.copyto``; for in place, the same copy of a buffer onto
  itself. A ceiling is the best of its copies at the thread count (``np.copyto`` counts at any);
- numpy ``np.maximum(x, 0, out=y)`` and ``np.maximum(x, 0)``;
- onnxruntime (io binding, intra-op threads = the thread count) where installed and where it
  has a kernel for the type;
- torch ``clamp_min(x, 0, out=y)`` and ``relu_()`` where installed.

Every variant runs at 1 thread and at the default count (peers that run on one thread only,
numpy and ``np.copyto``, at 1). Variants are interleaved: each of ``--rounds`` rounds runs all of
them once, in a new random (seeded) order, after a warm-up call; a variant's figure is the
median over rounds. Before each timed batch the output and in-place buffers are rewritten with
streaming stores (untimed), so that no variant pays for dirty lines another one left behind. In-place variants get fresh mixed-sign data before every timed call (data that is
already non-negative, or zeros, runs faster and would flatter them); the refill is not timed.
Throughput is ``2 x bytes / time`` (one read and one write of the array).

Output: tables of GB/s and of ratios (to the ceilings and to each peer at the same thread
count), a JSON file, and a PNG with one panel per type (matplotlib, imported only to draw).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

import onnx_relu
from onnx_relu import _relu

__all__ = ["main", "run_benchmark", "plot_results", "SCHEMA"]

SCHEMA = "onnx-relu-bench/1"
TYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64")
DEFAULT_SIZES = ("6", "64K", "4M", "64M", "512M")
QUICK_SIZES = ("6", "64K")
LARGEST_SKIPPED = 512 << 20  # --skip-largest drops sizes of at least this many bytes
INPLACE_BUFFER_BYTES = 64 << 20  # small in-place sizes refill this many bytes of buffers at once
ONNX_TYPE_NAMES = {
    "float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16", "bfloat16": "BFLOAT16",
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
}  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Sizes and data
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Size:
    """An array size: a number of elements ("6") or of bytes per array ("64K", "4M", "1G").

    Examples
    --------
    >>> Size.parse("64K").elements(4), Size.parse("64K").label()
    (16384, '64 KiB')
    >>> Size.parse("6").elements(8), Size.parse("6").label()
    (6, '6 el')
    """

    text: str
    count: int
    in_bytes: bool

    @classmethod
    def parse(cls, text: str) -> Size:
        match = re.fullmatch(r"\s*(\d+)\s*([KMG])?(?:I?B)?\s*", text, flags=re.IGNORECASE)
        if match is None or int(match.group(1)) < 1:
            raise argparse.ArgumentTypeError(
                f"bad size {text!r}: give a number of elements (6) or of bytes with K, M or G"
                " (64K, 4M, 512M)"
            )
        unit = (match.group(2) or "").upper()
        scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]
        return cls(text.strip(), int(match.group(1)) * scale, bool(unit))

    def elements(self, itemsize: int) -> int:
        return max(1, self.count // itemsize) if self.in_bytes else self.count

    def label(self) -> str:
        if not self.in_bytes:
            return f"{self.count} el"
        for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
            if self.count >= 1 << shift and self.count % (1 << shift) == 0:
                return f"{self.count >> shift} {unit}"
        return f"{self.count} B"


def dtype_of(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def mixed_sign_data(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random data with both signs in every cache line (never zeros, never all non-negative)."""
    dtype = dtype_of(name)
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return rng.standard_normal(n, dtype=np.float32).astype(dtype)


# ----------------------------------------------------------------------------------------------
# Variants
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Variant:
    """One thing to time. ``call`` runs once; in-place ones take the buffer to work on."""

    name: str
    group: str  # onnx_relu, ceiling, numpy, onnxruntime, torch
    threads: int
    inplace: bool
    call: Callable[..., object]
    prepare: Callable[[], None] = lambda: None  # untimed, before each batch (thread settings)
    spins: bool = False  # its worker threads spin after a call: leave a gap before the next


@dataclasses.dataclass
class Case:
    """The arrays of one (type, size) and the buffers for in-place runs."""

    name: str
    n: int
    x: np.ndarray
    out: np.ndarray
    buffers: list[np.ndarray]

    @property
    def nbytes(self) -> int:
        return self.x.nbytes

    def refill(self, buffers: Iterable[np.ndarray]) -> None:
        for buffer in buffers:
            np.copyto(buffer, self.x)


def set_relu_threads(threads: int) -> Callable[[], None]:
    return lambda: onnx_relu.set_num_threads(threads)


def relu_variants(case: Case, threads: int) -> list[Variant]:
    x, out, relu = case.x, case.out, onnx_relu.relu
    prepare = set_relu_threads(threads)
    copy = _relu._copy
    return [
        Variant("onnx_relu out", "onnx_relu", threads, False, lambda: relu(x, out=out), prepare),
        Variant("onnx_relu alloc", "onnx_relu", threads, False, lambda: relu(x), prepare),
        Variant("onnx_relu inplace", "onnx_relu", threads, True, lambda b: relu(b, out=b), prepare),
        Variant("copy streaming", "ceiling", threads, False, lambda: copy(x, out), prepare),
        Variant(
            "copy regular", "ceiling", threads, False,
            lambda: copy(x, out, nontemporal=False), prepare,
        ),
        Variant("inplace copy streaming", "ceiling", threads, True, lambda b: copy(b, b), prepare),
        Variant(
            "inplace copy regular", "ceiling", threads, True,
            lambda b: copy(b, b, nontemporal=False), prepare,
        ),
    ]  # fmt: skip


def numpy_variants(case: Case) -> list[Variant]:
    x, out = case.x, case.out
    zero = x.dtype.type(0)
    return [
        Variant("np.copyto", "ceiling", 1, False, lambda: np.copyto(out, x)),
        Variant("numpy maximum out", "numpy", 1, False, lambda: np.maximum(x, zero, out=out)),
        Variant("numpy maximum alloc", "numpy", 1, False, lambda: np.maximum(x, zero)),
    ]


class Peers:
    """The optional peers, imported once; ``missing`` says why one is absent."""

    def __init__(self, wanted: Sequence[str]) -> None:
        self.ort = self.onnx = self.torch = None
        self.missing: dict[str, str] = {}
        if "onnxruntime" in wanted:
            self.ort, why = _optional("onnxruntime")
            self.onnx, why_onnx = _optional("onnx")
            if self.ort is None or self.onnx is None:
                self.ort = None
                self.missing["onnxruntime"] = why or why_onnx
        if "torch" in wanted:
            self.torch, why = _optional("torch")
            if self.torch is None:
                self.missing["torch"] = why

    def versions(self) -> dict[str, str]:
        found = {"numpy": np.__version__, "onnx_relu": onnx_relu.__version__}
        for name, module in (("onnxruntime", self.ort), ("torch", self.torch)):
            if module is not None:
                found[name] = module.__version__
        return found


def _optional(name: str) -> tuple[object | None, str]:
    try:
        return importlib.import_module(name), ""
    except ImportError as exc:
        return None, f"not installed ({exc})"


def ort_model(onnx, name: str) -> bytes:
    helper, proto = onnx.helper, onnx.TensorProto
    element = getattr(proto, ONNX_TYPE_NAMES[name])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"])],
        "relu",
        [helper.make_tensor_value_info("X", element, None)],
        [helper.make_tensor_value_info("Y", element, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    return model.SerializeToString()


def ort_sessions(peers: Peers, name: str, thread_counts: Sequence[int]) -> tuple[dict, str]:
    """One session per thread count, or a reason why onnxruntime cannot run the type."""
    ort = peers.ort
    model = ort_model(peers.onnx, name)
    sessions = {}
    for threads in thread_counts:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            sessions[threads] = ort.InferenceSession(
                model, options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own NotImplemented, Fail, ...
            message = str(exc).splitlines()[0]
            return {}, f"no kernel: {message}"
    return sessions, ""


def ort_variants(peers: Peers, case: Case, sessions: dict) -> list[Variant]:
    ort, onnx = peers.ort, peers.onnx
    if case.name == "bfloat16":  # ort's Python API does not know ml_dtypes' bfloat16
        element = onnx.TensorProto.BFLOAT16
        x_value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(case.x.view(np.uint16), element)
        y_value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(case.out.view(np.uint16), element)
    else:
        x_value = ort.OrtValue.ortvalue_from_numpy(case.x)
        y_value = ort.OrtValue.ortvalue_from_numpy(case.out)
    variants = []
    for threads, session in sessions.items():
        binding = session.io_binding()
        binding.bind_ortvalue_input("X", x_value)
        binding.bind_ortvalue_output("Y", y_value)
        run = session.run_with_iobinding
        variants.append(
            Variant(
                "onnxruntime out", "onnxruntime", threads, False,
                lambda run=run, binding=binding: run(binding), spins=threads > 1,
            )
        )  # fmt: skip
    return variants


def torch_variants(peers: Peers, case: Case, thread_counts: Sequence[int]) -> list[Variant]:
    torch = peers.torch

    def tensor(array: np.ndarray):
        if case.name == "bfloat16":
            return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
        return torch.from_numpy(array)

    tx, tout = tensor(case.x), tensor(case.out)
    tbuffers = {id(buffer): tensor(buffer) for buffer in case.buffers}
    variants = []
    for threads in thread_counts:

        def prepare(threads=threads):
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)

        variants += [
            Variant(
                "torch clamp_min out", "torch", threads, False,
                lambda: torch.clamp_min(tx, 0, out=tout), prepare, spins=threads > 1,
            ),
            Variant(
                "torch relu_", "torch", threads, True,
                lambda b: tbuffers[id(b)].relu_(), prepare, spins=threads > 1,
            ),
        ]  # fmt: skip
    return variants


# ----------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------


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
        _relu._copy(buffer, buffer)
    _relu._copy(case.x, case.out)  # last, so that every variant finds the input equally cached
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
    _relu._copy(case.x, case.out)
    start = time.perf_counter()
    _relu._copy(case.x, case.out)
    once = max(time.perf_counter() - start, 1e-8)
    return int(min(100_000, max(1, round(target_seconds / once))))


def measure_case(variants: list[Variant], case: Case, rounds: int, reps: int, gap: float) -> dict:
    """Interleaved rounds after a warm-up; per variant the seconds of every round.

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


# ----------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------


def key(variant: str, threads: int) -> str:
    return f"{variant} @{threads}t"


def summarise(records: list[dict], thread_counts: Sequence[int]) -> list[dict]:
    """Ratios per (type, size, threads): to the ceilings, to each peer, and N vs 1 thread."""
    by_case: dict[tuple[str, str], dict[str, dict]] = {}
    for record in records:
        by_case.setdefault((record["type"], record["size"]), {})[
            key(record["variant"], record["threads"])
        ] = record
    ratios = []
    for (type_name, size), found in by_case.items():

        def gbps(variant: str, threads: int) -> float | None:
            record = found.get(key(variant, threads))
            return None if record is None else record["gbps"]

        def add(name: str, threads: int, numerator: float | None, denominator: float | None):
            if numerator is not None and denominator:
                ratios.append(
                    {"type": type_name, "size": size, "threads": threads, "ratio": name,
                     "value": numerator / denominator}
                )  # fmt: skip

        for threads in thread_counts:
            ceiling = max(
                filter(None, [gbps("copy streaming", threads), gbps("copy regular", threads),
                              gbps("np.copyto", 1)]),
                default=None,
            )  # fmt: skip
            inplace_ceiling = max(
                filter(None, [gbps("inplace copy streaming", threads),
                              gbps("inplace copy regular", threads)]),
                default=None,
            )  # fmt: skip
            out = gbps("onnx_relu out", threads)
            inplace = gbps("onnx_relu inplace", threads)
            add("out / copy ceiling", threads, out, ceiling)
            add("inplace / inplace ceiling", threads, inplace, inplace_ceiling)
            add("alloc / copy ceiling", threads, gbps("onnx_relu alloc", threads), ceiling)
            add("out / onnxruntime", threads, out, gbps("onnxruntime out", threads))
            add("out / torch clamp_min", threads, out, gbps("torch clamp_min out", threads))
            add("inplace / torch relu_", threads, inplace, gbps("torch relu_", threads))
            if threads == 1:
                add("out / numpy maximum", 1, out, gbps("numpy maximum out", 1))
                add("alloc / numpy maximum alloc", 1, gbps("onnx_relu alloc", 1),
                    gbps("numpy maximum alloc", 1))  # fmt: skip
        top = max(thread_counts)
        if top > 1:
            add(f"out {top}t / 1t", top, gbps("onnx_relu out", top), gbps("onnx_relu out", 1))
            add(f"inplace {top}t / 1t", top, gbps("onnx_relu inplace", top),
                gbps("onnx_relu inplace", 1))  # fmt: skip
    return ratios


def check_targets(ratios: list[dict], size_bytes: dict[str, int], top_threads: int) -> list[dict]:
    """The issue's targets, each with the number of cases, the failing ones and the worst."""
    large = {size for size, nbytes in size_bytes.items() if nbytes >= 64 << 20}
    # Throughput targets against numpy leave out the tiny size, where every call is overhead
    # (it has its own target: the 6-element call, see small_call_overhead).
    not_tiny = {size for size, nbytes in size_bytes.items() if nbytes >= 64 << 10}
    largest = {size for size, nbytes in size_bytes.items() if nbytes >= 512 << 20}
    rules = [
        ("out >= 0.95 x copy ceiling (>= 64 MiB)", "out / copy ceiling", large, 0.95, None),
        ("inplace >= 0.95 x inplace ceiling (>= 64 MiB)", "inplace / inplace ceiling", large,
         0.95, None),
        ("out >= 1.2 x onnxruntime", "out / onnxruntime", None, 1.2, None),
        ("out >= 1.1 x torch clamp_min", "out / torch clamp_min", None, 1.1, None),
        ("inplace >= 1.1 x torch relu_", "inplace / torch relu_", None, 1.1, None),
        ("float16, bfloat16 >= 50 x numpy (>= 64 KiB)", "out / numpy maximum", not_tiny, 50.0,
         {"float16", "bfloat16"}),
        (f"{top_threads} threads >= 1.6 x 1 thread (512 MiB)", f"out {top_threads}t / 1t",
         largest, 1.6, None),
    ]  # fmt: skip
    targets = []
    for label, ratio_name, sizes, minimum, types in rules:
        chosen = [
            r for r in ratios
            if r["ratio"] == ratio_name
            and (sizes is None or r["size"] in sizes)
            and (types is None or r["type"] in types)
        ]  # fmt: skip
        if not chosen:
            targets.append({"target": label, "minimum": minimum, "cases": 0, "met": None})
            continue
        failing = [r for r in chosen if r["value"] < minimum]
        targets.append(
            {"target": label, "minimum": minimum, "cases": len(chosen), "failing": len(failing),
             "met": not failing, "worst": min(chosen, key=lambda r: r["value"])}
        )  # fmt: skip
    return targets


# ----------------------------------------------------------------------------------------------
# Overheads: a 6-element call and the import
# ----------------------------------------------------------------------------------------------


def small_call_overhead(rounds: int, calls: int) -> dict:
    """Per-call seconds of relu(x) and np.maximum(x, 0) on 6 float32 elements, interleaved."""
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, -0.0], dtype=np.float32)
    candidates = {
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


def import_times(repeats: int) -> dict:
    """Seconds of `import numpy` and `import onnx_relu` in fresh interpreters, best of repeats."""
    code = "import time; t = time.perf_counter(); import {0}; print(time.perf_counter() - t)"
    best: dict[str, float] = {}
    for _ in range(repeats):
        for module in ("numpy", "onnx_relu"):
            out = subprocess.run(
                [sys.executable, "-c", code.format(module)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            seconds = float(out.stdout)
            best[module] = min(best.get(module, math.inf), seconds)
    return {
        "import numpy": best["numpy"],
        "import onnx_relu": best["onnx_relu"],
        "ratio onnx_relu / numpy": best["onnx_relu"] / best["numpy"],
    }


def machine_info() -> dict:
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
        "cpus_available": onnx_relu._threads.default_num_threads(),
        "cpus_total": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "tuning": _relu._tuning(),
    }
    if hasattr(os, "getloadavg"):
        info["load_average"] = os.getloadavg()
    return info


# ----------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------


def run_benchmark(
    types: Sequence[str] = TYPES,
    sizes: Sequence[Size] = tuple(Size.parse(s) for s in DEFAULT_SIZES),
    thread_counts: Sequence[int] | None = None,
    peers: Sequence[str] = ("numpy", "onnxruntime", "torch"),
    rounds: int = 5,
    batch_seconds: float = 0.02,
    gap: float = 0.04,
    import_repeats: int = 5,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run the whole benchmark and return the JSON-ready results (see the module docstring)."""
    if thread_counts is None:
        most = onnx_relu._threads.default_num_threads()
        thread_counts = [1] if most == 1 else [1, most]
    thread_counts = sorted(set(thread_counts))
    say = progress or (lambda message: None)
    available = Peers(peers)
    saved_threads = onnx_relu.get_num_threads()
    rng = np.random.default_rng(20261129)
    records: list[dict] = []
    unavailable: list[dict] = [
        {"type": "*", "variant": name, "reason": why} for name, why in available.missing.items()
    ]
    size_bytes: dict[str, int] = {}
    started = time.time()
    info = machine_info()
    try:
        for type_name in types:
            sessions, why = ({}, "")
            if available.ort is not None:
                sessions, why = ort_sessions(available, type_name, thread_counts)
                if why:
                    unavailable.append({"type": type_name, "variant": "onnxruntime", "reason": why})
            for size in sizes:
                dtype = dtype_of(type_name)
                n = size.elements(dtype.itemsize)
                x = mixed_sign_data(type_name, n, rng)
                copies = max(1, min(64, INPLACE_BUFFER_BYTES // max(1, x.nbytes)))
                case = Case(type_name, n, x, np.empty_like(x), [x.copy() for _ in range(copies)])
                size_bytes[size.label()] = max(size_bytes.get(size.label(), 0), x.nbytes)
                variants: list[Variant] = []
                for threads in thread_counts:
                    variants += relu_variants(case, threads)
                if "numpy" in peers:
                    variants += numpy_variants(case)
                if sessions:
                    variants += ort_variants(available, case, sessions)
                if available.torch is not None:
                    variants += torch_variants(available, case, thread_counts)
                reps = calibrate_reps(case, batch_seconds)
                say(f"{type_name:>8} {size.label():>8}: {len(variants)} variants x {rounds}"
                    f" rounds x {reps} calls")  # fmt: skip
                times = measure_case(variants, case, rounds, reps, gap)
                for variant in variants:
                    samples = times[id(variant)]
                    seconds = statistics.median(samples)
                    records.append(
                        {"type": type_name, "size": size.label(), "elements": n,
                         "bytes": x.nbytes, "variant": variant.name, "group": variant.group,
                         "threads": variant.threads, "seconds": seconds,
                         "gbps": 2 * x.nbytes / seconds / 1e9, "rounds": samples, "calls": reps}
                    )  # fmt: skip
                del case, variants, x, times
                gc.collect()
            del sessions
            gc.collect()
        say("overheads: 6-element call, import time")
        overhead = small_call_overhead(rounds=max(3, rounds), calls=20_000 if rounds > 2 else 2000)
        imports = import_times(import_repeats)
    finally:
        onnx_relu.set_num_threads(saved_threads)
    ratios = summarise(records, thread_counts)
    info["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "schema": SCHEMA,
        "machine": info,
        "versions": available.versions(),
        "config": {
            "types": list(types), "sizes": [s.label() for s in sizes],
            "threads": list(thread_counts), "rounds": rounds, "batch_seconds": batch_seconds,
            "gap_seconds": gap, "peers": list(peers),
            "seconds_total": round(time.time() - started, 1),
        },
        "results": records,
        "unavailable": unavailable,
        "ratios": ratios,
        "targets": check_targets(ratios, size_bytes, max(thread_counts)),
        "small_call": overhead,
        "import": imports,
    }  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Report: tables and plot
# ----------------------------------------------------------------------------------------------


def format_tables(results: dict) -> str:
    sizes = results["config"]["sizes"]
    lines = []
    width = max(len(size) for size in sizes) + 1
    width = max(width, 8)
    for type_name in results["config"]["types"]:
        rows: dict[str, dict[str, float]] = {}
        for record in results["results"]:
            if record["type"] == type_name:
                label = key(record["variant"], record["threads"])
                rows.setdefault(label, {})[record["size"]] = record["gbps"]
        if not rows:
            continue
        name_width = max(len(label) for label in rows) + 2
        lines.append("")
        lines.append(f"{type_name} - GB/s (2 x bytes / time)".ljust(name_width)
                     + "".join(size.rjust(width) for size in sizes))  # fmt: skip
        for label, values in rows.items():
            cells = "".join(_cell(values.get(size), width) for size in sizes)
            lines.append(label.ljust(name_width) + cells)
        ratio_rows: dict[str, dict[str, float]] = {}
        for ratio in results["ratios"]:
            if ratio["type"] == type_name:
                label = f"{ratio['ratio']} @{ratio['threads']}t"
                ratio_rows.setdefault(label, {})[ratio["size"]] = ratio["value"]
        if ratio_rows:
            name_width = max(name_width, max(len(label) for label in ratio_rows) + 2)
            lines.append(f"{type_name} - ratios".ljust(name_width))
            for label, values in ratio_rows.items():
                cells = "".join(_cell(values.get(size), width, ratio=True) for size in sizes)
                lines.append(label.ljust(name_width) + cells)
    if results["unavailable"]:
        lines.append("")
        lines.append("Not measured:")
        for entry in results["unavailable"]:
            lines.append(f"  {entry['variant']} {entry['type']}: {entry['reason']}")
    lines.append("")
    lines.append("Targets:")
    for target in results["targets"]:
        if target["met"] is None:
            lines.append(f"  {target['target']}: no case measured")
            continue
        worst = target["worst"]
        verdict = "met" if target["met"] else f"MISSED in {target['failing']}/{target['cases']}"
        lines.append(
            f"  {target['target']}: {verdict}; worst {worst['value']:.2f}"
            f" ({worst['type']} {worst['size']} @{worst['threads']}t)"
        )
    small, imports = results["small_call"], results["import"]
    lines.append(
        f"  6-element call: onnx_relu.relu {small['onnx_relu.relu(x)'] * 1e6:.3f} us,"
        f" np.maximum(x, 0) {small['np.maximum(x, 0)'] * 1e6:.3f} us"
        f" -> {small['ratio relu / numpy']:.2f} x (target <= 1.0)"
    )
    lines.append(
        f"  import: onnx_relu {imports['import onnx_relu'] * 1e3:.1f} ms, numpy"
        f" {imports['import numpy'] * 1e3:.1f} ms -> {imports['ratio onnx_relu / numpy']:.2f} x"
        " (target <= 1.5)"
    )
    return "\n".join(lines)


def _cell(value: float | None, width: int, ratio: bool = False) -> str:
    if value is None:
        return "-".rjust(width)
    if ratio:
        return f"{value:.2f}".rjust(width)
    return (f"{value:.1f}" if value >= 1 else f"{value:.3f}").rjust(width)


# What the plot shows, per panel: (variant, at the top thread count?, style).
PLOTTED = [
    ("onnx_relu out", True, {"color": "C0", "linewidth": 2.2}),
    ("onnx_relu out", False, {"color": "C0", "linestyle": ":", "linewidth": 1.5}),
    ("onnx_relu inplace", True, {"color": "C1", "linewidth": 2.2}),
    ("onnx_relu alloc", True, {"color": "C9", "linewidth": 1.2}),
    ("copy streaming", True, {"color": "k", "linestyle": "--", "linewidth": 1.2}),
    ("inplace copy regular", True, {"color": "0.5", "linestyle": "--", "linewidth": 1.2}),
    ("np.copyto", False, {"color": "0.5", "linestyle": "-.", "linewidth": 1.0}),
    ("numpy maximum out", False, {"color": "C3", "linewidth": 1.2}),
    ("onnxruntime out", True, {"color": "C2", "linewidth": 1.2}),
    ("torch clamp_min out", True, {"color": "C4", "linewidth": 1.2}),
    ("torch relu_", True, {"color": "C5", "linestyle": "--", "linewidth": 1.2}),
]


TICK_LABELS = [(4 << 10, "4 KiB"), (64 << 10, "64 KiB"), (1 << 20, "1 MiB"), (16 << 20, "16 MiB"),
               (256 << 20, "256 MiB")]  # fmt: skip
TICKS = [value for value, _ in TICK_LABELS]
PLOT_MIN_BYTES = 4096


def plot_results(results: dict, path: str) -> None:
    """Throughput against array size, one panel per type; matplotlib is imported here.

    Sizes below 4 KiB are left out of the plot (a call that small measures per-call overhead,
    which the tables and the 6-element comparison report); the y axis is linear from 0, so
    that the distance between lines reads as a ratio.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    types = results["config"]["types"]
    top = max(results["config"]["threads"])
    columns = min(4, len(types))
    rows = math.ceil(len(types) / columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 2.6 * rows + 0.9), squeeze=False
    )
    handles = {}
    for panel, type_name in zip(axes.flat, types):
        for variant, at_top, style in PLOTTED:
            threads = top if at_top else 1
            points = sorted(
                (r["bytes"], r["gbps"]) for r in results["results"]
                if r["type"] == type_name and r["variant"] == variant and r["threads"] == threads
                and r["bytes"] >= PLOT_MIN_BYTES
            )  # fmt: skip
            if points:
                (line,) = panel.plot(*zip(*points), marker=".", **style)
                handles[f"{variant} ({threads}t)"] = line
        panel.set_title(type_name, fontsize=9)
        panel.set_xscale("log", base=2)
        panel.set_xticks(TICKS, [label for _, label in TICK_LABELS])
        panel.set_ylim(bottom=0)
        panel.tick_params(labelsize=7)
        panel.grid(True, which="major", alpha=0.3)
        panel.minorticks_off()
    for panel in axes.flat[len(types):]:
        panel.set_visible(False)
    for panel in axes[-1]:
        panel.set_xlabel("array size (bytes)", fontsize=8)
    for panel in axes[:, 0]:
        panel.set_ylabel("GB/s (2 x bytes / time)", fontsize=8)
    figure.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=7,
                  frameon=False)  # fmt: skip
    cpu = results["machine"]["cpu"]
    figure.suptitle(f"onnx-relu vs copy ceiling and peers - {cpu}, {top} threads", fontsize=9)
    figure.tight_layout(rect=(0, 0.12 if rows > 1 else 0.2, 1, 0.96))
    figure.savefig(path, dpi=72)
    plt.close(figure)


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


def build_parser(prog: str = "python -m onnx_relu.bench") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Benchmark onnx-relu against a copy ceiling, numpy, onnxruntime and torch "
        "(each where installed): GB/s tables, ratios, JSON and a PNG.",
    )
    parser.add_argument("--types", nargs="+", choices=TYPES, default=list(TYPES), metavar="TYPE",
                        help="types to measure (default: all eight)")  # fmt: skip
    parser.add_argument("--sizes", nargs="+", type=Size.parse, default=None, metavar="SIZE",
                        help="array sizes: elements (6) or bytes (64K, 4M, 512M); default: "
                        + " ".join(DEFAULT_SIZES))  # fmt: skip
    parser.add_argument("--skip-largest", action="store_true",
                        help="leave out sizes of 512 MiB and more (memory, time)")  # fmt: skip
    parser.add_argument("--threads", nargs="+", type=int, default=None, metavar="N",
                        help="thread counts (default: 1 and the CPUs available)")  # fmt: skip
    parser.add_argument("--peers", nargs="*", default=["numpy", "onnxruntime", "torch"],
                        choices=["numpy", "onnxruntime", "torch"],
                        help="peers to include where installed (default: all)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved rounds; the median is reported (default 5)")  # fmt: skip
    parser.add_argument("--batch-ms", type=float, default=None,
                        help="target length of one timed batch in ms (default 20)")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: sizes 6 and 64K, 2 rounds, short batches")  # fmt: skip
    parser.add_argument("--json", default="onnx-relu-bench.json", metavar="PATH",
                        help="where to write the results (default: %(default)s)")  # fmt: skip
    parser.add_argument("--png", default="onnx-relu-bench.png", metavar="PATH",
                        help="where to draw the plot (default: %(default)s)")  # fmt: skip
    parser.add_argument("--no-plot", action="store_true", help="do not draw the PNG")
    parser.add_argument("--replot", metavar="JSON",
                        help="only draw --png from an earlier run's JSON and print its tables")  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "python -m onnx_relu.bench") -> int:
    """Run the benchmark from the command line; return the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    prog : str, optional
        The program name shown in help and usage messages (``onnx-relu bench`` from the CLI).

    Returns
    -------
    int
        0 on success, 2 for bad arguments or a ``--replot`` file that is not a benchmark's.

    Examples
    --------
    A one-type smoke run without plot or JSON (prints its tables):

    >>> from onnx_relu.bench import main
    >>> main(["--quick", "--types", "int8", "--sizes", "6", "--threads", "1", "--peers",
    ...       "--no-plot", "--json", ""])  # doctest: +ELLIPSIS
    <BLANKLINE>
    int8 - GB/s ...
    0
    """
    parser = build_parser(prog)
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exc:  # --help, usage errors
        return exc.code if isinstance(exc.code, int) else 2

    if args.replot:
        with open(args.replot, encoding="utf-8") as file:
            results = json.load(file)
        if results.get("schema") != SCHEMA:
            print(f"{args.replot}: not an onnx-relu benchmark file ({SCHEMA})", file=sys.stderr)
            return 2
        print(format_tables(results))
        return _plot(results, args.png)

    sizes = args.sizes or [Size.parse(s) for s in (QUICK_SIZES if args.quick else DEFAULT_SIZES)]
    if args.skip_largest:
        sizes = [s for s in sizes if not (s.in_bytes and s.count >= LARGEST_SKIPPED)]
    if args.threads is not None and any(t < 1 or t > _relu.MAX_THREADS for t in args.threads):
        print(f"--threads: each count must be in 1..{_relu.MAX_THREADS}", file=sys.stderr)
        return 2
    rounds = args.rounds or (2 if args.quick else 5)
    batch_seconds = (args.batch_ms or (1.0 if args.quick else 20.0)) / 1000
    results = run_benchmark(
        types=args.types,
        sizes=sizes,
        thread_counts=args.threads,
        peers=args.peers,
        rounds=rounds,
        batch_seconds=batch_seconds,
        gap=0.0 if args.quick else 0.04,
        import_repeats=1 if args.quick else 5,
        progress=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(format_tables(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=1)
        print(f"\nwrote {args.json}")
    if args.no_plot or not args.png:
        return 0
    return _plot(results, args.png)


def _plot(results: dict, path: str) -> int:
    try:
        plot_results(results, path)
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'onnx-relu[bench]')",
              file=sys.stderr)  # fmt: skip
        return 0
    print(f"wrote {path}")
    return 0
