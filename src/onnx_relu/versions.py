"""The one table of Relu versions: which opsets select which version, and what each allows.

Everything in onnx-relu that asks "is this type allowed here?" asks this module. The table is
checked against ``onnx.defs.get_schema("Relu", v)`` by the test suite.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ._onnx_types import RELU_TYPE_DTYPES
from .errors import InvalidOpsetError

__all__ = [
    "RELU_VERSIONS",
    "LATEST_VERSION",
    "ReluVersion",
    "relu_version",
    "version_for_opset",
    "check_opset",
]

_FLOATS = ("tensor(double)", "tensor(float)", "tensor(float16)")
_SIGNED_INTS = ("tensor(int16)", "tensor(int32)", "tensor(int64)", "tensor(int8)")


@dataclass(frozen=True)
class ReluVersion:
    """One version of the ai.onnx Relu operator.

    Attributes
    ----------
    since : int
        The opset version that introduced it; it stays in force until the next version.
    types : tuple of str
        The allowed input/output types in ONNX terms, sorted, e.g. ``"tensor(float)"``.
    attributes : tuple of str
        The attribute names the version declares (only Relu-1 has one, ``consumed_inputs``).
    """

    since: int
    types: tuple[str, ...]
    attributes: tuple[str, ...] = ()

    @property
    def dtypes(self) -> frozenset[np.dtype]:
        """The allowed types as (native byte order) numpy dtypes."""
        return frozenset(RELU_TYPE_DTYPES[t] for t in self.types)

    @property
    def name(self) -> str:
        return f"Relu-{self.since}"


#: since-version -> version; the single source of truth.
RELU_VERSIONS: dict[int, ReluVersion] = {
    1: ReluVersion(1, _FLOATS, ("consumed_inputs",)),
    6: ReluVersion(6, _FLOATS),
    13: ReluVersion(13, tuple(sorted(_FLOATS + ("tensor(bfloat16)",)))),
    14: ReluVersion(14, tuple(sorted(_FLOATS + ("tensor(bfloat16)",) + _SIGNED_INTS))),
}

LATEST_VERSION: ReluVersion = RELU_VERSIONS[max(RELU_VERSIONS)]


def check_opset(opset: object) -> int:
    """Validate an ai.onnx opset version: an integer >= 1 (bool is refused).

    Raises :class:`~onnx_relu.errors.InvalidOpsetError` (a ``TypeError`` and a ``ValueError``).
    """
    if isinstance(opset, bool):
        raise InvalidOpsetError(f"opset must be an integer >= 1, got {opset!r}")
    try:
        value = operator.index(opset)
    except TypeError:
        raise InvalidOpsetError(f"opset must be an integer >= 1, got {opset!r}") from None
    if value < 1:
        raise InvalidOpsetError(f"opset must be an integer >= 1, got {value}")
    return value


def version_for_opset(opset: int | None) -> ReluVersion:
    """The Relu version in force in a model of the given ai.onnx opset (None: the latest).

    Examples
    --------
    >>> version_for_opset(12).name
    'Relu-6'
    >>> version_for_opset(None).since
    14
    """
    if opset is None:
        return LATEST_VERSION
    value = check_opset(opset)
    return RELU_VERSIONS[max(v for v in RELU_VERSIONS if v <= value)]


def relu_version(opset: int | None) -> int:
    """The since-version of the Relu in force at ``opset`` (1, 6, 13 or 14)."""
    return version_for_opset(opset).since


def first_version_allowing(onnx_type: str) -> ReluVersion | None:
    """The earliest Relu version that allows ``onnx_type``, or None if none does."""
    for since in sorted(RELU_VERSIONS):
        if onnx_type in RELU_VERSIONS[since].types:
            return RELU_VERSIONS[since]
    return None
