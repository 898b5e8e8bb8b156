"""The kernel's cache detection and streaming-store rule, called from Python through ctypes.

:func:`build` compiles tests/kernel/cache_probe.c with src/kernel/relu_tuning.c into a shared
library (the kernel's pure functions need no Python API of their own in the shipped module);
:class:`CacheProbe` wraps it with the dicts and errors the tests compare.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
KERNEL = REPOSITORY / "src" / "kernel"
PROBE = Path(__file__).resolve().parent / "cache_probe.c"


def build(folder: Path) -> Path:
    """Compile the probe library into ``folder``; its path."""
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        pytest.fail(f"no C compiler {compiler!r} (set CC): the cache probe is built from C")
    library = folder / "cache_probe.so"
    command = [
        compiler, "-std=c11", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-DRELU_API=",
        f"-I{KERNEL}", str(KERNEL / "relu_tuning.c"), str(PROBE), "-o", str(library),
    ]  # fmt: skip
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    assert built.returncode == 0, f"{' '.join(command)}\n{built.stdout}{built.stderr}"
    assert "warning:" not in built.stderr, built.stderr
    return library


class CacheProbe:
    """The probe library loaded: the kernel's functions with Python arguments and results."""

    def __init__(self, library: Path) -> None:
        lib = ctypes.CDLL(str(library))
        lib.probe_sysconf_l2.restype = lib.probe_sysconf_l3.restype = ctypes.c_long
        lib.probe_read_caches.restype = None
        lib.probe_read_caches.argtypes = [
            ctypes.c_char_p, ctypes.c_long, ctypes.c_long, ctypes.POINTER(ctypes.c_ssize_t),
            ctypes.POINTER(ctypes.c_ssize_t), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_char_p),
        ]  # fmt: skip
        lib.probe_vendor_from_cpuid.restype = ctypes.c_char_p
        lib.probe_vendor_from_cpuid.argtypes = [ctypes.c_char_p]
        lib.probe_default_nt_bytes.restype = ctypes.c_ssize_t
        lib.probe_default_nt_bytes.argtypes = [ctypes.c_char_p, ctypes.c_ssize_t, ctypes.c_ssize_t]
        lib.probe_default_nt_streams.restype = ctypes.c_ssize_t
        lib.probe_default_nt_streams.argtypes = [ctypes.c_char_p]
        self._lib = lib

    def read_caches(
        self,
        sysfs_root: str | os.PathLike[str],
        *,
        sysconf_l2: int | None = None,
        sysconf_l3: int | None = None,
    ) -> dict[str, int | str]:
        """The caches read from a sysfs tree, then the sysconf figures (None: this machine's)."""
        l2 = self._lib.probe_sysconf_l2() if sysconf_l2 is None else sysconf_l2
        l3 = self._lib.probe_sysconf_l3() if sysconf_l3 is None else sysconf_l3
        l2_bytes, llc_bytes = ctypes.c_ssize_t(), ctypes.c_ssize_t()
        shared, source = ctypes.c_int(), ctypes.c_char_p()
        self._lib.probe_read_caches(
            os.fsencode(sysfs_root), l2, l3, ctypes.byref(l2_bytes), ctypes.byref(llc_bytes),
            ctypes.byref(shared), ctypes.byref(source),
        )  # fmt: skip
        assert source.value is not None
        return {
            "l2_bytes": l2_bytes.value, "llc_bytes": llc_bytes.value,
            "llc_shared_cpus": shared.value, "cache_source": source.value.decode(),
        }  # fmt: skip

    def vendor_from_cpuid(self, vendor_id: str) -> str:
        name = self._lib.probe_vendor_from_cpuid(vendor_id.encode())
        assert name is not None
        return name.decode()

    def default_nt_threshold(self, vendor: str, l2_bytes: int, llc_bytes: int) -> int:
        """The kernel's streaming-store rule; ValueError for a vendor it does not name."""
        threshold = self._lib.probe_default_nt_bytes(vendor.encode(), l2_bytes, llc_bytes)
        if threshold < 0:
            raise ValueError(f"unknown vendor '{vendor}'; allowed: 'intel', 'amd', 'other'")
        return int(threshold)

    def default_nt_streams(self, vendor: str) -> int:
        """The pages the streaming-store loop walks side by side; ValueError as above."""
        streams = self._lib.probe_default_nt_streams(vendor.encode())
        if streams < 0:
            raise ValueError(f"unknown vendor '{vendor}'; allowed: 'intel', 'amd', 'other'")
        return int(streams)
