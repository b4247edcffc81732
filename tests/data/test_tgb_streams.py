"""TGB's streams through TGB's own package (py-tgb), kept in the project's cache."""

import socket

import pytest
import torch

from dygsched.errors import DataError

tgb = pytest.importorskip("tgb.linkproppred.dataset", reason="py-tgb is the tgb extra")

JODIE_LINES = ["user_id,item_id,timestamp,state_label,f1,f2"] + [
    f"{(7 * k) % 13},{(5 * k) % 6},{10 + 3 * k},0,{k / 100:.2f},{(k % 4) / 4:.2f}" for k in range(120)
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def put_wiki(cache):
    """tgbl-wiki as TGB's download unpacks it: JODIE's Wikipedia CSV (here a small one)."""
    folder = cache / "tgb" / "tgbl_wiki"
    folder.mkdir(parents=True)
    (folder / "tgbl-wiki_edgelist_v2.csv").write_text("\n".join(JODIE_LINES) + "\n")
    return folder


def test_tgbl_wiki_is_the_same_stream_as_jodies_file(cache, tmp_path):
    """TGB builds tgbl-wiki from JODIE's CSV; read through TGB or as JODIE's file, the events agree."""
    from dygsched.data.stream_formats import read_jodie
    from dygsched.data.tgb_streams import TGBStreamSource

    folder = put_wiki(cache)
    ours = TGBStreamSource(stream="tgbl-wiki").load()
    jodie = read_jodie(folder / "tgbl-wiki_edgelist_v2.csv", "wikipedia")
    assert ours.num_events == 120
    for field in ("src", "dst", "t", "edge_features", "node_ids"):
        assert torch.equal(getattr(ours, field), getattr(jodie, field)), field


def test_the_list_shows_tgbs_streams_and_which_are_fetched(cache, capsys):
    from dygsched.commands.datasets import main

    put_wiki(cache)
    assert main([]) == 0
    rows = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[1:] if line.startswith("tgbl-")}
    assert rows["tgbl-wiki"] == "downloaded" and rows["tgbl-review"] == "fetch"


def test_a_stream_not_fetched_is_one_line(cache):
    from dygsched.data.tgb_streams import TGBStreamSource

    with pytest.raises(DataError, match=r"TGB stream 'tgbl-uci' is not downloaded: run `dygsched datasets fetch tgbl-uci`"):
        TGBStreamSource(stream="tgbl-uci").load()
    with pytest.raises(DataError, match="unknown TGB stream 'tgbl-nope' \\(known: tgbl-coin"):
        TGBStreamSource(stream="tgbl-nope").load()


def test_a_failed_fetch_is_one_line_and_keeps_no_zip(cache, monkeypatch):
    from dygsched.data.tgb_streams import fetch_tgb, tgb_folder

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setitem(tgb.DATA_URL_DICT, "tgbl-uci", f"http://127.0.0.1:{port}/tgbl-uci.zip")  # nobody listens there
    with pytest.raises(DataError, match="TGB stream 'tgbl-uci': could not download it") as failure:
        fetch_tgb("tgbl-uci")
    assert "\n" not in str(failure.value)
    assert not (tgb_folder("tgbl-uci") / "tgbl-uci.zip").exists()
