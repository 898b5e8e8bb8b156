"""The built-in demo: the specification's nine examples run through onnx-relu and checked."""

from __future__ import annotations

import sys
from typing import TextIO

import numpy as np

from ._api import relu
from .examples import SpecExample, bits_equal, load_spec_examples

__all__ = ["format_tensor", "format_example", "format_summary", "run_demo"]


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


def format_summary(example: SpecExample, output: np.ndarray, ok: bool) -> str:
    """One example on one line: its name, type, shape, input and output values (elided)."""

    def values(array: np.ndarray) -> str:
        flat = [str(v) for v in array.ravel().tolist()]
        if len(flat) > 8:
            flat = [*flat[:3], "...", *flat[-3:]]
        return f"[{', '.join(flat)}]"

    verdict = "ok  " if ok else "FAIL"
    dtype, shape = example.input.dtype.name, str(example.input.shape)
    return (
        f"  {verdict} {example.name:<22} {dtype:<8} {shape:<9}"
        f" {values(example.input)} -> {values(output)}"
    )


NEXT_STEP = (
    "Next: onnx-relu --help (the commands), or the README's examples (the Python API);\n"
    "in a clone set up by make demo, run 'source .venv/bin/activate' first."
)


def run_demo(stream: TextIO | None = None, *, full: bool = False) -> int:
    """Run every spec example through :func:`onnx_relu.relu`; 0 if all match the spec exactly.

    Each example is one line (``full``: laid out as the specification page shows it), then
    the count of exact matches (dtype, shape and every element's bit pattern) and a next step.
    """
    stream = sys.stdout if stream is None else stream
    examples = load_spec_examples()
    matched = 0
    print(
        f"The {len(examples)} examples of the ONNX Relu specification, run through"
        " onnx_relu.relu (input -> output):",
        file=stream,
    )
    for example in examples:
        output = relu(example.input)
        ok = bits_equal(output, example.expected)
        matched += ok
        if full:
            print(file=stream)
            print(format_example(example, output), file=stream)
            verdict = "matches the spec" if ok else "DOES NOT MATCH the spec, which gives:"
            print(f"\n  => {verdict}", file=stream)
            if not ok:
                print(format_tensor(example.output_name, example.expected), file=stream)
        else:
            print(format_summary(example, output, ok), file=stream)
            if not ok:
                print(f"       the spec gives {example.expected.ravel()}", file=stream)
    print(
        f"{matched} of {len(examples)} spec examples match exactly (dtype, shape and every"
        " element's bit pattern).",
        file=stream,
    )
    if not full:
        print(
            "(onnx-relu demo --full: each example as the specification page shows it.)", file=stream
        )
    print(NEXT_STEP, file=stream)
    return 0 if matched == len(examples) else 1
