"""A training step reads nothing back from the device: proved on CPU with the counter that plays a
device (``dygsched.engine.host_syncs.DeviceReads``), on each strategy family's real epoch.

The counter follows what a CUDA run would hold on the GPU (the parameters, what is moved or made
there, what is computed from them) and counts the reads of it on the host. Each family trains two
epochs in this process (one rank) with ``metrics.count_syncs=true``; the second epoch is the steady
one. The losses stay on the device (read once per epoch by the worker), FlareDTDG counts its blocks'
nodes on the host, the node-memory step finds its neighbour slots, distinct (row, time) pairs and
winning writes on the host. What is left is listed by site (``LEFT``): a boolean node mask in the
task's loss and PyG's self-loop insertion inside ``gcn_norm``, both outside the engine's loops.
A CPU run takes shortcuts a GPU run does not (the snapshot-group executors read host snapshots in
place; REAL's kernels run on host diff maps). REAL's device path is played here all the same: its
chains moved to the device (copies the counter follows) and their graphs rebuilt there, and the
branches that key on a tensor being on a GPU taking the GPU's way (``apply_diff``'s merge, the
kernels' products handed over coalesced). There its GCN kernels read nothing back: the sizes of
their node and edge sets are found on the host with the diff maps and travel with them. A GPU run
counts what its own path does (``make bench-gpu``: ``cuda_syncs_per_step``).
"""

from __future__ import annotations

import signal

import pytest
import torch

from dygsched.data import diffmap
from dygsched.engine import host_syncs
from dygsched.engine.host_syncs import DeviceReads, counting_syncs
from dygsched.engine.snapshot_groups import reuse
from dygsched.engine.strategy import IterationStats
from tests.conftest import TINY_SYNTHETIC

TINY_STREAM = [
    "dataset=bipartite",
    "dataset.num_users=30",
    "dataset.num_items=10",
    "dataset.num_events=500",
    "model=tgn",
    "model.memory_dim=8",
    "model.time_dim=4",
    "model.neighbours=3",
    "model.dropout=0.0",
    "progress=false",
]
FAMILIES = {
    "psg": [*TINY_SYNTHETIC, "sched=psg"],
    "blad": [*TINY_SYNTHETIC, "sched=blad"],
    "esdg": [*TINY_SYNTHETIC, "sched=esdg"],
    "flare": [*TINY_SYNTHETIC, "sched=flare", "sched.chunks=4", "sched.loss_on=all"],
    "distdy": [*TINY_SYNTHETIC, "model=sage_temporal", "sched=distdy", "sched.fanouts=[3]", "sched.batch=32"],
    "single": [*TINY_STREAM, "sched=single", "sched.batch_size=70"],
    "sven": [*TINY_STREAM, "sched=sven", "sched.batch_size=35", "sched.micro_batches=2"],
}
# the reads a step still makes, by site: not the engine's loops (see the module docstring)
LEFT = {
    "__getitem__ in dygsched.engine.objective.node_losses",
    "__getitem__ in torch_geometric.utils.loop.add_remaining_self_loops",
}


def train_counting(tmp_path, monkeypatch, overrides: list[str]) -> list[DeviceReads]:
    """Two epochs of a one-rank run in this process, counting; the counter of each epoch."""
    from dygsched.launch.app import run
    from dygsched.launch.compose import compose_run
    from dygsched.launch.local import free_port

    env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    counters: list[DeviceReads] = []
    made = DeviceReads.__init__

    def keep(self: DeviceReads, *args, **kwargs) -> None:
        made(self, *args, **kwargs)
        counters.append(self)

    monkeypatch.setattr(DeviceReads, "__init__", keep)
    previous = signal.getsignal(signal.SIGTERM)  # a rank answers SIGTERM by stopping; pytest keeps its own
    try:
        typed = compose_run(
            [*overrides, "world_size=1", "epochs=2", "checkpoint=false", "metrics.count_syncs=true"]
            + [f"results_dir={tmp_path / 'results'}", "run_id=counted"]
        )
        summary = run(typed)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert summary["status"] == "ok"
    assert len(counters) == 2
    return counters


SLOW = {"blad", "esdg", "distdy"}  # the same executor contract as psg, or the same layer as flare


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.slow) if f in SLOW else f for f in sorted(FAMILIES)])
def test_a_steady_step_reads_nothing_back_but_the_listed_sites(tmp_path, monkeypatch, family):
    steady = train_counting(tmp_path, monkeypatch, FAMILIES[family])[-1]
    assert set(steady.where) <= LEFT, steady.where
    scalar_reads = {site: n for site, n in steady.where.items() if site.split(" in ")[0] in ("__float__", "item", "tolist")}
    assert not scalar_reads, scalar_reads  # no loss, count or size read per step
    if family != "flare":  # the node-partitioned GCN normalises on the device; the others read nothing
        assert steady.reads == 0, steady.where


# REAL with its reuse engine on the GCN-family models; the steady step's reads per step on its device
# path, played on CPU, were 56 for TGCN before the kernels took their sets' sizes from the host
# (node sets, out-edges and products sized on the device; 33 by this counter before it counted
# repeat_interleave and products of uncoalesced matrices, which a GPU waits on too): now only the
# task loss's node mask, once per group (and MPNN-LSTM's second convolution, PyG's, above the reused one).
REAL = [*TINY_SYNTHETIC, "sched=real", "sched.timeline.profile_epochs=0", "sched.executor.reuse_path=diff"]
REAL_MODELS = {"tgcn": [], "wdgcn": ["model=wdgcn"], "mpnn_lstm": ["model=mpnn_lstm"], "evolvegcn_o": ["model=evolvegcn_o"]}
REAL_CEILING = 4.0  # TGCN's reads per step: the loss mask of each of the step's groups (4 on this graph)


def play_the_gpu_path(monkeypatch) -> None:
    """REAL's device path on CPU: chains moved and rebuilt, the GPU's branches taken."""
    monkeypatch.setattr(reuse, "moves_chains", lambda device: True)
    monkeypatch.setattr(diffmap, "on_gpu", lambda tensor: True)


def steady_reads_per_step(tmp_path) -> float:
    import pandas as pd

    metrics = pd.read_parquet(tmp_path / "results" / "counted" / "metrics.parquet")
    rows = metrics[(metrics.metric == "device_reads_per_step") & (metrics.epoch == 1)]
    return float(rows.value.iloc[0])


@pytest.mark.parametrize("model", [m if m == "tgcn" else pytest.param(m, marks=pytest.mark.slow) for m in REAL_MODELS])
def test_reals_steady_step_on_its_device_path_reads_back_only_the_listed_sites(tmp_path, monkeypatch, model):
    play_the_gpu_path(monkeypatch)
    steady = train_counting(tmp_path, monkeypatch, [*REAL, *REAL_MODELS[model]])[-1]
    assert set(steady.where) <= LEFT, steady.where  # nothing in the reuse engine, its kernels or the diff maps
    if model == "tgcn":
        assert set(steady.where) == {"__getitem__ in dygsched.engine.objective.node_losses"}, steady.where
        assert steady_reads_per_step(tmp_path) == REAL_CEILING


@pytest.mark.slow  # a second REAL run
def test_the_counter_sees_reals_kernels_read_their_sets_back_without_the_hosts_sizes(tmp_path, monkeypatch):
    """The check above can fail: without the sizes the host found, the same path reads each step's
    node sets, out-edges and product entries back (as it did before)."""
    play_the_gpu_path(monkeypatch)
    monkeypatch.setattr(reuse, "with_step_sizes", lambda graph, diffs, layer: diffs.diffs)
    steady = train_counting(tmp_path, monkeypatch, REAL)[-1]
    kernels = {site.split(" in ")[1] for site in steady.where if "incremental_kernels" in site or "diffmap" in site}
    assert {
        "dygsched.models.incremental_kernels.spmm.node_set",
        "dygsched.data.diffmap.out_edge_positions",
        "dygsched.models.incremental_kernels.spmm.spmm",
    } <= kernels, steady.where
    assert steady_reads_per_step(tmp_path) > 5 * REAL_CEILING


def test_the_counter_sees_a_loss_read_every_step(tmp_path, monkeypatch):
    """The check above can fail: a step that reads its loss (as the engine did) is counted, once per step."""

    def read_every_step(self: IterationStats, loss: torch.Tensor, scale: float = 1.0) -> None:
        self.loss_sum = self.loss_sum + float(loss.detach()) / scale

    monkeypatch.setattr(IterationStats, "add_loss", read_every_step)
    steady = train_counting(tmp_path, monkeypatch, FAMILIES["psg"])[-1]
    assert steady.where and set(steady.where) == {"__float__ in tests.engine.test_host_syncs.read_every_step"}, steady.where


def test_the_counter_follows_device_tensors_and_not_host_ones():
    device = torch.device("cpu")
    layer = torch.nn.Linear(3, 1)
    host = torch.randn(4, 3)
    with DeviceReads(device, list(layer.parameters())) as reads:
        out = layer(host)
        float(out.detach().sum())  # a read of a value the device computed
        out[(out > 0).squeeze(1)]  # a boolean mask made on the device
        torch.unique(out)
        host[torch.tensor([True, False, True, False])]  # host mask, host tensor: no device involved
        float(host.sum())
        moved = host.to(device)  # a copy on the device, as on a GPU
        assert moved is not host
        float(moved.sum())
        torch.full((2,), 1.0, device=host.device).tolist()  # made where a host tensor is: the host
        torch.zeros(2, device=out.device).tolist()  # made where a device tensor is: the device
        int(out.shape[0]), out.numel()  # sizes are known on the host
        counts = torch.tensor([1, 2]).to(device)
        torch.arange(2, device=device).repeat_interleave(counts)  # its size is the device's sum
        torch.repeat_interleave(torch.arange(2, device=device), counts, output_size=3)  # the host gave it
        mark = torch.zeros(4, dtype=torch.bool, device=device)
        mark[torch.tensor([0, 2])] = out[:2, 0] > 0  # a boolean value written, nothing selected by it
        entries = torch.tensor([[0, 1], [1, 0]]).to(device)
        loose = torch.sparse_coo_tensor(entries, torch.ones(2, device=device), (2, 4), check_invariants=False)
        torch.sparse.mm(loose, out)  # a GPU coalesces the matrix first, reading its entries back
        tight = torch.sparse_coo_tensor(entries, torch.ones(2, device=device), (2, 4), is_coalesced=True, check_invariants=False)
        torch.sparse.mm(tight, out)  # handed over coalesced: nothing to read
    assert reads.reads == 7, reads.where
    assert {"repeat_interleave", "_sparse_mm"} <= {site.split(" in ")[0] for site in reads.where}


def test_counting_is_off_by_default_and_leaves_no_rows():
    with counting_syncs(False, torch.device("cpu")) as count:
        torch.zeros(1).sum().item()
    assert count.metrics(steps=3) == []
    with counting_syncs(True, torch.device("cpu"), torch.nn.Linear(2, 1)) as count:
        pass
    assert count.metrics(steps=4) == [("device_reads", 0.0), ("device_reads_per_step", 0.0)]
    assert host_syncs.SyncCount("cuda_syncs").metrics(steps=0) == [("cuda_syncs", 0.0)]
