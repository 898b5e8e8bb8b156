# The front-door commands (see README.md):
#   make demo   set up .venv, build and install onnx-relu, run the built-in demo
#   make test   the same set-up with the test extras, then the whole test suite
#   make sanitize  the C kernel built with ASan + UBSan, swept over sizes/offsets/types/layouts
#   make fuzz   the long random-layout fuzz (10^5 cases of out overlapping the input; a few minutes)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SOURCES := pyproject.toml meson.build $(shell find src -type f -not -path '*/__pycache__/*')

.PHONY: demo test sanitize fuzz install clean

demo: $(VENV)/.installed
	$(PY) -m onnx_relu

test: $(VENV)/.installed-test
	$(PY) -m pytest

# A separate build (build/sanitize-site), never installed into .venv; see tools/sanitize.sh.
sanitize: $(VENV)/.installed-test
	PY=$(PY) tools/sanitize.sh

# 12,500 cases per type x 8 types; ONNX_RELU_LAYOUT_FUZZ_CASES / _SEED override (see the test).
fuzz: $(VENV)/.installed-test
	ONNX_RELU_LAYOUT_FUZZ_CASES=$${ONNX_RELU_LAYOUT_FUZZ_CASES:-12500} \
	ONNX_RELU_LAYOUT_FUZZ_SEED=$${ONNX_RELU_LAYOUT_FUZZ_SEED:-1} \
	$(PY) -m pytest tests/core/test_layout_fuzz.py -q

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
