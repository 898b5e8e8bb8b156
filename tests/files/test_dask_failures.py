"""``relu_zarr`` / ``apply --dask`` when the job cannot finish (issue 13, item 11): a cluster
whose workers are paused for memory is given up after the stall timeout with the cause named;
an unreadable chunk is named; after a failure no temporary store remains, even though other
tasks were still running; durability costs one sync per store, not one fsync per chunk."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

# Dask, distributed and Zarr are the `dask` extra; a Python without their wheels skips this file.
for _module in ("dask", "distributed", "zarr"):
    pytest.importorskip(
        _module, reason=f"{_module} is not installed (no wheel for this Python yet)"
    )

import dask  # noqa: E402
import zarr  # noqa: E402

from onnx_relu.files import TEMP_SUFFIX  # noqa: E402
from onnx_relu.files.jobs import zarr_dask  # noqa: E402
from onnx_relu.files.jobs.zarr_dask import ChunkError, relu_zarr  # noqa: E402
from onnx_relu.files.jobs.zarr_output import OWNER_LOCK, UNLOCKED_GRACE_S  # noqa: E402
from tests.support.cli import SCRIPT, assert_cli_error, folder_state, run_cli  # noqa: E402
from tests.support.dask_cluster import apply_dask, local_client, make_store, ramp_values  # noqa: E402
from tests.support.oracle import expected_relu, same_bits  # noqa: E402

OLD_OUT = np.full(3, 7, np.int8)


@pytest.fixture(scope="module")
def paused_client():
    """One worker paused from the start: its memory limit (40 MiB) is below what a worker
    process uses, pausing at half of it, and never terminated or spilled."""
    settings = {
        "distributed.worker.memory.terminate": False,
        "distributed.worker.memory.spill": False,
        "distributed.worker.memory.target": False,
        "distributed.worker.memory.pause": 0.5,
        "distributed.worker.memory.monitor-interval": "50ms",
    }
    with (
        dask.config.set(settings),
        local_client(workers=1, memory_limit=40 << 20) as client,
    ):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            workers = client.scheduler_info()["workers"]
            if workers and all(w.get("status") == "paused" for w in workers.values()):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the worker did not pause")
        yield client


def test_paused_workers_are_reported_after_the_stall_timeout(paused_client, tmp_path):
    make_store(tmp_path / "in.zarr", ramp_values(4096), chunks=(1024,))
    make_store(tmp_path / "out.zarr", OLD_OUT, chunks=(3,))
    before = folder_state(tmp_path)
    started = time.monotonic()
    with pytest.raises(
        TimeoutError,
        match=r"no task of the Dask job completed for 2 s \(0 of 4"
        r" done\): 1 of 1 workers are paused because their memory use passed",
    ):
        relu_zarr(
            tmp_path / "in.zarr", tmp_path / "out.zarr", client=paused_client, stall_timeout=2
        )
    assert time.monotonic() - started < 60
    assert folder_state(tmp_path) == before  # OUT as it was, no temporary store


def test_apply_dask_on_paused_workers_exits_1_with_one_line(paused_client, tmp_path):
    make_store(tmp_path / "in.zarr", ramp_values(4096), chunks=(1024,))
    before = folder_state(tmp_path)
    address = paused_client.scheduler.address
    done = apply_dask(tmp_path, "--stall-timeout", "2", "--scheduler", address)
    assert_cli_error(done, 1, "workers are paused because their memory use passed")
    assert "OUT left unchanged" in done.stderr
    assert folder_state(tmp_path) == before


def test_stall_timeout_must_be_positive(tmp_path):
    make_store(tmp_path / "in.zarr", ramp_values(8), chunks=(4,))
    with pytest.raises(ValueError, match="stall_timeout must be a number of seconds > 0"):
        relu_zarr(tmp_path / "in.zarr", tmp_path / "out.zarr", stall_timeout=0)
    done = apply_dask(tmp_path, "--stall-timeout", "-1")
    assert_cli_error(done, 2, "argument --stall-timeout: must be a number of seconds > 0")
    done = run_cli("apply", "x.npy", "y.npy", "--stall-timeout", "5", cwd=tmp_path)
    assert_cli_error(done, 2, "--stall-timeout needs --dask")


@pytest.fixture(scope="module")
def client():
    with local_client() as client:
        yield client


def _truncate_chunk(store: Path, index: int | str) -> None:
    chunk = store / "c" / str(index)
    chunk.write_bytes(chunk.read_bytes()[:100])


def test_a_truncated_chunk_is_named_and_no_temporary_store_remains(client, tmp_path):
    """300 chunks on 2 workers; chunk (1,) is cut short. The job fails while other chunks are
    still being written; once relu_zarr has returned, and a while later, no temporary store
    exists (until this round running tasks recreated it after its removal)."""
    make_store(tmp_path / "in.zarr", ramp_values(300 * 4096), chunks=(4096,))
    _truncate_chunk(tmp_path / "in.zarr", 1)
    make_store(tmp_path / "out.zarr", OLD_OUT, chunks=(3,))
    before = folder_state(tmp_path)
    with pytest.raises(ChunkError) as raised:
        relu_zarr(tmp_path / "in.zarr", tmp_path / "out.zarr", client=client)
    message = str(raised.value)
    assert "region (1,) (elements [4096:8192]) of the Zarr store" in message
    assert str(tmp_path / "in.zarr") in message
    for _ in range(2):
        assert folder_state(tmp_path) == before
        time.sleep(1)


def test_apply_dask_names_the_truncated_chunk_on_one_line(client, tmp_path):
    make_store(tmp_path / "in.zarr", ramp_values(8 * 4096).reshape(8, 4096), chunks=(2, 4096))
    _truncate_chunk(tmp_path / "in.zarr", "2/0")  # zarr 3 chunk files: c/<row>/<column>
    before = folder_state(tmp_path)
    done = apply_dask(tmp_path, "--scheduler", client.scheduler.address)
    assert_cli_error(done, 2, "region (2, 0) (elements [4:6, 0:4096]) of the Zarr store")
    assert done.stderr.count("\n") == 1, done.stderr
    assert folder_state(tmp_path) == before


def test_ctrl_c_during_apply_dask_leaves_no_temporary_store(client, tmp_path):
    """SIGINT once chunks are being written: exit 130, one line, and no temporary store after
    the command has exited, nor 2 s later (tasks still running on the workers are waited for,
    and write nothing once the store is gone). 3,200 chunks, so that the job outlasts the
    moment the signal is sent; on a loaded machine the test itself may be scheduled late
    enough for the job to finish first (exit 0, OUT complete): then it tries again, up to three
    times, and fails unless one attempt was interrupted."""
    for attempt in range(3):
        folder = tmp_path / f"attempt{attempt}"
        folder.mkdir()
        make_store(folder / "in.zarr", ramp_values(800 * 4096), chunks=(1024,))
        before = folder_state(folder)
        command = subprocess.Popen(
            [SCRIPT, "apply", "in.zarr", "out.zarr", "--dask", "--scheduler",
             client.scheduler.address],
            cwd=folder,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not any(folder.glob(f".out.zarr.*{TEMP_SUFFIX}/c/*")):
                assert command.poll() is None and time.monotonic() < deadline, "no chunk written"
                time.sleep(0.01)
            command.send_signal(signal.SIGINT)
            _out, err = command.communicate(timeout=120)
        finally:
            command.kill()
        if command.returncode == 0:  # the job ended before the signal came: a whole OUT
            assert err == "" and (folder / "out.zarr").is_dir(), err
            continue
        assert command.returncode == 130, err
        assert err.count("\n") == 1 and "interrupted by SIGINT" in err, err
        for _ in range(2):
            assert folder_state(folder) == before
            time.sleep(1)
        return
    pytest.fail("three jobs of 3,200 chunks each ended before SIGINT reached them")


def _temporary(folder: Path, name: str, *, files: dict[str, bytes], age_s: float = 0) -> Path:
    path = folder / f".{name}.{os.urandom(6).hex()}{TEMP_SUFFIX}"
    path.mkdir()
    for relative, content in files.items():
        (path / relative).parent.mkdir(parents=True, exist_ok=True)
        (path / relative).write_bytes(content)
    if age_s:
        old = time.time() - age_s
        os.utime(path, (old, old))
    return path


def test_abandoned_temporary_stores_are_removed_by_the_next_run(client, tmp_path):
    """Left by a killed run (its lock file no longer held), or chunk files only (written by tasks
    of a stopped job), untouched for longer than the grace time: removed. A live writer's
    (lock held), a fresh unlocked one and another store's: kept."""
    values = ramp_values(64)
    make_store(tmp_path / "in.zarr", values, chunks=(16,))
    chunk = {"c/0": b"x" * 64}
    killed = _temporary(tmp_path, "out.zarr", files={OWNER_LOCK: b"", "zarr.json": b"{}", **chunk})
    recreated = _temporary(tmp_path, "out.zarr", files=chunk, age_s=UNLOCKED_GRACE_S + 60)
    aside = _temporary(tmp_path, "out.zarr.old", files=chunk, age_s=UNLOCKED_GRACE_S + 60)
    live = _temporary(tmp_path, "out.zarr", files={OWNER_LOCK: b"", **chunk})
    fresh = _temporary(tmp_path, "out.zarr", files=chunk)
    other = _temporary(tmp_path, "other.zarr", files=chunk, age_s=UNLOCKED_GRACE_S + 60)
    holder = os.open(live / OWNER_LOCK, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # as the live writer does
        relu_zarr(tmp_path / "in.zarr", tmp_path / "out.zarr", client=client)
    finally:
        os.close(holder)
    assert same_bits(zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(values))
    assert not killed.exists() and not recreated.exists() and not aside.exists()
    assert live.exists() and fresh.exists() and other.exists()
    assert not (tmp_path / "out.zarr" / OWNER_LOCK).exists()


#: Calls counted by the two wrappers below. They are module-level functions so that the
#: workers' client.run gets them by reference (a closure would be sent as a copy).
CALLS = {"fsync": 0, "sync": 0}
REAL_FSYNC, REAL_SYNC = os.fsync, zarr_dask._sync_file_system


def counting_fsync(fd):
    CALLS["fsync"] += 1
    REAL_FSYNC(fd)


def counting_sync(path):
    CALLS["sync"] += 1
    REAL_SYNC(path)


def test_one_sync_per_store_not_one_fsync_per_chunk(tmp_path, monkeypatch):
    """In-process workers (threads), so that every fsync and sync is counted: 200 chunks."""
    monkeypatch.setattr(os, "fsync", counting_fsync)
    monkeypatch.setattr(zarr_dask, "_sync_file_system", counting_sync)
    monkeypatch.setitem(CALLS, "fsync", 0)
    monkeypatch.setitem(CALLS, "sync", 0)
    values = ramp_values(200 * 256)
    make_store(tmp_path / "in.zarr", values, chunks=(256,))
    with local_client(processes=False) as local:
        relu_zarr(tmp_path / "in.zarr", tmp_path / "out.zarr", client=local)
    assert same_bits(zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(values))
    assert CALLS["sync"] == 3  # each of the 2 workers once, and this process once
    assert CALLS["fsync"] <= 2  # the folder holding OUT (the rename), not the chunks


def test_losing_the_scheduler_is_one_line_and_leaves_no_temporary_store(tmp_path):
    """An external scheduler and worker (the `dask` command); the scheduler is killed once
    chunks are being written. Until this round distributed's own log printed a 36-line
    traceback before the command's message."""
    import re

    tools = Path(sys.executable).parent
    make_store(tmp_path / "in.zarr", ramp_values(800 * 4096), chunks=(4096,))
    before = folder_state(tmp_path)
    scheduler = subprocess.Popen(
        [tools / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"],
        stderr=subprocess.PIPE,
        text=True,
    )
    worker = command = drain = None
    try:
        address = None
        for line in scheduler.stderr:
            if match := re.search(r"Scheduler at:\s+(tcp://\S+)", line):
                address = match.group(1)
                break
        assert address, "the scheduler did not start"
        drain = threading.Thread(target=scheduler.stderr.read, daemon=True)  # its log: no
        drain.start()  # full pipe may block it
        worker = subprocess.Popen(
            [
                tools / "dask",
                "worker",
                address,
                "--nworkers",
                "1",
                "--nthreads",
                "1",
                "--no-dashboard",
            ],
            stderr=subprocess.DEVNULL,
        )
        command = subprocess.Popen(
            [SCRIPT, "apply", "in.zarr", "out.zarr", "--dask", "--scheduler", address],
            cwd=tmp_path,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not any(tmp_path.glob(f".out.zarr.*{TEMP_SUFFIX}/c/*")):
            assert command.poll() is None and time.monotonic() < deadline, "no chunk written"
            time.sleep(0.01)
        scheduler.kill()
        _out, err = command.communicate(timeout=200)
    finally:
        for process in (command, worker, scheduler):
            if process is not None:
                process.kill()
                process.wait()
        if drain is not None:
            drain.join(timeout=30)  # the scheduler is gone: its log ends
        scheduler.stderr.close()
    assert command.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    # distributed reports the loss as a cancellation or as a reset connection, whichever of
    # the client's tasks notices it first
    assert "the Dask job failed" in err, err
    assert (
        "lost the connection to the scheduler" in err
        or "a connection of the Dask client was lost" in err
    ), err
    assert folder_state(tmp_path) == before
