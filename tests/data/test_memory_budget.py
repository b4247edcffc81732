"""Data that would not fit is refused in one line before it is built, against the limit the process meets first."""

from __future__ import annotations

import resource

import pytest

from dygsched.data import memory_budget
from dygsched.data.synthetic import SyntheticSource
from dygsched.errors import DataError


def test_the_address_space_limit_counts_not_only_physical_memory(monkeypatch):
    monkeypatch.setattr(memory_budget.resource, "getrlimit", lambda kind: (2**30, resource.RLIM_INFINITY))
    assert memory_budget.allocatable_memory() == 2**30
    with pytest.raises(DataError, match=r"needs about 2.0 GiB, more than the 1.0 GiB of memory this process can allocate"):
        memory_budget.check_fits(2**31, "a table")
    memory_budget.check_fits(2**29, "a table")


def test_a_synthetic_graph_too_large_is_refused_before_it_is_built(monkeypatch):
    monkeypatch.setattr(memory_budget, "allocatable_memory", lambda: 2**30)
    with pytest.raises(DataError, match=r"synthetic: 24 snapshots of 3,000,000 nodes needs about"):
        SyntheticSource(num_nodes=3_000_000).load()
    assert SyntheticSource(num_nodes=200, num_snapshots=3).estimated_bytes() < 2**30
