"""A progress bar on the terminal for long jobs; nothing at all anywhere else.

tqdm is an optional dependency (the ``cli`` extra), imported only when a bar may be shown. The
bar appears only if the stream is a terminal, the caller did not ask for quiet, and the job is
still running after ``delay`` seconds (short jobs stay silent). Without tqdm, a job that would
have shown one prints one line instead, once: the missing-extra rule's message
(:mod:`onnx_relu._extras`), saying how to install it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import TextIO, cast

from ..files.progress import Progress

__all__ = ["progress_bar"]


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextlib.contextmanager
def progress_bar(
    description: str,
    *,
    enabled: bool = True,
    stream: TextIO | None = None,
    delay: float = 0.5,
) -> Iterator[Progress | None]:
    """Yield a ``progress(done_bytes, total_bytes)`` callable drawing a bar, or None.

    None (so the job reports nothing) when ``enabled`` is false or ``stream`` (default
    ``sys.stderr``) is not a terminal; without tqdm, a callable that prints why once.
    """
    stream = sys.stderr if stream is None else stream
    if not enabled or not _is_terminal(stream):
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError as exc:
        yield _note_instead(exc, stream, delay)
        return
    state: dict[str, object] = {"bar": None, "done": 0}

    def update(done: int, total: int) -> None:
        bar = state["bar"]
        if bar is None:
            bar = state["bar"] = tqdm(
                total=total,
                desc=description,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=stream,
                delay=delay,
                dynamic_ncols=True,
            )
        bar.update(done - cast(int, state["done"]))  # type: ignore[attr-defined]
        state["done"] = done

    try:
        yield update
    finally:
        if state["bar"] is not None:
            state["bar"].close()  # type: ignore[attr-defined]


def _note_instead(error: ImportError, stream: TextIO, delay: float) -> Progress:
    """The progress callable without tqdm: once the job has run ``delay`` seconds, the line
    that says why there is no bar and how to have one; nothing more."""
    from .._extras import missing_extra_error

    reason = missing_extra_error(error, "the progress bar") or error
    start = time.monotonic()
    said = False

    def update(done: int, total: int) -> None:
        nonlocal said
        if said or time.monotonic() - start < delay:
            return
        said = True
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: no line
            print(f"no progress bar: {reason}", file=stream, flush=True)

    return update
