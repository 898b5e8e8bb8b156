"""The relu kernel's thread count and tuning, and the environment variables that set them.

The kernel splits a call across a pool of C threads when its output is at least about 2 MiB;
smaller calls run on the calling thread. The count is process-wide: it comes from
``ONNX_RELU_NUM_THREADS`` when the kernel is first used, else from the CPUs available to the
process, and :func:`set_num_threads` or :func:`num_threads` change it.

The kernel's other settings (the output sizes from which it uses threads and streaming stores,
the smallest chunk a thread gets, the streaming-store instruction set, how long idle threads
spin) and what it detected about the machine (cache sizes) are read with :func:`kernel_tuning`
and changed with :func:`set_kernel_tuning` or, for a block, :func:`kernel_tuned` (a program
that knows its arrays better than the defaults do; with thresholds of 0 every code path runs on
small arrays too). :func:`copy_ceiling` is the copy ``onnx-relu bench`` compares relu with,
split and stored like a relu call.

The output cache: ``relu(x)`` takes outputs of at least 1 MiB from a bounded cache of blocks
freed by earlier outputs (NumPy's memory-handler API, set only for those outputs), because fresh
pages from the OS cost more than relu itself. Idle blocks are capped at 1 GiB
(``ONNX_RELU_CACHE_BYTES``; 0 turns the cache off); :func:`cache_info`, :func:`set_cache_limits`
and :func:`release_cache` inspect, change and empty it.

Every function here may be called from any thread at any time, also on a free-threaded Python:
each setting is changed in one step, and the functions that return the previous settings return
what that call replaced. The environment variables are applied when this module is first
imported (which the first use of ``onnx_relu.relu`` or of a thread setting does; ``import
onnx_relu`` alone does not); how they are read is ``onnx_relu._environment``'s business.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from . import _relu
from ._environment import (
    ENV_CACHE_BYTES,
    ENV_CACHE_MIN_BYTES,
    ENV_NT_THRESHOLD,
    ENV_NUM_THREADS,
    ENV_PARALLEL_THRESHOLD,
    apply_at_first_load,
)
from .errors import ThreadCountError

__all__ = [
    "MAX_THREADS",
    "MAX_CACHE_BYTES",
    "ENV_NUM_THREADS",
    "ENV_NT_THRESHOLD",
    "ENV_PARALLEL_THRESHOLD",
    "ENV_CACHE_BYTES",
    "ENV_CACHE_MIN_BYTES",
    "check_num_threads",
    "get_num_threads",
    "set_num_threads",
    "num_threads",
    "default_num_threads",
    "kernel_tuning",
    "set_kernel_tuning",
    "kernel_tuned",
    "cache_info",
    "set_cache_limits",
    "release_cache",
    "copy_ceiling",
]

#: The largest thread count the kernel accepts (256): the range is the kernel's, 1..MAX_THREADS.
MAX_THREADS: int = _relu.MAX_THREADS
#: The largest cap and minimum size of the output cache, ``sys.maxsize`` bytes (2**63 - 1 on
#: 64-bit platforms): as a cap, no limit.
MAX_CACHE_BYTES: int = sys.maxsize
# The largest size or time set_kernel_tuning takes: the kernel's signed size type's.
_MAX_SETTING = sys.maxsize

# The type of each setting set_kernel_tuning takes.
_SETTING_KINDS: dict[str, type] = {
    "parallel_threshold": int,
    "nt_threshold": int,
    "min_chunk": int,
    "nt_isa": str,
    "spin_ns": int,
}


def default_num_threads() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one), at most 256.

    Examples
    --------
    >>> default_num_threads() >= 1
    True
    """
    process_cpu_count = getattr(os, "process_cpu_count", None)  # Python >= 3.13
    if process_cpu_count is not None:
        count = process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):
        count = len(os.sched_getaffinity(0))
    else:
        count = os.cpu_count()
    return max(1, min(count or 1, MAX_THREADS))


def check_num_threads(n: object) -> int:
    """``n`` as an ``int`` if it is a thread count the kernel accepts (1..256), else an error.

    The one check of the thread range, for :func:`set_num_threads`, :func:`num_threads`, the
    command line's ``--threads`` and the onnxruntime library.

    Raises
    ------
    ThreadCountError
        (a ``ValueError``) if ``n`` is not in 1..256.
    TypeError
        if ``n`` is not an integer (``bool`` included).

    Examples
    --------
    >>> check_num_threads(4)
    4
    >>> check_num_threads(0)
    Traceback (most recent call last):
    ...
    onnx_relu.errors.ThreadCountError: the number of threads must be in 1..256, got 0; ...
    """
    if isinstance(n, bool):
        raise TypeError(f"the number of threads must be an integer, got {n!r}")
    try:
        count = operator.index(n)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"the number of threads must be an integer, got {type(n).__name__} {n!r}"
        ) from None
    if not 1 <= count <= MAX_THREADS:
        raise ThreadCountError(
            f"the number of threads must be in 1..{MAX_THREADS}, got {count};"
            " 1 runs every call on the calling thread"
        )
    return count


def get_num_threads() -> int:
    """The number of threads (the calling one included) a large relu call may use.

    Examples
    --------
    >>> import onnx_relu
    >>> onnx_relu.get_num_threads() >= 1
    True
    """
    return _relu._get_num_threads()


def set_num_threads(n: int) -> int:
    """Let large relu calls use up to ``n`` threads (the caller included); returns the old count.

    The setting is process-wide. Calls whose output is smaller than about 2 MiB always run on
    the calling thread, so ``n`` matters only for large arrays. ``n = 1`` turns threading off.

    Raises
    ------
    ThreadCountError
        (a ``ValueError``) if ``n`` is not in 1..256.
    TypeError
        if ``n`` is not an integer.

    Examples
    --------
    >>> import onnx_relu
    >>> previous = onnx_relu.set_num_threads(1)
    >>> onnx_relu.get_num_threads()
    1
    >>> _ = onnx_relu.set_num_threads(previous)
    """
    return _relu._set_num_threads(check_num_threads(n))


class _OpenBlock:
    """One open :func:`num_threads` block: the count to put back when it ends."""

    __slots__ = ("count_to_restore",)

    def __init__(self, count_to_restore: int) -> None:
        self.count_to_restore = count_to_restore


# The open num_threads blocks of every Python thread, oldest first. One list for the process
# because the count is the kernel's, process-wide. The lock makes each entry or exit one step.
_open_blocks: list[_OpenBlock] = []
_blocks_lock = threading.Lock()


@contextlib.contextmanager
def num_threads(n: int) -> Iterator[int]:
    """Use ``n`` threads inside a ``with`` block, then restore the previous count.

    The count is process-wide (not per Python thread): other threads calling relu meanwhile see
    it too. Yields ``n``.

    Blocks may be open in several Python threads at once, in any order. A block that ends
    while it is the most recently entered open block puts back the count it replaced. One that
    ends while a newer block is open changes nothing now (the newer block's count stays in
    force), but hands the count it replaced to the next newer block, which puts that back in
    its turn: a count set by a block that has ended never outlives it. So thread A entering
    ``num_threads(1)``, thread B entering ``num_threads(4)``, A leaving, then B leaving gives
    1, 4, 4, then the count from before A's block. Within one thread blocks nest and each
    restores exactly the count in force when it began, :func:`set_num_threads` calls included.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_relu
    >>> with onnx_relu.num_threads(1):
    ...     y = onnx_relu.relu(np.array([-1.0, 2.0]))
    ...     onnx_relu.get_num_threads()
    1
    """
    count = check_num_threads(n)
    with _blocks_lock:
        block = _OpenBlock(_relu._set_num_threads(count))
        _open_blocks.append(block)
    try:
        yield n
    finally:
        with _blocks_lock:
            index = next(i for i, open_block in enumerate(_open_blocks) if open_block is block)
            del _open_blocks[index]
            if index == len(_open_blocks):  # it was the newest: its count goes now
                _relu._set_num_threads(block.count_to_restore)
            else:  # the next newer block replaced this block's count: it must restore ours
                _open_blocks[index].count_to_restore = block.count_to_restore


def kernel_tuning() -> dict[str, Any]:
    """The kernel's settings and what it detected about the machine, as a new dict.

    Keys: ``num_threads``, ``max_threads``, ``threads_supported`` (False for a build without
    threads), ``l2_bytes``, ``llc_bytes``, ``cache_source`` (where the cache sizes came from:
    "sysconf", "sysfs" or "default"), ``parallel_threshold``, ``min_chunk``, ``nt_threshold``,
    ``default_nt_threshold`` (sizes in bytes), ``spin_ns``, ``nt_isa``, ``best_nt_isa`` (the
    streaming-store instruction set in use and the best this CPU has: "none", "sse2", "avx2",
    "avx512"), ``pool_workers`` (threads the pool has started).

    Examples
    --------
    >>> settings = kernel_tuning()
    >>> settings["max_threads"], settings["nt_threshold"] > 0
    (256, True)
    """
    return _relu._tuning()


def set_kernel_tuning(**settings: int | str) -> dict[str, Any]:
    """Change some of the kernel's settings (process-wide); returns :func:`kernel_tuning` as before.

    Parameters
    ----------
    parallel_threshold, nt_threshold, min_chunk : int, optional
        Output sizes in bytes from which a call uses threads, from which it uses streaming
        stores, and the smallest chunk a thread gets; 0 means always, -1 leaves one unchanged.
    nt_isa : str, optional
        The streaming-store instruction set: "none" up to this CPU's ``best_nt_isa``.
    spin_ns : int, optional
        How long the pool's idle threads spin before they sleep.

    Raises
    ------
    ValueError
        for a size or time outside 0..``sys.maxsize`` (or -1, which leaves it as it is),
        naming that range, and for an instruction set this CPU does not have.
    TypeError
        for an unknown setting, and for a value of the wrong type (``bool`` included).

    Examples
    --------
    >>> previous = set_kernel_tuning(parallel_threshold=0)
    >>> kernel_tuning()["parallel_threshold"]
    0
    >>> _ = set_kernel_tuning(parallel_threshold=previous["parallel_threshold"])
    """
    for name, value in settings.items():
        _check_setting(name, value)
    return _relu._set_tuning(**settings)


def _check_setting(name: str, value: object) -> None:
    """Refuse a value the kernel would ignore or not hold, as set_cache_limits does."""
    kind = _SETTING_KINDS.get(name)
    if kind is None:
        return  # the compiled module names the unknown keyword (TypeError)
    if kind is str:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if not -1 <= value <= _MAX_SETTING:
        raise ValueError(
            f"{name} must be in 0..{_MAX_SETTING} (sys.maxsize), or -1 to leave it as it is;"
            f" got {value}"
        )


@contextlib.contextmanager
def kernel_tuned(**settings: int | str) -> Iterator[dict[str, Any]]:
    """Use the given kernel settings (as :func:`set_kernel_tuning`) inside a ``with`` block.

    The settings given are put back as they were when the block ends, whatever happens in it.
    Yields the settings as they were before.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_relu
    >>> with kernel_tuned(parallel_threshold=0, nt_threshold=0):
    ...     y = onnx_relu.relu(np.array([-1.0, 2.0]))  # split and streamed, even this small
    ...     kernel_tuning()["nt_threshold"]
    0
    """
    previous = set_kernel_tuning(**settings)
    try:
        yield previous
    finally:
        set_kernel_tuning(**{key: previous[key] for key in settings})


def copy_ceiling(src: object, dst: object, *, nontemporal: bool = True) -> None:
    """Copy ``src`` into ``dst`` the way relu writes its output: the benchmark's ceiling.

    The copy is split over the kernel's threads like a relu call of that size, and uses
    streaming stores (``nontemporal=True``) or regular ones. ``src`` and ``dst`` are contiguous
    buffers (numpy arrays, bytearrays) of the same size, disjoint or the same one (in place).

    Raises
    ------
    ValueError
        for buffers of different sizes or that partly overlap; BufferError for a read-only
        ``dst``.

    Examples
    --------
    >>> import numpy as np
    >>> src, dst = np.arange(100, dtype=np.int8), np.zeros(100, dtype=np.int8)
    >>> copy_ceiling(src, dst, nontemporal=False)
    >>> bool((src == dst).all())
    True
    """
    _relu._copy(src, dst, nontemporal=nontemporal)


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


# Last, once every name above exists: the first import of this module (the kernel's settings;
# onnx_relu.relu imports it too) applies the ONNX_RELU_* environment variables.
apply_at_first_load()
