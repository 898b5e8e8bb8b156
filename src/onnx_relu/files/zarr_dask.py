"""Relu of a Zarr array store on a Dask cluster: ``onnx-relu apply IN.zarr OUT.zarr --dask``.

Needs the ``dask`` extra (``pip install "onnx-relu[dask]"``: dask[array], distributed, zarr),
imported only when this module's functions run. The work runs on an existing
``dask.distributed`` scheduler (``scheduler="tcp://host:8786"``) or, with no address, on a
``LocalCluster`` started for the job and stopped after it. Every worker reads its chunks of the
input store and writes its chunks of the output itself, so the data never passes through this
process and no machine needs memory for more than a few chunks. With a remote scheduler, both
stores must be on a file system every worker sees at the same path, and every worker needs
onnx-relu installed.

Safety: the type is checked (:func:`onnx_relu.check_dtype`) before any cluster work starts; the
output is written to a temporary store next to ``dst`` and renamed to ``dst`` only once every
chunk has been written and fsynced; an existing ``dst`` is replaced only if it is a Zarr store
(:func:`is_zarr_store`).

Types: Zarr (zarr-python 3.1, formats 2 and 3) stores float16, float32, float64, int8, int16,
int32 and int64. It has no bfloat16 data type, so a bfloat16 tensor cannot be a Zarr store;
keep it as ``.npy`` (or store its bits as uint16 and view them back yourself).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import check_dtype, relu
from ..errors import InvalidTensorFileError
from ._atomic import atomic_directory
from .progress import Progress

__all__ = ["relu_zarr", "dask_client", "is_zarr_store", "CONNECT_TIMEOUT_S"]

#: How long to wait for a scheduler given by address before giving up.
CONNECT_TIMEOUT_S = 10


def is_zarr_store(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a folder holding Zarr (format 2 or 3) metadata.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> is_zarr_store(folder)
    False
    >>> open(os.path.join(folder, "zarr.json"), "w").close()
    >>> is_zarr_store(folder)
    True
    """
    return any(
        os.path.isfile(os.path.join(path, marker)) for marker in ("zarr.json", ".zarray", ".zgroup")
    )


def _import_dask() -> tuple[Any, Any, Any]:
    try:
        import dask.array as da
        import distributed
        import zarr
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"Zarr stores on Dask need dask[array], distributed and zarr ({exc}); install them"
            ' with pip install "onnx-relu[dask]"'
        ) from exc
    return da, distributed, zarr


@contextlib.contextmanager
def dask_client(scheduler: str | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` of the scheduler at ``scheduler``, or of a new LocalCluster.

    The LocalCluster (worker processes sized by dask for this machine, its dashboard on a
    random port of 127.0.0.1) lives only as long as the ``with`` block. Its worker processes
    import the parent's ``__main__`` module again: a script that calls this needs an
    ``if __name__ == "__main__":`` guard.
    """
    _da, distributed, _zarr = _import_dask()
    if scheduler:
        with distributed.Client(
            scheduler, timeout=f"{CONNECT_TIMEOUT_S}s"
        ) as client:
            yield client
        return
    with (
        distributed.LocalCluster(
            processes=True, dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _store_block(
    block: np.ndarray, *, target: Any, block_info: dict[int, dict[str, Any]] | None = None
) -> np.ndarray:
    """Write one computed block into its region of ``target``; return its size in bytes."""
    assert block_info is not None  # dask passes it to functions that declare it
    location = block_info[0]["array-location"]
    target[tuple(slice(start, stop) for start, stop in location)] = block
    return np.full((1,) * block.ndim, block.nbytes, dtype=np.int64)


def _open_source(zarr: Any, src: str) -> Any:
    try:
        source = zarr.open_array(src, mode="r")
    except Exception as exc:  # zarr raises several types for "not an array store"
        raise InvalidTensorFileError(
            f"{src!r} is not a readable Zarr array store ({type(exc).__name__}: {exc})"
        ) from None
    return source


def relu_zarr(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    opset: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> None:
    """Apply Relu to the Zarr array store ``src`` on Dask; write the Zarr store ``dst``.

    Parameters
    ----------
    src, dst : str or os.PathLike
        Local folders. ``dst`` gets ``src``'s shape, chunks (and shards), Zarr format,
        compressors, filters and attributes; its fill value is 0. An existing ``dst`` is
        replaced only if it is a Zarr store.
    opset : int, optional
        The ai.onnx opset whose Relu version decides the allowed types (None: the latest).
    scheduler : str, optional
        Address of a running ``dask.distributed`` scheduler; None starts a LocalCluster.
    client : distributed.Client, optional
        Use this client instead (``scheduler`` is then ignored).
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, called as chunks are written.

    Raises
    ------
    UnsupportedTypeError
        before any cluster work, if the store's type is not allowed at ``opset``.
    InvalidTensorFileError
        if ``src`` is not a Zarr array store.
    FileExistsError
        if ``dst`` exists and is not a Zarr store.
    """
    da, distributed, zarr = _import_dask()
    src = os.path.abspath(os.fspath(src))  # workers may run elsewhere: no relative paths
    source = _open_source(zarr, src)
    check_dtype(source.dtype, opset)
    write_chunks = source.shards or source.chunks  # whole shards: no two tasks share a file
    lazy = relu(da.from_zarr(source, chunks=write_chunks), opset=opset)
    with atomic_directory(dst) as temporary:
        target = zarr.create_array(
            temporary,
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
        written = da.map_blocks(
            _store_block,
            lazy,
            target=target,
            dtype=np.int64,
            chunks=tuple((1,) * len(c) for c in lazy.chunks),
        )
        blocks = written.to_delayed().ravel().tolist()
        total = lazy.nbytes
        with contextlib.ExitStack() as stack:
            if client is None:
                client = stack.enter_context(dask_client(scheduler))
            futures = client.compute(blocks)
            try:
                done = 0
                if progress is not None:
                    progress(0, total)
                for future in distributed.as_completed(futures):
                    done += int(future.result().sum())
                    if progress is not None:
                        progress(done, total)
            except BaseException:
                client.cancel(futures)  # stop writing into the temporary store before it goes
                raise
        if done != total:  # every block reports its bytes: a shortfall is a lost write
            raise RuntimeError(f"only {done} of {total} bytes were written to {dst}")
