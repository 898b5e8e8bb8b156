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


#: The "Examples" section of the ONNX Relu operator page, shipped with the tests (its
#: provenance: tests/core/data/README.md).
SPEC_EXAMPLES = Path(__file__).with_name("data") / "Relu-examples.txt"


def spec_page() -> str:
    """The examples section of the spec page, as shipped in the repository."""
    return SPEC_EXAMPLES.read_text(encoding="utf-8")


def shared_spec_page() -> str | None:
    """The whole spec page from shared/, beside the repository (in CI and in sessions)."""
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


def test_the_shipped_examples_are_the_spec_pages():
    assert sorted(spec_blocks(spec_page())) == SPEC_NAMES
    page = shared_spec_page()
    if page is None:
        pytest.skip("shared/spec/Relu.txt (the whole page) is not beside this checkout")
    assert spec_page() in page + "\n"  # the section, unchanged


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_vectors_and_demo_layout_match_the_spec_page(example):
    block = spec_blocks(spec_page())[example.name]
    assert format_example(example, example.expected) == block
    assert format_example(example, onnx_relu.relu(example.input)) == block


def test_demo_reports_all_nine_matching_one_line_each_and_a_next_step(capsys):
    assert run_demo() == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[1:10]] == [["ok", name] for name in SPEC_NAMES]
    assert lines[10].startswith("9 of 9 spec examples match exactly")
    assert lines[-2].startswith("Next: onnx-relu --help") and len(lines) == 14


def test_demo_full_lays_every_example_out_as_the_spec_page(capsys):
    assert run_demo(full=True) == 0
    text = capsys.readouterr().out
    assert text.count("=> matches the spec") == 9
    for example in EXAMPLES:
        assert format_example(example, example.expected) in text
    assert "9 of 9 spec examples match exactly" in text


@pytest.mark.parametrize("full", [False, True], ids=["short", "full"])
def test_demo_fails_when_a_result_is_wrong(monkeypatch, capsys, full):
    monkeypatch.setattr("onnx_relu.demo.relu", lambda x: x.copy())  # identity: wrong for negatives
    assert run_demo(full=full) == 1
    text = capsys.readouterr().out
    assert ("DOES NOT MATCH the spec" if full else "  FAIL test_cc_relu ") in text
    assert "0 of 9 spec examples match exactly" in text
