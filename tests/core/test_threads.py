"""The threaded kernel: bit-identical results on every path, and the thread-count settings.

Every result is compared, bit for bit, with the tests' vectorised oracle
(tests/support/oracle.py), which decodes the IEEE fields with numpy (sign bit, exponent,
mantissa) and never runs the kernel's compare. The kernel's thresholds are lowered through
``onnx_relu.tuning.set_kernel_tuning`` so that the thread pool, the streaming stores of every
ISA this CPU runs and the part boundaries are reached with small arrays; one test also runs at
the default thresholds.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

import onnx_relu
from onnx_relu.ceiling import copy_ceiling
from onnx_relu.tuning import (
    configure_from_environment,
    default_num_threads,
    kernel_tuning,
    set_kernel_tuning,
)
from tests.support import REPOSITORY
from tests.support.dtypes import TYPE_NAMES, relu_type
from tests.support.fresh_python import run_python
from tests.support.isas import ALL_ISAS, isas_up_to
from tests.support.oracle import as_bits, assert_relu_vectorised
from tests.support.values import mixed_values

TYPES = TYPE_NAMES
# Element counts that straddle the 64-byte lines and the 16 KiB blocks (4 pages) of the
# streaming loops, and the splits into parts.
SIZES = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 65, 127, 129, 255, 256, 1000, 4097, 40_000]

ISAS = isas_up_to(kernel_tuning()["best_nt_isa"])[1:]  # streaming levels this machine runs
NEVER = 1 << 62


def dtype_of(name: str) -> np.dtype:
    return relu_type(name).dtype


def random_array(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """The special values (as many as fit), then uniformly random bit patterns drawn from
    ``rng``: every sign, NaN payload, infinity and subnormal occurs."""
    return mixed_values(dtype_of(name), n, seed=rng)


def offset_array(dtype: np.dtype, n: int, byte_offset: int) -> np.ndarray:
    """An empty 1-D array whose data starts byte_offset bytes after a 64-byte boundary."""
    raw = np.empty(n * dtype.itemsize + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + byte_offset
    return raw[start : start + n * dtype.itemsize].view(dtype)


def run_layouts(name: str, n: int, rng: np.random.Generator, tag: str) -> None:
    """relu on every memory layout the kernel distinguishes, each checked against the oracle."""
    dtype = dtype_of(name)
    size = dtype.itemsize
    x = random_array(name, n, rng)

    # Contiguous, output at a 64-byte boundary, input aligned or not.
    for in_offset, out_offset in [(0, 0), (1, 0), (size, 0), (0, size), (3 * size, 5 * size)]:
        xi = offset_array(dtype, n, in_offset)
        xi[...] = x
        out = offset_array(dtype, n, out_offset)
        result = onnx_relu.relu(xi, out=out)
        assert result is out
        assert_relu_vectorised(out, x, f"{tag} {name} n={n} in+{in_offset} out+{out_offset}")
        assert np.array_equal(as_bits(xi), as_bits(x))

    if size > 1:  # output not aligned to its element size: regular stores must still be right
        out = offset_array(dtype, n, 1)
        onnx_relu.relu(x, out=out)
        assert_relu_vectorised(out, x, f"{tag} {name} n={n} unaligned out")

    # Allocating.
    assert_relu_vectorised(onnx_relu.relu(x), x, f"{tag} {name} n={n} allocating")

    # In place, aligned and at an element offset from a line.
    for offset in (0, size):
        inplace = offset_array(dtype, n, offset)
        inplace[...] = x
        onnx_relu.relu(inplace, out=inplace)
        assert_relu_vectorised(inplace, x, f"{tag} {name} n={n} in place +{offset}")

    # Strided input, strided output, reversed.
    wide = random_array(name, 2 * n, rng)
    assert_relu_vectorised(onnx_relu.relu(wide[::2]), wide[::2], f"{tag} {name} n={n} strided in")
    out = np.zeros(2 * n, dtype=dtype)
    onnx_relu.relu(x, out=out[::2])
    assert_relu_vectorised(out[::2], x, f"{tag} {name} n={n} strided out")
    assert_relu_vectorised(onnx_relu.relu(x[::-1]), x[::-1], f"{tag} {name} n={n} reversed")

    # A non-contiguous 2-D slice (one loop call per row) and overlapping operands.
    grid = random_array(name, 3 * (n + 1), rng).reshape(3, n + 1)[:, :n]
    assert_relu_vectorised(onnx_relu.relu(grid), grid, f"{tag} {name} n={n} 2-D slice")
    if n > 1:
        shifted = x.copy()
        onnx_relu.relu(shifted[:-1], out=shifted[1:])
        assert_relu_vectorised(shifted[1:], x[:-1], f"{tag} {name} n={n} overlapping")


@pytest.fixture
def restore_tuning():
    """Give the test a free hand with the kernel's tuning, and put it back afterwards."""
    before = kernel_tuning()
    yield
    set_kernel_tuning(
        parallel_threshold=before["parallel_threshold"],
        nt_threshold=before["nt_threshold"],
        min_chunk=before["min_chunk"],
        nt_isa=before["nt_isa"],
        spin_ns=before["spin_ns"],
        nt_streams=before["nt_streams"],
    )
    onnx_relu.set_num_threads(before["num_threads"])


# (threads, streaming-store ISA or None): serial and threaded, regular and streaming stores.
CONFIGS = (
    [(1, None), (2, None), (3, None)]
    + [(1, isa) for isa in ISAS]
    + [(threads, isa) for isa in ISAS for threads in (2, 3)]
)


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize(("threads", "isa"), CONFIGS, ids=lambda v: str(v))
def test_every_path_matches_the_oracle(name, threads, isa, restore_tuning):
    # Every call is split (no size threshold, no minimum part) and, with an ISA, streams: in
    # groups of 4 pages side by side on 1 thread, in one sequential stream on 2, in groups of 3
    # on 3 (nt_streams), whatever this machine's vendor chose. With 2 threads the pool's threads
    # never spin (they sleep at once between calls).
    onnx_relu.set_num_threads(threads)
    set_kernel_tuning(
        parallel_threshold=0,
        min_chunk=0,
        nt_threshold=0 if isa else NEVER,
        nt_isa=isa or kernel_tuning()["nt_isa"],
        spin_ns=0 if threads == 2 else 100_000,
        nt_streams={1: 4, 2: 1, 3: 3}[threads],
    )
    rng = np.random.default_rng([threads, len(isa or ""), TYPES.index(name)])
    for n in SIZES:
        run_layouts(name, n, rng, f"threads={threads} isa={isa}")


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("streams", [0, 1, 2, 3, 4, 5, 8, NEVER])
def test_streaming_stores_in_every_number_of_streams(name, streams, restore_tuning):
    """The streaming-store loop walks nt_streams pages side by side, then lines, then the last
    elements: sizes just around whole groups of those pages, the output at a line boundary or
    an element after one, on every streaming ISA, 1 and 2 threads, are exact."""
    dtype = dtype_of(name)
    group = max(streams, 1) * 4096 if streams != NEVER else 4 * 4096
    rng = np.random.default_rng([TYPES.index(name), streams % 1000])
    sizes = sorted(
        {
            n
            for k in (1, 2)
            for d in (-65, -1, 0, 1, 64)
            if (n := (k * group + d) // dtype.itemsize) > 0
        }
    )
    for isa in ISAS:
        for threads in (1, 2):
            onnx_relu.set_num_threads(threads)
            set_kernel_tuning(
                parallel_threshold=0, min_chunk=0, nt_threshold=0, nt_isa=isa, nt_streams=streams
            )
            for n in sizes:
                x = random_array(name, n, rng)
                for out_offset in (0, dtype.itemsize):
                    out = offset_array(dtype, n, out_offset)
                    onnx_relu.relu(x, out=out)
                    tag = f"{name} isa={isa} threads={threads} streams={streams} n={n}"
                    assert_relu_vectorised(out, x, f"{tag} out+{out_offset}")
    assert kernel_tuning()["nt_streams"] == streams


@pytest.mark.parametrize("name", TYPES)
def test_threaded_equals_serial_at_the_default_thresholds(name, restore_tuning):
    """Sizes just below, at and above the real thresholds, with 2 threads and with 1."""
    tuning = kernel_tuning()
    size = dtype_of(name).itemsize
    sizes = set()
    for threshold in (tuning["parallel_threshold"], tuning["nt_threshold"]):
        if threshold <= 8 << 20:  # larger defaults (2 x LLC on some CPUs) are covered above
            sizes.update(threshold // size + d for d in (-1, 0, 1, 17))
    rng = np.random.default_rng(TYPES.index(name))
    for n in sorted(sizes):
        x = random_array(name, n, rng)
        results = {}
        for threads in (1, 2):
            onnx_relu.set_num_threads(threads)
            results[threads] = onnx_relu.relu(x)
            assert_relu_vectorised(results[threads], x, f"defaults threads={threads} {name} n={n}")
            inplace = x.copy()
            onnx_relu.relu(inplace, out=inplace)
            assert_relu_vectorised(inplace, x, f"defaults in place threads={threads} {name} n={n}")
        assert results[1].tobytes() == results[2].tobytes()


def test_part_boundaries_of_many_threads(restore_tuning):
    """More threads than elements per line: empty and single-element ranges must be right."""
    set_kernel_tuning(parallel_threshold=0, min_chunk=0, nt_threshold=0)
    rng = np.random.default_rng(7)
    for threads in (4, 7, 16):
        onnx_relu.set_num_threads(threads)
        for n in (1, 5, 16, 17, 100, 1025):
            x = random_array("float32", n, rng)
            assert_relu_vectorised(onnx_relu.relu(x), x, f"threads={threads} n={n}")
            assert_relu_vectorised(onnx_relu.relu(x[1:]), x[1:], f"threads={threads} n={n} shifted")


@pytest.mark.parametrize("spin_ns", [0, 100_000])
def test_concurrent_callers_get_correct_results(spin_ns, restore_tuning):
    """Python threads calling at once: one uses the pool, the others run serially; no deadlock."""
    onnx_relu.set_num_threads(2)
    set_kernel_tuning(parallel_threshold=0, min_chunk=0, spin_ns=spin_ns)
    rng = np.random.default_rng(11)
    inputs = [random_array(name, 50_000 + 7 * i, rng) for i, name in enumerate(TYPES)]
    failures: list[str] = []

    def work(x: np.ndarray) -> None:
        try:
            for _ in range(30):
                assert_relu_vectorised(onnx_relu.relu(x), x, "concurrent")
        except AssertionError as exc:  # reported by the main thread
            failures.append(str(exc))

    workers = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "a relu call never returned"
    assert failures == []


def test_forked_child_makes_its_own_pool():
    result = run_python(
        """
        import os, warnings
        import numpy as np
        import onnx_relu
        from onnx_relu.tuning import kernel_tuning, set_kernel_tuning
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads (3.12+)
        onnx_relu.set_num_threads(2)
        set_kernel_tuning(parallel_threshold=0, min_chunk=0, nt_threshold=0)
        x = np.linspace(-1, 1, 100_001, dtype=np.float32)
        expected = np.where(x > 0, x, np.float32(0))
        assert np.array_equal(onnx_relu.relu(x), expected)
        pool = 1 if kernel_tuning()["threads_supported"] else 0  # 0: a serial build
        assert kernel_tuning()["pool_workers"] == pool
        pid = os.fork()
        if pid == 0:
            ok = kernel_tuning()["pool_workers"] == 0  # the parent's pool is forgotten
            for _ in range(20):
                ok = ok and np.array_equal(onnx_relu.relu(x), expected)
            ok = ok and kernel_tuning()["pool_workers"] == pool
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert np.array_equal(onnx_relu.relu(x), expected)
        print("fork ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fork ok"


def test_interpreter_exits_while_a_daemon_thread_is_computing():
    result = run_python(
        """
        import threading
        import numpy as np
        import onnx_relu
        from onnx_relu.tuning import kernel_tuning, set_kernel_tuning
        onnx_relu.set_num_threads(2)
        set_kernel_tuning(parallel_threshold=0, min_chunk=0)
        x = np.linspace(-1, 1, 1_000_000, dtype=np.float64)
        started = threading.Event()
        def spin():
            while True:
                onnx_relu.relu(x)
                started.set()
        threading.Thread(target=spin, daemon=True).start()
        started.wait()
        print("exiting")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting"


# --------------------------------------------------------------------------------------------
# The settings
# --------------------------------------------------------------------------------------------


def test_set_num_threads_returns_the_previous_count(restore_tuning):
    onnx_relu.set_num_threads(3)
    assert onnx_relu.set_num_threads(1) == 3
    assert onnx_relu.get_num_threads() == 1
    assert onnx_relu.set_num_threads(np.int64(2)) == 1
    assert onnx_relu.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, 257, 10**30])
def test_set_num_threads_refuses_counts_out_of_range(bad, restore_tuning):
    before = onnx_relu.get_num_threads()
    with pytest.raises(onnx_relu.ThreadCountError, match=r"must be in 1\.\.256, got"):
        onnx_relu.set_num_threads(bad)
    assert onnx_relu.get_num_threads() == before
    assert issubclass(onnx_relu.ThreadCountError, ValueError)


@pytest.mark.parametrize("bad", [2.0, "2", None, True])
def test_set_num_threads_refuses_non_integers(bad, restore_tuning):
    before = onnx_relu.get_num_threads()
    with pytest.raises(TypeError, match="must be an integer"):
        onnx_relu.set_num_threads(bad)
    assert onnx_relu.get_num_threads() == before


def test_num_threads_context_manager_restores_even_on_error(restore_tuning):
    onnx_relu.set_num_threads(2)
    with onnx_relu.num_threads(1) as n:
        assert n == 1
        assert onnx_relu.get_num_threads() == 1
    assert onnx_relu.get_num_threads() == 2
    with pytest.raises(RuntimeError, match="boom"):
        with onnx_relu.num_threads(5):
            assert onnx_relu.get_num_threads() == 5
            raise RuntimeError("boom")
    assert onnx_relu.get_num_threads() == 2
    with pytest.raises(onnx_relu.ThreadCountError):
        with onnx_relu.num_threads(0):
            pass  # not reached
    assert onnx_relu.get_num_threads() == 2


def test_default_is_the_cpus_available_to_the_process():
    result = run_python("import onnx_relu; print(onnx_relu.get_num_threads())")
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == default_num_threads()
    if hasattr(os, "sched_getaffinity"):
        assert default_num_threads() == min(len(os.sched_getaffinity(0)), 256)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_default_follows_the_affinity_mask():
    result = run_python(
        """
        import os
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import onnx_relu
        print(onnx_relu.get_num_threads())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


@pytest.mark.parametrize("value", ["1", "3", " 2 ", "256"])
def test_environment_variable_sets_the_count(value):
    result = run_python(
        "import onnx_relu; print(onnx_relu.get_num_threads())", {"ONNX_RELU_NUM_THREADS": value}
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == int(value)
    assert result.stderr == ""


@pytest.mark.parametrize(
    "value",
    # "3_0" and full-width "\uff13" are numbers to Python's int(), not to a user; the last is
    # beyond any integer the kernel can hold.
    ["abc", "0", "-2", "257", "1.5", "3_0", "\uff13", "9" * 30],
)
def test_bad_environment_variable_warns_and_uses_the_default(value):
    result = run_python(
        "import onnx_relu; print(onnx_relu.get_num_threads())", {"ONNX_RELU_NUM_THREADS": value}
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == default_num_threads()
    assert "RuntimeWarning" in result.stderr
    assert f"ONNX_RELU_NUM_THREADS={value!r} is not a whole number in 1..256" in result.stderr


def test_bad_environment_variable_is_an_error_under_warnings_as_errors():
    """The variables are applied when the kernel is first loaded (first use of relu), not by
    ``import onnx_relu``, which loads neither numpy nor the kernel."""
    result = run_python(
        "import warnings; warnings.simplefilter('error'); import onnx_relu; print('imported');"
        " onnx_relu.relu",
        {"ONNX_RELU_NUM_THREADS": "many"},
    )
    assert result.returncode != 0
    assert result.stdout.strip() == "imported"
    assert "RuntimeWarning: ONNX_RELU_NUM_THREADS='many'" in result.stderr


@pytest.mark.parametrize(
    "first_use",
    [
        "import numpy as np; onnx_relu.relu(np.ones(2))",
        "import numpy as np; onnx_relu.relu_ufunc(np.ones(2))",
        "from onnx_relu import relu_ufunc",
        "onnx_relu.set_num_threads",
        "from onnx_relu.tuning import kernel_tuning",
    ],
)
def test_the_environment_is_applied_by_every_first_use_of_the_kernel(first_use):
    """Whichever public name loads the kernel first, the kernel runs with the ONNX_RELU_*
    settings from then on."""
    code = (
        "import sys, onnx_relu; assert 'onnx_relu._relu' not in sys.modules; "
        f"{first_use}; from onnx_relu import _relu; print(_relu._get_num_threads())"
    )
    result = run_python(code, {"ONNX_RELU_NUM_THREADS": "3"})
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 3


@pytest.mark.parametrize(
    ("variable", "setting", "value", "expected"),
    [
        ("ONNX_RELU_NT_THRESHOLD", "nt_threshold", value, expected)
        for value, expected in [
            ("4194304", 4194304),
            ("4M", 4 << 20),
            ("64MiB", 64 << 20),
            ("512k", 512 << 10),
            ("1G", 1 << 30),
            ("never", 1 << 62),
            ("0", 0),
        ]
    ]
    + [
        ("ONNX_RELU_PARALLEL_THRESHOLD", "parallel_threshold", value, expected)
        for value, expected in [("8M", 8 << 20), ("0", 0), ("never", 1 << 62)]
    ],
)
def test_threshold_environment_variables(variable, setting, value, expected):
    result = run_python(
        f"import onnx_relu; print(onnx_relu.tuning.kernel_tuning()[{setting!r}])",
        {variable: value},
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == expected
    assert result.stderr == ""


def test_bad_nt_threshold_environment_variable_warns():
    result = run_python(
        "import onnx_relu; t = onnx_relu.tuning.kernel_tuning();"
        " print(t['nt_threshold'] == t['default_nt_threshold'])",
        {"ONNX_RELU_NT_THRESHOLD": "lots"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
    assert "ONNX_RELU_NT_THRESHOLD='lots' is not a size in bytes" in result.stderr


def stderr_of_import_with_default_nt_threshold(value: str) -> str:
    """Import onnx_relu with ONNX_RELU_NT_THRESHOLD=value; assert the import worked and kept
    the default threshold; return what it printed on stderr."""
    result = run_python(
        "import onnx_relu; t = onnx_relu.tuning.kernel_tuning();"
        " print(t['nt_threshold'] == t['default_nt_threshold'])",
        {"ONNX_RELU_NT_THRESHOLD": value},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
    assert "RuntimeWarning" in result.stderr
    return result.stderr


@pytest.mark.parametrize(
    "value", ["9000000000G", str(1 << 63), str((1 << 62) + 1), "99999999999999999999999k"]
)
def test_huge_nt_threshold_environment_variable_warns(value):
    # 2**63 bytes or more does not fit the kernel's sizes: a warning and the default, no crash.
    stderr = stderr_of_import_with_default_nt_threshold(value)
    assert f"ONNX_RELU_NT_THRESHOLD={value!r} is " in stderr
    assert "more than the largest threshold (4611686018427387904 bytes" in stderr


@pytest.mark.parametrize("value", ["\uff14M", "1_0M"])
def test_nt_threshold_with_non_ascii_digits_warns(value):
    stderr = stderr_of_import_with_default_nt_threshold(value)
    assert f"ONNX_RELU_NT_THRESHOLD={value!r} is not a size in bytes" in stderr


def test_configure_from_environment_directly(restore_tuning):
    configure_from_environment({"ONNX_RELU_NUM_THREADS": "5"})
    assert onnx_relu.get_num_threads() == 5
    with pytest.warns(RuntimeWarning, match="ONNX_RELU_NUM_THREADS='x'"):
        configure_from_environment({"ONNX_RELU_NUM_THREADS": "x"})
    assert onnx_relu.get_num_threads() == default_num_threads()


def test_tuning_reports_the_machine():
    tuning = kernel_tuning()
    assert tuning["l2_bytes"] > 0 and tuning["llc_bytes"] >= tuning["l2_bytes"]
    assert tuning["cache_source"] in {"sysconf", "sysfs", "default"}
    assert tuning["best_nt_isa"] in ALL_ISAS
    assert tuning["max_threads"] == 256
    with pytest.raises(ValueError, match="nt_isa 'avx1024' is not available"):
        set_kernel_tuning(nt_isa="avx1024")
    # The other architecture's levels are unknown names here.
    foreign = "sse2" if "stnp" in ALL_ISAS else "stnp"
    with pytest.raises(ValueError, match=f"nt_isa '{foreign}' is not available"):
        set_kernel_tuning(nt_isa=foreign)


@pytest.mark.parametrize("name", ["parallel_threshold", "nt_threshold", "min_chunk", "spin_ns"])
@pytest.mark.parametrize("bad", [-5, -(2**63), 2**63, 2**64 + 5])
def test_set_kernel_tuning_refuses_sizes_out_of_range_naming_it(name, bad, restore_tuning):
    before = kernel_tuning()
    with pytest.raises(ValueError, match=rf"{name} must be in 0\.\.{sys.maxsize} \(sys\.maxsize\)"):
        set_kernel_tuning(**{name: bad})
    assert kernel_tuning()[name] == before[name]  # unchanged


@pytest.mark.parametrize(("name", "bad"), [("nt_threshold", True), ("spin_ns", 1.5), ("nt_isa", 2)])
def test_set_kernel_tuning_refuses_values_of_the_wrong_type(name, bad, restore_tuning):
    with pytest.raises(TypeError, match=f"{name} must be"):
        set_kernel_tuning(**{name: bad})


def test_set_kernel_tuning_keeps_minus_one_as_leave_unchanged(restore_tuning):
    before = kernel_tuning()["nt_threshold"]
    set_kernel_tuning(nt_threshold=-1)
    assert kernel_tuning()["nt_threshold"] == before


# --------------------------------------------------------------------------------------------
# The benchmark harness's copy ceiling
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("nontemporal", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_copy_ceiling_copies(nontemporal, threads, restore_tuning):
    onnx_relu.set_num_threads(threads)
    set_kernel_tuning(parallel_threshold=0, min_chunk=0)
    rng = np.random.default_rng(3)
    for n in (0, 1, 63, 64, 65, 1000, 100_003):
        src = rng.integers(-128, 128, size=n + 1, dtype=np.int8)[1:]  # unaligned source
        dst = np.zeros(n, dtype=np.int8)
        copy_ceiling(src, dst, nontemporal=nontemporal)
        assert np.array_equal(src, dst)
        same = src.copy()
        copy_ceiling(same, same, nontemporal=nontemporal)  # the in-place ceiling
        assert np.array_equal(same, src)


def test_the_kernel_modules_take_no_names_from_each_other_in_a_circle():
    """tuning.py no longer exports the output cache's or the copy ceiling's names (each is taken
    from the module that defines it; the ENV_* names are tuning's own), and the modules of the
    kernel's settings import in one direction: _environment (nothing of the package) <- tuning
    <- output_cache, ceiling."""
    import ast

    from onnx_relu import tuning

    for name in ("cache_info", "set_cache_limits", "release_cache", "MAX_CACHE_BYTES",
                 "copy_ceiling"):  # fmt: skip
        assert name not in tuning.__all__ and not hasattr(tuning, name), name
    assert all(getattr(tuning, name) == f"ONNX_RELU_{name[4:]}" for name in tuning.__all__
               if name.startswith("ENV_"))  # fmt: skip
    source = REPOSITORY / "src" / "onnx_relu"
    imports: dict[str, set[str]] = {}
    for module in ("tuning", "output_cache", "_environment", "ceiling"):
        tree = ast.parse((source / f"{module}.py").read_text())
        imports[module] = {
            (node.module or "").lstrip(".") or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1
            for alias in node.names
        }
    assert imports["_environment"] == set()
    assert "output_cache" not in imports["tuning"] and "ceiling" not in imports["tuning"]
    assert "tuning" in imports["output_cache"] and "tuning" in imports["ceiling"]


def test_copy_ceiling_refuses_bad_buffers():
    a = np.zeros(100, dtype=np.int8)
    with pytest.raises(ValueError, match="same size"):
        copy_ceiling(a, np.zeros(99, dtype=np.int8))
    with pytest.raises(ValueError, match="overlap"):
        copy_ceiling(a[1:], a[:-1])
    with pytest.raises(BufferError, match="not writable"):
        copy_ceiling(a, bytes(100))  # read-only destination


def test_docs_performance_page_examples_run(restore_tuning):
    page = (REPOSITORY / "docs" / "performance.md").read_text(encoding="utf-8")
    blocks = page.split("```python\n")[1:]
    assert blocks, "the documentation's performance page has no Python example"
    before = onnx_relu.get_num_threads()
    for block in blocks:
        exec(compile(block.split("```", 1)[0], "docs/performance.md", "exec"), {})
    assert onnx_relu.get_num_threads() == before


def test_num_threads_blocks_overlapping_in_two_threads_leave_no_stale_count(restore_tuning):
    # A enters 1, B enters 4, A exits, B exits: the count from before A's block comes back.
    onnx_relu.set_num_threads(3)
    steps = [threading.Event() for _ in range(4)]
    seen: dict[str, int] = {}
    errors: list[BaseException] = []

    def thread_a():
        try:
            with onnx_relu.num_threads(1):
                seen["a_in"] = onnx_relu.get_num_threads()
                steps[0].set()
                assert steps[1].wait(30)
            seen["a_out"] = onnx_relu.get_num_threads()
            steps[2].set()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            steps[0].set()
            steps[2].set()

    def thread_b():
        try:
            assert steps[0].wait(30)
            with onnx_relu.num_threads(4):
                seen["b_in"] = onnx_relu.get_num_threads()
                steps[1].set()
                assert steps[2].wait(30)
            seen["b_out"] = onnx_relu.get_num_threads()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            steps[1].set()

    workers = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert errors == []
    assert seen == {"a_in": 1, "b_in": 4, "a_out": 4, "b_out": 3}
    assert onnx_relu.get_num_threads() == 3


def test_num_threads_blocks_in_one_thread_restore_what_they_replaced(restore_tuning):
    onnx_relu.set_num_threads(3)
    with onnx_relu.num_threads(2):
        onnx_relu.set_num_threads(7)
        with onnx_relu.num_threads(5):
            onnx_relu.set_num_threads(6)
            assert onnx_relu.get_num_threads() == 6
        assert onnx_relu.get_num_threads() == 7
    assert onnx_relu.get_num_threads() == 3
    # Blocks ended out of order (generators closed late) still restore the original count.
    first, second = onnx_relu.num_threads(1), onnx_relu.num_threads(4)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert onnx_relu.get_num_threads() == 4
    second.__exit__(None, None, None)
    assert onnx_relu.get_num_threads() == 3
