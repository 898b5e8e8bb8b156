"""How text from outside (file names, names in a model, messages that quote them) is shown in
one-line output: the one escaping rule of every layer.

Kept in the core, which imports nothing, so that every layer escapes the one way.
"""

from __future__ import annotations

__all__ = ["printable"]


def printable(text: str | bytes, *, quote: bool = True) -> str:
    r"""``text`` as it is if every character prints; else, for a name (``quote=True``), its repr
    (quoted, escapes spelled out), and for a sentence (``quote=False``) the text with each
    character that does not print spelled as repr spells it.

    Names in a model (operator types, attribute names) and file names are arbitrary strings: a
    newline or a terminal escape would break the one-item-per-line output of the commands or
    recolour the terminal, and a file name that is not UTF-8 (decoded with surrogate escapes)
    prints as its escapes. protobuf gives a string field that is not valid UTF-8 as bytes:
    shown as their repr too.

    Examples
    --------
    >>> printable("If"), printable("Evil\x1b[31m\nOp"), printable(b"\xffelu")
    ('If', "'Evil\\x1b[31m\\nOp'", "b'\\xffelu'")
    >>> printable("line one\nline two", quote=False)
    'line one\\nline two'
    """
    if isinstance(text, str) and text.isprintable():
        return text
    if quote or not isinstance(text, str):
        return repr(text)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
