# Two entry points: `make demo` runs the main job, `make test` runs the suite and the linters.
# Both create .venv and install the project into it when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/demo.sh

test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python benchmarks/recall_quality.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_index.py

clean:
	rm -rf $(VENV) runs/demo-home .pytest_cache .ruff_cache
