import numpy as np
import pytest
from scipy.sparse import csr_matrix

from dygsched.data.partition.vertices import (
    capacity,
    interval_partition,
    partition_vertices,
    range_partition,
    re_flexbicut,
    receive_volumes,
)
from dygsched.errors import ConfigError


def block_demand(num_ranks=4, block=50, leak=0.1, seed=0):
    """Each trainer needs its own block of vertices often and a few others rarely; ids are shuffled so
    that neither baseline lines up with the blocks."""
    rng = np.random.default_rng(seed)
    num_vertices = num_ranks * block
    demand = np.zeros((num_ranks, num_vertices))
    home = rng.permutation(np.repeat(np.arange(num_ranks), block))
    demand[home, np.arange(num_vertices)] = rng.integers(5, 20, num_vertices)
    demand += (rng.random((num_ranks, num_vertices)) < leak) * rng.integers(1, 3, (num_ranks, num_vertices))
    return demand, home


def test_baselines():
    assert interval_partition(7, 3).tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert range_partition(7, 3).tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert np.bincount(range_partition(10, 4)).tolist() == [3, 2, 3, 2]


def test_receive_volume_is_what_a_trainer_needs_and_does_not_own():
    demand = np.array([[1.0, 2.0, 0.0], [3.0, 0.0, 4.0]])
    owner = np.array([0, 1, 1])
    # trainer 0 owns vertex 0 and receives vertex 1 (2) and 2 (0); trainer 1 owns 1, 2 and receives 0 (3)
    assert receive_volumes(demand, owner).tolist() == [2.0, 3.0]


@pytest.mark.parametrize("num_ranks", [2, 3, 4, 8])
def test_reflexbicut_gives_each_vertex_one_owner_within_capacity(num_ranks):
    demand, _ = block_demand(num_ranks=num_ranks, block=37, seed=num_ranks)
    demand[:, :5] = 0  # vertices nobody needs still get an owner
    owner = re_flexbicut(demand, capacity_slack=0.05)
    assert owner.shape == (demand.shape[1],)
    assert owner.min() >= 0 and owner.max() < num_ranks
    assert np.bincount(owner, minlength=num_ranks).max() <= capacity(demand.shape[1], num_ranks, 0.05)


def test_reflexbicut_finds_the_blocks_the_baselines_miss():
    demand, home = block_demand()
    cut = partition_vertices("reflexbicut", csr_matrix(demand), capacity_slack=0.1)
    interval = partition_vertices("interval", demand)
    ranged = partition_vertices("range", demand)
    assert cut.used == "reflexbicut" and cut.note == ""
    assert (cut.owner == home).mean() > 0.95
    assert cut.largest_receive_volume < 0.5 * min(interval.largest_receive_volume, ranged.largest_receive_volume)


def test_capacity_stops_the_cut_from_giving_everything_to_one_trainer():
    demand = np.ones((4, 100))
    demand[0] *= 10  # trainer 0 needs everything most
    owner = re_flexbicut(demand, capacity_slack=0.0)
    assert np.bincount(owner, minlength=4).tolist() == [25, 25, 25, 25]


@pytest.mark.parametrize("seed", range(6))
def test_the_result_is_never_worse_than_the_better_baseline(seed):
    rng = np.random.default_rng(seed)
    demand = rng.poisson(rng.random((3, 90)) * 3)
    result = partition_vertices("reflexbicut", demand)
    baselines = [receive_volumes(demand, f(90, 3)).max() for f in (interval_partition, range_partition)]
    assert result.largest_receive_volume <= min(baselines)
    if result.used != "reflexbicut":
        assert "is used" in result.note


def test_bad_input():
    with pytest.raises(ConfigError, match="unknown vertex partition"):
        partition_vertices("metis", np.ones((2, 4)))
    with pytest.raises(ConfigError, match="slack"):
        partition_vertices("interval", np.ones((2, 4)), capacity_slack=-1)
    with pytest.raises(ConfigError, match="non-negative"):
        partition_vertices("reflexbicut", -np.ones((2, 4)))
    with pytest.raises(ConfigError, match="shape"):
        partition_vertices("interval", np.ones(4))


def test_link_balance_reads_equation_2_per_step():
    from dygsched.data.partition.vertices import link_balance

    pairs = np.array([[[9, 4, 2], [1, 9, 3], [6, 5, 9]], [[0, 2, 2], [2, 0, 2], [2, 2, 0]]])  # diagonals are no link
    got = link_balance(pairs)
    assert got["slowest_link"].tolist() == [6, 2]
    assert got["balance_cost"].tolist() == [5, 0]  # 6 - 1; every link equal
    assert got["mean_residual"].tolist() == pytest.approx([(2 + 4 + 5 + 3 + 0 + 1) / 6, 0.0])
    with pytest.raises(ConfigError, match="at least 2 trainers"):
        link_balance(np.zeros((3, 1, 1)))


def test_reflexbicut_spreads_vertices_every_trainer_needs_by_what_each_receives():
    """Hot vertices all trainers need alike go to whoever receives most, so the owned demand (and
    the links to each owner) stay balanced; vertices one trainer needs most stay with it."""
    from dygsched.data.partition.vertices import re_flexbicut

    ranks, hot = 4, 40
    demand = np.zeros((ranks, hot + ranks * 10))
    demand[:, :hot] = np.linspace(40, 1, hot)[None, :]  # needed by every trainer, hottest first
    for trainer in range(ranks):
        demand[trainer, hot + 10 * trainer : hot + 10 * (trainer + 1)] = 1.0  # needed by one trainer only
    owner = re_flexbicut(demand, capacity_slack=0.5)
    for trainer in range(ranks):
        assert set(owner[hot + 10 * trainer : hot + 10 * (trainer + 1)].tolist()) == {trainer}
    owned_heat = np.bincount(owner[:hot], weights=demand[0, :hot], minlength=ranks)
    assert owned_heat.max() / owned_heat.min() < 1.1  # round-robin by heat, not blocks of the hottest
