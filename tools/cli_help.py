"""Write the help of every ``onnx-relu`` command into docs/cli.md (``make cli-docs``).

The page's ```` ```{onnx-relu-help} COMMAND```` blocks hold the text ``onnx-relu COMMAND --help``
prints in an 80-column terminal (:func:`onnx_relu.cli._help.help_text`), so that the page reads
on the repository host too; the documentation build (docs/_ext/onnx_relu_docs.py) and
tests/cli/test_help.py refuse a page whose blocks are not the installed parser's text. Prose
outside the blocks is the page's own and is kept as it is.

Usage: ``python tools/cli_help.py [--check] [PAGE...]`` (default docs/cli.md); ``--check``
writes nothing and exits 1 if a block is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HELP_BLOCK = re.compile(
    r"^```\{onnx-relu-help\}( \S+)?\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL
)


def expected(command: str | None) -> str:
    """The block's text for ``command``: its help at the page's width, without trailing spaces."""
    from onnx_relu.cli._help import help_text

    return "\n".join(line.rstrip() for line in help_text(command).strip("\n").splitlines())


def rewritten(text: str) -> str:
    """``text`` (a page) with every help block holding the parser's text."""

    def block(match: re.Match[str]) -> str:
        command = match.group(1).strip() if match.group(1) else None
        return f"```{{onnx-relu-help}}{match.group(1) or ''}\n{expected(command)}\n```"

    return HELP_BLOCK.sub(block, text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    pages = [Path(name) for name in argv if name != "--check"] or [Path("docs/cli.md")]
    stale = 0
    for page in pages:
        old = page.read_text(encoding="utf-8")
        new = rewritten(old)
        if new == old:
            print(f"{page}: help blocks up to date")
        elif check:
            stale += 1
            print(f"{page}: help blocks stale: run make cli-docs", file=sys.stderr)
        else:
            page.write_text(new, encoding="utf-8")
            print(f"{page}: help blocks rewritten")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
