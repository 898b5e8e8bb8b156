"""The peers onnx-relu is measured against: numpy, onnxruntime and torch, each where installed.

onnxruntime and torch are optional: :class:`Peers` imports them once and says why one is
missing; every variant here reads and writes the case's own arrays (onnxruntime through io
binding, torch through tensors sharing their memory), so that no peer pays for a copy.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np

import onnx_relu
from onnx_relu.dtypes import RELU_TYPE_BY_NAME

from .cases import Case, Variant

__all__ = [
    "PEERS",
    "Peers",
    "numpy_variants",
    "ort_sessions",
    "ort_variants",
    "backend_variants",
    "torch_variants",
]

PEERS = ("numpy", "onnxruntime", "torch")


class Peers:
    """The optional peers, imported once; ``missing`` says why one is absent."""

    def __init__(self, wanted: Sequence[str]) -> None:
        # the modules, imported only when measured (Any: onnxruntime and torch are untyped)
        self.ort: Any = None
        self.onnx: Any = None
        self.torch: Any = None
        self.missing: dict[str, str] = {}
        if "onnxruntime" in wanted:
            self.ort, why = _optional("onnxruntime")
            self.onnx, why_onnx = _optional("onnx")
            if self.ort is None or self.onnx is None:
                self.ort = None
                self.missing["onnxruntime"] = why or why_onnx
        if "torch" in wanted:
            self.torch, why = _optional("torch")
            if self.torch is None:
                self.missing["torch"] = why

    def versions(self) -> dict[str, str]:
        found = {"numpy": np.__version__, "onnx_relu": onnx_relu.__version__}
        for name, module in (("onnxruntime", self.ort), ("torch", self.torch)):
            if module is not None:
                found[name] = module.__version__
        return found


def _optional(name: str) -> tuple[Any, str]:
    """The module ``name``, or None and why not: for a package of one of onnx-relu's extras,
    the missing-extra rule's message (which extra, how to install it)."""
    from onnx_relu.errors import MissingExtraError

    try:
        return importlib.import_module(name), ""
    except ImportError as exc:
        rule = MissingExtraError.from_error(exc, f"the {name} peer")
        return None, str(rule) if rule is not None else f"not installed ({exc})"


def numpy_variants(case: Case) -> list[Variant]:
    """``np.maximum`` out of place and allocating, and ``np.copyto`` (a ceiling); 1 thread."""
    x, out = case.x, case.out
    zero = x.dtype.type(0)
    return [
        Variant("np.copyto", "ceiling", 1, False, lambda: np.copyto(out, x)),
        Variant("numpy maximum out", "numpy", 1, False, lambda: np.maximum(x, zero, out=out)),
        Variant("numpy maximum alloc", "numpy", 1, False, lambda: np.maximum(x, zero)),
    ]


def ort_model(onnx: Any, name: str) -> bytes:
    """A model of one Relu node (opset 14) on tensors of type ``name``, serialised."""
    helper = onnx.helper
    element = RELU_TYPE_BY_NAME[name].elem_type
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"])],
        "relu",
        [helper.make_tensor_value_info("X", element, None)],
        [helper.make_tensor_value_info("Y", element, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    data: bytes = model.SerializeToString()
    return data


def ort_sessions(
    peers: Peers, name: str, thread_counts: Sequence[int]
) -> tuple[dict[int, Any], str]:
    """One session per thread count, or a reason why onnxruntime cannot run the type."""
    from onnx_relu.onnx import ort  # imports onnx and onnxruntime: only when measured

    model = ort_model(peers.onnx, name)
    sessions: dict[int, Any] = {}
    for threads in thread_counts:
        try:
            sessions[threads] = ort.inference_session(model, threads=threads)
        except Exception as exc:  # noqa: BLE001 - onnxruntime has its own NotImplemented, Fail...
            message = str(exc).splitlines()[0]
            return {}, f"no kernel: {message}"
    return sessions, ""


def ort_variants(case: Case, sessions: dict[int, Any]) -> list[Variant]:
    """onnxruntime's Relu into the case's output, and ``session.run`` (which allocates its
    output, from onnxruntime's arena), one of each per session (thread count)."""
    from onnx_relu.onnx import ort

    x_value, y_value = ort.ort_value(case.x), ort.ort_value(case.out)
    variants = []
    for threads, session in sessions.items():
        binding = session.io_binding()
        binding.bind_ortvalue_input("X", x_value)
        binding.bind_ortvalue_output("Y", y_value)
        run = session.run_with_iobinding
        variants.append(
            Variant(
                "onnxruntime out",
                "onnxruntime",
                threads,
                False,
                lambda run=run, binding=binding: run(binding),
                spins=threads > 1,
            )
        )
        feeds = {"X": case.x}
        variants.append(
            Variant(
                "onnxruntime run",
                "onnxruntime",
                threads,
                False,
                lambda session=session, feeds=feeds: session.run(None, feeds),
                spins=threads > 1,
            )
        )
    return variants


def backend_variants(peers: Peers, case: Case, thread_counts: Sequence[int]) -> list[Variant]:
    """onnx-relu's ONNX backend running the one-node model onnxruntime runs (needs onnx)."""
    from onnx_relu.onnx import backend  # imports onnx: only when measured

    rep = backend.prepare(ort_model(peers.onnx, case.name))
    inputs = [case.x]
    return [
        Variant(
            "onnx_relu backend run",
            "onnx_relu",
            threads,
            False,
            lambda: rep.run(inputs),
            functools.partial(onnx_relu.set_num_threads, threads),
        )
        for threads in thread_counts
    ]


def torch_variants(peers: Peers, case: Case, thread_counts: Sequence[int]) -> list[Variant]:
    """torch ``clamp_min(x, 0, out=y)`` and in-place ``relu_()`` at each thread count."""
    torch = peers.torch

    def tensor(array: np.ndarray) -> Any:
        if case.name == "bfloat16":
            return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
        return torch.from_numpy(array)

    tx, tout = tensor(case.x), tensor(case.out)
    tbuffers = {id(buffer): tensor(buffer) for buffer in case.buffers}
    variants = []
    for threads in thread_counts:

        def prepare(threads: int = threads) -> None:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)

        spins = threads > 1
        variants += [
            Variant(
                "torch clamp_min out",
                "torch",
                threads,
                False,
                lambda: torch.clamp_min(tx, 0, out=tout),
                prepare,
                spins=spins,
            ),
            Variant(
                "torch relu_",
                "torch",
                threads,
                True,
                lambda b: tbuffers[id(b)].relu_(),
                prepare,
                spins=spins,
            ),
        ]
    return variants
