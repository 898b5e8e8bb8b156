#!/usr/bin/env bash
# The compiled module and its kernel under ThreadSanitizer, with the concurrency tests.
#
#   PY=path/to/python tools/tsan.sh [pytest arguments...]
#
# Builds onnx_relu with -fsanitize=thread (meson's b_sanitize) into build/tsan-site (never into a
# venv), preloads the TSan runtime the extension links (the interpreter is not instrumented, so
# the runtime must be first in the process) and runs tests/core/test_free_threading.py and
# tests/core/test_concurrency.py against that build. With a free-threaded Python (3.13t) the
# callers really run at once in Python too. tools/tsan.supp silences reports whose every frame
# is in the (uninstrumented) interpreter or numpy, which TSan cannot see synchronise; a report
# with a frame of onnx_relu's code is never suppressed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
CC=${CC:-cc}
tag=$("$PY" -c 'import sys, sysconfig; print(f"{sys.version_info[0]}{sys.version_info[1]}" + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))')
site=build/tsan-site-$tag
echo "tsan: building onnx_relu with -fsanitize=thread into $site"
rm -rf "$site"
CFLAGS="${CFLAGS:-} -fno-omit-frame-pointer" \
  "${UV:?UV: the uv binary (the Makefile sets it)}" pip install --python "$PY" --quiet \
    --no-deps --no-cache --reinstall --target "$site" \
    -Cbuild-dir=build/tsan-$tag \
    -Csetup-args=-Dbuildtype=debugoptimized \
    -Csetup-args=-Db_sanitize=thread \
    -Csetup-args=-Db_lundef=false \
    .
so=$(ls "$site"/onnx_relu/_relu*.so)
tsan_rt=$(ldd "$so" | awk '/libtsan/ {print $3; exit}')
[ -n "$tsan_rt" ] || tsan_rt=$("$CC" -print-file-name=libtsan.so)
[ -e "$tsan_rt" ] || { echo "tsan: no TSan runtime found for $CC (got '$tsan_rt')" >&2; exit 2; }
echo "tsan: runtime $tsan_rt; $("$PY" -VV | head -1)"
env LD_PRELOAD="$tsan_rt" PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
  TSAN_OPTIONS="halt_on_error=1:report_signal_unsafe=0:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp${TSAN_EXTRA:+:$TSAN_EXTRA}" \
  "$PY" -c "import onnx_relu, sys; sys.exit(not onnx_relu.__file__.startswith('$PWD/$site'))" \
  || { echo "tsan: pytest would not import the TSan build" >&2; exit 1; }
exec env LD_PRELOAD="$tsan_rt" PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
  TSAN_OPTIONS="halt_on_error=1:report_signal_unsafe=0:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp${TSAN_EXTRA:+:$TSAN_EXTRA}" \
  "$PY" -m pytest -q -p no:cacheprovider -n 0 tests/core/test_free_threading.py tests/core/test_concurrency.py "$@"
