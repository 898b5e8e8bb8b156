"""The plan of one Relu over files, made once: what IN and OUT are, every refusal checked before
anything is created, then one pass that streams.

:func:`plan_apply` is what :func:`onnx_relu.files.relu_file` and ``onnx-relu apply`` run. It
works out, once, what the source and the destination are (their paths, how messages name them,
their kinds of path from :mod:`.paths`, ``-`` for standard input or output included, their
formats), checks every rule and limit (formats by suffix or, for standard input, by its data;
the in-place rules; the Zarr rules; readable and writable paths; the type at the opset;
protobuf's 2 GiB), and holds the source open with its header read. The plan's
:meth:`ApplyPlan.run` then does the job in one pass:

``.npy`` to ``.npy`` (and in place) never loads the array: the source is read one window of
``chunk_bytes`` at a time into one reused buffer (``os.preadv`` for a regular file, in order
for a stream), Relu runs in that buffer, and the buffer is written to the destination (in
place: back where it came from), so peak memory is one window whatever the file's size.
Anything involving ``.pb`` goes through memory (a TensorProto is at most 2 GiB anyway). A Zarr
store (``dask=True``) runs :func:`onnx_relu.files.relu_zarr`.

The windows are read, not memory-mapped: a file that another process shortens during the run
(truncated, or a copy still being written) would deliver SIGBUS, which kills the process, at
the first touch of a mapped page past its new end; a read instead comes back short, which is
reported as :class:`~onnx_relu.errors.InvalidTensorFileError` naming the file, with the
temporary output removed.

The destination is opened by :func:`.paths.open_output`: a regular (or missing) file is
replaced atomically (:func:`onnx_relu.files.atomic_file`), a FIFO or a character device or
standard output is written through. The source is only read. In place, a ``.npy`` file is
rewritten window by window; that is not atomic, but Relu is idempotent
(``relu(relu(x)) == relu(x)``, NaN bits included), so running it again on a file whose rewrite
was interrupted completes it correctly.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np

from .. import check_dtype, relu
from ..errors import (
    FileArgumentError,
    InvalidTensorFileError,
    UnsupportedFileFormatError,
    UnsupportedPathError,
)
from ._atomic import store_replacement_refusal
from .npy import NPY_MAGIC, NpyHeader, read_npy_data, read_npy_header, write_npy
from .paths import (
    STDIO,
    PathKind,
    absolute_path,
    check_output_kind,
    check_readable,
    check_writable_destination,
    describe,
    open_input,
    open_output,
    path_kind,
    refuse_terminal_output,
    regular_size,
)
from .pb import encode_pb_tensor, parse_pb_tensor, pb_size_refusal, read_pb_bytes
from .progress import Progress
from .tensors import TENSOR_FORMATS, tensor_format

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "Names",
    "LIBRARY_NAMES",
    "Endpoint",
    "ApplyPlan",
    "plan_apply",
]

#: Bytes per window: large enough that per-window costs (two system calls) vanish, small
#: enough to stay near the CPU caches and keep peak memory low.
DEFAULT_CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class Names:
    """What the arguments of a plan are called in its messages.

    Attributes
    ----------
    src, dst : str
        The source and the destination ("IN" and "OUT" on the command line).
    in_place : str
        The option that rewrites the source in place.
    dask : str, optional
        The option that selects Dask. Where it is given, a ``*.zarr`` name without it is
        refused with a message naming it; None: such a name is only a suffix no tensor format
        has.
    """

    src: str = "src"
    dst: str = "dst"
    in_place: str = "in_place=True"
    dask: str | None = None


#: The names of :func:`onnx_relu.files.relu_file`'s arguments.
LIBRARY_NAMES = Names()


@dataclass(frozen=True)
class Endpoint:
    """The source or the destination of a plan.

    Attributes
    ----------
    path : str
        As given; ``"-"`` for standard input or output.
    label : str
        How messages name it: the path quoted, or "standard input" / "standard output".
    kind : PathKind
        What the path is (:func:`.paths.path_kind`); :attr:`PathKind.STDIO` for ``-``.
    format : str
        "npy", "pb" or "zarr".
    """

    path: str
    label: str
    kind: PathKind
    format: str


@dataclass(frozen=True)
class ApplyPlan:
    """A checked job made by :func:`plan_apply`: run it with :meth:`run`, inside the ``with``
    block that made it (the source is held open there).

    Attributes
    ----------
    mode : str
        "stream" (source to destination in one pass), "in_place" or "dask".
    source : Endpoint
    destination : Endpoint or None
        None in place.
    opset : int or None
    chunk_bytes : int
        The size of the windows of ``.npy`` data.
    names : Names
    dash_is_stdio : bool
        Whether ``-`` names standard input or output.
    header : NpyHeader or None
        The ``.npy`` source's header, read once (None for ``.pb`` and Zarr).
    tensor : numpy.ndarray or None
        A ``.pb`` source's values, read, parsed and checked (None otherwise).
    tensor_name : str or bytes
        That TensorProto's name (kept when the destination is ``.pb``, as bytes where it is
        not UTF-8).
    scheduler : str or None
        With Dask: the scheduler's address (None: a LocalCluster).
    stall_timeout : float or None
        With Dask: seconds without a completed block before giving up (None: the default).
    """

    mode: str
    source: Endpoint
    destination: Endpoint | None
    opset: int | None
    chunk_bytes: int
    names: Names
    dash_is_stdio: bool = False
    header: NpyHeader | None = None
    tensor: np.ndarray | None = field(default=None, repr=False)
    tensor_name: str | bytes = ""
    scheduler: str | None = None
    stall_timeout: float | None = None
    file: BinaryIO | None = field(default=None, repr=False, compare=False)

    @property
    def stdio(self) -> bool:
        """Whether standard input or standard output is one of its ends."""
        ends = (self.source, self.destination)
        return any(end is not None and end.kind is PathKind.STDIO for end in ends)

    def run(self, progress: Progress | None = None) -> None:
        """Do the job in one pass; ``progress(done_bytes, total_bytes)`` is called as ``.npy``
        windows (or Zarr chunks) complete."""
        if self.mode == "dask":
            self._run_dask(progress)
            return
        assert self.file is not None  # only a Dask plan holds no source
        if self.mode == "in_place":
            assert self.header is not None  # an in-place plan's source is a .npy file
            _relu_in_place(self.file, self.source.label, self.header, self, progress)
            return
        assert self.destination is not None  # only an in-place plan has none
        if self.header is not None and self.destination.format == "npy":
            _stream_npy(self.file, self.header, self, progress)
            return
        if self.header is not None:
            array = read_npy_data(self.file, self.header, self.source.label)
        else:
            assert self.tensor is not None  # a .pb source was parsed when planned
            array = self.tensor
        relu(array, out=array, opset=self.opset)  # the array is our own copy: no second buffer
        if self.destination.format == "pb":
            encoded = encode_pb_tensor(array, self.destination.path, self.tensor_name)
            with self._output() as output:
                output.write(encoded)
        else:
            with self._output() as output:
                write_npy(output, array)

    def _output(self) -> contextlib.AbstractContextManager[Any]:
        assert self.destination is not None
        return open_output(self.destination.path, self.names.dst, dash_is_stdio=self.dash_is_stdio)

    def _run_dask(self, progress: Progress | None) -> None:
        from .zarr_dask import STALL_TIMEOUT_S, relu_zarr

        assert self.destination is not None
        relu_zarr(
            self.source.path,
            self.destination.path,
            opset=self.opset,
            scheduler=self.scheduler,
            progress=progress,
            stall_timeout=STALL_TIMEOUT_S if self.stall_timeout is None else self.stall_timeout,
        )


@contextlib.contextmanager
def plan_apply(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str] | None = None,
    *,
    in_place: bool = False,
    dask: bool = False,
    stream_format: str | None = None,
    opset: int | None = None,
    chunk_bytes: int | None = None,
    scheduler: str | None = None,
    stall_timeout: float | None = None,
    dash_is_stdio: bool = False,
    check_paths: bool = False,
    names: Names = LIBRARY_NAMES,
) -> Iterator[ApplyPlan]:
    """Plan Relu from ``src`` to ``dst`` (or of ``src`` in place), checking everything first;
    yield the plan, with the source open, for :meth:`ApplyPlan.run`.

    Parameters
    ----------
    src, dst : str or os.PathLike
        ``.npy`` or ``.pb`` files in any combination (with ``dask``, Zarr stores named
        ``*.zarr``); with ``dash_is_stdio``, ``"-"`` is standard input (``src``) or output
        (``dst``). Omit ``dst`` with ``in_place``.
    in_place : bool
        Rewrite ``src`` (a regular ``.npy`` file) instead of writing ``dst``.
    dask : bool
        ``src`` and ``dst`` are Zarr stores, processed on Dask (:func:`.zarr_dask.relu_zarr`).
    stream_format : {"npy", "pb"}, optional
        The format of ``-``: standard input's (None: told from its data, which must then be
        ``.npy``), standard output's (None: the source's).
    opset : int, optional
        The ai.onnx opset whose Relu version decides the allowed types (None: the latest).
    chunk_bytes : int, optional
        The size of the windows of ``.npy`` data (None: :data:`DEFAULT_CHUNK_BYTES`).
    scheduler, stall_timeout
        With ``dask``: as for :func:`.zarr_dask.relu_zarr` (None: its defaults).
    dash_is_stdio : bool
        ``"-"`` names standard input or output; binary data is then never written to a
        terminal.
    check_paths : bool
        Refuse, before anything is opened, a source that is missing, a folder or unreadable,
        and a destination whose folder is missing or not writable, with
        :class:`~onnx_relu.errors.FileArgumentError` naming them (the command line's way);
        False: these surface as the ``OSError`` of opening them.
    names : Names
        What messages call the arguments.

    Yields
    ------
    ApplyPlan
        The checked job; leaving the block closes the source.

    Raises
    ------
    FileArgumentError
        (a ``ValueError``) for arguments that do not go together, and with ``check_paths`` for
        the paths above.
    UnsupportedFileFormatError
        for a name whose suffix names no tensor format, standard input that is not ``.npy``
        without ``stream_format``, and a tensor too large for a ``.pb`` destination.
    UnsupportedTypeError
        for a type the Relu version at ``opset`` does not allow.
    InvalidTensorFileError, UnsupportedPathError, OSError
        for a source that cannot be read, and paths of kinds that cannot be used.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from onnx_relu.files import read_tensor, write_tensor
    >>> folder = tempfile.mkdtemp()
    >>> x, y = os.path.join(folder, "x.npy"), os.path.join(folder, "y.npy")
    >>> write_tensor(x, np.array([-2.0, 0.5], dtype=np.float32))
    >>> with plan_apply(x, y) as plan:
    ...     print(plan.mode, plan.source.format, plan.header.shape, plan.destination.kind.value)
    ...     plan.run()
    stream npy (2,) missing
    >>> read_tensor(y).tolist()
    [0.0, 0.5]
    >>> with plan_apply(x, y, in_place=True) as plan:  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    ...
    onnx_relu.errors.FileArgumentError: in_place=True rewrites src itself: pass no dst
    """
    if chunk_bytes is None:
        chunk_bytes = DEFAULT_CHUNK_BYTES
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    if stream_format is not None and stream_format not in TENSOR_FORMATS.values():
        raise UnsupportedFileFormatError(
            f"unknown tensor format {stream_format!r}: the formats are 'npy' (NumPy) and 'pb'"
            " (ONNX TensorProto)"
        )
    # bytes paths are decoded as the OS would; os.fsdecode gives the OS the same bytes back
    src = os.fsdecode(os.fspath(src))
    dst = None if dst is None else os.fsdecode(os.fspath(dst))
    common: dict[str, Any] = {"opset": opset, "chunk_bytes": chunk_bytes, "names": names}
    stdin = dash_is_stdio and src == STDIO
    stdout = dash_is_stdio and dst == STDIO
    if in_place and stdin:
        raise FileArgumentError(
            f"{names.in_place} rewrites a .npy file; it cannot rewrite standard input ('-')"
        )
    if dask and (stdin or stdout):
        raise FileArgumentError(
            f"{names.dask or 'dask'} works on Zarr stores, not on standard input or output ('-')"
        )
    if dst is None and stdin:
        raise FileArgumentError(f"{names.dst} is required: a file name, or - for standard output")
    if dask:
        yield _dask_plan(src, dst, in_place, scheduler, stall_timeout, check_paths, common)
        return
    if names.dask and not (stdin or stdout) and (_zarr_name(src) or (dst and _zarr_name(dst))):
        raise FileArgumentError(f"Zarr stores are processed on Dask: add {names.dask}")
    src_format = None if stdin else tensor_format(src)
    if in_place:
        if dst is not None:
            raise FileArgumentError(
                f"{names.in_place} rewrites {names.src} itself: pass no {names.dst}"
            )
        if src_format != "npy":
            raise FileArgumentError(
                f"in-place needs a .npy file; {src!r} is a .pb file, whose protobuf"
                " encoding cannot be rewritten in place: write the result to a new file instead"
            )
        with _in_place_plan(src, check_paths, common) as plan:
            yield plan
        return
    if dst is None:
        raise FileArgumentError(
            f"{names.dst} is required (or {names.in_place} to rewrite {names.src})"
        )
    dst_format = None if stdout else tensor_format(dst)
    dst_kind = None
    if check_paths:
        if not stdin:
            check_readable(src, names.src)
        if not stdout:
            dst_kind = check_writable_destination(dst, names.dst)
    if stdout:
        refuse_terminal_output("binary tensor data", "> y.npy")
    source_label = "standard input" if stdin else repr(src)
    with open_input(src, names.src, dash_is_stdio=dash_is_stdio) as opened:
        file: BinaryIO = opened
        if stdin:
            start = file.read(len(NPY_MAGIC))
            src_format = stream_format or _sniffed(start, source_label)
            if src_format == "pb" and start.startswith(NPY_MAGIC):
                raise UnsupportedFileFormatError(
                    f"{source_label} holds .npy data (it starts with the .npy magic string), not"
                    " an ONNX TensorProto as the format 'pb' says"
                )
            file = _Rejoined(start, file)  # type: ignore[assignment]
        assert src_format is not None
        if stdout:
            dst_format = stream_format or src_format
        assert dst_format is not None
        source = Endpoint(
            src, source_label, path_kind(src, dash_is_stdio=dash_is_stdio), src_format
        )
        header = None
        tensor = None
        tensor_name: str | bytes = ""
        if src_format == "npy":
            header = read_npy_header(file, source_label)
            check_dtype(header.dtype, opset)
            if dst_format == "pb":  # refused before reading what cannot be written
                refusal = pb_size_refusal(header.nbytes, dst)
                if refusal is not None:
                    raise UnsupportedFileFormatError(refusal)
        else:
            data = read_pb_bytes(file, source_label)
            base = absolute_path(".") if stdin else os.path.dirname(absolute_path(src))
            tensor, tensor_name = parse_pb_tensor(data, source_label, base)
            check_dtype(tensor.dtype, opset)
        if dst_kind is None:
            dst_kind = check_output_kind(dst, names.dst, dash_is_stdio=dash_is_stdio)
        destination = Endpoint(
            dst, "standard output" if stdout else repr(dst), dst_kind, dst_format
        )
        yield ApplyPlan(
            "stream",
            source,
            destination,
            dash_is_stdio=dash_is_stdio,
            header=header,
            tensor=tensor,
            tensor_name=tensor_name,
            file=file,
            **common,
        )


def _zarr_name(path: str) -> bool:
    return path.rstrip("/\\").lower().endswith(".zarr")


def _dask_plan(
    src: str,
    dst: str | None,
    in_place: bool,
    scheduler: str | None,
    stall_timeout: float | None,
    check_paths: bool,
    common: dict[str, Any],
) -> ApplyPlan:
    """The plan of a Zarr store on Dask: only names and paths are checked here; the store's
    type is checked by :func:`.zarr_dask.relu_zarr` before any cluster work."""
    names: Names = common["names"]
    dask = names.dask or "dask"
    if in_place:
        raise FileArgumentError(f"{names.in_place} works on .npy files, not with {dask}")
    if dst is None:
        raise FileArgumentError(f"{names.dst} is required with {dask}: the Zarr store to write")
    for role, path in ((names.src, src), (names.dst, dst)):
        if not _zarr_name(path):
            raise FileArgumentError(
                f"with {dask}, {role} must be a Zarr store named *.zarr, got {path!r}"
            )
    if check_paths:
        check_readable(src, names.src, folder=True)
        check_writable_destination(dst, names.dst, store=True)
    refusal = store_replacement_refusal(dst)
    if refusal is not None:
        raise FileArgumentError(f"{names.dst} {refusal}")
    return ApplyPlan(
        "dask",
        Endpoint(src, repr(src), path_kind(src), "zarr"),
        Endpoint(dst, repr(dst), path_kind(dst), "zarr"),
        scheduler=scheduler,
        stall_timeout=stall_timeout,
        **common,
    )


@contextlib.contextmanager
def _in_place_plan(src: str, check_paths: bool, common: dict[str, Any]) -> Iterator[ApplyPlan]:
    names: Names = common["names"]
    if check_paths:
        check_readable(src, names.src)
        if not os.access(src, os.W_OK):
            raise FileArgumentError(
                f"{names.in_place}: {names.src} {src!r} is not writable (permission denied)"
            )
    kind = path_kind(src)
    if kind not in (PathKind.REGULAR, PathKind.MISSING, PathKind.DIRECTORY):
        raise UnsupportedPathError(
            f"in place: {describe(src, kind)} is not a regular file; only a regular .npy file"
            " can be rewritten in place"
        )
    with open(src, "r+b") as file:
        header = read_npy_header(file, repr(src))
        check_dtype(header.dtype, common["opset"])
        yield ApplyPlan(
            "in_place",
            Endpoint(src, repr(src), kind, "npy"),
            None,
            header=header,
            file=file,
            **common,
        )


def _sniffed(start: bytes, label: str) -> str:
    """Standard input's format, told from its first bytes: only ``.npy`` can be told."""
    if start.startswith(NPY_MAGIC):
        return "npy"
    raise UnsupportedFileFormatError(
        f"cannot tell the tensor format of {label}: "
        + ("it is empty" if not start else "it does not start with the .npy magic string")
        + "; .npy data is recognised, an ONNX TensorProto must be named with --format pb"
    )


class _Rejoined:
    """``file`` with the bytes ``start`` already read from it put back in front (a stream
    cannot seek back); ``regular`` and ``fileno`` are ``file``'s."""

    def __init__(self, start: bytes, file: BinaryIO) -> None:
        self._start = start
        self._file = file
        self.regular = regular_size(file) is not None

    def read(self, size: int = -1) -> bytes:
        if not self._start:
            return self._file.read(size)
        if size < 0:
            data, self._start = self._start + self._file.read(), b""
            return data
        data, self._start = self._start[:size], self._start[size:]
        if len(data) < size:
            data += self._file.read(size - len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer).cast("B")))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def fileno(self) -> int:
        return self._file.fileno()

    def tell(self) -> int:
        return self._file.tell() - len(self._start)


# --- the one pass ----------------------------------------------------------------------------


def _windows(header: NpyHeader, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """(first element, element count) of each window over the array's data."""
    per_window = max(1, chunk_bytes // max(header.dtype.itemsize, 1))
    for start in range(0, header.size, per_window):
        yield start, min(per_window, header.size - start)


def _read_window(
    file: BinaryIO,
    name: str,
    header: NpyHeader,
    start: int,
    into: np.ndarray,
    stream: bool = False,
) -> None:
    """Fill ``into`` with the elements from ``start`` on; refuse a file that has become
    shorter than its header says since the header was read. A ``stream`` is read in order."""
    target = memoryview(into.view(np.uint8))  # type: ignore[arg-type]  # numpy's stubs: no Buffer
    offset = header.data_offset + start * header.dtype.itemsize
    filled = 0
    while filled < len(target):
        if stream:
            count = file.readinto(target[filled:])  # type: ignore[attr-defined]
            if not count:
                raise InvalidTensorFileError(
                    f"{name} is truncated: its .npy header promises {header.nbytes} bytes of"
                    f" data (shape {header.shape}, {header.dtype.name}) but only"
                    f" {start * header.dtype.itemsize + filled} arrived"
                )
            filled += count
            continue
        count = os.preadv(file.fileno(), [target[filled:]], offset + filled)
        if not count:
            size = os.fstat(file.fileno()).st_size
            raise InvalidTensorFileError(
                f"{name} was truncated while being read: its header says"
                f" {header.data_offset + header.nbytes} bytes, the file now holds {size}"
                " (was it changed during the run?)"
            )
        filled += count


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _write_window(file: BinaryIO, header: NpyHeader, start: int, window: np.ndarray) -> None:
    """Write ``window`` back over the elements from ``start`` on (in place)."""
    data = memoryview(window.view(np.uint8))  # type: ignore[arg-type]
    offset = header.data_offset + start * header.dtype.itemsize
    while data:
        count = os.pwrite(file.fileno(), data, offset)
        data, offset = data[count:], offset + count


def _buffer(header: NpyHeader, chunk_bytes: int) -> np.ndarray:
    """The one window buffer of a pass."""
    per_window = chunk_bytes // max(header.dtype.itemsize, 1)
    return np.empty(max(1, min(header.size, per_window)), header.dtype)


def _relu_in_place(
    file: BinaryIO, label: str, header: NpyHeader, plan: ApplyPlan, progress: Progress | None
) -> None:
    itemsize = header.dtype.itemsize
    buffer = _buffer(header, plan.chunk_bytes)
    _report(progress, 0, header.nbytes)
    for start, count in _windows(header, plan.chunk_bytes):
        window = buffer[:count]
        _read_window(file, label, header, start, window)
        relu(window, out=window, opset=plan.opset)
        _write_window(file, header, start, window)
        _report(progress, (start + count) * itemsize, header.nbytes)
    os.fsync(file.fileno())


def _stream_npy(
    source: BinaryIO, header: NpyHeader, plan: ApplyPlan, progress: Progress | None
) -> None:
    """``.npy`` to ``.npy`` in windows through one reused buffer; the header is copied
    verbatim (same dtype descr, shape and memory order)."""
    # (standard input is read in order even when it is a regular file: it may start part-way)
    stream = regular_size(source) is None or isinstance(source, _Rejoined)
    itemsize = header.dtype.itemsize
    buffer = _buffer(header, plan.chunk_bytes)
    _report(progress, 0, header.nbytes)
    with plan._output() as output:
        output.write(header.raw)
        for start, count in _windows(header, plan.chunk_bytes):
            window = buffer[:count]
            _read_window(source, plan.source.label, header, start, window, stream)
            relu(window, out=window, opset=plan.opset)
            output.write(memoryview(window.view(np.uint8)))  # type: ignore[arg-type]
            _report(progress, (start + count) * itemsize, header.nbytes)
