# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test typecheck lint docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

run: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[plots]"
	$(BIN)/dpmean demo

# mypy first: a type error fails the target (and CI, which runs it) before the suite starts.
test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -n 2 -q

typecheck: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m mypy

# The API reference from the numpydoc docstrings, plus the Markdown notes in docs/; warnings are
# errors (a docstring that does not render fails the target, and CI).
docs: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	rm -rf docs/_build docs/generated
	$(BIN)/python -m sphinx -E -W --keep-going -q -b html docs docs/_build/html
	@echo "API reference: docs/_build/html/index.html"

lint: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/ruff check src tests benchmarks scripts

bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python benchmarks/bench_estimators.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .mypy_cache docs/_build docs/generated
