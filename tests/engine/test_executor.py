"""The sequential executor's distributed step equals plain single-process training on the same groups."""

import torch

from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.objective import GroupObjective
from dygsched.engine.snapshot_groups import SequentialExecutor
from dygsched.models.tgcn import TGCN
from tests.harness import reference_steps, run_ranks, train_epoch
from tests.models.snapshots import EXACT64, graph_in_float64

# Iteration 1 leaves rank 1 idle; iteration 2 gives rank 0 two groups: both must still average right.
ITERATIONS = (((0,), (1,)), ((2,), ()), ((3, 4), (5,)))


def setup():
    """In float64: the ranks sum the groups' gradients in another order than one process does."""
    graph = graph_in_float64(SyntheticSource(num_nodes=60, num_snapshots=9, feature_dim=4, seed=2).load())
    groups = sliding_groups(graph.num_snapshots, 4)
    torch.manual_seed(0)
    objective = GroupObjective(TGCN(4, 1, hidden_channels=8, num_layers=1).double(), graph.task)
    return graph, groups, objective


def _rank(rank, out):
    for overlap in (False, True):  # with and without the all-reduce overlapping the last backward
        graph, groups, objective = setup()
        optimizer = torch.optim.SGD(objective.parameters(), lr=0.1)
        seen = train_epoch(SequentialExecutor(), objective, graph, groups, ITERATIONS, optimizer, overlap=overlap)
        assert [s.units for s in seen] == [len(it[rank]) for it in ITERATIONS]
        assert all(s.bytes["allreduce"] > 0 and s.wait_s >= 0 for s in seen)
        if rank == 0:
            torch.save(objective.state_dict(), f"{out}-{overlap}.pt")


def test_distributed_step_is_the_mean_over_the_iterations_groups(tmp_path):
    graph, groups, reference = setup()
    reference_steps(reference, graph, groups, ITERATIONS, lr=0.1)
    run_ranks(_rank, (str(tmp_path / "params"),))
    for overlap in (False, True):
        distributed = torch.load(tmp_path / f"params-{overlap}.pt")
        for name, value in reference.state_dict().items():
            torch.testing.assert_close(
                distributed[name], value, **EXACT64, msg=lambda m, where=f"{overlap} {name}": f"{where}: {m}"
            )
