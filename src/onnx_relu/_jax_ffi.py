"""Relu under ``jax.jit``, ``jax.vmap`` and ``jax.grad`` through jax's FFI, where it can be built.

The handler, ``_jax_ffi.c`` beside this module, calls the kernel of :mod:`onnx_relu._relu` on
the buffers XLA hands over: no Python and no copy in the call, against ``jax.pure_callback``'s
Python callback and copy of the result (about 0.1 x its time on 6 elements and 0.3-0.5 x on
64 MiB, BENCHMARKS.md). It is not built with the package: the XLA FFI headers come with
jaxlib, so it is compiled on first use with the C compiler (``$CC``, else Python's, else
``cc``) against ``jax.ffi.include_dir()``, once per jaxlib and source, into
``${XDG_CACHE_HOME:-~/.cache}/onnx-relu/jax-ffi``. Where that fails (no compiler, no headers, a
read-only cache), or ``ONNX_RELU_JAX_FFI=0`` is set, :func:`registered` says False and relu
uses ``jax.pure_callback``; the reason is logged at DEBUG on the ``onnx_relu`` logger.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path
from typing import Any

from . import _relu
from ._log import logger

__all__ = ["TARGET", "registered", "why_not"]

#: The name the handler is registered under with ``jax.ffi.register_ffi_target``.
TARGET = "onnx_relu_relu"
#: The variable that turns the FFI off (``0``): relu then uses ``jax.pure_callback``.
ENV_JAX_FFI = "ONNX_RELU_JAX_FFI"

_HERE = Path(__file__).resolve().parent
_SOURCE = _HERE / "_jax_ffi.c"
_ENTRY_HEADER = _HERE / "_relu_kernel_entry.h"
_CAPSULE = b"onnx_relu._relu.kernel_entry"

_state: bool | None = None  # None: not tried yet
_lock = threading.Lock()
_reason = ""
_library: Any = None  # the loaded handler, kept for the process's life


def registered() -> bool:
    """True once the handler is registered with jax (tried once per process, by one thread)."""
    global _state, _reason
    if _state is None:
        with _lock:
            if _state is None:
                try:
                    _register()
                    _state = True
                except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as exc:
                    _state, _reason = False, str(exc)
                    logger.debug("relu under jax transformations uses jax.pure_callback: %s", exc)
    return _state


def why_not() -> str:
    """Why the handler is not registered ("" if it is, or was not tried yet)."""
    return _reason


def _register() -> None:
    global _library
    if os.environ.get(ENV_JAX_FFI, "1").strip() == "0":
        raise ValueError(f"{ENV_JAX_FFI}=0 is set")
    jax = sys.modules["jax"]
    library = ctypes.CDLL(str(_built(jax.ffi.include_dir())))
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    library.onnx_relu_jax_ffi_init.argtypes = [ctypes.c_void_p]
    library.onnx_relu_jax_ffi_init.restype = ctypes.c_int
    if library.onnx_relu_jax_ffi_init(get_pointer(_relu._kernel_entry(), _CAPSULE)) != 0:
        raise RuntimeError("the handler was written for another version of the kernel entry")
    jax.ffi.register_ffi_target(
        TARGET, jax.ffi.pycapsule(library.onnx_relu_jax_ffi), platform="cpu"
    )
    _library = library


def _compiler() -> list[str]:
    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shlex.split(command)


def _built(include_dir: str) -> Path:
    """The handler's shared library for these headers, compiled if it is not in the cache."""
    header = Path(include_dir) / "xla" / "ffi" / "api" / "c_api.h"
    if not header.is_file():
        raise OSError(f"jaxlib's FFI header {header} is missing")
    key = hashlib.sha256()
    for part in (_SOURCE, _ENTRY_HEADER, header):
        key.update(part.read_bytes())
    key.update(sys.implementation.cache_tag.encode())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache / "onnx-relu" / "jax-ffi"
    target = folder / f"relu-{key.hexdigest()[:20]}.so"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        built = Path(scratch) / target.name
        command = [
            *_compiler(),
            "-O2",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-I",
            str(_HERE),
            "-I",
            include_dir,
            str(_SOURCE),
            "-o",
            str(built),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise OSError(f"compiling the jax FFI handler failed: {last}")
        os.replace(built, target)  # (whole or not at all, for another process building it too)
    return target
