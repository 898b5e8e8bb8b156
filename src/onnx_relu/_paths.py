"""Paths made absolute, for every layer (the file layer and the ONNX layer import neither each
other nor this package's heavy modules; only the standard library here)."""

from __future__ import annotations

import errno
import os

__all__ = ["absolute_path"]


def absolute_path(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute, as :func:`os.path.abspath` does; where the current working
    folder has been removed (so that a relative path names no file), a ``FileNotFoundError``
    that says so and names ``path``, not the bare one ``os.getcwd`` raises.

    Examples
    --------
    >>> absolute_path("/data/x.npy")
    '/data/x.npy'
    """
    path = os.fspath(path)
    try:
        return os.path.abspath(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            errno.ENOENT,
            "the current working folder no longer exists (it was removed), so this relative"
            " path names no file",
            path,
        ) from None
