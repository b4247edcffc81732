"""A file in the wrong source's hands: the refusal names, on its one line, the source that reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from dygsched.data import file_formats as formats
from dygsched.data.catalog import SHIPPED_DIR
from dygsched.data.dataset_config import DatasetConfig
from dygsched.data.loading import load_data
from dygsched.errors import DataError
from tests.cli_process import run_dygsched
from tests.conftest import ROOT
from tests.data.test_stream_formats import write_dyglib, write_jodie, write_plain, write_pyg, write_tgl

EDGE_LIST = "src,dst,t\n0,1,1\n1,2,2\n2,0,3\n0,2,4\n"


def write_edge_list(folder: Path) -> Path:
    path = folder / "edges_with_header.csv"
    path.write_text(EDGE_LIST)
    return path


def write_snapshots(folder: Path) -> Path:
    path = folder / "snapshots.pt"
    snapshot = Data(edge_index=torch.tensor([[0, 1], [1, 2]]), x=torch.ones(3, 2), y=torch.zeros(3))
    torch.save([snapshot, snapshot], path)
    return path


def write_json(folder: Path, name: str, data: dict) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


SERIES = {
    "chickenpox": {"edges": [[0, 1], [1, 0]], "FX": [[1.0, 2.0]] * 6},
    "pedalme": {"edges": [[0, 1]], "weights": [1.0], "X": [[1.0, 2.0]] * 6},
    "montevideo_bus": {"nodes": [], "links": []},
}

WRITERS = {
    "jodie": (write_jodie, formats.JODIE),
    "dyglib": (write_dyglib, formats.DYGLIB),
    "tgl": (write_tgl, formats.TGL),
    "tgl folder": (lambda folder: write_tgl(folder).parent, formats.TGL),
    "pyg": (write_pyg, formats.TEMPORAL_DATA),
    "plain": (write_plain, formats.HEADERLESS),
    "edge list": (write_edge_list, formats.EDGE_LIST),
    "snapshots": (write_snapshots, formats.SAVED_SNAPSHOTS),
    "england_covid": (lambda _: SHIPPED_DIR / "england_covid.json", formats.ENGLAND_COVID),
    "twitter_tennis": (lambda _: SHIPPED_DIR / "twitter_tennis_rg17.json", formats.TWITTER_TENNIS),
    "chickenpox": (lambda folder: write_json(folder, "chickenpox", SERIES["chickenpox"]), formats.CHICKENPOX),
    "pedalme": (lambda folder: write_json(folder, "pedalme", SERIES["pedalme"]), formats.PEDALME),
    "montevideo_bus": (lambda folder: write_json(folder, "bus", SERIES["montevideo_bus"]), formats.MONTEVIDEO_BUS),
}


@pytest.mark.parametrize("kind", WRITERS)
def test_every_format_a_source_reads_is_recognised(tmp_path, kind):
    write, expected = WRITERS[kind]
    assert formats.recognise(write(tmp_path)) is expected


@pytest.mark.parametrize(
    "content",
    ["", "a,b,c\n1,2,3\n", "just some words\n", '{"some": "json"}', "[1, 2, 3]\n", "\x00\x01binary"],
    ids=["empty", "other columns", "words", "other json", "json list", "binary"],
)
def test_a_file_in_no_known_format_is_not_named(tmp_path, content):
    path = tmp_path / "other.csv"
    path.write_text(content)
    assert formats.recognise(path) is None


def test_what_cannot_be_read_is_not_named(tmp_path):
    assert formats.recognise(tmp_path / "missing.csv") is None
    (tmp_path / "broken.pt").write_bytes(b"PK\x03\x04 not a zip archive at all")
    assert formats.recognise(tmp_path / "broken.pt") is None
    assert formats.recognise(tmp_path) is None  # a folder without TGL's edges.csv


def source_config(**settings: str) -> DatasetConfig:
    """A dataset block as the run's typed configuration holds it."""
    return DatasetConfig.of(settings, "dataset")


def events(path: Path) -> DatasetConfig:
    return source_config(_target_="dygsched.data.edgelist.EdgeListSource", path=str(path), kind="events", name="events")


def edgelist(path: Path) -> DatasetConfig:
    return source_config(_target_="dygsched.data.edgelist.EdgeListSource", path=str(path), name="edgelist")


def stream(path: Path, stream_format: str = "auto") -> DatasetConfig:
    return source_config(
        _target_="dygsched.data.stream_formats.StreamFileSource", path=str(path), format=stream_format, name="stream"
    )


def snapshots(path: Path) -> DatasetConfig:
    return source_config(_target_="dygsched.data.snapshot_formats.SnapshotFileSource", path=str(path), name="snapshots")


def series(path: Path, layout: str) -> DatasetConfig:
    return source_config(_target_="dygsched.data.pgt.LaggedSeriesSource", path=str(path), layout=layout, name=layout)


def twitter_tennis(path: Path) -> DatasetConfig:
    return source_config(_target_="dygsched.data.pgt.TwitterTennisSource", path=str(path), name="twitter_tennis")


@pytest.mark.parametrize(
    "source, kind, refusal, hint",
    [
        (events, "jodie", "unknown column(s) src, dst, t", "it is JODIE's CSV, which dataset=stream reads"),
        (edgelist, "dyglib", "unknown column(s) src, dst, t", "it is DyGLib's ml_<name>.csv, which dataset=stream reads"),
        (events, "tgl", "unknown column(s) t", "it is TGL's edges.csv, which dataset=stream reads"),
        (
            edgelist,
            "plain",
            "unknown column(s) src, dst, t",
            "it is a src dst t list without a header (SNAP's), which dataset=stream reads",
        ),
        (events, "pyg", "cannot parse", "it is a PyG TemporalData saved with torch.save, which dataset=stream reads"),
        (events, "snapshots", "cannot parse", "it is snapshots saved with torch.save, which dataset=snapshots reads"),
        (snapshots, "jodie", "not a file written by torch.save", "it is JODIE's CSV, which dataset=stream reads"),
        (
            snapshots,
            "edge list",
            "not a file written by torch.save",
            "which dataset=edgelist (snapshots) or dataset=events (an event stream) reads",
        ),
        (stream, "snapshots", "not a saved TemporalData", "it is snapshots saved with torch.save, which dataset=snapshots reads"),
        (stream, "england_covid", "not a stream format", "which dataset=england_covid reads"),
        (
            lambda path: stream(path, "tgl"),
            "jodie",
            "TGL's edges.csv needs columns",
            "it is JODIE's CSV, which dataset.format=jodie (or auto) reads",
        ),
        (twitter_tennis, "england_covid", "misses snapshot key '0'", "which dataset=england_covid reads"),
        (lambda path: series(path, "chickenpox"), "pedalme", "misses key 'FX'", "which dataset=pedalme reads"),
        (
            lambda path: series(path, "chickenpox"),
            "edge list",
            "is not valid JSON",
            "which dataset=edgelist (snapshots) or dataset=events (an event stream) reads",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 16 else None,
)
def test_a_refused_file_names_the_source_that_reads_it(tmp_path, source, kind, refusal, hint):
    write, _ = WRITERS[kind]
    with pytest.raises(DataError) as info:
        load_data(source(write(tmp_path)))
    message = str(info.value)
    assert "\n" not in message and refusal in message and "; it is " in message and message.endswith(hint), message


@pytest.mark.parametrize(
    "source, content, refusal",
    [
        (events, "src,dst,t\n0,1,1\nx,2,2\n", "must be numeric"),
        (stream, "user_id,item_id,timestamp,state_label\n0,1,x,0\n", "timestamps must be numbers"),
        (lambda path: stream(path, "jodie"), "user_id,item_id,timestamp,state_label\n-1,1,2,0\n", "whole numbers"),
    ],
    ids=["edge list", "jodie", "jodie, named"],
)
def test_a_file_in_the_refusing_sources_own_format_gets_no_hint(tmp_path, source, content, refusal):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=refusal) as info:
        load_data(source(path))
    assert "which dataset" not in str(info.value) and "dataset.format=" not in str(info.value)


@pytest.mark.parametrize(
    "dataset, kind, hint",
    [
        ("events", "jodie", "; it is JODIE's CSV, which dataset=stream reads"),
        (
            "snapshots",
            "edge list",
            "; it is a src,dst,t edge list, which dataset=edgelist (snapshots) or dataset=events (an event stream) reads",
        ),
    ],
    ids=["jodie to events", "edge list to snapshots"],
)
def test_the_run_says_so_in_one_line(tmp_path, dataset, kind, hint):
    """Through the command line: one line on stderr, exit 1, no traceback, before any rank starts."""
    path = WRITERS[kind][0](tmp_path)
    done = run_dygsched(
        "run",
        f"dataset={dataset}",
        f"dataset.path={path}",
        f"results_dir={tmp_path / 'results'}",
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("dygsched: error: ") and lines[0].endswith(hint), lines[0]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
