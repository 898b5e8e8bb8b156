"""Eight Python threads calling relu at once: every result bit-exact, shared inputs untouched.

numpy releases the GIL around the loop above 500 elements, so large calls really overlap. Every
case also runs with 2 and 4 kernel threads (``onnx_relu.num_threads``) busy inside every Python
thread's call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import numpy as np
import pytest

import onnx_relu
from onnx_relu import relu, relu_ufunc
from tests.support.dtypes import RELU_DTYPES
from tests.support.oracle import as_bits, expected_relu
from tests.support.values import mixed_values

PYTHON_THREADS = 8
#: Small (GIL held, one loop call), medium (GIL released), large (1 to 8 MiB: above the
#: kernel's default parallel threshold, 2 MiB on the development machine, for every type but
#: int8; tests/core/test_threads.py forces the thresholds low to reach every path).
SIZES = (37, 4_099, 1_048_583)


def kernel_threads(count: int | None) -> AbstractContextManager:
    """Use ``count`` kernel threads for the duration (None: leave the setting as it is)."""
    return nullcontext() if count is None else onnx_relu.num_threads(count)


KERNEL_THREAD_SETTINGS = [None, 2, 4]


def run_at_once(work: Callable[[int], None], count: int = PYTHON_THREADS) -> None:
    """Run ``work(index)`` in ``count`` threads released together; re-raise the first failure."""
    barrier = threading.Barrier(count)
    failures: list[BaseException] = []

    def target(index: int) -> None:
        try:
            barrier.wait(timeout=60)
            work(index)
        except BaseException as exc:  # noqa: BLE001 - reported in the main thread
            failures.append(exc)

    threads = [threading.Thread(target=target, args=(i,), name=f"relu-{i}") for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if failures:
        raise failures[0]


def _inputs(n: int) -> dict[np.dtype, tuple[np.ndarray, bytes]]:
    """Per type: an input and the oracle's expected result (as bytes)."""
    table = {}
    for i, dtype in enumerate(RELU_DTYPES):
        x = mixed_values(dtype, n, seed=100 + i)
        table[dtype] = (x, as_bits(expected_relu(x)).tobytes())
    return table


@pytest.mark.parametrize(
    "kernel_thread_count", KERNEL_THREAD_SETTINGS, ids=lambda c: f"kernel-threads-{c}"
)
@pytest.mark.parametrize("n", SIZES)
def test_shared_input_separate_outputs(n, kernel_thread_count):
    table = _inputs(n)
    before = {dtype: x.tobytes() for dtype, (x, _) in table.items()}
    rounds = 3 if n < 100_000 else 1

    def work(index: int) -> None:
        for _ in range(rounds):
            for dtype in RELU_DTYPES[index % 8 :] + RELU_DTYPES[: index % 8]:  # threads differ
                x, want = table[dtype]
                out = np.empty_like(x)
                assert relu(x, out=out) is out
                assert as_bits(out).tobytes() == want, f"thread {index}: wrong result for {dtype}"
                fresh = relu_ufunc(x)
                assert as_bits(fresh).tobytes() == want, f"thread {index}: wrong result for {dtype}"

    with kernel_threads(kernel_thread_count):
        run_at_once(work)
    for dtype, (x, _) in table.items():
        assert x.tobytes() == before[dtype], f"the shared {dtype} input changed"


@pytest.mark.parametrize(
    "kernel_thread_count", KERNEL_THREAD_SETTINGS, ids=lambda c: f"kernel-threads-{c}"
)
@pytest.mark.parametrize("n", SIZES)
def test_each_thread_in_place_on_its_own_array(n, kernel_thread_count):
    table = _inputs(n)
    rounds = 3 if n < 100_000 else 1

    def work(index: int) -> None:
        for _ in range(rounds):
            for dtype in RELU_DTYPES:
                x, want = table[dtype]
                own = x.copy()
                assert relu(own, out=own) is own
                assert as_bits(own).tobytes() == want, (
                    f"thread {index}: wrong in-place result for {dtype}"
                )

    with kernel_threads(kernel_thread_count):
        run_at_once(work)


@pytest.mark.parametrize(
    "kernel_thread_count", KERNEL_THREAD_SETTINGS, ids=lambda c: f"kernel-threads-{c}"
)
def test_threads_writing_disjoint_slices_of_one_output(kernel_thread_count):
    # Each thread owns one slice of a shared output (and of a shared input, read only): no
    # thread's write may land in another's slice, at any slice boundary alignment.
    n = 8 * 131_075
    for i, dtype in enumerate(RELU_DTYPES):
        x = mixed_values(dtype, n, seed=300 + i)
        want = as_bits(expected_relu(x)).tobytes()
        out = np.zeros_like(x)
        bounds = (
            np.linspace(0, n, PYTHON_THREADS + 1).astype(int) + np.arange(PYTHON_THREADS + 1) % 3
        )
        bounds[0], bounds[-1] = 0, n

        def work(index: int, x=x, out=out, bounds=bounds) -> None:
            lo, hi = bounds[index], bounds[index + 1]
            relu(x[lo:hi], out=out[lo:hi])

        with kernel_threads(kernel_thread_count):
            run_at_once(work)
        assert as_bits(out).tobytes() == want, f"wrong result for {dtype}"


def test_thread_count_setting_is_restored():
    # The helper above must leave the setting as it found it.
    before = onnx_relu.get_num_threads()
    with kernel_threads(3):
        assert onnx_relu.get_num_threads() == 3
    assert onnx_relu.get_num_threads() == before
    with kernel_threads(None):
        assert onnx_relu.get_num_threads() == before
