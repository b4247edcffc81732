import numpy as np
import pytest
import torch

from dygsched.data.edgelist import EdgeListSource
from dygsched.errors import DataError


def write(tmp_path, text):
    path = tmp_path / "edges.csv"
    path.write_text(text)
    return str(path)


def test_enron_loads_with_flaredtdg_features(shipped_data):
    graph = EdgeListSource(path=str(shipped_data / "enron_edges.csv"), num_snapshots=20).load()
    assert graph.num_snapshots == 19  # the last cut only gives targets
    assert graph.num_nodes == 143 and graph.num_features == 2
    first, second = graph.snapshots[0], graph.snapshots[1]
    in_deg = torch.bincount(first.edge_index[1], minlength=143)
    assert torch.allclose(first.x[:, 0], torch.log1p(in_deg.float()))
    degree_next = torch.bincount(second.edge_index[0], minlength=143) + torch.bincount(second.edge_index[1], minlength=143)
    assert torch.allclose(first.y, torch.log1p(degree_next.float()))


def test_sfhh_compacts_ids_and_fixed_duration(shipped_data):
    graph = EdgeListSource(path=str(shipped_data / "sfhh_contacts.csv"), num_snapshots=None, snapshot_duration=3600).load()
    assert graph.num_nodes == 403
    assert graph.num_snapshots > 10


def test_repeated_edges_become_weights(tmp_path):
    path = write(tmp_path, "src,dst,t\n0,1,0\n0,1,1\n1,2,2\n2,0,10\n")
    graph = EdgeListSource(path=path, num_snapshots=2).load()
    snap = graph.snapshots[0]
    weights = {tuple(e): w for e, w in zip(snap.edge_index.T.tolist(), snap.edge_weight.tolist())}
    assert weights == {(0, 1): 2.0, (1, 2): 1.0}
    assert snap.node_mask.tolist() == [True, True, True]


def test_custom_columns(tmp_path):
    path = write(tmp_path, "a,b,when\n0,1,0\n1,2,5\n")
    graph = EdgeListSource(path=path, src_col="a", dst_col="b", time_col="when", num_snapshots=2).load()
    assert graph.num_snapshots == 1


@pytest.mark.parametrize(
    "text, kwargs, message",
    [
        ("src,dst\n0,1\n", {}, "unknown column"),
        ("src,dst,t\n", {}, "no edges"),
        ("src,dst,t\n-1,2,0\n0,1,5\n", {}, "negative node id"),
        ("src,dst,t\n0,7,0\n0,1,5\n", {"num_nodes": 5}, "out of range"),
        ("src,dst,t\n0,x,0\n", {}, "must be numeric"),
        ("src,dst,t\n0,1.5,0\n", {}, "must be integers"),
        ("src,dst,t\n0,1,\n", {}, "missing values"),
        ("src,dst,t\n0,1,0\n1,2,0\n", {}, "single snapshot"),
        ("src,dst,t\n0,1,0\n1,2,9\n", {"snapshot_duration": 5.0}, "exactly one of"),
    ],
)
def test_bad_input(tmp_path, text, kwargs, message):
    with pytest.raises(DataError, match=message):
        EdgeListSource(path=write(tmp_path, text), **kwargs).load()


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        EdgeListSource(path=str(tmp_path / "nope.csv")).load()


def test_malformed_csv(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b'src,dst,t\n0,1,2\n"unterminated,3,4\n')
    with pytest.raises(DataError):
        EdgeListSource(path=str(path)).load()


def test_flare_features_and_overlapping_lags(tmp_path):
    from dygsched.data.edgelist import EdgeListSource

    path = tmp_path / "edges.csv"
    path.write_text("src,dst,t,w\n0,1,0,2.0\n0,1,0,1.0\n1,2,1,4.0\n2,0,2,1.5\n0,2,3,1.0\n")
    graph = EdgeListSource(str(path), weight_col="w", num_snapshots=4, features="flare").load()
    first = graph.snapshots[0]
    assert first.x.tolist() == [[0.0, 3.0], [3.0, 0.0], [0.0, 0.0]]  # weighted [in, out] degree, raw
    assert first.y.tolist() == pytest.approx([0.0, 0.0, float(np.log1p(4.0))])  # log(1 + weighted in-degree) next
    lagged = EdgeListSource(str(path), weight_col="w", num_snapshots=4, lags=1).load()
    assert lagged.num_snapshots == 2  # 4 intervals, windows of 2: 3 snapshots, the last giving targets
    assert sorted(map(tuple, lagged.snapshots[0].edge_index.t().tolist())) == [(0, 1), (1, 2)]  # intervals 0 and 1
    with pytest.raises(DataError, match="unknown features"):
        EdgeListSource(str(path), features="raw").load()
