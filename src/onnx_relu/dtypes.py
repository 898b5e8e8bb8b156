"""The Relu types as Python records, and the names of numpy dtypes in ONNX terms.

One record per type some Relu version allows (:data:`RELU_TYPES`, derived from the one table,
``onnx_relu._spec``): its ONNX name (``"tensor(float)"``), its ``TensorProto`` element type
number, its numpy dtype (a type ml_dtypes provides: ml_dtypes', ``ml_dtypes.bfloat16``), its
short name (numpy's, ``"float32"``), its width in bits and, for a float, its layout. Which Relu
version allows which of them is :mod:`onnx_relu.versions`' business.

Also here: the ONNX names of the types numpy (or ml_dtypes) can hold that no Relu version allows
(:data:`REFUSED_ONNX_NAMES`, with the Relu type each converts into exactly), and the one helper
that puts a dtype in native byte order (:func:`native`). Nothing here imports onnx.

ml_dtypes is imported only when something needs one of its types (:func:`bfloat16_dtype`,
:func:`dtype_of_onnx_type` of an ml_dtypes type, ``RELU_TYPE_BY_NAME["bfloat16"].dtype``):
importing it costs several times ``import numpy``, and float32 work never needs it. An array
of an ml_dtypes type exists only once ml_dtypes is loaded, so the tables keyed by dtype
(:data:`RELU_TYPE_BY_DTYPE`, :data:`REFUSED_ONNX_NAMES`, each Relu version's dtypes) gain
ml_dtypes' types at that moment: at this module's import if ml_dtypes is loaded already,
otherwise when it is imported later (an import hook watches for it), whoever imports it.

Examples
--------
>>> from onnx_relu.dtypes import RELU_TYPE_BY_NAME, onnx_type_name, describe_dtype
>>> t = RELU_TYPE_BY_NAME["bfloat16"]
>>> t.onnx_name, t.elem_type, t.bits, t.mantissa_bits
('tensor(bfloat16)', 16, 16, 7)
>>> import numpy as np
>>> onnx_type_name(np.dtype("uint8"))
'tensor(uint8)'
>>> describe_dtype(np.dtype(">f4"))
'tensor(float) stored byte-swapped (>f4)'
"""

from __future__ import annotations

import _thread
import sys
from _thread import _local as threading_local
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from . import _spec
from .errors import UnsupportedTypeError

__all__ = [
    "ReluType",
    "RELU_TYPES",
    "RELU_TYPE_BY_ONNX_NAME",
    "RELU_TYPE_BY_NAME",
    "RELU_TYPE_BY_DTYPE",
    "REFUSED_ONNX_NAMES",
    "native",
    "onnx_type_name",
    "dtype_of_onnx_type",
    "describe_dtype",
    "lossless_target",
    "numpy_dtype",
    "bfloat16_dtype",
    "loaded_bfloat16_dtype",
    "is_bfloat16",
]


@dataclass(frozen=True)
class ReluType:
    """One tensor type that some Relu version allows.

    Attributes
    ----------
    onnx_name : str
        The ONNX type string, e.g. ``"tensor(float)"``.
    elem_type : int
        Its ``onnx.TensorProto`` element type number (``TensorProto.FLOAT == 1``).
    name : str
        The short name, numpy's: ``"float32"``, ``"bfloat16"``, ``"int8"``.
    bits : int
        The width of one element.
    mantissa_bits : int or None
        For a binary float format, the number of stored mantissa (fraction) bits; None for an
        integer type.

    Examples
    --------
    >>> from onnx_relu.dtypes import RELU_TYPE_BY_ONNX_NAME
    >>> t = RELU_TYPE_BY_ONNX_NAME["tensor(float16)"]
    >>> t.name, t.is_float, t.bits_dtype
    ('float16', True, dtype('uint16'))
    """

    onnx_name: str
    elem_type: int
    name: str
    bits: int
    mantissa_bits: int | None = None
    #: The dtype once known: None for bfloat16 until ml_dtypes is loaded (see ``dtype``).
    _dtype: np.dtype | None = field(default=None, repr=False, compare=False)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype holding it, native byte order; bfloat16 is ``ml_dtypes.bfloat16``
        (asking for it imports ml_dtypes if it is not loaded yet)."""
        if self._dtype is None:
            _load_ml_dtypes()
            assert self._dtype is not None  # set by _load_ml_dtypes
        return self._dtype

    @property
    def is_float(self) -> bool:
        """True for the float types (those with a mantissa)."""
        return self.mantissa_bits is not None

    @property
    def bits_dtype(self) -> np.dtype:
        """The unsigned integer dtype of the same width, to view the elements' bit patterns."""
        return np.dtype(f"u{self.bits // 8}")


def _relu_type(row: tuple[Any, ...]) -> ReluType:
    """The record of one row of ``_spec.TYPES``; an ml_dtypes type's dtype is left unknown."""
    name, int_t, _threshold, onnx_name, _proto, elem_type, _c_dtype, mantissa_bits, *_ = row
    bits = int("".join(c for c in int_t if c.isdigit()))  # (int16_t: 16)
    dtype = None if _ml_dtypes_attribute(row) else np.dtype(name)
    return ReluType(onnx_name, elem_type, name, bits, mantissa_bits, dtype)


def _ml_dtypes_attribute(row: tuple[Any, ...]) -> str | None:
    """The ml_dtypes attribute of a row's type (its last column), None for a numpy type."""
    attribute: str | None = row[9]
    return attribute


_ROWS = {row[0]: row for row in _spec.TYPES}

#: The types every Relu version allows between them, floats first (the order is
#: ``_spec.PYTHON_ORDER``; the records are ``_spec.TYPES``'). An ml_dtypes type's dtype
#: (bfloat16's) is filled in when ml_dtypes is loaded.
RELU_TYPES: tuple[ReluType, ...] = tuple(_relu_type(_ROWS[name]) for name in _spec.PYTHON_ORDER)

RELU_TYPE_BY_ONNX_NAME: dict[str, ReluType] = {t.onnx_name: t for t in RELU_TYPES}
RELU_TYPE_BY_NAME: dict[str, ReluType] = {t.name: t for t in RELU_TYPES}
#: dtype -> type; an ml_dtypes type is in it from when ml_dtypes is loaded (no array has it
#: before).
RELU_TYPE_BY_DTYPE: dict[np.dtype, ReluType] = {
    t._dtype: t for t in RELU_TYPES if t._dtype is not None
}
# The Relu types ml_dtypes provides, by their ml_dtypes attribute.
_ML_DTYPES_RELU_TYPES: dict[str, ReluType] = {
    attribute: RELU_TYPE_BY_NAME[row[0]]
    for row in _spec.TYPES
    if (attribute := _ml_dtypes_attribute(row)) is not None
}
_BFLOAT16 = RELU_TYPE_BY_NAME["bfloat16"]


# ONNX tensor types numpy (or ml_dtypes) can hold: (the module with the type, numpy or
# "ml_dtypes", its attribute, ONNX name, the Relu type it converts into exactly or None). Those
# the table does not list are the ones no Relu version allows (_REFUSED). An ml_dtypes type that
# the installed ml_dtypes lacks is left out.
_ONNX_TYPES_NUMPY_HOLDS: tuple[tuple[Any, str, str, str | None], ...] = (
    (np, "bool_", "tensor(bool)", "int8"),
    (np, "uint8", "tensor(uint8)", "int16"),
    (np, "uint16", "tensor(uint16)", "int32"),
    (np, "uint32", "tensor(uint32)", "int64"),
    (np, "uint64", "tensor(uint64)", None),
    (np, "complex64", "tensor(complex64)", None),
    (np, "complex128", "tensor(complex128)", None),
    ("ml_dtypes", "float8_e4m3fn", "tensor(float8e4m3fn)", "float16"),
    ("ml_dtypes", "float8_e4m3fnuz", "tensor(float8e4m3fnuz)", "float16"),
    ("ml_dtypes", "float8_e5m2", "tensor(float8e5m2)", "float16"),
    ("ml_dtypes", "float8_e5m2fnuz", "tensor(float8e5m2fnuz)", "float16"),
    ("ml_dtypes", "float8_e8m0fnu", "tensor(float8e8m0)", "float32"),
    ("ml_dtypes", "float4_e2m1fn", "tensor(float4e2m1)", "float16"),
    ("ml_dtypes", "int4", "tensor(int4)", "int8"),
    ("ml_dtypes", "uint4", "tensor(uint4)", "int8"),
    ("ml_dtypes", "int2", "tensor(int2)", "int8"),
    ("ml_dtypes", "uint2", "tensor(uint2)", "int8"),
)
_REFUSED = tuple(row for row in _ONNX_TYPES_NUMPY_HOLDS if row[2] not in RELU_TYPE_BY_ONNX_NAME)

#: numpy dtype -> ONNX name, for the ONNX types that no Relu version allows (ml_dtypes' from
#: when ml_dtypes is loaded).
REFUSED_ONNX_NAMES: dict[np.dtype, str] = {
    np.dtype(getattr(module, attr)): onnx_name
    for module, attr, onnx_name, _target in _REFUSED
    if module is np and hasattr(module, attr)
}

# ONNX name of a refused type -> the Relu type (short name) it converts into without loss.
_LOSSLESS_TARGET: dict[str, str] = {
    onnx_name: target for _module, _attr, onnx_name, target in _REFUSED if target is not None
}

_ONNX_NAME_OF: dict[np.dtype, str] = {t: r.onnx_name for t, r in RELU_TYPE_BY_DTYPE.items()}
_ONNX_NAME_OF.update(REFUSED_ONNX_NAMES)
_DTYPE_OF_ONNX_NAME: dict[str, np.dtype] = {name: dt for dt, name in _ONNX_NAME_OF.items()}
# The ONNX types, and the names numpy knows them by, that only ml_dtypes holds: asking for one
# of them loads it.
_ML_DTYPES_ONNX_NAMES = frozenset(
    [t.onnx_name for t in _ML_DTYPES_RELU_TYPES.values()]
    + [name for module, _a, name, _t in _REFUSED if module == "ml_dtypes"]
)
_ML_DTYPES_NAMES = frozenset(
    [*_ML_DTYPES_RELU_TYPES] + [attr for module, attr, _n, _t in _REFUSED if module == "ml_dtypes"]
)


# ---- ml_dtypes, loaded when first needed ----------------------------------------------------
# Whoever imports ml_dtypes (this package, the user, onnx), its types join the tables above,
# and the callbacks registered with _when_ml_dtypes_loaded run (each Relu version's dtypes,
# the ufunc's loops of ml_dtypes' types), once, under the state's lock. ml_dtypes is never
# imported while the lock is held: its import runs the callbacks, which take the lock (a
# re-entrant one, for a callback that asks for a table).


class _MlDtypesState:
    """What one execution of this module shares with ml_dtypes' import: the tables to fill in,
    the callbacks to run, whether that is done.

    One per execution of this file: ``importlib.reload`` runs it again in the same namespace,
    and removing ``onnx_relu*`` from ``sys.modules`` then importing again runs it in a new one;
    the modules that imported the earlier tables (and callbacks registered with them) still hold
    them, so the one import hook fills every state in (see :class:`_MlDtypesWatcher`).
    """

    def __init__(self) -> None:
        self.lock = _thread.RLock()
        self.done = False
        self.callbacks: list[Callable[[dict[str, np.dtype]], object]] = []
        # (the tables of this execution; the functions below read this module's globals,
        # which a reload replaces, so the state keeps its own references)
        self.relu_types = dict(_ML_DTYPES_RELU_TYPES)
        self.by_dtype = RELU_TYPE_BY_DTYPE
        self.refused = REFUSED_ONNX_NAMES
        self.onnx_name_of = _ONNX_NAME_OF
        self.dtype_of_onnx_name = _DTYPE_OF_ONNX_NAME

    def loaded(self, ml_dtypes: ModuleType) -> bool:
        """Add ml_dtypes' types to the tables and run the callbacks, once; True once done.
        False (nothing changed) for a module named ml_dtypes that lacks one of the Relu types
        (a file or folder of that name shadows the package): no array can have them then."""
        with self.lock:
            if self.done:
                return True
            if not all(hasattr(ml_dtypes, attr) for attr in self.relu_types):
                return False
            dtypes = {t.name: np.dtype(getattr(ml_dtypes, a)) for a, t in self.relu_types.items()}
            for relu_type in self.relu_types.values():
                dtype = dtypes[relu_type.name]
                object.__setattr__(relu_type, "_dtype", dtype)  # (frozen: set once, here)
                self.by_dtype[dtype] = relu_type
                self.onnx_name_of[dtype] = relu_type.onnx_name
            for module, attr, onnx_name, _target in _REFUSED:
                if module == "ml_dtypes" and hasattr(ml_dtypes, attr):
                    self.refused[np.dtype(getattr(ml_dtypes, attr))] = onnx_name
            self.onnx_name_of.update(self.refused)
            self.dtype_of_onnx_name.update({n: dt for dt, n in self.onnx_name_of.items()})
            for callback in self.callbacks:  # each is idempotent: a failure retries them all
                callback(dtypes)
            self.done = True
            self.callbacks.clear()
            return True


_state = _MlDtypesState()


def _when_ml_dtypes_loaded(callback: Callable[[dict[str, np.dtype]], object]) -> None:
    """Call ``callback(dtypes)`` now if ml_dtypes is loaded, else once it is; ``dtypes`` maps
    the name of each Relu type that ml_dtypes provides (``"bfloat16"``) to its dtype."""
    with _state.lock:
        done = _state.done
        if not done:
            _state.callbacks.append(callback)
    if done:
        callback({t.name: t.dtype for t in _ML_DTYPES_RELU_TYPES.values()})
    else:  # loaded and not seen by the hook (being imported, or the hook failed): run them
        _catch_up_with_ml_dtypes()


def _shadowed(ml_dtypes: ModuleType) -> UnsupportedTypeError:
    where = getattr(ml_dtypes, "__file__", None) or getattr(ml_dtypes, "__path__", None)
    missing = ", ".join(a for a in _ML_DTYPES_RELU_TYPES if not hasattr(ml_dtypes, a))
    return UnsupportedTypeError(
        f"{missing} needs the ml_dtypes package, but the module named ml_dtypes that Python"
        f" imported ({where}) has no {missing}: a file or folder of that name earlier on"
        " sys.path shadows the package; rename it, or run from another folder"
    )


def _load_ml_dtypes() -> None:
    """Import ml_dtypes (outside the lock: see above) and make sure its types are known.

    Raises
    ------
    UnsupportedTypeError
        if the module named ml_dtypes lacks a Relu type (a shadowing file or folder).
    """
    import ml_dtypes

    if not _state.loaded(ml_dtypes):
        raise _shadowed(ml_dtypes)


def _catch_up_with_ml_dtypes() -> bool:
    """True if ml_dtypes' types were not known yet and are now: ml_dtypes was loaded after all
    without the hook seeing it (it failed, or was removed). The callers are the slow paths of
    the look-ups by dtype (a dtype not found): a bfloat16 array is one of them until then.
    False, changing nothing, for a shadowing module named ml_dtypes (no array has its types)."""
    if _state.done:
        return False
    ml_dtypes = sys.modules.get("ml_dtypes")
    return ml_dtypes is not None and _state.loaded(ml_dtypes)


def numpy_dtype(dtype: object) -> np.dtype:
    """``numpy.dtype(dtype)``, where a name of an ml_dtypes type (``"bfloat16"``) first loads
    ml_dtypes, so that the answer does not depend on whether something imported it already.

    Raises
    ------
    UnsupportedTypeError
        for such a name when the module named ml_dtypes lacks a Relu type (a shadowing file).
    TypeError, ValueError, SyntaxError
        numpy's, for what is not a dtype.

    Examples
    --------
    >>> numpy_dtype("bfloat16").name, numpy_dtype("f4").name
    ('bfloat16', 'float32')
    """
    if isinstance(dtype, str) and dtype in _ML_DTYPES_NAMES and not _state.done:
        _load_ml_dtypes()
    return np.dtype(dtype)  # type: ignore[call-overload,no-any-return]


def bfloat16_dtype() -> np.dtype:
    """``ml_dtypes.bfloat16`` as a numpy dtype, importing ml_dtypes if it is not loaded yet.

    Examples
    --------
    >>> bfloat16_dtype().name
    'bfloat16'
    """
    return _BFLOAT16.dtype


def loaded_bfloat16_dtype() -> np.dtype | None:
    """``ml_dtypes.bfloat16`` as a numpy dtype if ml_dtypes is loaded, else None (no array can
    have that type then); imports nothing.

    Examples
    --------
    >>> import ml_dtypes
    >>> loaded_bfloat16_dtype() == ml_dtypes.bfloat16
    True
    """
    if _BFLOAT16._dtype is None:
        _catch_up_with_ml_dtypes()
    return _BFLOAT16._dtype


def is_bfloat16(dtype: np.dtype) -> bool:
    """True if ``dtype`` is ``ml_dtypes.bfloat16`` in native byte order; imports nothing.

    Examples
    --------
    >>> import numpy as np
    >>> is_bfloat16(np.dtype("float32"))
    False
    """
    bfloat16 = loaded_bfloat16_dtype()
    return bfloat16 is not None and dtype == bfloat16


#: The attribute that marks onnx-relu's import hook in ``sys.meta_path``, whichever execution of
#: this module put it there (an instance of another execution's class is one too).
_WATCHER_MARK = "_onnx_relu_ml_dtypes_watcher"


class _MlDtypesWatcher:
    """The one ``sys.meta_path`` finder that sees ``import ml_dtypes`` and, once ml_dtypes has
    run, fills in every :class:`_MlDtypesState` it was given and removes itself; every other
    import it passes on at once.

    It finds ml_dtypes' spec with the other finders and wraps the loader only around
    ``exec_module``: the module's ``__loader__`` and ``__spec__.loader`` are the real loader.
    Finders that carry the mark (another execution's watcher, which should not be there) are
    skipped, and a look-up that comes back to this one in the same thread answers None, so the
    look-up never recurses.
    """

    _onnx_relu_ml_dtypes_watcher = True

    def __init__(self) -> None:
        self.states: list[_MlDtypesState] = []
        self._busy = threading_local()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "ml_dtypes" or getattr(self._busy, "active", False):
            return None
        self._busy.active = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                find_spec = getattr(finder, "find_spec", None)
                if find_spec is None or getattr(finder, _WATCHER_MARK, False):
                    continue
                spec = find_spec(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.active = False
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _MlDtypesLoader(spec.loader, self)
        return spec

    def loaded(self, module: ModuleType) -> None:
        """ml_dtypes has run: leave ``sys.meta_path``, then fill in every state (those of any
        other marked finder there too, which then leaves as well)."""
        marked = [f for f in sys.meta_path if getattr(f, _WATCHER_MARK, False)]
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self and f not in marked]
        states = [*self.states]
        for finder in marked:
            states += [s for s in getattr(finder, "states", ()) if s not in states]
        for state in states:
            try:
                state.loaded(module)
            except Exception:  # noqa: BLE001 - never fail the user's import of ml_dtypes:
                pass  # the next look-up of an ml_dtypes type catches up and raises the real error


class _MlDtypesLoader:
    """ml_dtypes' own loader, followed by the watcher's :meth:`_MlDtypesWatcher.loaded`."""

    def __init__(self, loader: Any, watcher: Any) -> None:
        self._loader = loader
        self._watcher = watcher

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._watcher.loaded(module)


def _watch_for_ml_dtypes(state: _MlDtypesState) -> None:
    """Have the one watcher in ``sys.meta_path`` fill ``state`` in: the one an earlier execution
    of this module put there if it is still waiting, else a new one (any other marked finder,
    of an execution that cannot take states, is taken out)."""
    marked = [f for f in sys.meta_path if getattr(f, _WATCHER_MARK, False)]
    for finder in marked:
        states = getattr(finder, "states", None)
        if isinstance(states, list):
            states.append(state)
            return
    watcher = _MlDtypesWatcher()
    watcher.states.append(state)
    sys.meta_path[:] = [watcher, *(f for f in sys.meta_path if f not in marked)]


if "ml_dtypes" in sys.modules:
    _catch_up_with_ml_dtypes()  # (a shadowing module: left as it is, see _MlDtypesState.loaded)
else:
    _watch_for_ml_dtypes(_state)


def native(dtype: np.dtype) -> np.dtype:
    """``dtype`` in native byte order (itself when it already is).

    Examples
    --------
    >>> import numpy as np
    >>> native(np.dtype(">i4")) == np.dtype("int32")
    True
    """
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def onnx_type_name(dtype: np.dtype) -> str | None:
    """The ONNX tensor type of a native-order numpy dtype, or None if ONNX has no such type."""
    name = _ONNX_NAME_OF.get(dtype)
    if name is None:
        if dtype.kind in "US":
            return "tensor(string)"
        if _catch_up_with_ml_dtypes():
            return _ONNX_NAME_OF.get(dtype)
    return name


def dtype_of_onnx_type(onnx_type: str) -> np.dtype | None:
    """The numpy dtype of an ONNX tensor type (bfloat16: ml_dtypes.bfloat16); None if none.

    Examples
    --------
    >>> dtype_of_onnx_type("tensor(int16)") == np.int16
    True
    >>> dtype_of_onnx_type("tensor(string)") is None
    True
    """
    dtype = _DTYPE_OF_ONNX_NAME.get(onnx_type)
    if dtype is None and onnx_type in _ML_DTYPES_ONNX_NAMES and not _state.done:
        _load_ml_dtypes()
        dtype = _DTYPE_OF_ONNX_NAME.get(onnx_type)
    return dtype


def describe_dtype(dtype: np.dtype) -> str:
    """A dtype named for an error message: its ONNX type where it has one, else numpy's name."""
    name = onnx_type_name(native(dtype))
    if name is None:
        return f"numpy dtype {dtype.name!r} ({dtype.str}), which has no ONNX tensor type"
    if not dtype.isnative:
        return f"{name} stored byte-swapped ({dtype.str})"
    return name


def lossless_target(onnx_type: str) -> str | None:
    """The Relu type (short name) a refused ONNX type converts into exactly, or None.

    Examples
    --------
    >>> lossless_target("tensor(uint8)"), lossless_target("tensor(uint64)")
    ('int16', None)
    """
    return _LOSSLESS_TARGET.get(onnx_type)
