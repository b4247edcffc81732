"""``dygsched advise`` through the CLI: bad input is one ``dygsched: error:`` line, a small advice end to end."""

import pandas as pd
import pytest

from dygsched.advise.profile import DeviceInfo, Profile, StepSample
from tests.cli_process import run_dygsched

SMALL = ("dataset=synthetic", "dataset.num_nodes=120", "dataset.num_snapshots=12", "model=tgcn")


def one_error(done, message):
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0, done.stdout
    assert lines[-1].startswith("dygsched: error:") and message in lines[-1], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--gpus", "0,2"], "--gpus takes GPU counts of 1 or more"),
        (["--gpus", "two"], "--gpus takes comma-separated GPU counts"),
        (["--link", "carrier-pigeon", "--gpus", "2"], "unknown --link 'carrier-pigeon'"),
        (["--gpu-memory", "lots"], "--gpu-memory 'lots'"),
        (["--gpu", "tpu9"], "unknown --gpu 'tpu9'"),
        (["sched=psg"], "the advisor composes every strategy itself"),
    ],
)
def test_bad_options_are_one_line_before_anything_runs(tmp_path, args, message):
    done = run_dygsched("advise", *SMALL, *args, "--no-progress", "--out", str(tmp_path / "out"), cwd=tmp_path)
    one_error(done, message)
    assert not (tmp_path / "out").exists()


def test_a_malformed_profile_file_is_one_line(tmp_path):
    (tmp_path / "profile.json").write_text("{ not json")
    done = run_dygsched(
        "advise", *SMALL, "--profile", str(tmp_path / "profile.json"), "--out", str(tmp_path / "out"), cwd=tmp_path
    )
    one_error(done, "is not JSON")
    assert not (tmp_path / "out").exists()


def test_a_strategy_that_cannot_train_the_model_is_one_line(tmp_path):
    done = run_dygsched("advise", *SMALL, "--sched", "distdy", "--no-progress", "--out", str(tmp_path / "out"), cwd=tmp_path)
    one_error(done, "sched=distdy cannot train this")


def test_an_unknown_strategy_is_one_line(tmp_path):
    done = run_dygsched("advise", *SMALL, "--sched", "fastest", "--no-progress", "--out", str(tmp_path / "out"), cwd=tmp_path)
    one_error(done, "unknown strategy 'fastest'")


def test_a_profile_of_another_model_is_one_line(tmp_path):
    other = Profile(
        dataset="synthetic",
        model="evolvegcn_o",
        task="default",
        fingerprint="0123456789abcdef",
        device=DeviceInfo("cpu", "test CPU", 2, 8 * 2**30, 10.0),
        parameter_bytes=4096,
        samples=(StepSample("sequential", 1, (120.0, 100.0), 0.01, 1000),),
        optimizer_step_s={1: 0.001},
        baseline_memory_bytes=2**28,
    )
    other.save(tmp_path / "profile.json")
    args = ("--sched", "psg", "--profile", str(tmp_path / "profile.json"), "--no-progress", "--out", str(tmp_path / "out"))
    done = run_dygsched("advise", *SMALL, *args, cwd=tmp_path)
    one_error(done, "the profile was measured for model=evolvegcn_o")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_advice_end_to_end_then_again_from_its_profile(tmp_path):
    """Profiles here, prices PSG and FlareDTDG on 1 and 4 simulated A100s, writes the table; the
    profile it wrote answers a second advice without profiling again."""
    args = ("--sched", "psg,flare", "--gpus", "1,4", "--gpu", "a100-80gb", "--link", "pcie", "--steps", "4", "--budget", "2")
    done = run_dygsched("advise", *SMALL, *args, "--out", str(tmp_path / "a"), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "recommendation: use sched=" in done.stdout
    table = pd.read_parquet(tmp_path / "a" / "advice.parquet")
    assert set(table.sched) == {"psg", "flare"} and set(table.gpus) == {1, 4}
    assert (table.epoch_time_s > 0).all() and (table.peak_memory_bytes > 0).all()
    four = table[table.gpus == 4].set_index("sched")
    assert four.loc["flare", "traffic_halo"] > 0 and four.loc["psg", "traffic_allreduce"] > 0
    again = run_dygsched(
        "advise", *SMALL, *args, "--profile", str(tmp_path / "a" / "profile.json"), "--out", str(tmp_path / "b"), cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    assert "profiling sequential" not in again.stderr and "the profile read" in again.stderr
    second = pd.read_parquet(tmp_path / "b" / "advice.parquet")
    assert second.epoch_time_s.tolist() == pytest.approx(table.epoch_time_s.tolist(), rel=0.05)
