"""The one Hypothesis set-up of the test suite.

Profiles, chosen with the environment variable ``HYPOTHESIS_PROFILE`` (default ``ci``):

* ``ci``: 1,000 examples per test, derandomized (the same examples on every run), no example
  database, no deadline: what ``make test`` runs.
* ``quick``: 100 examples per test (a tenth), derandomized: the reduced profile that
  ``make pythons`` runs on each supported Python against the repaired wheel, where ``make test``
  has already run the full profile once.
* ``thorough``: 50 times as many, random: run by hand, e.g.
  ``HYPOTHESIS_PROFILE=thorough .venv/bin/python -m pytest tests/core/test_fuzz.py -q``.

A test decorated with ``tests.support.strategies.examples(weight)`` runs ``weight`` times the
profile's example count.
"""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.optional import missing_optional_package, skip_reason
from tests.support.progress import pytest_addoption, pytest_configure  # noqa: F401 (hooks)

# The folder tests/onnx would hide the onnx package from a process that has tests/ itself on
# sys.path, as `python -m pytest` run inside tests/ has: say so rather than fail obscurely.
_TESTS = Path(__file__).resolve().parent
if any(Path(entry or os.curdir).resolve() == _TESTS for entry in sys.path):
    raise pytest.UsageError(
        f"{_TESTS} is on sys.path, where its onnx/ folder hides the onnx"
        " package: run pytest from the repository root"
    )

PROFILES = {
    "ci": dict(max_examples=1_000, derandomize=True, database=None),
    "quick": dict(max_examples=100, derandomize=True, database=None),
    "thorough": dict(max_examples=50_000, derandomize=False),
}
for _name, _options in PROFILES.items():
    settings.register_profile(
        _name,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
        **_options,
    )

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in PROFILES:
    raise pytest.UsageError(
        f"HYPOTHESIS_PROFILE={PROFILE!r}; known profiles: {', '.join(PROFILES)}"
    )
settings.load_profile(PROFILE)


class _ModuleOfOptionalPackages(pytest.Module):
    """A test module that needs a missing optional package (tests/support/optional.py) is
    skipped, naming it, instead of failing to import; any other import error still fails."""

    def collect(self):
        try:
            self.obj  # noqa: B018 - imports the test module
        except self.CollectError as error:
            missing = missing_optional_package(error.__cause__)
            if missing is None:
                raise
            pytest.skip(skip_reason(self.path.name, missing), allow_module_level=True)
        return super().collect()


def pytest_pycollect_makemodule(module_path, parent):
    return _ModuleOfOptionalPackages.from_parent(parent, path=module_path)
