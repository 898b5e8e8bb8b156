"""Relu in onnxruntime: the onnx-relu library against onnxruntime's own kernels and against
``legalize``'s rewrites, and the targets of issue 11, as same-run ratios.

    python benchmarks/ort_library.py [--mib 64] [--threads 2] [--rounds 20] [--calls 3]

Every variant runs a one-node Relu model (opset 21) on the same --mib MiB of mixed-sign data
(never zeros: streaming stores of zero lines are faster) through an onnxruntime io binding with
a preallocated output, so only the Relu is timed. The variants are timed interleaved: in each
round every variant makes --calls calls back to back (the slow legalized models one), and each
variant keeps its best call over all rounds (the machine is shared with other jobs: best-of-N is
steadier than a median, and interleaving exposes every variant to the same moments). GB/s counts
bytes read plus bytes written. Variants:

- ``library``: ``onnx_relu.ort_session`` (the custom-op library, --threads kernel threads);
  for float32 also with streaming stores forced on (``library-nt``);
- ``onnxruntime``: onnxruntime alone (float32: its kernel; float16: its Cast -> Relu -> Cast);
- ``legalized``: ``onnx_relu.legalize(model)`` in onnxruntime alone (bfloat16, int16, int64);
- ``relu``: ``onnx_relu.relu(x, out=y)`` in NumPy, for reference.
onnxruntime's intra-op thread count is --threads for every variant.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time

import numpy as np
import onnxruntime
from onnx import helper

import onnx_relu
from onnx_relu.dtypes import RELU_TYPE_BY_NAME
from onnx_relu.onnx.ort import ort_value
from onnx_relu.onnx.ort_library import set_ort_library_nt_threshold

TYPES = ("float32", "float16", "bfloat16", "int16", "int64")


def one_relu(type_name: str, opset: int = 21):
    elem = RELU_TYPE_BY_NAME[type_name].elem_type
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")],
        "relu",
        [helper.make_tensor_value_info("x", elem, ["n"])],
        [helper.make_tensor_value_info("y", elem, ["n"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def mixed_sign(type_name: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    dtype = RELU_TYPE_BY_NAME[type_name].dtype
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return (rng.standard_normal(n, dtype=np.float32) * 100).astype(dtype)


def options(threads: int) -> onnxruntime.SessionOptions:
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return opts


class Bound:
    """A session with x and a preallocated y bound once; ``run()`` is one timed call."""

    def __init__(self, session, x: np.ndarray) -> None:
        self.session, self.x, self.y = session, x, np.empty_like(x)
        self.binding = session.io_binding()
        self.x_value, self.y_value = ort_value(self.x), ort_value(self.y)  # kept alive here
        self.binding.bind_ortvalue_input("x", self.x_value)
        self.binding.bind_ortvalue_output("y", self.y_value)

    def run(self) -> None:
        self.session.run_with_iobinding(self.binding)


def variants(type_name: str, n: int, threads: int) -> dict[str, object]:
    model = one_relu(type_name)
    data = model.SerializeToString()
    x = mixed_sign(type_name, n)
    found = {"library": Bound(onnx_relu.ort_session(model, sess_options=options(threads)), x)}
    if type_name in ("float32", "float16"):
        found["onnxruntime"] = Bound(
            onnxruntime.InferenceSession(
                data, options(threads), providers=["CPUExecutionProvider"]
            ),
            x,
        )
    else:
        legal = onnx_relu.legalize(model).SerializeToString()
        found["legalized"] = Bound(
            onnxruntime.InferenceSession(
                legal, options(threads), providers=["CPUExecutionProvider"]
            ),
            x,
        )
    y = np.empty_like(x)
    found["relu"] = lambda: onnx_relu.relu(x, out=y)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=3, help="calls per variant and round")
    args = parser.parse_args(argv)
    nbytes = args.mib << 20

    onnx_relu.set_num_threads(args.threads)  # the NumPy kernel, and the library at registration
    cases: dict[tuple[str, str], object] = {}
    for type_name in TYPES:
        n = nbytes // RELU_TYPE_BY_NAME[type_name].dtype.itemsize
        for label, runner in variants(type_name, n, args.threads).items():
            cases[(type_name, label)] = runner
    cases[("float32", "library-nt")] = cases[("float32", "library")]

    default_nt = set_ort_library_nt_threshold(None)
    load_before = os.getloadavg()[0]
    best = {key: float("inf") for key in cases}
    for _ in range(args.rounds):
        for key, runner in cases.items():
            call = runner.run if isinstance(runner, Bound) else runner
            set_ort_library_nt_threshold(0 if key[1] == "library-nt" else default_nt)
            gc.collect()
            time.sleep(0.02)  # onnxruntime's worker threads spin after a call: let them settle
            for _ in range(1 if key[1] == "legalized" else args.calls):
                start = time.perf_counter()
                call()
                best[key] = min(best[key], time.perf_counter() - start)
    set_ort_library_nt_threshold(default_nt)
    for key, runner in cases.items():  # every variant computed Relu, not something else
        if isinstance(runner, Bound):
            want = onnx_relu.relu(runner.x)
            if key[1] == "onnxruntime":  # its -0.0 and quieted NaNs do not occur in this data
                assert np.array_equal(runner.y, want), key
            else:
                assert np.array_equal(runner.y.view(np.uint8), want.view(np.uint8)), key

    gbps = {key: 2 * nbytes / seconds / 1e9 for key, seconds in best.items()}
    print(
        f"onnxruntime {onnxruntime.__version__}, onnx-relu {onnx_relu.__version__}, "
        f"{platform.machine()}, {args.mib} MiB, {args.threads} threads, best call of "
        f"{args.rounds} interleaved rounds x {args.calls} calls; library streaming threshold "
        f"{default_nt} bytes; load average before/after {load_before:.1f}/"
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'type':10} {'variant':12} {'GB/s':>7}")
    for (type_name, label), value in gbps.items():
        print(f"{type_name:10} {label:12} {value:7.2f}")

    f32 = gbps[("float32", "library")]
    targets = [
        ("float32 library / onnxruntime float32", f32 / gbps[("float32", "onnxruntime")], 1.0),
        (
            "float32 library (streaming) / onnxruntime float32",
            gbps[("float32", "library-nt")] / gbps[("float32", "onnxruntime")],
            1.2,
        ),
        (
            "float16 library / onnxruntime cast path",
            gbps[("float16", "library")] / gbps[("float16", "onnxruntime")],
            4.0,
        ),
    ]
    for type_name in ("bfloat16", "int16", "int64"):
        lib = gbps[(type_name, "library")]
        targets.append((f"{type_name} library / float32 library", lib / f32, 0.9))
        targets.append(
            (f"{type_name} library / legalized", lib / gbps[(type_name, "legalized")], 20.0)
        )
    print(f"\n{'target':52} {'ratio':>7} {'min':>5}  met")
    for label, ratio, minimum in targets:
        print(f"{label:52} {ratio:7.2f} {minimum:5.1f}  {'yes' if ratio >= minimum else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
