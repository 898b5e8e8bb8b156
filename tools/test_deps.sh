#!/usr/bin/env bash
# `make test-latest` / `make test-oldest`: onnx-relu against the newest, or the oldest allowed,
# release of its dependencies, ignoring uv.lock, in a fresh venv.
#
#   tools/test_deps.sh RESOLUTION PYTHON VENV
#
# RESOLUTION is uv's: `highest` (every package at its newest release, build dependencies
# included) or `lowest-direct` (every requirement pyproject.toml names, in the test extras and
# the build group, at its lower bound; what they need in turn at its newest). The versions are
# resolved from pyproject.toml with `uv pip compile` (written to VENV/requirements.txt and
# printed), installed, and onnx-relu is built without isolation against that venv's numpy,
# meson-python, meson and ninja, so the build's lower bounds are tested too.
#
# The tests: TEST_ARGS (default: tests/wheel-tests.args, the subset `make pythons` runs on every
# Python: everything whose behaviour can depend on a package version, with the `quick`
# Hypothesis profile) plus the Dask/zarr files the wheel subset leaves out (files through Dask
# arrays and zarr stores, and the Dask cluster tests), so that the dask, distributed and zarr
# bounds are exercised too, and the benchmark's tests (matplotlib). TEST_JOBS pytest-xdist
# workers (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

resolution=${1:?resolution: highest or lowest-direct}
python=${2:?python}
venv=${3:?venv folder}
uv=${UV:?UV: the uv binary (the Makefile sets it)}
label="deps-$resolution"

start=$SECONDS
rm -rf "$venv"
"$uv" venv --quiet --python "$python" --no-python-downloads "$venv"
py=$venv/bin/python
# --no-config: no uv.lock or [tool.uv] setting shapes this resolution; --upgrade: uv's cached
# index pages are not taken as the newest.
"$uv" pip compile --quiet --no-config --upgrade --python "$py" --resolution "$resolution" \
  --no-header --no-annotate --extra test --group pyproject.toml:build pyproject.toml \
  -o "$venv/requirements.txt"
"$uv" pip install --quiet --python "$py" -r "$venv/requirements.txt"
"$uv" pip install --quiet --python "$py" --no-deps --no-build-isolation --reinstall-package onnx-relu .
echo "$label: $("$py" -c 'import sys; print(sys.version.split()[0])'), resolved in $((SECONDS - start)) s:"
"$py" - <<'PY'
from importlib.metadata import version, PackageNotFoundError
names = ["numpy", "ml_dtypes", "onnx", "onnxruntime", "protobuf", "dask", "distributed", "zarr",
         "pytest", "pytest-xdist", "hypothesis", "matplotlib", "tqdm", "meson-python", "meson",
         "ninja"]
found = []
for name in names:
    try:
        found.append(f"{name} {version(name)}")
    except PackageNotFoundError:
        found.append(f"{name} (not installed)")
print("  " + ", ".join(found))
PY

# The installed build is what the tests import (never src/): the same check as make pythons.
"$py" -c "import onnx_relu, sys; sys.exit('src' in onnx_relu.__file__.split('/'))"

if [ -n "${TEST_ARGS:-}" ]; then
  read -r -a args <<<"$TEST_ARGS"
else
  args=(@tests/wheel-tests.args tests/files/test_dask.py tests/files/test_dask_failures.py
        tests/bench/test_bench.py)
fi
tests_start=$SECONDS
"$py" -m pytest -q -p no:cacheprovider -n "${TEST_JOBS:-2}" --dist loadfile "${args[@]}"
echo "$label: tests took $((SECONDS - tests_start)) s, all $((SECONDS - start)) s"
