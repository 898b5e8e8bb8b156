"""Shared pieces of the fuzz tests: Hypothesis profiles and strategies for odd arrays.

Profiles (chosen with the environment variable ``HYPOTHESIS_PROFILE``, default ``ci``):

* ``ci``: a fixed number of examples per target, derandomized (the same examples on every run),
  no example database, no deadline: what ``make test`` runs.
* ``thorough``: many more examples, random: run by hand, e.g.
  ``HYPOTHESIS_PROFILE=thorough .venv/bin/python -m pytest tests/test_fuzz.py -q``.

A fuzz target is a test decorated with ``@fuzz_settings(weight)``: ``weight`` scales the
profile's example count for targets that are cheaper or dearer per example. To add a target,
write a ``test_fuzz_<thing>`` with ``@fuzz_settings()`` and ``@given(...)``, calling the public
function on the drawn input and accepting only the exceptions that docs/reliability.md
documents for it. Files are drawn as random bytes or as valid files mutated by
:func:`mutated_bytes`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from relu_oracle import ALL_RELU_DTYPES, as_bits, special_values

_PROFILES = {
    "ci": dict(max_examples=1_000, derandomize=True, database=None),
    "thorough": dict(max_examples=50_000, derandomize=False),
}
for _name, _options in _PROFILES.items():
    settings.register_profile(
        f"onnx-relu-{_name}",
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
        **_options,
    )

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in _PROFILES:
    raise ValueError(f"HYPOTHESIS_PROFILE={PROFILE!r}; known profiles: {', '.join(_PROFILES)}")


def fuzz_settings(weight: float = 1.0) -> settings:
    """The selected profile, with its example count scaled by ``weight``."""
    base = settings.get_profile(f"onnx-relu-{PROFILE}")
    return settings(base, max_examples=max(1, int(base.max_examples * weight)))


# ---------------------------------------------------------------------------------------------
# Dtypes
# ---------------------------------------------------------------------------------------------

#: Fixed-size numeric-ish dtypes numpy can fill from raw bytes and Relu refuses.
REFUSED_RAW_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(d)
    for d in (
        np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.complex64, np.complex128,
        np.longdouble, "datetime64[ms]", "timedelta64[D]", "V3", [("a", "<i2"), ("b", "<f4")],
    )
) + tuple(
    np.dtype(getattr(ml_dtypes, name))
    for name in ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "int4", "uint4", "int2", "float8_e3m4")
    if hasattr(ml_dtypes, name)
)


@st.composite
def any_dtype(draw: st.DrawFn, refused: bool = True) -> np.dtype:
    """An allowed type (most often) or a refused one, in either byte order where it has one."""
    # three in four draws an allowed type, so that most calls reach the kernel
    pick_refused = refused and draw(st.sampled_from([False, False, False, True]))
    dtype = draw(st.sampled_from(REFUSED_RAW_DTYPES if pick_refused else ALL_RELU_DTYPES))
    if dtype.byteorder not in "|" and dtype.itemsize > 1 and dtype.fields is None and draw(st.booleans()):
        dtype = dtype.newbyteorder("S")
    return dtype


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
    if view.size == 0 or native not in ALL_RELU_DTYPES:
        return
    specials = special_values(native)
    for _ in range(draw(st.integers(0, min(8, view.size)))):
        position = np.unravel_index(draw(st.integers(0, view.size - 1)), view.shape)
        # same type, other byte order at most: a bit-exact copy, NaN payloads included
        view[position] = specials[draw(st.integers(0, specials.size - 1))]


@st.composite
def arrays_any_layout(draw: st.DrawFn, dtype_strategy=None, max_side: int = 9, max_ndim: int = 3) -> Drawn:
    """An array of random bytes (plus special values) in a random layout.

    Layouts: 0 to ``max_ndim`` dimensions; per axis a step of 1, 2, -1 or -3; an optional
    transpose; and a byte offset of 0-15 into its buffer, so that it is often unaligned.
    """
    dtype = draw(dtype_strategy if dtype_strategy is not None else any_dtype())
    ndim = draw(st.integers(0, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, max_side), min_size=ndim, max_size=ndim)))
    steps = tuple(draw(st.lists(st.sampled_from([1, 1, 2, -1, -3]), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, 15))
    full_shape = tuple(n * abs(s) for n, s in zip(shape, steps))
    count = int(np.prod(full_shape, dtype=np.int64))
    seed = draw(st.integers(0, 2**32 - 1))
    raw = np.random.default_rng(seed).integers(0, 256, size=offset + count * dtype.itemsize, dtype=np.uint8)
    base = raw[offset:].view(dtype).reshape(full_shape)
    view = base[tuple(slice(None, None, s) for s in steps) + (Ellipsis,)]  # 0-d stays an array
    if ndim > 1 and draw(st.booleans()):
        view = view.transpose(draw(st.permutations(range(ndim))))
    if draw(st.booleans()):
        _fill_specials(view, draw)
    return Drawn(view, raw)


def bits_of(a: np.ndarray) -> np.ndarray:
    """Bit patterns of an allowed-type array (any byte order), for exact comparison."""
    return as_bits(np.asarray(a))


# ---------------------------------------------------------------------------------------------
# Mutated files
# ---------------------------------------------------------------------------------------------


@st.composite
def mutated_bytes(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A valid file from ``seeds`` after 1-4 mutations: bit flips, byte overwrites, truncation,
    splices with another seed, insertions and deletions."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "flip", "byte", "truncate", "splice", "insert", "delete"]))
        position = draw(st.integers(0, len(data)))
        if kind == "flip" and position < len(data):
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte" and position < len(data):
            data[position] = draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, 0x01, draw(st.integers(0, 255))]))
        elif kind == "truncate":
            del data[position:]
        elif kind == "splice":
            other = draw(st.sampled_from(seeds))
            data[position:] = other[draw(st.integers(0, len(other))):]
        elif kind == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[position:position + draw(st.integers(1, 8))]
    return bytes(data)
