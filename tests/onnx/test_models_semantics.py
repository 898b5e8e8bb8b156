"""One-node Relu models for every type at every opset boundary: the backend against the
documented semantics (bit for bit), and onnxruntime against the same, where it runs the type.

Every difference onnxruntime shows must be one of the documented ones (docs/runtimes.md,
"onnxruntime, in detail"); the full list observed is printed (``pytest -s``) and shown there.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from onnx_relu import backend
from onnx_relu.errors import UnsupportedTypeError
from tests.support.dtypes import ONNX_NAMES, RELU_TYPES, relu_type
from tests.support.onnx_models import BOUNDARY_OPSETS, allowed_types, relu_model, sample_values
from tests.support.onnxruntime_reach import onnxruntime_refusal, ort_helpers
from tests.support.optional import requires
from tests.support.oracle import as_bits, expected_relu

ALL_CASES = [(t, opset) for opset in BOUNDARY_OPSETS for t in ONNX_NAMES]
ALLOWED_CASES = [(t, opset) for t, opset in ALL_CASES if t in allowed_types(opset)]
# onnxruntime also changes behaviour at opset 18, where Relu-14 gained a function body.
ORT_CASES = sorted(ALLOWED_CASES + [(t, 18) for t in ONNX_NAMES], key=lambda c: (c[1], c[0]))


def test_the_test_type_table_agrees_with_onnx():
    """tests/support/dtypes.py writes the ONNX names, element types and first versions out by
    hand; onnx's own tables must say the same."""
    assert set(ONNX_NAMES) == allowed_types(14)
    for t in RELU_TYPES:
        proto_name = onnx.helper.tensor_dtype_to_string(t.elem_type)  # "TensorProto.FLOAT"
        assert f"tensor({proto_name.split('.')[1].lower()})" == t.onnx_name
        assert onnx.helper.tensor_dtype_to_np_dtype(t.elem_type) == t.dtype
        first = min(opset for opset in range(1, 15) if t.onnx_name in allowed_types(opset))
        assert first == t.since, t.name


def test_support_docstring_examples_run():
    import doctest

    from tests.support import onnx_models

    result = doctest.testmod(onnx_models)
    assert result.attempted > 0 and result.failed == 0


def test_the_boundaries_cover_every_relu_version():
    versions = {onnx.defs.get_schema("Relu", opset).since_version for opset in BOUNDARY_OPSETS}
    assert versions == {1, 6, 13, 14}
    assert len(ALLOWED_CASES) == 3 * 4 + 4 + 8 * 2  # opsets 1, 5, 6, 12 | 13 | 14, latest


@pytest.mark.parametrize(("onnx_type", "opset"), ALL_CASES)
def test_backend_runs_allowed_types_bit_exactly_and_refuses_the_others(onnx_type, opset):
    model = relu_model(onnx_type, opset, shape=("n", 1), name="relu_node")
    if onnx_type in allowed_types(opset):
        x = sample_values(onnx_type).reshape(-1, 1)
        x_before = x.copy()
        (y,) = backend.run_model(model, [x])
        assert y.dtype == x.dtype and y.shape == x.shape
        assert np.array_equal(as_bits(y), as_bits(expected_relu(x)))
        assert np.array_equal(as_bits(x), as_bits(x_before))
        return
    with pytest.raises(UnsupportedTypeError) as refused:
        backend.prepare(model)
    message = str(refused.value)
    version = onnx.defs.get_schema("Relu", opset).since_version
    for expected in [
        "'relu_node'",
        "input 'x'",
        onnx_type,
        f"Relu-{version}",
        *sorted(allowed_types(opset)),
    ]:
        assert expected in message


# -- onnxruntime --------------------------------------------------------------------------------


def classify_difference(onnx_type: str, x_bits: int, ort_bits: int, in_tail: bool) -> str | None:
    """Name a documented way onnxruntime's result differs from onnx-relu's, or None.

    ``in_tail``: the element is among the last (size mod 8) ones, which onnxruntime's float16
    conversion handles one by one rather than in blocks of 8.
    """
    t = relu_type(onnx_type)
    if not t.is_float:
        return None
    sign, exponent, quiet = t.sign_mask, t.exponent_mask, t.quiet_bit
    if x_bits == sign and ort_bits == sign:
        return "-0.0 returned as -0.0 (onnx-relu: +0.0)"
    if onnx_type == "tensor(float16)" and t.is_nan(x_bits):
        if not in_tail and t.is_signalling_nan(x_bits) and ort_bits == x_bits | quiet:
            return "float16 signalling NaN returned quieted (sign and payload kept)"
        if in_tail and ort_bits == (x_bits & sign) | exponent | quiet:
            return (
                "float16 NaN among the last (size mod 8) elements returned as the canonical"
                " quiet NaN of its sign (payload and signalling bit lost)"
            )
    return None


def _float16_tail_nans() -> np.ndarray:
    """Seven NaNs (quiet and signalling, both signs, with payloads) to end a float16 input."""
    return np.array([0x7E05, 0xFE05, 0x7C01, 0xFC01, 0x7D55, 0xFD55, 0x7E00], dtype=np.uint16).view(
        np.float16
    )


def _ort_outcome(onnx_type: str, opset: int):
    """('not run', error) or ('ran', {difference: count}, elements compared)."""
    x = sample_values(onnx_type)
    if onnx_type == "tensor(float16)":
        x = np.concatenate([x[: 8 * (x.size // 8)], _float16_tail_nans()])
    model = relu_model(onnx_type, opset, shape=x.shape)
    try:
        session = ort_helpers().inference_session(model)
    except Exception as error:  # noqa: BLE001 - onnxruntime's exception classes are its own
        first_line = str(error).splitlines()[0]
        assert (
            "NOT_IMPLEMENTED" in first_line
            or "INVALID_GRAPH" in first_line
            or onnxruntime_refusal(opset) is not None
        ), first_line  # an opset it predates
        return ("not run", first_line)
    (y,) = ort_helpers().run_session(session, {"x": x})
    assert y.dtype == x.dtype and y.shape == x.shape
    expected = expected_relu(x)
    tail_start = x.size - x.size % 8
    differences: dict[str, int] = {}
    for i in np.flatnonzero(as_bits(y) != as_bits(expected)):
        kind = classify_difference(
            onnx_type, int(as_bits(x)[i]), int(as_bits(y)[i]), in_tail=i >= tail_start
        )
        assert kind is not None, (
            f"undocumented difference for {onnx_type} at opset {opset}: element {i} of"
            f" {x.size}, input bits {int(as_bits(x)[i]):#x} -> onnxruntime {int(as_bits(y)[i]):#x},"
            f" expected {int(as_bits(expected)[i]):#x}"
        )
        differences[kind] = differences.get(kind, 0) + 1
    return ("ran", differences, x.size)


@requires("onnxruntime")
def test_onnxruntime_agrees_with_the_semantics_except_documented_differences():
    outcomes = {case: _ort_outcome(*case) for case in ORT_CASES}
    ran = {case for case, outcome in outcomes.items() if outcome[0] == "ran"}
    # The harness must really compare something: onnxruntime runs float Relus from opset 6.
    assert {("tensor(float)", 6), ("tensor(float)", 14), ("tensor(double)", 13)} <= ran
    # The table of what was observed (shown with pytest -s, and with a failure).
    print("\nonnxruntime vs the documented Relu semantics (one-node models):")
    for (onnx_type, opset), outcome in outcomes.items():
        if outcome[0] == "ran":
            found = "; ".join(f"{kind}: {n}" for kind, n in outcome[1].items()) or "exact"
            print(f"  opset {opset:2} {onnx_type:17} {outcome[2]} values: {found}")
        else:
            print(f"  opset {opset:2} {onnx_type:17} not run: {outcome[1][:70]}")
