"""Tensor files: NumPy ``.npy`` and ONNX ``TensorProto`` ``.pb``, read and written exactly.

The format is chosen by the file name's suffix (``.npy`` or ``.pb``, any letter case). Every
type is stored bit for bit: NaN payloads, signalling bits and the sign of zero survive a round
trip. Writes are atomic (see :func:`onnx_relu.files.atomic_file`): a failed or interrupted
write leaves no partial file. A file that cannot be read (empty, truncated, corrupt, not the
format its suffix says) raises :class:`~onnx_relu.errors.InvalidTensorFileError`, a
``ValueError``.

bfloat16 in ``.npy``
    NumPy has no bfloat16 type; ``numpy.save`` of an ``ml_dtypes.bfloat16`` array writes the
    header descr ``'<V2'`` (two raw bytes), and ``numpy.load`` gives those back as ``|V2``
    void values. Plain numpy void types are written as ``'|V2'``, and ``'<V2'`` is what exactly
    one ml_dtypes type writes (bfloat16 is its only 2-byte type), so :func:`read_tensor` reads a
    ``'<V2'`` descr as ``ml_dtypes.bfloat16`` and :func:`write_tensor` writes bfloat16 the way
    ``numpy.save`` does. Files stay readable by any numpy:
    ``numpy.load(path).view(ml_dtypes.bfloat16)``.

Types Relu does not allow are read fine (``.npy`` of uint8, bool, structured types...);
:func:`onnx_relu.relu` refuses them with its own error. Only pickled Python objects are refused
on reading, because unpickling a file can run arbitrary code.

``.pb`` files need the ``onnx`` package (the ``onnx`` extra), imported only when a
``.pb`` file is read or written; a TensorProto holds at most 2 GiB, so larger tensors need ``.npy``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ..io.streams import open_output
from .formats import tensor_format
from .npy import NpyHeader, read_npy, read_npy_header, write_npy
from .pb import encode_pb_tensor, read_pb_tensor

__all__ = [
    "read_tensor",
    "write_tensor",
    # the format modules' readers, also imported from here
    "NpyHeader",
    "read_npy_header",
    "read_pb_tensor",
]


def read_tensor(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> np.ndarray:
    """Read a tensor from a ``.npy`` or ``.pb`` (ONNX TensorProto) file, bit for bit.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The suffix chooses the format: ``.npy`` or ``.pb`` (any letter case). A bytes path is
        decoded with :func:`os.fsdecode`, which gives the OS the same bytes back.

    Returns
    -------
    numpy.ndarray
        A new, writeable array with the file's shape and type; bfloat16 as
        ``ml_dtypes.bfloat16``. ``.npy`` keeps the stored byte order and memory order.

    Raises
    ------
    UnsupportedFileFormatError
        (a ``ValueError``) for any other suffix.
    InvalidTensorFileError
        (a ``ValueError``) for an empty, truncated or corrupt file, or a ``.npy`` of pickled
        Python objects.
    OSError
        if the file cannot be opened (missing, a folder, no permission).

    Examples
    --------
    >>> import os, tempfile, numpy as np, ml_dtypes
    >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
    >>> write_tensor(path, np.array([-1.5, 2.0], dtype=ml_dtypes.bfloat16))
    >>> y = read_tensor(path)
    >>> str(y.dtype), y.astype(np.float32).tolist()
    ('bfloat16', [-1.5, 2.0])
    """
    kind = tensor_format(path)
    path = os.fsdecode(os.fspath(path))
    if kind == "npy":
        return read_npy(path)
    return read_pb_tensor(path)[0]


def write_tensor(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes], array: object, *, name: str = ""
) -> None:
    """Write ``array`` to a ``.npy`` or ``.pb`` file, atomically and bit for bit.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The suffix chooses the format: ``.npy`` or ``.pb``. An existing regular file is
        replaced atomically; a FIFO or a character device is written through as a stream
        (see :mod:`onnx_relu.io.endpoint`), never replaced.
    array : array_like
        Not a ``numpy.ma.MaskedArray``: neither format has a mask, so one is refused (as
        ``numpy.save`` refuses it) rather than written without its mask.
    name : str, optional
        The TensorProto's name (``.pb`` only).

    Raises
    ------
    UnsupportedFileFormatError
        for any other suffix (nothing is written).
    TypeError
        for a type the format cannot hold (Python objects; for ``.pb`` types ONNX lacks) and
        for a masked array.
    ValueError
        for a ``.pb`` tensor over 2 GiB.
    OSError
        if the file cannot be written; the destination is then left as it was.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "y.pb")
    >>> write_tensor(path, np.array([[1, -2]], dtype=np.int8))
    >>> y = read_tensor(path)
    >>> str(y.dtype), y.tolist()
    ('int8', [[1, -2]])
    """
    kind = tensor_format(path)
    path = os.fsdecode(os.fspath(path))
    masked = sys.modules.get("numpy.ma")  # not imported: array cannot be a masked array
    if masked is not None and isinstance(array, masked.MaskedArray):
        raise TypeError(
            f"cannot write a numpy.ma.MaskedArray to {path!r}: a .{kind} tensor file has no"
            " mask, and writing the data alone would lose it; write array.filled(value) or"
            " the data and numpy.ma.getmaskarray(array) as two files"
        )
    array = np.asarray(array)
    if kind == "npy":
        if array.dtype.hasobject:
            raise TypeError("a .npy tensor file cannot hold Python objects")
        with open_output(path) as output:
            write_npy(output, array)
    else:
        data = encode_pb_tensor(array, path, name)
        with open_output(path) as output:
            output.write(data)
