"""argparse option types for command lines built on onnx-relu: its own (:mod:`onnx_relu.cli`) and
the benchmark harness (:mod:`onnx_relu.bench`, which uses public modules only) share them.

Each parses one option's text or raises ``argparse.ArgumentTypeError`` with a message that says
what is allowed and what was given; argparse prints it after the option's name.

Examples
--------
>>> integer_at_least_one("3")
3
>>> seconds = positive_number("seconds")
>>> seconds("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be a number of seconds > 0, got '0'
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["integer_at_least_one", "positive_number", "thread_count"]


def integer_at_least_one(text: str) -> int:
    """An integer >= 1 (``--rounds``, ``--window-mib``, ...)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def positive_number(unit: str) -> Callable[[str], float]:
    """The type of an option that takes a finite number of ``unit`` > 0 (``--batch-ms``,
    ``--stall-timeout``); the message names the unit."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"must be a number of {unit} > 0, got {text!r}")
        return value

    parse.__name__ = f"number of {unit}"  # argparse names the type so in its own messages
    return parse


def thread_count(text: str) -> int:
    """A kernel thread count, an integer in 1..MAX_THREADS (``--threads``)."""
    from .tuning import MAX_THREADS, check_num_threads

    try:
        return check_num_threads(int(text))
    except ValueError:  # not a whole number, or out of range (ThreadCountError)
        raise argparse.ArgumentTypeError(
            f"must be an integer in 1..{MAX_THREADS} (threads), got {text!r}"
        ) from None
