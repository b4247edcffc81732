# dygsched: two commands on a fresh clone, `make run` and `make test`; each installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of PyTorch; on a GPU machine use e.g. `make TORCH_SPEC='torch==2.13.0' ...` with a CUDA index.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# `make test` adds the test tools and compiles nothing: its parity tests compare with outputs
# recorded from PyTorch Geometric Temporal (tests/references/pgt). The library itself, whose
# torch-scatter and torch-sparse compile against the installed torch (10-15 minutes on 2 cores),
# only `make test-pgt` (parity against the live library) and `make bench-vs-pygt` install.
TEST_STAMP := $(VENV)/.installed-test
PGT_STAMP := $(VENV)/.installed-pgt
RUN_ARGS ?=
# `make test` runs its tests in one pytest worker per core (pytest-xdist), each test module on one
# worker (its module fixtures built once); TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= auto
# Where every paper target writes (make paper SMOKE=1 uses results/smoke).
RESULTS ?= results

.DEFAULT_GOAL := help
.PHONY: help install run test lint test-slow test-gpu check-gpu bench-gpu gpu-wheels gpu-site test-pgt test-numeric-isa clean paper reproduction paper-list simulate bench-vs-pygt

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-20s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --no-build-isolation -e .
	touch $@

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q --no-build-isolation -e '.[test,tgb]'
	touch $@

$(PGT_STAMP): $(TEST_STAMP)
	# torch-geometric-temporal needs torch-scatter and torch-sparse, which compile against the installed torch.
	$(BIN)/python -c "import torch_scatter, torch_sparse" 2>/dev/null || \
		MAX_JOBS=2 $(BIN)/python -m pip install -q --no-build-isolation torch-scatter torch-sparse
	$(BIN)/python -m pip install -q --no-build-isolation -e '.[test,pgt,tgb]'
	touch $@

install: $(STAMP) ## create .venv and install dygsched with everything a run needs (make test adds the test tools)

run: $(STAMP) ## the main job: TGCN with PSG on the embedded synthetic graph, 2 CPU ranks
	$(BIN)/dygsched run $(RUN_ARGS)

test: $(TEST_STAMP) ## the fast test suite (no slow or GPU tests), one worker per core
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope

lint: $(TEST_STAMP) ## ruff check, ruff format --check and mypy (pyproject.toml; CI runs them before the tests)
	$(BIN)/ruff check dygsched tests scripts
	$(BIN)/ruff format --check dygsched tests scripts
	$(BIN)/mypy

test-slow: $(TEST_STAMP) ## the slow tests
	$(BIN)/python -m pytest -q -m slow

# The GPU checks need only what a run needs (and pytest). On a node where nothing can be installed
# (no network), name an interpreter that has torch: GPU_PYTHON=python3 skips the virtual environment,
# unpacks the wheels `make gpu-wheels` downloaded elsewhere (.gpu-wheels/, copied beside the
# checkout) into .gpu-site/ and runs the checkout in place with PYTHONPATH (docs/operations.md).
GPU_PYTHON ?=
GPU_WHEELS ?= .gpu-wheels
GPU_SITE ?= .gpu-site
CHECK_GPU_ARGS ?=
BENCH_GPU_ARGS ?=
# A last guard over each GPU target's own budget and deadlines (they end well inside it): SIGTERM, which
# makes them write the table of what they got, then SIGKILL 30 s later.
GPU_TARGET_TIMEOUT_S ?= 480
# What a node with torch, PyTorch Geometric, pandas, numpy, scipy and pytest may lack (pure-Python
# wheels, and compiled ones for CPython 3.12 on x86-64 Linux); the versions the tests run with.
# PuLP (16 MB, only for planner.options.backend=cbc|highs) is left out.
GPU_WHEEL_SPECS ?= hydra-core==1.3.8 omegaconf==2.3.1 hydra-submitit-launcher==1.2.0 submitit==1.5.4 \
	ortools==9.15.6755 immutabledict==4.3.1 protobuf==6.33.6 pymetis==2025.2.2 PyYAML==6.0.4 packaging==26.4
GPU_WHEEL_PLATFORM ?= --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
	--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
ifeq ($(GPU_PYTHON),)
GPU_DEPS := $(STAMP)
GPU_RUN := $(BIN)/python
else
GPU_DEPS := gpu-site
GPU_RUN := PYTHONPATH=$(abspath $(GPU_SITE)):$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH} $(GPU_PYTHON)
endif

test-gpu: $(GPU_DEPS) ## the tests that need a CUDA device (GPU_PYTHON=python3: with that interpreter, no install)
	$(if $(GPU_PYTHON),,$(BIN)/python -c "import pytest" 2>/dev/null || $(BIN)/python -m pip install -q pytest)
	$(GPU_RUN) -m pytest -q -p no:cacheprovider -m gpu tests/engine/test_gpu.py tests/engine/test_timing.py

check-gpu: $(GPU_DEPS) ## every collective and every strategy on this node's GPUs against CPU, about 5 min, table in $(RESULTS)/check-gpu (GPU_PYTHON=python3: no install)
	timeout -k 30 $(GPU_TARGET_TIMEOUT_S) env $(GPU_RUN) -m dygsched.commands.gpu_check $(RESULTS)/check-gpu $(CHECK_GPU_ARGS)

bench-gpu: $(GPU_DEPS) ## five comparisons on one GPU, A and B alternated, ratios with spreads and syncs per step, about 5 min, table in $(RESULTS)/bench-gpu
	timeout -k 30 $(GPU_TARGET_TIMEOUT_S) env $(GPU_RUN) -m dygsched.paper.bench.gpu $(RESULTS)/bench-gpu $(BENCH_GPU_ARGS)

gpu-wheels: ## download into .gpu-wheels/ the wheels a GPU node without network lacks (needs network here; about 31 MB)
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: $(GPU_WHEEL_PLATFORM) -d $(GPU_WHEELS) $(GPU_WHEEL_SPECS)
	# antlr4's 4.9 runtime (what omegaconf 2.3 reads) is published as a source archive only: a pure-Python wheel is built from it
	$(PYTHON) -m pip wheel -q --no-deps -w $(GPU_WHEELS) antlr4-python3-runtime==4.9.3
	@du -sh $(GPU_WHEELS)

gpu-site:
	@if ls $(GPU_WHEELS)/*.whl >/dev/null 2>&1; then \
		$(GPU_PYTHON) -m pip install -q --no-index --no-deps --upgrade --target $(GPU_SITE) $(GPU_WHEELS)/*.whl; \
	else echo "no wheels in $(GPU_WHEELS)/: running with what $(GPU_PYTHON) has (make gpu-wheels downloads them on a machine with network)"; fi

test-pgt: $(PGT_STAMP) ## parity with the installed PyTorch Geometric Temporal and its recorded outputs (compiles its extensions once)
	$(BIN)/python -m pytest -q -m pgt

# The tests whose numbers must hold on every CPU (the models, the reuse engine, the strategies against one
# process), run on a kernel set other than the one this CPU picks: `default` exists on every x86 CPU and differs
# from the AVX2/AVX-512 kernels a modern one runs; ISA=avx2 or ISA=avx512 where the CPU has them.
ISA ?= default
NUMERIC_TESTS := tests/models tests/engine/test_reuse.py tests/engine/test_executor.py tests/engine/test_esdg.py \
	tests/engine/test_blad.py tests/engine/test_gradient_sync.py tests/engine/test_flare.py tests/engine/test_distdy.py \
	tests/engine/test_strategy_contract.py tests/engine/test_node_memory.py
test-numeric-isa: $(TEST_STAMP) ## the numeric tests on another CPU kernel set (ISA=default; avx2, avx512)
	ATEN_CPU_CAPABILITY=$(ISA) $(BIN)/python -c "import sys, torch; got = torch.backends.cpu.get_cpu_capability(); \
		sys.exit(None if got == '$(ISA)'.upper() else f'ISA=$(ISA): this CPU or torch runs {got} kernels instead')"
	ATEN_CPU_CAPABILITY=$(ISA) $(BIN)/python -m pytest -q $(NUMERIC_TESTS)

# The paper targets are package code (dygsched/paper/, one module or package per paper): `dygsched paper` lists them
# and builds them; these Make targets are one-line calls of it, so `pip install .` users have the same.
# SMOKE=1: tiny sizes under $(RESULTS)/smoke; REUSE=1: only render; ONLY=a,b: just these;
# SET='KEY=VALUE ...': a builder setting or an override for every run of the sweep; PROGRESS=false: quiet.
comma := ,
PAPER_FLAGS = --results $(RESULTS) $(if $(SMOKE),--smoke) $(if $(filter false,$(PROGRESS)),--no-progress) $(if $(SET),--set $(SET))
paper: $(STAMP) ## every paper table and figure into results/report/ (REUSE=1: only render; SMOKE=1: tiny sizes, ~5 min; ONLY=a,b; PROGRESS=false)
	$(BIN)/dygsched paper $(if $(ONLY),$(subst $(comma), ,$(ONLY)),all) $(PAPER_FLAGS) $(if $(REUSE),--reuse)

reproduction: $(STAMP) ## docs/reproduction.md: the verdict table of what $(RESULTS) holds, by the report's renderer (runs nothing)
	$(BIN)/dygsched report $(RESULTS)
	cp $(RESULTS)/report/reproduction.docs.md docs/reproduction.md

paper-list: $(STAMP) ## list the paper targets: paper, what each reproduces, minutes at full size, built or not
	$(BIN)/dygsched paper --results $(RESULTS)

# `make table-epoch-time`, `make fig-flare-heatmap`, `make bench-planner`, `make simulate`: one target each
table-%: $(STAMP)
	$(BIN)/dygsched paper $@ $(PAPER_FLAGS)
fig-%: $(STAMP)
	$(BIN)/dygsched paper $@ $(PAPER_FLAGS)
bench-%: $(STAMP)
	$(BIN)/dygsched paper $@ $(PAPER_FLAGS)
simulate: $(STAMP)
	$(BIN)/dygsched paper $@ $(PAPER_FLAGS)
# it times PyTorch Geometric Temporal itself, which only `make test-pgt`'s install has
bench-vs-pygt: $(PGT_STAMP)
	$(BIN)/dygsched paper $@ $(PAPER_FLAGS)

clean: ## remove generated results (keeps the virtual environment)
	find results -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
