"""How names from outside (file names, names in a model) are shown in one-line messages.

Kept in the core, which imports nothing, so that every layer escapes them the one way.
"""

from __future__ import annotations

__all__ = ["printable"]


def printable(text: str | bytes) -> str:
    r"""``text`` as it is if every character prints, else its repr (quoted, escapes spelled out).

    Names in a model (operator types, attribute names) and file names are arbitrary strings: a
    newline or a terminal escape would break the one-finding-per-line output of ``onnx-relu
    check`` or recolour the terminal, and a file name that is not UTF-8 (decoded with surrogate
    escapes) prints as its escapes.

    Examples
    --------
    >>> printable("If"), printable("Evil\x1b[31m\nOp"), printable(b"\xffelu")
    ('If', "'Evil\\x1b[31m\\nOp'", "b'\\xffelu'")
    """
    # protobuf gives a string field that is not valid UTF-8 as bytes: shown as their repr too.
    return text if isinstance(text, str) and text.isprintable() else repr(text)
