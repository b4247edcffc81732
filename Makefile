# dygsched: two commands on a fresh clone, `make run` and `make test`; each installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of PyTorch; on a GPU machine use e.g. `make TORCH_SPEC='torch==2.13.0' ...` with a CUDA index.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# The tests also compare against PyTorch Geometric Temporal itself, whose torch-scatter and
# torch-sparse compile against the installed torch (10-15 minutes on 2 cores): only `make test`,
# `make lint` and the benchmarks against it install them; `make run` does not need them.
TEST_STAMP := $(VENV)/.installed-test
RUN_ARGS ?=
# Where every paper target writes (make paper SMOKE=1 uses results/smoke).
RESULTS ?= results

.DEFAULT_GOAL := help
.PHONY: help install run test lint test-slow test-gpu clean paper table-epoch-time fig-convergence bench-planner bench-planner-certify table-solve-time simulate table-ablation table-reuse-memory bench-reuse bench-flop-counting table-flare-accuracy table-flare-memory table-flare-convergence table-flare-time table-flare-breakdown fig-flare-heatmap fig-flare-scaling table-distdy-storage table-distdy-partition table-distdy-traffic table-distdy-time fig-distdy-params fig-distdy-capacity table-sven-comm table-sven-balance table-sven-accuracy table-sven-breakdown bench-tgn-pyg bench-vs-pygt bench-stream-scaling bench-scaling table-stream-accuracy

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-20s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --no-build-isolation -e .
	touch $@

$(TEST_STAMP): $(STAMP)
	# torch-geometric-temporal needs torch-scatter and torch-sparse, which compile against the installed torch.
	$(BIN)/python -c "import torch_scatter, torch_sparse" 2>/dev/null || \
		MAX_JOBS=2 $(BIN)/python -m pip install -q --no-build-isolation torch-scatter torch-sparse
	$(BIN)/python -m pip install -q --no-build-isolation -e '.[test,pgt,tgb]'
	touch $@

install: $(STAMP) ## create .venv and install dygsched with everything a run needs (make test adds the test tools)

run: $(STAMP) ## the main job: TGCN with PSG on the embedded synthetic graph, 2 CPU ranks
	$(BIN)/dygsched run $(RUN_ARGS)

test: $(TEST_STAMP) ## the fast test suite (no slow or GPU tests)
	$(BIN)/python -m pytest -q

lint: $(TEST_STAMP) ## ruff check (CI runs it before the tests)
	$(BIN)/ruff check dygsched tests scripts

test-slow: $(TEST_STAMP) ## the slow tests
	$(BIN)/python -m pytest -q -m slow

test-gpu: $(TEST_STAMP) ## the tests that need a CUDA device
	$(BIN)/python -m pytest -q -m gpu

# Every paper table and figure into $(RESULTS)/report/ (index.html, README.md, runs.html), running
# the targets whose outputs are missing first; REUSE=1 only renders; SMOKE=1: tiny sizes in $(RESULTS)/smoke.
PAPER_RESULTS = $(if $(SMOKE),$(RESULTS)/smoke,$(RESULTS))
paper: $(STAMP) ## every paper table and figure into results/report/ (REUSE=1: only render; SMOKE=1: tiny sizes, ~5 min; PROGRESS=false: no line per target)
	$(BIN)/dygsched report $(PAPER_RESULTS) $(if $(REUSE),,--run-missing) $(if $(SMOKE),--smoke) $(if $(ONLY),--only $(ONLY)) $(if $(filter false,$(PROGRESS)),--no-progress)

TABLE_SCHEDS ?= psg,esdg,blad,dygnex_g,dygnex_l,greedy,ilp
TABLE_MODELS ?= tgcn,wdgcn
TABLE_DIR ?= $(RESULTS)/table_epoch_time
TABLE_ARGS ?=
table-epoch-time: $(STAMP) ## epoch time + imbalance per strategy and model, 2 CPU ranks (DyGNeX table 4 shape)
	rm -rf $(TABLE_DIR)
	$(BIN)/dygsched run -m +experiment=epoch_time sched=$(TABLE_SCHEDS) model=$(TABLE_MODELS) results_dir=$(TABLE_DIR) progress=false $(TABLE_ARGS)
	$(BIN)/python scripts/table_epoch_time.py $(TABLE_DIR)

FIG_SCHEDS ?= psg,dygnex_g,dygnex_l,greedy,ilp
FIG_DIR ?= $(RESULTS)/fig_convergence
FIG_ARGS ?=
fig-convergence: $(STAMP) ## loss and accuracy per epoch per strategy, as a PNG (DyGNeX figure 3)
	rm -rf $(FIG_DIR)
	$(BIN)/dygsched run -m +experiment=convergence sched=$(FIG_SCHEDS) results_dir=$(FIG_DIR) progress=false $(FIG_ARGS)
	$(BIN)/python scripts/fig_convergence.py $(FIG_DIR)

ABLATION_MODELS ?= tgcn,wdgcn,gat_lstm
ABLATION_DIR ?= $(RESULTS)/table_ablation
ABLATION_ARGS ?=
ABLATION_STEPS ?= psg,type1,type2,real_g,real_l
ABLATION_ROUNDS ?= 3
table-ablation: $(STAMP) ## REAL figure 13: PSG, + type I, + type II, + REAL-G, + REAL-L as cumulative speedups (ABLATION_ROUNDS sweeps, alternated; medians)
	rm -rf $(ABLATION_DIR)
	for round in $$(seq $(ABLATION_ROUNDS)); do \
	  $(BIN)/dygsched run -m +experiment=ablation +ablation=$(ABLATION_STEPS) model=$(ABLATION_MODELS) results_dir=$(ABLATION_DIR) progress=false $(ABLATION_ARGS) || exit 1; \
	done
	$(BIN)/python scripts/table_ablation.py $(ABLATION_DIR)

table-reuse-memory: $(STAMP) ## REAL tables 4-5: full graphs vs diff maps + degrees, and diff-map build time, per dataset
	$(BIN)/python scripts/table_reuse_memory.py --out $(RESULTS)/table_reuse_memory.csv $(REUSE_MEMORY_ARGS)

bench-reuse: $(STAMP) ## REAL reuse vs PSG on the Arxiv-sized graph: FLOPs and epoch-time ratios side by side
	$(BIN)/python scripts/bench_reuse.py --results-dir $(RESULTS)/bench_reuse $(BENCH_REUSE_ARGS)

bench-planner: $(STAMP) ## planner targets: greedy/ILP gaps to the lower bound and solve times
	$(BIN)/python scripts/bench_planner.py --quick --out $(RESULTS)/bench_planner.csv $(PLANNER_ARGS)

bench-planner-certify: $(STAMP) ## the same, gaps against the iteration and configuration bounds where lower_bound does not show the targets (about 35 min)
	$(BIN)/python scripts/bench_planner.py --quick --certify 300 --certify-configurations 240 --out $(RESULTS)/bench_planner_certified.csv $(PLANNER_ARGS)

bench-flop-counting: $(STAMP) ## what counting graph-convolution FLOPs costs: epoch time with and without it, side by side
	$(BIN)/python scripts/bench_flop_counting.py --out $(RESULTS)/bench_flop_counting.csv $(FLOP_COUNTING_ARGS)

FLARE_DIR ?= $(RESULTS)/flare
FLARE_MODELS ?= tgcn,mpnn_lstm,evolvegcn_o
FLARE_ARGS ?=
FLARE_VARIANTS ?= full_history,recent_only,flare,artifact
FLARE_TIME_VARIANTS ?= flare,no_shrink,overlap_rr,overlap_mlp
FLARE_TIME_MODELS ?= tgcn,mpnn_lstm
FLARE_HEATMAP_K ?= 1,2,4,6,8
FLARE_HEATMAP_ALPHA ?= 0.0,0.1,0.3,0.6,1.0
FLARE_SCALING_RANKS ?= 1,2
FLARE_CONVERGENCE_MODELS ?= tgcn,mpnn_lstm,evolvegcn_o
FLARE_CONVERGENCE_VARIANTS ?= full_history,recent_only,flare
FLARE_CONVERGENCE_EPOCHS ?= 10
FLARE_CONVERGENCE_TOLERANCE ?= 0.05
$(FLARE_DIR)/variants/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m +experiment=flare +flare_variant=$(FLARE_VARIANTS) model=$(FLARE_MODELS) results_dir=$(FLARE_DIR)/variants progress=false $(FLARE_ARGS)
$(FLARE_DIR)/time/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m +experiment=flare +flare_variant=$(FLARE_TIME_VARIANTS) model=$(FLARE_TIME_MODELS) results_dir=$(FLARE_DIR)/time progress=false $(FLARE_ARGS)
$(FLARE_DIR)/heatmap/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m +experiment=flare_small sched.full=$(FLARE_HEATMAP_K) sched.alpha=$(FLARE_HEATMAP_ALPHA) results_dir=$(FLARE_DIR)/heatmap progress=false $(FLARE_ARGS)
$(FLARE_DIR)/scaling/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m +experiment=flare +flare_variant=flare model=tgcn world_size=$(FLARE_SCALING_RANKS) results_dir=$(FLARE_DIR)/scaling progress=false $(FLARE_ARGS)
$(FLARE_DIR)/convergence/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m +experiment=flare +flare_variant=$(FLARE_CONVERGENCE_VARIANTS) model=$(FLARE_CONVERGENCE_MODELS) epochs=$(FLARE_CONVERGENCE_EPOCHS) results_dir=$(FLARE_DIR)/convergence progress=false $(FLARE_ARGS)

table-flare-accuracy: $(FLARE_DIR)/variants/runs.parquet ## FlareDTDG table 6: test MSE, Full-History / Recent-Only / FlareDTDG, per model (about 40 min; rm -r results/flare to redo)
	$(BIN)/python scripts/flare_tables.py accuracy $(FLARE_DIR)/variants

table-flare-memory: $(FLARE_DIR)/variants/runs.parquet ## FlareDTDG tables 5/7: memory per rank under its own names (GPU allocator peak, peak RSS, saved for backward), Full-History vs FlareDTDG (the runs of table 6)
	$(BIN)/python scripts/flare_tables.py memory $(FLARE_DIR)/variants

table-flare-convergence: $(FLARE_DIR)/convergence/runs.parquet ## FlareDTDG table 8: time and epochs to Full-History's best validation MSE + 5% (FLARE_CONVERGENCE_TOLERANCE), epoch time beside (about 30 min)
	$(BIN)/python scripts/flare_tables.py convergence $(FLARE_DIR)/convergence --tolerance $(FLARE_CONVERGENCE_TOLERANCE)

table-flare-time: $(FLARE_DIR)/time/runs.parquet ## FlareDTDG tables 9-11 as epoch time: shrinking on/off, overlap none/rr/mlp (about 25 min)
	$(BIN)/python scripts/flare_tables.py time $(FLARE_DIR)/time

table-flare-breakdown: $(FLARE_DIR)/variants/runs.parquet ## FlareDTDG table 12: chunking, shuffle, remap, forward, backward, communication, load
	$(BIN)/python scripts/flare_tables.py breakdown $(FLARE_DIR)/variants

fig-flare-heatmap: $(FLARE_DIR)/heatmap/runs.parquet ## FlareDTDG figure 8: MSE, memory and time over K x alpha, as a PNG (about 13 min)
	$(BIN)/python scripts/flare_tables.py heatmap $(FLARE_DIR)/heatmap

fig-flare-scaling: $(FLARE_DIR)/scaling/runs.parquet ## FlareDTDG figure 7: 1 and 2 ranks (about 7 min)
	$(BIN)/python scripts/flare_tables.py scaling $(FLARE_DIR)/scaling

DISTDY_DIR ?= $(RESULTS)/distdy
DISTDY_ARGS ?=
DISTDY_PARTITIONS ?= distdy,metis,hash,greedy,metis_layer
DISTDY_WINDOWS ?= 4,8,12
$(DISTDY_DIR)/traffic/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m +experiment=distdy sched.partition=$(DISTDY_PARTITIONS) results_dir=$(DISTDY_DIR)/traffic progress=false $(DISTDY_ARGS)
$(DISTDY_DIR)/time/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m +experiment=distdy window=$(DISTDY_WINDOWS) sched.partition=$(DISTDY_PARTITIONS) results_dir=$(DISTDY_DIR)/time progress=false $(DISTDY_ARGS)

table-distdy-storage: $(STAMP) ## DistDy figures 7-9: whole snapshots vs additive features, edges, both; by density and change ratio
	$(BIN)/python scripts/distdy_tables.py storage --out $(DISTDY_DIR) $(DISTDY_TABLE_ARGS)

table-distdy-partition: $(STAMP) ## DistDy table 3: time to partition and store every snapshot, cut and balance, per partitioner
	$(BIN)/python scripts/distdy_tables.py partition --out $(DISTDY_DIR) $(DISTDY_TABLE_ARGS)

table-distdy-traffic: $(DISTDY_DIR)/traffic/runs.parquet ## DistDy figure 3: feature-fetch bytes in and out per rank, 2 ranks measured, 4 and 8 counted
	$(BIN)/python scripts/distdy_tables.py traffic $(DISTDY_DIR)/traffic $(DISTDY_TABLE_ARGS)

table-distdy-time: $(DISTDY_DIR)/time/runs.parquet ## DistDy figures 4, 5, 10: epoch time for windows 4, 8, 12 on 2 ranks; simulated K = 4-16 at 1-100 Gbps
	$(BIN)/python scripts/distdy_tables.py time $(DISTDY_DIR)/time $(DISTDY_TABLE_ARGS)

fig-distdy-params: $(STAMP) ## DistDy figure 11: simulated speedup over METIS against the budget M and eta (K = 8, 1 Gbps)
	$(BIN)/python scripts/distdy_tables.py params --out $(DISTDY_DIR) $(DISTDY_TABLE_ARGS)

fig-distdy-capacity: $(STAMP) ## DistDy, ours: speedup and balance as D^k grows from the tightest feasible to 2x; baselines out of memory
	$(BIN)/python scripts/distdy_tables.py capacity --out $(DISTDY_DIR) $(DISTDY_TABLE_ARGS)

table-solve-time: $(STAMP) ## solve time by number of snapshots and ILP time by gap (DyGNeX tables 5 and 6)
	$(BIN)/python scripts/bench_solve_time.py --quick --out-dir $(RESULTS) $(SOLVE_TIME_ARGS)

simulate: $(STAMP) ## parallel efficiency from 4 to 1,024 simulated GPUs (REAL figure 15, DyGNeX figure 5)
	$(BIN)/dygsched simulate --snapshots 10000 --solvers psg,greedy --out $(RESULTS)/simulate_scaling.csv $(SIMULATE_ARGS)

clean: ## remove generated results (keeps the virtual environment)
	find results -mindepth 1 ! -name .gitkeep -exec rm -rf {} +

SVEN_DIR ?= $(RESULTS)/sven
SVEN_ARGS ?= epochs=5 optim.lr=0.001
SVEN_SEEDS ?= 0
SVEN_MODELS ?= tgn,jodie,apan
SVEN_STALENESS ?= 0,1
# table-sven-accuracy and -breakdown read this stream (wikipedia_like or reddit_like: the paper's regime)
SVEN_DATASET ?= events
SVEN_RUN := $(BIN)/dygsched run dataset=$(SVEN_DATASET) progress=false checkpoint=false
$(SVEN_DIR)/accuracy/runs.parquet: | $(STAMP)
	$(BIN)/dygsched run -m dataset=$(SVEN_DATASET) model=$(SVEN_MODELS) sched=single sched.batch_size=600 world_size=1 seed=$(SVEN_SEEDS) results_dir=$(SVEN_DIR)/accuracy progress=false checkpoint=false $(SVEN_ARGS)
	$(BIN)/dygsched run -m dataset=$(SVEN_DATASET) model=$(SVEN_MODELS) sched=sven sched.batch_size=300 sched.staleness=$(SVEN_STALENESS) world_size=2 seed=$(SVEN_SEEDS) results_dir=$(SVEN_DIR)/accuracy progress=false checkpoint=false $(SVEN_ARGS)
# Figure 15's steps, each one run; SVEN_STEPS picks some (the table needs depcomm, its baseline).
SVEN_STEPS ?= depcache depcomm redundancy_free reflexbicut micro_batch async_allreduce
SVEN_STEP_depcache := sched=depcache
SVEN_STEP_depcomm := sched=depcomm
SVEN_STEP_redundancy_free := sched=sven sched.partition=interval sched.prefetch=false
SVEN_STEP_reflexbicut := sched=sven sched.prefetch=false
SVEN_STEP_micro_batch := sched=sven sched.micro_batches=2
SVEN_STEP_async_allreduce := sched=sven sched.micro_batches=2 sched.staleness=1
$(SVEN_DIR)/breakdown/runs.parquet: | $(STAMP)
	$(foreach step,$(SVEN_STEPS),$(SVEN_RUN) model=tgn $(SVEN_STEP_$(step)) world_size=2 results_dir=$(SVEN_DIR)/breakdown $(SVEN_ARGS) &&) true

table-sven-comm: $(STAMP) ## Sven figure 12: bytes per epoch of DepCache, DepComm and Sven, 2-64 virtual ranks, with the closed forms
	$(BIN)/python scripts/sven_tables.py comm --out $(SVEN_DIR) $(SVEN_TABLE_ARGS)

SVEN_BALANCE_ARGS ?=
table-sven-balance: $(STAMP) ## Sven figure 14: per-step link balance (Equation 2) of the dispatch under range, interval and Re-FlexBiCut owners; APAN, REDDIT-sized stream, 8 trainers, batch 400-2400, 10 epochs
	$(BIN)/python scripts/sven_tables.py balance --out $(SVEN_DIR) $(SVEN_BALANCE_ARGS)

table-sven-accuracy: $(SVEN_DIR)/accuracy/runs.parquet ## Sven table 4: test AP and AUC of TGN, JODIE, APAN, one process vs Sven on 2 ranks, staleness 0 and 1 (SVEN_SEEDS=0,1,2 for several seeds)
	$(BIN)/python scripts/sven_tables.py accuracy $(SVEN_DIR)/accuracy

table-sven-breakdown: $(SVEN_DIR)/breakdown/runs.parquet ## Sven figure 15 / table 2: epoch time (compute, exchange, all-reduce) of DepCache, DepComm and Sven as each mechanism is added (2 ranks)
	$(BIN)/python scripts/sven_tables.py breakdown $(SVEN_DIR)/breakdown

bench-vs-pygt: $(TEST_STAMP) ## one rank against a plain PyTorch Geometric Temporal loop: ms per training group side by side, all six snapshot models (about 12 min)
	$(BIN)/python scripts/bench_vs_pygt.py --out $(RESULTS)/bench_vs_pygt.csv $(VS_PYGT_ARGS)

STREAM_SCALING_ARGS ?=
bench-stream-scaling: $(STAMP) ## TGN, JODIE, APAN in one process on REDDIT-shaped streams of 20,000-672,447 events: seconds per epoch and peak memory, a table and a log-log plot
	$(BIN)/python scripts/bench_stream_scaling.py --results-dir $(RESULTS)/stream_scaling $(STREAM_SCALING_ARGS)

SCALING_ARGS ?=
bench-scaling: $(STAMP) ## PSG, greedy, FlareDTDG, DistDy on 2 ranks as the synthetic graph grows (1,000-100,000 nodes, 24-240 snapshots): epoch time and peak memory per rank, a table, a log-log plot and the fitted exponents
	$(BIN)/python scripts/bench_scaling.py --results-dir $(RESULTS)/scaling $(SCALING_ARGS)

STREAM_ACCURACY_ARGS ?=
table-stream-accuracy: $(STAMP) ## TGN, JODIE, APAN: test AP and AUC, transductive and inductive (DyGLib's split), 3 seeds, on CollegeMsg and the REDDIT-sized stream
	$(BIN)/python scripts/stream_accuracy.py --results-dir $(RESULTS)/stream_accuracy $(STREAM_ACCURACY_ARGS)

bench-tgn-pyg: $(STAMP) ## the one-process TGN reference against a TGN of PyG's temporal modules: epoch time side by side (Enron)
	$(BIN)/python scripts/bench_tgn_pyg.py --out $(RESULTS)/bench_tgn_pyg.csv $(TGN_PYG_ARGS)
