"""The examples of the documentation's ONNX page (docs/onnx-integration.md) run, and their asserts
hold and their comments show what they print."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests.support import REPOSITORY

PAGE = REPOSITORY / "docs" / "onnx-integration.md"


def _section_examples() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


EXAMPLES = _section_examples()


def test_the_page_has_the_five_examples():
    assert len(EXAMPLES) == 5


@pytest.mark.parametrize("number", range(len(EXAMPLES)))
def test_docs_example_runs_and_prints_what_its_comments_say(number):
    code = EXAMPLES[number]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"docs/onnx-integration.md example {number + 1}", "exec"), {})
    output = printed.getvalue()
    # The comment after a print shows (the start of, if it ends in "...") what it prints.
    printed_words = " ".join(output.split())
    for shown in re.findall(r"print\(.*\)\s+# (.*)", code):
        expected = " ".join(shown.removesuffix("...").split())
        assert expected in printed_words, (shown, output)
