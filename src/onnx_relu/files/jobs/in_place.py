"""Relu of a ``.npy`` file in place: :class:`InPlaceJob`.

The file is rewritten window by window (read, Relu in the one buffer, written back where it
came from). That is not atomic, but Relu is idempotent (``relu(relu(x)) == relu(x)``, NaN bits
included), so running it again on a file whose rewrite was interrupted completes it correctly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..progress import Progress
from .stream import NpySource
from .windows import relu_windows, write_window

__all__ = ["InPlaceJob"]


@dataclass(frozen=True)
class InPlaceJob:
    """A ``.npy`` file (``source``, opened for reading and writing) rewritten in place."""

    source: NpySource
    opset: int | None
    window_bytes: int
    mode = "in_place"

    def run(self, progress: Progress | None = None) -> None:
        """Do the job; ``progress(done_bytes, total_bytes)`` is called as windows complete."""
        header, file, label = self.source.header, self.source.file, self.source.endpoint.label
        for start, window in relu_windows(
            file, label, header, self.opset, self.window_bytes, progress
        ):
            write_window(file, header, start, window)
        os.fsync(file.fileno())
