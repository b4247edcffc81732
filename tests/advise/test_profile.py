"""A profile as data: its cost curves, written and read back, and a malformed file refused in one line."""

import json

import pytest

from dygsched.advise.profile import FORMAT, DeviceInfo, Profile, StepSample, fit_curve, time_curve
from dygsched.errors import ConfigError


def profile(samples, **changes):
    values = dict(
        dataset="synthetic",
        model="tgcn",
        task="default",
        fingerprint="abc",
        device=DeviceInfo("cpu", "test CPU", 2, 8 * 2**30, 10.0),
        parameter_bytes=4096,
        samples=tuple(samples),
        optimizer_step_s={1: 0.001, 2: 0.0008},
        baseline_memory_bytes=300 * 2**20,
    )
    values.update(changes)
    return Profile(**values)


def sample(nodes, edges, seconds, threads=1):
    return StepSample("sequential", threads, (float(nodes), float(edges)), seconds, 1000)


def test_the_curve_recovers_its_coefficients():
    sizes = [(100, 50), (200, 400), (400, 100), (800, 900), (300, 700)]
    curve = fit_curve(sizes, [1e-5 * n + 2e-6 * e + 0.003 for n, e in sizes])
    assert curve.coefficients == pytest.approx((1e-5, 2e-6, 0.003), rel=1e-6) and curve.r2 == pytest.approx(1.0)


def test_a_step_a_loaded_machine_slowed_is_left_out_of_the_curve():
    sizes = [(100, 50), (200, 400), (400, 100), (800, 900), (300, 700), (500, 500)]
    steps = [sample(n, e, 1e-5 * n + 2e-6 * e + 0.003 + 0.001) for n, e in sizes]
    steps[2] = sample(400, 100, 5.0)  # another process took the cores
    curve = time_curve(steps, step_s=0.001)
    assert curve(400, 100) == pytest.approx(1e-5 * 400 + 2e-6 * 100 + 0.003, rel=1e-3)


def test_samples_at_the_nearest_thread_count():
    mine = profile([sample(1, 1, 0.1, threads=1), sample(1, 1, 0.2, threads=2)])
    assert [s.seconds for s in mine.of("sequential", threads=8)] == [0.2]
    assert mine.step_s(1) == 0.001 and mine.step_s(5) == 0.0008


def test_a_profile_reads_back_what_it_wrote(tmp_path):
    mine = profile([sample(10, 20, 0.05)], facts={"halo_row_bytes": 256.0})
    mine.save(tmp_path / "profile.json")
    assert Profile.load(tmp_path / "profile.json") == mine


@pytest.mark.parametrize(
    "text, message",
    [
        ("not json", "is not JSON"),
        ('{"a": 1}', "is not a dygsched advise profile"),
        (json.dumps({"format": FORMAT, "dataset": "x"}), "is malformed"),
    ],
)
def test_a_malformed_profile_is_one_error(tmp_path, text, message):
    path = tmp_path / "profile.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Profile.load(path)


def test_a_step_with_no_time_is_malformed(tmp_path):
    data = profile([sample(10, 20, 0.05)]).to_dict()
    data["samples"][0]["seconds"] = 0.0
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="is malformed"):
        Profile.load(tmp_path / "p.json")


def test_a_slow_step_among_as_few_steps_as_coefficients_is_left_out():
    # three steps for three coefficients: a curve through all three fits the slow one too (issue 60)
    sizes = [(925, 4575), (982, 4916), (1079, 5548)]
    steps = [sample(n, e, 1e-5 * n + 2e-6 * e + 0.003 + 0.001, threads=2) for n, e in sizes]
    steps[0] = sample(925, 4575, 3.8, threads=2)  # the thread pool still waking, another process on the cores
    curve = time_curve(steps, step_s=0.001)
    assert curve(925, 4575) == pytest.approx(1e-5 * 925 + 2e-6 * 4575 + 0.003, rel=0.05)


def test_steps_of_a_steep_curve_are_all_kept():
    sizes = [(100, 50), (200, 400), (800, 900)]
    steps = [sample(n, e, 1e-5 * n + 2e-6 * e + 0.0005) for n, e in sizes]
    assert time_curve(steps, step_s=0.0).samples == 3
