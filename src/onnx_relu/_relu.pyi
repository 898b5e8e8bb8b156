"""Types of the compiled module ``onnx_relu._relu`` (src/onnx_relu/_relu_module.c).

Private to :mod:`onnx_relu`: the public names are ``onnx_relu.relu_ufunc`` and the functions of
:mod:`onnx_relu.tuning`, :mod:`onnx_relu.output_cache` and :mod:`onnx_relu.ceiling`, which wrap
these.
"""

from collections.abc import Mapping

import numpy as np

#: The strict ufunc: one input, one output, exact loops for the Relu types only.
relu: np.ufunc

#: The most threads the kernel's pool can use.
MAX_THREADS: int

def _get_num_threads() -> int: ...
def _set_num_threads(n: int, /) -> int: ...

# generated: kernel settings (from src/onnx_relu/_spec.py: make tables)
#: Keys: num_threads (int), max_threads (int), threads_supported (bool), l2_bytes (int), llc_bytes
#: (int), llc_shared_cpus (int), cache_source (str), vendor (str), best_nt_isa (str), pool_workers
#: (int), parallel_threshold (int), min_chunk (int), nt_threshold (int), spin_ns (int), nt_streams
#: (int), default_parallel_threshold (int), default_min_chunk (int), default_nt_threshold (int),
#: default_spin_ns (int), default_nt_streams (int), nt_isa (str).
def _tuning() -> dict[str, int | bool | str]: ...

#: Keywords (all optional): parallel_threshold, min_chunk, nt_threshold, spin_ns, nt_streams (int,
#: -1 leaves a setting as it is) and nt_isa (str); returns the previous settings as _tuning() does.
def _set_tuning(**settings: int | str) -> dict[str, int | bool | str]: ...

# end of generated: kernel settings

#: src and dst: objects with the buffer protocol (dst writeable), of the same size.
def _copy(src: object, dst: object, *, nontemporal: bool = True) -> None: ...

#: relu of a view numpy cannot merge into one loop call, as one kernel call over its rows, into
#: out (None: a new array); returns out, or None where the ufunc serves (nothing written then).
def _relu_view(x: object, out: object, /) -> np.ndarray | None: ...

#: relu's output for x from the output cache, or None where the cache does not serve x.
def _empty_like(x: object, /) -> np.ndarray | None: ...

#: Keys: max_bytes, min_bytes, cached_bytes, cached_blocks, live_blocks, live_bytes, hits,
#: misses, failures.
def _cache_info() -> dict[str, int]: ...
def _set_cache(*, max_bytes: int = -1, min_bytes: int = -1) -> dict[str, int]: ...
def _release_cache() -> int: ...

#: The kernel for other native code: a capsule of a relu_kernel_entry (_relu_kernel_entry.h).
def _kernel_entry() -> object: ...

#: Adds the ufunc's loop for ml_dtypes.bfloat16 (given as a numpy dtype), once; True if added.
def _add_ml_dtypes_loops(dtypes: Mapping[str, np.dtype], /) -> int: ...
