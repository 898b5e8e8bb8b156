# The front-door commands (see README.md):
#   make demo   set up .venv from uv.lock, build and install onnx-relu, run the built-in demo
#   make extras every optional extra (onnx, ort, cli, dask, bench) into .venv, no test tools
#   make test   the same set-up with the test extras, then the whole test suite (times: README.md)
#   make test-quick  the same set-up, then a representative subset of the tests (18 files)
#   make lock   refresh uv.lock from pyproject.toml (the newest versions its ranges allow)
#   make test-latest  the newest release of every dependency (ignoring uv.lock), a test subset
#   make test-oldest  the lowest versions pyproject.toml allows, the same subset
#   make test-extras  tests/core with the core alone, the import tests also with onnxruntime
#                  but no onnx (venvs from uv.lock in build/): every optional extra optional
#   make install EXTRAS="onnx cli"  add optional extras to .venv (from uv.lock)
#   make sanitize  the C kernel built with ASan + UBSan, swept over sizes/offsets/types/layouts
#   make tsan      the module built with ThreadSanitizer, the concurrency tests against it (PY=...)
#   make typecheck mypy --strict over the package and tests/typing, basedpyright over tests/typing
#   make tables    rewrite the files derived from src/onnx_relu/_spec.py (types and settings)
#   make cli-docs  rewrite docs/cli.md's help blocks from the command's parsers (80 columns)
#   make wheel     the manylinux wheel for the .venv's Python in dist/ (built, repaired, checked)
#   make pythons   the wheel built and tested on CPython 3.11-3.15 and free-threaded 3.13t
#                  (fresh venvs; the interpreters provided by tools/pythons.sh, see docs/pythons.md)
#   make wheel-aarch64  the manylinux aarch64 wheel in dist/, cross-compiled (tools/aarch64.sh)
#   make test-aarch64   that wheel's tests under emulation in an arm64 Debian root (qemu-user)
#   make sdist     the source distribution in dist/ (without benchmarks/results)
#   make fuzz      the long random-layout fuzz (10^5 cases of out overlapping the input; a few minutes)
#   make lint      ruff check and ruff format --check over src, tests, tools, benchmarks and docs
#   make docs      the documentation site (docs/, Sphinx) in build/docs; warnings are errors
#   make docs-check  make docs, six pages rendered in headless Chromium (screenshots), the pages'
#                  claims checked against numpy, onnxruntime and the built libraries
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
# --compile-bytecode: the .pyc files pip writes at install; without them every process compiles
# the modules it imports where PYTHONDONTWRITEBYTECODE is set (onnx-relu --version then took
# 3.3 x python -c pass instead of 2.1 x).
SYNC = $(UV) sync --locked --inexact --no-editable --no-default-groups --python $(PYTHON) \
	--no-python-downloads --compile-bytecode
# uv's --locked refuses a stale lock with a message about uv; this one names the fix.
CHECK_LOCK = @out=$$($(UV) lock --check --python $(PYTHON) --no-python-downloads 2>&1) || { \
	case "$$out" in *"needs to be updated"*) \
	  echo "uv.lock is out of date with pyproject.toml: run 'make lock' (and commit uv.lock)" >&2 ;; \
	*) echo "$$out" >&2 ;; esac; exit 1; }

.PHONY: demo extras test test-quick test-extras lock test-latest test-oldest sanitize tsan typecheck wheel pythons wheel-aarch64 \
	test-aarch64 sdist fuzz lint docs docs-check install clean tables cli-docs

demo: $(VENV)/.installed
	$(PY) -m onnx_relu
	@echo "make demo: add onnx-relu's optional extras to .venv (from uv.lock) with"
	@echo "  'make install EXTRAS=\"onnx ort cli dask\"', any other package with"
	@echo "  '.venv/bin/python -m pip install PACKAGE' (.venv has its own pip)."

# TEST_JOBS pytest-xdist workers (default: one per CPU); each test file runs on one worker, so a
# file's module-level set-up (a built driver, an onnxruntime venv) is made once. --progress=files
# (tests/support/progress.py): a line per test file as it finishes, with the time elapsed.
TEST_JOBS ?= auto
PYTEST_PROGRESS := --progress=files -o console_output_style=classic
test: $(VENV)/.installed-test
	@echo "make test: the whole suite (about 4,700 tests in 91 files): 288 s measured on a quiet"
	@echo "2-vCPU machine, 37 minutes on a loaded one; a line per file as it finishes."
	@echo "(make test-quick: a representative subset, 18 of the files.)"
	$(PY) -m pytest -n $(TEST_JOBS) --dist loadfile $(PYTEST_PROGRESS)

# A representative subset (tests/quick-tests.args: every layer's main tests, Hypothesis's quick
# profile), for a first look or between edits; make test stays the whole suite.
test-quick: $(VENV)/.installed-test
	@echo "make test-quick: 18 of the suite's 91 files (tests/quick-tests.args), Hypothesis's quick"
	@echo "profile; make test runs all of it."
	$(PY) -m pytest -n $(TEST_JOBS) --dist loadfile $(PYTEST_PROGRESS) @tests/quick-tests.args

# A separate build (build/sanitize-site), never installed into .venv; see tools/sanitize.sh.
sanitize: $(VENV)/.installed-test
	PY=$(PY) TEST_JOBS=$(TEST_JOBS) tools/sanitize.sh $(SWEEP)

# ThreadSanitizer over the concurrency tests (build/tsan-site-*); PY=... for another Python,
# e.g. a free-threaded 3.13t venv. See tools/tsan.sh.
tsan: $(VENV)/.installed-test
	PY=$(PY) tools/tsan.sh

# The files derived from the one table of types and settings (src/onnx_relu/_spec.py): rewritten
# here after an edit of the table; the build and tests/test_tables.py refuse stale ones.
tables:
	python3 tools/generate_tables.py

# docs/cli.md shows every command's --help as printed at 80 columns: rewritten here after an
# edit of a parser's text; make docs and tests/cli/test_help.py refuse stale blocks.
cli-docs: $(VENV)/.installed
	$(PY) tools/cli_help.py docs/cli.md

typecheck: $(VENV)/.installed-test $(VENV)/.installed-dev
	$(PY) -m mypy
	$(VENV)/bin/basedpyright --level error --pythonpath $(PY) tests/typing

wheel: $(VENV)/.installed-dev
	rm -f dist/onnx_relu-*.whl
	tools/build_wheel.sh $(PY) dist

# Linux arm64 from this x86-64 machine (tools/aarch64.sh): the wheel cross-compiled with the
# host's aarch64-linux-gnu-gcc against the arm64 root's CPython 3.11 and NumPy, repaired and its
# manylinux tag checked like `make wheel`'s; then installed with its test extra in the root
# (Debian 12 arm64, made and cached outside the clone on first use) and tested under qemu-user.
wheel-aarch64: $(VENV)/.installed-dev
	rm -f dist/onnx_relu-*aarch64*.whl
	AUDITWHEEL=$(VENV)/bin/auditwheel tools/aarch64.sh wheel dist

test-aarch64: wheel-aarch64
	tools/aarch64.sh test $$(ls dist/onnx_relu-*manylinux*aarch64.whl)

# CPython 3.11-3.15 and 3.13t (tools/pythons.sh provides them: a cold run makes the sid root and
# builds 3.13t, cached outside the clone); a missing one fails (ALLOW_MISSING_PYTHONS=1 reports it
# and goes on). See tools/test_pythons.sh for the test subset and profile.
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

# The folders ruff checks; its rules and line length are pyproject.toml's [tool.ruff].
LINT_PATHS := src tests tools benchmarks docs
lint: $(VENV)/.installed-test
	$(PY) -m ruff check $(LINT_PATHS)
	$(PY) -m ruff format --check $(LINT_PATHS)

# A fresh build each time (-E: no cached environment), so a warning cannot hide in a page that
# was not rebuilt; --keep-going lists every warning before failing.
docs: $(VENV)/.installed-docs
	rm -rf build/docs
	$(PY) -m sphinx -W --keep-going -E -q -b html docs build/docs

# Chromium (Debian's, installed with apt-get when missing: CI runs as root) renders six pages of
# the site, two at a phone's width, and fails on a page wider than its window (screenshots in
# build/docs/screenshot-*.png; see tools/check_docs.py); then the pages' claims a script can
# check are checked against numpy, onnxruntime and the built libraries
# (tests/test_docs_claims.py, also part of make test).
docs-check: docs $(VENV)/.installed-test
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null \
	  || command -v google-chrome >/dev/null || { \
	  echo "docs-check: installing Debian's chromium (apt-get, once)"; \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null; }
	$(PY) tools/check_docs.py build/docs
	$(PY) -m pytest -q -p no:cacheprovider tests/test_docs_claims.py

# make install EXTRAS="onnx cli": .venv as `make demo` makes it, with those optional extras of
# pyproject.toml added from uv.lock (the command a missing extra's message names; .venv's own pip,
# `.venv/bin/python -m pip install PACKAGE`, adds anything else).
install: $(VENV)/.installed
ifneq ($(strip $(EXTRAS)),)
	$(SYNC) --quiet --group build $(addprefix --extra ,$(EXTRAS))
endif

# Keeps the versions already locked where pyproject.toml still allows them;
# `make lock LOCK_ARGS=--upgrade` moves every one to the newest release.
lock: $(UV_TOOLS)/.uv-$(UV_VERSION)
	$(UV) lock --python $(PYTHON) --no-python-downloads $(LOCK_ARGS)

$(UV_TOOLS)/.uv-$(UV_VERSION):
	rm -rf $(UV_TOOLS)
	$(PYTHON) -m venv $(UV_TOOLS)
	$(UV_TOOLS)/bin/python -m pip install --quiet uv==$(UV_VERSION)
	touch $@

# .venv gets its own pip (uv makes venvs without one): after `source .venv/bin/activate`, `pip
# install` then installs into .venv rather than into whichever Python's pip is first on PATH.
# A new .venv is made with uv's --seed (pip from the index, beside the locked packages, which
# uv.lock does not pin); an existing one without pip gets it installed. Every .venv target runs
# it once the lock is checked (nothing is made from a stale lock), and `uv sync --inexact`
# leaves pip there.
SEED_PIP = @if [ -x $(VENV)/bin/pip ]; then :; \
	elif [ -x $(PY) ]; then $(UV) pip install --quiet --python $(PY) pip; \
	else $(UV) venv --quiet --seed --python $(PYTHON) --no-python-downloads $(VENV); fi
$(VENV)/bin/pip: | $(UV_TOOLS)/.uv-$(UV_VERSION)
	$(SEED_PIP)

# onnx-relu is built without build isolation against the lock's `build` group (meson-python,
# meson, ninja, numpy), installed first; --reinstall-package rebuilds it when a source changed.
$(VENV)/.installed: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock $(SOURCES)
	$(CHECK_LOCK)
	$(SEED_PIP)
	$(SYNC) --quiet --only-group build --no-install-project
	$(SYNC) --quiet --group build --reinstall-package onnx-relu
	touch $@

$(VENV)/.installed-test: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock $(SOURCES)
	$(CHECK_LOCK)
	$(SEED_PIP)
	$(SYNC) --quiet --only-group build --no-install-project
	$(SYNC) --quiet --group build --group interop --extra test --reinstall-package onnx-relu
	@tools/cpu_torch.sh $(PY)
	touch $@ $(VENV)/.installed

# What the README's examples need beyond the core (make demo installs the core only).
extras: $(VENV)/.installed-extras
$(VENV)/.installed-extras: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock $(SOURCES)
	$(CHECK_LOCK)
	$(SEED_PIP)
	$(SYNC) --quiet --only-group build --no-install-project
	$(SYNC) --quiet --group build --extra onnx --extra ort --extra cli --extra dask --extra bench \
		--reinstall-package onnx-relu
	touch $@ $(VENV)/.installed

$(VENV)/.installed-docs: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock $(SOURCES)
	$(CHECK_LOCK)
	$(SEED_PIP)
	$(SYNC) --quiet --only-group build --no-install-project
	$(SYNC) --quiet --group build --extra docs --reinstall-package onnx-relu
	touch $@ $(VENV)/.installed

$(VENV)/.installed-dev: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock
	$(CHECK_LOCK)
	$(SEED_PIP)
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

# The optional extras really optional: two venvs from uv.lock, build/venv-core (numpy and
# ml_dtypes: the core alone) and build/venv-ort (the core and onnxruntime, no onnx), each with
# the test runner (the lock's test-runner group) and onnx-relu built there. Each run first
# syncs them exactly (not SYNC's --inexact: nothing installed by hand stays; 0.2 s when nothing
# changed). The core venv runs tests/core (the quick Hypothesis profile) and tests/test_extras.py;
# the onnxruntime venv the files whose outcome an installed onnxruntime can change (the package's
# imports and docs examples, the partial-install tests), not again the kernel's. What needs a
# missing extra skips, saying so. Warm, measured on the 2-vCPU machine at load 20: 885 s for the
# core venv (1844 passed, 7 skipped), 207 s for the onnxruntime one; a quiet machine is faster.
EXTRAS_VENVS := build/venv-core build/venv-ort
GROUPS_build/venv-core := --group test-runner
GROUPS_build/venv-ort := --group test-runner --group ort-alone
EXTRAS_SYNC = UV_PROJECT_ENVIRONMENT=$(1) $(filter-out --inexact,$(SYNC)) --quiet --group build \
	$(GROUPS_$(1))
EXTRAS_TESTS = HYPOTHESIS_PROFILE=quick $(1)/bin/python -m pytest -q -p no:cacheprovider \
	-n $(TEST_JOBS) --dist loadfile $(2)
test-extras: $(addsuffix /.installed,$(EXTRAS_VENVS))
	$(call EXTRAS_SYNC,build/venv-core)
	$(call EXTRAS_TESTS,build/venv-core,tests/core tests/test_extras.py)
	$(call EXTRAS_SYNC,build/venv-ort)
	$(call EXTRAS_TESTS,build/venv-ort,tests/core/test_package.py tests/test_extras.py)

build/venv-%/.installed: $(UV_TOOLS)/.uv-$(UV_VERSION) uv.lock $(SOURCES)
	$(CHECK_LOCK)
	UV_PROJECT_ENVIRONMENT=build/venv-$* $(filter-out --inexact,$(SYNC)) --quiet \
	  --only-group build --no-install-project
	$(call EXTRAS_SYNC,build/venv-$*) --reinstall-package onnx-relu
	touch $@

clean:
	rm -rf $(VENV) $(UV_TOOLS) build dist .pytest_cache .hypothesis .mypy_cache
