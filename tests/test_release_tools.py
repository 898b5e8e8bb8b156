"""The release tools' own rules: `make pythons` (tools/test_pythons.sh) reports a Python it cannot
find instead of passing it silently, and the wheel test subset names only test files that exist.

The script's real work (a wheel built, repaired and tested per Python) is what `.ci/run` runs
as `make pythons`; here only its bookkeeping, with no Python found, so nothing is built.
"""

from __future__ import annotations

import os
import subprocess

from tests.support import REPOSITORY

SCRIPT = REPOSITORY / "tools" / "test_pythons.sh"


def _run_without_pythons(tmp_path, **extra_env):
    env = {
        **os.environ,
        "PYTHON_VERSIONS": "3.98 3.99",  # no such CPython anywhere
        "PYENV_ROOT": str(tmp_path / "no-pyenv"),
        "UV": "/bin/true",  # never called: no interpreter is found
        **extra_env,
    }
    return subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, env=env, cwd=REPOSITORY, timeout=60
    )


def test_a_missing_python_fails_the_target_and_is_named(tmp_path):
    done = _run_without_pythons(tmp_path)
    assert done.returncode == 1, done.stderr
    for version in ("3.98", "3.99"):
        assert f"{version}  MISSING (no pyenv {version}.* in " in done.stdout
    assert " ok " not in done.stdout


def test_allow_missing_pythons_reports_them_and_succeeds(tmp_path):
    done = _run_without_pythons(tmp_path, ALLOW_MISSING_PYTHONS="1")
    assert done.returncode == 0, done.stderr
    assert "3.99  MISSING" in done.stdout


def test_the_wheel_subset_names_existing_tests_and_the_quick_profile():
    entries = (REPOSITORY / "tests" / "wheel-tests.args").read_text().split()
    paths = [entry for entry in entries if not entry.startswith("-")]
    assert paths and all((REPOSITORY / path).exists() for path in paths), paths
    assert len(paths) == len(set(paths))
    assert "--hypothesis-profile=quick" in entries


PYTHONS = REPOSITORY / "tools" / "pythons.sh"


def _pythons_path(version, cache):
    env = {**os.environ, "ONNX_RELU_CACHE": str(cache), "PYENV_ROOT": str(cache / "no-pyenv")}
    return subprocess.run(
        ["bash", str(PYTHONS), "path", version], capture_output=True, text=True, env=env, timeout=60
    )


def _executable(path):
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


def test_the_interpreter_recipe_finds_what_a_cold_run_made_in_the_cache(tmp_path):
    # Nothing in the cache yet: not there (a cold `make` would build them), and nothing printed.
    for version in ("3.13t", "3.14", "3.15", "3.99"):
        done = _pythons_path(version, tmp_path)
        assert (done.returncode, done.stdout) == (1, ""), (version, done)
    # What a cold run leaves: the sid root (with its stamp) and the free-threaded build.
    _executable(tmp_path / "python" / "3.13t" / "bin" / "python3.13t")
    _executable(tmp_path / "roots" / "sid" / "usr" / "bin" / "python3.14")
    done = _pythons_path("3.14", tmp_path)
    assert done.returncode == 1, "a root without its stamp is a half-made one"
    (tmp_path / "roots" / "sid" / ".onnx-relu-root").write_text("sid amd64 python3.14\n")
    assert _pythons_path("3.14", tmp_path).stdout == "sid:/usr/bin/python3.14\n"
    assert _pythons_path("3.15", tmp_path).returncode == 1  # not in that root
    done = _pythons_path("3.13t", tmp_path)
    assert done.stdout == f"{tmp_path}/python/3.13t/bin/python3.13t\n", done


def test_the_interpreter_recipe_refuses_a_bad_command():
    done = subprocess.run(
        ["bash", str(PYTHONS), "paths", "3.14"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "Usage:" in done.stderr
