#!/usr/bin/env bash
# Optional, for `make test`: torch's CPU build 2.13.0 into the test venv when its wheel lies on
# this machine's disk, so that the torch tests (tests/core/test_foreign_arrays.py,
# tests/bench/test_arrays_figures.py) run instead of skipping. torch is not in uv.lock: PyPI's
# torch is a multi-GB CUDA build, which this never downloads.
#
# Usage: tools/cpu_torch.sh PYTHON
#
# The wheel is looked for as torch-2.13.0+cpu-*.whl in $TORCH_WHEEL_DIR, else in pip's own
# find-links (PIP_FIND_LINKS, then `pip config get global.find-links`). That one file is
# installed by its path, so torch itself never comes from an index; its dependencies (sympy,
# networkx, jinja2, filelock, fsspec...) come from pip's index. Nothing found, or the install
# failing (no network, a wheel for another Python): one line says so, and the exit status is 0,
# so `make test` goes on with torch's tests skipping.
set -uo pipefail
py=${1:?usage: tools/cpu_torch.sh PYTHON}
version=2.13.0

installed=$("$py" -c "import importlib.metadata as m; print(m.version('torch'))" 2>/dev/null)
if [ -n "$installed" ]; then
    exit 0  # any torch the venv already has (a hand-installed one included) is left alone
fi

dirs=${TORCH_WHEEL_DIR:-}
[ -n "$dirs" ] || dirs=${PIP_FIND_LINKS:-}
[ -n "$dirs" ] || dirs=$("$py" -m pip config get global.find-links 2>/dev/null)
wheel=
for dir in $dirs; do
    dir=${dir#file://}
    for candidate in "$dir"/torch-"$version"+cpu-*.whl; do
        if [ -f "$candidate" ]; then
            wheel=$candidate
            break 2
        fi
    done
done
if [ -z "$wheel" ]; then
    echo "cpu_torch: no torch-$version+cpu wheel on this machine's disk; torch's tests will skip"
    exit 0
fi
# --only-binary: nothing is built; pip refuses a wheel of another Python or platform before
# fetching anything.
if "$py" -m pip install --quiet --only-binary :all: "$wheel" >/dev/null 2>&1; then
    echo "cpu_torch: installed $(basename "$wheel") from this machine's disk"
else
    echo "cpu_torch: could not install $(basename "$wheel") (see: $py -m pip install $wheel);" \
        "torch's tests will skip"
fi
exit 0
