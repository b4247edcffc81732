"""The same runs on CUDA: run with `make test-gpu` on a machine with a GPU.

Two ranks run on any machine with a GPU: NCCL when each has its own, gloo when they share one.
Every strategy family runs on a model it trains, and trains what the same run on CPU trains.
`make test-gpu GPU_PYTHON=python3` runs them with an existing interpreter (no install; pytest,
torch and a run's dependencies present, docs/operations.md).
"""

import json
import subprocess
import sys

import pandas as pd
import pytest
import torch

from tests.conftest import TINY_SYNTHETIC

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def run(results_dir, overrides):
    result = subprocess.run(
        [sys.executable, "-m", "dygsched", "run", *overrides, f"results_dir={results_dir}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    (summary_path,) = results_dir.glob("*/summary.json")
    return json.loads(summary_path.read_text())


@pytest.mark.parametrize("sched", ["psg", "greedy", "esdg", "blad"])
def test_strategies_run_on_cuda(tmp_path, sched):
    overrides = [*TINY_SYNTHETIC, "device=cuda", "world_size=2", f"sched={sched}", "epochs=3"]
    if sched == "greedy":
        overrides.append("sched.timeline.profile_epochs=1")
    summary = run(tmp_path, overrides)
    assert summary["status"] == "ok"
    assert summary["comm_bytes_per_epoch"]["host_to_device"] > 0  # snapshots are copied to the GPU per group
    assert summary["gpu_peak_allocated_bytes"] > 0 and summary["peak_rss_bytes"] > 0


def test_the_gpu_peak_is_reset_and_recorded_per_epoch_and_rank(tmp_path):
    summary = run(tmp_path, [*TINY_SYNTHETIC, "device=cuda", "world_size=2", "sched=psg", "epochs=3"])
    metrics = pd.read_parquet(tmp_path / summary["run_id"] / "metrics.parquet")
    peaks = metrics[(metrics.metric == "gpu_peak_allocated_bytes") & (metrics.iteration == -1)]
    assert sorted(zip(peaks.epoch, peaks["rank"])) == [(e, r) for e in range(3) for r in range(2)]
    assert (peaks.value > 0).all() and "peak_mem_bytes" not in set(metrics.metric)


@pytest.mark.parametrize("model", ["tgcn", "gat_lstm"])
def test_reuse_on_cuda_keeps_losses_and_moves_fewer_bytes(tmp_path, model):
    """Diff maps cross to the GPU, graphs are rebuilt there, three streams: same training as without."""
    common = [
        *TINY_SYNTHETIC,
        "model.num_layers=2",
        f"model={model}",
        "device=cuda",
        "world_size=2",
        "sched=greedy",
        "sched.timeline.profile_epochs=0",
        "epochs=2",
    ]
    summaries = {}
    for name, extra in (("on", []), ("serial", ["sched.executor.streams=false"]), ("off", ["sched.executor.reuse=false"])):
        (tmp_path / name).mkdir()
        summaries[name] = run(tmp_path / name, [*common, *extra])
    for name in ("on", "serial"):
        assert summaries[name]["final_train_loss"] == pytest.approx(summaries["off"]["final_train_loss"], rel=1e-5)
        assert summaries[name]["eval"]["value"] == pytest.approx(summaries["off"]["eval"]["value"], rel=1e-5)
    moved = {name: s["comm_bytes_per_epoch"]["host_to_device"] for name, s in summaries.items()}
    assert 0 < moved["on"] == moved["serial"] < moved["off"]


# Every strategy family on small data and a model it trains: (overrides, ranks). Every random draw of
# these strategies is seeded on the host, so the CPU run of the same settings trains the same steps.
SMALL_STREAM = [
    "dataset=bipartite",
    "dataset.num_users=30",
    "dataset.num_items=10",
    "dataset.num_events=500",
    "model=tgn",
    "model.memory_dim=8",
    "model.time_dim=4",
    "model.neighbours=3",
    "model.dropout=0.0",
    "progress=false",
]
COST_MODEL_PLAN = ["sched.timeline.profile_epochs=0", "sched.executor.reuse_path=diff"]  # the same plan on either device
FAMILIES = {
    "psg": ([*TINY_SYNTHETIC, "sched=psg"], 2),
    "greedy_reuse": ([*TINY_SYNTHETIC, "sched=greedy", *COST_MODEL_PLAN], 2),
    # the REAL policy: the ILP (10 s whatever the estimated epoch time, one CP-SAT worker: the same solution on either device)
    "real_reuse": (
        [
            *TINY_SYNTHETIC,
            "sched=real",
            *COST_MODEL_PLAN,
            "sched.planner.time_limit=10",
            "+sched.planner.options.epoch_time=100",
            "+sched.planner.options.workers=1",
        ],
        2,
    ),
    "esdg": ([*TINY_SYNTHETIC, "sched=esdg"], 2),
    "blad": ([*TINY_SYNTHETIC, "sched=blad"], 2),
    "flare_overlap": ([*TINY_SYNTHETIC, "sched=flare", "sched.chunks=4", "sched.overlap=rr"], 2),
    "distdy": ([*TINY_SYNTHETIC, "model=sage_temporal", "sched=distdy", "sched.fanouts=[3]", "sched.batch=32"], 2),
    "single": ([*SMALL_STREAM, "sched=single", "sched.batch_size=70"], 1),
    "depcache": ([*SMALL_STREAM, "sched=depcache", "sched.batch_size=35"], 2),
    "depcomm": ([*SMALL_STREAM, "sched=depcomm", "sched.batch_size=35"], 2),
    "sven_stale_micro2": ([*SMALL_STREAM, "sched=sven", "sched.batch_size=35", "sched.staleness=1", "sched.micro_batches=2"], 2),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_strategy_family_trains_on_cuda_what_it_trains_on_cpu(tmp_path, family):
    overrides, ranks = FAMILIES[family]
    common = [*overrides, f"world_size={ranks}", "epochs=2", "checkpoint=false", "dist_timeout_s=60"]
    summaries = {}
    for device in ("cuda", "cpu"):
        (tmp_path / device).mkdir()
        summaries[device] = run(tmp_path / device, [*common, f"device={device}"])
        assert summaries[device]["status"] == "ok"
    cuda, cpu = summaries["cuda"], summaries["cpu"]
    assert cuda["gpu_peak_allocated_bytes"] > 0 and cpu["gpu_peak_allocated_bytes"] is None
    assert cuda["epochs_completed"] == cpu["epochs_completed"] == 2
    # float32 on another device sums in another order: the same training, to rounding
    assert cuda["final_train_loss"] == pytest.approx(cpu["final_train_loss"], rel=1e-3)
    assert cuda["eval"]["metric"] == cpu["eval"]["metric"]
    if cuda["eval"]["metric"] in ("ap", "auc", "mrr"):  # a ranking: scores a rounding apart may swap places
        assert cuda["eval"]["value"] == pytest.approx(cpu["eval"]["value"], abs=0.02)
    else:
        assert cuda["eval"]["value"] == pytest.approx(cpu["eval"]["value"], rel=1e-3)
    metrics = pd.read_parquet(tmp_path / "cuda" / cuda["run_id"] / "metrics.parquet")
    peaks = metrics[(metrics.metric == "gpu_peak_allocated_bytes") & (metrics.iteration == -1)]
    assert sorted(set(peaks["rank"])) == list(range(ranks)) and (peaks.value > 0).all()


def test_the_sync_counter_counts_what_waits_for_the_device_and_nothing_else():
    """``metrics.count_syncs`` on CUDA: torch's sync debug mode, one count per synchronising call."""
    from dygsched.engine.host_syncs import counting_syncs

    device = torch.device("cuda")
    x = torch.randn(1000, device=device)
    with counting_syncs(True, device) as quiet:
        y = (x * 2).sum()  # queued work only
        torch.arange(5).to(device, non_blocking=True)  # pageable host memory staged, no stream sync
    with counting_syncs(True, device) as reads:
        float(y)  # a read of a device value
        x[x > 0]  # a size the device decides
    assert quiet.count == 0 and reads.count >= 2, (quiet.count, reads.count)
    assert torch.cuda.get_sync_debug_mode() == 0  # restored


def test_a_step_s_syncs_are_recorded_per_epoch_on_cuda(tmp_path):
    summary = run(tmp_path, [*TINY_SYNTHETIC, "device=cuda", "world_size=1", "sched=psg", "epochs=2", "metrics.count_syncs=true"])
    metrics = pd.read_parquet(tmp_path / summary["run_id"] / "metrics.parquet")
    per_step = metrics[(metrics.metric == "cuda_syncs_per_step") & (metrics.iteration == -1)]
    assert len(per_step) == 2 and (per_step.value >= 0).all()


def test_a_rank_that_fails_under_nccl_is_reported_in_one_line_and_the_others_abort(tmp_path):
    """The abort path on the backend a CUDA run uses (it is tested on gloo on CPU): a rank's error
    ends the run with its one-line reason, its process group aborted, the others not left hanging.
    Two ranks on two GPUs (NCCL between them) where there are two, else one rank on the mixed backend."""
    ranks = min(2, torch.cuda.device_count())
    failing = ["model._target_=tests.launch.failing_model.FailingTGCN", "+model.error=value", f"+model.fail_rank={ranks - 1}"]
    overrides = [*TINY_SYNTHETIC, "device=cuda", f"world_size={ranks}", "sched=psg", "epochs=3", "dist_timeout_s=30", *failing]
    result = subprocess.run(
        [sys.executable, "-m", "dygsched", "run", *overrides, f"results_dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    lines = [line for line in result.stderr.splitlines() if line.startswith("dygsched: error:")]
    assert result.returncode != 0 and len(lines) == 1, result.stderr[-2000:]
    assert f"rank {ranks - 1}" in lines[0] and "NaN in the hidden state (simulated)" in lines[0]
    (summary_path,) = tmp_path.glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["status"] == "failed"
