"""BLAD-like pipelining is exact: the same steps as single-process training on the same groups."""

import threading

import pytest
import torch

from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.objective import GroupObjective
from dygsched.engine.snapshot_groups.blad import BLADExecutor, first_layer_spatial, forward_with_first_layer
from dygsched.models.evolvegcn_h import EvolveGCNH
from dygsched.models.evolvegcn_o import EvolveGCNO
from dygsched.models.gat_lstm import GATLSTM
from dygsched.models.gclstm import GCLSTM
from dygsched.models.mpnn_lstm import MPNNLSTM
from dygsched.models.tgcn import TGCN
from dygsched.models.wdgcn import WDGCN
from dygsched.planner.plan import Plan, SolverStatus
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.solvers.blad import blad_iterations
from tests.harness import run_ranks, train_epoch
from tests.models.snapshots import EXACT64, graph_in_float64, in_float64

NUM_SNAPSHOTS, WINDOW = 10, 4  # 7 groups on 2 ranks: iteration 1 gives rank 0 a pair and rank 1 one group


def setup():
    """In float64: the ranks sum the groups' gradients in another order than one process does."""
    graph = graph_in_float64(SyntheticSource(num_nodes=50, num_snapshots=NUM_SNAPSHOTS, feature_dim=4, seed=5).load())
    groups = sliding_groups(graph.num_snapshots, WINDOW)
    torch.manual_seed(0)
    return graph, groups, GroupObjective(TGCN(4, 1, hidden_channels=8, num_layers=2).double(), graph.task)


def blad_plan(num_groups):
    return Plan(blad_iterations(num_groups, 2), 2, 2, 0.0, 0.0, "blad", SolverStatus.HEURISTIC, 0.0)


class RecordingBLADExecutor(BLADExecutor):
    """Records which thread ran each group's stage 1."""

    def __init__(self):
        self.stage_one_threads = []

    def stage_one(self, model, graph, group, device, stream):
        self.stage_one_threads.append((group.index, threading.current_thread().name))
        return super().stage_one(model, graph, group, device, stream)


def _rank(rank, out):
    graph, groups, objective = setup()
    optimizer = torch.optim.SGD(objective.parameters(), lr=0.1)
    executor = RecordingBLADExecutor()
    seen = train_epoch(executor, objective, graph, groups, blad_plan(len(groups)).iterations, optimizer)
    torch.save({"params": objective.state_dict(), "stats": seen, "threads": executor.stage_one_threads}, f"{out}-{rank}.pt")


def test_an_epoch_steps_like_single_process_training(tmp_path):
    out = tmp_path / "blad"
    run_ranks(_rank, (str(out),))

    graph, groups, reference = setup()
    plan = blad_plan(len(groups))
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    loss_sums = {0: [], 1: []}
    for iteration in plan.iterations:
        optimizer.zero_grad()
        members = [k for ranks in iteration for k in ranks]
        losses = {k: reference(groups[k].snapshots(graph)) for k in members}
        for rank, mine in enumerate(iteration):
            loss_sums[rank].append(sum(float(losses[k].detach()) for k in mine))
        (sum(losses.values()) / len(members)).backward()
        optimizer.step()

    for rank in range(2):
        result = torch.load(f"{out}-{rank}.pt", weights_only=False)
        for name, value in reference.state_dict().items():
            torch.testing.assert_close(
                result["params"][name], value, **EXACT64, msg=lambda m, where=f"rank {rank} {name}": f"{where}: {m}"
            )
        stats = result["stats"]
        assert [s.units for s in stats] == [len(it[rank]) for it in plan.iterations] == ([2, 2] if rank == 0 else [2, 1])
        assert [float(s.loss_sum) for s in stats] == pytest.approx(loss_sums[rank], rel=1e-9, abs=1e-9)
        assert all(s.busy_s > 0 and s.wait_s >= 0 and s.bytes["allreduce"] > 0 for s in stats)
        # The first group of each pair is prepared on the main thread, the second on the stage-1 thread.
        threads = result["threads"]
        assert [k for k, _ in threads] == [k for it in plan.iterations for k in it[rank]]
        expected_main = {it[rank][0] for it in plan.iterations if it[rank]}
        assert all((name == "MainThread") == (k in expected_main) for k, name in threads), threads


MODELS = {
    "tgcn": lambda: TGCN(4, 1, hidden_channels=8, num_layers=2),
    "wdgcn": lambda: WDGCN(4, 1, hidden_channels=8, num_layers=2),
    "evolvegcn_o": lambda: EvolveGCNO(4, 1, hidden_channels=8, num_layers=2),
    "evolvegcn_h": lambda: EvolveGCNH(4, 1, hidden_channels=8, num_layers=2),
    "gat_lstm": lambda: GATLSTM(4, 1, hidden_channels=8, num_layers=2),
    "mpnn_lstm": lambda: MPNNLSTM(4, 1, hidden_channels=8, num_layers=2),
    "gclstm": lambda: GCLSTM(4, 1, hidden_channels=8, num_layers=2, K=3),  # stage 1: the gates' input share and the Laplacian
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_precomputed_first_layer_in_another_thread_gives_the_models_forward_and_gradients(name):
    graph = SyntheticSource(num_nodes=30, num_snapshots=4, feature_dim=4, seed=2).load()
    snapshots = in_float64(list(graph.snapshots))  # the precomputed path may sum in another order
    torch.manual_seed(0)
    model = MODELS[name]().double()
    model.eval()  # MPNN-LSTM's dropout draws in a different order when precomputed (see blad.py); no dropout in eval
    expected = model(snapshots)
    expected.sum().backward()
    expected_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)

    box = {}
    thread = threading.Thread(target=lambda: box.update(spatial=first_layer_spatial(model, snapshots)))
    thread.start()
    thread.join()
    got = forward_with_first_layer(model, snapshots, box["spatial"])
    got.sum().backward()  # through an autograd graph partly built in the other thread
    torch.testing.assert_close(got, expected, **EXACT64)
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert grads.keys() == expected_grads.keys()
    for n, g in grads.items():
        torch.testing.assert_close(g, expected_grads[n], **EXACT64, msg=lambda m, n=n: f"{n}: {m}")


def test_forward_with_first_layer_wants_one_output_per_snapshot():
    graph = SyntheticSource(num_nodes=30, num_snapshots=3, feature_dim=4).load()
    model = TGCN(4, 1, hidden_channels=8, num_layers=1)
    with pytest.raises(ValueError, match="2 first-layer spatial outputs for 3 snapshots"):
        forward_with_first_layer(model, graph.snapshots, first_layer_spatial(model, graph.snapshots[:2]))


@pytest.mark.parametrize(("num_groups", "num_gpus"), [(0, 2), (1, 3), (7, 2), (8, 2), (9, 4), (20, 3), (5, 1)])
def test_blad_iterations_cover_every_group_once_in_consecutive_round_robin_pairs(num_groups, num_gpus):
    iterations = blad_iterations(num_groups, num_gpus)
    flat = [k for iteration in iterations for groups in iteration for k in groups]
    assert flat == list(range(num_groups))  # every group once, in time order, rank after rank
    assert len(iterations) == -(-num_groups // (2 * num_gpus))
    for i, iteration in enumerate(iterations):
        assert len(iteration) == num_gpus
        for rank, groups in enumerate(iteration):
            pair = 2 * (i * num_gpus + rank)
            assert groups == tuple(k for k in (pair, pair + 1) if k < num_groups)
    if num_groups:
        problem = ScheduleProblem(group_times=(1.0,) * num_groups, num_gpus=num_gpus, capacity=2, allreduce_cost=0.0)
        Plan(iterations, num_gpus, 2, 0.0, 0.0, "blad", SolverStatus.HEURISTIC, 0.0).validate(problem)


def test_blad_solver_pairs_with_capacity_two_and_degenerates_to_psg_with_one():
    from dygsched.planner import solve

    assert solve(ScheduleProblem((1.0,) * 5, 2, 2), "blad").iterations == blad_iterations(5, 2)
    assert (
        solve(ScheduleProblem((1.0,) * 5, 2, 1), "blad").iterations == solve(ScheduleProblem((1.0,) * 5, 2, 1), "psg").iterations
    )
