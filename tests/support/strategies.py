"""Hypothesis strategies of the tests (dtypes, element bit patterns, arrays of any layout, mutated
files) and what the fuzz targets share: their example counts and their rule for warnings.

The profiles themselves (``ci``, ``thorough``, chosen with ``HYPOTHESIS_PROFILE``) are set up in
``tests/conftest.py``, once. A test decorated with ``@examples(weight)`` runs ``weight`` times the
profile's example count: more for targets that are cheap per example, fewer for dear ones.

To add a fuzz target: write a ``test_fuzz_<thing>`` in the folder of its layer, decorated with
``@examples()`` and ``@given(...)``, that calls the public function on the drawn input and
accepts only the exceptions docs/reliability.md documents for it. Files are drawn as random
bytes or as valid files mutated by :func:`mutated_bytes`.
"""

from __future__ import annotations

import contextlib
import os
import struct
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from hypothesis import event, settings
from hypothesis import strategies as st

from tests.support.dtypes import REFUSED_TYPES, RELU_DTYPES, relu_type
from tests.support.oracle import as_bits
from tests.support.values import special_values


def examples(weight: float = 1.0) -> settings:
    """The loaded profile, with its example count scaled by ``weight`` (at least one)."""
    return settings(max_examples=max(1, int(settings.default.max_examples * weight)))


# ---------------------------------------------------------------------------------------------
# Dtypes and element bit patterns
# ---------------------------------------------------------------------------------------------

#: Types Relu refuses that numpy can fill from raw bytes (no Python objects, no text).
REFUSED_RAW_DTYPES: tuple[np.dtype, ...] = tuple(r.dtype for r in REFUSED_TYPES if r.raw_fillable)


@st.composite
def any_dtype(draw: st.DrawFn, refused: bool = True) -> np.dtype:
    """An allowed type (most often) or a refused one, in either byte order where it has one."""
    # three in four draws an allowed type, so that most calls reach the kernel
    pick_refused = refused and draw(st.sampled_from([False, False, False, True]))
    dtype = draw(st.sampled_from(REFUSED_RAW_DTYPES if pick_refused else RELU_DTYPES))
    if (
        dtype.byteorder not in "|"
        and dtype.itemsize > 1
        and dtype.fields is None
        and draw(st.booleans())
    ):
        dtype = dtype.newbyteorder("S")
    return dtype


def element_bits(dtype: np.dtype) -> st.SearchStrategy[int]:
    """Bit patterns of elements of an allowed type: random, special on purpose, or the bits of an
    ordinary number (a float Hypothesis draws, or a small integer)."""
    t = relu_type(dtype)
    mask = (1 << t.width) - 1
    choices = [st.integers(0, mask), st.sampled_from(as_bits(special_values(t.dtype)).tolist())]
    if t.is_float and t.name != "bfloat16":  # Hypothesis draws IEEE floats of 16, 32, 64 bits
        float_format, int_format = {2: ("<e", "<H"), 4: ("<f", "<I"), 8: ("<d", "<Q")}[
            t.dtype.itemsize
        ]
        floats = st.floats(width=t.width, allow_nan=True, allow_infinity=True, allow_subnormal=True)
        choices.append(
            floats.map(lambda v: struct.unpack(int_format, struct.pack(float_format, v))[0])
        )
    elif not t.is_float:
        choices.append(st.integers(-1000, 1000).map(lambda v: v & mask))
    return st.one_of(*choices)


# ---------------------------------------------------------------------------------------------
# Arrays of any layout
# ---------------------------------------------------------------------------------------------


@dataclass
class Drawn:
    """An array drawn with its backing buffer, so tests can check which bytes changed."""

    array: np.ndarray
    buffer: np.ndarray  # uint8, owns the memory of ``array``


def _fill_specials(view: np.ndarray, draw: st.DrawFn) -> None:
    """Overwrite some elements of an allowed-type view with NaNs, zeros, infinities, extremes."""
    native = view.dtype.newbyteorder("=")
    if view.size == 0 or native not in RELU_DTYPES:
        return
    specials = special_values(native)
    for _ in range(draw(st.integers(0, min(8, view.size)))):
        position = np.unravel_index(draw(st.integers(0, view.size - 1)), view.shape)
        # same type, other byte order at most: a bit-exact copy, NaN payloads included
        view[position] = specials[draw(st.integers(0, specials.size - 1))]


@st.composite
def arrays_any_layout(
    draw: st.DrawFn, dtype_strategy=None, max_side: int = 9, max_ndim: int = 3
) -> Drawn:
    """An array of random bytes (plus special values) in a random layout.

    Layouts: 0 to ``max_ndim`` dimensions; per axis a step of 1, 2, -1 or -3; an optional
    transpose; and a byte offset of 0-15 into its buffer, so that it is often unaligned.
    """
    dtype = draw(dtype_strategy if dtype_strategy is not None else any_dtype())
    ndim = draw(st.integers(0, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, max_side), min_size=ndim, max_size=ndim)))
    steps = tuple(draw(st.lists(st.sampled_from([1, 1, 2, -1, -3]), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, 15))
    full_shape = tuple(n * abs(s) for n, s in zip(shape, steps, strict=True))
    count = int(np.prod(full_shape, dtype=np.int64))
    seed = draw(st.integers(0, 2**32 - 1))
    raw = np.random.default_rng(seed).integers(
        0, 256, size=offset + count * dtype.itemsize, dtype=np.uint8
    )
    base = raw[offset:].view(dtype).reshape(full_shape)
    view = base[tuple(slice(None, None, s) for s in steps) + (Ellipsis,)]  # 0-d stays an array
    if ndim > 1 and draw(st.booleans()):
        view = view.transpose(draw(st.permutations(range(ndim))))
    if draw(st.booleans()):
        _fill_specials(view, draw)
    return Drawn(view, raw)


# ---------------------------------------------------------------------------------------------
# Mutated files, and the warnings parsing them may give
# ---------------------------------------------------------------------------------------------


@st.composite
def mutated_bytes(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A valid file from ``seeds`` after 1-4 mutations: bit flips, byte overwrites, truncation,
    splices with another seed, insertions and deletions."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(["flip", "flip", "byte", "truncate", "splice", "insert", "delete"])
        )
        position = draw(st.integers(0, len(data)))
        if kind == "flip" and position < len(data):
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte" and position < len(data):
            data[position] = draw(
                st.sampled_from([0x00, 0xFF, 0x7F, 0x80, 0x01, draw(st.integers(0, 255))])
            )
        elif kind == "truncate":
            del data[position:]
        elif kind == "splice":
            other = draw(st.sampled_from(seeds))
            data[position:] = other[draw(st.integers(0, len(other))) :]
        elif kind == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[position : position + draw(st.integers(1, 8))]
    return bytes(data)


@st.composite
def random_or_mutated_bytes(draw: st.DrawFn, seeds: list[bytes], label: str) -> bytes:
    """Random bytes (one draw in four) or a valid file from ``seeds`` after :func:`mutated_bytes`'
    mutations; ``label`` names the kind drawn in Hypothesis' statistics."""
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "mutated"]))
    event(f"{label}: {kind}")
    if kind == "random":
        return draw(st.binary(max_size=300))
    return draw(mutated_bytes(seeds))


def _is_parser_warning(warning: warnings.WarningMessage) -> bool:
    if any(f"{os.sep}{package}{os.sep}" in warning.filename for package in ("onnx", "numpy")):
        return True  # e.g. an unknown external-data key, a deprecated dtype alias ('|a1')
    # Python's compiler, parsing a .npy header with ast.literal_eval as numpy.load does, warns
    # about an invalid escape ('\d') or a number run into a name ('1if'); the header is then
    # refused (or read); under -W error the warning becomes a SyntaxError, so the refusal.
    return warning.filename == "<unknown>" and issubclass(
        warning.category, (DeprecationWarning, SyntaxWarning)
    )


@contextlib.contextmanager
def parser_warnings_allowed() -> Iterator[None]:
    """Let warnings that onnx, numpy or Python's parser give about a file's content through
    (theirs to give, and only warnings, not exceptions); a warning from anywhere else
    (onnx-relu itself) fails the test."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        event(f"warning: {warning.category.__name__}")
        assert _is_parser_warning(warning), f"unexpected warning {warning}"
