#!/usr/bin/env bash
# The C kernel and onnx_relu under AddressSanitizer + UndefinedBehaviorSanitizer. `make sanitize`
# calls this. First the kernel on its own: src/kernel with the C driver
# tests/kernel/relu_kernel_driver.c, no Python. Then onnx_relu built with the sanitizers, the
# kernel sweep through the ufunc (tests/sanitizer/run_kernel_cases.py) and some of the tests.
#
# The sanitized package goes to build/sanitize-site (meson build dir build/sanitize), never into
# .venv: the sweep runs the .venv's Python with PYTHONPATH pointing there. Extra arguments go to
# the sweep (e.g. --large-sizes 1000,2000000).
#
# Fails (non-zero) if the build fails, if the sweep finds a wrong result or a touched byte, or if
# any sanitizer report appears in the log, whatever the exit status.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
CC=${CC:-cc}
export CC
site=build/sanitize-site
log=build/sanitize.log
mkdir -p build
: > "$log"

fail() { echo "sanitize: FAILED: $*" >&2; exit 1; }
sanitizer_flags=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)

# 0. The kernel driver, built as meson builds the kernel (-O3, no -march=native) plus the
#    sanitizers. --each-offset: every offset of input and output (every address the kernel meets)
#    rather than every pair of them, which tests/kernel/test_kernel_driver.py runs unsanitized.
driver=build/sanitize-driver/relu_kernel_driver
mkdir -p "$(dirname "$driver")"
echo "sanitize: building the kernel driver with ${sanitizer_flags[*]}"
"$CC" -std=c11 -O3 -fno-math-errno -Wall -Wextra -pthread "${sanitizer_flags[@]}" -Isrc/kernel \
  src/kernel/*.c tests/kernel/relu_kernel_driver.c -o "$driver"
set +e
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  "$driver" --each-offset > >(tee -a "$log") 2>&1
status=$?
set -e
wait  # for tee
[ "$status" -eq 0 ] || fail "the kernel driver exited with status $status (log: $log)"

echo "sanitize: building onnx_relu with -fsanitize=address,undefined into $site"
rm -rf "$site"
# -fno-sanitize-recover=all: the first UBSan finding aborts, whatever UBSAN_OPTIONS says.
# (meson adds -fsanitize=address,undefined to every target: the kernel library and the module.)
CFLAGS="${CFLAGS:-} -fno-sanitize-recover=all -fno-omit-frame-pointer" \
  "${UV:?UV: the uv binary (the Makefile sets it)}" pip install --python "$PY" --quiet \
    --no-deps --no-cache --reinstall --target "$site" \
    -Cbuild-dir=build/sanitize \
    -Csetup-args=-Dbuildtype=debugoptimized \
    -Csetup-args=-Db_sanitize=address,undefined \
    -Csetup-args=-Db_lundef=false \
    .

so=$(ls "$site"/onnx_relu/_relu*.so)
# Preload exactly the ASan runtime the extension links (the one of the compiler that built it);
# Python itself is not instrumented, so the runtime must come first in the process.
asan_rt=$(ldd "$so" | awk '/libasan/ {print $3; exit}')
if [ -z "$asan_rt" ]; then
  asan_rt=$("$CC" -print-file-name=libasan.so)
fi
if [ ! -e "$asan_rt" ]; then
  echo "sanitize: no ASan runtime found for $CC (got '$asan_rt')" >&2
  exit 2
fi
echo "sanitize: ASan runtime $asan_rt"
# libstdc++ is preloaded right after it: ASan resolves the real __cxa_throw when it starts, and
# Python does not link libstdc++, so a C++ exception thrown later by an extension (onnx's shape
# inference refusing a malformed model, as the model fuzz targets make it do) would otherwise
# abort in ASan's interceptor ("CHECK failed: ... real___cxa_throw").
preload="$asan_rt"
stdcxx=$("$CC" -print-file-name=libstdc++.so.6)
if [ -e "$stdcxx" ]; then
  preload="$asan_rt $stdcxx"
fi

# detect_leaks=0: CPython and numpy keep allocations alive until exit by design; leaks of the
# kernel are measured by tests/core/test_leaks.py instead. allocator_may_return_null=1: a huge
# allocation fails with numpy's MemoryError, as without ASan, instead of aborting (the bad-input
# table has such a row).
# Only the Python processes get the runtime (not tee or grep).
sanitized=(env
  LD_PRELOAD="$preload"
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1"
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  PYTHONPATH="$site"
  ONNX_RELU_CACHE_MIN_BYTES=4K
  PYTHONDONTWRITEBYTECODE=1)

# 1. The kernel sweep through the ufunc.
set +e
"${sanitized[@]}" "$PY" -W error tests/sanitizer/run_kernel_cases.py "$@" > >(tee -a "$log") 2>&1
status=$?
set -e
wait  # for tee
[ "$status" -eq 0 ] || fail "the sweep exited with status $status (log: $log)"

# 2. The bad-input, fuzz (every layer's), overlap, random-layout (out overlapping the input both
#    ways, thresholds drawn low), concurrency, output-cache and onnxruntime-library tests (the
#    library is built sanitized too and loaded into onnxruntime) against the sanitized build (not the leak tests: ASan's quarantine holds freed memory, which RSS bounds
#    would mistake for leaks; nor the allocation-failure test: ASan's shadow memory does not fit
#    an address-space limit). ONNX_RELU_CACHE_MIN_BYTES=4K (above) sends every allocating call
#    from 4 KiB on, the sweep's and the fuzz tests' included, through the output cache.
"${sanitized[@]}" "$PY" -c "import onnx_relu, sys; sys.exit(not onnx_relu.__file__.startswith('$PWD/$site'))" \
  || fail "pytest would not import the sanitized build"
set +e
# TEST_JOBS pytest-xdist workers (default: one per CPU), each file on one worker.
"${sanitized[@]}" "$PY" -m pytest -q -p no:cacheprovider -n "${TEST_JOBS:-auto}" --dist loadfile \
  tests/core/test_bad_inputs.py \
  tests/core/test_fuzz.py tests/files/test_fuzz.py tests/onnx/test_fuzz.py tests/core/test_overlap.py \
  tests/core/test_concurrency.py tests/core/test_output_cache.py tests/core/test_layout_fuzz.py \
  tests/onnx/test_ort_library.py \
  -k "not rss_bounded and not allocation_failure" > >(tee -a "$log") 2>&1
status=$?
set -e
wait
[ "$status" -eq 0 ] || fail "pytest under the sanitizers exited with status $status (log: $log)"

if grep -qE "ERROR: AddressSanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer" "$log"; then
  fail "sanitizer report in $log"
fi
echo "sanitize: OK, no sanitizer findings (log: $log)"
