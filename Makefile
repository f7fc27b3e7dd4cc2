# The two commands README.md opens with: `make demo` and `make test`.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-all lint bench clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/healthgw demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: setup lint
	$(BIN)/pytest -q

# Including the slow, opt-in tests.
test-all: setup lint
	$(BIN)/pytest -q -m ""

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf .demo data .pytest_cache .mypy_cache .ruff_cache
