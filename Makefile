# Quick start: `make demo` (set up, run the main demo) and `make test` (set up, run the tests).
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: setup test test-slow lint demo clean

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
