"""out= overlapping the input, on every path of the kernel: threads, streaming stores, parts.

NumPy copies an operand when a forward element-by-element pass would read an input element
after it was overwritten (the output lies after the input). When the output starts before the
input it hands both to the loop as they are, trusting a forward pass. The kernel must then not
cut the call into parts run by several threads, nor walk several pages side by side: both
write some output elements before reading input elements that share their bytes.

These tests force the kernel's thresholds to 0 (every call threaded and streaming) as well as
to sizes the calls straddle, and run every overlap in both directions, by whole and by partial
elements, strided, reversed and 2-D, for every type at 1, 2 and 4 threads. The expected result
is always Relu of a copy of the input taken before the call.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnx_relu
from onnx_relu import relu
from onnx_relu.tuning import kernel_tuned
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu, mismatch_report
from tests.support.values import mixed_values

# Element counts around the 64-byte lines, the 16 KiB blocks of the streaming loops and the
# splits into parts, up to several per thread.
SIZES = [33, 1000, 4099, 40_000]
THREADS = [1, 2, 4]
NEVER = 1 << 62


def _views_by_elements(buffer: np.ndarray, n: int, kind: str):
    """(input, out) views of ``buffer`` that share memory only in part."""
    if kind == "out-before-in":  # no copy by numpy: the case that went wrong
        return buffer[16 : 16 + n], buffer[:n]
    if kind == "out-before-in-by-1":
        return buffer[1 : 1 + n], buffer[:n]
    if kind == "out-after-in":  # numpy copies first
        return buffer[:n], buffer[16 : 16 + n]
    if kind == "strided-in-over-out":  # relu(x[::2][:n], out=x[:n])
        return buffer[: 2 * n : 2], buffer[:n]
    if kind == "strided-out-over-in":
        return buffer[:n], buffer[: 2 * n : 2]
    if kind == "reversed":
        return buffer[:n], buffer[:n][::-1]
    if kind == "rows-shifted":  # 2-D, each row's output one row above its input
        cols = max(1, n // 8)
        grid = buffer[: 9 * cols].reshape(9, cols)
        return grid[1:], grid[:-1]
    raise AssertionError(kind)


ELEMENT_OVERLAPS = [
    "out-before-in",
    "out-before-in-by-1",
    "out-after-in",
    "strided-in-over-out",
    "strided-out-over-in",
    "reversed",
    "rows-shifted",
]


@pytest.fixture
def low_thresholds():
    """Every call of any size uses the thread pool and (out of place) the streaming stores."""
    with kernel_tuned(parallel_threshold=0, nt_threshold=0, min_chunk=64):
        yield


def _check(buffer: np.ndarray, n: int, kind: str, label: str) -> None:
    x, out = _views_by_elements(buffer, n, kind)
    assert x.shape == out.shape and np.shares_memory(x, out), label
    source = x.copy()
    want = expected_relu(source)
    # Elements of the buffer outside `out` must keep their bits.
    outside = np.ones(buffer.shape, dtype=bool)
    outside[_views_by_elements(np.arange(buffer.size), n, kind)[1].ravel()] = False
    outside_before = as_bits(buffer)[outside].copy()
    assert relu(x, out=out) is out
    if not np.array_equal(as_bits(out), as_bits(want)):
        raise AssertionError(f"{label}: " + mismatch_report(source, out, want))
    assert np.array_equal(as_bits(buffer)[outside], outside_before), f"{label}: bytes outside out"


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
@pytest.mark.parametrize("kind", ELEMENT_OVERLAPS)
@pytest.mark.parametrize("threads", THREADS)
def test_overlapping_out_with_every_path_forced(dtype, kind, threads, low_thresholds):
    with onnx_relu.num_threads(threads):
        for n in SIZES:
            buffer = mixed_values(dtype, 2 * n + 32, seed=n)
            _check(buffer, n, kind, f"{dtype} {kind} n={n} threads={threads}")


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.parametrize("parallel,nt", [(0, NEVER), (NEVER, 0), (16 << 10, 64 << 10)])
def test_overlapping_out_across_each_threshold(dtype, threads, parallel, nt):
    """Only threads, only streaming stores, and thresholds that the sizes below straddle."""
    tuned = kernel_tuned(parallel_threshold=parallel, nt_threshold=nt, min_chunk=64)
    with tuned, onnx_relu.num_threads(threads):
        for n in (1000, 40_000, 100_003):
            for kind in ("out-before-in", "out-before-in-by-1", "strided-in-over-out"):
                buffer = mixed_values(dtype, 2 * n + 32, seed=n + 1)
                _check(buffer, n, kind, f"{dtype} {kind} n={n} p={parallel} nt={nt}")


@pytest.mark.parametrize("dtype", [d for d in RELU_DTYPES if d.itemsize > 1], ids=str)
@pytest.mark.parametrize("byte_shift", [1, -1])
@pytest.mark.parametrize("threads", [1, 4])
def test_overlap_by_part_of_an_element(dtype, byte_shift, threads, low_thresholds):
    """Input and out a fraction of an element apart (one of them unaligned): numpy buffers."""
    n = 40_000
    raw = np.frombuffer(bytearray(mixed_values(dtype, n + 8, seed=5).tobytes()), dtype=np.uint8)
    start_in, start_out = (8, 8 - byte_shift)
    x = raw[start_in : start_in + n * dtype.itemsize].view(dtype)
    out = raw[start_out : start_out + n * dtype.itemsize].view(dtype)
    source = x.copy()
    want = expected_relu(source)
    before = raw.copy()
    with onnx_relu.num_threads(threads):
        assert relu(x, out=out) is out
    assert np.array_equal(as_bits(out), as_bits(want)), mismatch_report(source, out, want)
    lo, hi = start_out, start_out + n * dtype.itemsize
    assert np.array_equal(raw[:lo], before[:lo]) and np.array_equal(raw[hi:], before[hi:])


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int8)], ids=str)
def test_issue_example_at_default_tuning(dtype):
    """The reported case, 3 Mi elements shifted by 16, at the tuning the machine chose."""
    x = (np.arange(3 << 20) % 251 - 125).astype(dtype)
    source = x[16:].copy()
    want = expected_relu(source)
    relu(x[16:], out=x[:-16])
    assert np.array_equal(as_bits(x[:-16]), as_bits(want)), mismatch_report(source, x[:-16], want)
