"""What the harness measures: sizes, types, the data of a case, and onnx-relu's own variants.

A case is one (type, size): its input, a preallocated output and the buffers for in-place runs.
A variant is one thing to time on a case. This module builds the variants of onnx-relu itself
and of the copy ceilings it is compared with; :mod:`.peers` builds the peers'.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Iterable

import numpy as np

import onnx_relu
from onnx_relu.ceiling import copy_ceiling
from onnx_relu.dtypes import RELU_TYPES

__all__ = [
    "TYPES",
    "DEFAULT_SIZES",
    "QUICK_SIZES",
    "Size",
    "dtype_of",
    "mixed_sign_data",
    "Case",
    "Variant",
    "relu_variants",
]


def _table_order(dtype: np.dtype) -> tuple[int | bool, ...]:
    # The order of the harness's tables since its first run: floats before integers; float32
    # and float64 first, then the half-width float16 and bfloat16 (ml_dtypes', numpy kind "V");
    # integers narrow to wide.
    if dtype.kind == "i":
        return (1, dtype.itemsize)
    return (0, dtype.itemsize < 4, dtype.itemsize, dtype.kind != "f")


_DTYPES: dict[str, np.dtype] = {
    t.name: t.dtype for t in sorted(RELU_TYPES, key=lambda t: _table_order(t.dtype))
}
#: The Relu types by short name, in the order of the tables.
TYPES: tuple[str, ...] = tuple(_DTYPES)
DEFAULT_SIZES = ("6", "64K", "4M", "64M", "512M")
QUICK_SIZES = ("64K", "1M", "4M")
LARGEST_SKIPPED = 512 << 20  # --skip-largest drops sizes of at least this many bytes
INPLACE_BUFFER_BYTES = 64 << 20  # small in-place sizes refill this many bytes of buffers at once


@dataclasses.dataclass(frozen=True)
class Size:
    """An array size: a number of elements ("6") or of bytes per array ("64K", "4M", "1G").

    Examples
    --------
    >>> Size.parse("64K").elements(4), Size.parse("64K").label()
    (16384, '64 KiB')
    >>> Size.parse("6").elements(8), Size.parse("6").label()
    (6, '6 el')
    """

    text: str
    count: int
    in_bytes: bool

    @classmethod
    def parse(cls, text: str) -> Size:
        match = re.fullmatch(r"\s*(\d+)\s*([KMG])?(?:I?B)?\s*", text, flags=re.IGNORECASE)
        if match is None or int(match.group(1)) < 1:
            raise argparse.ArgumentTypeError(
                f"bad size {text!r}: give a number of elements (6) or of bytes with K, M or G"
                " (64K, 4M, 512M)"
            )
        unit = (match.group(2) or "").upper()
        scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]
        return cls(text.strip(), int(match.group(1)) * scale, bool(unit))

    def elements(self, itemsize: int) -> int:
        return max(1, self.count // itemsize) if self.in_bytes else self.count

    def label(self) -> str:
        if not self.in_bytes:
            return f"{self.count} el"
        for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
            if self.count >= 1 << shift and self.count % (1 << shift) == 0:
                return f"{self.count >> shift} {unit}"
        return f"{self.count} B"


def dtype_of(name: str) -> np.dtype:
    """The numpy dtype of one of the Relu type names (bfloat16: ml_dtypes').

    Examples
    --------
    >>> TYPES
    ('float32', 'float64', 'float16', 'bfloat16', 'int8', 'int16', 'int32', 'int64')
    >>> str(dtype_of("int16")), str(dtype_of("bfloat16"))
    ('int16', 'bfloat16')
    """
    return _DTYPES[name]


def mixed_sign_data(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random data with both signs in every cache line (never zeros, never all non-negative).

    Relu on data that is already non-negative, or zero, runs faster than on real data and would
    flatter whoever is measured. Floats: standard normal; integers: uniform over the whole range.

    Examples
    --------
    >>> x = mixed_sign_data("int8", 64, np.random.default_rng(0))
    >>> str(x.dtype), bool((x < 0).any() and (x > 0).any())
    ('int8', True)
    """
    dtype = dtype_of(name)
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return rng.standard_normal(n, dtype=np.float32).astype(dtype)


@dataclasses.dataclass
class Variant:
    """One thing to time. ``call`` runs once; in-place ones take the buffer to work on."""

    name: str
    group: str  # onnx_relu, ceiling, numpy, onnxruntime, torch
    threads: int
    inplace: bool
    call: Callable[..., object]
    prepare: Callable[[], object] = lambda: None  # untimed, before each batch (thread settings)
    spins: bool = False  # its worker threads spin after a call: leave a gap before the next


@dataclasses.dataclass
class Case:
    """The arrays of one (type, size) and the buffers for in-place runs."""

    name: str
    n: int
    x: np.ndarray
    out: np.ndarray
    buffers: list[np.ndarray]

    @classmethod
    def make(
        cls,
        name: str,
        size: Size,
        rng: np.random.Generator,
        inplace_bytes: int = INPLACE_BUFFER_BYTES,
    ) -> Case:
        """Mixed-sign input, an output, and enough in-place buffers to fill ``inplace_bytes``
        (64 MiB; 1 to 64 buffers). Every batch rewrites them all first (see
        :func:`.timing.time_batch`), so a quick run takes fewer."""
        n = size.elements(dtype_of(name).itemsize)
        x = mixed_sign_data(name, n, rng)
        copies = max(1, min(64, inplace_bytes // max(1, x.nbytes)))
        return cls(name, n, x, np.empty_like(x), [x.copy() for _ in range(copies)])

    @property
    def nbytes(self) -> int:
        return self.x.nbytes

    def refill(self, buffers: Iterable[np.ndarray]) -> None:
        for buffer in buffers:
            np.copyto(buffer, self.x)


def set_relu_threads(threads: int) -> Callable[[], object]:
    return lambda: onnx_relu.set_num_threads(threads)


def relu_variants(case: Case, threads: int) -> list[Variant]:
    """onnx-relu out of place, allocating and in place, and the copies that are its ceilings."""
    x, out, relu, copy = case.x, case.out, onnx_relu.relu, copy_ceiling
    prepare = set_relu_threads(threads)

    def variant(name: str, group: str, inplace: bool, call: Callable[..., object]) -> Variant:
        return Variant(name, group, threads, inplace, call, prepare)

    return [
        variant("onnx_relu out", "onnx_relu", False, lambda: relu(x, out=out)),
        variant("onnx_relu alloc", "onnx_relu", False, lambda: relu(x)),
        variant("onnx_relu inplace", "onnx_relu", True, lambda b: relu(b, out=b)),
        variant("copy streaming", "ceiling", False, lambda: copy(x, out, nontemporal=True)),
        variant("copy regular", "ceiling", False, lambda: copy(x, out, nontemporal=False)),
        variant("inplace copy streaming", "ceiling", True, lambda b: copy(b, b, nontemporal=True)),
        variant("inplace copy regular", "ceiling", True, lambda b: copy(b, b, nontemporal=False)),
    ]
