"""Compare every Relu node of onnx's nine "light" models, as run by onnxruntime, with onnx-relu.

The models ship inside the onnx package (onnx/backend/test/data/light/*.onnx). Each Relu node's
input and output are added as graph outputs (which also keeps onnxruntime from fusing the Relu
into the preceding Conv), the model runs once in onnxruntime on random inputs of the declared
shapes (fixed seed), and ``onnx_relu.relu(input)`` is compared with onnxruntime's output bit for
bit. Differences are counted by kind (onnxruntime returns -0.0 for -0.0, onnx-relu +0.0).

Usage: python tools/compare_light_models.py [--seed N]
Prints one line per model and the totals (models, Relu nodes, elements compared, differences).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import shape_inference

from onnx_relu import relu
from onnx_relu.dtypes import dtype_of_onnx_type
from onnx_relu.onnx import ai_onnx_opset, is_relu
from onnx_relu.onnx.ort import inference_session, run_session


def light_model_paths() -> list[str]:
    folder = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    return sorted(glob.glob(os.path.join(folder, "*.onnx")))


@dataclass
class ModelComparison:
    name: str
    relu_nodes: int = 0
    elements: int = 0
    #: kind of difference -> number of elements
    differences: dict[str, int] = field(default_factory=dict)
    #: the Relu inputs onnxruntime produced that were -0.0 / NaN (what the data could show)
    negative_zeros: int = 0
    nans: int = 0
    #: elements that Relu set to zero (negative inputs): the data is not all positive
    zeroed: int = 0


def random_feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """Standard-normal inputs (mixed signs) of each non-initializer input's declared shape."""
    rng = np.random.default_rng(seed)
    initializers = {tensor.name for tensor in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def with_relu_values_as_outputs(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list]:
    """A copy whose graph outputs also hold every Relu's input and output; the Relu nodes."""
    inferred = shape_inference.infer_shapes(model)
    value_infos = {
        v.name: v
        for v in list(inferred.graph.value_info)
        + list(inferred.graph.input)
        + list(inferred.graph.output)
    }
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    outputs = {value.name for value in exposed.graph.output}
    relu_nodes = [node for node in exposed.graph.node if is_relu(node)]
    for node in relu_nodes:
        for name in (node.input[0], node.output[0]):
            if name not in outputs:
                exposed.graph.output.append(value_infos[name])
                outputs.add(name)
    return exposed, relu_nodes


def compare_model(path: str, seed: int = 0) -> ModelComparison:
    model = onnx.load(path)
    opset = ai_onnx_opset(model)
    exposed, relu_nodes = with_relu_values_as_outputs(model)
    results = run_session(inference_session(exposed, threads=2), random_feeds(model, seed))
    values = dict(zip([value.name for value in exposed.graph.output], results, strict=True))
    comparison = ModelComparison(os.path.basename(path), relu_nodes=len(relu_nodes))
    for node in relu_nodes:
        x, y_ort = values[node.input[0]], values[node.output[0]]
        y_ours = relu(x, opset=opset)
        assert y_ours.dtype == y_ort.dtype == dtype_of_onnx_type("tensor(float)")
        comparison.elements += x.size
        x_bits, ort_bits, our_bits = (a.view(np.uint32) for a in (x, y_ort, y_ours))
        comparison.negative_zeros += int(np.count_nonzero(x_bits == 0x80000000))
        comparison.nans += int(np.count_nonzero(np.isnan(x)))
        comparison.zeroed += int(np.count_nonzero((our_bits == 0) & (x_bits != 0)))
        differing = ort_bits != our_bits
        kept_negative_zero = differing & (x_bits == 0x80000000) & (ort_bits == 0x80000000)
        for kind, mask in (
            ("-0.0 returned as -0.0 (onnx-relu: +0.0)", kept_negative_zero),
            ("other", differing & ~kept_negative_zero),
        ):
            count = int(np.count_nonzero(mask))
            if count:
                comparison.differences[kind] = comparison.differences.get(kind, 0) + count
    return comparison


def compare_light_models(seed: int = 0) -> list[ModelComparison]:
    return [compare_model(path, seed) for path in light_model_paths()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="random input seed (default 0)")
    args = parser.parse_args(argv)
    comparisons = compare_light_models(args.seed)
    for c in comparisons:
        found = ", ".join(f"{kind}: {n}" for kind, n in c.differences.items()) or "none"
        print(
            f"{c.name:26} {c.relu_nodes:4} Relu nodes {c.elements:10} elements"
            f" ({c.zeroed} zeroed; -0.0 inputs: {c.negative_zeros}, NaN inputs: {c.nans})"
            f"  differences: {found}"
        )
    totals: dict[str, int] = {}
    for c in comparisons:
        for kind, n in c.differences.items():
            totals[kind] = totals.get(kind, 0) + n
    print(
        f"total: {len(comparisons)} models, {sum(c.relu_nodes for c in comparisons)} Relu"
        f" nodes, {sum(c.elements for c in comparisons)} elements compared;"
        f" differences: {totals or 'none'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
