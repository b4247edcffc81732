"""The same runs on CUDA (NCCL): run with `make test-gpu` on a machine with a GPU."""

import json
import subprocess
import sys

import pytest
import torch

from tests.conftest import TINY_SYNTHETIC

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("sched", ["psg", "greedy", "esdg", "blad"])
def test_strategies_run_on_cuda(tmp_path, sched):
    world_size = min(2, torch.cuda.device_count())
    if sched == "esdg" and world_size < 2:
        pytest.skip("ESDG needs two GPUs")
    overrides = [*TINY_SYNTHETIC, "device=cuda", f"world_size={world_size}", f"sched={sched}", "epochs=3"]
    if sched == "greedy":
        overrides.append("sched.profile_epochs=1")
    result = subprocess.run(
        [sys.executable, "-m", "dygsched", "run", *overrides, f"results_dir={tmp_path}"], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    (summary_path,) = tmp_path.glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["status"] == "ok"
    assert summary["comm_bytes_per_epoch"]["host_to_device"] > 0  # snapshots are copied to the GPU per group
    assert summary["peak_mem_bytes"] > 0
