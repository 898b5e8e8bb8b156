"""The Dask clusters and Zarr stores of the file-layer tests: one set-up each, their differences
named as arguments."""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


@contextlib.contextmanager
def local_client(
    *,
    workers: int = 2,
    processes: bool = True,
    memory_limit: int | None = None,
    silence_logs: int = logging.ERROR,
) -> Iterator[Any]:
    """A ``distributed.Client`` of a LocalCluster on this machine: ``workers`` workers of one
    thread each (separate processes unless ``processes=False``), no dashboard port taken, both
    closed when the block ends. Imports distributed, so call it only where it is installed."""
    from distributed import Client, LocalCluster

    limits = {} if memory_limit is None else {"memory_limit": memory_limit}
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address="127.0.0.1:0",
            silence_logs=silence_logs,
            **limits,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def make_store(path: Path, values: np.ndarray, chunks: Any) -> None:
    """A Zarr (v3) store at ``path`` holding ``values`` in ``chunks``, uncompressed (so that a
    test can damage a chunk file's bytes). Imports zarr."""
    import zarr

    store = zarr.create_array(
        path, shape=values.shape, dtype=values.dtype, chunks=chunks, compressors=None
    )
    store[...] = values


def ramp_values(count: int) -> np.ndarray:
    """``count`` float32 values cycling through -125..125: negatives, zero and positives in
    every chunk."""
    return (np.arange(count, dtype=np.float32) % 251 - 125).astype(np.float32)


def apply_dask(
    folder: Path,
    *options: object,
    timeout: float = 120,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess:
    """``onnx-relu apply in.zarr out.zarr --dask OPTIONS`` run in ``folder`` by
    :func:`tests.support.cli.run_cli` (``timeout``, ``preexec_fn``: as there)."""
    from tests.support.cli import run_cli

    return run_cli(
        "apply",
        "in.zarr",
        "out.zarr",
        "--dask",
        *options,
        cwd=folder,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )
