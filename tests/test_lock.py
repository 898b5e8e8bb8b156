"""The locked set-up: `make demo` / `make test` install from uv.lock and refuse a stale one, and
pyproject.toml's claims (Pythons, platforms, build requirements) agree with one another.

The stale-lock check runs the Makefile on a copy of the project in tmp_path (pyproject.toml
changed, uv.lock not) with the uv that `make` bootstrapped into .venv-tools; uv builds the copy's
metadata (its version is dynamic) to compare it with the lock: about 40 s on the 2-core machine.
From a wheel's test run (no .venv-tools beside the tests) it skips.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from tests.support import REPOSITORY

PYPROJECT = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())
MAKEFILE = (REPOSITORY / "Makefile").read_text()
UV_TOOLS = REPOSITORY / ".venv-tools"


def _supported_minors():
    lowest = re.fullmatch(r">=3\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert lowest, PYPROJECT["project"]["requires-python"]
    return list(range(int(lowest.group(1)), 16))  # through 3.15, the newest CPython released


def test_the_python_versions_agree_across_requires_python_classifiers_and_cibuildwheel():
    minors = _supported_minors()
    assert minors[0] == 11  # 3.10 dropped: end of life in October 2026
    classifiers = PYPROJECT["project"]["classifiers"]
    claimed = sorted(
        int(c.rsplit(".", 1)[1])
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert claimed == minors
    built = PYPROJECT["tool"]["cibuildwheel"]["build"]
    # free-threaded builds (cp3XXt) are the tested ones only: 3.13t (docs/threads.md)
    assert [b for b in built if not b.endswith("t-*")] == [f"cp3{m}-*" for m in minors]
    assert [b for b in built if b.endswith("t-*")] == ["cp313t-*"]
    assert "Programming Language :: Python :: Free Threading :: 2 - Beta" in classifiers
    assert PYPROJECT["tool"]["mypy"]["python_version"] == f"3.{minors[0]}"


def test_only_the_tested_platform_is_claimed():
    systems = [c for c in PYPROJECT["project"]["classifiers"] if c.startswith("Operating System")]
    assert systems == ["Operating System :: POSIX :: Linux"]
    assert "macos" not in PYPROJECT["tool"]["cibuildwheel"]
    assert "windows" not in PYPROJECT["tool"]["cibuildwheel"]


def test_the_locked_build_group_is_the_build_system_requirements():
    requires = sorted(PYPROJECT["build-system"]["requires"])
    group = PYPROJECT["dependency-groups"]["build"]
    # meson itself is pinned in the group (meson-python's own requirement leaves it open)
    assert sorted(r for r in group if not r.startswith("meson>")) == requires
    assert PYPROJECT["tool"]["uv"]["no-build-isolation-package"] == ["onnx-relu"]


def test_the_makefile_pins_uv_and_installs_from_the_lock_without_editing():
    assert re.search(r"^UV_VERSION := \d+\.\d+\.\d+$", MAKEFILE, flags=re.MULTILINE)
    sync = re.search(r"^SYNC = (.*(?:\\\n.*)*)", MAKEFILE, flags=re.MULTILINE).group(1)
    assert "--locked" in sync and "--no-editable" in sync
    assert (REPOSITORY / "uv.lock").is_file()


def test_the_markers_leave_out_only_what_has_no_wheel_on_3_15():
    optional = PYPROJECT["project"]["optional-dependencies"]
    marked = {r.split(";")[0] for reqs in optional.values() for r in reqs if ";" in r}
    assert marked == {"onnxruntime>=1.23", "zarr>=3.1.4"}
    for reqs in optional.values():
        for requirement in reqs:
            if ";" in requirement:
                assert requirement.split(";")[1].strip() == "python_version < '3.15'"


@pytest.fixture
def project_copy(tmp_path):
    uv = UV_TOOLS / "bin" / "uv"
    if not uv.exists():
        pytest.skip(f"no uv at {uv}: `make test` bootstraps it (this is not a source checkout)")
    for name in ("pyproject.toml", "uv.lock", "Makefile", "meson.build", "README.md", "LICENSE"):
        shutil.copy(REPOSITORY / name, tmp_path / name)
    shutil.copytree(
        REPOSITORY / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__")
    )
    # The build checks the tables derived from src/onnx_relu/_spec.py, in these files too.
    for name in ("tools/generate_tables.py", "docs/semantics.md", "docs/performance.md"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(REPOSITORY / name, tmp_path / name)
    return tmp_path


def _make(folder, *targets):
    # Not a sub-make of the `make test` that runs this test: its messages say make[1].
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            f"UV_TOOLS={UV_TOOLS}",
            f"PYTHON={sys.executable}",
            *targets,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_stale_lock_is_refused_with_one_line_naming_make_lock(project_copy):
    pyproject = project_copy / "pyproject.toml"
    text = pyproject.read_text()
    changed = text.replace('cli = ["tqdm>=4.60"]', 'cli = ["tqdm>=4.61"]')
    assert changed != text
    pyproject.write_text(changed)
    for target in (".venv/.installed", ".venv/.installed-test"):  # make demo's and make test's
        done = _make(project_copy, target)
        assert done.returncode != 0
        assert re.match(r"make(\[\d+\])?: \*\*\*", done.stderr.strip().splitlines()[-1])
        message = [
            line for line in done.stderr.splitlines() if not re.match(r"make(\[\d+\])?:", line)
        ]
        assert message == [
            "uv.lock is out of date with pyproject.toml: run 'make lock' (and commit uv.lock)"
        ], done.stderr
        assert not (project_copy / ".venv").exists()  # nothing installed from a stale lock
