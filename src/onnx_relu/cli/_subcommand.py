"""A subcommand of ``onnx-relu`` as one record (:class:`Subcommand`), from which
:func:`onnx_relu.cli.build_parser` makes its parser: each ``COMMAND_command`` module ends with
its ``SUBCOMMAND``.

Private to :mod:`onnx_relu.cli`. A plain class, not a dataclass: ``--help`` builds every
subcommand's parser, and dataclasses (with inspect, ast and tokenize) would cost its start-up
about a fifth more (``tests/core/test_ml_dtypes_import.py``).
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # (not typing's: see onnx_relu.io.streams)
if TYPE_CHECKING:
    from collections.abc import Callable


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A subcommand without arguments of its own."""


class Subcommand:
    """One subcommand: its name, its help, its arguments and what runs it.

    Attributes
    ----------
    name : str
        As typed after ``onnx-relu``.
    help : str
        Its line in ``onnx-relu --help``.
    run : callable or None
        Runs it with the parsed arguments and returns the exit status. None where
        :func:`onnx_relu.cli.main` hands everything after the name to the subcommand's own
        parser (``bench``): the parser made here only lists it, and has no ``--help``.
    arguments : callable
        Adds its arguments to its parser.
    description, epilog : str or None
        Its ``--help``'s text above and below the arguments: paragraphs reflowed to the
        terminal by :class:`._help.HelpFormatter`, the lines indented by two spaces (examples)
        kept as written.
    usage : str or None
        Its usage lines where argparse's would not say how it is called (None: argparse's).
    """

    __slots__ = ("name", "help", "run", "arguments", "description", "epilog", "usage")

    def __init__(
        self,
        name: str,
        help: str,
        run: Callable[[argparse.Namespace], int] | None,
        arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments,
        description: str | None = None,
        epilog: str | None = None,
        usage: str | None = None,
    ) -> None:
        self.name = name
        self.help = help
        self.run = run
        self.arguments = arguments
        self.description = description
        self.epilog = epilog
        self.usage = usage

    def __repr__(self) -> str:
        return f"Subcommand({self.name!r})"

    def add_to(self, commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        """Add its parser to ``commands``, with its arguments; ``handler`` is its ``run``."""
        from ._help import HelpFormatter

        parser: argparse.ArgumentParser = commands.add_parser(
            self.name,
            help=self.help,
            description=self.description,
            epilog=self.epilog,
            usage=self.usage,
            formatter_class=HelpFormatter,
            add_help=self.run is not None,
        )
        if self.run is not None:
            parser.set_defaults(handler=self.run)
        self.arguments(parser)
