"""The plan of one Relu over files, made once: what IN and OUT are, every refusal checked before
anything is created, then the job that does it in one pass.

:func:`plan_apply` is what :func:`onnx_relu.files.relu_file` and ``onnx-relu apply`` run. It
classifies the source and the destination once (:class:`~onnx_relu.io.endpoint.Endpoint`: their
paths, how messages name them, their kinds of path, ``-`` for standard input or output
included, their formats), checks every rule and limit (formats by suffix or, for standard
input, by its data; the in-place rules; the Zarr rules; readable and writable paths; the type
at the opset; protobuf's 2 GiB), holds the source open with its header read, and chooses the
job (:mod:`.jobs`): :class:`~.jobs.stream.StreamJob` for ``.npy`` to ``.npy`` in windows (peak
memory one window, whatever the file's size), :class:`~.jobs.stream.MemoryJob` for anything
involving ``.pb`` (a TensorProto is at most 2 GiB anyway), :class:`~.jobs.in_place.InPlaceJob`
and :class:`~.jobs.zarr_dask.ZarrJob`. :meth:`ApplyPlan.run` runs it.

The windows are read, not memory-mapped: a file that another process shortens during the run
(truncated, or a copy still being written) would deliver SIGBUS, which kills the process, at
the first touch of a mapped page past its new end; a read instead comes back short, which is
reported as :class:`~onnx_relu.errors.InvalidTensorFileError` naming the file, with the
temporary output removed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from .._api import check_dtype
from .._paths import absolute_path
from ..errors import FileArgumentError, UnsupportedFileFormatError
from ..io.endpoint import (
    Destination,
    Endpoint,
    PathKind,
    Written,
    refuse_terminal_output,
    written_as,
)
from ..io.identity import SameObjectError, open_classified, refuse_overlap
from ..io.streams import Prefixed, open_input
from .formats import TENSOR_FORMATS, is_zarr_name, tensor_format
from .jobs import DEFAULT_CHUNK_BYTES as _DEFAULT_WINDOW
from .jobs.in_place import InPlaceJob
from .jobs.stream import MemoryJob, NpySource, PbSource, StreamJob
from .jobs.zarr_output import store_replacement_refusal
from .npy import NPY_MAGIC, NpyHeader, read_npy_header
from .pb import parse_pb_tensor, pb_size_refusal, read_pb_bytes
from .progress import Progress

if TYPE_CHECKING:
    from .jobs.zarr_dask import ZarrJob

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "OPTION_NAMES",
    "OptionError",
    "ApplyPlan",
    "plan_apply",
]

#: Bytes per window (:data:`onnx_relu.files.jobs.DEFAULT_CHUNK_BYTES`); :func:`plan_apply` reads
#: it here when a plan is made.
DEFAULT_CHUNK_BYTES = _DEFAULT_WINDOW


#: What :func:`plan_apply`'s messages call its options: ``dst`` (the destination where it is
#: missing; elsewhere its endpoint's :attr:`~onnx_relu.io.endpoint.Endpoint.what` serves),
#: ``in_place`` and ``dask``. A caller with other names for them (the command line's ``OUT``,
#: ``--in-place``, ``--dask``) words an :class:`OptionError` with its own.
OPTION_NAMES: Mapping[str, str] = {"dst": "dst", "in_place": "in_place=True", "dask": "dask"}


class OptionError(FileArgumentError):
    """Arguments of :func:`plan_apply` that do not go together (a ``ValueError``). Its message
    names the options as :data:`OPTION_NAMES` does; :meth:`worded` says it with a caller's own
    names for them, so that the plan holds the rule and its wording, and the caller only its
    names.

    Attributes
    ----------
    template : str
        The message, with ``{dst}``, ``{in_place}`` and ``{dask}`` where it names an option
        and ``{NAME}`` where it holds one of :attr:`values`.
    values : dict of str to str
        The rest of the message: the paths and their roles, as they are.

    Examples
    --------
    >>> error = OptionError("{in_place} rewrites {source} itself", {"source": "src"})
    >>> str(error)
    'in_place=True rewrites src itself'
    >>> error.worded({"dst": "OUT", "in_place": "--in-place", "dask": "--dask"})
    '--in-place rewrites src itself'
    """

    def __init__(self, template: str, values: Mapping[str, str] | None = None) -> None:
        self.template = template
        self.values = dict(values or {})
        super().__init__(self.worded(OPTION_NAMES))

    def __reduce__(self) -> tuple[type[OptionError], tuple[str, dict[str, str]]]:
        return type(self), (self.template, self.values)

    def worded(self, names: Mapping[str, str]) -> str:
        """The message with ``names`` (keys ``dst``, ``in_place``, ``dask``) for the options."""
        return self.template.format_map({**self.values, **names})


@dataclass(frozen=True)
class ApplyPlan:
    """A checked job made by :func:`plan_apply`: run it with :meth:`run`, inside the ``with``
    block that made it (the source is held open there).

    Attributes
    ----------
    source : Endpoint
    destination : Destination or None
        OUT as decided once (where, its format, how it is written); None in place.
    job : StreamJob, MemoryJob, InPlaceJob or ZarrJob
        What :meth:`run` runs (:mod:`onnx_relu.files.jobs`).
    """

    source: Endpoint
    destination: Destination | None
    job: StreamJob | MemoryJob | InPlaceJob | ZarrJob

    @property
    def mode(self) -> str:
        """What the job is: "stream" (source to destination in one pass), "in_place" or "dask"."""
        return self.job.mode

    @property
    def header(self) -> NpyHeader | None:
        """The ``.npy`` source's header, read once (None for ``.pb`` and Zarr)."""
        source = getattr(self.job, "source", None)
        return source.header if isinstance(source, NpySource) else None

    @property
    def stdio(self) -> bool:
        """Whether standard input or standard output is one of its ends."""
        return self.source.is_stdio or (self.destination is not None and self.destination.is_stdio)

    def run(self, progress: Progress | None = None) -> None:
        """Do the job in one pass; ``progress(done_bytes, total_bytes)`` is called as ``.npy``
        windows (or Zarr chunks) complete."""
        self.job.run(progress)


@contextlib.contextmanager
def plan_apply(
    src: str | os.PathLike[str] | Endpoint,
    dst: str | os.PathLike[str] | Endpoint | None = None,
    *,
    in_place: bool = False,
    dask: bool = False,
    stream_format: str | None = None,
    opset: int | None = None,
    chunk_bytes: int | None = None,
    scheduler: str | None = None,
    stall_timeout: float | None = None,
) -> Iterator[ApplyPlan]:
    """Plan Relu from ``src`` to ``dst`` (or of ``src`` in place), checking everything first;
    yield the plan, with the source open, for :meth:`ApplyPlan.run`.

    Parameters
    ----------
    src, dst : str, os.PathLike or Endpoint
        ``.npy`` or ``.pb`` files in any combination (with ``dask``, Zarr stores named
        ``*.zarr``); a caller that classified them already (the command line, whose labels,
        ``-`` for standard input or output and checks they carry) passes its
        :class:`~onnx_relu.io.endpoint.Endpoint`: one that is
        :attr:`~onnx_relu.io.endpoint.Endpoint.checked` is refused before anything is opened
        if it cannot be used (missing, unreadable, a folder that is not writable), with
        :class:`~onnx_relu.errors.FileArgumentError` naming it. Omit ``dst`` with
        ``in_place``. ``dst`` is never ``src`` itself, a folder holding it or a path inside it,
        by whatever path (compared by identity: :func:`~onnx_relu.io.identity.refuse_overlap`).
    in_place : bool
        Rewrite ``src`` (a regular ``.npy`` file) instead of writing ``dst``.
    dask : bool
        ``src`` and ``dst`` are Zarr stores, processed on Dask (:func:`.jobs.zarr_dask.relu_zarr`).
    stream_format : {"npy", "pb"}, optional
        The format of ``-``: standard input's (None: told from its data, which must then be
        ``.npy``), standard output's (None: the source's).
    opset : int, optional
        The ai.onnx opset whose Relu version decides the allowed types (None: the latest).
    chunk_bytes : int, optional
        The size of the windows of ``.npy`` data (None: :data:`DEFAULT_CHUNK_BYTES`).
    scheduler, stall_timeout
        With ``dask``: as for :func:`.jobs.zarr_dask.relu_zarr` (None: its defaults).

    Yields
    ------
    ApplyPlan
        The checked job; leaving the block closes the source.

    Raises
    ------
    OptionError
        (a :class:`~onnx_relu.errors.FileArgumentError`) for arguments that do not go together.
    FileArgumentError
        (a ``ValueError``) for a ``dst`` that would change ``src``, and for checked endpoints'
        paths as above.
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
    ...     out = plan.destination
    ...     print(plan.mode, plan.source.format, plan.header.shape, out.format, out.written.value)
    ...     plan.run()
    stream npy (2,) npy atomic file
    >>> read_tensor(y).tolist()
    [0.0, 0.5]
    >>> with plan_apply(x, y, in_place=True) as plan:  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    ...
    onnx_relu.files.plan.OptionError: in_place=True rewrites src itself: pass no dst
    """
    chunk_bytes = DEFAULT_CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    if stream_format is not None and stream_format not in TENSOR_FORMATS.values():
        raise UnsupportedFileFormatError(
            f"unknown tensor format {stream_format!r}: the formats are 'npy' (NumPy) and 'pb'"
            " (ONNX TensorProto)"
        )
    source = src if isinstance(src, Endpoint) else Endpoint.of(_decoded(src), "src")
    destination = (
        dst if dst is None or isinstance(dst, Endpoint) else Endpoint.of(_decoded(dst), "dst")
    )
    _refuse_combinations(source, destination, in_place, dask)
    if destination is not None:  # by identity, before anything is opened
        try:
            refuse_overlap(source, destination)
        except SameObjectError as exc:
            if source.kind is not PathKind.REGULAR or dask or in_place:
                raise
            raise OptionError(
                "{refusal} (or {in_place} to rewrite {source} itself)",
                {"refusal": str(exc), "source": source.what},
            ) from None
    if dask:
        yield _dask_plan(source, destination, in_place, opset, scheduler, stall_timeout)
        return
    src_format = None if source.is_stdio else tensor_format(source.path)
    if in_place:
        if destination is not None:
            raise OptionError(
                "{in_place} rewrites {source} itself: pass no {destination}",
                {"source": source.what, "destination": destination.what},
            )
        with _in_place_plan(source, src_format, opset, chunk_bytes) as plan:
            yield plan
        return
    if destination is None:
        raise OptionError(
            "{dst} is required (or {in_place} to rewrite {source})", {"source": source.what}
        )
    with _stream_plan(source, src_format, destination, stream_format, opset, chunk_bytes) as plan:
        yield plan


def _decoded(path: str | os.PathLike[str]) -> str:
    """bytes paths decoded as the OS would (os.fsdecode gives the OS the same bytes back)."""
    return os.fsdecode(os.fspath(path))


def _refuse_combinations(
    source: Endpoint, destination: Endpoint | None, in_place: bool, dask: bool
) -> None:
    """The arguments that do not go together, refused before any path is opened."""
    stdin, stdout = source.is_stdio, destination is not None and destination.is_stdio
    if in_place and stdin:
        raise OptionError("{in_place} rewrites a .npy file; it cannot rewrite standard input ('-')")
    if dask and (stdin or stdout):
        raise OptionError("{dask} works on Zarr stores, not on standard input or output ('-')")
    if destination is None and stdin:
        raise OptionError("{dst} is required: a file name, or - for standard output")


def _dask_plan(
    source: Endpoint,
    destination: Endpoint | None,
    in_place: bool,
    opset: int | None,
    scheduler: str | None,
    stall_timeout: float | None,
) -> ApplyPlan:
    """The plan of a Zarr store on Dask: only names and paths are checked here; the store's
    type is checked by :func:`.jobs.zarr_dask.relu_zarr` before any cluster work."""
    from .jobs.zarr_dask import STALL_TIMEOUT_S, ZarrJob

    if in_place:
        raise OptionError("{in_place} works on .npy files, not with {dask}")
    if destination is None:
        raise OptionError("{dst} is required with {dask}: the Zarr store to write")
    for end in (source, destination):
        if not is_zarr_name(end.path):
            raise OptionError(
                "with {dask}, {end} must be a Zarr store named *.zarr, got {path}",
                {"end": end.what, "path": repr(end.path)},
            )
    if source.checked:
        source.require_readable(folder=True)
    if destination.checked:
        destination.require_writable(store=True)
    refusal = store_replacement_refusal(destination.path)
    if refusal is not None:
        raise FileArgumentError(f"{destination.what} {refusal}")
    source = source.with_format("zarr")
    output = Destination(destination.with_format("zarr"), Written.ATOMIC_STORE)
    timeout = STALL_TIMEOUT_S if stall_timeout is None else stall_timeout
    job = ZarrJob(source, output, opset, scheduler, timeout)
    return ApplyPlan(source, output, job)


@contextlib.contextmanager
def _in_place_plan(
    source: Endpoint,
    src_format: str | None,
    opset: int | None,
    window_bytes: int,
) -> Iterator[ApplyPlan]:
    if src_format != "npy":
        raise FileArgumentError(
            f"in-place needs a .npy file; {source.path!r} is a .pb file, whose protobuf"
            " encoding cannot be rewritten in place: write the result to a new file instead"
        )
    source.require_rewritable()
    with open_classified(source, "r+b") as file:
        header = read_npy_header(file, source.label)
        check_dtype(header.dtype, opset)
        source = source.with_format("npy")
        job = InPlaceJob(NpySource(source, file, header, in_order=False), opset, window_bytes)
        yield ApplyPlan(source, None, job)


@contextlib.contextmanager
def _stream_plan(
    source: Endpoint,
    src_format: str | None,
    destination: Endpoint,
    stream_format: str | None,
    opset: int | None,
    window_bytes: int,
) -> Iterator[ApplyPlan]:
    """Source to destination: the formats told, the paths checked, the source opened and its
    header (or whole ``.pb`` tensor) read and checked."""
    stdout = destination.is_stdio
    dst_format = None if stdout else tensor_format(destination.path)
    if source.checked and not source.is_stdio:
        source.require_readable()
    written = written_as(destination, folder_error=destination.checked)  # how OUT is written
    if destination.checked and written is Written.ATOMIC_FILE:
        destination.require_replaceable()
    if stdout:
        refuse_terminal_output("binary tensor data", "> y.npy")
    with open_input(source) as opened:
        file: BinaryIO = opened
        if source.is_stdio:
            start = file.read(len(NPY_MAGIC))
            src_format = stream_format or _sniffed(start, source.label)
            if src_format == "pb" and start.startswith(NPY_MAGIC):
                raise UnsupportedFileFormatError(
                    f"{source.label} holds .npy data (it starts with the .npy magic string), not"
                    " an ONNX TensorProto as the format 'pb' says"
                )
            file = Prefixed(start, file)  # type: ignore[assignment]  # (read in order: it may start part-way into a file)
        assert src_format is not None
        source = source.with_format(src_format)
        destination = destination.with_format(dst_format or stream_format or src_format)
        npy: NpySource | None = None
        pb: PbSource | None = None
        if src_format == "npy":
            header = read_npy_header(file, source.label)
            check_dtype(header.dtype, opset)
            if destination.format == "pb":  # refused before reading what cannot be written
                refusal = pb_size_refusal(header.nbytes, destination.path)
                if refusal is not None:
                    raise UnsupportedFileFormatError(refusal)
            in_order = source.is_stdio or source.kind is not PathKind.REGULAR
            npy = NpySource(source, file, header, in_order)
        else:
            data = read_pb_bytes(file, source.label)
            base = (
                absolute_path(".")
                if source.is_stdio
                else os.path.dirname(absolute_path(source.path))
            )
            tensor, tensor_name = parse_pb_tensor(
                data, source.label, base, _external_guard(source, destination)
            )
            check_dtype(tensor.dtype, opset)
            pb = PbSource(source, tensor, tensor_name)
        output = Destination(destination, written)
        job: StreamJob | MemoryJob
        if npy is not None and output.format == "npy":
            job = StreamJob(npy, output, opset, window_bytes)
        else:
            loaded = npy if npy is not None else pb
            assert loaded is not None
            job = MemoryJob(loaded, output, opset, pb.name if pb is not None else "")
        yield ApplyPlan(source, output, job)


def _external_guard(source: Endpoint, destination: Endpoint) -> Callable[[str], None]:
    """What refuses a ``.pb`` IN's external data file that OUT is (by any path), or holds:
    replacing OUT would change IN's data (as :func:`~onnx_relu.io.identity.refuse_overlap`)."""

    def check(path: str) -> None:
        refuse_overlap(Endpoint.of(path, f"{source.what}'s external data"), destination)

    return check


def _sniffed(start: bytes, label: str) -> str:
    """Standard input's format, told from its first bytes: only ``.npy`` can be told."""
    if start.startswith(NPY_MAGIC):
        return "npy"
    raise UnsupportedFileFormatError(
        f"cannot tell the tensor format of {label}: "
        + ("it is empty" if not start else "it does not start with the .npy magic string")
        + "; .npy data is recognised, an ONNX TensorProto must be named with --format pb"
    )
