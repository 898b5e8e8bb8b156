"""An array-like that handles ufuncs itself, standing in for pandas.Series and xarray.DataArray.

pandas and xarray are not test dependencies; what matters to ``onnx_relu.relu`` is what they do
with a ufunc call: unwrap their inputs, pass ``out=`` on to numpy unchanged (so numpy would
cast into it and broadcast to it), and wrap the result.
"""

from __future__ import annotations

import numpy as np

__all__ = ["UfuncHandler", "UfuncHandlingTable"]


class UfuncHandler:
    """Wraps an ndarray (``values``); handles ufuncs as pandas does.

    Examples
    --------
    >>> import numpy as np
    >>> wrapped = UfuncHandler([-1.0, 2.0])
    >>> np.negative(wrapped).values.tolist()
    [1.0, -2.0]
    """

    def __init__(self, values: object) -> None:
        self.values = np.asarray(values)
        self.calls = 0

    def __repr__(self) -> str:
        return f"UfuncHandler({self.values!r})"

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self.calls += 1
        inputs = tuple(i.values if isinstance(i, UfuncHandler) else i for i in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(o.values if isinstance(o, UfuncHandler) else o for o in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return UfuncHandler(result)


class UfuncHandlingTable(UfuncHandler):
    """A table of columns (a pandas DataFrame stand-in): ``dtypes`` per column, no ``dtype``."""

    def __init__(self, columns: list[np.ndarray]) -> None:
        super().__init__(
            np.stack([np.asarray(c) for c in columns], axis=1) if columns else np.empty((0, 0))
        )
        self.column_dtypes = [np.asarray(c).dtype for c in columns]

    @property
    def dtype(self):  # pandas DataFrames have none
        raise AttributeError("dtype")

    @property
    def dtypes(self) -> list[np.dtype]:
        return self.column_dtypes
