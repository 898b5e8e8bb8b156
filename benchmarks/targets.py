"""The performance targets of the foundation issue and of issue 10, checked against a run's JSON.

    python benchmarks/targets.py benchmarks/results/bench.json

The harness (``python -m onnx_relu.bench``) reports measurements and same-run ratios only; the
targets are a project decision, so they live here and in BENCHMARKS.md. Each throughput target
is a minimum of one of the harness's ratios over the cases it covers (some sizes, some types);
the script prints, per target, whether every case met it, how many failed and the worst case.
The two overheads (a 6-element call, the import) each have a maximum ratio to numpy.
"""

from __future__ import annotations

import argparse
import sys

from onnx_relu.bench import NotBenchmarkResults, read_results

LARGE = 64 << 20  # "large": the copy-ceiling targets hold from 64 MiB
NOT_TINY = 64 << 10  # throughput against numpy leaves out sizes where a call is all overhead
LARGEST = 512 << 20  # threads must pay off on the largest arrays


def throughput_targets(results: dict) -> list[dict]:
    """The ratio targets: each with its minimum, the cases it covers, the failing ones, the worst.

    A target without a measured case (e.g. no 64 MiB size in the run) has ``cases`` 0 and
    ``met`` None.
    """
    size_bytes: dict[str, int] = {}
    for record in results["results"]:
        size_bytes[record["size"]] = max(size_bytes.get(record["size"], 0), record["bytes"])

    def sizes_from(smallest: int) -> set[str]:
        return {size for size, nbytes in size_bytes.items() if nbytes >= smallest}

    top = max(results["config"]["threads"])
    half_floats = {"float16", "bfloat16"}
    # (label, ratio, sizes (None: all), minimum, types (None: all))
    rules = [
        (
            "out >= 0.95 x copy ceiling (>= 64 MiB)",
            "out / copy ceiling",
            sizes_from(LARGE),
            0.95,
            None,
        ),
        (
            "inplace >= 0.95 x inplace ceiling (>= 64 MiB)",
            "inplace / inplace ceiling",
            sizes_from(LARGE),
            0.95,
            None,
        ),
        ("out >= 1.2 x onnxruntime", "out / onnxruntime", None, 1.2, None),
        ("out >= 1.1 x torch clamp_min", "out / torch clamp_min", None, 1.1, None),
        ("inplace >= 1.1 x torch relu_", "inplace / torch relu_", None, 1.1, None),
        (
            "float16, bfloat16 >= 50 x numpy (>= 64 KiB)",
            "out / numpy maximum",
            sizes_from(NOT_TINY),
            50.0,
            half_floats,
        ),
        (
            f"{top} threads >= 1.6 x 1 thread (512 MiB)",
            f"out {top}t / 1t",
            sizes_from(LARGEST),
            1.6,
            None,
        ),
        # issue 10: the allocating call and the model path, where users are
        ("alloc >= 0.9 x out (>= 64 MiB)", "alloc / out", sizes_from(LARGE), 0.9, None),
        (
            "alloc >= 1.0 x onnxruntime run (>= 64 MiB)",
            "alloc / onnxruntime run",
            sizes_from(LARGE),
            1.0,
            None,
        ),
        # a speed ratio: >= 1.0 means the backend's run takes at most session.run's time
        (
            "backend run >= 1.0 x onnxruntime run (6 el, >= 64 MiB)",
            "backend run / onnxruntime run",
            sizes_from(LARGE) | {"6 el"},
            1.0,
            None,
        ),
    ]
    targets = []
    for label, ratio_name, sizes, minimum, types in rules:
        chosen = [
            ratio
            for ratio in results["ratios"]
            if ratio["ratio"] == ratio_name
            and (sizes is None or ratio["size"] in sizes)
            and (types is None or ratio["type"] in types)
        ]
        if not chosen:
            targets.append({"target": label, "minimum": minimum, "cases": 0, "met": None})
            continue
        failing = [ratio for ratio in chosen if ratio["value"] < minimum]
        targets.append(
            {
                "target": label,
                "minimum": minimum,
                "cases": len(chosen),
                "failing": len(failing),
                "met": not failing,
                "worst": min(chosen, key=lambda ratio: ratio["value"]),
            }
        )
    return targets


def overhead_targets(results: dict) -> list[dict]:
    """The 6-element call at most 1.0 x numpy's, the import at most 1.5 x numpy's."""
    small, imports = results["small_call"], results["import"]
    measured = [
        (
            "6-element call <= 1.0 x np.maximum(x, 0)",
            small["ratio relu / numpy"],
            1.0,
            f"onnx_relu.relu {small['onnx_relu.relu(x)'] * 1e6:.3f} us,"
            f" np.maximum(x, 0) {small['np.maximum(x, 0)'] * 1e6:.3f} us",
        ),
        (
            "from onnx_relu import relu <= 1.5 x import numpy",
            imports["ratio onnx_relu / numpy"],
            1.5,
            f"onnx_relu {imports['from onnx_relu import relu'] * 1e3:.1f} ms,"
            f" numpy {imports['import numpy'] * 1e3:.1f} ms",
        ),
    ]
    return [
        {
            "target": label,
            "maximum": maximum,
            "value": value,
            "met": value <= maximum,
            "measured": detail,
        }
        for label, value, maximum, detail in measured
    ]


def format_targets(results: dict) -> str:
    """One line per target: met or missed (in how many cases), and the worst case."""
    lines = ["Targets:"]
    for target in throughput_targets(results):
        if target["met"] is None:
            lines.append(f"  {target['target']}: no case measured")
            continue
        worst = target["worst"]
        verdict = "met" if target["met"] else f"MISSED in {target['failing']}/{target['cases']}"
        lines.append(
            f"  {target['target']}: {verdict}; worst {worst['value']:.2f}"
            f" ({worst['type']} {worst['size']} @{worst['threads']}t)"
        )
    for target in overhead_targets(results):
        verdict = "met" if target["met"] else "MISSED"
        lines.append(
            f"  {target['target']}: {verdict}; {target['value']:.2f} ({target['measured']})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="the JSON a run of python -m onnx_relu.bench wrote")
    args = parser.parse_args(argv)
    try:
        results = read_results(args.json)
    except NotBenchmarkResults as exc:
        print(exc, file=sys.stderr)
        return 2
    print(format_targets(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
