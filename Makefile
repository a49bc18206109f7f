# The two commands a fresh clone needs: `make run` and `make test`.
# `run` installs accord with every runtime extra (accord[all]: gRPC, PostgreSQL, the harness,
# the chat client — what the README's demos use); `test`, `lint` and `typecheck` add the dev
# extras (pytest, the official a2a-sdk for interop tests, linters: a few hundred MB more).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# One stamp per layer: a change to pyproject.toml reinstalls both.
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP     := $(VENV)/.installed

.PHONY: run test test-fast lint typecheck check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing accord and its runtime extras into $(VENV)"
	$(BIN)/pip install -e '.[all]'
	touch $@

$(DEV_STAMP): $(RUNTIME_STAMP)
	@echo "Installing the dev extras (tests, interop peers, linters) into $(VENV)"
	$(BIN)/pip install -e '.[dev]'
	touch $@

run: $(RUNTIME_STAMP)
	$(BIN)/accord serve $(ARGS)

test: $(DEV_STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

# The tests that need no other process, PostgreSQL or browser (tests/marks.py): seconds.
test-fast: $(DEV_STAMP)
	$(BIN)/pytest -m unit $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests
	$(BIN)/lint-imports

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
