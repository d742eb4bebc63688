# Two entry points: `make demo` runs the main job, `make test` runs the suite and the linters.
# Both create .venv and install the project into it when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
WHEELS := .cache/test-wheels
NPM_PACKAGES := .cache/test-npm

.PHONY: demo test test-fast test-times bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The wheels the reference projects of the third-party matrix tasks install in the tests,
# from an index on 127.0.0.1 (tests/wheel_index.py): no test reaches a registry.
$(WHEELS)/.done: tests/fixtures/test-wheels.txt $(STAMP)
	mkdir -p $(WHEELS)
	$(BIN)/python -m pip download --quiet --only-binary=:all: --dest $(WHEELS) \
		-r tests/fixtures/test-wheels.txt
	touch $@

# The npm packages the web tests install (React, Vite, TypeScript, tsx, and every transitive
# dependency for linux-x64), from a registry on 127.0.0.1 (tests/npm_registry.py): npm
# resolves tests/fixtures/test-npm.json here, with the real registry, and nothing runs.
$(NPM_PACKAGES)/.done: tests/fixtures/test-npm.json tests/npm_registry.py $(STAMP)
	$(BIN)/python -m tests.npm_registry $(NPM_PACKAGES)
	touch $@

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/demo.sh

# The suite on every core (pytest-xdist; the tests sharing one recorded run stay on one
# worker), in a short temporary folder of its own (Unix socket paths hold 107 bytes),
# removed when the run passes; each run's times go to runs/test-times.xml, and the
# dashboard's browser tests leave their screenshots of every page in runs/serve-shots/.
PYTEST = mkdir -p runs && tmp=$$(mktemp -d /tmp/cadillac-test-XXXXXX) && \
	{ CADILLAC_SERVE_SHOTS=$(CURDIR)/runs/serve-shots $(BIN)/python -m pytest -q -n auto --dist loadgroup --basetemp=$$tmp/t \
	--junitxml=runs/test-times.xml $(1) && rm -rf $$tmp; } || { echo "kept $$tmp"; exit 1; }

test: $(STAMP) $(WHEELS)/.done $(NPM_PACKAGES)/.done
	$(call PYTEST,)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The inner loop: everything but the end-to-end runs and the toolchain/browser tests.
test-fast: $(STAMP) $(WHEELS)/.done $(NPM_PACKAGES)/.done
	$(call PYTEST,-m "not e2e")
	$(BIN)/ruff check .

# The 20 slowest tests of the last run and the time spent per folder.
test-times: $(STAMP)
	$(BIN)/python benchmarks/test_times.py runs/test-times.xml

bench: $(STAMP)
	$(BIN)/python benchmarks/recall_quality.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_index.py
	$(BIN)/python benchmarks/bench_serve.py

clean:
	rm -rf $(VENV) runs/demo-home .pytest_cache .ruff_cache
