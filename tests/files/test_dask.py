"""Relu on Dask: lazy arrays, type errors before any task runs, a memory-limited LocalCluster
processing far more data than its workers may hold, and Zarr stores through ``apply --dask``."""

from __future__ import annotations

import logging
import resource
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

# Dask, distributed and Zarr are the `dask` extra; a Python without their wheels skips this file.
for _module in ("dask", "distributed", "zarr"):
    pytest.importorskip(
        _module, reason=f"{_module} is not installed (no wheel for this Python yet)"
    )

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import zarr  # noqa: E402

from onnx_relu import UnsupportedTypeError, relu  # noqa: E402
from onnx_relu.files.jobs.zarr_dask import relu_zarr  # noqa: E402
from tests.support.cli import run_cli  # noqa: E402
from tests.support.dask_cluster import apply_dask, local_client, ramp_values  # noqa: E402
from tests.support.dtypes import TYPE_NAMES, relu_type  # noqa: E402
from tests.support.oracle import expected_relu, same_bits  # noqa: E402
from tests.support.values import mixed_values  # noqa: E402

ZARR_TYPE_NAMES = [name for name in TYPE_NAMES if name != "bfloat16"]

# 384 MiB: a worker that imports dask.array where pandas, pyarrow, scipy and xarray are
# installed (make test installs them) holds about 176 MiB before its first task.
WORKER_MEMORY = 384 << 20
BIG_ARRAY_BYTES = 4 * WORKER_MEMORY  # four times one worker's memory limit
BIG_CHUNK_BYTES = 16 << 20


def tasks_counter():
    """A dask array source that counts the non-empty chunks it produces (tasks run)."""
    produced = []

    def source(chunk):
        if chunk.size:
            produced.append(chunk.size)
        return chunk

    return produced, source


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_relu_of_a_dask_array_is_lazy_with_same_chunks_and_dtype(type_name):
    values = mixed_values(relu_type(type_name).dtype, 64).reshape(8, 8)
    produced, source = tasks_counter()
    x = da.from_array(values, chunks=(3, 5)).map_blocks(source, dtype=values.dtype)
    y = relu(x)
    assert isinstance(y, da.Array)
    assert (y.chunks, y.dtype, y.shape) == (x.chunks, x.dtype, x.shape)
    assert produced == []  # nothing computed yet
    with dask.config.set(scheduler="synchronous"):
        result = y.compute()
    assert sum(produced) == values.size
    assert same_bits(result, expected_relu(values))


REFUSED = [
    ("int8", 13),
    ("int16", 13),
    ("int32", 6),
    ("int64", 1),
    ("bfloat16", 12),
    ("uint8", None),
    ("bool", None),
    ("uint64", None),
    ("complex64", None),
    ("float8", None),
]


@pytest.mark.parametrize(("type_name", "opset"), REFUSED)
def test_refused_types_fail_before_any_task_runs(type_name, opset):
    dtype = (
        relu_type(type_name).dtype
        if type_name in TYPE_NAMES
        else np.dtype(ml_dtypes.float8_e4m3fn if type_name == "float8" else type_name)
    )
    produced, source = tasks_counter()
    x = da.zeros((6, 6), dtype=dtype, chunks=3).map_blocks(source, dtype=dtype)
    with pytest.raises(UnsupportedTypeError, match="does not allow"):
        relu(x, opset=opset)
    assert produced == []


def test_allowed_float_types_pass_at_every_opset():
    for opset in (1, 6, 13, 14, 21):
        for dtype in (np.float16, np.float32, np.float64):
            x = da.zeros(4, dtype=dtype, chunks=2)
            assert relu(x, opset=opset).dtype == x.dtype


# --- a memory-limited cluster --------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_client():
    # (distributed's own default log level, as before the set-up was shared)
    with local_client(memory_limit=WORKER_MEMORY, silence_logs=logging.WARNING) as client:
        yield client


def mixed_float32(start: int, count: int) -> np.ndarray:
    """Elements start..start+count of a large float32 array: a multiplicative hash of the
    index, so every kind of bit pattern appears (NaN payloads, -0.0, infinities, negatives)."""
    index = np.arange(start, start + count, dtype=np.uint32)
    index *= np.uint32(2654435761)
    return index.view(np.float32)


def mixed_float32_chunk(block_info=None) -> np.ndarray:
    """One chunk of that array, made on the worker that needs it."""
    info = block_info[None]
    return mixed_float32(info["array-location"][0][0], info["chunk-shape"][0])


def count_mismatches(result: np.ndarray, block_info=None) -> np.ndarray:
    """Compare one chunk of the result with the reference computed afresh on the worker;
    return [wrong elements, elements checked]."""
    start = block_info[0]["array-location"][0][0]
    expected = expected_relu(mixed_float32(start, result.size))
    wrong = np.count_nonzero(result.view(np.uint32) != expected.view(np.uint32))
    return np.array([wrong, result.size], dtype=np.int64)


def peak_rss_bytes() -> int:
    """This process's own peak RSS. VmHWM, not ru_maxrss: on Linux a process started by fork and
    exec inherits its parent's ru_maxrss, so a worker spawned from a large pytest process would
    report the parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_cluster_processes_an_array_four_times_a_workers_memory(cluster_client):
    import time

    workers_before = set(cluster_client.scheduler_info()["workers"])
    elements, chunk = BIG_ARRAY_BYTES // 4, BIG_CHUNK_BYTES // 4
    chunks = ((chunk,) * (elements // chunk),)
    x = da.map_blocks(mixed_float32_chunk, dtype=np.float32, chunks=chunks)
    y = relu(x)
    checked = y.map_blocks(count_mismatches, dtype=np.int64, chunks=((2,) * y.numblocks[0],))
    started = time.perf_counter()
    counts = cluster_client.compute(checked).result().reshape(-1, 2)
    seconds = time.perf_counter() - started
    assert counts.shape[0] == BIG_ARRAY_BYTES // BIG_CHUNK_BYTES
    assert counts[:, 1].sum() == elements  # every element was checked, chunk by chunk
    assert counts[:, 0].sum() == 0
    assert set(cluster_client.scheduler_info()["workers"]) == workers_before  # none restarted
    peaks = cluster_client.run(peak_rss_bytes)
    assert all(peak < WORKER_MEMORY for peak in peaks.values()), peaks
    print(
        f"\n{BIG_ARRAY_BYTES >> 20} MiB float32 relu + check on 2 workers: {seconds:.2f} s;"
        " worker peak RSS " + ", ".join(f"{peak >> 20} MiB" for peak in peaks.values())
    )


# --- Zarr stores ---------------------------------------------------------------------------


def make_store(path: Path, values: np.ndarray, chunks, zarr_format: int = 3):
    store = zarr.create_array(
        path,
        shape=values.shape,
        chunks=chunks,
        dtype=values.dtype,
        zarr_format=zarr_format,
        attributes={"units": "volts"},
    )
    store[...] = values
    return store


def _kernel_threads() -> int:
    import onnx_relu

    return onnx_relu.get_num_threads()


def test_workers_give_the_kernel_their_own_share_of_the_cpus(cluster_client, tmp_path):
    """Each worker of this cluster has one thread: after a job its kernel uses one, not every
    CPU of the machine (two workers would otherwise oversubscribe it)."""
    make_store(tmp_path / "in.zarr", ramp_values(4000), chunks=(500,))
    relu_zarr(tmp_path / "in.zarr", tmp_path / "out.zarr", client=cluster_client)
    nthreads = cluster_client.nthreads()
    counts = cluster_client.run(_kernel_threads)
    assert set(counts) == set(nthreads)
    assert all(counts[worker] == nthreads[worker] == 1 for worker in counts)


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("type_name", ZARR_TYPE_NAMES)
def test_zarr_round_trip_every_storable_type(cluster_client, tmp_path, type_name, zarr_format):
    values = mixed_values(relu_type(type_name).dtype, 150).reshape(10, 15)
    make_store(tmp_path / "in.zarr", values, chunks=(4, 6), zarr_format=zarr_format)
    relu_zarr(tmp_path / "in.zarr", tmp_path / "out.zarr", client=cluster_client)
    out = zarr.open_array(tmp_path / "out.zarr", mode="r")
    assert same_bits(out[...], expected_relu(values))
    assert (out.chunks, out.metadata.zarr_format) == ((4, 6), zarr_format)
    assert dict(out.attrs) == {"units": "volts"}
    assert same_bits(zarr.open_array(tmp_path / "in.zarr", mode="r")[...], values)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "out.zarr"]


def test_zarr_cannot_store_bfloat16(tmp_path):
    # Documented limit (README, files.jobs.zarr_dask): if zarr learns bfloat16, update both.
    with pytest.raises(ValueError, match="bfloat16"):
        zarr.create_array(tmp_path / "b.zarr", shape=(2,), dtype=ml_dtypes.bfloat16)


def test_zarr_output_replaces_an_older_store(cluster_client, tmp_path):
    values = mixed_values(np.float32, 64)
    make_store(tmp_path / "in.zarr", values, chunks=(8,))
    make_store(tmp_path / "out.zarr", np.ones(3, np.int8), chunks=(3,))
    relu_zarr(tmp_path / "in.zarr", tmp_path / "out.zarr", client=cluster_client)
    assert same_bits(zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(values))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "out.zarr"]


def test_cli_on_an_existing_scheduler(cluster_client, tmp_path):
    values = mixed_values(np.float16, 500).reshape(20, 25)
    make_store(tmp_path / "in.zarr", values, chunks=(7, 7))
    address = cluster_client.scheduler.address
    done = apply_dask(tmp_path, "--scheduler", address, timeout=300)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert same_bits(zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(values))


def test_cli_on_its_own_local_cluster(tmp_path):
    values = mixed_values(np.int64, 300).reshape(3, 100)
    make_store(tmp_path / "in.zarr", values, chunks=(2, 40))
    done = run_cli(
        "apply", "--opset", 14, tmp_path / "in.zarr", tmp_path / "out.zarr", "--dask", timeout=300
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert same_bits(zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(values))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "out.zarr"]


@pytest.mark.parametrize(
    ("dtype", "opset", "message"),
    [(np.uint8, None, "does not allow tensor(uint8)"), (np.int32, 13, "at opset 13")],
)
def test_cli_refuses_a_store_of_a_forbidden_type_before_work(tmp_path, dtype, opset, message):
    make_store(tmp_path / "in.zarr", np.arange(6, dtype=dtype), chunks=(3,))
    args = ["apply", "in.zarr", "out.zarr", "--dask"] + (["--opset", opset] if opset else [])
    done = run_cli(*args, cwd=tmp_path, timeout=300)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr"]


def test_cli_refuses_a_folder_that_is_not_a_zarr_array(tmp_path):
    (tmp_path / "in.zarr").mkdir()
    done = apply_dask(tmp_path, timeout=300)
    assert done.returncode == 2 and "is not a readable Zarr array store" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr"]
