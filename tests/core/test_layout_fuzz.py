"""Random layouts with out overlapping the input on purpose, checked against the oracle.

Issue 13 ("Done when"): input and out are random views of one byte buffer, drawn so that they
overlap in either direction, by whole or by part of an element (one of them unaligned then),
with any strides (negative, zero for the input, larger than an element, 2-D in either order)
and sizes from 1 to 50,000 elements, for all eight types. Each case also draws the thread count
(1, 2 or 4) and the kernel's thresholds (threads and streaming stores from the first byte, at a
size the call may straddle, or never), set through ``onnx_relu.tuning.kernel_tuned``. NumPy
defines a ufunc on overlapping operands as if the input had been copied first, so the expected
result is the oracle's Relu of a copy of the input taken before the call; the bytes of the
buffer outside out must keep their values.

Out never overlaps itself (two of its elements sharing bytes would make the result depend on
the order of the writes, which nothing defines); the input may (a zero stride, a stride of part
of an element).

The default run (``make test``) draws 500 cases per type, the same ones every time. The long
run is ``make fuzz``: ``ONNX_RELU_LAYOUT_FUZZ_CASES`` cases per type (default there 12,500, so
10^5 in all) from the seed ``ONNX_RELU_LAYOUT_FUZZ_SEED``. A failure names the seed, the type
and the case number, which reproduce it alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest

import onnx_relu
from onnx_relu.tuning import kernel_tuned
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu, mismatch_report
from tests.support.values import mixed_values

CASES_PER_TYPE = int(os.environ.get("ONNX_RELU_LAYOUT_FUZZ_CASES", "500"))
SEED = int(os.environ.get("ONNX_RELU_LAYOUT_FUZZ_SEED", "0"))
NEVER = 1 << 62


@dataclass(frozen=True)
class Layout:
    """One view of the byte buffer: where its first element is, its shape and byte strides."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def byte_range(self, itemsize: int) -> tuple[int, int]:
        """The first and one past the last byte the view touches."""
        low = high = self.offset
        for extent, stride in zip(self.shape, self.strides, strict=True):
            reach = (extent - 1) * stride
            low, high = low + min(reach, 0), high + max(reach, 0)
        return low, high + itemsize

    def element_offsets(self) -> np.ndarray:
        """The byte offset of every element, in the view's logical order."""
        offsets = np.full(self.shape, self.offset, dtype=np.int64)
        for axis, stride in enumerate(self.strides):
            index_shape = [1] * len(self.shape)
            index_shape[axis] = self.shape[axis]
            offsets = (
                offsets + np.arange(self.shape[axis], dtype=np.int64).reshape(index_shape) * stride
            )
        return offsets

    def view(self, buffer: np.ndarray, dtype: np.dtype) -> np.ndarray:
        # The ndarray constructor takes any offset and strides within the buffer (as_strided
        # cannot rebuild ml_dtypes types).
        return np.ndarray(
            self.shape, dtype, buffer=buffer, offset=self.offset, strides=self.strides
        )


def _draw_shape(rng: np.random.Generator) -> tuple[int, ...]:
    # Log-uniform sizes from 1 to 50,000 elements: most small, some over several 16 KiB blocks.
    n = int(np.exp(rng.uniform(0, np.log(50_000))))
    if rng.random() < 0.3:
        rows = int(rng.integers(1, 9))
        return (rows, max(1, n // rows))
    return (max(1, n),)


def _draw_out_strides(
    rng: np.random.Generator, shape: tuple[int, ...], itemsize: int
) -> tuple[int, ...]:
    """Strides under which no two elements of out share a byte."""
    step = itemsize * int(rng.choice([1, 1, 1, 2, 3]))
    inner = step * int(rng.choice([1, -1]))
    if len(shape) == 1:
        return (inner,)
    gap = int(rng.choice([0, 0, itemsize, 5 * itemsize]))
    outer = (shape[1] * step + gap) * int(rng.choice([1, -1]))
    if rng.random() < 0.3:  # column-major order: the first axis moves fastest
        return (inner, shape[0] * step * int(rng.choice([1, -1])))
    return (outer, inner)


def _draw_in_strides(
    rng: np.random.Generator, shape: tuple[int, ...], itemsize: int, out_strides: tuple[int, ...]
) -> tuple[int, ...]:
    choice = rng.random()
    if choice < 0.5:  # the same layout as out: numpy may then hand both to the loop as they are
        return out_strides
    if choice < 0.6:  # the input overlapping itself
        return tuple(
            int(rng.choice([0, itemsize // 2 or 1])) if rng.random() < 0.5 else s
            for s in out_strides
        )
    return _draw_out_strides(rng, shape, itemsize)


def _draw_case(rng: np.random.Generator, dtype: np.dtype) -> tuple[Layout, Layout]:
    itemsize = dtype.itemsize
    shape = _draw_shape(rng)
    out_strides = _draw_out_strides(rng, shape, itemsize)
    in_strides = _draw_in_strides(rng, shape, itemsize, out_strides)
    # Place out, then the input at a shift from it that makes them overlap (or, rarely, not):
    # a few whole or partial elements either way, or a large fraction of out's span.
    out = Layout(0, shape, out_strides)
    low, high = out.byte_range(itemsize)
    span = high - low
    kind = rng.random()
    if kind < 0.4:
        shift = int(rng.integers(1, 5)) * itemsize
    elif kind < 0.6:
        shift = int(rng.integers(1, 4 * itemsize + 1))  # partial elements too
    elif kind < 0.9:
        shift = int(rng.integers(0, span + 1))
    else:
        shift = span + int(rng.integers(0, 64))  # disjoint, as a control
    shift *= int(rng.choice([1, -1]))
    inp = Layout(shift, shape, in_strides)
    # Move both so that every byte they touch lies in the buffer, with room on both sides.
    in_low, _ = inp.byte_range(itemsize)
    base = 64 - min(low, in_low)
    out = Layout(out.offset + base, shape, out_strides)
    inp = Layout(inp.offset + base, shape, in_strides)
    return inp, out


def _thresholds(rng: np.random.Generator, nbytes: int) -> dict[str, int]:
    def one() -> int:
        pick = rng.random()
        if pick < 0.5:
            return 0
        if pick < 0.8:
            return int(rng.integers(0, max(nbytes, 1) + 1))  # a size the call may straddle
        return NEVER

    return {
        "parallel_threshold": one(),
        "nt_threshold": one(),
        "min_chunk": int(rng.choice([64, 256, 4096])),
    }


def run_case(dtype: np.dtype, case: int) -> None:
    rng = np.random.default_rng([SEED, RELU_DTYPES.index(dtype), case])
    inp, out = _draw_case(rng, dtype)
    in_range, out_range = inp.byte_range(dtype.itemsize), out.byte_range(dtype.itemsize)
    size = max(in_range[1], out_range[1]) + 64
    values = mixed_values(dtype, size // dtype.itemsize + 1, seed=rng)
    buffer = np.frombuffer(bytearray(values.tobytes()[:size]), dtype=np.uint8)
    x, y = inp.view(buffer, dtype), out.view(buffer, dtype)
    label = f"seed {SEED}, {dtype} case {case}: in {inp}, out {out}"
    source = x.copy()
    want = expected_relu(source)
    written = (out.element_offsets().reshape(-1, 1) + np.arange(dtype.itemsize)).ravel()
    times_written = np.bincount(written, minlength=size)
    assert times_written.max() <= 1, f"{label}: out overlaps itself (a test fault)"
    outside = times_written == 0
    before = buffer[outside].copy()
    threads = int(rng.choice([1, 2, 4]))
    with kernel_tuned(**_thresholds(rng, y.nbytes)), onnx_relu.num_threads(threads):
        result = onnx_relu.relu(x, out=y)
    assert result is y, label
    if not np.array_equal(as_bits(y), as_bits(want)):
        raise AssertionError(f"{label}, {threads} threads: " + mismatch_report(source, y, want))
    assert np.array_equal(buffer[outside], before), f"{label}: bytes outside out changed"


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
def test_random_overlapping_layouts(dtype):
    for case in range(CASES_PER_TYPE):
        run_case(dtype, case)
