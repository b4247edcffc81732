"""The same runs on CUDA: run with `make test-gpu` on a machine with a GPU.

Two ranks run on any machine with a GPU: NCCL when each has its own, gloo when they share one.
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
        [sys.executable, "-m", "dygsched", "run", *overrides, f"results_dir={results_dir}"], capture_output=True, text=True, timeout=600
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
    common = [*TINY_SYNTHETIC, "model.num_layers=2", f"model={model}", "device=cuda", "world_size=2", "sched=greedy",
              "sched.timeline.profile_epochs=0", "epochs=2"]
    summaries = {}
    for name, extra in (("on", []), ("serial", ["sched.executor.streams=false"]), ("off", ["sched.executor.reuse=false"])):
        (tmp_path / name).mkdir()
        summaries[name] = run(tmp_path / name, [*common, *extra])
    for name in ("on", "serial"):
        assert summaries[name]["final_train_loss"] == pytest.approx(summaries["off"]["final_train_loss"], rel=1e-5)
        assert summaries[name]["eval"]["value"] == pytest.approx(summaries["off"]["eval"]["value"], rel=1e-5)
    moved = {name: s["comm_bytes_per_epoch"]["host_to_device"] for name, s in summaries.items()}
    assert 0 < moved["on"] == moved["serial"] < moved["off"]
