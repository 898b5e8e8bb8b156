"""The Sphinx extension of the onnx-relu documentation.

* ``onnx-relu-help`` (a directive): the ``--help`` text of the ``onnx-relu`` command, or of one
  subcommand, made by the installed package's own parser factory
  (:func:`onnx_relu.cli.build_parser`) when the page is built. The block also holds the text
  itself, so that the page reads on the repository host, where no directive runs; a block whose
  text is not the parser's is an error, so it cannot drift from the code (``make cli-docs``,
  tools/cli_help.py, rewrites the blocks with the parser's).
  A subcommand the parser has but no page shows is a warning (an error under ``-W``).
* ``% onnx-relu:include PATH`` (a line in a Markdown page): the text of a file of the repository
  (CHANGELOG.md, BENCHMARKS.md), read when the page is built rather than copied.
* ``% onnx-relu:other-pages`` (a line in a toctree): every page of docs/ that no toctree of the
  same page names, so that a page added under docs/ is built, checked and reachable without an
  edit here (Sphinx's own glob would list the pages of the other toctrees a second time).
* Headings of an included file that skip a level (BENCHMARKS.md's tables are ``####`` under
  ``##``, as the benchmark harness prints them) are raised to the next level.
* Links and images in the pages that point at files of the repository outside docs/ (tests,
  tools, generated benchmark results) become plain text, or a note where an image is missing:
  the site shows the repository's Markdown as it is, without depending on generated files.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

OTHER_PAGES = re.compile(r"^% onnx-relu:other-pages\s*$", flags=re.MULTILINE)
TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
INCLUDE = re.compile(r"^% onnx-relu:include (\S+)\s*$", flags=re.MULTILINE)
#: Files of the repository that a page of the site shows: a link to the file goes to the page.
PAGE_OF_FILE = {
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
    "BENCHMARKS.md": "benchmarks.md",
}
HEADING = re.compile(r"^(#{1,6}) ")
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    from onnx_relu.cli._help import subcommands

    return subcommands(parser)


def _help_text(command: str | None) -> str:
    """The help as docs/cli.md shows it: at the page's width (tools/cli_help.py writes it)."""
    from onnx_relu.cli._help import help_text

    return help_text(command)


class HelpDirective(Directive):
    """``onnx-relu-help`` [SUBCOMMAND]: the command's help text as a literal block."""

    optional_arguments = 1
    has_content = True

    def run(self) -> list[nodes.Node]:
        from onnx_relu.cli import build_parser

        command = self.arguments[0] if self.arguments else None
        known = _subcommands(build_parser())
        if command is not None and command not in known:
            raise self.error(f"onnx-relu has no subcommand {command!r}; it has {sorted(known)}")
        env = self.state.document.settings.env
        env.onnx_relu_help_shown.setdefault(env.docname, set()).add(command or "")
        text = _help_text(command)
        written = "\n".join(line.rstrip() for line in self.content).strip("\n")
        if written != text.strip("\n"):
            raise self.error(
                f"the help text of 'onnx-relu{' ' + command if command else ''}' written in the"
                " page is not the parser's: run 'make cli-docs' to write it again"
            )
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


def _init_env(app: Sphinx, env: Any, docnames: list[str]) -> None:
    if not hasattr(env, "onnx_relu_help_shown"):
        env.onnx_relu_help_shown = {}


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "onnx_relu_help_shown", {}).pop(docname, None)


def _check_every_subcommand_shown(app: Sphinx, env: Any) -> None:
    from onnx_relu.cli import build_parser

    shown = set().union(*getattr(env, "onnx_relu_help_shown", {}).values())
    for command in sorted(set(_subcommands(build_parser())) - shown):
        logger.warning(
            "the help of 'onnx-relu %s' is on no page (add an onnx-relu-help directive for it)",
            command,
        )


def _rewrite_links(text: str, source: Path, page: Path, repository: Path, docs: Path) -> str:
    """Links of ``text`` (a file at ``source``) made right for the page at ``page``."""

    def replace(match: re.Match[str]) -> str:
        bang, label, target = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path_part, hash_, anchor = target.partition("#")
        resolved = (source.parent / path_part).resolve()
        shown = resolved.relative_to(repository) if resolved.is_relative_to(repository) else None
        if bang:
            if resolved.is_file():
                return f"![{label}]({os.path.relpath(resolved, page.parent)})"
            return (
                f"*({label}: the plot `{shown}` is made by the benchmark run and is not "
                "part of this checkout)*"
            )
        if (
            resolved.is_relative_to(docs)
            and resolved.suffix in (".md", ".rst")
            and resolved.is_file()
        ):
            return f"[{label}]({os.path.relpath(resolved, page.parent)}{hash_}{anchor})"
        if shown is not None and str(shown) in PAGE_OF_FILE:
            page_file = docs / PAGE_OF_FILE[str(shown)]
            return f"[{label}]({os.path.relpath(page_file, page.parent)}{hash_}{anchor})"
        if shown is None:  # outside the repository: left as written
            return match.group(0)
        # A file of the repository that is no page of the site: named, not linked.
        if label.strip("`") == str(shown):
            return f"`{shown}`"
        return f"{label} (`{shown}`)"

    # Links outside code blocks only; a link's label may wrap onto the next line.
    out: list[str] = []
    prose: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if FENCE.match(line):
            if not in_fence and prose:
                out.append(LINK.sub(replace, "\n".join(prose)))
                prose = []
            in_fence = not in_fence
            out.append(line)
        elif in_fence:
            out.append(line)
        else:
            prose.append(line)
    if prose:
        out.append(LINK.sub(replace, "\n".join(prose)))
    return "\n".join(out)


def _consecutive_headings(text: str) -> str:
    out: list[str] = []
    in_fence = False
    previous = 0
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
        heading = HEADING.match(line) if not in_fence else None
        if heading:
            level = min(len(heading.group(1)), previous + 1)
            line = "#" * level + line[len(heading.group(1)) :]
            previous = level
        out.append(line)
    return "\n".join(out)


def _undocumented_ufunc_docstring(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A ufunc's docstring is NumPy's plain text (a signature line, then prose), not
    reStructuredText: show it as it is."""
    import numpy as np

    if isinstance(obj, np.ufunc) and lines:
        lines[:] = ["::", ""] + ["   " + line for line in lines] + [""]


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    docs = Path(app.srcdir).resolve()
    repository = docs.parent
    page = Path(app.env.doc2path(docname)).resolve()
    if page.suffix != ".md":
        return

    def include(match: re.Match[str]) -> str:
        included = (page.parent / match.group(1)).resolve()
        app.env.note_dependency(str(included))
        text = _consecutive_headings(included.read_text(encoding="utf-8"))
        return _rewrite_links(text, included, page, repository, docs)

    text = INCLUDE.sub(include, source[0])
    if OTHER_PAGES.search(text):
        named = {
            line.strip()
            for body in TOCTREE.findall(text)
            for line in body.splitlines()
            if line.strip() and not line.lstrip().startswith((":", "%"))
        }
        others = sorted(set(app.env.found_docs) - named - {docname})
        text = OTHER_PAGES.sub(lambda _: "\n".join(others), text)
    source[0] = _rewrite_links(text, page, page, repository, docs)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("onnx-relu-help", HelpDirective)
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-check-consistency", _check_every_subcommand_shown)
    app.connect("source-read", _source_read)
    app.connect("autodoc-process-docstring", _undocumented_ufunc_docstring)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
