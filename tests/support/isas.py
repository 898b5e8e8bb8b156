"""The kernel's streaming-store levels, as the tests name them."""

from __future__ import annotations

import platform

#: The streaming-store levels of the architecture the kernel was built for, lowest first
#: ("none" turns streaming stores off).
ALL_ISAS = (
    ["none", "stnp"]
    if platform.machine() in {"aarch64", "arm64"}
    else ["none", "sse2", "avx2", "avx512"]
)


def isas_up_to(best: str) -> list[str]:
    """The levels this machine can run: every one up to ``best`` (kernel_tuning's best_nt_isa)."""
    return ALL_ISAS[: ALL_ISAS.index(best) + 1]
