"""No function of the package is longer than :data:`LIMIT` lines of code.

A line of code is a line of the function (its signature included) that is not blank, not only
a comment and not part of its docstring; nested functions count in the function that holds them
and on their own. Read from the source tree, with ``ast``: nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "onnx_relu"

#: The most lines of code a function may have.
LIMIT = 80

#: Functions allowed past the limit, by module path and name: argument-parser builders (a list
#: of options reads best as one list). The test fails on an entry that is not needed.
ALLOWED = {
    ("bench/__init__.py", "build_parser"),  # an argument-parser builder
}


def code_lines(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of code of ``node`` in ``lines`` (the module's text, line by line)."""
    docstring: set[int] = set()
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        docstring = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return sum(
        1
        for number in range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if number not in docstring
        and lines[number - 1].strip()
        and not lines[number - 1].strip().startswith("#")
    )


def function_sizes() -> dict[tuple[str, str], int]:
    """(module path under onnx_relu/, function name) -> its lines of code, for every function."""
    sizes: dict[tuple[str, str], int] = {}
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = (path.relative_to(SRC).as_posix(), node.name)
                sizes[key] = max(sizes.get(key, 0), code_lines(lines, node))
    return sizes


def test_no_function_is_longer_than_the_limit():
    sizes = function_sizes()
    too_long = sorted(
        f"{module}: {name} has {count} lines of code (at most {LIMIT})"
        for (module, name), count in sizes.items()
        if count > LIMIT and (module, name) not in ALLOWED
    )
    assert not too_long, too_long
    needless = sorted(f"{key}" for key in ALLOWED if sizes.get(key, 0) <= LIMIT)
    assert not needless, f"allowed but within the limit (remove them from ALLOWED): {needless}"


def test_the_count_leaves_out_docstrings_comments_and_blank_lines():
    text = '''def f(x):
    """A docstring
    of three lines.
    """
    # a comment

    y = x + 1  # code
    return y
'''
    (node,) = ast.parse(text).body
    assert isinstance(node, ast.FunctionDef)
    assert code_lines(text.splitlines(), node) == 3
