#!/usr/bin/env bash
# `make pythons`: the repaired wheel tested on every supported CPython found on this machine.
#
# For each version in PYTHON_VERSIONS (default 3.10 3.11 3.12 3.13): find its interpreter (pyenv's
# $PYENV_ROOT/versions/X.Y.*, else pythonX.Y on PATH), make a fresh venv (build/pythons/X.Y),
# build and repair the wheel with it (tools/build_wheel.sh), install the wheel with its test
# extras, and run the Python test subset below with the reduced Hypothesis profile.
# uv (UV, default .venv/bin/uv: `make pythons` installs it) makes the venvs, builds and installs:
# from its cache (~/.cache/uv, kept between runs) that takes seconds where pip took a minute per
# Python, which is what lets `.ci/run` afford every Python. PYTHON_JOBS (default 2) versions run
# at a time: each test run uses one core, and two at a time took 3 minutes for all four
# Pythons on the 2-vCPU machine where one at a time took 5.
#
# The subset, tests/wheel-tests.args (pytest's @file; cibuildwheel's test-command in
# pyproject.toml runs the same file): every test file whose behaviour can differ between Pythons
# and the package versions pip picks for each (numpy 2.2 and onnxruntime 1.23 on 3.10, numpy 2.5
# on 3.12 and 3.13, ...), with the Hypothesis profile `quick` (100 examples per test instead of
# 1,000): the core (types, refusals, out=, layouts, overlap, exhaustive, fuzz, threads from
# Python, the output cache, leaks), the ONNX layer (backend, reference op, checker, legalize,
# the onnxruntime library inside that Python's onnxruntime, models over 2 GiB), tensor files,
# the piped command-line forms, the typed example, layers and docstrings: 2,608 of 3,133 tests.
# Left out, to keep `.ci/run` under 15 minutes: the files that start Dask clusters, those that
# run a command-line subprocess per case (bad files, bad models and arguments, model runs,
# README examples, out of core), the C driver and the thread pool's tests (tests/core/
# test_threads.py: the same C whatever the Python), the benchmark and onnxruntime 1.16's venv. `make test` runs all of
# them with the full profile on the .venv's Python; `make sanitize` the sanitizer.
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

uv=${UV:-.venv/bin/uv}
[ -x "$uv" ] || { echo "pythons: uv not found at $uv (make pythons installs it into .venv)" >&2; exit 2; }
jobs=${PYTHON_JOBS:-2}

# One version: a fresh venv, the wheel built with its Python and repaired, installed with its
# test extras, the subset run. Writes its summary line to $root/X.Y.result; its log to X.Y.log.
test_one() {
  local version=$1 python=$2 start venv log status=0 result seconds wheel
  start=$(date +%s)
  venv="$root/$version"
  log="$root/$version.log"
  rm -rf "$venv" "$root/wheels-$version" "$root/$version.result"
  {
    echo "pythons: $version: $python ($("$python" -V 2>&1))" &&
    "$uv" venv --quiet --python "$python" "$venv" &&
    echo "pythons: $(date +%T) building the wheel" &&
    wheel=$(tools/build_wheel.sh "$venv/bin/python" "$root/wheels-$version" | tail -1) &&
    echo "pythons: $(date +%T) installing $wheel[test]" &&
    "$uv" pip install --quiet --python "$venv/bin/python" "$wheel[test]" &&
    echo "pythons: $(date +%T) testing" &&
    "$venv/bin/python" -m pytest -q -p no:cacheprovider $tests &&
    echo "pythons: $(date +%T) done"
  } > "$log" 2>&1 || status=$?
  result=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)" "$log" | tail -1 \
    | tr -d '=' | sed 's/^ *//')
  seconds=$(( $(date +%s) - start ))
  if [ "$status" -eq 0 ]; then
    echo "$version  ok      $("$venv/bin/python" -V 2>&1), ${result:-?} (${seconds} s; log: $log)" \
      > "$root/$version.result"
  else
    echo "$version  FAILED  status $status, ${result:-no test result} (${seconds} s; log: $log)" \
      > "$root/$version.result"
  fi
}

summary=()
failed=0
found=()
for version in $versions; do
  python=$(find_python "$version")
  if [ -z "$python" ]; then
    summary+=("$version  MISSING (no pyenv $version.* in $pyenv_root/versions, no python$version on PATH)")
    [ "${ALLOW_MISSING_PYTHONS:-0}" = 1 ] || failed=1
    continue
  fi
  found+=("$version")
  # PYTHON_JOBS at a time (meson-python's build already uses every core; the tests use one)
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "pythons: $(date +%T) $version: $python"
  test_one "$version" "$python" &
done
wait

for version in "${found[@]}"; do
  line=$(cat "$root/$version.result" 2>/dev/null || echo "$version  FAILED  no result")
  summary+=("$line")
  case "$line" in *"  ok  "*) ;; *) failed=1; grep -v "^WARNING: Location" "$root/$version.log" | tail -15 ;; esac
done

echo "pythons: the repaired wheel on each Python (pytest $tests)"
for line in "${summary[@]}"; do
  echo "  $line"
done
exit "$failed"
