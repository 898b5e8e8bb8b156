"""No memory or references leak: 10**6 small and 10**3 large calls, and refused calls too.

Resident memory (``/proc/self/statm``, or ``resource`` where there is no /proc) is measured after
a warm-up and must stay within a generous bound, far below what leaking one array per call would
cost. Reference counts of the inputs, outputs, dtypes and the ufunc must be unchanged: a C loop
or a Python wrapper keeping one reference per call would show here long before in memory.
"""

from __future__ import annotations

import gc
import mmap
import os
import resource
import sys
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

from onnx_relu import relu, relu_ufunc
from onnx_relu.errors import UnsupportedTypeError
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu
from tests.support.values import mixed_values

MIB = 1 << 20
SMALL_CALLS = 1_000_000
LARGE_CALLS = 1_000
LARGE_BYTES = 1 * MIB
REFUSED_CALLS = 100_000


def rss_bytes() -> int:
    """Resident set size of this process now."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            resident_pages = int(f.read().split()[1])
        return resident_pages * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # no /proc: peak RSS is the best available (an upper bound of growth)
        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def refcounts(*objects: object) -> list[int]:
    return [sys.getrefcount(o) for o in objects]


def growth_of(calls: Callable[[int], None], warm_up: int, count: int, watched: list[object]) -> int:
    """The RSS growth (bytes) over ``calls(count)``, after ``calls(warm_up)`` (caches, free
    lists, lazy imports), asserting that the reference counts of ``watched`` did not change."""
    calls(warm_up)
    gc.collect()
    # (counted outside ``assert``: pytest's assertion rewriting holds references of its own)
    counts_before = refcounts(*watched)
    rss_before = rss_bytes()
    calls(count)
    gc.collect()
    growth = rss_bytes() - rss_before
    counts_after = refcounts(*watched)
    assert counts_after == counts_before
    return growth


def test_rss_is_measurable():
    # The measurement must see a real allocation, or the bounds below would prove nothing. The
    # pages come from an anonymous mapping of their own, written: numpy's np.ones could reuse
    # heap memory an earlier test in this worker freed and the allocator kept resident (glibc
    # raises its mmap threshold after a large free), and then RSS does not move at all. Best of
    # three: memory that this worker frees at the same moment (a thread of an earlier test's
    # library ending, the allocator trimming) can hide part of one attempt's growth.
    grown = []
    for _ in range(3):
        gc.collect()
        before = rss_bytes()
        with mmap.mmap(-1, 64 * MIB) as block:
            np.frombuffer(block, dtype=np.uint8)[:] = 1
            grown.append(rss_bytes() - before)
    assert max(grown) >= 48 * MIB, f"RSS grew by {[g // MIB for g in grown]} MiB for 64 MiB"


def test_million_small_calls():
    inputs = [mixed_values(dtype, 6, seed=i) for i, dtype in enumerate(RELU_DTYPES)]
    outputs = [np.empty_like(x) for x in inputs]
    wants = [as_bits(expected_relu(x)).tobytes() for x in inputs]
    dtypes = [x.dtype for x in inputs]
    per_type = SMALL_CALLS // len(inputs)

    def calls(count: int) -> None:
        for x, out in zip(inputs, outputs, strict=True):
            for _ in range(count // 4):  # four call styles, a quarter each
                relu(x)
                relu(x, out=out)
                relu_ufunc(x, out=out)
                relu(x, out=(out,))

    growth = growth_of(calls, 4_000, per_type, [*inputs, *outputs, *dtypes, relu_ufunc])
    # A leak of one 6-element array per call would be > 100 MiB; 16 MiB is noise room.
    assert growth < 16 * MIB, f"RSS grew by {growth / MIB:.1f} MiB over {SMALL_CALLS} calls"
    for out, want in zip(outputs, wants, strict=True):
        assert as_bits(out).tobytes() == want
    print(f"\n{SMALL_CALLS} small calls: RSS growth {growth / MIB:.2f} MiB")


def test_thousand_large_calls():
    n = LARGE_BYTES // 4
    x = mixed_values(np.float32, n, seed=5)
    want = as_bits(expected_relu(x)).tobytes()
    out = np.empty_like(x)
    swapped = x.byteswap().view(x.dtype.newbyteorder("S"))  # the native-copy path allocates too
    bf16 = mixed_values(ml_dtypes.bfloat16, n, seed=6)

    def calls(count: int) -> None:
        for i in range(count):
            if i % 4 == 0:
                y = relu(x)  # a fresh 1 MiB output each time
            elif i % 4 == 1:
                y = relu(x, out=out)
            elif i % 4 == 2:
                y = relu(swapped)
            else:
                y = relu(bf16)
            del y

    watched = [x, out, swapped, bf16, x.dtype, swapped.dtype, bf16.dtype]
    growth = growth_of(calls, 20, LARGE_CALLS, watched)
    # Leaking one output per call would be ~1000 MiB; 64 MiB allows allocator caching.
    assert growth < 64 * MIB, f"RSS grew by {growth / MIB:.1f} MiB over {LARGE_CALLS} large calls"
    assert as_bits(relu(x)).tobytes() == want
    print(f"\n{LARGE_CALLS} large calls: RSS growth {growth / MIB:.2f} MiB")


@pytest.mark.parametrize(
    "bad",
    [np.zeros(4, np.uint8), np.zeros(4, np.complex64), [None, 1]],
    ids=["uint8", "complex64", "list-with-None"],
)
def test_refused_calls_leak_nothing(bad):
    out = np.zeros(4, np.float32)

    def calls(count: int) -> None:
        for _ in range(count):
            try:
                relu(bad, out=out)
            except UnsupportedTypeError:
                pass

    watched = [bad, out] + ([bad.dtype] if isinstance(bad, np.ndarray) else [])
    growth = growth_of(calls, 1_000, REFUSED_CALLS, watched)
    assert growth < 16 * MIB, (
        f"RSS grew by {growth / MIB:.1f} MiB over {REFUSED_CALLS} refused calls"
    )
    assert not out.any()
