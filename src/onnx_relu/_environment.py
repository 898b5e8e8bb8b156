"""How the sizes in the ONNX_RELU_* environment variables are read ("4M", "512k", "never").

The variables are named, and applied when the kernel's settings are first loaded, by
:mod:`onnx_relu.tuning` (:func:`onnx_relu.tuning.configure_from_environment`); this module
imports nothing of the package.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping

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


def size_from_environment(
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
