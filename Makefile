# sudoku-pipeline: every target that needs the virtual environment makes it first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
INPUT  ?= data/sample.csv
OUTPUT ?= output/sample

.DEFAULT_GOAL := help
.PHONY: help setup kernels solve-dataset test soak bench lint clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

setup: $(STAMP) ## Make .venv with the project and its dev dependencies (.venv/bin/pipeline)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ needed"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@# Bytecode now, as pip does for a regular install: with PYTHONDONTWRITEBYTECODE set,
	@# every process would compile our modules again as it starts.
	$(PY) -m compileall -q pipeline
	@touch $(STAMP)

kernels: $(STAMP) ## Compile the kernels ahead of time for this CPU (again only when they change)
	@$(PY) -m pipeline.compiled $(if $(KERNELS_STRICT),--strict)

solve-dataset: kernels ## Run the main job on the bundled sample (INPUT=, OUTPUT= to override)
	$(VENV)/bin/pipeline run --input "$(INPUT)" --output "$(OUTPUT)"

test: kernels ## Run the test suite
	$(PY) -m pytest -q

soak: kernels ## The tests of stops, signals and Dask ROUNDS=20 times, a core kept busy (not in CI)
	.ci/soak

bench: kernels ## Engine (beside tdoku), canonical form, pipeline, SER rater (beside serate), puzzles to a SER band
	$(PY) benchmarks/bench_engine.py
	$(PY) benchmarks/bench_canonical.py
	$(PY) benchmarks/bench_pipeline.py
	$(PY) benchmarks/bench_rate.py
	$(PY) benchmarks/bench_generate.py

lint: $(STAMP) ## ruff, and the layers' import rule (.importlinter)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

clean: ## Remove outputs, caches and the virtual environment
	rm -rf output .pytest_cache .ruff_cache .hypothesis bench-results $(VENV) pipeline/_kernels_* \
		pipeline/.kernels-* pipeline/.numba-cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
