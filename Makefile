# The two commands README.md opens with: `make demo` and `make test`.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-all lint audit lock bench clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/healthgw demo

# bandit: its skips and the reviewed baseline (bandit-baseline.json) are explained in
# pyproject.toml [tool.bandit].
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/bandit -c pyproject.toml -b bandit-baseline.json -r healthgw gateway agents simulators -q
	$(BIN)/lint-imports

# Known vulnerabilities in the locked dependencies: needs PyPI's JSON API (or OSV) online.
audit: setup
	@bash scripts/audit.sh

# Re-resolve requirements/*.lock (hashes included) after a pyproject.toml change; network.
lock:
	@bash scripts/lock.sh

test: setup lint
	$(BIN)/pytest -q

# Including the slow, opt-in tests.
test-all: setup lint
	$(BIN)/pytest -q -m ""

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf .demo data .pytest_cache .mypy_cache .ruff_cache
