"""The progress callback the file jobs report through: ``progress(done_bytes, total_bytes)``.

:func:`onnx_relu.files.relu_file` and :func:`onnx_relu.files.relu_zarr` call it once before the
first byte is written (``done_bytes == 0``) and then as work completes, ``done_bytes`` growing to
``total_bytes``. The ``onnx-relu`` command draws a progress bar with it.

Examples
--------
>>> from onnx_relu.files import Progress
>>> reports: list = []
>>> def record(done: int, total: int) -> None:
...     reports.append(f"{done}/{total}")
>>> progress: Progress = record
>>> progress(0, 8); progress(8, 8)
>>> reports
['0/8', '8/8']
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Progress"]

#: ``progress(done_bytes, total_bytes)``, called once before the first window and after each.
Progress = Callable[[int, int], None]
