"""The bad-input table of docs/reliability.md, one test per row.

Every refusal is checked for the exception type, the words of its message that tell the caller
what was wrong and what is allowed, and that nothing was lost: the input and a given ``out`` are
byte for byte as before. Inputs that are odd but valid (byte-swapped arrays, an ``out``
overlapping the input) are checked for a bit-exact result instead.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import onnx_relu
from onnx_relu import relu
from onnx_relu.errors import (
    InvalidOpsetError,
    InvalidOutputError,
    OnnxReluError,
    UnsupportedTypeError,
)
from tests.support import REPOSITORY
from tests.support.array_likes import UfuncHandler, UfuncHandlingTable
from tests.support.dtypes import REFUSED_TYPES, RELU_DTYPES, RELU_TYPES, relu_type, relu_version_at
from tests.support.oracle import as_bits, expected_relu
from tests.support.values import mixed_values

ALLOWED_TYPES_LATEST = (
    "allowed types: tensor(bfloat16), tensor(double), tensor(float), tensor(float16),"
    " tensor(int16), tensor(int32), tensor(int64), tensor(int8)"
)


# ---------------------------------------------------------------------------------------------
# Helpers: snapshots that prove nothing was lost
# ---------------------------------------------------------------------------------------------


def snapshot(a: object) -> object:
    """Everything observable about an array's contents, to compare before and after a call."""
    if not isinstance(a, np.ndarray):
        return repr(a)
    if a.dtype.hasobject:
        return (a.shape, a.dtype.str, tuple(id(v) for v in a.ravel(order="K")))
    return (a.shape, a.dtype.str, a.strides, a.flags.writeable, a.tobytes(order="A"))


def assert_refused(
    call: Callable[[], object],
    error: type[BaseException],
    fragments: tuple[str, ...],
    untouched: tuple[object, ...] = (),
) -> BaseException:
    """``call()`` raises ``error`` whose message holds every fragment; ``untouched`` unchanged."""
    before = [snapshot(a) for a in untouched]
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    for a, b in zip(untouched, before, strict=True):
        assert snapshot(a) == b, "a refused call changed an array"
    return info.value


def sentinel_out(shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
    """A valid-looking ``out`` filled with a recognisable byte pattern."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    return np.frombuffer(b"\xa5" * nbytes, dtype=dtype).reshape(shape).copy()


def random_array(dtype: np.dtype, n: int = 7, seed: int = 0) -> np.ndarray:
    """An array of ``dtype`` with random contents (any bit pattern where the type has bits)."""
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        return np.array([1, -2.5, None, "x", {}, 3, -4][:n], dtype=object)
    if dtype.kind == "U":
        return np.array(["1", "-2", "x"] * 3, dtype=dtype)[:n]
    if dtype.kind == "S":
        return np.array([b"1", b"-2", b"x"] * 3, dtype=dtype)[:n]
    rng = np.random.default_rng(seed)
    return np.frombuffer(rng.bytes(n * dtype.itemsize), dtype=dtype).copy()


# ---------------------------------------------------------------------------------------------
# Row: every numpy dtype that no Relu version allows
# ---------------------------------------------------------------------------------------------

# (dtype, the name the message uses for it, the explicit conversion it suggests or None), from
# the tests' type table: numpy's types, then ml_dtypes' (with an ONNX tensor type or without).
REFUSED_DTYPES = [pytest.param(r.dtype, r.message_name, r.hint, id=r.label) for r in REFUSED_TYPES]


@pytest.mark.parametrize("opset", [None, 1, 6, 13, 14, 21])
@pytest.mark.parametrize(("dtype", "name", "hint"), REFUSED_DTYPES)
def test_dtype_no_relu_version_allows(dtype, name, hint, opset):
    x = random_array(dtype)
    out = sentinel_out(x.shape)
    fragments = [name, "does not allow", "No Relu version allows it", "never casts silently"]
    fragments.append(
        "(the latest version, opset >= 14)" if opset is None else f"(in force at opset {opset})"
    )
    if hint is not None:
        fragments.append(f"convert explicitly, e.g. {hint}")
    for call in (lambda: relu(x, opset=opset), lambda: relu(x, out=out, opset=opset)):
        err = assert_refused(call, UnsupportedTypeError, tuple(fragments), (x, out))
        assert isinstance(err, TypeError) and isinstance(err, OnnxReluError)
    # check_dtype gives the same verdict without data
    assert_refused(lambda: onnx_relu.check_dtype(dtype, opset), UnsupportedTypeError, (name,))


# ---------------------------------------------------------------------------------------------
# Row: an allowed type at an opset whose Relu version forbids it
# ---------------------------------------------------------------------------------------------

# Allowed types at the opsets around each version change whose Relu version forbids them (the
# integers below 14, bfloat16 below 13), from the tests' type table.
TOO_EARLY = [
    pytest.param(t.dtype, opset, id=f"{t.dtype}-opset{opset}")
    for t in RELU_TYPES
    for opset in (1, 5, 6, 12, 13)
    if relu_version_at(opset) < t.since
]


@pytest.mark.parametrize(("dtype", "opset"), TOO_EARLY)
def test_allowed_type_at_opset_that_forbids_it(dtype, opset):
    x = mixed_values(dtype, 9)
    out = np.zeros_like(x)
    out_before = snapshot(out)
    first = relu_type(dtype).since
    onnx_name = relu_type(dtype).onnx_name
    fragments = (
        f"Relu-{relu_version_at(opset)} (in force at opset {opset}) does not allow {onnx_name}",
        "tensor(double), tensor(float), tensor(float16).",
        f"{onnx_name} is allowed from Relu-{first} (opset >= {first})",
    )
    assert_refused(lambda: relu(x, opset=opset), UnsupportedTypeError, fragments, (x,))
    assert_refused(lambda: relu(x, out=out, opset=opset), UnsupportedTypeError, fragments, (x, out))
    assert snapshot(out) == out_before
    # the same array at the first opset that allows it is computed
    assert as_bits(relu(x, opset=first)).tobytes() == as_bits(expected_relu(x)).tobytes()


# ---------------------------------------------------------------------------------------------
# Row: opsets that are not an integer >= 1
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opset",
    [0, -1, 1.5, "14", True, False, np.True_, np.float64(14.0), 14.0, b"14", [14]],
    ids=repr,
)
def test_bad_opset(opset):
    x = np.array([-1.0, 2.0], dtype=np.float32)
    out = sentinel_out(x.shape)
    shown = (
        f"got {opset!r}"
        if not isinstance(opset, int) or isinstance(opset, bool)
        else f"got {opset}"
    )
    err = assert_refused(
        lambda: relu(x, out=out, opset=opset),
        InvalidOpsetError,
        ("opset must be an integer >= 1", shown),
        (x, out),
    )
    # Both built-ins it used to be stay catchable.
    assert (
        isinstance(err, TypeError)
        and isinstance(err, ValueError)
        and isinstance(err, OnnxReluError)
    )
    assert_refused(lambda: onnx_relu.check_dtype(np.float32, opset), InvalidOpsetError, ("opset",))


# ---------------------------------------------------------------------------------------------
# Rows: object arrays, string arrays, things that are not arrays
# ---------------------------------------------------------------------------------------------


def test_object_array():
    x = np.array([1.0, -2.0, 3], dtype=object)  # numbers, but held as Python objects
    out = sentinel_out(x.shape)
    assert_refused(
        lambda: relu(x),
        UnsupportedTypeError,
        ("numpy dtype 'object' (|O)", "never casts silently"),
        (x,),
    )
    assert_refused(
        lambda: relu(x, out=out), UnsupportedTypeError, ("numpy dtype 'object'",), (x, out)
    )


@pytest.mark.parametrize(
    "x", [np.array(["1.5", "-2"]), np.array([b"1", b"-2"]), "abc", b"-1"], ids=repr
)
def test_string_array(x):
    before = snapshot(x)
    assert_refused(
        lambda: relu(x),
        UnsupportedTypeError,
        ("does not allow tensor(string)", ALLOWED_TYPES_LATEST),
    )
    assert snapshot(x) == before


class _Custom:
    def __repr__(self) -> str:
        return "<custom thing>"


class _BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


NOT_ARRAYS = [
    pytest.param(None, "None (a NoneType)", id="None"),
    pytest.param({"a": 1}, "{'a': 1} (a dict)", id="dict"),
    pytest.param({1, 2}, "{1, 2} (a set)", id="set"),
    pytest.param(_Custom(), "<custom thing> (a _Custom)", id="custom-object"),
    pytest.param(_BrokenRepr(), "(unprintable) (a _BrokenRepr)", id="broken-repr"),
    pytest.param(decimal.Decimal("-1.5"), "Decimal('-1.5') (a Decimal)", id="Decimal"),
    pytest.param(2**70, "1180591620717411303424 (a int)", id="int-beyond-64-bits"),
    pytest.param([1, None], "[1, None] (a list)", id="list-with-None"),
    pytest.param(list(range(100)) + [None], "[0, 1, 2, 3", id="long-list-shortened"),
]


@pytest.mark.parametrize(("x", "shown"), NOT_ARRAYS)
@pytest.mark.parametrize("opset", [None, 13])
def test_not_an_array(x, shown, opset):
    out = sentinel_out((3,))
    phrase = (
        "Relu-14 (the latest version, opset >= 14) allows"
        if opset is None
        else "Relu-13 (in force at opset 13) allows"
    )
    fragments = (
        "relu() needs an array of numbers, got",
        shown,
        "dtype object",
        phrase,
        "tensor(float)",
    )
    err = assert_refused(lambda: relu(x, opset=opset), UnsupportedTypeError, fragments)
    assert isinstance(err, TypeError)
    assert_refused(lambda: relu(x, out=out, opset=opset), UnsupportedTypeError, fragments, (out,))
    assert len(str(err)) < 400  # a long input is shortened, not dumped


def test_generator_is_not_an_array():
    gen = (v for v in (1.0, -1.0))
    assert_refused(
        lambda: relu(gen),
        UnsupportedTypeError,
        ("relu() needs an array of numbers", "(a generator)"),
    )
    assert next(gen) == 1.0  # numpy did not consume it


@pytest.mark.parametrize("x", [[[1, 2], [3]], [1.0, [2.0]], [[1.0], 2.0]], ids=repr)
def test_ragged_list(x):
    # numpy.asarray refuses before relu sees data: numpy's own ValueError, unchanged.
    assert_refused(lambda: relu(x), ValueError, ("inhomogeneous",))


class _UfuncAwareWithoutDtype:
    calls = 0

    def __array_ufunc__(self, *args, **kwargs):
        type(self).calls += 1
        return "dispatched"


class _UfuncAwareUint8:
    dtype = np.dtype(np.uint8)
    calls = 0

    def __array_ufunc__(self, *args, **kwargs):
        type(self).calls += 1
        return "dispatched"


def test_array_like_without_dtype():
    assert_refused(
        lambda: relu(_UfuncAwareWithoutDtype()),
        UnsupportedTypeError,
        (
            "cannot tell the dtype of a _UfuncAwareWithoutDtype object",
            "no dtype attribute",
            "tensor(float)",
        ),
    )
    assert _UfuncAwareWithoutDtype.calls == 0


def test_array_like_with_forbidden_dtype_is_refused_before_dispatch():
    assert_refused(
        lambda: relu(_UfuncAwareUint8()),
        UnsupportedTypeError,
        ("tensor(uint8)", "x.astype(numpy.int16)"),
    )
    assert _UfuncAwareUint8.calls == 0


# issue 13, item 2: out= given with an input that handles ufuncs itself (pandas, xarray) went to
# numpy unchecked: cast (a Series of 300 into int8 gave 44), broadcast, or numpy's ValueError.
@pytest.mark.parametrize(
    ("values", "out", "error", "words"),
    [
        (
            np.array([300, -5]),
            np.zeros(2, np.int8),
            UnsupportedTypeError,
            ("out has type tensor(int8) but the input has type tensor(int64)",),
        ),
        (
            np.array([1e300, -1.0]),
            np.zeros(2, np.float16),
            UnsupportedTypeError,
            ("out has type tensor(float16) but the input has type tensor(double)",),
        ),
        (
            np.array([1.0, -1.0]),
            np.zeros((3, 2)),
            InvalidOutputError,
            ("out has shape (3, 2) but the input has shape (2,)",),
        ),
        (np.array([1.0, -1.0]), np.zeros(3), InvalidOutputError, ("out has shape (3,)",)),
        (
            np.array([1.0, -1.0]),
            np.broadcast_to(np.float64(0), (2,)),
            InvalidOutputError,
            ("out is read-only",),
        ),
        (np.array([1.0, -1.0]), [0.0, 0.0], InvalidOutputError, ("out must be a numpy.ndarray",)),
        (
            np.array([1.0, -1.0], np.float32),
            UfuncHandler(np.zeros(2)),
            UnsupportedTypeError,
            ("out has type tensor(double) but the input has type tensor(float)",),
        ),
        (
            np.array([1.0, -1.0]),
            UfuncHandler(np.zeros((2, 2))),
            InvalidOutputError,
            ("out has shape (2, 2) but the input has shape (2,)",),
        ),
    ],
    ids=[
        "int64-into-int8",
        "float64-into-float16",
        "broadcast-2d",
        "longer",
        "read-only",
        "list",
        "handler-other-type",
        "handler-other-shape",
    ],
)
def test_out_is_checked_for_inputs_that_handle_ufuncs_themselves(values, out, error, words):
    x = UfuncHandler(values)
    assert_refused(lambda: relu(x, out=out), error, words, (values, out))
    assert x.calls == 0  # refused before dispatching


def test_good_out_for_inputs_that_handle_ufuncs_themselves_is_written():
    x = UfuncHandler(np.array([-1.5, 2.0, -0.0], np.float32))
    out = np.full(3, 9.0, np.float32)
    assert relu(x, out=out) is out
    assert out.tolist() == [0.0, 2.0, 0.0] and not np.signbit(out).any()
    wrapped = UfuncHandler(np.full(3, 9.0, np.float32))
    relu(x, out=wrapped)
    assert wrapped.values.tolist() == [0.0, 2.0, 0.0]
    assert relu(x, out=(out,)) is out


def test_out_is_checked_for_pandas_series():
    pd = pytest.importorskip("pandas")  # not a test dependency: tested where installed
    series = pd.Series([300, -5])
    out = np.zeros(2, np.int8)
    assert_refused(
        lambda: relu(series, out=out), UnsupportedTypeError, ("out has type tensor(int8)",), (out,)
    )
    assert_refused(
        lambda: relu(series, out=np.zeros((3, 2), np.int64)),
        InvalidOutputError,
        ("out has shape (3, 2)",),
    )
    good = np.zeros(2, np.int64)
    relu(series, out=good)
    assert good.tolist() == [300, 0]


def test_table_whose_columns_share_one_type_is_computed():
    # issue 13, item 12: an all-float pandas DataFrame (dtypes, no dtype) was refused with
    # "cannot tell the dtype".
    table = UfuncHandlingTable([np.array([-1.5, 2.0]), np.array([3.0, -0.0])])
    assert relu(table).values.tolist() == [[0.0, 3.0], [2.0, 0.0]]
    out = np.full((2, 2), 7.0)
    assert relu(table, out=out) is out and out.tolist() == [[0.0, 3.0], [2.0, 0.0]]


def test_table_whose_columns_differ_in_type_is_refused():
    table = UfuncHandlingTable([np.array([-1.5, 2.0]), np.array([3, -4])])
    assert_refused(
        lambda: relu(table),
        UnsupportedTypeError,
        ("needs one type for all of a UfuncHandlingTable's columns, got float64, int64",),
    )
    assert table.calls == 0
    refused = UfuncHandlingTable([np.array([1, 2], np.uint8)])
    assert_refused(lambda: relu(refused), UnsupportedTypeError, ("tensor(uint8)",))
    assert_refused(
        lambda: relu(UfuncHandlingTable([])), UnsupportedTypeError, ("cannot tell the dtype",)
    )


def test_pandas_data_frame():
    pd = pytest.importorskip("pandas")  # an interop test dependency: skipped where missing
    frame = pd.DataFrame({"a": [-1.5, 2.0], "b": [3.0, -4.0]})
    assert relu(frame).to_numpy().tolist() == [[0.0, 3.0], [2.0, 0.0]]
    # issue 35, item 7: columns of different types were refused as a whole; each column is
    # judged on its own type and keeps it.
    mixed = pd.DataFrame({"a": np.float32([-1.5, 2.0]), "b": [3, -4]})
    result = relu(mixed)
    assert result.dtypes.tolist() == [np.float32, np.int64]
    assert result.to_dict("list") == {"a": [0.0, 2.0], "b": [3, 0]}


# issue 35, item 7: labelled data. No silent cast: nullable and arrow-backed data keep their
# type and their missing values, or are refused naming the real reason (and the column).


@pytest.mark.parametrize("dtype", ["Int64", "Int8", "Float32", "Float64"])
def test_pandas_nullable_keeps_type_and_mask(dtype):
    pd = pytest.importorskip("pandas")
    series = pd.Series([3, None, -2, 0], dtype=dtype, name="n")
    result = relu(series)
    assert str(result.dtype) == dtype and result.name == "n"
    assert result.isna().tolist() == [False, True, False, False]
    assert result.dropna().tolist() == [3, 0, 0]
    assert series.isna().tolist() == [False, True, False, False]  # the input untouched
    assert series.dropna().tolist() == [3, -2, 0]


@pytest.mark.parametrize("dtype", ["int32[pyarrow]", "int8[pyarrow]", "float[pyarrow]"])
def test_pandas_arrow_backed_keeps_type_and_nulls(dtype):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    series = pd.Series([3, None, -2], dtype=dtype, index=[10, 20, 30])
    result = relu(series)
    assert str(result.dtype) == dtype  # relu_ufunc gives double[pyarrow] for int32: a cast
    assert result.index.tolist() == [10, 20, 30]
    assert result.isna().tolist() == [False, True, False] and result.dropna().tolist() == [3, 0]
    index = relu(pd.Index([1, None, -2], dtype=dtype))
    assert str(index.dtype) == dtype and index.isna().tolist() == [False, True, False]
    array = relu(series.array)
    assert type(array) is type(series.array) and str(array.dtype) == dtype
    assert array.isna().tolist() == [False, True, False]


def test_pyarrow_with_nulls_keeps_type_and_shares_the_bitmap():
    pa = pytest.importorskip("pyarrow")
    array = pa.array([5, None, -3, 7, None, -1], pa.int32())
    result = relu(array)
    assert result.type == pa.int32()  # numpy's conversion gave float64 with NaN
    assert result.to_pylist() == [5, None, 0, 7, None, 0]
    assert result.buffers()[0].address == array.buffers()[0].address  # the nulls shared
    sliced = relu(array.slice(1, 4))
    assert sliced.to_pylist() == [None, 0, 7, None]
    chunked = relu(pa.chunked_array([array, pa.array([-2, 2], pa.int32())]))
    assert chunked.type == pa.int32() and chunked.to_pylist()[-2:] == [0, 2]
    floats = relu(pa.array([-0.0, None, float("nan"), 1.5], pa.float16()))
    assert floats.type == pa.float16() and floats.null_count == 1
    assert array.to_pylist() == [5, None, -3, 7, None, -1]  # the input untouched


def test_pyarrow_tables_per_column():
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"a": pa.array([-1.0, 2.0], pa.float32()), "b": pa.array([None, -3])})
    result = relu(table)
    assert result.schema == table.schema
    assert result.to_pydict() == {"a": [0.0, 2.0], "b": [None, 0]}
    batch = relu(pa.record_batch([pa.array([-1, 1], pa.int8())], names=["c"]))
    assert batch.to_pydict() == {"c": [0, 1]}


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda pa: pa.array([1, None], pa.uint8()), ("tensor(uint8)", "never casts")),
        (lambda pa: pa.array([True, None]), ("needs numbers", "arrow type bool")),
        (lambda pa: pa.array(["a", None]), ("needs numbers", "arrow type string")),
        (lambda pa: pa.table({"a": [1.0], "s": ["x"]}), ("column 's'", "arrow type string")),
    ],
    ids=["uint8", "bool", "string", "table-with-strings"],
)
def test_pyarrow_refusals_name_the_reason(make, words):
    pa = pytest.importorskip("pyarrow")
    assert_refused(lambda: relu(make(pa)), UnsupportedTypeError, words)


def test_pandas_refusals_name_the_reason():
    pd = pytest.importorskip("pandas")
    assert_refused(
        lambda: relu(pd.Series([1, None], dtype="UInt8")),
        UnsupportedTypeError,
        ("does not allow tensor(uint8)",),
    )
    assert_refused(
        lambda: relu(pd.DataFrame({"a": [1.0], "s": ["x"]})),
        UnsupportedTypeError,
        ("column 's'", "needs a numeric dtype"),
    )
    nullable = pd.Series([1, None, -3], dtype="Int64")
    out = np.zeros(3, np.int64)
    assert_refused(
        lambda: relu(nullable, out=out),
        InvalidOutputError,
        ("out= cannot hold the 1 missing value(s)",),
        (out,),
    )
    mixed = pd.DataFrame({"a": np.float32([1.0]), "b": [1]})
    assert_refused(
        lambda: relu(mixed, out=np.zeros((1, 2))),
        InvalidOutputError,
        ("need one type for all of a DataFrame's columns, got a float32, b int64",),
    )


def test_pandas_data_frame_with_nullable_and_arrow_columns():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame(
        {
            "f": np.float32([-1.0, 2.0]),
            "i": pd.array([None, -3], dtype="Int32"),
            "p": pd.array([-7, None], dtype="int16[pyarrow]"),
        },
        index=["r", "s"],
    )
    result = relu(frame)
    assert [str(d) for d in result.dtypes] == ["float32", "Int32", "int16[pyarrow]"]
    assert result.index.tolist() == ["r", "s"]
    assert result["f"].tolist() == [0.0, 2.0]
    assert result["i"].isna().tolist() == [True, False] and result["i"].iloc[1] == 0
    assert result["p"].isna().tolist() == [False, True] and result["p"].iloc[0] == 0
    assert frame["p"].iloc[0] == -7  # the input untouched


def test_xarray_dataset_per_variable():
    xr = pytest.importorskip("xarray")
    dataset = xr.Dataset(
        {
            "temperature": ("x", np.float32([-1.0, 2.0]), {"units": "K"}),
            "pressure": ("x", np.int16([3, -4])),
        },
        coords={"x": [-1.0, 1.0]},
        attrs={"title": "t"},
    )
    result = relu(dataset)  # "needs one type ... got temperature, pressure" before
    assert result["temperature"].dtype == np.float32 and result["pressure"].dtype == np.int16
    assert result["temperature"].values.tolist() == [0.0, 2.0]
    assert result["pressure"].values.tolist() == [3, 0]
    assert result["x"].values.tolist() == [-1.0, 1.0]  # coordinates are not computed
    assert result["temperature"].attrs == {"units": "K"}
    refused = xr.Dataset({"ok": ("x", np.float32([1.0])), "bytes": ("x", np.uint8([1]))})
    assert_refused(
        lambda: relu(refused), UnsupportedTypeError, ("variable 'bytes'", "tensor(uint8)")
    )


@pytest.mark.parametrize("name", ["i4,(", "0:", "[", "f4 (2)", "m8[foo]", "", "U-1"], ids=repr)
def test_malformed_dtype_names(name):
    # numpy answers these with TypeError, ValueError or even SyntaxError; onnx-relu with one type.
    assert_refused(
        lambda: onnx_relu.check_dtype(name),
        UnsupportedTypeError,
        (f"needs a numeric dtype, got {name!r}", "allowed types"),
    )

    class ArrayLike:
        dtype = name

        def __array_ufunc__(self, *args, **kwargs):
            raise AssertionError("dispatched despite a malformed dtype")

    assert_refused(lambda: relu(ArrayLike()), UnsupportedTypeError, ("needs a numeric dtype",))


# ---------------------------------------------------------------------------------------------
# Row: byte-swapped arrays (computed, via a native copy)
# ---------------------------------------------------------------------------------------------

SWAPPABLE = [d for d in RELU_DTYPES if d.itemsize > 1]  # int8 has no byte order


def _swapped(values: np.ndarray) -> np.ndarray:
    """The same values stored in the other byte order."""
    return values.byteswap().view(values.dtype.newbyteorder("S"))


@pytest.mark.parametrize("dtype", SWAPPABLE, ids=str)
@pytest.mark.parametrize("out_kind", ["none", "native", "swapped", "in-place", "strided-swapped"])
def test_byteswapped_input_is_computed(dtype, out_kind):
    values = mixed_values(dtype, 64, seed=7)  # specials (NaNs, -0, -inf, extremes) and random bits
    x = _swapped(values)
    assert not x.dtype.isnative
    assert np.array_equal(as_bits(x), as_bits(values))  # same values, other storage
    want = as_bits(expected_relu(values))
    x_before = snapshot(x)
    if out_kind == "none":
        y = relu(x)
        assert y.dtype == x.dtype  # the input's type, byte order included
    elif out_kind == "native":
        out = np.empty(values.shape, dtype=dtype)
        y = relu(x, out=out)
        assert y is out
    elif out_kind == "swapped":
        out = np.empty(values.shape, dtype=x.dtype)
        y = relu(values, out=out)  # native input, byte-swapped out
        assert y is out and not y.dtype.isnative
    elif out_kind == "in-place":
        y = relu(x, out=x)
        assert y is x
    else:
        big = _swapped(mixed_values(dtype, 128, seed=8))
        out = big[::2]
        y = relu(x[::-1], out=out)
        want = want[::-1]
        assert y is out
    assert np.array_equal(as_bits(y), want)
    if out_kind not in ("in-place",):
        assert snapshot(x) == x_before


def test_int8_has_no_byte_order():
    x = np.array([-1, 2], dtype=np.int8)
    assert x.dtype.newbyteorder("S") == x.dtype
    assert relu(x.view(x.dtype.newbyteorder(">"))).tolist() == [0, 2]


# ---------------------------------------------------------------------------------------------
# Rows: bad ``out`` arguments
# ---------------------------------------------------------------------------------------------


def test_read_only_out():
    x = mixed_values(np.float32, 10)
    out = sentinel_out(x.shape)
    out.flags.writeable = False
    err = assert_refused(
        lambda: relu(x, out=out), InvalidOutputError, ("out is read-only", "writeable"), (x, out)
    )
    assert isinstance(err, ValueError)
    broadcast = np.broadcast_to(np.float32(7), x.shape)  # read-only by construction
    assert_refused(
        lambda: relu(x, out=broadcast), InvalidOutputError, ("read-only",), (x, broadcast)
    )


@pytest.mark.parametrize("out_shape", [(5,), (2, 6), (6, 1), (1, 6), (), (0,), (12,)], ids=str)
def test_out_of_wrong_shape(out_shape):
    x = mixed_values(np.float32, 6)
    out = sentinel_out(out_shape)
    err = assert_refused(
        lambda: relu(x, out=out),
        InvalidOutputError,
        (f"out has shape {out_shape} but the input has shape (6,)", "the input's shape"),
        (x, out),
    )
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    ("x_dtype", "out_dtype", "out_name"),
    [
        (np.float32, np.float64, "tensor(double)"),
        (np.float32, np.int32, "tensor(int32)"),  # same size, other type
        (np.float16, ml_dtypes.bfloat16, "tensor(bfloat16)"),
        (ml_dtypes.bfloat16, np.float16, "tensor(float16)"),
        (np.int8, np.uint8, "tensor(uint8)"),
        (np.int64, np.float64, "tensor(double)"),
        (np.float32, object, "numpy dtype 'object'"),
    ],
    ids=str,
)
def test_out_of_wrong_dtype(x_dtype, out_dtype, out_name):
    x = mixed_values(x_dtype, 8)
    out = np.zeros(8, dtype=out_dtype)
    err = assert_refused(
        lambda: relu(x, out=out),
        UnsupportedTypeError,
        (
            f"out has type {out_name}",
            "but the input has type",
            "Relu's output has the input's type",
        ),
        (x, out),
    )
    assert isinstance(err, TypeError)


@pytest.mark.parametrize(
    ("out", "type_name"),
    [
        ([0.0] * 4, "list"),
        ((np.zeros(4, np.float32), np.zeros(4, np.float32)), "tuple"),
        ((None,), "NoneType"),
        (memoryview(bytearray(16)).cast("f"), "memoryview"),
        (bytearray(16), "bytearray"),
        (np.float32(0), "float32"),
        ("out", "str"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_out_not_an_ndarray(out, type_name):
    x = mixed_values(np.float32, 4)
    err = assert_refused(
        lambda: relu(x, out=out),
        InvalidOutputError,
        (f"out must be a numpy.ndarray, got {type_name}",),
        (x, out),
    )
    assert isinstance(err, TypeError)


def test_out_with_zero_stride():
    x = mixed_values(np.float32, 6)
    backing = np.full(1, 9.0, dtype=np.float32)
    out = as_strided(backing, shape=(6,), strides=(0,), writeable=True)
    assert_refused(
        lambda: relu(x, out=out),
        InvalidOutputError,
        ("out has stride 0 along axis 0 (length 6)", "share memory"),
        (x, backing),
    )
    # a zero stride on an axis of length 1 is harmless and accepted
    one = as_strided(np.zeros(6, np.float32), shape=(1, 6), strides=(0, 4), writeable=True)
    assert np.array_equal(
        as_bits(relu(x.reshape(1, 6), out=one)), as_bits(expected_relu(x)).reshape(1, 6)
    )
    # and so is an empty out, which numpy itself gives zero strides
    empty = np.empty((0, 2), np.float32)
    assert 0 in empty.strides
    assert relu(np.empty((0, 2), np.float32), out=empty) is empty


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
def test_unaligned_input_and_out(dtype):
    # Views at every byte offset of a buffer: numpy copies misaligned operands through aligned
    # buffers before the loop; the result must not notice.
    n = 1000
    values = mixed_values(dtype, n, seed=11)
    want = as_bits(expected_relu(values))
    for in_offset in range(dtype.itemsize + 1):
        for out_offset in range(dtype.itemsize + 1):
            raw_in = np.zeros(n * dtype.itemsize + in_offset, dtype=np.uint8)
            raw_out = np.full(n * dtype.itemsize + out_offset, 0xA5, dtype=np.uint8)
            x = raw_in[in_offset:].view(dtype)
            x[...] = values
            out = raw_out[out_offset:].view(dtype)
            assert relu(x, out=out) is out
            assert np.array_equal(as_bits(out), want)
            assert np.array_equal(as_bits(x), as_bits(values))
            assert (raw_out[:out_offset] == 0xA5).all()


OVERLAPS = {
    # name: (input view, out view) of one buffer ``b``; they share memory only partly.
    "shift-forward": (lambda b: b[:-3], lambda b: b[3:]),
    "shift-backward": (lambda b: b[3:], lambda b: b[:-3]),
    "reversed": (lambda b: b, lambda b: b[::-1]),
    "reversed-half": (lambda b: b[: b.size // 2 + 5], lambda b: b[b.size // 2 + 4 :: -1]),
    "transposed": (lambda b: b[:64].reshape(8, 8), lambda b: b[:64].reshape(8, 8).T),
    "stride-2-over-contiguous": (lambda b: b[::2], lambda b: b[: (b.size + 1) // 2]),
}


@pytest.mark.parametrize("dtype", RELU_DTYPES, ids=str)
@pytest.mark.parametrize("overlap", list(OVERLAPS))
@pytest.mark.parametrize("size", [67, 5000])  # numpy releases the GIL above 500 elements
def test_out_partially_overlapping_input(dtype, overlap, size):
    make_x, make_out = OVERLAPS[overlap]
    buffer = mixed_values(dtype, size, seed=size)
    x, out = make_x(buffer), make_out(buffer)
    assert x.shape == out.shape and np.shares_memory(x, out)
    want = as_bits(expected_relu(x.copy()))
    # bytes of the buffer that are not part of out must keep their values
    mask = np.zeros(buffer.shape, dtype=bool)
    make_out(mask.view(np.bool_))[...] = True
    outside_before = as_bits(buffer)[~mask].copy()
    y = relu(x, out=out)
    assert y is out
    assert np.array_equal(as_bits(out), want)
    assert np.array_equal(as_bits(buffer)[~mask], outside_before)


# ---------------------------------------------------------------------------------------------
# Row: shapes whose element count overflows, and huge zero-stride views
# ---------------------------------------------------------------------------------------------


def test_shape_whose_element_count_overflows_cannot_reach_relu():
    # numpy refuses to build these, so relu never sees them.
    with pytest.raises(ValueError, match="too large|too big"):
        np.broadcast_to(np.float32(1), (2**32, 2**32))
    with pytest.raises(ValueError, match="too big"):
        as_strided(np.zeros(1, np.float32), shape=(2**31, 2**31), strides=(0, 0))
    with pytest.raises(ValueError, match="too big"):
        np.empty((2**62, 4), dtype=np.float32)


def test_huge_zero_stride_input_fails_allocating_output():
    x = np.broadcast_to(np.int8(-1), (2**31, 2**31))  # 2**62 elements, one byte of memory
    before = snapshot(x[:1, :4])
    with pytest.raises(MemoryError, match="Unable to allocate"):
        relu(x)
    assert snapshot(x[:1, :4]) == before
    # a small window of such a view is an ordinary input
    assert relu(np.broadcast_to(np.float32(-1), (2**40,))[:5]).tolist() == [0.0] * 5


def test_huge_zero_stride_out_is_refused_at_once():
    x = np.broadcast_to(np.float32(-1), (2**40,))
    backing = np.full(1, 5.0, dtype=np.float32)
    out = as_strided(backing, shape=(2**40,), strides=(0,), writeable=True)
    # Refused before computing: otherwise 2**40 elements would be written into one.
    assert_refused(lambda: relu(x, out=out), InvalidOutputError, ("stride 0",), (backing,))


# ---------------------------------------------------------------------------------------------
# The hierarchy and the table stay in step with the code
# ---------------------------------------------------------------------------------------------


def test_error_hierarchy():
    assert issubclass(UnsupportedTypeError, OnnxReluError) and issubclass(
        UnsupportedTypeError, TypeError
    )
    for cls in (InvalidOpsetError, InvalidOutputError):
        assert issubclass(cls, OnnxReluError)
        assert issubclass(cls, ValueError) and issubclass(cls, TypeError)
    for cls in (OnnxReluError, UnsupportedTypeError, InvalidOpsetError, InvalidOutputError):
        assert getattr(onnx_relu, cls.__name__) is cls


def test_documented_hierarchy_matches_the_error_classes():
    """Every class of onnx_relu.errors is in the hierarchy of docs/reliability.md, under the
    parent and with the built-in bases the document gives it, and nothing else is."""
    import builtins

    import onnx_relu.errors as errors

    doc = REPOSITORY / "docs" / "reliability.md"
    block = doc.read_text(encoding="utf-8").split("## Exceptions", 1)[1].split("```", 2)[1]
    documented = {}
    parents = {0: Exception}
    for line in block.splitlines():
        match = re.search(r"(\w+Error)\s+(?:\(also ([^)]*)\))?", line)
        if not match:
            continue
        depth = line.index(match.group(1))
        cls = getattr(errors, match.group(1))
        parent = parents[max(d for d in parents if d < depth)]
        parents = {d: c for d, c in parents.items() if d < depth} | {depth: cls}
        bases = re.findall(r"[A-Z]\w+", match.group(2) or "")
        documented[cls] = (parent, bases)
    assert set(documented) == {getattr(errors, name) for name in errors.__all__}
    for name in errors.__all__:  # every class is exported from the package too
        assert getattr(onnx_relu, name) is getattr(errors, name)
    for cls, (parent, bases) in documented.items():
        assert issubclass(cls, parent), f"{cls.__name__} is documented under {parent.__name__}"
        for name in bases:
            assert issubclass(cls, getattr(builtins, name)), f"{cls.__name__} is no {name}"


def test_every_row_of_the_reliability_table_names_an_existing_test():
    text = (REPOSITORY / "docs" / "reliability.md").read_text(encoding="utf-8")
    cited = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", text)  # as pytest names them
    assert len(cited) >= 20
    for path, name in cited:
        source = (REPOSITORY / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", source, re.MULTILINE), (
            f"{path}::{name} cited but missing"
        )


def test_docs_errors_example_runs(capsys):
    page = (REPOSITORY / "docs" / "getting-started.md").read_text(encoding="utf-8")
    section = page.split("## Errors", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/getting-started.md", "exec"), {})
    assert capsys.readouterr().out == "UnsupportedTypeError\n"
