"""The one rule for a missing optional package: :class:`~onnx_relu.errors.MissingExtraError`.

onnx, onnxruntime, dask, distributed, zarr, tqdm and matplotlib come with onnx-relu's optional
extras (pyproject.toml's ``[project.optional-dependencies]``) and are imported only where they
are used. Every place that imports one does it inside :class:`extra_needed`, which turns the
``ModuleNotFoundError`` of a missing one into a ``MissingExtraError`` (still a
``ModuleNotFoundError``, with the same ``name``) whose one-line message names the missing
module, the extra that provides it and the command that installs that extra here:

- onnx-relu installed from a clone into the clone's ``.venv`` (``make demo``, ``make test``):
  ``make install EXTRAS=onnx`` (uv, from uv.lock, at the locked versions);
- installed from a wheel file (``make wheel``): ``pip install "dist/onnx_relu-...whl[onnx]"``,
  naming that wheel (``uv pip install --python ...`` where the environment has no pip);
- installed from a source folder into another environment: ``pip install "FOLDER[onnx]"``;
- otherwise (from an index): ``pip install "onnx-relu[onnx]"``.

Which extra provides a module is read from the installed package's metadata (the first extra
that requires it), so it is written once, in pyproject.toml. The ``onnx-relu`` command prints
the message as its one error line (exit status 1).

Kept in the core and light: nothing here is imported before an import fails.

Examples
--------
>>> from onnx_relu._extras import extra_needed
>>> try:
...     with extra_needed("reading .pb files"):
...         raise ModuleNotFoundError("No module named 'onnx'", name="onnx")
... except ModuleNotFoundError as error:
...     print(type(error).__name__, error.name, error.extra)
MissingExtraError onnx onnx
"""

from __future__ import annotations

import os
import sys

# (not typing.TYPE_CHECKING: importing typing costs the command line's start-up more)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "MissingExtraError",
    "extra_needed",
    "require_modules",
    "missing_extra_error",
    "command_line_message",
    "extra_of",
    "install_command",
]

#: The distribution onnx-relu is installed as.
_DISTRIBUTION = "onnx-relu"
#: Importable names whose distribution is spelled otherwise.
_DISTRIBUTION_OF_MODULE = {"google": "protobuf"}
#: Extras that are sets for developers, never the one to name for a module.
_NOT_NAMED = ("test", "docs")


class MissingExtraError(ModuleNotFoundError):
    """A module that one of onnx-relu's optional extras installs (onnx, onnxruntime, dask,
    zarr, tqdm, matplotlib) is missing where it is needed. Not an
    :class:`~onnx_relu.errors.OnnxReluError` (it is about the environment, not the data): a
    ``ModuleNotFoundError``, so ``except ImportError`` still catches it. The message names the
    module, the extra and the command that installs it here. (Defined here, with the rule that
    makes it; imported, documented and caught as :class:`onnx_relu.errors.MissingExtraError`.)

    Attributes
    ----------
    name : str
        The missing module (as ``ModuleNotFoundError.name``).
    extra : str
        The extra that installs it (``"onnx"``, ``"ort"``, ``"dask"``, ``"cli"``, ``"bench"``).
    requirement : str
        The extra's requirement for it (``"onnx>=1.19"``).
    needed_for : str or None
        What needed it (``"onnx_relu.check_model"``), if said.
    """

    __module__ = "onnx_relu.errors"  # its public home: tracebacks, pickles and docs say so

    def __init__(
        self,
        message: str,
        *,
        name: str = "",
        extra: str = "",
        requirement: str = "",
        needed_for: str | None = None,
    ) -> None:
        super().__init__(message, name=name)
        self.extra = extra
        self.requirement = requirement
        self.needed_for = needed_for

    @classmethod
    def from_error(
        cls, error: BaseException, needed_for: str | None = None
    ) -> MissingExtraError | None:
        """``error`` as a MissingExtraError if it reports a missing module that one of
        onnx-relu's extras installs (given ``needed_for`` if it had none); None for any other
        error, which the caller re-raises as it is (:func:`missing_extra_error`)."""
        return missing_extra_error(error, needed_for)


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _requirements() -> list[tuple[str, str, str]]:
    """(extra, distribution, requirement) for every requirement of an extra, in metadata order;
    the requirement without its environment marker (``python_version < "3.15"``), which is
    noise to a reader; where the marker leaves this Python out, the requirement says so."""
    import importlib.metadata
    import re

    try:
        lines = importlib.metadata.requires(_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return []
    found = []
    for line in lines:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        name = re.match(r"\s*([A-Za-z0-9._-]+)", requirement)
        if extra is None or name is None:
            continue
        text = requirement.strip()
        if not _python_included(marker):
            text += f" (not installed on Python {sys.version_info[0]}.{sys.version_info[1]})"
        found.append((extra[1], _normalized(name[1]), text))
    return found


def _python_included(marker: str) -> bool:
    """Whether this Python satisfies every ``python_version`` clause of ``marker`` (the other
    clauses are taken as true).

    Examples
    --------
    >>> _python_included('python_version < "3.0" and extra == "ort"')
    False
    >>> _python_included('extra == "ort"')
    True
    """
    import operator
    import re

    compare = {
        "<": operator.lt,
        "<=": operator.le,
        ">": operator.gt,
        ">=": operator.ge,
        "==": operator.eq,
        "!=": operator.ne,
    }
    here = sys.version_info[:2]
    for op, version in re.findall(
        r"""python_version\s*(<=|>=|==|!=|<|>)\s*["']([\d.]+)["']""", marker
    ):
        wanted = tuple(int(part) for part in version.split(".")[:2])
        if not compare[op](here, wanted):
            return False
    return True


def extra_of(module: str) -> tuple[str, str] | None:
    """The extra that installs the top-level package of ``module`` and the requirement it
    names, without its environment marker (``("ort", "onnxruntime>=1.23")``); None if no extra
    does.

    Examples
    --------
    >>> extra_of("onnx.numpy_helper")
    ('onnx', 'onnx>=1.19')
    >>> extra_of("dask.array")[0], extra_of("tqdm")[0], extra_of("numpy")
    ('dask', 'cli', None)
    """
    top = module.partition(".")[0]
    wanted = _normalized(_DISTRIBUTION_OF_MODULE.get(top, top))
    if wanted == _DISTRIBUTION:
        return None
    for extra, distribution, requirement in _requirements():
        if distribution == wanted and extra not in _NOT_NAMED:
            return extra, requirement
    return None


def _direct_url() -> dict[str, object]:
    """PEP 610's record of where the installed onnx-relu came from ({} if none)."""
    import importlib.metadata
    import json

    try:
        text = importlib.metadata.distribution(_DISTRIBUTION).read_text("direct_url.json")
        found = json.loads(text) if text else {}
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return {}
    return found if isinstance(found, dict) else {}


def _local_path(url: object) -> str | None:
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(url).path)


def _shown(path: str) -> str:
    """``path`` relative to the working folder where that is shorter and stays inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith(os.pardir) else relative


def _pip(source: str | None = None) -> str:
    """The pip of this environment: pip itself, or uv's where the environment has none (as the
    venvs uv makes): the uv on PATH, else the one ``make`` bootstrapped in the clone ``source``
    (``.venv-tools/bin/uv``)."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("pip") is not None:
        return "pip install"
    uv = shutil.which("uv")
    if uv is None and source is not None:
        bootstrapped = os.path.join(source, ".venv-tools", "bin", "uv")
        uv = _shown(bootstrapped) if os.access(bootstrapped, os.X_OK) else None
    return f"{'uv' if uv is None else uv} pip install --python {_shown(sys.executable)}"


def install_command(*extras: str) -> str:
    """The command that installs onnx-relu's ``extras`` (one or more) into this environment,
    for the way onnx-relu itself was installed here (see the module's docstring).

    Examples
    --------
    >>> "onnx" in install_command("onnx")
    True
    >>> install_command("onnx", "ort").endswith(('EXTRAS="onnx ort"', '[onnx,ort]"'))
    True
    """
    if len(extras) > 1:
        names = " ".join(extras)
        make = f'EXTRAS="{names}"'
        extra = ",".join(extras)
        return _install_command(extra).replace(f"EXTRAS={extra}", make)
    return _install_command(extras[0])


def _install_command(extra: str) -> str:
    origin = _direct_url()
    path = _local_path(origin.get("url"))
    if path is not None and isinstance(origin.get("dir_info"), dict):
        clone_venv = os.path.join(path, ".venv")
        if os.path.isfile(os.path.join(path, "Makefile")) and os.path.realpath(
            sys.prefix
        ) == os.path.realpath(clone_venv):
            folder = "" if os.path.realpath(os.curdir) == os.path.realpath(path) else path
            return f"make {f'-C {folder} ' if folder else ''}install EXTRAS={extra}"
        return f'{_pip(path)} "{_shown(path)}[{extra}]"'
    if path is not None and path.endswith(".whl"):
        return f'{_pip()} "{_shown(path)}[{extra}]"'
    return f'{_pip()} "{_DISTRIBUTION}[{extra}]"'


def missing_extra_error(
    error: BaseException, needed_for: str | None = None
) -> MissingExtraError | None:
    """``error`` as a :class:`MissingExtraError` if it reports a missing module that one of
    onnx-relu's extras installs (a ``MissingExtraError`` already is one: given ``needed_for``
    if it had none); None for any other error, which the caller re-raises as it is.

    Examples
    --------
    >>> error = ModuleNotFoundError("No module named 'zarr'", name="zarr")
    >>> print(missing_extra_error(error, "--dask"))  # doctest: +ELLIPSIS
    --dask needs zarr (No module named 'zarr'): it comes with onnx-relu's "dask" extra (zarr>=...
    >>> missing_extra_error(ModuleNotFoundError("No module named 'numpyy'", name="numpyy"))
    """
    if isinstance(error, MissingExtraError):
        if needed_for and not error.needed_for:
            return _error(error.name or "", error.extra, error.requirement, needed_for)
        return error
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return None
    found = extra_of(error.name)
    if found is None:
        return None
    return _error(error.name, *found, needed_for)


def command_line_message(error: BaseException) -> str | None:
    """The rule's line for the ``onnx-relu`` command (None if ``error`` is not a missing extra):
    what needed the module is said only where it is more than the library's name for it (a
    ``.pb`` file, ``--engine onnxruntime``); the command's name starts the line anyway.

    Examples
    --------
    >>> error = ModuleNotFoundError("No module named 'onnx'", name="onnx")
    >>> command_line_message(missing_extra_error(error, "onnx_relu.check_model"))[:27]
    "No module named 'onnx': it "
    """
    rule = missing_extra_error(error)
    if rule is None:
        return None
    if rule.needed_for and rule.needed_for.startswith(f"{__package__}."):
        rule = _error(rule.name or "", rule.extra, rule.requirement, None)
    return str(rule)


def _error(name: str, extra: str, requirement: str, needed_for: str | None) -> MissingExtraError:
    what = f"No module named {name!r}"
    lead = f"{needed_for} needs {name.partition('.')[0]} ({what})" if needed_for else what
    message = (
        f'{lead}: it comes with onnx-relu\'s "{extra}" extra ({requirement}); install it with:'
        f" {install_command(extra)}"
    )
    return MissingExtraError(
        message, name=name, extra=extra, requirement=requirement, needed_for=needed_for
    )


def require_modules(needed_for: str, *modules: str) -> None:
    """Raise one :class:`MissingExtraError` naming every one of ``modules`` (top-level names:
    ``"onnx"``, ``"onnxruntime"``) that is not installed, the extras that install them and one
    command that installs all of them; nothing if all are there. Nothing is imported: a
    command calls it first, so that a user learns at once everything it needs.

    Examples
    --------
    >>> require_modules("json work", "json")  # installed: nothing happens
    """
    import importlib.util

    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module set to None, or without a spec
            found = False
        if not found:
            extra = extra_of(module)
            if extra is not None:
                missing.append((module, *extra))
    if not missing:
        return
    if len(missing) == 1:
        raise _error(missing[0][0], missing[0][1], missing[0][2], needed_for)
    names = [name for name, _, _ in missing]
    extras = list(dict.fromkeys(extra for _, extra, _ in missing))
    sources = " and ".join(
        f'"{extra}" ({", ".join(r for _, e, r in missing if e == extra)})' for extra in extras
    )
    kind = "extra" if len(extras) == 1 else "extras"
    message = (
        f"{needed_for} needs {', '.join(names[:-1])} and {names[-1]}, which are not installed:"
        " they come with"
        f" onnx-relu's {sources} {kind}; install them with: {install_command(*extras)}"
    )
    raise MissingExtraError(
        message,
        name=names[0],
        extra=extras[0],
        requirement=missing[0][2],
        needed_for=needed_for,
    )


class extra_needed:
    """Inside ``with extra_needed(needed_for):``, a module that an extra installs and that is
    missing raises :class:`MissingExtraError` (from None: the import's own traceback says no
    more); any other error passes unchanged.

    ``needed_for`` (e.g. ``"onnx_relu.check_model"``) starts the message; the innermost
    ``extra_needed`` that names one gives it.
    """

    __slots__ = ("needed_for",)

    def __init__(self, needed_for: str | None = None) -> None:
        self.needed_for = needed_for

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:  # never swallows the error: re-raised as it is, or as the rule's
        if not isinstance(error, ModuleNotFoundError):
            return
        converted = missing_extra_error(error, self.needed_for)
        if converted is not None and converted is not error:
            raise converted from None
