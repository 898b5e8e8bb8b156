# The front-door commands (see README.md):
#   make demo   set up .venv, build and install onnx-relu, run the built-in demo
#   make test   the same set-up with the test extras, then the whole test suite
#   make sanitize  the C kernel built with ASan + UBSan, swept over sizes/offsets/types/layouts
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SOURCES := pyproject.toml meson.build $(shell find src -type f -not -path '*/__pycache__/*')

.PHONY: demo test sanitize install clean

demo: $(VENV)/.installed
	$(PY) -m onnx_relu

test: $(VENV)/.installed-test
	$(PY) -m pytest

# A separate build (build/sanitize-site), never installed into .venv; see tools/sanitize.sh.
sanitize: $(VENV)/.installed-test
	PY=$(PY) tools/sanitize.sh

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

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis
