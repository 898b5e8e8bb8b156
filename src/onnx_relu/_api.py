"""The public ``relu`` function: validation in Python, computation in the compiled ufunc."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

import numpy as np

# First: loading the kernel's settings applies the ONNX_RELU_* variables before any call.
from . import tuning as _tuning  # noqa: F401
from ._numpy_path import checked_dtype, relu_numpy
from ._relu import _empty_like as _cached_empty_like
from ._relu import _relu_view
from ._relu import relu as relu_ufunc
from .versions import LATEST_VERSION, version_for_opset

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
    return checked_dtype(dtype, version_for_opset(opset), opset)


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
    # The small call first, with nothing to look up: an exact ndarray of an allowed type and no
    # out, where or opset; the checks below cost more than the ufunc itself on a few elements
    # (BENCHMARKS.md). Everything else is checked, and what still needs a new array of its own
    # type meets the small call below.
    if not (
        type(x) is _ndarray
        and out is None
        and where is True
        and opset is None
        and x.dtype in LATEST_VERSION.dtypes
    ):
        version = LATEST_VERSION if opset is None else version_for_opset(opset)
        done = None
        if not isinstance(x, (np.ndarray, np.generic)):
            # Arrays of other libraries (DLPack, the Array API, jax, scipy.sparse, pyarrow, and
            # pandas or xarray data whose types numpy does not hold): the caller's type back.
            # None: an array-like numpy converts or that handles ufuncs itself.
            done = _foreign().relu_foreign(x, out, where, version, opset)
        if done is None:
            done = relu_numpy(x, out, where, version, opset)
        if isinstance(done, tuple):
            return done[0]
        x = done  # a numpy array or scalar of an allowed native type, for a new result
    # Large outputs come from the output cache (onnx_relu.output_cache.cache_info): fresh pages
    # from the OS cost more than relu itself. None: let the ufunc allocate. A view of two or
    # more axes that numpy would hand the loop row by row (x[:, :n], x[::2]) runs as one kernel
    # call over its rows (_relu_view), so that the whole call's size decides threads and
    # streaming stores; None: the ufunc's one loop call serves.
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


_ndarray = np.ndarray

_foreign_module: ModuleType | None = None


def _foreign() -> ModuleType:
    """:mod:`onnx_relu._foreign`, imported on the first input that is not a numpy array."""
    global _foreign_module
    if _foreign_module is None:
        from . import _foreign as module

        _foreign_module = module
    return _foreign_module
