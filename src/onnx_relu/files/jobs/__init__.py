"""The file jobs that :func:`onnx_relu.files.plan.plan_apply` makes and runs, each a small type
whose ``run(progress)`` does the job in one pass:

- :class:`.stream.StreamJob`: ``.npy`` to ``.npy`` in windows through one reused buffer;
- :class:`.stream.MemoryJob`: anything involving ``.pb``, through memory (a TensorProto is at
  most 2 GiB);
- :class:`.in_place.InPlaceJob`: a ``.npy`` file rewritten window by window;
- :class:`.zarr_dask.ZarrJob`: a Zarr store on Dask (:func:`.zarr_dask.relu_zarr`), whose output
  folder is replaced as :mod:`.zarr_output` says.

The codecs (:mod:`onnx_relu.files.npy`, :mod:`onnx_relu.files.pb`) and the streams
(:mod:`onnx_relu.io.streams`) are apart: a job only says what goes where.

Importing this package imports nothing (the command line's help reads
:data:`DEFAULT_CHUNK_BYTES` from it); its modules load numpy and the kernel.
"""

__all__ = ["DEFAULT_CHUNK_BYTES"]

#: Bytes per window of a ``.npy`` job: large enough that per-window costs (two system calls)
#: vanish, small enough to stay near the CPU caches and keep peak memory low.
DEFAULT_CHUNK_BYTES = 8 << 20
