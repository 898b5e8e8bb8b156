"""The refusals of the inputs fed to a model, in the same words whichever engine runs it: the
backend (:mod:`.backend`) and onnxruntime (``onnx-relu run --engine onnxruntime``).

Nothing here imports onnx.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import numpy as np

from ..dtypes import describe_dtype, dtype_of_onnx_type, native, onnx_type_name
from ..errors import InputTypeMismatchError, ModelInputError

__all__ = ["check_feed_names", "check_feed_type"]


def check_feed_names(
    given: Iterable[str], required: Sequence[str], overridable: Collection[str] = ()
) -> None:
    """Refuse a name that is no graph input (nor an initializer that may be overridden), then
    a graph input not fed.

    Raises
    ------
    ModelInputError
        naming the unknown or missing inputs and the model's inputs.

    Examples
    --------
    >>> check_feed_names(["x", "q"], ["x"])
    Traceback (most recent call last):
    ...
    onnx_relu.errors.ModelInputError: unknown input name(s) ['q']; the model's inputs are ['x']
    """
    given = list(given)
    unknown = [name for name in given if name not in required and name not in overridable]
    if unknown:
        raise ModelInputError(
            f"unknown input name(s) {unknown}; the model's inputs are {list(required)}"
            + (
                f" (initializers that may be overridden: {sorted(overridable)})"
                if overridable
                else ""
            )
        )
    missing = [name for name in required if name not in given]
    if missing:
        raise ModelInputError(f"missing input(s) {missing}; the model needs {list(required)}")


def check_feed_type(name: str, declared: str, dtype: np.dtype) -> None:
    """Refuse an input of another type than its declared ONNX type: nothing is ever cast.

    Raises
    ------
    InputTypeMismatchError
        naming the input, both types and the conversion to make.

    Examples
    --------
    >>> check_feed_type("x", "tensor(float)", np.dtype("float64"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    onnx_relu.errors.InputTypeMismatchError: input 'x' is declared tensor(float) but was fed ...
    """
    if onnx_type_name(native(dtype)) == declared:
        return
    raise InputTypeMismatchError(
        f"input {name!r} is declared {declared} but was fed {describe_dtype(dtype)};"
        f" onnx-relu never casts: convert it explicitly{_conversion_hint(declared)}"
    )


def _conversion_hint(onnx_type: str) -> str:
    dtype = dtype_of_onnx_type(onnx_type)
    if dtype is None:
        return ""
    if dtype.name == "bfloat16":
        return ", e.g. x.astype(ml_dtypes.bfloat16)"
    return f", e.g. x.astype(numpy.{dtype.name})"
