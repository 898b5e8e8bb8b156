"""The documentation's claims that a script can check, checked against the thing itself.

Each claim is read from the page that makes it and compared with what the package, numpy, the
built extension or onnxruntime does here, so a page cannot keep a statement that stopped being
true (or never was): what ``import onnx_relu`` imports, what ``np.maximum(x, 0)`` makes of the
types Relu forbids, the glibc the wheel needs, what onnxruntime does to a float16 signalling NaN.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import onnx_relu

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def table_row(text: str, first_cell: str) -> list[str]:
    """The cells of the Markdown table row whose first cell is ``first_cell``."""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no table row starting {first_cell!r}")


def imported_by(statement: str) -> set[str]:
    code = (
        f"import sys; {statement}; "
        "print(' '.join(m for m in ('numpy', 'ml_dtypes', 'onnx', 'onnxruntime', 'dask')"
        " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_what_import_onnx_relu_imports_is_what_the_pages_say():
    assert imported_by("import onnx_relu") == set()
    assert imported_by("import onnx_relu; onnx_relu.relu") == {"numpy"}
    bfloat16 = (
        "import onnx_relu;"
        " onnx_relu.relu(onnx_relu.dtypes.RELU_TYPE_BY_NAME['bfloat16'].dtype.type(1))"
    )
    assert "ml_dtypes" in imported_by(bfloat16)
    api = page("docs/api.rst")
    assert "``import onnx_relu`` imports none of its dependencies" in api
    assert "ml_dtypes only for bfloat16 work" in api
    assert "imports numpy and ml_dtypes only" not in api
    assert "`import onnx_relu` imports none of them" in page("README.md")


def numpy_cell() -> str:
    """The runtimes table's ``np.maximum(x, 0)`` cell for uint8 and bool, from numpy itself."""
    parts = []
    for dtype in (np.uint8, np.bool_):
        name = np.dtype(dtype).name
        result = np.maximum(np.zeros(2, dtype), 0).dtype.name
        parts.append(f"{name} stays {name}" if result == name else f"{name} cast to {result}")
    return f"computed ({'; '.join(parts)})"


def test_numpy_column_of_the_runtimes_table_is_numpys_own_casting():
    text = (DOCS / "runtimes.md").read_text(encoding="utf-8")
    header = table_row(text, "input")
    row = table_row(text, "uint8, bool, ... (forbidden)")
    assert row[header.index("`np.maximum(x, 0)`")] == numpy_cell()
    # the prose says the same: uint8 computed as it is, bool cast
    for name in ("runtimes.md", "../README.md"):
        prose = page(f"docs/{name}")
        assert "NumPy silently casts" not in prose
        assert "uint8 as uint8, bool cast to int64" in prose, name
    assert "uint8 stays uint8" in numpy_cell() and "bool cast to int64" in numpy_cell()


def glibc_needed(library: Path) -> tuple[int, int]:
    """The newest GLIBC_x.y symbol version ``library`` needs (objdump -T)."""
    dump = subprocess.run(["objdump", "-T", str(library)], capture_output=True, text=True)
    versions = {
        (int(major), int(minor)) for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", dump.stdout)
    }
    assert versions, dump.stderr
    return max(versions)


#: The manylinux policies auditwheel picks from for x86-64 (PEP 600 names), oldest first.
MANYLINUX_GLIBCS = ((2, 5), (2, 12), (2, 17), (2, 24), (2, 26), (2, 27), (2, 28), (2, 31))


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_the_glibc_figure_of_the_pages_is_what_the_built_libraries_need():
    package = Path(onnx_relu.__file__).parent
    libraries = [*package.glob("_relu*.so"), *package.glob("lib/*.so")]
    assert libraries
    needed = max(glibc_needed(library) for library in libraries)
    # the lowest policy at or above it: the tag auditwheel gives the wheel (make wheel), as long
    # as that is manylinux2014 or newer (no x86-64 wheel of ours is older)
    policy = max((2, 17), min(g for g in MANYLINUX_GLIBCS if g >= needed))
    figure = f"{policy[0]}.{policy[1]}"
    tag = f"manylinux_{policy[0]}_{policy[1]}_x86_64"
    row = table_row(
        (DOCS / "platforms.md").read_text(encoding="utf-8"), f"Linux x86-64 (glibc >= {figure})"
    )
    assert tag in row[1]
    assert f"any x86-64 Linux with glibc {figure} or newer" in page("docs/building.md")


def test_onnxruntime_float16_signalling_nan_is_what_the_runtimes_table_says():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [9])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.full(9, 0x7C01, np.uint16).view(np.float16)
    (y,) = session.run(None, {"x": x})
    bits = [int(b) for b in np.asarray(y).view(np.uint16)]
    in_block, last = bits[0], bits[8]  # one whole block of 8, then one element after it
    text = (DOCS / "runtimes.md").read_text(encoding="utf-8")
    cell = table_row(text, "signalling NaN float16")[2]
    assert f"0x7C01 -> 0x{in_block:04X}" in cell
    assert f"0x{last:04X} in the last (size mod 8) elements" in cell
    kept = "payload kept" if in_block & 0x1FF == 0x001 else "payload lost"
    assert kept in cell


def test_the_user_facing_pages_cite_no_internal_tracker():
    """The site's pages (README, CHANGELOG and BENCHMARKS included) name no issue of the
    project's own tracker, which a reader cannot look up: "until issue 13", "(issue 26)"."""
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "BENCHMARKS.md"]
    pages += sorted(DOCS.glob("*.md")) + sorted(DOCS.glob("*.rst"))
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in pages
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\b(issues?|round) #?\d+\b", line, re.IGNORECASE)
    ]
    assert not cited, "\n".join(cited)


# --- the front door: timings, install lines, what '-' does, where a legalized model runs -------

FRONT_DOOR_PAGES = [ROOT / "README.md", ROOT / "Makefile", *sorted(DOCS.glob("*.md"))]


def test_timings_are_stated_once_with_the_machine_and_its_load():
    """The README states how long ``make demo`` and ``make test`` take, once, with the machine
    and its load; the other pages point there, the Makefile's own line repeats its figures, and
    the ``make demo`` figure is the one BENCHMARKS.md records measuring."""
    for path in FRONT_DOOR_PAGES:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b11 ?(to|-) ?40\b", text), path.name  # a range nobody measured
    readme = page("README.md")
    demo = re.findall(r"`make demo` (\d+)-(\d+) s in a fresh clone", readme)
    assert len(demo) == 1, demo
    assert len(re.findall(r"`make demo` (?:took )?[\d.-]+ s", readme)) == 1
    assert "2-vCPU Intel Xeon" in readme and "load average" in readme
    measured = re.search(
        r"time make demo` \| ([\d.]+) s wall .*? in a new clone ([\d.]+) s", page("BENCHMARKS.md")
    )
    assert measured, "BENCHMARKS.md records no make demo in a fresh clone"
    figures = sorted(round(float(figure)) for figure in measured.groups())
    assert figures == sorted(int(figure) for figure in demo[0])
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    echoed = re.findall(r"(\d+ s|\d+ minutes)", makefile.split("\ntest:")[1].split("\n\n")[0])
    assert echoed and all(figure in readme for figure in echoed), echoed


def test_install_lines_work_from_a_clone():
    """onnx-relu is not on PyPI: no page tells a reader to install it from an index."""
    assert "onnx-relu is not on PyPI" in page("README.md")
    for path in FRONT_DOOR_PAGES:
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert not re.search(r"pip install \"?onnx-relu\b", text), path.name


def test_a_npy_through_standard_input_is_streamed_as_the_command_page_says(tmp_path):
    """docs/cli.md: ``.npy`` to ``.npy`` through ``-`` streams in windows; checked here: 128 MB
    through standard input to standard output in far less memory than the tensor."""
    text = page("docs/cli.md")
    assert "`.npy` to `.npy` through `-` streams in windows as files do" in text
    assert "A tensor going through `-` is held in memory whole" not in text
    source = tmp_path / "x.npy"
    np.save(source, np.linspace(-1, 1, 32 << 20, dtype=np.float32))  # 128 MiB
    measure = (
        "import resource, subprocess, sys\n"
        "with open(sys.argv[1], 'rb') as i, open(sys.argv[2], 'wb') as o:\n"
        "    subprocess.run([sys.executable, '-m', 'onnx_relu', 'apply', '-', '-'],"
        " stdin=i, stdout=o, check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, str(source), str(tmp_path / "y.npy")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    peak_mib = int(done.stdout) / 1024  # ru_maxrss is in KiB on Linux
    assert peak_mib < 96, peak_mib  # held whole, it would be over 128
    y = np.load(tmp_path / "y.npy", mmap_mode="r")
    assert y.shape == (32 << 20,) and float(y[0]) == 0.0 and float(y[-1]) == 1.0


def test_where_a_legalized_model_runs_is_qualified():
    text = page("docs/onnx-integration.md")
    assert "the model file can go anywhere" not in text
    cell = table_row((DOCS / "onnx-integration.md").read_text(encoding="utf-8"), "needs")[2]
    assert "external data" in cell and "an older onnxruntime may not" in cell
