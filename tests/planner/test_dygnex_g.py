"""DyGNeX-G's vectorised target evaluation gives the published loop's plans, and the planner's
snapshot families (regime switching, heavy-tailed bursts) against it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dygsched.errors import ScheduleError
from dygsched.planner import ScheduleProblem, predicted_epoch_time, solve
from dygsched.planner.cost_model import CostModel
from dygsched.planner.simulate import FAMILIES, generate_family, simulation_problem, with_gpus
from dygsched.planner.solvers.dygnex_g import target_pairing_iterations


def family_problem(family: str, n: int, gpus: int, seed: int, reuse: bool = False) -> ScheduleProblem:
    return with_gpus(simulation_problem(generate_family(family, n + 3, seed=seed), 4, CostModel(), 1, reuse), gpus)


def tied_problem(n: int, gpus: int, seed: int) -> ScheduleProblem:
    rng = random.Random(seed)  # few distinct times: many equally close pairs, so tie-breaking decides
    return ScheduleProblem(tuple(float(rng.randint(1, 4)) for _ in range(n)), gpus, 2, 0.01)


CASES = [
    (f"{family}-{n}-{g}", family_problem(family, n, g, seed=n + g))
    for family in FAMILIES
    for n, g in ((27, 4), (60, 5), (100, 8))
]
CASES += [(f"tied-{n}-{g}", tied_problem(n, g, seed=n)) for n, g in ((10, 3), (33, 5), (64, 8), (50, 30))]


@pytest.mark.parametrize("name,problem", CASES, ids=[name for name, _ in CASES])
def test_vectorised_targets_give_the_published_loops_plan(name: str, problem: ScheduleProblem) -> None:
    reference = target_pairing_iterations(problem, use_reuse=False, vectorized=False)
    assert target_pairing_iterations(problem, use_reuse=False) == reference
    assert target_pairing_iterations(problem, use_reuse=False, max_targets=7) == target_pairing_iterations(
        problem, use_reuse=False, max_targets=7, vectorized=False
    )


@pytest.mark.parametrize("family", ["regime", "bursty"])
def test_families_are_deterministic_positive_and_shaped(family: str) -> None:
    stats = generate_family(family, 400, seed=3)
    assert stats.num_snapshots == 400
    np.testing.assert_array_equal(stats.edges, generate_family(family, 400, seed=3).edges)
    assert (stats.nodes >= 1).all() and (stats.edges >= 1).all() and (stats.touched <= stats.nodes).all()
    ratio = np.diff(np.log(stats.edges))
    if family == "regime":  # mostly flat, a few large jumps
        assert (np.abs(ratio) < 0.1).mean() > 0.9 and (np.abs(ratio) > 0.3).sum() >= 3
    else:  # bursts: the largest snapshot far above the median
        assert stats.edges.max() > 2 * np.median(stats.edges)


def test_unknown_family_is_a_schedule_error() -> None:
    with pytest.raises(ScheduleError, match="unknown snapshot family"):
        generate_family("seasonal", 10)


@pytest.mark.parametrize("family", ["regime", "bursty"])
def test_greedy_is_never_worse_than_dygnex_g_on_the_families(family: str) -> None:
    # seeds where greedy's own search lost to DyGNeX-G before it started from DyGNeX-G's plan
    for seed in {"regime": (0, 5), "bursty": (2, 9)}[family]:
        problem = family_problem(family, 200, 8, seed)
        greedy, dygnex = solve(problem, "greedy"), solve(problem, "dygnex_g")
        assert greedy.predicted_epoch_time <= dygnex.predicted_epoch_time + 1e-12, seed


def test_greedy_searches_reuse_pairings_above_the_local_search_size() -> None:
    """Above 2,000 groups greedy runs a short local search when there is reuse to find (it beat
    DyGNeX-G's plan there only with it); without reuse it keeps the balanced start."""
    from dygsched.planner.solvers.greedy import LOCAL_SEARCH_MAX_GROUPS, balanced_iterations

    problem = family_problem("bursty", 3000, 128, seed=3128, reuse=True)
    assert problem.num_groups > LOCAL_SEARCH_MAX_GROUPS and problem.has_reuse
    searched = predicted_epoch_time(problem, balanced_iterations(problem))
    assert searched < 0.99 * predicted_epoch_time(problem, balanced_iterations(problem, local_search=0))
    plain = family_problem("bursty", 3000, 128, seed=3128)
    assert balanced_iterations(plain) == balanced_iterations(plain, local_search=0)
