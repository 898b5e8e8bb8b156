"""The examples of the README's "ONNX integration" section run (and their asserts hold)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests.support import REPOSITORY
from tests.support.optional import HAVE_ONNXRUNTIME, NO_ONNXRUNTIME

README = REPOSITORY / "README.md"


def _section_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## ONNX integration\n")
    following = text.find("\n## ", start + 1)
    section = text[start:following if following != -1 else len(text)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


EXAMPLES = _section_examples()


def test_the_section_has_the_five_examples():
    assert len(EXAMPLES) == 5


@pytest.mark.parametrize("number", range(len(EXAMPLES)))
def test_readme_example_runs_and_prints_what_its_comments_say(number):
    code = EXAMPLES[number]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"README example {number + 1}", "exec"), {})
    except ModuleNotFoundError as error:
        if error.name == "onnxruntime" and not HAVE_ONNXRUNTIME:
            pytest.skip(f"README example {number + 1} runs onnxruntime: {NO_ONNXRUNTIME}")
        raise
    output = printed.getvalue()
    # The comment after a print shows (the start of, if it ends in "...") what it prints.
    printed_words = " ".join(output.split())
    for shown in re.findall(r"print\(.*\)\s+# (.*)", code):
        expected = " ".join(shown.removesuffix("...").split())
        assert expected in printed_words, (shown, output)
