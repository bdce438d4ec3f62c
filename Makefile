# Two commands set up everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup demo test lint format bench train-gate clean

# Reinstall only when the packaging changes.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

# The demo runs on a fresh copy of the sample vault, so what it writes (history, metrics,
# the index) never lands in the repository's samples/vault.
DEMO_VAULT := $(VENV)/demo-vault

demo: $(STAMP)
	@rm -rf $(DEMO_VAULT)
	@cp -R samples/vault $(DEMO_VAULT)
	@rm -rf $(DEMO_VAULT)/.lore $(DEMO_VAULT)/history.jsonl $(DEMO_VAULT)/metrics.jsonl
	$(BIN)/lore --vault $(DEMO_VAULT) --provider offline

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

test: $(STAMP) lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	@for script in bench/*_bench.py bench/tui_startup.py; do \
		[ -f $$script ] || continue; \
		echo "== $$script"; $(BIN)/python $$script || exit 1; \
	done

# Rebuild the packaged injection detector from the public corpora (fetched on first run).
train-gate: $(STAMP)
	PYTHONHASHSEED=0 $(BIN)/python bench/train_gate.py

# Admission measured on the corpora each fold did not train on; ARGS=--quick for a short run.
.PHONY: bench-admission
bench-admission: $(STAMP)
	PYTHONHASHSEED=0 $(BIN)/python bench/admission_bench.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
