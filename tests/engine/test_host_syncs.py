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
place; REAL's kernels run on host diff maps), so those paths are counted on a GPU only
(``make bench-gpu``: ``cuda_syncs_per_step``).
"""

from __future__ import annotations

import signal

import pytest
import torch

from dygsched.engine import host_syncs
from dygsched.engine.host_syncs import DeviceReads, counting_syncs
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
    assert reads.reads == 5, reads.where


def test_counting_is_off_by_default_and_leaves_no_rows():
    with counting_syncs(False, torch.device("cpu")) as count:
        torch.zeros(1).sum().item()
    assert count.metrics(steps=3) == []
    with counting_syncs(True, torch.device("cpu"), torch.nn.Linear(2, 1)) as count:
        pass
    assert count.metrics(steps=4) == [("device_reads", 0.0), ("device_reads_per_step", 0.0)]
    assert host_syncs.SyncCount("cuda_syncs").metrics(steps=0) == [("cuda_syncs", 0.0)]
