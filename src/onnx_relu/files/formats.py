"""The tensor formats and the one rule that names a file's format: its suffix.

Here, apart from :mod:`.tensors`, so that the command line can list the formats and tell a
tensor file by its name without importing numpy.
"""

from __future__ import annotations

import os

from ..errors import UnsupportedFileFormatError

__all__ = ["TENSOR_FORMATS", "tensor_format", "is_zarr_name"]

#: File suffix (lower case) -> tensor format name.
TENSOR_FORMATS: dict[str, str] = {".npy": "npy", ".pb": "pb"}


def tensor_format(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """The tensor format named by ``path``'s suffix: ``"npy"`` or ``"pb"``.

    Raises :class:`~onnx_relu.errors.UnsupportedFileFormatError` (a ``ValueError``) otherwise.

    Examples
    --------
    >>> tensor_format("x.npy"), tensor_format("input_0.PB")
    ('npy', 'pb')
    >>> tensor_format("x.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    onnx_relu.errors.UnsupportedFileFormatError: cannot tell the tensor format of 'x.csv': ...
    """
    name = os.fsdecode(os.fspath(path))  # bytes paths too, decoded as the OS would
    suffix = os.path.splitext(name)[1].lower()
    try:
        return TENSOR_FORMATS[suffix]
    except KeyError:
        raise UnsupportedFileFormatError(
            f"cannot tell the tensor format of {name!r}: the name must end in"
            " .npy (NumPy) or .pb (ONNX TensorProto)"
        ) from None


def is_zarr_name(path: str) -> bool:
    """Whether ``path`` is named like a Zarr store: ``*.zarr``, with or without a trailing
    separator (a Zarr store is a folder, and no tensor format's suffix).

    Examples
    --------
    >>> is_zarr_name("in.zarr/"), is_zarr_name("x.npy")
    (True, False)
    """
    return path.rstrip("/\\").lower().endswith(".zarr")
