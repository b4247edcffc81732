"""FlareDTDG: decay schedules, shrinking, hidden-state inheritance and node-partitioned exactness.

The exactness checks of the spec: with full blocks, P ranks (2 and 3, gloo) give the one-process
outputs, loss and gradients for every partitionable model; K = W without inheritance is the plain
snapshot group for any chunk order; shrinking equals a naive per-step gather; decayed blocks move no
halo bytes.

The exactness checks run in float32, as FlareDTDG trains: P ranks sum a window's messages and
gradients over their node blocks in another order than one process, and a reordered float32 sum of n
terms moves by about sqrt(n) roundings (6e-8) of the terms' size: ~3e-6 of it for the ~3e3 terms
of a gradient entry here, inside the 1e-5 + 1e-5 |value| allowed; at most 0.8% of that tolerance is
measured on the default, AVX2 and AVX-512 kernels alike.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributed as dist

from dygsched.data.groups import SnapshotGroup
from dygsched.data.partition.nodes import partition_nodes
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.flare import FlareConfig, FlareStrategy, decay_counts
from dygsched.engine.node_partition import HaloAccounting, PartitionHooks, RankLayout
from dygsched.engine.node_partition.overlap import OverlapSchedule
from dygsched.engine.objective import GroupObjective
from dygsched.engine.strategy import Artifacts, RunContext
from dygsched.errors import ConfigError
from dygsched.models.evolvegcn_h import EvolveGCNH
from dygsched.models.evolvegcn_o import EvolveGCNO
from dygsched.models.gat_lstm import GATLSTM
from dygsched.models.gclstm import GCLSTM
from dygsched.models.inherited_states import InheritedStates
from dygsched.models.mpnn_lstm import MPNNLSTM
from dygsched.models.tgcn import TGCN
from dygsched.models.wdgcn import WDGCN
from tests.harness import run_ranks
from tests.typed_runs import default_run

CPU = torch.device("cpu")
MODELS = {
    "tgcn": lambda: TGCN(4, 1, hidden_channels=8, num_layers=2),
    "wdgcn": lambda: WDGCN(4, 1, hidden_channels=8, num_layers=2),
    "mpnn_lstm": lambda: MPNNLSTM(4, 1, hidden_channels=8, num_layers=1, dropout=0.0),
    "evolvegcn_o": lambda: EvolveGCNO(4, 1, hidden_channels=8, num_layers=2),
    "gat_lstm": lambda: GATLSTM(4, 1, hidden_channels=8, num_layers=2, heads=2),
}
WINDOW = 4


def graph():
    return SyntheticSource(num_nodes=90, num_snapshots=10, feature_dim=4, change_rate=0.2, seed=6).load()


def strategy(world_size: int, rank: int, **options) -> FlareStrategy:
    settings = default_run(window=WINDOW, split={"train": 0.7, "val": 0.15}, seed=3, epochs=1)
    flare = FlareStrategy(FlareConfig(chunks=3, partition=options.pop("partition", "metis"), **options))
    flare.setup(RunContext(graph(), settings, rank, world_size, CPU, Artifacts(None, rank == 0)))
    return flare


# ---- pure pieces ----------------------------------------------------------------------------------
def test_decay_schedules_follow_the_formulas():
    assert decay_counts("paper", 128, 6, 0.1) == [87, 59, 40, 27, 18, 12]
    assert decay_counts("artifact", 128, 6, 0.1) == [13, 8, 5, 3, 2, 1]
    for schedule in ("paper", "artifact"):
        for chunks, decayed, alpha in ((16, 6, 0.1), (5, 3, 0.5), (64, 4, 0.9), (3, 6, 0.01)):
            counts = decay_counts(schedule, chunks, decayed, alpha)
            assert len(counts) == decayed and all(1 <= c <= chunks for c in counts)
            assert counts == sorted(counts, reverse=True)  # nested: never increasing with age
    assert decay_counts("paper", 16, 6, 0.0) == [0] * 6  # Recent-Only
    assert decay_counts("paper", 16, 0, 0.1) == []  # K = W: Full-History
    assert decay_counts("paper", 16, 3, 1.0) == [16, 16, 16]
    assert decay_counts([5, 3, 3], 8, 3, 0.1) == [5, 3, 3]
    for bad, message in (
        ([3, 5, 1], "non-increasing"),
        ([3], "one count per decayed block"),
        ("steep", "unknown decay schedule"),
    ):
        with pytest.raises(ConfigError, match=message):
            decay_counts(bad, 8, 3, 0.1)
    with pytest.raises(ConfigError, match=r"lie in \[0, 1\]"):
        decay_counts("paper", 8, 3, 1.5)


def test_shrinking_makes_every_decayed_block_the_naive_gather_of_its_chunks():
    g = graph()
    partition = partition_nodes(g, range(8), 2, 3, "metis", seed=0)
    for rank in (0, 1):
        layout = RankLayout(g, partition, rank)
        rng = np.random.default_rng(rank)
        survival = rng.permutation(3)
        rank_of_chunk = np.argsort(survival)
        owned_rank = rank_of_chunk[partition.chunk[layout.owned]]
        layout.reorder(np.lexsort((np.arange(owned_rank.size), owned_rank)))
        ends = np.concatenate([[0], np.cumsum(np.bincount(owned_rank, minlength=3))])
        for t in range(g.num_snapshots):
            snapshot = g.snapshots[t]
            for kept in range(1, 4):
                block = layout.snapshot(t).prefix(int(ends[kept]))
                # the naive way: gather the nodes of the kept chunks, map their ids, keep the edges inside
                nodes = layout.owned[np.isin(partition.chunk[layout.owned], survival[:kept])]
                nodes = nodes[np.lexsort((nodes, rank_of_chunk[partition.chunk[nodes]]))]
                local = {int(v): i for i, v in enumerate(nodes)}
                edges = sorted(
                    (local[s], local[d], w)
                    for (s, d), w in zip(snapshot.edge_index.t().tolist(), snapshot.edge_weight.tolist())
                    if s in local and d in local
                )
                got = sorted(zip(*block.edge_index.tolist(), block.edge_weight.tolist()))
                assert got == edges
                assert torch.equal(block.x, snapshot.x[torch.from_numpy(nodes)])
                assert torch.equal(block.node_mask, snapshot.node_mask[torch.from_numpy(nodes)])


def test_inheritance_takes_the_flowing_rows_first_and_saved_rows_after():
    model = TGCN(4, 1, hidden_channels=3, num_layers=1)
    saved = {5: [(torch.full((6, 3), 7.0),)]}
    hooks = InheritedStates(model, [5, 6], saved)
    first = hooks.state_in(0, 0, _rows(4), (torch.zeros(4, 3),))
    assert torch.equal(first[0], torch.full((4, 3), 7.0))  # the oldest block: the saved state, cut to its rows
    hooks.state_out(0, 0, (torch.ones(4, 3),))
    assert torch.equal(saved[6][0][0], torch.ones(4, 3))
    saved[6] = [(torch.full((2, 3), 5.0),)]
    flowing = torch.full((4, 3), 2.0, requires_grad=True)
    second = hooks.state_in(0, 1, _rows(8), (flowing,))[0]
    assert torch.equal(second[:4], flowing) and second.grad_fn is not None  # the gradient flows through the first rows
    assert torch.equal(second[4:], torch.zeros(4, 3))  # the saved state is too short: zeros


def _rows(n: int):
    from dygsched.data.temporal_graph import Snapshot

    return Snapshot(
        torch.zeros((2, 0), dtype=torch.long), torch.zeros(0), torch.zeros(n, 4), torch.zeros(n), torch.ones(n, dtype=torch.bool)
    )


def test_full_window_without_inheritance_is_the_plain_group_for_any_chunk_order():
    group = SnapshotGroup(0, 1, 1 + WINDOW)
    for name, make in MODELS.items():
        torch.manual_seed(0)
        reference_model = make()
        reference = GroupObjective(reference_model, graph().task)
        expected = reference(group.snapshots(graph()))
        expected.backward()
        for epoch in (0, 5):
            flare = strategy(1, 0, full=WINDOW, inherit=False, random_split=False)
            torch.manual_seed(0)
            objective = flare.objective(make())
            flare.start_epoch(epoch)
            loss = flare.window_loss(group, None)
            loss.backward()
            assert torch.allclose(loss, expected, atol=1e-5), name
            for (key, p), q in zip(objective.named_parameters(), reference.parameters()):
                assert torch.allclose(p.grad, q.grad, atol=1e-5), (name, key)


def test_a_model_that_cannot_be_partitioned_is_refused():
    with pytest.raises(ConfigError, match=r"EvolveGCNHLayer cannot run on a part of them \(its top-k ranks every node"):
        FlareStrategy(FlareConfig()).check_model(EvolveGCNH(4, 1, hidden_channels=4, num_layers=1))
    with pytest.raises(ConfigError, match=r"GCLSTMLayer cannot run on a part of them \(its graph convolution reads every node's"):
        FlareStrategy(FlareConfig()).check_model(GCLSTM(4, 1, hidden_channels=4, num_layers=1))


# ---- P ranks ----------------------------------------------------------------------------------------
def _ranks(rank: int, world_size: int, out: str) -> None:
    group = SnapshotGroup(0, 2, 2 + WINDOW)
    results = {}
    for name, make in MODELS.items():
        flare = strategy(world_size, rank, full=WINDOW, inherit=False, random_split=False)
        torch.manual_seed(0)
        objective = flare.objective(make())
        flare.start_epoch(1)
        loss = flare.window_loss(group, None)
        loss.backward()
        total = loss.detach().clone()
        dist.all_reduce(total)
        grads = [p.grad.clone() for p in objective.parameters()]
        for grad in grads:
            dist.all_reduce(grad)
        with torch.no_grad():  # this rank's predictions, by node id
            snapshots, blocks, _ = flare.blocks(group, full_only=True)
            h, _ = flare.model.unroll(snapshots, hooks=PartitionHooks(blocks))
            rows = torch.from_numpy(flare.layout.owned[flare.layout.order])
        gathered = [None] * world_size
        dist.all_gather_object(gathered, (rows, flare.model.readout(h)))
        results[name] = {"loss": float(total), "grads": grads, "predictions": gathered}
    # decayed blocks exchange nothing: K = 1 moves what the last snapshot alone moves
    flare = strategy(world_size, rank, full=1, inherit=False, random_split=False)
    torch.manual_seed(0)
    flare.objective(MODELS["tgcn"]())
    flare.start_epoch(0)
    window, last = HaloAccounting(), HaloAccounting()
    flare.window_loss(group, None, window).backward()
    alone = strategy(world_size, rank, full=1, inherit=False, random_split=False)
    alone.window = 1
    alone.counts = []
    alone.objective(MODELS["tgcn"]())
    alone.start_epoch(0)
    alone.window_loss(SnapshotGroup(0, group.stop - 1, group.stop), None, last).backward()
    results["bytes"] = (window.forward_bytes, window.backward_bytes, last.forward_bytes, last.backward_bytes)
    # any interleaving of the overlapped spatial passes gives the same window
    interleaved = {}
    for mode, name in ((m, n) for n in ("tgcn", "mpnn_lstm") for m in ("none", "rr", "mlp", "shuffled")):
        flare = strategy(
            world_size, rank, full=2, inherit=False, random_split=False, overlap="rr" if mode == "shuffled" else mode
        )
        if mode == "shuffled":
            flare.overlap_schedule = Shuffled()
        if mode == "mlp":  # a fitted predictor, so the order is its own
            assert flare.overlap_schedule is not None
            flare.overlap_schedule.log.add([1.0, 0.0, 4.0, 8.0, 5.0, 3.0], 0.01, 0.02)
            flare.overlap_schedule.refit(seed=1)
        torch.manual_seed(0)
        objective = flare.objective(MODELS[name]())
        flare.start_epoch(0)
        accounting = HaloAccounting()
        loss = flare.window_loss(group, None, accounting)
        loss.backward()
        interleaved[(mode, name)] = (float(loss), [p.grad.clone() for p in objective.parameters()], accounting.forward_bytes)
    results["interleaved"] = interleaved
    gathered = [None] * world_size
    dist.all_gather_object(gathered, interleaved)
    results["interleaved_all"] = gathered
    if rank == 0:
        torch.save(results, out)


class Shuffled(OverlapSchedule):
    """Full blocks in a shuffled order (the same on every rank): an interleaving of its own."""

    def __init__(self):
        super().__init__("rr")

    def order(self, tasks):
        ids = [t for t, _ in tasks]
        return [ids[i] for i in torch.randperm(len(ids), generator=torch.Generator().manual_seed(len(ids))).tolist()]


# three ranks in `make test-slow`: two already cut the blocks across ranks
@pytest.fixture(scope="module", params=[2, pytest.param(3, marks=pytest.mark.slow)], ids=["2ranks", "3ranks"])
def partitioned(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"flare{request.param}") / "results.pt"
    run_ranks(_ranks, (request.param, str(out)), nprocs=request.param)
    return torch.load(out, weights_only=False)


@pytest.mark.parametrize("name", list(MODELS))
def test_full_blocks_on_several_ranks_equal_one_process(partitioned, name):
    group = SnapshotGroup(0, 2, 2 + WINDOW)
    torch.manual_seed(0)
    model = MODELS[name]()
    reference = GroupObjective(model, graph().task)
    expected = reference(group.snapshots(graph()))
    expected.backward()
    result = partitioned[name]
    assert result["loss"] == pytest.approx(expected.item(), abs=1e-5)
    for got, p in zip(result["grads"], reference.parameters()):
        assert torch.allclose(got, p.grad, atol=1e-5), name
    with torch.no_grad():
        full = model(group.snapshots(graph()))
    for rows, predictions in result["predictions"]:
        assert torch.allclose(predictions, full[rows], atol=1e-5), name


def test_any_interleaving_of_the_overlapped_passes_gives_the_same_window(partitioned):
    for interleaved in partitioned["interleaved_all"]:  # every rank's share
        for name in ("tgcn", "mpnn_lstm"):
            loss, grads, moved = interleaved[("none", name)]
            assert sum(moved.values()) > 0
            for mode in ("rr", "mlp", "shuffled"):
                other_loss, other_grads, other_moved = interleaved[(mode, name)]
                assert other_loss == pytest.approx(loss, abs=1e-6), (mode, name)
                assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(grads, other_grads)), (mode, name)
                assert other_moved == moved


def test_decayed_blocks_move_no_halo_bytes(partitioned):
    window_forward, window_backward, last_forward, last_backward = partitioned["bytes"]
    assert window_forward == last_forward and window_backward == last_backward
    assert sum(last_forward.values()) > 0


def test_autotuning_moves_to_a_better_neighbour_only_and_keeps_the_weights():
    from dygsched.engine.gradient_sync import GradientSync
    from dygsched.engine.strategy import Epoch

    flare = strategy(1, 0, full=2, alpha=0.3, autotune_every=1, autotune_windows=2)
    torch.manual_seed(0)
    objective = flare.objective(MODELS["tgcn"]())
    flare.start_epoch(0)
    optimizer = torch.optim.Adam(objective.parameters(), lr=0.01)
    epoch = Epoch(0, objective, optimizer, GradientSync(objective, 1), CPU, 0, 1, lambda stats: None, lambda *row: None)
    before = {k: v.clone() for k, v in objective.state_dict().items()}
    assert flare.neighbours() == [(2, 0.3), (1, 0.3), (3, 0.3), (2, 0.2), (2, 0.4)]
    landscape = {(2, 0.3): 1.0, (1, 0.3): 1.5, (3, 0.3): 0.7, (2, 0.2): 0.9, (2, 0.4): 0.8}
    flare.evaluate = lambda phase: {"loss": landscape[(flare.full, flare.alpha)]}
    moved = flare.autotune(epoch)
    assert (flare.full, flare.alpha) == (3, 0.3) and moved["autotune_moved"] == 1.0 and moved["autotune_val_loss"] == 0.7
    assert flare.counts == decay_counts("paper", 3, WINDOW - 3, 0.3)
    assert all(torch.equal(objective.state_dict()[k], v) for k, v in before.items())  # the trials started from a copy
    landscape.update({(3, 0.3): 0.5, (2, 0.3): 0.9, (4, 0.3): 0.6, (3, 0.2): 0.55, (3, 0.4): 0.51})
    assert flare.autotune(epoch)["autotune_moved"] == 0.0 and (flare.full, flare.alpha) == (3, 0.3)  # nothing better: stay


def test_counting_what_autograd_saves_keeps_no_graph_alive_that_no_backward_ran_through():
    """A block output the loss does not read (EvolveGCN's earlier blocks under loss_on=last) saved its
    own output for its backward; counted by a hook that kept the tensor itself, it stayed alive
    through its grad_fn forever (a cycle through C++), 1.2 GB more per epoch on the tables' graph."""
    import gc
    import weakref

    from dygsched.engine.flare.memory import SavedTensors

    x = torch.randn(50, 4, requires_grad=True)
    with SavedTensors() as kept:
        unread = torch.relu(x @ torch.randn(4, 4))  # relu saves its output for the backward
        loss = (x * 2).sum()
    gone = weakref.ref(unread)
    loss.backward()
    del unread
    gc.collect()
    assert gone() is None and kept.bytes >= 50 * 4 * 4
