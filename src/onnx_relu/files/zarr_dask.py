"""Relu of a Zarr array store on a Dask cluster (the names :mod:`.jobs.zarr_dask` defines).

Kept so that ``onnx_relu.files.zarr_dask`` goes on working: the job, :func:`relu_zarr` and the
Dask protocol live in :mod:`onnx_relu.files.jobs.zarr_dask` and
:mod:`onnx_relu.files.jobs.zarr_output`.
"""

from __future__ import annotations

from .jobs.zarr_dask import (
    CONNECT_TIMEOUT_S,
    STALL_TIMEOUT_S,
    ChunkError,
    ZarrJob,
    dask_client,
    is_zarr_store,
    relu_zarr,
)

__all__ = [
    "relu_zarr",
    "dask_client",
    "is_zarr_store",
    "ChunkError",
    "ZarrJob",
    "CONNECT_TIMEOUT_S",
    "STALL_TIMEOUT_S",
]
