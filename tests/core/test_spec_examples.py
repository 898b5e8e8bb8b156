"""The specification's nine examples: reproduced exactly, and the demo shows them as the spec
does."""

import re
from pathlib import Path

import numpy as np
import pytest

import onnx_relu
from onnx_relu.demo import format_example, run_demo
from onnx_relu.examples import bits_equal, load_spec_examples

EXAMPLES = load_spec_examples()
SPEC_NAMES = [
    "test_cc_relu",
    "test_cc_relu_bfloat16",
    "test_cc_relu_double",
    "test_cc_relu_example",
    "test_cc_relu_float16",
    "test_cc_relu_int16",
    "test_cc_relu_int32",
    "test_cc_relu_int64",
    "test_cc_relu_int8",
]


def spec_page() -> str | None:
    """The spec page from shared/, beside the repository (present in CI and in sessions)."""
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "spec" / "Relu.txt"
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    return None


def spec_blocks(page: str) -> dict[str, str]:
    """Each example's text on the spec page, from its name to the end of its output tensor."""
    blocks = {}
    pattern = re.compile(r"^(test_cc_relu\w*)\n\nNode:\n.*?\nOutputs:\n.*?\]\]+$", re.S | re.M)
    for match in pattern.finditer(page):
        blocks[match.group(1)] = match.group(0)
    return blocks


def test_all_nine_examples_are_present():
    assert [e.name for e in EXAMPLES] == SPEC_NAMES


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_reproduced_exactly(example):
    result = onnx_relu.relu(example.input)
    assert result.dtype == example.expected.dtype == example.input.dtype
    assert result.shape == example.expected.shape
    assert bits_equal(result, example.expected)
    # and at every opset whose Relu version allows the type
    for opset in range(1, 20):
        if example.input.dtype in onnx_relu.versions.version_for_opset(opset).dtypes:
            assert bits_equal(onnx_relu.relu(example.input, opset=opset), example.expected)


def test_bits_equal_sees_sign_of_zero_and_dtype():
    a = np.array([0.0], np.float32)
    assert not bits_equal(np.array([-0.0], np.float32), a)
    assert not bits_equal(a.astype(np.float64), a)
    assert bits_equal(a.copy(), a)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_vectors_and_demo_layout_match_the_spec_page(example):
    page = spec_page()
    if page is None:
        pytest.skip("shared/spec/Relu.txt is not beside this checkout")
    block = spec_blocks(page)[example.name]
    assert format_example(example, example.expected) == block
    assert format_example(example, onnx_relu.relu(example.input)) == block


def test_demo_reports_all_nine_matching(capsys):
    assert run_demo() == 0
    text = capsys.readouterr().out
    assert text.count("=> matches the spec") == 9
    assert "9 of 9 spec examples match exactly" in text


def test_demo_fails_when_a_result_is_wrong(monkeypatch, capsys):
    monkeypatch.setattr("onnx_relu.demo.relu", lambda x: x.copy())  # identity: wrong for negatives
    assert run_demo() == 1
    text = capsys.readouterr().out
    assert "DOES NOT MATCH the spec" in text
    assert "0 of 9 spec examples match exactly" in text
