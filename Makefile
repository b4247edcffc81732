# dygsched: two commands on a fresh clone, `make run` and `make test`; each installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of PyTorch; on a GPU machine use e.g. `make TORCH_SPEC='torch==2.13.0' ...` with a CUDA index.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
RUN_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help install run test test-slow test-gpu test-all clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-20s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	# torch-geometric-temporal needs torch-scatter and torch-sparse, which compile against the installed torch.
	$(BIN)/python -c "import torch_scatter, torch_sparse" 2>/dev/null || \
		MAX_JOBS=2 $(BIN)/python -m pip install -q --no-build-isolation torch-scatter torch-sparse
	$(BIN)/python -m pip install -q --no-build-isolation -e '.[test]'
	touch $@

install: $(STAMP) ## create .venv and install dygsched with everything it needs

run: $(STAMP) ## the main job: TGCN with PSG on the embedded synthetic graph, 2 CPU ranks
	$(BIN)/dygsched run $(RUN_ARGS)

test: $(STAMP) ## the fast test suite (no slow or GPU tests)
	$(BIN)/python -m pytest -q

test-slow: $(STAMP) ## the slow tests
	$(BIN)/python -m pytest -q -m slow

test-gpu: $(STAMP) ## the tests that need a CUDA device
	$(BIN)/python -m pytest -q -m gpu

clean: ## remove generated results (keeps the virtual environment)
	find results -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
