"""What the harness shows of a run: tables of GB/s and ratios, the JSON file, and the plot.

Everything here works on the results of :func:`~onnx_relu.bench.measure.run_benchmark` (or of an
earlier run read back with :func:`read_results`); matplotlib is imported only to draw.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

from .measure import SCHEMA, key

__all__ = [
    "NotBenchmarkResults",
    "format_summary",
    "format_verdict",
    "format_tables",
    "write_json",
    "read_results",
    "plot_results",
]


class NotBenchmarkResults(ValueError):
    """A JSON file that is not the results of this harness (its schema is not :data:`SCHEMA`)."""


def format_tables(results: dict[str, Any]) -> str:
    """Per type, GB/s of every variant by size and the same-run ratios; then the overheads."""
    sizes = results["config"]["sizes"]
    lines = []
    width = max(8, max(len(size) for size in sizes) + 1)
    for type_name in results["config"]["types"]:
        rows: dict[str, dict[str, float]] = {}
        for record in results["results"]:
            if record["type"] == type_name:
                label = key(record["variant"], record["threads"])
                rows.setdefault(label, {})[record["size"]] = record["gbps"]
        if not rows:
            continue
        name_width = max(len(label) for label in rows) + 2
        title = f"{type_name} - GB/s (2 x bytes / time)".ljust(name_width)
        lines.append("")
        lines.append(title + "".join(size.rjust(width) for size in sizes))
        for label, values in rows.items():
            cells = "".join(_cell(values.get(size), width) for size in sizes)
            lines.append(label.ljust(name_width) + cells)
        ratio_rows: dict[str, dict[str, float]] = {}
        for ratio in results["ratios"]:
            if ratio["type"] == type_name:
                label = f"{ratio['ratio']} @{ratio['threads']}t"
                ratio_rows.setdefault(label, {})[ratio["size"]] = ratio["value"]
        if ratio_rows:
            name_width = max(name_width, max(len(label) for label in ratio_rows) + 2)
            lines.append(f"{type_name} - ratios".ljust(name_width))
            for label, values in ratio_rows.items():
                cells = "".join(_cell(values.get(size), width, ratio=True) for size in sizes)
                lines.append(label.ljust(name_width) + cells)
    if results["unavailable"]:
        lines.append("")
        lines.append("Not measured:")
        for entry in results["unavailable"]:
            lines.append(f"  {entry['variant']} {entry['type']}: {entry['reason']}")
    lines.append("")
    lines.append("Overheads (numpy's time / onnx-relu's: higher is better):")
    lines += [f"  {line}" for line in _overhead_lines(results)]
    return "\n".join(lines)


def _overhead_lines(results: dict[str, Any]) -> list[str]:
    """The 6-element call and the import, as time ratios turned "higher is better"."""
    small, imports = results["small_call"], results["import"]
    relu_us, numpy_us = small["onnx_relu.relu(x)"] * 1e6, small["np.maximum(x, 0)"] * 1e6
    relu_ms, numpy_ms = (
        imports["from onnx_relu import relu"] * 1e3,
        imports["import numpy"] * 1e3,
    )
    return [
        f"6-element call: np.maximum {numpy_us:.3f} us / onnx_relu.relu {relu_us:.3f} us"
        f" = {numpy_us / relu_us:.2f}",
        f"import: numpy {numpy_ms:.1f} ms / onnx_relu with numpy {relu_ms:.1f} ms"
        f" = {numpy_ms / relu_ms:.2f}",
    ]


#: The summary's rows: (label, ratio name, at the top thread count?); every one a throughput
#: ratio onnx-relu / other, so higher is better.
SUMMARY_ROWS = [
    ("relu(x, out=y) / copy ceiling", "out / copy ceiling", True),
    ("relu in place / in-place copy", "inplace / inplace ceiling", True),
    ("relu(x) allocating / out=", "alloc / out", True),
    ("relu / np.maximum(x, 0, out=)", "out / numpy maximum", False),
    ("relu / onnxruntime (io binding)", "out / onnxruntime", True),
    ("relu / torch clamp_min", "out / torch clamp_min", True),
    ("backend run / onnxruntime run", "backend run / onnxruntime run", True),
]


#: The types onnxruntime's CPU provider has Relu kernels for (opset 14): the summary's ratios to
#: onnxruntime are medians over these only. float16 is left out: onnxruntime runs it through
#: Cast nodes it inserts, a different computation; bfloat16, int16 and int64 it does not run at all.
ORT_KERNEL_TYPES = ("float32", "float64", "int8", "int32")
#: Ratios that involve onnxruntime (restricted to :data:`ORT_KERNEL_TYPES` in the summary).
_ORT_RATIOS = ("out / onnxruntime", "backend run / onnxruntime run")
#: Above this noise (:func:`noise`) the verdict says the run is inconclusive.
BUSY_NOISE = 0.20


def noise(results: dict[str, Any]) -> float:
    """How much one variant's rounds differ: the median over records of (slowest round /
    fastest round - 1); 0 for a run of one round."""
    spreads = sorted(
        max(record["rounds"]) / min(record["rounds"]) - 1
        for record in results["results"]
        if len(record["rounds"]) > 1 and min(record["rounds"]) > 0
    )
    return spreads[len(spreads) // 2] if spreads else 0.0


def format_summary(results: dict[str, Any]) -> str:
    """About a dozen lines: each ratio's median over the types, by size, and the noise.

    Every figure is "higher is better": a throughput ratio onnx-relu / the other (1.00: as
    fast), or for the overheads the other's time / onnx-relu's.
    """
    config, machine = results["config"], results["machine"]
    top = max(config["threads"])
    sizes = [size for size in config["sizes"]]
    by_row: dict[str, dict[str, list[float]]] = {}
    for ratio in results["ratios"]:
        if ratio["ratio"] in _ORT_RATIOS and ratio["type"] not in ORT_KERNEL_TYPES:
            continue
        for label, name, at_top in SUMMARY_ROWS:
            if ratio["ratio"] == name and ratio["threads"] == (top if at_top else 1):
                by_row.setdefault(label, {}).setdefault(ratio["size"], []).append(ratio["value"])
    load = machine.get("load_average")
    load_text = f", load average {load[0]:.1f}" if load else ""
    lines = [
        f"onnx-relu bench: {len(config['types'])} types, {config['rounds']} rounds,"
        f" {config['seconds_total']:.0f} s on {machine['cpu']}"
        f" ({machine['cpus_available']} CPUs{load_text})",
        "Ratios, median over the types (onnx-relu's GB/s / the other's: higher is better,"
        f" 1.00 = as fast), at {top} thread(s) unless said:",
    ]
    name_width = max(len(label) for label, _, _ in SUMMARY_ROWS) + 8
    width = max(8, max(len(size) for size in sizes) + 1)
    lines.append("".ljust(name_width) + "".join(size.rjust(width) for size in sizes))
    for label, _, at_top in SUMMARY_ROWS:
        values = by_row.get(label)
        if not values:
            continue
        shown = label + ("" if at_top or top == 1 else " (1t)")
        cells = "".join(
            _cell(statistics.median(values[size]) if size in values else None, width, ratio=True)
            for size in sizes
        )
        lines.append(shown.ljust(name_width) + cells)
    if any(label in by_row for label, name, _ in SUMMARY_ROWS if name in _ORT_RATIOS):
        ort_types = [t for t in config["types"] if t in ORT_KERNEL_TYPES]
        lines.append(
            f"  (onnxruntime rows over {', '.join(ort_types)}: its Relu kernels; float16, run"
            " through casts, left out)"
        )
    lines += _overhead_lines(results)
    spread = noise(results)
    lines.append(
        f"Noise: a variant's rounds differ by {spread:.0%} (median of slowest / fastest - 1):"
        f" ratios within about {spread:.0%} of each other are equal on this run."
    )
    return "\n".join(lines)


def format_verdict(results: dict[str, Any]) -> str:
    """Two lines for the end of a run: float32 GB/s of ``relu(x, out=y)`` beside the copy
    ceiling measured in the same run (the largest size measured, the most threads), and
    whether the run can be trusted: "inconclusive: the machine is busy (noise N %)" when a
    variant's rounds differ by more than :data:`BUSY_NOISE`."""
    top = max(results["config"]["threads"])
    gbps: dict[tuple[str, int], dict[str, float]] = {}
    size_bytes: dict[str, int] = {}
    for record in results["results"]:
        if record["type"] == "float32":
            gbps.setdefault((record["size"], record["threads"]), {})[record["variant"]] = record[
                "gbps"
            ]
            size_bytes[record["size"]] = record["bytes"]
    spread = noise(results)
    load = results["machine"].get("load_average")
    load_text = f", load average {load[0]:.1f}" if load else ""
    figures = "Verdict: no float32 figures in this run (add float32 to --types)"
    for size in sorted(size_bytes, key=size_bytes.__getitem__, reverse=True):
        here = gbps.get((size, top), {})
        relu = here.get("onnx_relu out")
        ceiling = max(
            (
                value
                for value in (
                    here.get("copy streaming"),
                    here.get("copy regular"),
                    gbps.get((size, 1), {}).get("np.copyto"),
                )
                if value
            ),
            default=None,
        )
        if relu is None or ceiling is None:
            continue
        figures = (
            f"Verdict: float32 at {size}, {top} thread(s): relu(x, out=y) {relu:.1f} GB/s, the"
            f" copy ceiling of this machine {ceiling:.1f} GB/s ({relu / ceiling:.0%} of it)"
        )
        break
    if spread > BUSY_NOISE:
        trust = (
            f"inconclusive: the machine is busy (noise {spread:.0%}{load_text}); run it again"
            " when it is quieter"
        )
    else:
        trust = f"conclusive: noise {spread:.0%}, under {BUSY_NOISE:.0%}{load_text}"
    return f"{figures}\n  {trust}"


def _cell(value: float | None, width: int, ratio: bool = False) -> str:
    if value is None:
        return "-".rjust(width)
    if ratio:
        return f"{value:.2f}".rjust(width)
    return (f"{value:.1f}" if value >= 1 else f"{value:.3f}").rjust(width)


def write_json(results: dict[str, Any], path: str) -> None:
    """Write the results as indented JSON (every round of every variant included)."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(results, file, indent=1)


def read_results(path: str) -> dict[str, Any]:
    """The results of an earlier run; :class:`NotBenchmarkResults` if the file is another JSON.

    Files written before the harness left its targets to ``benchmarks/targets.py`` still read:
    their extra ``targets`` entry is ignored.
    """
    with open(path, encoding="utf-8") as file:
        results = json.load(file)
    if not isinstance(results, dict) or results.get("schema") != SCHEMA:
        raise NotBenchmarkResults(f"{path}: not an onnx-relu benchmark file ({SCHEMA})")
    return results


# What the plot shows, per panel: (variant, at the top thread count?, style).
PLOTTED = [
    ("onnx_relu out", True, {"color": "C0", "linewidth": 2.2}),
    ("onnx_relu out", False, {"color": "C0", "linestyle": ":", "linewidth": 1.5}),
    ("onnx_relu inplace", True, {"color": "C1", "linewidth": 2.2}),
    ("onnx_relu alloc", True, {"color": "C9", "linewidth": 1.2}),
    ("copy streaming", True, {"color": "k", "linestyle": "--", "linewidth": 1.2}),
    ("inplace copy regular", True, {"color": "0.5", "linestyle": "--", "linewidth": 1.2}),
    ("np.copyto", False, {"color": "0.5", "linestyle": "-.", "linewidth": 1.0}),
    ("numpy maximum out", False, {"color": "C3", "linewidth": 1.2}),
    ("onnxruntime out", True, {"color": "C2", "linewidth": 1.2}),
    ("torch clamp_min out", True, {"color": "C4", "linewidth": 1.2}),
    ("torch relu_", True, {"color": "C5", "linestyle": "--", "linewidth": 1.2}),
]

PLOT_MIN_BYTES = 4096


def _size_label(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):g} {unit}"
    return f"{nbytes} B"


def plot_results(results: dict[str, Any], path: str) -> None:
    """Throughput against array size, one panel per type; matplotlib is imported here.

    Sizes below 4 KiB are left out of the plot (a call that small measures per-call overhead,
    which the tables and the 6-element comparison report); the y axis is linear from 0, so
    that the distance between lines reads as a ratio.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    types = results["config"]["types"]
    top = max(results["config"]["threads"])
    columns = min(4, len(types))
    rows = math.ceil(len(types) / columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 2.6 * rows + 0.9), squeeze=False
    )
    handles = {}
    # The x axis spans the sizes measured (a quick run's 64 KiB to 4 MiB, not out to 256 MiB),
    # ticked at those sizes (a run has a handful).
    plotted = {r["bytes"] for r in results["results"] if r["bytes"] >= PLOT_MIN_BYTES}
    measured = sorted(plotted) or [PLOT_MIN_BYTES]
    ticks = [(v, _size_label(v)) for v in measured]
    # The grid may have more panels than types (the spare ones are hidden below).
    for panel, type_name in zip(axes.flat, types, strict=False):
        for variant, at_top, style in PLOTTED:
            threads = top if at_top else 1
            points = sorted(
                (r["bytes"], r["gbps"])
                for r in results["results"]
                if r["type"] == type_name
                and r["variant"] == variant
                and r["threads"] == threads
                and r["bytes"] >= PLOT_MIN_BYTES
            )
            if points:
                (line,) = panel.plot(*zip(*points, strict=True), marker=".", **style)
                handles[f"{variant} ({threads}t)"] = line
        panel.set_title(type_name, fontsize=9)
        panel.set_xscale("log", base=2)
        panel.set_xticks([v for v, _ in ticks], [label for _, label in ticks])
        panel.set_xlim(measured[0] / 1.5, measured[-1] * 1.5)
        panel.set_ylim(bottom=0)
        panel.tick_params(labelsize=7)
        panel.grid(True, which="major", alpha=0.3)
        panel.minorticks_off()
    for panel in axes.flat[len(types) :]:
        panel.set_visible(False)
    for panel in axes[-1]:
        panel.set_xlabel("array size (bytes)", fontsize=8)
    for panel in axes[:, 0]:
        panel.set_ylabel("GB/s (2 x bytes / time)", fontsize=8)
    figure.legend(
        list(handles.values()),
        list(handles.keys()),
        loc="lower center",
        ncol=4,
        fontsize=7,
        frameon=False,
    )
    cpu = results["machine"]["cpu"]
    figure.suptitle(f"onnx-relu vs copy ceiling and peers - {cpu}, {top} threads", fontsize=9)
    figure.tight_layout(rect=(0, 0.12 if rows > 1 else 0.2, 1, 0.96))
    figure.savefig(path, dpi=72)
    plt.close(figure)
