"""The one-process TGN reference against a TGN built from PyG's own temporal modules, side by side.

    python scripts/bench_tgn_pyg.py                    # Enron, batch 600, 3 epochs each
    python scripts/bench_tgn_pyg.py --dataset sfhh_events --epochs 2

PyG's side is the loop PyG documents for TGN, built here from its public modules: ``TGNMemory``
(GRU memory, ``IdentityMessage``, ``LastAggregator``), ``LastNeighborLoader`` (10 most recent
neighbours), one ``TransformerConv`` layer with 2 heads over relative time encodings, a two-layer
link predictor, one random negative per event, Adam. dygsched's side is ``dygsched run
sched=single model=tgn`` with the same widths (memory and time 100, 10 neighbours, 2 heads,
batch 600). Both train on the same training events; the figure is the median training epoch time
(evaluation excluded), and the ratio dygsched / PyG. The two are not the same model to the last
detail (PyG's memory reads the aggregated raw messages, dygsched's TGL's mails), so losses are
printed for orientation only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn


def stream_of(dataset: str):
    from omegaconf import OmegaConf

    from dygsched.data.loading import load_data
    from dygsched.launch.hydra_app import compose_config

    cfg = OmegaConf.to_container(compose_config([f"dataset={dataset}"]), resolve=True)
    stream = load_data(cfg["dataset"])
    return stream, stream.split(cfg["split"]["train"], cfg["split"]["val"]).train


class Embedding(nn.Module):
    def __init__(self, memory_dim: int, msg_dim: int, time_encoder: nn.Module, heads: int) -> None:
        from torch_geometric.nn import TransformerConv

        super().__init__()
        self.time_encoder = time_encoder
        self.conv = TransformerConv(memory_dim, memory_dim // heads, heads=heads, dropout=0.1, edge_dim=msg_dim + time_encoder.out_channels)

    def forward(self, x, last_update, edge_index, t, msg):
        relative = self.time_encoder((last_update[edge_index[0]] - t).to(x.dtype))
        return self.conv(x, edge_index, torch.cat([relative, msg], dim=-1))


class Predictor(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.src, self.dst, self.out = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, 1)

    def forward(self, z_src, z_dst):
        return self.out((self.src(z_src) + self.dst(z_dst)).relu()).squeeze(-1)


def pyg_epochs(stream, train: tuple[int, int], args: argparse.Namespace) -> tuple[list[float], list[float]]:
    from torch_geometric.nn import TGNMemory
    from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator, LastNeighborLoader

    torch.manual_seed(args.seed)
    n, d = stream.num_nodes, args.memory_dim
    t = (stream.t - stream.t[0]).to(torch.long)
    msg = stream.edge_matrix() if stream.edge_dim else torch.zeros(stream.num_events, 1)
    memory = TGNMemory(n, msg.shape[1], d, d, message_module=IdentityMessage(msg.shape[1], d, d), aggregator_module=LastAggregator())
    gnn = Embedding(d, msg.shape[1], memory.time_enc, args.heads)
    predictor = Predictor(d)
    params = {*memory.parameters(), *gnn.parameters(), *predictor.parameters()}
    optimizer = torch.optim.Adam(params, lr=args.lr)
    loader = LastNeighborLoader(n, size=args.neighbours)
    assoc = torch.empty(n, dtype=torch.long)
    times, losses = [], []
    for _ in range(args.epochs):
        memory.train(), gnn.train(), predictor.train()
        memory.reset_state()
        loader.reset_state()
        start, total = time.perf_counter(), 0.0
        for a in range(train[0], train[1], args.batch):
            b = min(a + args.batch, train[1])
            src, dst, bt, bmsg = stream.src[a:b], stream.dst[a:b], t[a:b], msg[a:b]
            neg = torch.randint(0, n, (b - a,))
            optimizer.zero_grad()
            n_id, edge_index, e_id = loader(torch.cat([src, dst, neg]).unique())
            assoc[n_id] = torch.arange(n_id.numel())
            z, last_update = memory(n_id)
            z = gnn(z, last_update, edge_index, t[e_id], msg[e_id])
            positive = predictor(z[assoc[src]], z[assoc[dst]])
            negative = predictor(z[assoc[src]], z[assoc[neg]])
            loss = F.binary_cross_entropy_with_logits(positive, torch.ones_like(positive)) + F.binary_cross_entropy_with_logits(
                negative, torch.zeros_like(negative)
            )
            memory.update_state(src, dst, bt, bmsg)
            loader.insert(src, dst)
            loss.backward()
            optimizer.step()
            memory.detach()
            total += float(loss.detach()) * (b - a)
        times.append(time.perf_counter() - start)
        losses.append(total / (train[1] - train[0]))
    return times, losses


def dygsched_epochs(args: argparse.Namespace) -> tuple[list[float], list[float]]:

    with tempfile.TemporaryDirectory() as results:
        overrides = [
            f"dataset={args.dataset}", "model=tgn", f"model.memory_dim={args.memory_dim}", f"model.time_dim={args.memory_dim}",
            f"model.neighbours={args.neighbours}", f"model.heads={args.heads}", "sched=single", f"sched.batch_size={args.batch}",
            "world_size=1", f"epochs={args.epochs}", f"optim.lr={args.lr}", f"seed={args.seed}", "progress=false",
            "checkpoint=false", "metrics.count_flops=false", f"results_dir={results}", "run_id=bench",
        ]  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"bench_tgn_pyg: the dygsched run failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
        metrics = pd.read_parquet(Path(results) / "bench" / "metrics.parquet")
    epoch = metrics[(metrics.iteration == -1) & (metrics.phase == "train")]
    times = epoch[epoch.metric == "epoch_time_s"].sort_values("epoch").value.tolist()
    train = metrics[(metrics.phase == "train") & (metrics.metric == "loss") & (metrics.iteration >= 0)]
    return times, train.groupby("epoch").value.mean().tolist()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="events")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=600)
    parser.add_argument("--memory-dim", type=int, default=100)
    parser.add_argument("--neighbours", type=int, default=10)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.0001)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the table as CSV here")
    args = parser.parse_args(argv)
    stream, train = stream_of(args.dataset)
    pyg_times, pyg_losses = pyg_epochs(stream, train, args)
    ours_times, ours_losses = dygsched_epochs(args)
    pyg, ours = statistics.median(pyg_times), statistics.median(ours_times)
    print(f"{args.dataset}: {train[1] - train[0]} training events, batch {args.batch}, TGN d={args.memory_dim}, {args.neighbours} neighbours")
    print(f"  PyG modules   epoch times {[round(x, 2) for x in pyg_times]} s, median {pyg:.2f} s; train loss {[round(x, 3) for x in pyg_losses]}")
    print(f"  dygsched      epoch times {[round(x, 2) for x in ours_times]} s, median {ours:.2f} s; train loss {[round(x, 3) for x in ours_losses]}")
    print(f"  ratio dygsched / PyG: {ours / pyg:.2f}x (target: at most 1.0x)")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            {"implementation": "pyg_modules", "epoch_s": pyg, "final_train_loss": pyg_losses[-1]},
            {"implementation": "dygsched", "epoch_s": ours, "final_train_loss": ours_losses[-1]},
        ]
        table = pd.DataFrame(rows).assign(dataset=args.dataset, batch=args.batch, epochs=args.epochs, ratio=ours / pyg)
        table.to_csv(args.out, index=False)
        print(f"written: {args.out}")


if __name__ == "__main__":
    main()
