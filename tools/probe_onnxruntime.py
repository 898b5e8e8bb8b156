"""What the installed onnxruntime does with a one-node Relu model of each type and opset, before
and after ``onnx_relu.legalize``.

For each (opset, type) the Relu version allows: does onnxruntime run the bare Relu, with which
differences from onnx-relu (on the probe's edge cases); which rewrite legalize picks; and whether
the legalized model runs with exactly onnx-relu's values (checked on edge cases plus 2,000 random
bit patterns, independently of the probe).

Usage: python tools/probe_onnxruntime.py [--opsets 1,5,6,...]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import onnx
from onnx import helper

from onnx_relu import legalize, relu
from onnx_relu.dtypes import RELU_TYPE_BY_ONNX_NAME
from onnx_relu.errors import LegalizationError
from onnx_relu.onnx.probe import probe_onnxruntime, probe_values
from onnx_relu.versions import version_for_opset


def _one_relu(onnx_type: str, opset: int) -> onnx.ModelProto:
    elem_type = RELU_TYPE_BY_ONNX_NAME[onnx_type].elem_type
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "probe",
        [helper.make_tensor_value_info("x", elem_type, ["n"])],
        [helper.make_tensor_value_info("y", elem_type, ["n"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _random_values(onnx_type: str) -> np.ndarray:
    x = probe_values(onnx_type)
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    rng = np.random.default_rng(0)
    noise = rng.integers(0, np.iinfo(unsigned).max, 2000, dtype=unsigned, endpoint=True)
    return np.concatenate([x.view(unsigned), noise]).view(x.dtype)


def describe(onnx_type: str, opset: int, exact: bool = False) -> str:
    from onnx_relu.onnx.ort import run_model

    native = probe_onnxruntime(onnx_type, opset)
    if native.runs:
        before = "runs, exact" if native.exact else f"runs, {len(native.differences)} differ"
    else:
        before = "NOT RUN (" + native.error.split(" : ")[-1][:50] + ")"
    try:
        legalized = legalize(_one_relu(onnx_type, opset), exact=exact)
    except LegalizationError:
        return f"{before:64} | legalize: refused (no exact rewrite runs)"
    ops = "-".join(node.op_type for node in legalized.graph.node)
    x = _random_values(onnx_type)
    (y,) = run_model(legalized, {"x": x})
    expected = relu(x, opset=opset)
    width = f"u{x.dtype.itemsize}"
    differing = int(np.count_nonzero(y.view(width) != expected.view(width)))
    after = "exact" if differing == 0 else f"{differing}/{x.size} differ"
    chosen = "unchanged" if ops == "Relu" else f"{len(legalized.graph.node)} nodes"
    return f"{before:64} | legalize: {chosen:10} -> runs, {after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    latest = onnx.defs.onnx_opset_version()
    default = f"1,5,6,12,13,14,17,18,19,21,{latest}"
    parser.add_argument("--opsets", default=default, help=f"comma-separated (default {default})")
    parser.add_argument("--exact", action="store_true", help="legalize(..., exact=True)")
    args = parser.parse_args(argv)
    import onnxruntime

    print(f"onnxruntime {onnxruntime.__version__}, onnx {onnx.__version__}")
    for opset in (int(o) for o in args.opsets.split(",")):
        for onnx_type in version_for_opset(opset).types:
            print(f"opset {opset:2} {onnx_type:17} {describe(onnx_type, opset, args.exact)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
