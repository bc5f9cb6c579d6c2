# Quick start: `make demo` (set up, run the main demo) and `make test` (set up, run the tests).
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: setup test test-slow lint demo clean gpu-check gpu-wheels

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,tools,cuda]'
	$(PY) -m mixjit.warm  # compile the run-time code once (docs/results/first_use.md)
	touch $(STAMP)

setup: $(STAMP)

# one worker per core, each test file on one worker (its module fixtures built once); a
# single test or file: `$(PY) -m pytest -q tests/path/test_x.py` runs serially as usual
test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile

# ruff (pyflakes, import order, bugbear) over the tree; mypy over the IR and the passes, seen under
# their installed names (mixjit.ir, mixjit.passes) through a tree of links in build/
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	rm -rf build/mypy && mkdir -p build/mypy/mixjit && touch build/mypy/mixjit/__init__.py
	for d in ir passes runtime; do ln -s ../../../$$d build/mypy/mixjit/$$d; done
	MYPYPATH=build/mypy $(VENV)/bin/mypy -p mixjit.ir -p mixjit.passes

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

demo: $(STAMP)
	$(PY) -m mixjit.demo

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# A lent GPU machine (docs/cuda_launch.md, "make gpu-check"): one command, no setup, no network.
# `make gpu-wheels` (here, with network) fills GPU_WHEELS with the wheels that machine may lack,
# for its Python (3.12); `make gpu-check` there installs from them where needed, builds every
# kernel, runs tests/gpu and the quick benchmark, and writes GPU_RESULTS (exit 3: no GPU).
GPU_PYTHON_VERSION ?= 3.12
GPU_WHEELS ?= build/gpu-wheels
GPU_RESULTS ?= results/gpu-check
GPU_TIME_LIMIT ?= 480

gpu-wheels:
	$(PYTHON) -m pip download --only-binary=:all: --no-deps --python-version $(GPU_PYTHON_VERSION) \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
		-d $(GPU_WHEELS) "numba>=0.68,<0.69" "llvmlite>=0.50,<0.51" "threadpoolctl>=3.5"

gpu-check:
	$(PYTHON) tools/gpu_check.py --results $(GPU_RESULTS) --time-limit $(GPU_TIME_LIMIT) \
		$(if $(wildcard $(GPU_WHEELS)/*.whl),--wheels $(GPU_WHEELS))

