"""Sweep the compiled relu kernel over sizes, byte offsets, types and layouts, under ASan + UBSan.

This is the kernel (``src/kernel``) as NumPy calls it, through the ufunc of
``src/onnx_relu/_relu_ufunc.c``; the kernel alone is swept by the C driver
``tests/kernel/relu_kernel_driver.c``, which ``tools/sanitize.sh`` runs first.

Run through ``tools/sanitize.sh`` (``make sanitize``), which builds onnx_relu with
``-fsanitize=address,undefined`` into ``build/sanitize-site`` and runs this file with the ASan
runtime preloaded. Every case places its operands in freshly allocated byte buffers:

* "tail-exact" buffers end exactly where the operand's last element ends, so ASan's redzone
  catches any read or write past the end; the bytes before the operand (``offset`` of them) are
  a canary;
* "aligned" buffers put the operand's first element at an address that is ``offset`` modulo 64
  (a cache line), with canary bytes on both sides, since vector code cares about the address.

numpy (2.x) never hands a ufunc loop a pointer that is not aligned to the element size: it
copies such operands through aligned buffers first (seen in gdb: ``relu_ufunc`` of an int32 view
at an odd address receives a buffer's address). So the kernel itself meets every element-aligned
offset within a cache line, and the other offsets exercise numpy's buffered path around it.

After each call the result is compared, bit for bit, with the tests' independent oracle
(``tests/support/oracle.py``, its vectorised form), and every byte of every buffer that is not an
output element (canaries, the gaps of strided views, the whole input when out of place) must be
unchanged.

Exit status 0: every case passed. 1: a wrong result or a touched byte (listed). A sanitizer
report aborts the process with a non-zero status before that; ``tools/sanitize.sh`` also scans
the log for reports.

By default the sweep covers what the C driver does not: the NumPy glue and numpy's paths around
it (``GLUE_SIZES``: about 48,000 cases); ``--full`` runs every size 0..257 at every
offset 0..63 through every streaming ISA too (about 2.6 million cases, minutes), by hand.

To extend: add sizes to ``LARGE_SIZES`` (or pass ``--large-sizes``) so that they straddle the
kernel's threading and streaming-store thresholds; add a layout with ``@layout``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# The repository's root, for tests.support (this file runs as a script, not under pytest).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import onnx_relu
from onnx_relu import relu, relu_ufunc
from tests.support.dtypes import RELU_DTYPES, bits_dtype
from tests.support.oracle import expected_relu, mismatch_report
from tests.support.values import mixed_values

#: Every size from empty to a little past 256 elements (every vector tail of every width).
SMALL_SIZES: Sequence[int] = range(258)
#: Every byte offset within a 64-byte cache line.
OFFSETS: Sequence[int] = range(64)
#: The default sweep's sizes and offsets (``--full`` takes the two above). The C driver, run
#: sanitized just before this sweep, already runs the kernel itself over every size 0..257 and
#: every element-aligned offset, per type, layout and streaming ISA; what it cannot reach is the
#: NumPy glue and numpy's own paths around it (the loop's strides and counts, byte-swapped and
#: unaligned operands through numpy's buffers, 2-D views a row per call, allocated outputs, the
#: GIL released around threaded calls). So the default keeps every layout and type, and sizes at
#: each vector width's boundaries and offsets with every alignment an element can have (odd,
#: 2, 4, 8 bytes; a cache line's end): about 2 % of the full sweep's cases.
GLUE_SIZES: Sequence[int] = (
    0,
    1,
    2,
    3,
    7,
    8,
    9,
    15,
    16,
    17,
    31,
    32,
    33,
    63,
    64,
    65,
    127,
    128,
    129,
    255,
    256,
    257,
)
GLUE_OFFSETS: Sequence[int] = (0, 1, 2, 3, 4, 6, 8, 12, 16, 31, 32, 63)
#: Offsets of the default sweep's threaded and streaming phases.
GLUE_SPARSE_OFFSETS: Sequence[int] = (0, 1, 8, 33, 63)
#: Offsets of the default sweep's large sizes (aligned, and numpy's buffered path): these cases
#: cost most under ASan (sanitized: about 40 ms each), and their kernel paths are the driver's.
GLUE_LARGE_OFFSETS: Sequence[int] = (0, 1)
#: Sizes (elements) above the kernel's threading / streaming thresholds; extend as they change.
LARGE_SIZES: Sequence[int] = (4_099, 65_537, 262_147)
#: The offsets used with large sizes and with several threads (every residue class mod 16 is hit).
SPARSE_OFFSETS: Sequence[int] = (0, 1, 3, 7, 8, 13, 16, 31, 32, 33, 50, 63)
#: Kernel thread counts tried after the single-threaded phases.
THREAD_COUNTS: Sequence[int] = (2, 4)
#: Python threads calling relu at once in the concurrency phase.
PYTHON_THREADS = 4

CANARY = 0xA5  # bytes around operands
POISON = 0x5A  # bytes of output elements before the call


@dataclass
class Operand:
    """A typed view into a byte buffer that it does not fill completely."""

    raw: np.ndarray  # uint8, the whole allocation
    view: np.ndarray  # the typed operand inside it

    def snapshot(self) -> bytes:
        return self.raw.tobytes()

    def unchanged_since(self, snapshot: bytes) -> bool:
        return self.raw.tobytes() == snapshot


def place(
    dtype: np.dtype,
    shape: tuple[int, ...],
    offset: int,
    strides: tuple[int, ...] | None = None,
    aligned: bool = False,
) -> Operand:
    """A view of ``shape`` with byte ``strides`` (default C-contiguous) ``offset`` into a buffer.

    Negative strides are allowed: the view then starts at the far end, as numpy's reversed
    views do. Tail-exact unless ``aligned`` (see the module docstring).
    """
    itemsize = dtype.itemsize
    if strides is None:  # C-contiguous
        strides = (shape[1] * itemsize, itemsize) if len(shape) == 2 else (itemsize,)
    empty = 0 in shape
    extent = (
        0
        if empty
        else itemsize + sum((n - 1) * abs(s) for n, s in zip(shape, strides, strict=True))
    )
    if aligned:
        raw = np.full(extent + 128, CANARY, dtype=np.uint8)
        start = (offset - raw.ctypes.data) % 64
    else:
        raw = np.full(offset + extent, CANARY, dtype=np.uint8)
        start = offset
    # The element with the lowest address sits at ``start``; along an axis with a negative
    # stride the view's first element is at the far end.
    first = start
    if not empty:
        first += sum((n - 1) * -s for n, s in zip(shape, strides, strict=True) if s < 0)
    view = np.ndarray(shape, dtype=dtype, buffer=raw, offset=first, strides=strides)
    return Operand(raw, view)


def fill(view: np.ndarray, values_bits: np.ndarray) -> None:
    """Write bit patterns into a typed view of any layout, in the view's logical order."""
    view.view(bits_dtype(view.dtype))[...] = values_bits.reshape(view.shape)


@dataclass
class Case:
    """One relu call: its operands, what the output must hold and how to call it."""

    x: Operand
    out: Operand | None  # None: relu allocates; ``x`` itself for in place
    in_place: bool = False
    #: Called through onnx_relu.relu, not the ufunc: views of gapped rows then run as one kernel
    #: call over their rows (relu_compute_rows, onnx_relu._relu._relu_view).
    through_relu: bool = False


@dataclass
class Tally:
    cases: int = 0
    failures: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.failures.append(message)


LayoutFn = Callable[[np.dtype, int, int], Case]
LAYOUTS: dict[str, LayoutFn] = {}


def layout(name: str) -> Callable[[LayoutFn], LayoutFn]:
    def register(fn: LayoutFn) -> LayoutFn:
        LAYOUTS[name] = fn
        return fn

    return register


def _out_offset(offset: int, n: int) -> int:
    # Varies the output's misalignment relative to the input's with the size, so that every
    # (input offset, output offset) pair modulo 64 occurs somewhere in the sweep.
    return (offset + n) % 64


@layout("contiguous")
def _contiguous(dtype: np.dtype, n: int, offset: int) -> Case:
    return Case(place(dtype, (n,), offset), place(dtype, (n,), _out_offset(offset, n)))


@layout("aligned")
def _aligned(dtype: np.dtype, n: int, offset: int) -> Case:
    return Case(
        place(dtype, (n,), offset, aligned=True),
        place(dtype, (n,), _out_offset(offset, n), aligned=True),
    )


@layout("allocated-out")
def _allocated_out(dtype: np.dtype, n: int, offset: int) -> Case:
    return Case(place(dtype, (n,), offset), None)


@layout("in-place")
def _in_place(dtype: np.dtype, n: int, offset: int) -> Case:
    x = place(dtype, (n,), offset)
    return Case(x, x, in_place=True)


@layout("strided-in")
def _strided_in(dtype: np.dtype, n: int, offset: int) -> Case:
    s = dtype.itemsize
    return Case(place(dtype, (n,), offset, (2 * s,)), place(dtype, (n,), _out_offset(offset, n)))


@layout("strided-out")
def _strided_out(dtype: np.dtype, n: int, offset: int) -> Case:
    s = dtype.itemsize
    return Case(place(dtype, (n,), offset), place(dtype, (n,), _out_offset(offset, n), (3 * s,)))


@layout("reversed-in")
def _reversed_in(dtype: np.dtype, n: int, offset: int) -> Case:
    s = dtype.itemsize
    return Case(place(dtype, (n,), offset, (-s,)), place(dtype, (n,), _out_offset(offset, n)))


@layout("reversed-in-place")
def _reversed_in_place(dtype: np.dtype, n: int, offset: int) -> Case:
    x = place(dtype, (n,), offset, (-2 * dtype.itemsize,))
    return Case(x, x, in_place=True)


@layout("odd-byte-strides")
def _odd_byte_strides(dtype: np.dtype, n: int, offset: int) -> Case:
    # Element strides that are not multiples of the item size: every element unaligned.
    s = dtype.itemsize
    return Case(
        place(dtype, (n,), offset, (s + 1,)),
        place(dtype, (n,), _out_offset(offset, n), (-(s + 3),)),
    )


@layout("2-d-gapped-rows")
def _two_d(dtype: np.dtype, n: int, offset: int) -> Case:
    # Two rows with a 5-byte gap between them: numpy calls the loop once per row.
    s = dtype.itemsize
    return Case(place(dtype, (2, n), offset, (n * s + 5, s)), place(dtype, (2, n), offset))


@layout("2-d-gapped-rows-as-one-call")
def _two_d_one_call(dtype: np.dtype, n: int, offset: int) -> Case:
    s = dtype.itemsize
    return Case(
        place(dtype, (3, n), offset, (n * s + 5, s)),
        place(dtype, (3, n), offset),
        through_relu=True,
    )


@layout("2-d-gapped-rows-into-gapped-rows")
def _two_d_gapped_out(dtype: np.dtype, n: int, offset: int) -> Case:
    s = dtype.itemsize
    return Case(
        place(dtype, (3, n), offset, (n * s + 5, s)),
        place(dtype, (3, n), _out_offset(offset, n), (-(n * s + 2 * s), s)),
        through_relu=True,
    )


class Pools:
    """Per type: input bit patterns and the oracle's expected bit patterns, sliced per case."""

    def __init__(self, longest: int) -> None:
        self.inputs: dict[np.dtype, np.ndarray] = {}
        self.expected: dict[np.dtype, np.ndarray] = {}
        self.poison: dict[np.dtype, np.ndarray] = {}
        for i, dtype in enumerate(RELU_DTYPES):
            values = mixed_values(dtype, longest, seed=1000 + i)
            ubits = bits_dtype(dtype)
            self.inputs[dtype] = values.view(ubits)
            self.expected[dtype] = expected_relu(values).view(ubits)
            self.poison[dtype] = np.full(longest * dtype.itemsize, POISON, dtype=np.uint8).view(
                ubits
            )


def run_case(case: Case, pools: Pools, dtype: np.dtype, tally: Tally, where: tuple) -> None:
    """Run one case; ``where`` (phase, layout, n, offset) names it in a failure message."""
    x, out = case.x, case.out
    size = x.view.size
    inputs = pools.inputs[dtype][:size]
    fill(x.view, inputs)
    separate_out = out is not None and not case.in_place
    if separate_out:
        fill(out.view, pools.poison[dtype][:size])
    x_before = x.snapshot()
    out_before = out.snapshot() if separate_out else b""
    tally.cases += 1

    def fail(what: str) -> None:
        phase, name, n, offset = where
        tally.fail(f"[{phase}] {name} {dtype} n={n} offset={offset}: {what}")

    try:
        compute = relu if case.through_relu else relu_ufunc
        result = compute(x.view) if out is None else compute(x.view, out=out.view)
    except Exception as exc:  # noqa: BLE001 - any exception is a finding here
        fail(f"raised {type(exc).__name__}: {exc}")
        return
    if out is not None and result is not out.view:
        fail("the ufunc returned a new array instead of out")
        return
    ubits = inputs.dtype
    want = pools.expected[dtype][:size]
    got = np.asarray(result).view(ubits)
    if got.tobytes() != want.tobytes():
        shaped = x.view.shape
        fail(
            "wrong result: "
            + mismatch_report(
                inputs.reshape(shaped).view(dtype),
                got.view(dtype),
                want.reshape(shaped).view(dtype),
            )
        )
        return
    if case.in_place:
        # Put the input back: then the whole buffer must equal its state before the call.
        fill(x.view, inputs)
        if not x.unchanged_since(x_before):
            fail("bytes outside the operand's elements changed (in place)")
        return
    if not x.unchanged_since(x_before):
        fail("the input buffer changed")
    if separate_out:
        fill(out.view, pools.poison[dtype][:size])
        if not out.unchanged_since(out_before):
            fail("bytes outside the output's elements changed")


def streaming_isas() -> list[str]:
    """The streaming-store code paths this CPU can run, best first ("none": plain stores)."""
    order = (
        ["stnp", "none"]
        if platform.machine() in {"aarch64", "arm64"}
        else ["avx512", "avx2", "sse2", "none"]
    )
    return order[order.index(onnx_relu.tuning.kernel_tuning()["best_nt_isa"]) :]


def kernel_threads(count: int) -> AbstractContextManager:
    """Run with ``count`` kernel threads; the setting is restored afterwards."""
    return onnx_relu.num_threads(count)


def sweep(
    phase: str,
    sizes: Iterable[int],
    offsets: Sequence[int],
    layouts: Iterable[str],
    pools: Pools,
    tally: Tally,
    max_failures: int,
) -> int:
    start = tally.cases
    sizes = list(sizes)
    for name in layouts:
        make = LAYOUTS[name]
        for dtype in RELU_DTYPES:
            for n in sizes:
                for offset in offsets:
                    case = make(dtype, n, offset)
                    run_case(case, pools, dtype, tally, (phase, name, n, offset))
                    if len(tally.failures) >= max_failures:
                        return tally.cases - start
    return tally.cases - start


def concurrent_python_threads(pools: Pools, tally: Tally, n: int, rounds: int) -> int:
    """PYTHON_THREADS threads at once: shared input into own outputs, and each in place on its
    own."""
    errors: list[str] = []
    barrier = threading.Barrier(PYTHON_THREADS)
    calls = [0] * PYTHON_THREADS

    def worker(index: int, shared: dict[np.dtype, np.ndarray]) -> None:
        try:
            barrier.wait()
            for r in range(rounds):
                for dtype in RELU_DTYPES:
                    ubits = bits_dtype(dtype)
                    want = pools.expected[dtype][:n]
                    out = relu_ufunc(shared[dtype], out=np.empty(n, dtype=dtype))
                    own = pools.inputs[dtype][:n].copy().view(dtype)
                    relu(own, out=own)
                    calls[index] += 2
                    if not (
                        np.array_equal(out.view(ubits), want)
                        and np.array_equal(own.view(ubits), want)
                    ):
                        errors.append(f"thread {index} round {r} {dtype}: wrong result")
        except Exception as exc:  # noqa: BLE001
            errors.append(f"thread {index}: {type(exc).__name__}: {exc}")

    shared = {dtype: pools.inputs[dtype][:n].view(dtype) for dtype in RELU_DTYPES}
    threads = [threading.Thread(target=worker, args=(i, shared)) for i in range(PYTHON_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for dtype in RELU_DTYPES:
        if not np.array_equal(shared[dtype].view(bits_dtype(dtype)), pools.inputs[dtype][:n]):
            errors.append(f"shared input of {dtype} changed")
    tally.cases += sum(calls)
    for e in errors:
        tally.fail(f"[python threads] {e}")
    return sum(calls)


def check_sanitized_build() -> list[str]:
    """Reasons why this process is not running a sanitized onnx_relu, if any."""
    problems = []
    so_path = Path(onnx_relu._relu.__file__)
    blob = so_path.read_bytes()
    if b"__asan_report" not in blob:
        problems.append(f"{so_path} is not built with -fsanitize=address")
    if b"__ubsan_handle" not in blob:
        problems.append(f"{so_path} is not built with -fsanitize=undefined")
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
    if "libasan" not in maps and "asan" not in maps:
        problems.append("the ASan runtime is not loaded (LD_PRELOAD it)")
    return problems


def parse_sizes(text: str) -> list[int]:
    return [int(v) for v in text.replace(",", " ").split()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--large-sizes",
        type=parse_sizes,
        default=None,
        help=f"element counts of the large cases (default {list(LARGE_SIZES)})",
    )
    parser.add_argument(
        "--thread-counts",
        type=parse_sizes,
        default=None,
        help=f"kernel thread counts (default {list(THREAD_COUNTS)})",
    )
    parser.add_argument("--max-failures", type=int, default=20)
    parser.add_argument(
        "--full",
        action="store_true",
        help="the full sweep: every size 0..257 and offset 0..63 with one thread,"
        " every streaming ISA (about 2.6 million cases; minutes)",
    )
    parser.add_argument(
        "--allow-unsanitized",
        action="store_true",
        help="run against a plain build too (a correctness sweep only)",
    )
    args = parser.parse_args(argv)

    problems = check_sanitized_build()
    if problems and not args.allow_unsanitized:
        for p in problems:
            print(f"run_kernel_cases: {p}", file=sys.stderr)
        return 2
    large_sizes = args.large_sizes if args.large_sizes is not None else list(LARGE_SIZES)
    thread_counts = args.thread_counts if args.thread_counts is not None else list(THREAD_COUNTS)

    print(f"onnx_relu from {Path(onnx_relu.__file__).parent}; sanitized: {not problems}")
    n_concurrent = max(large_sizes) if large_sizes else 4096
    longest = 4 * max([*SMALL_SIZES, *large_sizes, n_concurrent]) + 64
    if args.full:
        small, offsets, sparse, isas = SMALL_SIZES, OFFSETS, SPARSE_OFFSETS, streaming_isas()
        large_offsets = SPARSE_OFFSETS
    else:  # the glue's sweep (see GLUE_SIZES); the best streaming ISA only
        small, offsets, sparse = GLUE_SIZES, GLUE_OFFSETS, GLUE_SPARSE_OFFSETS
        isas, large_offsets = streaming_isas()[:1], GLUE_LARGE_OFFSETS
    print(f"sweep: {'full' if args.full else 'the NumPy glue (default; --full for every size)'}")
    pools = Pools(longest)
    tally = Tally()
    layouts = list(LAYOUTS)
    phases: list[tuple[str, int, Sequence[int], Sequence[int]]] = [
        ("1 thread, small", 1, small, offsets),
        ("1 thread, large", 1, large_sizes, large_offsets),
    ]
    tunings: dict[str, dict] = {}
    for count in thread_counts:
        if args.full:
            phases.append((f"{count} threads", count, [*small, *large_sizes], sparse))
        else:
            phases.append((f"{count} threads", count, small, sparse))
            phases.append((f"{count} threads, large", count, large_sizes, large_offsets))
    # Thresholds lowered to 0 and parts to 64 bytes: every small size is split across the
    # pool and written with streaming stores, once per streaming code path of this CPU.
    for isa in isas:
        phase = f"2 threads, streaming {isa}, thresholds 0"
        phases.append((phase, 2, small, sparse))
        tunings[phase] = dict(parallel_threshold=0, nt_threshold=0, min_chunk=64, nt_isa=isa)

    t0 = time.perf_counter()
    for phase, count, sizes, offsets in phases:
        t = time.perf_counter()
        tuning = (
            onnx_relu.tuning.kernel_tuned(**tunings[phase]) if phase in tunings else nullcontext()
        )
        with kernel_threads(count), tuning:
            ran = sweep(phase, sizes, offsets, layouts, pools, tally, args.max_failures)
        print(
            f"{phase}: {ran} cases ({len(layouts)} layouts x {len(RELU_DTYPES)} types x"
            f" {len(sizes)} sizes x {len(offsets)} offsets) in {time.perf_counter() - t:.1f} s"
        )
        if len(tally.failures) >= args.max_failures:
            break
    if len(tally.failures) < args.max_failures:
        t = time.perf_counter()
        ran = concurrent_python_threads(pools, tally, n_concurrent, rounds=3)
        print(
            f"python threads: {ran} calls ({PYTHON_THREADS} threads, n={n_concurrent})"
            f" in {time.perf_counter() - t:.1f} s"
        )

    print(
        f"total: {tally.cases} cases in {time.perf_counter() - t0:.1f} s,"
        f" {len(tally.failures)} failures"
    )
    for message in tally.failures:
        print(f"FAIL {message}", file=sys.stderr)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
