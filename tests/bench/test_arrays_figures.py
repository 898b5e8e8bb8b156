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
    figures = arrays.round_trips(nbytes=64 << 10, pairs=3)
    assert figures["relu(numpy), milliseconds"] > 0
    for name in ("torch", "jax"):
        label = f"relu({name}) / relu(numpy)"
        shown = f"{label}  (goal <= 1.05)" in figures
        assert shown != (name in figures.get("not installed", ""))
        if shown:  # the median of the pairs' ratios, between its quartiles
            spread = figures[f"{label}, quartiles"]
            median = figures[f"{label}  (goal <= 1.05)"]
            assert 0 < spread["first quartile"] <= median <= spread["third quartile"]


def test_pairs_are_ratios_of_the_second_statement_to_the_first():
    # the second statement does the first's work twice: the ratios near 2 (their median above
    # 1 even where the machine stalls a call or two)
    names = {"sum": sum, "r": range(20_000)}
    ratios = arrays._pairs("sum(r)", "sum(r); sum(r)", names, 5)
    assert len(ratios) == 5 and sorted(ratios)[2] > 1
    fastest = arrays._pairs("sum(r)", "sum(r); sum(r)", names, 3, calls=3)
    assert len(fastest) == 3 and sorted(fastest)[1] > 1


def test_jax_transformations_compare_jit_with_pure_callback():
    pytest.importorskip("jax")
    figures = arrays.jax_transformations(nbytes=64 << 10, pairs=2)
    route = figures["jit(relu) calls"]
    assert route in ("jax's FFI", "jax.pure_callback")
    for label in ("6 float32 elements", "64 MiB"):
        assert figures[f"{label}: jit(relu) / jit(pure_callback of relu)"] > 0


def test_figures_arrays_option(capsys):
    assert bench.main(["--figures", "arrays", "--quick"]) == 0
    text = capsys.readouterr().out
    assert "relu(x) / np.maximum(x, np.float32(0))  (goal <= 1.0):" in text
    assert "round trips, median of interleaved pairs:" in text
    assert "under jax.jit, median of interleaved pairs:" in text
