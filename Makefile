# The front-door commands (see README.md):
#   make demo   set up .venv from uv.lock, build and install onnx-relu, run the built-in demo
#   make test   the same set-up with the test extras, then the whole test suite
#   make lock   refresh uv.lock from pyproject.toml (the newest versions its ranges allow)
#   make test-latest  the newest release of every dependency (ignoring uv.lock), a test subset
#   make test-oldest  the lowest versions pyproject.toml allows, the same subset
#   make sanitize  the C kernel built with ASan + UBSan, swept over sizes/offsets/types/layouts
#   make typecheck mypy --strict over the package and tests/typing
#   make wheel     the manylinux wheel for the .venv's Python in dist/ (built, repaired, checked)
#   make pythons   that wheel built and tested on every supported CPython found (fresh venvs)
#   make sdist     the source distribution in dist/ (without benchmarks/results)
#   make fuzz      the long random-layout fuzz (10^5 cases of out overlapping the input; a few minutes)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SOURCES := pyproject.toml meson.build $(shell find src -type f -not -path '*/__pycache__/*')

# uv installs .venv from uv.lock (one lock for every supported Python and platform). It is
# bootstrapped from PyPI with pip into its own small venv, at this exact version, so that the
# front door needs only a Python and a C compiler. tools/*.sh read UV.
UV_VERSION := 0.13.9
UV_TOOLS := .venv-tools
export UV := $(abspath $(UV_TOOLS))/bin/uv
# --no-editable: a real install (the tests import the installed build, never src/).
# --no-default-groups + explicit groups: .venv gets only what the target needs. --inexact: a
# sync never removes what another target installed (make demo after make test).
SYNC = $(UV) sync --locked --inexact --no-editable --no-default-groups --python $(PYTHON) \
	--no-python-downloads
# uv's --locked refuses a stale lock with a message about uv; this one names the fix.
CHECK_LOCK = @out=$$($(UV) lock --check --python $(PYTHON) --no-python-downloads 2>&1) || { \
	case "$$out" in *"needs to be updated"*) \
	  echo "uv.lock is out of date with pyproject.toml: run 'make lock' (and commit uv.lock)" >&2 ;; \
	*) echo "$$out" >&2 ;; esac; exit 1; }

.PHONY: demo test lock test-latest test-oldest sanitize typecheck wheel pythons sdist fuzz install clean

demo: $(VENV)/.installed
	$(PY) -m onnx_relu

# TEST_JOBS pytest-xdist workers (default: one per CPU); each test file runs on one worker, so a
# file's module-level set-up (a built driver, an onnxruntime venv) is made once.
TEST_JOBS ?= auto
test: $(VENV)/.installed-test
	$(PY) -m pytest -n $(TEST_JOBS) --dist loadfile

# A separate build (build/sanitize-site), never installed into .venv; see tools/sanitize.sh.
sanitize: $(VENV)/.installed-test
	PY=$(PY) TEST_JOBS=$(TEST_JOBS) tools/sanitize.sh $(SWEEP)

typecheck: $(VENV)/.installed-test $(VENV)/.installed-dev
	$(PY) -m mypy

wheel: $(VENV)/.installed-dev
	rm -f dist/onnx_relu-*.whl
	tools/build_wheel.sh $(PY) dist

# Every supported CPython found (pyenv or PATH); a missing one fails (ALLOW_MISSING_PYTHONS=1
# reports it and goes on). See tools/test_pythons.sh for the test subset and profile.
pythons: $(VENV)/.installed-dev
	tools/test_pythons.sh

sdist: $(VENV)/.installed-dev
	rm -f dist/onnx_relu-*.tar.gz
	$(PY) -m build --sdist --outdir dist

# 12,500 cases per type x 8 types; ONNX_RELU_LAYOUT_FUZZ_CASES / _SEED override (see the test).
fuzz: $(VENV)/.installed-test
	ONNX_RELU_LAYOUT_FUZZ_CASES=$${ONNX_RELU_LAYOUT_FUZZ_CASES:-12500} \
	ONNX_RELU_LAYOUT_FUZZ_SEED=$${ONNX_RELU_LAYOUT_FUZZ_SEED:-1} \
	$(PY) -m pytest tests/core/test_layout_fuzz.py -q

install: $(VENV)/.installed

# Keeps the versions already locked where pyproject.toml still allows them;
# `make lock LOCK_ARGS=--upgrade` moves every one to the newest release.
lock: $(UV_TOOLS)/.uv-$(UV_VERSION)
	$(UV) lock --python $(PYTHON) --no-python-downloads $(LOCK_ARGS)

$(UV_TOOLS)/.uv-$(UV_VERSION):
	rm -rf $(UV_TOOLS)
	$(PYTHON) -m venv $(UV_TOOLS)
	$(UV_TOOLS)/bin/python -m pip install --quiet uv==$(UV_VERSION)
	touch $@

# onnx-relu is built without build isolation against the lock's `build` group (meson-python,
# meson, ninja, numpy), installed first; --reinstall-package rebuilds it when a source changed.
$(VENV)/.installed: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock $(SOURCES)
	$(CHECK_LOCK)
	$(SYNC) --quiet --only-group build --no-install-project
	$(SYNC) --quiet --group build --reinstall-package onnx-relu
	touch $@

$(VENV)/.installed-test: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock $(SOURCES)
	$(CHECK_LOCK)
	$(SYNC) --quiet --only-group build --no-install-project
	$(SYNC) --quiet --group build --extra test --reinstall-package onnx-relu
	touch $@ $(VENV)/.installed

$(VENV)/.installed-dev: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock
	$(CHECK_LOCK)
	$(SYNC) --quiet --only-group dev --no-install-project
	touch $@

# The newest release of every dependency (uv.lock ignored), build dependencies included, in a
# fresh venv, and the newest and oldest's test subset (tools/test_deps.sh). LATEST_PYTHON: the
# newest CPython 3.12-3.15 found in pyenv (the newest numpy needs 3.12+), else PYTHON.
LATEST_PYTHON ?= $(or $(lastword $(sort $(wildcard $(or $(PYENV_ROOT),$(HOME)/.pyenv)/versions/3.1[2-5].*/bin/python3))),$(PYTHON))
test-latest: $(UV_TOOLS)/.uv-$(UV_VERSION)
	tools/test_deps.sh highest $(LATEST_PYTHON) build/test-latest

# The lowest versions pyproject.toml allows for its direct dependencies (the test extras and the
# build group), on the lowest supported Python (PYTHON here).
test-oldest: $(UV_TOOLS)/.uv-$(UV_VERSION)
	tools/test_deps.sh lowest-direct $(PYTHON) build/test-oldest

clean:
	rm -rf $(VENV) $(UV_TOOLS) build dist .pytest_cache .hypothesis .mypy_cache
