"""How many threads the relu kernel uses, and the environment variables that tune it.

The kernel (``src/kernel``) splits a call across a pool of C threads when its output is at least
about 2 MiB; smaller calls run on the calling thread. The count is process-wide: it comes from
``ONNX_RELU_NUM_THREADS`` at import, else from the CPUs available to the process, and
:func:`set_num_threads` or :func:`num_threads` change it.
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
import warnings
from collections.abc import Iterator

from . import _relu
from .errors import ThreadCountError

__all__ = ["get_num_threads", "set_num_threads", "num_threads", "default_num_threads"]

ENV_NUM_THREADS = "ONNX_RELU_NUM_THREADS"
ENV_NT_THRESHOLD = "ONNX_RELU_NT_THRESHOLD"
MAX_THREADS: int = _relu.MAX_THREADS


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


def _checked_count(n: object) -> int:
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
    """Let large relu calls use up to ``n`` threads (the calling one included); returns the old count.

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
    return _relu._set_num_threads(_checked_count(n))


@contextlib.contextmanager
def num_threads(n: int) -> Iterator[int]:
    """Use ``n`` threads inside a ``with`` block, then restore the previous count.

    The count is process-wide (not per Python thread): other threads calling relu meanwhile see
    it too. Yields ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_relu
    >>> with onnx_relu.num_threads(1):
    ...     y = onnx_relu.relu(np.array([-1.0, 2.0]))
    ...     onnx_relu.get_num_threads()
    1
    """
    previous = set_num_threads(n)
    try:
        yield n
    finally:
        _relu._set_num_threads(previous)


_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_UNIT = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _parse_size(text: str) -> int | None:
    """Bytes from "4194304", "4M", "4MiB", "512k"; None if the text is none of those."""
    match = _SIZE.match(text)
    if match is None:
        return None
    return int(match.group(1)) * _UNIT[(match.group(2) or "")[:1].lower()]


def _configure_from_environment(environ: os._Environ[str] | dict[str, str] = os.environ) -> None:
    """Apply ONNX_RELU_NUM_THREADS and ONNX_RELU_NT_THRESHOLD (called once, at import).

    A bad value does not stop the import: it gives a RuntimeWarning naming the variable, the
    value, what is allowed and the default used instead.
    """
    count = default_num_threads()
    text = environ.get(ENV_NUM_THREADS, "").strip()
    if text:
        try:
            count = _checked_count(int(text))
        except (ValueError, TypeError):
            warnings.warn(
                f"{ENV_NUM_THREADS}={text!r} is not a whole number in 1..{MAX_THREADS};"
                f" using {count} (the CPUs available to this process)",
                RuntimeWarning,
                stacklevel=2,
            )
    _relu._set_num_threads(count)

    text = environ.get(ENV_NT_THRESHOLD, "").strip()
    if text:
        size = (1 << 62) if text.lower() == "never" else _parse_size(text)
        if size is None:
            default = _relu._tuning()["default_nt_threshold"]
            warnings.warn(
                f"{ENV_NT_THRESHOLD}={text!r} is not a size in bytes (e.g. 4194304, 4M, 1G)"
                f" or 'never'; using the default, {default} bytes",
                RuntimeWarning,
                stacklevel=2,
            )
        else:
            _relu._set_tuning(nt_threshold=size)
