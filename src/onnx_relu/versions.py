"""The one table of Relu versions: which opsets select which version, and what each allows.

Everything in onnx-relu that asks "is this type allowed here?" asks this module, and words its
refusal with this module's message builders (:func:`unsupported_type_message`,
:func:`opset_phrase`). The table is checked against ``onnx.defs.get_schema("Relu", v)`` by the
test suite; the types themselves (ONNX names, numpy dtypes) are :mod:`onnx_relu.dtypes`'.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from . import _spec
from .dtypes import (
    RELU_TYPE_BY_ONNX_NAME,
    _when_ml_dtypes_loaded,
    describe_dtype,
    lossless_target,
    native,
    onnx_type_name,
)
from .errors import InvalidOpsetError

__all__ = [
    "RELU_VERSIONS",
    "LATEST_VERSION",
    "ReluVersion",
    "relu_version",
    "version_for_opset",
    "check_opset",
    "first_version_allowing",
    "opset_phrase",
    "unsupported_type_message",
]


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
    dtypes : frozenset of numpy.dtype
        The allowed types as (native byte order) numpy dtypes, computed from ``types``;
        an ml_dtypes type (bfloat16) is in it from when ml_dtypes is loaded (no array
        can have it before).
    """

    since: int
    types: tuple[str, ...]
    attributes: tuple[str, ...] = ()
    dtypes: frozenset[np.dtype] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._set_dtypes()

    def _set_dtypes(self) -> None:
        """(Re)compute ``dtypes`` from the types whose dtype is known (all, once ml_dtypes is
        loaded): at creation and when ml_dtypes is loaded."""
        types = (RELU_TYPE_BY_ONNX_NAME[t] for t in self.types)
        allowed = frozenset(t._dtype for t in types if t._dtype is not None)
        object.__setattr__(self, "dtypes", allowed)  # (frozen: set here only)

    @property
    def name(self) -> str:
        return f"Relu-{self.since}"

    @property
    def opsets(self) -> str:
        """The opsets at which this version is in force: ``"1-5"``, ``"13"``, ``"14 and later"``."""
        later = [v for v, _ in _spec.VERSIONS if v > self.since]
        if not later:
            return f"{self.since} and later"
        last = min(later) - 1
        return f"{self.since}" if last == self.since else f"{self.since}-{last}"


#: since-version -> version, from the one table (``onnx_relu._spec``: each type's first version).
RELU_VERSIONS: dict[int, ReluVersion] = {
    since: ReluVersion(since, tuple(sorted(t[3] for t in _spec.TYPES if t[8] <= since)), attributes)
    for since, attributes in _spec.VERSIONS
}

LATEST_VERSION: ReluVersion = RELU_VERSIONS[max(RELU_VERSIONS)]


def _with_ml_dtypes(_dtypes: object) -> None:
    for version in RELU_VERSIONS.values():
        version._set_dtypes()


_when_ml_dtypes_loaded(_with_ml_dtypes)


def check_opset(opset: object) -> int:
    """Validate an ai.onnx opset version: an integer >= 1 (bool and ``numpy.bool_`` are refused).

    Raises :class:`~onnx_relu.errors.InvalidOpsetError` (a ``TypeError`` and a ``ValueError``).
    """
    # numpy.bool_ too: numpy < 2.3 gives it an __index__ that warns instead of refusing.
    if isinstance(opset, (bool, np.bool_)):
        raise InvalidOpsetError(f"opset must be an integer >= 1, got {opset!r}")
    try:
        value = operator.index(opset)  # type: ignore[arg-type]  # TypeError refused below
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


def opset_phrase(version: ReluVersion, opset: int | None) -> str:
    """How a message names the Relu version in force: with its opset, or as the latest.

    Examples
    --------
    >>> opset_phrase(version_for_opset(12), 12)
    'Relu-6 (in force at opset 12)'
    >>> opset_phrase(LATEST_VERSION, None)
    'Relu-14 (the latest version, opset >= 14)'
    """
    if opset is None:
        return f"{version.name} (the latest version, opset >= {version.since})"
    return f"{version.name} (in force at opset {opset})"


def unsupported_type_message(dtype: np.dtype, version: ReluVersion, opset: int | None) -> str:
    """The error text for a dtype that ``version`` (in force at ``opset``) does not allow.

    It names the type in ONNX terms, the version, the opset and the allowed types, then either
    the first version that allows the type or, where none does, the lossless conversion to make.

    Examples
    --------
    >>> import numpy as np
    >>> print(unsupported_type_message(np.dtype("uint8"), version_for_opset(6), 6))
    ... # doctest: +NORMALIZE_WHITESPACE
    Relu-6 (in force at opset 6) does not allow tensor(uint8); allowed types: tensor(double),
    tensor(float), tensor(float16). No Relu version allows it, and onnx-relu never casts
    silently: convert explicitly, e.g. x.astype(numpy.int16).
    """
    what = describe_dtype(dtype)
    allowed = ", ".join(version.types)
    message = f"{opset_phrase(version, opset)} does not allow {what}; allowed types: {allowed}."
    onnx_name = onnx_type_name(native(dtype))
    first = first_version_allowing(onnx_name) if onnx_name else None
    if first is not None:
        message += f" {onnx_name} is allowed from {first.name} (opset >= {first.since})."
    else:
        message += " No Relu version allows it, and onnx-relu never casts silently"
        target = lossless_target(onnx_name or "")
        message += f": convert explicitly, e.g. x.astype(numpy.{target})." if target else "."
    return message
