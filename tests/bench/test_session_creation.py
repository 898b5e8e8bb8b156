"""``--figures session-creation`` on small models: every figure the issue asks for is printed,
each ratio a ratio of the same run's times (no timing asserted: figures only)."""

from __future__ import annotations

import importlib.util
import os

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None,
    reason="needs onnx and onnxruntime",
)


def _small_models(folder: str, big_mib: float) -> dict[str, str]:
    """relu-1, a CNN of 1 MiB and its bfloat16 twin (whose stock figures are the CNN's)."""
    import onnx

    from onnx_relu.bench import session_creation

    models = {
        "relu-1": session_creation._chain_model(1),
        "cnn-45MiB": session_creation._conv_relu_model(1, False),
        "bf16-45MiB": session_creation._conv_relu_model(1, True),
    }
    paths = {}
    for name, model in models.items():
        paths[name] = os.path.join(folder, f"{name}.onnx")
        onnx.save(model, paths[name])
    return paths


def test_figures_are_same_run_ratios_and_name_every_goal():
    from onnx_relu.bench.figures import format_figures
    from onnx_relu.bench.session_creation import session_creation

    figures = session_creation(repeats=1, rss_rounds=1, models=_small_models)
    assert list(figures) == ["relu-1", "cnn-45MiB", "bf16-45MiB"]
    for name, entry in figures.items():
        seconds = entry["seconds"]
        assert set(seconds) == {
            "InferenceSession",
            "ort_session",
            "ort_session exact",
            "onnx.load",
            "check_model",
        }
        assert all(value > 0 for value in seconds.values()), name
        stock = seconds["InferenceSession"]
        assert entry["ort_session / InferenceSession"] == seconds["ort_session"] / stock
        assert entry["ort_session exact / InferenceSession"] == (
            seconds["ort_session exact"] / stock
        )
        assert entry["check_model / onnx.load"] == seconds["check_model"] / seconds["onnx.load"]
        rss = {way: int(value) for way, value in entry["peak RSS MB"].items()}
        over = entry["peak RSS over stock MB"]
        # (each figure rounded to MB by itself: their difference within 1 of the one printed)
        assert abs(int(over["ort_session"]) - (rss["ort_session"] - rss["InferenceSession"])) <= 1
        fixed = entry["peak RSS over stock MB, glibc mmap threshold fixed"]
        assert set(fixed) == {"ort_session", "ort_session exact"}
        assert all(value[0] in "+-" and value[1:].isdigit() for value in fixed.values())
    text = format_figures("session-creation", figures)
    for line in ("check_model / onnx.load", "peak RSS over stock MB", "threshold fixed"):
        assert line in text
