#!/usr/bin/env bash
# `make pythons`: the repaired wheel tested on every supported CPython found on this machine.
#
# For each version in PYTHON_VERSIONS (default 3.10 3.11 3.12 3.13): find its interpreter (pyenv's
# $PYENV_ROOT/versions/X.Y.*, else pythonX.Y on PATH), build and repair the wheel with it
# (tools/build_wheel.sh), install the wheel with its test extras into a fresh venv
# (build/pythons/X.Y), and run the Python test subset below with the reduced Hypothesis profile.
# pip's wheel cache (~/.cache/pip) is kept between runs, so only the first run downloads.
#
# The subset, tests/wheel-tests.args (pytest's @file; cibuildwheel's test-command in
# pyproject.toml runs the same file), chosen for what can differ between Pythons and the package
# versions pip picks for each (numpy 2.2 on 3.10, onnxruntime 1.23 on 3.10, ...): importing every
# module and running its docstring examples, the type table, the public API's refusals and its
# out= rules, the ONNX layer's backend, reference op and checker, tensor files, the new
# command-line forms (pipes) and the typed example; with the Hypothesis profile `quick` (100
# examples per test instead of 1,000). Left out: what runs the same C code whatever the Python
# (the kernel driver, layouts, overlap, threads, exhaustive and fuzz sweeps), subprocess-heavy
# command tests, the Dask clusters, benchmarks and onnxruntime probes; `make test` runs the
# whole suite with the full profile on the .venv's Python, `make sanitize` the sanitizer.
# PYTHON_TESTS replaces the arguments (e.g. PYTHON_TESTS="tests -q" for everything).
#
# A version that is not found is reported as MISSING and fails the target (nothing is passed
# silently); set ALLOW_MISSING_PYTHONS=1 to report it and go on.
set -euo pipefail
cd "$(dirname "$0")/.."

versions=${PYTHON_VERSIONS:-3.10 3.11 3.12 3.13}
tests=${PYTHON_TESTS:-@tests/wheel-tests.args}
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
root=build/pythons
mkdir -p "$root"

find_python() {  # the newest pyenv X.Y.* interpreter, else pythonX.Y on PATH
  local version=$1 found=""
  if [ -d "$pyenv_root/versions" ]; then
    found=$(ls -d "$pyenv_root/versions/$version".* 2>/dev/null | grep -E "/$version\.[0-9]+$" \
      | sort -V | tail -1)
    [ -n "$found" ] && found="$found/bin/python$version"
  fi
  if [ -z "$found" ] || [ ! -x "$found" ]; then
    found=$(command -v "python$version" || true)
  fi
  echo "$found"
}

summary=()
failed=0
for version in $versions; do
  python=$(find_python "$version")
  if [ -z "$python" ]; then
    summary+=("$version  MISSING (no pyenv $version.* in $pyenv_root/versions, no python$version on PATH)")
    [ "${ALLOW_MISSING_PYTHONS:-0}" = 1 ] || failed=1
    continue
  fi
  start=$(date +%s)
  echo "pythons: $version: $python ($("$python" -V 2>&1))"
  venv="$root/$version"
  rm -rf "$venv" "$root/wheels-$version"
  status=0
  log="$root/$version.log"
  {
    "$python" -m venv "$venv" &&
    echo "pythons: $(date +%T) building the wheel" &&
    wheel=$(tools/build_wheel.sh "$venv/bin/python" "$root/wheels-$version" | tail -1) &&
    echo "pythons: $(date +%T) installing $wheel[test]" &&
    "$venv/bin/python" -m pip install --quiet "$wheel[test]" &&
    echo "pythons: $(date +%T) testing" &&
    "$venv/bin/python" -m pytest -q -p no:cacheprovider $tests
  } > "$log" 2>&1 || status=$?
  grep -v "^WARNING: Location" "$log" | tail -3
  result=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)" "$log" | tail -1 | tr -d '=' \
    | sed 's/^ *//')
  seconds=$(( $(date +%s) - start ))
  if [ "$status" -eq 0 ]; then
    summary+=("$version  ok      $("$venv/bin/python" -V 2>&1), ${result:-?} (${seconds} s; log: $log)")
  else
    summary+=("$version  FAILED  status $status, ${result:-no test result} (${seconds} s; log: $log)")
    failed=1
  fi
done

echo "pythons: the repaired wheel on each Python (pytest $tests: $(tr '\n' ' ' < tests/wheel-tests.args))"
for line in "${summary[@]}"; do
  echo "  $line"
done
exit "$failed"
