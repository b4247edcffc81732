"""What a run predicts, in words, from its data: the run header's and the summary's ``task``.

A snapshot model on an edge list regresses the next snapshot's log-degree (FlareDTDG's targets), a
labelled stream classifies its events' state labels, ...: the task follows from the data and the
settings (``task=``, ``dataset.features``), and a user should not have to read docs/data.md to know
which one a run trains. ``describe_task`` says it; ``describe_snapshots`` says how many snapshots
a run trains and, for a graph cut from timestamps, why one interval fewer than were cut.
"""

from __future__ import annotations

from dygsched.data.dataset_config import DatasetConfig
from dygsched.data.events import EventStream
from dygsched.data.kinds import DynamicData
from dygsched.data.temporal_graph import Task, TemporalGraph


def describe_task(data: DynamicData, dataset: DatasetConfig) -> str:
    """``node regression of the next snapshot's log-degree``, ``link prediction of the next snapshot's pairs``, ..."""
    if isinstance(data, EventStream):
        return {
            Task.LINK: "link prediction of each event's destination against sampled negatives",
            Task.CLASSIFICATION: "node classification of each event's 0/1 state label",
            Task.AFFINITY: "node affinity prediction (each node's next affinities, ranked)",
        }.get(data.task, f"{data.task.value} on an event stream")
    assert isinstance(data, TemporalGraph)
    if data.task is Task.LINK:
        return "link prediction of the next snapshot's pairs"
    if data.task is Task.CLASSIFICATION:
        return f"node classification into {data.num_classes} classes"
    if data.snapshot_times is not None:  # cut from timestamps: FlareDTDG's next-snapshot degree targets
        flare = dataset.settings.get("features") == "flare"  # the source's own setting (EdgeList types it)
        target = "log(1 + weighted in-degree)" if flare else "log-degree"
        return f"node regression of the next snapshot's {target}"
    return "node regression of each snapshot's node targets"


def describe_snapshots(data: TemporalGraph) -> str:
    """``19 snapshots: 20 cut, the last only gives the 19th's targets`` for a graph cut from
    timestamps (``dataset.num_snapshots=20``), else ``24 snapshots``."""
    count = data.num_snapshots
    if data.snapshot_times is None or data.task is Task.CLASSIFICATION:
        return f"{count} snapshots"
    return f"{count} snapshots: {count + 1} cut, the last only gives the {_ordinal(count)}'s targets"


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def data_counts(data: DynamicData) -> dict[str, int]:
    """The summary's (and runs table's) count of what a run trains on: the snapshots the header
    names, or the events."""
    if isinstance(data, TemporalGraph):
        return {"num_snapshots": data.num_snapshots}
    return {"num_events": data.num_events}


# The run identity's settings that only link prediction reads (RunConfig.identity): how negatives are
# drawn and scored, how new nodes are hidden and scored, how AP is averaged
LINK_SETTINGS = ("negatives", "negative_pool", "inductive", "new_nodes_draw", "average")


def inapplicable_settings(data: DynamicData) -> tuple[str, ...]:
    """The identity settings a run on ``data`` does not read, left out of its summary and runs-table
    row so that a comparison never shows them as a difference: link prediction's on any other task,
    and ``split_by`` on snapshots that predict no links (their split is by snapshot groups)."""
    if data.task is Task.LINK:
        return ()
    return (*LINK_SETTINGS, "split_by") if isinstance(data, TemporalGraph) else LINK_SETTINGS
