#!/usr/bin/env bash
# Linux arm64 (aarch64) on this x86-64 machine: the manylinux wheel cross-compiled, and the test
# suite run on that wheel under emulation (qemu-user) in a minimal Debian 12 arm64 root.
#
#   tools/aarch64.sh wheel OUTDIR   `make wheel-aarch64`: prints the repaired wheel's path last
#   tools/aarch64.sh test WHEEL     `make test-aarch64`: the wheel installed in the root, tests run
#
# The root (tools/debian_root.sh, name bookworm-arm64: Debian 12, CPython 3.11, glibc 2.36) is
# made on first use (6-8 minutes) and cached outside the clone under
# ${ONNX_RELU_CACHE:-~/.cache/onnx-relu}/roots/. Tools that are missing (the cross compiler,
# qemu-user-static, debootstrap) are installed with apt-get.
#
# Why cross-compiled, not built natively inside the emulated root: the compiler is then the
# host's aarch64-linux-gnu-gcc running at full speed (the build takes seconds, where gcc, meson
# and ninja under qemu take minutes), and the result is the same code: the same meson.build and
# flags, the same kernel sources, linked against the arm64 glibc 2.36 of Debian's cross libc
# (binding only GLIBC_2.17 symbols, aarch64's oldest). Meson introspects the root's own CPython
# 3.11 and NumPy through qemu (a wrapper script named as the cross file's python), so the
# extension's suffix, Python headers and NumPy headers are the arm64 interpreter's. What runs the
# tests is the wheel itself, installed in the root: a wrong cross build fails there.
#
# The tests (TESTS_AARCH64, default below) run with the arm64 CPython 3.11 under qemu-user: the
# core suite, the C kernel's cache detection and the onnxruntime custom-op library's tests, with
# the Hypothesis profile `quick`. docs/platforms.md says what that does and does not show.
set -euo pipefail
cd "$(dirname "$0")/.."

root_name=bookworm-arm64
root_suite=bookworm
root_packages=(python3 python3-venv python3-dev ca-certificates gcc libc6-dev)
py_version=3.11
# Inside the root: the NumPy the build introspects, and the test venv.
build_venv=/opt/onnx-relu/build-venv
test_venv=/opt/onnx-relu/test-venv
tests=${TESTS_AARCH64:-tests/core tests/kernel/test_cache_detection.py tests/onnx/test_ort_library.py}
# Left out of those by default (KEYWORDS_AARCH64='' keeps them): the tests that start a Python
# subprocess per case to parse environment variables or read the affinity mask at import, and
# the leak tests that repeat a call a million / a thousand times and watch the RSS. Their code is
# the same on every architecture and x86-64 runs them; under qemu each such import of NumPy and
# onnx-relu takes 10-60 s (test_threads.py alone took over 15 minutes on the loaded 2-vCPU
# machine), and the repetitions ran for over 10 minutes (3 minutes for the RSS test of the
# output cache). Also left out: onnx's nine light models run through onnxruntime (their
# convolutions, emulated, took over 10 minutes; the library's Relu on every type and opset is
# tested by the other onnxruntime tests).
keywords=${KEYWORDS_AARCH64-not environment_variable and not non_ascii_digits and not test_default_is_the_cpus and not affinity_mask and not million_small_calls and not thousand_large_calls and not rss_bounded_over_many_calls and not light_model}
jobs=${TEST_JOBS_AARCH64:-2}

need_host_tools() {
  local missing=()
  command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
  command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static binfmt-support)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "aarch64: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

make_root() {  # prints the root's folder
  tools/debian_root.sh make "$root_name" "$root_suite" arm64 "${root_packages[@]}"
}

# qemu-user (7.2, Debian 12's) shows arm64 programs the host's x86-64 /proc/cpuinfo, on which
# onnxruntime's CPU detection (the cpuinfo library) crashes at import. The root gets an arm64
# one instead: one entry per CPU of this machine, each a plain Armv8.2 core (Neoverse N1's
# implementer and part numbers, base features) that qemu's default CPU model emulates.
fake_cpuinfo() {
  local file=build/aarch64/cpuinfo cpu
  mkdir -p build/aarch64
  : >"$file"
  for cpu in $(seq 0 $(($(nproc --all) - 1))); do
    printf 'processor\t: %d\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n' "$cpu" >>"$file"
  done
}

in_root() {  # CMD...: run in the root with the clone at /src (and ../shared at /shared)
  fake_cpuinfo
  local binds=(--bind "$PWD=/src" --bind "$PWD/build/aarch64/cpuinfo=/proc/cpuinfo")
  # The spec text the spec-example tests read lies beside the checkout, in ../shared.
  [ ! -d ../shared ] || binds+=(--bind "$(cd ../shared && pwd -P)=/shared")
  tools/debian_root.sh run "$root_name" "${binds[@]}" -- "$@"
}

# A venv in the root with the given pip requirement, made once (the stamp names what it holds).
root_venv() {
  local venv=$1 root=$2
  shift 2
  local want="$*"
  if [ -f "$root$venv/.onnx-relu-venv" ] && [ "$(cat "$root$venv/.onnx-relu-venv")" = "$want" ]; then
    return 0
  fi
  echo "aarch64: making $venv in the root ($want; pip under qemu: minutes once)" >&2
  in_root sh -c "rm -rf '$venv' && python$py_version -m venv '$venv' \
    && '$venv/bin/python' -m pip install --quiet --disable-pip-version-check $(printf "'%s' " "$@") \
    && echo '$want' > '$venv/.onnx-relu-venv'"
}

find_host_python() {  # a CPython X.Y of this machine (pyenv's newest, else pythonX.Y on PATH)
  local found="" pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
  if [ -d "$pyenv_root/versions" ]; then
    found=$(ls -d "$pyenv_root/versions/$py_version".* 2>/dev/null \
      | grep -E "/$py_version\.[0-9]+$" | sort -V | tail -1 || true)
    [ -n "$found" ] && found="$found/bin/python$py_version"
  fi
  if [ -z "$found" ] || [ ! -x "$found" ]; then
    found=$(command -v "python$py_version" || true)
  fi
  [ -n "$found" ] || { echo "aarch64: no CPython $py_version on this machine to drive the build" >&2; exit 2; }
  echo "$found"
}

cmd_wheel() {
  local out=${1:?usage: tools/aarch64.sh wheel OUTDIR}
  need_host_tools
  local root host_python site cross dir
  root=$(make_root)
  root_venv "$build_venv" "$root" "numpy>=2.0"
  host_python=$(find_host_python)
  site=$(ls -d "$root$build_venv"/lib/python$py_version/site-packages)
  dir=$PWD/build/aarch64
  mkdir -p "$dir/include"
  # The root's CPython under qemu, its prefix the root's /usr seen from here (so that the include
  # paths it reports exist on this machine), with the build venv's NumPy importable.
  cat >"$dir/python$py_version" <<EOF
#!/bin/sh
# Generated by tools/aarch64.sh: the arm64 root's CPython for meson's introspection.
PYTHONPATH='$site' exec qemu-aarch64-static -L '$root' '$root/usr/bin/python$py_version' "\$@"
EOF
  chmod +x "$dir/python$py_version"
  # Debian's pyconfig.h includes <aarch64-linux-gnu/python3.11/pyconfig.h>: make that one
  # directory of the root's /usr/include visible (last), nothing else of it.
  ln -sfn "$root/usr/include/aarch64-linux-gnu" "$dir/include/aarch64-linux-gnu"
  cross=$dir/cross.ini
  cat >"$cross" <<EOF
# Generated by tools/aarch64.sh.
[binaries]
c = 'aarch64-linux-gnu-gcc'
ar = 'aarch64-linux-gnu-ar'
strip = 'aarch64-linux-gnu-strip'
python = '$dir/python$py_version'
exe_wrapper = ['qemu-aarch64-static', '-L', '$root']

[built-in options]
c_args = ['-idirafter', '$dir/include']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'aarch64'
endian = 'little'
EOF
  # The build runs in a venv of this machine's CPython holding pyproject's build requirements
  # (remade when they change): _PYTHON_HOST_PLATFORM, which gives the wheel its platform tag,
  # would make an isolated build environment fetch arm64 wheels of them (ninja).
  local uv=${UV:-.venv/bin/uv} env=$dir/host-build-env requires
  requires=$("$host_python" -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")')
  if [ ! -f "$env/.requires" ] || [ "$(cat "$env/.requires")" != "$requires" ]; then
    rm -rf "$env"
    "$uv" venv --quiet --python "$host_python" "$env"
    # shellcheck disable=SC2046
    "$uv" pip install --quiet --python "$env/bin/python" $(printf '%s\n' "$requires" | tr '\n' ' ')
    printf '%s\n' "$requires" >"$env/.requires"
  fi
  CROSS_FILE=$cross NO_BUILD_ISOLATION=1 _PYTHON_HOST_PLATFORM=linux-aarch64 \
    tools/build_wheel.sh "$env/bin/python" "$out"
}

cmd_test() {
  local wheel=${1:?usage: tools/aarch64.sh test WHEEL}
  case $(basename "$wheel") in
    *manylinux*aarch64.whl) ;;
    *) echo "aarch64: $wheel is not a manylinux aarch64 wheel (make wheel-aarch64)" >&2; exit 2 ;;
  esac
  need_host_tools
  local root start
  start=$SECONDS
  root=$(make_root)
  # The venv with the wheel's test extra is made when the wheel's requirements (its
  # Requires-Dist lines, the stamp) differ from the venv's; otherwise the wheel alone is
  # reinstalled (no resolution: pip under qemu takes minutes).
  local name stamp
  name=$(basename "$wheel")
  mkdir -p build/aarch64
  cp "$wheel" "build/aarch64/$name"
  stamp=$(python3 - "$wheel" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
print(" | ".join(sorted(line for line in lines if line.startswith("Requires-Dist:"))))
PY
)
  if [ -f "$root$test_venv/.onnx-relu-venv" ] && [ "$(cat "$root$test_venv/.onnx-relu-venv")" = "$stamp" ]; then
    in_root "$test_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      --no-deps --force-reinstall "/src/build/aarch64/$name"
  else
    echo "aarch64: making $test_venv in the root (pip under qemu: minutes, once)" >&2
    printf '%s\n' "$stamp" >build/aarch64/venv-stamp
    in_root sh -c "rm -rf '$test_venv' && python$py_version -m venv '$test_venv' \
      && '$test_venv/bin/python' -m pip install --quiet --disable-pip-version-check \
           '/src/build/aarch64/$name[test]' \
      && cp /src/build/aarch64/venv-stamp '$test_venv/.onnx-relu-venv'"
  fi
  echo "aarch64: root, venv and wheel ready after $((SECONDS - start)) s" >&2
  echo "aarch64: running under qemu-user: $tests" >&2
  # shellcheck disable=SC2086
  in_root sh -c "cd /src && exec '$test_venv/bin/python' -m pytest -p no:cacheprovider \
    --hypothesis-profile=quick -q -n $jobs --dist loadfile --durations=10 ${keywords:+-k '$keywords'} $tests"
}

case ${1:-} in
  wheel) shift; cmd_wheel "$@" ;;
  test) shift; cmd_test "$@" ;;
  *) sed -n '2,24p' "$0" >&2; exit 2 ;;
esac
