"""The relu kernel's thread count and tuning, and the environment variables that set them.

The kernel splits a call across a pool of C threads when its output is at least about 2 MiB;
smaller calls run on the calling thread. The count is process-wide: it comes from
``ONNX_RELU_NUM_THREADS`` when the kernel is first used, else from the CPUs available to the
process, and :func:`set_num_threads` or :func:`num_threads` change it.

The kernel's other settings (the output sizes from which it uses threads and streaming stores,
the smallest part a thread gets, the streaming-store instruction set, how long idle threads
spin) and what it detected about the machine (cache sizes) are read with :func:`kernel_tuning`
and changed with :func:`set_kernel_tuning` or, inside a ``with`` statement,
:func:`kernel_tuned` (a program that knows its arrays better than the defaults do; with
thresholds of 0 every code path runs on small arrays too).

The output cache's functions are :mod:`onnx_relu.output_cache`'s; the copy ceiling is
:mod:`onnx_relu.ceiling`'s.

Every function here may be called from any thread at any time, also on a free-threaded Python:
each setting is changed in one step, and the functions that return the previous settings return
what that call replaced. The environment variables are applied when this module is first
imported (which the first use of ``onnx_relu.relu``, of a thread setting or of the output cache
does; ``import onnx_relu`` alone does not): :func:`configure_from_environment`; how their sizes
are parsed is ``onnx_relu._environment``'s business.
"""

from __future__ import annotations

import atexit
import contextlib
import operator
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from . import _relu, _spec
from ._environment import size_from_environment
from .errors import ThreadCountError

__all__ = [
    "MAX_THREADS",
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
    "configure_from_environment",
]

#: The environment variables this module's first import applies (configure_from_environment):
#: the thread count, the output sizes from which streaming stores and threads are used, the
#: output cache's cap and minimum size.
ENV_NUM_THREADS = "ONNX_RELU_NUM_THREADS"
ENV_NT_THRESHOLD = "ONNX_RELU_NT_THRESHOLD"
ENV_PARALLEL_THRESHOLD = "ONNX_RELU_PARALLEL_THRESHOLD"
ENV_CACHE_BYTES = "ONNX_RELU_CACHE_BYTES"
ENV_CACHE_MIN_BYTES = "ONNX_RELU_CACHE_MIN_BYTES"

#: The largest thread count the kernel accepts (256): the range is the kernel's, 1..MAX_THREADS.
MAX_THREADS: int = _relu.MAX_THREADS
# The largest size or time set_kernel_tuning takes: the kernel's signed size type's.
_MAX_SETTING = sys.maxsize

# The type of each setting set_kernel_tuning takes, from the one table (onnx_relu._spec).
_SETTING_KINDS: dict[str, type] = {
    **{setting[0]: int for setting in _spec.SETTINGS},
    **{setting[0]: str for setting in _spec.NAMED_SETTINGS},
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


class _OpenScope:
    """One open :func:`num_threads` scope (its ``with`` statement): the count to restore."""

    __slots__ = ("count_to_restore",)

    def __init__(self, count_to_restore: int) -> None:
        self.count_to_restore = count_to_restore


# The open num_threads scopes of every Python thread, oldest first. One list for the process
# because the count is the kernel's, process-wide. The lock makes each entry or exit one step.
_open_scopes: list[_OpenScope] = []
_scopes_lock = threading.Lock()


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
    with _scopes_lock:
        scope = _OpenScope(_relu._set_num_threads(count))
        _open_scopes.append(scope)
    try:
        yield n
    finally:
        with _scopes_lock:
            index = next(i for i, open_scope in enumerate(_open_scopes) if open_scope is scope)
            del _open_scopes[index]
            if index == len(_open_scopes):  # it was the newest: its count goes now
                _relu._set_num_threads(scope.count_to_restore)
            else:  # the next newer scope replaced this one's count: it must restore ours
                _open_scopes[index].count_to_restore = scope.count_to_restore


def kernel_tuning() -> dict[str, Any]:
    """The kernel's settings and what it detected about the machine, as a new dict.

    Keys (from the one table, ``onnx_relu._spec``; docs/performance.md has them too):

    {keys}

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
    {parameters}

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


def _documented_settings() -> None:
    """Fill in the keys of :func:`kernel_tuning` and the keywords of :func:`set_kernel_tuning`
    from the one table (a new setting is one row there)."""
    indent = "\n    "
    keys = [
        *(f"- ``{key}`` ({kind}): {what}" for key, kind, what in _spec.REPORT),
        *(f"- ``{name}`` (int): {what}" for name, _field, what, _default in _spec.SETTINGS),
        *(
            f"- ``default_{name}`` (int): {name}'s default, {how}"
            for name, *_, how in _spec.SETTINGS
        ),
        *(f"- ``{name}`` (str): {what}" for name, what in _spec.NAMED_SETTINGS),
    ]
    parameters = [
        *(
            f"{name} : int, optional{indent}    The {what}; -1 leaves it as it is."
            for name, _field, what, _default in _spec.SETTINGS
        ),
        *(f"{name} : str, optional{indent}    The {what}." for name, what in _spec.NAMED_SETTINGS),
    ]
    kernel_tuning.__doc__ = (kernel_tuning.__doc__ or "").replace("{keys}", indent.join(keys))
    set_kernel_tuning.__doc__ = (set_kernel_tuning.__doc__ or "").replace(
        "{parameters}", indent.join(parameters)
    )


_documented_settings()


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


# ASCII digits only: Python's \d and int() also take other scripts' digits ("\uff13") and
# int() takes underscores ("3_0"), which no one means in an environment variable.
_WHOLE_NUMBER = re.compile(r"^[+]?[0-9]+$")


def configure_from_environment(environ: Mapping[str, str] = os.environ) -> None:
    """Apply the ONNX_RELU_* environment variables (this module's first import does, once).

    ``ONNX_RELU_NUM_THREADS`` (thread count), ``ONNX_RELU_NT_THRESHOLD`` and
    ``ONNX_RELU_PARALLEL_THRESHOLD`` (output sizes from which streaming stores and threads are
    used), ``ONNX_RELU_CACHE_BYTES`` and ``ONNX_RELU_CACHE_MIN_BYTES`` (the output cache's cap
    and minimum size). A bad value does not stop the import: it gives a RuntimeWarning naming
    the variable, the value, what is allowed and the default used instead.

    Examples
    --------
    >>> import onnx_relu
    >>> previous = onnx_relu.get_num_threads()
    >>> configure_from_environment({"ONNX_RELU_NUM_THREADS": "1"})
    >>> onnx_relu.get_num_threads()
    1
    >>> _ = onnx_relu.set_num_threads(previous)
    """
    count = default_num_threads()
    text = environ.get(ENV_NUM_THREADS, "").strip()
    if text:
        try:
            if not _WHOLE_NUMBER.match(text):
                raise ValueError(text)
            count = check_num_threads(int(text))
        except (ValueError, TypeError):
            warnings.warn(
                f"{ENV_NUM_THREADS}={text!r} is not a whole number in 1..{MAX_THREADS};"
                f" using {count} (the CPUs available to this process)",
                RuntimeWarning,
                stacklevel=2,
            )
    _relu._set_num_threads(count)

    tuning = _relu._tuning()
    cache = _relu._cache_info()
    sizes = "a size in bytes (e.g. 4194304, 4M, 1G)"
    nt = size_from_environment(
        environ, ENV_NT_THRESHOLD, f"{sizes} or 'never'", tuning["default_nt_threshold"]
    )
    parallel = size_from_environment(
        environ, ENV_PARALLEL_THRESHOLD, f"{sizes} or 'never'", tuning["parallel_threshold"]
    )
    settings = {"nt_threshold": nt, "parallel_threshold": parallel}
    _relu._set_tuning(**{key: value for key, value in settings.items() if value is not None})
    cache_bytes = size_from_environment(
        environ, ENV_CACHE_BYTES, f"{sizes}; 0 turns the cache off", cache["max_bytes"]
    )
    cache_min = size_from_environment(environ, ENV_CACHE_MIN_BYTES, sizes, cache["min_bytes"])
    limits = {"max_bytes": cache_bytes, "min_bytes": cache_min}
    _relu._set_cache(**{key: value for key, value in limits.items() if value is not None})


def _turn_off_output_cache() -> None:
    """Turn the output cache off and empty it (registered at exit when this module loads; the
    compiled module also empties it after the last array it gave out is freed)."""
    _relu._set_cache(max_bytes=0)


# Last, once every name above exists: the first import of this module (the kernel's settings;
# onnx_relu.relu, onnx_relu.output_cache and onnx_relu.ceiling import it) applies the ONNX_RELU_*
# environment variables, and has the output cache emptied at exit.
configure_from_environment()
atexit.register(_turn_off_output_cache)
