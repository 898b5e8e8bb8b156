"""``--models``: whole models in onnxruntime -- stock, with the onnx-relu library (each choice of
``ort_session``), and legalized -- as same-run ratios to stock onnxruntime.

The models are built here with ``onnx.helper``, shaped as exporters write them:

- ``cnn``: a torch-style CNN, input [N, 3, 32, 32]: two stages of Conv 3x3 (16, then 32
  channels, bias, pad 1) + Relu + MaxPool 2x2, then Flatten and a Gemm to 10 classes (what
  ``torch.onnx.export`` writes for ``nn.Sequential(Conv2d, ReLU, MaxPool2d, ...)``);
- ``mlp``: an sklearn-style MLP(256, 128) on 784 features: Gemm + Relu, Gemm + Relu, Gemm to 10
  (what skl2onnx writes for ``MLPClassifier(hidden_layer_sizes=(256, 128))``, less its ZipMap).

Each in float32, float16 (weights and activations), and "bfloat16": the float32 model with each
Relu run in bfloat16 (Cast -> Relu -> Cast, a mixed-precision export: onnxruntime's CPU provider
has no bfloat16 Conv or Gemm, and no bfloat16 Relu -- stock onnxruntime refuses it). Opset 17.

Variants (onnxruntime's intra-op threads = ``--threads`` in each):

- ``stock``: onnxruntime alone;
- ``library``: ``onnx_relu.ort_session(model)`` (the default: the library takes only the Relu
  nodes onnxruntime cannot run);
- ``library-exact``: ``ort_session(model, exact=True)`` (every Relu the library's, on the
  session's intra-op threads), and ``library-exact-own-pool`` the same with the library's own
  pool of ``--threads`` threads (``set_ort_library_num_threads``);
- ``legalize``, ``legalize-exact``: ``onnx_relu.legalize(model, exact=...)`` in stock onnxruntime.

Timing: every variant of one model and batch is timed interleaved (each round runs each variant
``calls`` times back to back, after a pause for onnxruntime's spinning workers). Two figures per
variant: the median CPU time of a call (``time.process_time``, every thread of the process: on a
machine shared with other processes it moves far less than wall time, and at one intra-op thread it
is the work done; at more threads it includes onnxruntime's workers spinning) and the best
wall-clock time of a call. Ratios are time / stock's time (lower is better; for bfloat16, which
stock cannot run, time / the library's). The outputs of every variant are checked against
stock's (or the library's) before timing: the same values up to the sign of zero
(float16: up to the rounding of a float16 value between a Conv or Gemm and its Relu).
"""

from __future__ import annotations

import gc
import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["MODELS", "build_model", "run_models", "format_models"]

#: (model, batch sizes): batch 1 and a large batch.
MODELS: dict[str, tuple[int, ...]] = {"cnn": (1, 64), "mlp": (1, 8192)}
KINDS = ("float32", "float16", "bfloat16")
VARIANTS = (
    "stock",
    "library",
    "library-exact",
    "library-exact-own-pool",
    "legalize",
    "legalize-exact",
)
OPSET = 17


def build_model(name: str, kind: str, seed: int = 0) -> Any:
    """The ``name`` model ("cnn" or "mlp") in ``kind`` ("float32", "float16", "bfloat16")."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weight_type = np.float16 if kind == "float16" else np.float32
    elem = TensorProto.FLOAT16 if kind == "float16" else TensorProto.FLOAT
    initializers: list[Any] = []
    nodes: list[Any] = []

    def weight(label: str, shape: Sequence[int], fan_in: int) -> str:
        values = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        initializers.append(numpy_helper.from_array(values.astype(weight_type), label))
        return label

    def relu(x: str, label: str) -> str:
        if kind != "bfloat16":
            nodes.append(helper.make_node("Relu", [x], [f"{label}_out"], name=label))
            return f"{label}_out"
        nodes.append(
            helper.make_node(
                "Cast", [x], [f"{label}_in"], to=TensorProto.BFLOAT16, name=f"{label}/to_bf16"
            )
        )
        nodes.append(helper.make_node("Relu", [f"{label}_in"], [f"{label}_bf"], name=label))
        nodes.append(
            helper.make_node(
                "Cast", [f"{label}_bf"], [f"{label}_out"], to=elem, name=f"{label}/to_f32"
            )
        )
        return f"{label}_out"

    if name == "cnn":
        x, channels, side = "input", 3, 32
        for stage, out_channels in enumerate((16, 32)):
            w = weight(f"conv{stage}.weight", (out_channels, channels, 3, 3), channels * 9)
            b = weight(f"conv{stage}.bias", (out_channels,), channels * 9)
            nodes.append(
                helper.make_node(
                    "Conv", [x, w, b], [f"conv{stage}"], pads=[1, 1, 1, 1], name=f"conv{stage}"
                )
            )
            r = relu(f"conv{stage}", f"relu{stage}")
            nodes.append(
                helper.make_node(
                    "MaxPool",
                    [r],
                    [f"pool{stage}"],
                    kernel_shape=[2, 2],
                    strides=[2, 2],
                    name=f"pool{stage}",
                )
            )
            x, channels, side = f"pool{stage}", out_channels, side // 2
        nodes.append(helper.make_node("Flatten", [x], ["flat"], name="flatten"))
        features = channels * side * side
        w = weight("fc.weight", (10, features), features)
        b = weight("fc.bias", (10,), features)
        nodes.append(helper.make_node("Gemm", ["flat", w, b], ["output"], transB=1, name="fc"))
        input_shape: list[Any] = ["N", 3, 32, 32]
    elif name == "mlp":
        x, width = "input", 784
        for layer, out_width in enumerate((256, 128, 10)):
            w = weight(f"coefs_{layer}", (width, out_width), width)
            b = weight(f"intercepts_{layer}", (out_width,), width)
            out = "output" if layer == 2 else f"gemm{layer}"
            nodes.append(helper.make_node("Gemm", [x, w, b], [out], name=f"gemm{layer}"))
            x, width = (out if layer == 2 else relu(out, f"relu{layer}")), out_width
        input_shape = ["N", 784]
    else:
        raise ValueError(f"unknown model {name!r}; known: {sorted(MODELS)}")
    graph = helper.make_graph(
        nodes,
        f"{name}_{kind}",
        [helper.make_tensor_value_info("input", elem, input_shape)],
        [helper.make_tensor_value_info("output", elem, ["N", 10])],
        initializer=initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def _feeds(name: str, kind: str, batch: int) -> dict[str, np.ndarray]:
    shape = (batch, 3, 32, 32) if name == "cnn" else (batch, 784)
    data = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    return {"input": data.astype(np.float16 if kind == "float16" else np.float32)}


def _sessions(model: Any, threads: int) -> dict[str, Any]:
    """Each variant's session (None where it cannot be made), and why not."""
    import onnxruntime

    import onnx_relu

    def options() -> Any:
        made = onnxruntime.SessionOptions()
        made.intra_op_num_threads = threads
        made.inter_op_num_threads = 1
        made.log_severity_level = 3
        return made

    makers: dict[str, Callable[[], Any]] = {
        "stock": lambda: onnxruntime.InferenceSession(
            model.SerializeToString(), options(), providers=["CPUExecutionProvider"]
        ),
        "library": lambda: onnx_relu.ort_session(model, options()),
        "library-exact": lambda: onnx_relu.ort_session(model, options(), exact=True),
        "legalize": lambda: onnxruntime.InferenceSession(
            onnx_relu.legalize(model).SerializeToString(),
            options(),
            providers=["CPUExecutionProvider"],
        ),
        "legalize-exact": lambda: onnxruntime.InferenceSession(
            onnx_relu.legalize(model, exact=True).SerializeToString(),
            options(),
            providers=["CPUExecutionProvider"],
        ),
    }
    sessions: dict[str, Any] = {}
    for variant, make in makers.items():
        try:
            sessions[variant] = make()
        except Exception as error:  # noqa: BLE001 - onnxruntime and legalize raise their own
            sessions[variant] = f"n/a: {str(error).strip().splitlines()[0][:90]}"
    sessions["library-exact-own-pool"] = sessions["library-exact"]
    return sessions


def run_models(
    threads: int, rounds: int, calls: int, models: Sequence[str] = tuple(MODELS)
) -> list[dict[str, Any]]:
    """Time every variant of every model, kind and batch; one record per (model, kind, batch)."""
    from ..onnx.ort_library import set_ort_library_num_threads

    records = []
    for name in models:
        for kind in KINDS:
            model = build_model(name, kind)
            sessions = _sessions(model, threads)
            for batch in MODELS[name]:
                feeds = _feeds(name, kind, batch)
                live = {v: s for v, s in sessions.items() if not isinstance(s, str)}
                reference_variant = "stock" if "stock" in live else "library"
                reference = live[reference_variant].run(None, feeds)[0]
                for variant, session in live.items():  # every variant computes the same model
                    got = session.run(None, feeds)[0]
                    # float16: onnxruntime runs float16 Conv/Gemm+Relu in float (casts around
                    # the fused node); a Relu node between them rounds to float16 first
                    tolerance = (
                        {"rtol": 1e-2, "atol": 1e-2}
                        if kind == "float16"
                        else {"rtol": 0, "atol": 0}
                    )
                    np.testing.assert_allclose(
                        got, reference, err_msg=f"{name} {kind} {variant}", **tolerance
                    )
                best = {variant: float("inf") for variant in live}
                cpu: dict[str, list[float]] = {variant: [] for variant in live}
                for _ in range(rounds):
                    for variant, session in live.items():
                        own_pool = variant == "library-exact-own-pool"
                        previous = set_ort_library_num_threads(threads if own_pool else None)
                        gc.collect()
                        time.sleep(0.02)  # onnxruntime's workers spin after a call
                        for _ in range(calls):
                            start, start_cpu = time.perf_counter(), time.process_time()
                            session.run(None, feeds)
                            cpu[variant].append(time.process_time() - start_cpu)
                            best[variant] = min(best[variant], time.perf_counter() - start)
                        set_ort_library_num_threads(previous)
                records.append(
                    {
                        "model": name,
                        "kind": kind,
                        "batch": batch,
                        "reference": reference_variant,
                        "seconds": best,
                        "cpu_seconds": {v: float(np.median(c)) for v, c in cpu.items()},
                        "unavailable": {v: s for v, s in sessions.items() if isinstance(s, str)},
                    }
                )
    return records


def format_models(records: list[dict[str, Any]], threads: int, rounds: int, calls: int) -> str:
    """Two tables of ratios to the reference (stock, else the library): the median CPU time of
    a call (all threads of the process: steady on a loaded machine, and at 1 intra-op thread
    exactly the work done) and the best wall-clock time of a call."""
    import onnxruntime

    import onnx_relu

    lines = [
        f"Whole models: onnxruntime {onnxruntime.__version__}, onnx-relu {onnx_relu.__version__},"
        f" {platform.machine()} ({_cpu_name()}), {threads} intra-op thread(s), {rounds}"
        f" interleaved rounds x {calls} calls, load average {os.getloadavg()[0]:.1f} on"
        f" {os.cpu_count()} CPUs. Ratio: time / stock's time (bfloat16, which stock cannot run:"
        " / the library's) -- lower is better, 1.00 = the same.",
    ]
    for title, field in (
        ("median CPU time of a call (process_time)", "cpu_seconds"),
        ("best wall-clock time of a call", "seconds"),
    ):
        lines += [
            "",
            f"{title}:",
            "",
            "| model | type | batch | reference ms | " + " | ".join(VARIANTS[1:]) + " |",
            "|---|---|---|---|" + "---|" * (len(VARIANTS) - 1),
        ]
        for record in records:
            seconds = record[field]
            reference = seconds[record["reference"]]
            cells = [
                f"{seconds[variant] / reference:.2f}" if variant in seconds else "n/a"
                for variant in VARIANTS[1:]
            ]
            where = "stock" if record["reference"] == "stock" else "library"
            lines.append(
                f"| {record['model']} | {record['kind']} | {record['batch']} |"
                f" {where} {reference * 1e3:.3f} | " + " | ".join(cells) + " |"
            )
    notes = sorted({f"{v}: {why}" for r in records for v, why in r["unavailable"].items()})
    if notes:
        lines += ["", "Not run:"] + [f"- {note}" for note in notes]
    return "\n".join(lines)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
