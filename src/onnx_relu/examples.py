"""The nine examples of the Relu specification page, as data (``data/relu_examples.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

import numpy as np

from .dtypes import RELU_TYPE_BY_NAME

__all__ = ["SpecExample", "load_spec_examples", "bits_equal"]


@dataclass(frozen=True)
class SpecExample:
    """One example: a single Relu node, its input and the output the specification gives."""

    name: str
    input_name: str
    output_name: str
    input: np.ndarray
    expected: np.ndarray


def load_spec_examples() -> list[SpecExample]:
    """The nine spec examples, in the order of the specification page."""
    text = resources.files("onnx_relu").joinpath("data/relu_examples.json").read_text("utf-8")
    examples = []
    for item in json.loads(text)["examples"]:
        dtype = RELU_TYPE_BY_NAME[item["dtype"]].dtype
        examples.append(
            SpecExample(
                name=item["name"],
                input_name=item["node"]["input"],
                output_name=item["node"]["output"],
                input=np.array(item["input"], dtype=dtype),
                expected=np.array(item["output"], dtype=dtype),
            )
        )
    return examples


def bits_equal(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Exact equality: same dtype, same shape and the same bit pattern in every element."""
    actual = np.asarray(actual)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    as_bits = np.dtype(f"u{expected.dtype.itemsize}")
    return bool(np.array_equal(actual.view(as_bits), expected.view(as_bits)))
