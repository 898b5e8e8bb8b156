"""The public ``relu`` function: validation in Python, computation in the compiled ufunc."""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

import numpy as np

# First: loading the kernel's settings applies the ONNX_RELU_* variables before any call.
from . import tuning as _tuning  # noqa: F401
from ._relu import _empty_like as _cached_empty_like
from ._relu import _relu_view
from ._relu import relu as relu_ufunc
from .dtypes import _catch_up_with_ml_dtypes, describe_dtype, native, numpy_dtype
from .errors import InvalidOutputError, UnsupportedTypeError
from .versions import (
    LATEST_VERSION,
    ReluVersion,
    opset_phrase,
    unsupported_type_message,
    version_for_opset,
)

__all__ = ["relu", "relu_ufunc", "check_dtype"]


def check_dtype(dtype: object, opset: int | None = None) -> np.dtype:
    """Check that ``dtype`` is allowed by the Relu version in force at ``opset``.

    Returns the dtype as a ``numpy.dtype``; raises :class:`~onnx_relu.errors.UnsupportedTypeError`
    (a ``TypeError``) naming the type in ONNX terms, the version, the opset and the allowed types.
    Byte-swapped dtypes of an allowed type pass (``relu`` computes them correctly).

    Examples
    --------
    >>> str(check_dtype("float32", opset=6))
    'float32'
    >>> check_dtype("int8", opset=13)
    Traceback (most recent call last):
    ...
    onnx_relu.errors.UnsupportedTypeError: Relu-13 (in force at opset 13) does not allow tensor(int8); allowed types: tensor(bfloat16), tensor(double), tensor(float), tensor(float16). tensor(int8) is allowed from Relu-14 (opset >= 14).
    """  # noqa: E501 - a doctest's expected error message is one line
    return _checked_dtype(dtype, version_for_opset(opset), opset)


def _checked_dtype(dtype: object, version: ReluVersion, opset: int | None) -> np.dtype:
    """:func:`check_dtype` against the already resolved ``version`` (in force at ``opset``)."""
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
        self.dtype = np.dtype(dtype)  # type: ignore[call-overload]  # checked by _checked_dtype


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


# What type checkers see of relu: the caller's type back (docs/arrays.md). Not defined at run
# time: creating Protocol classes would cost every import, and nothing checks them then.
if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    class SupportsArrayNamespace(Protocol):
        """An Array API array (jax, array-api-strict, cupy...)."""

        def __array_namespace__(self, *args: Any, **kwargs: Any) -> Any: ...

    class SupportsDLPack(Protocol):
        """An array offering DLPack (torch)."""

        def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...

    class SupportsArrayUFunc(Protocol):
        """An array-like that handles ufuncs itself (pandas, xarray, dask)."""

        def __array_ufunc__(self, *args: Any, **kwargs: Any) -> Any: ...

    class SupportsArray(Protocol):
        """An object numpy converts through ``__array__``."""

        def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray[Any, Any]: ...

    _ScalarT = TypeVar("_ScalarT", bound=np.generic)
    _OutT = TypeVar("_OutT")
    _ForeignT = TypeVar(
        "_ForeignT", bound=SupportsArrayNamespace | SupportsDLPack | SupportsArrayUFunc
    )
    #: Numbers and nested sequences of them, as far as four levels (not recursive: a str is
    #: a sequence of str, which a recursive alias would let through).
    _Numbers = (
        float
        | Sequence[float]
        | Sequence[Sequence[float]]
        | Sequence[Sequence[Sequence[float]]]
        | Sequence[Sequence[Sequence[Sequence[float]]]]
    )


@overload
def relu(
    x: NDArray[_ScalarT],
    /,
    out: None = None,
    *,
    where: object = True,
    opset: int | None = None,
) -> NDArray[_ScalarT]: ...
@overload
def relu(
    x: _ScalarT, /, out: None = None, *, where: object = True, opset: int | None = None
) -> _ScalarT: ...
@overload
def relu(
    x: _ForeignT, /, out: None = None, *, where: object = True, opset: int | None = None
) -> _ForeignT: ...
@overload
def relu(
    x: _Numbers | SupportsArray,
    /,
    out: None = None,
    *,
    where: object = True,
    opset: int | None = None,
) -> NDArray[Any]: ...
@overload
def relu(
    x: NDArray[Any]
    | np.generic
    | _Numbers
    | SupportsArray
    | SupportsArrayNamespace
    | SupportsDLPack
    | SupportsArrayUFunc,
    /,
    out: _OutT,
    *,
    where: object = True,
    opset: int | None = None,
) -> _OutT: ...


def relu(
    x: object, /, out: object = None, *, where: object = True, opset: int | None = None
) -> Any:
    """ONNX Relu, ``y = max(0, x)`` elementwise, with exactly defined results for every type.

    Parameters
    ----------
    x : array_like
        A numpy array or anything numpy converts (lists, scalars). Objects that handle ufuncs
        themselves (dask arrays, xarray, pandas) are dispatched through :data:`relu_ufunc` and
        stay lazy or labelled; their dtype is checked first (each column's or variable's for a
        pandas DataFrame or an xarray Dataset). Arrays of other libraries come back in their
        own type: any CPU array offering ``__dlpack__`` or ``__array_namespace__`` (torch, jax,
        array-api-strict), read and returned through DLPack without a copy; jax tracers inside
        ``jax.jit``, ``jax.vmap`` and ``jax.grad``; scipy.sparse matrices (Relu of the stored
        values); pyarrow arrays and pandas data backed by them (nulls kept). See
        docs/arrays.md.
    out : numpy.ndarray, optional
        Where to write the result: same shape and type as ``x``, writeable. ``out=x`` works in
        place and overlapping views are handled. For an ``x`` that handles ufuncs itself, the
        same checks come before dispatching (``out`` may then also be such an object, of the
        same shape and type).
    where : bool or array_like of bool, optional
        As for every NumPy ufunc: Relu is computed where it is True, and ``out`` keeps its
        values elsewhere (without ``out`` those elements are left uninitialised, as NumPy leaves
        them). It must be boolean (never cast) and broadcast to ``x``'s shape; ``out`` is
        checked as without ``where``, so an ``out`` of another type is refused, not cast into.
    opset : int, optional
        The ai.onnx opset version of the model, >= 1; None means the latest. It selects the Relu
        version in force (1 for opsets 1-5, 6 for 6-12, 13 for 13, 14 from 14 on) and so the
        allowed types.

    Returns
    -------
    numpy.ndarray or scalar or the input's own type
        The result, with ``x``'s shape, dtype and memory layout (``out`` if given). A 0-d input
        gives a numpy scalar, as numpy's ufuncs do; an array of another library gives an array
        of that library (a 0-d torch tensor gives a 0-d tensor).

    Raises
    ------
    UnsupportedTypeError
        (a ``TypeError``) if the type is not allowed at ``opset`` or by any Relu version, or
        ``x`` is not numbers (None, a dict, a string); the message names the type in ONNX
        terms, the version, the opset and the allowed types.
    InvalidOutputError
        (a ``ValueError`` and ``TypeError``) if ``out`` is not a numpy array, has another shape,
        is read-only or has a zero stride; nothing is written then.
    InvalidOpsetError
        (a ``ValueError`` and ``TypeError``) if ``opset`` is not an integer >= 1.

    Notes
    -----
    Semantics: ``y = x`` where ``x > 0``; a NaN is returned bit for bit (sign, payload and
    signalling bit untouched); every other input (-0.0, -inf, negatives, negative subnormals)
    gives +0.0. Integers: ``y = x`` if ``x > 0`` else 0. No floating-point flags are raised.

    Without ``out``, outputs of at least 1 MiB (of a C- or F-contiguous ``numpy.ndarray``) come
    from a bounded cache of blocks freed by earlier outputs, so that repeated calls do not pay
    for fresh pages; they are ordinary arrays in every other respect
    (:func:`onnx_relu.output_cache.cache_info`).

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_relu import relu
    >>> y = relu(np.array([-3.0, -0.0, 0.5, np.inf], dtype=np.float32))
    >>> str(y.dtype), y.tolist()
    ('float32', [0.0, 0.0, 0.5, inf])
    >>> relu([-5, 0, 7]).tolist()
    [0, 0, 7]
    >>> out = np.full(3, 9.0)
    >>> relu(np.array([-1.0, -2.0, 3.0]), out=out, where=[True, False, True]).tolist()
    [0.0, 9.0, 3.0]
    >>> relu(np.array([1, -1], dtype=np.int8), opset=13)
    Traceback (most recent call last):
    ...
    onnx_relu.errors.UnsupportedTypeError: Relu-13 (in force at opset 13) does not allow tensor(int8); allowed types: tensor(bfloat16), tensor(double), tensor(float), tensor(float16). tensor(int8) is allowed from Relu-14 (opset >= 14).
    """  # noqa: E501 - a doctest's expected error message is one line
    # The small call first: an exact ndarray of an allowed type, no out, where, or opset, the
    # checks below cost more than the ufunc itself on a few elements (BENCHMARKS.md).
    if type(x) is _ndarray and out is None and where is True and opset is None:
        if x.dtype in LATEST_VERSION.dtypes:
            cached = _cached_empty_like(x)
            if cached is None:
                if x.ndim > 1:
                    done = _relu_view(x, None)
                    if done is not None:
                        return done
                return relu_ufunc(x)
            if x.ndim > 1 and _relu_view(x, cached) is not None:
                return cached
            return relu_ufunc(x, out=cached)
    version = LATEST_VERSION if opset is None else version_for_opset(opset)
    if not isinstance(x, (np.ndarray, np.generic)):
        # Arrays of other libraries (DLPack, the Array API, jax, scipy.sparse, pyarrow, and
        # pandas or xarray data whose types numpy does not hold): the caller's type back.
        # None: an array-like numpy converts or that handles ufuncs itself.
        result = _foreign().relu_foreign(x, out, where, version, opset)
        if result is not None:
            return result[0]
    if where is not True:
        return _relu_where(x, out, where, version, opset)
    allowed = version.dtypes

    if not isinstance(x, (np.ndarray, np.generic)):
        if _dispatches_itself(x):
            dtype = _dispatcher_dtype(x, version, opset)
            if out is None:
                return relu_ufunc(x)
            # The handler passes out on to numpy, which would cast into it and broadcast to it:
            # the checks of an ndarray input come first (else a pandas Series of 300 into an
            # int8 out gives 44).
            return relu_ufunc(x, out=_checked_out_of_handler(out, _ShapeAndType(x, dtype)))
        given, x = x, np.asarray(x)
        if x.dtype.kind == "O":
            raise UnsupportedTypeError(_not_numbers_message(given, version, opset))

    dtype = x.dtype
    if dtype in allowed:
        # A view of two or more axes that numpy would hand the loop row by row (x[:, :n],
        # x[::2]) runs as one kernel call over its rows (_relu_view), so that the whole call's
        # size decides threads and streaming stores; None: the ufunc's one loop call serves.
        if out is None:
            # Large outputs come from the output cache (onnx_relu.output_cache.cache_info): fresh
            # pages from the OS cost more than relu itself. None: let the ufunc allocate.
            cached = _cached_empty_like(x)
            if cached is None:
                if x.ndim > 1:
                    done = _relu_view(x, None)
                    if done is not None:
                        return done
                return relu_ufunc(x)
            if x.ndim > 1 and _relu_view(x, cached) is not None:
                return cached
            return relu_ufunc(x, out=cached)
        # Fast path for the common out= call (a plain, writeable, contiguous array of the same
        # dtype and shape): the full checks below cost more than the ufunc call on small arrays.
        if type(out) is np.ndarray and out.dtype is dtype and out.shape == x.shape:
            flags = out.flags
            if flags.writeable and flags.forc:
                if x.ndim > 1 and _relu_view(x, out) is not None:
                    return out
                return relu_ufunc(x, out=out)
        out = _checked_out(out, x)
        if out.dtype.isnative:
            if x.ndim > 1 and _relu_view(x, out) is not None:
                return out
            return relu_ufunc(x, out=out)
        return _relu_byteswapped(x, out)

    _checked_dtype(dtype, version, opset)  # raises unless an allowed type stored byte-swapped
    if dtype in version.dtypes:  # ml_dtypes was loaded unseen (see _checked_dtype): known now
        return relu(x, out, opset=opset)
    return _relu_byteswapped(x, None if out is None else _checked_out(out, x))


_ndarray = np.ndarray

_foreign_module: ModuleType | None = None


def _foreign() -> ModuleType:
    """:mod:`onnx_relu._foreign`, imported on the first input that is not a numpy array."""
    global _foreign_module
    if _foreign_module is None:
        from . import _foreign as module

        _foreign_module = module
    return _foreign_module


def _dispatcher_dtype(x: object, version: ReluVersion, opset: int | None) -> Any:
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
    _checked_dtype(dtype, version, opset)
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
    """:func:`relu` with a ``where`` mask: the same checks of ``x`` and ``out``, then the mask's."""
    if not isinstance(x, (np.ndarray, np.generic)):
        if _dispatches_itself(x):
            dtype = _dispatcher_dtype(x, version, opset)
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
    _checked_dtype(x.dtype, version, opset)
    checked_out = None if out is None else _checked_out(out, x)
    mask = _checked_where(where, x.shape)
    if x.dtype.isnative and (checked_out is None or checked_out.dtype.isnative):
        return relu_ufunc(x, out=checked_out, where=mask)
    return _relu_byteswapped(x, checked_out, mask)
