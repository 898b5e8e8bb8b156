"""The output cache: where ``relu(x)`` takes the memory of its large outputs.

``relu(x)`` takes outputs of at least 1 MiB from a bounded cache of blocks freed by earlier
outputs (NumPy's memory-handler API, set only for those outputs), because fresh pages from the OS
cost more than relu itself. Idle blocks are capped at 1 GiB (``ONNX_RELU_CACHE_BYTES``; 0 turns
the cache off); :func:`cache_info`, :func:`set_cache_limits` and :func:`release_cache` inspect,
change and empty it.

Every function here may be called from any thread at any time, also on a free-threaded Python.
The ONNX_RELU_* environment variables are applied when this module is first imported (it
imports :mod:`onnx_relu.tuning`, which applies them).
"""

from __future__ import annotations

import sys

from . import _relu
from . import tuning as _tuning  # noqa: F401  (the kernel's first load applies ONNX_RELU_*)

__all__ = [
    "MAX_CACHE_BYTES",
    "cache_info",
    "set_cache_limits",
    "release_cache",
]

#: The largest cap and minimum size of the output cache, ``sys.maxsize`` bytes (2**63 - 1 on
#: 64-bit platforms): as a cap, no limit.
MAX_CACHE_BYTES: int = sys.maxsize


def cache_info() -> dict[str, int]:
    """The output cache as it stands, as a new dict.

    Keys: ``max_bytes`` (the cap on idle blocks; 0: the cache is off), ``min_bytes`` (outputs of
    at least this size use the cache), ``cached_bytes`` and ``cached_blocks`` (idle blocks kept
    for reuse), ``live_blocks`` and ``live_bytes`` (blocks held by arrays now), ``hits`` and
    ``misses`` (allocations served from idle blocks, and new mappings), ``failures``
    (allocations that failed: numpy raised MemoryError). Sizes are mapped bytes: a block is one
    4 KiB page of header followed by its array's data, which is rounded up to whole 4 KiB pages
    when the array is smaller than 2 MiB, and to whole 2 MiB (huge) pages when it is 2 MiB or
    more (so a 2 MiB array takes 2 MiB + 4 KiB, a 3 MiB one 4 MiB + 4 KiB); an empty array's
    data still takes one page. An allocation reuses an idle block that fits if at most half of
    that block is left over.

    Examples
    --------
    >>> import numpy as np, onnx_relu
    >>> x = np.ones(1 << 20, dtype=np.float32)  # 4 MiB
    >>> before = cache_info()["hits"]
    >>> for _ in range(3):
    ...     y = onnx_relu.relu(x)  # the block of the previous y comes back
    ...     del y
    >>> cache_info()["hits"] - before >= 2
    True
    """
    return _relu._cache_info()


def set_cache_limits(
    *, max_bytes: int | None = None, min_bytes: int | None = None
) -> dict[str, int]:
    """Change the output cache's cap and minimum size (process-wide); returns :func:`cache_info`
    as before.

    Parameters
    ----------
    max_bytes : int, optional
        Cap on the bytes of idle blocks, 0 to :data:`MAX_CACHE_BYTES` (``sys.maxsize``: no
        cap); a lower cap gives the oldest ones back to the OS at once; 0 turns the cache off
        (outputs are allocated by numpy as usual).
    min_bytes : int, optional
        Outputs of at least this many bytes come from the cache (default 1 MiB),
        0 to :data:`MAX_CACHE_BYTES`.

    Raises
    ------
    ValueError
        for a size outside 0 to :data:`MAX_CACHE_BYTES`, naming that range; TypeError for one
        that is not an integer.

    Examples
    --------
    >>> previous = set_cache_limits(max_bytes=0)
    >>> cache_info()["max_bytes"], cache_info()["cached_bytes"]
    (0, 0)
    >>> _ = set_cache_limits(max_bytes=previous["max_bytes"])
    """
    given = {"max_bytes": max_bytes, "min_bytes": min_bytes}
    for name, value in given.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an integer number of bytes, got {value!r}")
        if not 0 <= value <= MAX_CACHE_BYTES:
            bound = ">= 0" if value < 0 else f"<= {MAX_CACHE_BYTES}"
            raise ValueError(
                f"{name} must be {bound} bytes, got {value};"
                f" allowed: 0..{MAX_CACHE_BYTES} (sys.maxsize, which as a cap means no limit)"
            )
    return _relu._set_cache(**{name: value for name, value in given.items() if value is not None})


def release_cache() -> int:
    """Give the output cache's idle blocks back to the OS; returns the bytes released.

    Arrays that hold blocks keep them; their blocks come back to the cache when they are freed
    (so memory that must be free now is freed by deleting the arrays, then this). The cache
    stays on; ``set_cache_limits(max_bytes=0)`` turns it off. Interpreter exit releases
    everything.

    Examples
    --------
    >>> release_cache() >= 0
    True
    >>> cache_info()["cached_bytes"]
    0
    """
    return _relu._release_cache()
