"""TGB's node property prediction streams (tgbn-*) through TGB's own package, with their node labels;
no network: the files are written where TGB's download would unpack them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dygsched.errors import DataError

pytest.importorskip("tgb.nodeproppred.dataset", reason="py-tgb is the tgb extra")

NATIONS = ["AFG", "BRA", "CHN", "DEU", "EGY", "FRA"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def put_trade(cache) -> tuple[list[tuple[int, str, str, float]], list[tuple[int, str, str, float]]]:
    """tgbn-trade as TGB's download unpacks it: its edge list and node label file (here small ones)."""
    rng = np.random.default_rng(4)
    edges, labels = [], []
    for year in range(1986, 1993):
        for u in NATIONS:
            for v in rng.choice([n for n in NATIONS if n != u], 2, replace=False):
                edges.append((year, u, str(v), float(rng.integers(1, 100))))
                if year < 1992:
                    labels.append((year, u, str(v), float(rng.integers(1, 10)) / 10))
    folder = cache / "tgb" / "tgbn_trade"
    folder.mkdir(parents=True)
    header = "year,nation,trading nation,weight\n"
    (folder / "tgbn-trade_edgelist.csv").write_text(header + "".join(f"{y},{u},{v},{w}\n" for y, u, v, w in edges))
    (folder / "tgbn-trade_node_labels.csv").write_text(header + "".join(f"{y},{u},{v},{w}\n" for y, u, v, w in labels))
    return edges, labels


def test_tgbn_trade_reads_its_events_and_labels_as_tgbs_package_gives_them(cache):
    import os

    from tgb.nodeproppred.dataset import NodePropPredDataset
    from tgb.utils.info import PROJ_DIR

    from dygsched.data.tgb_streams import TGBNodeStreamSource, tgb_folder

    put_trade(cache)
    stream = TGBNodeStreamSource(stream="tgbn-trade").load()
    root = os.path.relpath(tgb_folder("tgbn-trade").parent, PROJ_DIR)  # TGB joins its own folder and the root as strings
    theirs = NodePropPredDataset(name="tgbn-trade", root=root, preprocess=True, download=False)
    assert stream.num_events == len(theirs.full_data["sources"])
    affinity = stream.affinity
    assert affinity is not None and affinity.num_classes == len(NATIONS)  # the vectors' width (TGB's 255 for the whole file)
    assert affinity.num_rows == sum(len(rows) for rows in theirs.full_data["node_label_dict"].values())
    ids = stream.node_ids.tolist()
    for k, time in enumerate(affinity.times.tolist()):
        for row in range(int(affinity.time_rows[k]), int(affinity.time_rows[k + 1])):
            tgb_node = ids[int(affinity.nodes[row])]
            want = torch.from_numpy(np.asarray(theirs.full_data["node_label_dict"][int(time)][tgb_node], dtype=np.float32))
            torch.testing.assert_close(affinity.dense(torch.tensor([row]))[0], want)


def test_a_fetched_file_that_changed_is_refused_in_one_line(cache):
    from dygsched.data.tgb_streams import TGBNodeStreamSource, tgb_folder

    put_trade(cache)
    TGBNodeStreamSource(stream="tgbn-trade").load()  # the first read stamps the files
    labels = tgb_folder("tgbn-trade") / "tgbn-trade_node_labels.csv"
    labels.write_text(labels.read_text().replace("0.1\n", "0.2\n", 1))
    with pytest.raises(DataError, match="tgbn-trade_node_labels.csv has SHA-256 .* expected") as error:
        TGBNodeStreamSource(stream="tgbn-trade").load()
    assert "\n" not in str(error.value)


def test_a_node_stream_not_fetched_is_one_line(cache):
    from dygsched.data.tgb_streams import TGBNodeStreamSource

    with pytest.raises(DataError, match=r"TGB stream 'tgbn-genre' is not downloaded: run `dygsched datasets fetch tgbn-genre`"):
        TGBNodeStreamSource(stream="tgbn-genre").load()
    with pytest.raises(DataError, match="unknown TGB node stream 'tgbn-nope'"):
        TGBNodeStreamSource(stream="tgbn-nope").load()
