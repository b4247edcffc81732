import torch

from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.data.temporal_graph import Snapshot
from dygsched.engine.objective import GroupObjective
from dygsched.models.tgcn import TGCN


def test_classification_loss_and_accuracy_cover_only_existing_nodes():
    graph = SyntheticSource(num_nodes=80, num_snapshots=5, feature_dim=4, task="classification", num_classes=3).load()
    group = sliding_groups(graph.num_snapshots, 4)[0].snapshots(graph)
    torch.manual_seed(0)
    objective = GroupObjective(TGCN(4, 3, hidden_channels=8, num_layers=1), graph.task)
    evaluation = objective.phase_evaluation("val")
    evaluation.add(objective.model(group), group[-1])
    found = evaluation.metrics(shared=True)
    last = group[-1]
    logits = objective.model(group)[last.node_mask]
    assert found["accuracy"] == float((logits.argmax(-1) == last.y[last.node_mask]).sum()) / int(last.node_mask.sum())
    assert abs(found["loss"] - float(objective(group).detach())) < 1e-5


def test_a_group_whose_last_snapshot_has_no_nodes_contributes_zero():
    graph = SyntheticSource(num_nodes=30, num_snapshots=4, feature_dim=4).load()
    group = list(graph.snapshots)
    last = group[-1]
    group[-1] = Snapshot(last.edge_index[:, :0], last.edge_weight[:0], last.x, last.y, torch.zeros_like(last.node_mask))
    objective = GroupObjective(TGCN(4, 1, hidden_channels=8, num_layers=1), graph.task)
    loss = objective(group)
    loss.backward()
    assert loss.item() == 0.0
