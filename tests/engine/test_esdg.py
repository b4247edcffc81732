"""ESDG's hidden-state passing across ranks gives the gradients and steps of single-process training."""

import pytest
import torch

from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.objective import GroupObjective
from dygsched.engine.snapshot_groups.esdg import ESDGExecutor, check_esdg, snapshot_block
from dygsched.errors import ConfigError
from dygsched.models.evolvegcn_o import EvolveGCNO
from dygsched.models.gclstm import GCLSTM
from dygsched.models.tgcn import TGCN
from dygsched.models.wdgcn import WDGCN
from tests.harness import RecordingSGD, reference_steps, run_ranks, train_epoch
from tests.models.snapshots import EXACT64, graph_in_float64

MODELS = {
    "tgcn": lambda: TGCN(4, 1, hidden_channels=8, num_layers=2),
    "wdgcn": lambda: WDGCN(4, 1, hidden_channels=8, num_layers=2),
    "evolvegcn_o": lambda: EvolveGCNO(4, 1, hidden_channels=8, num_layers=2),
    "gclstm": lambda: GCLSTM(4, 1, hidden_channels=8, num_layers=2, K=3),  # (H, C) sent on; H convolved on each rank's graphs
}
# (model, window, the one group): window 5 splits unevenly (3 + 2); the plan names rank 1, ESDG ignores it.
GRADIENT_CASES = [(name, 4, 2) for name in MODELS] + [("tgcn", 5, 1)]
# Two iterations, the second with three groups (ranks as PSG-like plans name them; ESDG ignores them).
ITERATIONS = (((0,), (1,)), ((2, 3), (4,)))


def setup(name, window):
    """In float64: the ranks split a group's backward and sum gradients in another order than one process."""
    graph = graph_in_float64(SyntheticSource(num_nodes=40, num_snapshots=10, feature_dim=4, seed=3).load())
    groups = sliding_groups(graph.num_snapshots, window)
    torch.manual_seed(0)
    return graph, groups, GroupObjective(MODELS[name]().double(), graph.task)


def _rank(rank, out_dir):
    # One group: the gradients the step used are the synchronised ones.
    for name, window, k in GRADIENT_CASES:
        graph, groups, objective = setup(name, window)
        optimizer = RecordingSGD(objective.parameters(), lr=0.0)
        seen = train_epoch(ESDGExecutor(), objective, graph, groups, (((), (k,)),), optimizer)
        grads = dict(zip([n for n, _ in objective.named_parameters()], optimizer.last_grads, strict=True))
        torch.save({"grads": grads, "stats": seen}, f"{out_dir}/grad-{name}-{window}-{rank}.pt")

    graph, groups, objective = setup("tgcn", 4)
    optimizer = torch.optim.SGD(objective.parameters(), lr=0.1)
    seen = train_epoch(ESDGExecutor(), objective, graph, groups, ITERATIONS, optimizer)
    torch.save({"params": objective.state_dict(), "stats": seen}, f"{out_dir}/epoch-{rank}.pt")


@pytest.fixture(scope="module")
def distributed(tmp_path_factory):
    out = tmp_path_factory.mktemp("esdg")
    run_ranks(_rank, (str(out),))
    return out


@pytest.mark.parametrize(("name", "window", "k"), GRADIENT_CASES)
def test_one_group_gives_the_single_process_gradients(distributed, name, window, k):
    graph, groups, reference = setup(name, window)
    loss = reference(groups[k].snapshots(graph))
    loss.backward()
    for rank in range(2):
        result = torch.load(distributed / f"grad-{name}-{window}-{rank}.pt", weights_only=False)
        for n, p in reference.named_parameters():
            torch.testing.assert_close(
                result["grads"][n], p.grad, **EXACT64, msg=lambda m, where=f"rank {rank} {n}": f"{where}: {m}"
            )
        (stats,) = result["stats"]
        assert stats.bytes["hidden_state"] > 0 and stats.bytes["allreduce"] > 0
        # Only the last rank reports the group and its loss, so the worker's sums give the mean.
        assert stats.units == (1 if rank == 1 else 0)
        assert float(stats.loss_sum) == (pytest.approx(float(loss.detach()), rel=1e-9, abs=1e-9) if rank == 1 else 0.0)


def test_an_epoch_steps_like_single_process_training(distributed):
    graph, groups, reference = setup("tgcn", 4)
    loss_sums = reference_steps(reference, graph, groups, ITERATIONS, lr=0.1)

    results = [torch.load(distributed / f"epoch-{rank}.pt", weights_only=False) for rank in range(2)]
    for result in results:
        for name, value in reference.state_dict().items():
            torch.testing.assert_close(result["params"][name], value, **EXACT64, msg=lambda m, name=name: f"{name}: {m}")
    first, last = (r["stats"] for r in results)
    assert [s.iteration for s in last] == [0, 1] and [s.units for s in last] == [2, 3] and [s.units for s in first] == [0, 0]
    assert [float(s.loss_sum) for s in last] == pytest.approx(loss_sums, rel=1e-9, abs=1e-9)
    for s in first + last:
        assert s.bytes["hidden_state"] > 0 and s.busy_s > 0 and s.wait_s >= 0 and s.comm_s > 0
    # Rank 0 sends states forward, rank 1 sends state gradients back: the same layout both ways.
    assert first[0].bytes["hidden_state"] == last[0].bytes["hidden_state"]


def test_check_esdg_needs_a_snapshot_per_rank():
    check_esdg(4, 4)
    check_esdg(4, 2)
    with pytest.raises(ConfigError, match=r"window=2\) as ranks \(world_size=3\)"):
        check_esdg(2, 3)


@pytest.mark.parametrize(("size", "world_size"), [(4, 2), (5, 2), (7, 3), (4, 4), (9, 4)])
def test_snapshot_blocks_are_contiguous_in_time_order_and_even(size, world_size):
    blocks = [snapshot_block(size, world_size, r) for r in range(world_size)]
    assert blocks[0][0] == 0 and blocks[-1][1] == size
    assert all(blocks[r][1] == blocks[r + 1][0] for r in range(world_size - 1))
    lengths = [stop - start for start, stop in blocks]
    assert min(lengths) >= 1 and max(lengths) - min(lengths) <= 1
    assert lengths == sorted(lengths, reverse=True)


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_loss_from_predictions_is_the_objectives_loss(task):
    graph = SyntheticSource(num_nodes=30, num_snapshots=4, feature_dim=4, task=task, num_classes=3, seed=1).load()
    snapshots = graph.snapshots
    torch.manual_seed(0)
    objective = GroupObjective(TGCN(4, graph.out_channels, hidden_channels=8, num_layers=1), graph.task)
    expected = objective(snapshots, 2.5)
    assert torch.equal(objective.loss_from_predictions(objective.model(snapshots), snapshots[-1], 2.5), expected)
