"""The one rule for names a module of onnx-relu loads on first use (PEP 562).

The package, ``onnx_relu.onnx`` and ``onnx_relu.files`` each map some
of their names to the module that defines them and call :func:`lazy_attribute` from their
module-level ``__getattr__``: the defining module is imported then, not when the package is (the
command's start-up and ``import onnx_relu`` stay light), and the value is kept in the module's
globals so that later look-ups skip ``__getattr__``. The layers' faces take both hooks,
``__getattr__`` and ``__dir__``, from :func:`lazy_face`; the package's own face writes its two
out (it also loads submodules, and ``import onnx_relu`` then imports this module only on first
use). Imports nothing at import time.
"""

from __future__ import annotations

# Not typing.TYPE_CHECKING: importing typing costs the command's start-up more than this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping


def lazy_attribute(
    module_globals: MutableMapping[str, object],
    exports: Mapping[str, str],
    name: str,
    *,
    extra: bool = False,
) -> object:
    """``name``'s value from the module ``exports`` maps it to (relative to the calling module's
    package), imported now and kept in ``module_globals``.

    ``AttributeError`` for a name ``exports`` does not hold. With ``extra``, a missing optional
    dependency of the defining module raises the one :class:`onnx_relu.MissingExtraError`
    naming the extra.

    Examples
    --------
    >>> namespace = {"__name__": "onnx_relu", "__package__": "onnx_relu"}
    >>> lazy_attribute(namespace, {"ThreadCountError": ".errors"}, "ThreadCountError").__name__
    'ThreadCountError'
    >>> "ThreadCountError" in namespace
    True
    """
    module_name = exports.get(name)
    qualified = module_globals["__name__"]
    if module_name is None:  # (``from .x import y`` also asks for __path__ and the like)
        raise AttributeError(f"module {qualified!r} has no attribute {name!r}")
    import contextlib
    import importlib

    context: contextlib.AbstractContextManager[object | None] = contextlib.nullcontext()
    if extra:
        from ._extras import extra_needed

        context = extra_needed(f"{qualified}.{name}")
    with context:
        module = importlib.import_module(module_name, str(module_globals["__package__"]))
        value = getattr(module, name)
    module_globals[name] = value
    return value


def lazy_face(
    module_globals: MutableMapping[str, object],
    exports: Mapping[str, str],
    *,
    extra: bool = False,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` (PEP 562) of a face whose ``exports``
    (name -> the module that defines it) are loaded on first use by :func:`lazy_attribute`
    (``extra``: as there) and listed by ``dir()`` before they are.

    Examples
    --------
    >>> namespace = {"__name__": "onnx_relu", "__package__": "onnx_relu"}
    >>> getattr_, dir_ = lazy_face(namespace, {"ThreadCountError": ".errors"})
    >>> dir_()
    ['ThreadCountError', '__name__', '__package__']
    >>> getattr_("ThreadCountError") is namespace["ThreadCountError"]
    True
    """

    def __getattr__(name: str) -> object:
        return lazy_attribute(module_globals, exports, name, extra=extra)

    def __dir__() -> list[str]:
        return sorted({*module_globals, *exports})

    return __getattr__, __dir__
