"""`make test`'s optional torch step (tools/cpu_torch.sh): it installs only the CPU wheel that
lies on the machine's disk, says in one line when it cannot, and never fails `make test`.

Nothing is installed here: the Python it is given is a fake that answers as pip would.
"""

from __future__ import annotations

import os
import subprocess

from tests.support import REPOSITORY

SCRIPT = REPOSITORY / "tools" / "cpu_torch.sh"
WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


def _fake_python(tmp_path, *, has_torch: bool, pip_works: bool):
    """A stand-in for .venv/bin/python that records its arguments: torch's version found or not,
    `pip install` succeeding or failing, no pip configuration."""
    log = tmp_path / "calls.log"
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{log}"\n'
        'case "$*" in\n'
        f"  *importlib.metadata*) {'echo 2.13.0+cpu' if has_torch else 'exit 1'} ;;\n"
        '  *"pip config get"*) exit 1 ;;\n'
        f'  *"pip install"*) exit {0 if pip_works else 1} ;;\n'
        "esac\n"
    )
    fake.chmod(0o755)
    return fake, log


def _run(fake, wheel_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["TORCH_WHEEL_DIR"] = str(wheel_dir)
    return subprocess.run(
        ["bash", str(SCRIPT), str(fake)], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_wheel_on_disk_is_installed_by_its_path(tmp_path):
    (tmp_path / WHEEL).write_bytes(b"")
    fake, log = _fake_python(tmp_path, has_torch=False, pip_works=True)
    done = _run(fake, tmp_path)
    assert (
        done.returncode == 0
        and done.stdout == f"cpu_torch: installed {WHEEL} from this machine's disk\n"
    )
    installs = [line for line in log.read_text().splitlines() if "pip install" in line]
    assert installs == [f"-m pip install --quiet --only-binary :all: {tmp_path / WHEEL}"]


def test_no_wheel_on_disk_says_the_torch_tests_will_skip(tmp_path):
    fake, log = _fake_python(tmp_path, has_torch=False, pip_works=True)
    done = _run(fake, tmp_path / "empty")
    assert done.returncode == 0
    assert done.stdout == (
        "cpu_torch: no torch-2.13.0+cpu wheel on this machine's disk; torch's tests will skip\n"
    )
    assert "pip install" not in log.read_text()  # nothing asked of an index


def test_a_failing_install_does_not_fail_make_test(tmp_path):
    (tmp_path / WHEEL).write_bytes(b"")
    fake, _ = _fake_python(tmp_path, has_torch=False, pip_works=False)
    done = _run(fake, tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith(f"cpu_torch: could not install {WHEEL}")
    assert done.stdout.rstrip().endswith("torch's tests will skip")


def test_a_venv_with_torch_is_left_alone(tmp_path):
    (tmp_path / WHEEL).write_bytes(b"")
    fake, log = _fake_python(tmp_path, has_torch=True, pip_works=True)
    done = _run(fake, tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    assert "pip" not in log.read_text()
