"""The planner module's targets: readings, headlines and verdicts on hand-made tables, the benchmark's
suite and its PASS/FAIL lines, and one smoke build of the cheap targets."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pandas as pd
import pytest

from dygsched.errors import ConfigError
from dygsched.paper import planner
from dygsched.paper.build import build_target
from dygsched.paper.published import rows_of
from dygsched.paper.verdict import judge


def _bench_row(instance: str, n: int, g: int, reuse: bool, solver: str, gap: float, solve_time: float = 0.05) -> dict:
    return {
        "instance": instance,
        "n": n,
        "G": g,
        "reuse": reuse,
        "solver": solver,
        "predicted": 1 + gap,
        "gap": gap,
        "solve_time": solve_time,
    }


def test_planner_reading_counts_the_rows_where_greedy_loses():
    rows = []
    for instance, greedy, dygnex, label in (("a", 0.01, 0.02, "dygnex_g"), ("b", 0.03, 0.02, "dygnex_g[16 targets]")):
        rows += [_bench_row(instance, 100, 4, False, "greedy", greedy), _bench_row(instance, 100, 4, False, label, dygnex, 1.0)]
    rows.append(_bench_row("stress-100-4", 100, 4, False, "greedy", 0.5))  # outside the suite: not counted
    text = planner.read_planner({"p.csv": pd.DataFrame(rows)})
    assert "2 instances of the suite" in text and "holds on 1 of 2 rows" in text and "1.0% to 3.0%" in text
    assert text.endswith("greedy's slowest solve 0.050 s")


def _suite(greedy_gap: float) -> pd.DataFrame:
    """Greedy's dense, no-reuse gap as given; the rows the headline leaves out (reuse, sparse,
    stress, other solvers) far from it."""
    return pd.DataFrame(
        [
            _bench_row("trend-100-4", 100, 4, False, "greedy", greedy_gap),
            _bench_row("trend-100-4", 100, 4, False, "psg", 0.50),
            _bench_row("trend-100-4", 100, 4, True, "greedy", 0.40),  # against a loose bound with reuse
            _bench_row("trend-300-64", 300, 64, False, "greedy", 0.30),  # under 8 groups per GPU
            _bench_row("stress-100-4", 100, 4, False, "greedy", 0.90),
        ]
    )


def test_planner_headline_sets_greedys_worst_gap_beside_dygnex_ls_stated_ceiling():
    published = rows_of("bench-planner")
    (gap,) = planner.headlines_planner({"p.csv": _suite(0.019)}, published)
    assert gap.paper == 2.0 and gap.ours == pytest.approx(1.9) and not gap.ratio
    assert judge(None, published, (gap,)).word == "reproduced"
    assert judge(None, published, planner.headlines_planner({"p.csv": _suite(0.30)}, published)).word == "not"


def test_planner_headline_is_missing_where_the_smoke_run_measured_none_of_it():
    smoke = pd.DataFrame([_bench_row("trend-100-4", 100, 4, True, "greedy", 0.02)])
    (gap,) = planner.headlines_planner({"p.csv": smoke}, rows_of("bench-planner"))
    assert gap.ours is None


def _scaling(efficiency: dict[int, float]) -> pd.DataFrame:
    rows = [{"solver": "psg", "gpus": g, "efficiency": 0.7} for g in efficiency]
    rows += [{"solver": "greedy", "gpus": g, "efficiency": e} for g, e in efficiency.items()]
    return pd.DataFrame(rows)


def test_simulate_reading_names_each_solvers_efficiency_at_the_most_gpus():
    text = planner.read_simulate({"s.csv": _scaling({4: 0.99, 1024: 0.875})})
    assert text == "parallel efficiency psg 70.0% at 1024 GPUs, greedy 87.5% at 1024 GPUs"


def test_simulate_headlines_reproduce_the_papers_efficiencies_and_not_a_collapse():
    published = rows_of("simulate")
    at_512, at_1024 = planner.headlines_simulate({"s.csv": _scaling({4: 0.99, 512: 0.95, 1024: 0.85})}, published)
    assert (at_512.paper, at_1024.paper) == (95.0, 85.0)
    assert at_512.ours == pytest.approx(95.0) and at_1024.ours == pytest.approx(85.0)
    assert judge(None, published, (at_512, at_1024)).word == "reproduced"
    collapsed = planner.headlines_simulate({"s.csv": _scaling({4: 0.99, 512: 0.30, 1024: 0.20})}, published)
    assert judge(None, published, collapsed).word == "not"
    small = planner.headlines_simulate({"s.csv": _scaling({4: 0.99, 16: 0.97})}, published)
    assert all(h.ours is None for h in small) and judge(None, published, small).word == "not measured"


def _summary(rows: list[dict]) -> bool:
    return planner.targets_met(rows, certifying=False)


def test_the_pass_fail_lines_fail_on_a_dense_gap_over_2_percent_or_a_loss_to_dygnex_g(capsys):
    good = [_bench_row("trend-100-4", 100, 4, False, "greedy", 0.01), _bench_row("trend-100-4", 100, 4, False, "dygnex_g", 0.02)]
    assert _summary(good)
    assert "PASS  greedy within 2%" in capsys.readouterr().out
    over = [_bench_row("trend-100-4", 100, 4, False, "greedy", 0.03)]
    assert not _summary(over)
    assert "FAIL  greedy within 2%" in capsys.readouterr().out
    loses = [
        _bench_row("trend-100-4", 100, 4, False, "greedy", 0.015),
        _bench_row("trend-100-4", 100, 4, False, "dygnex_g", 0.01),
    ]
    assert not _summary(loses)
    assert "FAIL  greedy never worse" in capsys.readouterr().out


def test_the_suite_builds_an_instance_only_when_it_is_solved(tmp_path):
    cache = tmp_path / planner.SYNTH_CACHE
    names = [instance.name for instance in planner.instances(quick=True, cache=cache)]
    assert {"trend-27-4", "synth-10000-1024", "stress-100-8", "regime-200-8", "bursty-10000-1024"} <= set(names)
    assert "trend-3000-64" not in names and "trend-3000-64" in {i.name for i in planner.instances(quick=False, cache=cache)}
    with pytest.raises(ConfigError, match="no instance named 'nope'"):
        planner.benchmark_rows(quick=True, cache=cache, only="nope")
    assert not cache.exists()  # no synthetic graph was generated to be skipped


def test_every_setting_is_a_keyword_of_its_builder():
    for paper_target in planner.TARGETS:
        parameters = inspect.signature(paper_target.build).parameters
        for smoke in (False, True):
            assert set(paper_target.settings.at(smoke)) <= set(parameters), paper_target.name


def test_the_module_imports_no_torch():
    code = "import sys, dygsched.paper.planner; sys.exit('torch' in sys.modules or 'matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.slow  # CI builds every target at smoke size after the suite (make paper SMOKE=1)
def test_the_simulation_and_one_benchmark_instance_build_at_smoke_size(tmp_path):
    for paper_target in (planner.SIMULATE, planner.BENCH_PLANNER):
        build_target(paper_target, tmp_path, smoke=True)
        assert not paper_target.missing_outputs(tmp_path)
    scaling = pd.read_csv(tmp_path / planner.SIMULATE_CSV)
    assert set(scaling.gpus) == {4, 8, 16} and set(scaling.solver) == {"psg", "greedy"}
    assert (tmp_path / planner.SIMULATE_PNG).stat().st_size > 1000
    bench = pd.read_csv(tmp_path / planner.BENCH_CSV)
    assert set(bench.instance) == {"trend-100-4"} and {"greedy", "dygnex_g", "ilp"} <= set(bench.solver)
    assert (bench.gap >= -1e-9).all()


def test_the_project_benchmark_states_no_paper_setting():
    assert planner.BENCH_PLANNER_CERTIFY.regime.paper == "" and not planner.BENCH_PLANNER_CERTIFY.reproduces_paper
    assert planner.BENCH_PLANNER.regime.paper and planner.SIMULATE.regime.paper
