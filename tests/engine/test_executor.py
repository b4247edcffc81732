"""The group executor's distributed step equals plain single-process training on the same groups."""

import gc
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.executor import EpochRun, GroupExecutor, wrap_ddp
from dygsched.engine.objective import GroupObjective
from dygsched.launch.local import free_port
from dygsched.models.tgcn import TGCN
from dygsched.sched.plan import Plan, SolverStatus

# Iteration 1 leaves rank 1 idle; iteration 2 gives rank 0 two groups: both must still average right.
ITERATIONS = (((0,), (1,)), ((2,), ()), ((3, 4), (5,)))


def setup():
    graph = SyntheticSource(num_nodes=60, num_snapshots=9, feature_dim=4, seed=2).load()
    groups = sliding_groups(graph.num_snapshots, 4)
    torch.manual_seed(0)
    objective = GroupObjective(TGCN(4, 1, hidden_channels=8, num_layers=1), graph.task)
    return graph, groups, objective


def _rank(rank, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    graph, groups, objective = setup()
    ddp = wrap_ddp(objective, torch.device("cpu"))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    plan = Plan(ITERATIONS, 2, 2, 0.0, 0.0, "test", SolverStatus.HEURISTIC, 0.0)
    seen = []
    GroupExecutor().run_epoch(EpochRun(ddp, optimizer, graph, groups, plan, rank, torch.device("cpu"), seen.append))
    assert [s.groups for s in seen] == [len(it[rank]) for it in ITERATIONS]
    assert all(s.bytes["allreduce"] > 0 and s.wait_s >= 0 for s in seen)
    if rank == 0:
        torch.save(objective.state_dict(), out)
    del ddp  # a DDP object still alive at destroy_process_group can deadlock gloo's teardown
    gc.collect()
    dist.destroy_process_group()


def test_distributed_step_is_the_mean_over_the_iterations_groups(tmp_path):
    out = tmp_path / "params.pt"
    mp.start_processes(_rank, args=(free_port(), str(out)), nprocs=2, start_method="spawn")

    graph, groups, reference = setup()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for iteration in ITERATIONS:
        optimizer.zero_grad()
        members = [k for ranks in iteration for k in ranks]
        loss = sum(reference(groups[k].snapshots(graph)) for k in members) / len(members)
        loss.backward()
        optimizer.step()

    distributed = torch.load(out)
    for name, value in reference.state_dict().items():
        assert torch.allclose(distributed[name], value, atol=1e-5), name


def test_idle_forward_touches_every_parameter():
    graph, groups, objective = setup()
    objective(None).backward()
    assert all(p.grad is not None and torch.count_nonzero(p.grad) == 0 for p in objective.parameters())
