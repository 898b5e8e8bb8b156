"""A progress bar on the terminal for long jobs; nothing at all anywhere else.

tqdm is an optional dependency (``pip install "onnx-relu[cli]"``), imported only when a bar
may be shown. The bar appears only if the stream is a terminal, the caller did not ask for
quiet, tqdm is installed, and the job is still running after ``delay`` seconds (short jobs
stay silent).
"""

from __future__ import annotations

import contextlib
import sys
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

    None (so the job reports nothing) when ``enabled`` is false, ``stream`` (default
    ``sys.stderr``) is not a terminal, or tqdm is not installed.
    """
    stream = sys.stderr if stream is None else stream
    if not enabled or not _is_terminal(stream):
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield None
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
