"""The benchmark harness runs end to end and writes well-formed results (no timing asserted);
benchmarks/targets.py checks a run against the targets."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import onnx_relu
from onnx_relu import bench
from onnx_relu._environment import parse_size
from tests.support import REPOSITORY
from tests.support.cli import SCRIPT
from tests.support.dtypes import relu_type

TYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64"]
TARGETS_SCRIPT = REPOSITORY / "benchmarks" / "targets.py"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench")
    json_path, png_path = folder / "results.json", folder / "results.png"
    threads_before = onnx_relu.get_num_threads()
    status = bench.main(
        [
            "--quick",
            "--sizes",
            "6",
            "64K",
            "--threads",
            "1",
            "2",
            "--batch-ms",
            "0.2",
            "--json",
            str(json_path),
            "--png",
            str(png_path),
        ]
    )
    assert onnx_relu.get_num_threads() == threads_before  # the harness restores the setting
    return status, json.loads(json_path.read_text()), png_path


def test_quick_run_succeeds_and_writes_a_png(quick_run):
    status, _, png_path = quick_run
    assert status == 0
    pytest.importorskip("matplotlib")
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


RELU_AND_CEILING_VARIANTS = (
    "onnx_relu out",
    "onnx_relu alloc",
    "onnx_relu inplace",
    "copy streaming",
    "copy regular",
    "inplace copy streaming",
    "inplace copy regular",
)


def test_results_cover_every_type_size_and_thread_count(quick_run):
    _, results, _ = quick_run
    assert results["schema"] == bench.SCHEMA
    assert results["config"]["types"] == TYPES
    assert results["config"]["sizes"] == ["6 el", "64 KiB"]
    assert results["config"]["threads"] == [1, 2]
    found = {(r["type"], r["size"], r["variant"], r["threads"]) for r in results["results"]}
    for type_name in TYPES:
        for size in ("6 el", "64 KiB"):
            for threads in (1, 2):
                for variant in RELU_AND_CEILING_VARIANTS:
                    assert (type_name, size, variant, threads) in found
            for variant in ("np.copyto", "numpy maximum out", "numpy maximum alloc"):
                assert (type_name, size, variant, 1) in found


def test_records_are_consistent(quick_run):
    _, results, _ = quick_run
    for record in results["results"]:
        itemsize = relu_type(record["type"]).dtype.itemsize
        expected_elements = 6 if record["size"] == "6 el" else 65536 // itemsize
        assert record["elements"] == expected_elements
        assert record["bytes"] == expected_elements * itemsize
        assert len(record["rounds"]) == results["config"]["rounds"] == 3  # --quick's rounds
        assert record["seconds"] > 0 and record["calls"] >= 1
        assert record["gbps"] == pytest.approx(2 * record["bytes"] / record["seconds"] / 1e9)


def test_ratios_and_overheads_are_reported_and_no_targets(quick_run):
    _, results, _ = quick_run
    names = {r["ratio"] for r in results["ratios"]}
    expected = {
        "out / copy ceiling",
        "inplace / inplace ceiling",
        "out / numpy maximum",
        "out 2t / 1t",
        "alloc / out",
    }
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx"):
        expected |= {"alloc / onnxruntime run", "backend run / onnxruntime run"}
    assert expected <= names
    for ratio in results["ratios"]:
        assert ratio["value"] > 0
    assert "targets" not in results  # the targets are benchmarks/targets.py's
    assert results["small_call"]["np.maximum(x, 0)"] > 0
    assert results["import"]["from onnx_relu import relu"] > 0
    assert results["machine"]["tuning"]["max_threads"] == 256


def test_ratios_of_a_run_are_recomputed_exactly_from_its_rounds(quick_run):
    # the JSON keeps every round, so anyone can recompute the ratios it reports
    from onnx_relu.bench.measure import summarise

    _, results, _ = quick_run
    recomputed = summarise(results["results"], results["config"]["threads"])
    assert len(recomputed) == len(results["ratios"]) > 0
    assert recomputed == results["ratios"]


def test_onnxruntime_is_measured_where_it_has_a_kernel(quick_run):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    _, results, _ = quick_run
    measured = {r["type"] for r in results["results"] if r["variant"] == "onnxruntime out"}
    runs = {r["type"] for r in results["results"] if r["variant"] == "onnxruntime run"}
    refused = {u["type"] for u in results["unavailable"] if u["variant"] == "onnxruntime"}
    assert measured | refused == set(TYPES) and runs == measured
    # onnx-relu's backend runs the same model for every type, onnxruntime's kernels or not
    backend = {r["type"] for r in results["results"] if r["variant"] == "onnx_relu backend run"}
    assert backend == set(TYPES)
    assert "float32" in measured and "bfloat16" in refused  # ort 1.x has no bfloat16 Relu


def test_tables_name_every_type(quick_run, capsys):
    _, results, _ = quick_run
    text = bench.format_tables(results)
    for type_name in TYPES:
        assert f"{type_name} - GB/s" in text
    assert "Overheads (numpy's time / onnx-relu's: higher is better):" in text
    assert "6-element call" in text
    assert "Targets:" not in text and "(target" not in text


def test_summary_is_a_dozen_lines_every_ratio_higher_is_better_and_the_noise(quick_run):
    _, results, _ = quick_run
    text = bench.format_summary(results)
    lines = text.splitlines()
    assert len(lines) <= 15, text
    assert "higher is better" in lines[1]
    assert lines[-1].startswith("Noise: a variant's rounds differ by ")
    rows = {line.split("  ")[0] for line in lines[3:-3]}
    assert {"relu(x, out=y) / copy ceiling", "relu / np.maximum(x, 0, out=) (1t)"} <= rows
    # the overheads as "other's time / onnx-relu's", so that higher is better there too
    small = results["small_call"]
    expected = small["np.maximum(x, 0)"] / small["onnx_relu.relu(x)"]
    assert f"= {expected:.2f}" in next(line for line in lines if line.startswith("6-element"))
    spread = bench.report.noise(results)
    assert spread >= 0 and f"{spread:.0%}" in lines[-1]


def test_quick_prints_the_summary_and_tables_only_when_asked(tmp_path, capsys):
    argv = ["--quick", "--types", "int8", "--sizes", "64K", "--threads", "1", "--peers",
            "--no-plot", "--json", ""]  # fmt: skip
    assert bench.main(argv) == 0
    short = capsys.readouterr().out
    assert "int8 - GB/s" not in short and "higher is better" in short
    assert len(short.splitlines()) <= 17
    assert short.splitlines()[-2].startswith("Verdict: ")  # the last word
    assert bench.main([*argv, "--tables"]) == 0
    assert "int8 - GB/s" in capsys.readouterr().out


def test_replot_reads_an_earlier_run(quick_run, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _, results, _ = quick_run
    source = tmp_path / "earlier.json"
    source.write_text(json.dumps(results))
    png = tmp_path / "again.png"
    assert bench.main(["--replot", str(source), "--png", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "float32 - GB/s" in capsys.readouterr().out


def test_replot_refuses_other_json(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "something else"}))
    assert bench.main(["--replot", str(other)]) == 2
    assert "not an onnx-relu benchmark file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "elements_of_float32", "label"),
    [
        ("6", 6, "6 el"),
        ("64K", 16384, "64 KiB"),
        ("4M", 1 << 20, "4 MiB"),
        ("512MiB", 128 << 20, "512 MiB"),
        ("1g", 1 << 28, "1 GiB"),
    ],
)
def test_size_parsing(text, elements_of_float32, label):
    size = bench.Size.parse(text)
    assert size.elements(4) == elements_of_float32
    assert size.label() == label


@pytest.mark.parametrize(
    "argv", [["--sizes", "lots"], ["--sizes", "0"], ["--threads", "0"], ["--types", "uint8"]]
)
def test_bad_arguments_exit_with_status_2(argv, capsys):
    assert bench.main(argv + ["--no-plot", "--json", ""]) == 2
    assert capsys.readouterr().err


def test_python_dash_m_shows_help():
    result = subprocess.run(
        [sys.executable, "-m", "onnx_relu.bench", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "--skip-largest" in result.stdout and "--quick" in result.stdout


@pytest.mark.parametrize(
    "module_name",
    ["onnx_relu.bench", "onnx_relu.bench.cases", "onnx_relu.bench.scan", "onnx_relu.tuning"],
)
def test_docstring_examples_run(module_name):
    import doctest
    import importlib

    module = importlib.import_module(module_name)
    before = onnx_relu.get_num_threads()
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
    assert onnx_relu.get_num_threads() == before


@pytest.mark.parametrize("command", ["python -m", "onnx-relu bench"])
def test_scan_prints_the_settings_that_reproduce_it(command):
    argv = ["--scan", "--quick", "--rounds", "1"]
    if command == "python -m":
        argv = [sys.executable, "-m", "onnx_relu.bench", *argv]
    else:
        argv = [SCRIPT, "bench", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("machine: ") and "stores (1 thread): regular vs streaming" in out
    settings = out.split("settings that reproduce this scan")[1].splitlines()[1:]
    names = [line.strip().split("=")[0] for line in settings if line.strip()]
    expected = ["ONNX_RELU_NT_THRESHOLD"]
    if onnx_relu.tuning.default_num_threads() > 1:
        expected.append("ONNX_RELU_PARALLEL_THRESHOLD")
    assert names == expected
    for line in settings:  # each value is one the variable accepts
        if line.strip():
            value = line.strip().split("=")[1]
            assert value == "never" or parse_size(value) is not None


def test_onnx_relu_bench_subcommand_runs_the_harness(tmp_path):
    script = SCRIPT
    done = subprocess.run(
        [script, "bench", "--quick", "--tables", "--types", "int16", "--sizes", "6", "--threads",
         "1", "--peers", "--no-plot", "--json", str(tmp_path / "b.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "int16 - GB/s" in done.stdout
    assert json.loads((tmp_path / "b.json").read_text())["schema"] == bench.SCHEMA
    shown = subprocess.run([script, "bench", "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: onnx-relu bench")
    wrong = subprocess.run(
        [script, "bench", "--types", "uint8"], capture_output=True, text=True, timeout=60
    )
    assert wrong.returncode == 2 and "usage: onnx-relu bench" in wrong.stderr
    listed = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert "bench" in listed.stdout


def test_import_of_the_harness_imports_no_peer_and_no_plotting():
    code = (
        "import sys, onnx_relu.bench; heavy = ('onnx', 'onnxruntime', 'torch', 'matplotlib'); "
        "print(sorted(name for name in heavy if name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _private_names_used(path: Path, package: str) -> set[str]:
    """onnx_relu's private modules and attributes a source file imports or reads.

    Relative imports are resolved against ``package``; ``onnx_relu._x`` attribute reads count.
    """
    used = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            names = [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names = [f"{node.value.id}.{node.attr}"]
        else:
            continue
        for name in names:
            parts = name.split(".")
            private = [part for part in parts[1:] if part.startswith("_")]
            if parts[0] == "onnx_relu" and any(not part.endswith("__") for part in private):
                used.add(name)
    return used


def test_the_harness_uses_only_public_onnx_relu():
    package = Path(bench.__file__).parent
    reaching = {}
    for path in sorted(package.glob("*.py")):
        outside = {
            name
            for name in _private_names_used(path, "onnx_relu.bench")
            if not name.startswith("onnx_relu.bench.")
        }
        if outside:
            reaching[path.name] = outside
    assert reaching == {}, reaching
    scripts = sorted((REPOSITORY / "benchmarks").glob("*.py"))
    assert len(scripts) >= 3
    for script in scripts:  # outside the package: public API only
        assert _private_names_used(script, "") == set(), script.name


# --------------------------------------------------------------------------------------------
# benchmarks/targets.py: the targets, checked against a run's JSON
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def targets_script():
    spec = importlib.util.spec_from_file_location("bench_targets", TARGETS_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_targets_cover_the_cases_of_a_run(quick_run, targets_script):
    _, results, _ = quick_run
    targets = {t["target"]: t for t in targets_script.throughput_targets(results)}
    assert targets["float16, bfloat16 >= 50 x numpy (>= 64 KiB)"]["cases"] == 2  # 2 types x 64K
    assert targets["out >= 0.95 x copy ceiling (>= 64 MiB)"]["cases"] == 0  # no large size here
    assert targets["out >= 0.95 x copy ceiling (>= 64 MiB)"]["met"] is None
    overheads = targets_script.overhead_targets(results)
    assert [t["maximum"] for t in overheads] == [1.0, 1.5]
    assert overheads[0]["value"] == results["small_call"]["ratio relu / numpy"]


def test_targets_script_prints_every_target(quick_run, tmp_path):
    _, results, _ = quick_run
    source = tmp_path / "run.json"
    source.write_text(json.dumps(results))
    done = subprocess.run(
        [sys.executable, str(TARGETS_SCRIPT), str(source)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Targets:" and len(lines) == 1 + 10 + 2
    assert "  out >= 0.95 x copy ceiling (>= 64 MiB): no case measured" in lines
    assert any(line.startswith("  6-element call <= 1.0 x np.maximum(x, 0): ") for line in lines)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "something else"}))
    refused = subprocess.run(
        [sys.executable, str(TARGETS_SCRIPT), str(other)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "not an onnx-relu benchmark file" in refused.stderr


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="needs onnxruntime")
def test_whole_models_run_every_variant_and_report_ratios(monkeypatch):
    """--models on the MLP at a small batch: every variant runs (each output checked against
    stock's inside), stock cannot run the bfloat16 Relu, and the table has a row per case."""
    from onnx_relu.bench import models

    monkeypatch.setitem(models.MODELS, "mlp", (1, 16))
    records = models.run_models(threads=1, rounds=1, calls=1, models=("mlp",))
    assert [(r["kind"], r["batch"]) for r in records] == [
        (kind, batch) for kind in models.KINDS for batch in (1, 16)
    ]
    for record in records:
        expected = set(models.VARIANTS) - ({"stock"} if record["kind"] == "bfloat16" else set())
        assert set(record["seconds"]) == set(record["cpu_seconds"]) == expected
        assert record["reference"] == ("library" if record["kind"] == "bfloat16" else "stock")
        assert all(seconds > 0 for seconds in record["seconds"].values())
    table = models.format_models(records, 1, 1, 1)
    assert "| mlp | bfloat16 | 16 | library" in table and "| mlp | float32 | 1 | stock" in table
    assert "Could not find an implementation for Relu" in table


def test_the_models_are_what_exporters_write():
    from onnx_relu.bench import models

    cnn = models.build_model("cnn", "float32")
    assert [n.op_type for n in cnn.graph.node] == (
        ["Conv", "Relu", "MaxPool"] * 2 + ["Flatten", "Gemm"]
    )
    bf16 = models.build_model("mlp", "bfloat16")
    assert [n.op_type for n in bf16.graph.node] == ["Gemm", "Cast", "Relu", "Cast"] * 2 + ["Gemm"]
    assert onnx_relu.check_model(cnn) == [] and onnx_relu.check_model(bf16) == []
