"""What opening a model costs through onnx-relu against onnxruntime alone, in the same run.

``python -m onnx_relu.bench --figures session-creation`` (also ``python
src/onnx_relu/bench/session_creation.py [--small]`` against any installed onnx-relu: it uses
the public API only) builds four float32 models in a temporary folder, each with its weights
in the file:

- ``relu-1``: one Relu;
- ``chain-2000``: 2,000 Relus one after the other;
- ``cnn-45MiB``: convolutions with about 45 MiB of weights (resnet18's size), a Relu after
  each: the default routes none of its Relus, so the file should go to onnxruntime unchanged;
- ``mlp-500MiB``: MatMuls with about 500 MiB of weights, a Relu after each
  (``--small``: 100 MiB);
- ``bf16-45MiB``: the CNN with a bfloat16 Relu between casts after its first convolution, the
  one node the default routes to the library (stock onnxruntime cannot open it: its figures
  are those of ``cnn-45MiB``).

For each, in one warm process with the same options (median of 7, interleaved):
``onnxruntime.InferenceSession(path, options)`` against ``onnx_relu.ort_session(path,
options)`` and ``ort_session(path, options, exact=True)``, and ``onnx.load(path)`` against
``onnx_relu.check_model(path)``. Peak resident memory (``VmHWM``) of fresh processes that
each open one session: onnxruntime against ``ort_session``, both with onnx and onnx_relu
imported (what importing them costs is given apart), the least of three processes each, and
of one process each with glibc's mmap threshold fixed at its default (onnxruntime's own peak
on a large model otherwise moves by 100-200 MB between identical processes). The
goals:
creation within 1.1x of stock or +10 ms, peak RSS within stock + 10 MB.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["build_models", "creation_times", "peak_rss", "session_creation", "main"]


def _conv_relu_model(weights_mib: float, bf16_relu: bool) -> Any:
    """Conv(3x3) -> Relu layers of 128 channels until about ``weights_mib`` MiB of weights."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    channels = 128
    per_layer = channels * channels * 9 * 4
    layers = max(1, round(weights_mib * 2**20 / per_layer))
    nodes, initializers = [], []
    previous = "x"
    for i in range(layers):
        weight = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32) * 0.05
        initializers.append(numpy_helper.from_array(weight, f"w{i}"))
        nodes.append(helper.make_node("Conv", [previous, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        if bf16_relu and i == 0:
            nodes += [
                helper.make_node("Cast", [f"c{i}"], [f"b{i}"], to=TensorProto.BFLOAT16),
                helper.make_node("Relu", [f"b{i}"], [f"rb{i}"]),
                helper.make_node("Cast", [f"rb{i}"], [f"r{i}"], to=TensorProto.FLOAT),
            ]
        else:
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        previous = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 8, 8])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, channels, 8, 8])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _mlp_model(weights_mib: float) -> Any:
    """MatMul -> Relu layers of 2048 x 2048 float32 weights (16 MiB each)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    width = 2048
    layers = max(1, round(weights_mib * 2**20 / (width * width * 4)))
    nodes, initializers = [], []
    previous = "x"
    for i in range(layers):
        weight = rng.standard_normal((width, width), dtype=np.float32) * 0.02
        initializers.append(numpy_helper.from_array(weight, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [previous, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
        previous = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["batch", width])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _chain_model(length: int) -> Any:
    from onnx import TensorProto, helper

    names = ["x"] + [f"r{i}" for i in range(length)]
    nodes = [
        helper.make_node("Relu", [a], [b], name=b)
        for a, b in zip(names[:-1], names[1:], strict=True)
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, ["n"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def build_models(folder: str, big_mib: float = 500.0) -> dict[str, str]:
    """The benchmark's models written into ``folder``: name -> path."""
    import onnx

    models = {
        "relu-1": _chain_model(1),
        "chain-2000": _chain_model(2000),
        "cnn-45MiB": _conv_relu_model(45, False),
        f"mlp-{big_mib:.0f}MiB": _mlp_model(big_mib),
        "bf16-45MiB": _conv_relu_model(45, True),
    }
    paths = {}
    for name, model in models.items():
        path = os.path.join(folder, f"{name}.onnx")
        onnx.save(model, path)
        paths[name] = path
    return paths


def _options() -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return options


def creation_times(path: str, repeats: int = 7, stock_path: str | None = None) -> dict[str, float]:
    """Median seconds (``repeats`` interleaved rounds after one warm-up) of each way of opening
    ``path``, each with new options made the same way (stock onnxruntime opens ``stock_path``,
    default ``path``: the same model without what it cannot run)."""
    import onnx
    import onnxruntime

    import onnx_relu

    stock = path if stock_path is None else stock_path
    ways: dict[str, Callable[[], object]] = {
        "InferenceSession": lambda: onnxruntime.InferenceSession(stock, _options()),
        "ort_session": lambda: onnx_relu.ort_session(path, _options()),
        "ort_session exact": lambda: onnx_relu.ort_session(path, _options(), exact=True),
        "onnx.load": lambda: onnx.load(path),
        "check_model": lambda: onnx_relu.check_model(path),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for round_ in range(repeats + 1):
        for name, way in ways.items():
            started = time.perf_counter()
            result = way()
            elapsed = time.perf_counter() - started
            del result
            if round_:
                times[name].append(elapsed)
    return {name: statistics.median(values) for name, values in times.items()}


_RSS_SCRIPT = """
import json, sys
def peak():  # this process's own high-water mark (ru_maxrss would carry its parent's over exec)
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
way, path = sys.argv[1], sys.argv[2]
import onnxruntime
options = onnxruntime.SessionOptions()
options.log_severity_level = 3
options.intra_op_num_threads = 1
if way == "import onnx":
    before = peak()
    import onnx, onnx_relu
elif way == "InferenceSession":
    import onnx, onnx_relu  # imported by both: the figure is what opening the model costs
    before = peak()
    session = onnxruntime.InferenceSession(path, options)
elif way == "onnx.load":
    import onnx, onnx_relu
    before = peak()
    model = onnx.load(path)
elif way == "check_model":
    import onnx, onnx_relu
    before = peak()
    onnx_relu.check_model(path)
else:
    import onnx, onnx_relu
    before = peak()
    session = onnx_relu.ort_session(path, options, exact=way.endswith("exact"))
after = peak()
print(json.dumps([before * 1024, after * 1024]))
"""


#: glibc's own default mmap threshold (128 KiB), set explicitly: glibc then no longer raises it
#: each time a large block is freed, which otherwise moves onnxruntime's peak on a large model
#: by 100-200 MB from one identical process to the next.
_FIXED_MMAP_THRESHOLD = {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}


def peak_rss(path: str, way: str, fixed_threshold: bool = False) -> tuple[int, int]:
    """Peak resident bytes (Linux's ``VmHWM``) of a fresh process before and after it opens
    ``path`` one ``way``
    (``InferenceSession``, ``ort_session``, ``ort_session exact``, ``onnx.load`` or
    ``check_model``); the modules are imported before the first figure. ``fixed_threshold``:
    with glibc's mmap threshold held at its default (:data:`_FIXED_MMAP_THRESHOLD`)."""
    environment = dict(os.environ, **_FIXED_MMAP_THRESHOLD) if fixed_threshold else None
    output = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, way, path],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    ).stdout
    before, after = json.loads(output.strip().splitlines()[-1])
    return int(before), int(after)


def session_creation(
    big_mib: float = 500.0,
    repeats: int = 7,
    rss_rounds: int = 3,
    models: Callable[[str, float], dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The figures: per model, the median times, the ratios against stock and the peak RSS
    (the least of ``rss_rounds`` fresh processes each, and of one each with glibc's mmap
    threshold fixed). ``models``: what writes the models (default :func:`build_models`)."""
    folder = tempfile.mkdtemp(prefix="onnx-relu-session-creation-")
    try:
        paths = (build_models if models is None else models)(folder, big_mib)
        figures: dict[str, Any] = {}
        for name, path in paths.items():
            # stock onnxruntime cannot open the bfloat16 model: its float twin is the baseline
            stock_path = paths["cnn-45MiB"] if name.startswith("bf16") else path
            times = creation_times(path, repeats, stock_path)
            stock, load = times["InferenceSession"], times["onnx.load"]
            entry: dict[str, Any] = {
                "file MiB": f"{os.path.getsize(path) / 2**20:.1f}",
                "seconds": times,
                "ort_session / InferenceSession": times["ort_session"] / stock,
                "ort_session exact / InferenceSession": times["ort_session exact"] / stock,
                "check_model / onnx.load": times["check_model"] / load,
            }
            rss: dict[str, int] = {}
            for _round in range(rss_rounds):  # the least of three fresh processes each:
                # onnxruntime's own peak moves by 100 MB and more between runs on a large model
                for way in ("InferenceSession", "ort_session", "ort_session exact", "onnx.load"):
                    where = stock_path if way == "InferenceSession" else path
                    rss[way] = min(rss.get(way, 1 << 62), peak_rss(where, way)[1])
                rss["check_model"] = min(
                    rss.get("check_model", 1 << 62), peak_rss(path, "check_model")[1]
                )
            before, after = peak_rss(path, "import onnx")
            entry["import onnx and onnx_relu MB"] = f"{(after - before) / 1e6:.0f}"
            entry["peak RSS MB"] = {way: f"{value / 1e6:.0f}" for way, value in rss.items()}
            entry["peak RSS over stock MB"] = {
                "ort_session": f"{(rss['ort_session'] - rss['InferenceSession']) / 1e6:+.0f}",
                "ort_session exact": (
                    f"{(rss['ort_session exact'] - rss['InferenceSession']) / 1e6:+.0f}"
                ),
                "check_model over onnx.load": (
                    f"{(rss['check_model'] - rss['onnx.load']) / 1e6:+.0f}"
                ),
            }
            fixed = {
                way: peak_rss(stock_path if way == "InferenceSession" else path, way, True)[1]
                for way in ("InferenceSession", "ort_session", "ort_session exact")
            }
            entry["peak RSS over stock MB, glibc mmap threshold fixed"] = {
                way: f"{(fixed[way] - fixed['InferenceSession']) / 1e6:+.0f}"
                for way in ("ort_session", "ort_session exact")
            }
            figures[name] = entry
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Print the figures (``--small``: the large model at 100 MiB instead of 500 MiB)."""
    from onnx_relu.bench.figures import format_figures

    arguments = sys.argv[1:] if argv is None else argv
    big = 100.0 if "--small" in arguments else 500.0
    print(format_figures("session-creation", session_creation(big)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
