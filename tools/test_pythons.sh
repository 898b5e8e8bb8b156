#!/usr/bin/env bash
# `make pythons`: the wheel tested on every supported CPython, each provided by tools/pythons.sh.
#
# PYTHON_VERSIONS (default 3.11 3.12 3.13 3.13t 3.14 3.15): each is first provided
# (tools/pythons.sh make: found in pyenv or on PATH for 3.11-3.13; for 3.14 and 3.15 Debian sid's
# packages in a minimal root; 3.13t, free-threaded, built from source once; all cached outside
# the clone, so only a cold run pays for them). Then, per version, in a fresh venv
# (build/pythons/X.Y): the wheel built with that Python, installed with its test extra, and the
# Python test subset below run with the reduced Hypothesis profile.
#  - On this machine's own Pythons (3.11-3.13, 3.13t) the wheel is repaired with auditwheel and its
#    manylinux tag checked (tools/build_wheel.sh): the wheel tested is the one a release ships.
#  - 3.14 and 3.15 run inside the sid root (tools/debian_root.sh run sid, the clone bind-mounted
#    at /src). The wheel built there is linked against sid's newer glibc and is not portable:
#    it is tested, not repaired. Release wheels for 3.14 and 3.15 come from the manylinux
#    build (cibuildwheel).
#  - 3.14 and 3.15: the subset plus every other tests/core file (the core suite), quick profile.
#  - 3.13t: the subset plus every other tests/core file (the core suite), with the GIL off:
#    if `import onnx_relu` turns the GIL back on (a single-phase C module), the tests run with
#    PYTHON_GIL=0 and the summary says so; the GIL state after the import is always reported.
# The test extra is installed from wheels only (uv --no-build). Where an optional dependency has
# no wheel for a Python (onnxruntime and zarr's numcodecs on 3.15; dask, distributed and zarr on
# 3.13t, for want of free-threaded pyyaml and msgpack wheels), the extra's requirements are installed one by one, those that cannot be are named in
# the summary, and the tests needing them must skip (naming what is missing), never error.
# uv (UV, default .venv/bin/uv: `make pythons` installs it) makes the venvs, builds and installs,
# from its cache (~/.cache/uv, kept between runs; shared with the sid root). PYTHON_JOBS
# (default 2) versions run at a time: each test run uses one core.
#
# The subset, tests/wheel-tests.args (pytest's @file; cibuildwheel's test-command in
# pyproject.toml runs the same file): every test file whose behaviour can differ between Pythons
# and the package versions each installs, with the Hypothesis profile `quick` (100 examples per
# test instead of 1,000): the core (types, refusals, out=, layouts, overlap, exhaustive, fuzz,
# threads from Python, the output cache, leaks), the ONNX layer (backend, reference op, checker,
# legalize, the onnxruntime library inside that Python's onnxruntime, models over 2 GiB), tensor
# files, the piped command-line forms, the typed example, layers and docstrings.
# Left out, to keep `.ci/run` within its budget: the files that start Dask clusters, those that
# run a command-line subprocess per case (bad files, bad models and arguments, model runs,
# README examples, out of core), the C driver and the thread pool's tests (tests/core/
# test_threads.py: the same C whatever the Python; run on 3.13t only), the benchmark and
# onnxruntime 1.16's venv. `make test` runs all of them with the full profile on the .venv's
# Python; `make sanitize` the sanitizer.
# PYTHON_TESTS replaces the arguments (e.g. PYTHON_TESTS="tests -q" for everything).
#
# A version that is not found (or cannot be made) is reported as MISSING and fails the target
# (nothing is passed silently); set ALLOW_MISSING_PYTHONS=1 to report it and go on.
set -euo pipefail
cd "$(dirname "$0")/.."

# One version's work, run on this machine or inside the sid root (called as `_one`): a fresh
# venv, the wheel built (and repaired where REPAIR=1), installed with the test extra from wheels
# only, the tests run. Everything goes to stdout (the caller's log).
run_one() {
  local version=$1 python=$2 repair=$3 root=build/pythons uv=$4 venv wheel tests
  venv="$root/$version"
  tests=${PYTHON_TESTS:-@tests/wheel-tests.args}
  rm -rf "$venv" "$root/wheels-$version"
  # numpy for the build from a wheel: uv takes the newest release, and one without a wheel for
  # this Python (numpy 2.5 on 3.13t) would be compiled from its sdist for minutes.
  export UV_NO_BUILD_PACKAGE=${UV_NO_BUILD_PACKAGE:-numpy}
  echo "pythons: $version: $python ($("$python" -V 2>&1))"
  "$uv" venv --quiet --python "$python" "$venv"
  echo "pythons: $(date +%T) building the wheel"
  if [ "$repair" = 1 ]; then
    wheel=$(UV="$uv" tools/build_wheel.sh "$venv/bin/python" "$root/wheels-$version" | tail -1)
  else
    "$uv" build --quiet --wheel --no-config --python "$venv/bin/python" --out-dir "$root/wheels-$version" .
    wheel=$(ls "$root/wheels-$version"/*.whl)
    echo "pythons: $wheel is built against this root's glibc: tested here, not repaired or released"
  fi
  echo "pythons: $(date +%T) installing $wheel[test]"
  if ! "$uv" pip install --quiet --no-build --python "$venv/bin/python" "$wheel[test]"; then
    # Some optional dependency has no wheel for this Python: the wheel, then each requirement
    # of the test extra that can be installed.
    echo "pythons: the test extra does not install whole from wheels; one requirement at a time"
    "$uv" pip install --quiet --no-build --python "$venv/bin/python" "$wheel"
    local requirement missing=()
    while IFS= read -r requirement; do
      "$uv" pip install --quiet --no-build --python "$venv/bin/python" "$requirement" \
        >/dev/null 2>&1 || missing+=("$requirement")
    done < <("$venv/bin/python" - <<'PY'
import re, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
def expand(name, seen=set()):
    for requirement in extras[name]:
        own = re.fullmatch(r"onnx-relu\[([\w,-]+)\]", requirement)
        if own:
            for extra in own[1].split(","):
                if extra not in seen:
                    seen.add(extra)
                    yield from expand(extra)
        else:
            yield requirement
print("\n".join(dict.fromkeys(expand("test"))))
PY
    )
    echo "pythons: NOT INSTALLED (no wheel for this Python): ${missing[*]:-none}"
  fi
  "$venv/bin/python" - <<'PY'
from importlib import metadata
names = ["numpy", "ml_dtypes", "onnx", "onnxruntime", "dask", "zarr", "distributed"]
found = []
for name in names:
    try:
        found.append(f"{name} {metadata.version(name)}")
    except metadata.PackageNotFoundError:
        found.append(f"{name} -")
print("pythons: VERSIONS " + ", ".join(found))
PY
  local env_args=()
  if [ "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("Py_GIL_DISABLED") or 0)')" = 1 ]; then
    # Free-threaded: the GIL state once the kernel is loaded, and the whole core suite.
    local gil
    gil=$("$venv/bin/python" -W ignore -c 'import sys; from onnx_relu import relu; print("on" if sys._is_gil_enabled() else "off")')
    echo "pythons: GIL after loading the kernel (from onnx_relu import relu): $gil"
    if [ "$gil" = on ]; then
      env_args=(PYTHON_GIL=0)
      echo "pythons: GIL-STATE loading the kernel re-enables the GIL; tests run with PYTHON_GIL=0"
    else
      echo "pythons: GIL-STATE loading the kernel leaves the GIL off; tests run without PYTHON_GIL"
    fi
    [ -n "${PYTHON_TESTS:-}" ] || tests="$tests $(ls tests/core/test_*.py \
      | grep -vxF -f <(grep '^tests/core/' tests/wheel-tests.args) | tr '\n' ' ')"
  fi
  case $version in
    3.14|3.15)
      # The newest Pythons: the whole core suite too (their argparse, C API and numpy differ
      # most from the .venv's), with the subset's quick profile.
      [ -n "${PYTHON_TESTS:-}" ] || tests="$tests $(ls tests/core/test_*.py \
        | grep -vxF -f <(grep '^tests/core/' tests/wheel-tests.args) | tr '\n' ' ')" ;;
  esac
  echo "pythons: $(date +%T) testing: $tests"
  # shellcheck disable=SC2086  # $tests is a list of pytest arguments
  env "${env_args[@]+"${env_args[@]}"}" "$venv/bin/python" -m pytest -q -p no:cacheprovider $tests
  if [ ${#env_args[@]} -gt 0 ]; then
    # The tests ran with the GIL off only if PYTHON_GIL=0 keeps it off after the import.
    env "${env_args[@]}" "$venv/bin/python" -c 'import sys; from onnx_relu import relu; sys.exit(sys._is_gil_enabled())' \
      || { echo "pythons: with PYTHON_GIL=0, loading the kernel still enables the GIL"; return 1; }
  fi
  echo "pythons: $(date +%T) done"
}

if [ "${1:-}" = _one ]; then
  shift
  run_one "$@"
  exit
fi

versions=${PYTHON_VERSIONS:-3.11 3.12 3.13 3.13t 3.14 3.15}
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
root=build/pythons
mkdir -p "$root"

uv=${UV:-.venv/bin/uv}
[ -x "$uv" ] || { echo "pythons: uv not found at $uv (make pythons installs it into .venv)" >&2; exit 2; }
jobs=${PYTHON_JOBS:-2}

# One version in the background: its log in $root/X.Y.log, its summary line in X.Y.result.
test_one() {
  local version=$1 python=$2 start log status=0 result seconds line
  start=$(date +%s)
  log="$root/$version.log"
  rm -f "$root/$version.result"
  case $python in
    sid:*)
      # The clone at /src inside the root, uv from this machine (a static-enough binary) and
      # its cache, shared with the host's runs (copied, not hard-linked: another mount).
      local uv_dir cache_dir
      uv_dir=$(cd "$(dirname "$uv")" && pwd)
      cache_dir=${UV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/uv}
      mkdir -p "$cache_dir"
      # ../shared (the ONNX specification text some tests read) where the clone has one.
      local shared=()
      [ -d ../shared ] && shared=(--bind "$(cd ../shared && pwd -P)=/shared")
      tools/debian_root.sh run sid --bind "$PWD=/src" --bind "$uv_dir=/opt/host-uv" \
        "${shared[@]+"${shared[@]}"}" \
        --bind "$cache_dir=/root/.cache/uv" --env UV_LINK_MODE=copy \
        ${PYTHON_TESTS:+--env "PYTHON_TESTS=$PYTHON_TESTS"} \
        -- bash -c 'cd /src && exec bash tools/test_pythons.sh _one "$@"' bash \
        "$version" "${python#sid:}" 0 "/opt/host-uv/$(basename "$uv")" ;;
    *)
      bash tools/test_pythons.sh _one "$version" "$python" 1 "$uv" ;;
  esac > "$log" 2>&1 || status=$?
  result=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)" "$log" | tail -1 \
    | tr -d '=' | sed 's/^ *//')
  seconds=$(( $(date +%s) - start ))
  line="$(sed -n 's/^pythons: [0-9.t]*: .* (\(Python [^)]*\))$/\1/p' "$log" | head -1), ${result:-no test result} (${seconds} s; log: $log)"
  local extra
  extra=$(sed -n 's/^pythons: NOT INSTALLED (no wheel for this Python): \(.*\)/not installed: \1/p' "$log")
  [ -n "$extra" ] && line="$line; $extra"
  extra=$(sed -n 's/^pythons: GIL-STATE //p' "$log")
  [ -n "$extra" ] && line="$line; $extra"
  if [ "$status" -eq 0 ]; then
    echo "$version  ok      $line" > "$root/$version.result"
  else
    echo "$version  FAILED  status $status, $line" > "$root/$version.result"
  fi
}

summary=()
failed=0
found=()
declare -A pythons=()
# Provide every interpreter first (a cold run makes the sid root and builds 3.13t here, once).
provide_start=$SECONDS
for version in $versions; do
  python=$(tools/pythons.sh make "$version" 2> >(sed 's/^/  /' >&2)) || python=""
  if [ -z "$python" ]; then
    case $version in
      3.14|3.15|3.13t) summary+=("$version  MISSING (tools/pythons.sh make $version failed; see above)") ;;
      *) summary+=("$version  MISSING (no pyenv $version.* in $pyenv_root/versions, no python$version on PATH)") ;;
    esac
    [ "${ALLOW_MISSING_PYTHONS:-0}" = 1 ] || failed=1
    continue
  fi
  pythons[$version]=$python
  found+=("$version")
done
echo "pythons: the interpreters provided in $((SECONDS - provide_start)) s"

for version in "${found[@]+"${found[@]}"}"; do
  # PYTHON_JOBS at a time (meson-python's build already uses every core; the tests use one)
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "pythons: $(date +%T) $version: ${pythons[$version]}"
  test_one "$version" "${pythons[$version]}" &
done
wait

for version in "${found[@]+"${found[@]}"}"; do
  line=$(cat "$root/$version.result" 2>/dev/null || echo "$version  FAILED  no result")
  summary+=("$line")
  case "$line" in *"  ok  "*) ;; *) failed=1; grep -v "^WARNING: Location" "$root/$version.log" | tail -15 ;; esac
done

echo "pythons: the wheel on each Python (pytest ${PYTHON_TESTS:-@tests/wheel-tests.args})"
for line in "${summary[@]}"; do
  echo "  $line"
done
exit "$failed"
