"""How the ONNX_RELU_* environment variables are read and applied, once, when the kernel loads.

``ONNX_RELU_NUM_THREADS`` (thread count), ``ONNX_RELU_NT_THRESHOLD`` and
``ONNX_RELU_PARALLEL_THRESHOLD`` (output sizes from which streaming stores and threads are
used), ``ONNX_RELU_CACHE_BYTES`` and ``ONNX_RELU_CACHE_MIN_BYTES`` (the output cache's cap and
minimum size). What users call to change these settings later is :mod:`onnx_relu.tuning`,
whose import applies them (:func:`apply_at_first_load`): ``import onnx_relu`` loads neither
the kernel nor this module; the first use of ``relu``, ``relu_ufunc`` or a thread setting does.
"""

from __future__ import annotations

import atexit
import os
import re
import warnings
from collections.abc import Mapping

from . import _relu

# The variables (onnx_relu.tuning exports these names too).
ENV_NUM_THREADS = "ONNX_RELU_NUM_THREADS"
ENV_NT_THRESHOLD = "ONNX_RELU_NT_THRESHOLD"
ENV_PARALLEL_THRESHOLD = "ONNX_RELU_PARALLEL_THRESHOLD"
ENV_CACHE_BYTES = "ONNX_RELU_CACHE_BYTES"
ENV_CACHE_MIN_BYTES = "ONNX_RELU_CACHE_MIN_BYTES"

# ASCII digits only: Python's \d and int() also take other scripts' digits ("\uff13") and
# int() takes underscores ("3_0"), which no one means in an environment variable.
_SIZE = re.compile(r"^\s*([0-9]+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_WHOLE_NUMBER = re.compile(r"^[+]?[0-9]+$")
_UNIT = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
#: The largest streaming-store threshold (what "never" means): 4 EiB. Larger sizes do not fit
#: the kernel's signed size type and are refused like any other bad value.
NT_THRESHOLD_NEVER = 1 << 62


def parse_size(text: str) -> int | None:
    """Bytes from "4194304", "4M", "4MiB", "512k"; None if the text is none of those.

    Examples
    --------
    >>> parse_size("4M"), parse_size("512k"), parse_size("lots")
    (4194304, 524288, None)
    """
    match = _SIZE.match(text)
    if match is None:
        return None
    return int(match.group(1)) * _UNIT[(match.group(2) or "")[:1].lower()]


def turn_off_output_cache() -> None:
    """Turn the output cache off and empty it (registered at exit when the kernel loads)."""
    _relu._set_cache(max_bytes=0)


def _size_from_environment(
    environ: Mapping[str, str], name: str, allowed: str, default: object
) -> int | None:
    """The size in ``environ[name]`` in bytes; None if unset; a RuntimeWarning and None if bad."""
    text = environ.get(name, "").strip()
    if not text:
        return None
    never = "never" in allowed
    size = NT_THRESHOLD_NEVER if never and text.lower() == "never" else parse_size(text)
    if size is None:
        warnings.warn(
            f"{name}={text!r} is not {allowed}; using the default, {default} bytes",
            RuntimeWarning,
            stacklevel=3,
        )
    elif size > NT_THRESHOLD_NEVER:  # would not fit the kernel's signed size type
        largest = (
            f"the largest threshold ({NT_THRESHOLD_NEVER} bytes, which is what 'never' means)"
            if never
            else f"the largest size allowed ({NT_THRESHOLD_NEVER} bytes)"
        )
        warnings.warn(
            f"{name}={text!r} is {size} bytes, more than {largest}; using the default,"
            f" {default} bytes",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return size


def configure_from_environment(environ: Mapping[str, str] = os.environ) -> None:
    """Apply the ONNX_RELU_* environment variables (the kernel's first load does, once).

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
    # (here, not at the top: onnx_relu.tuning imports this module as it finishes loading)
    from .tuning import MAX_THREADS, check_num_threads, default_num_threads

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
    nt = _size_from_environment(
        environ, ENV_NT_THRESHOLD, f"{sizes} or 'never'", tuning["default_nt_threshold"]
    )
    parallel = _size_from_environment(
        environ, ENV_PARALLEL_THRESHOLD, f"{sizes} or 'never'", tuning["parallel_threshold"]
    )
    settings = {"nt_threshold": nt, "parallel_threshold": parallel}
    _relu._set_tuning(**{key: value for key, value in settings.items() if value is not None})
    cache_bytes = _size_from_environment(
        environ, ENV_CACHE_BYTES, f"{sizes}; 0 turns the cache off", cache["max_bytes"]
    )
    cache_min = _size_from_environment(environ, ENV_CACHE_MIN_BYTES, sizes, cache["min_bytes"])
    limits = {"max_bytes": cache_bytes, "min_bytes": cache_min}
    _relu._set_cache(**{key: value for key, value in limits.items() if value is not None})


_applied = False


def apply_at_first_load() -> None:
    """What loading the kernel's settings (:mod:`onnx_relu.tuning` or
    :mod:`onnx_relu.output_cache`, whichever comes first) does, once per process: apply the
    environment, and have the output cache turned off and emptied at exit (the compiled module
    also empties it after the last array it gave out is freed)."""
    global _applied
    if _applied:  # (the import lock runs the modules' first imports one at a time)
        return
    _applied = True
    configure_from_environment()
    atexit.register(turn_off_output_cache)
