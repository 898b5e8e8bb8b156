"""Relu of a Zarr array store on a Dask cluster: ``onnx-relu apply IN.zarr OUT.zarr --dask``.

Needs the ``dask`` extra (dask[array], distributed, zarr; without it the one MissingExtraError),
imported only when this module's functions run. The work runs on an existing
``dask.distributed`` scheduler (``scheduler="tcp://host:8786"``) or, with no address, on a
``LocalCluster`` started for the job and stopped after it. Every worker reads its chunks of the
input store and writes its chunks of the output itself, so the data never passes through this
process and no machine needs memory for more than a few chunks. With a remote scheduler, both
stores must be on a file system every worker sees at the same path, and every worker needs
onnx-relu installed.

Safety: the type is checked (:func:`onnx_relu.check_dtype`) before any cluster work starts; the
output is written to a temporary store next to ``dst`` and renamed to ``dst`` only once every
chunk has been written and synced; an existing ``dst`` is replaced only if it is a Zarr store
(:func:`is_zarr_store`).

Failures: one task per region of the output (a shard, or a chunk where there are no shards)
reads that region of ``src``, applies Relu and writes it; a region that cannot be read raises
:class:`ChunkError` naming the region, its elements and ``src``;
a chunk that cannot be written (a full disk) raises the ``OSError`` naming the chunk's path.
When a task fails or the caller is interrupted, the remaining tasks are cancelled and the
temporary store is renamed away and removed. Tasks still running on the workers (which may
outlive this process, and whose scheduler may be gone) cannot recreate it: the store is a
:class:`~onnx_relu.files.jobs._zarr_store.FixedRootStore`, whose writes never create its root
folder, so after the rename they fail and write nothing; nothing has to be confirmed with the
workers. While the job runs, this process holds an ``flock`` on a lock file in the temporary
store (:data:`~onnx_relu.files.jobs.zarr_output.OWNER_LOCK`); the kernel releases it when the
process ends, however it ends, so the next job writing ``dst`` removes a temporary store whose
lock is free (its job is over: no task of it can write into the store once it is renamed away)
and leaves one whose lock is held (a live job's). A job during which no task completes for
``stall_timeout`` seconds (:data:`STALL_TIMEOUT_S` by default; workers paused because their
memory passed dask's pause threshold never run a task) raises :class:`TimeoutError` naming the
cause the scheduler reports. Durability costs one ``syncfs`` per worker and one here per store,
not one ``fsync`` per chunk file (with those a job took 1.1-1.2 times as long as
``da.maximum`` stored to an uncompressed store).

Types: Zarr (zarr-python 3.1, formats 2 and 3) stores float16, float32, float64, int8, int16,
int32 and int64. It has no bfloat16 data type, so a bfloat16 tensor cannot be a Zarr store;
keep it as ``.npy`` (or store its bits as uint16 and view them back yourself).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..._api import check_dtype, relu
from ..._log import dask_logs_kept_out, logger
from ..._paths import absolute_path
from ...errors import InvalidTensorFileError
from ...io.endpoint import Destination, Endpoint
from ...io.identity import refuse_overlap, refuse_special_entries, require_unchanged
from ..progress import Progress
from .zarr_output import atomic_directory, is_zarr_store

__all__ = [
    "ZarrJob",
    "relu_zarr",
    "dask_client",
    "is_zarr_store",
    "ChunkError",
    "CONNECT_TIMEOUT_S",
    "STALL_TIMEOUT_S",
]

#: How long to wait for a scheduler given by address before giving up.
CONNECT_TIMEOUT_S = 10

#: Default longest time without any task completing before a job is given up: far longer
#: than one task takes (a region of a few MiB: well under a second), short enough that a
#: cluster that cannot make progress (paused workers, no workers) is reported.
STALL_TIMEOUT_S = 300.0


class ChunkError(InvalidTensorFileError):
    """A region of the input store could not be read (a truncated or corrupt chunk file)."""


def _import_dask() -> tuple[Any, Any, Any]:
    """dask's ``delayed``, ``distributed`` and ``zarr``, or the one MissingExtraError."""
    from ..._extras import extra_needed

    with extra_needed("Zarr on Dask"):
        # dask first: without the extra, the error names the package a user asked for.
        import dask  # noqa: F401
        import distributed
        import zarr
        from dask.delayed import delayed
    return delayed, distributed, zarr


@contextlib.contextmanager
def dask_client(scheduler: str | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` of the scheduler at ``scheduler``, or of a new LocalCluster.

    The LocalCluster (worker processes sized by dask for this machine, its dashboard on a
    random port of 127.0.0.1) lives only as long as the ``with`` block. Its worker processes
    import the parent's ``__main__`` module again: a script that calls this needs an
    ``if __name__ == "__main__":`` guard. They log nothing (the caller gets every failure as an
    exception) and never see SIGINT (:func:`_sigint_blocked_in_new_threads`): a Ctrl-C in a
    terminal, sent to the whole foreground process group, stops the caller, which stops them.
    """
    _delayed, distributed, _zarr = _import_dask()
    if scheduler:
        with distributed.Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s") as client:
            yield client
        return
    import dask.config

    with contextlib.ExitStack() as stack:
        stack.enter_context(dask_logs_kept_out(dask.config))
        with _sigint_blocked_in_new_threads():
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    processes=True,
                    dashboard_address="127.0.0.1:0",
                    silence_logs=logging.CRITICAL,
                )
            )
        yield stack.enter_context(distributed.Client(cluster))


@contextlib.contextmanager
def _sigint_blocked_in_new_threads() -> Iterator[None]:
    """Block SIGINT in this thread while the block runs, so that the threads it starts (the
    cluster's event loop, which starts and restarts the worker processes) keep it blocked, and
    so do the processes they start (a blocked signal stays blocked across fork and exec, and
    Python does not unblock it). A worker process then never gets the terminal's Ctrl-C: no
    KeyboardInterrupt traceback of its own, no start-up message of the command it was started
    by (it runs the command's ``__main__`` again, ``sys.argv`` included), no task cut short.
    A SIGINT that arrives meanwhile is not lost: it stays pending until the block ends, or
    another thread of this process takes it and Python runs the handler in this thread as
    usual. Only where POSIX signal masks exist, from the main thread."""
    import signal
    import threading

    if (
        not hasattr(signal, "pthread_sigmask")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    from multiprocessing import resource_tracker

    # multiprocessing starts its resource tracker with the first worker process, unblocking
    # SIGINT in the starting thread afterwards (it blocks it around the tracker's start): started
    # here first, it leaves the cluster's threads as they are.
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _relu_region(
    source: Any,
    target: Any,
    region: tuple[slice, ...],
    index: tuple[int, ...],
    opset: int | None,
    marker: str,
    src: str,
) -> int:
    """Read region ``index`` (``region``) of ``source``, apply Relu, write it to ``target``;
    return the bytes written. Runs on a worker. Once the temporary store is gone (``marker``,
    its metadata file, is missing) the job was stopped: the task writes nothing (its store
    cannot create the store's folder again) and returns 0."""
    if not os.path.exists(marker):
        return 0
    try:
        values = source[region]
    except Exception as exc:  # noqa: BLE001 - zarr and numcodecs raise many types for a bad chunk
        span = ", ".join(f"{part.start}:{part.stop}" for part in region)
        raise ChunkError(
            f"region {tuple(index)} (elements [{span}]) of the Zarr store {src!r}"
            f" cannot be read: {type(exc).__name__}: {exc}"
        ) from None
    _use_worker_share_of_cpus()
    values = relu(values, opset=opset)
    try:
        target[region] = values
    except FileNotFoundError:
        if not os.path.exists(marker):
            return 0
        raise
    return int(values.nbytes)


#: Whether this process has set the kernel's thread count to its worker's share (once).
_worker_share_set = False


def _use_worker_share_of_cpus() -> None:
    """In a Dask worker, give the kernel the worker's own share of the CPUs (its ``nthreads``),
    once per process: by default every worker process would size the kernel's pool to all the
    machine's CPUs, and several workers on one machine would oversubscribe it. The kernel's
    pool serves one call at a time (a call made while it is busy runs on its own thread), so
    a worker's task threads together use at most about ``nthreads`` of them at once.
    Outside a worker (no ``distributed``, or a task run by the caller itself) nothing changes;
    ONNX_RELU_NUM_THREADS, where set, is kept."""
    global _worker_share_set
    if _worker_share_set:
        return
    _worker_share_set = True
    if os.environ.get("ONNX_RELU_NUM_THREADS"):
        return
    try:
        from distributed import get_worker

        share = int(get_worker().state.nthreads)
    except (ImportError, ValueError, AttributeError):  # not on a worker
        return
    from ...tuning import set_num_threads

    set_num_threads(max(1, min(share, 256)))


def _regions(
    shape: tuple[int, ...], chunks: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """(region index, region as slices) of every region of ``shape`` in regions of ``chunks``."""
    counts = [max(1, -(-extent // chunk)) for extent, chunk in zip(shape, chunks, strict=True)]
    for index in itertools.product(*(range(count) for count in counts)):
        region = tuple(
            slice(i * chunk, min((i + 1) * chunk, extent))
            for i, chunk, extent in zip(index, chunks, shape, strict=True)
        )
        yield index, region


def _sync_file_system(path: str) -> None:
    """Make everything written to ``path``'s file system durable: one ``syncfs`` (Linux), or
    one ``sync`` elsewhere. Runs on each worker and here."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def _stall_cause(client: Any) -> str:
    """Why no task progresses, as far as the scheduler can tell."""
    try:
        workers = client.scheduler_info()["workers"]
    except Exception as exc:  # noqa: BLE001 - a lost scheduler may raise anything
        return f"the scheduler does not answer ({type(exc).__name__}: {exc})"
    if not workers:
        return "the cluster has no workers"
    paused = [info for info in workers.values() if info.get("status") == "paused"]
    if paused:
        return (
            f"{len(paused)} of {len(workers)} workers are paused because their memory use passed"
            " dask's pause threshold (distributed.worker.memory.pause, a fraction of each"
            " worker's memory limit): give the workers more memory or use smaller chunks"
        )
    return f"{len(workers)} worker(s) are running but completed no task"


def _cancel(client: Any, futures: Any) -> None:
    """Cancel ``futures`` (what has not started never runs). Tasks already running are not
    waited for: they cannot write into the store once it is renamed away."""
    with contextlib.suppress(Exception):  # a lost scheduler: nothing more can be done
        client.cancel(futures)


def _gather_progress(
    distributed: Any,
    client: Any,
    futures: Any,
    total: int,
    progress: Progress | None,
    stall_timeout: float,
) -> int:
    """Wait for every future; report bytes done; give up after ``stall_timeout`` s without a
    completed task. Returns the bytes written."""
    done = 0
    if progress is not None:
        progress(0, total)
    finished = distributed.as_completed(futures)
    last_progress = time.monotonic()
    completed = 0
    while not finished.is_empty():
        batch = finished.next_batch(block=False)
        if not batch:
            if time.monotonic() - last_progress > stall_timeout:
                raise TimeoutError(
                    f"no task of the Dask job completed for {stall_timeout:g} s ({completed} of"
                    f" {len(futures)} done): {_stall_cause(client)}; gave up (stall_timeout,"
                    " or --stall-timeout for onnx-relu apply, sets how long to wait)"
                )
            time.sleep(0.02)
            continue
        for future in batch:
            done += int(future.result())
            completed += 1
        last_progress = time.monotonic()
        if progress is not None:
            progress(done, total)
    return done


def _open_source(zarr: Any, src: str) -> Any:
    try:
        source = zarr.open_array(src, mode="r")
    except Exception as exc:  # noqa: BLE001 - zarr raises several types for "not an array store"
        raise InvalidTensorFileError(
            f"{src!r} is not a readable Zarr array store ({type(exc).__name__}: {exc})"
        ) from None
    return source


def relu_zarr(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str] | Destination,
    *,
    opset: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    progress: Progress | None = None,
    stall_timeout: float = STALL_TIMEOUT_S,
) -> None:
    """Apply Relu to the Zarr array store ``src`` on Dask; write the Zarr store ``dst``.

    Parameters
    ----------
    src, dst : str or os.PathLike
        Local folders (``dst`` may be the :class:`~onnx_relu.io.endpoint.Destination` a plan
        decided: it is then not judged again). ``dst`` gets ``src``'s shape, chunks (and
        shards), Zarr format, compressors, filters and attributes; its fill value is 0. An
        existing ``dst`` is replaced only if it is a Zarr store.
    opset : int, optional
        The ai.onnx opset whose Relu version decides the allowed types (None: the latest).
    scheduler : str, optional
        Address of a running ``dask.distributed`` scheduler; None starts a LocalCluster.
    client : distributed.Client, optional
        Use this client instead (``scheduler`` is then ignored).
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, called as chunks are written.
    stall_timeout : float
        Seconds without any task completing after which the job is given up
        (:data:`STALL_TIMEOUT_S` by default).

    Raises
    ------
    UnsupportedTypeError
        before any cluster work, if the store's type is not allowed at ``opset``.
    InvalidTensorFileError
        if ``src`` is not a Zarr array store.
    FileExistsError
        if ``dst`` exists and is not a Zarr store.
    FileArgumentError
        if ``dst`` is ``src`` (by any path: a link, a mount), a folder holding it (the Zarr
        group it is in) or a path inside it; before anything is written.
    UnsupportedPathError
        if ``src`` holds anything but regular files and folders (a symbolic link, a FIFO, a
        device, a socket), naming it; before any cluster work.
    ChunkError
        (an :class:`~onnx_relu.errors.InvalidTensorFileError`) if a region of ``src`` cannot be
        read; it names the region, its elements and ``src``.
    OSError
        if a chunk cannot be written on a worker (a full disk); it names the chunk's path.
    TimeoutError
        if no task completes for ``stall_timeout`` seconds, naming the cause (paused or no
        workers). In every failure ``dst`` is left as it was and no temporary store remains.
    """
    if not stall_timeout > 0:
        raise ValueError(f"stall_timeout must be a number of seconds > 0, got {stall_timeout!r}")
    # dst is never src, a folder holding it (a Zarr group) or a store inside it, by any path:
    # replacing it would delete or change src (checked again here for library callers).
    if isinstance(dst, Destination):  # a plan's: checked when it was decided
        dst_path = dst.path
    else:
        dst_path = os.fspath(dst)
        source_end = Endpoint.of(src, "src")
        refuse_overlap(source_end, Endpoint.of(dst, "dst"))
        refuse_special_entries(source_end)  # what the workers open by name: files and folders
    delayed, distributed, zarr = _import_dask()

    from ._zarr_store import FixedRootStore

    src = absolute_path(src)  # workers may run elsewhere: no relative paths
    source = _open_source(zarr, src)
    check_dtype(source.dtype, opset)
    write_chunks = source.shards or source.chunks  # whole shards: no two tasks share a file
    with atomic_directory(dst, sync_tree=None) as temporary:
        target = zarr.create_array(
            FixedRootStore(temporary),
            shape=source.shape,
            dtype=source.dtype,
            chunks=source.chunks,
            shards=source.shards,
            compressors=source.compressors,
            filters=source.filters,
            fill_value=0,
            zarr_format=source.metadata.zarr_format,
            attributes=dict(source.attrs),
        )
        marker = os.path.join(
            temporary, "zarr.json" if source.metadata.zarr_format == 3 else ".zarray"
        )
        # The two arrays enter the graph once, each task naming them by key: passed directly,
        # each task would carry its own pickled copies (14 s to submit 800 tasks).
        source_node = delayed(source, traverse=False)
        target_node = delayed(target, traverse=False)
        task = delayed(_relu_region, pure=False)
        tasks = [
            task(source_node, target_node, region, index, opset, marker, src)
            for index, region in _regions(source.shape, write_chunks)
        ]
        total = source.nbytes
        started = time.monotonic()
        logger.info("relu_zarr %s -> %s: %d tasks, %d bytes", src, dst_path, len(tasks), total)
        with contextlib.ExitStack() as stack:
            if client is None:
                client = stack.enter_context(dask_client(scheduler))
            futures = client.compute(tasks)
            try:
                done = _gather_progress(
                    distributed, client, futures, total, progress, stall_timeout
                )
            except BaseException:
                _cancel(client, futures)  # then atomic_directory renames the store away
                raise
            if done != total:  # every task reports its bytes: a shortfall is a lost write
                raise RuntimeError(f"only {done} of {total} bytes were written to {dst_path}")
            client.run(_sync_file_system, temporary)  # each worker's writes, once
        _sync_file_system(temporary)  # the metadata written here
        logger.info("relu_zarr %s: done in %.2f s", dst_path, time.monotonic() - started)


@dataclass(frozen=True)
class ZarrJob:
    """A Zarr store to another on Dask (:func:`relu_zarr`); the store's type is checked there,
    before any cluster work.

    Attributes
    ----------
    source : Endpoint
    destination : Destination
        A Zarr store, written as an atomic folder store.
    opset : int or None
    scheduler : str or None
        The scheduler's address (None: a LocalCluster).
    stall_timeout : float
        Seconds without a completed task before giving up.
    """

    source: Endpoint
    destination: Destination
    opset: int | None
    scheduler: str | None = None
    stall_timeout: float = STALL_TIMEOUT_S
    mode = "dask"

    def run(self, progress: Progress | None = None) -> None:
        """Do the job; ``progress(done_bytes, total_bytes)`` is called as chunks are written.
        IN (read by zarr, by path) must still be the store classified, holding only regular
        files and folders."""
        require_unchanged(self.source)
        refuse_special_entries(self.source)  # and every file in it, opened by the workers
        relu_zarr(
            self.source.path,
            self.destination,
            opset=self.opset,
            scheduler=self.scheduler,
            progress=progress,
            stall_timeout=self.stall_timeout,
        )
