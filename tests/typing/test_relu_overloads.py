"""What a type checker infers from ``relu``: ``make typecheck`` runs mypy --strict and
basedpyright over this file; pytest runs it, so the inferred types are also the run-time ones.

Each overload of :func:`onnx_relu.relu` has its ``assert_type`` (evaluated by the checkers
only): a numpy array gives a numpy array of the same scalar type, a numpy scalar its type, an
Array API array (jax here; torch and array-api-strict alike) its own type, numbers an array, and
``out=`` its own type. A ``str`` matches no overload: the checkers flag it (the line carries the
ignore comment each checker needs, and ``warn_unused_ignores`` / ``reportUnnecessaryTypeIgnore``
would fail if it were not flagged).
"""

# pyright: reportUnnecessaryTypeIgnoreComment=true

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from numpy.typing import NDArray

from onnx_relu import UnsupportedTypeError, relu

if TYPE_CHECKING:
    from typing import assert_type

    import jax


def numpy_arrays(x32: NDArray[np.float32], x8: NDArray[np.int8]) -> None:
    if TYPE_CHECKING:
        assert_type(relu(x32), NDArray[np.float32])
        assert_type(relu(x8, opset=14), NDArray[np.int8])
        assert_type(relu(np.float64(-1.0)), np.float64)
        assert_type(relu([-1.0, 2.0]), NDArray[Any])
        assert_type(relu([[1, -2], [3, 4]]), NDArray[Any])
        out = np.empty_like(x32)
        assert_type(relu(x32, out=out), NDArray[np.float32])


def jax_arrays(x: jax.Array) -> None:
    if TYPE_CHECKING:
        assert_type(relu(x), jax.Array)


def refused_at_check_time() -> None:
    relu("hello")  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def test_inferred_types_hold_at_run_time() -> None:
    x = np.array([-1.0, 2.0], np.float32)
    assert relu(x).dtype == np.float32
    assert isinstance(relu(np.float64(-1.0)), np.float64)
    assert relu([-1.0, 2.0]).tolist() == [0.0, 2.0]
    jnp = pytest.importorskip("jax.numpy")
    import jax

    assert isinstance(relu(jnp.array([-1.0, 2.0])), jax.Array)
    with pytest.raises(UnsupportedTypeError, match=r"tensor\(string\)"):
        refused_at_check_time()
