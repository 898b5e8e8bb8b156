"""The help of every command reads at any terminal width: prose reflowed, examples kept, and
docs/cli.md showing the same text.

The help is laid out by ``onnx_relu.cli._help`` (argparse's width: ``COLUMNS`` less 2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from onnx_relu.cli._help import COMMENT, fill, help_text, layout, wrap
from tests.support import REPOSITORY

COMMANDS = [None, "demo", "apply", "run", "check", "legalize", "bench"]
WIDTHS = [60, 80, 120]


def name(command):
    return command or "onnx-relu"


def blocks(text):
    """The help's paragraphs (split at blank lines) but the usage, as lists of lines."""
    paragraphs = [p.split("\n") for p in text.strip("\n").split("\n\n")]
    return [p for p in paragraphs if not p[0].startswith("usage:")]


def lone_words(text):
    """Lines holding one word, but headings ("options:"), the usage lines, argparse's
    subcommand placeholder and an example that is one word (the bare command)."""
    found = []
    for paragraph in blocks(text):
        for line in paragraph:
            words = line.split()
            if len(words) != 1 or line.endswith(":") or words[0] in ("COMMAND", "onnx-relu"):
                continue
            found.append(line)
    return found


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("command", COMMANDS, ids=name)
def test_no_line_is_wider_than_the_terminal_or_one_word_alone(command, columns):
    text = help_text(command, columns)
    wide = [line for line in text.splitlines() if len(line) > columns]
    assert not wide, "\n".join(wide)
    assert not lone_words(text), lone_words(text)
    assert "examples:" in text or command == "demo"  # bench has examples too


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("command", COMMANDS, ids=name)
def test_prose_is_reflowed_to_the_width(command, columns):
    """Every line of a prose paragraph (the description, the epilog's text) is as full as
    greedy filling makes it: the next line's first word would not have fitted, but where the
    last line was given a word so that it is not one word alone."""
    width = columns - 2  # argparse's
    for paragraph in blocks(help_text(command, columns)):
        if paragraph[0].startswith(" ") or paragraph[0].endswith(":"):
            continue  # options, examples, headings
        for number, (line, following) in enumerate(zip(paragraph, paragraph[1:], strict=False)):
            first = following.split()[0]
            last_pair = number == len(paragraph) - 2 and len(following.split()) == 2
            assert len(line) + 1 + len(first) > width or last_pair, (line, following)


def test_examples_keep_their_lines_with_comments_beside_or_above():
    wide, narrow = help_text("apply", 120), help_text("apply", 60)
    line = "  onnx-relu apply batch/ out/"
    beside = [x for x in wide.splitlines() if x.startswith(line)]
    assert len(beside) == 1 and beside[0].endswith("# each tensor file of batch/")
    lines = narrow.splitlines()
    lines = lines[lines.index("examples:") :]
    at = lines.index(line)
    assert lines[at - 1] == "  # each tensor file of batch/"
    # a command longer than the width continues on the next line, as a shell reads it
    long = "onnx-relu apply in.zarr out.zarr --dask --scheduler tcp://10.0.0.5:8786"
    continued = [x for x in lines if x.endswith(" \\")]
    assert continued and long.startswith(continued[0].strip()[:-2])
    at = lines.index(continued[0])
    joined = " ".join(x.strip().removesuffix("\\").strip() for x in lines[at : at + 2])
    assert joined == long


def test_the_layout_rules():
    prose = "A paragraph written\nwith its own line breaks, at another width than the reader's."
    assert layout(prose, 30) == fill(prose, 30)
    assert layout(prose, 30).splitlines() == [
        "A paragraph written with its",
        "own line breaks, at another",
        "width than the reader's.",
    ]
    examples = f"  cmd one{COMMENT}first\n  cmd two longer{COMMENT}second"
    assert layout(examples, 40).splitlines() == [
        "  cmd one         # first",
        "  cmd two longer  # second",
    ]
    assert layout(examples, 20).splitlines() == [
        "  # first",
        "  cmd one",
        "  # second",
        "  cmd two longer",
    ]
    # no one word alone on a last line where the line before can spare one
    assert wrap("aaa bbb ccc ddd", 12) == ["aaa bbb", "ccc ddd"]
    assert wrap("aaaa bbbb", 5) == ["aaaa", "bbbb"]  # nothing to spare
    assert wrap("aa bb cc dd", 12, "  # ", "  # ") == ["  # aa bb", "  # cc dd"]  # a comment's
    assert wrap("aa bb cc dd ee ff gg", 10, "", "  ") == ["aa bb cc", "  dd ee", "  ff gg"]


@pytest.mark.parametrize("command", COMMANDS, ids=name)
def test_the_command_prints_this_help_at_the_terminals_width(command):
    argv = ["--help"] if command is None else [command, "--help"]
    done = subprocess.run(
        [sys.executable, "-m", "onnx_relu", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "60"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == help_text(command, 60)


def test_docs_cli_md_shows_the_help_as_printed_at_80_columns():
    """docs/cli.md's help blocks are the parsers' text (``make cli-docs`` writes them); the
    page's prose around them is its own."""
    page = (REPOSITORY / "docs" / "cli.md").read_text(encoding="utf-8")
    found = re.findall(r"^```\{onnx-relu-help\}( \S+)?\n(.*?)^```$", page, re.M | re.S)
    assert [c.strip() or None for c, _ in found] == COMMANDS
    for command, text in found:
        expected = "\n".join(x.rstrip() for x in help_text(command.strip() or None).splitlines())
        assert text.strip("\n") == expected.strip("\n"), (
            f"docs/cli.md's help of {name(command.strip())} is stale: run make cli-docs"
        )
    prose = " ".join(page.split())
    assert "as `onnx-relu COMMAND --help` prints it in a terminal of 80 columns" in prose


@pytest.mark.parametrize(
    "argv, words",
    [
        (["apply", "--fast", "x.npy", "y.npy"], "unrecognized arguments: --fast"),
        (["run", "m.onnx", "-o", "out", "extra", "more"], "unrecognized arguments: extra more"),
        (["check", "--nope", "m.onnx"], "unrecognized arguments: --nope"),
        (["legalize", "a.onnx", "b.onnx", "c.onnx"], "unrecognized arguments: c.onnx"),
    ],
)
def test_an_option_error_is_the_subcommands_with_its_usage(argv, words, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "onnx_relu", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"usage: onnx-relu {argv[0]} ")
    assert done.stderr.splitlines()[-1] == f"onnx-relu {argv[0]}: error: {words}"
    assert list(tmp_path.iterdir()) == []
