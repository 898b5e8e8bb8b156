"""The numpy path of :func:`onnx_relu.relu`: the checks of types, ``out`` and ``where``, and
the computation of numpy arrays and scalars, array-likes numpy converts, and objects that handle
ufuncs themselves (dask, xarray, pandas).

It knows no other library's arrays: :mod:`onnx_relu._api` sends those to
:mod:`onnx_relu._foreign` first, which computes the numpy arrays it makes of them here (so
neither of the two imports the other).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._relu import _relu_view
from ._relu import relu as relu_ufunc
from .dtypes import _catch_up_with_ml_dtypes, describe_dtype, native, numpy_dtype
from .errors import InvalidOutputError, UnsupportedTypeError
from .versions import ReluVersion, opset_phrase, unsupported_type_message

__all__ = ["checked_dtype", "dispatcher_dtype", "relu_numpy", "relu_into"]


def checked_dtype(dtype: object, version: ReluVersion, opset: int | None) -> np.dtype:
    """:func:`onnx_relu.check_dtype` against the resolved ``version`` (in force at ``opset``)."""
    try:
        dt: np.dtype = numpy_dtype(dtype)  # (a name of an ml_dtypes type loads it first)
    except UnsupportedTypeError:  # that name, and a module named ml_dtypes that lacks it
        raise
    except (TypeError, ValueError, SyntaxError):
        # numpy's ways of saying "not a dtype": TypeError ("data type 'x' not understood"),
        # ValueError and SyntaxError (malformed comma strings such as "0:" or "i4,(").
        raise UnsupportedTypeError(
            f"{opset_phrase(version, opset)} needs a numeric dtype, got {dtype!r};"
            f" allowed types: {', '.join(version.types)}."
        ) from None
    if native(dt) not in version.dtypes and not (
        _catch_up_with_ml_dtypes() and native(dt) in version.dtypes
    ):
        raise UnsupportedTypeError(unsupported_type_message(dt, version, opset))
    return dt


def _dispatches_itself(x: object) -> bool:
    """True for array-likes that handle ufuncs themselves (dask, xarray, pandas), not numpy's."""
    handler = getattr(type(x), "__array_ufunc__", None)
    return handler is not None and handler is not np.ndarray.__array_ufunc__


def _checked_out(out: object, x: np.ndarray | np.generic) -> np.ndarray:
    """``out`` (unwrapped from a 1-tuple) if it can hold Relu of ``x``, else the error why not.

    ``x`` is a numpy array or, for the objects that handle ufuncs themselves, anything with the
    ``shape`` and ``dtype`` of one (a pandas Series, an xarray DataArray): the same checks hold.
    """
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if not isinstance(out, np.ndarray):
        raise InvalidOutputError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != x.shape:
        raise InvalidOutputError(
            f"out has shape {out.shape} but the input has shape {x.shape};"
            " Relu's output has the input's shape"
        )
    flags = out.flags
    if not flags.writeable:
        raise InvalidOutputError("out is read-only; pass a writeable array")
    if not flags.forc and 0 in out.strides and out.size > 1:
        # A zero stride along an axis longer than 1 makes several output elements one memory
        # location: the result could not be stored, and a huge such view would run for hours.
        # (An empty array may have zero strides anywhere: it has no elements to share. A
        # contiguous array has none along an axis longer than 1, so the common case skips this.)
        for axis, (length, stride) in enumerate(zip(out.shape, out.strides, strict=True)):
            if stride == 0 and length > 1:
                raise InvalidOutputError(
                    f"out has stride 0 along axis {axis} (length {length}): its elements share"
                    " memory and cannot hold the result; pass an array with its own memory per"
                    " element, e.g. numpy.empty_like(x)"
                )
    same_type = native(out.dtype) == native(x.dtype)
    if not same_type:
        raise UnsupportedTypeError(
            f"out has type {describe_dtype(out.dtype)} but the input has type"
            f" {describe_dtype(x.dtype)}; Relu's output has the input's type"
        )
    return out


class _ShapeAndType:
    """The shape and dtype of an object that handles ufuncs itself, as :func:`_checked_out` reads
    them from an array (its shape as a tuple of ints, its dtype as a numpy dtype)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, x: object, dtype: object) -> None:
        shape = getattr(x, "shape", None)
        try:
            self.shape = tuple(int(n) for n in shape) if shape is not None else None
        except (TypeError, ValueError):  # a lazy shape with unknown extents (dask: nan)
            self.shape = None
        self.dtype = np.dtype(dtype)  # type: ignore[call-overload]  # checked by checked_dtype


def _dtype_of_columns(table: object, version: ReluVersion, opset: int | None) -> object | None:
    """The one dtype of a table's columns (a pandas DataFrame has ``dtypes``, no ``dtype``),
    None if it has no ``dtypes`` or no column; refused if the columns' types differ."""
    dtypes = getattr(table, "dtypes", None)
    if dtypes is None:
        return None
    if isinstance(dtypes, Mapping):  # an xarray Dataset's: variable name -> dtype
        dtypes = dtypes.values()
    found = list(dict.fromkeys(_values_dtype(d) for d in dtypes))
    if len(found) > 1:
        names = ", ".join(str(d) for d in found)
        raise UnsupportedTypeError(
            f"relu() needs one type for all of a {type(table).__name__}'s columns, got {names};"
            f" convert them to one of {', '.join(version.types)} first"
        )
    return found[0] if found else None


def _checked_out_of_handler(out: object, x: _ShapeAndType) -> object:
    """:func:`_checked_out` for the input ``x`` of an object that handles ufuncs itself.

    ``out`` may then also be such an object (a pandas Series into a Series): its dtype and shape
    are checked as an array's; whether it is writeable is its own handler's business.
    """
    if x.shape is None:
        raise InvalidOutputError(
            "out= cannot be checked against an input whose shape is not known yet; call relu"
            " without out"
        )
    target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    if isinstance(target, np.ndarray) or not _dispatches_itself(target):
        return _checked_out(out, x)  # type: ignore[arg-type]
    shape, dtype = getattr(target, "shape", None), getattr(target, "dtype", None)
    if shape is None or dtype is None:
        raise InvalidOutputError(
            f"out must be a numpy.ndarray or an array-like with shape and dtype, got"
            f" {type(target).__name__}"
        )
    checked = _ShapeAndType(target, dtype)
    if checked.shape != x.shape:
        raise InvalidOutputError(
            f"out has shape {checked.shape} but the input has shape {x.shape};"
            " Relu's output has the input's shape"
        )
    if native(checked.dtype) != native(x.dtype):
        raise UnsupportedTypeError(
            f"out has type {describe_dtype(checked.dtype)} but the input has type"
            f" {describe_dtype(x.dtype)}; Relu's output has the input's type"
        )
    return out


def _relu_byteswapped(
    x: np.ndarray | np.generic, out: np.ndarray | None, where: object = True
) -> np.ndarray:
    """Relu of an operand stored in non-native byte order, through a native copy."""
    native_copy = x.astype(native(x.dtype), order="K")
    relu_ufunc(native_copy, out=native_copy, where=where)
    if out is None:
        result = native_copy.astype(x.dtype, order="K")
        return result[()] if result.ndim == 0 else result
    np.copyto(out, native_copy, casting="equiv", where=where)
    return out


def _checked_where(where: object, shape: tuple[int, ...]) -> object:
    """``where`` as numpy's ufuncs take it, checked before anything is computed: True, False or
    a boolean array-like that broadcasts to the input's ``shape``."""
    if where is True or where is False:
        return where
    mask = np.asarray(where)
    if mask.dtype != np.bool_:
        raise TypeError(
            f"where must be a boolean array (or True/False), got one of dtype {mask.dtype};"
            " relu never casts, so convert it explicitly, e.g. where=(mask != 0)"
        )
    try:
        broadcasts = np.broadcast_shapes(mask.shape, shape) == shape
    except ValueError:
        broadcasts = False
    if not broadcasts:
        raise ValueError(
            f"where has shape {mask.shape}, which does not broadcast to the input's shape {shape}"
        )
    return mask


def _not_numbers_message(given: object, version: ReluVersion, opset: int | None) -> str:
    """The error text for an input that numpy can only hold as an array of Python objects."""
    return (
        f"relu() needs an array of numbers, got {_short_repr(given)} (a {type(given).__name__}),"
        " which numpy can only hold as an array of Python objects (dtype object);"
        f" {opset_phrase(version, opset)} allows: {', '.join(version.types)}."
    )


def _short_repr(value: object, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        return "(unprintable)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dispatcher_dtype(x: object, version: ReluVersion, opset: int | None) -> Any:
    """The checked dtype of an object that handles the ufunc itself (``__array_ufunc__``)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = _dtype_of_columns(x, version, opset)
    if dtype is None:
        raise UnsupportedTypeError(
            f"relu() cannot tell the dtype of a {type(x).__name__} object"
            f" (it has __array_ufunc__ but no dtype attribute); allowed types:"
            f" {', '.join(version.types)}"
        )
    dtype = _values_dtype(dtype)
    checked_dtype(dtype, version, opset)
    return dtype


def _values_dtype(dtype: object) -> object:
    """The numpy type of the values of an array of type ``dtype``: ``dtype`` itself, or for
    pandas' nullable types (``Int64``, ``Float32``: numpy values and a mask, which their own
    ufunc handling keeps) the values' numpy dtype."""
    if isinstance(dtype, np.dtype):
        return dtype
    values = getattr(dtype, "numpy_dtype", None)
    return values if isinstance(values, np.dtype) else dtype


def _relu_where(
    x: object, out: object, where: object, version: ReluVersion, opset: int | None
) -> Any:
    """:func:`onnx_relu.relu` with a ``where`` mask: the checks of ``x`` and ``out``, then the
    mask's."""
    if not isinstance(x, (np.ndarray, np.generic)):
        if _dispatches_itself(x):
            dtype = dispatcher_dtype(x, version, opset)
            if out is None:
                return relu_ufunc(x, where=where)
            checked = _ShapeAndType(x, dtype)
            target = _checked_out_of_handler(out, checked)
            if checked.shape is not None:
                where = _checked_where(where, checked.shape)
            return relu_ufunc(x, out=target, where=where)
        given, x = x, np.asarray(x)
        if x.dtype.kind == "O":
            raise UnsupportedTypeError(_not_numbers_message(given, version, opset))
    checked_dtype(x.dtype, version, opset)
    checked_out = None if out is None else _checked_out(out, x)
    mask = _checked_where(where, x.shape)
    if x.dtype.isnative and (checked_out is None or checked_out.dtype.isnative):
        return relu_ufunc(x, out=checked_out, where=mask)
    return _relu_byteswapped(x, checked_out, mask)


def relu_numpy(
    x: object, out: object, where: object, version: ReluVersion, opset: int | None
) -> tuple[Any] | np.ndarray | np.generic:
    """Relu of ``x`` by the numpy path, ``version`` in force at ``opset``: the result as a
    1-tuple, or, where it is a new array (no ``out``, no ``where``) of ``x``'s allowed native
    type, the numpy array or scalar to compute it from (:func:`onnx_relu.relu` does that, in the
    one place its small call shares; pass ``out`` to always get a 1-tuple)."""
    if where is not True:
        return (_relu_where(x, out, where, version, opset),)
    if not isinstance(x, (np.ndarray, np.generic)):
        if _dispatches_itself(x):
            dtype = dispatcher_dtype(x, version, opset)
            if out is None:
                return (relu_ufunc(x),)
            # The handler passes out on to numpy, which would cast into it and broadcast to it:
            # the checks of an ndarray input come first (else a pandas Series of 300 into an
            # int8 out gives 44).
            return (relu_ufunc(x, out=_checked_out_of_handler(out, _ShapeAndType(x, dtype))),)
        given, x = x, np.asarray(x)
        if x.dtype.kind == "O":
            raise UnsupportedTypeError(_not_numbers_message(given, version, opset))

    dtype = x.dtype
    if dtype in version.dtypes:
        if out is None:
            return x
        # A view of two or more axes that numpy would hand the loop row by row (x[:, :n],
        # x[::2]) runs as one kernel call over its rows (_relu_view), so that the whole call's
        # size decides threads and streaming stores; None: the ufunc's one loop call serves.
        # Fast path for the common out= call (a plain, writeable, contiguous array of the same
        # dtype and shape): the full checks below cost more than the ufunc call on small arrays.
        if type(out) is np.ndarray and out.dtype is dtype and out.shape == x.shape:
            flags = out.flags
            if flags.writeable and flags.forc:
                if x.ndim > 1 and _relu_view(x, out) is not None:
                    return (out,)
                return (relu_ufunc(x, out=out),)
        out = _checked_out(out, x)
        if out.dtype.isnative:
            if x.ndim > 1 and _relu_view(x, out) is not None:
                return (out,)
            return (relu_ufunc(x, out=out),)
        return (_relu_byteswapped(x, out),)

    checked_dtype(dtype, version, opset)  # raises unless an allowed type stored byte-swapped
    if dtype in version.dtypes:  # ml_dtypes was loaded unseen (see checked_dtype): known now
        return relu_numpy(x, out, True, version, opset)
    return (_relu_byteswapped(x, None if out is None else _checked_out(out, x)),)


def relu_into(
    x: np.ndarray, out: np.ndarray, where: object, version: ReluVersion, opset: int | None
) -> Any:
    """:func:`relu_numpy` of ``x`` into ``out`` (checked as any ``out``): the result."""
    done = relu_numpy(x, out, where, version, opset)
    return done[0] if isinstance(done, tuple) else done  # (with out: always a 1-tuple)
