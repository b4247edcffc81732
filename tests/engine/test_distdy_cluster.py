"""The simulated DistDy cluster prices counts by the formulas its docstring states."""

from __future__ import annotations

import numpy as np
import pytest

from dygsched.engine.distdy.cluster import ComputeCost, Network, StepCounts, simulate_epoch, simulate_step

COST = ComputeCost(per_message=1e-6, per_row=1e-5, per_target=1e-4, per_step=0.01)


def two_ranks() -> StepCounts:
    return StepCounts(
        fetch_rows=np.array([[10, 4], [6, 20]]),  # rank 0 reads 4 rows from rank 1, rank 1 reads 6 from rank 0
        embedding_rows=np.array([[5, 1], [2, 7]]),
        messages=np.array([100, 300]),
        layer_rows=np.array([10, 20]),
        targets=np.array([3, 5]),
    )


def test_each_phase_lasts_as_long_as_its_slowest_rank():
    network = Network(gbps=1.0, latency_s=0.001)  # 1.25e8 bytes per second
    phases = simulate_step(two_ranks(), COST, network, row_bytes=100, embedding_bytes=50, parameter_bytes=10**6)
    assert phases["fetch_s"] == pytest.approx(600 / 1.25e8 + 2 * 0.001)  # rank 0 sends 6 rows (and rank 1 receives them)
    assert phases["embedding_s"] == pytest.approx(2 * (100 / 1.25e8 + 0.001))  # 2 rows out of rank 1, there and back
    assert phases["encode_s"] == pytest.approx(300e-6 + 20e-5)
    assert phases["temporal_s"] == pytest.approx(5e-4 + 0.01)
    assert phases["allreduce_s"] == pytest.approx(2 * 1 / 2 * 10**6 / 1.25e8 + 2 * 0.001)


def test_one_rank_pays_no_communication_and_faster_links_pay_less():
    alone = StepCounts(np.array([[30]]), np.array([[8]]), np.array([400]), np.array([30]), np.array([8]))
    phases = simulate_step(alone, COST, Network(1.0, 0.001), 100, 50, 10**6)
    assert phases["fetch_s"] == phases["embedding_s"] == phases["allreduce_s"] == 0.0
    slow = simulate_epoch([two_ranks()] * 3, COST, Network(1.0), 100, 50, 10**6)
    fast = simulate_epoch([two_ranks()] * 3, COST, Network(100.0), 100, 50, 10**6)
    assert slow["epoch_s"] == pytest.approx(sum(v for k, v in slow.items() if k != "epoch_s"))
    assert slow["fetch_s"] == pytest.approx(3 * 600 / 1.25e8)
    assert fast["fetch_s"] < slow["fetch_s"] and fast["encode_s"] == slow["encode_s"]


def test_a_gpu_profile_prices_the_work_from_the_cards_datasheet():
    from dygsched.engine.distdy.cluster import FLOP_SHARE, GPUS, MEMORY_SHARE, gpu_cost

    v100 = gpu_cost(GPUS["v100"], widths=[128, 64, 64], window=4, temporal_width=64)
    assert v100.per_message == pytest.approx(6 * 128 * 4 / (900e9 * MEMORY_SHARE))
    assert v100.per_row == pytest.approx(2 * 3 * 2 * 128 * 64 / (15.7e12 * FLOP_SHARE))
    assert v100.per_step == pytest.approx(8e-6 * (4 * 2 * 24 + 40))
    older = gpu_cost(GPUS["1080ti"], widths=[128, 64, 64], window=4, temporal_width=64)
    assert older.per_message > v100.per_message and older.per_row > v100.per_row  # a slower card costs more


def test_an_unknown_device_profile_is_one_line_naming_the_known_ones():
    import torch

    from dygsched.engine.distdy.cluster import compute_cost
    from dygsched.errors import ConfigError

    with pytest.raises(ConfigError, match=r"unknown device profile 'a100' \(known: cpu, 1080ti, v100\)"):
        compute_cost("a100", torch.nn.Linear(1, 1), [], torch.zeros(1, 1), [5], 4)
