import json

import pytest

from dygsched.commands import plan as plan_cli
from dygsched.commands import simulate as simulate_cli
from dygsched.errors import ScheduleError
from dygsched.planner import ScheduleProblem, solve
from dygsched.planner.cost_model import CostModel, group_times_from_sizes
from dygsched.planner.plan import Plan
from dygsched.planner.simulate import generate_snapshots, group_costs, imbalance_ratio, reuse_pairs, simulation_problem, with_gpus


def test_plan_cli_json_csv_and_out(tmp_path, capsys):
    src = tmp_path / "t.json"
    src.write_text(json.dumps({"group_times": [3, 1, 4, 1, 5], "reuse": [[0] * 5 for _ in range(5)]}))
    out = tmp_path / "plan.json"
    assert plan_cli.main([str(src), "--gpus", "2", "--alpha", "0.1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "predicted=" in text and "bound=" in text and "gap=" in text
    plan = Plan.load(out)
    plan.validate(ScheduleProblem((3, 1, 4, 1, 5), 2, 2, 0.1))
    csv_src = tmp_path / "t.csv"
    csv_src.write_text("group,time\n0,1.5\n1,2.5\n2,0.5\n")
    assert plan_cli.main([str(csv_src), "--gpus", "2", "--algo", "psg", "--quiet"]) == 0


@pytest.mark.parametrize(
    "content, args, message",
    [
        ("[1, -2]", [], "non-negative"),
        ("[]", [], "no groups"),
        ("[1, 2]", ["--gpus", "0"], "positive integer"),
        ('{"group_times": [1, 2], "reuse": [[0, 1]]}', [], "2x2"),
        ("[1, 2]", ["--algo", "nope"], "valid choices"),
        ("[1, 2]", ["--algo", "ilp", "--backend", "nope"], "valid choices"),
        ("not json", [], "not valid JSON"),
    ],
)
def test_plan_cli_bad_input(tmp_path, content, args, message):
    src = tmp_path / "t.json"
    src.write_text(content)
    with pytest.raises(ScheduleError, match=message):
        plan_cli.main([str(src), *args])


def test_simulate_cli_writes_csv_and_png(tmp_path, capsys):
    out = tmp_path / "sim.csv"
    assert (
        simulate_cli.main(["--snapshots", "300", "--gpus", "4,16", "--solvers", "psg,greedy", "--reuse", "on", "--out", str(out)])
        == 0
    )
    lines = out.read_text().splitlines()
    assert lines[0].startswith("solver,gpus") and len(lines) == 5
    assert out.with_suffix(".png").stat().st_size > 1000


def test_cost_model_and_group_times():
    assert group_times_from_sizes([10, 20], [100, 0], (0.1, 0.01, 1.0)) == pytest.approx([3.0, 3.0])
    assert group_times_from_sizes([1], [1], {"a1": 1, "a2": 1, "a3": 0}) == [2.0]
    with pytest.raises(ScheduleError):
        group_times_from_sizes([1, 2], [1], (1, 1, 1))
    with pytest.raises(ScheduleError, match="valid keys"):
        CostModel.from_mapping({"b": 1})


def test_simulation_model_matches_equations():
    stats = generate_snapshots(12, seed=3)
    cost = CostModel(1e-6, 1e-7, 1e-3, reuse_ratio=0.5)
    times, diff = group_costs(stats, 4, cost)
    full0 = cost.a1 * stats.nodes[0] + cost.a2 * stats.edges[0] + cost.a3
    assert times[0] == pytest.approx(full0 + diff[1] + diff[2] + diff[3])
    pairs = {(i, j): v for i, j, v in reuse_pairs(diff, len(times), 4, 0.5)}
    assert pairs[(0, 1)] == pytest.approx(0.5 * (diff[1] + diff[2] + diff[3]))  # k = 1 .. 0+4-1
    assert pairs[(0, 3)] == pytest.approx(0.5 * diff[1])
    assert (0, 4) not in pairs
    # growth: later snapshots are bigger on average
    big = generate_snapshots(2000, seed=0)
    assert big.edges[-200:].mean() > 1.5 * big.edges[:200].mean()


def test_greedy_scales_where_psg_declines():
    base = simulation_problem(generate_snapshots(2000, seed=1), 4, CostModel(), 1, False)
    single = solve(with_gpus(base, 1, 0.0), "greedy").predicted_epoch_time
    eff = {}
    for algo in ("psg", "greedy"):
        p = with_gpus(base, 128)
        plan = solve(p, algo)
        eff[algo] = single / (128 * plan.predicted_epoch_time)
        assert imbalance_ratio(p, plan) >= 1.0
    assert eff["greedy"] > 0.95 and eff["psg"] < eff["greedy"] - 0.05
