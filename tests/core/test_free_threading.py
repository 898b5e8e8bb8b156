"""relu from many threads while others change the thread count, the thresholds and the cache.

The compiled module declares that it does not need the GIL (``Py_mod_gil``), so on a
free-threaded Python every call below runs truly in parallel, Python code included; on a Python
with the GIL numpy still releases it around every loop of 500 elements or more, so the kernel's
pool, its settings and the output cache are shared by threads that run at once there too.

Callers run relu on every type at sizes across the forced-low thresholds (serial, split over the
pool, streaming stores, from the output cache or not), allocating, into ``out=`` and in place,
and compare every result bit for bit with the oracle; meanwhile other threads change the thread
count, the thresholds and streaming-store ISA, and the cache's limits, and release the cache.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import sysconfig
import threading

import numpy as np
import pytest

import onnx_relu
from onnx_relu.output_cache import cache_info, release_cache, set_cache_limits
from onnx_relu.tuning import kernel_tuned, kernel_tuning, set_kernel_tuning
from tests.support.dtypes import RELU_DTYPES
from tests.support.isas import isas_up_to
from tests.support.oracle import as_bits, expected_relu
from tests.support.values import mixed_values

KIB = 1 << 10
#: The thresholds for the duration (output bytes): outputs of 32 KiB and more are split over
#: the pool in parts of at least 4 KiB, of 128 KiB and more streamed, of 16 KiB and more taken
#: from the output cache.
TUNING = {
    "parallel_threshold": 32 * KIB,
    "nt_threshold": 128 * KIB,
    "min_chunk": 4 * KIB,
    "spin_ns": 0,
}
CACHE_MIN_BYTES = 16 * KIB
#: Elements: every type crosses some thresholds between these (1 byte x 37 to 8 bytes x 70 001).
SIZES = (37, 3_001, 20_011, 70_001)
CALLERS = 6
CALLS_PER_CALLER = 300
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """(input, expected output bits) for every type and size; inputs are never written."""
    cases = []
    for dtype in RELU_DTYPES:
        for n in SIZES:
            x = mixed_values(dtype, n)
            x.flags.writeable = False
            cases.append((x, as_bits(expected_relu(x))))
    return cases


@pytest.fixture
def restore_settings():
    """Put back the thread count, the kernel's settings and the cache's limits."""
    threads = onnx_relu.get_num_threads()
    tuning = kernel_tuning()
    cache = cache_info()
    yield
    onnx_relu.set_num_threads(threads)
    keys = ("parallel_threshold", "nt_threshold", "min_chunk", "spin_ns", "nt_isa")
    set_kernel_tuning(**{key: tuning[key] for key in keys})
    set_cache_limits(max_bytes=cache["max_bytes"], min_bytes=cache["min_bytes"])


def test_callers_and_setters_at_once_give_exact_results(restore_settings):
    cases = _cases()
    best_isa = kernel_tuning()["best_nt_isa"]
    isas = isas_up_to(best_isa)
    done = threading.Event()
    failures: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(CALLERS + 3)
    calls = [0] * CALLERS

    def caller(index: int) -> None:
        rng = random.Random(index)
        outs = {id(x): np.empty_like(x) for x, _ in cases}
        barrier.wait(timeout=60)
        for call in range(CALLS_PER_CALLER):
            x, want = cases[rng.randrange(len(cases))]
            mode = call % 3
            if mode == 0:
                y = onnx_relu.relu(x)
            elif mode == 1:
                y = onnx_relu.relu(x, out=outs[id(x)])
            else:
                y = x.copy()
                onnx_relu.relu(y, out=y)
            if y.dtype != x.dtype or not np.array_equal(as_bits(y), want):
                failures.append(f"caller {index} call {call}: {x.dtype} n={x.size} mode={mode}")
            calls[index] += 1

    def thread_count_setter() -> None:
        rng = random.Random(100)
        barrier.wait(timeout=60)
        while not done.is_set():
            onnx_relu.set_num_threads(rng.choice((1, 2, 3, 4)))
            with onnx_relu.num_threads(rng.choice((1, 2, 4))):
                pass

    def tuning_setter() -> None:
        rng = random.Random(200)
        barrier.wait(timeout=60)
        while not done.is_set():
            set_kernel_tuning(
                parallel_threshold=rng.choice((0, TUNING["parallel_threshold"], 1 << 40)),
                nt_threshold=rng.choice((0, TUNING["nt_threshold"], 1 << 40)),
                min_chunk=rng.choice((64, TUNING["min_chunk"])),
                nt_isa=rng.choice(isas),
            )

    def cache_setter() -> None:
        rng = random.Random(300)
        barrier.wait(timeout=60)
        while not done.is_set():
            set_cache_limits(
                max_bytes=rng.choice((0, 64 * KIB, 1 << 20, 64 << 20)),
                min_bytes=rng.choice((CACHE_MIN_BYTES, 4 * KIB)),
            )
            if rng.random() < 0.3:
                release_cache()
            info = cache_info()
            assert info["cached_blocks"] >= 0 and info["live_blocks"] >= 0

    def guarded(target, *args):
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
                errors.append(exc)
                done.set()

        return run

    gc.collect()  # blocks that garbage of an earlier test (in this worker) still holds
    before = cache_info()
    with kernel_tuned(**TUNING):
        set_cache_limits(max_bytes=8 << 20, min_bytes=CACHE_MIN_BYTES)
        callers = [threading.Thread(target=guarded(caller, i)) for i in range(CALLERS)]
        setters = [
            threading.Thread(target=guarded(setter))
            for setter in (thread_count_setter, tuning_setter, cache_setter)
        ]
        for thread in callers + setters:
            thread.start()
        for thread in callers:
            thread.join(timeout=600)
        done.set()
        for thread in setters:
            thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in callers + setters), "a thread did not finish"
    if errors:
        raise errors[0]
    assert failures == [], failures[:5]
    assert calls == [CALLS_PER_CALLER] * CALLERS
    # Every block the callers' outputs took came back: the cache's books balance.
    assert cache_info()["live_blocks"] == before["live_blocks"]
    for x, _ in cases:
        assert not x.flags.writeable


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython (3.13t or later)")
def test_import_leaves_the_gil_off():
    code = "import sys, onnx_relu, onnx_relu.tuning; print(sys._is_gil_enabled())"
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    done = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", code],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "False", "")


def test_executing_the_module_again_keeps_the_process_settings():
    """The module's process-wide set-up (machine detection, fork and exit handlers) runs once:
    a second execution of the module (a re-import) leaves the settings as they were."""
    code = """if True:
        import importlib, sys
        import numpy as np
        import onnx_relu
        from onnx_relu.tuning import kernel_tuning, set_kernel_tuning
        onnx_relu.set_num_threads(3)
        set_kernel_tuning(nt_threshold=12345)
        first = onnx_relu.relu_ufunc
        del sys.modules["onnx_relu._relu"]
        again = importlib.import_module("onnx_relu._relu")
        assert again.relu is not first  # a new module, a new ufunc
        t = again._tuning()
        print(t["num_threads"], t["nt_threshold"], again.relu(np.array([-1.0, 2.0])).tolist())
    """
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    first_line = done.stdout.split("\n")[0]
    assert (done.returncode, first_line, done.stderr) == (0, "3 12345 [0.0, 2.0]", "")
