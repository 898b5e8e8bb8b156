"""Every reference in src/ to a module, a name or a file of this repository names one that exists.

Comments and docstrings name modules (``onnx_relu.io.atomic``, ``:mod:`.streams```), names
(``:func:`keep_owner```, ``onnx_relu.tuning.kernel_tuning``), files (``src/kernel/relu_tuning.c``)
and places (``tensors.py:128``); a move or a rename leaves the old name behind, where it
misleads the next reader. The check reads the source (no imports: the optional layers need
their extras), resolving:

- a dotted ``onnx_relu...`` name (outside quotes: a quoted one is a key or a message) to a
  module file under src/, then each further part to a name that module defines (at top level,
  by import, in a lazy-export table) and, one level down, to a member of that class;
- a Sphinx role's target (``:func:``, ``:mod:``, ``:meth:``...) in a module of the package:
  ``.x`` relative to the module, its package or a package above it (Python's meaning, stricter
  than Sphinx's suffix search, which would find any ``x`` anywhere); a bare name to a name of
  the module (``:meth:``/``:attr:``: or a member of one of its classes);
- a path ``src/...``, ``tools/...``, ``tests/...``, ``docs/...`` to a file (or its ``.in``
  template); ``name.py:NN`` to a file of that name with at least NN lines.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from pathlib import Path

from tests.support import REPOSITORY

SRC = REPOSITORY / "src"
_SOURCES = (".py", ".pyi", ".c", ".h")

_DOTTED = re.compile(r"(?<![\"'\w.])onnx_relu(?:\.[A-Za-z_]\w*)+")
_ROLE = re.compile(r":(mod|func|class|data|meth|attr|exc|obj):`~?([.\w]+)`")
_PATH = re.compile(
    r"\b(?:src|tools|tests|docs|benchmarks)/[\w./-]+\.(?:py|pyi|c|h|md|rst|sh|txt)\b"
)
_PLACE = re.compile(r"\b([\w/]+\.(?:py|pyi|c|h)):(\d+)\b")


def _module_file(dotted: str) -> Path | None:
    base = SRC.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".pyi")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _names(path: Path) -> dict[str, frozenset[str]]:
    """The names ``path`` defines at module level, each with its members (for a class)."""
    names: dict[str, frozenset[str]] = {}
    tree = ast.parse(path.read_text())
    for statement in tree.body:
        nodes = ast.walk(statement) if isinstance(statement, (ast.If, ast.Try)) else [statement]
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[node.name] = _members(node) if isinstance(node, ast.ClassDef) else frozenset()
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    assigned = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
                    names.update(dict.fromkeys(assigned, frozenset()))
                    if isinstance(target, ast.Name) and target.id.startswith("_LAZY"):
                        names.update({key: frozenset() for key in _constants(node.value)})
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update({(a.asname or a.name).split(".")[0]: frozenset() for a in node.names})
    return names


def _constants(node: ast.expr | None) -> list[str]:
    keys = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    return [k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def _members(cls: ast.ClassDef) -> frozenset[str]:
    found: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "self":
            found.add(node.attr)
    return frozenset(found)


def resolve(dotted: str) -> str | None:
    """None if the absolute dotted name exists under src/, else what is missing."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        path = _module_file(".".join(parts[:end]))
        if path is None:
            continue
        rest = parts[end:]
        if not rest:
            return None
        names = _names(path)
        if rest[0] not in names:
            return f"{'.'.join(parts[:end])} has no {rest[0]!r}"
        if len(rest) > 1 and names[rest[0]] and rest[1] not in names[rest[0]]:
            return f"{'.'.join(parts[: end + 1])} has no {rest[1]!r}"
        return None
    return f"there is no module {dotted}"


def _module_of(path: Path) -> tuple[str, str] | None:
    """(module, package) of a Python file of the package, else None."""
    if path.suffix not in (".py", ".pyi") or not path.is_relative_to(SRC / "onnx_relu"):
        return None
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _role_problem(path: Path, role: str, target: str) -> str | None:
    module, package = _module_of(path) or ("", "")
    if target.startswith("onnx_relu"):
        return None  # (checked as a dotted name)
    if target.startswith("."):
        relative, base = target.lstrip("."), package
        for _ in range(len(target) - len(relative) - 1):
            base = base.rpartition(".")[0]
        bases = [module, base] + [base.rsplit(".", n)[0] for n in range(1, base.count(".") + 1)]
        if any(resolve(f"{b}.{relative}") is None for b in bases):
            return None
        return f"{target}: neither {module} nor a package above it has it"
    names = _names(path)
    first = target.split(".")[0]
    if "." in target and first not in names:
        return None  # another library's (numpy.ndarray)
    if first in names or hasattr(builtins, first):
        if "." in target and names.get(first) and target.split(".")[1] not in names[first]:
            return f"{target}: {first} has no {target.split('.')[1]!r}"
        return None
    if role in ("meth", "attr") and any(first in members for members in names.values()):
        return None
    return f"{target}: not defined in {module}"


def problems_in(path: Path, text: str) -> list[str]:
    """Each reference in ``text`` (the text of ``path``, a file under src/) that names nothing."""
    where = path.relative_to(REPOSITORY)
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for match in _DOTTED.finditer(line):
            why = resolve(match.group(0))
            if why:
                found.append(f"{where}:{lineno}: {match.group(0)}: {why}")
        if _module_of(path) is not None:
            for match in _ROLE.finditer(line):
                why = _role_problem(path, *match.groups())
                if why:
                    found.append(f"{where}:{lineno}: {why}")
        for match in _PATH.finditer(line):
            name = match.group(0)
            if not (REPOSITORY / name).exists() and not (REPOSITORY / f"{name}.in").exists():
                found.append(f"{where}:{lineno}: {name}: no such file")
        for match in _PLACE.finditer(line):
            name, number = match.group(1), int(match.group(2))
            files = [p for p in REPOSITORY.glob(f"**/{name}") if ".venv" not in p.parts]
            if not any(len(p.read_text().splitlines()) >= number for p in files):
                found.append(f"{where}:{lineno}: {name}:{number}: no such file or line")
    return found


def test_every_reference_in_src_names_something_that_exists():
    found = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix in _SOURCES and path.is_file():
            found += problems_in(path, path.read_text())
    assert found == [], "\n".join(found)


def test_the_check_finds_references_to_what_does_not_exist():
    """The check itself: stale references planted in the text of real modules are found, and
    the ones that exist are not."""
    atomic = SRC / "onnx_relu" / "io" / "atomic.py"
    stale = [
        ":mod:`.paths`",  # io/ has no paths module
        ":func:`_keep_owner`",  # atomic.py's function is keep_owner
        "``onnx_relu.files.nothing``",
        "onnx_relu.tuning.copy_ceiling",
        "src/kernel/relu_missing.c",
        "tensors.py:100000",
    ]
    fine = [
        ":mod:`.streams`",
        ":func:`keep_owner`",
        ":func:`.endpoint.Endpoint`",
        ":meth:`Endpoint.of`",
        ":class:`numpy.ndarray`",
        "onnx_relu.io.atomic.atomic_file",
        "onnx_relu.dtypes.ReluType.bits_dtype",
        '"onnx_relu.ort_library.domains"',
        "src/kernel/relu_tuning.c",
        "tensors.py:10",
    ]
    for text in stale:
        assert len(problems_in(atomic, text)) == 1, text
    for text in fine:
        assert problems_in(atomic, text) == [], text
