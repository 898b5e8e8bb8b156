"""The built-in demo: the specification's nine examples run through onnx-relu and checked."""

from __future__ import annotations

import sys
from typing import TextIO

import numpy as np

from ._api import relu
from .examples import SpecExample, bits_equal, load_spec_examples

__all__ = ["format_tensor", "format_example", "run_demo"]


def format_tensor(name: str, array: np.ndarray) -> str:
    """A tensor as the specification page prints it: a header line, then the indented values."""
    body = np.array2string(array, separator=", ")
    lines = [f"  {name}: shape={array.shape}, dtype={array.dtype.name}"]
    lines += [f"    {line}" if line else "" for line in body.splitlines()]
    return "\n".join(lines)


def format_example(example: SpecExample, output: np.ndarray) -> str:
    """One example laid out like the specification page, with ``output`` as the output values."""
    return "\n".join(
        [
            example.name,
            "",
            "Node:",
            f"  Relu({example.input_name}) -> ({example.output_name})",
            "",
            "Inputs:",
            format_tensor(example.input_name, example.input),
            "",
            "Outputs:",
            format_tensor(example.output_name, output),
        ]
    )


def run_demo(stream: TextIO | None = None) -> int:
    """Run every spec example through :func:`onnx_relu.relu`; 0 if all match the spec exactly."""
    stream = sys.stdout if stream is None else stream
    examples = load_spec_examples()
    matched = 0
    for example in examples:
        output = relu(example.input)
        ok = bits_equal(output, example.expected)
        matched += ok
        print(format_example(example, output), file=stream)
        verdict = "matches the spec" if ok else "DOES NOT MATCH the spec, which gives:"
        print(f"\n  => {verdict}", file=stream)
        if not ok:
            print(format_tensor(example.output_name, example.expected), file=stream)
        print(file=stream)
    print(
        f"{matched} of {len(examples)} spec examples match exactly (values, shape and dtype).",
        file=stream,
    )
    return 0 if matched == len(examples) else 1
