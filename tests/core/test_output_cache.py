"""The output cache of ``relu(x)``: reuse, cap, off switch, threads, fork, exit, leaks, failure.

Outputs of at least ``min_bytes`` come from a bounded cache of freed blocks through NumPy's
memory-handler API (NEP 49); every other array, before, during and after, keeps numpy's own
handler. The results must be indistinguishable from numpy-allocated ones.

Tests lower ``min_bytes`` to 64 KiB so that small arrays reach the cache; the fixture restores
the limits and empties the cache afterwards.
"""

from __future__ import annotations

import gc
import pickle
import sys
import threading

import numpy as np
import pytest

from onnx_relu import relu, relu_ufunc
from onnx_relu.output_cache import cache_info, release_cache, set_cache_limits
from onnx_relu.tuning import configure_from_environment
from tests.support.dtypes import RELU_DTYPES
from tests.support.fresh_python import run_python
from tests.support.oracle import as_bits, expected_relu
from tests.support.values import mixed_values

KIB, MIB = 1 << 10, 1 << 20
# numpy's own function naming an array's handler (numpy >= 1.22; not re-exported publicly).
get_handler_name = np._core.multiarray.get_handler_name
OURS = "onnx_relu_output_cache"


@pytest.fixture
def small_cache():
    """min_bytes 64 KiB, cap 64 MiB; restored (and the cache emptied) afterwards."""
    previous = set_cache_limits(max_bytes=64 * MIB, min_bytes=64 * KIB)
    release_cache()
    try:
        yield
    finally:
        gc.collect()
        set_cache_limits(max_bytes=previous["max_bytes"], min_bytes=previous["min_bytes"])
        release_cache()


def assert_relu_of(y: np.ndarray, x: np.ndarray) -> None:
    np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
def test_reuse_gives_back_the_same_block(small_cache, dtype):
    x = mixed_values(dtype, (256 * KIB) // np.dtype(dtype).itemsize, seed=1)
    first = relu(x)
    assert get_handler_name(first) == OURS
    address = first.ctypes.data
    assert_relu_of(first, x)
    del first
    before = cache_info()
    second = relu(x)
    after = cache_info()
    assert second.ctypes.data == address
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]
    assert_relu_of(second, x)


def test_only_relu_outputs_use_the_handler(small_cache):
    x = mixed_values(np.float32, 64 * KIB, seed=2)
    default = get_handler_name()
    y = relu(x)
    z = np.empty_like(x)
    w = x.copy()
    assert get_handler_name(y) == OURS
    assert get_handler_name(z) == default and get_handler_name(w) == default
    assert get_handler_name() == default  # the current handler was put back
    # below the minimum, out=, in place, and the bare ufunc: numpy's allocation or none
    assert get_handler_name(relu(x[:100])) == default
    assert get_handler_name(relu_ufunc(x)) == default


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x,
        lambda x: x.reshape(256, -1),
        lambda x: np.asfortranarray(x.reshape(256, -1)),
        lambda x: x.reshape(64, 16, -1).transpose(2, 0, 1).copy(order="K"),  # axes permuted
        lambda x: x.reshape(256, -1).T,  # F-contiguous view
        lambda x: x.reshape(256, -1)[:, ::2],  # not contiguous: numpy allocates
        lambda x: x[::-1],  # negative stride: numpy allocates
    ],
    ids=["1d", "2d C", "2d F", "3d permuted", "F view", "strided", "reversed"],
)
def test_results_are_indistinguishable_from_numpy_allocated_ones(small_cache, make):
    x = make(mixed_values(np.float32, 256 * KIB, seed=3))
    y = relu(x)
    reference = relu_ufunc(x)  # allocated by numpy, through the ufunc
    assert type(y) is np.ndarray and y.base is None
    assert y.shape == reference.shape and y.strides == reference.strides
    assert y.dtype == reference.dtype
    flag_names = (
        "C_CONTIGUOUS",
        "F_CONTIGUOUS",
        "OWNDATA",
        "WRITEABLE",
        "ALIGNED",
        "WRITEBACKIFCOPY",
    )
    assert {f: y.flags[f] for f in flag_names} == {f: reference.flags[f] for f in flag_names}
    assert y.flags.owndata and y.flags.writeable and y.flags.aligned
    # Every layout gets a cached output, laid out as the ufunc lays out its own (above).
    assert get_handler_name(y) == OURS
    assert y.ctypes.data % 64 == 0
    assert not np.shares_memory(y, x)
    assert_relu_of(y, x)
    restored = pickle.loads(pickle.dumps(y))
    restored_reference = pickle.loads(pickle.dumps(reference))
    assert restored.strides == restored_reference.strides
    np.testing.assert_array_equal(as_bits(restored), as_bits(y))
    y[...] = 7  # writeable, and the input is untouched
    assert_relu_of(reference, x)


def test_views_outlive_the_result(small_cache):
    x = mixed_values(np.float64, 64 * KIB, seed=4)
    view = relu(x)[::3]  # the result itself is only referenced by the view's base
    assert view.base is not None and get_handler_name(view.base) == OURS
    for _ in range(5):  # other outputs must not take the block the view still holds
        np.testing.assert_array_equal(relu(x), expected_relu(x))
    np.testing.assert_array_equal(view, expected_relu(x)[::3])
    live = cache_info()["live_blocks"]
    del view
    gc.collect()
    assert cache_info()["live_blocks"] == live - 1


def test_resize_and_huge_page_alignment(small_cache):
    x = mixed_values(np.int32, (4 * MIB) // 4, seed=5)
    y = relu(x)
    assert y.ctypes.data % (2 * MIB) == 0  # from 2 MiB, blocks start on a huge-page boundary
    expected = expected_relu(x)
    y.resize(3 * y.size, refcheck=False)  # through the handler's realloc
    np.testing.assert_array_equal(y[: x.size], expected)
    assert (y[x.size :] == 0).all()  # numpy zero-fills what resize adds
    y.resize(100, refcheck=False)
    np.testing.assert_array_equal(y, expected[:100])


def test_cap_bounds_idle_blocks_and_evicts_the_oldest(small_cache):
    set_cache_limits(max_bytes=3 * MIB)
    x = mixed_values(np.int8, 1 * MIB, seed=6)  # one block: 1 MiB + the header page
    outputs = [relu(x) for _ in range(5)]
    addresses = [y.ctypes.data for y in outputs]
    while outputs:  # freed first to last
        outputs.pop(0)
    info = cache_info()
    assert info["cached_bytes"] <= 3 * MIB
    assert info["cached_blocks"] == 2  # 2 x (1 MiB + 4 KiB) fit, 3 do not
    assert info["live_blocks"] == 0
    # the newest blocks were kept: the last two outputs freed
    assert relu(x).ctypes.data in addresses[-2:]
    # a block larger than the cap is never kept
    big = relu(mixed_values(np.int8, 4 * MIB, seed=7))
    del big
    assert cache_info()["cached_bytes"] <= 3 * MIB


def test_lowering_the_cap_releases_at_once(small_cache):
    x = mixed_values(np.float32, 128 * KIB, seed=8)
    ys = [relu(x) for _ in range(3)]
    del ys
    assert cache_info()["cached_blocks"] >= 1
    set_cache_limits(max_bytes=0)
    assert cache_info()["cached_bytes"] == 0
    y = relu(x)  # off: numpy allocates
    assert get_handler_name(y) != OURS
    assert_relu_of(y, x)


def test_release_cache_returns_what_it_released(small_cache):
    x = mixed_values(np.float32, 128 * KIB, seed=9)
    y = relu(x)
    del y
    cached = cache_info()["cached_bytes"]
    assert cached > 0
    assert release_cache() == cached
    assert cache_info()["cached_bytes"] == 0 and release_cache() == 0


def test_bad_limits_are_refused():
    with pytest.raises(ValueError, match="max_bytes must be >= 0 bytes, got -1"):
        set_cache_limits(max_bytes=-1)
    with pytest.raises(TypeError, match="min_bytes must be an integer number of bytes"):
        set_cache_limits(min_bytes=1.5)


@pytest.mark.parametrize(
    ("value", "expected"), [("0", 0), ("64M", 64 * MIB), ("1073741824", 1 << 30)]
)
def test_cache_bytes_environment_variable(value, expected):
    result = run_python(
        """
        import numpy as np, onnx_relu
        from onnx_relu.output_cache import cache_info
        y = onnx_relu.relu(np.ones(1 << 20, dtype=np.float32))
        print(cache_info()["max_bytes"], np._core.multiarray.get_handler_name(y))
        """,
        {"ONNX_RELU_CACHE_BYTES": value},
    )
    assert result.returncode == 0, result.stderr
    max_bytes, handler = result.stdout.split()
    assert int(max_bytes) == expected
    assert (handler == OURS) == (expected > 0)
    assert result.stderr == ""


def test_bad_cache_environment_variables_warn():
    with pytest.warns(RuntimeWarning, match=r"ONNX_RELU_CACHE_BYTES='lots' is not a size in bytes"):
        configure_from_environment({"ONNX_RELU_CACHE_BYTES": "lots"})
    with pytest.warns(RuntimeWarning, match=r"ONNX_RELU_CACHE_MIN_BYTES='-3' is not a size"):
        configure_from_environment({"ONNX_RELU_CACHE_MIN_BYTES": "-3"})
    with pytest.warns(RuntimeWarning, match=r"ONNX_RELU_PARALLEL_THRESHOLD='x' is not a size"):
        configure_from_environment({"ONNX_RELU_PARALLEL_THRESHOLD": "x"})


def test_threads_share_the_cache_safely(small_cache):
    set_cache_limits(max_bytes=16 * MIB)
    errors: list[BaseException] = []
    base = cache_info()

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(150):
                dtype = RELU_DTYPES[rng.integers(len(RELU_DTYPES))]
                n = int(rng.integers(64 * KIB, 1 * MIB)) // np.dtype(dtype).itemsize
                x = mixed_values(dtype, n, seed=rng)
                y = relu(x)
                np.testing.assert_array_equal(as_bits(y), as_bits(expected_relu(x)))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    info = cache_info()
    assert info["live_blocks"] == base["live_blocks"]
    assert info["cached_bytes"] <= 16 * MIB
    assert info["hits"] > base["hits"]


def test_forked_child_uses_the_cache():
    result = run_python(
        """
        import os
        import numpy as np, onnx_relu
        from onnx_relu.output_cache import cache_info, set_cache_limits
        set_cache_limits(min_bytes=64 << 10)
        x = np.arange(-50000, 50000, dtype=np.float32)
        parent_y = onnx_relu.relu(x)
        freed = onnx_relu.relu(x); del freed  # an idle block the child inherits
        pid = os.fork()
        if pid == 0:
            ok = True
            for _ in range(20):
                y = onnx_relu.relu(x)
                ok &= bool((y == np.maximum(x, 0)).all())
                del y
            ok &= cache_info()["hits"] >= 20 and bool((parent_y == np.maximum(x, 0)).all())
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        y = onnx_relu.relu(x)  # the parent's cache still works
        print(os.waitstatus_to_exitcode(status), bool((y == np.maximum(x, 0)).all()))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True"]


def test_exit_releases_the_cache():
    # atexit runs its functions last-registered first: this check, registered before onnx_relu
    # is imported, runs after onnx_relu's own exit hook.
    result = run_python(
        """
        import atexit
        def check():
            from onnx_relu.output_cache import cache_info
            info = cache_info()
            print(info["max_bytes"], info["cached_bytes"])
        atexit.register(check)
        import numpy as np, onnx_relu
        from onnx_relu.output_cache import cache_info
        y = onnx_relu.relu(np.ones(4 << 20, dtype=np.float32)); del y
        print(cache_info()["cached_bytes"] > 0)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "0", "0"]


def test_rss_bounded_over_many_calls_of_random_sizes():
    # 10**4 allocating calls of random sizes from 64 KiB to 6 MiB under a 32 MiB cap: resident
    # memory may grow by the cap and the live arrays, never by one block per call.
    result = run_python(
        """
        import os
        import numpy as np, onnx_relu
        from onnx_relu.output_cache import cache_info, set_cache_limits
        set_cache_limits(max_bytes=32 << 20, min_bytes=64 << 10)
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        rng = np.random.default_rng(0)
        source = rng.standard_normal(6 << 20 >> 2).astype(np.float32)
        sizes = rng.integers(16 << 10, 6 << 20 >> 2, size=10_000)
        for n in sizes[:500]:
            y = onnx_relu.relu(source[:n])
        del y
        warm = rss()
        keep = []
        for i, n in enumerate(sizes):
            y = onnx_relu.relu(source[:n])
            if i % 1000 == 0:
                keep.append(y)  # some outputs stay alive meanwhile
        del y, keep
        info = cache_info()
        print((rss() - warm) >> 20, info["cached_bytes"] <= 32 << 20, info["live_blocks"])
        """
    )
    assert result.returncode == 0, result.stderr
    growth_mib, bounded, live = result.stdout.split()
    assert bounded == "True" and live == "0"
    # 10**4 leaked blocks would be tens of GiB; the cap and the kept outputs are ~90 MiB.
    assert int(growth_mib) < 128, growth_mib


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
def test_allocation_failure_is_numpys_memory_error_and_loses_nothing():
    result = run_python(
        """
        import resource
        import numpy as np, onnx_relu
        from onnx_relu.output_cache import cache_info
        x = np.arange(-(6 << 20), 6 << 20, dtype=np.int32)[::-1].copy()  # 48 MiB
        kept = x.copy()
        y = onnx_relu.relu(x[: 1 << 20]); del y  # an idle 4 MiB block, starts the pool
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (32 << 20), resource.RLIM_INFINITY))
        try:  # the precondition: the limit is enforced (qemu-user, for one, ignores RLIMIT_AS)
            probe = bytearray(64 << 20)
            print("RLIMIT_AS not enforced here")
            raise SystemExit(0)
        except MemoryError:
            pass
        try:
            onnx_relu.relu(x)
            print("no error")
        except MemoryError:
            info = cache_info()
            print("MemoryError", info["failures"], info["cached_bytes"])
        small = onnx_relu.relu(x[: 1 << 20])  # the cache still works under the limit
        print(bool((x == kept).all()), bool((small == np.maximum(x[: 1 << 20], 0)).all()))
        """
    )
    assert result.returncode == 0, result.stderr
    if result.stdout.startswith("RLIMIT_AS not enforced here"):
        pytest.skip(
            "RLIMIT_AS is not enforced here (an emulator such as qemu-user does not): "
            "no allocation can be made to fail"
        )
    assert result.stdout.split() == ["MemoryError", "1", "0", "True", "True"]


@pytest.mark.parametrize("size", [2**63, 2**64, 2**100])
@pytest.mark.parametrize("name", ["max_bytes", "min_bytes"])
def test_limits_beyond_sys_maxsize_are_a_value_error_naming_the_range(name, size):
    before = cache_info()
    with pytest.raises(
        ValueError,
        match=rf"^{name} must be <= {sys.maxsize} bytes, got {size};"
        rf" allowed: 0\.\.{sys.maxsize} \(sys\.maxsize, which as a cap means no limit\)$",
    ):
        set_cache_limits(**{name: size})
    after = cache_info()
    assert (after["max_bytes"], after["min_bytes"]) == (before["max_bytes"], before["min_bytes"])


def test_sys_maxsize_is_the_largest_cap_and_means_no_limit():
    previous = set_cache_limits(max_bytes=sys.maxsize)
    try:
        assert cache_info()["max_bytes"] == sys.maxsize
    finally:
        set_cache_limits(max_bytes=previous["max_bytes"])
