"""The copy ceiling: how fast this machine moves bytes the way relu writes its output.

:func:`copy_ceiling` is the kernel's own loops, parts, threads and store choice without the
compare: the fastest any relu can be on this machine, which a program can time next to its relu
calls (``onnx-relu bench`` compares relu with it, so a ratio near 1 says relu runs at the speed
of moving its bytes).
"""

from __future__ import annotations

from . import _relu
from . import tuning as _tuning  # noqa: F401  (the kernel's first load applies ONNX_RELU_*)

__all__ = ["copy_ceiling"]


def copy_ceiling(src: object, dst: object, *, nontemporal: bool = True) -> None:
    """Copy ``src`` into ``dst`` the way relu writes its output: the benchmark's ceiling.

    The copy is split over the kernel's threads like a relu call of that size, and uses
    streaming stores (``nontemporal=True``) or regular ones. ``src`` and ``dst`` are contiguous
    buffers (numpy arrays, bytearrays) of the same size, disjoint or the same one (in place).

    Raises
    ------
    ValueError
        for buffers of different sizes or that partly overlap; BufferError for a read-only
        ``dst``.

    Examples
    --------
    >>> import numpy as np
    >>> src, dst = np.arange(100, dtype=np.int8), np.zeros(100, dtype=np.int8)
    >>> copy_ceiling(src, dst, nontemporal=False)
    >>> bool((src == dst).all())
    True
    """
    _relu._copy(src, dst, nontemporal=nontemporal)
