"""``apply --dask`` on a cluster whose workers outlive the command (``--scheduler``), and on the
command's own LocalCluster: a stopped job's tasks still running on the workers cannot recreate
the temporary store; a store left by a killed command is removed by the next run, a live job's
is not; a failing task is one line (no distributed log); Ctrl-C prints one line (nothing from
the workers).

The external cluster is a LocalCluster of this process (2 worker processes, 1 thread each).
Its workers get a delay before every chunk write (:func:`_write_delay`), so that a stopped
job always has tasks that go on to write after the command has removed its store.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import zarr

from onnx_relu.files import TEMP_SUFFIX
from onnx_relu.files.jobs.zarr_dask import relu_zarr
from onnx_relu.files.jobs.zarr_output import OWNER_LOCK, remove_abandoned_temporaries
from tests.support.cli import SCRIPT, assert_cli_error, file_size_limit, folder_state
from tests.support.dask_cluster import apply_dask, local_client, make_store, ramp_values
from tests.support.oracle import expected_relu, same_bits

#: Seconds each chunk write waits on the external cluster's workers.
WRITE_DELAY_S = 0.03


def _write_delay(seconds: float):
    """A function for ``client.run``: every zarr chunk write in the worker process first sleeps
    ``seconds`` (zarr's codec pipeline, used by any store). Made here so that cloudpickle
    sends it by value: the workers need not import this module."""

    def install() -> None:
        import asyncio

        from zarr.core.codec_pipeline import BatchedCodecPipeline

        original = getattr(BatchedCodecPipeline.write, "undelayed", BatchedCodecPipeline.write)

        async def write(self, *args, **kwargs):
            await asyncio.sleep(seconds)
            return await original(self, *args, **kwargs)

        write.undelayed = original
        BatchedCodecPipeline.write = write

    return install


@pytest.fixture(scope="module")
def client():
    with local_client(silence_logs=logging.CRITICAL) as client:
        client.run(_write_delay(WRITE_DELAY_S))
        yield client


def _temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f".out.zarr.*{TEMP_SUFFIX}"))


def _start_apply(folder: Path, scheduler: str | None, **popen) -> subprocess.Popen:
    command = [SCRIPT, "apply", "in.zarr", "out.zarr", "--dask", "-q"]
    if scheduler:
        command += ["--scheduler", scheduler]
    return subprocess.Popen(command, cwd=folder, stderr=subprocess.PIPE, text=True, **popen)


def _wait_for_chunks(folder: Path, command: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not any(folder.glob(f".out.zarr.*{TEMP_SUFFIX}/c/*")):
        assert command.poll() is None, command.communicate()[1]
        assert time.monotonic() < deadline, "no chunk written"
        time.sleep(0.005)


def test_sigint_mid_job_never_leaves_the_temporary_store(client, tmp_path):
    """Four Ctrl-Cs, each once chunks are being written, on workers that outlive the command:
    no temporary store after the command has exited, nor 1.5 s later (until this round zarr
    recreated the removed store with the chunks of the tasks still running, 9 times in 10)."""
    make_store(tmp_path / "in.zarr", ramp_values(400 * 1024), chunks=(1024,))
    before = folder_state(tmp_path)
    for _ in range(4):
        command = _start_apply(tmp_path, client.scheduler.address)
        try:
            _wait_for_chunks(tmp_path, command)
            command.send_signal(signal.SIGINT)
            _out, err = command.communicate(timeout=120)
        finally:
            command.kill()
            command.wait()
        assert command.returncode == 130, err
        assert err.count("\n") == 1 and "interrupted by SIGINT" in err, err
        assert folder_state(tmp_path) == before
        time.sleep(1.5)  # the tasks that were running have tried to write by now
        assert folder_state(tmp_path) == before


def test_a_killed_commands_store_is_removed_by_the_next_run(client, tmp_path):
    """SIGKILL: the temporary store stays, its lock file no longer held; the next run removes
    it at once (not after the 600 s rule for folders without a lock file), and the killed job's
    tasks still running on the workers (writes slowed to 0.5 s here, so that they end after
    the next run has removed the store) do not bring it back."""
    make_store(tmp_path / "in.zarr", ramp_values(300 * 1024), chunks=(1024,))
    make_store(tmp_path / "small.zarr", ramp_values(16), chunks=(16,))
    client.run(_write_delay(0.5))
    try:
        command = _start_apply(tmp_path, client.scheduler.address)
        try:
            _wait_for_chunks(tmp_path, command)
            command.kill()
        finally:
            command.kill()
            command.wait()
            command.stderr.close()
        [stale] = _temporaries(tmp_path)
        assert (stale / OWNER_LOCK).exists()
        relu_zarr(tmp_path / "small.zarr", tmp_path / "out.zarr", client=client)
        assert _temporaries(tmp_path) == []
        time.sleep(1.5)
        assert _temporaries(tmp_path) == []
    finally:
        client.run(_write_delay(WRITE_DELAY_S))
    assert same_bits(
        zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(ramp_values(16))
    )


def test_a_live_jobs_store_is_not_removed_by_a_concurrent_run(client, tmp_path):
    """While a command writes OUT (its lock held), another run of the same OUT leaves its
    temporary store alone; the command then finishes and OUT is its result."""
    values = ramp_values(300 * 1024)
    make_store(tmp_path / "in.zarr", values, chunks=(1024,))
    make_store(tmp_path / "small.zarr", ramp_values(16), chunks=(16,))
    command = _start_apply(tmp_path, client.scheduler.address)
    try:
        _wait_for_chunks(tmp_path, command)
        [live] = _temporaries(tmp_path)
        assert remove_abandoned_temporaries(tmp_path / "out.zarr") == []
        relu_zarr(tmp_path / "small.zarr", tmp_path / "out.zarr", client=client)
        assert command.poll() is None, "the command ended before the concurrent run: too fast"
        assert live.exists()
        _out, err = command.communicate(timeout=300)
    finally:
        command.kill()
        command.wait()
    assert command.returncode == 0, err
    assert err == ""
    assert _temporaries(tmp_path) == []
    assert same_bits(zarr.open_array(tmp_path / "out.zarr", mode="r")[...], expected_relu(values))


def _claim_float64(store: Path) -> None:
    """Rewrite the store's metadata to say float64; its chunk files stay float32's."""
    import json

    metadata = json.loads((store / "zarr.json").read_text())
    metadata["data_type"] = "float64"
    (store / "zarr.json").write_text(json.dumps(metadata))


@pytest.mark.parametrize("damage", ["truncated chunk", "store claims float64"])
def test_a_failing_task_on_the_commands_own_cluster_is_one_line(damage, tmp_path):
    """The command's own LocalCluster: its workers write to the command's stderr, and until
    this round distributed's worker logged 'Compute Failed' with a traceback (7 lines) before
    the command's own line."""
    make_store(tmp_path / "in.zarr", ramp_values(8 * 4096), chunks=(4096,))
    if damage == "truncated chunk":
        chunk = tmp_path / "in.zarr" / "c" / "3"
        chunk.write_bytes(chunk.read_bytes()[:100])
    else:
        _claim_float64(tmp_path / "in.zarr")
    before = folder_state(tmp_path)
    done = apply_dask(tmp_path, "-q", timeout=180)
    assert_cli_error(done, 2, "of the Zarr store")
    assert done.stderr.count("\n") == 1, done.stderr
    assert folder_state(tmp_path) == before


def test_a_chunk_that_cannot_be_written_is_named_on_one_line(tmp_path):
    """The workers inherit a file size limit (as a full disk, the write fails: EFBIG here,
    ENOSPC there, neither naming a file by itself): one line naming the chunk's path."""
    make_store(tmp_path / "in.zarr", ramp_values(4 * 32768), chunks=(32768,))  # 128 KiB chunks
    before = folder_state(tmp_path)
    done = apply_dask(tmp_path, "-q", timeout=180, preexec_fn=file_size_limit(64 << 10))
    line = assert_cli_error(done, 1, "File too large: ")
    assert f"{TEMP_SUFFIX}/c/" in line and str(tmp_path) in line, line
    assert "OUT left unchanged" in line
    assert done.stderr.count("\n") == 1, done.stderr
    assert folder_state(tmp_path) == before


def test_ctrl_c_on_the_commands_own_cluster_is_one_line(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C: the command's one line only.
    Until this round each worker process (which runs the command's __main__ again, sys.argv
    included) printed 'interrupted by SIGINT during start-up' too."""
    make_store(tmp_path / "in.zarr", ramp_values(3000 * 1024), chunks=(1024,))
    before = folder_state(tmp_path)
    command = _start_apply(tmp_path, None, start_new_session=True)
    try:
        _wait_for_chunks(tmp_path, command, timeout=180)
        os.killpg(command.pid, signal.SIGINT)
        _out, err = command.communicate(timeout=120)
    finally:
        command.kill()
        command.wait()
    assert command.returncode == 130, err
    assert err.splitlines() == [
        "onnx-relu apply: interrupted by SIGINT; OUT was not written and IN is unchanged"
    ], err
    time.sleep(1)
    assert folder_state(tmp_path) == before
