"""What bench-advise-<paper> asks of each paper: its hardware in its own words (the GPU, the GPU count,
the nodes and the link, as rows of ``dygsched/advise/hardware.csv``), the strategies it compares (its
method and baselines as this project implements them), the data at full and smoke size, and the
cells of its published figures each ratio is compared with (read from ``published/<paper>.csv``
through the rows of the target that reproduces that table: each number is written once).

Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from dygsched.errors import DygschedError

ADVISE_PAPERS_DIR = "advise_papers"
EPOCH, MEMORY, COMMUNICATION = "epoch_time_s", "peak_memory_bytes", "communication_s"
METRIC_WORDS = {EPOCH: "epoch time", MEMORY: "peak memory per GPU", COMMUNICATION: "communication time"}
TIME_TERMS = {"compute": "compute_s", "communication": "communication_s", "optimizer steps": "overhead_s"}


@dataclass(frozen=True)
class Cell:
    """One published number: its table or figure (``ref``), row, column and dataset, as in the CSV."""

    ref: str
    row: str
    column: str
    dataset: str = ""


@dataclass(frozen=True)
class Contender:
    """One strategy the paper compares, by the paper's ``label``: the overrides that make it here
    (``sched=...`` and its settings), on ``gpus`` GPUs (``None``: the paper's count)."""

    label: str
    overrides: tuple[str, ...]
    gpus: int | None = None


@dataclass(frozen=True)
class Ratio:
    """``baseline``'s ``metric`` over ``method``'s. The paper's value is the sum of the ``numerator``
    cells over the sum of the ``denominator`` cells (1 when there is none); a printed saving
    (``saving``: % of the baseline's time) is turned into the same ratio, 1 / (1 - saving)."""

    baseline: str
    method: str
    metric: str
    numerator: tuple[Cell, ...]
    denominator: tuple[Cell, ...] = ()
    saving: bool = False

    @property
    def label(self) -> str:
        return f"{self.baseline} over {self.method}, {METRIC_WORDS[self.metric]}"

    def paper(self, published: pd.DataFrame) -> float:
        top = sum(cell_value(published, cell) for cell in self.numerator)
        if self.saving:
            top = 1 / (1 - top / 100)
        return top / (sum(cell_value(published, cell) for cell in self.denominator) if self.denominator else 1.0)


@dataclass(frozen=True)
class PaperSetting:
    """One paper's comparison: its hardware (``hardware`` quotes it), the data (at full size and at
    smoke size), the strategies, its method, the figure the strategies are ranked by and its ratios."""

    paper: str  # the report's section
    hardware: str  # the paper's own words
    gpu: str  # a row of dygsched/advise/hardware.csv
    gpus: int
    nodes: int
    link: str  # a row of the hardware table or GB/s
    link_note: str
    data: tuple[str, ...]
    smoke_data: tuple[str, ...]
    contenders: tuple[Contender, ...]
    method: str
    metric: str
    ratios: tuple[Ratio, ...]
    reads: tuple[str, ...]  # the targets whose published rows hold the cells

    @property
    def predictions_csv(self) -> str:
        return f"{ADVISE_PAPERS_DIR}/{self.paper}_predictions.csv"

    @property
    def ratios_csv(self) -> str:
        return f"{ADVISE_PAPERS_DIR}/{self.paper}_ratios.csv"


def cell_value(published: pd.DataFrame, cell: Cell) -> float:
    """One published number (exactly one row must match: a typo is an error, not a silent NaN)."""
    rows = published[
        (published.ref == cell.ref)
        & (published.row == cell.row)
        & (published.column == cell.column)
        & (published.dataset == cell.dataset)
    ]
    if len(rows) != 1:
        raise DygschedError(f"published: {len(rows)} rows for {cell} (expected exactly one)")
    return float(rows.value.iloc[0])


def _vs(ref: str, row: str, column: str, dataset: str = "") -> tuple[Cell, ...]:
    return (Cell(ref, row, column, dataset),)


def _table4(row: str) -> tuple[Cell, ...]:
    return _vs("Table 4", row, "TGCN", "Arxiv")


def _table2(row: str) -> tuple[Cell, ...]:
    return tuple(Cell("Table 2", row, column, "LASTFM") for column in ("A2A/AG Comm. (ms)", "AR Comm. (ms)", "Comp. (ms)"))


FLARE = ("+flare_variant=flare",)
PAPERS: dict[str, PaperSetting] = {
    "dygnex": PaperSetting(
        paper="dygnex",
        hardware='section 5.1: "We conduct our experiments using four A100 80GB SXM4 GPUs, connected via PCIe with a '
        'peak bandwidth of 32GB."',
        gpu="a100-80gb",
        gpus=4,
        nodes=1,
        link="pcie",
        link_note="PCIe 4.0 x16, 32 GB/s each way: the paper's figure",
        data=("+experiment=epoch_time", "model=tgcn"),
        smoke_data=("+experiment=epoch_time", "model=tgcn", "+smoke=snapshots"),
        contenders=tuple(
            Contender(label, (f"sched={sched}",))
            for sched, label in (
                ("psg", "PSG"),
                ("esdg", "ESDG"),
                ("blad", "BLAD"),
                ("dygnex_g", "DYGNEX-G"),
                ("dygnex_l", "DYGNEX-L"),
            )
        ),
        method="DYGNEX-L",
        metric=EPOCH,
        ratios=tuple(
            Ratio(label, "DYGNEX-L", EPOCH, _table4(label), _table4("DYGNEX-L")) for label in ("PSG", "ESDG", "BLAD", "DYGNEX-G")
        ),
        reads=("table-epoch-time",),
    ),
    "real": PaperSetting(
        paper="real",
        hardware='section 7.1: "Cluster A contains four servers, each equipped with [...] eight NVIDIA H200 GPUs (141 GB '
        'HBM3e per GPU) interconnected via full-bandwidth NVLink (900 GB/s)"; figure 8 is one server (8 GPUs).',
        gpu="h200",
        gpus=8,
        nodes=1,
        link="nvlink4",
        link_note="fourth-generation NVLink, 900 GB/s both ways (450 GB/s each way)",
        data=("+experiment=ablation", "model=tgcn"),
        smoke_data=("+experiment=ablation", "model=tgcn", "+smoke=snapshots", "dataset.num_snapshots=24"),  # 8 ranks' groups
        contenders=(
            Contender("REAL-L", ("sched=ilp",)),
            Contender("REAL-G", ("sched=real_g_paper",)),
            Contender("BLAD", ("sched=blad",)),
            Contender("ESDG", ("sched=esdg",)),
        ),
        method="REAL-L",
        metric=EPOCH,
        ratios=(
            Ratio("ESDG", "REAL-L", EPOCH, _vs("Figure 8 (text)", "REAL-L vs ESDG", "speedup one-layer avg")),
            Ratio("BLAD", "REAL-L", EPOCH, _vs("Figure 8 (text)", "REAL-L vs BLAD", "speedup one-layer avg")),
            Ratio(  # (ESDG / REAL-L) / (ESDG / REAL-G)
                "REAL-G",
                "REAL-L",
                EPOCH,
                _vs("Figure 8 (text)", "REAL-L vs ESDG", "speedup one-layer avg"),
                _vs("Figure 8 (text)", "REAL-G vs ESDG", "speedup one-layer avg"),
            ),
        ),
        reads=("bench-reuse",),
    ),
    "flare": PaperSetting(
        paper="flare",
        hardware='section 4.1: "four nodes, each with [...] four 48 GB NVIDIA A40 GPUs. We utilize PCIe 4.0 for intra-node '
        'and a 200 Gbps InfiniBand network for inter-node communication"; table 5 prints no GPU count, its soc-flickr '
        "figure (2.2 GB) is figure 7's at 4 GPUs (2.3 GB): one node.",
        gpu="a40",
        gpus=4,
        nodes=1,
        link="pcie",
        link_note="PCIe 4.0 x16 inside a node, 32 GB/s each way",
        data=("+experiment=flare", "model=tgcn"),
        smoke_data=("+experiment=flare", "model=tgcn", "+smoke=flare", "dataset.num_snapshots=24"),  # 14: too few windows
        contenders=(
            Contender("FlareDTDG", FLARE),
            Contender("ESDG", ("sched=esdg", "~sched.chunks")),  # the experiment's FlareDTDG setting, not ESDG's
            Contender("Full-History", ("+flare_variant=full_history",)),
            Contender("FlareDTDG on 1 GPU", FLARE, gpus=1),
        ),
        method="FlareDTDG",
        metric=MEMORY,
        ratios=(
            Ratio(
                "ESDG",
                "FlareDTDG",
                MEMORY,
                _vs("Table 5", "T-GCN", "ESDG", "soc-flickr"),
                _vs("Table 5", "T-GCN", "FlareDTDG", "soc-flickr"),
            ),
            Ratio(
                "Full-History",
                "FlareDTDG",
                MEMORY,
                _vs("Table 7", "T-GCN", "Full-History", "soc-flickr"),
                _vs("Table 7", "T-GCN", "Ours", "soc-flickr"),
            ),
            Ratio(
                "FlareDTDG on 1 GPU",
                "FlareDTDG",
                MEMORY,
                _vs("Figure 7 (text)", "FlareDTDG per-GPU memory", "1 GPU", "soc-flickr"),
                _vs("Figure 7 (text)", "FlareDTDG per-GPU memory", "4 GPUs", "soc-flickr"),
            ),
            Ratio("FlareDTDG on 1 GPU", "FlareDTDG", EPOCH, _vs("Figure 7 (text)", "FlareDTDG 1 to 4 GPUs", "speedup (approx.)")),
        ),
        reads=("table-flare-memory", "fig-flare-scaling"),
    ),
    "distdy": PaperSetting(
        paper="distdy",
        hardware='section 5.1: "cluster 1 with four 1080Ti servers, where each server is equipped with [...] one GeForce '
        '1080Ti 11GB GPU, and 1Gbps/50Gbps NICs"; figure 5: "on cluster 1 with 50Gbps connections".',
        gpu="1080ti",
        gpus=4,
        nodes=4,
        link="6.25",
        link_note="50 Gb/s NICs: 6.25 GB/s",
        data=("+experiment=distdy", "dataset.hot_fraction=0", "sched.batch=4096"),
        smoke_data=("+experiment=distdy", "dataset.hot_fraction=0", "+smoke=distdy"),
        contenders=tuple(
            Contender(label, ("sched=distdy", f"sched.partition={name}"))
            for name, label in (("distdy", "DistDy"), ("metis", "Metis"), ("hash", "Hash"), ("metis_layer", "Metis-layer"))
        ),
        method="DistDy",
        metric=EPOCH,
        ratios=tuple(
            Ratio(
                label,
                "DistDy",
                EPOCH,
                _vs("Figure 5 (text)", f"DistDy vs {label}", "epoch time saving (up to)", "Uni500K"),
                saving=True,
            )
            for label in ("Metis", "Hash", "Metis-layer")
        ),
        reads=("table-distdy-time",),
    ),
    "sven": PaperSetting(
        paper="sven",
        hardware='section 5.1.1: "Each node is equipped with 4 GPUs [...] Each GPU is NVIDIA Tesla V100 with 16GiB HBM [...] '
        "These nodes are connected by 56Gbps HDR Infiniband\"; figure 12's default is 4 trainers: one node.",
        gpu="v100-16gb",
        gpus=4,
        nodes=1,
        link="pcie3",
        link_note="the paper names no link inside a node: PCIe 3.0 x16 (16 GB/s each way) is our assumption",
        data=("dataset=reddit_like", "model=tgn", "sched.batch_size=1000"),
        smoke_data=("dataset=events", "model=tgn", "+smoke=events"),
        contenders=(
            Contender("Sven", ("sched=sven",)),
            Contender("DepCache", ("sched=depcache",)),
            Contender("DepComm", ("sched=depcomm",)),
        ),
        method="Sven",
        metric=COMMUNICATION,
        ratios=(
            Ratio(
                "DepComm", "Sven", COMMUNICATION, _vs("Figure 12b (text)", "Sven vs DepComm", "comm efficiency (datasets) avg")
            ),
            Ratio(
                "DepCache", "Sven", COMMUNICATION, _vs("Figure 12b (text)", "Sven vs DepCache", "comm efficiency (datasets) avg")
            ),
            Ratio("DepCache", "DepComm", EPOCH, _table2("DepCache TGN"), _table2("DepComm TGN")),
        ),
        reads=("table-sven-comm", "table-sven-breakdown"),
    ),
}


# measured at full size on the 2-core development machine while other engineers' jobs ran (load 7 to 9)
MINUTES = {"dygnex": 2.0, "real": 1.0, "flare": 5.6, "distdy": 0.5, "sven": 1.9}
SECTION_OF = {"flare": "flaredtdg"}  # our short names -> the report's section keys
REPRODUCES = {
    "dygnex": "DyGNeX table 4 (Arxiv, TGCN), as the advisor predicts it",
    "real": "REAL figure 8 (one layer, averages), as the advisor predicts it",
    "flare": "FlareDTDG tables 5 and 7 and figure 7 (soc-flickr, T-GCN), as the advisor predicts them",
    "distdy": "DistDy figure 5 (Uni500K, 50 Gbps), as the advisor predicts it",
    "sven": "Sven figure 12b and table 2 (TGN), as the advisor predicts them",
}
PAPER_SIZES = {
    "dygnex": "Arxiv (169k nodes, 1.3M edges per snapshot on average, 30 snapshots), groups of 4, TGCN with two layers",
    "real": "six datasets of 169k-2.6M nodes, 100 snapshots, groups of 4, TGCN with one layer (figure 8's averages)",
    "flare": "soc-flickr, T-GCN, windows of 8",
    "distdy": "Uni500K (500,000 nodes, uniform edges), 2-layer GraphSAGE (fan-outs 5, 10), batch 4,096",
    "sven": "REDDIT, LASTFM, GDELT and more (figure 12b averages over datasets); LASTFM (table 2), TGN",
}
OUR_SIZES = {
    "dygnex": "table-epoch-time's graph (+experiment=epoch_time: 6,000 nodes, 36 snapshots), TGCN",
    "real": "table-ablation's graph (+experiment=ablation: 20,000 nodes, 24 snapshots, 5% changing), TGCN with one layer",
    "flare": "the FlareDTDG targets' graph (+experiment=flare: 100,000 nodes, 20 snapshots, windows of 8), TGCN",
    "distdy": "the DistDy targets' graph (+experiment=distdy, no hot nodes as Uni: 10,000 nodes, 16 snapshots), batch 4,096",
    "sven": "Sven's timing stream (REDDIT's published size, generated: 10,984 vertices, 672,447 events), TGN, "
    "1,000 events per rank",
}
