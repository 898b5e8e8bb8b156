"""How the ``onnx-relu`` command's help is laid out: prose reflowed to the terminal, examples kept.

The descriptions and epilogs of the parsers are written as paragraphs separated by blank lines.
A paragraph's prose lines are joined and wrapped to the terminal's width (argparse's: the
``COLUMNS`` variable or the terminal's, less 2), never leaving one word alone on a line. Lines
indented by two spaces are examples, kept as written: ``COMMAND  # comment`` puts the comment
beside the command, in one column for a group of examples, where every comment of the group
fits so, and above its command (wrapped) where they do not; a command longer than the width
is continued on the next line with ``\\``, as a shell reads it. :func:`help_text` is the help
of a command at a given width, which docs/cli.md shows (``make cli-docs`` writes it there).

Private to :mod:`onnx_relu.cli`; only the standard library (textwrap when help is formatted).

Examples
--------
>>> print(fill("One two three four five six seven.", 16))
One two three
four five
six seven.
"""

from __future__ import annotations

import argparse
import os

#: Where an example's comment starts in the text ("onnx-relu apply x.npy y.npy  # y = Relu(x)").
COMMENT = "  # "
#: The columns docs/cli.md shows the help at.
DOCS_COLUMNS = 80


def fill(text: str, width: int, indent: str = "", rest: str | None = None) -> str:
    """``text`` (words) wrapped to ``width`` columns, each line starting with ``indent`` (the
    first) or ``rest`` (the others); the last line is never one word alone where the one
    before can give it a word."""
    return "\n".join(wrap(text, width, indent, indent if rest is None else rest))


def wrap(text: str, width: int, indent: str = "", rest: str = "") -> list[str]:
    """The lines of :func:`fill`."""
    import textwrap

    lines = textwrap.wrap(
        " ".join(text.split()),
        max(width, len(indent) + 1, len(rest) + 1),
        initial_indent=indent,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )
    if len(lines) >= 2:
        lead = indent if len(lines) == 2 else rest
        last = lines[-1][len(rest) :].split()
        before = lines[-2][len(lead) :].split()
        # one word left over: move a word down from the line above, if it keeps two
        if len(last) == 1 and len(before) >= 3:
            moved = f"{rest}{before[-1]} {last[0]}"
            if len(moved) <= width:
                lines[-2] = lead + " ".join(before[:-1])
                lines[-1] = moved
    return lines


def _examples(lines: list[str], width: int, indent: str) -> list[str]:
    """A group of example lines laid out at ``width``: every comment beside its command, in one
    column, where all of them fit; each above its command (wrapped) otherwise. A command longer
    than the width is continued with ``\\``."""
    examples = []
    for line in lines:
        command, _, comment = line.strip().partition(COMMENT.strip() + " ")
        examples.append((command.rstrip(), comment.strip()))
    lead = indent + "  "
    commented = [(command, comment) for command, comment in examples if comment]
    column = len(lead) + max((len(command) for command, _ in commented), default=0) + 2
    beside = all(column + 2 + len(comment) <= width for _, comment in commented)
    out: list[str] = []
    for command, comment in examples:
        commands = _continued(command, width, lead)
        if comment and beside:
            out.append(f"{commands[0]:<{column}}# {comment}")
            continue
        if comment:
            out += wrap(comment, width, lead + "# ", lead + "# ")
        out += commands
    return out


def _continued(command: str, width: int, lead: str) -> list[str]:
    """``command`` on one line, or split between words over several, each but the last ending
    in `` \\`` and the following ones indented two more spaces."""
    if len(lead) + len(command) <= width:
        return [lead + command]
    lines: list[str] = []
    words = command.split(" ")
    current = lead + words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) + 2 > width:
            lines.append(current + " \\")
            current = lead + "  " + word
        else:
            current += " " + word
    lines.append(current)
    last, before = lines[-1].split(), lines[-2].split()[:-1]  # (without its "\\")
    if len(last) == 1 and len(before) >= 3 and len(lines[-1]) + len(before[-1]) + 1 <= width:
        # one word alone on the last line: the word before it joins it
        lines[-2] = lines[-2][: lines[-2].rindex(before[-1])] + "\\"
        lines[-1] = f"{lead}  {before[-1]} {last[0]}"
    return lines


def layout(text: str, width: int, indent: str = "") -> str:
    """A description or an epilog laid out at ``width`` (see the module's docstring)."""
    out: list[str] = []
    for paragraph in text.strip("\n").split("\n\n"):
        group: list[str] = []  # consecutive lines of one kind: prose or examples
        for line in paragraph.split("\n") + [""]:
            example = line.startswith("  ") and line.strip() != ""
            if group and (not line or example != group[0].startswith("  ")):
                if group[0].startswith("  "):
                    out += _examples(group, width, indent)
                else:
                    out += wrap(" ".join(group), width, indent, indent)
                group = []
            if line:
                group.append(line)
        out.append("")
    return "\n".join(out).rstrip("\n")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's layout, with the description and epilog laid out by :func:`layout`, each
    option's help wrapped by :func:`wrap` (no one-word last line), and an option that takes a
    value listed once with all its names (``-i, --input NAME=FILE``), as every Python from 3.13
    lists it."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return layout(text, width + len(indent), indent)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return wrap(text, width)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        # "-i, --input NAME=FILE" on every Python (3.13's argparse writes it so; 3.11 and 3.12
        # repeat the metavar: "-i NAME=FILE, --input NAME=FILE"), so that the help, and
        # docs/cli.md made from it, are one text whichever Python prints them.
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        metavar = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {metavar}"


def help_text(command: str | None = None, columns: int = DOCS_COLUMNS) -> str:
    """The ``--help`` of ``onnx-relu`` (``command`` None) or of one subcommand, as printed in a
    terminal of ``columns`` columns."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)  # argparse reads the width from here
    try:
        from . import build_parser

        parser = build_parser()
        if command == "bench":  # the subcommand hands its arguments to the harness's parser
            from ..bench import build_parser as bench_parser

            parser = bench_parser(prog="onnx-relu bench", formatter_class=HelpFormatter)
        elif command is not None:
            parser = subcommands(parser)[command]
        return parser.format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands' parsers of ``parser``, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
