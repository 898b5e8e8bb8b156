"""``--figures arrays`` runs and prints its ratios (no timing asserted: figures only)."""

from __future__ import annotations

import pytest

from onnx_relu import bench
from onnx_relu.bench import arrays


def test_small_call_figures_are_same_run_ratios():
    figures = arrays.small_call(rounds=1, number=100)
    times = figures["microseconds"]
    assert set(times) == {
        "relu(x)",
        "np.maximum(x, np.float32(0))",
        "np.maximum(x, 0)",
        "relu_ufunc(x)",
    }
    ratio = figures["relu(x) / np.maximum(x, np.float32(0))  (goal <= 1.0)"]
    # (the times are the seconds scaled to microseconds: equal up to rounding)
    assert ratio == pytest.approx(
        times["relu(x)"] / times["np.maximum(x, np.float32(0))"], rel=1e-12
    )


def test_round_trips_cover_what_is_installed():
    figures = arrays.round_trips(nbytes=64 << 10, rounds=1)
    times = figures["milliseconds"]
    assert "relu(numpy)" in times and all(t > 0 for t in times.values())
    for name in ("torch", "jax"):
        assert (f"relu({name})" in times) != (name in figures.get("not installed", ""))


def test_figures_arrays_option(capsys):
    assert bench.main(["--figures", "arrays", "--quick"]) == 0
    text = capsys.readouterr().out
    assert "relu(x) / np.maximum(x, np.float32(0))  (goal <= 1.0):" in text
    assert "round trips:" in text
