"""The end of ``bench --quick``: the verdict (float32 GB/s beside the copy ceiling, or
"inconclusive" on a busy machine), and ratios to onnxruntime over the types it has kernels for.

Made from results written here, so that each case is what the test says it is."""

from __future__ import annotations

from onnx_relu.bench import format_summary, format_verdict
from onnx_relu.bench.report import BUSY_NOISE, ORT_KERNEL_TYPES


def results(spread: float, types=("float32", "int16"), load=(0.5, 0.5, 0.5)):
    """A run of two sizes at 1 and 2 threads whose rounds differ by ``spread``."""
    records, ratios = [], []
    for type_name in types:
        for size, nbytes in (("64 KiB", 1 << 16), ("4 MiB", 1 << 22)):
            for variant, threads, gbps in (
                ("onnx_relu out", 2, 20.0 if size == "4 MiB" else 30.0),
                ("copy streaming", 2, 25.0),
                ("copy regular", 2, 24.0),
                ("np.copyto", 1, 10.0),
                ("onnxruntime out", 2, 10.0),
            ):
                records.append(
                    {
                        "type": type_name,
                        "size": size,
                        "bytes": nbytes,
                        "variant": variant,
                        "threads": threads,
                        "gbps": gbps,
                        "rounds": [1.0, 1.0 + spread],
                    }
                )
            value = 2.0 if type_name in ORT_KERNEL_TYPES else 0.1  # int16: a cast model's
            ratios.append(
                {"type": type_name, "size": size, "threads": 2, "ratio": "out / onnxruntime",
                 "value": value}
            )  # fmt: skip
    return {
        "config": {
            "types": list(types),
            "sizes": ["64 KiB", "4 MiB"],
            "threads": [1, 2],
            "rounds": 3,
            "seconds_total": 4.0,
        },  # fmt: skip
        "machine": {"cpu": "a CPU", "cpus_available": 2, "load_average": load},
        "results": records,
        "ratios": ratios,
        "small_call": {"onnx_relu.relu(x)": 1e-6, "np.maximum(x, 0)": 1e-6},
        "import": {"from onnx_relu import relu": 0.1, "import numpy": 0.1},
    }


def test_a_quiet_run_gives_float32_beside_the_copy_ceiling():
    figures, trust = format_verdict(results(0.05)).splitlines()
    assert figures == (
        "Verdict: float32 at 4 MiB, 2 thread(s): relu(x, out=y) 20.0 GB/s, the copy ceiling"
        " of this machine 25.0 GB/s (80% of it)"
    )
    assert trust.strip() == "conclusive: noise 5%, under 20%, load average 0.5"


def test_a_busy_run_is_inconclusive():
    _, trust = format_verdict(results(BUSY_NOISE + 0.3, load=(9.0, 8.0, 7.0))).splitlines()
    assert trust.strip().startswith(
        "inconclusive: the machine is busy (noise 50%, load average 9.0)"
    )


def test_a_run_without_float32_says_so():
    text = format_verdict(results(0.05, types=("int8",)))
    assert text.startswith("Verdict: no float32 figures in this run")


def test_ratios_to_onnxruntime_are_over_the_types_it_has_kernels_for():
    """int16's ratio (onnxruntime has no int16 Relu) stays out of the median: 2.00, not 1.05."""
    text = format_summary(results(0.05))
    row = next(line for line in text.splitlines() if line.startswith("relu / onnxruntime"))
    assert row.split()[-2:] == ["2.00", "2.00"]
    assert "(onnxruntime rows over float32: its Relu kernels; float16, run through casts" in text
