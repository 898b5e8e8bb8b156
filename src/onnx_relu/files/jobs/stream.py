"""Relu from one tensor file (or stream) to another in one pass: :class:`StreamJob` for ``.npy``
to ``.npy`` in windows, :class:`MemoryJob` for anything involving ``.pb``.

``.npy`` to ``.npy`` never loads the array: the source is read one window of ``window_bytes`` at
a time into one reused buffer (``os.preadv`` for a regular file, in order for a stream), Relu
runs in that buffer, and the buffer is written to the destination, so peak memory is one window
whatever the file's size. The header is copied verbatim (same dtype descr, shape and memory
order). The destination, decided by the plan (:class:`~onnx_relu.io.endpoint.Destination`), is
opened by :func:`onnx_relu.io.streams.open_destination` as decided: a regular (or missing) file
replaced atomically, a FIFO, a character device or standard output written through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

from ..._api import relu
from ...io.endpoint import Destination, Endpoint
from ...io.streams import open_destination
from ..npy import NpyHeader, read_npy_data, write_npy
from ..pb import encode_pb_tensor
from ..progress import Progress
from .windows import relu_windows

__all__ = ["NpySource", "PbSource", "StreamJob", "MemoryJob"]


@dataclass(frozen=True)
class NpySource:
    """A ``.npy`` source held open, its header read once.

    Attributes
    ----------
    endpoint : Endpoint
    file : file object
        Positioned at the first byte of data (a stream: whatever comes next).
    header : NpyHeader
    in_order : bool
        Read in order (a stream, or standard input, which may start part-way into a file),
        else at offsets.
    """

    endpoint: Endpoint
    file: BinaryIO = field(repr=False, compare=False)
    header: NpyHeader
    in_order: bool

    def array(self) -> np.ndarray:
        """The whole array, read into memory (our own copy)."""
        return read_npy_data(self.file, self.header, self.endpoint.label)


@dataclass(frozen=True)
class PbSource:
    """A ``.pb`` source, read, parsed and checked when planned: its values and its name."""

    endpoint: Endpoint
    tensor: np.ndarray = field(repr=False, compare=False)
    #: The TensorProto's name (bytes where it is not UTF-8, written back as they were).
    name: str | bytes = ""

    def array(self) -> np.ndarray:
        """The values (our own copy, parsed from the file)."""
        return self.tensor


@dataclass(frozen=True)
class StreamJob:
    """``.npy`` to ``.npy`` in windows of ``window_bytes`` through one reused buffer."""

    source: NpySource
    destination: Destination
    opset: int | None
    window_bytes: int
    mode = "stream"

    def run(self, progress: Progress | None = None) -> None:
        """Do the job; ``progress(done_bytes, total_bytes)`` is called as windows complete."""
        header, file, label = self.source.header, self.source.file, self.source.endpoint.label
        windows = relu_windows(
            file,
            label,
            header,
            self.opset,
            self.window_bytes,
            progress,
            in_order=self.source.in_order,
        )
        with open_destination(self.destination) as output:
            output.write(header.raw)
            for _start, window in windows:
                output.write(memoryview(window.view(np.uint8)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class MemoryJob:
    """Through memory: the whole array read, Relu in place in it, then encoded and written
    (``.pb`` on either side; a TensorProto holds at most 2 GiB)."""

    source: NpySource | PbSource
    destination: Destination
    opset: int | None
    tensor_name: str | bytes = ""
    mode = "stream"

    @property
    def header(self) -> NpyHeader | None:
        """The ``.npy`` source's header (None for a ``.pb`` source)."""
        return self.source.header if isinstance(self.source, NpySource) else None

    def run(self, progress: Progress | None = None) -> None:
        """Do the job (``progress`` is not called: there are no windows)."""
        array = self.source.array()
        relu(array, out=array, opset=self.opset)  # the array is our own copy: no second buffer
        if self.destination.format == "pb":
            encoded = encode_pb_tensor(array, self.destination.path, self.tensor_name)
            with open_destination(self.destination) as output:
                output.write(encoded)
        else:
            with open_destination(self.destination) as output:
                write_npy(output, array)
