"""Event streams in JODIE's, DyGLib's, TGL's, PyG's and plain formats, written here and read back."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from dygsched.data.stream_formats import StreamFileSource, detect_format
from dygsched.errors import DataError

# four events, the third out of time order; users 0-1, items 0-2; two features per event
USERS = [0, 1, 0, 1]
ITEMS = [2, 0, 1, 2]
TIMES = [1.0, 3.0, 2.0, 5.0]
FEATURES = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]], dtype=np.float32)
ORDER = [0, 2, 1, 3]  # by time, stable


def write_jodie(folder: Path) -> Path:
    path = folder / "wikipedia.csv"
    lines = ["user_id,item_id,timestamp,state_label,comma_separated_list_of_features"]
    lines += [f"{u},{i},{t},0,{f[0]},{f[1]}" for u, i, t, f in zip(USERS, ITEMS, TIMES, FEATURES)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_dyglib(folder: Path) -> Path:
    path = folder / "ml_wikipedia.csv"
    # DyGLib numbers nodes from 1, items after users; idx is the event's row in the .npy (row 0: padding)
    lines = [",u,i,ts,label,idx"] + [f"{k},{u + 1},{i + 3},{t},0,{k + 1}" for k, (u, i, t) in enumerate(zip(USERS, ITEMS, TIMES))]
    path.write_text("\n".join(lines) + "\n")
    np.save(folder / "ml_wikipedia.npy", np.vstack([np.zeros((1, 2), np.float32), FEATURES]))
    return path


def write_tgl(folder: Path) -> Path:
    path = folder / "edges.csv"
    lines = [",src,dst,time,int_roll,ext_roll"] + [
        f"{k},{u},{i + 2},{t},0,0" for k, (u, i, t) in enumerate(zip(USERS, ITEMS, TIMES))
    ]
    path.write_text("\n".join(lines) + "\n")
    torch.save(torch.from_numpy(FEATURES), folder / "edge_features.pt")
    return path


def write_pyg(folder: Path) -> Path:
    from torch_geometric.data import TemporalData

    path = folder / "stream.pt"
    data = TemporalData(
        src=torch.tensor(USERS), dst=torch.tensor(ITEMS) + 2, t=torch.tensor(TIMES).long(), msg=torch.from_numpy(FEATURES)
    )
    torch.save(data, path)
    return path


def write_plain(folder: Path) -> Path:
    path = folder / "CollegeMsg.txt"
    path.write_text("".join(f"{u} {i + 2} {int(t)}\n" for u, i, t in zip(USERS, ITEMS, TIMES)))
    return path


WRITERS = {"jodie": write_jodie, "dyglib": write_dyglib, "tgl": write_tgl, "pyg": write_pyg, "edgelist": write_plain}


@pytest.mark.parametrize("kind", list(WRITERS))
def test_each_format_is_recognised_and_read_in_time_order(tmp_path, kind, caplog):
    path = WRITERS[kind](tmp_path)
    assert detect_format(path) == kind
    with caplog.at_level(logging.INFO, logger="dygsched"):
        stream = StreamFileSource(str(path), name="w").load()
    assert "not in time order" in caplog.text  # the third row was out of order: sorted, and said so
    assert stream.t.tolist() == sorted(TIMES)
    src = stream.node_ids[stream.src] if kind in ("dyglib", "pyg", "edgelist") else stream.src
    dst = stream.node_ids[stream.dst] if kind in ("dyglib", "pyg", "edgelist") else stream.dst
    offset = {"jodie": 2, "dyglib": 3, "tgl": 2, "pyg": 2, "edgelist": 2}[kind]  # items numbered after the users
    shift = 1 if kind == "dyglib" else 0
    assert (src - shift).tolist() == [USERS[k] for k in ORDER]
    assert (dst - offset).tolist() == [ITEMS[k] for k in ORDER]
    if kind == "edgelist":
        assert stream.edge_features is None and stream.edge_dim == 0
    else:  # each event keeps its own feature row through the sort
        assert torch.equal(stream.edge_features, torch.from_numpy(FEATURES[ORDER]))
        assert stream.edge_dim == 2 and stream.model_dims()["edge_dim"] == 2


def test_tgl_reads_its_folder_and_jodie_numbers_items_after_users(tmp_path):
    write_tgl(tmp_path)
    assert StreamFileSource(str(tmp_path), format="tgl").load().num_events == 4
    jodie = StreamFileSource(str(write_jodie(tmp_path))).load()
    assert jodie.num_nodes == 2 + 3 and set(jodie.dst.tolist()) == {2, 3, 4}


def test_the_weight_and_the_features_form_one_edge_matrix(tmp_path):
    stream = StreamFileSource(str(write_tgl(tmp_path))).load()
    assert torch.equal(stream.edge_matrix(), stream.edge_features)
    weighted = type(stream)(
        stream.name, stream.src, stream.dst, stream.t, stream.num_nodes, torch.ones(4), None, stream.edge_features
    )
    assert weighted.edge_dim == 3 and torch.equal(weighted.edge_matrix()[:, 0], torch.ones(4))


def test_collegemsg(shipped_data):
    stream = StreamFileSource(str(shipped_data / "collegemsg.csv"), name="collegemsg").load()
    assert (stream.num_events, stream.num_nodes, stream.edge_dim) == (59_835, 1_899, 0)
    assert bool((stream.t[1:] >= stream.t[:-1]).all())


BAD = {
    "no format": ("stream.csv", "a;b;c\n1;2;3\n", "not a stream format"),
    "text id": ("s.txt", "src,dst,t\n1,2,3\nx,2,4\n", "source ids must be numbers, got 'x' (line 3)"),
    "missing time": ("s.txt", "src,dst,t\n1,2,3\n1,2,\n", "timestamps must be numbers, got nothing (a missing value) (line 3)"),
    "fractional id": ("s.txt", "1 2 3\n1.5 2 4\n", "must be whole numbers of 0 or more (line 2)"),
    "jodie feature": (
        "j.csv",
        "user_id,item_id,timestamp,state_label,f\n0,1,2,0,0.5\n0,1,3,0,zz\n",
        "features must be numbers (line 3)",
    ),
    "empty": ("e.txt", "src,dst,t\n", "no events"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_files_are_refused_in_one_line_naming_the_file(tmp_path, case):
    name, text, message = BAD[case]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataError) as error:
        StreamFileSource(str(path)).load()
    assert message in str(error.value) and str(path) in str(error.value) and "\n" not in str(error.value)


def test_feature_files_that_do_not_match_the_events_are_refused(tmp_path):
    path = write_dyglib(tmp_path)
    np.save(tmp_path / "ml_wikipedia.npy", np.zeros((3, 2), np.float32))  # idx 3 and 4 have no row
    with pytest.raises(DataError, match=r"idx 3 has no row in ml_wikipedia.npy \(3 rows\) \(line 4\)"):
        StreamFileSource(str(path)).load()
    tgl = write_tgl(tmp_path)
    torch.save(torch.zeros(3, 2), tmp_path / "edge_features.pt")
    with pytest.raises(DataError, match=r"must be a \[4, F\] tensor"):
        StreamFileSource(str(tgl)).load()
    pt = tmp_path / "other.pt"
    torch.save({"src": torch.tensor([0])}, pt)
    with pytest.raises(DataError, match="expected a TemporalData"):
        StreamFileSource(str(pt), format="pyg").load()


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="unknown stream format 'gdelt'"):
        StreamFileSource(str(tmp_path), format="gdelt").load()
    with pytest.raises(DataError, match="file not found"):
        StreamFileSource(str(tmp_path / "none.csv")).load()


def test_reading_a_stream_leaves_what_pyg_allows_torch_load_allowed(tmp_path):
    """torch's ``safe_globals`` context removes, on leaving, every global it was given: reading a
    TemporalData (or snapshots) must not un-allow what PyG allows for good on import, or a later
    snapshot file holding a TemporalData is refused for the wrong reason."""
    from torch_geometric.data import Data, TemporalData

    from dygsched.data.snapshot_formats import SnapshotFileSource

    before = set(map(str, torch.serialization.get_safe_globals()))
    assert {str(TemporalData), str(Data)} <= before  # what PyG allows on import
    StreamFileSource(str(write_pyg(tmp_path))).load()
    with pytest.raises(DataError, match="holds a TemporalData"):
        SnapshotFileSource(str(tmp_path / "stream.pt")).load()
    assert set(map(str, torch.serialization.get_safe_globals())) == before
