"""One registry of partitioners: every entry runs, names are unique per kind, an unknown name is one line."""

import subprocess
import sys

import numpy as np
import pytest

from dygsched.data.partition import KINDS, PARTITIONERS, names, partitioner
from dygsched.errors import ConfigError
from tests.conftest import ROOT


def test_every_partitioner_loads_and_names_are_unique_within_a_kind():
    for kind in KINDS:
        assert len(names(kind)) == len(set(names(kind))) > 0
    for entry in PARTITIONERS:
        assert entry.kind in KINDS and callable(entry.load()), entry
        assert partitioner(entry.kind, entry.name) is entry


@pytest.mark.parametrize(
    "kind, choices",
    [
        ("node", "metis, hash, range"),
        ("online", "distdy, metis, hash, greedy, metis_layer"),
        ("vertex", "interval, range, reflexbicut"),
    ],
)
def test_an_unknown_name_is_one_line_listing_the_choices_of_its_kind(kind, choices):
    with pytest.raises(ConfigError) as refused:
        partitioner(kind, "spectral")
    assert str(refused.value) == f"unknown {kind} partitioner 'spectral' (choose from {choices})"


def test_the_same_name_in_two_kinds_is_two_partitioners():
    assert partitioner("node", "metis").load() is not partitioner("online", "metis").load()
    with pytest.raises(ConfigError, match="unknown vertex partitioner 'metis'"):
        partitioner("vertex", "metis")


def test_baselines_are_marked():
    assert names("online", baseline=False) == ("distdy",)
    assert names("vertex", baseline=True) == ("interval", "range")


def test_each_kind_runs_through_the_registry():
    from dygsched.data.partition.vertices import partition_vertices

    demand = np.array([[5.0, 0, 1, 0], [0, 4.0, 0, 3]])
    for name in names("vertex"):
        assert partition_vertices(name, demand).owner.shape == (4,)


def test_reading_the_registry_and_the_node_and_online_partitioners_imports_no_torch():
    probe = (
        "import sys\nimport dygsched.data.partition.nodes, dygsched.data.partition.online, dygsched.data.partition.vertices\n"
        "import dygsched.data.partition.online_baselines, dygsched.data.partition.snapshot_graph\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "False", done.stderr
