"""The clone's front door: the ``.venv`` that ``make`` makes has a pip of its own, so that
``pip install`` after ``source .venv/bin/activate`` installs into it; ``make demo`` ends by
saying how to add packages to it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support import REPOSITORY

UV_TOOLS = REPOSITORY / ".venv-tools" / "bin" / "uv"
MAKEFILE = (REPOSITORY / "Makefile").read_text(encoding="utf-8")


def pip_of(python):
    done = subprocess.run(
        [str(python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(
    os.path.realpath(sys.prefix) != os.path.realpath(REPOSITORY / ".venv"),
    reason="runs in the clone's own .venv (make test)",
)
def test_the_clones_venv_has_its_own_pip():
    assert f"from {os.path.realpath(sys.prefix)}{os.sep}" in pip_of(sys.executable)


@pytest.mark.skipif(not UV_TOOLS.exists(), reason="needs the uv make bootstraps (.venv-tools)")
def test_make_seeds_pip_in_a_new_venv_and_adds_it_to_one_without(tmp_path):
    """The Makefile's own rule, on two venvs of a temporary folder: one it makes (uv's --seed),
    and one that uv made without pip (as every .venv before this rule)."""
    for venv, make_it_first in ((tmp_path / "new", False), (tmp_path / "old", True)):
        if make_it_first:
            subprocess.run(
                [str(UV_TOOLS), "venv", "--quiet", "--python", sys.executable, str(venv)],
                check=True,
                timeout=120,
            )
            assert not (venv / "bin" / "pip").exists()
        done = subprocess.run(
            ["make", "-C", str(REPOSITORY), f"VENV={venv}", f"PYTHON={sys.executable}",
             f"{venv}/bin/pip"],
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"from {venv}{os.sep}" in pip_of(venv / "bin" / "python")


def test_every_venv_target_has_pip_and_make_demo_says_how_to_add_packages():
    rules = re.findall(r"^(\$\(VENV\)/\.installed[\w-]*):.*\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert len(rules) >= 5
    for target, recipe in rules:  # pip once the lock is checked: nothing from a stale lock
        assert "\t$(CHECK_LOCK)\n\t$(SEED_PIP)\n" in recipe, target
    demo = re.search(r"^demo:.*\n((?:\t.*\n)+)", MAKEFILE, re.M).group(1)
    assert "make install EXTRAS=" in demo and ".venv/bin/python -m pip install PACKAGE" in demo
